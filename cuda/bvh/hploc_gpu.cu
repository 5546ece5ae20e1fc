/* hploc_gpu.cu — the GPU H-PLOC builder (hploc_gpu.h): Benthin et al. 2024,
 * "H-PLOC: Hierarchical Parallel Locally-Ordered Clustering for Bounding
 * Volume Hierarchy Construction", every rule from hploc.h so the tree is
 * rt_hploc_build_cpu's node for node. The host driver, rt_hploc_gpu_build,
 * queues on the builder's stream:
 *
 *   1-2. boxes, scene box, valid count; Morton codes; sort   (bvh_gpu_common.cu)
 *   3.   the radix-tree walk with PLOC merges in warps        (hploc_cluster)
 *   4.   bottom-up boxes, SAH collapse, depth; the fallback   (hploc_collapse, twice)
 *   5.   depth-first leaf order and output nodes               (hploc_output)
 *
 * The valid count n stays on the device, as the LBVH's: every kernel runs a
 * thread per triangle and reads n there, so the host never waits; so does
 * the depth fallback (the second collapse pass returns at once unless the
 * first set it). */
#include <stdlib.h>
#include <string.h>

#include "bvh/bvh_gpu_common.cuh"
#include "bvh/hploc_gpu.h"
#include "gpu/cuda_check.h"

/* Threads per block: a multiple of the warp size (the cluster kernel's
 * warps work as units). */
static constexpr int kBlock = 256;
static constexpr unsigned kFull = 0xffffffffu;
static_assert(RT_HPLOC_WARP == 32, "a PLOC merge is one warp");

/* Step 3's arrays (hploc.h, Names), passed by value to the kernels. */
typedef struct HplocArrays {
    uint32_t *cidx;      /* per key place: the clusters of the radix node whose range starts there */
    RtAabb *cbox;        /* per cluster: keys [0, n) (their triangle's box), interior n + id */
    uint32_t *max_key;   /* per interior id */
    uint32_t *slots;     /* per split slot: the first child's range end (RT_HPLOC_NONE: none yet) */
    uint32_t *ploc_child, *ploc_parent;   /* the clustered tree */
    uint32_t *radix_child, *radix_parent; /* the radix tree (the depth fallback) */
} HplocArrays;

struct RtHplocGpu {
    BvhGpuBase base;     /* stream, events, counters, steps 1-2's arrays */
    uint32_t cap;        /* triangles the arrays below hold */
    HplocArrays a;
    uint32_t *flags;     /* per interior id: children finished (step 4; two passes count 0..4) */
    uint4 *subs;         /* per interior id: its RtLbvhSub (bvh_sub_store) */
    uint32_t *count;     /* per interior id: its triangles */
    uint32_t *tri_index; /* depth-first order */
    RtBvhNode *nodes;
};

/* ---- warp helpers ------------------------------------------------------------ */

__device__ __forceinline__ RtAabb box_shfl(const RtAabb &b, int src)
{
    RtAabb r;
    r.lo = v3(__shfl_sync(kFull, b.lo.x, src), __shfl_sync(kFull, b.lo.y, src), __shfl_sync(kFull, b.lo.z, src));
    r.hi = v3(__shfl_sync(kFull, b.hi.x, src), __shfl_sync(kFull, b.hi.y, src), __shfl_sync(kFull, b.hi.z, src));
    return r;
}

__device__ __forceinline__ RtAabb box_shfl_down(const RtAabb &b, unsigned d)
{
    RtAabb r;
    r.lo = v3(__shfl_down_sync(kFull, b.lo.x, d), __shfl_down_sync(kFull, b.lo.y, d),
              __shfl_down_sync(kFull, b.lo.z, d));
    r.hi = v3(__shfl_down_sync(kFull, b.hi.x, d), __shfl_down_sync(kFull, b.hi.y, d),
              __shfl_down_sync(kFull, b.hi.z, d));
    return r;
}

__device__ __forceinline__ RtHplocCluster cluster_shfl(const RtHplocCluster &c, int src)
{
    RtHplocCluster r;
    r.id = __shfl_sync(kFull, c.id, src);
    r.max_key = __shfl_sync(kFull, c.max_key, src);
    r.box = box_shfl(c.box, src);
    return r;
}

/* A box another warp may have written in this launch: through L2. */
__device__ __forceinline__ RtAabb box_load_cg(const RtAabb *p)
{
    const float *f = reinterpret_cast<const float *>(p);
    RtAabb b;
    b.lo = v3(__ldcg(f + 0), __ldcg(f + 1), __ldcg(f + 2));
    b.hi = v3(__ldcg(f + 3), __ldcg(f + 4), __ldcg(f + 5));
    return b;
}

__device__ __forceinline__ uint64_t min_u64(uint64_t a, uint64_t b) { return b < a ? b : a; }

/* ==== step 3: the clustering ================================================== */

/* Benthin et al. 2024 §4 (PLOC, Meister and Bittner 2018, in one warp):
 * radix node [lo, hi], its right child from `split`. Lane i holds cluster
 * i: the left child's clusters (at most t, from lo), then the right's (from
 * split), closed up. Each step: every cluster's nearest neighbour within
 * `radius` lanes (the distance computed once per pair, by the lower lane,
 * and shuffled up to the other), mutual pairs merge into the lower lane
 * (hploc_merge), the rest close up by ballot and __fns. Until at most t
 * remain (final, the root: one); they go back from lo, the places after
 * them up to t emptied. Whole warp, uniform arguments. Returns lane 0's
 * cluster (the root's only one). */
__device__ uint32_t hploc_warp_merge(const HplocArrays &a, uint32_t n, uint32_t lo, uint32_t hi, uint32_t split,
                                     bool final, uint32_t radius, uint32_t t)
{
    const uint32_t lane = threadIdx.x & 31u;
    const uint32_t nl = min(split - lo, t), nr = min(hi + 1u - split, t);
    uint32_t id = RT_HPLOC_NONE;
    if (lane < nl) id = __ldcg(a.cidx + lo + lane);
    else if (lane < nl + nr) id = __ldcg(a.cidx + split + lane - nl);
    uint32_t keep = __ballot_sync(kFull, id != RT_HPLOC_NONE);
    uint32_t k = __popc(keep);
    id = __shfl_sync(kFull, id, lane < k ? (int)__fns(keep, 0, (int)lane + 1) : (int)lane);
    RtHplocCluster c;
    c.id = RT_HPLOC_NONE;
    c.max_key = 0;
    c.box = aabb_empty();
    if (lane < k) {
        c.id = id;
        c.max_key = id < n ? id : __ldcg(a.max_key + (id - n));
        c.box = box_load_cg(a.cbox + id);
    }
    const uint32_t target = final ? 1u : t;
    while (k > target) { /* k is the warp's: uniform */
        /* each cluster's nearest neighbour, ties to the lower lane (hploc_nn_key) */
        uint64_t best = ~0ull;
        for (uint32_t d = 1; d <= radius; d++) {
            const RtAabb up = box_shfl_down(c.box, d);
            const bool fwd = lane + d < k;
            const float dist = fwd ? hploc_distance(c.box, up) : 0.0f;
            if (fwd) best = min_u64(best, hploc_nn_key(dist, lane + d));
            const float back = __shfl_up_sync(kFull, dist, d); /* lane - d's distance to this lane */
            if (lane >= d && lane < k) best = min_u64(best, hploc_nn_key(back, lane - d));
        }
        const uint32_t nn = (uint32_t)best; /* lanes >= k: RT_HPLOC_NONE */
        const uint32_t nn_nn = __shfl_sync(kFull, nn, (int)(nn & 31u));
        const bool mutual = lane < k && nn_nn == lane, create = mutual && lane < nn;
        const RtHplocCluster other = cluster_shfl(c, create ? (int)nn : (int)lane);
        if (create) {
            c = hploc_merge(c, other, n, a.ploc_child, a.ploc_parent, a.max_key);
            a.cbox[c.id] = c.box;
        }
        /* the upper lane of each pair leaves; the rest close up, order kept */
        keep = __ballot_sync(kFull, lane < k && !(mutual && !create));
        k = __popc(keep);
        c = cluster_shfl(c, lane < k ? (int)__fns(keep, 0, (int)lane + 1) : (int)lane);
    }
    if (lane < k) a.cidx[lo + lane] = c.id;
    else if (lane < min(t, hi - lo + 1u)) a.cidx[lo + lane] = RT_HPLOC_NONE;
    /* every lane's writes reach L2 before any lane's next exchange publishes them */
    __threadfence();
    __syncwarp();
    return __shfl_sync(kFull, c.id, 0);
}

/* Benthin et al. 2024, Alg. 1 (Apetrei 2014's bottom-up walk): a thread per
 * key climbs the radix tree; at each node an exchange on its split slot
 * stops the first child and gives the second the node's range (the left
 * child leaves its lo, the right its hi). After every step the warp takes,
 * one by one, its lanes' nodes of more than t keys (and the root) and
 * merges their clusters (hploc_warp_merge). Memory order: a lane's writes
 * (its links; the merges' clusters, fenced in the merge) are fenced before
 * its exchange (release); after the exchanges every lane fences (acquire)
 * and the merge reads through L2. No lane leaves the loop before the warp
 * does: the merges need all 32. */
__global__ void hploc_cluster_kernel(const uint32_t *codes, const uint32_t *ids, const RtAabb *tri_boxes,
                                     BvhCounters *ctr, HplocArrays a, uint32_t radius, uint32_t t)
{
    const uint32_t n = ctr->valid, p = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31u;
    bool active = n >= 2 && p < n;
    uint32_t lo = p, hi = p, split = 0, node = p;
    if (active) {
        a.cidx[p] = p;
        a.cbox[p] = tri_boxes[ids[p]];
    }
    __threadfence();
    while (__any_sync(kFull, active)) {
        if (active) {
            const int left = hploc_is_left_child(codes, n, lo, hi);
            const uint32_t s = left ? hi : lo - 1u;
            hploc_link_radix(n, node, s, left, a.radix_child, a.radix_parent);
            __threadfence();
            const uint32_t prev = atomicExch(a.slots + s, left ? lo : hi);
            if (prev == RT_HPLOC_NONE) {
                active = false; /* the sibling's walk goes on */
            } else {
                split = left ? hi + 1u : lo;
                if (left) hi = prev;
                else lo = prev;
                node = n + s;
            }
        }
        __threadfence();
        const bool final = active && lo == 0 && hi == n - 1u;
        uint32_t todo = __ballot_sync(kFull, active && (hi - lo + 1u > t || final));
        while (todo) {
            const int src = __ffs((int)todo) - 1;
            todo &= todo - 1u;
            const uint32_t L = __shfl_sync(kFull, lo, src), R = __shfl_sync(kFull, hi, src),
                           S = __shfl_sync(kFull, split, src);
            const bool F = __shfl_sync(kFull, (int)final, src) != 0;
            const uint32_t first = hploc_warp_merge(a, n, L, R, S, F, radius, t);
            if (F && lane == (uint32_t)src) {
                ctr->ploc_root = first;
                a.ploc_parent[first] = RT_HPLOC_NONE;
            }
        }
        if (final) {
            ctr->radix_root = node;
            a.radix_parent[node] = RT_HPLOC_NONE;
            active = false;
        }
    }
}

/* ==== step 4: bottom-up collapse ================================================ */

/* The LBVH's bottom-up scheme (lbvh_gpu.cu step 5) over a binary tree given
 * by links: a thread per key climbs; an atomic flag per node stops the
 * first child's thread and lets the second finish the node
 * (lbvh_merge_sub: box, SAH collapse, height). Pass 0 walks the clustered
 * tree and, at its root, decides the fallback (hploc.h, Depth); pass 1
 * walks the radix tree only when it did. The flags are not reset between
 * the passes: every node is reached twice in each, so pass k's first
 * arrival reads 2k. */
__global__ void hploc_collapse_kernel(int pass, HplocArrays a, BvhCounters *ctr, uint32_t *flags, uint4 *subs,
                                      uint32_t *count, RtLbvhParams lp)
{
    const uint32_t n = ctr->valid, p = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < 2 || p >= n || (pass == 1 && !ctr->fallback)) return;
    const uint32_t *child = pass ? a.radix_child : a.ploc_child, *parent = pass ? a.radix_parent : a.ploc_parent;
    RtLbvhSub own = lbvh_leaf_sub(a.cbox[p], p, &lp);
    uint32_t c = p;
    for (;;) {
        const uint32_t up = parent[c], u = up - n;
        if (atomicAdd(&flags[u], 1u) == 2u * (uint32_t)pass) return; /* the sibling's thread finishes u */
        __threadfence();
        const uint32_t c0 = child[2 * (size_t)u], c1 = child[2 * (size_t)u + 1], sib = c0 == c ? c1 : c0;
        const RtLbvhSub other = sib < n ? lbvh_leaf_sub(a.cbox[sib], sib, &lp) : bvh_sub_load(subs, sib - n);
        own = c0 == c ? lbvh_merge_sub(own, other, &lp) : lbvh_merge_sub(other, own, &lp);
        own.node = u;
        count[u] = own.count;
        bvh_sub_store(subs, u, own);
        if (parent[up] == RT_HPLOC_NONE) { /* the root */
            ctr->root = own.box;
            if (pass == 0) {
                ctr->cluster_depth = own.height;
                ctr->fallback = own.height > RT_BVH_MAX_DEPTH;
            }
            return;
        }
        __threadfence(); /* the sub reaches L2 before the parent's flag says it is there */
        c = up;
    }
}

/* ==== step 5: the output ========================================================== */

__device__ __forceinline__ RtLbvhSub hploc_sub(const HplocArrays &a, const uint4 *subs, uint32_t n, uint32_t c,
                                               const RtLbvhParams &lp)
{
    return c < n ? lbvh_leaf_sub(a.cbox[c], c, &lp) : bvh_sub_load(subs, c - n);
}

/* A thread per key: its triangle's depth-first place in tri_index
 * (hploc_key_position), and the nodes it is the leftmost key of, written
 * (hploc_output_node), so every node once. Keys from n on (degenerate
 * triangles) keep their sorted place; without interior nodes (n < 2)
 * thread 0 writes the root (bvh_small_root). */
__global__ void hploc_output_kernel(const uint32_t *ids, const RtAabb *tri_boxes, BvhCounters *ctr, HplocArrays a,
                                    const uint4 *subs, const uint32_t *count, uint32_t tri_count, uint32_t *tri_index,
                                    RtBvhNode *nodes, RtLbvhParams lp)
{
    const uint32_t n = ctr->valid, p = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < 2 && p == 0) bvh_small_root(n, tri_boxes, ids, ctr, nodes);
    if (p >= tri_count) return;
    if (p >= n || n < 2) {
        tri_index[p] = ids[p];
        return;
    }
    const uint32_t *child = ctr->fallback ? a.radix_child : a.ploc_child,
                   *parent = ctr->fallback ? a.radix_parent : a.ploc_parent;
    uint32_t root, c = p, up;
    const uint32_t first = hploc_key_position(parent, child, count, n, p, &root);
    tri_index[first] = ids[p];
    while ((up = parent[c]) != RT_HPLOC_NONE && child[2 * (size_t)(up - n)] == c) {
        const uint32_t u = up - n, *ch = &child[2 * (size_t)u];
        const RtLbvhSub s[2] = {hploc_sub(a, subs, n, ch[0], lp), hploc_sub(a, subs, n, ch[1], lp)};
        RtBvhNode out;
        hploc_output_node(ch, s, n, root, first, &out);
        bvh_node_store(&nodes[hploc_out_index(u, root)], out);
        c = up;
    }
}

/* ==== host side =================================================================== */

extern "C" RtStatus rt_hploc_gpu_create(RtHplocGpu **out, RtError *err)
{
    *out = NULL;
    RtHplocGpu *b = (RtHplocGpu *)calloc(1, sizeof *b);
    if (!b) return rt_fail(err, RT_ERR_OOM, "H-PLOC: out of host memory");
    RtStatus st = bvh_base_create(&b->base, "H-PLOC", err);
    if (st != RT_OK) {
        rt_hploc_gpu_destroy(b);
        return st;
    }
    *out = b;
    return RT_OK;
}

static void hploc_free_buffers(RtHplocGpu *b)
{
    HplocArrays *a = &b->a;
    void *bufs[] = {a->cidx,        a->cbox,      a->max_key,  a->slots,  a->ploc_child, a->ploc_parent,
                    a->radix_child, a->radix_parent, b->flags, b->subs, b->count,      b->tri_index,
                    b->nodes};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) cudaFree(bufs[i]);
    memset(a, 0, sizeof *a);
    b->flags = b->count = b->tri_index = NULL;
    b->subs = NULL;
    b->nodes = NULL;
    b->cap = 0;
}

extern "C" void rt_hploc_gpu_destroy(RtHplocGpu *b)
{
    if (!b) return;
    hploc_free_buffers(b);
    bvh_base_destroy(&b->base);
    free(b);
}

/* The arrays for n triangles (kept when they hold as many already) and
 * steps 1-2's (bvh_keys_reserve). */
static RtStatus hploc_reserve(RtHplocGpu *b, uint32_t n, RtError *err)
{
    RtStatus st;
    if (!b->nodes || n > b->cap) {
        hploc_free_buffers(b);
        HplocArrays *a = &b->a;
        const size_t N = n ? n : 1, inner = N > 1 ? N - 1 : 1;
        const BvhAlloc want[] = {
            {(void **)&a->cidx, N * sizeof(uint32_t), "cluster places"},
            {(void **)&a->cbox, (N + inner) * sizeof(RtAabb), "cluster boxes"},
            {(void **)&a->max_key, inner * sizeof(uint32_t), "cluster keys"},
            {(void **)&a->slots, inner * sizeof(uint32_t), "split slots"},
            {(void **)&a->ploc_child, 2 * inner * sizeof(uint32_t), "clustered tree links"},
            {(void **)&a->ploc_parent, (N + inner) * sizeof(uint32_t), "clustered tree parents"},
            {(void **)&a->radix_child, 2 * inner * sizeof(uint32_t), "radix tree links"},
            {(void **)&a->radix_parent, (N + inner) * sizeof(uint32_t), "radix tree parents"},
            {(void **)&b->flags, inner * sizeof(uint32_t), "node flags"},
            {(void **)&b->subs, 3 * inner * sizeof(uint4), "finished subtrees"},
            {(void **)&b->count, inner * sizeof(uint32_t), "subtree counts"},
            {(void **)&b->tri_index, N * sizeof(uint32_t), "tri_index"},
            {(void **)&b->nodes, inner * sizeof(RtBvhNode), "BVH nodes"},
        };
        if ((st = bvh_gpu_alloc_all(&b->base, want, sizeof want / sizeof want[0], n, err)) != RT_OK) {
            hploc_free_buffers(b);
            return st;
        }
        b->cap = n;
    }
    return bvh_keys_reserve(&b->base, n, err);
}

extern "C" RtStatus rt_hploc_gpu_build(RtHplocGpu *b, const RtHplocParams *pp, const RtFloat4 *d_verts,
                                       const RtFloat4 *d_woop, uint32_t tri_count, RtBvh *d_bvh,
                                       RtHplocGpuStats *stats, RtError *err)
{
    if (!b || !d_bvh || (tri_count && !d_verts))
        return rt_fail(err, RT_ERR_ARG, "H-PLOC: rt_hploc_gpu_build needs a builder, vertices and a BVH");
    const RtHplocParams p = pp ? *pp : rt_hploc_params_default();
    RtStatus st = rt_hploc_params_check(&p, err);
    if (st != RT_OK) return st;
    if ((st = bvh_build_begin(&b->base, tri_count, stats != NULL, err)) != RT_OK) return st;
    if ((st = hploc_reserve(b, tri_count, err)) != RT_OK) return st;
    RtLaunchLog *log = &b->base.log;
    BvhKeysGpu *k = &b->base.keys;
    BvhCounters *ctr = b->base.d_ctr;
    const RtLbvhParams lp = hploc_collapse_params(&p);
    /* grids over every triangle (n is on the device); the output's thread 0
     * always runs: it writes the root of a tree without interior nodes */
    const dim3 block(kBlock), tris((tri_count + kBlock - 1) / kBlock), keys(tri_count ? tris.x : 1);
    const size_t inner = tri_count > 1 ? tri_count - 1 : 0;

    /* ---- 1-2. boxes, codes, sorted (bvh_gpu_common.cu) -------------------- */
    if ((st = bvh_keys_queue(&b->base, (const float4 *)d_verts, (const float4 *)d_woop, tri_count, err)) != RT_OK)
        return st;

    /* ---- 3. the clustering: free slots, then one walk ------------------------ */
    CUDA_CHECK(err, cudaMemsetAsync(b->a.slots, 0xff, inner * sizeof(uint32_t), b->base.stream));
    CUDA_CHECK(err, cudaMemsetAsync(b->flags, 0, inner * sizeof(uint32_t), b->base.stream));
    if ((st = rt_launch(log, "hploc_cluster", tris, block, 0, hploc_cluster_kernel, err, k->codes[1], k->ids[1],
                        k->boxes, ctr, b->a, (uint32_t)p.radius, (uint32_t)p.threshold)) != RT_OK)
        return st;

    /* ---- 4. bottom-up collapse; the radix tree's only when too deep ---------- */
    for (int pass = 0; pass < 2; pass++)
        if ((st = rt_launch(log, "hploc_collapse", tris, block, 0, hploc_collapse_kernel, err, pass, b->a, ctr,
                            b->flags, b->subs, b->count, lp)) != RT_OK)
            return st;

    /* ---- 5. depth-first leaves, output nodes ---------------------------------- */
    if ((st = rt_launch(log, "hploc_output", keys, block, 0, hploc_output_kernel, err, k->ids[1], k->boxes, ctr,
                        b->a, b->subs, b->count, tri_count, b->tri_index, b->nodes, lp)) != RT_OK)
        return st;

    if ((st = bvh_build_end(&b->base, b->nodes, b->tri_index, b->cap, tri_count, (const float4 *)d_woop, d_bvh, err)) != RT_OK) return st;
    return stats ? rt_hploc_gpu_build_finish(b, stats, err) : RT_OK;
}

/* ---- statistics: wait for the last build ------------------------------------------ */
extern "C" RtStatus rt_hploc_gpu_build_finish(RtHplocGpu *b, RtHplocGpuStats *stats, RtError *err)
{
    if (!b || !stats) return rt_fail(err, RT_ERR_ARG, "H-PLOC: rt_hploc_gpu_build_finish needs a builder and stats");
    memset(stats, 0, sizeof *stats);
    RtStatus st = bvh_build_finish(&b->base, &stats->ms, err);
    if (st != RT_OK) return st;
    RtLaunchLog *log = &b->base.log;
    if (log->timed) {
        stats->morton_ms = bvh_entry_ms(log, "bvh_boxes") + bvh_entry_ms(log, "bvh_morton");
        stats->sort_ms = bvh_entry_ms(log, "bvh_sort");
        stats->cluster_ms = bvh_entry_ms(log, "hploc_cluster");
        stats->collapse_ms = bvh_entry_ms(log, "hploc_collapse");
        stats->output_ms = bvh_entry_ms(log, "hploc_output");
    }
    const BvhCounters *c = b->base.h_ctr;
    stats->launches = log->launches;
    stats->triangles = b->base.built_tris;
    stats->valid = c->valid;
    stats->cluster_depth = c->valid > 1 ? c->cluster_depth : c->valid;
    stats->fallback = (int)c->fallback;
    return RT_OK;
}

extern "C" RtStatus rt_hploc_gpu_download(const RtHplocGpu *b, const RtBvh *d_bvh, RtBvh *h, RtError *err)
{
    if (!b) {
        memset(h, 0, sizeof *h);
        return rt_fail(err, RT_ERR_ARG, "H-PLOC: rt_hploc_gpu_download needs the builder and a BVH it built");
    }
    return bvh_download(&b->base, d_bvh, h, err);
}
