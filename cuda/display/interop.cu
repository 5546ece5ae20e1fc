/* interop.cu — the display stage on the CUDA side: the window's pixel buffer
 * object registered with CUDA (cudaGraphicsGLRegisterBuffer), mapped once a
 * frame for the tracer (or a copy of a CPU frame) and unmapped before GL
 * reads it into the display texture. */
#include <stdlib.h>

#include <cuda_gl_interop.h>

#include "gpu/cuda_check.h"
#include "display/interop.h"

struct RtInterop {
    int device;
    cudaGraphicsResource_t res;  /* NULL while no buffer is registered */
    int mapped;
};

extern "C" RtStatus rt_interop_create(RtInterop **out, RtError *err)
{
    *out = NULL;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        cudaGetLastError(); /* clear the sticky error */
        return rt_fail(err, RT_ERR_NO_DEVICE, "no CUDA device: %s",
                       e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    }
    /* The GL context must live on a CUDA GPU (not Mesa, not another
     * vendor's, not a remote X server's). */
    unsigned int n = 0;
    int devices[8];
    e = cudaGLGetDevices(&n, devices, 8, cudaGLDeviceListAll);
    if (e != cudaSuccess || n == 0) {
        cudaGetLastError();
        return rt_fail(err, RT_ERR_NO_DEVICE, "the GL context is not on a CUDA GPU%s%s",
                       e != cudaSuccess ? ": " : "", e != cudaSuccess ? cudaGetErrorString(e) : "");
    }
    CUDA_CHECK(err, cudaSetDevice(devices[0]));
    RtInterop *ip = (RtInterop *)calloc(1, sizeof *ip);
    if (!ip) return rt_fail(err, RT_ERR_OOM, "GL: out of host memory");
    ip->device = devices[0];
    *out = ip;
    return RT_OK;
}

static void release(RtInterop *ip)
{
    if (ip->mapped) cudaGraphicsUnmapResources(1, &ip->res, 0);
    if (ip->res) cudaGraphicsUnregisterResource(ip->res);
    ip->mapped = 0;
    ip->res = NULL;
}

extern "C" void rt_interop_destroy(RtInterop *ip)
{
    if (!ip) return;
    release(ip);
    free(ip);
}

extern "C" RtStatus rt_interop_register(RtInterop *ip, unsigned int pbo, RtError *err)
{
    release(ip);
    if (pbo == 0) return RT_OK;
    /* write-discard: CUDA overwrites the whole frame, GL never needs the old one */
    CUDA_CHECK(err, cudaGraphicsGLRegisterBuffer(&ip->res, pbo, cudaGraphicsRegisterFlagsWriteDiscard));
    return RT_OK;
}

extern "C" RtStatus rt_interop_map(RtInterop *ip, void **dev, size_t *bytes, RtError *err)
{
    *dev = NULL;
    *bytes = 0;
    if (!ip->res) return rt_fail(err, RT_ERR_ARG, "GL: interop map without a registered buffer");
    CUDA_CHECK(err, cudaGraphicsMapResources(1, &ip->res, 0));
    ip->mapped = 1;
    CUDA_CHECK(err, cudaGraphicsResourceGetMappedPointer(dev, bytes, ip->res));
    return RT_OK;
}

extern "C" RtStatus rt_interop_unmap(RtInterop *ip, RtError *err)
{
    if (!ip->mapped) return RT_OK;
    ip->mapped = 0;
    CUDA_CHECK(err, cudaGraphicsUnmapResources(1, &ip->res, 0));
    return RT_OK;
}

extern "C" RtStatus rt_interop_upload(RtInterop *ip, const void *host, size_t bytes, RtError *err)
{
    void *dev;
    size_t cap;
    RtStatus st = rt_interop_map(ip, &dev, &cap, err);
    if (st == RT_OK && bytes > cap)
        st = rt_fail(err, RT_ERR_ARG, "GL: frame of %zu bytes exceeds the %zu-byte PBO", bytes, cap);
    if (st == RT_OK) {
        cudaError_t e = cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice);
        if (e != cudaSuccess)
            st = rt_fail(err, RT_ERR_CUDA, "%s:%d: CUDA: cudaMemcpy to the PBO failed: %s", __FILE__,
                         __LINE__, cudaGetErrorString(e));
    }
    RtError unmap_err;
    if (rt_interop_unmap(ip, &unmap_err) != RT_OK && st == RT_OK) {
        *err = unmap_err;
        st = unmap_err.status;
    }
    return st;
}
