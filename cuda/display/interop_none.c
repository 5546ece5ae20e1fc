/* interop_none.c — the CUDA-GL boundary in a build without a CUDA toolkit:
 * every frame goes through host memory. */
#include "display/interop.h"

RtStatus rt_interop_create(RtInterop **out, RtError *err)
{
    *out = 0;
    return rt_fail(err, RT_ERR_NO_DEVICE, "built without CUDA");
}
void rt_interop_destroy(RtInterop *ip) { (void)ip; }
RtStatus rt_interop_register(RtInterop *ip, unsigned int pbo, RtError *err)
{
    (void)ip, (void)pbo;
    return rt_fail(err, RT_ERR_NO_DEVICE, "built without CUDA");
}
RtStatus rt_interop_map(RtInterop *ip, void **dev, size_t *bytes, RtError *err)
{
    (void)ip;
    *dev = 0;
    *bytes = 0;
    return rt_fail(err, RT_ERR_NO_DEVICE, "built without CUDA");
}
RtStatus rt_interop_unmap(RtInterop *ip, RtError *err)
{
    (void)ip;
    return rt_fail(err, RT_ERR_NO_DEVICE, "built without CUDA");
}
RtStatus rt_interop_upload(RtInterop *ip, const void *host, size_t bytes, RtError *err)
{
    (void)ip, (void)host, (void)bytes;
    return rt_fail(err, RT_ERR_NO_DEVICE, "built without CUDA");
}
