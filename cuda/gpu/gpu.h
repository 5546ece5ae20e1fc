/* gpu.h — the plain-C boundary to the CUDA side. Opaque context, status
 * codes, never exits: when no GPU is usable the host falls back to the CPU
 * backend and says why. */
#ifndef RT_GPU_H
#define RT_GPU_H

#include "core/rt_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct RtGpu RtGpu;

typedef struct RtGpuInfo {
    char name[256];       /* e.g. "NVIDIA H100 80GB HBM3" */
    int sm_major, sm_minor, sm_count;
    size_t mem_total;
    int driver_version, runtime_version;
} RtGpuInfo;

/* Opens device `device` (0 = first). Returns RT_ERR_NO_DEVICE with the
 * reason in err (no CUDA in this build, no driver, no GPU, too old a GPU). */
RtStatus rt_gpu_create(int device, RtGpu **out, RtError *err);
void rt_gpu_destroy(RtGpu *gpu);
const RtGpuInfo *rt_gpu_info(const RtGpu *gpu);

/* Device memory in use on the current device right now (cudaMemGetInfo:
 * total - free, so the CUDA context and other processes count too) and the
 * device's total. The benchmark samples it after every frame for its "peak
 * GPU memory"; buffers are grown, never freed per frame, so the samples see
 * the peak of what stays allocated. RT_ERR_NO_DEVICE without CUDA. */
RtStatus rt_gpu_mem_used(size_t *used, size_t *total, RtError *err);

/* cudaMalloc for every stage (bytes 0 allocates 1). When the device cannot
 * give the memory, RT_ERR_OOM names what it was for, how much, and the
 * device's free and total memory, and the CUDA error is cleared, so that
 * the caller may go on with less (the pipeline falls back to a leaner
 * structure, then to the CPU). RT_GPU_MEM_LIMIT_MB=N makes the device act
 * as if it had N MiB (an allocation that would take the memory in use
 * beyond N fails the same way): the out-of-memory paths are then tested
 * on any GPU (tests/gpu_check.sh). */
RtStatus rt_gpu_alloc(void **p, size_t bytes, const char *what, RtError *err);

#ifdef __cplusplus
}
#endif
#endif
