/* kd_gpu_none.c — the GPU kd-tree builder in a build without a CUDA toolkit:
 * every entry point says there is no device. */
#include <string.h>

#include "kd/kd_gpu.h"

static RtStatus no_cuda(RtError *err)
{
    return rt_fail(err, RT_ERR_NO_DEVICE, "KD: this rtviewer was built without CUDA (no GPU kd-tree builder)");
}

RtStatus rt_kd_gpu_create(RtKdGpu **out, RtError *err)
{
    *out = 0;
    return no_cuda(err);
}
RtStatus rt_kd_gpu_build(RtKdGpu *b, const RtKdGpuParams *p, const RtFloat4 *d_verts,
                         const RtFloat4 *d_woop, uint32_t tri_count, RtKdTree *d_tree,
                         RtKdGpuStats *stats, RtError *err)
{
    (void)b, (void)p, (void)d_verts, (void)d_woop, (void)tri_count, (void)d_tree, (void)stats;
    return no_cuda(err);
}
RtStatus rt_kd_gpu_build_async(RtKdGpu *b, const RtKdGpuParams *p, const RtFloat4 *d_verts,
                               const RtFloat4 *d_woop, uint32_t tri_count, RtKdTree *d_tree,
                               RtError *err)
{
    (void)b, (void)p, (void)d_verts, (void)d_woop, (void)tri_count, (void)d_tree;
    return no_cuda(err);
}
RtStatus rt_kd_gpu_build_finish(RtKdGpu *b, RtKdTree *d_tree, RtKdGpuStats *stats, int *rebuilt,
                                RtError *err)
{
    (void)b, (void)d_tree, (void)stats;
    if (rebuilt) *rebuilt = 0;
    return no_cuda(err);
}
RtStatus rt_kd_gpu_download(const RtKdTree *d_tree, RtKdTree *h_tree, RtError *err)
{
    (void)d_tree, (void)h_tree;
    return no_cuda(err);
}
RtStatus rt_kd_gpu_upload_f4(const RtFloat4 *host, size_t n, RtFloat4 **d_out, RtError *err)
{
    (void)host, (void)n;
    *d_out = 0;
    return no_cuda(err);
}
void rt_kd_gpu_free(void *d_ptr) { (void)d_ptr; }
void rt_kd_gpu_destroy(RtKdGpu *b) { (void)b; }
