/* trace_none.c — the GPU tracer in a build without a CUDA toolkit:
 * every call that needs a GPU says there is none (the parameters and
 * variant tables are in trace_params.c, in every build). */
#include <string.h>

#include "trace/trace.h"

static RtStatus no_cuda(RtError *err)
{
    return rt_fail(err, RT_ERR_NO_DEVICE,
                   "TRACE: this rtviewer was built without CUDA (no nvcc found at build time)");
}

RtStatus rt_trace_gpu(RtGpuScene *gs, const RtAccel *accel, const RtShadeFrame *frame,
                      const RtCamera *cam, const RtTraceParams *p, uint8_t *d_rgba, int w, int h,
                      uint32_t *d_ids, RtTraceStats *stats, RtError *err)
{
    (void)gs; (void)accel; (void)frame; (void)cam; (void)p; (void)d_rgba; (void)w; (void)h; (void)d_ids;
    (void)stats;
    return no_cuda(err);
}

RtStatus rt_trace_gpu_photons(RtGpuScene *gs, const RtAccel *accel, const RtTraceParams *p,
                              const RtPhotonParams *pp, RtAabb rest_bounds, const RtPhotonSlots *d_slots,
                              double *ms, RtError *err)
{
    (void)gs; (void)accel; (void)p; (void)pp; (void)rest_bounds; (void)d_slots; (void)ms;
    return no_cuda(err);
}

RtStatus rt_trace_gpu_rays(RtGpuScene *gs, const RtAccel *accel, const RtTraceParams *p,
                           const RtGpuRay *d_rays, RtHit *d_hits, uint32_t *d_steps, uint32_t n,
                           int width, int any_hit, double *ms, RtError *err)
{
    (void)gs; (void)accel; (void)p; (void)d_rays; (void)d_hits; (void)d_steps; (void)n;
    (void)width; (void)any_hit; (void)ms;
    return no_cuda(err);
}

RtStatus rt_trace_gpu_camera_rays(RtGpuScene *gs, const RtAccel *accel, const RtTraceParams *p,
                                  const RtCamera *cam, int width, int height, RtHit *d_hits,
                                  uint32_t *d_steps, double *ms, RtError *err)
{
    (void)gs; (void)accel; (void)p; (void)cam; (void)width; (void)height; (void)d_hits; (void)d_steps;
    (void)ms;
    return no_cuda(err);
}

RtStatus rt_trace_emulate_rays(const RtTriArrays *tris, const RtAccel *accel,
                               const RtTraceParams *p, const RtGpuRay *rays, RtHit *hits,
                               uint32_t *steps, uint32_t n, int width, int any_hit, RtError *err)
{
    (void)tris; (void)accel; (void)p; (void)rays; (void)hits; (void)steps; (void)n; (void)width;
    (void)any_hit;
    return no_cuda(err);
}
