/* kd_large.cu — step 0 of the large-node stage (Zhou et al. 2008, section
 * 4.2), common to its three schedules: every triangle's AABB, the valid
 * (non-degenerate) triangles compacted into level 0's ref list, the scene
 * bounds, and the root, an active large node (split at once where its
 * children are split as they are routed, Chang et al.'s [C]) or, for a
 * small scene, the only small root. The steps of a level are
 * kd_large_internal.cuh; the schedules that run them:
 *   kd_large_levels.cu      Implementation I (scans, a launch per step)
 *   kd_large_persistent.cu  Implementation II (one launch, grid barriers)
 *   kd_large_dataflow.cu    the same launch without barriers (ours). */
#include "kd/kd_large_internal.cuh"

/* ==== step 0: per-triangle AABBs, valid refs, scene bounds, root ========= */

/* The CPU oracle's test (kd_clip.h) on the device arrays, read as float4. */
__device__ __forceinline__ int kd_tri_degenerate(const KdBufs &b, uint32_t i)
{
    RtFloat4 v[3], w[3];
    for (int k = 0; k < 3; k++) {
        const float4 f = b.verts[3 * (size_t)i + k];
        v[k] = f4(f.x, f.y, f.z, f.w);
    }
    if (!b.woop) return rt_kd_tri_degenerate_v(v, NULL);
    for (int k = 0; k < 3; k++) {
        const float4 f = b.woop[3 * (size_t)i + k];
        w[k] = f4(f.x, f.y, f.z, f.w);
    }
    return rt_kd_tri_degenerate_v(v, w);
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
    for (size_t j = i; j < (size_t)b.lists * b.chunk_cap; j += (size_t)gridDim.x * blockDim.x)
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
    for (int k = 0; k < 6; k++) r[k] = kd_warp_reduce_minmax(rt_f2ord(v[k]), k >= 3);
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
