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
 * and the textures as CUDA texture objects (0 = none): tex_kd decodes sRGB
 * -> linear per texel before the bilinear filter (as the CPU renderer's LUT
 * does), tex_mask reads the same texels unconverted for map_d. */
typedef struct RtGpuMaterial {
    RtShadeMaterial shade;
    int mask_uses_alpha;          /* map_d: 1 = texel alpha, 0 = luminance */
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
} RtGpuSceneView;

/* ---- host-identical arithmetic -------------------------------------------
 * nvcc contracts a*b + c into one FMA (one rounding), the host's C11 build
 * does not (two roundings), so the same formula gives t, u, v that differ
 * in their last bits, and a ray through a shared edge can then miss both
 * triangles on one side and not on the other. The Woop rows and both
 * intersection tests are therefore evaluated on the device with explicitly
 * rounded operations (never contracted), in the very order of kd_layout.h
 * and isect.h: the GPU and the CPU oracle agree bit for bit. */
__device__ __forceinline__ float ex_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float ex_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float ex_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float ex_div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ RtVec3 ex_v3_sub(RtVec3 a, RtVec3 b)
{
    return v3(ex_sub(a.x, b.x), ex_sub(a.y, b.y), ex_sub(a.z, b.z));
}
__device__ __forceinline__ RtVec3 ex_v3_scale(RtVec3 a, float s)
{
    return v3(ex_mul(a.x, s), ex_mul(a.y, s), ex_mul(a.z, s));
}
/* ((a.x b.x + a.y b.y) + a.z b.z), as v3_dot */
__device__ __forceinline__ float ex_dot(RtVec3 a, RtVec3 b)
{
    return ex_add(ex_add(ex_mul(a.x, b.x), ex_mul(a.y, b.y)), ex_mul(a.z, b.z));
}
__device__ __forceinline__ RtVec3 ex_cross(RtVec3 a, RtVec3 b)
{
    return v3(ex_sub(ex_mul(a.y, b.z), ex_mul(a.z, b.y)), ex_sub(ex_mul(a.z, b.x), ex_mul(a.x, b.z)),
              ex_sub(ex_mul(a.x, b.y), ex_mul(a.y, b.x)));
}
/* w + row . p, evaluated as isect.h writes it: ((w + x px) + y py) + z pz */
__device__ __forceinline__ float ex_affine(RtFloat4 r, RtVec3 p)
{
    return ex_add(ex_add(ex_add(r.w, ex_mul(r.x, p.x)), ex_mul(r.y, p.y)), ex_mul(r.z, p.z));
}

/* rt_woop_rows (kd_layout.h), host-identical. */
__device__ __forceinline__ int ex_woop_rows(RtVec3 v0, RtVec3 v1, RtVec3 v2, RtFloat4 rows[3])
{
    RtVec3 e1 = ex_v3_sub(v1, v0), e2 = ex_v3_sub(v2, v0), n = ex_cross(e1, e2);
    float det = ex_dot(n, n);
    if (!(det > 0.0f) || !isfinite(det)) return 0;
    float inv = ex_div(1.0f, det);
    RtVec3 r0 = ex_v3_scale(ex_cross(e2, n), inv);
    RtVec3 r1 = ex_v3_scale(ex_cross(n, e1), inv);
    RtVec3 r2 = ex_v3_scale(n, inv);
    rows[0] = f4(r0.x, r0.y, r0.z, -ex_dot(r0, v0));
    rows[1] = f4(r1.x, r1.y, r1.z, -ex_dot(r1, v0));
    rows[2] = f4(r2.x, r2.y, r2.z, -ex_dot(r2, v0));
    return isfinite(rows[0].w) && isfinite(rows[1].w) && isfinite(rows[2].w);
}

/* rt_isect_woop (isect.h), host-identical. */
__device__ __forceinline__ int ex_isect_woop(const RtFloat4 rows[3], RtVec3 o, RtVec3 d,
                                             float tmin, float tmax, float *t, float *u, float *v)
{
    float oz = ex_affine(rows[2], o);
    float dz = ex_add(ex_add(ex_mul(rows[2].x, d.x), ex_mul(rows[2].y, d.y)), ex_mul(rows[2].z, d.z));
    float tt = ex_div(-oz, dz);
    if (!(tt >= tmin && tt <= tmax)) return 0;
    RtVec3 p = v3(ex_add(o.x, ex_mul(d.x, tt)), ex_add(o.y, ex_mul(d.y, tt)),
                  ex_add(o.z, ex_mul(d.z, tt)));
    float uu = ex_affine(rows[0], p);
    if (uu < 0.0f) return 0;
    float vv = ex_affine(rows[1], p);
    if (vv < 0.0f || ex_add(uu, vv) > 1.0f) return 0;
    *t = tt; *u = uu; *v = vv;
    return 1;
}

/* rt_isect_mt (isect.h), host-identical. */
__device__ __forceinline__ int ex_isect_mt(RtVec3 v0, RtVec3 v1, RtVec3 v2, RtVec3 o, RtVec3 d,
                                           float tmin, float tmax, float *t, float *u, float *v)
{
    RtVec3 e1 = ex_v3_sub(v1, v0), e2 = ex_v3_sub(v2, v0);
    RtVec3 p = ex_cross(d, e2);
    float det = ex_dot(e1, p);
    if (det == 0.0f) return 0;
    float inv = ex_div(1.0f, det);
    RtVec3 s = ex_v3_sub(o, v0);
    float uu = ex_mul(ex_dot(s, p), inv);
    if (uu < 0.0f || uu > 1.0f) return 0;
    RtVec3 q = ex_cross(s, e1);
    float vv = ex_mul(ex_dot(d, q), inv);
    if (vv < 0.0f || ex_add(uu, vv) > 1.0f) return 0;
    float tt = ex_mul(ex_dot(e2, q), inv);
    if (!(tt >= tmin && tt <= tmax)) return 0;
    *t = tt; *u = uu; *v = vv;
    return 1;
}

/* Statistics counters the trace kernels add to (device memory). */
typedef struct RtGpuTraceCounters {
    unsigned long long primary, shadow, reflection, steps;
} RtGpuTraceCounters;

/* The view, the counters and the launch log (timed) of gs, for trace.cu. */
RtGpuSceneView rt_gpu_scene_view(const RtGpuScene *gs);
RtGpuTraceCounters *rt_gpu_scene_counters(RtGpuScene *gs);
RtLaunchLog *rt_gpu_scene_launch_log(RtGpuScene *gs);

#endif
