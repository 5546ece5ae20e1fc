/* anim_gpu.h — the animate stage on the GPU: the scene's vertices at time t
 * (anim.h) computed on the device every frame, straight into the tracer's
 * triangle arrays (rt_gpu_scene_tris) and shading normals, so a dynamic
 * frame uploads only the node and joint matrices (12 floats each), never the
 * triangles. The CPU evaluation (rt_scene_frame_at) is its oracle.
 *
 * Plain C, opaque handle, never exits. Device buffers are allocated once at
 * create. */
#ifndef RT_ANIM_GPU_H
#define RT_ANIM_GPU_H

#include "gpu/gpu_scene.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct RtGpuAnim RtGpuAnim;

/* Uploads what the kernel needs from s: base (node-space) vertices and
 * normals, triangle corners, per-vertex nodes, morph keys, deforms and
 * skin weights.
 * gs must have been created from the same scene. */
RtStatus rt_gpu_anim_create(const RtScene *s, RtGpuAnim **out, RtError *err);
void rt_gpu_anim_destroy(RtGpuAnim *ga);

/* The scene at time t, on the device: node matrices and visibility are
 * evaluated on the host (rt_anim_eval_nodes, a few hundred nodes at most),
 * as are the joint matrices (rt_anim_eval_joints), and uploaded; one kernel
 * morphs/deforms and skins or transforms every vertex, one
 * writes each triangle's 3 vertices and corner normals into gs, then gs's
 * Woop rows are recomputed (rt_gpu_scene_update_tris with device input).
 * Animated lights are updated in gs too. ms (optional): GPU time of the
 * stage (CUDA events). */
RtStatus rt_gpu_anim_eval(RtGpuAnim *ga, const RtScene *s, float t, RtGpuScene *gs, double *ms,
                          RtError *err);

/* For tests: the world-space vertices of the last eval (vert_count RtVertex,
 * host memory the caller provides). */
RtStatus rt_gpu_anim_download_verts(const RtGpuAnim *ga, RtVertex *out, uint32_t vert_count,
                                    RtError *err);

#ifdef __cplusplus
}
#endif
#endif
