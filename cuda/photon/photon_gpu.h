/* photon_gpu.h — the photon stage of a GPU frame (issue 23; photon.h):
 * the photons traced on the device (rt_trace_gpu_photons), each map
 * compacted in slot order and built into Brown's balanced k-d tree on the
 * GPU (kdp_gpu.h), and the device view rt_trace_gpu shades with. The same
 * photons, maps and trees as the CPU's photon_maps.h (the oracle). */
#ifndef RT_PHOTON_GPU_H
#define RT_PHOTON_GPU_H

#include "gpu/gpu_scene.h"
#include "photon/photon.h"
#include "render/accel.h"
#include "trace/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct RtPhotonGpu RtPhotonGpu;

/* Buffers grow with the photon count and are kept between frames. */
RtStatus rt_photon_gpu_create(RtPhotonGpu **out, RtError *err);
void rt_photon_gpu_destroy(RtPhotonGpu *g);

/* The frame's photons through accel (device pointers over gs), compacted
 * and built; *maps gets the device view (valid until the next call). st
 * (optional): counts, trace_ms (kernel events) and build_ms (events over
 * compaction and both trees). One host wait, for the maps' sizes. */
RtStatus rt_photon_gpu_frame(RtPhotonGpu *g, RtGpuScene *gs, const RtAccel *accel, const RtTraceParams *tp,
                             const RtPhotonParams *pp, RtAabb rest_bounds, RtPhotonMaps *maps,
                             RtPhotonStats *st, RtError *err);

/* The last frame's slots on the host (tests: the CPU's slots compared),
 * into host arrays grown by rt_photon_slots_reserve. */
RtStatus rt_photon_gpu_download_slots(const RtPhotonGpu *g, RtPhotonSlots *host, RtError *err);

#ifdef __cplusplus
}
#endif
#endif
