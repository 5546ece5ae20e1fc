/* kd_gpu_params.c — the GPU builder's parameters and their defaults, plain
 * C so builds without CUDA have them too (the registry, src/app/variants.c,
 * names them for the CLI, the hotkeys, the HUD and the benchmark). */
#include <string.h>

#include "kd/kd_gpu.h"
#include "kd/kd_sah.h"

void rt_kd_gpu_params_ladder(RtKdGpuParams *p, int steps)
{
    p->chang_a = steps >= 1;
    p->chang_b = steps >= 2;
    p->chang_c = steps >= 3;
    p->chang_d = steps >= 4;
    p->chang_e = steps >= 5;
}

RtKdGpuParams rt_kd_gpu_params_default(void)
{
    RtKdGpuParams p;
    memset(&p, 0, sizeof p);
    rt_kd_gpu_params_ladder(&p, 5); /* "Ours (All)": Chang et al.'s fastest row */
    p.empty_cut = 0.25f;            /* C_e, Zhou et al. 2008 sec. 4.1 */
    /* clipping: SAH ~1.13x the CPU oracle's (box inclusion ~1.6x on
     * Sponza) and faster frames (docs/benchmarks.md, H100) */
    p.assoc = RT_KD_GPU_CLIP;
    p.small_mode = RT_KD_GPU_SMALL_SAH; /* Zhou et al.'s small-node SAH */
    p.small_threshold = 64;             /* Zhou et al.'s T = 64: one 64-bit mask per candidate */
    p.c_trav = RT_KD_C_TRAV;            /* the CPU oracle's costs (kd_sah.h), */
    p.c_isect = RT_KD_C_ISECT;          /* so the two trees' SAH costs compare */
    p.small_fused = 1;                  /* one launch, no host round trip per level (ours) */
    p.large_ways = 2;                   /* Zhou et al.'s binary split */
    p.large_dataflow = 2;               /* auto: dataflow below 2^22 triangles (docs/kd_gpu.md) */
    p.max_depth = 0;                    /* by the triangle count (kd_gpu.h) */
    p.timed = 0;                        /* per-kernel events cost launches' overlap */
    p.builder = RT_KD_GPU_BUILDER_CHANG;
    p.empty_bonus = 0.2f;               /* the CPU oracle's (rt_kd_cpu_params_default) */
    p.exact_leaf = 1;
    p.exact_clip = 1;
    return p;
}

/* ---- buffer capacities (kd_gpu.h) ---------------------------------------- */

uint32_t rt_kd_gpu_cap_clamp(uint64_t want)
{
    return want > RT_KD_MAX_INDEX ? RT_KD_MAX_INDEX : (uint32_t)want;
}

uint32_t rt_kd_gpu_cap_slack(uint64_t need)
{
    return rt_kd_gpu_cap_clamp(need + need / 4 + 4096);
}

uint32_t rt_kd_gpu_cap_grow(uint32_t cap, uint64_t need)
{
    const uint32_t more = rt_kd_gpu_cap_clamp(3 * (uint64_t)cap / 2), want = rt_kd_gpu_cap_slack(need);
    return more > want ? more : want;
}

uint32_t rt_kd_gpu_cap_fit(uint32_t cap, uint64_t need)
{
    const uint32_t want = rt_kd_gpu_cap_slack(need);
    return (uint64_t)cap * 5 > 6ull * want ? want : cap;
}
