/* gpu_scene_dev.h — the device-side view of RtGpuScene, shared by
 * gpu_scene.cu (which fills it) and trace.cu (which reads it). CUDA only:
 * the C side sees the opaque handle of gpu_scene.h. */
#ifndef RT_GPU_SCENE_DEV_H
#define RT_GPU_SCENE_DEV_H

#include <cuda_runtime.h>
#include "gpu/gpu_scene.h"
#include "gpu/launch.h"
#include "render/shade.h"

/* A material as the kernels read it: the shading fields (render/shade.h)
 * and the textures as CUDA texture objects over mipmapped arrays (0 =
 * none): tex_kd decodes sRGB -> linear per texel before the trilinear
 * filter (as the CPU renderer's LUT does), tex_mask reads the same texels
 * unconverted for map_d (at level 0). */
typedef struct RtGpuMaterial {
    RtShadeMaterial shade;
    int mask_uses_alpha;          /* map_d: 1 = texel alpha, 0 = luminance */
    int kd_w, kd_h;               /* map_Kd's level-0 size, for rt_shade_texture_lod */
    cudaTextureObject_t tex_kd;   /* map_Kd, sRGB-decoded */
    cudaTextureObject_t tex_mask; /* map_d, raw */
} RtGpuMaterial;

/* Everything a kernel reads, by value (kernel parameter). */
typedef struct RtGpuSceneView {
    const RtFloat4 *verts;   /* 3 per triangle */
    const RtFloat4 *woop;    /* 3 per triangle */
    const RtFloat4 *normals; /* 3 per triangle (per corner), xyz */
    const float *uvs;        /* 6 per triangle: u0 v0 u1 v1 u2 v2 */
    const uint32_t *mat;     /* per triangle, always a valid index into mats */
    const RtGpuMaterial *mats;
    const RtLight *lights;
    uint32_t tri_count, mat_count, light_count;
    float eps;               /* secondary-ray offset (docs/renderer.md) */
    int transmits;           /* some material has d < 1 (rt_shade_materials_transmit) */
    int masks;               /* some material has a cut-out map (tex_mask) */
} RtGpuSceneView;

/* Statistics counters the trace kernels add to (device memory). */
typedef struct RtGpuTraceCounters {
    unsigned long long primary, shadow, reflection, steps;
} RtGpuTraceCounters;

/* The view, the counters and the launch log (timed) of gs, for trace.cu. */
RtGpuSceneView rt_gpu_scene_view(const RtGpuScene *gs);
RtGpuTraceCounters *rt_gpu_scene_counters(RtGpuScene *gs);
RtLaunchLog *rt_gpu_scene_launch_log(RtGpuScene *gs);

#endif
