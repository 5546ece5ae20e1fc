/* gpu_pipeline.h — the per-frame GPU path behind one handle: upload the
 * frame's triangles (Woop rows on the device), build the kd-tree with the
 * Zhou/Chang pipeline (cuda/kd/kd_gpu.h), trace it (cuda/trace/trace.h) into a device
 * image. Headless mode and the benchmark use it; the CPU path stays the
 * fallback when it cannot be created. */
#ifndef RT_GPU_PIPELINE_H
#define RT_GPU_PIPELINE_H

#include "kd/kd_gpu.h"
#include "render/render_cpu.h"
#include "trace/trace.h"

typedef struct RtGpuPipeline RtGpuPipeline;

typedef struct RtGpuFrameStats {
    double animate_ms;    /* animate stage on the GPU (CUDA events): nodes -> vertices -> Woop rows */
    RtKdGpuStats build;   /* per-stage GPU times, launches, round trips, tree stats */
    RtTraceStats trace;   /* rays and GPU trace time */
    double readback_ms;   /* device image -> host (wall); 0 when tracing into a device buffer */
    double frame_ms;      /* wall time of the whole rt_gpu_pipeline_frame call */
} RtGpuFrameStats;

/* Opens the GPU and uploads the scene (shading data, base vertices and the
 * animation, anim_gpu.h). RT_ERR_NO_DEVICE (with the reason) when no usable
 * GPU or no CUDA in this build. */
RtStatus rt_gpu_pipeline_create(const RtScene *scene, int width, int height, RtGpuPipeline **out,
                                RtError *err);
void rt_gpu_pipeline_destroy(RtGpuPipeline *p);
const char *rt_gpu_pipeline_device_name(const RtGpuPipeline *p);
/* "NVIDIA H100 80GB HBM3, driver 580.159.04"-style line for reports. */
void rt_gpu_pipeline_describe(const RtGpuPipeline *p, char *buf, size_t n);

/* The tracer's default parameters with r's shading fields (options.h's
 * rt_options_trace_gpu adds the --trace variant). */
RtTraceParams rt_trace_params_from_render(const RtRenderParams *r);

/* One frame of `scene` (the one given to create) at time t: animate on the
 * GPU (skipped after the first frame when nothing moves), rebuild the
 * kd-tree, trace cam's view. d_rgba: a device buffer of w*h*4 bytes (the
 * viewer's mapped PBO), or NULL to trace into the pipeline's own buffer and
 * read it back into img (w, h = img's). */
RtStatus rt_gpu_pipeline_frame(RtGpuPipeline *p, const RtScene *scene, float t, const RtCamera *cam,
                               const RtKdGpuParams *kp, const RtTraceParams *tp, uint8_t *d_rgba,
                               int w, int h, RtImage *img, RtGpuFrameStats *st, RtError *err);

/* The tree and triangles of the last frame (device pointers), e.g. for
 * the benchmark's extra trace passes. */
const RtKdTree *rt_gpu_pipeline_tree(const RtGpuPipeline *p);
RtGpuScene *rt_gpu_pipeline_scene(RtGpuPipeline *p);

#endif
