/* hploc_gpu_none.c — the GPU H-PLOC builder in a build without a CUDA
 * toolkit: every entry point says there is no device. */
#include <string.h>

#include "bvh/hploc_gpu.h"

static RtStatus no_cuda(RtError *err)
{
    return rt_fail(err, RT_ERR_NO_DEVICE, "H-PLOC: this rtviewer was built without CUDA (no GPU H-PLOC builder)");
}

RtStatus rt_hploc_gpu_create(RtHplocGpu **out, RtError *err)
{
    *out = 0;
    return no_cuda(err);
}
void rt_hploc_gpu_destroy(RtHplocGpu *b) { (void)b; }
RtStatus rt_hploc_gpu_build(RtHplocGpu *b, const RtHplocParams *p, const RtFloat4 *d_verts,
                            const RtFloat4 *d_woop, uint32_t tri_count, RtBvh *d_bvh,
                            RtHplocGpuStats *stats, RtError *err)
{
    (void)b, (void)p, (void)d_verts, (void)d_woop, (void)tri_count, (void)d_bvh, (void)stats;
    return no_cuda(err);
}
RtStatus rt_hploc_gpu_set_top(RtHplocGpu *b, const RtSplitTopParams *p, RtError *err)
{
    (void)b, (void)p;
    return no_cuda(err);
}
double rt_hploc_gpu_kernel_ms(RtHplocGpu *b, const char *name)
{
    (void)b, (void)name;
    return 0.0;
}
RtStatus rt_hploc_gpu_build_finish(RtHplocGpu *b, RtHplocGpuStats *stats, RtError *err)
{
    (void)b, (void)stats;
    return no_cuda(err);
}
RtStatus rt_hploc_gpu_download(const RtHplocGpu *b, const RtBvh *d_bvh, RtBvh *h_bvh, RtError *err)
{
    (void)b, (void)d_bvh;
    memset(h_bvh, 0, sizeof *h_bvh);
    return no_cuda(err);
}
