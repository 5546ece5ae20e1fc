/* trace.cu — GPU ray tracing of the shared kd-tree layout (kd_layout.h).
 *
 * The traversal loop, trace_ray<kTrav, kIsect, kPacket>, lives in
 * trace_ray.cuh (shared with the host emulation, trace_emu.cu); this file
 * gives it the device's scene and warp votes (DevPrims) and runs it from
 * the render and ray-cast kernels.
 *
 * Shading (render_kernel) is src/render/shade.h's, the CPU renderer's too;
 * what is the GPU's own is the data (per-triangle arrays, texture objects)
 * and the warp-uniform loop around it. docs/trace_gpu.md lists the
 * differences from the CPU image. */
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_check.h"
#include "gpu/gpu_scene_dev.h"
#include "trace/trace.h"
#define RT_TRACE_FN __device__
#include "trace/trace_ray.cuh"
#include "trace/trace_bvh.cuh"
#include "photon/kdp_warp.cuh"

/* ---- constants ------------------------------------------------------------ */

#define FULL_MASK 0xffffffffu
/* Threads per block: a multiple of the 32-thread warp (packets and tiles
 * need whole warps); 128 keeps several blocks resident per SM. */
static const int kBlock = 128;

/* ---- textures and the alpha filter -------------------------------------- */

/* Texture coordinate at barycentrics (u, v) of corners 1 and 2. */
__device__ static void tri_uv(const RtGpuSceneView &sc, uint32_t tri, float u, float v,
                              float *tu, float *tv)
{
    rt_shade_uv(&sc.uvs[6 * (size_t)tri], u, v, tu, tv);
}

/* rt_shade_texture_trilinear in the texture unit, at mip level lod: OBJ's
 * v = 0 is the image's bottom row and RtTexture row 0 its top, so the
 * lookup is at 1 - v; normalised coordinates put texel centres at
 * half-integers. */
__device__ static float4 sample(cudaTextureObject_t tex, float tu, float tv, float lod)
{
    return tex2DLod<float4>(tex, tu, 1.0f - tv, lod);
}

/* 0 where the material's map_d is a hole (rt_shade_alpha_passes). A scene
 * without cut-outs reads no material: every closer hit of a walk comes
 * here, and the two dependent loads were a twentieth of the bunny's cast. */
__device__ static bool alpha_pass(const RtGpuSceneView &sc, const TraceCfg &cfg, uint32_t tri,
                                  float u, float v)
{
    if (!cfg.textures || !sc.masks) return true;
    const RtGpuMaterial &m = sc.mats[sc.mat[tri]];
    if (!m.tex_mask) return true;
    float tu, tv;
    tri_uv(sc, tri, u, v, &tu, &tv);
    float4 x = sample(m.tex_mask, tu, tv, 0.0f); /* level 0: rt_shade_alpha_passes says why */
    return rt_shade_alpha_passes(x.x, x.y, x.z, x.w, m.mask_uses_alpha);
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
        return rt_isect_woop_finite(rows, o, d, tmin, tmax, t, u, v); /* tmax: the cell's exit */
    }
    const float4 *p = (const float4 *)&sc.verts[3 * (size_t)id];
    float4 a = __ldg(&p[0]), b = __ldg(&p[1]), c = __ldg(&p[2]);
    return rt_isect_mt(v3(a.x, a.y, a.z), v3(b.x, b.y, b.z), v3(c.x, c.y, c.z), o, d, tmin, tmax,
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
    /* a BVH leaf's triangle rows (leaf_woop), read-only as the tree */
    __device__ void woop_rows(const RtFloat4 *p, RtFloat4 rows[3]) const
    {
        const float4 *q = (const float4 *)p;
        for (int k = 0; k < 3; k++) {
            float4 r = __ldg(&q[k]);
            rows[k] = f4(r.x, r.y, r.z, r.w);
        }
    }
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
    /* a leaf's box: three 8-byte loads (boxes are 24 bytes apart) */
    __device__ RtAabb box(const RtAabb *p) const
    {
        const float2 *q = (const float2 *)p;
        const float2 a = __ldg(&q[0]), b = __ldg(&q[1]), c = __ldg(&q[2]);
        RtAabb r;
        r.lo = v3(a.x, a.y, b.x);
        r.hi = v3(b.y, c.x, c.y);
        return r;
    }
    __device__ RtBvhNode bvh_node(const RtBvhNode *p) const
    {
        const float4 *q = (const float4 *)p;
        float4 a = __ldg(&q[0]), b = __ldg(&q[1]), c = __ldg(&q[2]);
        uint4 e = __ldg((const uint4 *)&q[3]);
        RtBvhNode n;
        n.b[0] = f4(a.x, a.y, a.z, a.w);
        n.b[1] = f4(b.x, b.y, b.z, b.w);
        n.b[2] = f4(c.x, c.y, c.z, c.w);
        n.child[0] = e.x;
        n.child[1] = e.y;
        n.count[0] = e.z;
        n.count[1] = e.w;
        return n;
    }
};

/* ---- the structure a kernel walks ---------------------------------------- */

/* A kernel is instantiated per walk: the kd-tree loop with its variants
 * (trace_ray.cuh), or the BVH loop (trace_bvh.cuh). Tree is what the
 * kernel receives by value; trace() is the one call the shading makes. */
template <int kTrav, int kIsect, bool kPacket>
struct KdWalk {
    typedef TraceTree Tree;
    static const bool packet = kPacket;
    __device__ static RtHit trace(const DevPrims &pr, const Tree &tr, RtVec3 o, RtVec3 d, float tmin,
                                  float tmax, bool live, bool any, uint32_t *steps)
    {
        return trace_ray<kTrav, kIsect, kPacket>(pr, tr, pr.cfg, o, d, tmin, tmax, live, any, steps);
    }
};

template <int kIsect>
struct BvhWalk {
    typedef TraceBvh Tree;
    static const bool packet = false;
    __device__ static RtHit trace(const DevPrims &pr, const Tree &bv, RtVec3 o, RtVec3 d, float tmin,
                                  float tmax, bool live, bool any, uint32_t *steps)
    {
        return trace_bvh<kIsect>(pr, bv, o, d, tmin, tmax, live, any, steps);
    }
};

/* ---- shading (render/shade.h) -------------------------------------------- */

/* The surface at a hit of material m: corners from the per-triangle
 * arrays, the map_Kd texel from the texture unit at the mip level of a ray
 * cone `width` wide there (0: level 0). */
__device__ static RtShadeSurface surface_at(const RtGpuSceneView &sc, const TraceCfg &cfg,
                                            const RtGpuMaterial &m, RtVec3 dir, RtHit hit, float width)
{
    const RtFloat4 *pv = &sc.verts[3 * (size_t)hit.tri];
    const RtFloat4 *pn = &sc.normals[3 * (size_t)hit.tri];
    RtShadeSurface sf = rt_shade_surface(f4_xyz(pv[0]), f4_xyz(pv[1]), f4_xyz(pv[2]),
                                         f4_xyz(pn[0]), f4_xyz(pn[1]), f4_xyz(pn[2]), hit.u,
                                         hit.v, dir, m.shade.kd);
    if (cfg.textures && m.tex_kd) {
        const float *uv = &sc.uvs[6 * (size_t)hit.tri];
        float tu, tv;
        rt_shade_uv(uv, hit.u, hit.v, &tu, &tv);
        float lod = rt_shade_texture_lod(f4_xyz(pv[0]), f4_xyz(pv[1]), f4_xyz(pv[2]), uv, m.kd_w, m.kd_h, width,
                                         v3_dot(sf.ng, dir));
        float4 x = sample(m.tex_kd, tu, tv, lod);
        sf.albedo = v3_mul(sf.albedo, v3(x.x, x.y, x.z));
    }
    return sf;
}

/* Sums x over the warp and adds it to *c once (every lane calls it). */
__device__ static void count_warp(unsigned long long *c, uint32_t x)
{
    uint32_t s = __reduce_add_sync(FULL_MASK, x);
    if ((threadIdx.x & 31u) == 0 && s) atomicAdd(c, (unsigned long long)s);
}

typedef struct RenderArgs {
    RtCameraBasis cam;
    int w, h, ray_map;
    RtShadeParams shade;
    uint8_t *rgba;
    uint32_t *ids;
    RtPhotonMaps photons; /* device pointers; valid when has_photons */
    int has_photons;
    RtFloat4 *accum;      /* accumulation sums (device, w*h) or NULL */
    RtShadeEnv env;       /* the environment map (device; rgb NULL: none) */
    RtShadeEmitters emit; /* the emissive triangles (device; with shade.emitters) */
} RenderArgs;

/* The photon maps' radiance at sf (photon.h's rt_photon_radiance), each
 * map's k nearest found by the calling lanes' joint walk (kdp_warp.cuh:
 * a warp's pixels need nearly the same nodes). Not inlined: its 64-entry
 * neighbour list then lives in this call's frame, and the render kernel
 * keeps its own registers and stack when photon mapping is off. */
__device__ __noinline__ static RtVec3 photon_gather(const RtPhotonMaps &maps, const RtShadeSurface &sf)
{
    RtKdpHit scratch[RT_KDP_MAX_KNN];
    const float q[3] = {sf.p.x, sf.p.y, sf.p.z};
    RtVec3 sum = v3(0.0f, 0.0f, 0.0f);
    for (int m = 0; m < RT_PHOTON_MAPS; m++) {
        const uint32_t n = kdp_knn_collect_warp(&maps.map[m].tree, q, maps.k, maps.r2, scratch);
        sum = v3_add(sum, rt_photon_estimate_hits(&maps.map[m], n, maps.k, maps.r2, &sf, scratch));
    }
    return sum;
}

/* Whether the ray (o, d) up to tmax escapes: the any-hit casts of ambient
 * occlusion and the environment light. Not inlined: those effects then
 * share one copy of the traversal, and the render kernel keeps the
 * registers of its own two inlined casts (the chain's and the shadow
 * ray's) -- every inlined cast site made the kernel larger and, past
 * three, spill. Every lane calls it (packets need the warp). */
template <class Walk>
__device__ __noinline__ static bool escapes(const RtGpuSceneView &sc, const typename Walk::Tree &tr,
                                            const TraceCfg &cfg, RtVec3 o, RtVec3 d, float tmax, bool live)
{
    RtHit h = Walk::trace(DevPrims{sc, cfg}, tr, o, d, 0.0f, tmax, live, true, NULL);
    return live && h.tri == RT_NO_HIT;
}

/* One pixel per thread: shade.h's Whitted chain (render_cpu.c's
 * trace_pixel), unrolled with warp-uniform trip counts (every lane calls
 * trace_ray the same number of times, as packets need: the AO rays by
 * ao_rays, a shadow ray's crossings until a warp vote says none goes on),
 * then sRGB out. kRich: the frame uses ambient occlusion, an environment
 * light, shadows through glass or photon maps (render_rich, chosen per
 * frame by rt_trace_gpu); without them the kernel is compiled without their
 * code, so the common frame keeps the registers of a plain Whitted chain
 * (their code pushed it past 128 registers into spills: primary rays 49 %
 * slower on Sponza, NVIDIA H200). */
template <class Walk, bool kRich>
__device__ __forceinline__ static void render_pixel(const RtGpuSceneView &sc, const typename Walk::Tree &tr,
                                                    const TraceCfg &cfg, const RenderArgs &ra,
                                                    RtGpuTraceCounters *cnt)
{
    uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
    int px, py;
    bool valid = pixel_of(ra.ray_map, tid, ra.w, ra.h, &px, &py);
    size_t pixel = valid ? (size_t)py * ra.w + px : 0;
    float jx = 0.5f, jy = 0.5f;
    if (valid) rt_sample_jitter((uint32_t)pixel, ra.shade.sample, &jx, &jy);
    RtVec3 dir = valid ? rt_camera_dir(&ra.cam, (float)px + jx, (float)py + jy) : v3(0, 0, 1);
    RtRay ray = {ra.cam.o, dir};
    bool through = kRich && rt_shade_shadow_casts_through(&ra.shade, sc.transmits);
    RtShadePath path = rt_shade_path_start();
    RtShadeCone cone = rt_shade_cone_primary(&ra.shade, &ra.cam);
    bool alive = valid;
    uint32_t id = RT_NO_HIT, steps = 0, n_shadow = 0, n_refl = 0;
    for (int depth = 0; depth <= ra.shade.max_bounces; depth++) {
        if (depth > 0 && alive) n_refl++;
        RtHit hit = Walk::trace(DevPrims{sc, cfg}, tr, ray.o, ray.d, 0.0f, INFINITY, alive, false,
                                depth == 0 ? &steps : NULL);
        if (alive && hit.tri == RT_NO_HIT) {
            rt_shade_path_miss(&path, rt_shade_background(&ra.shade, &ra.env, ray.d));
            alive = false;
        }
        if (depth == 0 && alive) id = hit.tri;
        RtShadeSurface sf = {};
        RtGpuMaterial m = {};
        RtVec3 local = v3(0, 0, 0), origin = v3(0, 0, 0);
        if (alive) {
            m = sc.mats[sc.mat[hit.tri]];
            sf = surface_at(sc, cfg, m, ray.d, hit, rt_shade_cone_hit(&cone, hit.t));
            origin = rt_shade_offset(&sf, sc.eps);
        }
        /* ambient occlusion: every lane casts ao_rays (warp-uniform), counted as shadow rays */
        int open = 0;
        for (int k = 0; kRich && k < ra.shade.ao_rays; k++) {
            RtRay ar = {origin, v3(0, 0, 1)};
            if (alive) ar = rt_sample_ao_ray(&ra.shade, &sf, (uint32_t)pixel, depth, k, sc.eps);
            open += escapes<Walk>(sc, tr, cfg, ar.o, ar.d, rt_sample_ao_reach(&ra.shade, sc.eps), alive);
            n_shadow += alive;
        }
        if (alive)
            local = rt_shade_ambient(&m.shade, &sf, kRich ? rt_sample_ao_ambient(&ra.shade, open) : ra.shade.ambient);
        /* the environment as a light: one ray per sample, every lane (ra.env is the kernel's) */
        if (kRich && ra.env.rgb) {
            RtRay er = {origin, v3(0, 0, 1)};
            if (alive) er = rt_sample_env_ray(&ra.shade, &sf, (uint32_t)pixel, depth, sc.eps);
            if (escapes<Walk>(sc, tr, cfg, er.o, er.d, INFINITY, alive))
                local = v3_add(local, v3_mul(sf.albedo, rt_shade_env_radiance(&ra.env, er.d)));
            n_shadow += alive;
        }
        /* direct light: every lane walks every light (warp-uniform shadow casts) */
        uint32_t lights = sc.light_count + (ra.shade.emitters && ra.emit.count > 0);
        for (uint32_t li = 0; li < lights; li++) {
            RtLight l = rt_sample_light_or_emitter(sc.lights, sc.light_count, &ra.emit, sc.verts, li, sf.p,
                                                   (uint32_t)pixel, ra.shade.sample);
            RtShadeLight ld = rt_shade_light_none();
            if (alive) ld = rt_shade_light(&sf, &l);
            if (ra.shade.shadows) {
                float tmax, tmin = 0.0f;
                bool cast = rt_shade_shadow_ray(&ld, sc.eps, &tmax);
                n_shadow += ld.lit;
                RtVec3 trans = v3(1, 1, 1);
                /* opaque scenes: one any-hit cast; through glass: closest hits, a crossing
                 * each (render_cpu.c's shadow_transmittance), until no lane's ray goes on */
                for (int crossing = 0; __any_sync(FULL_MASK, cast); crossing++) {
                    RtHit sh = Walk::trace(DevPrims{sc, cfg}, tr, origin, ld.L, tmin, tmax, cast, !through, NULL);
                    bool hit_sth = cast && sh.tri != RT_NO_HIT;
                    cast = hit_sth && through &&
                           rt_shade_shadow_cross(&ra.shade, &sc.mats[sc.mat[sh.tri]].shade, origin, ld.L, sh.t,
                                                 tmax, sc.eps, crossing, &trans, &tmin);
                    if (hit_sth && !through) trans = v3(0, 0, 0);
                    n_shadow += cast;
                }
                if (!(fmaxf(trans.x, fmaxf(trans.y, trans.z)) > 0.0f)) ld.lit = 0;
                l.color = v3_mul(l.color, trans);
            }
            if (ld.lit)
                local = v3_add(local, rt_shade_light_term(&sf, &m.shade, l.color, &ld,
                                                          v3_scale(ray.d, -1.0f)));
        }
        if (kRich && alive && ra.has_photons && rt_photon_gathers(&ra.shade, &m.shade))
            local = v3_add(local, photon_gather(ra.photons, sf));
        if (!alive) continue;
        /* continue the chain: refraction, mirror, or the end */
        alive = rt_shade_path_next(&path, &ra.shade, &m.shade, &sf, local, sc.eps, depth, &ray);
    }
    count_warp(&cnt->primary, valid ? 1u : 0u);
    count_warp(&cnt->shadow, n_shadow);
    count_warp(&cnt->reflection, n_refl);
    count_warp(&cnt->steps, steps);
    if (!valid) return;
    size_t i = pixel;
    if (ra.accum) path.color = rt_shade_accumulate(&ra.accum[i], path.color, ra.shade.sample);
    uint8_t out[4];
    rt_shade_pixel(&ra.shade, path.color, steps, out);
    ((uchar4 *)ra.rgba)[i] = make_uchar4(out[0], out[1], out[2], out[3]);
    if (ra.ids) ra.ids[i] = id;
}

/* Blocks per SM the shading kernel is compiled for: 5 x 128 threads leave
 * 102 registers a thread; the compiler's own choice for the kd walk fits
 * only 4 blocks, which traced slower than 5 with a few spills
 * (docs/trace_gpu.md). */
static const int kRenderMinBlocks = 5;
template <class Walk>
__global__ void __launch_bounds__(kBlock, kRenderMinBlocks) render_kernel(RtGpuSceneView sc, typename Walk::Tree tr, TraceCfg cfg,
                                                        RenderArgs ra, RtGpuTraceCounters *cnt)
{
    render_pixel<Walk, false>(sc, tr, cfg, ra, cnt);
}

template <class Walk>
__global__ void __launch_bounds__(kBlock) render_rich(RtGpuSceneView sc, typename Walk::Tree tr, TraceCfg cfg,
                                                      RenderArgs ra, RtGpuTraceCounters *cnt)
{
    render_pixel<Walk, true>(sc, tr, cfg, ra, cnt);
}

typedef struct PhotonArgs {
    RtPhotonParams pp;
    RtPhotonScene ps;
    RtShadeParams shade;
    RtPhotonSlots slots; /* device arrays */
} PhotonArgs;

/* One photon per thread (render_cpu.c's photon_task): emission, then
 * photon.h's rt_photon_hit per hit, each store in slot i * max_depth +
 * depth. Every lane of a warp calls trace each round (packets need it)
 * until none is left. */
template <class Walk>
__global__ void __launch_bounds__(kBlock) photon_kernel(RtGpuSceneView sc, typename Walk::Tree tr,
                                                        TraceCfg cfg, PhotonArgs pa)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    bool alive = i < pa.pp.count;
    RtRay ray = {v3(0, 0, 0), v3(0, 0, 1)};
    RtPhotonPath ph = {v3(0, 0, 0), 0};
    if (alive) {
        rt_photon_slots_clear(&pa.slots, i);
        rt_photon_emit(sc.lights, sc.light_count, &pa.ps, i, pa.pp.count, pa.pp.seed, &ray, &ph.power);
    }
    for (uint32_t depth = 0; depth < pa.pp.max_depth && __any_sync(FULL_MASK, alive); depth++) {
        RtHit hit = Walk::trace(DevPrims{sc, cfg}, tr, ray.o, ray.d, 0.0f, INFINITY, alive, false, NULL);
        if (alive && hit.tri == RT_NO_HIT) alive = false;
        if (!alive) continue;
        RtGpuMaterial m = sc.mats[sc.mat[hit.tri]];
        RtShadeSurface sf = surface_at(sc, cfg, m, ray.d, hit, 0.0f); /* a photon has no footprint */
        RtPhoton arriving = {ph.power, ray.d};
        uint32_t store;
        alive = rt_photon_hit(&ph, &pa.shade, &m.shade, &sf, ray.d, sc.eps, i, pa.pp.seed, depth, &store, &ray);
        if (store != RT_PHOTON_NONE) rt_photon_slot_store(&pa.slots, i, depth, store, sf.p, arriving);
    }
}

/* Ray casting for tests and benchmarks: ray i is pixel (i % width, i / width). */
/* Blocks per SM the ray cast is compiled for: 9 x 128 threads leave 56
 * registers a thread, which the BVH walk fits without spilling (the
 * compiler's own choice, 61, allowed 8 blocks: Sponza's primary rays
 * 2,842 against 2,998 Mrays/s, H-PLOC tree, NVIDIA H200; 10 blocks, 48
 * registers: 2,889; 12: 2,019, spilling). */
static const int kCastMinBlocks = 9;
/* The ray cast's grid: a row of blocks (blockIdx.y, and blockIdx.z past
 * 65,535 rows) per row of 4x8 tiles, or of pixels with the rows map, so a
 * thread finds its pixel without a division (pixel_of's tid / tiles_x was
 * a sixth of the setup of a ray that misses the scene box). A warp is still
 * one tile, as pixel_of has it; with the rows map it is 32 pixels of one
 * row (pixel_of wraps rows when the width is not a multiple of 32). */
static dim3 cast_grid(int ray_map, int w, int h)
{
    const bool tiles = ray_map == RT_RAYMAP_TILES;
    const uint32_t per_row = tiles ? (uint32_t)((w + TILE_W - 1) / TILE_W) * TILE_W * TILE_H : (uint32_t)w;
    const uint32_t rows = tiles ? (uint32_t)((h + TILE_H - 1) / TILE_H) : (uint32_t)h;
    const uint32_t y = rows < 65535u ? rows : 65535u;
    return dim3((per_row + kBlock - 1) / kBlock, y, (rows + y - 1) / y);
}

/* Thread -> pixel in cast_grid's launch. */
__device__ static bool cast_pixel(int ray_map, int w, int h, int *px, int *py)
{
    const uint32_t x = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.z * gridDim.y + blockIdx.y;
    if (ray_map == RT_RAYMAP_TILES) {
        tile_pixel(x / (TILE_W * TILE_H), row, x % (TILE_W * TILE_H), px, py);
    } else {
        *px = (int)x;
        *py = (int)row;
    }
    return *px < w && *py < h;
}

/* rays NULL: pixel i's primary ray through its centre, made here from cam
 * (rt_trace_gpu_camera_rays), else ray i read from rays. */
template <class Walk>
__global__ void __launch_bounds__(kBlock, kCastMinBlocks) cast_kernel(RtGpuSceneView sc, typename Walk::Tree tr,
                                                      TraceCfg cfg, const RtGpuRay *rays, RtCameraBasis cam,
                                                      RtHit *hits, uint32_t *steps_out, uint32_t n,
                                                      int width, int height, int ray_map, int any)
{
    int px, py;
    bool valid = cast_pixel(ray_map, width, height, &px, &py);
    uint32_t i = (uint32_t)py * (uint32_t)width + (uint32_t)px;
    valid = valid && i < n;
    RtGpuRay r;
    if (valid && !rays) {
        r.o = cam.o;
        r.d = rt_camera_dir(&cam, (float)px + 0.5f, (float)py + 0.5f);
        r.tmin = 0.0f;
        r.tmax = INFINITY;
    } else if (valid) {
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
    RtHit h = Walk::trace(DevPrims{sc, cfg}, tr, r.o, r.d, r.tmin, r.tmax, valid, any != 0, &steps);
    if (!valid) return;
    /* one 16-byte store (RtHit is t, u, v, tri; cudaMalloc aligns) */
    reinterpret_cast<float4 *>(hits)[i] = make_float4(h.t, h.u, h.v, __uint_as_float(h.tri));
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

static TraceBvh trace_bvh_of(const RtBvh *b)
{
    TraceBvh bv;
    bv.nodes = b->nodes;
    bv.index = b->tri_index;
    bv.leaf_woop = b->leaf_woop;
    bv.bounds = b->bounds;
    bv.d_bounds = b->d_bounds;
    bv.node_count = b->d_bounds ? 1u : (aabb_is_empty(b->bounds) ? 0u : b->node_count);
    return bv;
}

/* The one place a variant becomes a kernel instantiation: the kd-tree's
 * traversal x test x packets, the BVH's test. */
#define RT_KD_DISPATCH_T(kernel, p, kT)                                                         \
    ((p)->isect == RT_ISECT_WOOP                                                                \
         ? ((p)->packet ? kernel<KdWalk<kT, RT_ISECT_WOOP, true>> : kernel<KdWalk<kT, RT_ISECT_WOOP, false>>) \
         : ((p)->packet ? kernel<KdWalk<kT, RT_ISECT_MT, true>> : kernel<KdWalk<kT, RT_ISECT_MT, false>>))
#define RT_KD_DISPATCH(kernel, p)                                                                \
    ((p)->traversal == RT_TRAV_RESTART       ? RT_KD_DISPATCH_T(kernel, p, RT_TRAV_RESTART)     \
     : (p)->traversal == RT_TRAV_SHORT_STACK ? RT_KD_DISPATCH_T(kernel, p, RT_TRAV_SHORT_STACK) \
                                             : RT_KD_DISPATCH_T(kernel, p, RT_TRAV_STACK))
#define RT_BVH_DISPATCH(kernel, p)                                                               \
    ((p)->isect == RT_ISECT_WOOP ? kernel<BvhWalk<RT_ISECT_WOOP>> : kernel<BvhWalk<RT_ISECT_MT>>)

static RtStatus accel_check(const RtAccel *a, RtError *err)
{
    if (!a || (a->kind == RT_ACCEL_KD && !a->kd) || (a->kind == RT_ACCEL_BVH && !a->bvh) ||
        (a->kind != RT_ACCEL_KD && a->kind != RT_ACCEL_BVH))
        return rt_fail(err, RT_ERR_ARG, "TRACE: no acceleration structure given");
    if (a->kind == RT_ACCEL_BVH && a->bvh->index_count > RT_BVH_MAX_INDEX)
        return rt_fail(err, RT_ERR_ARG, "TRACE: a BVH of %u triangle references is beyond the walk's %u",
                       a->bvh->index_count, RT_BVH_MAX_INDEX);
    return RT_OK;
}

static TraceCfg trace_cfg(const RtTraceParams *p)
{
    TraceCfg c;
    c.leaf_skip = p->leaf_skip;
    c.stack_size = p->stack_size;
    c.textures = p->shade.textures;
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

extern "C" RtStatus rt_trace_gpu(RtGpuScene *gs, const RtAccel *accel, const RtShadeFrame *frame,
                                 const RtCamera *cam, const RtTraceParams *p, uint8_t *d_rgba, int w,
                                 int h, uint32_t *d_ids, RtTraceStats *stats, RtError *err)
{
    RtTraceParams params = p ? *p : rt_trace_params_default();
    if (!gs || !cam || !d_rgba || w <= 0 || h <= 0)
        return rt_fail(err, RT_ERR_ARG, "TRACE: missing scene, camera or image (%dx%d)", w, h);
    RtStatus st = accel_check(accel, err);
    if (st == RT_OK) st = rt_trace_params_check(&params, err);
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
    ra.shade = params.shade;
    ra.rgba = d_rgba;
    ra.ids = d_ids;
    ra.has_photons = frame && frame->photons;
    if (ra.has_photons) ra.photons = *frame->photons;
    else memset(&ra.photons, 0, sizeof ra.photons);
    ra.accum = frame ? frame->accum : NULL;
    if (frame) ra.env = frame->env, ra.emit = frame->emit;
    else memset(&ra.env, 0, sizeof ra.env), memset(&ra.emit, 0, sizeof ra.emit);
    uint32_t threads = thread_count(ra.ray_map, w, h);
    dim3 grid((threads + kBlock - 1) / kBlock);
    RtGpuSceneView view = rt_gpu_scene_view(gs);
    /* the kernel with the extra effects' code only for a frame that uses them */
    bool rich = params.shade.ao_rays > 0 || ra.env.rgb || ra.has_photons ||
                rt_shade_shadow_casts_through(&params.shade, view.transmits);
    if (accel->kind == RT_ACCEL_BVH)
        st = rt_launch(log, "trace_render", grid, dim3(kBlock), 0,
                       rich ? RT_BVH_DISPATCH(render_rich, &params) : RT_BVH_DISPATCH(render_kernel, &params), err,
                       view, trace_bvh_of(accel->bvh), trace_cfg(&params), ra, cnt);
    else
        st = rt_launch(log, "trace_render", grid, dim3(kBlock), 0,
                       rich ? RT_KD_DISPATCH(render_rich, &params) : RT_KD_DISPATCH(render_kernel, &params), err,
                       view, trace_tree(accel->kd), trace_cfg(&params), ra, cnt);
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

/* The casts of rt_trace_gpu_rays and rt_trace_gpu_camera_rays: d_rays
 * NULL makes each pixel's primary ray from cam. */
static RtStatus trace_cast(RtGpuScene *gs, const RtAccel *accel, const RtTraceParams *p, const RtGpuRay *d_rays,
                           const RtCameraBasis &cam, RtHit *d_hits, uint32_t *d_steps, uint32_t n, int width,
                           int any_hit, double *ms, RtError *err)
{
    RtTraceParams params = p ? *p : rt_trace_params_default();
    RtStatus st = accel_check(accel, err);
    if (st == RT_OK) st = rt_trace_params_check(&params, err);
    if (st != RT_OK) return st;
    if (ms) *ms = 0.0;
    if (n == 0) return RT_OK;
    RtLaunchLog *log = rt_gpu_scene_launch_log(gs);
    if (log->pending > RT_LAUNCH_MAX_TIMED / 2) rt_launch_log_reset(log);
    int height = (int)((n + (uint32_t)width - 1) / (uint32_t)width);
    int ray_map = params.ray_map;
    dim3 grid = cast_grid(ray_map, width, height);
    if (accel->kind == RT_ACCEL_BVH)
        st = rt_launch(log, "trace_cast", grid, dim3(kBlock), 0, RT_BVH_DISPATCH(cast_kernel, &params), err,
                       rt_gpu_scene_view(gs), trace_bvh_of(accel->bvh), trace_cfg(&params), d_rays, cam, d_hits,
                       d_steps, n, width, height, ray_map, any_hit);
    else
        st = rt_launch(log, "trace_cast", grid, dim3(kBlock), 0, RT_KD_DISPATCH(cast_kernel, &params), err,
                       rt_gpu_scene_view(gs), trace_tree(accel->kd), trace_cfg(&params), d_rays, cam, d_hits,
                       d_steps, n, width, height, ray_map, any_hit);
    if (st != RT_OK || !ms) return st;
    return kernel_ms(log, "trace_cast", ms, err);
}

extern "C" RtStatus rt_trace_gpu_rays(RtGpuScene *gs, const RtAccel *accel,
                                      const RtTraceParams *p, const RtGpuRay *d_rays,
                                      RtHit *d_hits, uint32_t *d_steps, uint32_t n, int width,
                                      int any_hit, double *ms, RtError *err)
{
    if (!gs || (n && (!d_rays || !d_hits)) || width <= 0)
        return rt_fail(err, RT_ERR_ARG, "TRACE: ray cast needs a scene, rays and hits");
    if (((uintptr_t)d_rays | (uintptr_t)d_hits) & 15u) /* the kernel's 16-byte loads and stores */
        return rt_fail(err, RT_ERR_ARG, "TRACE: ray cast needs rays and hits at 16-byte aligned addresses");
    RtCameraBasis none;
    memset(&none, 0, sizeof none);
    return trace_cast(gs, accel, p, d_rays, none, d_hits, d_steps, n, width, any_hit, ms, err);
}

extern "C" RtStatus rt_trace_gpu_camera_rays(RtGpuScene *gs, const RtAccel *accel, const RtTraceParams *p,
                                             const RtCamera *cam, int width, int height, RtHit *d_hits,
                                             uint32_t *d_steps, double *ms, RtError *err)
{
    if (!gs || !cam || !d_hits || width <= 0 || height <= 0)
        return rt_fail(err, RT_ERR_ARG, "TRACE: camera cast needs a scene, a camera, hits and a size (%dx%d)",
                       width, height);
    if ((uintptr_t)d_hits & 15u)
        return rt_fail(err, RT_ERR_ARG, "TRACE: camera cast needs hits at a 16-byte aligned address");
    const RtCameraBasis basis = rt_camera_basis(*cam, width, height);
    return trace_cast(gs, accel, p, NULL, basis, d_hits, d_steps, (uint32_t)width * (uint32_t)height, width, 0, ms,
                      err);
}

extern "C" RtStatus rt_trace_gpu_photons(RtGpuScene *gs, const RtAccel *accel, const RtTraceParams *p,
                                         const RtPhotonParams *pp, RtAabb rest_bounds,
                                         const RtPhotonSlots *d_slots, double *ms, RtError *err)
{
    RtTraceParams params = p ? *p : rt_trace_params_default();
    if (!gs || !pp || !d_slots) return rt_fail(err, RT_ERR_ARG, "PHOTON: trace needs a scene, parameters and slots");
    if (d_slots->count < pp->count || d_slots->max_depth != pp->max_depth)
        return rt_fail(err, RT_ERR_ARG, "PHOTON: slots for %u x %u, asked for %u x %u", d_slots->count,
                       d_slots->max_depth, pp->count, pp->max_depth);
    RtStatus st = accel_check(accel, err);
    if (st == RT_OK) st = rt_trace_params_check(&params, err);
    if (st != RT_OK) return st;
    if (ms) *ms = 0.0;
    RtGpuSceneView view = rt_gpu_scene_view(gs);
    RtLaunchLog *log = rt_gpu_scene_launch_log(gs);
    if (pp->count == 0 || view.light_count == 0) {
        /* no photons: every slot of the asked-for range empty */
        if (pp->count)
            CUDA_CHECK(err, cudaMemsetAsync(d_slots->kind, RT_PHOTON_NONE, (size_t)pp->count * pp->max_depth,
                                            log->stream));
        return RT_OK;
    }
    if (log->pending > RT_LAUNCH_MAX_TIMED / 2) rt_launch_log_reset(log);
    PhotonArgs pa;
    pa.pp = *pp;
    pa.ps = rt_photon_scene(rest_bounds);
    pa.shade = params.shade;
    pa.slots = *d_slots;
    dim3 grid((pp->count + kBlock - 1) / kBlock);
    if (accel->kind == RT_ACCEL_BVH)
        st = rt_launch(log, "trace_photons", grid, dim3(kBlock), 0, RT_BVH_DISPATCH(photon_kernel, &params), err,
                       view, trace_bvh_of(accel->bvh), trace_cfg(&params), pa);
    else
        st = rt_launch(log, "trace_photons", grid, dim3(kBlock), 0, RT_KD_DISPATCH(photon_kernel, &params), err,
                       view, trace_tree(accel->kd), trace_cfg(&params), pa);
    if (st != RT_OK || !ms) return st;
    return kernel_ms(log, "trace_photons", ms, err);
}
