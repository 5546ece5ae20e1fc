/* photon_gpu_none.c — the GPU photon stage in a build without CUDA. */
#include "photon/photon_gpu.h"

static RtStatus no_cuda(RtError *err)
{
    return rt_fail(err, RT_ERR_NO_DEVICE, "PHOTON: this rtviewer was built without CUDA (no nvcc found at build time)");
}

RtStatus rt_photon_gpu_create(RtPhotonGpu **out, RtError *err)
{
    *out = NULL;
    return no_cuda(err);
}

void rt_photon_gpu_destroy(RtPhotonGpu *g) { (void)g; }

RtStatus rt_photon_gpu_frame(RtPhotonGpu *g, RtGpuScene *gs, const RtAccel *accel, const RtTraceParams *tp,
                             const RtPhotonParams *pp, RtAabb rest_bounds, RtPhotonMaps *maps,
                             RtPhotonStats *st, RtError *err)
{
    (void)g; (void)gs; (void)accel; (void)tp; (void)pp; (void)rest_bounds; (void)maps; (void)st;
    return no_cuda(err);
}

RtStatus rt_photon_gpu_download_slots(const RtPhotonGpu *g, RtPhotonSlots *host, RtError *err)
{
    (void)g; (void)host;
    return no_cuda(err);
}
