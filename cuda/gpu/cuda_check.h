/* cuda_check.h — CUDA error handling for the .cu files: CUDA_CHECK wraps a
 * runtime call and returns RT_ERR_CUDA with file, line, call text and error
 * string in err; CUDA_CHECK_LAUNCH checks the last launch (and, with DEBUG=1,
 * synchronises so the failing kernel is the one named). */
#ifndef RT_CUDA_CHECK_H
#define RT_CUDA_CHECK_H

#include <cuda_runtime.h>
#include "core/rt_base.h"

#define CUDA_CHECK(err, call)                                                               \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess)                                                              \
            return rt_fail((err), e_ == cudaErrorMemoryAllocation ? RT_ERR_OOM : RT_ERR_CUDA, \
                           "%s:%d: CUDA: %s failed: %s", __FILE__, __LINE__, #call,          \
                           cudaGetErrorString(e_));                                         \
    } while (0)

#define CUDA_CHECK_LAUNCH(err, name)                                                        \
    do {                                                                                    \
        cudaError_t e_ = cudaGetLastError();                                                \
        if (e_ == cudaSuccess && RT_DEBUG) e_ = cudaDeviceSynchronize();                    \
        if (e_ != cudaSuccess)                                                              \
            return rt_fail((err), RT_ERR_CUDA, "%s:%d: CUDA: kernel %s failed: %s",         \
                           __FILE__, __LINE__, (name), cudaGetErrorString(e_));             \
    } while (0)

#endif
