/* gpu_pipeline.h — the per-frame GPU path behind one handle: upload the
 * frame's triangles (Woop rows on the device), build the kd-tree with the
 * Zhou/Chang pipeline (cuda/kd_gpu.h), trace it (cuda/trace.h) into a device
 * image. Headless mode and the benchmark use it; the CPU path stays the
 * fallback when it cannot be created. */
#ifndef RT_GPU_PIPELINE_H
#define RT_GPU_PIPELINE_H

#include "kd_gpu.h"
#include "render_cpu.h"
#include "trace.h"

typedef struct RtGpuPipeline RtGpuPipeline;

typedef struct RtGpuFrameStats {
    double upload_ms;     /* host triangles -> device vertices + Woop rows (wall) */
    RtKdGpuStats build;   /* per-stage GPU times, launches, round trips, tree stats */
    RtTraceStats trace;   /* rays and GPU trace time */
    double readback_ms;   /* device image -> host (wall) */
} RtGpuFrameStats;

/* Opens the GPU and uploads the scene's shading data. RT_ERR_NO_DEVICE (with
 * the reason) when no usable GPU or no CUDA in this build. */
RtStatus rt_gpu_pipeline_create(const RtScene *scene, int width, int height, RtGpuPipeline **out,
                                RtError *err);
void rt_gpu_pipeline_destroy(RtGpuPipeline *p);
const char *rt_gpu_pipeline_device_name(const RtGpuPipeline *p);

/* The tracer's parameters that correspond to the CPU renderer's. */
RtTraceParams rt_trace_params_from_render(const RtRenderParams *r);

/* One frame: tris are this frame's (animated) triangles in host memory; the
 * image lands in img (host, img->w x img->h). */
RtStatus rt_gpu_pipeline_frame(RtGpuPipeline *p, const RtTriArrays *tris, const RtCamera *cam,
                               const RtKdGpuParams *kp, const RtTraceParams *tp, RtImage *img,
                               RtGpuFrameStats *st, RtError *err);

#endif
