/* coalesce.cuh — a block's items of three 16-byte words each (a triangle's
 * corners, its Woop rows) moved between global memory and the threads
 * through shared memory. A thread that reads or writes its own three words
 * directly puts 48 bytes between neighbouring threads: a warp's access then
 * spans 12 lines, and such kernels were bound by the memory pipeline's
 * transactions, not by DRAM (ncu on the H200: 84 % memory throughput,
 * 20 % DRAM). Through shared memory consecutive threads move consecutive
 * words. Every thread of the block must call these (they synchronise it),
 * including those past the last item. */
#ifndef RT_COALESCE_CUH
#define RT_COALESCE_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "core/rt_base.h"

/* Item base + threadIdx.x of in[] (n items, base < n) into v: a block's
 * tile starting at base (a loop over tiles, a grid smaller than n / B). */
template <int B>
__device__ __forceinline__ void rt_load3_at(const RtFloat4 *in, uint32_t n, uint32_t base, RtFloat4 (&sh)[3 * B],
                                            RtFloat4 v[3])
{
    const uint32_t items = n - base < (uint32_t)B ? n - base : (uint32_t)B;
    for (uint32_t j = threadIdx.x; j < 3 * items; j += B) sh[j] = in[3 * (size_t)base + j];
    __syncthreads();
    if (threadIdx.x < items)
        for (int k = 0; k < 3; k++) v[k] = sh[3 * threadIdx.x + k];
    __syncthreads();
}

/* Item blockIdx.x * B + threadIdx.x of in[] (n items) into v. */
template <int B>
__device__ __forceinline__ void rt_load3(const RtFloat4 *in, uint32_t n, RtFloat4 (&sh)[3 * B], RtFloat4 v[3])
{
    rt_load3_at<B>(in, n, blockIdx.x * B, sh, v);
}

/* v into item blockIdx.x * B + threadIdx.x of out[] (n items). */
template <int B>
__device__ __forceinline__ void rt_store3(RtFloat4 *out, uint32_t n, RtFloat4 (&sh)[3 * B], const RtFloat4 v[3])
{
    const uint32_t base = blockIdx.x * B, items = n - base < (uint32_t)B ? n - base : (uint32_t)B;
    if (threadIdx.x < items)
        for (int k = 0; k < 3; k++) sh[3 * threadIdx.x + k] = v[k];
    __syncthreads();
    for (uint32_t j = threadIdx.x; j < 3 * items; j += B) out[3 * (size_t)base + j] = sh[j];
    __syncthreads();
}

#endif
