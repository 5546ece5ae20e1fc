/* kd_large_levels.cu — Implementation I of the large-node stage (Zhou et
 * al. 2008's schedule, Chang, Seo and Ihm's "Original"): every level is a
 * launch per step (node boxes, split, triangle flags, a CUB scan, scatter,
 * routing) and the host reads the level's counters back before the next,
 * since CUB's scan takes its size on the host. The steps are
 * kd_large_internal.cuh. */
#include <cub/device/device_scan.cuh>

#include "kd/kd_large_internal.cuh"

template <bool SHFL, bool ATOMIC>
__global__ void kd_large_bbox_kernel(KdBufs b, KdConf c, int level)
{
    __shared__ float sh[KD_CHUNK];
    kd_bbox_chunk<SHFL, ATOMIC>(b, c, level, blockIdx.x, sh);
}

template <bool SHFL>
__global__ void kd_large_segreduce_kernel(KdBufs b, int level)
{
    __shared__ float sh[KD_CHUNK];
    kd_segreduce_node<SHFL>(b, level, blockIdx.x, sh);
}

__global__ void kd_large_split_kernel(KdBufs b, KdConf c, int level, uint32_t active)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= active) return;
    kd_split_node<2>(b, c, &b.active[kd_list(b, level)][i], level, &b.ctr->level_ovf[level + 1]);
}

/* Implementation I: bit flags (left at p, right at refs + p) ... */
__global__ void kd_large_flags_kernel(KdBufs b, KdConf c, int level, uint32_t refs)
{
    const int src = kd_list(b, level);
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
    const int src = kd_list(b, level);
    uint2 ch = b.chunks[src][blockIdx.x];
    const KdLargeNode *nd = &b.active[src][ch.x];
    uint32_t i = ch.y + threadIdx.x;
    if (i >= nd->count || nd->kid_base[0] == UINT32_MAX) return;
    uint32_t p = nd->first + i, tri = b.refs[src][p];
    RtAabb box[2];
    if (c.clip) kd_sort_ref<2>(b, c, nd, src, p, tri, box); /* the boxes again */
    if (b.flags[p]) kd_put_ref(b, c, kd_list(b, level + 1), nd->kid_base[0] + b.scan[p] - b.scan[nd->first], tri, box[0]);
    if (b.flags[refs + p])
        kd_put_ref(b, c, kd_list(b, level + 1), nd->kid_base[1] + b.scan[refs + p] - b.scan[refs + nd->first], tri, box[1]);
}

size_t kd_large_scan_bytes(uint32_t n)
{
    size_t bytes = 0;
    cub::DeviceScan::ExclusiveSum(NULL, bytes, (const uint32_t *)NULL, (uint32_t *)NULL, (int)n);
    return bytes;
}

template <bool IMPL1>
__global__ void kd_large_route_kernel(KdBufs b, KdConf c, int level, uint32_t active, uint32_t refs)
{
    uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (w >= active) return;
    __shared__ KdLargeNode s_route[4];
    kd_route_node<IMPL1, false, 2>(b, c, &b.active[kd_list(b, level)][w], level, refs, lane, &s_route[threadIdx.x >> 5]);
}

/* ==== one level (host-driven: a launch per step) ========================== */

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
