/* kdp_gpu_none.c — the GPU point k-d tree in a build without a CUDA
 * toolkit: every entry point says there is no device. */
#include <string.h>

#include "photon/kdp_gpu.h"

static RtStatus no_cuda(RtError *err)
{
    return rt_fail(err, RT_ERR_NO_DEVICE, "KDP: this rtviewer was built without CUDA (no GPU k-d tree builder)");
}

RtStatus rt_kdp_gpu_create(RtKdpGpu **out, const RtKdpGpuParams *params, RtError *err)
{
    (void)params;
    *out = 0;
    return no_cuda(err);
}
void rt_kdp_gpu_destroy(RtKdpGpu *g) { (void)g; }
RtStatus rt_kdp_gpu_build(RtKdpGpu *g, const float *d_pts, uint32_t n, uint32_t dim, void *stream,
                          RtKdpTree *tree, RtKdpStats *st, RtError *err)
{
    (void)g, (void)d_pts, (void)n, (void)dim, (void)stream, (void)st;
    memset(tree, 0, sizeof *tree);
    tree->root = RT_KDP_NONE;
    return no_cuda(err);
}
RtStatus rt_kdp_gpu_knn(RtKdpGpu *g, const RtKdpTree *tree, const float *d_queries, uint32_t nq, uint32_t kn,
                        float r2, RtKdpWalk walk, RtKdpHit *d_hits, uint32_t *d_counts, void *stream, RtError *err)
{
    (void)g, (void)tree, (void)d_queries, (void)nq, (void)kn, (void)r2, (void)walk, (void)d_hits, (void)d_counts, (void)stream;
    return no_cuda(err);
}
RtStatus rt_kdp_gpu_radius(RtKdpGpu *g, const RtKdpTree *tree, const float *d_queries, uint32_t nq, float r2,
                           uint32_t max_hits, RtKdpHit *d_hits, uint32_t *d_counts, void *stream, RtError *err)
{
    (void)g, (void)tree, (void)d_queries, (void)nq, (void)r2, (void)max_hits, (void)d_hits, (void)d_counts,
        (void)stream;
    return no_cuda(err);
}
RtStatus rt_kdp_gpu_download(const RtKdpTree *dev, RtKdpTree *host, RtError *err)
{
    (void)dev;
    memset(host, 0, sizeof *host);
    host->root = RT_KDP_NONE;
    return no_cuda(err);
}
