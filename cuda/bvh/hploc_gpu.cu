/* hploc_gpu.cu — the GPU H-PLOC builder (hploc_gpu.h): Benthin et al. 2024,
 * "H-PLOC: Hierarchical Parallel Locally-Ordered Clustering for Bounding
 * Volume Hierarchy Construction", every rule from hploc.h so the tree is
 * rt_hploc_build_cpu's node for node but the leaves' places (below). The
 * host driver, rt_hploc_gpu_build, queues on the builder's stream:
 *
 *   1-2. boxes, scene box, valid count; Morton codes; sort   (bvh_gpu_common.cu)
 *   3-4. the radix-tree walk with PLOC merges in warps; each
 *        merge also finishes its node's step 4 (box, SAH
 *        collapse, height) and its output node but for the
 *        places, since both its children are finished        (hploc_cluster)
 *   4'.  the depth fallback: the radix tree, walked again     (hploc_fallback)
 *   5.   each leaf's place in tri_index, taken from a counter  (hploc_leaf_alloc)
 *        by its first key; every key's triangle there         (hploc_leaf_place)
 *
 * With a spatial-split top (rt_hploc_gpu_set_top, split_top.h) its levels
 * run between the boxes and the sort (split_top_gpu.cu) and make the keys:
 * references, each leaf's a run of them; steps 3-4' then end each run's
 * clustering at the run's root (final_place) and hploc_top_link puts the
 * top's nodes above the runs' roots before step 5.
 *
 * The valid count n stays on the device, as the LBVH's: every kernel runs a
 * thread per triangle and reads n there, so the host never waits; so does
 * the depth fallback (its kernel returns at once unless the clustering set
 * it).
 *
 * The leaves' places are the one thing the GPU's tree does not share with
 * the CPU oracle's: the oracle lays leaves out depth first, the GPU where a
 * counter gives each leaf room (a block's leaves next to each other), which
 * spares the output the depth-first sums from every key to the root and
 * the nodes' placing (hploc.h, step 5). Relaid out depth first, each
 * leaf's own order kept, the tree is the oracle's (test_gpu_bvh). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cub/block/block_scan.cuh>

#include "bvh/bvh_gpu_common.cuh"
#include "bvh/hploc_gpu.h"
#include "bvh/split_top_gpu.cuh"
#include "gpu/cuda_check.h"
#include "gpu/fence.cuh"

/* Threads per block: a multiple of the warp size (the cluster kernel's
 * warps work as units). */
static constexpr int kBlock = 256;
/* The cluster kernel's blocks: one warp, 32 a multiprocessor (64
 * registers, no spills). A block leaves its multiprocessor only when its
 * last warp ends, and the clustering's warps end at very different times
 * (the one that reaches the root last), so one-warp blocks free their
 * place soonest. Forcing 32 registers fits a 262K-triangle scene's walks
 * in one wave, but the spills (about 150 bytes a thread) cost more than the
 * wave saves (docs/bvh.md has the builds). */
static constexpr int kClusterBlock = 32;
static constexpr int kClusterMinBlocks = 32;
static constexpr unsigned kFull = 0xffffffffu;
/* An up[] link's second word: the left sibling's triangles (the child's
 * first key's offset in its parent's depth-first order), kUpCollapsed when
 * the parent is collapsed into a leaf (RtLbvhSub.as_leaf) and kUpSmall when
 * the parent holds at most max_leaf triangles (it or an ancestor may still
 * be a leaf; above it none is). The leaf kernels climb by them. */
static constexpr uint32_t kUpCollapsed = 0x80000000u;
static constexpr uint32_t kUpSmall = 0x40000000u;
static constexpr uint32_t kUpOffset = 0x3fffffffu;
static_assert(RT_BVH_MAX_INDEX <= kUpOffset + 1u, "an offset fits below the flags");
/* A node's link words, 32 bits each: child[0], child[1], then count[0],
 * count[1] (root_place and the leaf kernels write single words of them). */
static constexpr uint32_t kLinkWord = offsetof(RtBvhNode, child) / sizeof(uint32_t);
static_assert(offsetof(RtBvhNode, count) == offsetof(RtBvhNode, child) + 2 * sizeof(uint32_t),
              "the counts follow the children");
__device__ __forceinline__ uint32_t *node_links(RtBvhNode *nodes, uint32_t node)
{
    return reinterpret_cast<uint32_t *>(&nodes[node]) + kLinkWord;
}
/* The PLOC search radius with an unrolled search: the default. */
static constexpr uint32_t kUnrolledRadius = RT_HPLOC_DEFAULT_RADIUS;
static_assert(RT_HPLOC_WARP == 32, "a PLOC merge is one warp");
/* info's top bit: the subtree is collapsed into one leaf (RtLbvhSub.as_leaf);
 * the rest is its height (below 2^31: at most n - 1 levels). */
static constexpr uint32_t kCollapsed = 0x80000000u;
/* The fallback's mark on a split slot's value: the clustering left every
 * slot holding a key place (< n <= INT_MAX), so an unmarked value tells
 * the fallback's first arrival, with no reset in between. */
static constexpr uint32_t kFallbackMark = 0x80000000u;

/* Steps 3-5's arrays (hploc.h, Names), passed by value to the kernels. */
typedef struct HplocArrays {
    uint32_t *cidx;  /* per key place: the clusters of the merged radix node whose range starts there (a
                        node of at most t keys is never merged: its clusters are its keys); after the
                        clustering, the key's leaf link (hploc_leaf_alloc) */
    uint4 *rec;      /* per interior cluster (id - n), two words: its box, SAH cost and highest key
                        (rec_store); a key's cluster is read from its triangle's box (sub_load) */
    uint2 *info;     /* per interior id: triangles; height | kCollapsed (a key's: 1; kCollapsed) */
    uint2 *up;       /* per cluster: its parent (RT_HPLOC_NONE: the root) and its first key's
                        depth-first place in the parent's (0 for child 0, child 0's count for 1)
                        with the parent's flags (kUpCollapsed, kUpSmall) */
    uint32_t *slots; /* per split slot: the first child's range end (RT_HPLOC_NONE: none yet) */
    uint32_t *side;  /* per split slot, two: the fallback's first child's cluster */
    const uint32_t *ids;   /* per key: its triangle (the sort's, bvh_gpu_common.cu), or its reference
                              under a split top */
    const RtAabb *boxes;   /* per triangle: its box (hploc_boxes: the references' under a split top) */
    SplitTopArrays t;      /* the spatial-split top (t.top NULL: none) */
} HplocArrays;

/* The arrays as a kernel reads them: the boxes of what the keys index. */
__device__ __forceinline__ HplocArrays hploc_arrays(HplocArrays a)
{
    a.boxes = split_top_boxes(a.t, a.boxes);
    return a;
}
/* Whether the keys are a split top's runs (the build's tree then has the
 * top's nodes above each run's subtree). */
__device__ __forceinline__ bool hploc_split(const HplocArrays &a) { return a.t.top && a.t.top->split; }

struct RtHplocGpu {
    BvhGpuBase base;     /* stream, events, counters, steps 1-2's arrays */
    RtSplitTopParams top_params; /* depth 0: no top (rt_hploc_gpu_set_top) */
    SplitTopArrays top;
    uint32_t cap;        /* keys the arrays below hold (triangles, or a top's references) */
    uint32_t node_cap;   /* nodes: the keys' interior ones and a top's */
    HplocArrays a;
    uint32_t *tri_index; /* depth-first order */
    RtBvhNode *nodes;
};

/* ---- a cluster with its finished subtree ----------------------------------------- */

/* A cluster as a lane or a walk holds it: step 3's (id, highest key, box)
 * and step 4's subtree (RtLbvhSub: box, cost, count, collapsed, height;
 * its first and node fields are not kept). */
struct HplocSub {
    uint32_t id, max_key;
    RtLbvhSub s;
};

/* A subtree's count-free word: its height, kCollapsed when one leaf. */
__device__ __forceinline__ uint32_t sub_hl(const RtLbvhSub &s) { return s.height | (s.as_leaf ? kCollapsed : 0u); }

/* A cluster from its stored parts (hl: sub_hl's word). */
__device__ __forceinline__ HplocSub sub_make(uint32_t id, uint32_t max_key, const RtAabb &box, float cost,
                                             uint32_t count, uint32_t hl)
{
    HplocSub c;
    c.id = id;
    c.max_key = max_key;
    c.s.box = box;
    c.s.cost = cost;
    c.s.first = 0;
    c.s.node = 0;
    c.s.count = count;
    c.s.as_leaf = (hl & kCollapsed) != 0;
    c.s.height = hl & ~kCollapsed;
    return c;
}

/* An interior cluster's record (c.id >= n). */
__device__ __forceinline__ void rec_store(uint4 *rec, uint32_t n, const HplocSub &c)
{
    const RtAabb &b = c.s.box;
    const size_t r = c.id - n;
    rec[2 * r] = make_uint4(__float_as_uint(b.lo.x), __float_as_uint(b.lo.y), __float_as_uint(b.lo.z),
                            __float_as_uint(b.hi.x));
    rec[2 * r + 1] = make_uint4(__float_as_uint(b.hi.y), __float_as_uint(b.hi.z), __float_as_uint(c.s.cost), c.max_key);
}

/* Cluster id: a key from its triangle's box (written before this launch);
 * an interior cluster as another warp wrote it in this launch, through L2
 * (L1 is not coherent between multiprocessors). */
__device__ __forceinline__ HplocSub sub_load(const HplocArrays &a, uint32_t n, uint32_t id, const RtLbvhParams &lp)
{
    if (id < n) {
        HplocSub c;
        c.id = c.max_key = id;
        c.s = lbvh_leaf_sub(a.boxes[a.ids[id]], id, &lp);
        return c;
    }
    const size_t r = id - n;
    const uint4 r0 = __ldcg(a.rec + 2 * r), r1 = __ldcg(a.rec + 2 * r + 1);
    const uint2 inf = __ldcg(a.info + r);
    RtAabb box;
    box.lo = v3(__uint_as_float(r0.x), __uint_as_float(r0.y), __uint_as_float(r0.z));
    box.hi = v3(__uint_as_float(r0.w), __uint_as_float(r1.x), __uint_as_float(r1.y));
    return sub_make(id, r1.w, box, __uint_as_float(r1.z), inf.x, inf.y);
}

/* Clusters lower and upper (mutual nearest neighbours, or a radix node's
 * children) merged into interior node hploc_node_id: hploc_merge's cluster
 * with lbvh_merge_sub's subtree, finished at once since both children are
 * (step 4 needs no pass of its own); written out with both children's
 * links (up) and the node at place id, as hploc_node_links leaves it. */
__device__ __forceinline__ HplocSub merge_create(const HplocArrays &a, RtBvhNode *nodes, uint32_t n,
                                                 const HplocSub &lower, const HplocSub &upper,
                                                 const RtLbvhParams &lp, bool final)
{
    const uint32_t u = hploc_node_id(lower.max_key, upper.max_key);
    HplocSub m;
    m.id = n + u;
    m.max_key = max(lower.max_key, upper.max_key);
    m.s = lbvh_merge_sub(lower.s, upper.s, &lp);
    rec_store(a.rec, n, m);
    a.info[u] = make_uint2(m.s.count, sub_hl(m.s));
    /* a run's root (final) is never part of a leaf: its children's links
     * stop the leaf kernels' climb */
    const uint32_t flags =
        final ? 0u : (m.s.as_leaf ? kUpCollapsed : 0u) | (m.s.count <= (uint32_t)lp.max_leaf ? kUpSmall : 0u);
    a.up[lower.id] = make_uint2(m.id, flags);
    a.up[upper.id] = make_uint2(m.id, lower.s.count | flags);
    const uint32_t c[2] = {lower.id, upper.id};
    const RtLbvhSub s[2] = {lower.s, upper.s};
    RtBvhNode out;
    hploc_node_links(c, s, n, &out);
    bvh_node_store(&nodes[u], out);
    return m;
}

__device__ __forceinline__ RtBvhNode node_load_cg(const RtBvhNode *src)
{
    const uint4 *s = reinterpret_cast<const uint4 *>(src);
    RtBvhNode out;
    for (int k = 0; k < 3; k++) {
        const uint4 w = __ldcg(s + k);
        out.b[k] = f4(__uint_as_float(w.x), __uint_as_float(w.y), __uint_as_float(w.z), __uint_as_float(w.w));
    }
    const uint4 w = __ldcg(s + 3);
    out.child[0] = w.x, out.child[1] = w.y, out.count[0] = w.z, out.count[1] = w.w;
    return out;
}

/* The root's subtree r, finished by the calling thread after every other
 * node (all fenced): its link, the counters, and the root and node 0 swap
 * places (hploc_out_index), so the one link to interior node 0, from its
 * parent, now names the root's old place (none links to the root; node 0
 * inside a leaf is linked as a leaf, or not at all). clustered: the
 * clustered tree's root, which decides the fallback. */
/* Interior node 0's node moved to place u, the root's id, and `root` (may
 * be NULL: placed later) put at place 0 (hploc_out_index); then the one
 * link to node 0, from its parent's output node, made to name u (none when
 * node 0 is inside its parent's leaf). One thread, after every node is
 * written (fenced). */
__device__ void node0_move(const HplocArrays &a, RtBvhNode *nodes, uint32_t n, uint32_t u, const RtBvhNode *root)
{
    bvh_node_store(&nodes[u], node_load_cg(&nodes[0]));
    if (root) bvh_node_store(&nodes[0], *root);
    const uint2 e = __ldcg(&a.up[n]); /* node 0's parent and side */
    uint32_t *link = node_links(nodes, hploc_out_index(e.x - n, u));
    const int k = (e.y & kUpOffset) != 0u;
    if (!(__ldcg(link + 2 + k) & RT_BVH_LEAF)) link[k] = u;
}

__device__ void root_place(const HplocArrays &a, RtBvhNode *nodes, BvhCounters *ctr, uint32_t n, const HplocSub &r,
                           bool clustered)
{
    const uint32_t u = r.id - n;
    a.up[r.id] = make_uint2(RT_HPLOC_NONE, 0u);
    ctr->tree_root = u;
    ctr->root = r.s.box;
    if (clustered) {
        ctr->cluster_depth = r.s.height;
        ctr->fallback = r.s.height > RT_BVH_MAX_DEPTH;
    }
    if (u != 0) {
        const RtBvhNode top = node_load_cg(&nodes[u]);
        node0_move(a, nodes, n, u, &top);
    }
}

/* A run's root r, finished by the calling thread (all fenced): the tree's
 * root (root_place) without a split top; under one, its top leaf's
 * subtree, which hploc_top_link links into the top, and the tree's depth
 * through it. */
__device__ void final_place(const HplocArrays &a, RtBvhNode *nodes, BvhCounters *ctr, uint32_t n, uint32_t leaf,
                            const HplocSub &r, bool clustered)
{
    if (!hploc_split(a)) {
        root_place(a, nodes, ctr, n, r, clustered);
        return;
    }
    a.t.top->leaf_root[leaf] = r.id;
    if (clustered) atomicMax(&ctr->cluster_depth, (uint32_t)a.t.top->leaf_depth[leaf] + r.s.height);
}

/* ---- warp helpers ------------------------------------------------------------ */

/* A warp merge's clusters: all but the boxes by slot (the lane that loaded
 * it; a merge keeps the lower lane's), the boxes by place. The lanes hold
 * only their box and slot, so the registers leave room for more warps. */
struct HplocSlots {
    uint32_t id[RT_HPLOC_WARP], max_key[RT_HPLOC_WARP], count[RT_HPLOC_WARP], hl[RT_HPLOC_WARP];
    float cost[RT_HPLOC_WARP];
    uint32_t from[RT_HPLOC_WARP]; /* compact_source's: the lane each place takes its cluster from */
    /* the boxes by place (lo.xyz hi.x, hi.yz), which the search, the merge
     * and the compaction read: two loads where six shuffles were; places
     * up to lane + radius are read, so the arrays run past the warp */
    float4 box4[RT_HPLOC_WARP + RT_HPLOC_MAX_RADIUS];
    float2 box2[RT_HPLOC_WARP + RT_HPLOC_MAX_RADIUS];
};

__device__ __forceinline__ void box_put(HplocSlots *sh, uint32_t place, const RtAabb &b)
{
    sh->box4[place] = make_float4(b.lo.x, b.lo.y, b.lo.z, b.hi.x);
    sh->box2[place] = make_float2(b.hi.y, b.hi.z);
}

__device__ __forceinline__ RtAabb box_get(const HplocSlots *sh, uint32_t place)
{
    const float4 f = sh->box4[place];
    const float2 g = sh->box2[place];
    RtAabb b;
    b.lo = v3(f.x, f.y, f.z);
    b.hi = v3(f.w, g.x, g.y);
    return b;
}

__device__ __forceinline__ void slot_put(HplocSlots *sh, uint32_t slot, const HplocSub &c)
{
    sh->id[slot] = c.id;
    sh->max_key[slot] = c.max_key;
    sh->count[slot] = c.s.count;
    sh->hl[slot] = sub_hl(c.s);
    sh->cost[slot] = c.s.cost;
}

__device__ __forceinline__ HplocSub slot_get(const HplocSlots *sh, uint32_t slot, const RtAabb &box)
{
    return sub_make(sh->id[slot], sh->max_key[slot], box, sh->cost[slot], sh->count[slot], sh->hl[slot]);
}

/* The lane whose cluster this lane takes when the lanes in keep close up,
 * order kept (lanes from popc(keep) on keep their own): each kept lane
 * writes its lane at its rank, one store and one load instead of __fns
 * (not an instruction on sm_90: a loop). Whole warp. */
__device__ __forceinline__ int compact_source(HplocSlots *sh, uint32_t keep, uint32_t lane)
{
    __syncwarp(); /* the last compaction's places are read */
    if (keep >> lane & 1u) sh->from[__popc(keep & ((1u << lane) - 1u))] = lane;
    __syncwarp();
    return lane < (uint32_t)__popc(keep) ? (int)sh->from[lane] : (int)lane;
}

/* ==== steps 3-4: the clustering ================================================ */

/* Benthin et al. 2024 §4 (PLOC, Meister and Bittner 2018, in one warp):
 * radix node [lo, hi], its right child from `split`. Lane i holds cluster
 * i: the left child's clusters (at most t, from lo; a child of at most t
 * keys holds its keys), then the right's (from split), closed up. Each
 * step: every cluster's nearest neighbour within `radius` lanes (the
 * distance computed once per pair, by the lower lane, and shuffled up to
 * the other), mutual pairs merge into the lower lane (merge_create), the
 * rest close up by ballot and compact_source (the lanes move their boxes and slots,
 * sh: the rest of each cluster stays in place; the boxes go through sh by place). Until at most t remain (final, the
 * root: one, placed by lane 0); they go back from lo, the places after
 * them up to t emptied. Whole warp, uniform arguments. kRadius: the
 * radius when the caller knows it (the search unrolled, its loads and
 * shuffles interleaved), 0 when only `radius` does. */
template <uint32_t kRadius>
__device__ void hploc_warp_merge(const HplocArrays &a, RtBvhNode *nodes, BvhCounters *ctr, HplocSlots *sh,
                                 uint32_t n, uint32_t lo, uint32_t hi, uint32_t split, bool final, uint32_t leaf,
                                 uint32_t radius, uint32_t t, const RtLbvhParams &lp)
{
    const uint32_t lane = threadIdx.x & 31u;
    const uint32_t sl = split - lo, sr = hi + 1u - split, nl = min(sl, t), nr = min(sr, t);
    uint32_t id = RT_HPLOC_NONE;
    if (lane < nl) id = sl > t ? __ldcg(a.cidx + lo + lane) : lo + lane;
    else if (lane < nl + nr) id = sr > t ? __ldcg(a.cidx + split + (lane - nl)) : split + (lane - nl);
    uint32_t keep = __ballot_sync(kFull, id != RT_HPLOC_NONE);
    uint32_t k = __popc(keep);
    id = __shfl_sync(kFull, id, compact_source(sh, keep, lane)); /* also: the last merge's slots are read */
    uint32_t slot = lane;
    RtAabb box = aabb_empty();
    if (lane < k) {
        const HplocSub c = sub_load(a, n, id, lp);
        box = c.s.box;
        slot_put(sh, slot, c);
    }
    __syncwarp();
    const uint32_t target = final ? 1u : t;
    while (k > target) { /* k is the warp's: uniform */
        __syncwarp(); /* the last compaction's boxes are read */
        if (lane < k) box_put(sh, lane, box);
        __syncwarp();
        /* each cluster's nearest neighbour, ties to the lower lane (hploc_nn_key) */
        /* hploc_nn_key's order kept as two 32-bit minima: the distance's
         * bits (hploc_nn_key's high word), places rising ahead (a tie keeps
         * the nearer, lower place) and falling behind (a tie takes the
         * farther, lower place); behind wins a tie with ahead */
        uint32_t ahead = ~0u, behind = ~0u, nn_ahead = RT_HPLOC_NONE, nn_behind = RT_HPLOC_NONE;
        const uint32_t reach = kRadius ? kRadius : radius;
#pragma unroll
        for (uint32_t d = 1; d <= reach; d++) {
            const RtAabb up = box_get(sh, lane + d);
            const bool fwd = lane + d < k;
            const uint32_t dist = fwd ? (uint32_t)(hploc_nn_key(hploc_distance(box, up), 0u) >> 32) : 0u;
            if (fwd && dist < ahead) ahead = dist, nn_ahead = lane + d;
            const uint32_t back = __shfl_up_sync(kFull, dist, d); /* lane - d's distance to this lane */
            if (lane >= d && lane < k && back <= behind) behind = back, nn_behind = lane - d;
        }
        /* lanes >= k: RT_HPLOC_NONE */
        const uint32_t nn = behind <= ahead ? nn_behind : nn_ahead;
        const uint32_t nn_nn = __shfl_sync(kFull, nn, (int)(nn & 31u));
        const bool mutual = lane < k && nn_nn == lane, create = mutual && lane < nn;
        const int from = create ? (int)nn : (int)lane;
        const uint32_t other_slot = __shfl_sync(kFull, slot, from);
        __syncwarp(); /* every lane's search has read the boxes */
        if (create) { /* the pair's slots and places are its own: no other lane reads or writes them now */
            const HplocSub m = merge_create(a, nodes, n, slot_get(sh, slot, box),
                                            slot_get(sh, other_slot, box_get(sh, (uint32_t)from)), lp,
                                            final && k == 2u);
            box = m.s.box;
            slot_put(sh, slot, m);
            box_put(sh, lane, box);
        }
        __syncwarp();
        /* the upper lane of each pair leaves; the rest close up, order kept */
        keep = __ballot_sync(kFull, lane < k && !(mutual && !create));
        k = __popc(keep);
        const int src = compact_source(sh, keep, lane);
        slot = __shfl_sync(kFull, slot, src);
        box = box_get(sh, (uint32_t)src);
    }
    if (lane < k) a.cidx[lo + lane] = sh->id[slot];
    else if (lane < min(t, hi - lo + 1u)) a.cidx[lo + lane] = RT_HPLOC_NONE;
    /* every lane's writes reach L2 before any lane's next exchange publishes
     * them; the root's lane 0 also reads the other warps' nodes (acquire) */
    if (final) rt_fence_acq_rel();
    else rt_fence_release();
    __syncwarp();
    if (final && lane == 0) final_place(a, nodes, ctr, n, leaf, slot_get(sh, slot, box), true);
}

/* Benthin et al. 2024, Alg. 1 (Apetrei 2014's bottom-up walk): a thread per
 * key climbs the radix tree; at each node an exchange on its split slot
 * stops the first child and gives the second the node's range (the left
 * child leaves its lo, the right its hi). After every step the warp takes,
 * one by one, its lanes' nodes of more than t keys (and the root) and
 * merges their clusters (hploc_warp_merge). A key's cluster is its
 * triangle's box, written before the launch (sub_load): nothing to publish
 * before the first exchange. Memory order: a lane's merges are fenced
 * before its next exchange (release); a warp with merges to do fences after
 * its exchanges (acquire) and the merge reads through L2. No lane leaves
 * the loop before the warp does: the merges need all 32. */
__global__ void __launch_bounds__(kClusterBlock, kClusterMinBlocks)
    hploc_cluster_kernel(const uint32_t *codes, BvhCounters *ctr, HplocArrays a_in, RtBvhNode *nodes, uint32_t radius,
                         uint32_t t, RtLbvhParams lp)
{
    __shared__ HplocSlots slots[kClusterBlock / RT_HPLOC_WARP];
    HplocSlots *sh = &slots[threadIdx.x / RT_HPLOC_WARP];
    const HplocArrays a = hploc_arrays(a_in);
    const uint32_t n = ctr->valid, p = blockIdx.x * blockDim.x + threadIdx.x;
    bool active = n >= 2 && p < n;
    uint32_t lo = p, hi = p, split = 0, rs = 0, re = 0, leaf = 0;
    if (active) {
        split_top_run(a.t.top, codes, n, p, &rs, &re, &leaf);
        if (rs == re) { /* a top leaf of one reference: the key is its run's root */
            final_place(a, nodes, ctr, n, leaf, sub_load(a, n, p, lp), true);
            active = false;
        }
    }
    while (__any_sync(kFull, active)) {
        if (active) {
            const int left = split_top_is_left(codes, rs, re, lo, hi);
            const uint32_t prev = atomicExch(a.slots + (left ? hi : lo - 1u), left ? lo : hi);
            if (prev == RT_HPLOC_NONE) {
                active = false; /* the sibling's walk goes on */
            } else {
                split = left ? hi + 1u : lo;
                if (left) hi = prev;
                else lo = prev;
            }
        }
        const bool final = active && lo == rs && hi == re;
        uint32_t todo = __ballot_sync(kFull, active && (hi - lo + 1u > t || final));
        if (todo) rt_fence_acquire();
        while (todo) {
            const int src = __ffs((int)todo) - 1;
            todo &= todo - 1u;
            const uint32_t L = __shfl_sync(kFull, lo, src), R = __shfl_sync(kFull, hi, src),
                           S = __shfl_sync(kFull, split, src);
            const bool F = __shfl_sync(kFull, (int)final, src) != 0;
            const uint32_t J = __shfl_sync(kFull, leaf, src);
            if (radius == kUnrolledRadius)
                hploc_warp_merge<kUnrolledRadius>(a, nodes, ctr, sh, n, L, R, S, F, J, radius, t, lp);
            else
                hploc_warp_merge<0>(a, nodes, ctr, sh, n, L, R, S, F, J, radius, t, lp);
        }
        if (final) active = false;
    }
}

/* ==== step 4': the depth fallback =============================================== */

/* hploc.h, Depth: only when the clustered tree's depth is above
 * RT_BVH_MAX_DEPTH, the radix tree replaces it: Apetrei's walk again, the
 * second child at each node merging both (merge_create: radix node at
 * split slot s has id s, its left child's highest key), which rewrites
 * every link, subtree and node. The exchange marks its values
 * (kFallbackMark) and the first child leaves its cluster in side[]. */
__device__ void fallback_walk(const uint32_t *codes, BvhCounters *ctr, const HplocArrays &a, RtBvhNode *nodes,
                              const RtLbvhParams &lp, uint32_t n, uint32_t p)
{
    uint32_t rs, re, leaf;
    split_top_run(a.t.top, codes, n, p, &rs, &re, &leaf);
    if (rs == re) return; /* a top leaf of one reference */
    HplocSub c = sub_load(a, n, p, lp);
    uint32_t lo = p, hi = p;
    for (;;) {
        const int left = split_top_is_left(codes, rs, re, lo, hi);
        const uint32_t s = left ? hi : lo - 1u;
        a.side[2 * (size_t)s + (left ? 0 : 1)] = c.id;
        rt_fence_release();
        const uint32_t prev = atomicExch(a.slots + s, (left ? lo : hi) | kFallbackMark);
        if (!(prev & kFallbackMark)) return; /* the sibling's walk goes on */
        rt_fence_acquire();
        const HplocSub other = sub_load(a, n, __ldcg(a.side + 2 * (size_t)s + (left ? 1 : 0)), lp);
        const uint32_t nlo = left ? lo : prev & ~kFallbackMark, nhi = left ? prev & ~kFallbackMark : hi;
        const bool final = nlo == rs && nhi == re;
        c = left ? merge_create(a, nodes, n, c, other, lp, final) : merge_create(a, nodes, n, other, c, lp, final);
        lo = nlo, hi = nhi;
        if (final) {
            rt_fence_acq_rel();
            final_place(a, nodes, ctr, n, leaf, c, false);
            return;
        }
    }
}

/* A grid of kFallbackBlocksPerSm blocks a multiprocessor at most, each
 * thread walking keys in turn (no walk waits on another: the exchange stops
 * the first arrival), so that the launch costs little when, as nearly
 * always, there is no fallback to make. */
static constexpr uint32_t kFallbackBlocksPerSm = 8;
__global__ void hploc_fallback_kernel(const uint32_t *codes, BvhCounters *ctr, HplocArrays a_in, RtBvhNode *nodes,
                                      RtLbvhParams lp)
{
    const HplocArrays a = hploc_arrays(a_in);
    const uint32_t n = ctr->valid;
    /* under a split top the runs' depths are known only now (final_place) */
    if (n < 2 || !(hploc_split(a) ? ctr->cluster_depth > RT_BVH_MAX_DEPTH : ctr->fallback)) return;
    for (uint32_t p = blockIdx.x * blockDim.x + threadIdx.x; p < n; p += gridDim.x * blockDim.x)
        fallback_walk(codes, ctr, a, nodes, lp, n, p);
}

/* ==== the top's nodes over the runs' subtrees ===================================== */

/* After the clustering and the fallback, only under a split top
 * (split_top.h), one warp, a lane a top node: the top's interior nodes
 * take the ids from node_base on (past every run's ids, which are key
 * places), in node order; the top's root the tree's (hploc_out_index: it
 * and id 0 swap places, so id 0's node moves and its parent's link
 * follows, as root_place does: lane 0, before it writes the root). Each
 * top node links its children: a top node, a run's root (its up[] link
 * then names the top node, so the leaf kernels' climb stops there), a
 * leaf of one reference (its place left to hploc_leaf_alloc) or an empty
 * leaf. The lanes' nodes and links are their own: no two write one word. */
__global__ void hploc_top_link_kernel(BvhCounters *ctr, HplocArrays a, RtBvhNode *nodes, uint32_t node_base)
{
    static_assert(RT_SPLIT_TOP_MAX_NODES <= 32, "a lane a top node");
    __shared__ int s_leaf_of[RT_SPLIT_TOP_MAX_NODES];
    const SplitTopDev *top = a.t.top;
    const int i = (int)threadIdx.x;
    if (!top->split) return; /* the launch: one warp */
    const uint32_t n = ctr->valid, root = node_base;
    const int count = top->nodes;
    const bool inner = i < count && top->node[i].child[0] >= 0;
    const uint32_t inner_lanes = __ballot_sync(kFull, inner);
    /* the ids of the interior top nodes, in node order */
    auto id_of = [&](int c) { return node_base + (uint32_t)__popc(inner_lanes & ((1u << c) - 1u)); };
    if (i < count) s_leaf_of[i] = -1;
    __syncwarp();
    if (i < top->leaves) s_leaf_of[top->order[i]] = i;
    __syncwarp();
    if (i == 0) {
        /* id 0 belongs to the first run when it has two keys or more: its
         * node moves to the root's place, the link to it with it */
        uint32_t j0 = 0;
        while (j0 < (uint32_t)top->leaves && top->leaf_count[j0] == 0) j0++;
        if (j0 < (uint32_t)top->leaves && top->leaf_count[j0] >= 2) {
            if (top->leaf_root[j0] != n) node0_move(a, nodes, n, root, NULL); /* the top's root goes to 0 below */
            else bvh_node_store(&nodes[root], node_load_cg(&nodes[0])); /* a run's root: the top links it below */
        }
    }
    if (inner) {
        const SplitTopNodeDev &t = top->node[i];
        RtBvhNode out;
        for (int k = 0; k < 2; k++) {
            const int c = t.child[k];
            const SplitTopNodeDev &ch = top->node[c];
            const int j = s_leaf_of[c];
            const RtAabb box = split_top_dec_box(ch.box);
            if (j < 0) {
                bvh_set_child(&out, k, box, 0, hploc_out_index(id_of(c), root), 0);
            } else if (top->leaf_count[j] == 0) {
                bvh_set_empty_child(&out, k);
            } else {
                const uint32_t r = top->leaf_root[j];
                if (top->leaf_count[j] == 1) bvh_set_child(&out, k, box, 1, 0u, 1u); /* place: hploc_leaf_alloc */
                else bvh_set_child(&out, k, box, 0, hploc_out_index(r - n, root), 0);
                a.up[r] = make_uint2(n + id_of(i), k ? 1u : 0u);
            }
        }
        bvh_node_store(&nodes[hploc_out_index(id_of(i), root)], out);
    }
    if (i == 0) {
        ctr->tree_root = root;
        ctr->root = split_top_dec_box(top->node[0].box);
        ctr->fallback = ctr->cluster_depth > RT_BVH_MAX_DEPTH;
    }
}

/* ==== step 5: the leaves ========================================================= */

/* Key p's leaf (p < n, n >= 2): the highest collapsed ancestor-or-self below
 * the root (hploc_node_links's leaves are the collapsed children of the
 * nodes a walk reaches; a collapsed node may hold one that is not), found
 * by climbing while the parent holds at most max_leaf triangles. *off: p's
 * offset in the leaf's depth-first order; *link_node, *link_k: the leaf's
 * parent's output node and the leaf's side there (its word child[k]);
 * returns the leaf's cluster. */
__device__ __forceinline__ uint32_t leaf_of(const uint2 *__restrict__ up, uint32_t n, uint32_t root, uint32_t p,
                                            uint32_t *off, uint32_t *link_node, int *link_k)
{
    uint32_t c = p, sum = 0, top = p, top_off = 0;
    uint2 e = up[p], top_e = e;
    while ((e.y & kUpSmall) && e.x - n != root) {
        sum += e.y & kUpOffset;
        c = e.x;
        const bool collapsed = (e.y & kUpCollapsed) != 0u;
        e = up[c];
        if (collapsed) top = c, top_off = sum, top_e = e;
    }
    *off = top_off;
    *link_node = hploc_out_index(top_e.x - n, root);
    *link_k = (top_e.y & kUpOffset) != 0u;
    return top;
}

/* The leaf kernel's blocks: one atomic on the counter a block, and atomics
 * on one address serialise in L2 (one a warp cost 0.45 ms on 10M keys). */
static constexpr int kLeafBlock = 256;
/* A key's leaf link, as hploc_leaf_alloc leaves it in cidx[key] for
 * hploc_leaf_place: the parent's output node, the side, the key's offset
 * in the leaf. */
static constexpr uint32_t kLinkSide = 27, kLinkOffset = 28;
static_assert(RT_BVH_MAX_INDEX <= 1u << kLinkSide, "a node index fits below the side bit");
static_assert(RT_BVH_MAX_LEAF <= 1u << (32 - kLinkOffset), "a leaf's offsets fit the top bits");
/* The word a leaf link names: its parent's child[side], where the leaf's
 * place goes. */
__device__ __forceinline__ uint32_t *leaf_link(RtBvhNode *nodes, uint32_t link)
{
    return node_links(nodes, link & ((1u << kLinkSide) - 1u)) + (link >> kLinkSide & 1u);
}

/* A thread per key: the first key of each leaf (offset 0) takes the
 * leaf's room in tri_index from ctr->leaf_next, one atomic a block (the
 * counts summed by CUB's block scan, in key order), and writes its place
 * into the link (hploc_node_links left the offset 0 there). A block's
 * leaves are next to each other, in key order. Every key leaves its link
 * in cidx (free since the clustering) for hploc_leaf_place. */
__global__ void __launch_bounds__(kLeafBlock) hploc_leaf_alloc_kernel(BvhCounters *ctr, const uint2 *__restrict__ up,
                                                                      const uint2 *__restrict__ info, RtBvhNode *nodes,
                                                                      uint32_t *links)
{
    using Scan = cub::BlockScan<uint32_t, kLeafBlock, cub::BLOCK_SCAN_WARP_SCANS>;
    __shared__ typename Scan::TempStorage scan;
    __shared__ uint32_t block_base;
    const uint32_t n = ctr->valid, p = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < 2 || blockIdx.x * blockDim.x >= n) return; /* whole blocks */
    uint32_t want = 0, link = 0;
    if (p < n) {
        uint32_t off, link_node;
        int link_k;
        const uint32_t leaf = leaf_of(up, n, ctr->tree_root, p, &off, &link_node, &link_k);
        if (off == 0u) want = leaf < n ? 1u : info[leaf - n].x;
        link = link_node | (uint32_t)link_k << kLinkSide | off << kLinkOffset;
        links[p] = link;
    }
    uint32_t before, total;
    Scan(scan).ExclusiveSum(want, before, total);
    if (threadIdx.x == 0) block_base = total ? atomicAdd(&ctr->leaf_next, total) : 0u;
    __syncthreads();
    if (want) *leaf_link(nodes, link) = block_base + before;
}

/* A thread per key: its triangle at its leaf's place (which
 * hploc_leaf_alloc wrote in the link it left in links[key]) plus its
 * offset. Keys from n on (degenerate triangles) keep their sorted place;
 * without interior nodes (n < 2) thread 0 writes the root
 * (bvh_small_root). */
__global__ void hploc_leaf_place_kernel(const uint32_t *ids, const RtAabb *tri_boxes, BvhCounters *ctr,
                                        const uint32_t *__restrict__ links, RtBvhNode *nodes, uint32_t tri_count,
                                        uint32_t count, SplitTopArrays t, uint32_t *tri_index)
{
    const uint32_t n = ctr->valid, p = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < 2 && p == 0) bvh_small_root(n, tri_boxes, ids, ctr, nodes);
    if (p >= count) return;
    /* under a split top: each reference's triangle; past the keys (a
     * top's unused room) triangle 0, so that the leaf rows' copy reads
     * within the scene */
    const uint32_t limit = t.top && t.top->split ? n : tri_count;
    if (p < n && n >= 2) {
        const uint32_t link = links[p];
        tri_index[*leaf_link(nodes, link) + (link >> kLinkOffset)] = split_top_tri(t, ids[p]);
    } else {
        tri_index[p] = p < limit ? ids[p] : 0u;
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
    void *bufs[] = {a->cidx, a->rec, a->info, a->up, a->slots, a->side, b->tri_index, b->nodes};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) cudaFree(bufs[i]);
    memset(a, 0, sizeof *a);
    b->tri_index = NULL;
    b->nodes = NULL;
    b->cap = b->node_cap = 0;
}

extern "C" void rt_hploc_gpu_destroy(RtHplocGpu *b)
{
    if (!b) return;
    hploc_free_buffers(b);
    split_top_free(&b->top);
    bvh_base_destroy(&b->base);
    free(b);
}

/* The arrays for n keys and `nodes` nodes (kept when they hold as many
 * already) and steps 1-2's (bvh_keys_reserve). */
static RtStatus hploc_reserve(RtHplocGpu *b, uint32_t n, uint32_t nodes, RtError *err)
{
    RtStatus st;
    if (!b->nodes || n > b->cap || nodes > b->node_cap) {
        hploc_free_buffers(b);
        HplocArrays *a = &b->a;
        const size_t N = n ? n : 1, inner = N > 1 ? N - 1 : 1, node_count = nodes > inner ? nodes : inner;
        const BvhAlloc want[] = {
            {(void **)&a->cidx, N * sizeof(uint32_t), "cluster places"},
            {(void **)&a->rec, 2 * inner * sizeof(uint4), "cluster records"},
            {(void **)&a->info, inner * sizeof(uint2), "subtree counts"},
            {(void **)&a->up, (N + inner) * sizeof(uint2), "parent links"},
            {(void **)&a->slots, inner * sizeof(uint32_t), "split slots"},
            {(void **)&a->side, 2 * inner * sizeof(uint32_t), "fallback's split slots"},
            {(void **)&b->tri_index, N * sizeof(uint32_t), "tri_index"},
            {(void **)&b->nodes, node_count * sizeof(RtBvhNode), "BVH nodes"},
        };
        if ((st = bvh_gpu_alloc_all(&b->base, want, sizeof want / sizeof want[0], n, err)) != RT_OK) {
            hploc_free_buffers(b);
            return st;
        }
        b->cap = n;
        b->node_cap = (uint32_t)node_count;
    }
    return bvh_keys_reserve(&b->base, n, err);
}

/* One build's launches (bvh_build_run's queue) and what they take: the
 * key of its graph. */
typedef struct HplocLaunches {
    BvhLaunchKey in; /* the input, the base's arrays */
    RtHplocGpu *b;
    RtHplocParams p;
    RtSplitTopParams top; /* depth 0: none */
    uint32_t keys;        /* the keys: the triangles, or the references the top may make */
    HplocArrays a;   /* the builder's own (moved when they grow), the top's */
    const void *arrays[2];
} HplocLaunches;
static_assert(sizeof(HplocLaunches) <= RT_LAUNCH_GRAPH_KEY, "the whole key fits the graph's");

static RtStatus hploc_queue(void *ctx, RtError *err)
{
    const HplocLaunches *q = (const HplocLaunches *)ctx;
    RtHplocGpu *b = q->b;
    RtLaunchLog *log = &b->base.log;
    BvhKeysGpu *k = &b->base.keys;
    BvhCounters *ctr = b->base.d_ctr;
    const RtHplocParams &p = q->p;
    const RtLbvhParams lp = hploc_collapse_params(&p);
    const uint32_t tri_count = q->in.tri_count;
    const bool top = q->top.depth > 0;
    /* keys: the triangles, or the references a top may make (n is on the
     * device); grids over every key; hploc_leaf_place's thread 0 always
     * runs: it writes the root of a tree without interior nodes */
    const uint32_t key_count = q->keys;
    const dim3 block(kBlock), tris((key_count + kBlock - 1) / kBlock), keys(key_count ? tris.x : 1);
    RtStatus st;

    /* ---- 1-2. boxes, codes, sorted (bvh_gpu_common.cu); the Morton kernel
     *      frees the split slots (a memset launch less); with a top, its
     *      levels first and its keys (split_top_gpu.cu) ---------------------- */
    if (!top) {
        if ((st = bvh_keys_queue(&b->base, q->in.verts, tri_count, b->a.slots, err)) != RT_OK) return st;
    } else if ((st = bvh_boxes_queue(&b->base, q->in.verts, tri_count, err)) != RT_OK ||
               (st = split_top_queue(&b->base, &b->top, &q->top, q->in.verts, tri_count, key_count, b->a.slots, err)) !=
                   RT_OK ||
               (st = bvh_sort_queue(&b->base, key_count, err)) != RT_OK) {
        return st;
    }

    /* ---- 3-4. the clustering, subtrees and nodes: one walk -------------------- */
    HplocArrays a = q->a;
    a.ids = k->ids[1];
    a.boxes = k->boxes;
    const dim3 cblock(kClusterBlock), ctris((key_count + kClusterBlock - 1) / kClusterBlock);
    if ((st = rt_launch(log, "hploc_cluster", ctris, cblock, 0, hploc_cluster_kernel, err, k->codes[1], ctr, a,
                        b->nodes, (uint32_t)p.radius, (uint32_t)p.threshold, lp)) != RT_OK)
        return st;

    /* ---- 4'. the radix tree, only when the clustered one is too deep --------- */
    const dim3 fgrid = bvh_capped_grid(&b->base, tris.x, kFallbackBlocksPerSm);
    if ((st = rt_launch(log, "hploc_fallback", fgrid, block, 0, hploc_fallback_kernel, err, k->codes[1], ctr, a,
                        b->nodes, lp)) != RT_OK)
        return st;

    /* ---- the top's nodes above the runs' subtrees -------------------------- */
    if (top && (st = rt_launch(log, "hploc_top_link", dim3(1), dim3(32), 0, hploc_top_link_kernel, err, ctr, a,
                               b->nodes, key_count)) != RT_OK)
        return st;

    /* ---- 5. the leaves' places; the triangles there ------------------------ */
    const dim3 lblock(kLeafBlock), ltris((key_count + kLeafBlock - 1) / kLeafBlock);
    if (tri_count && (st = rt_launch(log, "hploc_leaf_alloc", ltris, lblock, 0, hploc_leaf_alloc_kernel, err, ctr,
                                     (const uint2 *)b->a.up, (const uint2 *)b->a.info, b->nodes, b->a.cidx)) != RT_OK)
        return st;
    if ((st = rt_launch(log, "hploc_leaf_place", keys, block, 0, hploc_leaf_place_kernel, err, k->ids[1], k->boxes,
                        ctr, (const uint32_t *)b->a.cidx, b->nodes, tri_count, key_count, a.t, b->tri_index)) != RT_OK)
        return st;

    /* ---- the leaf triangles' rows in that order ------------------------------- */
    return bvh_leaf_woop_queue(&b->base, b->tri_index, key_count, q->in.woop, err);
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
    /* step 5 packs a node index with its leaf link (hploc_leaf_alloc) */
    if (tri_count > RT_BVH_MAX_INDEX)
        return rt_fail(err, RT_ERR_ARG, "H-PLOC: %u triangles, more than a tree holds (%u)", tri_count,
                       RT_BVH_MAX_INDEX);
    /* a top's references and nodes must fit the leaf links too; a scene
     * too large for that is built without one */
    RtSplitTopParams top = b->top_params;
    if (top.depth > 0 &&
        (uint64_t)split_top_max_refs(tri_count, top.extra) + RT_SPLIT_TOP_MAX_NODES > RT_BVH_MAX_INDEX)
        top.depth = 0;
    const uint32_t keys = top.depth > 0 ? split_top_max_refs(tri_count, top.extra) : tri_count;
    if ((st = bvh_build_begin(&b->base, tri_count, stats != NULL, err)) != RT_OK) return st;
    if (top.depth > 0 && (st = split_top_reserve(&b->base, &b->top, &top, tri_count, err)) != RT_OK) return st;
    if ((st = hploc_reserve(b, keys, top.depth > 0 ? keys + RT_SPLIT_TOP_MAX_NODES : 0u, err)) != RT_OK) return st;
    if (d_woop && (st = bvh_leaf_woop_reserve(&b->base, b->cap, keys, err)) != RT_OK) return st;
    HplocLaunches q;
    memset(&q, 0, sizeof q); /* the key's padding too */
    bvh_launch_key(&b->base, d_verts, d_woop, tri_count, &q.in);
    q.b = b;
    q.p = p;
    q.top = top;
    q.keys = keys;
    q.a = b->a;
    if (top.depth > 0) q.a.t = b->top;
    const void *arrays[] = {b->tri_index, b->nodes};
    static_assert(sizeof arrays == sizeof q.arrays, "the key holds every array");
    memcpy(q.arrays, arrays, sizeof q.arrays);
    if ((st = bvh_build_run(&b->base, &q, sizeof q, hploc_queue, &q, err)) != RT_OK) return st;
    if ((st = bvh_build_end(&b->base, b->nodes, b->tri_index, b->cap, tri_count, d_woop != NULL, d_bvh, err)) !=
        RT_OK)
        return st;
    if (top.depth > 0) { /* the references' room: how many there are is on the device */
        d_bvh->index_count = keys;
        d_bvh->node_count = keys + RT_SPLIT_TOP_MAX_NODES;
        d_bvh->node_cap = b->node_cap;
        d_bvh->split_refs = 1;
    }
    return stats ? rt_hploc_gpu_build_finish(b, stats, err) : RT_OK;
}

extern "C" double rt_hploc_gpu_kernel_ms(RtHplocGpu *b, const char *name)
{
    return b && b->base.log.timed ? bvh_entry_ms(&b->base.log, name) : 0.0;
}

extern "C" RtStatus rt_hploc_gpu_set_top(RtHplocGpu *b, const RtSplitTopParams *p, RtError *err)
{
    if (!b) return rt_fail(err, RT_ERR_ARG, "H-PLOC: rt_hploc_gpu_set_top needs a builder");
    RtSplitTopParams q;
    if (p) q = *p;
    else memset(&q, 0, sizeof q);
    RtStatus st = rt_split_top_params_check(&q, err);
    if (st != RT_OK) return st;
    b->top_params = q;
    return RT_OK;
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
        stats->fallback_ms = bvh_entry_ms(log, "hploc_fallback");
        stats->output_ms = bvh_entry_ms(log, "hploc_leaf_alloc") + bvh_entry_ms(log, "hploc_leaf_place");
        static const char *const top_kernels[] = {"top_bin", "top_count", "top_write", "top_morton",
                                                  "hploc_top_link"};
        for (size_t i = 0; i < sizeof top_kernels / sizeof *top_kernels; i++)
            stats->top_ms += bvh_entry_ms(log, top_kernels[i]);
    }
    const BvhCounters *c = b->base.h_ctr;
    stats->launches = log->launches;
    stats->triangles = b->base.built_tris;
    stats->valid = c->valid;
    stats->cluster_depth = c->valid > 1 ? c->cluster_depth : c->valid;
    if (c->top_leaves) {
        stats->valid = c->tri_valid;
        stats->top_leaves = c->top_leaves;
        stats->top_refs = c->top_refs;
    }
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
