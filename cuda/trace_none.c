/* trace_none.c — the GPU tracer in a build without a CUDA toolkit: the
 * variant tables and defaults exist (the CLI and HUD list them), every call
 * that needs a GPU says there is none. */
#include <string.h>

#include "trace.h"

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
    p.max_bounces = 1;
    p.shadows = 1;
    p.textures = 1;
    p.refraction = 1;
    p.background = v3(0.05f, 0.06f, 0.09f);
    p.ambient = v3(0.08f, 0.08f, 0.08f);
    return p;
}

static RtStatus no_cuda(RtError *err)
{
    return rt_fail(err, RT_ERR_NO_DEVICE,
                   "TRACE: this rtviewer was built without CUDA (no nvcc found at build time)");
}

RtStatus rt_trace_gpu(RtGpuScene *gs, const RtKdTree *d_tree, const RtCamera *cam,
                      const RtTraceParams *p, uint8_t *d_rgba, int w, int h, uint32_t *d_ids,
                      RtTraceStats *stats, RtError *err)
{
    (void)gs; (void)d_tree; (void)cam; (void)p; (void)d_rgba; (void)w; (void)h; (void)d_ids;
    (void)stats;
    return no_cuda(err);
}

RtStatus rt_trace_gpu_rays(RtGpuScene *gs, const RtKdTree *d_tree, const RtTraceParams *p,
                           const RtGpuRay *d_rays, RtHit *d_hits, uint32_t *d_steps, uint32_t n,
                           int width, int any_hit, double *ms, RtError *err)
{
    (void)gs; (void)d_tree; (void)p; (void)d_rays; (void)d_hits; (void)d_steps; (void)n;
    (void)width; (void)any_hit; (void)ms;
    return no_cuda(err);
}
