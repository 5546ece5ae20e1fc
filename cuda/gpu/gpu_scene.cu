/* gpu_scene.cu — upload of the scene's shading data and of host kd-trees,
 * and the per-frame kernel that turns triangle vertices into Woop rows.
 *
 * Host driver of a frame: rt_gpu_scene_update_tris (copy or take the
 * animated vertices, one thread per triangle computes its rows). Everything
 * else happens once, at scene load. */
#include <stdlib.h>
#include <string.h>

#include "gpu/cuda_check.h"
#include "gpu/gpu.h"
#include "gpu/coalesce.cuh"
#include "gpu/gpu_scene_dev.h"

/* Threads per block of the Woop kernel: a multiple of the warp size. */
static constexpr int kWoopBlock = 256;

struct RtGpuScene {
    RtGpuSceneView view;
    /* owned device buffers (the view's const pointers alias them) */
    RtFloat4 *d_verts, *d_woop, *d_normals;
    float *d_uvs;
    uint32_t *d_mat;
    RtGpuMaterial *d_mats;
    RtLight *d_lights;
    uint32_t tri_cap;
    /* textures */
    cudaMipmappedArray_t *arrays;
    cudaTextureObject_t *tex_srgb, *tex_raw;
    uint32_t tex_count;
    RtGpuTraceCounters *d_counters;
    RtLaunchLog log; /* every launch of the woop and trace stages, timed */
};

/* ---- Woop rows, per frame (Woop 2004; Hoedt 2011 4.3.2) ------------------ */

/* One thread per triangle: vertices -> device copy + 3 rows, rounded as
 * the host rounds them (rt_woop_rows, rt_base.h's RT_X*). A degenerate triangle gets zero
 * rows, which never hit (rt_tri_arrays_make does the same). */
__global__ void __launch_bounds__(kWoopBlock) woop_rows_kernel(const RtFloat4 *in, RtFloat4 *verts, RtFloat4 *woop,
                                                               uint32_t count)
{
    __shared__ RtFloat4 sh[3 * kWoopBlock];
    RtFloat4 v[3] = {}, rows[3] = {};
    rt_load3<kWoopBlock>(in, count, sh, v);
    if (blockIdx.x * kWoopBlock + threadIdx.x < count &&
        !rt_woop_rows(f4_xyz(v[0]), f4_xyz(v[1]), f4_xyz(v[2]), rows))
        rows[0] = rows[1] = rows[2] = f4(0.0f, 0.0f, 0.0f, 0.0f);
    if (verts != in) rt_store3<kWoopBlock>(verts, count, sh, v);
    rt_store3<kWoopBlock>(woop, count, sh, rows);
}

extern "C" RtStatus rt_gpu_scene_update_tris(RtGpuScene *gs, const RtFloat4 *verts,
                                             uint32_t count, int verts_on_device, RtError *err)
{
    if (!gs || (!verts && count))
        return rt_fail(err, RT_ERR_ARG, "TRACE: update_tris needs a scene and vertices");
    if (count != gs->view.tri_count)
        return rt_fail(err, RT_ERR_ARG,
                       "TRACE: update_tris got %u triangles, the scene has %u (the shading "
                       "data is per triangle)", count, gs->view.tri_count);
    if (count == 0) return RT_OK;
    /* Host vertices go straight into the scene's vertex array (the copy is
     * ordered on the default stream after the previous frame's builds and
     * traces, which every stage joins back into it), and the Woop rows are
     * made from them in place: no staging copy of 48 bytes a triangle. */
    const RtFloat4 *src = verts;
    if (!verts_on_device) {
        CUDA_CHECK(err, cudaMemcpy(gs->d_verts, verts, (size_t)count * 3 * sizeof(RtFloat4),
                                   cudaMemcpyHostToDevice));
        src = gs->d_verts;
    }
    dim3 blocks((count + kWoopBlock - 1) / kWoopBlock);
    return rt_launch(&gs->log, "woop_rows", blocks, dim3(kWoopBlock), 0, woop_rows_kernel, err,
                     src, gs->d_verts, gs->d_woop, count);
}

/* ---- scene upload, once -------------------------------------------------- */

/* Two texture objects over one mipmapped array holding the levels the host
 * built (rt_texture_build_mips; CUDA's level extents are the same halvings):
 * sRGB-decoded for map_Kd (the hardware converts each texel before
 * filtering, as the CPU renderer does) and raw for map_d. Bilinear within a
 * level, linear between levels (trilinear, tex2DLod), wrap, normalised
 * coordinates. */
static RtStatus upload_texture(RtGpuScene *gs, uint32_t i, const RtTexture *t, RtError *err)
{
    cudaChannelFormatDesc fmt = cudaCreateChannelDesc<uchar4>();
    unsigned levels = t->levels > 1 ? (unsigned)t->levels : 1u;
    CUDA_CHECK(err, cudaMallocMipmappedArray(&gs->arrays[i], &fmt, make_cudaExtent((size_t)t->w, (size_t)t->h, 0),
                                             levels, 0));
    for (unsigned l = 0; l < levels; l++) {
        RtTexture lv = rt_texture_level(t, (int)l);
        cudaArray_t a;
        CUDA_CHECK(err, cudaGetMipmappedArrayLevel(&a, gs->arrays[i], l));
        CUDA_CHECK(err, cudaMemcpy2DToArray(a, 0, 0, lv.rgba, (size_t)lv.w * 4, (size_t)lv.w * 4, (size_t)lv.h,
                                            cudaMemcpyHostToDevice));
    }
    cudaResourceDesc res;
    memset(&res, 0, sizeof res);
    res.resType = cudaResourceTypeMipmappedArray;
    res.res.mipmap.mipmap = gs->arrays[i];
    cudaTextureDesc td;
    memset(&td, 0, sizeof td);
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeWrap;
    td.filterMode = cudaFilterModeLinear;
    td.mipmapFilterMode = cudaFilterModeLinear;
    td.maxMipmapLevelClamp = (float)(levels - 1);
    td.readMode = cudaReadModeNormalizedFloat;
    td.normalizedCoords = 1;
    td.sRGB = 1;
    CUDA_CHECK(err, cudaCreateTextureObject(&gs->tex_srgb[i], &res, &td, NULL));
    td.sRGB = 0;
    CUDA_CHECK(err, cudaCreateTextureObject(&gs->tex_raw[i], &res, &td, NULL));
    return RT_OK;
}

static int texture_usable(const RtScene *s, int32_t i)
{
    return i >= 0 && (uint32_t)i < s->tex_count && s->texs[i].rgba && s->texs[i].w > 0 &&
           s->texs[i].h > 0;
}

static RtGpuMaterial gpu_material(const RtScene *s, const RtGpuScene *gs, const RtMaterial *m)
{
    RtGpuMaterial g;
    memset(&g, 0, sizeof g);
    g.shade = rt_shade_material(m);
    if (texture_usable(s, m->map_kd)) {
        g.tex_kd = gs->tex_srgb[m->map_kd];
        g.kd_w = s->texs[m->map_kd].w;
        g.kd_h = s->texs[m->map_kd].h;
    }
    if (texture_usable(s, m->map_d)) {
        g.tex_mask = gs->tex_raw[m->map_d];
        g.mask_uses_alpha = rt_shade_texture_has_alpha(&s->texs[m->map_d]);
    }
    return g;
}

template <typename T>
static RtStatus upload(T **dst, const T *src, size_t n, RtError *err)
{
    RtStatus st = rt_gpu_alloc((void **)dst, (n ? n : 1) * sizeof(T), "the scene's arrays", err);
    if (st != RT_OK) return st;
    if (n) CUDA_CHECK(err, cudaMemcpy(*dst, src, n * sizeof(T), cudaMemcpyHostToDevice));
    return RT_OK;
}

static RtStatus scene_fill(RtGpuScene *gs, const RtScene *s, RtError *err)
{
    uint32_t n = s->tri_count;
    RtStatus st;
    /* per-corner shading data, flattened per triangle, and the positions */
    RtFloat4 *pos = (RtFloat4 *)malloc(((size_t)n * 3 + 1) * sizeof(RtFloat4));
    RtFloat4 *nrm = (RtFloat4 *)malloc(((size_t)n * 3 + 1) * sizeof(RtFloat4));
    float *uv = (float *)malloc(((size_t)n * 6 + 1) * sizeof(float));
    uint32_t *mat = (uint32_t *)malloc(((size_t)n + 1) * sizeof(uint32_t));
    RtGpuMaterial *mats = (RtGpuMaterial *)malloc((s->mat_count + 1) * sizeof(RtGpuMaterial));
    if (!pos || !nrm || !uv || !mat || !mats) {
        st = rt_fail(err, RT_ERR_OOM, "TRACE: out of host memory for the scene upload");
        goto out;
    }
    {
        RtAabb b = aabb_empty();
        for (uint32_t i = 0; i < n; i++) {
            const RtTriangle *t = &s->tris[i];
            for (int k = 0; k < 3; k++) {
                const RtVertex *v = &s->verts[t->v[k]];
                pos[3 * i + k] = f4(v->p.x, v->p.y, v->p.z, 0.0f);
                nrm[3 * i + k] = f4(v->n.x, v->n.y, v->n.z, 0.0f);
                uv[6 * i + 2 * k] = v->u;
                uv[6 * i + 2 * k + 1] = v->v;
                if (isfinite(v->p.x) && isfinite(v->p.y) && isfinite(v->p.z)) b = aabb_grow(b, v->p);
            }
            /* material -1 (or out of range) -> the default, stored last */
            mat[i] = (t->material >= 0 && (uint32_t)t->material < s->mat_count)
                         ? (uint32_t)t->material : s->mat_count;
        }
        gs->view.eps = rt_shade_ray_eps(b);
    }
    for (uint32_t i = 0; i < s->tex_count; i++)
        if (texture_usable(s, (int32_t)i) && (st = upload_texture(gs, i, &s->texs[i], err)) != RT_OK)
            goto out;
    gs->view.masks = 0;
    for (uint32_t i = 0; i < s->mat_count; i++) {
        mats[i] = gpu_material(s, gs, &s->mats[i]);
        gs->view.masks |= mats[i].tex_mask != 0;
    }
    {
        RtMaterial def = rt_material_default();
        mats[s->mat_count] = gpu_material(s, gs, &def);
    }
    if ((st = upload(&gs->d_normals, nrm, (size_t)n * 3, err)) != RT_OK ||
        (st = upload(&gs->d_uvs, uv, (size_t)n * 6, err)) != RT_OK ||
        (st = upload(&gs->d_mat, mat, n, err)) != RT_OK ||
        (st = upload(&gs->d_mats, mats, (size_t)s->mat_count + 1, err)) != RT_OK ||
        (st = upload(&gs->d_lights, s->lights, s->light_count, err)) != RT_OK)
        goto out;
    gs->tri_cap = n;
    {
        size_t bytes = ((size_t)n * 3 + 1) * sizeof(RtFloat4);
        const char *what = "the scene's triangle arrays";
        if ((st = rt_gpu_alloc((void **)&gs->d_verts, bytes, what, err)) != RT_OK ||
            (st = rt_gpu_alloc((void **)&gs->d_woop, bytes, what, err)) != RT_OK)
            goto out;
    }
    gs->view.verts = gs->d_verts;
    gs->view.woop = gs->d_woop;
    gs->view.normals = gs->d_normals;
    gs->view.uvs = gs->d_uvs;
    gs->view.mat = gs->d_mat;
    gs->view.mats = gs->d_mats;
    gs->view.lights = gs->d_lights;
    gs->view.tri_count = n;
    gs->view.mat_count = s->mat_count + 1;
    gs->view.light_count = s->light_count;
    gs->view.transmits = rt_shade_materials_transmit(s->mats, s->mat_count);
    st = rt_gpu_scene_update_tris(gs, pos, n, 0, err);
out:
    free(pos);
    free(nrm);
    free(uv);
    free(mat);
    free(mats);
    return st;
}

extern "C" RtStatus rt_gpu_scene_create(const RtScene *s, RtGpuScene **out, RtError *err)
{
    *out = NULL;
    if (!s) return rt_fail(err, RT_ERR_ARG, "TRACE: no scene given");
    RtGpuScene *gs = (RtGpuScene *)calloc(1, sizeof *gs);
    if (!gs) return rt_fail(err, RT_ERR_OOM, "TRACE: out of host memory");
    size_t nt = s->tex_count ? s->tex_count : 1;
    gs->arrays = (cudaMipmappedArray_t *)calloc(nt, sizeof *gs->arrays);
    gs->tex_srgb = (cudaTextureObject_t *)calloc(nt, sizeof *gs->tex_srgb);
    gs->tex_raw = (cudaTextureObject_t *)calloc(nt, sizeof *gs->tex_raw);
    gs->tex_count = s->tex_count;
    RtStatus st = RT_OK;
    if (!gs->arrays || !gs->tex_srgb || !gs->tex_raw)
        st = rt_fail(err, RT_ERR_OOM, "TRACE: out of host memory");
    if (st == RT_OK && cudaMalloc((void **)&gs->d_counters, sizeof *gs->d_counters) != cudaSuccess)
        st = rt_fail(err, RT_ERR_OOM, "TRACE: cannot allocate the trace counters");
    gs->log.timed = 1;
    if (st == RT_OK) st = scene_fill(gs, s, err);
    if (st != RT_OK) {
        rt_gpu_scene_destroy(gs);
        return st;
    }
    *out = gs;
    return RT_OK;
}

extern "C" void rt_gpu_scene_destroy(RtGpuScene *gs)
{
    if (!gs) return;
    for (uint32_t i = 0; i < gs->tex_count; i++) {
        if (gs->tex_srgb && gs->tex_srgb[i]) cudaDestroyTextureObject(gs->tex_srgb[i]);
        if (gs->tex_raw && gs->tex_raw[i]) cudaDestroyTextureObject(gs->tex_raw[i]);
        if (gs->arrays && gs->arrays[i]) cudaFreeMipmappedArray(gs->arrays[i]);
    }
    free(gs->arrays);
    free(gs->tex_srgb);
    free(gs->tex_raw);
    cudaFree(gs->d_verts);
    cudaFree(gs->d_woop);
    cudaFree(gs->d_normals);
    cudaFree(gs->d_uvs);
    cudaFree(gs->d_mat);
    cudaFree(gs->d_mats);
    cudaFree(gs->d_lights);
    cudaFree(gs->d_counters);
    rt_launch_log_destroy(&gs->log);
    free(gs);
}

extern "C" RtTriArrays rt_gpu_scene_tris(const RtGpuScene *gs)
{
    RtTriArrays a;
    memset(&a, 0, sizeof a);
    if (!gs) return a;
    a.verts = gs->d_verts;
    a.woop = gs->d_woop;
    a.count = gs->view.tri_count;
    return a;
}

extern "C" float rt_gpu_scene_epsilon(const RtGpuScene *gs) { return gs ? gs->view.eps : 0.0f; }

extern "C" RtFloat4 *rt_gpu_scene_normals(RtGpuScene *gs) { return gs ? gs->d_normals : NULL; }

extern "C" RtStatus rt_gpu_scene_update_lights(RtGpuScene *gs, const RtLight *lights, uint32_t count,
                                               RtError *err)
{
    if (!gs || (!lights && count))
        return rt_fail(err, RT_ERR_ARG, "TRACE: update_lights needs a scene and lights");
    if (count != gs->view.light_count)
        return rt_fail(err, RT_ERR_ARG, "TRACE: update_lights got %u lights, the scene has %u", count,
                       gs->view.light_count);
    if (count)
        CUDA_CHECK(err, cudaMemcpy(gs->d_lights, lights, (size_t)count * sizeof *lights,
                                   cudaMemcpyHostToDevice));
    return RT_OK;
}

RtGpuSceneView rt_gpu_scene_view(const RtGpuScene *gs) { return gs->view; }
RtGpuTraceCounters *rt_gpu_scene_counters(RtGpuScene *gs) { return gs->d_counters; }
RtLaunchLog *rt_gpu_scene_launch_log(RtGpuScene *gs) { return &gs->log; }

/* ---- kd-tree upload ------------------------------------------------------ */

/* Grows a device array to hold n elements (never shrinks). */
template <typename T>
static RtStatus grow(T **p, uint32_t *cap, uint32_t n, RtError *err)
{
    if (*p && *cap >= n) return RT_OK;
    cudaFree(*p);
    *p = NULL;
    *cap = 0;
    RtStatus st = rt_gpu_alloc((void **)p, ((size_t)n + 1) * sizeof(T), "a kd-tree's device copy", err);
    if (st != RT_OK) return st;
    *cap = n;
    return RT_OK;
}

extern "C" RtStatus rt_kd_tree_upload(const RtKdTree *host, RtKdTree *dev, RtError *err)
{
    if (!host || !dev) return rt_fail(err, RT_ERR_ARG, "TRACE: tree upload needs two trees");
    /* The leaf boxes share the leaf capacity (one box per leaf). */
    uint32_t leaf_cap = dev->leaf_cap, box_cap = dev->leaf_cap;
    RtStatus st;
    if ((st = grow(&dev->nodes, &dev->node_cap, host->node_count, err)) != RT_OK ||
        (st = grow(&dev->leaves, &leaf_cap, host->leaf_count, err)) != RT_OK ||
        (st = grow(&dev->leaf_boxes, &box_cap, host->leaf_count, err)) != RT_OK ||
        (st = grow(&dev->tri_index, &dev->index_cap, host->index_count, err)) != RT_OK)
        return st;
    dev->leaf_cap = leaf_cap < box_cap ? leaf_cap : box_cap;
    CUDA_CHECK(err, cudaMemcpy(dev->nodes, host->nodes, (size_t)host->node_count * sizeof(RtKdNode),
                               cudaMemcpyHostToDevice));
    CUDA_CHECK(err, cudaMemcpy(dev->leaves, host->leaves,
                               (size_t)host->leaf_count * sizeof(RtKdLeaf), cudaMemcpyHostToDevice));
    CUDA_CHECK(err, cudaMemcpy(dev->leaf_boxes, host->leaf_boxes,
                               (size_t)host->leaf_count * sizeof(RtAabb), cudaMemcpyHostToDevice));
    CUDA_CHECK(err, cudaMemcpy(dev->tri_index, host->tri_index,
                               (size_t)host->index_count * sizeof(uint32_t), cudaMemcpyHostToDevice));
    dev->node_count = host->node_count;
    dev->leaf_count = host->leaf_count;
    dev->index_count = host->index_count;
    dev->bounds = host->bounds;
    dev->d_bounds = NULL;
    return RT_OK;
}

extern "C" void rt_kd_tree_free_device(RtKdTree *dev)
{
    if (!dev) return;
    cudaFree(dev->nodes);
    cudaFree(dev->leaves);
    cudaFree(dev->leaf_boxes);
    cudaFree(dev->tri_index);
    memset(dev, 0, sizeof *dev);
}

/* ---- plain buffers ------------------------------------------------------- */

extern "C" RtStatus rt_gpu_malloc(void **d, size_t bytes, RtError *err)
{
    return rt_gpu_alloc(d, bytes, "a buffer", err);
}

extern "C" void rt_gpu_free(void *d) { cudaFree(d); }

extern "C" RtStatus rt_gpu_memcpy(void *dst, const void *src, size_t bytes, RtCopyDir dir,
                                  RtError *err)
{
    if (!bytes) return RT_OK;
    CUDA_CHECK(err, cudaMemcpy(dst, src, bytes,
                               dir == RT_COPY_TO_DEVICE ? cudaMemcpyHostToDevice
                                                        : cudaMemcpyDeviceToHost));
    return RT_OK;
}
