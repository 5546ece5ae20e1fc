/* render_cpu.c — the CPU reference renderer (stage "trace" of the CPU
 * backend) and the oracle the GPU images are compared with.
 *
 * Threads pull 16x16 tiles from an atomic counter; every pixel is computed
 * from its own primary ray alone (one sample at the pixel centre, no random
 * numbers), so the image is the same for any thread count. Shading is
 * shade.h's, the GPU tracer's too: Whitted-style Lambert + Phong per light
 * with one shadow ray each, mirror reflections and refraction up to
 * max_bounces, map_Kd textures and map_d alpha cutouts. This file adds what
 * is the CPU's own: reading RtScene, the kd-tree (or brute-force) casts, the
 * tiles. docs/renderer.md states the conventions (light falloff, epsilons,
 * the heatmap scale). */
#include "render/render_cpu.h"

#include "core/parallel.h"
#include "photon/photon.h"
#include "render/sample.h"

#include <stdlib.h>
#include <string.h>

/* Tile edge in pixels: small enough that 2..64 threads balance on a 160x120
 * image, large enough that the counter is touched rarely. */
#define RT_TILE 16
/* Rays a worker of rt_render_cast_cpu takes at a time: as many as a tile
 * has pixels, for the same reasons. */
#define RT_CAST_CHUNK (RT_TILE * RT_TILE)

RtRenderParams rt_render_params_default(void)
{
    RtRenderParams p;
    memset(&p, 0, sizeof p);
    p.shade = rt_shade_params_default();
    p.use_woop = 1;
    return p;
}

/* Everything a worker reads; shared, read-only except its own worker_stats. */
typedef struct RtRenderJob {
    const RtScene *scene;
    const RtTriArrays *tris;
    RtAccel accel;           /* unused with brute_force */
    RtRenderParams p;
    RtCameraBasis cam;
    RtImage *img;
    uint32_t *ids;
    RtMaterial default_mat;  /* for material -1 (made once, not per hit) */
    float eps;               /* ray offset, rt_shade_ray_eps of the triangles */
    int through;             /* shadow rays cross d < 1 surfaces (rt_shade_shadow_casts_through) */
    float srgb_lut[256];     /* texel byte -> linear, so sampling costs no powf */
    uint8_t *mask_uses_alpha; /* per texture: 1 = map_d reads alpha, 0 = luminance */
    int tiles_x, tile_count;
    RtRenderStats *worker_stats; /* one per worker (rt_parallel_for) */
    RtShadeFrame frame;          /* the frame's photon maps and accumulation sums (each may be NULL) */
    /* rt_render_photons_cpu's pass */
    const RtPhotonParams *pp;
    RtPhotonScene ps;
    RtPhotonSlots *slots;
} RtRenderJob;

/* ---- materials and textures --------------------------------------------- */

static const RtMaterial *tri_material(const RtRenderJob *job, uint32_t tri)
{
    const RtScene *s = job->scene;
    int32_t m = s->tris[tri].material;
    return (m >= 0 && (uint32_t)m < s->mat_count) ? &s->mats[m] : &job->default_mat;
}

static const RtTexture *texture_at(const RtScene *s, int32_t index)
{
    if (index < 0 || (uint32_t)index >= s->tex_count) return NULL;
    const RtTexture *t = &s->texs[index];
    return (t->rgba && t->w > 0 && t->h > 0) ? t : NULL;
}

/* Texture coordinate at barycentrics (u, v) of v1 and v2. */
static void tri_uv(const RtScene *s, uint32_t tri, float u, float v, float *tu, float *tv)
{
    const RtTriangle *t = &s->tris[tri];
    const RtVertex *a = &s->verts[t->v[0]], *b = &s->verts[t->v[1]], *c = &s->verts[t->v[2]];
    const float uv[6] = {a->u, a->v, b->u, b->v, c->u, c->v};
    rt_shade_uv(uv, u, v, tu, tv);
}

/* The hit filter of primary, reflection and shadow rays: 0 (ignore the hit)
 * where the material's map_d is a hole. */
static int alpha_filter(const void *ctx, uint32_t tri, float u, float v)
{
    const RtRenderJob *job = ctx;
    const RtScene *s = job->scene;
    int32_t m = s->tris[tri].material;
    if (m < 0 || (uint32_t)m >= s->mat_count) return 1;
    const RtTexture *t = texture_at(s, s->mats[m].map_d);
    if (!t) return 1;
    float tu, tv;
    tri_uv(s, tri, u, v, &tu, &tv);
    RtShadeTexel x = rt_shade_texture_sample(t, NULL, tu, tv);
    return rt_shade_alpha_passes(x.c[0], x.c[1], x.c[2], x.c[3],
                                 job->mask_uses_alpha[s->mats[m].map_d]);
}

/* ---- ray casting ---------------------------------------------------------- */

static RtHitFilter job_filter(const RtRenderJob *job)
{
    return job->p.shade.textures ? alpha_filter : NULL;
}

/* Closest hit over [tmin, tmax] through the structure (NULL: brute force). */
static int accel_closest_hit(const RtAccel *a, const RtTriArrays *tris, RtRay ray, float tmin, float tmax,
                             int use_woop, RtHitFilter filter, const void *ctx, RtHit *hit,
                             uint32_t *steps)
{
    if (!a) return rt_brute_closest_hit(tris, ray, tmin, tmax, use_woop, filter, ctx, hit);
    if (a->kind == RT_ACCEL_BVH)
        return rt_bvh_closest_hit(a->bvh, tris, ray, tmin, tmax, use_woop, filter, ctx, hit, steps);
    return rt_kd_closest_hit_filtered(a->kd, tris, ray, tmin, tmax, use_woop, filter, ctx, hit, steps);
}

static int closest_hit(const RtRenderJob *job, RtRay ray, float tmin, float tmax, RtHit *hit, uint32_t *steps)
{
    return accel_closest_hit(job->p.brute_force ? NULL : &job->accel, job->tris, ray, tmin, tmax,
                             job->p.use_woop, job_filter(job), job, hit, steps) &&
           hit->tri != RT_NO_HIT && hit->tri < job->scene->tri_count;
}

/* Any hit through the structure (NULL: brute force). */
static int accel_any_hit(const RtAccel *a, const RtTriArrays *tris, RtRay ray, float tmax, int use_woop,
                         RtHitFilter filter, const void *ctx)
{
    if (!a) {
        RtHit h;
        return rt_brute_closest_hit(tris, ray, 0.0f, tmax, use_woop, filter, ctx, &h);
    }
    if (a->kind == RT_ACCEL_BVH) return rt_bvh_any_hit(a->bvh, tris, ray, 0.0f, tmax, use_woop, filter, ctx);
    return rt_kd_any_hit(a->kd, tris, ray, 0.0f, tmax, filter, ctx);
}

static int occluded(const RtRenderJob *job, RtRay ray, float tmax)
{
    return accel_any_hit(job->p.brute_force ? NULL : &job->accel, job->tris, ray, tmax, job->p.use_woop,
                         job_filter(job), job);
}

/* What reaches the surface of a light along shadow ray sr over [0, tmax]:
 * (1, 1, 1) when nothing is in the way, 0 when something opaque is, the
 * product of shade.h's crossings through glass (closest-hit casts, each
 * from just past the last hit). One any-hit cast in opaque scenes. Each
 * cast after the first counts one more shadow ray. */
static RtVec3 shadow_transmittance(const RtRenderJob *job, RtRay sr, float tmax, RtRenderStats *st)
{
    RtVec3 trans = v3(1.0f, 1.0f, 1.0f);
    if (!job->through) return occluded(job, sr, tmax) ? v3(0.0f, 0.0f, 0.0f) : trans;
    float tmin = 0.0f;
    RtHit h;
    for (int crossing = 0; closest_hit(job, sr, tmin, tmax, &h, NULL); crossing++) {
        RtShadeMaterial m = rt_shade_material(tri_material(job, h.tri));
        if (!rt_shade_shadow_cross(&job->p.shade, &m, sr.o, sr.d, h.t, tmax, job->eps, crossing, &trans, &tmin))
            break;
        st->shadow_rays++;
    }
    return trans;
}

/* ---- shading (shade.h) ------------------------------------------------- */

/* The surface at a hit, and the material's shading fields in *mat; map_Kd
 * at the mip level of a ray cone `width` wide there (0: level 0). */
static RtShadeSurface surface_at(const RtRenderJob *job, RtRay ray, const RtHit *hit, float width,
                                 RtShadeMaterial *mat)
{
    const RtScene *s = job->scene;
    const RtTriangle *t = &s->tris[hit->tri];
    const RtVertex *a = &s->verts[t->v[0]], *b = &s->verts[t->v[1]], *c = &s->verts[t->v[2]];
    const RtMaterial *m = tri_material(job, hit->tri);
    *mat = rt_shade_material(m);
    RtShadeSurface sf =
        rt_shade_surface(a->p, b->p, c->p, a->n, b->n, c->n, hit->u, hit->v, ray.d, m->kd);
    const RtTexture *tex = job->p.shade.textures ? texture_at(s, m->map_kd) : NULL;
    if (tex) {
        const float uv[6] = {a->u, a->v, b->u, b->v, c->u, c->v};
        float tu, tv;
        rt_shade_uv(uv, hit->u, hit->v, &tu, &tv);
        float lod = rt_shade_texture_lod(a->p, b->p, c->p, uv, tex->w, tex->h, width, v3_dot(sf.ng, ray.d));
        RtShadeTexel x = rt_shade_texture_trilinear(tex, job->srgb_lut, tu, tv, lod);
        sf.albedo = v3_mul(sf.albedo, v3(x.c[0], x.c[1], x.c[2]));
    }
    return sf;
}

/* Direct light at the surface at chain depth `depth` of pixel `pixel`,
 * seen along ray: emission + ambient (times the open share of its AO rays,
 * counted as shadow rays) + every light that faces it, times what its
 * shadow ray lets through. */
static RtVec3 shade_local(const RtRenderJob *job, const RtShadeSurface *sf, const RtShadeMaterial *m,
                          RtRay ray, uint32_t pixel, int depth, RtRenderStats *st)
{
    const RtScene *s = job->scene;
    int open = 0;
    for (int k = 0; k < job->p.shade.ao_rays; k++, st->shadow_rays++)
        open += !occluded(job, rt_sample_ao_ray(&job->p.shade, sf, pixel, depth, k, job->eps),
                          rt_sample_ao_reach(&job->p.shade, job->eps));
    RtVec3 c = rt_shade_ambient(m, sf, rt_sample_ao_ambient(&job->p.shade, open));
    if (job->frame.env.rgb) { /* the environment as a light: one ray per sample (rt_sample_env_ray) */
        RtRay er = rt_sample_env_ray(&job->p.shade, sf, pixel, depth, job->eps);
        st->shadow_rays++;
        if (!occluded(job, er, INFINITY)) c = v3_add(c, v3_mul(sf->albedo, rt_shade_env_radiance(&job->frame.env, er.d)));
    }
    RtVec3 origin = rt_shade_offset(sf, job->eps), view = v3_scale(ray.d, -1.0f);
    uint32_t lights = s->light_count + (job->p.shade.emitters && job->frame.emit.count > 0);
    for (uint32_t i = 0; i < lights; i++) {
        const RtLight sampled = rt_sample_light_or_emitter(s->lights, s->light_count, &job->frame.emit,
                                                           job->tris->verts, i, sf->p, pixel, job->p.shade.sample);
        const RtLight *l = &sampled;
        RtShadeLight ld = rt_shade_light(sf, l);
        if (!ld.lit) continue;
        RtVec3 trans = v3(1.0f, 1.0f, 1.0f);
        if (job->p.shade.shadows) {
            st->shadow_rays++;
            float tmax;
            RtRay sr = {origin, ld.L};
            if (rt_shade_shadow_ray(&ld, job->eps, &tmax)) trans = shadow_transmittance(job, sr, tmax, st);
            if (!(fmaxf(trans.x, fmaxf(trans.y, trans.z)) > 0.0f)) continue;
        }
        c = v3_add(c, rt_shade_light_term(sf, m, v3_mul(l->color, trans), &ld, view));
    }
    if (job->frame.photons && rt_photon_gathers(&job->p.shade, m)) {
        RtKdpHit scratch[RT_KDP_MAX_KNN];
        c = v3_add(c, rt_photon_radiance(job->frame.photons, sf, scratch));
    }
    return c;
}

/* The pixel's Whitted chain (shade.h's rt_shade_path_next): mirrors and
 * transparent surfaces pass the ray on until max_bounces. */
static RtVec3 trace_pixel(const RtRenderJob *job, RtRay ray, uint32_t pixel, uint32_t *id, uint32_t *steps,
                          RtRenderStats *st)
{
    RtShadePath path = rt_shade_path_start();
    RtShadeCone cone = rt_shade_cone_primary(&job->p.shade, &job->cam);
    *id = RT_NO_HIT;
    for (int depth = 0;; depth++) {
        RtHit hit;
        hit.tri = RT_NO_HIT;
        if (depth == 0) st->primary_rays++;
        else st->reflection_rays++;
        if (!closest_hit(job, ray, 0.0f, INFINITY, &hit, depth == 0 ? steps : NULL)) {
            rt_shade_path_miss(&path, rt_shade_background(&job->p.shade, &job->frame.env, ray.d));
            return path.color;
        }
        if (depth == 0) *id = hit.tri;
        RtShadeMaterial m;
        RtShadeSurface sf = surface_at(job, ray, &hit, rt_shade_cone_hit(&cone, hit.t), &m);
        RtVec3 local = shade_local(job, &sf, &m, ray, pixel, depth, st);
        if (!rt_shade_path_next(&path, &job->p.shade, &m, &sf, local, job->eps, depth, &ray))
            return path.color;
    }
}

/* ---- tiles and threads -------------------------------------------------- */

static void render_tile(const RtRenderJob *job, int tile, RtRenderStats *st)
{
    int x0 = (tile % job->tiles_x) * RT_TILE, y0 = (tile / job->tiles_x) * RT_TILE;
    int x1 = x0 + RT_TILE < job->img->w ? x0 + RT_TILE : job->img->w;
    int y1 = y0 + RT_TILE < job->img->h ? y0 + RT_TILE : job->img->h;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
            size_t i = (size_t)y * job->img->w + x;
            float dx, dy;
            rt_sample_jitter((uint32_t)i, job->p.shade.sample, &dx, &dy);
            RtRay ray = {job->cam.o, rt_camera_dir(&job->cam, (float)x + dx, (float)y + dy)};
            uint32_t id, steps = 0;
            RtVec3 c = trace_pixel(job, ray, (uint32_t)i, &id, &steps, st);
            if (job->frame.accum) c = rt_shade_accumulate(&job->frame.accum[i], c, job->p.shade.sample);
            rt_shade_pixel(&job->p.shade, c, steps, &job->img->rgba[4 * i]);
            if (job->ids) job->ids[i] = id;
        }
}

static void render_task(void *ctx, int worker, size_t tile)
{
    RtRenderJob *job = ctx;
    render_tile(job, (int)tile, &job->worker_stats[worker]);
}

float rt_render_ray_eps(const RtTriArrays *tris)
{
    RtAabb b = aabb_empty();
    for (size_t i = 0; i < (size_t)tris->count * 3; i++) {
        RtVec3 p = f4_xyz(tris->verts[i]);
        if (isfinite(p.x) && isfinite(p.y) && isfinite(p.z)) b = aabb_grow(b, p);
    }
    return rt_shade_ray_eps(b);
}

/* Decides per map_d texture whether it carries alpha (any texel < 255). */
static uint8_t *mask_channels(const RtScene *s)
{
    uint8_t *uses_alpha = calloc(s->tex_count ? s->tex_count : 1, 1);
    if (!uses_alpha) return NULL;
    for (uint32_t m = 0; m < s->mat_count; m++) {
        const RtTexture *t = texture_at(s, s->mats[m].map_d);
        if (t && !uses_alpha[s->mats[m].map_d])
            uses_alpha[s->mats[m].map_d] = (uint8_t)rt_shade_texture_has_alpha(t);
    }
    return uses_alpha;
}

/* Checks the arguments and makes the job both passes share (NULL and *err
 * on failure); rt_render_cpu's workers are counted over `tasks`. */
static RtStatus job_make(const RtScene *scene, const RtTriArrays *tris, const RtAccel *accel,
                         const RtRenderParams *p, size_t tasks, RtRenderJob **out, int *workers, RtError *err)
{
    RtRenderParams params = p ? *p : rt_render_params_default();
    if (!scene || !tris)
        return rt_fail(err, RT_ERR_ARG, "RENDER: missing scene or triangles");
    if (!accel && !params.brute_force)
        return rt_fail(err, RT_ERR_ARG, "RENDER: no acceleration structure given (NULL) and brute_force is off");
    if (accel && !(accel->kind == RT_ACCEL_KD ? accel->kd != NULL : accel->kind == RT_ACCEL_BVH && accel->bvh))
        return rt_fail(err, RT_ERR_ARG, "RENDER: the acceleration structure (kind %d) has no tree", accel->kind);
    if (tris->count != scene->tri_count)
        return rt_fail(err, RT_ERR_ARG,
                       "RENDER: triangle arrays hold %u triangles but the scene has %u "
                       "(rebuild them with rt_tri_arrays_make)",
                       tris->count, scene->tri_count);
    RtRenderJob *job = calloc(1, sizeof *job);
    if (!job)
        return rt_fail(err, RT_ERR_OOM, "RENDER: out of memory");
    job->scene = scene;
    job->tris = tris;
    if (accel) job->accel = *accel;
    job->p = params;
    job->default_mat = rt_material_default();
    job->eps = rt_render_ray_eps(tris);
    job->through = rt_shade_shadow_casts_through(&params.shade, rt_shade_materials_transmit(scene->mats, scene->mat_count));
    for (int i = 0; i < 256; i++) job->srgb_lut[i] = rt_shade_srgb8_to_linear((uint8_t)i);
    job->mask_uses_alpha = mask_channels(scene);
    *workers = rt_parallel_workers(params.threads, tasks ? tasks : 1);
    job->worker_stats = calloc((size_t)*workers, sizeof *job->worker_stats);
    if (!job->mask_uses_alpha || !job->worker_stats) {
        free(job->mask_uses_alpha);
        free(job->worker_stats);
        free(job);
        return rt_fail(err, RT_ERR_OOM, "RENDER: out of memory");
    }
    *out = job;
    return RT_OK;
}

static void job_free(RtRenderJob *job)
{
    free(job->worker_stats);
    free(job->mask_uses_alpha);
    free(job);
}

RtStatus rt_render_cpu(const RtScene *scene, const RtTriArrays *tris, const RtAccel *accel,
                       const RtShadeFrame *frame, const RtCamera *cam, const RtRenderParams *p,
                       RtImage *img, uint32_t *ids, RtRenderStats *stats, RtError *err)
{
    double t0 = rt_now_ms();
    if (!cam || !img || !img->rgba || img->w <= 0 || img->h <= 0)
        return rt_fail(err, RT_ERR_ARG, "RENDER: missing camera or image");
    int tiles_x = (img->w + RT_TILE - 1) / RT_TILE, tile_count = tiles_x * ((img->h + RT_TILE - 1) / RT_TILE);
    int workers;
    RtRenderJob *job;
    RtStatus st = job_make(scene, tris, accel, p, (size_t)tile_count, &job, &workers, err);
    if (st != RT_OK) return st;
    job->cam = rt_camera_basis(*cam, img->w, img->h);
    job->img = img;
    job->ids = ids;
    if (frame) job->frame = *frame;
    job->tiles_x = tiles_x;
    job->tile_count = tile_count;
    rt_parallel_for(workers, (size_t)job->tile_count, render_task, job);
    RtRenderStats total;
    memset(&total, 0, sizeof total);
    for (int i = 0; i < workers; i++) {
        total.primary_rays += job->worker_stats[i].primary_rays;
        total.shadow_rays += job->worker_stats[i].shadow_rays;
        total.reflection_rays += job->worker_stats[i].reflection_rays;
    }
    job_free(job);
    total.ms = rt_now_ms() - t0;
    if (stats) *stats = total;
    return RT_OK;
}

/* ---- photon tracing (photon.h) ------------------------------------------- */

/* Photons a worker takes at a time. */
#define RT_PHOTON_CHUNK 1024

/* Photon i's path: emission, then rt_photon_hit per hit, each store in
 * slot i * max_depth + depth (the GPU's photon_kernel runs the same). */
static void photon_task(void *ctx, int worker, size_t chunk)
{
    (void)worker;
    const RtRenderJob *job = ctx;
    const RtPhotonParams *pp = job->pp;
    RtPhotonSlots *sl = job->slots;
    uint32_t first = (uint32_t)chunk * RT_PHOTON_CHUNK;
    uint32_t end = pp->count - first < RT_PHOTON_CHUNK ? pp->count : first + RT_PHOTON_CHUNK;
    for (uint32_t i = first; i < end; i++) {
        rt_photon_slots_clear(sl, i);
        RtRay ray;
        RtPhotonPath ph = {v3(0, 0, 0), 0};
        rt_photon_emit(job->scene->lights, job->scene->light_count, &job->ps, i, pp->count, pp->seed, &ray,
                       &ph.power);
        for (uint32_t depth = 0; depth < pp->max_depth; depth++) {
            RtHit hit;
            hit.tri = RT_NO_HIT;
            if (!closest_hit(job, ray, 0.0f, INFINITY, &hit, NULL)) break;
            RtShadeMaterial m;
            RtShadeSurface sf = surface_at(job, ray, &hit, 0.0f, &m); /* a photon has no footprint */
            uint32_t store;
            RtPhoton arriving = {ph.power, ray.d};
            int goes_on = rt_photon_hit(&ph, &job->p.shade, &m, &sf, ray.d, job->eps, i, pp->seed, depth, &store,
                                        &ray);
            if (store != RT_PHOTON_NONE) rt_photon_slot_store(sl, i, depth, store, sf.p, arriving);
            if (!goes_on) break;
        }
    }
}

RtStatus rt_render_photons_cpu(const RtScene *scene, const RtTriArrays *tris, const RtAccel *accel,
                               const RtRenderParams *p, const RtPhotonParams *pp, RtAabb rest_bounds,
                               RtPhotonSlots *slots, RtError *err)
{
    if (!pp || !slots) return rt_fail(err, RT_ERR_ARG, "PHOTON: no parameters or slots");
    if (slots->count < pp->count || slots->max_depth != pp->max_depth)
        return rt_fail(err, RT_ERR_ARG, "PHOTON: slots for %u x %u, asked for %u x %u", slots->count,
                       slots->max_depth, pp->count, pp->max_depth);
    if (pp->count == 0 || !scene || scene->light_count == 0) {
        if (slots->kind) memset(slots->kind, RT_PHOTON_NONE, (size_t)slots->count * slots->max_depth);
        return RT_OK;
    }
    size_t chunks = (pp->count + RT_PHOTON_CHUNK - 1) / RT_PHOTON_CHUNK;
    int workers;
    RtRenderJob *job;
    RtStatus st = job_make(scene, tris, accel, p, chunks, &job, &workers, err);
    if (st != RT_OK) return st;
    job->pp = pp;
    job->ps = rt_photon_scene(rest_bounds);
    job->slots = slots;
    rt_parallel_for(workers, chunks, photon_task, job);
    job_free(job);
    return RT_OK;
}

/* ---- ray casting without shading (the benchmark's diffuse pass) ---------- */

typedef struct RtCastJob {
    const RtTriArrays *tris;
    const RtAccel *accel; /* NULL: brute force */
    const RtRay *rays;
    RtHit *hits;
    uint32_t n;
    int use_woop;
} RtCastJob;

static void cast_task(void *ctx, int worker, size_t chunk)
{
    (void)worker;
    const RtCastJob *job = ctx;
    uint32_t first = (uint32_t)chunk * RT_CAST_CHUNK;
    uint32_t end = job->n - first < RT_CAST_CHUNK ? job->n : first + RT_CAST_CHUNK;
    for (uint32_t i = first; i < end; i++) {
        RtHit h;
        int hit = accel_closest_hit(job->accel, job->tris, job->rays[i], 0.0f, INFINITY, job->use_woop, NULL,
                                    NULL, &h, NULL);
        if (!hit) h.tri = RT_NO_HIT;
        job->hits[i] = h;
    }
}

RtStatus rt_render_cast_cpu(const RtTriArrays *tris, const RtAccel *accel, const RtRay *rays,
                            uint32_t n, int use_woop, int threads, RtHit *hits, RtError *err)
{
    if (n == 0) return RT_OK;
    if (!tris || !rays || !hits) return rt_fail(err, RT_ERR_ARG, "RENDER: cast without triangles, rays or hits");
    RtCastJob job = {tris, accel, rays, hits, n, use_woop};
    size_t chunks = (n + RT_CAST_CHUNK - 1) / RT_CAST_CHUNK;
    rt_parallel_for(rt_parallel_workers(threads, chunks), chunks, cast_task, &job);
    return RT_OK;
}
