/* kd_large.cu — the large-node stage of Zhou et al. 2008 with Chang et al.'s
 * optimisations as switches. Per level, over the active (large) nodes:
 *   1. node boxes: per-chunk reduction of the refs' AABBs clipped to the
 *      cell ([D] shuffles or shared memory), then per node 6 atomics per
 *      chunk ([C]) or a segmented reduction over the node's chunks;
 *   2. split: empty-space cuts above C_e, then the spatial median of the
 *      longest axis; each child gets a region of `count` refs in the next list;
 *   3. triangle sorting: Implementation II (one kernel, per-block scan with
 *      [B] ballot/popc/shfl or shared memory, two atomicAdd per block: [A])
 *      or Implementation I (bit flags, a CUB scan, a scatter);
 *   4. routing: children at or below the small threshold become small roots
 *      (their refs copied to the small list), the others the next level's
 *      active nodes with their chunks.
 * One kernel per step; the variants are template flags of the same kernel. */
#include <cub/device/device_scan.cuh>

#include "kd_gpu_internal.cuh"

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
    __shared__ float sh[KD_CHUNK];
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
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
    /* warp-aggregated compaction of the valid ids into level 0's ref list */
    unsigned m = __ballot_sync(0xffffffffu, valid);
    unsigned lane = threadIdx.x & 31;
    uint32_t base = 0;
    if (lane == 0 && m) base = atomicAdd(&b.ctr->valid, (uint32_t)__popc(m));
    base = __shfl_sync(0xffffffffu, base, 0);
    if (valid) {
        uint32_t pos = base + __popc(m & ((1u << lane) - 1u));
        b.refs[0][pos] = i;
        if (c.clip) {
            b.ref_lo[0][pos] = b.tri_lo[i];
            b.ref_hi[0][pos] = b.tri_hi[i];
        }
    }
    float lo[3] = {box.lo.x, box.lo.y, box.lo.z}, hi[3] = {box.hi.x, box.hi.y, box.hi.z};
    for (int a = 0; a < 3; a++) {
        float mn = kd_block_reduce<true>(lo[a], KdMin(), sh);
        float mx = kd_block_reduce<true>(hi[a], KdMax(), sh);
        if (threadIdx.x == 0 && mn <= mx) {
            atomicMin(&b.ctr->bounds[a], kd_f2i(mn));
            atomicMax(&b.ctr->bounds[3 + a], kd_f2i(mx));
        }
    }
}

__device__ __forceinline__ void kd_box_init(int box[6])
{
    for (int a = 0; a < 3; a++) {
        box[a] = kd_f2i(INFINITY);
        box[3 + a] = kd_f2i(-INFINITY);
    }
}

/* One block: the root is an active large node (with its chunks) or, when it
 * is already small, the only small root. */
__global__ void kd_root_kernel(KdBufs b, KdConf c)
{
    KdCounters *ctr = b.ctr;
    uint32_t n = ctr->valid;
    RtAabb cell = n ? kd_box_decode(ctr->bounds) : aabb_empty();
    if (n > c.small_threshold && c.max_depth > 1) {
        uint32_t cc = (n + KD_CHUNK - 1) / KD_CHUNK;
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
            b.active[0][0] = r;
            ctr->level_active[0] = 1;
            ctr->level_chunks[0] = cc;
            ctr->level_refs[0] = n;
            ctr->nodes = 1;
        }
        for (uint32_t k = threadIdx.x; k < cc; k += blockDim.x) b.chunks[0][k] = make_uint2(0, k * KD_CHUNK);
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
    float4 lo = c.clip ? b.ref_lo[list][pos] : b.tri_lo[tri];
    float4 hi = c.clip ? b.ref_hi[list][pos] : b.tri_hi[tri];
    RtAabb r;
    r.lo = v3(lo.x, lo.y, lo.z);
    r.hi = v3(hi.x, hi.y, hi.z);
    return r;
}

/* Bounds of the part of triangle tri inside the closed box cell
 * (Sutherland-Hodgman in double, rounded outward to float, clamped to the
 * cell), or an empty box when the triangle misses the cell. */
__device__ RtAabb kd_tri_clip(const KdBufs &b, uint32_t tri, RtAabb cell)
{
    double p[9][3], q[9][3];
    int n = 3;
    for (int k = 0; k < 3; k++) {
        float4 v = b.verts[3 * (size_t)tri + k];
        p[k][0] = v.x;
        p[k][1] = v.y;
        p[k][2] = v.z;
    }
    for (int a = 0; a < 3 && n > 0; a++) {
        for (int side = 0; side < 2 && n > 0; side++) {
            double bound = side ? v3_get(cell.hi, a) : v3_get(cell.lo, a);
            int m = 0;
            for (int i = 0; i < n; i++) {
                const double *P = p[i], *Q = p[i + 1 == n ? 0 : i + 1];
                double dp = side ? bound - P[a] : P[a] - bound, dq = side ? bound - Q[a] : Q[a] - bound;
                if (dp >= 0.0 && m < 9) {
                    q[m][0] = P[0], q[m][1] = P[1], q[m][2] = P[2];
                    m++;
                }
                if ((dp >= 0.0) != (dq >= 0.0) && m < 9) {
                    double t = dp / (dp - dq);
                    for (int k = 0; k < 3; k++) q[m][k] = P[k] + t * (Q[k] - P[k]);
                    q[m][a] = bound;
                    m++;
                }
            }
            n = m;
            for (int i = 0; i < n; i++)
                for (int k = 0; k < 3; k++) p[i][k] = q[i][k];
        }
    }
    if (n == 0) return aabb_empty();
    double lo[3] = {p[0][0], p[0][1], p[0][2]}, hi[3] = {p[0][0], p[0][1], p[0][2]};
    for (int i = 1; i < n; i++)
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], p[i][k]);
            hi[k] = fmax(hi[k], p[i][k]);
        }
    RtAabb r;
    r.lo = v3(__double2float_rd(lo[0]), __double2float_rd(lo[1]), __double2float_rd(lo[2]));
    r.hi = v3(__double2float_ru(hi[0]), __double2float_ru(hi[1]), __double2float_ru(hi[2]));
    return kd_box_clip(r, cell);
}

template <bool SHFL, bool ATOMIC>
__global__ void kd_large_bbox_kernel(KdBufs b, KdConf c, int level)
{
    __shared__ float sh[KD_CHUNK];
    const int src = level & 1;
    uint2 ch = b.chunks[src][blockIdx.x];
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
        b.chunk_box[blockIdx.x] = r;
    }
}

/* Zhou's original: a segmented reduction of the chunk boxes, one block per
 * node (a node's chunks are contiguous). */
template <bool SHFL>
__global__ void kd_large_segreduce_kernel(KdBufs b, int level)
{
    __shared__ float sh[KD_CHUNK];
    KdLargeNode *nd = &b.active[level & 1][blockIdx.x];
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

/* ==== step 2: empty-space cuts and the spatial median split ============== */

__global__ void kd_large_split_kernel(KdBufs b, KdConf c, int level, uint32_t active)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= active) return;
    KdLargeNode *nd = &b.active[level & 1][i];
    KdCounters *ctr = b.ctr;
    RtAabb cell = nd->cell;
    RtAabb tight = kd_box_clip(kd_box_decode(nd->box), cell);
    uint32_t node = nd->node, depth = nd->depth;
    int axis = -1;
    float split = 0.0f;
    uint32_t kids = 0;
    if ((int)depth + 1 < c.max_depth && !aabb_is_empty(tight)) {
        /* Zhou: cut off empty space on a side when it exceeds C_e of the
         * extent; each cut is an interior node with an empty leaf child. */
        for (int a = 0; a < 3; a++) {
            for (int side = 0; side < 2; side++) {
                if ((int)depth + 2 >= c.max_depth) break;
                float lo = v3_get(cell.lo, a), hi = v3_get(cell.hi, a);
                float ext = hi - lo;
                float gap = side == 0 ? v3_get(tight.lo, a) - lo : hi - v3_get(tight.hi, a);
                if (!(ext > 0.0f) || !(gap > c.empty_cut * ext)) continue;
                float plane = side == 0 ? v3_get(tight.lo, a) : v3_get(tight.hi, a);
                uint32_t pair = kd_alloc(&ctr->nodes, 2, b.node_cap, &ctr->overflow, KD_OVF_NODES);
                uint32_t leaf = kd_alloc(&ctr->leaves, 1, b.leaf_cap, &ctr->overflow, KD_OVF_LEAVES);
                if (pair == UINT32_MAX || leaf == UINT32_MAX) continue;
                b.nodes[node] = kd_make_interior(a, plane, pair);
                b.nodes[pair + (side == 0 ? 0 : 1)] = kd_make_leaf(leaf, 0);
                RtKdLeaf lf = {0, 0};
                b.leaves[leaf] = lf;
                b.leaf_boxes[leaf] = aabb_empty();
                node = pair + (side == 0 ? 1 : 0);
                if (side == 0) v3_set(&cell.lo, a, plane);
                else v3_set(&cell.hi, a, plane);
                depth++;
            }
        }
        /* spatial median of the longest axis of the (cut) cell */
        RtVec3 d = v3_sub(cell.hi, cell.lo);
        int a = d.x >= d.y && d.x >= d.z ? 0 : (d.y >= d.z ? 1 : 2);
        float lo = v3_get(cell.lo, a), hi = v3_get(cell.hi, a);
        float s = 0.5f * (lo + hi);
        if ((int)depth + 1 < c.max_depth && s > lo && s < hi) {
            kids = kd_alloc(&ctr->nodes, 2, b.node_cap, &ctr->overflow, KD_OVF_NODES);
            if (kids != UINT32_MAX) {
                axis = a;
                split = s;
                b.nodes[node] = kd_make_interior(a, s, kids);
            }
        }
    }
    /* Each child may receive every ref of the parent (straddlers go both
     * ways), so reserve count per child; a stopped node sends all its refs
     * to child 0, which is the node itself. */
    uint32_t n = nd->count, want = axis >= 0 ? 2 * n : n;
    uint32_t base = kd_alloc(&ctr->level_refs[level + 1], want, b.ref_cap, &ctr->overflow, KD_OVF_REFS);
    nd->cell = cell;
    nd->node = node;
    nd->depth = depth;
    nd->axis = axis;
    nd->split = split;
    nd->kids = kids;
    nd->kid_base[0] = base;
    nd->kid_base[1] = base == UINT32_MAX ? UINT32_MAX : base + n;
    nd->kid_cursor[0] = nd->kid_cursor[1] = 0;
}

/* ==== step 3: triangle sorting =========================================== */

/* Which children ref (pos, tri) of node nd goes to, and with clipping the
 * boxes it takes there. Box inclusion: the ref's box against the plane.
 * Clipping: a straddler is clipped to each child's cell and dropped where
 * the triangle itself misses it (never from both: a ref is never lost). */
__device__ __forceinline__ void kd_sort_ref(const KdBufs &b, const KdConf &c, const KdLargeNode *nd, int src,
                                            uint32_t pos, uint32_t tri, uint32_t *l, uint32_t *r, RtAabb box[2])
{
    box[0] = box[1] = kd_ref_aabb(b, c, src, pos, tri);
    if (nd->axis < 0) {
        *l = 1;
        *r = 0;
        return;
    }
    kd_classify(v3_get(box[0].lo, nd->axis), v3_get(box[0].hi, nd->axis), nd->split, l, r);
    if (!c.clip || !*l || !*r) return;
    RtAabb cl = nd->cell, cr = nd->cell;
    v3_set(&cl.hi, nd->axis, nd->split);
    v3_set(&cr.lo, nd->axis, nd->split);
    box[0] = kd_tri_clip(b, tri, cl);
    box[1] = kd_tri_clip(b, tri, cr);
    *l = !aabb_is_empty(box[0]);
    *r = !aabb_is_empty(box[1]);
    if (!*l && !*r) { /* rounding: keep the box-inclusion answer */
        *l = *r = 1;
        box[0] = kd_box_clip(kd_ref_aabb(b, c, src, pos, tri), cl);
        box[1] = kd_box_clip(kd_ref_aabb(b, c, src, pos, tri), cr);
    }
}

__device__ __forceinline__ void kd_put_ref(const KdBufs &b, const KdConf &c, int dst, uint32_t at, uint32_t tri,
                                           const RtAabb &box)
{
    b.refs[dst][at] = tri;
    if (c.clip) {
        b.ref_lo[dst][at] = make_float4(box.lo.x, box.lo.y, box.lo.z, 0.0f);
        b.ref_hi[dst][at] = make_float4(box.hi.x, box.hi.y, box.hi.z, 0.0f);
    }
}

/* Implementation II (Chang [A]): one kernel; per-block scan of the two flag
 * sets ([B]: ballot/popc/shfl), then two atomicAdd per block fetch the
 * chunk's offsets in the children. */
template <bool BALLOT>
__global__ void kd_large_sort_kernel(KdBufs b, KdConf c, int level)
{
    __shared__ uint32_t sh[2 * KD_CHUNK];
    __shared__ uint32_t off[2];
    const int src = level & 1;
    uint2 ch = b.chunks[src][blockIdx.x];
    KdLargeNode *nd = &b.active[src][ch.x];
    uint32_t i = ch.y + threadIdx.x, tri = 0, fl = 0, fr = 0;
    RtAabb box[2];
    if (i < nd->count) {
        tri = b.refs[src][nd->first + i];
        kd_sort_ref(b, c, nd, src, nd->first + i, tri, &fl, &fr, box);
    }
    uint32_t xl, xr, tl, tr;
    kd_block_scan2<BALLOT>(fl, fr, &xl, &xr, &tl, &tr, sh);
    if (threadIdx.x == 0) {
        off[0] = tl ? atomicAdd(&nd->kid_cursor[0], tl) : 0;
        off[1] = tr ? atomicAdd(&nd->kid_cursor[1], tr) : 0;
    }
    __syncthreads();
    if (nd->kid_base[0] == UINT32_MAX) return; /* ref list overflowed: the build is redone */
    if (fl) kd_put_ref(b, c, src ^ 1, nd->kid_base[0] + off[0] + xl, tri, box[0]);
    if (fr) kd_put_ref(b, c, src ^ 1, nd->kid_base[1] + off[1] + xr, tri, box[1]);
}

/* Implementation I: bit flags (left at p, right at refs + p) ... */
__global__ void kd_large_flags_kernel(KdBufs b, KdConf c, int level, uint32_t refs)
{
    const int src = level & 1;
    uint2 ch = b.chunks[src][blockIdx.x];
    const KdLargeNode *nd = &b.active[src][ch.x];
    uint32_t i = ch.y + threadIdx.x;
    if (i >= nd->count) return;
    uint32_t fl, fr, p = nd->first + i;
    RtAabb box[2];
    kd_sort_ref(b, c, nd, src, p, b.refs[src][p], &fl, &fr, box);
    b.flags[p] = fl;
    b.flags[refs + p] = fr;
}

/* ... an exclusive scan over all 2 refs + 1 flags (CUB) gives every ref its
 * rank in its child, order-preserving; the scatter writes it there. */
__global__ void kd_large_scatter_kernel(KdBufs b, KdConf c, int level, uint32_t refs)
{
    const int src = level & 1;
    uint2 ch = b.chunks[src][blockIdx.x];
    const KdLargeNode *nd = &b.active[src][ch.x];
    uint32_t i = ch.y + threadIdx.x;
    if (i >= nd->count || nd->kid_base[0] == UINT32_MAX) return;
    uint32_t p = nd->first + i, tri = b.refs[src][p], fl, fr;
    RtAabb box[2];
    if (c.clip) kd_sort_ref(b, c, nd, src, p, tri, &fl, &fr, box); /* the boxes again */
    if (b.flags[p]) kd_put_ref(b, c, src ^ 1, nd->kid_base[0] + b.scan[p] - b.scan[nd->first], tri, box[0]);
    if (b.flags[refs + p])
        kd_put_ref(b, c, src ^ 1, nd->kid_base[1] + b.scan[refs + p] - b.scan[refs + nd->first], tri, box[1]);
}

size_t kd_large_scan_bytes(uint32_t n)
{
    size_t bytes = 0;
    cub::DeviceScan::ExclusiveSum(NULL, bytes, (const uint32_t *)NULL, (uint32_t *)NULL, (int)n);
    return bytes;
}

/* ==== step 4: route the children ========================================= */

/* One warp per active node: children at or below the threshold (or at the
 * depth limit, or a stopped node) become small roots and their refs are
 * copied to the small list; the others become next level's active nodes. */
template <bool IMPL1>
__global__ void kd_large_route_kernel(KdBufs b, KdConf c, int level, uint32_t active, uint32_t refs)
{
    uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (w >= active) return;
    const int src = level & 1;
    KdLargeNode *nd = &b.active[src][w];
    KdCounters *ctr = b.ctr;
    if (nd->kid_base[0] == UINT32_MAX) return;
    int nkids = nd->axis >= 0 ? 2 : 1;
    uint32_t kn[2] = {0, 0};
    for (int k = 0; k < nkids; k++) {
        if (IMPL1) {
            uint32_t o = k ? refs : 0;
            kn[k] = b.scan[o + nd->first + nd->count] - b.scan[o + nd->first];
        } else {
            kn[k] = nd->kid_cursor[k];
        }
    }
    /* Progress guard (ours; Zhou has none): when the median split only
     * duplicated refs (its local SAH is no better than a leaf: clumps of
     * overlapping triangles), splitting on would multiply the refs level
     * after level. Both children then go to the small stage, which splits
     * them by SAH (<= 64 refs) or makes them leaves. */
    bool stuck = false;
    if (nd->axis >= 0) {
        RtVec3 d = v3_sub(nd->cell.hi, nd->cell.lo);
        float area = 2.0f * (d.x * d.y + d.y * d.z + d.z * d.x);
        float dl[3] = {d.x, d.y, d.z}, dr[3] = {d.x, d.y, d.z};
        dl[nd->axis] = nd->split - v3_get(nd->cell.lo, nd->axis);
        dr[nd->axis] = v3_get(nd->cell.hi, nd->axis) - nd->split;
        float al = 2.0f * (dl[0] * dl[1] + dl[1] * dl[2] + dl[2] * dl[0]);
        float ar = 2.0f * (dr[0] * dr[1] + dr[1] * dr[2] + dr[2] * dr[0]);
        stuck = area > 0.0f &&
                c.c_trav + c.c_isect * (al * (float)kn[0] + ar * (float)kn[1]) / area >= c.c_isect * (float)nd->count;
    }
    for (int k = 0; k < nkids; k++) {
        uint32_t n = kn[k];
        RtAabb cell = nd->cell;
        uint32_t node = nd->node, depth = nd->depth;
        if (nd->axis >= 0) {
            if (k == 0) v3_set(&cell.hi, nd->axis, nd->split);
            else v3_set(&cell.lo, nd->axis, nd->split);
            node = nd->kids + k;
            depth++;
        }
        const uint32_t *from = b.refs[src ^ 1] + nd->kid_base[k];
        bool small = nd->axis < 0 || stuck || n <= c.small_threshold || (int)depth + 1 >= c.max_depth;
        if (small) {
            uint32_t slot = 0, first = 0;
            if (lane == 0) {
                slot = kd_alloc(&ctr->small_roots, 1, b.sroot_cap, &ctr->overflow, KD_OVF_SROOTS);
                first = kd_alloc(&ctr->small_refs, n, b.sref_cap, &ctr->overflow, KD_OVF_SREFS);
            }
            slot = __shfl_sync(0xffffffffu, slot, 0);
            first = __shfl_sync(0xffffffffu, first, 0);
            if (slot == UINT32_MAX || first == UINT32_MAX) continue;
            for (uint32_t j = lane; j < n; j += 32) {
                uint32_t at = nd->kid_base[k] + j, tri = from[j];
                b.small_idx[first + j] = tri;
                b.small_box[first + j] = kd_box_clip(kd_ref_aabb(b, c, src ^ 1, at, tri), cell);
            }
            if (lane == 0) {
                KdSmallRoot r;
                r.cell = cell;
                r.node = node;
                r.first = first;
                r.count = n;
                r.depth = depth;
                b.sroots[slot] = r;
            }
        } else {
            uint32_t cc = (n + KD_CHUNK - 1) / KD_CHUNK, slot = 0, cf = 0;
            if (lane == 0) {
                slot = kd_alloc(&ctr->level_active[level + 1], 1, b.active_cap, &ctr->overflow, KD_OVF_ACTIVE);
                cf = kd_alloc(&ctr->level_chunks[level + 1], cc, b.chunk_cap, &ctr->overflow, KD_OVF_CHUNKS);
            }
            slot = __shfl_sync(0xffffffffu, slot, 0);
            cf = __shfl_sync(0xffffffffu, cf, 0);
            if (slot == UINT32_MAX || cf == UINT32_MAX) continue;
            for (uint32_t j = lane; j < cc; j += 32) b.chunks[src ^ 1][cf + j] = make_uint2(slot, j * KD_CHUNK);
            if (lane == 0) {
                KdLargeNode r;
                memset(&r, 0, sizeof r);
                r.cell = cell;
                r.node = node;
                r.first = nd->kid_base[k];
                r.count = n;
                r.depth = depth;
                r.chunk_first = cf;
                r.chunk_count = cc;
                kd_box_init(r.box);
                b.active[src ^ 1][slot] = r;
            }
        }
    }
}

/* ==== one level ========================================================== */

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
    /* 3. sort */
    if (p.chang_a) {
        st = p.chang_b ? rt_launch(log, "kd_large_sort", grid_chunks, blk, 0, kd_large_sort_kernel<true>, err, b, c, level)
                       : rt_launch(log, "kd_large_sort", grid_chunks, blk, 0, kd_large_sort_kernel<false>, err, b, c, level);
    } else {
        CUDA_CHECK(err, cudaMemsetAsync(b.flags, 0, (2 * (size_t)refs + 1) * sizeof(uint32_t), log->stream));
        st = rt_launch(log, "kd_large_flags", grid_chunks, blk, 0, kd_large_flags_kernel, err, b, c, level, refs);
        if (st != RT_OK) return st;
        size_t bytes = cub_tmp_bytes;
        CUDA_CHECK(err, cub::DeviceScan::ExclusiveSum(cub_tmp, bytes, b.flags, b.scan, (int)(2 * refs + 1), log->stream));
        log->entries[rt_launch_entry(log, "cub_exclusive_sum")].count++;
        log->launches++;
        st = rt_launch(log, "kd_large_scatter", grid_chunks, blk, 0, kd_large_scatter_kernel, err, b, c, level, refs);
    }
    if (st != RT_OK) return st;
    /* 4. route */
    const dim3 rgrid((active * 32 + 127) / 128);
    return p.chang_a ? rt_launch(log, "kd_large_route", rgrid, dim3(128), 0, kd_large_route_kernel<false>, err, b, c, level, active, refs)
                     : rt_launch(log, "kd_large_route", rgrid, dim3(128), 0, kd_large_route_kernel<true>, err, b, c, level, active, refs);
}
