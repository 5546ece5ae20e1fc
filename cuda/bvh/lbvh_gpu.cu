/* lbvh_gpu.cu — the GPU LBVH builder (lbvh_gpu.h): Karras 2012, "Maximizing
 * parallelism in the construction of BVHs, octrees, and k-d trees" (seed
 * 002), every number from lbvh.h so the tree is rt_lbvh_build_cpu's bit
 * for bit. The host driver, rt_lbvh_gpu_build, queues on the builder's
 * stream:
 *
 *   1. a box per triangle, the scene box, the valid count    (bvh_boxes)
 *   2. a Morton code per triangle, ids 0 .. N-1               (bvh_morton)
 *   3. sort the (code, id) pairs                               (CUB radix sort, bvh_sort)
 *   4. the radix tree: ranges, splits, parents (Fig. 4)        (lbvh_tree)
 *   5. bottom-up: boxes, SAH leaf collapse, output nodes       (lbvh_bottom_up)
 *
 * Steps 1 to 3 are H-PLOC's too (bvh_gpu_common.cu).
 *
 * The valid count n (non-degenerate triangles, whose codes sort first)
 * stays on the device: steps 4 and 5 run a thread per triangle and read n
 * there, so the host queues the whole build without waiting; only stats
 * and rt_lbvh_gpu_download read it back. Buffers are allocated at the first
 * build and grown only when the triangle count grows. */
#include <stdlib.h>
#include <string.h>

#include "bvh/bvh_gpu_common.cuh"
#include "bvh/lbvh_gpu.h"
#include "gpu/cuda_check.h"

/* Threads per block of every kernel: a multiple of the warp size. */
static constexpr int kBlock = 256;

struct RtLbvhGpu {
    BvhGpuBase base;         /* stream, events, counters, steps 1-3's arrays */
    /* per-build arrays, for `cap` triangles */
    uint32_t cap;
    uint2 *splits;           /* internal node: (split, 1 left child is a leaf | 2 right child is) */
    uint32_t *parent_node;   /* internal node -> its parent */
    uint32_t *parent_leaf;   /* sorted position -> its parent */
    uint32_t *flags;         /* internal node: children finished (0, 1; the second finishes it) */
    uint4 *subs;             /* internal node: its RtLbvhSub, 3 uint4 (bvh_sub_store) */
    RtBvhNode *nodes;
};

/* ==== kernels: Karras 2012, a kernel per step ================================ */

/* Step 4 (Karras 2012 §3, Fig. 4): internal node i of the n - 1 finds its key range
 * and split on its own (lbvh_node_range), so every node is built at once;
 * it records the split and itself as its children's parent, and clears its
 * flag for step 5. Threads from n - 1 on (n read here: degenerate
 * triangles' codes sort last) have no node. A thread per sorted position
 * also copies that triangle's Woop rows to leaf_woop (bvh_layout.h; NULL:
 * none): the LBVH's leaves are ranges of the sorted order, so the copy
 * needs no tree and costs no launch of its own. */
__global__ void __launch_bounds__(kBlock) lbvh_tree_kernel(const uint32_t *codes, const BvhCounters *ctr, uint2 *splits,
                                                           uint32_t *parent_node, uint32_t *parent_leaf, uint32_t *flags,
                                                           const uint32_t *tri_index, const float4 *woop,
                                                           uint32_t count, RtFloat4 *leaf_woop)
{
    const uint32_t n = ctr->valid, i = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= 2 && i < n - 1) {
        uint32_t first, last, split;
        lbvh_node_range(codes, n, i, &first, &last, &split);
        /* a child of one key is a leaf: left [first, split], right [split + 1, last] */
        const uint32_t left_leaf = first == split, right_leaf = split + 1 == last;
        (left_leaf ? parent_leaf : parent_node)[split] = i;
        (right_leaf ? parent_leaf : parent_node)[split + 1] = i;
        splits[i] = make_uint2(split, left_leaf | right_leaf << 1);
        flags[i] = 0;
    }
    if (leaf_woop) { /* the whole block, or none of it */
        __shared__ RtFloat4 sh[3 * kBlock];
        bvh_leaf_rows_store<kBlock>(tri_index, woop, count, leaf_woop, sh);
    }
}

/* Step 5 (Karras 2012 §4, bounding boxes): a thread per leaf climbs towards the root; at each
 * node an atomic flag stops the first child's thread and lets the second
 * through, which then has both children finished and writes the node
 * (lbvh_finish_node: both child boxes, the SAH leaf collapse). Memory
 * order: a thread stores its node's RtLbvhSub and fences before the
 * parent's atomic (release); the thread that sees the flag set fences
 * after it (acquire) and reads the sibling's through L2. Without internal
 * nodes (n < 2) thread 0 writes the root: the one triangle and an empty
 * leaf, or two empty leaves, so a walk of any build finds what it holds. */
__global__ void lbvh_bottom_up_kernel(const uint32_t *tri_index, const RtAabb *boxes, BvhCounters *ctr,
                                      const uint2 *splits, const uint32_t *parent_node, const uint32_t *parent_leaf,
                                      uint32_t *flags, uint4 *subs, RtBvhNode *nodes, RtLbvhParams p)
{
    const uint32_t n = ctr->valid, pos = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < 2) {
        if (pos == 0) bvh_small_root(n, boxes, tri_index, ctr, nodes);
        return;
    }
    if (pos >= n) return;
    RtLbvhSub own = lbvh_leaf_sub(boxes[tri_index[pos]], pos, &p);
    uint32_t node = parent_leaf[pos];
    for (;;) {
        if (atomicAdd(&flags[node], 1u) == 0) return; /* the sibling's thread finishes node */
        __threadfence();
        const uint2 sp = splits[node];
        const bool own_left = own.first <= sp.x; /* the left child covers [first, split] */
        const uint32_t sib = own_left ? sp.x + 1 : sp.x;
        const bool sib_leaf = (sp.y >> (own_left ? 1 : 0)) & 1u;
        const RtLbvhSub other = sib_leaf ? lbvh_leaf_sub(boxes[tri_index[sib]], sib, &p) : bvh_sub_load(subs, sib);
        RtBvhNode out;
        own = own_left ? lbvh_finish_node(node, own, other, &p, &out) : lbvh_finish_node(node, other, own, &p, &out);
        bvh_node_store(&nodes[node], out);
        if (node == 0) {
            ctr->root = own.box;
            return;
        }
        bvh_sub_store(subs, node, own);
        __threadfence(); /* the sub reaches L2 before the parent's flag says it is there */
        node = parent_node[node];
    }
}

/* ==== host side ============================================================== */

extern "C" RtStatus rt_lbvh_gpu_create(RtLbvhGpu **out, RtError *err)
{
    *out = NULL;
    RtLbvhGpu *b = (RtLbvhGpu *)calloc(1, sizeof *b);
    if (!b) return rt_fail(err, RT_ERR_OOM, "LBVH: out of host memory");
    RtStatus st = bvh_base_create(&b->base, "LBVH", err);
    if (st != RT_OK) {
        rt_lbvh_gpu_destroy(b);
        return st;
    }
    *out = b;
    return RT_OK;
}

static void lbvh_free_buffers(RtLbvhGpu *b)
{
    void *bufs[] = {b->splits, b->parent_node, b->parent_leaf, b->flags, b->subs, b->nodes};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) cudaFree(bufs[i]);
    b->splits = NULL, b->parent_node = b->parent_leaf = b->flags = NULL, b->subs = NULL, b->nodes = NULL;
    b->cap = 0;
}

extern "C" void rt_lbvh_gpu_destroy(RtLbvhGpu *b)
{
    if (!b) return;
    lbvh_free_buffers(b);
    bvh_base_destroy(&b->base);
    free(b);
}

/* The arrays for n triangles (kept when they hold as many already: a scene
 * keeps its count frame after frame, so this allocates at the first build)
 * and steps 1-3's (bvh_keys_reserve). */
static RtStatus lbvh_reserve(RtLbvhGpu *b, uint32_t n, RtError *err)
{
    RtStatus st;
    if (!b->nodes || n > b->cap) {
        lbvh_free_buffers(b);
        const size_t N = n ? n : 1, inner = N > 1 ? N - 1 : 1;
        const BvhAlloc want[] = {
            {(void **)&b->splits, inner * sizeof(uint2), "node splits"},
            {(void **)&b->parent_node, inner * sizeof(uint32_t), "node parents"},
            {(void **)&b->parent_leaf, N * sizeof(uint32_t), "leaf parents"},
            {(void **)&b->flags, inner * sizeof(uint32_t), "node flags"},
            {(void **)&b->subs, 3 * inner * sizeof(uint4), "finished subtrees"},
            {(void **)&b->nodes, inner * sizeof(RtBvhNode), "BVH nodes"},
        };
        if ((st = bvh_gpu_alloc_all(&b->base, want, sizeof want / sizeof want[0], n, err)) != RT_OK) {
            lbvh_free_buffers(b);
            return st;
        }
        b->cap = n;
    }
    return bvh_keys_reserve(&b->base, n, err);
}

extern "C" RtStatus rt_lbvh_gpu_build(RtLbvhGpu *b, const RtLbvhParams *pp, const RtFloat4 *d_verts,
                                      const RtFloat4 *d_woop, uint32_t tri_count, RtBvh *d_bvh,
                                      RtLbvhGpuStats *stats, RtError *err)
{
    if (!b || !d_bvh || (tri_count && !d_verts))
        return rt_fail(err, RT_ERR_ARG, "LBVH: rt_lbvh_gpu_build needs a builder, vertices and a BVH");
    const RtLbvhParams p = pp ? *pp : rt_lbvh_params_default();
    RtStatus st = rt_lbvh_params_check(&p, err);
    if (st != RT_OK) return st;
    if ((st = bvh_build_begin(&b->base, tri_count, stats != NULL, err)) != RT_OK) return st;
    if ((st = lbvh_reserve(b, tri_count, err)) != RT_OK) return st;
    RtLaunchLog *log = &b->base.log;
    BvhKeysGpu *k = &b->base.keys;
    /* grids over every triangle (n is on the device); the bottom-up's
     * thread 0 always runs: it writes the root of a tree without internal nodes */
    const dim3 block(kBlock), leaves(tri_count ? (tri_count + kBlock - 1) / kBlock : 1);

    /* ---- 1-3. boxes, codes, sorted (bvh_gpu_common.cu) -------------------- */
    if ((st = bvh_keys_queue(&b->base, (const float4 *)d_verts, tri_count, NULL, err)) != RT_OK)
        return st;

    /* ---- 4. radix tree: every internal node at once (n on the device), and
     *         the leaf triangles in sorted order ------------------------------ */
    if (d_woop && (st = bvh_leaf_woop_reserve(&b->base, b->cap, tri_count, err)) != RT_OK) return st;
    if ((st = rt_launch(log, "lbvh_tree", leaves, block, 0, lbvh_tree_kernel, err, k->codes[1], b->base.d_ctr,
                        b->splits, b->parent_node, b->parent_leaf, b->flags, k->ids[1], (const float4 *)d_woop,
                        tri_count, d_woop ? b->base.leaf_woop : (RtFloat4 *)NULL)) != RT_OK)
        return st;

    /* ---- 5. bottom-up: boxes and leaf collapse, leaves to the root ------- */
    if ((st = rt_launch(log, "lbvh_bottom_up", leaves, block, 0, lbvh_bottom_up_kernel, err, k->ids[1], k->boxes,
                        b->base.d_ctr, b->splits, b->parent_node, b->parent_leaf, b->flags, b->subs, b->nodes,
                        p)) != RT_OK)
        return st;

    if ((st = bvh_build_end(&b->base, b->nodes, k->ids[1], b->cap, tri_count, (const float4 *)d_woop, 1, d_bvh, err)) != RT_OK) return st;
    return stats ? rt_lbvh_gpu_build_finish(b, stats, err) : RT_OK;
}

/* ---- statistics: wait for the last build ------------------------------------ */
extern "C" RtStatus rt_lbvh_gpu_build_finish(RtLbvhGpu *b, RtLbvhGpuStats *stats, RtError *err)
{
    if (!b || !stats) return rt_fail(err, RT_ERR_ARG, "LBVH: rt_lbvh_gpu_build_finish needs a builder and stats");
    memset(stats, 0, sizeof *stats);
    RtStatus st = bvh_build_finish(&b->base, &stats->ms, err);
    if (st != RT_OK) return st;
    RtLaunchLog *log = &b->base.log;
    if (log->timed) {
        stats->morton_ms = bvh_entry_ms(log, "bvh_boxes") + bvh_entry_ms(log, "bvh_morton");
        stats->sort_ms = bvh_entry_ms(log, "bvh_sort");
        stats->tree_ms = bvh_entry_ms(log, "lbvh_tree");
        stats->bottom_up_ms = bvh_entry_ms(log, "lbvh_bottom_up");
    }
    stats->launches = log->launches;
    stats->triangles = b->base.built_tris;
    stats->valid = b->base.h_ctr->valid;
    return RT_OK;
}

/* ==== device -> host copy, for the tests and the oracle comparisons ========== */

extern "C" RtStatus rt_lbvh_gpu_download(const RtLbvhGpu *b, const RtBvh *d_bvh, RtBvh *h, RtError *err)
{
    if (!b) {
        memset(h, 0, sizeof *h);
        return rt_fail(err, RT_ERR_ARG, "LBVH: rt_lbvh_gpu_download needs the builder and a BVH it built");
    }
    return bvh_download(&b->base, d_bvh, h, err);
}
