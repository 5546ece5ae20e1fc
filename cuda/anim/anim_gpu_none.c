/* anim_gpu_none.c — the GPU animate stage in a build without a CUDA toolkit:
 * every call says so, and callers stay on rt_scene_frame_at (the CPU path). */
#include "anim/anim_gpu.h"

static RtStatus no_cuda(RtError *err)
{
    return rt_fail(err, RT_ERR_NO_DEVICE,
                   "ANIM: this rtviewer was built without CUDA (no nvcc found at build time)");
}

RtStatus rt_gpu_anim_create(const RtScene *s, RtGpuAnim **out, RtError *err)
{
    (void)s;
    *out = 0;
    return no_cuda(err);
}
void rt_gpu_anim_destroy(RtGpuAnim *ga) { (void)ga; }
RtStatus rt_gpu_anim_eval(RtGpuAnim *ga, const RtScene *s, float t, RtGpuScene *gs, double *ms, RtError *err)
{
    (void)ga; (void)s; (void)t; (void)gs;
    if (ms) *ms = 0.0;
    return no_cuda(err);
}
RtStatus rt_gpu_anim_download_verts(const RtGpuAnim *ga, RtVertex *out, uint32_t vert_count, RtError *err)
{
    (void)ga; (void)out; (void)vert_count;
    return no_cuda(err);
}
