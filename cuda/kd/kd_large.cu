/* kd_large.cu — the large-node stage of Zhou et al. 2008 with Chang et al.'s
 * optimisations as switches. Per level, over the active (large) nodes:
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
 * Implementation I (scans) runs one kernel per step and level, the host
 * reading the level's counters back. Implementation II runs every level in
 * ONE cooperative launch (kd_large_persistent): the loop bounds are device
 * counters, levels are separated by grid-wide barriers, and the last block
 * to sort a node's chunks routes the node (and, with [C], splits its
 * children, whose boxes the sort accumulated with atomics): one barrier per
 * level. With [A] and [C] the same steps also run as a dataflow
 * (kd_large_dataflow, the default below 2^22 triangles): no barrier, a
 * node's chunks start as soon as its parent routes it. The steps are device
 * functions shared by every schedule; the variants are template flags of
 * the same code. */
#include <cub/device/device_scan.cuh>

#include "kd/kd_gpu_internal.cuh"

/* ==== step 0: per-triangle AABBs, valid refs, scene bounds, root ========= */

__device__ __forceinline__ int kd_tri_degenerate(const KdBufs &b, uint32_t i)
{
    float4 v[3];
    for (int k = 0; k < 3; k++) {
        v[k] = b.verts[3 * (size_t)i + k];
        if (!isfinite(v[k].x) || !isfinite(v[k].y) || !isfinite(v[k].z)) return 1;
    }
    if (!b.woop) {
        RtFloat4 rows[3];
        return !rt_woop_rows(v3(v[0].x, v[0].y, v[0].z), v3(v[1].x, v[1].y, v[1].z),
                             v3(v[2].x, v[2].y, v[2].z), rows);
    }
    int nonzero = 0;
    for (int k = 0; k < 3; k++) {
        float4 w = b.woop[3 * (size_t)i + k];
        if (!isfinite(w.x) || !isfinite(w.y) || !isfinite(w.z) || !isfinite(w.w)) return 1;
        nonzero |= w.x != 0.0f || w.y != 0.0f || w.z != 0.0f || w.w != 0.0f;
    }
    return !nonzero;
}

__global__ void kd_tri_box_kernel(KdBufs b, KdConf c)
{
    __shared__ uint32_t s_warp[KD_CHUNK / 32]; /* valid refs before each warp */
    __shared__ int s_box[6][KD_CHUNK / 32];    /* each warp's bounds (order-preserving ints) */
    __shared__ uint32_t s_base;
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint32_t nw = blockDim.x >> 5;
    /* every chunk descriptor unpublished (the persistent stage waits for
     * them to be set; kd_root then writes level 0's) */
    for (size_t j = i; j < (size_t)KD_LISTS * b.chunk_cap; j += (size_t)gridDim.x * blockDim.x)
        b.chunks[j / b.chunk_cap][j % b.chunk_cap] = make_uint2(KD_CHUNK_FREE, KD_CHUNK_FREE);
    int valid = i < b.tri_count && !kd_tri_degenerate(b, i);
    RtAabb box = aabb_empty();
    if (valid) {
        for (int k = 0; k < 3; k++) {
            float4 v = b.verts[3 * (size_t)i + k];
            box = aabb_grow(box, v3(v.x, v.y, v.z));
        }
        b.tri_lo[i] = make_float4(box.lo.x, box.lo.y, box.lo.z, 0.0f);
        b.tri_hi[i] = make_float4(box.hi.x, box.hi.y, box.hi.z, 0.0f);
    }
    /* block-aggregated compaction of the valid ids into level 0's ref list,
     * and the block's bounds: one atomicAdd and 6 atomic min/max per block
     * (a warp-aggregated atomicAdd on the one counter, 8 per block, made
     * this kernel 4x slower: same-address atomics serialise in L2) */
    const unsigned m = __ballot_sync(0xffffffffu, valid);
    const float v[6] = {box.lo.x, box.lo.y, box.lo.z, box.hi.x, box.hi.y, box.hi.z};
    int r[6];
#pragma unroll
    for (int k = 0; k < 6; k++) r[k] = kd_warp_reduce_minmax(kd_f2i(v[k]), k >= 3);
    if (lane == 0) {
        s_warp[warp] = (uint32_t)__popc(m);
#pragma unroll
        for (int k = 0; k < 6; k++) s_box[k][warp] = r[k];
    }
    __syncthreads();
    if (warp == 0) {
        const uint32_t cnt = lane < nw ? s_warp[lane] : 0u;
        uint32_t incl = cnt;
        for (int o = 1; o < 32; o <<= 1) {
            const uint32_t y = __shfl_up_sync(0xffffffffu, incl, o);
            if (lane >= (uint32_t)o) incl += y;
        }
        const uint32_t total = __shfl_sync(0xffffffffu, incl, 31);
        if (lane == 0) s_base = total ? atomicAdd(&b.ctr->valid, total) : 0u;
        if (lane < nw) s_warp[lane] = incl - cnt;
        if (lane < 6) {
            int x = s_box[lane][0];
            for (uint32_t w = 1; w < nw; w++) x = lane >= 3 ? max(x, s_box[lane][w]) : min(x, s_box[lane][w]);
            if (total) {
                if (lane < 3) atomicMin(&b.ctr->bounds[lane], x);
                else atomicMax(&b.ctr->bounds[lane], x);
            }
        }
    }
    __syncthreads();
    if (valid) {
        const uint32_t pos = s_base + s_warp[warp] + __popc(m & ((1u << lane) - 1u));
        b.refs[0][pos] = i;
        if (c.clip) kd_ref_box_store(b, 0, pos, box);
    }
}

__device__ __forceinline__ void kd_box_init(int box[6])
{
    for (int a = 0; a < 3; a++) {
        box[a] = kd_f2i(INFINITY);
        box[3 + a] = kd_f2i(-INFINITY);
    }
}

template <int W>
__device__ void kd_split_node(const KdBufs &b, const KdConf &c, KdLargeNode *nd, int level, uint32_t *lovf);

/* One block: the root is an active large node (with its chunks) or, when it
 * is already small, the only small root. */
__global__ void kd_root_kernel(KdBufs b, KdConf c)
{
    KdCounters *ctr = b.ctr;
    uint32_t n = ctr->valid;
    RtAabb cell = n ? kd_box_decode(ctr->bounds) : aabb_empty();
    if (threadIdx.x == 0) *b.tree_bounds = cell;
    if (n > c.small_threshold && c.max_depth > 1) {
        uint32_t cc = (n + c.chunk_refs - 1) / c.chunk_refs;
        if (cc > b.chunk_cap) {
            if (threadIdx.x == 0) atomicOr(&ctr->overflow, KD_OVF_CHUNKS);
            return;
        }
        if (threadIdx.x == 0) {
            KdLargeNode r;
            memset(&r, 0, sizeof r);
            r.cell = cell;
            r.node = 0;
            r.first = 0;
            r.count = n;
            r.chunk_first = 0;
            r.chunk_count = cc;
            kd_box_init(r.box);
            ctr->nodes = 1;
            if (c.split_at_route) { /* the root's box is the scene's bounds */
                for (int k = 0; k < 6; k++) r.box[k] = ctr->bounds[k];
                kd_split_node<KD_WAYS_MAX>(b, c, &r, 0, &ctr->level_ovf[0]);
            }
            b.active[0][0] = r;
            ctr->level_active[0] = 1;
            ctr->level_chunks[0] = cc;
            ctr->level_pending[0] = cc;
            ctr->level_refs[0] = n;
        }
        for (uint32_t k = threadIdx.x; k < cc; k += blockDim.x) b.chunks[0][k] = make_uint2(0, k * c.chunk_refs);
        return;
    }
    if (n > b.sref_cap) {
        if (threadIdx.x == 0) atomicOr(&ctr->overflow, KD_OVF_SREFS);
        return;
    }
    if (threadIdx.x == 0) {
        KdSmallRoot r;
        r.cell = cell;
        r.node = 0;
        r.first = 0;
        r.count = n;
        r.depth = 0;
        b.sroots[0] = r;
        ctr->small_roots = 1;
        kd_root_list(b, 0, n);
        ctr->small_refs = n;
        ctr->nodes = 1;
    }
    for (uint32_t k = threadIdx.x; k < n; k += blockDim.x) {
        uint32_t tri = b.refs[0][k];
        b.small_idx[k] = tri;
        float4 lo = b.tri_lo[tri], hi = b.tri_hi[tri];
        RtAabb box;
        box.lo = v3(lo.x, lo.y, lo.z);
        box.hi = v3(hi.x, hi.y, hi.z);
        b.small_box[k] = box;
    }
}

RtStatus kd_large_init(RtLaunchLog *log, const KdBufs &b, const KdConf &c, RtError *err)
{
    RtStatus st = rt_launch(log, "kd_tri_box", dim3((b.tri_count + KD_CHUNK - 1) / KD_CHUNK),
                            dim3(KD_CHUNK), 0, kd_tri_box_kernel, err, b, c);
    if (st != RT_OK) return st;
    return rt_launch(log, "kd_root", dim3(1), dim3(KD_CHUNK), 0, kd_root_kernel, err, b, c);
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
    const int src = kd_list(level);
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
            atomicMin(&nd->box[k], kd_f2i(v[k]));
            atomicMax(&nd->box[3 + k], kd_f2i(v[3 + k]));
        }
    } else {
        RtAabb r;
        r.lo = v3(v[0], v[1], v[2]);
        r.hi = v3(v[3], v[4], v[5]);
        b.chunk_box[chunk] = r;
    }
}

template <bool SHFL, bool ATOMIC>
__global__ void kd_large_bbox_kernel(KdBufs b, KdConf c, int level)
{
    __shared__ float sh[KD_CHUNK];
    kd_bbox_chunk<SHFL, ATOMIC>(b, c, level, blockIdx.x, sh);
}

/* Zhou's original: a segmented reduction of the chunk boxes, one block per
 * node (a node's chunks are contiguous). */
template <bool SHFL>
__device__ void kd_segreduce_node(const KdBufs &b, int level, uint32_t node, float *sh)
{
    KdLargeNode *nd = &b.active[kd_list(level)][node];
    RtAabb acc = aabb_empty();
    for (uint32_t k = threadIdx.x; k < nd->chunk_count; k += blockDim.x)
        acc = aabb_union(acc, b.chunk_box[nd->chunk_first + k]);
    float v[6] = {acc.lo.x, acc.lo.y, acc.lo.z, acc.hi.x, acc.hi.y, acc.hi.z};
    for (int k = 0; k < 3; k++) {
        v[k] = kd_block_reduce<SHFL>(v[k], KdMin(), sh);
        v[3 + k] = kd_block_reduce<SHFL>(v[3 + k], KdMax(), sh);
    }
    if (threadIdx.x == 0)
        for (int k = 0; k < 6; k++) nd->box[k] = kd_f2i(v[k]);
}

template <bool SHFL>
__global__ void kd_large_segreduce_kernel(KdBufs b, int level)
{
    __shared__ float sh[KD_CHUNK];
    kd_segreduce_node<SHFL>(b, level, blockIdx.x, sh);
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

__global__ void kd_large_split_kernel(KdBufs b, KdConf c, int level, uint32_t active)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= active) return;
    kd_split_node<2>(b, c, &b.active[kd_list(level)][i], level, &b.ctr->level_ovf[level + 1]);
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
            const int x = kd_f2i(v[k]);
            iv[k] = (k % 6) < 3 ? __reduce_min_sync(0xffffffffu, x) : __reduce_max_sync(0xffffffffu, x);
#else
            for (int o = 16; o > 0; o >>= 1) {
                const float x = __shfl_down_sync(0xffffffffu, v[k], o);
                v[k] = (k % 6) < 3 ? fminf(v[k], x) : fmaxf(v[k], x);
            }
            iv[k] = kd_f2i(v[k]);
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
            if (threadIdx.x == 0) kid[k] = (k % 6) < 3 ? min(kid[k], kd_f2i(v[k])) : max(kid[k], kd_f2i(v[k]));
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
        if (isfinite(kd_i2f(r))) {
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
    const int src = kd_list(level);
    KdLargeNode *nd = &b.active[src][ch.x];
    const uint32_t end = min(nd->count, ch.y + c.chunk_refs);
    int *kid = (int *)(shf + KD_CHUNK); /* the chunk's child boxes (kd_kid_boxes) */
    if (KIDBOX && threadIdx.x < 6 * W) kid[threadIdx.x] = kd_f2i(threadIdx.x % 6 < 3 ? INFINITY : -INFINITY);
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
            if (ok && fk[k]) kd_put_ref(b, c, kd_list(level + 1), nd->kid_base[k] + off[k] + x[k], tri, box[k]);
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
         * one fence per block, not per warp (each fence invalidates the
         * SM's L1) */
        __threadfence();
        off[W] = atomicAdd(&nd->done, 1u) + 1 == nd->chunk_count;
        if (off[W]) __threadfence(); /* acquire: the other blocks' writes before the routing reads */
    }
    __syncthreads();
    bool last = off[W] != 0;
    __syncthreads();
    return last;
}

/* Implementation I: bit flags (left at p, right at refs + p) ... */
__global__ void kd_large_flags_kernel(KdBufs b, KdConf c, int level, uint32_t refs)
{
    const int src = kd_list(level);
    uint2 ch = b.chunks[src][blockIdx.x];
    const KdLargeNode *nd = &b.active[src][ch.x];
    uint32_t i = ch.y + threadIdx.x;
    if (i >= nd->count) return;
    const uint32_t p = nd->first + i;
    RtAabb box[2];
    const uint32_t f = kd_sort_ref<2>(b, c, nd, src, p, b.refs[src][p], box); /* 2 ways here (kd_conf) */
    b.flags[p] = f & 1u;
    b.flags[refs + p] = f >> 1;
}

/* ... an exclusive scan over all 2 refs + 1 flags (CUB) gives every ref its
 * rank in its child, order-preserving; the scatter writes it there. */
__global__ void kd_large_scatter_kernel(KdBufs b, KdConf c, int level, uint32_t refs)
{
    const int src = kd_list(level);
    uint2 ch = b.chunks[src][blockIdx.x];
    const KdLargeNode *nd = &b.active[src][ch.x];
    uint32_t i = ch.y + threadIdx.x;
    if (i >= nd->count || nd->kid_base[0] == UINT32_MAX) return;
    uint32_t p = nd->first + i, tri = b.refs[src][p];
    RtAabb box[2];
    if (c.clip) kd_sort_ref<2>(b, c, nd, src, p, tri, box); /* the boxes again */
    if (b.flags[p]) kd_put_ref(b, c, kd_list(level + 1), nd->kid_base[0] + b.scan[p] - b.scan[nd->first], tri, box[0]);
    if (b.flags[refs + p])
        kd_put_ref(b, c, kd_list(level + 1), nd->kid_base[1] + b.scan[refs + p] - b.scan[refs + nd->first], tri, box[1]);
}

size_t kd_large_scan_bytes(uint32_t n)
{
    size_t bytes = 0;
    cub::DeviceScan::ExclusiveSum(NULL, bytes, (const uint32_t *)NULL, (uint32_t *)NULL, (int)n);
    return bytes;
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
    const int lst = kd_list(level + 1);
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
    const int src = kd_list(level);
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
            uint32_t *dst = (uint32_t *)&b.active[kd_list(level + 1)][slot];
            for (uint32_t j = lane; j < words; j += 32) dst[j] = w[j];
            /* publish the chunks after the node (release, cumulative over
             * the warp's writes): the persistent stage's blocks start a
             * chunk as soon as its descriptor is set */
            __syncwarp();
            __threadfence();
            for (uint32_t j = lane; j < cc; j += 32) b.chunks[kd_list(level + 1)][cf + j] = make_uint2(slot, j * c.chunk_refs);
        }
    }
}

template <bool IMPL1>
__global__ void kd_large_route_kernel(KdBufs b, KdConf c, int level, uint32_t active, uint32_t refs)
{
    uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (w >= active) return;
    __shared__ KdLargeNode s_route[4];
    kd_route_node<IMPL1, false, 2>(b, c, &b.active[kd_list(level)][w], level, refs, lane, &s_route[threadIdx.x >> 5]);
}

/* ==== one level of Implementation I (host-driven: a launch per step) ===== */

RtStatus kd_large_level(RtLaunchLog *log, const KdBufs &b, const KdConf &c, const RtKdGpuParams &p,
                        int level, uint32_t active, uint32_t chunks, uint32_t refs, void *cub_tmp,
                        size_t cub_tmp_bytes, RtError *err)
{
    RtStatus st;
    const dim3 blk(KD_CHUNK), grid_chunks(chunks);
    /* 1. node boxes */
    if (p.chang_c) {
        st = p.chang_d ? rt_launch(log, "kd_large_bbox", grid_chunks, blk, 0, kd_large_bbox_kernel<true, true>, err, b, c, level)
                       : rt_launch(log, "kd_large_bbox", grid_chunks, blk, 0, kd_large_bbox_kernel<false, true>, err, b, c, level);
    } else {
        st = p.chang_d ? rt_launch(log, "kd_large_bbox", grid_chunks, blk, 0, kd_large_bbox_kernel<true, false>, err, b, c, level)
                       : rt_launch(log, "kd_large_bbox", grid_chunks, blk, 0, kd_large_bbox_kernel<false, false>, err, b, c, level);
        if (st == RT_OK)
            st = p.chang_d ? rt_launch(log, "kd_large_segreduce", dim3(active), blk, 0, kd_large_segreduce_kernel<true>, err, b, level)
                           : rt_launch(log, "kd_large_segreduce", dim3(active), blk, 0, kd_large_segreduce_kernel<false>, err, b, level);
    }
    if (st != RT_OK) return st;
    /* 2. split */
    st = rt_launch(log, "kd_large_split", dim3((active + 127) / 128), dim3(128), 0, kd_large_split_kernel, err, b, c, level, active);
    if (st != RT_OK) return st;
    /* 3. sort (Implementation I: flags, CUB's scan, scatter) */
    CUDA_CHECK(err, cudaMemsetAsync(b.flags, 0, (2 * (size_t)refs + 1) * sizeof(uint32_t), log->stream));
    st = rt_launch(log, "kd_large_flags", grid_chunks, blk, 0, kd_large_flags_kernel, err, b, c, level, refs);
    if (st != RT_OK) return st;
    size_t bytes = cub_tmp_bytes;
    CUDA_CHECK(err, cub::DeviceScan::ExclusiveSum(cub_tmp, bytes, b.flags, b.scan, (int)(2 * refs + 1), log->stream));
    log->entries[rt_launch_entry(log, "cub_exclusive_sum")].count++;
    log->launches++;
    st = rt_launch(log, "kd_large_scatter", grid_chunks, blk, 0, kd_large_scatter_kernel, err, b, c, level, refs);
    if (st != RT_OK) return st;
    /* 4. route */
    const dim3 rgrid((active * 32 + 127) / 128);
    return rt_launch(log, "kd_large_route", rgrid, dim3(128), 0, kd_large_route_kernel<true>, err, b, c, level, active, refs);
}

/* ==== the persistent schedule (Implementation II) ======================== */

/* A persistent large-stage block's shared memory (both schedules). */
template <int W>
struct KdLargeShared {
    uint32_t sh[W * KD_CHUNK];   /* the block scans (kd_block_scan) */
    float shf[KD_CHUNK + 6 * W]; /* reductions; after KD_CHUNK the chunk's child boxes (kd_sort_chunk) */
    uint32_t off[W + 1];         /* the chunk's offsets in the children; "the node's last chunk" */
    KdLargeNode route[W];        /* each routing warp's new node (kd_route_node) */
    uint32_t work[4];            /* the next chunk (persistent: two slots; dataflow: chunk, level,
                                    its descriptor) */
};

/* A barrier over the whole (co-resident, cooperative) grid. Blocks that
 * arrive early wait with __nanosleep: cooperative_groups' grid.sync spins
 * on an acquire load that invalidates the SM's L1 at every turn (4.8M turns
 * per Sponza build, 10 % of the stage's instructions, H100 ncu), under the
 * feet of the blocks still sorting on that SM. The closing fence is the
 * acquire for every thread of the block (they read only after the
 * __syncthreads that follows it). */
__device__ __forceinline__ void kd_grid_sync(KdCounters *ctr)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile uint32_t *gen = &ctr->bar_gen;
        const uint32_t g = *gen;
        __threadfence(); /* this block's writes before its arrival */
        if (atomicAdd(&ctr->bar_count, 1u) == gridDim.x - 1) {
            atomicExch(&ctr->bar_count, 0u);
            __threadfence();
            atomicAdd(&ctr->bar_gen, 1u);
        } else {
            unsigned ns = 32;
            while (*gen == g) {
                __nanosleep(ns);
                ns = ns < 256 ? 2 * ns : ns;
            }
        }
        __threadfence();
    }
    __syncthreads();
}

__device__ __forceinline__ unsigned long long kd_globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Thread 0, after a chunk of `lev` and, when it was the node's last, the
 * routing: one chunk of the level less pending. The block that takes a
 * level's count to 0 completes it (its chunks are sorted and its nodes
 * routed, so the next level's chunk count is final) and takes the next
 * level's "level before" token, which may complete that one too. Counts on
 * one word per level need no fence between them; a routing block fences
 * first, so the chunks it added to the next level count before its own is
 * done. */
__device__ void kd_chunk_done(const KdBufs &b, int lev, bool routed)
{
    volatile KdCounters *vc = b.ctr;
    if (routed) __threadfence();
    uint32_t left = atomicSub(&b.ctr->level_pending[lev], 1u) - 1u;
    while (left == 0 && lev + 1 < KD_MAX_LEVELS) {
        __threadfence(); /* release: what the level's blocks did before the flag */
        vc->level_complete[lev] = 1u;
        vc->level_ns[lev + 1] = kd_globaltimer();
        lev++;
        if (vc->level_chunks[lev] == 0) return; /* the stage ends here (final: the level before is complete) */
        left = atomicSub(&b.ctr->level_pending[lev], 1u) - 1u;
    }
}

/* The large stage as a dataflow (ours, `large_dataflow`, needs [A] and
 * [C]): no barrier between levels. A node's chunks are published by the
 * routing of its parent (descriptor after the node, kd_route_node) and any
 * block may take them at once, while the parent's level still runs: the
 * level-synchronous schedule spent 66 % of its warp samples at barriers
 * (H100 ncu), and every level cost ~10 us however few chunks it had.
 * Thread 0 of a block claims chunks from per-level queues, lowest level
 * first; a claim past the level's current chunk count waits until more
 * chunks are routed or the count is final (the level before complete),
 * when the claim lapses and the block moves one level on. A block moves to
 * level L + 1 only when level L - 1 is complete, so the list level L + 1
 * writes (level L - 1's, kd_list) is free: three lists, not two. The stage
 * ends at the first level with no chunks; an overflow stops every block
 * (no barrier to keep). */
template <bool BALLOT, bool SHFL, int W>
__device__ void kd_large_dataflow(const KdBufs &b, const KdConf &c, KdLargeShared<W> &s)
{
    uint32_t *s_work = s.work;
    volatile KdCounters *vc = b.ctr;
    int level = 0;               /* thread 0: the level it takes chunks from */
    uint32_t claim = UINT32_MAX; /* thread 0: a claim in it, not yet a chunk */
    if (blockIdx.x == 0 && threadIdx.x == 0) vc->level_ns[0] = kd_globaltimer();
    for (;;) {
        if (threadIdx.x == 0) {
            uint32_t got = KD_CHUNK_FREE;
            while (!vc->overflow && level + 1 < KD_MAX_LEVELS) {
                /* the claim before the reads: its round trip overlaps theirs
                 * (a claim the stage's end leaves unused is harmless) */
                if (claim == UINT32_MAX) claim = atomicAdd(&b.ctr->level_next[level], 1u);
                const bool final = level == 0 || vc->level_complete[level - 1];
                const uint32_t have = min(vc->level_chunks[level], b.chunk_cap);
                if (final && have == 0) break; /* the stage is done */
                if (claim < have) {
                    got = claim;
                    claim = UINT32_MAX;
                    break;
                }
                if (final) { /* every chunk of the level is taken */
                    claim = UINT32_MAX;
                    level++;
                    continue;
                }
                __nanosleep(128);
            }
            if (got != KD_CHUNK_FREE) { /* allocated; wait until it is written */
                /* one 8-byte word: the routing's make_uint2 store */
                volatile unsigned long long *d = (volatile unsigned long long *)&b.chunks[kd_list(level)][got];
                unsigned long long dv;
                while ((uint32_t)(dv = *d) == KD_CHUNK_FREE && !vc->overflow) __nanosleep(32);
                __threadfence(); /* acquire for the block (it reads after the barrier) */
                if (vc->overflow) got = KD_CHUNK_FREE;
                /* the descriptor to the block through shared memory: one
                 * L2 round trip less on the chunk's chain */
                s_work[2] = (uint32_t)dv;
                s_work[3] = (uint32_t)(dv >> 32);
            }
            s_work[0] = got;
            s_work[1] = (uint32_t)level;
        }
        __syncthreads();
        const uint32_t ch = s_work[0];
        const int lev = (int)s_work[1];
        if (ch == KD_CHUNK_FREE) return;
        const uint2 dsc = make_uint2(s_work[2], s_work[3]);
        const uint32_t ni = dsc.x;
        const bool last = kd_sort_chunk<BALLOT, SHFL, true, W>(b, c, lev, dsc, s.sh, s.shf, s.off);
        if (last) /* a warp per child (a block of fewer warps takes turns) */
            for (int k = (int)(threadIdx.x >> 5); k < W; k += KD_CHUNK / 32)
                kd_route_node<false, true, W>(b, c, &b.active[kd_list(lev)][ni], lev, 0, threadIdx.x & 31,
                                              &s.route[threadIdx.x >> 5], k);
        __syncthreads();
        if (threadIdx.x == 0) {
            /* unpublished again, for the level that reuses the list */
            b.chunks[kd_list(lev)][ch] = make_uint2(KD_CHUNK_FREE, KD_CHUNK_FREE);
            /* the next claim in flight with the chunk's count: one round
             * trip for both (taken when the block looks for work anyway,
             * unlike a claim taken while a chunk sorts, which measured
             * slower: docs/kd_gpu.md) */
            if (claim == UINT32_MAX) claim = atomicAdd(&b.ctr->level_next[level], 1u);
            kd_chunk_done(b, lev, last);
        }
    }
}

/* Every level of the large stage in one cooperative launch. Level L:
 *   [C] off: chunk boxes | barrier | per node: segmented reduction + split | barrier
 *   sort every chunk; the node's last chunk routes it (with [C]: splits the
 *   children on the spot, their boxes accumulated by the sort) | barrier
 * The bounds (active nodes, chunks) and the stop decision are read after a
 * barrier from words no block writes during the level, so every block takes
 * the same decision (a block leaving early would hang the barrier). */
/* 64 registers a thread, so the register file holds 1024 threads (256-
 * thread blocks: 80 registers and 3 blocks measured 12 % slower on Sponza
 * and 17 % on a 1M-triangle mesh despite the spills, 48 registers and 5
 * blocks 10 % slower). 4 ways carry twice the per-ref state: 3/4 of the
 * blocks with 80 registers measured 4-7 % faster there (H100). */
template <bool BALLOT, bool SHFL, bool ATOMIC, int W>
__global__ void __launch_bounds__(KD_CHUNK, W == 4 ? 3 * KD_LARGE_BLOCKS / 4 : KD_LARGE_BLOCKS) kd_large_persistent_kernel(KdBufs b, KdConf c)
{
    __shared__ KdLargeShared<W> s;
    uint32_t *sh = s.sh, *off = s.off, *s_next = s.work;
    float *shf = s.shf;
    KdLargeNode *s_route = s.route;
    volatile KdCounters *vc = b.ctr;
    for (int level = 0; level + 1 < KD_MAX_LEVELS; level++) {
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            unsigned long long t;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
            b.ctr->level_ns[level] = t;
        }
        if (vc->level_ovf[level]) return; /* an overflow before this level: the build is redone */
        uint32_t active = min(vc->level_active[level], b.active_cap);
        uint32_t chunks = min(vc->level_chunks[level], b.chunk_cap);
        if (active == 0) return;
        if (!ATOMIC) {
            for (uint32_t ch = blockIdx.x; ch < chunks; ch += gridDim.x) {
                kd_bbox_chunk<SHFL, false>(b, c, level, ch, shf);
                __syncthreads();
            }
            kd_grid_sync(b.ctr);
            for (uint32_t n = blockIdx.x; n < active; n += gridDim.x) {
                kd_segreduce_node<SHFL>(b, level, n, shf);
                if (threadIdx.x == 0) kd_split_node<2>(b, c, &b.active[kd_list(level)][n], level, &b.ctr->level_ovf[level + 1]);
                __syncthreads();
            }
            kd_grid_sync(b.ctr);
        }
        /* the first round's chunks by block index, later ones from a queue:
         * a block that routes a node (a chain of allocations) or sorts
         * straddlers takes fewer; the next index is fetched while this
         * chunk is sorted (two slots: thread 0 may run a chunk ahead) */
        uint32_t ch = blockIdx.x;
        for (int it = 0; ch < chunks; it++) {
            if (threadIdx.x == 0)
                s_next[it & 1] = chunks > gridDim.x ? gridDim.x + atomicAdd(&b.ctr->level_next[level], 1u) : UINT32_MAX;
            bool last = kd_sort_chunk<BALLOT, SHFL, ATOMIC, W>(b, c, level, b.chunks[kd_list(level)][ch], sh, shf, off);
            /* the node's children are routed by a warp each, at once:
             * each child's chain of allocations (and, with [C], its
             * split) is the critical path of the level */
            if (last)
                for (int k = (int)(threadIdx.x >> 5); k < W; k += KD_CHUNK / 32)
                    kd_route_node<false, ATOMIC, W>(b, c, &b.active[kd_list(level)][b.chunks[kd_list(level)][ch].x],
                                                    level, 0, threadIdx.x & 31, &s_route[threadIdx.x >> 5], k);
            __syncthreads();
            ch = s_next[it & 1];
        }
        kd_grid_sync(b.ctr);
    }
}

/* The dataflow schedule in its own kernel: the level loop's registers and
 * spills stay out of it (same launch bounds). */
template <bool BALLOT, bool SHFL, int W>
__global__ void __launch_bounds__(KD_CHUNK, W == 4 ? 3 * KD_LARGE_BLOCKS / 4 : KD_LARGE_BLOCKS) kd_large_dataflow_kernel(KdBufs b, KdConf c)
{
    __shared__ KdLargeShared<W> s;
    kd_large_dataflow<BALLOT, SHFL, W>(b, c, s);
}

template <bool BALLOT, bool SHFL, bool ATOMIC>
static RtStatus kd_persistent_launch(RtLaunchLog *log, const KdBufs &b, const KdConf &c, int want, RtError *err)
{
    /* 4 ways only where children are split as they are routed ([C]: their
     * boxes come from the sort); kd_conf sets c.ways accordingly */
    void (*k)(KdBufs, KdConf) = ATOMIC && c.ways == 4 ? kd_large_persistent_kernel<BALLOT, SHFL, ATOMIC, ATOMIC ? 4 : 2>
                                                      : kd_large_persistent_kernel<BALLOT, SHFL, ATOMIC, 2>;
    if (ATOMIC && c.dataflow) /* kd_conf: dataflow needs [C] (nodes split as they are routed) */
        k = c.ways == 4 ? kd_large_dataflow_kernel<BALLOT, SHFL, 4> : kd_large_dataflow_kernel<BALLOT, SHFL, 2>;
    int per_sm = 0;
    CUDA_CHECK(err, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, KD_CHUNK, 0));
    if (per_sm < 1) return rt_fail(err, RT_ERR_CUDA, "KD: the persistent large-stage kernel does not fit on a multiprocessor");
    /* a cooperative grid must be resident at once: at most the occupancy */
    if (want <= 0) want = KD_LARGE_BLOCKS;
    uint32_t blocks = (uint32_t)(per_sm < want ? per_sm : want) * (uint32_t)c.sms;
    return rt_launch_coop(log, "kd_large_persistent", dim3(blocks), dim3(KD_CHUNK), (size_t)0, k, err, KdBufs(b),
                          KdConf(c));
}

RtStatus kd_large_persistent(RtLaunchLog *log, const KdBufs &b, const KdConf &c, const RtKdGpuParams &p,
                             RtError *err)
{
    const int v = (p.chang_b ? 4 : 0) | (p.chang_d ? 2 : 0) | (p.chang_c ? 1 : 0);
    switch (v) {
    case 0: return kd_persistent_launch<false, false, false>(log, b, c, p.large_blocks_per_sm, err);
    case 1: return kd_persistent_launch<false, false, true>(log, b, c, p.large_blocks_per_sm, err);
    case 2: return kd_persistent_launch<false, true, false>(log, b, c, p.large_blocks_per_sm, err);
    case 3: return kd_persistent_launch<false, true, true>(log, b, c, p.large_blocks_per_sm, err);
    case 4: return kd_persistent_launch<true, false, false>(log, b, c, p.large_blocks_per_sm, err);
    case 5: return kd_persistent_launch<true, false, true>(log, b, c, p.large_blocks_per_sm, err);
    case 6: return kd_persistent_launch<true, true, false>(log, b, c, p.large_blocks_per_sm, err);
    default: return kd_persistent_launch<true, true, true>(log, b, c, p.large_blocks_per_sm, err);
    }
}
