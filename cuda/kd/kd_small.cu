/* kd_small.cu — the small-node stage of Zhou et al. 2008, parallel over
 * nodes. A small root (<= 64 refs) gets 6 split candidates per triangle (the
 * faces of its AABB clipped to the root's cell), each with two 64-bit masks
 * over the root's refs (left, right: box inclusion, Chang's tie rule). A
 * small node is a mask; per level each node (one warp) evaluates every
 * candidate of its root with popcounts ([E]: __popcll, else Manku's SWAR
 * count) and either splits (children = mask & left, mask & right) or
 * becomes a leaf. Modes: SAH (cell areas), Hoedt's simplified SAH, none.
 * That is Zhou's level-by-level schedule (`small_fused = 0`); the default
 * fused schedule (below) builds a root's whole subtree in one warp, its
 * nodes in batches of up to 32, a lane per node. */
#include "kd/kd_gpu_internal.cuh"

#define KD_WARP_FULL 0xffffffffu

template <bool POPC>
__device__ __forceinline__ uint32_t kd_bitcount(unsigned long long x)
{
    if (POPC) return (uint32_t)__popcll(x);
    /* Manku 2002 / the classic SWAR count Zhou et al. used */
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (uint32_t)((x * 0x0101010101010101ull) >> 56);
}

/* Small ref k's box inside its root's cell: the large stage's box cut to
 * the cell (with clipping: the triangle clipped at every split plane above,
 * kd_tri_clip_plane), or with small_exact the exact box of the triangle's
 * part in the cell, so the candidates are Wald and Havran's "perfect
 * splits"; a clip that rounding leaves empty keeps the large stage's box.
 * The exact clip is a Sutherland-Hodgman polygon in local memory per ref:
 * 15 % of Sponza's small stage, for an SAH cost 0.05 % lower (H100,
 * docs/kd_gpu.md), so it is off by default. */
__device__ __forceinline__ RtAabb kd_small_ref_box(const KdBufs &b, bool exact_clip, uint32_t k, RtAabb cell)
{
    RtAabb box = kd_box_clip(b.small_box[k], cell);
    if (!exact_clip) return box;
    RtAabb exact = kd_box_clip(kd_tri_clip(b, b.small_idx[k], cell), box);
    return aabb_is_empty(exact) ? box : exact;
}

/* Writes `node` as a leaf over refs small_idx[first, first + n) (all of
 * them): one block, any size that is a multiple of 32. */
__device__ void kd_leaf_from_range(const KdBufs &b, uint32_t node, uint32_t first, uint32_t n,
                                   RtAabb cell, float *sh, uint32_t *s_alloc)
{
    if (threadIdx.x == 0) {
        uint32_t leaf, base;
        bool got = kd_alloc_leaf(b, n, &leaf, &base);
        s_alloc[0] = got ? leaf : UINT32_MAX;
        s_alloc[1] = got ? base : UINT32_MAX;
    }
    __syncthreads();
    uint32_t leaf = s_alloc[0], base = s_alloc[1];
    bool ok = leaf != UINT32_MAX && base != UINT32_MAX;
    RtAabb box = aabb_empty();
    for (uint32_t j = threadIdx.x; j < n; j += blockDim.x) {
        uint32_t tri = b.small_idx[first + j];
        if (ok) b.tri_index[base + j] = tri;
        box = aabb_union(box, kd_box_clip(b.small_box[first + j], cell));
    }
    float v[6] = {box.lo.x, box.lo.y, box.lo.z, box.hi.x, box.hi.y, box.hi.z};
    for (int k = 0; k < 3; k++) {
        v[k] = kd_block_reduce<true>(v[k], KdMin(), sh);
        v[3 + k] = kd_block_reduce<true>(v[3 + k], KdMax(), sh);
    }
    if (threadIdx.x == 0 && ok) {
        RtAabb r;
        r.lo = v3(v[0], v[1], v[2]);
        r.hi = v3(v[3], v[4], v[5]);
        if (n == 0) r = aabb_empty();
        b.nodes[node] = kd_make_leaf(leaf, n);
        RtKdLeaf lf = {base, n};
        b.leaves[leaf] = lf;
        b.leaf_boxes[leaf] = r;
    }
}

/* ==== preprocessing: candidates and masks per small root ================= */

/* One small root (one block of KD_SMALL_MAX threads): a leaf at once, or
 * its candidates and masks and its level-0 small node. */
__device__ void kd_small_prep_root(const KdBufs &b, const KdConf &c, uint32_t ri, float *sh, uint32_t *s_alloc,
                                   float (*slo)[KD_SMALL_MAX], float (*shi)[KD_SMALL_MAX])
{
    const KdSmallRoot r = b.sroots[ri];
    const uint32_t n = r.count, t = threadIdx.x;
    if (n > KD_SMALL_MAX || c.small_mode == RT_KD_GPU_SMALL_NONE || n <= 1 ||
        (int)r.depth + 1 >= c.max_depth || aabb_area(r.cell) <= 0.0f) {
        kd_leaf_from_range(b, r.node, r.first, n, r.cell, sh, s_alloc);
        return;
    }
    if (t < n) {
        RtAabb box = kd_small_ref_box(b, c.small_exact, r.first + t, r.cell);
        for (int a = 0; a < 3; a++) {
            slo[a][t] = v3_get(box.lo, a);
            shi[a][t] = v3_get(box.hi, a);
        }
    }
    __syncthreads();
    if (t < n) {
        for (int k = 0; k < 6; k++) {
            int a = k >> 1;
            float plane = (k & 1) ? shi[a][t] : slo[a][t];
            unsigned long long ml = 0, mr = 0;
            for (uint32_t j = 0; j < n; j++) {
                uint32_t l, rr;
                kd_classify(slo[a][j], shi[a][j], plane, &l, &rr);
                ml |= (unsigned long long)l << j;
                mr |= (unsigned long long)rr << j;
            }
            size_t ci = 6 * (size_t)(r.first + t) + k;
            b.cand_split[ci] = plane;
            b.cand_mask[ci] = make_ulonglong2(ml, mr);
        }
    }
    if (t == 0) {
        KdCounters *ctr = b.ctr;
        uint32_t slot = kd_alloc(&ctr->small_active[0], 1, b.snode_cap, &ctr->overflow, KD_OVF_SNODES);
        if (slot != UINT32_MAX) {
            KdSmallNode s;
            s.cell = r.cell;
            s.mask = n == 64 ? ~0ull : ((1ull << n) - 1ull);
            s.root = ri;
            s.node = r.node;
            s.depth = r.depth;
            s.pad = 0;
            b.snodes[0][slot] = s;
        }
    }
}

/* The root count is a device counter: a fixed grid of blocks takes roots
 * from a queue (no host read-back); nothing runs after a large-stage
 * overflow (the build is redone). */
__global__ void __launch_bounds__(KD_SMALL_MAX) kd_small_prep_kernel(KdBufs b, KdConf c)
{
    __shared__ float sh[KD_SMALL_MAX];
    __shared__ uint32_t s_alloc[2], s_root;
    __shared__ float slo[3][KD_SMALL_MAX], shi[3][KD_SMALL_MAX];
    KdCounters *ctr = b.ctr;
    const uint32_t roots = min(*(volatile uint32_t *)&ctr->small_roots, b.sroot_cap);
    for (;;) {
        if (threadIdx.x == 0)
            s_root = *(volatile uint32_t *)&ctr->overflow ? UINT32_MAX : atomicAdd(&ctr->prep_next, 1u);
        __syncthreads();
        const uint32_t ri = s_root;
        __syncthreads();
        if (ri >= roots) return;
        kd_small_prep_root(b, c, ri, sh, s_alloc, slo, shi);
        __syncthreads();
    }
}

RtStatus kd_small_prepare(RtLaunchLog *log, const KdBufs &b, const KdConf &c, RtError *err)
{
    return rt_launch(log, "kd_small_prep", dim3(32 * c.sms), dim3(KD_SMALL_MAX), 0, kd_small_prep_kernel,
                     err, b, c);
}

/* ==== one level: best split per node, or a leaf ========================== */

__device__ __forceinline__ float kd_area_ext(float dx, float dy, float dz)
{
    return 2.0f * (dx * dy + dy * dz + dz * dx);
}

/* The position of the k-th (0-based) set bit of a 64-bit mask with lo32
 * set bits in its low half. */
__device__ __forceinline__ uint32_t kd_nth_bit(unsigned long long mask, uint32_t nlo, uint32_t k)
{
    return k < nlo ? __fns((uint32_t)mask, 0, (int)k + 1) : 32 + __fns((uint32_t)(mask >> 32), 0, (int)(k - nlo) + 1);
}

/* The warp's last step of a leaf: reduce the lanes' boxes and let lane 0
 * write the node, the leaf and its box (empty for an empty leaf). */
__device__ void kd_warp_write_leaf(const KdBufs &b, uint32_t node, uint32_t leaf, uint32_t base, uint32_t n,
                                   RtAabb box, uint32_t lane)
{
    float v[6] = {box.lo.x, box.lo.y, box.lo.z, box.hi.x, box.hi.y, box.hi.z};
    for (int o = 16; o > 0; o >>= 1)
        for (int k = 0; k < 6; k++) {
            float x = __shfl_xor_sync(KD_WARP_FULL, v[k], o);
            v[k] = k < 3 ? fminf(v[k], x) : fmaxf(v[k], x);
        }
    if (lane == 0) {
        RtAabb rb;
        rb.lo = v3(v[0], v[1], v[2]);
        rb.hi = v3(v[3], v[4], v[5]);
        if (n == 0) rb = aabb_empty();
        b.nodes[node] = kd_make_leaf(leaf, n);
        RtKdLeaf lf = {base, n};
        b.leaves[leaf] = lf;
        b.leaf_boxes[leaf] = rb;
    }
}

/* One small node, one warp: the best candidate of its triangles (the AABB
 * faces of the triangles in the node's mask, as Zhou: the lanes walk the
 * set bits, so a node of m triangles reads 6m candidates, not all 6n of its
 * root) by popcounts; when it beats the leaf cost the node becomes interior
 * and kids[] are its children (returns 1), else the node is written as a
 * leaf (returns 0). Returns -1 when an output buffer overflowed (the build
 * is redone). The result is the same in every lane. rfirst: the root's
 * first ref in small_idx[]. */
template <bool POPC>
__device__ int kd_small_step(const KdBufs &b, const KdConf &c, const KdSmallNode &nd, const float *splits,
                             const ulonglong2 *masks, uint32_t rfirst, KdSmallNode kids[2])
{
    const uint32_t lane = threadIdx.x & 31;
    KdCounters *ctr = b.ctr;
    const uint32_t n = kd_bitcount<POPC>(nd.mask);
    const uint32_t nlo = kd_bitcount<POPC>(nd.mask & 0xffffffffull);
    const RtVec3 d = v3_sub(nd.cell.hi, nd.cell.lo);
    const float area = kd_area_ext(d.x, d.y, d.z);
    float best = INFINITY;
    uint32_t best_ci = UINT32_MAX;
    if (n > 1 && area > 0.0f && (int)nd.depth + 1 < c.max_depth) {
        for (uint32_t q = lane; q < 6 * n; q += 32) {
            const uint32_t k = q / 6, face = q - 6 * k;
            const uint32_t ci = 6 * kd_nth_bit(nd.mask, nlo, k) + face;
            int a = face >> 1;
            float plane = splits[ci];
            float lo = v3_get(nd.cell.lo, a), hi = v3_get(nd.cell.hi, a);
            if (!(plane > lo && plane < hi)) continue;
            ulonglong2 m = masks[ci];
            float nl = (float)kd_bitcount<POPC>(nd.mask & m.x), nr = (float)kd_bitcount<POPC>(nd.mask & m.y);
            float cost;
            if (c.small_mode == RT_KD_GPU_SMALL_SSAH) {
                cost = c.c_trav + c.c_isect * (nl * nl + nr * nr) / (float)n;
            } else {
                float dl[3] = {d.x, d.y, d.z}, dr[3] = {d.x, d.y, d.z};
                dl[a] = plane - lo;
                dr[a] = hi - plane;
                float al = kd_area_ext(dl[0], dl[1], dl[2]), ar = kd_area_ext(dr[0], dr[1], dr[2]);
                cost = c.c_trav + c.c_isect * (al * nl + ar * nr) / area;
            }
            if (cost < best || (cost == best && ci < best_ci)) {
                best = cost;
                best_ci = ci;
            }
        }
        for (int o = 16; o > 0; o >>= 1) {
            float oc = __shfl_xor_sync(KD_WARP_FULL, best, o);
            uint32_t oi = __shfl_xor_sync(KD_WARP_FULL, best_ci, o);
            if (oc < best || (oc == best && oi < best_ci)) {
                best = oc;
                best_ci = oi;
            }
        }
    }
    if (best_ci != UINT32_MAX && best < c.c_isect * (float)n) {
        uint32_t pair = 0;
        if (lane == 0) pair = kd_alloc(&ctr->nodes, 2, b.node_cap, &ctr->overflow, KD_OVF_NODES);
        pair = __shfl_sync(KD_WARP_FULL, pair, 0);
        if (pair == UINT32_MAX) return -1;
        int a = (best_ci % 6) >> 1;
        float plane = splits[best_ci];
        ulonglong2 m = masks[best_ci];
        if (lane == 0) b.nodes[nd.node] = kd_make_interior(a, plane, pair);
        kids[0] = nd;
        kids[0].depth = nd.depth + 1;
        kids[0].mask = nd.mask & m.x;
        kids[0].node = pair;
        v3_set(&kids[0].cell.hi, a, plane);
        kids[1] = nd;
        kids[1].depth = nd.depth + 1;
        kids[1].mask = nd.mask & m.y;
        kids[1].node = pair + 1;
        v3_set(&kids[1].cell.lo, a, plane);
        return 1;
    }
    /* a leaf over the set bits of the mask (lane k takes the k-th: its rank) */
    uint32_t leaf = 0, base = 0, got = 0;
    if (lane == 0) got = kd_alloc_leaf(b, n, &leaf, &base);
    got = __shfl_sync(KD_WARP_FULL, got, 0);
    if (!got) return -1;
    leaf = __shfl_sync(KD_WARP_FULL, leaf, 0);
    base = __shfl_sync(KD_WARP_FULL, base, 0);
    RtAabb box = aabb_empty();
    for (uint32_t k = lane; k < n; k += 32) {
        const uint32_t j = kd_nth_bit(nd.mask, nlo, k);
        b.tri_index[base + k] = b.small_idx[rfirst + j];
        box = aabb_union(box, kd_box_clip(b.small_box[rfirst + j], nd.cell));
    }
    kd_warp_write_leaf(b, nd.node, leaf, base, n, box, lane);
    return 0;
}

/* Zhou's schedule: one launch per level, parallel over the level's nodes;
 * the children go to the next level's list. */
template <bool POPC>
__global__ void kd_small_level_kernel(KdBufs b, KdConf c, int level, uint32_t active)
{
    uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (w >= active) return;
    KdSmallNode kids[2];
    const KdSmallNode nd = b.snodes[level & 1][w];
    const uint32_t rfirst = b.sroots[nd.root].first;
    const size_t first = 6 * (size_t)rfirst;
    if (kd_small_step<POPC>(b, c, nd, b.cand_split + first, b.cand_mask + first, rfirst, kids) != 1 || lane != 0)
        return;
    KdCounters *ctr = b.ctr;
    uint32_t slot = kd_alloc(&ctr->small_active[level + 1], 2, b.snode_cap, &ctr->overflow, KD_OVF_SNODES);
    if (slot == UINT32_MAX) return;
    b.snodes[(level + 1) & 1][slot] = kids[0];
    b.snodes[(level + 1) & 1][slot + 1] = kids[1];
}

/* ==== fused schedule (ours): the whole small stage in one launch ========= */

/* A warp takes a small root from a queue and builds its whole subtree in
 * two passes over the root's candidates, which it computes itself into
 * shared memory (no global candidate arrays, no separate prep launch):
 *   1. the best split of every node (Zhou's SAH over the AABB faces of the
 *      node's own triangles, popcounts of the masks, Chang [E]). Nodes wait
 *      in a FIFO queue (breadth first) and are taken in batches of up to 32,
 *      a lane per node: the candidates of the batch's nodes are listed
 *      together, 32 at a time over the lanes, each node's best found by a
 *      segmented warp reduction; then each lane decides its node and queues
 *      its children. The decisions are recorded in queue order and the
 *      subtree's node, leaf and index counts summed;
 *   2. one atomic per counter for the whole subtree, then the same batches
 *      replay the decisions and write nodes, leaves, leaf boxes and
 *      tri_index at their final places (sibling-adjacent pairs).
 * The earlier schedule, a warp per node depth first, spent ~260 warp
 * instructions per node on bookkeeping while most small nodes hold a few
 * triangles (one step of 32 candidates, mostly idle lanes); a batch shares
 * that among its nodes (measured: docs/kd_gpu.md). One allocation per
 * subtree instead of one per node: the per-node atomics (~1.7M on Sponza, two
 * contended counters) were the latency chain of the first one-pass kernel. */
#define KD_FUSED_WARPS 2
/* Nodes waiting in the queue, and triangles listed per batch (6 candidates
 * each). A child that finds the queue full, a node whose triangles do not
 * fit the list, or one past KD_SMALL_DECISIONS becomes a leaf, alike in
 * both passes. With these sizes a warp takes ~11 KB of shared memory (the
 * masks 6 KB), so 10 blocks of 2 warps fit an H100's SM (96 registers
 * allow 21 warps); against a queue of 64 (9 blocks) the SAH cost of Sponza,
 * the BART kitchen and the 1M grid did not move and the stage gained 2-3 %,
 * as 64 / 256 / 384 against 96 / 320 / 512 had (8 blocks, 1.3 %). */
#define KD_SMALL_QUEUE 40
#define KD_SMALL_LIST 256
#define KD_SMALL_DECISIONS 384
#define KD_DEC_LEAF 0xffffu
static_assert(KD_SMALL_QUEUE >= 32, "a batch of up to 32 nodes: head + i wraps at most once");

/* A node in the queue: its cell, its triangles among the root's, its
 * output slot (pass 2) and depth. */
struct KdQueued {
    float lo[3], hi[3];
    unsigned long long mask;
    uint32_t node, depth;
};

struct KdFusedWarp {
    ulonglong2 mask[6 * KD_SMALL_MAX];  /* (left, right) per candidate */
    float split[6 * KD_SMALL_MAX];      /* candidate 6j+k: face k of triangle j (lo x, hi x, lo y, ...) */
    uint32_t idx[KD_SMALL_MAX];         /* the root's triangle ids */
    uint16_t dec[KD_SMALL_DECISIONS];   /* per node in queue order: candidate or KD_DEC_LEAF */
    KdQueued queue[KD_SMALL_QUEUE];     /* circular */
    unsigned long long best[32];        /* pass 1, per batch node: key bits << 32 | candidate */
    uint16_t list[KD_SMALL_LIST];       /* pass 1: the batch's triangles, node << 8 | triangle */
};

/* Set bits of a 32-bit word ([E]: __popc, else Manku's SWAR count). */
template <bool POPC>
__device__ __forceinline__ uint32_t kd_bitcount32(uint32_t x)
{
    if (POPC) return (uint32_t)__popc(x);
    return kd_bitcount<false>((unsigned long long)x);
}

__device__ __forceinline__ uint32_t kd_warp_incl_sum(uint32_t v, uint32_t lane)
{
    for (int o = 1; o < 32; o <<= 1) {
        const uint32_t x = __shfl_up_sync(KD_WARP_FULL, v, o);
        if (lane >= (uint32_t)o) v += x;
    }
    return v;
}
/* The masks of the faces of triangles lane and lane + 32 (TWO: n > 32) on
 * axis a, from the boxes in s.split: lane t walks the root's triangles j
 * (the same j on every lane, a broadcast read) and sets bit j of its faces'
 * left and right masks by Chang's tie rule (kd_classify). A ballot per face
 * and triangle half did the same with the roles swapped: 4 votes and their
 * predicates per face, 2.3x the instructions (a quarter of the stage,
 * docs/kd_gpu.md). Bits from n on stay 0. */
template <bool TWO>
__device__ __forceinline__ void kd_fused_masks_axis(KdFusedWarp &s, uint32_t n, int a, const float lo[2][3],
                                                    const float hi[2][3], uint32_t lane)
{
    uint32_t m[2][2][2][2] = {}; /* [own triangle h][face: lo, hi][left, right][word of j] */
#pragma unroll
    for (int w = 0; w < (TWO ? 2 : 1); w++) {
        const uint32_t j0 = 32 * w, j1 = min(n, j0 + 32);
#pragma unroll 2
        for (uint32_t j = j0; j < j1; j++) {
            const float2 v = *reinterpret_cast<const float2 *>(&s.split[6 * j + 2 * a]);
            const uint32_t bit = 1u << (j - j0);
#pragma unroll
            for (int h = 0; h < (TWO ? 2 : 1); h++)
#pragma unroll
                for (int f = 0; f < 2; f++) {
                    uint32_t l, rr;
                    kd_classify(v.x, v.y, f ? hi[h][a] : lo[h][a], &l, &rr);
                    m[h][f][0][w] |= l ? bit : 0u;
                    m[h][f][1][w] |= rr ? bit : 0u;
                }
        }
    }
#pragma unroll
    for (int h = 0; h < (TWO ? 2 : 1); h++) {
        const uint32_t t = lane + 32 * h;
        if (t < n)
#pragma unroll
            for (int f = 0; f < 2; f++)
                s.mask[6 * t + 2 * a + f] =
                    make_ulonglong2(m[h][f][0][0] | (unsigned long long)m[h][f][0][1] << 32,
                                    m[h][f][1][0] | (unsigned long long)m[h][f][1][1] << 32);
    }
}

/* The root's candidates and masks into shared memory: the boxes of its
 * triangles clipped to its cell (lane j: triangles j and j + 32), their
 * faces as candidates, then the masks per axis. */
template <bool EXACT>
__device__ void kd_fused_stage(const KdBufs &b, const KdSmallRoot &r, KdFusedWarp &s,
                               uint32_t lane)
{
    const uint32_t n = r.count;
    float lo[2][3], hi[2][3];
    for (int h = 0; h < 2; h++) {
        const uint32_t t = lane + 32 * h;
        RtAabb box = aabb_empty();
        if (t < n) {
            box = kd_small_ref_box(b, EXACT, r.first + t, r.cell);
            s.idx[t] = b.small_idx[r.first + t];
        }
        for (int a = 0; a < 3; a++) {
            lo[h][a] = v3_get(box.lo, a);
            hi[h][a] = v3_get(box.hi, a);
            if (t < n) {
                s.split[6 * t + 2 * a] = lo[h][a];
                s.split[6 * t + 2 * a + 1] = hi[h][a];
            }
        }
    }
    __syncwarp();
#pragma unroll /* constant axes: lo and hi stay in registers */
    for (int a = 0; a < 3; a++) {
        if (n > 32) kd_fused_masks_axis<true>(s, n, a, lo, hi, lane);
        else kd_fused_masks_axis<false>(s, n, a, lo, hi, lane);
    }
    __syncwarp();
}

__device__ __forceinline__ float kd_queued_area(const KdQueued &e)
{
    return kd_area_ext(e.hi[0] - e.lo[0], e.hi[1] - e.lo[1], e.hi[2] - e.lo[2]);
}

/* A node's split is searched unless it is a leaf by itself: fewer than two
 * triangles, a flat cell, or the depth limit. */
template <bool POPC>
__device__ __forceinline__ bool kd_queued_searchable(const KdConf &c, const KdQueued &e)
{
    return kd_bitcount<POPC>(e.mask) > 1 && kd_queued_area(e) > 0.0f && (int)e.depth + 1 < c.max_depth;
}

__device__ __forceinline__ uint32_t kd_warp_max(uint32_t v)
{
#if __CUDA_ARCH__ >= 800
    return __reduce_max_sync(KD_WARP_FULL, v);
#else
    for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(KD_WARP_FULL, v, o));
    return v;
#endif
}

/* Pass 1: the best candidate of node e (lane i holds batch node i, which
 * is searched when `search`), or -1 for a leaf; head: the batch's first
 * queue slot. The searched nodes' triangles are listed together (a node's
 * in root order, so a lane's candidates of one node come in increasing
 * order). Candidates are ranked by al*nl + ar*nr (SSAH: nl^2 + nr^2): the
 * SAH cost up to the node's constant offset and scale, so no division per
 * candidate; ties go to the lowest candidate. */
template <bool POPC>
__device__ int kd_batch_best(const KdConf &c, KdFusedWarp &s, const KdQueued &e, bool search, uint32_t head,
                             uint32_t lane)
{
    const uint32_t n = search ? kd_bitcount<POPC>(e.mask) : 0u;
    const uint32_t end = kd_warp_incl_sum(n, lane);
    search = search && end <= KD_SMALL_LIST; /* a prefix of the lanes */
    const uint32_t listed = kd_warp_max(search ? end : 0u);
    /* the list: with many small nodes a lane lists its own node's set
     * bits; with a few large ones node by node, lane j placing mask bits j
     * and j + 32 (a set bit's rank is its place) */
    const uint32_t searched = __ballot_sync(KD_WARP_FULL, search);
    if (kd_warp_max(search ? n : 0u) < (uint32_t)__popc(searched)) {
        uint32_t at = end - n;
        if (search)
#pragma unroll
            for (int h = 0; h < 2; h++)
                for (uint32_t m = (uint32_t)(e.mask >> (32 * h)); m; m &= m - 1)
                    s.list[at++] = (uint16_t)(lane << 8 | (32 * h + __ffs(m) - 1));
    } else {
        const uint32_t lt = (1u << lane) - 1u;
        for (uint32_t todo = searched; todo; todo &= todo - 1) {
            const uint32_t i = __ffs(todo) - 1;
            const uint32_t mlo = __shfl_sync(KD_WARP_FULL, (uint32_t)e.mask, i);
            const uint32_t mhi = __shfl_sync(KD_WARP_FULL, (uint32_t)(e.mask >> 32), i);
            const uint32_t at = __shfl_sync(KD_WARP_FULL, end - n, i);
            if ((mlo >> lane) & 1u) s.list[at + kd_bitcount32<POPC>(mlo & lt)] = (uint16_t)(i << 8 | lane);
            if ((mhi >> lane) & 1u)
                s.list[at + kd_bitcount32<POPC>(mlo) + kd_bitcount32<POPC>(mhi & lt)] =
                    (uint16_t)(i << 8 | (32 + lane));
        }
    }
    s.best[lane] = ~0ull;
    __syncwarp();
    /* lane l takes the l-th run of ceil(listed / 32) triangles (their 6
     * faces each): mostly one node's, whose cell it keeps in registers; its
     * best goes to best[node] by a shared-memory atomicMin when the node
     * changes (a per-iteration segmented warp reduction instead measured
     * 14 % slower: its collectives' stalls). Every lane runs the same trip
     * count, the lanes past their run idle: a loop whose lanes leave at
     * different trips carries a YIELD, which let the warp leave it
     * unconverged, and the rest of the batch then ran as two halves (Nsight
     * Compute, docs/kd_gpu.md). Runs of whole triangles need ceil(listed /
     * 32) trips; runs of ceil(6 listed / 32) candidates took up to one more
     * (two for a batch of at most 32 triangles). */
    const uint32_t per = (listed + 31) >> 5;
    const uint32_t k0 = min(lane * per, listed), k1 = min(k0 + per, listed);
    uint32_t cur = 32;
    unsigned long long bv = ~0ull; /* key bits << 32 | candidate */
    float lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0}, es[3] = {0, 0, 0}, ep[3] = {0, 0, 0};
    unsigned long long nm = 0;
    for (uint32_t it = 0, k = k0; it < per; it++, k++) {
        if (k >= k1) continue;
        const uint32_t ent = s.list[k], i = ent >> 8, t = ent & 0xffu;
        if (i != cur) {
            if (bv != ~0ull) atomicMin(&s.best[cur], bv);
            cur = i;
            bv = ~0ull;
            uint32_t slot = head + i;
            if (slot >= KD_SMALL_QUEUE) slot -= KD_SMALL_QUEUE;
            const KdQueued &nd = s.queue[slot];
#pragma unroll
            for (int a = 0; a < 3; a++) lo[a] = nd.lo[a], hi[a] = nd.hi[a];
            nm = nd.mask;
            /* the child's half area along a: (x - lo) * (sum of the other
             * two extents) + (their product) */
            const float dx = hi[0] - lo[0], dy = hi[1] - lo[1], dz = hi[2] - lo[2];
            es[0] = dy + dz, es[1] = dx + dz, es[2] = dx + dy;
            ep[0] = dy * dz, ep[1] = dx * dz, ep[2] = dx * dy;
        }
#pragma unroll
        for (int f = 0; f < 6; f++) { /* constant axes: no selects */
            const int a = f >> 1;
            const uint32_t ci = 6 * t + f;
            const float plane = s.split[ci];
            /* every face is costed and one outside the cell dropped by a
             * select: ~95 % are inside, and a branch per face cost more */
            const bool inside = plane > lo[a] && plane < hi[a];
            const ulonglong2 m = s.mask[ci];
            const float nl = (float)kd_bitcount<POPC>(nm & m.x), nr = (float)kd_bitcount<POPC>(nm & m.y);
            const float kf = c.small_mode == RT_KD_GPU_SMALL_SSAH
                                 ? nl * nl + nr * nr
                                 : ((plane - lo[a]) * es[a] + ep[a]) * nl + ((hi[a] - plane) * es[a] + ep[a]) * nr;
            /* non-negative inside the cell: its bits order as integers */
            const unsigned long long key = (unsigned long long)__float_as_uint(kf) << 32 | ci;
            bv = inside && key < bv ? key : bv;
        }
    }
    if (bv != ~0ull) atomicMin(&s.best[cur], bv);
    __syncwarp();
    int best = -1;
    const unsigned long long v = s.best[lane];
    if (search && v != ~0ull) {
        /* split when C_trav + C_i * key / scale < C_i * n, scale = n (SSAH)
         * or area / 2 (SAH), compared without the division (scale > 0) */
        const float key = __uint_as_float((uint32_t)(v >> 32));
        const float scale = c.small_mode == RT_KD_GPU_SMALL_SSAH ? (float)n : 0.5f * kd_queued_area(e);
        if (c.c_isect * key < (c.c_isect * (float)n - c.c_trav) * scale) best = (int)(uint32_t)v;
    }
    __syncwarp(); /* list and best are rewritten by the next batch */
    return best;
}

/* Both passes, after a batch's decisions: the children of a split node e
 * (candidate ci >= 0; in pass 2 their slots are pair, pair + 1) go into
 * kids[]; those whose split is searched are queued behind the pending
 * nodes in lane order while the queue has room (head: the batch's first
 * slot, nb its nodes, *pending the queue's length, updated). Returns the
 * lane's children that are leaves now: bit 0 left, bit 1 right. */
template <bool POPC>
__device__ uint32_t kd_batch_children(const KdConf &c, KdFusedWarp &s, const KdQueued &e, int ci, uint32_t pair,
                                      uint32_t head, uint32_t nb, uint32_t *pending, KdQueued kids[2],
                                      uint32_t lane)
{
    bool queue[2] = {false, false};
    if (ci >= 0) {
        const int a = (ci % 6) >> 1;
        const float plane = s.split[ci];
        const ulonglong2 m = s.mask[ci];
        kids[0] = kids[1] = e;
        kids[0].depth = kids[1].depth = e.depth + 1;
        kids[0].mask = e.mask & m.x;
        kids[1].mask = e.mask & m.y;
        kids[0].node = pair;
        kids[1].node = pair + 1;
#pragma unroll
        for (int k = 0; k < 3; k++) /* constant indices: kids stay in registers */
            if (k == a) {
                kids[0].hi[k] = plane;
                kids[1].lo[k] = plane;
            }
        queue[0] = kd_queued_searchable<POPC>(c, kids[0]);
        queue[1] = kd_queued_searchable<POPC>(c, kids[1]);
    }
    const uint32_t q0 = __ballot_sync(KD_WARP_FULL, queue[0]), q1 = __ballot_sync(KD_WARP_FULL, queue[1]);
    const uint32_t lt = (1u << lane) - 1u, rest = *pending - nb, room = KD_SMALL_QUEUE - rest;
    uint32_t at = __popc(q0 & lt) + __popc(q1 & lt), leaves = ci >= 0 ? 3u : 0u;
#pragma unroll
    for (int k = 0; k < 2; k++)
        if (queue[k]) {
            if (at < room) {
                s.queue[(head + *pending + at) % KD_SMALL_QUEUE] = kids[k];
                leaves &= ~(1u << k);
            }
            at++;
        }
    *pending = rest + min(room, (uint32_t)(__popc(q0) + __popc(q1)));
    return leaves;
}

/* Pass 2's leaf, by one lane: node e over the set bits of its mask, its
 * tri_index entries from base, and its box: the triangles' boxes in the
 * root cell (the candidates) cut to the cell (empty for an empty leaf). */
__device__ void kd_lane_leaf(const KdBufs &b, const KdFusedWarp &s, const KdQueued &e, uint32_t leaf,
                             uint32_t base)
{
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    uint32_t n = 0;
#pragma unroll
    for (int h = 0; h < 2; h++)
        for (uint32_t m = (uint32_t)(e.mask >> (32 * h)); m; m &= m - 1) {
            const uint32_t t = 32 * h + __ffs(m) - 1;
            b.tri_index[base + n++] = s.idx[t];
#pragma unroll
            for (int a = 0; a < 3; a++) {
                lo[a] = fminf(lo[a], s.split[6 * t + 2 * a]);
                hi[a] = fmaxf(hi[a], s.split[6 * t + 2 * a + 1]);
            }
        }
    RtAabb box;
    box.lo = v3(fmaxf(lo[0], e.lo[0]), fmaxf(lo[1], e.lo[1]), fmaxf(lo[2], e.lo[2]));
    box.hi = v3(fminf(hi[0], e.hi[0]), fminf(hi[1], e.hi[1]), fminf(hi[2], e.hi[2]));
    b.nodes[e.node] = kd_make_leaf(leaf, n);
    RtKdLeaf lf = {base, n};
    b.leaves[leaf] = lf;
    b.leaf_boxes[leaf] = box;
}

/* A root that is a leaf at once (over 64 refs, mode none, too deep, flat):
 * the warp writes it from the ref range. False on an output overflow. */
__device__ bool kd_fused_range_leaf(const KdBufs &b, const KdSmallRoot &r, uint32_t lane)
{
    uint32_t leaf = 0, base = 0, got = 0;
    if (lane == 0) got = kd_alloc_leaf(b, r.count, &leaf, &base);
    if (!__shfl_sync(KD_WARP_FULL, got, 0)) return false;
    leaf = __shfl_sync(KD_WARP_FULL, leaf, 0);
    base = __shfl_sync(KD_WARP_FULL, base, 0);
    RtAabb box = aabb_empty();
    for (uint32_t j = lane; j < r.count; j += 32) {
        b.tri_index[base + j] = b.small_idx[r.first + j];
        box = aabb_union(box, kd_box_clip(b.small_box[r.first + j], r.cell));
    }
    kd_warp_write_leaf(b, r.node, leaf, base, r.count, box, lane);
    return true;
}

__device__ __forceinline__ bool kd_small_root_is_leaf(const KdConf &c, const KdSmallRoot &r)
{
    return r.count > KD_SMALL_MAX || c.small_mode == RT_KD_GPU_SMALL_NONE || r.count <= 1 ||
           (int)r.depth + 1 >= c.max_depth || aabb_area(r.cell) <= 0.0f;
}

/* The batch of up to 32 nodes at the queue's head, a node per lane
 * (zeroed past the batch). */
__device__ __forceinline__ KdQueued kd_batch_node(const KdFusedWarp &s, uint32_t head, uint32_t nb, uint32_t lane)
{
    KdQueued e = {};
    if (lane < nb) e = s.queue[(head + lane) % KD_SMALL_QUEUE];
    __syncwarp(); /* the batch's slots may take children */
    return e;
}

/* One small root's subtree (the two passes above). False on an overflow. */
template <bool POPC, bool EXACT>
__device__ bool kd_fused_root(const KdBufs &b, const KdConf &c, const KdSmallRoot &r, KdFusedWarp &s,
                              uint32_t lane)
{
    kd_fused_stage<EXACT>(b, r, s, lane);
    KdQueued root;
    root.lo[0] = r.cell.lo.x, root.lo[1] = r.cell.lo.y, root.lo[2] = r.cell.lo.z;
    root.hi[0] = r.cell.hi.x, root.hi[1] = r.cell.hi.y, root.hi[2] = r.cell.hi.z;
    root.mask = r.count == 64 ? ~0ull : ((1ull << r.count) - 1ull);
    root.depth = r.depth;
    root.node = r.node;
    const uint32_t lt = (1u << lane) - 1u;

    /* pass 1: decisions in queue order, counts */
    uint32_t splits = 0, leaves = 0, refs = 0; /* leaves, refs: this lane's */
    if (lane == 0) s.queue[0] = root;
    __syncwarp();
    for (uint32_t head = 0, pending = 1, ndec = 0; pending;) {
        const uint32_t nb = min(pending, 32u), di = ndec + lane;
        const KdQueued e = kd_batch_node(s, head, nb, lane);
        const int ci = kd_batch_best<POPC>(c, s, e, lane < nb && di < KD_SMALL_DECISIONS, head, lane);
        if (lane < nb && di < KD_SMALL_DECISIONS) s.dec[di] = ci < 0 ? KD_DEC_LEAF : (uint16_t)ci;
        splits += __popc(__ballot_sync(KD_WARP_FULL, ci >= 0));
        KdQueued kids[2];
        const uint32_t kl = kd_batch_children<POPC>(c, s, e, ci, 0, head, nb, &pending, kids, lane);
        if (lane < nb && ci < 0) leaves++, refs += __popcll(e.mask);
        if (kl & 1u) leaves++, refs += __popcll(kids[0].mask);
        if (kl & 2u) leaves++, refs += __popcll(kids[1].mask);
        head = (head + nb) % KD_SMALL_QUEUE;
        ndec += nb;
        __syncwarp();
    }
    leaves = __reduce_add_sync(KD_WARP_FULL, leaves);
    refs = __reduce_add_sync(KD_WARP_FULL, refs);

    /* one allocation per counter for the whole subtree */
    uint32_t pair0 = 0, leaf0 = 0, base0 = 0, ok = 1;
    if (lane == 0) {
        KdCounters *ctr = b.ctr;
        if (splits) {
            pair0 = kd_alloc(&ctr->nodes, 2 * splits, b.node_cap, &ctr->overflow, KD_OVF_NODES);
            ok = pair0 != UINT32_MAX;
        }
        unsigned long long old = atomicAdd(&ctr->leaf_index, ((unsigned long long)leaves << 32) | refs);
        leaf0 = (uint32_t)(old >> 32);
        base0 = (uint32_t)old;
        uint32_t bits = 0;
        if ((uint64_t)leaf0 + leaves > b.leaf_cap) bits |= KD_OVF_LEAVES;
        if ((uint64_t)base0 + refs > b.index_cap) bits |= KD_OVF_INDEX;
        if (bits) atomicOr(&ctr->overflow, bits);
        ok = ok && !bits;
    }
    if (!__shfl_sync(KD_WARP_FULL, ok, 0)) return false;
    pair0 = __shfl_sync(KD_WARP_FULL, pair0, 0);
    leaf0 = __shfl_sync(KD_WARP_FULL, leaf0, 0);
    base0 = __shfl_sync(KD_WARP_FULL, base0, 0);

    /* pass 2: the same batches replay the decisions, writing at the final
     * places (a lane's leaves: its node, or the children it made leaves) */
    if (lane == 0) s.queue[0] = root;
    __syncwarp();
    for (uint32_t head = 0, pending = 1, ndec = 0; pending;) {
        const uint32_t nb = min(pending, 32u), di = ndec + lane;
        const KdQueued e = kd_batch_node(s, head, nb, lane);
        const uint32_t dec = lane < nb && di < KD_SMALL_DECISIONS ? s.dec[di] : KD_DEC_LEAF;
        const int ci = dec == KD_DEC_LEAF ? -1 : (int)dec;
        const uint32_t split = __ballot_sync(KD_WARP_FULL, ci >= 0);
        const uint32_t pair = pair0 + 2 * __popc(split & lt);
        if (ci >= 0) b.nodes[e.node] = kd_make_interior((ci % 6) >> 1, s.split[ci], pair);
        KdQueued kids[2];
        const uint32_t kl = kd_batch_children<POPC>(c, s, e, ci, pair, head, nb, &pending, kids, lane);
        const bool self = lane < nb && ci < 0;
        const uint32_t nl = self + __popc(kl);
        const uint32_t nr = (self ? __popcll(e.mask) : 0) + ((kl & 1u) ? __popcll(kids[0].mask) : 0) +
                            ((kl & 2u) ? __popcll(kids[1].mask) : 0);
        const uint32_t lend = kd_warp_incl_sum(nl, lane), rend = kd_warp_incl_sum(nr, lane);
        uint32_t leaf = leaf0 + lend - nl, base = base0 + rend - nr;
        if (self) kd_lane_leaf(b, s, e, leaf++, base), base += __popcll(e.mask);
        if (kl & 1u) kd_lane_leaf(b, s, kids[0], leaf++, base), base += __popcll(kids[0].mask);
        if (kl & 2u) kd_lane_leaf(b, s, kids[1], leaf, base);
        pair0 += 2 * __popc(split);
        leaf0 += __shfl_sync(KD_WARP_FULL, lend, 31);
        base0 += __shfl_sync(KD_WARP_FULL, rend, 31);
        head = (head + nb) % KD_SMALL_QUEUE;
        ndec += nb;
        __syncwarp();
    }
    return true;
}

template <bool POPC, bool EXACT>
__global__ void __launch_bounds__(32 * KD_FUSED_WARPS) kd_small_fused_kernel(KdBufs b, KdConf c)
{
    __shared__ KdFusedWarp s_warp[KD_FUSED_WARPS];
    KdFusedWarp &s = s_warp[threadIdx.x >> 5];
    const uint32_t lane = threadIdx.x & 31;
    KdCounters *ctr = b.ctr;
    if (*(volatile uint32_t *)&ctr->overflow) return; /* the build is redone */
    /* the queue: the buckets one after the other, most refs first (lane k
     * < KD_ROOT_BUCKETS holds bucket k's count and where it starts) */
    const uint32_t bn = lane < KD_ROOT_BUCKETS ? min(ctr->bucket_count[lane], b.sroot_cap) : 0u;
    uint32_t bend = bn;
    for (int o = 1; o < 32; o <<= 1) {
        const uint32_t x = __shfl_up_sync(KD_WARP_FULL, bend, o);
        if (lane >= (uint32_t)o) bend += x;
    }
    const uint32_t roots = __shfl_sync(KD_WARP_FULL, bend, 31);
    for (;;) {
        /* a warp takes the next root from the queue (balances deep and shallow subtrees) */
        uint32_t t = 0;
        if (lane == 0) t = atomicAdd(&ctr->fused_next, 1u);
        t = __shfl_sync(KD_WARP_FULL, t, 0);
        if (t >= roots) return;
        const uint32_t k = __ffs(__ballot_sync(KD_WARP_FULL, lane < KD_ROOT_BUCKETS && t < bend)) - 1;
        const uint32_t at = t - (__shfl_sync(KD_WARP_FULL, bend, k) - __shfl_sync(KD_WARP_FULL, bn, k));
        const KdSmallRoot r = b.sroots[b.root_bucket[k * (size_t)b.sroot_cap + at]];
        const bool ok = kd_small_root_is_leaf(c, r) ? kd_fused_range_leaf(b, r, lane)
                                                    : kd_fused_root<POPC, EXACT>(b, c, r, s, lane);
        if (!ok) return;
        __syncwarp(); /* shared memory is reused by the next root */
    }
}

RtStatus kd_small_fused(RtLaunchLog *log, const KdBufs &b, const KdConf &c, int popc, RtError *err)
{
    /* a fixed grid of resident blocks over the queue of roots: the root count
     * stays on the device */
    /* the exact clip is a template parameter: its polygon in local memory
     * and its registers (122 against 112) stay out of the default kernel */
    void (*k)(KdBufs, KdConf) = popc ? (c.small_exact ? kd_small_fused_kernel<true, true> : kd_small_fused_kernel<true, false>)
                                     : (c.small_exact ? kd_small_fused_kernel<false, true> : kd_small_fused_kernel<false, false>);
    int per_sm = 0;
    CUDA_CHECK(err, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, 32 * KD_FUSED_WARPS, 0));
    if (per_sm < 1) per_sm = 1;
    return rt_launch(log, "kd_small_fused", dim3(per_sm * c.sms), dim3(32 * KD_FUSED_WARPS), 0, k, err, b, c);
}

RtStatus kd_small_level(RtLaunchLog *log, const KdBufs &b, const KdConf &c, int popc, int level,
                        uint32_t active, RtError *err)
{
    const dim3 grid((active * 32 + 127) / 128), blk(128);
    return popc ? rt_launch(log, "kd_small_level", grid, blk, 0, kd_small_level_kernel<true>, err, b, c, level, active)
                : rt_launch(log, "kd_small_level", grid, blk, 0, kd_small_level_kernel<false>, err, b, c, level, active);
}
