/* trace_params.c — the GPU tracer's parameters and variant tables, plain C
 * so the CLI, the viewer's hotkeys, the HUD and the benchmark read the same
 * tables in builds with and without CUDA. */
#include <string.h>

#include "trace/trace.h"

/* ---- variant tables ---------------------------------------------------- */

const RtTraceVariant rt_trace_traversals[2] = {
    {"restart", RT_TRAV_RESTART, "kd-restart: every leaf is reached by a descent from the root"},
    {"shortstack", RT_TRAV_SHORT_STACK,
     "circular short stack (stack_size entries), kd-restart on underflow (Horn et al. 2007)"},
};
const RtTraceVariant rt_trace_isects[2] = {
    {"woop", RT_ISECT_WOOP, "Woop 2004: ray in unit-triangle space, 3 float4 rows per triangle"},
    {"mt", RT_ISECT_MT, "Moller-Trumbore 1997 on the raw vertices"},
};
const RtTraceVariant rt_trace_raymaps[2] = {
    {"rows", RT_RAYMAP_ROWS, "a warp traces 32 consecutive pixels of a row"},
    {"tiles", RT_RAYMAP_TILES, "a warp traces a 4x8 pixel tile (Hoedt 2011 Alg. 22)"},
};
const RtTraceVariant rt_trace_packets[2] = {
    {"off", RT_PACKET_OFF, "every ray traverses on its own"},
    {"warp", RT_PACKET_WARP,
     "a warp traverses as one packet with one shared stack, each ray with its own interval"},
};

int rt_trace_variant_find(const RtTraceVariant *table, int n, const char *name)
{
    for (int i = 0; i < n && name; i++)
        if (!strcmp(table[i].name, name)) return table[i].value;
    return -1;
}

RtTraceParams rt_trace_params_default(void)
{
    RtTraceParams p;
    memset(&p, 0, sizeof p);
    p.traversal = RT_TRAV_SHORT_STACK;
    p.isect = RT_ISECT_WOOP;
    p.leaf_skip = 1;
    p.ray_map = RT_RAYMAP_TILES;
    p.packet = RT_PACKET_OFF;
    p.stack_size = 4;
    p.shade = rt_shade_params_default();
    return p;
}

RtStatus rt_trace_params_check(const RtTraceParams *p, RtError *err)
{
    if (p->traversal < 0 || p->traversal > 1 || p->isect < 0 || p->isect > 1 || p->ray_map < 0 ||
        p->ray_map > 1 || p->packet < 0 || p->packet > 1)
        return rt_fail(err, RT_ERR_ARG, "TRACE: unknown variant (traversal %d, isect %d, map %d, "
                       "packet %d)", p->traversal, p->isect, p->ray_map, p->packet);
    if (p->stack_size < 1 || p->stack_size > RT_TRACE_STACK_MAX)
        return rt_fail(err, RT_ERR_ARG, "TRACE: stack_size %d: expected 1..%d", p->stack_size,
                       RT_TRACE_STACK_MAX);
    if (p->shade.max_bounces < 0 || p->shade.max_bounces > 64)
        return rt_fail(err, RT_ERR_ARG, "TRACE: max_bounces %d: expected 0..64", p->shade.max_bounces);
    return RT_OK;
}
