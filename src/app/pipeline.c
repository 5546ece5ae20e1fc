/* pipeline.c — one frame: animate -> build -> trace, on either backend
 * (pipeline.h). The GPU backend queues all three stages without a host wait
 * and finishes the build's counters after the trace; the CPU backend is the
 * oracle the GPU is checked against. */
#include "app/pipeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anim/anim_gpu.h"
#include "gpu/gpu.h"
#include "gpu/gpu_scene.h"
#include "render/sample.h"

/* The diffuse pass's buffers (rt_pipeline_cast_diffuse), grown to the
 * largest w*h asked for and kept between frames. */
typedef struct DiffuseBufs {
    size_t cap;          /* entries of each array */
    RtRay *cam;          /* camera rays, pixel order */
    RtHit *primary;      /* their closest hits */
    RtRay *rays;         /* diffuse rays, one per primary hit, in pixel order */
    uint32_t *pixel;     /* rays[k]'s pixel */
    RtHit *hits;         /* rays[k]'s closest hit */
    RtGpuRay *staging;   /* GPU: rays as rt_trace_gpu_rays reads them */
    RtGpuRay *d_rays;    /* GPU: device copies */
    RtHit *d_hits;
} DiffuseBufs;

struct RtPipeline {
    RtBackend backend;
    const RtScene *scene;
    int has_frame;        /* a frame ran: its tree and triangles are there */
    int built;            /* RtStructure of the tree held now (the last frame's) */
    RtFrameStats last;    /* the last frame's counts (tree stats are filled in here too) */
    /* CPU backend */
    RtSceneFrame frame;   /* the scene at t (also the GPU's host fallback of the animate stage) */
    RtTriArrays tris;     /* frame.view flattened; GPU: the host fallback's upload */
    RtKdTree tree;        /* host kd-tree (empty with brute_force) */
    RtBvh bvh;            /* host BVH (structures lbvh and bvh) */
    /* GPU backend */
    RtGpu *gpu;
    RtGpuScene *gscene;
    RtGpuAnim *anim;      /* the animate stage on the device; NULL = host evaluation + upload */
    RtKdGpu *kd;
    RtKdTree d_tree;      /* device pointers owned by kd */
    RtKdGpuStats kd_stats;
    RtLbvhGpu *lbvh;      /* created at the first lbvh frame */
    RtHplocGpu *hploc;    /* created at the first bvh frame */
    RtBvh d_bvh;          /* device pointers owned by lbvh or hploc (the one `built` names) */
    uint8_t *d_rgba;      /* w*h*4, grown on demand: the frame when the caller gives no device buffer */
    size_t rgba_bytes;
    int animated;         /* the device holds a frame's triangles */
    uint64_t tris_written; /* times the animate stage rewrote the device triangles */
    /* the diffuse pass */
    DiffuseBufs diffuse;
    /* RT_STRUCT_AUTO (rt_pipeline_frame) */
    struct {
        double cost[RT_STRUCT_AUTO];   /* last build + trace ms of each candidate; NAN: not yet */
        int measured[RT_STRUCT_AUTO];  /* times measured */
        uint64_t at[RT_STRUCT_AUTO];   /* the frame of its last measurement */
        int current;                   /* the choice */
        uint64_t frame, probed;        /* frames run; the frame of the last probe */
        RtCamera cam;                  /* the view at the last probe */
        float diag;                    /* the scene's diagonal (its vertices as loaded); < 0: not yet */
        char note[160];
    } auto_;
    /* GPU memory fallback (rt_pipeline_frame): structures the device ran out
     * of memory for, never tried again by this pipeline */
    unsigned oom_mask;
    char oom_note[RT_ERROR_MAX + 64];
    RtTriArrays host_tris;  /* GPU: the device triangles (vertices, Woop rows) on the host, for making
                               diffuse rays and for the validator */
    uint64_t host_tris_of;  /* GPU: tris_written when host_tris was copied */
    /* photon mapping (rt_pipeline_frame) */
    RtAabb rest_bounds;     /* the scene at its start time: the lights' photon units (photon.h) */
    int photons_ready;      /* the last frame made maps: retraces shade with them */
    RtPhotonSlots pslots;   /* CPU */
    RtPhotonMapsCpu pmaps;  /* CPU */
    RtPhotonGpu *pgpu;      /* GPU, created at the first photon-mapped frame */
    RtPhotonMaps d_pmaps;   /* GPU: the device view */
    /* progressive accumulation (RtShadeParams.sample): linear colour sums per pixel */
    RtFloat4 *accum;        /* host (CPU backend) or device (GPU backend) */
    size_t accum_cap;       /* pixels */
    float *d_env;           /* GPU: the scene's environment map, uploaded at the first frame that needs it */
    RtEmitter *emitters;    /* the scene's emissive triangles (rest-pose picks), made at the first frame that
                               needs them; the GPU's copy in d_emitters */
    RtEmitter *d_emitters;
    uint32_t emitter_count;
    int emitters_made;
};

RtPipelineParams rt_pipeline_params_default(void)
{
    RtPipelineParams p;
    memset(&p, 0, sizeof p);
    p.structure = RT_STRUCT_KD;
    p.build = rt_kd_gpu_params_default();
    p.kd_cpu = rt_kd_cpu_params_default();
    p.lbvh = rt_lbvh_params_default();
    p.hploc = rt_hploc_params_default();
    p.bvh_top = rt_split_top_params_default();
    p.bvh_top.depth = 0;
    p.trace = rt_trace_params_default();
    p.photons = rt_photon_params_default();
    return p;
}

/* The CPU renderer's parameters: the shading of pp.trace, the CPU knobs. */
static RtRenderParams render_params(const RtPipelineParams *pp)
{
    RtRenderParams r = rt_render_params_default();
    r.shade = pp->trace.shade;
    r.use_woop = pp->trace.isect == RT_ISECT_WOOP;
    r.brute_force = pp->brute_force;
    r.threads = pp->threads;
    return r;
}

RtStatus rt_scene_camera_at(const RtScene *scene, float t, RtCamera *cam, RtError *err)
{
    if (scene->anim.camera_track < 0) {
        *cam = scene->camera;
        return RT_OK;
    }
    /* The camera track alone: the same evaluation over a copy that has no
     * vertices, triangles or per-vertex motion, so nothing per vertex runs. */
    RtScene bare = *scene;
    bare.vert_count = 0;
    bare.tri_count = 0;
    bare.anim.vert_node = NULL;
    bare.anim.morph_count = 0;
    bare.anim.deform_count = 0;
    RtSceneFrame fr;
    memset(&fr, 0, sizeof fr);
    RtStatus st = rt_scene_frame_at(&bare, t, &fr, err);
    if (st == RT_OK) *cam = fr.view.camera;
    rt_scene_frame_free(&fr);
    return st;
}

/* ---- lifetime ----------------------------------------------------------------- */

static RtStatus gpu_open(RtPipeline *p, int width, int height, RtError *err)
{
    const RtScene *scene = p->scene;
    RtStatus st = rt_gpu_create(0, &p->gpu, err);
    /* a dynamic scene's vertices are in node space: the device scene (and
     * its ray offset) starts from the scene at its start time, then the
     * animate stage rewrites the triangles on the device every frame */
    int dynamic = rt_anim_is_dynamic(&scene->anim);
    const RtScene *first = scene;
    if (st == RT_OK && dynamic) {
        float t0, t1;
        rt_scene_time_range(scene, &t0, &t1);
        st = rt_scene_frame_at(scene, t0, &p->frame, err);
        first = &p->frame.view;
    }
    if (st == RT_OK) st = rt_gpu_scene_create(first, &p->gscene, err);
    if (st == RT_OK && dynamic) st = rt_gpu_anim_create(scene, &p->anim, err);
    if (st == RT_OK) st = rt_kd_gpu_create(&p->kd, err);
    if (st == RT_OK) {
        p->rgba_bytes = (size_t)width * height * 4;
        st = rt_gpu_malloc((void **)&p->d_rgba, p->rgba_bytes, err);
    }
    return st;
}

/* The scene's bounds at its start time (a dynamic scene's vertices are in
 * node space until evaluated). */
static RtStatus rest_bounds(const RtScene *scene, RtAabb *out, RtError *err)
{
    if (!rt_anim_is_dynamic(&scene->anim)) {
        *out = rt_scene_bounds(scene);
        return RT_OK;
    }
    float t0, t1;
    rt_scene_time_range(scene, &t0, &t1);
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    RtStatus st = rt_scene_frame_at(scene, t0, &f, err);
    if (st == RT_OK) *out = rt_scene_bounds(&f.view);
    rt_scene_frame_free(&f);
    return st;
}

RtStatus rt_pipeline_create(const RtScene *scene, RtBackend backend, int width, int height,
                            RtPipeline **out, RtError *err)
{
    *out = NULL;
    RtPipeline *p = calloc(1, sizeof *p);
    if (!p) return rt_fail(err, RT_ERR_OOM, "APP: out of host memory");
    p->backend = backend;
    p->scene = scene;
    p->auto_.diag = -1.0f;
    RtStatus st = rest_bounds(scene, &p->rest_bounds, err);
    if (st == RT_OK && backend == RT_BACKEND_GPU) st = gpu_open(p, width, height, err);
    if (st != RT_OK) {
        rt_pipeline_destroy(p);
        return st;
    }
    *out = p;
    return RT_OK;
}

static void diffuse_free(DiffuseBufs *b)
{
    free(b->cam);
    free(b->primary);
    free(b->rays);
    free(b->pixel);
    free(b->hits);
    free(b->staging);
    rt_gpu_free(b->d_rays);
    rt_gpu_free(b->d_hits);
    memset(b, 0, sizeof *b);
}

void rt_pipeline_destroy(RtPipeline *p)
{
    if (!p) return;
    diffuse_free(&p->diffuse);
    rt_photon_slots_free(&p->pslots);
    rt_photon_maps_cpu_free(&p->pmaps);
    rt_photon_gpu_destroy(p->pgpu);
    if (p->backend == RT_BACKEND_GPU) rt_gpu_free(p->accum);
    else free(p->accum);
    rt_gpu_free(p->d_env);
    rt_gpu_free(p->d_emitters);
    free(p->emitters);
    rt_tri_arrays_free(&p->host_tris);
    rt_gpu_free(p->d_rgba);
    rt_gpu_anim_destroy(p->anim);
    rt_kd_gpu_destroy(p->kd);
    rt_lbvh_gpu_destroy(p->lbvh);
    rt_hploc_gpu_destroy(p->hploc);
    rt_gpu_scene_destroy(p->gscene);
    rt_gpu_destroy(p->gpu);
    rt_scene_frame_free(&p->frame);
    rt_tri_arrays_free(&p->tris);
    rt_kd_tree_free(&p->tree);
    rt_bvh_free(&p->bvh);
    free(p);
}

RtBackend rt_pipeline_backend(const RtPipeline *p) { return p->backend; }

void rt_pipeline_describe(const RtPipeline *p, char *buf, size_t n)
{
    if (p->backend == RT_BACKEND_CPU) {
        snprintf(buf, n, "CPU, %d threads", rt_thread_count());
        return;
    }
    const RtGpuInfo *i = rt_gpu_info(p->gpu);
    if (!i) {
        snprintf(buf, n, "GPU (unknown)");
        return;
    }
    snprintf(buf, n, "GPU: %s, sm_%d%d, driver %d.%d, runtime %d.%d", i->name, i->sm_major, i->sm_minor,
             i->driver_version / 1000, (i->driver_version % 1000) / 10, i->runtime_version / 1000,
             (i->runtime_version % 1000) / 10);
}

/* ---- the structure in the slot ------------------------------------------------- */

/* The tree held now as the tracers take it (render/accel.h): host memory on
 * the CPU backend, device memory on the GPU's. */
static int is_bvh(int structure) { return structure == RT_STRUCT_LBVH || structure == RT_STRUCT_BVH; }

static RtAccel frame_accel(const RtPipeline *p)
{
    const int gpu = p->backend == RT_BACKEND_GPU;
    if (is_bvh(p->built)) return rt_accel_bvh(gpu ? &p->d_bvh : &p->bvh);
    return rt_accel_kd(gpu ? &p->d_tree : &p->tree);
}

/* A BVH's statistics in the fields the two structures share (pipeline.h). */
static RtKdStats tree_stats_of_bvh(const RtBvhStats *b)
{
    RtKdStats k;
    memset(&k, 0, sizeof k);
    k.nodes = b->nodes;
    k.leaves = b->leaves;
    k.depth = b->depth;
    k.references = b->references;
    k.triangles = b->triangles;
    k.degenerate = b->degenerate;
    k.avg_tris_per_leaf = b->avg_tris_per_leaf;
    k.sah_cost = b->sah_cost;
    k.build_ms = b->build_ms;
    return k;
}

/* The scene's emissive triangles: Ke luminance x rest-pose area as the
 * pick weight (any positive weights keep the estimate unbiased: the
 * sample's pdf uses the frame's own area), normalised into a cdf. */
static RtStatus make_emitters(RtPipeline *p, RtError *err)
{
    const RtScene *s = p->scene;
    p->emitters_made = 1;
    double total = 0.0;
    uint32_t n = 0;
    for (int pass = 0; pass < 2; pass++) {
        double run = 0.0;
        for (uint32_t i = 0; i < s->tri_count; i++) {
            int32_t m = s->tris[i].material;
            if (m < 0 || (uint32_t)m >= s->mat_count) continue;
            RtVec3 ke = s->mats[m].ke;
            float lum = 0.2126f * ke.x + 0.7152f * ke.y + 0.0722f * ke.z;
            const RtVertex *a = &s->verts[s->tris[i].v[0]], *b = &s->verts[s->tris[i].v[1]], *c = &s->verts[s->tris[i].v[2]];
            double w = (double)lum * 0.5 * v3_len(v3_cross(v3_sub(b->p, a->p), v3_sub(c->p, a->p)));
            if (!(w > 0.0) || !isfinite(w)) continue;
            if (pass == 0) {
                total += w, n++;
                continue;
            }
            run += w;
            RtEmitter e = {i, (float)(w / total), (float)(run / total), ke};
            p->emitters[p->emitter_count++] = e;
        }
        if (pass == 0) {
            if (!n) return RT_OK;
            if (!(p->emitters = malloc(n * sizeof *p->emitters)))
                return rt_fail(err, RT_ERR_OOM, "APP: out of memory for %u emissive triangles", n);
        }
    }
    p->emitters[p->emitter_count - 1].cdf = 1.0f; /* rounding never leaves a pick past the last */
    if (p->backend == RT_BACKEND_GPU) {
        size_t bytes = p->emitter_count * sizeof *p->emitters;
        RtStatus st = rt_gpu_alloc((void **)&p->d_emitters, bytes, "emissive triangles", err);
        if (st == RT_OK) st = rt_gpu_memcpy(p->d_emitters, p->emitters, bytes, RT_COPY_TO_DEVICE, err);
        if (st != RT_OK) return st;
    }
    return RT_OK;
}

/* The frame's shading state for a w x h trace: the photon maps when the
 * frame made them, the accumulation sums (grown to w*h, kept). */
static RtStatus shade_frame(RtPipeline *p, int w, int h, RtShadeFrame *fr, RtError *err)
{
    const int gpu = p->backend == RT_BACKEND_GPU;
    size_t n = (size_t)w * (size_t)h;
    if (n > p->accum_cap) {
        if (gpu) rt_gpu_free(p->accum);
        else free(p->accum);
        p->accum = NULL;
        p->accum_cap = 0;
        if (gpu) {
            RtStatus s = rt_gpu_alloc((void **)&p->accum, n * sizeof *p->accum, "accumulation", err);
            if (s != RT_OK) return s;
        } else if (!(p->accum = malloc(n * sizeof *p->accum))) {
            return rt_fail(err, RT_ERR_OOM, "APP: out of host memory for %zu accumulation pixels", n);
        }
        p->accum_cap = n;
    }
    fr->accum = p->accum;
    fr->photons = !p->photons_ready ? NULL : gpu ? &p->d_pmaps : &p->pmaps.view;
    /* the environment map: the scene's on the host, a copy on the device */
    const RtEnvMap *e = &p->scene->env;
    memset(&fr->env, 0, sizeof fr->env);
    if (e->rgb) {
        size_t bytes = (size_t)e->w * e->h * 3 * sizeof(float);
        if (gpu && !p->d_env) {
            RtStatus s = rt_gpu_alloc((void **)&p->d_env, bytes, "environment map", err);
            if (s == RT_OK) s = rt_gpu_memcpy(p->d_env, e->rgb, bytes, RT_COPY_TO_DEVICE, err);
            if (s != RT_OK) return s;
        }
        fr->env.rgb = gpu ? p->d_env : e->rgb;
        fr->env.w = e->w, fr->env.h = e->h, fr->env.intensity = e->intensity, fr->env.rotate = e->rotate;
    }
    RtStatus s = p->emitters_made ? RT_OK : make_emitters(p, err);
    if (s != RT_OK) return s;
    fr->emit.e = gpu ? p->d_emitters : p->emitters;
    fr->emit.count = p->emitter_count;
    return RT_OK;
}

/* ---- the CPU backend ----------------------------------------------------------- */

static RtStatus cpu_trace(RtPipeline *p, const RtPipelineParams *pp, const RtCamera *cam,
                          const RtFrameTarget *target, RtRenderStats *rs, double *ms, RtError *err)
{
    if (!target->img) return rt_fail(err, RT_ERR_ARG, "APP: the CPU backend renders into a host image");
    RtRenderParams rp = render_params(pp);
    double t0 = rt_now_ms();
    RtAccel accel = frame_accel(p);
    RtShadeFrame fr;
    RtStatus st = shade_frame(p, target->img->w, target->img->h, &fr, err);
    if (st != RT_OK) return st;
    st = rt_render_cpu(&p->frame.view, &p->tris, pp->brute_force ? NULL : &accel, &fr, cam, &rp,
                                target->img, NULL, rs, err);
    *ms = rt_now_ms() - t0;
    return st;
}

static RtStatus cpu_frame(RtPipeline *p, const RtPipelineParams *pp, float t, const RtCamera *cam,
                          const RtFrameTarget *target, RtFrameStats *st, RtError *err)
{
    /* animate: the scene's vertices, lights and camera at t, flattened for
     * the builder and the renderer (arrays reused from the last frame) */
    double t0 = rt_now_ms();
    RtStatus s = rt_scene_frame_at(p->scene, t, &p->frame, err);
    if (s != RT_OK) return s;
    uint32_t degenerate = 0;
    if ((s = rt_tri_arrays_update(&p->frame.view, &p->tris, &degenerate)) != RT_OK)
        return rt_fail(err, s, "APP: out of memory flattening %u triangles", p->scene->tri_count);
    double t1 = rt_now_ms();
    st->animate_ms = t1 - t0;

    /* build: the structure in the slot, from scratch, as a dynamic scene needs */
    st->has_tree = !pp->brute_force;
    if (st->has_tree) {
        switch (pp->structure) {
        case RT_STRUCT_KD: {
            RtKdCpuParams kp = pp->kd_cpu;
            if (pp->threads > 0) kp.threads = pp->threads;
            if ((s = rt_kd_build_cpu(&kp, &p->tris, &p->tree, &st->tree, err)) != RT_OK) return s;
            st->tree_full = 1;
            break;
        }
        case RT_STRUCT_LBVH:
        case RT_STRUCT_BVH: {
            RtBvhStats bs;
            if (pp->structure == RT_STRUCT_LBVH) s = rt_lbvh_build_cpu(&pp->lbvh, &p->tris, &p->bvh, &bs, err);
            else if (pp->bvh_top.depth > 0)
                s = rt_bvh_split_top_build_cpu(&pp->hploc, &pp->bvh_top, &p->tris, &p->bvh, &bs, NULL, err);
            else s = rt_hploc_build_cpu(&pp->hploc, &p->tris, &p->bvh, &bs, NULL, err);
            if (s != RT_OK) return s;
            st->tree = tree_stats_of_bvh(&bs);
            st->tree_full = 1;
            break;
        }
        default: return rt_fail(err, RT_ERR_ARG, "APP: unknown structure %d", pp->structure);
        }
    }
    st->tree.triangles = p->scene->tri_count;
    st->tree.degenerate = degenerate;
    st->build_ms = rt_now_ms() - t1;
    p->has_frame = 1;
    p->built = pp->structure;

    /* photons: traced through the frame's structure, both maps built */
    p->photons_ready = 0;
    if (pp->photons.count) {
        RtPhotonParams ph = pp->photons;
        RtRenderParams rp = render_params(pp);
        RtAccel accel = frame_accel(p);
        double t2 = rt_now_ms();
        if ((s = rt_photon_params_check(&ph, err)) != RT_OK ||
            (s = rt_photon_slots_reserve(&p->pslots, ph.count, ph.max_depth, err)) != RT_OK ||
            (s = rt_render_photons_cpu(&p->frame.view, &p->tris, pp->brute_force ? NULL : &accel, &rp, &ph,
                                       p->rest_bounds, &p->pslots, err)) != RT_OK)
            return s;
        st->photons.trace_ms = rt_now_ms() - t2; /* the maps' build fills the other fields */
        if ((s = rt_photon_maps_build_cpu(&p->pmaps, &p->pslots, &ph, p->rest_bounds, &st->photons, err)) != RT_OK)
            return s;
        st->has_photons = p->photons_ready = 1;
    }

    /* trace */
    RtRenderStats rs;
    memset(&rs, 0, sizeof rs);
    if ((s = cpu_trace(p, pp, cam ? cam : &p->frame.view.camera, target, &rs, &st->trace_ms, err)) != RT_OK)
        return s;
    st->primary_rays = rs.primary_rays;
    st->shadow_rays = rs.shadow_rays;
    st->reflection_rays = rs.reflection_rays;
    return RT_OK;
}

/* ---- the GPU backend ----------------------------------------------------------- */

/* animate: this frame's triangles on the device. */
static RtStatus gpu_animate(RtPipeline *p, float t, RtFrameStats *st, RtError *err)
{
    const RtScene *scene = p->scene;
    if (p->animated && !rt_anim_is_dynamic(&scene->anim)) return RT_OK; /* static: the first upload stays */
    double t0 = rt_now_ms();
    RtStatus s;
    if (p->anim) {
        s = rt_gpu_anim_eval(p->anim, scene, t, p->gscene, &st->animate_ms, err);
    } else {
        /* no GPU animate stage: evaluate on the host and upload */
        s = rt_scene_frame_at(scene, t, &p->frame, err);
        uint32_t degenerate = 0;
        if (s == RT_OK) s = rt_tri_arrays_update(&p->frame.view, &p->tris, &degenerate);
        if (s == RT_OK) s = rt_gpu_scene_update_tris(p->gscene, p->tris.verts, p->tris.count, 0, err);
        st->animate_ms = rt_now_ms() - t0;
    }
    if (s == RT_OK) {
        p->animated = 1;
        p->tris_written++;
    }
    return s;
}

/* The device image the trace writes: the caller's buffer or ours, grown. */
static RtStatus gpu_target(RtPipeline *p, const RtFrameTarget *target, uint8_t **dst, RtError *err)
{
    if (target->d_rgba) {
        *dst = target->d_rgba;
        return RT_OK;
    }
    size_t bytes = (size_t)target->w * target->h * 4;
    if (bytes > p->rgba_bytes) {
        rt_gpu_free(p->d_rgba);
        p->d_rgba = NULL;
        p->rgba_bytes = 0;
        RtStatus s = rt_gpu_malloc((void **)&p->d_rgba, bytes, err);
        if (s != RT_OK) return s;
        p->rgba_bytes = bytes;
    }
    *dst = p->d_rgba;
    return RT_OK;
}

static RtStatus gpu_readback(RtPipeline *p, const RtFrameTarget *target, const uint8_t *dst, double *ms,
                             RtError *err)
{
    *ms = 0;
    if (target->d_rgba || !target->img) return RT_OK;
    double t0 = rt_now_ms();
    RtStatus s = rt_gpu_memcpy(target->img->rgba, dst, (size_t)target->w * target->h * 4, RT_COPY_TO_HOST, err);
    (void)p;
    *ms = rt_now_ms() - t0;
    return s;
}

/* build, structure lbvh or bvh: queued on the structure's builder (created
 * at its first frame), its device BVH in d_bvh; with the leaf triangles'
 * rows where they pay for a frame of `pixels` (rt_bvh_leaf_rows_pay). */
static RtStatus gpu_bvh_build(RtPipeline *p, const RtPipelineParams *pp, const RtTriArrays *d, double pixels,
                              RtError *err)
{
    RtStatus s;
    const RtFloat4 *rows = rt_bvh_leaf_rows_pay(pp->bvh_leaf_rows, pixels, d->count) ? d->woop : NULL;
    if (pp->structure == RT_STRUCT_LBVH) {
        if (!p->lbvh && (s = rt_lbvh_gpu_create(&p->lbvh, err)) != RT_OK) return s;
        s = rt_lbvh_gpu_build(p->lbvh, &pp->lbvh, d->verts, rows, d->count, &p->d_bvh, NULL, err);
    } else {
        if (!p->hploc && (s = rt_hploc_gpu_create(&p->hploc, err)) != RT_OK) return s;
        s = rt_hploc_gpu_set_top(p->hploc, &pp->bvh_top, err);
        if (s == RT_OK) s = rt_hploc_gpu_build(p->hploc, &pp->hploc, d->verts, rows, d->count, &p->d_bvh, NULL, err);
    }
    if (s == RT_OK) p->built = pp->structure;
    return s;
}

/* The last BVH build's GPU time, launches, input and valid triangles. */
static RtStatus gpu_bvh_finish(RtPipeline *p, double *ms, uint32_t *launches, uint32_t *tris, uint32_t *valid,
                               RtError *err)
{
    RtStatus s;
    if (p->built == RT_STRUCT_LBVH) {
        RtLbvhGpuStats ls;
        if ((s = rt_lbvh_gpu_build_finish(p->lbvh, &ls, err)) != RT_OK) return s;
        *ms = ls.ms, *launches = ls.launches, *tris = ls.triangles, *valid = ls.valid;
    } else {
        RtHplocGpuStats hs;
        if ((s = rt_hploc_gpu_build_finish(p->hploc, &hs, err)) != RT_OK) return s;
        *ms = hs.ms, *launches = hs.launches, *tris = hs.triangles, *valid = hs.valid;
    }
    return RT_OK;
}

/* The photon stage of a GPU frame through the frame's structure (built,
 * or queued on the default stream before it). */
static RtStatus gpu_photons(RtPipeline *p, const RtPipelineParams *pp, RtFrameStats *st, RtError *err)
{
    RtStatus s = rt_photon_params_check(&pp->photons, err);
    if (s == RT_OK && !p->pgpu) s = rt_photon_gpu_create(&p->pgpu, err);
    if (s != RT_OK) return s;
    RtAccel accel = frame_accel(p);
    if ((s = rt_photon_gpu_frame(p->pgpu, p->gscene, &accel, &pp->trace, &pp->photons, p->rest_bounds, &p->d_pmaps,
                                 &st->photons, err)) != RT_OK)
        return s;
    st->has_photons = p->photons_ready = 1;
    return RT_OK;
}

static RtStatus gpu_frame(RtPipeline *p, const RtPipelineParams *pp, float t, const RtCamera *cam,
                          const RtFrameTarget *target, RtFrameStats *st, RtError *err)
{
    uint8_t *dst = NULL;
    RtStatus s = gpu_target(p, target, &dst, err);
    RtCamera scene_cam;
    if (s == RT_OK && !cam && (s = rt_scene_camera_at(p->scene, t, &scene_cam, err)) == RT_OK) cam = &scene_cam;
    if (s != RT_OK) return s;

    /* animate: the scene at time t -> device vertices and Woop rows */
    if ((s = gpu_animate(p, t, st, err)) != RT_OK) return s;

    RtTriArrays d_tris = rt_gpu_scene_tris(p->gscene);
    RtTraceStats ts;
    memset(&ts, 0, sizeof ts);
    p->photons_ready = 0;
    const int photons = pp->photons.count > 0;
    switch (pp->structure) {
    case RT_STRUCT_KD: {
        /* build: queued without waiting for it (no host round trip) */
        s = rt_kd_gpu_build_async(p->kd, &pp->build, d_tris.verts, d_tris.woop, d_tris.count, &p->d_tree, err);
        if (s != RT_OK) return s;
        p->built = RT_STRUCT_KD;
        /* trace: queued behind the build; then the build's sizes (and
         * overflow bits), which arrived behind it. A build that overflowed
         * a buffer was redone with larger ones: trace again. Photons need
         * the finished tree (their stage waits for the host anyway). */
        int rebuilt = 0;
        RtAccel accel = frame_accel(p);
        RtStatus fs = RT_OK;
        if (photons && ((fs = rt_kd_gpu_build_finish(p->kd, &p->d_tree, &p->kd_stats, &rebuilt, err)) != RT_OK ||
                        (fs = gpu_photons(p, pp, st, err)) != RT_OK))
            return fs;
        RtShadeFrame fr;
        if ((s = shade_frame(p, target->w, target->h, &fr, err)) != RT_OK) return s;
        s = rt_trace_gpu(p->gscene, &accel, &fr, cam, &pp->trace, dst, target->w, target->h, NULL, &ts, err);
        if (!photons) fs = rt_kd_gpu_build_finish(p->kd, &p->d_tree, &p->kd_stats, &rebuilt, err);
        if (s != RT_OK) return s;
        if (fs != RT_OK) return fs;
        if (rebuilt && !photons &&
            (s = rt_trace_gpu(p->gscene, &accel, &fr, cam, &pp->trace, dst, target->w, target->h, NULL, &ts, err)) != RT_OK)
            return s;
        const RtKdGpuStats *k = &p->kd_stats;
        st->build_ms = k->gpu_ms > 0 ? k->gpu_ms : k->build_ms;
        st->build_large_ms = k->large_ms;
        st->build_small_ms = k->small_ms;
        st->launches = k->launches;
        st->round_trips = k->round_trips;
        st->rebuilds = k->rebuilds;
        st->tree.nodes = k->nodes;
        st->tree.leaves = k->leaves;
        st->tree.references = k->references;
        st->tree.triangles = k->triangles;
        st->tree.degenerate = k->triangles - k->valid_triangles;
        st->kd_gpu = k;
        break;
    }
    case RT_STRUCT_LBVH:
    case RT_STRUCT_BVH: {
        if ((s = gpu_bvh_build(p, pp, &d_tris, (double)target->w * target->h, err)) != RT_OK) return s;
        /* build and trace queued without a wait; the build's time and counts after the trace */
        if (photons && (s = gpu_photons(p, pp, st, err)) != RT_OK) return s;
        RtAccel accel = frame_accel(p);
        RtShadeFrame fr;
        if ((s = shade_frame(p, target->w, target->h, &fr, err)) != RT_OK) return s;
        s = rt_trace_gpu(p->gscene, &accel, &fr, cam, &pp->trace, dst, target->w, target->h, NULL, &ts, err);
        double ms = 0;
        uint32_t launches = 0, tris = 0, valid = 0;
        RtStatus fs = gpu_bvh_finish(p, &ms, &launches, &tris, &valid, err);
        if (s != RT_OK) return s;
        if (fs != RT_OK) return fs;
        st->build_ms = ms;
        st->launches = launches;
        st->tree.nodes = valid > 1 ? valid - 1 : valid; /* all interior nodes; reachable: tree_stats */
        st->tree.references = valid;
        st->tree.triangles = tris;
        st->tree.degenerate = tris - valid;
        break;
    }
    default: return rt_fail(err, RT_ERR_ARG, "APP: unknown structure %d", pp->structure);
    }
    p->has_frame = 1;
    if ((s = gpu_readback(p, target, dst, &st->readback_ms, err)) != RT_OK) return s;
    st->has_tree = 1;
    st->tree.sah_cost = NAN;
    st->trace_ms = ts.ms;
    st->primary_rays = ts.primary_rays;
    st->shadow_rays = ts.shadow_rays;
    st->reflection_rays = ts.reflection_rays;
    return RT_OK;
}

/* ---- the frame ----------------------------------------------------------------- */

static const char *structure_name(int s)
{
    static const char *const names[RT_STRUCT_AUTO] = {"kd", "lbvh", "bvh"};
    return s >= 0 && s < RT_STRUCT_AUTO ? names[s] : "?";
}

/* RT_STRUCT_AUTO: the view moved or turned enough since the last probe. */
static int auto_view_changed(RtPipeline *p, const RtCamera *cam)
{
    if (p->auto_.diag < 0) {
        RtAabb b = aabb_empty();
        for (uint32_t i = 0; i < p->scene->vert_count; i++) b = aabb_grow(b, p->scene->verts[i].p);
        p->auto_.diag = aabb_is_empty(b) ? 0.0f : v3_len(v3_sub(b.hi, b.lo));
    }
    const RtCamera *a = &p->auto_.cam;
    RtVec3 da = v3_norm(v3_sub(a->look, a->pos)), db = v3_norm(v3_sub(cam->look, cam->pos));
    float turn = acosf(fminf(1.0f, fmaxf(-1.0f, v3_dot(da, db)))) * (180.0f / 3.14159265f);
    return v3_len(v3_sub(a->pos, cam->pos)) > RT_AUTO_MOVE * p->auto_.diag || turn > RT_AUTO_TURN ||
           fabsf(a->fov_y - cam->fov_y) > RT_AUTO_TURN;
}

/* RT_STRUCT_AUTO: the candidate not in use measured longest ago (the next
 * to probe). */
static int auto_other(const RtPipeline *p)
{
    int other = -1;
    for (int s = 0; s < RT_STRUCT_AUTO; s++)
        if (s != p->auto_.current && (other < 0 || p->auto_.at[s] < p->auto_.at[other])) other = s;
    return other;
}

/* RT_STRUCT_AUTO: the structure of this frame. */
static int auto_pick(RtPipeline *p, const RtCamera *cam)
{
    for (int k = 0; k < 2; k++)
        for (int s = 0; s < RT_STRUCT_AUTO; s++)
            if (p->auto_.measured[s] <= k) return s; /* each twice: the first pays its allocations */
    if (p->auto_.frame - p->auto_.probed >= RT_AUTO_REPROBE || auto_view_changed(p, cam)) return auto_other(p);
    return p->auto_.current;
}

/* RT_STRUCT_AUTO: a frame of structure s cost ms; the choice and its note. */
static void auto_learn(RtPipeline *p, int s, double ms, const RtCamera *cam)
{
    int probe = s != p->auto_.current || p->auto_.measured[s] < 2;
    p->auto_.cost[s] = ms;
    p->auto_.measured[s]++;
    p->auto_.at[s] = p->auto_.frame;
    if (probe) {
        p->auto_.probed = p->auto_.frame;
        p->auto_.cam = *cam;
    }
    int ready = 1, best = p->auto_.current;
    for (int k = 0; k < RT_STRUCT_AUTO; k++) {
        ready &= p->auto_.measured[k] >= 2;
        if (p->auto_.cost[k] < p->auto_.cost[best]) best = k;
    }
    if (ready && p->auto_.cost[best] < (1.0 - RT_AUTO_MARGIN) * p->auto_.cost[p->auto_.current])
        p->auto_.current = best;
    const int cur = p->auto_.current;
    if (!ready) {
        snprintf(p->auto_.note, sizeof p->auto_.note, "auto: measuring (%s %.2f ms)", structure_name(s), ms);
    } else {
        int at = snprintf(p->auto_.note, sizeof p->auto_.note, "auto: %s %.2f ms vs", structure_name(cur),
                          p->auto_.cost[cur]);
        for (int k = 0; k < RT_STRUCT_AUTO; k++)
            if (k != cur && at > 0 && (size_t)at < sizeof p->auto_.note)
                at += snprintf(p->auto_.note + at, sizeof p->auto_.note - (size_t)at, " %s %.2f ms",
                               structure_name(k), p->auto_.cost[k]);
        if (at > 0 && (size_t)at < sizeof p->auto_.note)
            snprintf(p->auto_.note + at, sizeof p->auto_.note - (size_t)at, " build+trace (probed %llu frames ago)",
                     (unsigned long long)(p->auto_.frame - p->auto_.probed));
    }
    p->auto_.frame++;
}

RtStatus rt_pipeline_frame(RtPipeline *p, const RtPipelineParams *pp, float t, const RtCamera *cam,
                           const RtFrameTarget *target, RtFrameStats *st, RtError *err)
{
    RtFrameStats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    RtPipelineParams chosen = *pp;
    const int is_auto = pp->structure == RT_STRUCT_AUTO;
    RtCamera view;
    if (is_auto) {
        RtStatus vs = cam ? (view = *cam, RT_OK) : rt_scene_camera_at(p->scene, t, &view, err);
        if (vs != RT_OK) return vs;
        chosen.structure = auto_pick(p, &view);
    }
    if (p->oom_mask & (1u << chosen.structure)) chosen.structure = RT_STRUCT_LBVH;
    st->backend = p->backend;
    st->t = t;
    double t0 = rt_now_ms();
    RtStatus s;
    for (;;) {
        st->structure = chosen.structure;
        st->build_large_ms = st->build_small_ms = NAN;
        s = p->backend == RT_BACKEND_GPU ? gpu_frame(p, &chosen, t, cam, target, st, err)
                                         : cpu_frame(p, &chosen, t, cam, target, st, err);
        /* Out of device memory: the LBVH needs the least (a few arrays of
         * n, against the kd-tree's references and nodes), so a kd or H-PLOC
         * frame that did not fit is redone with it, now and from now on;
         * when even that fails the caller falls back to the CPU. */
        if (!(s == RT_ERR_OOM && p->backend == RT_BACKEND_GPU && chosen.structure != RT_STRUCT_LBVH)) break;
        snprintf(p->oom_note, sizeof p->oom_note, "%s: %s -> lbvh (needs less memory)",
                 err && err->msg[0] ? err->msg : "GPU: out of device memory", structure_name(chosen.structure));
        RT_WARN("APP", "%s", p->oom_note);
        p->oom_mask |= 1u << chosen.structure;
        chosen.structure = RT_STRUCT_LBVH;
        memset(st, 0, sizeof *st);
        st->backend = p->backend;
        st->t = t;
    }
    st->frame_ms = rt_now_ms() - t0;
    if (is_auto && s == RT_OK && !pp->brute_force) {
        auto_learn(p, chosen.structure, st->build_ms + st->trace_ms, &view);
        st->structure_note = p->auto_.note;
    }
    if (p->oom_mask && s == RT_OK) st->structure_note = p->oom_note;
    p->last = *st;
    return s;
}

RtStatus rt_pipeline_retrace(RtPipeline *p, const RtPipelineParams *pp, const RtCamera *cam,
                             const RtFrameTarget *target, double *trace_ms, RtError *err)
{
    if (!p->has_frame) return rt_fail(err, RT_ERR_ARG, "APP: retrace before the first frame");
    if (p->backend == RT_BACKEND_CPU)
        return cpu_trace(p, pp, cam ? cam : &p->frame.view.camera, target, NULL, trace_ms, err);
    uint8_t *dst = NULL;
    RtStatus s = gpu_target(p, target, &dst, err);
    RtCamera scene_cam;
    if (s == RT_OK && !cam && (s = rt_scene_camera_at(p->scene, p->last.t, &scene_cam, err)) == RT_OK)
        cam = &scene_cam;
    if (s != RT_OK) return s;
    RtTraceStats ts;
    memset(&ts, 0, sizeof ts);
    RtAccel accel = frame_accel(p);
    RtShadeFrame fr;
    if ((s = shade_frame(p, target->w, target->h, &fr, err)) != RT_OK) return s;
    s = rt_trace_gpu(p->gscene, &accel, &fr, cam, &pp->trace, dst, target->w, target->h, NULL, &ts, err);
    *trace_ms = ts.ms;
    return s;
}

/* ---- the trace per ray type ------------------------------------------------------ */

void rt_ray_rates_derive(RtRayRates *r, const uint64_t rays[3])
{
    r->type_ms[0] = r->pass_ms[0];
    r->type_ms[1] = fmax(0.0, r->pass_ms[1] - r->pass_ms[0]);
    r->type_ms[2] = fmax(0.0, r->pass_ms[2] - r->pass_ms[1]);
    for (int k = 0; k < 3; k++)
        r->mrays[k] = rays[k] && r->type_ms[k] > 0 ? (double)rays[k] / (r->type_ms[k] * 1e3) : NAN;
}

RtStatus rt_pipeline_ray_rates(RtPipeline *p, const RtPipelineParams *pp, const RtCamera *cam,
                               const RtFrameTarget *target, int rounds, RtRayRates *out, RtError *err)
{
    if (rounds < 1) return rt_fail(err, RT_ERR_ARG, "APP: ray rates need at least one round, not %d", rounds);
    for (int k = 0; k < 3; k++) out->pass_ms[k] = INFINITY;
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 3; k++) {
            const int pass = r % 2 ? 2 - k : k;
            RtPipelineParams q = *pp;
            if (pass < 2) q.trace.shade.max_bounces = 0;
            if (pass < 1) q.trace.shade.shadows = 0;
            double ms = 0;
            RtStatus s = rt_pipeline_retrace(p, &q, cam, target, &ms, err);
            if (s != RT_OK) return s;
            out->pass_ms[pass] = fmin(out->pass_ms[pass], ms);
        }
    const uint64_t rays[3] = {p->last.primary_rays, p->last.shadow_rays, p->last.reflection_rays};
    rt_ray_rates_derive(out, rays);
    return RT_OK;
}

/* ---- the diffuse pass ----------------------------------------------------------- */

/* The buffers for n rays: host always, device on the GPU. */
static RtStatus diffuse_reserve(RtPipeline *p, size_t n, RtError *err)
{
    DiffuseBufs *b = &p->diffuse;
    if (n <= b->cap) return RT_OK;
    diffuse_free(b);
    b->cam = malloc(n * sizeof *b->cam);
    b->primary = malloc(n * sizeof *b->primary);
    b->rays = malloc(n * sizeof *b->rays);
    b->pixel = malloc(n * sizeof *b->pixel);
    b->hits = malloc(n * sizeof *b->hits);
    int gpu = p->backend == RT_BACKEND_GPU;
    if (gpu) b->staging = malloc(n * sizeof *b->staging);
    if (!b->cam || !b->primary || !b->rays || !b->pixel || !b->hits || (gpu && !b->staging)) {
        diffuse_free(b);
        return rt_fail(err, RT_ERR_OOM, "APP: out of host memory for %zu diffuse rays", n);
    }
    RtStatus s = RT_OK;
    if (gpu) {
        s = rt_gpu_malloc((void **)&b->d_rays, n * sizeof *b->d_rays, err);
        if (s == RT_OK) s = rt_gpu_malloc((void **)&b->d_hits, n * sizeof *b->d_hits, err);
    }
    if (s != RT_OK) {
        diffuse_free(b);
        return s;
    }
    b->cap = n;
    return RT_OK;
}

/* GPU: closest hits of rays[0..n) through the last frame's device tree;
 * *ms = the kernel's time. Always asked for: the launch log sums a kernel
 * name's pending times until a timed call resets it, so an untimed cast
 * would be added to the next timed one's. */
static RtStatus gpu_cast(RtPipeline *p, const RtTraceParams *tp, const RtRay *rays, uint32_t n, int width,
                         RtHit *hits, double *ms, RtError *err)
{
    DiffuseBufs *b = &p->diffuse;
    *ms = 0;
    if (n == 0) return RT_OK;
    for (uint32_t i = 0; i < n; i++) {
        RtGpuRay g = {rays[i].o, 0.0f, rays[i].d, INFINITY};
        b->staging[i] = g;
    }
    RtStatus s = rt_gpu_memcpy(b->d_rays, b->staging, n * sizeof *b->staging, RT_COPY_TO_DEVICE, err);
    RtAccel accel = frame_accel(p);
    if (s == RT_OK) s = rt_trace_gpu_rays(p->gscene, &accel, tp, b->d_rays, b->d_hits, NULL, n, width, 0, ms, err);
    if (s == RT_OK) s = rt_gpu_memcpy(hits, b->d_hits, n * sizeof *hits, RT_COPY_TO_HOST, err);
    return s;
}

/* GPU: the device triangles on the host (exactly what the builder saw),
 * copied again only after the animate stage rewrote them (a static scene's:
 * once). */
static RtStatus gpu_host_tris(RtPipeline *p, RtError *err)
{
    if (p->host_tris.verts && p->host_tris_of == p->tris_written) return RT_OK;
    RtTriArrays d = rt_gpu_scene_tris(p->gscene);
    size_t bytes = 3 * (size_t)d.count * sizeof(RtFloat4);
    if (!p->host_tris.verts || p->host_tris.count != d.count) {
        rt_tri_arrays_free(&p->host_tris);
        p->host_tris.verts = malloc(bytes ? bytes : 1);
        p->host_tris.woop = malloc(bytes ? bytes : 1);
        if (!p->host_tris.verts || !p->host_tris.woop) {
            rt_tri_arrays_free(&p->host_tris);
            return rt_fail(err, RT_ERR_OOM, "APP: out of memory for %u triangles", d.count);
        }
    }
    p->host_tris.count = d.count;
    RtStatus s = rt_gpu_memcpy(p->host_tris.verts, d.verts, bytes, RT_COPY_TO_HOST, err);
    if (s == RT_OK) s = rt_gpu_memcpy(p->host_tris.woop, d.woop, bytes, RT_COPY_TO_HOST, err);
    if (s == RT_OK) p->host_tris_of = p->tris_written;
    return s;
}

RtStatus rt_pipeline_cast_diffuse(RtPipeline *p, const RtPipelineParams *pp, const RtCamera *cam, int w, int h,
                                  uint32_t seed, RtDiffuseCast *out, RtError *err)
{
    RtDiffuseCast local;
    if (!out) out = &local;
    out->ms = 0;
    out->rays = out->hits = 0;
    if (!p->has_frame) return rt_fail(err, RT_ERR_ARG, "APP: diffuse cast before the first frame");
    if (w <= 0 || h <= 0) return rt_fail(err, RT_ERR_ARG, "APP: diffuse cast of %dx%d pixels", w, h);
    const int gpu = p->backend == RT_BACKEND_GPU;
    const size_t n = (size_t)w * h;
    if (n > UINT32_MAX) return rt_fail(err, RT_ERR_ARG, "APP: diffuse cast of %dx%d pixels: too many", w, h);
    RtCamera scene_cam;
    RtStatus s = RT_OK;
    if (!cam) {
        if (gpu) s = rt_scene_camera_at(p->scene, p->last.t, &scene_cam, err);
        else scene_cam = p->frame.view.camera;
        cam = &scene_cam;
    }
    if (s == RT_OK) s = diffuse_reserve(p, n, err);
    if (s == RT_OK && gpu) s = gpu_host_tris(p, err);
    if (s != RT_OK) return s;
    DiffuseBufs *b = &p->diffuse;
    const RtTriArrays *tris = gpu ? &p->host_tris : &p->tris;
    RtAccel accel = frame_accel(p);
    const RtAccel *tree = p->last.has_tree ? &accel : NULL;
    /* geometry only: without textures the GPU skips no map_d cut-out, as
     * rt_render_cast_cpu */
    RtTraceParams tp = pp->trace;
    tp.shade.textures = 0;
    const int woop = tp.isect == RT_ISECT_WOOP;

    /* (1) the primary rays */
    RtCameraBasis cb = rt_camera_basis(*cam, w, h);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            RtRay r = {cb.o, rt_camera_dir(&cb, (float)x + 0.5f, (float)y + 0.5f)};
            b->cam[(size_t)y * w + x] = r;
        }
    double primary_ms = 0;
    s = gpu ? gpu_cast(p, &tp, b->cam, (uint32_t)n, w, b->primary, &primary_ms, err)
            : rt_render_cast_cpu(tris, tree, b->cam, (uint32_t)n, woop, pp->threads, b->primary, err);
    if (s != RT_OK) return s;

    /* (2) one diffuse ray per primary hit, in pixel order */
    const float eps = gpu ? rt_gpu_scene_epsilon(p->gscene) : rt_render_ray_eps(tris);
    uint32_t m = 0;
    for (uint32_t i = 0; i < (uint32_t)n; i++) {
        const RtHit *ph = &b->primary[i];
        if (ph->tri >= tris->count) continue; /* a miss (RT_NO_HIT) */
        const RtFloat4 *v = &tris->verts[3 * (size_t)ph->tri];
        b->rays[m] = rt_sample_diffuse_ray(f4_xyz(v[0]), f4_xyz(v[1]), f4_xyz(v[2]), ph->u, ph->v, b->cam[i].d, i,
                                           seed, eps);
        b->pixel[m++] = i;
    }

    /* (3) the diffuse cast, timed */
    if (gpu) {
        s = gpu_cast(p, &tp, b->rays, m, w, b->hits, &out->ms, err);
    } else {
        double t0 = rt_now_ms();
        s = rt_render_cast_cpu(tris, tree, b->rays, m, woop, pp->threads, b->hits, err);
        out->ms = rt_now_ms() - t0;
    }
    if (s != RT_OK) return s;
    out->rays = m;
    for (uint32_t k = 0; k < m; k++) out->hits += b->hits[k].tri != RT_NO_HIT;

    /* the caller's copies, in pixel order */
    if (out->primary) memcpy(out->primary, b->primary, n * sizeof *out->primary);
    if (out->hit) {
        const RtHit none = {INFINITY, 0.0f, 0.0f, RT_NO_HIT};
        for (size_t i = 0; i < n; i++) out->hit[i] = none;
        for (uint32_t k = 0; k < m; k++) out->hit[b->pixel[k]] = b->hits[k];
    }
    if (out->ray) {
        memset(out->ray, 0, n * sizeof *out->ray);
        for (uint32_t k = 0; k < m; k++) out->ray[b->pixel[k]] = b->rays[k];
    }
    return RT_OK;
}

/* The last frame's host kd-tree: the CPU's own, or a download of the GPU's. */
static RtStatus host_tree(RtPipeline *p, RtKdTree *h, int *owned, RtError *err)
{
    *owned = p->backend == RT_BACKEND_GPU;
    if (!*owned) {
        *h = p->tree;
        return RT_OK;
    }
    memset(h, 0, sizeof *h);
    return rt_kd_gpu_download(&p->d_tree, h, err);
}

/* The last frame's host BVH, likewise. */
static RtStatus host_bvh(RtPipeline *p, RtBvh *h, int *owned, RtError *err)
{
    *owned = p->backend == RT_BACKEND_GPU;
    if (!*owned) {
        *h = p->bvh;
        return RT_OK;
    }
    memset(h, 0, sizeof *h);
    return p->built == RT_STRUCT_LBVH ? rt_lbvh_gpu_download(p->lbvh, &p->d_bvh, h, err)
                                      : rt_hploc_gpu_download(p->hploc, &p->d_bvh, h, err);
}

static RtStatus need_tree(const RtPipeline *p, RtError *err)
{
    if (!p->has_frame || !p->last.has_tree)
        return rt_fail(err, RT_ERR_ARG, "APP: no tree yet (no frame, or --brute)");
    return RT_OK;
}

RtStatus rt_pipeline_tree_stats(RtPipeline *p, const RtPipelineParams *pp, RtFrameStats *st, RtError *err)
{
    if (p->backend == RT_BACKEND_CPU) {
        st->tree = p->last.tree;
        st->tree_full = p->last.tree_full;
        return RT_OK;
    }
    RtStatus s = need_tree(p, err);
    if (s != RT_OK) return s;
    int owned = 0;
    RtKdStats ks;
    memset(&ks, 0, sizeof ks);
    if (is_bvh(p->built)) {
        RtBvh h;
        if ((s = host_bvh(p, &h, &owned, err)) != RT_OK) return s;
        RtBvhStats bs;
        const int l = p->built == RT_STRUCT_LBVH;
        rt_bvh_tree_stats(&h, NULL, l ? pp->lbvh.c_trav : pp->hploc.c_trav, l ? pp->lbvh.c_isect : pp->hploc.c_isect,
                          &bs);
        ks = tree_stats_of_bvh(&bs);
        if (owned) rt_bvh_free(&h);
    } else {
        RtKdTree h;
        if ((s = host_tree(p, &h, &owned, err)) != RT_OK) return s;
        rt_kd_tree_stats(&h, pp->build.c_trav, pp->build.c_isect, &ks);
        if (owned) rt_kd_tree_free(&h);
    }
    ks.triangles = st->tree.triangles;
    ks.degenerate = st->tree.degenerate;
    ks.build_ms = st->tree.build_ms;
    st->tree = ks;
    st->tree_full = 1;
    return RT_OK;
}

RtStatus rt_pipeline_validate(RtPipeline *p, const char **what, uint64_t *loose_refs, RtError *err)
{
    if (loose_refs) *loose_refs = 0;
    RtStatus s = need_tree(p, err);
    if (s != RT_OK) return s;
    const int gpu = p->backend == RT_BACKEND_GPU;
    if (gpu && (s = gpu_host_tris(p, err)) != RT_OK) return s;
    const RtTriArrays *tris = gpu ? &p->host_tris : &p->tris;
    int owned = 0;
    if (is_bvh(p->built)) {
        RtBvh h;
        if ((s = host_bvh(p, &h, &owned, err)) != RT_OK) return s;
        if (what) *what = gpu ? "rt_bvh_validate on the downloaded BVH and triangles" : "rt_bvh_validate";
        s = rt_bvh_validate(&h, tris, err);
        if (owned) rt_bvh_free(&h);
        return s;
    }
    RtKdTree h;
    if ((s = host_tree(p, &h, &owned, err)) != RT_OK) return s;
    if (!owned) {
        if (what) *what = "rt_kd_validate";
        return rt_kd_validate(&h, tris, err);
    }
    if (what) *what = "rt_kd_validate_flags(LOOSE_REFS) on the downloaded tree and triangles";
    s = rt_kd_validate_count(&h, tris, RT_KD_VALIDATE_LOOSE_REFS, loose_refs, err);
    rt_kd_tree_free(&h);
    return s;
}
