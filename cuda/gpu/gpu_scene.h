/* gpu_scene.h — the scene as the GPU tracer reads it: triangle vertices and
 * Woop rows (rewritten every frame from the animated vertices), per-corner
 * shading normals and UVs, materials, map_Kd / map_d textures as CUDA
 * texture objects, and lights. Plus the upload of a host kd-tree (e.g. the
 * CPU oracle's) into device memory in the shared layout (kd_layout.h), so a
 * tree from either builder is traced the same way.
 *
 * Plain C, opaque handle, never exits. Device buffers are allocated once at
 * create (and grown by update_tris when the triangle count grows). */
#ifndef RT_GPU_SCENE_H
#define RT_GPU_SCENE_H

#include "scene/scene.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct RtGpuScene RtGpuScene;

/* Uploads everything the tracer needs from s, and computes the triangle
 * vertices and Woop rows from s's vertex positions on the device. */
RtStatus rt_gpu_scene_create(const RtScene *s, RtGpuScene **out, RtError *err);
void rt_gpu_scene_destroy(RtGpuScene *gs);

/* Per frame: new positions for the scene's triangles (3 float4 per
 * triangle, count triangles; count must equal the scene's triangle count)
 * -> device vertices and Woop rows (Woop 2004; degenerate triangles get
 * zero rows, as rt_tri_arrays_make does). verts_on_device: 1 when verts is
 * a device pointer (the animate stage's output), 0 for host memory. */
RtStatus rt_gpu_scene_update_tris(RtGpuScene *gs, const RtFloat4 *verts, uint32_t count,
                                  int verts_on_device, RtError *err);

/* Per frame, for the animate stage (anim_gpu.h): the device array of
 * per-corner shading normals (3 float4 per triangle, xyz; the tracer reads
 * them), and new light values (count must equal the scene's light count;
 * host memory). */
RtFloat4 *rt_gpu_scene_normals(RtGpuScene *gs);
RtStatus rt_gpu_scene_update_lights(RtGpuScene *gs, const RtLight *lights, uint32_t count,
                                    RtError *err);

/* The device triangle arrays (device pointers), e.g. for the GPU builder. */
RtTriArrays rt_gpu_scene_tris(const RtGpuScene *gs);
/* Ray offset of secondary rays: 1e-4 of the triangles' bounding-box
 * diagonal, the very value the CPU renderer uses (docs/renderer.md). */
float rt_gpu_scene_epsilon(const RtGpuScene *gs);

/* Copies a host tree (nodes, leaves, leaf boxes, triangle indices, bounds)
 * into device memory: dev's arrays become device pointers, allocated here
 * (reused when dev already holds large enough arrays from an earlier call,
 * so call with a zeroed dev the first time). */
RtStatus rt_kd_tree_upload(const RtKdTree *host, RtKdTree *dev, RtError *err);
void rt_kd_tree_free_device(RtKdTree *dev);

/* Plain device buffers for callers without CUDA headers (headless mode's
 * image, the tests' rays and hits). */
typedef enum { RT_COPY_TO_DEVICE = 0, RT_COPY_TO_HOST = 1 } RtCopyDir;
RtStatus rt_gpu_malloc(void **d, size_t bytes, RtError *err);
void rt_gpu_free(void *d);
RtStatus rt_gpu_memcpy(void *dst, const void *src, size_t bytes, RtCopyDir dir, RtError *err);

#ifdef __cplusplus
}
#endif
#endif
