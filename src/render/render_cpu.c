/* render_cpu.c — the CPU reference renderer (stage "trace" of the CPU
 * backend) and the oracle the GPU images are compared with.
 *
 * Threads pull 16x16 tiles from an atomic counter; every pixel is computed
 * from its own primary ray alone (one sample at the pixel centre, no random
 * numbers), so the image is the same for any thread count. Shading is
 * Whitted-style: Lambert + Phong per light with one shadow ray each, mirror
 * reflections up to max_bounces, map_Kd textures and map_d alpha cutouts.
 * docs/renderer.md states the conventions (light falloff, epsilons, the
 * heatmap scale). */
#include "render/render_cpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Tile edge in pixels: small enough that 2..64 threads balance on a 160x120
 * image, large enough that the counter is touched rarely. */
#define RT_TILE 16
/* Shadow/reflection rays start this fraction of the scene's bounding-box
 * diagonal off the surface (along the geometric normal): above float
 * round-off of hit points (~1e-7 relative) and far below any feature a
 * scene models (1e-4 of a 10 m room is 1 mm). */
#define RT_RAY_EPS_REL 1e-4f
/* Heatmap: traversal steps mapped to the top of the colour ramp. */
#define RT_HEAT_MAX_STEPS 128.0f
/* An alpha-mask value below this makes the surface a hole (scene.h). */
#define RT_ALPHA_CUTOFF 0.5f

RtRenderParams rt_render_params_default(void)
{
    RtRenderParams p;
    memset(&p, 0, sizeof p);
    p.max_bounces = 1;
    p.shadows = 1;
    p.textures = 1;
    p.use_woop = 1;
    p.background = v3(0.05f, 0.06f, 0.09f);
    p.ambient = v3(0.08f, 0.08f, 0.08f);
    return p;
}

/* Everything a worker reads; shared, read-only except the tile counter. */
typedef struct RtRenderJob {
    const RtScene *scene;
    const RtTriArrays *tris;
    const RtKdTree *tree;
    RtRenderParams p;
    RtCameraBasis cam;
    RtImage *img;
    uint32_t *ids;
    RtMaterial default_mat;  /* for material -1 (made once, not per hit) */
    float eps;               /* ray offset, RT_RAY_EPS_REL * scene diagonal */
    float srgb_lut[256];     /* texel byte -> linear, so sampling costs no powf */
    uint8_t *mask_uses_alpha; /* per texture: 1 = map_d reads alpha, 0 = luminance */
    int tiles_x, tile_count;
    atomic_int next_tile;
} RtRenderJob;

typedef struct RtRenderWorker {
    RtRenderJob *job;
    RtRenderStats stats;
    pthread_t thread;
    int started;
} RtRenderWorker;

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
    float w = 1.0f - u - v;
    *tu = w * a->u + u * b->u + v * c->u;
    *tv = w * a->v + u * b->v + v * c->v;
}

static int wrap(int i, int n)
{
    int r = i % n;
    return r < 0 ? r + n : r;
}

/* Bilinear lookup with wrap-around. UV follows OBJ: v = 0 is the bottom row
 * of the image, and RtTexture row 0 is the top, hence 1 - v. Texel centres
 * sit at half-integers. RGB is converted sRGB -> linear per texel, before
 * filtering, when `linear` is set; alpha is always linear. */
typedef struct RtTexel4 { float c[4]; } RtTexel4;

static RtTexel4 texel(const RtRenderJob *job, const RtTexture *t, int x, int y, int linear)
{
    const uint8_t *p = &t->rgba[4 * ((size_t)wrap(y, t->h) * t->w + wrap(x, t->w))];
    RtTexel4 r;
    for (int k = 0; k < 3; k++) r.c[k] = linear ? job->srgb_lut[p[k]] : p[k] * (1.0f / 255.0f);
    r.c[3] = p[3] * (1.0f / 255.0f);
    return r;
}

static RtTexel4 sample_bilinear(const RtRenderJob *job, const RtTexture *t, float tu, float tv,
                                int linear)
{
    /* Wrap to [0, 1) first, so the int conversion below cannot overflow
     * for huge UVs (NaN/inf stay non-finite and fall back to texel 0). */
    tu -= floorf(tu);
    tv -= floorf(tv);
    float x = tu * (float)t->w - 0.5f, y = (1.0f - tv) * (float)t->h - 0.5f;
    if (!isfinite(x) || !isfinite(y)) x = y = 0.0f;
    float fx = floorf(x), fy = floorf(y);
    float ax = x - fx, ay = y - fy;
    int x0 = (int)fx, y0 = (int)fy;
    RtTexel4 a = texel(job, t, x0, y0, linear), b = texel(job, t, x0 + 1, y0, linear);
    RtTexel4 c = texel(job, t, x0, y0 + 1, linear), d = texel(job, t, x0 + 1, y0 + 1, linear);
    RtTexel4 r;
    for (int k = 0; k < 4; k++) {
        float top = a.c[k] + (b.c[k] - a.c[k]) * ax;
        float bot = c.c[k] + (d.c[k] - c.c[k]) * ax;
        r.c[k] = top + (bot - top) * ay;
    }
    return r;
}

/* The hit filter of primary, reflection and shadow rays: 0 (ignore the hit)
 * where the material's map_d is a hole. Mask value = texel alpha when the
 * texture has any non-opaque texel, else its luminance (a grey-scale mask
 * loaded as RGBA has alpha 255 everywhere). */
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
    RtTexel4 x = sample_bilinear(job, t, tu, tv, 0);
    float mask = job->mask_uses_alpha[s->mats[m].map_d]
                     ? x.c[3]
                     : 0.2126f * x.c[0] + 0.7152f * x.c[1] + 0.0722f * x.c[2];
    return mask >= RT_ALPHA_CUTOFF;
}

/* ---- ray casting ---------------------------------------------------------- */

static RtHitFilter job_filter(const RtRenderJob *job) { return job->p.textures ? alpha_filter : NULL; }

static int closest_hit(const RtRenderJob *job, RtRay ray, RtHit *hit, uint32_t *steps)
{
    if (job->p.brute_force)
        return rt_brute_closest_hit(job->tris, ray, 0.0f, INFINITY, job->p.use_woop,
                                    job_filter(job), job, hit);
    return rt_kd_closest_hit_filtered(job->tree, job->tris, ray, 0.0f, INFINITY, job->p.use_woop,
                                      job_filter(job), job, hit, steps);
}

static int occluded(const RtRenderJob *job, RtRay ray, float tmax)
{
    if (job->p.brute_force) {
        RtHit h;
        return rt_brute_closest_hit(job->tris, ray, 0.0f, tmax, job->p.use_woop, job_filter(job),
                                    job, &h);
    }
    return rt_kd_any_hit(job->tree, job->tris, ray, 0.0f, tmax, job_filter(job), job);
}

/* ---- shading -------------------------------------------------------------- */

typedef struct RtSurface {
    RtVec3 p;   /* hit point, from the barycentrics */
    RtVec3 ng;  /* unit geometric normal, facing the incoming ray */
    RtVec3 n;   /* unit shading normal, on the same side as ng */
    const RtMaterial *mat;
    RtVec3 albedo; /* Kd times the map_Kd texel, linear */
} RtSurface;

static RtSurface surface_at(const RtRenderJob *job, RtRay ray, const RtHit *hit)
{
    const RtScene *s = job->scene;
    const RtTriangle *t = &s->tris[hit->tri];
    const RtVertex *a = &s->verts[t->v[0]], *b = &s->verts[t->v[1]], *c = &s->verts[t->v[2]];
    float u = hit->u, v = hit->v, w = 1.0f - u - v;
    RtSurface sf;
    sf.p = v3_add(v3_add(v3_scale(a->p, w), v3_scale(b->p, u)), v3_scale(c->p, v));
    sf.ng = v3_norm(v3_cross(v3_sub(b->p, a->p), v3_sub(c->p, a->p)));
    if (v3_dot(sf.ng, ray.d) > 0.0f) sf.ng = v3_scale(sf.ng, -1.0f);
    sf.n = v3_add(v3_add(v3_scale(a->n, w), v3_scale(b->n, u)), v3_scale(c->n, v));
    float nl = v3_len(sf.n);
    if (!(nl > 1e-12f) || !isfinite(nl)) sf.n = sf.ng;
    else sf.n = v3_scale(sf.n, 1.0f / nl);
    /* Triangles are two-sided: the shading normal is flipped to the
     * viewer's side of the surface, judged by the geometric normal (which
     * is exact), not by the interpolated one (which may graze). */
    if (v3_dot(sf.n, sf.ng) < 0.0f) sf.n = v3_scale(sf.n, -1.0f);
    sf.mat = tri_material(job, hit->tri);
    sf.albedo = sf.mat->kd;
    const RtTexture *tex = job->p.textures ? texture_at(s, sf.mat->map_kd) : NULL;
    if (tex) {
        float tu, tv;
        tri_uv(s, hit->tri, u, v, &tu, &tv);
        RtTexel4 x = sample_bilinear(job, tex, tu, tv, 1);
        sf.albedo = v3_mul(sf.albedo, v3(x.c[0], x.c[1], x.c[2]));
    }
    return sf;
}

/* Direct light at a surface seen along ray: emission + ambient + for every
 * visible light Lambert (albedo N.L) and Phong (Ks (R.V)^Ns). Point lights
 * have no distance falloff (docs/renderer.md says why). */
static RtVec3 shade_local(const RtRenderJob *job, const RtSurface *sf, RtVec3 view_dir,
                          RtRenderStats *st)
{
    const RtScene *s = job->scene;
    RtVec3 c = v3_add(sf->mat->ke, v3_mul(job->p.ambient, sf->albedo));
    RtVec3 origin = v3_add(sf->p, v3_scale(sf->ng, job->eps));
    RtVec3 ks = sf->mat->ks;
    float ns = sf->mat->ns > 1.0f ? sf->mat->ns : 1.0f;
    int has_spec = ks.x > 0.0f || ks.y > 0.0f || ks.z > 0.0f;
    for (uint32_t i = 0; i < s->light_count; i++) {
        const RtLight *l = &s->lights[i];
        RtVec3 L;
        float dist;
        if (l->type == RT_LIGHT_DIRECTIONAL) {
            L = v3_norm(l->v);
            dist = INFINITY;
        } else {
            RtVec3 d = v3_sub(l->v, sf->p);
            dist = v3_len(d);
            if (!(dist > 0.0f)) continue;
            L = v3_scale(d, 1.0f / dist);
        }
        /* A light behind the surface (geometrically) does not reach the
         * viewer's side, whatever the interpolated normal says. */
        float ndl = v3_dot(sf->n, L);
        if (ndl <= 0.0f || v3_dot(sf->ng, L) <= 0.0f) continue;
        if (job->p.shadows) {
            st->shadow_rays++;
            RtRay sr = {origin, L};
            /* Stop short of a point light by the same epsilon, so geometry
             * the light sits on does not shadow it. */
            float tmax = isinf(dist) ? INFINITY : dist - job->eps;
            if (tmax > 0.0f && occluded(job, sr, tmax)) continue;
        }
        RtVec3 lc = v3_mul(sf->albedo, v3_scale(l->color, ndl));
        if (has_spec) {
            RtVec3 r = v3_sub(v3_scale(sf->n, 2.0f * ndl), L); /* L mirrored about N */
            float rv = v3_dot(r, view_dir);
            if (rv > 0.0f) lc = v3_add(lc, v3_scale(v3_mul(ks, l->color), powf(rv, ns)));
        }
        c = v3_add(c, lc);
    }
    return c;
}

/* Whitted loop, unrolled: colour = sum over the mirror chain of
 * throughput * (1 - r) * local, throughput *= r. The last surface the depth
 * allows is shaded as if it were not a mirror (full local colour), so
 * max_bounces = 0 shows mirrors in their own diffuse colour. */
static RtVec3 trace_pixel(const RtRenderJob *job, RtRay ray, uint32_t *id, uint32_t *steps,
                          RtRenderStats *st)
{
    RtVec3 color = v3(0, 0, 0), through = v3(1, 1, 1);
    *id = RT_NO_HIT;
    for (int depth = 0;; depth++) {
        RtHit hit;
        hit.tri = RT_NO_HIT;
        if (depth == 0) st->primary_rays++;
        else st->reflection_rays++;
        if (!closest_hit(job, ray, &hit, depth == 0 ? steps : NULL) || hit.tri == RT_NO_HIT ||
            hit.tri >= job->scene->tri_count)
            return v3_add(color, v3_mul(through, job->p.background));
        if (depth == 0) *id = hit.tri;
        RtSurface sf = surface_at(job, ray, &hit);
        RtVec3 view_dir = v3_scale(ray.d, -1.0f);
        RtVec3 local = shade_local(job, &sf, view_dir, st);
        float r = fminf(fmaxf(sf.mat->reflect, 0.0f), 1.0f);
        if (r <= 0.0f || depth >= job->p.max_bounces) return v3_add(color, v3_mul(through, local));
        color = v3_add(color, v3_mul(through, v3_scale(local, 1.0f - r)));
        through = v3_scale(through, r);
        /* Mirror about the shading normal (smooth spheres); if that sends the
         * ray into the surface (grazing, interpolated normals), use the
         * geometric normal instead. */
        RtVec3 d = v3_sub(ray.d, v3_scale(sf.n, 2.0f * v3_dot(ray.d, sf.n)));
        if (v3_dot(d, sf.ng) <= 0.0f) d = v3_sub(ray.d, v3_scale(sf.ng, 2.0f * v3_dot(ray.d, sf.ng)));
        ray.o = v3_add(sf.p, v3_scale(sf.ng, job->eps));
        ray.d = v3_norm(d);
    }
}

/* A fixed ramp (dark blue, blue, cyan, yellow, red, dark red) over
 * 0..RT_HEAT_MAX_STEPS visited nodes, in display (sRGB) space; more steps
 * saturate at dark red. Fixed so heatmaps of different scenes compare. */
static void heat_color(uint32_t steps, uint8_t out[3])
{
    static const float stops[6][3] = {{0, 0, 0.5f}, {0, 0, 1}, {0, 1, 1},
                                      {1, 1, 0},    {1, 0, 0}, {0.5f, 0, 0}};
    static const float at[6] = {0.0f, 0.125f, 0.375f, 0.625f, 0.875f, 1.0f};
    float x = fminf((float)steps / RT_HEAT_MAX_STEPS, 1.0f);
    int i = 0;
    while (i < 4 && x > at[i + 1]) i++;
    float f = (x - at[i]) / (at[i + 1] - at[i]);
    for (int k = 0; k < 3; k++) {
        float c = stops[i][k] + (stops[i + 1][k] - stops[i][k]) * f;
        out[k] = (uint8_t)(c * 255.0f + 0.5f);
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
            RtRay ray = {job->cam.o, rt_camera_dir(&job->cam, (float)x + 0.5f, (float)y + 0.5f)};
            uint32_t id, steps = 0;
            RtVec3 c = trace_pixel(job, ray, &id, &steps, st);
            size_t i = (size_t)y * job->img->w + x;
            uint8_t *px = &job->img->rgba[4 * i];
            if (job->p.heatmap) {
                heat_color(steps, px);
            } else {
                px[0] = rt_linear_to_srgb8(c.x);
                px[1] = rt_linear_to_srgb8(c.y);
                px[2] = rt_linear_to_srgb8(c.z);
            }
            px[3] = 255;
            if (job->ids) job->ids[i] = id;
        }
}

static void *render_worker(void *arg)
{
    RtRenderWorker *w = arg;
    RtRenderJob *job = w->job;
    for (;;) {
        int tile = atomic_fetch_add(&job->next_tile, 1);
        if (tile >= job->tile_count) break;
        render_tile(job, tile, &w->stats);
    }
    return NULL;
}

/* Ray offset scale: the diagonal of the triangles' bounds (finite vertices
 * only). Computed from the triangle arrays, not the tree, so tree and
 * brute-force renders use the very same epsilon. */
static float scene_epsilon(const RtTriArrays *tris)
{
    RtAabb b = aabb_empty();
    for (size_t i = 0; i < (size_t)tris->count * 3; i++) {
        RtVec3 p = f4_xyz(tris->verts[i]);
        if (isfinite(p.x) && isfinite(p.y) && isfinite(p.z)) b = aabb_grow(b, p);
    }
    float diag = aabb_is_empty(b) ? 0.0f : v3_len(v3_sub(b.hi, b.lo));
    return diag > 0.0f && isfinite(diag) ? RT_RAY_EPS_REL * diag : RT_RAY_EPS_REL;
}

/* Decides per map_d texture whether it carries alpha (any texel < 255). */
static uint8_t *mask_channels(const RtScene *s)
{
    uint8_t *uses_alpha = calloc(s->tex_count ? s->tex_count : 1, 1);
    if (!uses_alpha) return NULL;
    for (uint32_t m = 0; m < s->mat_count; m++) {
        const RtTexture *t = texture_at(s, s->mats[m].map_d);
        if (!t || uses_alpha[s->mats[m].map_d]) continue;
        size_t n = (size_t)t->w * t->h;
        for (size_t i = 0; i < n; i++)
            if (t->rgba[4 * i + 3] != 255) {
                uses_alpha[s->mats[m].map_d] = 1;
                break;
            }
    }
    return uses_alpha;
}

RtStatus rt_render_cpu(const RtScene *scene, const RtTriArrays *tris, const RtKdTree *tree,
                       const RtCamera *cam, const RtRenderParams *p, RtImage *img,
                       uint32_t *ids, RtRenderStats *stats, RtError *err)
{
    double t0 = rt_now_ms();
    RtRenderParams params = p ? *p : rt_render_params_default();
    if (!scene || !tris || !cam || !img || !img->rgba || img->w <= 0 || img->h <= 0)
        return rt_fail(err, RT_ERR_ARG, "RENDER: missing scene, triangles, camera or image");
    if (!tree && !params.brute_force)
        return rt_fail(err, RT_ERR_ARG, "RENDER: no kd-tree given (NULL) and brute_force is off");
    if (tris->count != scene->tri_count)
        return rt_fail(err, RT_ERR_ARG,
                       "RENDER: triangle arrays hold %u triangles but the scene has %u "
                       "(rebuild them with rt_tri_arrays_make)",
                       tris->count, scene->tri_count);

    RtRenderJob *job = calloc(1, sizeof *job);
    int nthreads = params.threads > 0 ? params.threads : rt_thread_count();
    if (!job) return rt_fail(err, RT_ERR_OOM, "RENDER: out of memory");
    job->scene = scene;
    job->tris = tris;
    job->tree = tree;
    job->p = params;
    job->cam = rt_camera_basis(*cam, img->w, img->h);
    job->img = img;
    job->ids = ids;
    job->default_mat = rt_material_default();
    job->eps = scene_epsilon(tris);
    for (int i = 0; i < 256; i++) job->srgb_lut[i] = rt_srgb8_to_linear((uint8_t)i);
    job->mask_uses_alpha = mask_channels(scene);
    job->tiles_x = (img->w + RT_TILE - 1) / RT_TILE;
    job->tile_count = job->tiles_x * ((img->h + RT_TILE - 1) / RT_TILE);
    atomic_init(&job->next_tile, 0);
    if (nthreads > job->tile_count) nthreads = job->tile_count;
    RtRenderWorker *workers = calloc((size_t)nthreads, sizeof *workers);
    if (!job->mask_uses_alpha || !workers) {
        free(job->mask_uses_alpha);
        free(job);
        free(workers);
        return rt_fail(err, RT_ERR_OOM, "RENDER: out of memory");
    }

    /* Worker 0 is the calling thread; a thread that cannot be started just
     * leaves its tiles to the others. */
    for (int i = 0; i < nthreads; i++) workers[i].job = job;
    for (int i = 1; i < nthreads; i++)
        workers[i].started =
            pthread_create(&workers[i].thread, NULL, render_worker, &workers[i]) == 0;
    render_worker(&workers[0]);
    RtRenderStats total;
    memset(&total, 0, sizeof total);
    for (int i = 0; i < nthreads; i++) {
        if (workers[i].started) pthread_join(workers[i].thread, NULL);
        total.primary_rays += workers[i].stats.primary_rays;
        total.shadow_rays += workers[i].stats.shadow_rays;
        total.reflection_rays += workers[i].stats.reflection_rays;
    }
    free(workers);
    free(job->mask_uses_alpha);
    free(job);
    total.ms = rt_now_ms() - t0;
    if (stats) *stats = total;
    return RT_OK;
}
