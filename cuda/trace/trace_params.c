/* trace_params.c — the GPU tracer's parameters and their defaults, plain C
 * so builds without CUDA have them too (the registry, src/app/variants.c,
 * names them for the CLI, the hotkeys, the HUD and the benchmark). */
#include <math.h>
#include <string.h>

#include "trace/trace.h"

RtTraceParams rt_trace_params_default(void)
{
    RtTraceParams p;
    memset(&p, 0, sizeof p);
    p.traversal = RT_TRAV_STACK;       /* 1.1-1.6x the short stack (Hoedt's choice) on Hopper: docs/trace_gpu.md */
    p.isect = RT_ISECT_WOOP;           /* fewer registers than Moller-Trumbore (Hoedt 4.3.2) */
    p.leaf_skip = 1;                   /* Hoedt 2011: a leaf's box before its triangles */
    p.ray_map = RT_RAYMAP_TILES;       /* 4x8 tiles: coherent warps (Hoedt Alg. 22) */
    p.packet = RT_PACKET_OFF;          /* packets measured slower (docs/trace_gpu.md) */
    p.stack_size = 8;                  /* Horn et al. and Hoedt use 4; 8 measured fastest (docs/trace_gpu.md) */
    p.shade = rt_shade_params_default();
    return p;
}

RtStatus rt_trace_params_check(const RtTraceParams *p, RtError *err)
{
    if (p->traversal < 0 || p->traversal > RT_TRAV_STACK || p->isect < 0 || p->isect > 1 || p->ray_map < 0 ||
        p->ray_map > 1 || p->packet < 0 || p->packet > 1)
        return rt_fail(err, RT_ERR_ARG, "TRACE: unknown variant (traversal %d, isect %d, map %d, "
                       "packet %d)", p->traversal, p->isect, p->ray_map, p->packet);
    if (p->stack_size < 1 || p->stack_size > RT_TRACE_STACK_MAX)
        return rt_fail(err, RT_ERR_ARG, "TRACE: stack_size %d: expected 1..%d", p->stack_size,
                       RT_TRACE_STACK_MAX);
    if (p->shade.max_bounces < 0 || p->shade.max_bounces > 64)
        return rt_fail(err, RT_ERR_ARG, "TRACE: max_bounces %d: expected 0..64", p->shade.max_bounces);
    if (p->shade.ao_rays < 0 || p->shade.ao_rays > RT_SHADE_AO_MAX_RAYS)
        return rt_fail(err, RT_ERR_ARG, "TRACE: ao_rays %d: expected 0..%d", p->shade.ao_rays, RT_SHADE_AO_MAX_RAYS);
    if (!(p->shade.ao_distance > 0.0f) || !isfinite(p->shade.ao_distance))
        return rt_fail(err, RT_ERR_ARG, "TRACE: ao_distance %g: expected a positive fraction of the scene diagonal",
                       (double)p->shade.ao_distance);
    return RT_OK;
}
