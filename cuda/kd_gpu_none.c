/* kd_gpu_none.c — the GPU kd-tree builder in a build without a CUDA toolkit:
 * every entry point says there is no device. */
#include <string.h>

#include "kd_gpu.h"

const RtKdGpuVariant rt_kd_gpu_ladder[6] = {
    {"Original", 0, "Zhou et al. (no CUDA in this build)"}, {"[A]", 1, ""}, {"[A]-[B]", 2, ""},
    {"[A]-[C]", 3, ""}, {"[A]-[D]", 4, ""}, {"All", 5, ""},
};

const RtKdGpuVariant rt_kd_gpu_assoc_variants[2] = {
    {"box inclusion", RT_KD_GPU_BOX_INCLUSION, "a straddler's AABB decides; fast, refs may miss their cell (Hoedt's BI)"},
    {"clipping", RT_KD_GPU_CLIP, "a straddler is clipped to each child's cell and keeps the clipped box (Zhou)"},
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
    p.small_mode = RT_KD_GPU_SMALL_SAH;
    p.small_threshold = 64;
    p.small_fused = 1;
    p.c_trav = 1.0f;
    p.c_isect = 1.5f;
    return p;
}

static RtStatus no_cuda(RtError *err)
{
    return rt_fail(err, RT_ERR_NO_DEVICE, "KD: this rtviewer was built without CUDA (no GPU kd-tree builder)");
}

RtStatus rt_kd_gpu_create(RtKdGpu **out, RtError *err)
{
    *out = 0;
    return no_cuda(err);
}
RtStatus rt_kd_gpu_build(RtKdGpu *b, const RtKdGpuParams *p, const RtFloat4 *d_verts,
                         const RtFloat4 *d_woop, uint32_t tri_count, RtKdTree *d_tree,
                         RtKdGpuStats *stats, RtError *err)
{
    (void)b, (void)p, (void)d_verts, (void)d_woop, (void)tri_count, (void)d_tree, (void)stats;
    return no_cuda(err);
}
RtStatus rt_kd_gpu_download(const RtKdTree *d_tree, RtKdTree *h_tree, RtError *err)
{
    (void)d_tree, (void)h_tree;
    return no_cuda(err);
}
RtStatus rt_kd_gpu_upload_f4(const RtFloat4 *host, size_t n, RtFloat4 **d_out, RtError *err)
{
    (void)host, (void)n;
    *d_out = 0;
    return no_cuda(err);
}
void rt_kd_gpu_free(void *d_ptr) { (void)d_ptr; }
void rt_kd_gpu_destroy(RtKdGpu *b) { (void)b; }
