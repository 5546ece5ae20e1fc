/* gpu_pipeline.c — per-frame GPU path: animate -> build -> trace (-> read back). */
#include "app/gpu_pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anim/anim_gpu.h"
#include "gpu/gpu.h"
#include "gpu/gpu_scene.h"

struct RtGpuPipeline {
    RtGpu *gpu;
    RtGpuScene *scene;
    RtKdGpu *kd;
    RtKdTree d_tree;     /* device pointers owned by kd */
    uint8_t *d_rgba;     /* w*h*4, grown on demand (headless: traced here, then read back) */
    size_t rgba_bytes;
    RtGpuAnim *anim;     /* the animate stage on the device; NULL = host evaluation + upload */
    int animated;        /* the device holds a frame's triangles */
    RtSceneFrame frame;  /* host fallback of the animate stage */
    RtTriArrays host_tris;
};

RtStatus rt_gpu_pipeline_create(const RtScene *scene, int width, int height, RtGpuPipeline **out,
                                RtError *err)
{
    *out = NULL;
    RtGpuPipeline *p = calloc(1, sizeof *p);
    if (!p) return rt_fail(err, RT_ERR_OOM, "GPU: out of host memory");
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
    if (st == RT_OK) st = rt_gpu_scene_create(first, &p->scene, err);
    if (st == RT_OK && dynamic) st = rt_gpu_anim_create(scene, &p->anim, err);
    if (st == RT_OK) st = rt_kd_gpu_create(&p->kd, err);
    if (st == RT_OK) {
        p->rgba_bytes = (size_t)width * height * 4;
        st = rt_gpu_malloc((void **)&p->d_rgba, p->rgba_bytes, err);
    }
    if (st != RT_OK) {
        rt_gpu_pipeline_destroy(p);
        return st;
    }
    *out = p;
    return RT_OK;
}

void rt_gpu_pipeline_destroy(RtGpuPipeline *p)
{
    if (!p) return;
    rt_gpu_free(p->d_rgba);
    rt_gpu_anim_destroy(p->anim);
    rt_scene_frame_free(&p->frame);
    rt_tri_arrays_free(&p->host_tris);
    rt_kd_gpu_destroy(p->kd);
    rt_gpu_scene_destroy(p->scene);
    rt_gpu_destroy(p->gpu);
    free(p);
}

const char *rt_gpu_pipeline_device_name(const RtGpuPipeline *p)
{
    const RtGpuInfo *i = rt_gpu_info(p->gpu);
    return i ? i->name : "(unknown GPU)";
}

RtTraceParams rt_trace_params_from_render(const RtRenderParams *r)
{
    RtTraceParams t = rt_trace_params_default();
    t.shade.max_bounces = r->shade.max_bounces;
    t.shade.shadows = r->shade.shadows;
    t.shade.textures = r->shade.textures;
    t.shade.heatmap = r->shade.heatmap;
    t.isect = r->use_woop ? RT_ISECT_WOOP : RT_ISECT_MT;
    return t;
}

const RtKdTree *rt_gpu_pipeline_tree(const RtGpuPipeline *p) { return &p->d_tree; }
RtGpuScene *rt_gpu_pipeline_scene(RtGpuPipeline *p) { return p->scene; }

void rt_gpu_pipeline_describe(const RtGpuPipeline *p, char *buf, size_t n)
{
    const RtGpuInfo *i = rt_gpu_info(p->gpu);
    if (!i) {
        snprintf(buf, n, "(unknown GPU)");
        return;
    }
    snprintf(buf, n, "%s, sm_%d%d, driver %d.%d, runtime %d.%d", i->name, i->sm_major, i->sm_minor,
             i->driver_version / 1000, (i->driver_version % 1000) / 10, i->runtime_version / 1000,
             (i->runtime_version % 1000) / 10);
}

/* animate: this frame's triangles on the device. */
static RtStatus animate(RtGpuPipeline *p, const RtScene *scene, float t, RtGpuFrameStats *st, RtError *err)
{
    int dynamic = rt_anim_is_dynamic(&scene->anim);
    if (p->animated && !dynamic) return RT_OK; /* static: the first frame's triangles stay */
    double t0 = rt_now_ms();
    RtStatus s;
    if (p->anim) {
        s = rt_gpu_anim_eval(p->anim, scene, t, p->scene, &st->animate_ms, err);
    } else {
        /* no GPU animate stage: evaluate on the host and upload */
        s = rt_scene_frame_at(scene, t, &p->frame, err);
        uint32_t degenerate = 0;
        if (s == RT_OK) s = rt_tri_arrays_update(&p->frame.view, &p->host_tris, &degenerate);
        if (s == RT_OK)
            s = rt_gpu_scene_update_tris(p->scene, p->host_tris.verts, p->host_tris.count, 0, err);
        st->animate_ms = rt_now_ms() - t0;
    }
    if (s == RT_OK) p->animated = 1;
    return s;
}

RtStatus rt_gpu_pipeline_frame(RtGpuPipeline *p, const RtScene *scene, float t, const RtCamera *cam,
                               const RtKdGpuParams *kp, const RtTraceParams *tp, uint8_t *d_rgba,
                               int w, int h, RtImage *img, RtGpuFrameStats *st, RtError *err)
{
    RtGpuFrameStats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    double t_frame = rt_now_ms();
    uint8_t *dst = d_rgba;
    if (!dst) {
        size_t bytes = (size_t)w * h * 4;
        if (bytes > p->rgba_bytes) {
            rt_gpu_free(p->d_rgba);
            p->d_rgba = NULL;
            p->rgba_bytes = 0;
            RtStatus s = rt_gpu_malloc((void **)&p->d_rgba, bytes, err);
            if (s != RT_OK) return s;
            p->rgba_bytes = bytes;
        }
        dst = p->d_rgba;
    }

    /* animate: the scene at time t -> device vertices and Woop rows */
    RtStatus s = animate(p, scene, t, st, err);
    if (s != RT_OK) return s;

    /* build: Zhou et al. 2008 large + small node stages, Chang et al.'s
     * variants, queued without waiting for it (no host round trip) */
    RtTriArrays d_tris = rt_gpu_scene_tris(p->scene);
    s = rt_kd_gpu_build_async(p->kd, kp, d_tris.verts, d_tris.woop, d_tris.count, &p->d_tree, err);
    if (s != RT_OK) return s;

    /* trace: primary, shadow and reflection rays into the image, queued
     * behind the build; then the build's sizes (and overflow bits), which
     * arrived behind it. A build that overflowed a buffer was redone with
     * larger ones: trace again. */
    int rebuilt = 0;
    s = rt_trace_gpu(p->scene, &p->d_tree, cam, tp, dst, w, h, NULL, &st->trace, err);
    RtStatus fs = rt_kd_gpu_build_finish(p->kd, &p->d_tree, &st->build, &rebuilt, err);
    if (s != RT_OK) return s;
    if (fs != RT_OK) return fs;
    if (rebuilt && (s = rt_trace_gpu(p->scene, &p->d_tree, cam, tp, dst, w, h, NULL, &st->trace, err)) != RT_OK)
        return s;

    if (!d_rgba && img) {
        double t1 = rt_now_ms();
        s = rt_gpu_memcpy(img->rgba, dst, (size_t)w * h * 4, RT_COPY_TO_HOST, err);
        st->readback_ms = rt_now_ms() - t1;
    }
    st->frame_ms = rt_now_ms() - t_frame;
    return s;
}
