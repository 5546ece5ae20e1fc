/* gpu_none.c — the GPU boundary in a build without a CUDA toolkit. */
#include "gpu/gpu.h"

RtStatus rt_gpu_create(int device, RtGpu **out, RtError *err)
{
    (void)device;
    *out = 0;
    return rt_fail(err, RT_ERR_NO_DEVICE,
                   "GPU: this rtviewer was built without CUDA (no nvcc found at build time)");
}
void rt_gpu_destroy(RtGpu *gpu) { (void)gpu; }
const RtGpuInfo *rt_gpu_info(const RtGpu *gpu) { (void)gpu; return 0; }
RtStatus rt_gpu_alloc(void **p, size_t bytes, const char *what, RtError *err)
{
    (void)bytes;
    *p = NULL;
    return rt_fail(err, RT_ERR_NO_DEVICE, "GPU: this rtviewer was built without CUDA (%s)", what);
}

RtStatus rt_gpu_mem_used(size_t *used, size_t *total, RtError *err)
{
    *used = 0;
    if (total) *total = 0;
    return rt_fail(err, RT_ERR_NO_DEVICE, "GPU: this rtviewer was built without CUDA");
}
