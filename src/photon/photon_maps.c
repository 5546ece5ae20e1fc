/* photon_maps.c — the host's photon maps (photon_maps.h). */
#include "photon/photon_maps.h"

#include <stdlib.h>
#include <string.h>

/* Photons per frame at most: 64M photons x 16 hits of slots is 2^30, the
 * largest count a 32-bit slot index and the host's memory both take. */
#define RT_PHOTON_MAX_COUNT (1u << 26)

RtStatus rt_photon_params_check(const RtPhotonParams *pp, RtError *err)
{
    if (pp->count > RT_PHOTON_MAX_COUNT)
        return rt_fail(err, RT_ERR_ARG, "PHOTON: %u photons asked for, at most %u per frame", pp->count,
                       RT_PHOTON_MAX_COUNT);
    if (pp->k < 1 || pp->k > RT_KDP_MAX_KNN)
        return rt_fail(err, RT_ERR_ARG, "PHOTON: k = %u photons per estimate, expected 1..%d", pp->k, RT_KDP_MAX_KNN);
    if (pp->max_depth < 1 || pp->max_depth > RT_PHOTON_MAX_DEPTH)
        return rt_fail(err, RT_ERR_ARG, "PHOTON: max_depth = %u, expected 1..%d", pp->max_depth, RT_PHOTON_MAX_DEPTH);
    if (!(pp->radius_rel > 0.0f) || !isfinite(pp->radius_rel))
        return rt_fail(err, RT_ERR_ARG, "PHOTON: gather radius %g of the scene, expected > 0", (double)pp->radius_rel);
    return RT_OK;
}

float rt_photon_gather_r2(const RtPhotonParams *pp, RtAabb rest_bounds)
{
    RtPhotonScene ps = rt_photon_scene(rest_bounds);
    float r = pp->radius_rel * 2.0f * ps.radius;
    return r * r;
}

RtStatus rt_photon_slots_reserve(RtPhotonSlots *slots, uint32_t count, uint32_t max_depth, RtError *err)
{
    if (max_depth < 1 || max_depth > RT_PHOTON_MAX_DEPTH || count > RT_PHOTON_MAX_COUNT)
        return rt_fail(err, RT_ERR_ARG, "PHOTON: slots for %u photons x %u hits", count, max_depth);
    size_t want = (size_t)count * max_depth, have = (size_t)slots->count * slots->max_depth;
    if (slots->kind && want <= have) {
        /* keep the memory; the layout follows max_depth */
        slots->count = (uint32_t)(have / max_depth);
        slots->max_depth = max_depth;
        return RT_OK;
    }
    rt_photon_slots_free(slots);
    size_t n = want ? want : 1;
    slots->kind = calloc(n, 1);
    slots->pos = malloc(3 * n * sizeof *slots->pos);
    slots->rec = malloc(n * sizeof *slots->rec);
    if (!slots->kind || !slots->pos || !slots->rec) {
        rt_photon_slots_free(slots);
        return rt_fail(err, RT_ERR_OOM, "PHOTON: out of memory for %zu photon slots", want);
    }
    slots->count = count;
    slots->max_depth = max_depth;
    return RT_OK;
}

void rt_photon_slots_free(RtPhotonSlots *slots)
{
    free(slots->kind);
    free(slots->pos);
    free(slots->rec);
    memset(slots, 0, sizeof *slots);
}

RtStatus rt_photon_maps_build_cpu(RtPhotonMapsCpu *m, const RtPhotonSlots *slots, const RtPhotonParams *pp,
                                  RtAabb rest_bounds, RtPhotonStats *st, RtError *err)
{
    double t0 = rt_now_ms();
    size_t n = (size_t)pp->count * pp->max_depth;
    if (pp->count > slots->count || pp->max_depth != slots->max_depth)
        return rt_fail(err, RT_ERR_ARG, "PHOTON: slots for %u x %u, maps of %u x %u asked for", slots->count,
                       slots->max_depth, pp->count, pp->max_depth);
    uint32_t count[RT_PHOTON_MAPS] = {0, 0};
    for (size_t i = 0; i < n; i++)
        if (slots->kind[i] != RT_PHOTON_NONE) count[slots->kind[i] - 1]++;
    for (int k = 0; k < RT_PHOTON_MAPS; k++) {
        if (count[k] > m->cap[k] || !m->rec[k]) {
            free(m->rec[k]);
            free(m->pts[k]);
            uint32_t cap = count[k] ? count[k] : 1;
            m->rec[k] = malloc(cap * sizeof *m->rec[k]);
            m->pts[k] = malloc(3 * (size_t)cap * sizeof *m->pts[k]);
            m->cap[k] = m->rec[k] && m->pts[k] ? cap : 0;
            if (!m->cap[k]) return rt_fail(err, RT_ERR_OOM, "PHOTON: out of memory for %u photons", count[k]);
        }
    }
    uint32_t at[RT_PHOTON_MAPS] = {0, 0};
    for (size_t i = 0; i < n; i++) {
        if (slots->kind[i] == RT_PHOTON_NONE) continue;
        int k = slots->kind[i] - 1;
        m->rec[k][at[k]] = slots->rec[i];
        memcpy(&m->pts[k][3 * (size_t)at[k]], &slots->pos[3 * i], 3 * sizeof(float));
        at[k]++;
    }
    for (int k = 0; k < RT_PHOTON_MAPS; k++) {
        rt_kdp_free(&m->tree[k]);
        RtStatus s = rt_kdp_build_cpu(m->pts[k], count[k], 3, &m->tree[k], NULL, err);
        if (s != RT_OK) return s;
        m->view.map[k].tree = m->tree[k];
        m->view.map[k].rec = m->rec[k];
    }
    m->view.k = pp->k;
    m->view.r2 = rt_photon_gather_r2(pp, rest_bounds);
    if (st) {
        st->emitted = pp->count;
        st->stored[0] = count[0];
        st->stored[1] = count[1];
        st->build_ms = rt_now_ms() - t0;
    }
    return RT_OK;
}

void rt_photon_maps_cpu_free(RtPhotonMapsCpu *m)
{
    for (int k = 0; k < RT_PHOTON_MAPS; k++) {
        rt_kdp_free(&m->tree[k]);
        free(m->rec[k]);
        free(m->pts[k]);
    }
    memset(m, 0, sizeof *m);
}
