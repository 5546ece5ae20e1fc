/* interop.h — the display stage's CUDA-GL boundary: a GL pixel buffer object
 * registered with CUDA so a frame reaches the window without a trip through
 * host memory. Plain C, opaque handle, never exits: when registration fails
 * (Mesa, remote X, a GPU that is not the display's, no CUDA in this build)
 * the caller copies through host memory instead and says why.
 *
 * Every call needs the GL context that owns the PBO to be current. */
#ifndef RT_INTEROP_H
#define RT_INTEROP_H

#include "core/rt_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct RtInterop RtInterop;

/* Checks that a CUDA device drives the current GL context and opens it.
 * RT_ERR_NO_DEVICE with the reason in err otherwise. */
RtStatus rt_interop_create(RtInterop **out, RtError *err);
void rt_interop_destroy(RtInterop *ip);

/* (Re-)registers the GL buffer `pbo` (a GLuint) for write-discard access;
 * any earlier registration is released first. Call it again after the
 * buffer's storage changes (window resize). pbo = 0 only unregisters. */
RtStatus rt_interop_register(RtInterop *ip, unsigned int pbo, RtError *err);

/* Maps the registered buffer for CUDA for this frame: *dev points at
 * *bytes bytes of device memory until rt_interop_unmap. The GPU tracer
 * writes there directly. */
RtStatus rt_interop_map(RtInterop *ip, void **dev, size_t *bytes, RtError *err);
RtStatus rt_interop_unmap(RtInterop *ip, RtError *err);

/* Map, copy `bytes` of host memory in with cudaMemcpy, unmap: how a frame
 * rendered on the CPU goes through the same path. */
RtStatus rt_interop_upload(RtInterop *ip, const void *host, size_t bytes, RtError *err);

#ifdef __cplusplus
}
#endif
#endif
