/* kd_large_internal.cuh — the steps of the large-node stage (Zhou et al.
 * 2008, section 4.2; Chang, Seo and Ihm's optimisations [A]-[D] as template
 * flags), device functions shared by its three schedules:
 *   kd_large_levels.cu      Implementation I: a launch per step and level,
 *                           the host reading each level's counts back;
 *   kd_large_persistent.cu  Implementation II: every level in one cooperative
 *                           launch, a grid barrier between levels;
 *   kd_large_dataflow.cu    ours: the same launch without barriers, a node's
 *                           chunks start as soon as its parent is routed.
 * Per level, over the active (large) nodes:
 *   1. node boxes: per-chunk reduction of the refs' AABBs clipped to the
 *      cell ([D] warp intrinsics or shared memory), then per node 6 atomics per
 *      chunk ([C]) or a segmented reduction over the node's chunks;
 *   2. split: empty-space cuts above C_e, then the spatial median of the
 *      longest axis (with 4 ways, ours, each half again at its own median);
 *      each child gets a region of `count` refs in the next list;
 *   3. triangle sorting: Implementation II (one kernel, per-block scan with
 *      [B] ballot/popc/shfl or shared memory, one atomicAdd per child and
 *      block: [A]) or Implementation I (bit flags, a CUB scan, a scatter);
 *   4. routing: children at or below the small threshold become small roots
 *      (their refs copied to the small list), the others the next level's
 *      active nodes with their chunks.
 * Step 0 (triangle boxes, the root) is kd_large.cu. */
#ifndef RT_KD_LARGE_INTERNAL_CUH
#define RT_KD_LARGE_INTERNAL_CUH

#include "gpu/fence.cuh"
#include "kd/kd_gpu_internal.cuh"

__device__ __forceinline__ void kd_box_init(int box[6])
{
    for (int a = 0; a < 3; a++) {
        box[a] = rt_f2ord(INFINITY);
        box[3 + a] = rt_f2ord(-INFINITY);
    }
}

/* ==== step 1: node boxes ================================================= */

/* A ref's box: the triangle's AABB (box inclusion) or, with clipping, the
 * box of the triangle's part inside the ref's cell, stored with the ref. */
__device__ __forceinline__ RtAabb kd_ref_aabb(const KdBufs &b, const KdConf &c, int list, uint32_t pos,
                                              uint32_t tri)
{
    if (c.clip) return kd_ref_box_load<false>(b, list, pos);
    const float4 lo = b.tri_lo[tri], hi = b.tri_hi[tri];
    RtAabb r;
    r.lo = v3(lo.x, lo.y, lo.z);
    r.hi = v3(hi.x, hi.y, hi.z);
    return r;
}

/* One chunk's box (one block): its refs' boxes clipped to the node's cell,
 * reduced in the block ([D] shuffles or a shared-memory tree), then 6
 * atomics into the node ([C]) or a per-chunk box for the segmented reduction. */
template <bool SHFL, bool ATOMIC>
__device__ void kd_bbox_chunk(const KdBufs &b, const KdConf &c, int level, uint32_t chunk, float *sh)
{
    const int src = kd_list(b, level);
    uint2 ch = b.chunks[src][chunk];
    KdLargeNode *nd = &b.active[src][ch.x];
    uint32_t i = ch.y + threadIdx.x;
    RtAabb box = aabb_empty();
    if (i < nd->count) {
        uint32_t pos = nd->first + i;
        box = kd_box_clip(kd_ref_aabb(b, c, src, pos, b.refs[src][pos]), nd->cell);
    }
    float v[6] = {box.lo.x, box.lo.y, box.lo.z, box.hi.x, box.hi.y, box.hi.z};
    for (int k = 0; k < 3; k++) {
        v[k] = kd_block_reduce<SHFL>(v[k], KdMin(), sh);
        v[3 + k] = kd_block_reduce<SHFL>(v[3 + k], KdMax(), sh);
    }
    if (threadIdx.x != 0) return;
    if (ATOMIC) { /* Chang [C]: three pairs of atomic min/max per chunk */
        for (int k = 0; k < 3; k++) {
            atomicMin(&nd->box[k], rt_f2ord(v[k]));
            atomicMax(&nd->box[3 + k], rt_f2ord(v[3 + k]));
        }
    } else {
        RtAabb r;
        r.lo = v3(v[0], v[1], v[2]);
        r.hi = v3(v[3], v[4], v[5]);
        b.chunk_box[chunk] = r;
    }
}

/* Zhou's original: a segmented reduction of the chunk boxes, one block per
 * node (a node's chunks are contiguous). */
template <bool SHFL>
__device__ void kd_segreduce_node(const KdBufs &b, int level, uint32_t node, float *sh)
{
    KdLargeNode *nd = &b.active[kd_list(b, level)][node];
    RtAabb acc = aabb_empty();
    for (uint32_t k = threadIdx.x; k < nd->chunk_count; k += blockDim.x)
        acc = aabb_union(acc, b.chunk_box[nd->chunk_first + k]);
    float v[6] = {acc.lo.x, acc.lo.y, acc.lo.z, acc.hi.x, acc.hi.y, acc.hi.z};
    for (int k = 0; k < 3; k++) {
        v[k] = kd_block_reduce<SHFL>(v[k], KdMin(), sh);
        v[3 + k] = kd_block_reduce<SHFL>(v[3 + k], KdMax(), sh);
    }
    if (threadIdx.x == 0)
        for (int k = 0; k < 6; k++) nd->box[k] = rt_f2ord(v[k]);
}

/* ==== step 2: empty-space cuts and the spatial median split ============== */

/* Does [first, first + n) fit under cap? Else the overflow is flagged. */
__device__ __forceinline__ bool kd_fits(const KdBufs &b, uint32_t first, uint32_t n, uint32_t cap, uint32_t bit,
                                        uint32_t *lovf)
{
    if ((uint64_t)first + n <= cap) return true;
    atomicOr(&b.ctr->overflow, bit);
    atomicOr(lovf, bit);
    return false;
}

/* Node nd (its tight box in nd->box) at `level`: empty-space cuts, the
 * median split, and each child's region of `count` refs in the
 * next list. Allocation failures are also flagged in *lovf (the persistent
 * stage's per-level word). */
template <int W>
__device__ void kd_split_node(const KdBufs &b, const KdConf &c, KdLargeNode *nd, int level, uint32_t *lovf)
{
    KdCounters *ctr = b.ctr;
    RtAabb cell = nd->cell;
    RtAabb tight = kd_box_clip(kd_box_decode(nd->box), cell);
    uint32_t node = nd->node, depth = nd->depth;
    int axis = -1, ways = 2, a2[2] = {0, 0};
    float split = 0.0f, s2[2] = {0.0f, 0.0f};
    uint32_t kids = 0, refs_at = UINT32_MAX, refs_want = 0;
    if ((int)depth + 1 < c.max_depth && !aabb_is_empty(tight)) {
        /* Zhou: cut off empty space on a side when it exceeds C_e of the
         * extent; each cut is an interior node with an empty leaf child.
         * The cuts and the median are planned first (geometry only), then
         * allocated with one atomic per counter: this runs on the critical
         * path of every large level, where up to 14 dependent atomics (two
         * per cut, one for the median) were a chain of L2 round trips. */
        float plane[6];
        uint32_t cuts = 0, ncut = 0; /* bit 2a + side: a cut on axis a's low (0) or high (1) side */
#pragma unroll
        for (int a = 0; a < 3; a++) {
#pragma unroll
            for (int side = 0; side < 2; side++) {
                const int k = 2 * a + side;
                plane[k] = 0.0f;
                if ((int)depth + 2 >= c.max_depth) continue;
                float lo = v3_get(cell.lo, a), hi = v3_get(cell.hi, a);
                float ext = hi - lo;
                float gap = side == 0 ? v3_get(tight.lo, a) - lo : hi - v3_get(tight.hi, a);
                if (!(ext > 0.0f) || !(gap > c.empty_cut * ext)) continue;
                plane[k] = side == 0 ? v3_get(tight.lo, a) : v3_get(tight.hi, a);
                if (side == 0) v3_set(&cell.lo, a, plane[k]);
                else v3_set(&cell.hi, a, plane[k]);
                cuts |= 1u << k;
                ncut++;
                depth++;
            }
        }
        /* spatial median of the longest axis of the (cut) cell */
        RtVec3 d = v3_sub(cell.hi, cell.lo);
        int a = d.x >= d.y && d.x >= d.z ? 0 : (d.y >= d.z ? 1 : 2);
        float lo = v3_get(cell.lo, a), hi = v3_get(cell.hi, a);
        float s = 0.5f * (lo + hi);
        const bool median = (int)depth + 1 < c.max_depth && s > lo && s < hi;
        /* 4 ways (ours): each half split again at the median of its own
         * longest axis in the same pass, so a level of the large stage (a
         * chain of dependent L2 round trips and a grid barrier) does two
         * tree levels; the halves get no empty-space cuts of their own */
        bool four = W == 4 && median && c.ways == 4 && (int)depth + 2 < c.max_depth;
#pragma unroll
        for (int h = 0; h < 2 && four; h++) {
            RtAabb hc = cell;
            if (h == 0) v3_set(&hc.hi, a, s);
            else v3_set(&hc.lo, a, s);
            const RtVec3 e = v3_sub(hc.hi, hc.lo);
            a2[h] = e.x >= e.y && e.x >= e.z ? 0 : (e.y >= e.z ? 1 : 2);
            const float l2 = v3_get(hc.lo, a2[h]), h2 = v3_get(hc.hi, a2[h]);
            s2[h] = 0.5f * (l2 + h2);
            four = four && s2[h] > l2 && s2[h] < h2;
        }
        const uint32_t pairs = ncut + (median ? 1u : 0u) + (four ? 2u : 0u);
        /* the three allocations at once, then the capacity checks: their L2
         * round trips overlap (a check between them made each wait for the
         * one before, on the level's critical path). The refs are reserved
         * for every child even if the node stops below. */
        const uint32_t pair_at = pairs ? atomicAdd(&ctr->nodes, 2 * pairs) : 0u;
        const unsigned long long leaf_at = ncut ? atomicAdd(&ctr->leaf_index, (unsigned long long)ncut << 32) : 0ull;
        refs_want = (median ? (four ? 4u : 2u) : 1u) * nd->count;
        refs_at = atomicAdd(&ctr->level_refs[level + 1], refs_want);
        uint32_t pair = pair_at, leaf = (uint32_t)(leaf_at >> 32);
        bool ok = !pairs || kd_fits(b, pair_at, 2 * pairs, b.node_cap, KD_OVF_NODES, lovf);
        if (ncut) ok = kd_fits(b, leaf, ncut, b.leaf_cap, KD_OVF_LEAVES, lovf) && ok;
        if (ok) { /* else the build is redone: the node stops here */
#pragma unroll
            for (int k = 0; k < 6; k++) {
                if (!(cuts >> k & 1u)) continue;
                const int side = k & 1;
                b.nodes[node] = kd_make_interior(k >> 1, plane[k], pair);
                b.nodes[pair + side] = kd_make_leaf(leaf, 0);
                RtKdLeaf lf = {0, 0};
                b.leaves[leaf] = lf;
                b.leaf_boxes[leaf] = aabb_empty();
                node = pair + 1 - side;
                pair += 2;
                leaf++;
            }
            if (median) {
                kids = pair;
                axis = a;
                split = s;
                b.nodes[node] = kd_make_interior(a, s, kids);
                if (four) { /* the halves (pair, pair + 1), their children from pair + 2 on */
                    b.nodes[pair] = kd_make_interior(a2[0], s2[0], pair + 2);
                    b.nodes[pair + 1] = kd_make_interior(a2[1], s2[1], pair + 4);
                    kids = pair + 2;
                    ways = 4;
                }
            }
        } else {
            cell = nd->cell;
            depth = nd->depth;
            node = nd->node;
        }
    }
    /* Each child may receive every ref of the parent (straddlers go both
     * ways), so reserve count per child; a stopped node sends all its refs
     * to child 0, which is the node itself. */
    const uint32_t n = nd->count;
    if (refs_at == UINT32_MAX) refs_at = atomicAdd(&ctr->level_refs[level + 1], refs_want = n);
    const uint32_t base = kd_fits(b, refs_at, refs_want, b.ref_cap, KD_OVF_REFS, lovf) ? refs_at : UINT32_MAX;
    nd->cell = cell;
    nd->node = node;
    nd->depth = depth;
    nd->axis = axis;
    nd->split = split;
    nd->ways = ways;
    nd->axis2[0] = a2[0];
    nd->axis2[1] = a2[1];
    nd->split2[0] = s2[0];
    nd->split2[1] = s2[1];
    nd->kids = kids;
#pragma unroll
    for (int k = 0; k < W; k++) {
        nd->kid_base[k] = base == UINT32_MAX ? UINT32_MAX : base + (uint32_t)k * n;
        nd->kid_cursor[k] = 0;
        kd_box_init(nd->kid_box[k]);
    }
    nd->done = 0;
}

/* ==== step 3: triangle sorting =========================================== */

/* A ref's box rb against the plane x_axis = split inside cell: *l, *r say
 * which sides it goes to, out[0], out[1] its boxes there. Box inclusion: the
 * box against the plane. Clipping: a straddler is clipped at the plane
 * (kd_tri_clip_plane), its box cut to rb and the side's cell, and dropped
 * where the triangle misses that (never from both: a ref is never lost). */
__device__ __forceinline__ void kd_split_ref(const KdBufs &b, const KdConf &c, uint32_t tri, const RtAabb &rb,
                                             const RtAabb &cell, int axis, float split, uint32_t *l, uint32_t *r,
                                             RtAabb out[2])
{
    out[0] = out[1] = rb;
    kd_classify(v3_get(rb.lo, axis), v3_get(rb.hi, axis), split, l, r);
    if (!c.clip || !*l || !*r) return;
    RtAabb cl = cell, cr = cell;
    v3_set(&cl.hi, axis, split);
    v3_set(&cr.lo, axis, split);
    kd_tri_clip_plane(b, tri, axis, split, out);
    out[0] = kd_box_clip(kd_box_clip(out[0], rb), cl);
    out[1] = kd_box_clip(kd_box_clip(out[1], rb), cr);
    *l = !aabb_is_empty(out[0]);
    *r = !aabb_is_empty(out[1]);
    if (!*l && !*r) { /* rounding: keep the box-inclusion answer */
        *l = *r = 1;
        out[0] = kd_box_clip(rb, cl);
        out[1] = kd_box_clip(rb, cr);
    }
}

/* Which children of node nd ref (pos, tri) goes to (bit k: child k) and
 * the boxes it takes there (box[k]). W = the most children a node of this
 * launch has (2, or 4: the half's box split again at its own plane). */
template <int W>
__device__ __forceinline__ uint32_t kd_sort_ref(const KdBufs &b, const KdConf &c, const KdLargeNode *nd, int src,
                                                uint32_t pos, uint32_t tri, RtAabb box[W])
{
    const RtAabb rb = kd_ref_aabb(b, c, src, pos, tri);
    if (nd->axis < 0) {
        box[0] = rb;
        return 1u;
    }
    uint32_t l, r;
    RtAabb half[2];
    kd_split_ref(b, c, tri, rb, nd->cell, nd->axis, nd->split, &l, &r, half);
    if (W == 2 || nd->ways != 4) {
        box[0] = half[0];
        box[1] = half[1];
        return l | r << 1;
    }
    uint32_t f = 0;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        if (!(h ? r : l)) continue;
        RtAabb hc = nd->cell;
        if (h == 0) v3_set(&hc.hi, nd->axis, nd->split);
        else v3_set(&hc.lo, nd->axis, nd->split);
        uint32_t l2, r2;
        kd_split_ref(b, c, tri, half[h], hc, nd->axis2[h], nd->split2[h], &l2, &r2, &box[(2 * h) % W]);
        f |= (l2 | r2 << 1) << (2 * h);
    }
    return f;
}

__device__ __forceinline__ void kd_put_ref(const KdBufs &b, const KdConf &c, int dst, uint32_t at, uint32_t tri,
                                           const RtAabb &box)
{
    b.refs[dst][at] = tri;
    if (c.clip) kd_ref_box_store(b, dst, at, box);
}

/* One round's W child boxes (the block's refs, already clipped to the
 * child cells; empty for a child without refs), reduced over the block into
 * the chunk's 6W accumulators kid[] in shared memory (order-preserving
 * ints): [D] one redux.sync per value and warp (sm_80+; shuffles before)
 * and a shared atomic per value and warp, else a shared-memory tree per
 * value. kd_kid_flush then makes the chunk's 6W global atomics ([C] fused
 * into the sort). */
template <bool SHFL, int W>
__device__ void kd_kid_boxes(const RtAabb kb[W], float *sh /* >= KD_CHUNK */, int *kid /* 6W */)
{
    float v[6 * W];
#pragma unroll
    for (int k = 0; k < W; k++) {
        v[6 * k + 0] = kb[k].lo.x, v[6 * k + 1] = kb[k].lo.y, v[6 * k + 2] = kb[k].lo.z;
        v[6 * k + 3] = kb[k].hi.x, v[6 * k + 4] = kb[k].hi.y, v[6 * k + 5] = kb[k].hi.z;
    }
    if (SHFL) {
        /* a shuffle tree is 5 shuffles and 5 min/max per value: 13 % of the
         * large stage's instructions (H100 ncu) */
        int iv[6 * W];
#pragma unroll
        for (int k = 0; k < 6 * W; k++) {
#if __CUDA_ARCH__ >= 800
            const int x = rt_f2ord(v[k]);
            iv[k] = (k % 6) < 3 ? __reduce_min_sync(0xffffffffu, x) : __reduce_max_sync(0xffffffffu, x);
#else
            for (int o = 16; o > 0; o >>= 1) {
                const float x = __shfl_down_sync(0xffffffffu, v[k], o);
                v[k] = (k % 6) < 3 ? fminf(v[k], x) : fmaxf(v[k], x);
            }
            iv[k] = rt_f2ord(v[k]);
#endif
        }
        if ((threadIdx.x & 31) == 0)
#pragma unroll
            for (int k = 0; k < 6 * W; k++) {
                if ((k % 6) < 3) atomicMin(&kid[k], iv[k]);
                else atomicMax(&kid[k], iv[k]);
            }
    } else {
#pragma unroll
        for (int k = 0; k < 6 * W; k++) {
            v[k] = (k % 6) < 3 ? kd_block_reduce<false>(v[k], KdMin(), sh) : kd_block_reduce<false>(v[k], KdMax(), sh);
            if (threadIdx.x == 0) kid[k] = (k % 6) < 3 ? min(kid[k], rt_f2ord(v[k])) : max(kid[k], rt_f2ord(v[k]));
        }
    }
}

/* The chunk's child boxes (kd_kid_boxes) into the node: 6W atomics. */
template <int W>
__device__ void kd_kid_flush(KdLargeNode *nd, const int *kid /* 6W */)
{
    __syncthreads();
    if (threadIdx.x < 6 * W) {
        const int k = threadIdx.x, r = kid[k];
        if (isfinite(rt_ord2f(r))) {
            if ((k % 6) < 3) atomicMin(&nd->kid_box[k / 6][k % 6], r);
            else atomicMax(&nd->kid_box[k / 6][k % 6], r);
        }
    }
}

/* Implementation II (Chang [A]) over one chunk (one block): per-block scan
 * of the W flag sets ([B]: ballot/popc/shfl), then one atomicAdd per child
 * and block fetches the chunk's offsets in the children (threads 0..W-1 at
 * once). KIDBOX: also the children's boxes ([C] fused). Then the block
 * counts itself done on the node and returns true when it was the node's
 * last chunk (the caller routes the node); the fences make every block's
 * writes visible to it. */
template <bool BALLOT, bool SHFL, bool KIDBOX, int W>
__device__ bool kd_sort_chunk(const KdBufs &b, const KdConf &c, int level, uint2 ch /* its descriptor */,
                              uint32_t *sh, float *shf /* KD_CHUNK + 6W */, uint32_t *off /* W + 1 */)
{
    const int src = kd_list(b, level);
    KdLargeNode *nd = &b.active[src][ch.x];
    const uint32_t end = min(nd->count, ch.y + c.chunk_refs);
    int *kid = (int *)(shf + KD_CHUNK); /* the chunk's child boxes (kd_kid_boxes) */
    if (KIDBOX && threadIdx.x < 6 * W) kid[threadIdx.x] = rt_f2ord(threadIdx.x % 6 < 3 ? INFINITY : -INFINITY);
    bool ok = true;
    /* the chunk in rounds of KD_CHUNK refs (one per thread), each with its
     * own scan and cursor atomics (the bound is the same for the block) */
    for (uint32_t at = ch.y; at < end; at += KD_CHUNK) {
        const uint32_t i = at + threadIdx.x;
        uint32_t tri = 0, f = 0;
        RtAabb box[W];
        if (i < end) {
            tri = b.refs[src][nd->first + i];
            f = kd_sort_ref<W>(b, c, nd, src, nd->first + i, tri, box);
        }
        uint32_t fk[W], x[W], t[W];
#pragma unroll
        for (int k = 0; k < W; k++) fk[k] = f >> k & 1u;
        kd_block_scan<BALLOT, W>(fk, x, t, sh); /* ends with a barrier: off[] is free */
#pragma unroll
        for (int k = 0; k < W; k++)
            if (threadIdx.x == (unsigned)k) off[k] = t[k] ? atomicAdd(&nd->kid_cursor[k], t[k]) : 0;
        __syncthreads();
        ok = nd->kid_base[0] != UINT32_MAX; /* else the ref list overflowed: the build is redone */
#pragma unroll
        for (int k = 0; k < W; k++)
            if (ok && fk[k]) kd_put_ref(b, c, kd_list(b, level + 1), nd->kid_base[k] + off[k] + x[k], tri, box[k]);
        if (KIDBOX && ok) {
            RtAabb kb[W];
#pragma unroll
            for (int k = 0; k < W; k++) kb[k] = fk[k] ? kd_box_clip(box[k], kd_kid_cell<W>(nd, k)) : aabb_empty();
            kd_kid_boxes<SHFL, W>(kb, shf, kid);
        }
    }
    if (KIDBOX && ok) kd_kid_flush<W>(nd, kid);
    __syncthreads();
    /* A node's only chunk: its block routes it and reads nothing but what it
     * wrote itself (refs; cursors and boxes by atomics), which the barrier
     * orders. Deep levels are mostly such nodes. */
    if (nd->chunk_count == 1) return true;
    if (threadIdx.x == 0) {
        /* release: the barrier orders the block's refs and atomics before
         * this fence (cumulative, as in cooperative_groups' grid barrier);
         * one fence per block, not per warp */
        rt_fence_release();
        off[W] = atomicAdd(&nd->done, 1u) + 1 == nd->chunk_count;
        if (off[W]) rt_fence_acquire(); /* acquire: the other blocks' writes before the routing reads */
    }
    __syncthreads();
    bool last = off[W] != 0;
    __syncthreads();
    return last;
}

/* ==== step 4: route the children ========================================= */

/* Progress guard (ours; Zhou has none): when the median split of nd only
 * duplicated refs (its local SAH, the children holding kn[k] refs, is no
 * better than a leaf: clumps of overlapping triangles), splitting on would
 * multiply the refs level after level. The children then go to the small
 * stage, which splits them by SAH (<= 64 refs) or makes them leaves. With 4
 * ways the two halves' traversal steps count too. */
template <int W>
__device__ __forceinline__ bool kd_split_stuck(const KdConf &c, const KdLargeNode *nd, const uint32_t *kn, int nkids)
{
    if (nd->axis < 0) return false;
    const float area = aabb_area(nd->cell);
    float cost = 0.0f, walk = 0.0f;
    for (int k = 0; k < nkids; k++) cost += aabb_area(kd_kid_cell<W>(nd, k)) * (float)kn[k];
    if (W == 4 && nkids == 4) /* the halves are interior nodes too */
        for (int h = 0; h < 2; h++) {
            RtAabb hc = nd->cell;
            if (h == 0) v3_set(&hc.hi, nd->axis, nd->split);
            else v3_set(&hc.lo, nd->axis, nd->split);
            walk += aabb_area(hc);
        }
    return area > 0.0f && c.c_trav * (1.0f + walk / area) + c.c_isect * cost / area >= c.c_isect * (float)nd->count;
}

/* Ref `at` of level + 1's list (written by other blocks: read from L2) and
 * its box. */
__device__ __forceinline__ RtAabb kd_route_ref(const KdBufs &b, const KdConf &c, int level, uint32_t at,
                                               uint32_t *tri)
{
    const int lst = kd_list(b, level + 1);
    *tri = __ldcg(&b.refs[lst][at]);
    if (!c.clip) return kd_ref_aabb(b, c, lst, at, *tri);
    return kd_ref_box_load<true>(b, lst, at);
}

/* One warp routes node nd of `level`: the children's counts (Impl. I: from
 * the scan; Impl. II: the cursors); children at or below the threshold (or
 * at the depth limit, or of a stopped node) become small roots and their refs
 * are copied to the small list; the others become next level's active nodes. SPLIT ([C] in the persistent stage): a large child gets the box the
 * sort accumulated and is split here, so the next level starts sorting.
 * Reads what other blocks wrote with __ldcg (L2, never a stale L1 line). */
template <bool IMPL1, bool SPLIT, int W>
__device__ void kd_route_node(const KdBufs &b, const KdConf &c, KdLargeNode *nd, int level, uint32_t refs,
                              uint32_t lane, KdLargeNode *scratch /* shared, this warp's */, int only_kid = -1)
{
    const int src = kd_list(b, level);
    KdCounters *ctr = b.ctr;
    if (nd->kid_base[0] == UINT32_MAX) return;
    const int nkids = nd->axis >= 0 ? (W == 4 ? nd->ways : 2) : 1;
    uint32_t kn[KD_WAYS_MAX] = {0, 0, 0, 0};
    for (int k = 0; k < nkids; k++) {
        if (IMPL1) { /* 2 ways (kd_conf) */
            uint32_t o = k ? refs : 0;
            kn[k] = b.scan[o + nd->first + nd->count] - b.scan[o + nd->first];
        } else {
            kn[k] = __ldcg(&nd->kid_cursor[k]);
        }
    }
    const bool stuck = kd_split_stuck<W>(c, nd, kn, nkids);
    const uint32_t step = nd->axis >= 0 ? (nkids == 4 ? 2u : 1u) : 0u;
    for (int k = 0; k < nkids; k++) {
        if (only_kid >= 0 && k != only_kid) continue;
        uint32_t n = kn[k];
        const RtAabb cell = kd_kid_cell<W>(nd, k);
        const uint32_t node = nd->axis >= 0 ? nd->kids + k : nd->node, depth = nd->depth + step;
        bool small = nd->axis < 0 || stuck || n <= c.small_threshold || (int)depth + 1 >= c.max_depth ||
                     level + 2 >= KD_MAX_LEVELS;
        uint32_t *lovf = &ctr->level_ovf[level + 1];
        if (small) {
            uint32_t slot = 0, first = 0;
            if (lane == 0) { /* both atomics in flight at once, then the checks */
                slot = atomicAdd(&ctr->small_roots, 1u);
                first = atomicAdd(&ctr->small_refs, n);
                if (!kd_fits(b, slot, 1, b.sroot_cap, KD_OVF_SROOTS, lovf)) slot = UINT32_MAX;
                if (!kd_fits(b, first, n, b.sref_cap, KD_OVF_SREFS, lovf)) first = UINT32_MAX;
            }
            slot = __shfl_sync(0xffffffffu, slot, 0);
            first = __shfl_sync(0xffffffffu, first, 0);
            if (slot == UINT32_MAX || first == UINT32_MAX) continue;
            for (uint32_t j = lane; j < n; j += 32) {
                uint32_t tri;
                const RtAabb rb = kd_route_ref(b, c, level, nd->kid_base[k] + j, &tri);
                b.small_idx[first + j] = tri;
                b.small_box[first + j] = kd_box_clip(rb, cell);
            }
            if (lane == 0) {
                KdSmallRoot r;
                r.cell = cell;
                r.node = node;
                r.first = first;
                r.count = n;
                r.depth = depth;
                b.sroots[slot] = r;
                kd_root_list(b, slot, n);
            }
        } else {
            uint32_t cc = (n + c.chunk_refs - 1) / c.chunk_refs, slot = 0, cf = 0;
            /* the new node is built in this warp's shared slot, then the
             * whole warp copies it out (a per-thread struct went through
             * local memory and out one thread's stores) */
            uint32_t *w = (uint32_t *)scratch;
            const uint32_t words = sizeof(KdLargeNode) / 4;
            for (uint32_t j = lane; j < words; j += 32) w[j] = 0;
            __syncwarp();
            if (lane == 0) {
                /* the node's slot and chunks, then its split: their atomics
                 * in flight together (one L2 round trip on the level's
                 * critical path, not two) */
                slot = atomicAdd(&ctr->level_active[level + 1], 1u);
                cf = atomicAdd(&ctr->level_chunks[level + 1], cc);
                atomicAdd(&ctr->level_pending[level + 1], cc); /* before this node's chunk is done */
                KdLargeNode &r = *scratch;
                r.cell = cell;
                r.node = node;
                r.first = nd->kid_base[k];
                r.count = n;
                r.depth = depth;
                r.chunk_count = cc;
                kd_box_init(r.box);
                if (SPLIT) {
                    for (int q = 0; q < 6; q++) r.box[q] = __ldcg(&nd->kid_box[k][q]);
                    kd_split_node<W>(b, c, &r, level + 1, lovf);
                }
                r.chunk_first = cf;
                if (!kd_fits(b, slot, 1, b.active_cap, KD_OVF_ACTIVE, lovf)) slot = UINT32_MAX;
                if (!kd_fits(b, cf, cc, b.chunk_cap, KD_OVF_CHUNKS, lovf)) cf = UINT32_MAX;
            }
            /* lane 0's node in shared memory before the warp reads it: a
             * shuffle does not order memory (racecheck) */
            __syncwarp();
            slot = __shfl_sync(0xffffffffu, slot, 0);
            cf = __shfl_sync(0xffffffffu, cf, 0);
            if (slot == UINT32_MAX || cf == UINT32_MAX) continue;
            uint32_t *dst = (uint32_t *)&b.active[kd_list(b, level + 1)][slot];
            for (uint32_t j = lane; j < words; j += 32) dst[j] = w[j];
            /* publish the chunks after the node (release, cumulative over
             * the warp's writes): the persistent stage's blocks start a
             * chunk as soon as its descriptor is set */
            __syncwarp();
            rt_fence_release();
            for (uint32_t j = lane; j < cc; j += 32) b.chunks[kd_list(b, level + 1)][cf + j] = make_uint2(slot, j * c.chunk_refs);
        }
    }
}

/* A persistent large-stage block's shared memory (Implementation II and the dataflow). */
template <int W>
struct KdLargeShared {
    uint32_t sh[W * KD_CHUNK];   /* the block scans (kd_block_scan) */
    float shf[KD_CHUNK + 6 * W]; /* reductions; after KD_CHUNK the chunk's child boxes (kd_sort_chunk) */
    uint32_t off[W + 1];         /* the chunk's offsets in the children; "the node's last chunk" */
    KdLargeNode route[W];        /* each routing warp's new node (kd_route_node) */
    uint32_t work[4];            /* the next chunk (persistent: two slots; dataflow: chunk, level,
                                    its descriptor) */
};

__device__ __forceinline__ unsigned long long kd_globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}


/* A persistent large-stage kernel k (Implementation II or the dataflow) as
 * one cooperative launch: a grid of `want` blocks per multiprocessor (0 =
 * KD_LARGE_BLOCKS), at most what the occupancy keeps resident. */
inline RtStatus kd_large_coop_launch(RtLaunchLog *log, void (*k)(KdBufs, KdConf), const KdBufs &b, const KdConf &c,
                                     int want, RtError *err)
{
    int per_sm = 0;
    CUDA_CHECK(err, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, KD_CHUNK, 0));
    if (per_sm < 1) return rt_fail(err, RT_ERR_CUDA, "KD: the persistent large-stage kernel does not fit on a multiprocessor");
    /* a cooperative grid must be resident at once: at most the occupancy */
    if (want <= 0) want = KD_LARGE_BLOCKS;
    uint32_t blocks = (uint32_t)(per_sm < want ? per_sm : want) * (uint32_t)c.sms;
    return rt_launch_coop(log, "kd_large_persistent", dim3(blocks), dim3(KD_CHUNK), (size_t)0, k, err, KdBufs(b),
                          KdConf(c));
}

/* The dataflow schedule (kd_large_dataflow.cu), which kd_large_persistent
 * hands the build to when KdConf.dataflow is set. */
RtStatus kd_large_dataflow_stage(RtLaunchLog *log, const KdBufs &b, const KdConf &c, const RtKdGpuParams &p,
                                 RtError *err);

#endif
