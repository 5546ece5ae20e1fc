/* anim_gpu.cu — the animate stage on the device (anim_gpu.h): every frame
 * the scene's vertices at time t go straight into the tracer's triangle
 * arrays and corner normals, from base vertices uploaded once.
 *
 * Host driver of a frame (rt_gpu_anim_eval):
 *   1. nodes:     world matrices + visibility on the host (rt_anim_eval_nodes,
 *                 a few hundred nodes), joint matrices (rt_anim_eval_joints),
 *                 morph key pairs per morph; upload.
 *   2. vertices:  one thread per vertex: morph -> deform -> skin or node
 *                 matrix (anim_eval.h, the CPU's very formulas).
 *   3. triangles: one thread per triangle: 3 corners -> gs's vertices and
 *                 shading normals.
 *   4. Woop rows: rt_gpu_scene_update_tris on the device vertices.
 *   5. lights:    animated lights (host, a handful) -> gs.
 * The CPU path (rt_scene_frame_at) is the oracle (tests/test_gpu_anim.c). */
#include <stdlib.h>
#include <string.h>

#include "anim/anim_eval.h"
#include "anim/anim_gpu.h"
#include "gpu/cuda_check.h"
#include "gpu/gpu.h"
#include "gpu/coalesce.cuh"
#include "gpu/launch.h"

/* Threads per block of both kernels: a multiple of the warp size. */
static constexpr int kBlock = 256;

/* One morph as the vertex kernel reads it: its pose pool offset and this
 * frame's key pair (rt_anim_morph_segment, evaluated once on the host). */
typedef struct GpuMorph {
    uint32_t first_vert, vert_count;
    uint64_t pool;       /* offset of key 0's first vertex in the pose pool */
    uint32_t k0, k1;
    float s;
} GpuMorph;

struct RtGpuAnim {
    uint32_t vert_count, tri_count, node_count, morph_count, deform_count, light_count, joint_count;
    /* uploaded once */
    RtVertex *d_base;          /* the scene's vertices, node space */
    uint32_t *d_tri;           /* 3 vertex indices per triangle */
    uint32_t *d_vert_node;     /* per vertex; NULL when no vertex has a node */
    int32_t *d_vert_morph;     /* per vertex morph or -1; NULL without morphs */
    int32_t *d_vert_deform;    /* per vertex deform or -1; NULL without deforms */
    RtVec3 *d_pose_pos, *d_pose_nrm; /* every morph's keys, morph after morph */
    RtAnimDeform *d_deforms;
    RtAnimSkinVert *d_skin;    /* per vertex joints and weights; NULL without joints */
    /* per frame (sizes fixed at create) */
    float *d_world;
    float *d_joints;           /* joint matrices, 12 floats each */
    uint8_t *d_visible;
    GpuMorph *d_morphs;
    RtVertex *d_out;           /* world-space vertices of the last eval */
    float *h_world;
    float *h_joints;
    uint8_t *h_visible;
    GpuMorph *h_morphs;
    RtLight *h_lights;
    int lights_move;
    cudaEvent_t ev[2];
    int ev_made;
    RtLaunchLog log;
};

/* ---- step 2: vertices ----------------------------------------------------- */

/* Morph, deform, skin or node transform: the order and formulas of
 * scene_frame.c. */
__global__ void anim_vertex_kernel(uint32_t n, const RtVertex *base, const uint32_t *vert_node,
                                   const int32_t *vert_morph, const GpuMorph *morphs,
                                   const RtVec3 *pose_pos, const RtVec3 *pose_nrm,
                                   const int32_t *vert_deform, const RtAnimDeform *deforms,
                                   const RtAnimSkinVert *skin, uint32_t joint_count, const float *joints,
                                   uint32_t node_count, const float *world, const uint8_t *visible,
                                   float t, RtVertex *out)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    RtVertex v = base[i];
    if (vert_morph && vert_morph[i] >= 0) {
        GpuMorph m = morphs[vert_morph[i]];
        uint64_t j = m.pool + (i - m.first_vert);
        uint64_t a = j + (uint64_t)m.k0 * m.vert_count, b = j + (uint64_t)m.k1 * m.vert_count;
        rt_anim_morph_vertex(pose_pos[a], pose_nrm[a], pose_pos[b], pose_nrm[b], m.s, &v.p, &v.n);
    }
    if (vert_deform && vert_deform[i] >= 0) {
        const RtAnimDeform *d = &deforms[vert_deform[i]];
        if (d->kind == RT_DEFORM_WAVE) rt_anim_wave(d, t, &v.p, &v.n);
    }
    if (skin && rt_anim_skin_vertex(&skin[i], joints, joint_count, &v.p, &v.n)) {
        out[i] = v;
        return;
    }
    uint32_t node = vert_node ? vert_node[i] : RT_ANIM_STATIC;
    if (node < node_count) {
        const float *m = &world[12 * (size_t)node];
        v.p = visible[node] ? rt_anim_xform_point(m, v.p) : rt_anim_hidden_point(m);
        v.n = rt_anim_xform_normal(m, v.n);
    }
    out[i] = v;
}

/* ---- step 3: triangles ---------------------------------------------------- */

/* The tracer's layout (gpu_scene.h): 3 float4 corners per triangle, and
 * the per-corner shading normals beside them. */
__global__ void __launch_bounds__(kBlock) anim_triangle_kernel(uint32_t n, const uint32_t *tri, const RtVertex *v,
                                                               RtFloat4 *verts, RtFloat4 *normals)
{
    __shared__ RtFloat4 sh[3 * kBlock];
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    RtFloat4 p[3] = {}, nrm[3] = {};
    for (int k = 0; k < 3 && i < n; k++) {
        RtVertex c = v[tri[3 * (size_t)i + k]];
        p[k] = f4(c.p.x, c.p.y, c.p.z, 0.0f);
        nrm[k] = f4(c.n.x, c.n.y, c.n.z, 0.0f);
    }
    rt_store3<kBlock>(verts, n, sh, p);
    rt_store3<kBlock>(normals, n, sh, nrm);
}

/* ---- create / destroy ------------------------------------------------------- */

template <typename T>
static RtStatus dev_alloc(T **d, size_t n, RtError *err)
{
    return rt_gpu_alloc((void **)d, (n ? n : 1) * sizeof(T), "the animation stage's arrays", err);
}

template <typename T>
static RtStatus dev_upload(T **d, const T *h, size_t n, RtError *err)
{
    RtStatus st = dev_alloc(d, n, err);
    if (st == RT_OK && n) CUDA_CHECK(err, cudaMemcpy(*d, h, n * sizeof(T), cudaMemcpyHostToDevice));
    return st;
}

/* A per-vertex index array, every entry -1 (no morph / deform). */
static int32_t *index_array(uint32_t vert_count)
{
    int32_t *idx = (int32_t *)malloc(((size_t)vert_count + 1) * sizeof *idx);
    for (uint32_t i = 0; idx && i < vert_count; i++) idx[i] = -1;
    return idx;
}

/* Marks vertices [first, first+count) (clipped to the scene) as range r: a
 * later range overwrites, as a later morph does on the CPU. */
static void index_mark(int32_t *idx, uint32_t vert_count, uint32_t first, uint32_t count, int32_t r)
{
    for (uint32_t j = 0; first < vert_count && j < count && j < vert_count - first; j++) idx[first + j] = r;
}

static RtStatus anim_fill(RtGpuAnim *ga, const RtScene *s, RtError *err)
{
    const RtAnim *a = &s->anim;
    RtStatus st;
    uint32_t *tri = NULL, *vnode = NULL;
    int32_t *vmorph = NULL, *vdeform = NULL;
    RtVec3 *ppos = NULL, *pnrm = NULL;
    RtAnimSkinVert *vskin = NULL;
    size_t pool = 0;
    for (uint32_t i = 0; i < a->morph_count; i++) pool += (size_t)a->morphs[i].key_count * a->morphs[i].vert_count;

    tri = (uint32_t *)malloc(((size_t)s->tri_count * 3 + 1) * sizeof *tri);
    ga->h_world = (float *)malloc(((size_t)a->node_count * 12 + 1) * sizeof *ga->h_world);
    ga->h_visible = (uint8_t *)malloc((size_t)a->node_count + 1);
    ga->h_joints = (float *)malloc(((size_t)a->joint_count * 12 + 1) * sizeof *ga->h_joints);
    ga->h_morphs = (GpuMorph *)malloc(((size_t)a->morph_count + 1) * sizeof *ga->h_morphs);
    ga->h_lights = (RtLight *)malloc(((size_t)s->light_count + 1) * sizeof *ga->h_lights);
    if (!tri || !ga->h_world || !ga->h_visible || !ga->h_joints || !ga->h_morphs || !ga->h_lights) goto oom;
    for (uint32_t i = 0; i < s->tri_count; i++)
        for (int k = 0; k < 3; k++) tri[3 * i + k] = s->tris[i].v[k];
    if ((st = dev_upload(&ga->d_base, s->verts, s->vert_count, err)) != RT_OK ||
        (st = dev_upload(&ga->d_tri, tri, (size_t)s->tri_count * 3, err)) != RT_OK ||
        (st = dev_alloc(&ga->d_out, s->vert_count, err)) != RT_OK ||
        (st = dev_alloc(&ga->d_world, (size_t)a->node_count * 12, err)) != RT_OK ||
        (st = dev_alloc(&ga->d_visible, a->node_count, err)) != RT_OK ||
        (st = dev_alloc(&ga->d_joints, (size_t)a->joint_count * 12, err)) != RT_OK ||
        (st = dev_alloc(&ga->d_morphs, a->morph_count, err)) != RT_OK ||
        (st = dev_upload(&ga->d_deforms, a->deforms, a->deform_count, err)) != RT_OK)
        goto out;
    if (a->vert_node && a->node_count) {
        vnode = (uint32_t *)malloc(((size_t)s->vert_count + 1) * sizeof *vnode);
        if (!vnode) goto oom;
        for (uint32_t i = 0; i < s->vert_count; i++) vnode[i] = rt_anim_vert_node_of(a->vert_node, a->vert_node_cap, i);
        if ((st = dev_upload(&ga->d_vert_node, vnode, s->vert_count, err)) != RT_OK) goto out;
    }
    if (a->skin && a->joint_count) {
        /* every vertex gets an entry (past skin_cap: all weights 0) */
        vskin = (RtAnimSkinVert *)calloc((size_t)s->vert_count + 1, sizeof *vskin);
        if (!vskin) goto oom;
        memcpy(vskin, a->skin, (size_t)(a->skin_cap < s->vert_count ? a->skin_cap : s->vert_count) * sizeof *vskin);
        if ((st = dev_upload(&ga->d_skin, vskin, s->vert_count, err)) != RT_OK) goto out;
    }
    if (a->morph_count) {
        vmorph = index_array(s->vert_count);
        ppos = (RtVec3 *)malloc((pool + 1) * sizeof *ppos);
        pnrm = (RtVec3 *)malloc((pool + 1) * sizeof *pnrm);
        if (!vmorph || !ppos || !pnrm) goto oom;
        size_t off = 0;
        for (uint32_t i = 0; i < a->morph_count; i++) {
            const RtAnimMorph *m = &a->morphs[i];
            size_t n = (size_t)m->key_count * m->vert_count;
            memcpy(ppos + off, m->pos, n * sizeof *ppos);
            memcpy(pnrm + off, m->nrm, n * sizeof *pnrm);
            ga->h_morphs[i].first_vert = m->first_vert;
            ga->h_morphs[i].vert_count = m->vert_count;
            ga->h_morphs[i].pool = off;
            off += n;
            /* a morph without poses leaves its vertices alone, as the CPU does */
            if (m->key_count) index_mark(vmorph, s->vert_count, m->first_vert, m->vert_count, (int32_t)i);
        }
        if ((st = dev_upload(&ga->d_vert_morph, vmorph, s->vert_count, err)) != RT_OK ||
            (st = dev_upload(&ga->d_pose_pos, ppos, pool, err)) != RT_OK ||
            (st = dev_upload(&ga->d_pose_nrm, pnrm, pool, err)) != RT_OK)
            goto out;
    }
    if (a->deform_count) {
        vdeform = index_array(s->vert_count);
        if (!vdeform) goto oom;
        for (uint32_t i = 0; i < a->deform_count; i++)
            index_mark(vdeform, s->vert_count, a->deforms[i].first_vert, a->deforms[i].vert_count, (int32_t)i);
        if ((st = dev_upload(&ga->d_vert_deform, vdeform, s->vert_count, err)) != RT_OK) goto out;
    }
    for (uint32_t i = 0; a->light_track && i < s->light_count && i < a->light_track_cap; i++)
        ga->lights_move |= a->light_track[i] >= 0;
    CUDA_CHECK(err, cudaEventCreate(&ga->ev[0]));
    CUDA_CHECK(err, cudaEventCreate(&ga->ev[1]));
    ga->ev_made = 1;
    st = RT_OK;
    goto out;
oom:
    st = rt_fail(err, RT_ERR_OOM, "ANIM: out of host memory for the GPU animation upload");
out:
    free(tri);
    free(vnode);
    free(vskin);
    free(vmorph);
    free(vdeform);
    free(ppos);
    free(pnrm);
    return st;
}

extern "C" RtStatus rt_gpu_anim_create(const RtScene *s, RtGpuAnim **out, RtError *err)
{
    *out = NULL;
    if (!s) return rt_fail(err, RT_ERR_ARG, "ANIM: no scene given");
    RtGpuAnim *ga = (RtGpuAnim *)calloc(1, sizeof *ga);
    if (!ga) return rt_fail(err, RT_ERR_OOM, "ANIM: out of host memory");
    ga->vert_count = s->vert_count;
    ga->tri_count = s->tri_count;
    ga->node_count = s->anim.node_count;
    ga->morph_count = s->anim.morph_count;
    ga->deform_count = s->anim.deform_count;
    ga->joint_count = s->anim.joint_count;
    ga->light_count = s->light_count;
    RtStatus st = anim_fill(ga, s, err);
    if (st != RT_OK) {
        rt_gpu_anim_destroy(ga);
        return st;
    }
    *out = ga;
    return RT_OK;
}

extern "C" void rt_gpu_anim_destroy(RtGpuAnim *ga)
{
    if (!ga) return;
    cudaFree(ga->d_base);
    cudaFree(ga->d_tri);
    cudaFree(ga->d_vert_node);
    cudaFree(ga->d_vert_morph);
    cudaFree(ga->d_vert_deform);
    cudaFree(ga->d_pose_pos);
    cudaFree(ga->d_pose_nrm);
    cudaFree(ga->d_deforms);
    cudaFree(ga->d_skin);
    cudaFree(ga->d_joints);
    cudaFree(ga->d_world);
    cudaFree(ga->d_visible);
    cudaFree(ga->d_morphs);
    cudaFree(ga->d_out);
    if (ga->ev_made) {
        cudaEventDestroy(ga->ev[0]);
        cudaEventDestroy(ga->ev[1]);
    }
    rt_launch_log_destroy(&ga->log);
    free(ga->h_world);
    free(ga->h_visible);
    free(ga->h_joints);
    free(ga->h_morphs);
    free(ga->h_lights);
    free(ga);
}

/* ---- the frame --------------------------------------------------------------- */

extern "C" RtStatus rt_gpu_anim_eval(RtGpuAnim *ga, const RtScene *s, float t, RtGpuScene *gs, double *ms,
                                     RtError *err)
{
    if (!ga || !s || !gs) return rt_fail(err, RT_ERR_ARG, "ANIM: eval needs the animation, scene and GPU scene");
    const RtAnim *a = &s->anim;
    if (s->vert_count != ga->vert_count || s->tri_count != ga->tri_count || a->node_count != ga->node_count ||
        a->morph_count != ga->morph_count || a->deform_count != ga->deform_count ||
        a->joint_count != ga->joint_count || s->light_count != ga->light_count)
        return rt_fail(err, RT_ERR_ARG, "ANIM: the scene changed since rt_gpu_anim_create (%u vertices, %u nodes "
                       "then; %u, %u now)", ga->vert_count, ga->node_count, s->vert_count, a->node_count);
    RtTriArrays ta = rt_gpu_scene_tris(gs);
    RtFloat4 *normals = rt_gpu_scene_normals(gs);
    if (ta.count != ga->tri_count || (ga->tri_count && (!ta.verts || !normals)))
        return rt_fail(err, RT_ERR_ARG, "ANIM: the GPU scene has %u triangles, the animation %u", ta.count,
                       ga->tri_count);
    rt_launch_log_reset(&ga->log);

    /* 1. nodes, joints and morph key pairs, on the host; a tiny upload. From
     * pageable memory cudaMemcpyAsync returns once the bytes are staged, so
     * the host arrays can be rewritten next frame without a sync. */
    if (ga->node_count) rt_anim_eval_nodes(a, t, ga->h_world, ga->h_visible);
    if (ga->joint_count) rt_anim_eval_joints(a, ga->h_world, ga->h_joints);
    for (uint32_t i = 0; i < ga->morph_count; i++) {
        const RtAnimMorph *m = &a->morphs[i];
        rt_anim_morph_segment(m->times, m->key_count, t, &ga->h_morphs[i].k0, &ga->h_morphs[i].k1,
                              &ga->h_morphs[i].s);
    }
    CUDA_CHECK(err, cudaEventRecord(ga->ev[0], ga->log.stream));
    if (ga->node_count) {
        CUDA_CHECK(err, cudaMemcpyAsync(ga->d_world, ga->h_world, (size_t)ga->node_count * 12 * sizeof(float),
                                        cudaMemcpyHostToDevice, ga->log.stream));
        CUDA_CHECK(err, cudaMemcpyAsync(ga->d_visible, ga->h_visible, ga->node_count, cudaMemcpyHostToDevice,
                                        ga->log.stream));
    }
    if (ga->joint_count)
        CUDA_CHECK(err, cudaMemcpyAsync(ga->d_joints, ga->h_joints, (size_t)ga->joint_count * 12 * sizeof(float),
                                        cudaMemcpyHostToDevice, ga->log.stream));
    if (ga->morph_count)
        CUDA_CHECK(err, cudaMemcpyAsync(ga->d_morphs, ga->h_morphs, (size_t)ga->morph_count * sizeof(GpuMorph),
                                        cudaMemcpyHostToDevice, ga->log.stream));

    /* 2. vertices */
    RtStatus st = rt_launch(&ga->log, "anim_vertices", dim3((ga->vert_count + kBlock - 1) / kBlock), dim3(kBlock),
                            0, anim_vertex_kernel, err, ga->vert_count, (const RtVertex *)ga->d_base,
                            (const uint32_t *)ga->d_vert_node, (const int32_t *)ga->d_vert_morph,
                            (const GpuMorph *)ga->d_morphs, (const RtVec3 *)ga->d_pose_pos,
                            (const RtVec3 *)ga->d_pose_nrm, (const int32_t *)ga->d_vert_deform,
                            (const RtAnimDeform *)ga->d_deforms, (const RtAnimSkinVert *)ga->d_skin,
                            ga->joint_count, (const float *)ga->d_joints, ga->node_count, (const float *)ga->d_world,
                            (const uint8_t *)ga->d_visible, t, ga->d_out);
    /* 3. triangles: corners and shading normals, in place in gs */
    if (st == RT_OK)
        st = rt_launch(&ga->log, "anim_triangles", dim3((ga->tri_count + kBlock - 1) / kBlock), dim3(kBlock), 0,
                       anim_triangle_kernel, err, ga->tri_count, (const uint32_t *)ga->d_tri,
                       (const RtVertex *)ga->d_out, ta.verts, normals);
    /* 4. Woop rows from the vertices just written (no copy: in == gs's own) */
    if (st == RT_OK) st = rt_gpu_scene_update_tris(gs, ta.verts, ga->tri_count, 1, err);
    if (st != RT_OK) return st;
    /* 5. lights (AFF la: the transl channel, as rt_scene_frame_at) */
    if (ga->lights_move) {
        memcpy(ga->h_lights, s->lights, (size_t)s->light_count * sizeof *s->lights);
        for (uint32_t i = 0; i < s->light_count && i < a->light_track_cap; i++) {
            int32_t k = a->light_track[i];
            if (k >= 0 && (uint32_t)k < a->track_count && a->tracks[k].transl.count &&
                ga->h_lights[i].type != RT_LIGHT_DIRECTIONAL)
                ga->h_lights[i].v = rt_kb_eval_vec3(&a->tracks[k].transl, t);
        }
        if ((st = rt_gpu_scene_update_lights(gs, ga->h_lights, s->light_count, err)) != RT_OK) return st;
    }
    CUDA_CHECK(err, cudaEventRecord(ga->ev[1], ga->log.stream));
    if (ms) {
        float f = 0.0f;
        CUDA_CHECK(err, cudaEventSynchronize(ga->ev[1]));
        CUDA_CHECK(err, cudaEventElapsedTime(&f, ga->ev[0], ga->ev[1]));
        *ms = f;
    }
    return RT_OK;
}

extern "C" RtStatus rt_gpu_anim_download_verts(const RtGpuAnim *ga, RtVertex *out, uint32_t vert_count,
                                               RtError *err)
{
    if (!ga || (!out && vert_count)) return rt_fail(err, RT_ERR_ARG, "ANIM: download needs an animation and memory");
    if (vert_count != ga->vert_count)
        return rt_fail(err, RT_ERR_ARG, "ANIM: download of %u vertices, the animation has %u", vert_count,
                       ga->vert_count);
    if (vert_count)
        CUDA_CHECK(err, cudaMemcpy(out, ga->d_out, (size_t)vert_count * sizeof *out, cudaMemcpyDeviceToHost));
    return RT_OK;
}
