/* hploc_gpu.h — the GPU H-PLOC builder (stage "build", structure bvh):
 * Benthin et al. 2024 as src/bvh/hploc.h writes it, every step a kernel on
 * the builder's stream, no host round trip: the LBVH's boxes, Morton codes
 * and CUB sort (bvh_gpu_common.cu), one kernel for the whole clustering
 * (Apetrei's bottom-up walk of the radix tree, PLOC inside a warp at each
 * large node, each merge finishing its subtree's SAH collapse and its
 * node), the depth fallback (hploc.h) and the output. The tree equals rt_hploc_build_cpu's
 * node for node (tests/test_gpu_bvh.c).
 *
 * The API mirrors lbvh_gpu.h: plain C, opaque handle, never exits; buffers
 * are allocated at the first build and grown only when the triangle count
 * grows. */
#ifndef RT_HPLOC_GPU_H
#define RT_HPLOC_GPU_H

#include "bvh/bvh_cpu.h"
#include "bvh/hploc.h"
#include "bvh/split_top.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct RtHplocGpu RtHplocGpu;

typedef struct RtHplocGpuStats {
    double ms;             /* the whole build, GPU time (events) */
    /* per step: only when the build was given stats (each launch timed), else 0 */
    double morton_ms;      /* boxes, scene box and codes */
    double sort_ms;        /* CUB radix sort */
    double cluster_ms;     /* the radix-tree walk with PLOC merges, each finishing its subtree (boxes,
                              SAH collapse, depth) and node (hploc_cluster) */
    double fallback_ms;    /* the radix tree's pass when the clustered one is too deep (else it
                              returns at once) */
    double output_ms;      /* the leaves' places and their triangles (step 5) */
    double top_ms;         /* the spatial-split top's levels, keys and links (split_top_gpu.cu) */
    uint32_t launches;
    uint32_t triangles, valid; /* input triangles; non-degenerate ones (read back) */
    uint32_t cluster_depth;    /* the clustered tree's depth once collapsed (read back) */
    int fallback;              /* 1: it exceeded RT_BVH_MAX_DEPTH, the radix tree was output */
    uint32_t top_leaves;       /* with a top (rt_hploc_gpu_set_top): its leaves (1: it split nothing) */
    uint32_t top_refs;         /* ... and the references under it (read back) */
} RtHplocGpuStats;

/* Needs a CUDA device; RT_ERR_NO_DEVICE without one. */
RtStatus rt_hploc_gpu_create(RtHplocGpu **out, RtError *err);
void rt_hploc_gpu_destroy(RtHplocGpu *b);

/* Queues the build as rt_lbvh_gpu_build does (the same arguments, d_bvh's
 * arrays owned by b until the next build or destroy, d_bounds on the
 * device; stats: wait and time each step; NULL: return at once). */
RtStatus rt_hploc_gpu_build(RtHplocGpu *b, const RtHplocParams *p, const RtFloat4 *d_verts,
                            const RtFloat4 *d_woop, uint32_t tri_count, RtBvh *d_bvh,
                            RtHplocGpuStats *stats, RtError *err);
/* The spatial-split top (split_top.h) of the builds from now on; NULL or
 * depth 0: none (the default). The tree then references parts of
 * triangles (RtBvh.split_refs): index_count and node_count are the room a
 * top may take, the references' count on the device (stats: top_refs). */
RtStatus rt_hploc_gpu_set_top(RtHplocGpu *b, const RtSplitTopParams *p, RtError *err);
/* The last timed build's (stats given) GPU time of the kernels of that
 * name (hploc_gpu.cu's and split_top_gpu.cu's launch names); 0 otherwise. */
double rt_hploc_gpu_kernel_ms(RtHplocGpu *b, const char *name);
/* The last build's GPU time, launches and counts, waiting for it. */
RtStatus rt_hploc_gpu_build_finish(RtHplocGpu *b, RtHplocGpuStats *stats, RtError *err);

/* Copies a device BVH to host arrays (rt_bvh_free), as
 * rt_lbvh_gpu_download: n - 1 nodes (1 for n = 1, none for n = 0). */
RtStatus rt_hploc_gpu_download(const RtHplocGpu *b, const RtBvh *d_bvh, RtBvh *h_bvh, RtError *err);

#ifdef __cplusplus
}
#endif
#endif
