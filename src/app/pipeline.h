/* pipeline.h — one frame of rtviewer: animate -> build -> trace, on the GPU
 * or on the CPU reference path, behind one handle. The window (viewer.c),
 * headless mode (headless.c) and the benchmark (bench.c) call this and
 * nothing else; one RtFrameStats feeds the HUD, --stats, the benchmark's
 * JSON/CSV and the logs.
 *
 * The acceleration structure is a slot: RtPipelineParams.structure picks
 * it, and each backend builds and traces what it picks: the kd-tree (the
 * CPU oracle's SAH builder, the GPU's Zhou/Chang builder), Karras's LBVH
 * or H-PLOC (`bvh`; each the same tree on both backends). A new structure adds an RtStructure
 * value, a registry value (variants.c) and one case per backend in
 * pipeline.c; the tracers walk it through render/accel.h. */
#ifndef RT_PIPELINE_H
#define RT_PIPELINE_H

#include "core/image.h"
#include "kd/kd_cpu.h"
#include "bvh/hploc_gpu.h"
#include "bvh/split_top.h"
#include "bvh/lbvh_gpu.h"
#include "kd/kd_gpu.h"
#include "photon/photon_gpu.h"
#include "photon/photon_maps.h"
#include "render/render_cpu.h"
#include "trace/trace.h"

typedef enum RtBackend {
    RT_BACKEND_CPU = 0, /* the reference path: rt_scene_frame_at, rt_kd_build_cpu, rt_render_cpu */
    RT_BACKEND_GPU = 1  /* animate, build and trace on the device (no host round trip) */
} RtBackend;

/* The acceleration-structure slot. */
typedef enum RtStructure {
    RT_STRUCT_KD = 0,   /* kd-tree: SAH on the CPU, Zhou et al. 2008 / Chang et al. on the GPU */
    RT_STRUCT_LBVH = 1, /* BVH: Karras 2012's LBVH with SAH leaf collapse (src/bvh/lbvh.h), both backends */
    RT_STRUCT_BVH = 2,  /* BVH: H-PLOC, Benthin et al. 2024, with the same collapse (src/bvh/hploc.h), both
                           backends */
    RT_STRUCT_AUTO = 3, /* each frame one of the above: the one whose build + trace measured shorter
                           (rt_pipeline_frame: probes, hysteresis) */
    RT_STRUCT_COUNT
} RtStructure;

/* Every setting of a frame; variants.h's registry names its fields for the
 * CLI, the hotkeys, the HUD and the benchmark. */
typedef struct RtPipelineParams {
    int structure;        /* RtStructure; default kd */
    RtKdGpuParams build;  /* the GPU builder (defaults: rt_kd_gpu_params_default) */
    RtKdCpuParams kd_cpu; /* the CPU oracle's builder (defaults: rt_kd_cpu_params_default) */
    RtLbvhParams lbvh;    /* the LBVH builder, both backends (defaults: rt_lbvh_params_default) */
    RtHplocParams hploc;  /* the H-PLOC builder, both backends (defaults: rt_hploc_params_default) */
    RtSplitTopParams bvh_top; /* the bvh structure's spatial-split top, both backends (split_top.h; depth 0:
                                 none) */
    int bvh_leaf_rows;    /* RtBvhLeafRows: whether the GPU BVH builds copy the leaf triangles' rows
                             (bvh_layout.h; default auto: by the frame's pixels per triangle) */
    RtTraceParams trace;  /* tracing and shading, both backends: the CPU renderer reads the shading
                             fields and `isect` (defaults: rt_trace_params_default) */
    RtPhotonParams photons; /* photon mapping, both backends (photon.h; defaults:
                               rt_photon_params_default, off) */
    int threads;          /* CPU backend: threads, 0 = rt_thread_count() */
    int brute_force;      /* CPU backend: no tree, every triangle tested (checking only) */
} RtPipelineParams;

RtPipelineParams rt_pipeline_params_default(void);

/* What one frame did. Times in ms; NAN = not measured on this backend
 * (e.g. the GPU build's stages on the CPU). */
typedef struct RtFrameStats {
    int backend;          /* RtBackend that ran the frame */
    int structure;        /* RtStructure the frame built and traced (never RT_STRUCT_AUTO) */
    const char *structure_note; /* why this structure: auto's choice and reason, or the GPU
                                   memory fallback (owned by the pipeline, valid until the next
                                   frame); NULL otherwise */
    float t;              /* animation time */
    double animate_ms;    /* GPU: CUDA events; CPU: rt_scene_frame_at + flattening, wall */
    double build_ms;      /* GPU: events around the whole build; CPU: wall */
    double build_large_ms, build_small_ms; /* GPU: the builder's two stages (events) */
    uint32_t launches;    /* GPU: kernel launches of the build */
    uint32_t round_trips; /* GPU: device-to-host copies the build waited for */
    uint32_t rebuilds;    /* GPU: builds redone after growing an overflowed buffer */
    double trace_ms;      /* GPU: events around the trace kernel; CPU: wall */
    double readback_ms;   /* device image -> host image; 0 when the frame stays on the device */
    double frame_ms;      /* the whole rt_pipeline_frame call, wall */
    uint64_t primary_rays, shadow_rays, reflection_rays; /* reflection includes refraction */
    /* The tree: counts always; depth, empty leaves and SAH cost when
     * tree_full (the CPU backend always; the GPU backend after
     * rt_pipeline_tree_stats, which downloads the tree). A BVH fills the
     * fields the two structures share (nodes = reachable interior nodes,
     * leaves, depth, references, SAH with the same C_trav and C_i; empty
     * leaves 0). */
    RtKdStats tree;
    int has_tree;         /* 0 with brute_force */
    int tree_full;
    const RtKdGpuStats *kd_gpu; /* GPU: the builder's per-stage detail (HUD), owned by the pipeline */
    int has_photons;      /* the frame was photon mapped (RtPipelineParams.photons.count > 0) */
    RtPhotonStats photons; /* its photon stage: counts, trace and build times */
} RtFrameStats;

/* Where the frame goes: the GPU backend traces into d_rgba when given (a
 * device buffer of w*h*4 bytes: the viewer's mapped PBO), else into its own
 * buffer and reads it back into img; the CPU backend renders into img. */
typedef struct RtFrameTarget {
    int w, h;
    uint8_t *d_rgba;      /* device; GPU backend only; NULL = the pipeline's own */
    RtImage *img;         /* host, w x h; may be NULL when d_rgba is given */
} RtFrameTarget;

typedef struct RtPipeline RtPipeline;

/* Opens a pipeline over `scene` (which must outlive it). RT_BACKEND_GPU
 * fails with RT_ERR_NO_DEVICE (and the reason) when no usable GPU or no
 * CUDA in this build: the caller falls back to the CPU and says why. */
RtStatus rt_pipeline_create(const RtScene *scene, RtBackend backend, int width, int height,
                            RtPipeline **out, RtError *err);
void rt_pipeline_destroy(RtPipeline *p);
RtBackend rt_pipeline_backend(const RtPipeline *p);
/* "GPU: NVIDIA H100 80GB HBM3, sm_90, driver 13.0, runtime 13.0" or
 * "CPU: 8 threads". */
void rt_pipeline_describe(const RtPipeline *p, char *buf, size_t n);

/* The scene's own camera at time t: its camera track (BART's `k camera`)
 * when it has one, else its static camera. */
RtStatus rt_scene_camera_at(const RtScene *scene, float t, RtCamera *cam, RtError *err);

/* One frame at time t seen from cam (NULL: the scene's camera at t).
 *
 * With pp->photons.count > 0 the frame is photon mapped (photon.h): after
 * the build, the photons are traced through the frame's structure, both
 * maps built, and the trace adds their estimate; the GPU waits once for the
 * maps' sizes (and, for the kd-tree, for the build's).
 *
 * pp->structure = RT_STRUCT_AUTO: the frame uses the structure whose
 * build + trace (GPU events on the GPU, wall time on the CPU) measured
 * shortest. Each candidate (kd, lbvh, bvh) is measured twice at the start
 * (the first frame of a structure pays its allocations), then the one not
 * in use measured longest ago is measured again every RT_AUTO_REPROBE
 * frames (an animated scene changes what is faster) or when the view
 * changed enough (RT_AUTO_MOVE of the scene's diagonal, RT_AUTO_TURN
 * degrees); the choice switches only to one at least RT_AUTO_MARGIN faster,
 * so two close candidates do not flicker. */
#define RT_AUTO_REPROBE 120
#define RT_AUTO_MOVE 0.1f
#define RT_AUTO_TURN 20.0f
#define RT_AUTO_MARGIN 0.1
RtStatus rt_pipeline_frame(RtPipeline *p, const RtPipelineParams *pp, float t, const RtCamera *cam,
                           const RtFrameTarget *target, RtFrameStats *st, RtError *err);

/* Traces the last frame's tree again with pp's tracing fields (e.g. the
 * benchmark's passes per ray type); trace_ms = the trace alone. */
RtStatus rt_pipeline_retrace(RtPipeline *p, const RtPipelineParams *pp, const RtCamera *cam,
                             const RtFrameTarget *target, double *trace_ms, RtError *err);

/* The frame's trace per ray type, as three passes over the last frame's
 * tree (what the benchmark and the window's HUD report): pass 0 primary
 * rays only (no shadows, no bounces), pass 1 with the shadow rays, pass 2
 * everything pp asks for; shadow rays take pass 1 - pass 0, reflection
 * (and refraction) rays pass 2 - pass 1 (rt_ray_rates_derive). */
typedef struct RtRayRates {
    double pass_ms[3];  /* each pass's fastest run: the trace alone */
    double type_ms[3];  /* primary, shadow, reflection: rt_ray_rates_derive */
    double mrays[3];    /* the rays of each type / type_ms (NAN: none cast, or no time left to them) */
} RtRayRates;

/* type_ms and mrays from pass_ms and the frame's ray counts (rays: primary,
 * shadow, reflection). A pass does all of the one before it and more, so a
 * difference below the timer's noise reads 0, not a negative time. */
void rt_ray_rates_derive(RtRayRates *r, const uint64_t rays[3]);

/* Runs the three passes `rounds` times (forward, then backward, and so on:
 * no pass always runs first on cold caches), keeps each one's fastest run
 * and derives the rates with the last frame's ray counts (that frame traced
 * with pp). The passes render into target like rt_pipeline_retrace: with rounds
 * odd the last is pass 2, so after a frame of sample 0 traced with pp the
 * target and the accumulation hold that frame's image again. */
RtStatus rt_pipeline_ray_rates(RtPipeline *p, const RtPipelineParams *pp, const RtCamera *cam,
                               const RtFrameTarget *target, int rounds, RtRayRates *out, RtError *err);

/* What rt_pipeline_cast_diffuse did. The arrays are optional and the
 * caller's (w*h entries each, pixel order y * w + x; NULL = not wanted). */
typedef struct RtDiffuseCast {
    double ms;        /* the diffuse cast alone: GPU kernel time (rt_trace_gpu_rays' events) /
                         CPU wall of rt_render_cast_cpu */
    uint64_t rays;    /* diffuse rays cast: one per primary hit */
    uint64_t hits;    /* of those, rays that hit something */
    RtHit *primary;   /* the pixel's primary hit (tri RT_NO_HIT: a miss, and no diffuse ray) */
    RtRay *ray;       /* the pixel's diffuse ray (where its primary ray hit) */
    RtHit *hit;       /* the diffuse ray's closest hit (tri RT_NO_HIT: a miss, or no ray) */
} RtDiffuseCast;

/* The benchmark's incoherent rays, through the last frame's tree: (1) the
 * camera's w x h primary rays (camera.h; NULL: the scene's camera at the
 * last frame's t), closest hit; (2) one diffuse ray per primary hit
 * (render/sample.h: cosine-weighted about the geometric normal facing the
 * ray, from pixel index and seed); (3) those cast closest hit, the only
 * step timed. Both casts are pure geometry (no map_d cut-outs) with pp's
 * traversal and intersection test, so the two backends cast the same rays:
 * the GPU makes its diffuse rays on the host, from its downloaded primary
 * hits and triangles, with the CPU's very code, and uploads them (the
 * transfers are not timed). Buffers are grown to the largest w*h asked for
 * and kept. On the CPU, brute force when the frame has no tree. */
RtStatus rt_pipeline_cast_diffuse(RtPipeline *p, const RtPipelineParams *pp, const RtCamera *cam,
                                  int w, int h, uint32_t seed, RtDiffuseCast *out, RtError *err);

/* Depth, empty leaves and SAH cost of the last frame's tree (with the
 * builder's C_trav and C_i) into st->tree; the GPU backend downloads the
 * tree for it. */
RtStatus rt_pipeline_tree_stats(RtPipeline *p, const RtPipelineParams *pp, RtFrameStats *st, RtError *err);

/* The validator (kd_cpu.h's, or bvh_cpu.h's for a BVH) over the last
 * frame's tree and the triangles it was built from (downloaded from the GPU). The GPU builder may reference a
 * triangle whose box, not the triangle itself, meets a leaf's cell, so its
 * tree is checked with RT_KD_VALIDATE_LOOSE_REFS, and *loose_refs (optional;
 * 0 for other trees) counts such references (rt_kd_validate_count). *what
 * (optional) names the check that ran. */
RtStatus rt_pipeline_validate(RtPipeline *p, const char **what, uint64_t *loose_refs, RtError *err);

#endif
