/* gpu_scene_none.c — the GPU scene in a build without a CUDA toolkit. */
#include <string.h>

#include "gpu/gpu_scene.h"

static RtStatus no_cuda(RtError *err)
{
    return rt_fail(err, RT_ERR_NO_DEVICE,
                   "TRACE: this rtviewer was built without CUDA (no nvcc found at build time)");
}

RtStatus rt_gpu_scene_create(const RtScene *s, RtGpuScene **out, RtError *err)
{
    (void)s;
    *out = 0;
    return no_cuda(err);
}
void rt_gpu_scene_destroy(RtGpuScene *gs) { (void)gs; }
RtStatus rt_gpu_scene_update_tris(RtGpuScene *gs, const RtFloat4 *verts, uint32_t count,
                                  int verts_on_device, RtError *err)
{
    (void)gs; (void)verts; (void)count; (void)verts_on_device;
    return no_cuda(err);
}
RtFloat4 *rt_gpu_scene_normals(RtGpuScene *gs)
{
    (void)gs;
    return 0;
}
RtStatus rt_gpu_scene_update_lights(RtGpuScene *gs, const RtLight *lights, uint32_t count, RtError *err)
{
    (void)gs; (void)lights; (void)count;
    return no_cuda(err);
}
RtTriArrays rt_gpu_scene_tris(const RtGpuScene *gs)
{
    RtTriArrays a;
    (void)gs;
    memset(&a, 0, sizeof a);
    return a;
}
float rt_gpu_scene_epsilon(const RtGpuScene *gs) { (void)gs; return 0.0f; }
RtStatus rt_kd_tree_upload(const RtKdTree *host, RtKdTree *dev, RtError *err)
{
    (void)host; (void)dev;
    return no_cuda(err);
}
void rt_kd_tree_free_device(RtKdTree *dev) { (void)dev; }
RtStatus rt_gpu_malloc(void **d, size_t bytes, RtError *err)
{
    (void)bytes;
    *d = 0;
    return no_cuda(err);
}
void rt_gpu_free(void *d) { (void)d; }
RtStatus rt_gpu_memcpy(void *dst, const void *src, size_t bytes, RtCopyDir dir, RtError *err)
{
    (void)dst; (void)src; (void)bytes; (void)dir;
    return no_cuda(err);
}
