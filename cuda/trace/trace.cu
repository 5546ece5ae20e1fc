/* trace.cu — GPU ray tracing of the shared kd-tree layout (kd_layout.h).
 *
 * The traversal loop, trace_ray<kTrav, kIsect, kPacket>, lives in
 * trace_ray.cuh (shared with the host emulation, trace_emu.cu); this file
 * gives it the device's scene and warp votes (DevPrims) and runs it from
 * the render and ray-cast kernels.
 *
 * Shading (render_kernel) follows src/render/render_cpu.c and docs/renderer.md
 * operation for operation; docs/trace_gpu.md lists the differences. */
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_check.h"
#include "gpu/gpu_scene_dev.h"
#include "trace/trace.h"
#define RT_TRACE_FN __device__
#include "trace/trace_ray.cuh"

/* ---- constants ------------------------------------------------------------ */

#define FULL_MASK 0xffffffffu
/* Threads per block: a multiple of the 32-thread warp (packets and tiles
 * need whole warps); 128 keeps several blocks resident per SM. */
static const int kBlock = 128;
/* As render_cpu.c: heatmap scale and alpha cut-off. */
#define HEAT_MAX_STEPS 128.0f
#define ALPHA_CUTOFF 0.5f

/* ---- textures and the alpha filter -------------------------------------- */

/* Texture coordinate at barycentrics (u, v) of corners 1 and 2. */
__device__ static void tri_uv(const RtGpuSceneView &sc, uint32_t tri, float u, float v,
                              float *tu, float *tv)
{
    const float *t = &sc.uvs[6 * (size_t)tri];
    float w = 1.0f - u - v;
    *tu = w * t[0] + u * t[2] + v * t[4];
    *tv = w * t[1] + u * t[3] + v * t[5];
}

/* OBJ's v = 0 is the image's bottom row and RtTexture row 0 its top, so the
 * lookup is at 1 - v; normalised coordinates put texel centres at
 * half-integers, as render_cpu.c's sample_bilinear does. */
__device__ static float4 sample(cudaTextureObject_t tex, float tu, float tv)
{
    return tex2D<float4>(tex, tu, 1.0f - tv);
}

/* 0 where the material's map_d is a hole (render_cpu.c's alpha_filter). */
__device__ static bool alpha_pass(const RtGpuSceneView &sc, const TraceCfg &cfg, uint32_t tri,
                                  float u, float v)
{
    if (!cfg.textures) return true;
    const RtGpuMaterial &m = sc.mats[sc.mat[tri]];
    if (!m.tex_mask) return true;
    float tu, tv;
    tri_uv(sc, tri, u, v, &tu, &tv);
    float4 x = sample(m.tex_mask, tu, tv);
    float mask = m.mask_uses_alpha ? x.w : 0.2126f * x.x + 0.7152f * x.y + 0.0722f * x.z;
    return mask >= ALPHA_CUTOFF;
}

/* ---- intersection (Hoedt 4.3) ------------------------------------------- */

template <int kIsect>
__device__ static int isect_tri(const RtGpuSceneView &sc, uint32_t id, RtVec3 o, RtVec3 d,
                                float tmin, float tmax, float *t, float *u, float *v)
{
    if (kIsect == RT_ISECT_WOOP) {
        RtFloat4 rows[3];
        const float4 *w = (const float4 *)&sc.woop[3 * (size_t)id];
        for (int k = 0; k < 3; k++) {
            float4 r = __ldg(&w[k]);
            rows[k] = f4(r.x, r.y, r.z, r.w);
        }
        return ex_isect_woop(rows, o, d, tmin, tmax, t, u, v);
    }
    const float4 *p = (const float4 *)&sc.verts[3 * (size_t)id];
    float4 a = __ldg(&p[0]), b = __ldg(&p[1]), c = __ldg(&p[2]);
    return ex_isect_mt(v3(a.x, a.y, a.z), v3(b.x, b.y, b.z), v3(c.x, c.y, c.z), o, d, tmin, tmax,
                       t, u, v);
}

/* What trace_ray reads on the device: the scene, the warp's votes. */
struct DevPrims {
    const RtGpuSceneView &sc;
    const TraceCfg &cfg;
    __device__ bool any(bool x) const { return __any_sync(FULL_MASK, x); }
    __device__ unsigned ballot(bool x) const { return __ballot_sync(FULL_MASK, x); }
    __device__ int lane() const { return (int)(threadIdx.x & 31u); }
    __device__ int isect(int kIsect, uint32_t id, RtVec3 o, RtVec3 d, float tmin, float tmax,
                         float *t, float *u, float *v) const
    {
        return kIsect == RT_ISECT_WOOP ? isect_tri<RT_ISECT_WOOP>(sc, id, o, d, tmin, tmax, t, u, v)
                                       : isect_tri<RT_ISECT_MT>(sc, id, o, d, tmin, tmax, t, u, v);
    }
    __device__ bool alpha(uint32_t id, float u, float v) const { return alpha_pass(sc, cfg, id, u, v); }
    /* the tree is read-only while it is traced: the non-coherent path */
    __device__ uint32_t index(const uint32_t *p) const { return __ldg(p); }
    __device__ RtKdNode node(const RtKdNode *p) const
    {
        uint2 x = __ldg((const uint2 *)p);
        RtKdNode n;
        n.bits = x.x;
        n.u.count = x.y;
        return n;
    }
    __device__ RtKdLeaf leaf(const RtKdLeaf *p) const
    {
        uint2 x = __ldg((const uint2 *)p);
        RtKdLeaf l = {x.x, x.y};
        return l;
    }
};

/* ---- shading (render_cpu.c, docs/renderer.md) ---------------------------- */

typedef struct Surface {
    RtVec3 p, ng, n; /* hit point, unit geometric and shading normals facing the ray */
    bool front;      /* the ray hit the side the winding's normal points to */
    uint32_t mat;
    RtVec3 albedo;
} Surface;

__device__ static Surface surface_at(const RtGpuSceneView &sc, const TraceCfg &cfg, RtVec3 dir,
                                     RtHit hit)
{
    Surface sf;
    const RtFloat4 *pv = &sc.verts[3 * (size_t)hit.tri];
    const RtFloat4 *pn = &sc.normals[3 * (size_t)hit.tri];
    RtVec3 a = f4_xyz(pv[0]), b = f4_xyz(pv[1]), c = f4_xyz(pv[2]);
    float u = hit.u, v = hit.v, w = 1.0f - u - v;
    sf.p = v3_add(v3_add(v3_scale(a, w), v3_scale(b, u)), v3_scale(c, v));
    sf.ng = v3_norm(v3_cross(v3_sub(b, a), v3_sub(c, a)));
    sf.front = v3_dot(sf.ng, dir) <= 0.0f;
    if (!sf.front) sf.ng = v3_scale(sf.ng, -1.0f);
    sf.n = v3_add(v3_add(v3_scale(f4_xyz(pn[0]), w), v3_scale(f4_xyz(pn[1]), u)),
                  v3_scale(f4_xyz(pn[2]), v));
    float nl = v3_len(sf.n);
    if (!(nl > 1e-12f) || !isfinite(nl)) sf.n = sf.ng;
    else sf.n = v3_scale(sf.n, 1.0f / nl);
    if (v3_dot(sf.n, sf.ng) < 0.0f) sf.n = v3_scale(sf.n, -1.0f);
    sf.mat = sc.mat[hit.tri];
    const RtGpuMaterial &m = sc.mats[sf.mat];
    sf.albedo = m.kd;
    if (cfg.textures && m.tex_kd) {
        float tu, tv;
        tri_uv(sc, hit.tri, u, v, &tu, &tv);
        float4 x = sample(m.tex_kd, tu, tv);
        sf.albedo = v3_mul(sf.albedo, v3(x.x, x.y, x.z));
    }
    return sf;
}

/* render_cpu.c's rt_linear_to_srgb8 (image.c), on the device. */
__device__ static uint8_t linear_to_srgb8(float c)
{
    if (!(c > 0.0f)) return 0;
    if (c >= 1.0f) return 255;
    float s = c <= 0.0031308f ? 12.92f * c : 1.055f * powf(c, 1.0f / 2.4f) - 0.055f;
    return (uint8_t)(s * 255.0f + 0.5f);
}

/* render_cpu.c's heat_color: the fixed ramp over 0..128 visited nodes. */
__device__ static uchar4 heat_color(uint32_t steps)
{
    const float stops[6][3] = {{0, 0, 0.5f}, {0, 0, 1}, {0, 1, 1}, {1, 1, 0}, {1, 0, 0}, {0.5f, 0, 0}};
    const float at[6] = {0.0f, 0.125f, 0.375f, 0.625f, 0.875f, 1.0f};
    float x = fminf((float)steps / HEAT_MAX_STEPS, 1.0f);
    int i = 0;
    while (i < 4 && x > at[i + 1]) i++;
    float f = (x - at[i]) / (at[i + 1] - at[i]);
    uint8_t out[3];
    for (int k = 0; k < 3; k++) {
        float c = stops[i][k] + (stops[i + 1][k] - stops[i][k]) * f;
        out[k] = (uint8_t)(c * 255.0f + 0.5f);
    }
    return make_uchar4(out[0], out[1], out[2], 255);
}


/* Sums x over the warp and adds it to *c once (every lane calls it). */
__device__ static void count_warp(unsigned long long *c, uint32_t x)
{
    uint32_t s = __reduce_add_sync(FULL_MASK, x);
    if ((threadIdx.x & 31u) == 0 && s) atomicAdd(c, (unsigned long long)s);
}

typedef struct RenderArgs {
    RtCameraBasis cam;
    int w, h, ray_map, max_bounces, shadows, refraction, heatmap;
    RtVec3 background, ambient;
    uint8_t *rgba;
    uint32_t *ids;
} RenderArgs;

/* One pixel per thread: the Whitted loop of render_cpu.c's trace_pixel,
 * unrolled with warp-uniform trip counts (every lane calls trace_ray the
 * same number of times, as packets need), then sRGB out. */
template <int kTrav, int kIsect, bool kPacket>
__global__ void __launch_bounds__(kBlock) render_kernel(RtGpuSceneView sc, TraceTree tr,
                                                        TraceCfg cfg, RenderArgs ra,
                                                        RtGpuTraceCounters *cnt)
{
    uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
    int px, py;
    bool valid = pixel_of(ra.ray_map, tid, ra.w, ra.h, &px, &py);
    RtVec3 dir = valid ? rt_camera_dir(&ra.cam, (float)px + 0.5f, (float)py + 0.5f) : v3(0, 0, 1);
    RtRay ray = {ra.cam.o, dir};
    RtVec3 color = v3(0, 0, 0), through = v3(1, 1, 1);
    bool alive = valid;
    uint32_t id = RT_NO_HIT, steps = 0, n_shadow = 0, n_refl = 0;
    for (int depth = 0; depth <= ra.max_bounces; depth++) {
        if (depth > 0 && alive) n_refl++;
        RtHit hit = trace_ray<kTrav, kIsect, kPacket>(DevPrims{sc, cfg}, tr, cfg, ray.o, ray.d, 0.0f, INFINITY,
                                                      alive, false, depth == 0 ? &steps : NULL);
        if (alive && hit.tri == RT_NO_HIT) {
            color = v3_add(color, v3_mul(through, ra.background));
            alive = false;
        }
        if (depth == 0 && alive) id = hit.tri;
        Surface sf = {};
        RtGpuMaterial m = {};
        RtVec3 local = v3(0, 0, 0), origin = v3(0, 0, 0);
        if (alive) {
            sf = surface_at(sc, cfg, ray.d, hit);
            m = sc.mats[sf.mat];
            local = v3_add(m.ke, v3_mul(ra.ambient, sf.albedo));
            origin = v3_add(sf.p, v3_scale(sf.ng, sc.eps));
        }
        /* direct light: Lambert + Phong per visible light, one shadow ray each */
        for (uint32_t li = 0; li < sc.light_count; li++) {
            RtLight l = sc.lights[li];
            RtVec3 L = v3(0, 0, 1);
            float dist = INFINITY, ndl = 0.0f;
            bool lit = alive;
            if (lit) {
                if (l.type == RT_LIGHT_DIRECTIONAL) {
                    L = v3_norm(l.v);
                } else {
                    RtVec3 dl = v3_sub(l.v, sf.p);
                    dist = v3_len(dl);
                    lit = dist > 0.0f;
                    if (lit) L = v3_scale(dl, 1.0f / dist);
                }
                ndl = v3_dot(sf.n, L);
                lit = lit && ndl > 0.0f && v3_dot(sf.ng, L) > 0.0f;
            }
            if (ra.shadows) {
                float tmax = isinf(dist) ? INFINITY : dist - sc.eps;
                bool cast = lit && tmax > 0.0f;
                n_shadow += lit;
                RtHit sh = trace_ray<kTrav, kIsect, kPacket>(DevPrims{sc, cfg}, tr, cfg, origin, L, 0.0f, tmax,
                                                             cast, true, NULL);
                if (cast && sh.tri != RT_NO_HIT) lit = false;
            }
            if (lit) {
                RtVec3 lc = v3_mul(sf.albedo, v3_scale(l.color, ndl));
                if (m.ks.x > 0.0f || m.ks.y > 0.0f || m.ks.z > 0.0f) {
                    RtVec3 r = v3_sub(v3_scale(sf.n, 2.0f * ndl), L);
                    float rv = v3_dot(r, v3_scale(ray.d, -1.0f));
                    float ns = m.ns > 1.0f ? m.ns : 1.0f;
                    if (rv > 0.0f) lc = v3_add(lc, v3_scale(v3_mul(m.ks, l.color), powf(rv, ns)));
                }
                local = v3_add(local, lc);
            }
        }
        if (!alive) continue;
        /* continue the chain: a transparent surface (d < 1) refracts, a
         * mirror reflects, anything else (or the last depth) ends it */
        float r = fminf(fmaxf(m.reflect, 0.0f), 1.0f);
        bool transparent = ra.refraction && m.d < 1.0f;
        if (depth >= ra.max_bounces || (r <= 0.0f && !transparent)) {
            color = v3_add(color, v3_mul(through, local));
            alive = false;
            continue;
        }
        if (transparent) {
            float opacity = fmaxf(m.d, 0.0f);
            color = v3_add(color, v3_mul(through, v3_scale(local, opacity)));
            through = v3_scale(through, 1.0f - opacity);
            /* Snell through the interface (MTL illum 4/6/7 with ni), else straight */
            bool bends = (m.illum == 4 || m.illum == 6 || m.illum == 7) && m.ni > 0.0f;
            float eta = bends ? (sf.front ? 1.0f / m.ni : m.ni) : 1.0f;
            float cosi = -v3_dot(ray.d, sf.ng);
            float k = 1.0f - eta * eta * (1.0f - cosi * cosi);
            if (k >= 0.0f) {
                RtVec3 t = v3_add(v3_scale(ray.d, eta), v3_scale(sf.ng, eta * cosi - sqrtf(k)));
                ray.o = v3_sub(sf.p, v3_scale(sf.ng, sc.eps));
                ray.d = v3_norm(t);
            } else { /* total internal reflection */
                ray.o = origin;
                ray.d = v3_norm(v3_sub(ray.d, v3_scale(sf.ng, 2.0f * v3_dot(ray.d, sf.ng))));
            }
            continue;
        }
        color = v3_add(color, v3_mul(through, v3_scale(local, 1.0f - r)));
        through = v3_scale(through, r);
        RtVec3 d2 = v3_sub(ray.d, v3_scale(sf.n, 2.0f * v3_dot(ray.d, sf.n)));
        if (v3_dot(d2, sf.ng) <= 0.0f)
            d2 = v3_sub(ray.d, v3_scale(sf.ng, 2.0f * v3_dot(ray.d, sf.ng)));
        ray.o = origin;
        ray.d = v3_norm(d2);
    }
    count_warp(&cnt->primary, valid ? 1u : 0u);
    count_warp(&cnt->shadow, n_shadow);
    count_warp(&cnt->reflection, n_refl);
    count_warp(&cnt->steps, steps);
    if (!valid) return;
    size_t i = (size_t)py * ra.w + px;
    uchar4 out = ra.heatmap ? heat_color(steps)
                            : make_uchar4(linear_to_srgb8(color.x), linear_to_srgb8(color.y),
                                          linear_to_srgb8(color.z), 255);
    ((uchar4 *)ra.rgba)[i] = out;
    if (ra.ids) ra.ids[i] = id;
}

/* Ray casting for tests and benchmarks: ray i is pixel (i % width, i / width). */
template <int kTrav, int kIsect, bool kPacket>
__global__ void __launch_bounds__(kBlock) cast_kernel(RtGpuSceneView sc, TraceTree tr,
                                                      TraceCfg cfg, const RtGpuRay *rays,
                                                      RtHit *hits, uint32_t *steps_out, uint32_t n,
                                                      int width, int ray_map, int any)
{
    uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
    int height = (int)((n + (uint32_t)width - 1) / (uint32_t)width);
    int px, py;
    bool valid = pixel_of(ray_map, tid, width, height, &px, &py);
    uint32_t i = (uint32_t)py * (uint32_t)width + (uint32_t)px;
    valid = valid && i < n;
    RtGpuRay r;
    if (valid) {
        const float4 *p = (const float4 *)&rays[i];
        float4 a = p[0], b = p[1];
        r.o = v3(a.x, a.y, a.z);
        r.tmin = a.w;
        r.d = v3(b.x, b.y, b.z);
        r.tmax = b.w;
    } else {
        r.o = r.d = v3(0, 0, 0);
        r.tmin = r.tmax = 0.0f;
    }
    uint32_t steps = 0;
    RtHit h = trace_ray<kTrav, kIsect, kPacket>(DevPrims{sc, cfg}, tr, cfg, r.o, r.d, r.tmin, r.tmax, valid,
                                                any != 0, &steps);
    if (!valid) return;
    hits[i] = h;
    if (steps_out) steps_out[i] = steps;
}

/* ---- host drivers -------------------------------------------------------- */

static TraceTree trace_tree(const RtKdTree *t)
{
    TraceTree tr;
    tr.nodes = t->nodes;
    tr.leaves = t->leaves;
    tr.boxes = t->leaf_boxes;
    tr.index = t->tri_index;
    tr.bounds = t->bounds;
    tr.d_bounds = t->d_bounds;
    /* a tree still being built (rt_kd_gpu_build_async) has no counts on the
     * host yet: its device bounds say whether it is empty */
    tr.node_count = t->d_bounds ? 1u : (aabb_is_empty(t->bounds) ? 0u : t->node_count);
    return tr;
}

/* The one place a variant becomes a kernel instantiation. */
#define RT_TRACE_DISPATCH(kernel, p, ...)                                                  \
    ((p)->traversal == RT_TRAV_RESTART                                                      \
         ? ((p)->isect == RT_ISECT_WOOP                                                     \
                ? ((p)->packet ? kernel<RT_TRAV_RESTART, RT_ISECT_WOOP, true>               \
                               : kernel<RT_TRAV_RESTART, RT_ISECT_WOOP, false>)             \
                : ((p)->packet ? kernel<RT_TRAV_RESTART, RT_ISECT_MT, true>                 \
                               : kernel<RT_TRAV_RESTART, RT_ISECT_MT, false>))              \
         : ((p)->isect == RT_ISECT_WOOP                                                     \
                ? ((p)->packet ? kernel<RT_TRAV_SHORT_STACK, RT_ISECT_WOOP, true>           \
                               : kernel<RT_TRAV_SHORT_STACK, RT_ISECT_WOOP, false>)         \
                : ((p)->packet ? kernel<RT_TRAV_SHORT_STACK, RT_ISECT_MT, true>             \
                               : kernel<RT_TRAV_SHORT_STACK, RT_ISECT_MT, false>)))

static TraceCfg trace_cfg(const RtTraceParams *p)
{
    TraceCfg c;
    c.leaf_skip = p->leaf_skip;
    c.stack_size = p->stack_size;
    c.textures = p->textures;
    return c;
}

/* Adds the pending launch timings and returns the GPU time of `name`. */
static RtStatus kernel_ms(RtLaunchLog *log, const char *name, double *ms, RtError *err)
{
    RtStatus st = rt_launch_log_resolve(log, err);
    if (st != RT_OK) return st;
    int e = rt_launch_entry(log, name);
    *ms = log->entries[e].ms;
    rt_launch_log_reset(log);
    return RT_OK;
}

extern "C" RtStatus rt_trace_gpu(RtGpuScene *gs, const RtKdTree *d_tree, const RtCamera *cam,
                                 const RtTraceParams *p, uint8_t *d_rgba, int w, int h,
                                 uint32_t *d_ids, RtTraceStats *stats, RtError *err)
{
    RtTraceParams params = p ? *p : rt_trace_params_default();
    if (!gs || !d_tree || !cam || !d_rgba || w <= 0 || h <= 0)
        return rt_fail(err, RT_ERR_ARG, "TRACE: missing scene, tree, camera or image (%dx%d)", w, h);
    RtStatus st = rt_trace_params_check(&params, err);
    if (st != RT_OK) return st;
    RtLaunchLog *log = rt_gpu_scene_launch_log(gs);
    if (log->pending > RT_LAUNCH_MAX_TIMED / 2) rt_launch_log_reset(log);
    RtGpuTraceCounters *cnt = rt_gpu_scene_counters(gs);
    if (stats) CUDA_CHECK(err, cudaMemsetAsync(cnt, 0, sizeof *cnt, log->stream));

    RenderArgs ra;
    ra.cam = rt_camera_basis(*cam, w, h);
    ra.w = w;
    ra.h = h;
    ra.ray_map = params.ray_map;
    ra.max_bounces = params.max_bounces;
    ra.shadows = params.shadows;
    ra.refraction = params.refraction;
    ra.heatmap = params.heatmap;
    ra.background = params.background;
    ra.ambient = params.ambient;
    ra.rgba = d_rgba;
    ra.ids = d_ids;
    uint32_t threads = thread_count(params.ray_map, w, h);
    dim3 grid((threads + kBlock - 1) / kBlock);
    st = rt_launch(log, "trace_render", grid, dim3(kBlock), 0,
                   RT_TRACE_DISPATCH(render_kernel, &params), err, rt_gpu_scene_view(gs),
                   trace_tree(d_tree), trace_cfg(&params), ra, cnt);
    if (st != RT_OK || !stats) return st;
    RtGpuTraceCounters c;
    CUDA_CHECK(err, cudaMemcpy(&c, cnt, sizeof c, cudaMemcpyDeviceToHost));
    memset(stats, 0, sizeof *stats);
    stats->primary_rays = c.primary;
    stats->shadow_rays = c.shadow;
    stats->reflection_rays = c.reflection;
    stats->steps = c.steps;
    return kernel_ms(log, "trace_render", &stats->ms, err);
}

extern "C" RtStatus rt_trace_gpu_rays(RtGpuScene *gs, const RtKdTree *d_tree,
                                      const RtTraceParams *p, const RtGpuRay *d_rays,
                                      RtHit *d_hits, uint32_t *d_steps, uint32_t n, int width,
                                      int any_hit, double *ms, RtError *err)
{
    RtTraceParams params = p ? *p : rt_trace_params_default();
    if (!gs || !d_tree || (n && (!d_rays || !d_hits)) || width <= 0)
        return rt_fail(err, RT_ERR_ARG, "TRACE: ray cast needs a scene, a tree, rays and hits");
    RtStatus st = rt_trace_params_check(&params, err);
    if (st != RT_OK) return st;
    if (ms) *ms = 0.0;
    if (n == 0) return RT_OK;
    RtLaunchLog *log = rt_gpu_scene_launch_log(gs);
    if (log->pending > RT_LAUNCH_MAX_TIMED / 2) rt_launch_log_reset(log);
    int height = (int)((n + (uint32_t)width - 1) / (uint32_t)width);
    uint32_t threads = thread_count(params.ray_map, width, height);
    dim3 grid((threads + kBlock - 1) / kBlock);
    st = rt_launch(log, "trace_cast", grid, dim3(kBlock), 0,
                   RT_TRACE_DISPATCH(cast_kernel, &params), err, rt_gpu_scene_view(gs),
                   trace_tree(d_tree), trace_cfg(&params), d_rays, d_hits, d_steps, n, width,
                   params.ray_map, any_hit);
    if (st != RT_OK || !ms) return st;
    return kernel_ms(log, "trace_cast", ms, err);
}
