/* photon_maps.h — the photon maps of a frame on the host (the CPU backend,
 * and the oracle the GPU's are checked with): slots (photon.h) compacted in
 * slot order into one point set per map, each built into Brown's balanced
 * tree (rt_kdp_build_cpu), and the RtPhotonMaps view shading reads. The
 * GPU's counterpart is cuda/photon/photon_gpu.h. */
#ifndef RT_PHOTON_MAPS_H
#define RT_PHOTON_MAPS_H

#include "photon/photon.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Grows slots to hold count x max_depth (host memory; kept when large
 * enough). RT_ERR_ARG for max_depth outside 1..RT_PHOTON_MAX_DEPTH,
 * RT_ERR_OOM. */
RtStatus rt_photon_slots_reserve(RtPhotonSlots *slots, uint32_t count, uint32_t max_depth, RtError *err);
void rt_photon_slots_free(RtPhotonSlots *slots);

typedef struct RtPhotonMapsCpu {
    RtKdpTree tree[RT_PHOTON_MAPS];
    RtPhoton *rec[RT_PHOTON_MAPS]; /* compacted, tree point i = rec[i] */
    float *pts[RT_PHOTON_MAPS];    /* compacted positions (the trees' input) */
    uint32_t cap[RT_PHOTON_MAPS];
    RtPhotonMaps view;             /* what rt_render_cpu takes */
} RtPhotonMapsCpu;

/* Compacts the first `count` photons' slots and builds both trees; view
 * gets k and the gather radius (pp->radius_rel of rest_bounds' diagonal).
 * st (optional) gets stored counts and build_ms. */
RtStatus rt_photon_maps_build_cpu(RtPhotonMapsCpu *m, const RtPhotonSlots *slots, const RtPhotonParams *pp,
                                  RtAabb rest_bounds, RtPhotonStats *st, RtError *err);
void rt_photon_maps_cpu_free(RtPhotonMapsCpu *m);

/* pp in range: count <= 2^26 (photon_maps.c says why), k
 * 1..RT_KDP_MAX_KNN, max_depth 1..RT_PHOTON_MAX_DEPTH, radius_rel > 0. */
RtStatus rt_photon_params_check(const RtPhotonParams *pp, RtError *err);

/* The gather radius squared of pp over the scene's rest bounds. */
float rt_photon_gather_r2(const RtPhotonParams *pp, RtAabb rest_bounds);

#ifdef __cplusplus
}
#endif
#endif
