/* lbvh_gpu_none.c — the GPU LBVH builder in a build without a CUDA toolkit:
 * every entry point says there is no device. */
#include <string.h>

#include "bvh/lbvh_gpu.h"

static RtStatus no_cuda(RtError *err)
{
    return rt_fail(err, RT_ERR_NO_DEVICE, "LBVH: this rtviewer was built without CUDA (no GPU LBVH builder)");
}

RtStatus rt_lbvh_gpu_create(RtLbvhGpu **out, RtError *err)
{
    *out = 0;
    return no_cuda(err);
}
void rt_lbvh_gpu_destroy(RtLbvhGpu *b) { (void)b; }
RtStatus rt_lbvh_gpu_build(RtLbvhGpu *b, const RtLbvhParams *p, const RtFloat4 *d_verts,
                           const RtFloat4 *d_woop, uint32_t tri_count, RtBvh *d_bvh,
                           RtLbvhGpuStats *stats, RtError *err)
{
    (void)b, (void)p, (void)d_verts, (void)d_woop, (void)tri_count, (void)d_bvh, (void)stats;
    return no_cuda(err);
}
RtStatus rt_lbvh_gpu_build_finish(RtLbvhGpu *b, RtLbvhGpuStats *stats, RtError *err)
{
    (void)b, (void)stats;
    return no_cuda(err);
}
RtStatus rt_lbvh_gpu_download(const RtLbvhGpu *b, const RtBvh *d_bvh, RtBvh *h_bvh, RtError *err)
{
    (void)b, (void)d_bvh;
    memset(h_bvh, 0, sizeof *h_bvh);
    return no_cuda(err);
}
