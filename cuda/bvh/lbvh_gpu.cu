/* lbvh_gpu.cu — the GPU LBVH builder (lbvh_gpu.h): Karras 2012, "Maximizing
 * parallelism in the construction of BVHs, octrees, and k-d trees" (seed
 * 002), every number from lbvh.h so the tree is rt_lbvh_build_cpu's bit
 * for bit. The host driver, rt_lbvh_gpu_build, queues on the builder's
 * stream (one graph, bvh_build_run):
 *
 *   0. the counters' reset                                      (bvh_reset)
 *   1. a box per triangle, the scene box, the valid count      (bvh_boxes)
 *   2. a Morton code per triangle, ids 0 .. N-1, slots freed    (bvh_morton)
 *   3. sort the (code, id) pairs                                (CUB radix sort, bvh_sort)
 *   4-5. the radix tree climbed from its leaves: boxes, SAH     (lbvh_climb)
 *        leaf collapse, output nodes
 *
 * Steps 0 to 3 are H-PLOC's too (bvh_gpu_common.cu). Step 4 does not build
 * the radix tree top-down (Karras Fig. 4, the CPU oracle's
 * lbvh_node_range) and then climb it: it climbs the same tree as Apetrei
 * 2014 does, finding each parent from its child's key range
 * (lbvh_is_left_child), so one kernel and no per-node search; nodes get
 * Karras's numbers (lbvh_node_index).
 *
 * The valid count n (non-degenerate triangles, whose codes sort first)
 * stays on the device: step 4 runs a thread per triangle and reads n
 * there, so the host queues the whole build without waiting; only stats
 * and rt_lbvh_gpu_download read it back. Buffers are allocated at the first
 * build and grown only when the triangle count grows. */
#include <stdlib.h>
#include <string.h>

#include "bvh/bvh_gpu_common.cuh"
#include "bvh/lbvh_gpu.h"
#include "gpu/cuda_check.h"
#include "gpu/fence.cuh"

/* Threads per block of every kernel: a multiple of the warp size. */
static constexpr int kBlock = 256;

struct RtLbvhGpu {
    BvhGpuBase base;         /* stream, events, counters, steps 1-3's arrays */
    /* per-build arrays, for `cap` triangles */
    uint32_t cap;
    uint32_t *slots;         /* per split (keys i, i + 1): the first child's far key (all ones: none yet) */
    uint4 *subs;             /* internal node: its RtLbvhSub, 3 uint4 (bvh_sub_store) */
    RtBvhNode *nodes;
};

/* A split's slot before a child reached it (bvh_morton writes it). */
static constexpr uint32_t kFree = 0xffffffffu;

/* ==== the kernel ============================================================== */

/* Steps 4-5 (Karras 2012 §4, bounding boxes, over the radix tree as Apetrei
 * 2014 climbs it): a thread per sorted key climbs towards the root. A node
 * of keys [lo, hi] is its parent's left child (the parent splits after hi)
 * or right child (the split before lo), lbvh_is_left_child; at that split's
 * slot an exchange stops the first child's thread and hands the second the
 * first child's far key, so the second knows the parent's range and
 * finishes it (lbvh_finish_node: both child boxes, the SAH leaf collapse)
 * at Karras's number (lbvh_node_index). Memory order (fence.cuh): a release
 * fence before the exchange publishes the child's RtLbvhSub that the thread
 * stored, and the second thread, after an acquire fence, reads it through
 * L2; the first acquires nothing.
 * The climb is a chain of L2 round trips as long as the tree is deep, so a
 * sibling's box (an earlier kernel's output, in case it is a leaf) is
 * loaded before the exchange. Without internal nodes (n < 2) thread 0
 * writes the root: the one triangle and an empty leaf, or two empty leaves,
 * so a walk of any build finds what it holds. A thread per sorted position
 * also copies that triangle's Woop rows to leaf_woop (bvh_layout.h; NULL:
 * none): the LBVH's leaves are ranges of the sorted order, so the copy
 * needs no tree and costs no launch of its own. */
__global__ void __launch_bounds__(kBlock) lbvh_climb_kernel(const uint32_t *codes, const uint32_t *tri_index,
                                                            const RtAabb *boxes, BvhCounters *ctr, uint32_t *slots,
                                                            uint4 *subs, RtBvhNode *nodes, RtLbvhParams p,
                                                            const float4 *woop, uint32_t count, RtFloat4 *leaf_woop)
{
    if (leaf_woop) { /* the whole block, or none of it */
        __shared__ RtFloat4 sh[3 * kBlock];
        bvh_leaf_rows_store<kBlock>(tri_index, woop, count, leaf_woop, sh);
    }
    const uint32_t n = ctr->valid, pos = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < 2) {
        if (pos == 0) bvh_small_root(n, boxes, tri_index, ctr, nodes);
        return;
    }
    if (pos >= n) return;
    RtLbvhSub own = lbvh_leaf_sub(boxes[tri_index[pos]], pos, &p);
    uint32_t lo = pos, hi = pos;
    int left = lbvh_is_left_child(codes, n, lo, hi);
    for (;;) {
        const uint32_t split = left ? hi : lo - 1;   /* keys split, split + 1 */
        const uint32_t sib = left ? split + 1 : split; /* the sibling's near key: its number if internal */
        const RtAabb sib_box = boxes[tri_index[sib]];
        rt_fence_release();
        const uint32_t far = atomicExch(&slots[split], left ? lo : hi);
        if (far == kFree) return; /* the sibling's thread finishes the parent */
        rt_fence_acquire();
        const RtLbvhSub other = far == sib ? lbvh_leaf_sub(sib_box, sib, &p) : bvh_sub_load(subs, sib);
        const int own_left = left;
        if (own_left) hi = far;
        else lo = far;
        const bool root = lo == 0 && hi == n - 1;
        left = root ? 0 : lbvh_is_left_child(codes, n, lo, hi);
        const uint32_t node = lbvh_node_index(n, lo, hi, left);
        RtBvhNode out;
        own = own_left ? lbvh_finish_node(node, own, other, &p, &out) : lbvh_finish_node(node, other, own, &p, &out);
        bvh_node_store(&nodes[node], out);
        if (root) {
            ctr->root = own.box;
            return;
        }
        bvh_sub_store(subs, node, own); /* released by the parent's exchange */
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
    void *bufs[] = {b->slots, b->subs, b->nodes};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) cudaFree(bufs[i]);
    b->slots = NULL, b->subs = NULL, b->nodes = NULL;
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
            {(void **)&b->slots, inner * sizeof(uint32_t), "split slots"},
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

/* One build's launches (bvh_build_run's queue) and what they take: the
 * key of its graph. */
typedef struct LbvhLaunches {
    BvhLaunchKey in;  /* the input, the base's arrays */
    RtLbvhGpu *b;
    RtLbvhParams p;
    const void *arrays[3]; /* the builder's own (moved when they grow) */
} LbvhLaunches;
static_assert(sizeof(LbvhLaunches) <= RT_LAUNCH_GRAPH_KEY, "the whole key fits the graph's");

static RtStatus lbvh_queue(void *ctx, RtError *err)
{
    const LbvhLaunches *q = (const LbvhLaunches *)ctx;
    RtLbvhGpu *b = q->b;
    RtLaunchLog *log = &b->base.log;
    BvhKeysGpu *k = &b->base.keys;
    /* grids over every triangle (n is on the device); the bottom-up's
     * thread 0 always runs: it writes the root of a tree without internal nodes */
    const dim3 block(kBlock), leaves(q->in.tri_count ? (q->in.tri_count + kBlock - 1) / kBlock : 1);
    RtStatus st;

    /* ---- 1-3. boxes, codes (the split slots freed), sorted ------------------ */
    if ((st = bvh_keys_queue(&b->base, q->in.verts, q->in.tri_count, b->slots, err)) != RT_OK) return st;

    /* ---- 4-5. the climb: boxes, leaf collapse, nodes; the leaf triangles ---- */
    return rt_launch(log, "lbvh_climb", leaves, block, 0, lbvh_climb_kernel, err, k->codes[1], k->ids[1], k->boxes,
                     b->base.d_ctr, b->slots, b->subs, b->nodes, q->p, q->in.woop, q->in.tri_count,
                     q->in.woop ? b->base.leaf_woop : (RtFloat4 *)NULL);
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
    if (d_woop && (st = bvh_leaf_woop_reserve(&b->base, b->cap, tri_count, err)) != RT_OK) return st;
    LbvhLaunches q;
    memset(&q, 0, sizeof q); /* the key's padding too */
    bvh_launch_key(&b->base, d_verts, d_woop, tri_count, &q.in);
    q.b = b;
    q.p = p;
    const void *arrays[] = {b->slots, b->subs, b->nodes};
    static_assert(sizeof arrays == sizeof q.arrays, "the key holds every array");
    memcpy(q.arrays, arrays, sizeof q.arrays);
    if ((st = bvh_build_run(&b->base, &q, sizeof q, lbvh_queue, &q, err)) != RT_OK) return st;
    if ((st = bvh_build_end(&b->base, b->nodes, b->base.keys.ids[1], b->cap, tri_count, d_woop != NULL, d_bvh,
                            err)) != RT_OK)
        return st;
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
        stats->climb_ms = bvh_entry_ms(log, "lbvh_climb");
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
