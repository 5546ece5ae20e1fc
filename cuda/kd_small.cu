/* kd_small.cu — the small-node stage of Zhou et al. 2008, parallel over
 * nodes. A small root (<= 64 refs) gets 6 split candidates per triangle (the
 * faces of its AABB clipped to the root's cell), each with two 64-bit masks
 * over the root's refs (left, right: box inclusion, Chang's tie rule). A
 * small node is a mask; per level each node (one warp) evaluates every
 * candidate of its root with popcounts ([E]: __popcll, else Manku's SWAR
 * count) and either splits (children = mask & left, mask & right) or
 * becomes a leaf. Modes: SAH (cell areas), Hoedt's simplified SAH, none. */
#include "kd_gpu_internal.cuh"

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
        RtAabb box = kd_box_clip(b.small_box[r.first + t], r.cell);
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
        b.nodes[nd.node] = kd_make_leaf(leaf, n);
        RtKdLeaf lf = {base, n};
        b.leaves[leaf] = lf;
        b.leaf_boxes[leaf] = rb;
    }
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

/* Fused schedule (ours): one warp takes a small root's whole subtree depth
 * first with a stack in shared memory, so the small stage is one launch and
 * needs no host round trip per level. A full stack makes a leaf. */
#define KD_SMALL_STACK 48
#define KD_FUSED_WARPS 4
template <bool POPC>
__global__ void __launch_bounds__(32 * KD_FUSED_WARPS) kd_small_fused_kernel(KdBufs b, KdConf c)
{
    __shared__ KdSmallNode stack[KD_FUSED_WARPS][KD_SMALL_STACK];
    const uint32_t lane = threadIdx.x & 31, wl = threadIdx.x >> 5;
    KdCounters *ctr = b.ctr;
    if (*(volatile uint32_t *)&ctr->overflow) return; /* the build is redone */
    const uint32_t roots = min(*(volatile uint32_t *)&ctr->small_active[0], b.snode_cap);
    for (;;) {
        /* a warp takes the next root from the queue (balances deep and shallow subtrees) */
        uint32_t w = 0;
        if (lane == 0) w = atomicAdd(&ctr->fused_next, 1u);
        w = __shfl_sync(KD_WARP_FULL, w, 0);
        if (w >= roots) return;
        KdSmallNode nd = b.snodes[0][w];
        /* The candidates stay in global memory (L1/L2 hits after the first
         * node): staging them in shared memory (30 KB per block) cut occupancy
         * and measured 15 % slower on Sponza (H100). */
        const uint32_t rfirst = b.sroots[nd.root].first;
        const size_t first = 6 * (size_t)rfirst;
        const float *splits = b.cand_split + first;
        const ulonglong2 *masks = b.cand_mask + first;
        int sp = 0;
        for (;;) {
            KdConf cc = c;
            if (sp == KD_SMALL_STACK) cc.max_depth = 0; /* forces a leaf */
            KdSmallNode kids[2];
            int r = kd_small_step<POPC>(b, cc, nd, splits, masks, rfirst, kids);
            if (r < 0) return;
            if (r == 1) {
                if (lane == 0) stack[wl][sp] = kids[1];
                sp++;
                nd = kids[0];
                continue;
            }
            if (sp == 0) break;
            __syncwarp();
            nd = stack[wl][--sp];
            __syncwarp();
        }
        __syncwarp();
    }
}

RtStatus kd_small_fused(RtLaunchLog *log, const KdBufs &b, const KdConf &c, int popc, RtError *err)
{
    /* a fixed grid (16 blocks of 4 warps per multiprocessor) over a queue of
     * roots: the root count stays on the device */
    const dim3 grid(16 * c.sms), blk(32 * KD_FUSED_WARPS);
    return popc ? rt_launch(log, "kd_small_fused", grid, blk, 0, kd_small_fused_kernel<true>, err, b, c)
                : rt_launch(log, "kd_small_fused", grid, blk, 0, kd_small_fused_kernel<false>, err, b, c);
}

RtStatus kd_small_level(RtLaunchLog *log, const KdBufs &b, const KdConf &c, int popc, int level,
                        uint32_t active, RtError *err)
{
    const dim3 grid((active * 32 + 127) / 128), blk(128);
    return popc ? rt_launch(log, "kd_small_level", grid, blk, 0, kd_small_level_kernel<true>, err, b, c, level, active)
                : rt_launch(log, "kd_small_level", grid, blk, 0, kd_small_level_kernel<false>, err, b, c, level, active);
}
