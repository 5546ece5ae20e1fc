/* fence.cuh — memory order between blocks of one launch, at device scope.
 * __threadfence() is a sequentially consistent fence (MEMBAR.SC.GPU in
 * Hopper's SASS), stronger and slower than the release / acquire pairs the
 * builders' hand-offs need (one block publishes, another reads after an
 * atomic): an acquire-release fence is MEMBAR.ALL.GPU, and an
 * acquire-release read-modify-write carries its own single fence. */
#ifndef RT_FENCE_CUH
#define RT_FENCE_CUH

#include <cuda/atomic>
#include <stdint.h>

/* Orders this thread's earlier reads and writes before its later ones as
 * seen by every thread of the device (release and acquire at once). */
__device__ __forceinline__ void rt_fence_acq_rel()
{
    cuda::atomic_thread_fence(cuda::memory_order_acq_rel, cuda::thread_scope_device);
}

/* atomicExch(p, v) that releases this thread's earlier writes with the
 * exchange and acquires those released by the earlier exchanges of *p:
 * the old value. */
__device__ __forceinline__ uint32_t rt_atomic_exch_acq_rel(uint32_t *p, uint32_t v)
{
    cuda::atomic_ref<uint32_t, cuda::thread_scope_device> r(*p);
    return r.exchange(v, cuda::memory_order_acq_rel);
}

#endif
