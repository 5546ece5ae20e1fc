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

struct RtPipeline {
    RtBackend backend;
    const RtScene *scene;
    int has_frame;        /* a frame ran: its tree and triangles are there */
    RtFrameStats last;    /* the last frame's counts (tree stats are filled in here too) */
    /* CPU backend */
    RtSceneFrame frame;   /* the scene at t (also the GPU's host fallback of the animate stage) */
    RtTriArrays tris;     /* frame.view flattened; GPU: the host fallback's upload */
    RtKdTree tree;        /* host tree (empty with brute_force) */
    /* GPU backend */
    RtGpu *gpu;
    RtGpuScene *gscene;
    RtGpuAnim *anim;      /* the animate stage on the device; NULL = host evaluation + upload */
    RtKdGpu *kd;
    RtKdTree d_tree;      /* device pointers owned by kd */
    RtKdGpuStats kd_stats;
    uint8_t *d_rgba;      /* w*h*4, grown on demand: the frame when the caller gives no device buffer */
    size_t rgba_bytes;
    int animated;         /* the device holds a frame's triangles */
};

RtPipelineParams rt_pipeline_params_default(void)
{
    RtPipelineParams p;
    memset(&p, 0, sizeof p);
    p.structure = RT_STRUCT_KD;
    p.build = rt_kd_gpu_params_default();
    p.kd_cpu = rt_kd_cpu_params_default();
    p.trace = rt_trace_params_default();
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

RtStatus rt_pipeline_create(const RtScene *scene, RtBackend backend, int width, int height,
                            RtPipeline **out, RtError *err)
{
    *out = NULL;
    RtPipeline *p = calloc(1, sizeof *p);
    if (!p) return rt_fail(err, RT_ERR_OOM, "APP: out of host memory");
    p->backend = backend;
    p->scene = scene;
    RtStatus st = backend == RT_BACKEND_GPU ? gpu_open(p, width, height, err) : RT_OK;
    if (st != RT_OK) {
        rt_pipeline_destroy(p);
        return st;
    }
    *out = p;
    return RT_OK;
}

void rt_pipeline_destroy(RtPipeline *p)
{
    if (!p) return;
    rt_gpu_free(p->d_rgba);
    rt_gpu_anim_destroy(p->anim);
    rt_kd_gpu_destroy(p->kd);
    rt_gpu_scene_destroy(p->gscene);
    rt_gpu_destroy(p->gpu);
    rt_scene_frame_free(&p->frame);
    rt_tri_arrays_free(&p->tris);
    rt_kd_tree_free(&p->tree);
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

/* ---- the CPU backend ----------------------------------------------------------- */

static RtStatus cpu_trace(RtPipeline *p, const RtPipelineParams *pp, const RtCamera *cam,
                          const RtFrameTarget *target, RtRenderStats *rs, double *ms, RtError *err)
{
    if (!target->img) return rt_fail(err, RT_ERR_ARG, "APP: the CPU backend renders into a host image");
    RtRenderParams rp = render_params(pp);
    double t0 = rt_now_ms();
    RtStatus st = rt_render_cpu(&p->frame.view, &p->tris, pp->brute_force ? NULL : &p->tree, cam, &rp,
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
        default: return rt_fail(err, RT_ERR_ARG, "APP: unknown structure %d", pp->structure);
        }
    }
    st->tree.triangles = p->scene->tri_count;
    st->tree.degenerate = degenerate;
    st->build_ms = rt_now_ms() - t1;
    p->has_frame = 1;

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
    if (s == RT_OK) p->animated = 1;
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

    /* build: queued without waiting for it (no host round trip) */
    if (pp->structure != RT_STRUCT_KD) return rt_fail(err, RT_ERR_ARG, "APP: unknown structure %d", pp->structure);
    RtTriArrays d_tris = rt_gpu_scene_tris(p->gscene);
    s = rt_kd_gpu_build_async(p->kd, &pp->build, d_tris.verts, d_tris.woop, d_tris.count, &p->d_tree, err);
    if (s != RT_OK) return s;

    /* trace: queued behind the build; then the build's sizes (and overflow
     * bits), which arrived behind it. A build that overflowed a buffer was
     * redone with larger ones: trace again. */
    RtTraceStats ts;
    memset(&ts, 0, sizeof ts);
    int rebuilt = 0;
    s = rt_trace_gpu(p->gscene, &p->d_tree, cam, &pp->trace, dst, target->w, target->h, NULL, &ts, err);
    RtStatus fs = rt_kd_gpu_build_finish(p->kd, &p->d_tree, &p->kd_stats, &rebuilt, err);
    if (s != RT_OK) return s;
    if (fs != RT_OK) return fs;
    if (rebuilt &&
        (s = rt_trace_gpu(p->gscene, &p->d_tree, cam, &pp->trace, dst, target->w, target->h, NULL, &ts, err)) != RT_OK)
        return s;
    p->has_frame = 1;
    if ((s = gpu_readback(p, target, dst, &st->readback_ms, err)) != RT_OK) return s;

    const RtKdGpuStats *k = &p->kd_stats;
    st->build_ms = k->gpu_ms > 0 ? k->gpu_ms : k->build_ms;
    st->build_large_ms = k->large_ms;
    st->build_small_ms = k->small_ms;
    st->launches = k->launches;
    st->round_trips = k->round_trips;
    st->rebuilds = k->rebuilds;
    st->has_tree = 1;
    st->tree.nodes = k->nodes;
    st->tree.leaves = k->leaves;
    st->tree.references = k->references;
    st->tree.triangles = k->triangles;
    st->tree.degenerate = k->triangles - k->valid_triangles;
    st->tree.sah_cost = NAN;
    st->kd_gpu = k;
    st->trace_ms = ts.ms;
    st->primary_rays = ts.primary_rays;
    st->shadow_rays = ts.shadow_rays;
    st->reflection_rays = ts.reflection_rays;
    return RT_OK;
}

/* ---- the frame ----------------------------------------------------------------- */

RtStatus rt_pipeline_frame(RtPipeline *p, const RtPipelineParams *pp, float t, const RtCamera *cam,
                           const RtFrameTarget *target, RtFrameStats *st, RtError *err)
{
    RtFrameStats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    st->backend = p->backend;
    st->t = t;
    st->build_large_ms = st->build_small_ms = NAN;
    double t0 = rt_now_ms();
    RtStatus s = p->backend == RT_BACKEND_GPU ? gpu_frame(p, pp, t, cam, target, st, err)
                                              : cpu_frame(p, pp, t, cam, target, st, err);
    st->frame_ms = rt_now_ms() - t0;
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
    s = rt_trace_gpu(p->gscene, &p->d_tree, cam, &pp->trace, dst, target->w, target->h, NULL, &ts, err);
    *trace_ms = ts.ms;
    return s;
}

/* The last frame's host tree: the CPU's own, or a download of the GPU's. */
static RtStatus host_tree(RtPipeline *p, RtKdTree *h, int *owned, RtError *err)
{
    if (!p->has_frame || !p->last.has_tree)
        return rt_fail(err, RT_ERR_ARG, "APP: no tree yet (no frame, or --brute)");
    *owned = p->backend == RT_BACKEND_GPU;
    if (!*owned) {
        *h = p->tree;
        return RT_OK;
    }
    memset(h, 0, sizeof *h);
    return rt_kd_gpu_download(&p->d_tree, h, err);
}

RtStatus rt_pipeline_tree_stats(RtPipeline *p, const RtPipelineParams *pp, RtFrameStats *st, RtError *err)
{
    if (p->backend == RT_BACKEND_CPU) {
        st->tree = p->last.tree;
        st->tree_full = p->last.tree_full;
        return RT_OK;
    }
    RtKdTree h;
    int owned = 0;
    RtStatus s = host_tree(p, &h, &owned, err);
    if (s != RT_OK) return s;
    RtKdStats ks;
    memset(&ks, 0, sizeof ks);
    rt_kd_tree_stats(&h, pp->build.c_trav, pp->build.c_isect, &ks);
    ks.triangles = st->tree.triangles;
    ks.degenerate = st->tree.degenerate;
    ks.build_ms = st->tree.build_ms;
    st->tree = ks;
    st->tree_full = 1;
    if (owned) rt_kd_tree_free(&h);
    return RT_OK;
}

/* The device triangles of the last frame, copied to the host (exactly what
 * the GPU builder saw). */
static RtStatus download_tris(RtPipeline *p, RtTriArrays *h, RtError *err)
{
    RtTriArrays d = rt_gpu_scene_tris(p->gscene);
    size_t bytes = 3 * (size_t)d.count * sizeof(RtFloat4);
    memset(h, 0, sizeof *h);
    h->count = d.count;
    h->verts = malloc(bytes ? bytes : 1);
    h->woop = malloc(bytes ? bytes : 1);
    if (!h->verts || !h->woop) return rt_fail(err, RT_ERR_OOM, "APP: out of memory for %u triangles", d.count);
    RtStatus st = rt_gpu_memcpy(h->verts, d.verts, bytes, RT_COPY_TO_HOST, err);
    if (st == RT_OK) st = rt_gpu_memcpy(h->woop, d.woop, bytes, RT_COPY_TO_HOST, err);
    return st;
}

RtStatus rt_pipeline_validate(RtPipeline *p, const char **what, RtError *err)
{
    RtKdTree h;
    int owned = 0;
    RtStatus s = host_tree(p, &h, &owned, err);
    if (s != RT_OK) return s;
    if (!owned) {
        if (what) *what = "rt_kd_validate";
        return rt_kd_validate(&h, &p->tris, err);
    }
    if (what) *what = "rt_kd_validate_flags(LOOSE_REFS) on the downloaded tree and triangles";
    RtTriArrays tris;
    s = download_tris(p, &tris, err);
    if (s == RT_OK) s = rt_kd_validate_flags(&h, &tris, RT_KD_VALIDATE_LOOSE_REFS, err);
    free(tris.verts);
    free(tris.woop);
    rt_kd_tree_free(&h);
    return s;
}
