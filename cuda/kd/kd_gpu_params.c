/* kd_gpu_params.c — the GPU builder's parameters and variant tables, plain
 * C so the CLI, the viewer's hotkeys, the HUD and the benchmark read the same
 * table in builds with and without CUDA. */
#include <string.h>

#include "kd/kd_gpu.h"

const RtKdGpuVariant rt_kd_gpu_ladder[6] = {
    {"Original", 0, "Zhou et al.: Impl. I (flags + CUB scans), segmented box reduction, shared-memory scans/reductions, SWAR bit count"},
    {"[A]", 1, "triangle sorting by two atomicAdd per block (Impl. II)"},
    {"[A]-[B]", 2, "+ intra-block scans by ballot/popc/shfl"},
    {"[A]-[C]", 3, "+ node boxes by 6 atomics per chunk"},
    {"[A]-[D]", 4, "+ intra-block reductions by warp shuffles"},
    {"All", 5, "+ small-stage bit counting by __popc"},
};

const RtKdGpuVariant rt_kd_gpu_assoc_variants[2] = {
    {"box inclusion", RT_KD_GPU_BOX_INCLUSION, "a straddler's AABB decides; fast, refs may miss their cell (Hoedt's BI)"},
    {"clipping", RT_KD_GPU_CLIP, "a straddler is clipped at the split and keeps the clipped box; small roots' boxes exact (Zhou; default)"},
};
const RtKdGpuVariant rt_kd_gpu_small_variants[3] = {
    {"none", RT_KD_GPU_SMALL_NONE, "leaves straight from the large stage (Hoedt's no lower tree)"},
    {"SAH", RT_KD_GPU_SMALL_SAH, "SAH with cell areas over the AABB-face candidates (Zhou)"},
    {"SSAH", RT_KD_GPU_SMALL_SSAH, "Hoedt's simplified SAH: C_trav + C_i (nl^2 + nr^2) / n"},
};
const RtKdGpuVariant rt_kd_gpu_empty_cut_variants[3] = {
    {"C_e 15%", 15, "cut empty space above 15 % of the extent"},
    {"C_e 25%", 25, "Zhou's value (default)"},
    {"C_e 35%", 35, "Hoedt's recommendation"},
};

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
    rt_kd_gpu_params_ladder(&p, 5);
    p.empty_cut = 0.25f;
    /* clipping: SAH ~1.13x the CPU oracle's (box inclusion ~1.6x on
     * Sponza) and faster frames (docs/benchmarks.md, H100) */
    p.assoc = RT_KD_GPU_CLIP;
    p.small_mode = RT_KD_GPU_SMALL_SAH;
    p.small_threshold = 64;
    p.c_trav = 1.0f;
    p.c_isect = 1.5f;
    p.small_fused = 1;
    p.large_ways = 2;
    p.large_dataflow = 2;
    p.max_depth = 0;
    p.timed = 0;
    return p;
}
