/* gpu_pipeline.c — per-frame GPU path: upload -> build -> trace -> read back. */
#include "gpu_pipeline.h"

#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "gpu_scene.h"

struct RtGpuPipeline {
    RtGpu *gpu;
    RtGpuScene *scene;
    RtKdGpu *kd;
    RtKdTree d_tree;     /* device pointers owned by kd */
    uint8_t *d_rgba;     /* w*h*4, grown on demand */
    size_t rgba_bytes;
};

RtStatus rt_gpu_pipeline_create(const RtScene *scene, int width, int height, RtGpuPipeline **out,
                                RtError *err)
{
    *out = NULL;
    RtGpuPipeline *p = calloc(1, sizeof *p);
    if (!p) return rt_fail(err, RT_ERR_OOM, "GPU: out of host memory");
    RtStatus st = rt_gpu_create(0, &p->gpu, err);
    if (st == RT_OK) st = rt_gpu_scene_create(scene, &p->scene, err);
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
    t.max_bounces = r->max_bounces;
    t.shadows = r->shadows;
    t.textures = r->textures;
    t.heatmap = r->heatmap;
    t.isect = r->use_woop ? RT_ISECT_WOOP : RT_ISECT_MT;
    return t;
}

RtStatus rt_gpu_pipeline_frame(RtGpuPipeline *p, const RtTriArrays *tris, const RtCamera *cam,
                               const RtKdGpuParams *kp, const RtTraceParams *tp, RtImage *img,
                               RtGpuFrameStats *st, RtError *err)
{
    RtGpuFrameStats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    size_t bytes = (size_t)img->w * img->h * 4;
    if (bytes > p->rgba_bytes) {
        rt_gpu_free(p->d_rgba);
        p->d_rgba = NULL;
        p->rgba_bytes = 0;
        RtStatus s = rt_gpu_malloc((void **)&p->d_rgba, bytes, err);
        if (s != RT_OK) return s;
        p->rgba_bytes = bytes;
    }

    /* animate: this frame's triangles -> device vertices and Woop rows */
    double t0 = rt_now_ms();
    RtStatus s = rt_gpu_scene_update_tris(p->scene, tris->verts, tris->count, 0, err);
    if (s != RT_OK) return s;
    st->upload_ms = rt_now_ms() - t0;

    /* build: Zhou et al. 2008 large + small node stages, Chang et al.'s variants */
    RtTriArrays d_tris = rt_gpu_scene_tris(p->scene);
    s = rt_kd_gpu_build(p->kd, kp, d_tris.verts, d_tris.woop, d_tris.count, &p->d_tree, &st->build, err);
    if (s != RT_OK) return s;

    /* trace: primary, shadow and reflection rays into the device image */
    s = rt_trace_gpu(p->scene, &p->d_tree, cam, tp, p->d_rgba, img->w, img->h, NULL, &st->trace, err);
    if (s != RT_OK) return s;

    double t1 = rt_now_ms();
    s = rt_gpu_memcpy(img->rgba, p->d_rgba, bytes, RT_COPY_TO_HOST, err);
    st->readback_ms = rt_now_ms() - t1;
    return s;
}
