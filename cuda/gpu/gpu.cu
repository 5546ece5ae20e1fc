/* gpu.cu — device selection: RtGpu opens the device, checks that it is
 * new enough and reports it (name, SMs, memory, driver and runtime
 * versions; the memory in use for the benchmark). It holds no stage: each
 * stage has its own context (RtGpuAnim, RtGpuScene, RtKdGpu, RtInterop),
 * and the frame pipeline (src/app/pipeline.c) holds them together. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "gpu/cuda_check.h"
#include "gpu/gpu.h"

struct RtGpu {
    int device;
    RtGpuInfo info;
};

/* The kernels are compiled for sm_90 with PTX; older GPUs than Volta lack
 * the warp intrinsics (__ballot_sync, __shfl_sync) Chang's variants need. */
static const int kMinSmMajor = 7;

extern "C" RtStatus rt_gpu_create(int device, RtGpu **out, RtError *err)
{
    *out = NULL;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        cudaGetLastError(); /* clear the sticky "no device" error */
        /* Said plainly first: "CUDA driver version is insufficient for CUDA
         * runtime version" is what a machine without an NVIDIA driver
         * reports, and reads like a version mismatch. */
        return rt_fail(err, RT_ERR_NO_DEVICE, "GPU: no usable NVIDIA GPU/driver found: the CPU backend runs (CUDA: %s)",
                       e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device");
    }
    if (device < 0 || device >= count)
        return rt_fail(err, RT_ERR_NO_DEVICE, "GPU: device %d requested, %d present", device, count);
    cudaDeviceProp prop;
    CUDA_CHECK(err, cudaGetDeviceProperties(&prop, device));
    if (prop.major < kMinSmMajor)
        return rt_fail(err, RT_ERR_NO_DEVICE, "GPU: %s is sm_%d%d; rtviewer needs sm_%d0 or newer",
                       prop.name, prop.major, prop.minor, kMinSmMajor);
    CUDA_CHECK(err, cudaSetDevice(device));
    RtGpu *g = (RtGpu *)calloc(1, sizeof *g);
    if (!g) return rt_fail(err, RT_ERR_OOM, "GPU: out of host memory");
    g->device = device;
    snprintf(g->info.name, sizeof g->info.name, "%s", prop.name);
    g->info.sm_major = prop.major;
    g->info.sm_minor = prop.minor;
    g->info.sm_count = prop.multiProcessorCount;
    g->info.mem_total = prop.totalGlobalMem;
    cudaDriverGetVersion(&g->info.driver_version);
    cudaRuntimeGetVersion(&g->info.runtime_version);
    *out = g;
    return RT_OK;
}

extern "C" void rt_gpu_destroy(RtGpu *gpu)
{
    free(gpu);
}

extern "C" const RtGpuInfo *rt_gpu_info(const RtGpu *gpu)
{
    return gpu ? &gpu->info : NULL;
}

extern "C" RtStatus rt_gpu_alloc(void **p, size_t bytes, const char *what, RtError *err)
{
    *p = NULL;
    if (bytes == 0) bytes = 1;
    size_t free_b = 0, total_b = 0;
    const char *cap = getenv("RT_GPU_MEM_LIMIT_MB");
    double limit = cap && *cap ? atof(cap) * 1048576.0 : 0.0;
    cudaError_t e = cudaSuccess;
    if (limit > 0 && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess &&
        (double)(total_b - free_b) + (double)bytes > limit)
        e = cudaErrorMemoryAllocation;
    if (e == cudaSuccess) e = cudaMalloc(p, bytes);
    if (e == cudaSuccess) return RT_OK;
    cudaGetLastError(); /* not sticky: the next launch check must not see it */
    *p = NULL;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) free_b = total_b = 0;
    if (limit > 0) {
        size_t used = total_b - free_b;
        total_b = (size_t)limit;
        free_b = used < total_b ? total_b - used : 0;
    }
    return rt_fail(err, e == cudaErrorMemoryAllocation ? RT_ERR_OOM : RT_ERR_CUDA,
                   "GPU: out of device memory for %s: %.1f MiB asked, %.1f MiB free of %.1f MiB%s (%s)", what,
                   bytes / 1048576.0, free_b / 1048576.0, total_b / 1048576.0,
                   limit > 0 ? " (RT_GPU_MEM_LIMIT_MB)" : "", cudaGetErrorString(e));
}

extern "C" RtStatus rt_gpu_mem_used(size_t *used, size_t *total, RtError *err)
{
    size_t free_b = 0, total_b = 0;
    *used = 0;
    if (total) *total = 0;
    CUDA_CHECK(err, cudaMemGetInfo(&free_b, &total_b));
    *used = total_b - free_b;
    if (total) *total = total_b;
    return RT_OK;
}
