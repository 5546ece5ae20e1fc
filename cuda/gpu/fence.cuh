/* fence.cuh — memory order between blocks of one launch, at device scope.
 * __threadfence() is a sequentially consistent fence (MEMBAR.SC.GPU in
 * Hopper's SASS), stronger and slower than the release / acquire pairs the
 * builders' hand-offs need (one block publishes, another reads after an
 * atomic): an acquire-release fence is MEMBAR.ALL.GPU followed by an
 * invalidation of the multiprocessor's L1 (CCTL.IVALL, Nsight Compute's
 * source view), which every warp on it then pays for in misses. Where a
 * point needs only one half, a release needs no invalidation and an
 * acquire no wait for this thread's writes. */
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

/* The two halves of rt_fence_acq_rel, for hand-offs where a point needs
 * only one (PTX's fence.release and fence.acquire, ISA 8.6, sm_90 on; the
 * acquire-release fence before that). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && \
    (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 8))
#define RT_FENCE_SPLIT 1
#endif

/* Orders this thread's earlier reads and writes before its later writes
 * (release: before the exchange that publishes them). */
__device__ __forceinline__ void rt_fence_release()
{
#ifdef RT_FENCE_SPLIT
    asm volatile("fence.release.gpu;" ::: "memory");
#else
    rt_fence_acq_rel();
#endif
}

/* Orders this thread's earlier reads before its later reads and writes
 * (acquire: after the exchange that handed it others' released writes). */
__device__ __forceinline__ void rt_fence_acquire()
{
#ifdef RT_FENCE_SPLIT
    asm volatile("fence.acquire.gpu;" ::: "memory");
#else
    rt_fence_acq_rel();
#endif
}

#endif
