/* trace.h — the GPU tracer (stage "trace"): Whitted shading of the kd-tree
 * (kd_layout.h) straight into an RGBA8 device buffer (the viewer's mapped
 * PBO, or a plain device buffer in headless mode), and a ray-casting entry
 * for tests and benchmarks.
 *
 * Algorithms (Hoedt 2011, docs/trace_gpu.md): kd-restart, Horn et al.'s
 * short stack and a full stack (the default: the fastest on Hopper), leaf
 * skipping, Woop vs Moller-Trumbore, 4x8 warp tiles, and packet traversal
 * (a warp walks the tree together with one shared stack, Horn et al.).
 * Every variant is a field of RtTraceParams, selected at run time; their
 * names are rows of src/app/variants.c. */
#ifndef RT_TRACE_H
#define RT_TRACE_H

#include "core/camera.h"
#include "core/isect.h"
#include "gpu/gpu_scene.h"
#include "photon/photon.h"
#include "render/accel.h"
#include "render/shade.h"
/* the benchmark's diffuse rays, cast with rt_trace_gpu_rays (RT_HD, so it
 * also compiles for the device) */
#include "render/sample.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum RtTraversal {
    RT_TRAV_RESTART = 0,     /* kd-restart: every descent from the root */
    RT_TRAV_SHORT_STACK = 1, /* circular short stack, restart on underflow */
    RT_TRAV_STACK = 2        /* a full stack: one entry per level, never dropped */
} RtTraversal;

typedef enum RtIsect {
    RT_ISECT_WOOP = 0,       /* unit-triangle transform (3 float4 rows) */
    RT_ISECT_MT = 1          /* Moller-Trumbore on the raw vertices */
} RtIsect;

typedef enum RtRayMap {
    RT_RAYMAP_ROWS = 0,      /* a warp traces 32 consecutive pixels of a row */
    RT_RAYMAP_TILES = 1      /* a warp traces a 4x8 pixel tile (Hoedt's "packets") */
} RtRayMap;

typedef enum RtPacket {
    RT_PACKET_OFF = 0,       /* every ray traverses on its own */
    RT_PACKET_WARP = 1       /* a warp traverses as one packet, one shared stack */
} RtPacket;

/* Largest short stack (entries); the stack lives in local memory. */
#define RT_TRACE_STACK_MAX 16

typedef struct RtTraceParams {
    int traversal;     /* RtTraversal; default the full stack (docs/trace_gpu.md) */
    int isect;         /* RtIsect; default Woop (fewer registers, Hoedt 4.3.2) */
    int leaf_skip;     /* 1: ray vs the leaf's box before its triangles; default 1 */
    int ray_map;       /* RtRayMap; default 4x8 tiles */
    int packet;        /* RtPacket; default off */
    int stack_size;    /* short-stack entries, 1..RT_TRACE_STACK_MAX; default 8 (docs/trace_gpu.md) */
    RtShadeParams shade; /* shading (render/shade.h), the CPU renderer's as well */
} RtTraceParams;

/* Defaults as above; shade = rt_shade_params_default(). */
RtTraceParams rt_trace_params_default(void);
/* RT_OK, or RT_ERR_ARG naming the parameter out of range. */
RtStatus rt_trace_params_check(const RtTraceParams *p, RtError *err);

typedef struct RtTraceStats {
    uint64_t primary_rays, shadow_rays, reflection_rays; /* reflection includes refraction */
    uint64_t steps;    /* kd nodes visited by primary rays, summed */
    double ms;         /* GPU time of the trace kernel (CUDA events) */
} RtTraceStats;

/* Renders the camera's view into d_rgba (device memory, w*h*4 bytes, row 0
 * = top, sRGB, alpha 255). frame (optional; device pointers): the frame's
 * photon maps (rt_photon_gpu_frame; every shaded surface adds their
 * estimate, photon.h) and accumulation sums (w*h; the pixel is the mean of
 * samples 0..p->shade.sample, jittered as the CPU's). accel's structure holds device pointers
 * (rt_kd_tree_upload, a GPU builder) over rt_gpu_scene_tris(gs): a kd-tree
 * is walked with the variant p names, a BVH with trace_bvh.cuh's loop
 * (p's intersection test and ray map; traversal, stack, leaf skip and
 * packets are the kd-tree's, a BVH traces single rays with a full stack). d_ids (device, optional)
 * receives the primary hit's triangle id per pixel (RT_NO_HIT for none).
 * stats (optional) synchronises to read the counters. */
RtStatus rt_trace_gpu(RtGpuScene *gs, const RtAccel *accel, const RtShadeFrame *frame,
                      const RtCamera *cam, const RtTraceParams *p, uint8_t *d_rgba, int w, int h,
                      uint32_t *d_ids, RtTraceStats *stats, RtError *err);

/* The photon pass of a frame on the device (render_cpu.h's
 * rt_render_photons_cpu, the same photons): pp->count photons from the
 * scene's lights through accel with p's traversal and shading switches,
 * their stores into d_slots (device arrays for at least pp->count x
 * pp->max_depth). ms (optional) = kernel GPU time. */
RtStatus rt_trace_gpu_photons(RtGpuScene *gs, const RtAccel *accel, const RtTraceParams *p,
                              const RtPhotonParams *pp, RtAabb rest_bounds, const RtPhotonSlots *d_slots,
                              double *ms, RtError *err);

/* A ray for rt_trace_gpu_rays: 32 bytes, two float4 loads. */
typedef struct RtGpuRay {
    RtVec3 o;
    float tmin;
    RtVec3 d;
    float tmax;
} RtGpuRay;

/* Casts n rays (device arrays) with the tracer's traversal: closest hit
 * (any_hit = 0) or any hit (shadow rays; hits[i].tri = the occluder or
 * RT_NO_HIT), through accel (as rt_trace_gpu). The ray map treats ray i as pixel (i % width, i / width), so
 * rays stored in row-major pixel order get the 4x8 tiles. With textures on,
 * map_d cutouts are skipped as in rendering. steps (device, optional)
 * receives the nodes visited per ray. ms (optional) = kernel GPU time.
 * rays and hits lie at 16-byte aligned addresses (else RT_ERR_ARG). */
RtStatus rt_trace_gpu_rays(RtGpuScene *gs, const RtAccel *accel, const RtTraceParams *p,
                           const RtGpuRay *d_rays, RtHit *d_hits, uint32_t *d_steps,
                           uint32_t n, int width, int any_hit, double *ms, RtError *err);

/* The primary rays of cam at width x height (through each pixel's centre,
 * as the benchmark's camera rays: origin cam's, tmin 0, tmax infinite),
 * made in the cast's kernel instead of read from memory, closest hit, into
 * d_hits[y * width + x] (device, 16-byte aligned); otherwise as
 * rt_trace_gpu_rays. The peers' benchmarks make their primary rays in the
 * kernel too, so their rates and these compare (docs/benchmarks.md). */
RtStatus rt_trace_gpu_camera_rays(RtGpuScene *gs, const RtAccel *accel, const RtTraceParams *p,
                                  const RtCamera *cam, int width, int height, RtHit *d_hits,
                                  uint32_t *d_steps, double *ms, RtError *err);

/* The same casts on the CPU: trace_ray.cuh's loop compiled for the host
 * (trace_emu.cu), warps of 32 lanes emulated in lock step, so every variant
 * (packets included) can be checked against the brute force, and a missed
 * hit debugged, without a GPU. Host arrays: tris (with Woop rows), a tree
 * from rt_kd_build_cpu, rays, hits, steps (optional). map_d cut-outs are
 * not applied. A build without CUDA returns RT_ERR_NO_DEVICE. accel: a
 * host kd-tree (rt_kd_build_cpu) or BVH (rt_lbvh_build_cpu). */
RtStatus rt_trace_emulate_rays(const RtTriArrays *tris, const RtAccel *accel,
                               const RtTraceParams *p, const RtGpuRay *rays, RtHit *hits,
                               uint32_t *steps, uint32_t n, int width, int any_hit, RtError *err);

#ifdef __cplusplus
}
#endif
#endif
