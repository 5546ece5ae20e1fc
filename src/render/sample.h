/* sample.h — the random rays of stage "trace", written once for the CPU
 * oracle and the GPU: a stateless hash from (pixel, seed) to two uniform
 * numbers, a cosine-weighted direction about a unit normal, the diffuse
 * ray from a primary hit that the benchmark casts
 * (rt_pipeline_cast_diffuse), and the ambient-occlusion rays of shading.
 * Stateless, so a ray depends on its pixel and the seed alone: any thread count, any order, either backend, one ray set.
 *
 *   ray = rt_sample_diffuse_ray(corners of the hit triangle, hit u v,
 *                               primary direction, pixel, seed, eps)
 */
#ifndef RT_SAMPLE_H
#define RT_SAMPLE_H

#include "render/shade.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The multipliers and increment of the 32-bit LCG step inside pcg2d
 * (Numerical Recipes' 1664525, 1013904223), as Jarzynski & Olano give it. */
#define RT_SAMPLE_LCG_MUL 1664525u
#define RT_SAMPLE_LCG_ADD 1013904223u
/* 2^-24: the top 24 bits of a hash as a float in [0, 1), exactly (a float
 * holds 24 significant bits, so no value rounds up to 1). */
#define RT_SAMPLE_UNIT_24 (1.0f / 16777216.0f)
#define RT_SAMPLE_TWO_PI 6.28318530717958647692f

/* Two uniform numbers in [0, 1) for (index, seed): pcg2d, Jarzynski & Olano
 * 2020, "Hash Functions for GPU Rendering" (JCGT 9(3)), their pick among
 * two-in two-out hashes for quality per cost. Integer arithmetic only, so
 * host and device agree bit for bit. */
RT_HD void rt_sample_uniform2(uint32_t index, uint32_t seed, float *u1, float *u2)
{
    uint32_t x = index * RT_SAMPLE_LCG_MUL + RT_SAMPLE_LCG_ADD;
    uint32_t y = seed * RT_SAMPLE_LCG_MUL + RT_SAMPLE_LCG_ADD;
    x += y * RT_SAMPLE_LCG_MUL;
    y += x * RT_SAMPLE_LCG_MUL;
    x ^= x >> 16;
    y ^= y >> 16;
    x += y * RT_SAMPLE_LCG_MUL;
    y += x * RT_SAMPLE_LCG_MUL;
    x ^= x >> 16;
    y ^= y >> 16;
    *u1 = (float)(x >> 8) * RT_SAMPLE_UNIT_24;
    *u2 = (float)(y >> 8) * RT_SAMPLE_UNIT_24;
}

/* The streams of a pixel's random draws in a frame: one per purpose, each
 * seeded by the frame's sample index (RtShadeParams.sample), so the draws
 * of sample s are the same on both backends and new for every sample. */
enum { RT_DRAW_JITTER = 0, RT_DRAW_AO = 1, RT_DRAW_ENV = 2, RT_DRAW_LIGHT = 3 /* + the light's index */,
       RT_DRAW_EMIT = 0x40000000 /* and + 1: the emitter pick (far above any light index) */ };

RT_HD void rt_sample_draw(uint32_t pixel, uint32_t sample, uint32_t purpose, float *u1, float *u2)
{
    /* golden-ratio and murmur constants keep (sample, purpose) seeds apart */
    rt_sample_uniform2(pixel, sample * 0x9E3779B9u ^ (purpose + 1u) * 0x85EBCA6Bu, u1, u2);
}

/* Where in pixel `pixel` sample `sample` looks: the centre for sample 0
 * (one sample per pixel is today's image), a uniform jitter after, so the
 * accumulated mean is the box-filtered pixel. */
RT_HD void rt_sample_jitter(uint32_t pixel, uint32_t sample, float *dx, float *dy)
{
    if (sample == 0) {
        *dx = *dy = 0.5f;
        return;
    }
    rt_sample_draw(pixel, sample, RT_DRAW_JITTER, dx, dy);
}

/* Two unit tangents completing the unit normal n to a right-handed
 * orthonormal basis (t, b, n). Duff et al. 2017, "Building an Orthonormal
 * Basis, Revisited" (JCGT 6(1)): no branch on a chosen axis, and the sign
 * taken from n.z (-0 included) keeps 1 + |n.z| >= 1 in the division, so
 * every unit normal, the poles too, gets a basis. */
RT_HD void rt_sample_basis(RtVec3 n, RtVec3 *t, RtVec3 *b)
{
    float sign = copysignf(1.0f, n.z);
    float a = -1.0f / (sign + n.z);
    float c = n.x * n.y * a;
    *t = v3(1.0f + sign * n.x * n.x * a, sign * c, -sign * n.x);
    *b = v3(c, sign + n.y * n.y * a, -n.y);
}

/* A direction about the unit normal n with density cos(theta) / pi (Malley's
 * method: uniform on the unit disc, lifted to the hemisphere): r = sqrt(u1),
 * phi = 2 pi u2, cos(theta) = sqrt(1 - u1), so E[cos theta] = 2/3. With u1 <
 * 1 (rt_sample_uniform2) cos(theta) >= 2^-12: never in the tangent plane.
 * Unit length (renormalised after rounding). */
RT_HD RtVec3 rt_sample_cosine_dir(RtVec3 n, float u1, float u2)
{
    RtVec3 t, b;
    rt_sample_basis(n, &t, &b);
    float r = sqrtf(u1), phi = RT_SAMPLE_TWO_PI * u2;
    float z = sqrtf(fmaxf(0.0f, 1.0f - u1));
    RtVec3 d = v3_add(v3_add(v3_scale(t, r * cosf(phi)), v3_scale(b, r * sinf(phi))), v3_scale(n, z));
    return v3_norm(d);
}

/* A uniform direction on the unit sphere from (u1, u2): z = 1 - 2 u1,
 * phi = 2 pi u2 (unit up to rounding). */
RT_HD RtVec3 rt_sample_sphere_dir(float u1, float u2)
{
    float z = 1.0f - 2.0f * u1, r = sqrtf(fmaxf(0.0f, 1.0f - z * z)), phi = RT_SAMPLE_TWO_PI * u2;
    return v3(r * cosf(phi), r * sinf(phi), z);
}

/* A point of area light l's surface from (u1, u2), and the surface's unit
 * normal there: uniform over a quad's W x H (its edges along
 * rt_sample_basis of its normal), uniform over a sphere. */
RT_HD RtVec3 rt_sample_area_point(const RtLight *l, float u1, float u2, RtVec3 *n)
{
    if (l->type == RT_LIGHT_QUAD) {
        RtVec3 t, b;
        rt_sample_basis(l->n, &t, &b);
        *n = l->n;
        return v3_add(l->v, v3_add(v3_scale(t, (u1 - 0.5f) * l->w), v3_scale(b, (u2 - 0.5f) * l->h)));
    }
    *n = rt_sample_sphere_dir(u1, u2);
    return v3_add(l->v, v3_scale(*n, l->radius));
}

/* Area light l (quad, sphere) seen from p as the point light of one
 * sample: a point of its surface from (u1, u2), the colour scaled by the
 * quad's cosine toward p (a one-sided Lambertian emitter; 0 behind it).
 * A quad's point is uniform over its W x H (edges along rt_sample_basis of
 * its normal); a sphere's is uniform over the hemisphere facing p. Other
 * lights are returned as they are. The shadow ray to the point makes the
 * shadow soft as samples accumulate. */
RT_HD RtLight rt_sample_light(const RtLight *l, RtVec3 p, float u1, float u2)
{
    RtLight s = *l;
    if (l->type == RT_LIGHT_QUAD) {
        RtVec3 n;
        s.v = rt_sample_area_point(l, u1, u2, &n);
        RtVec3 d = v3_sub(p, s.v);
        float len = v3_len(d);
        float cosl = len > 0.0f ? v3_dot(l->n, d) / len : 0.0f;
        s.color = v3_scale(l->color, fmaxf(cosl, 0.0f));
    } else if (l->type == RT_LIGHT_SPHERE) {
        RtVec3 d = rt_sample_sphere_dir(u1, u2);
        if (v3_dot(d, v3_sub(p, l->v)) < 0.0f) d = v3_scale(d, -1.0f);
        s.v = v3_add(l->v, v3_scale(d, l->radius));
    } else {
        return s;
    }
    s.type = RT_LIGHT_POINT;
    return s;
}

/* Light `index` of a shaded point p for pixel `pixel` at sample `sample`:
 * an area light's sample point (its own draw stream), else the light. */
RT_HD RtLight rt_sample_light_at(const RtLight *l, uint32_t index, RtVec3 p, uint32_t pixel, uint32_t sample)
{
    if (!rt_light_is_area(l)) return *l;
    float u1, u2;
    rt_sample_draw(pixel, sample, RT_DRAW_LIGHT + index, &u1, &u2);
    return rt_sample_light(l, p, u1, u2);
}

/* The cosine-weighted ray off surface sf for uniform numbers (u1, u2):
 * about the geometric normal (interpolated normals may point under the
 * surface), from rt_shade_offset's point on the viewer's side. */
RT_HD RtRay rt_sample_hemisphere_ray(const RtShadeSurface *sf, float u1, float u2, float eps)
{
    RtRay ray;
    ray.o = rt_shade_offset(sf, eps);
    ray.d = rt_sample_cosine_dir(sf->ng, u1, u2);
    return ray;
}

/* Fraction of the way from an emitter's sample point toward the shaded point
 * the light is placed (rt_sample_emitter). */
#define RT_SAMPLE_EMIT_LIFT 1e-3f

/* One emissive triangle of em as the point light of one sample, seen from
 * p (verts: 3 corners per triangle, the tracer's arrays): the triangle
 * picked by its cdf with u0, a uniform point of it from (u1, u2), and the
 * colour that makes the point-light term (albedo N.L colour) the
 * area-sampling estimate of the Lambertian reflection of its radiance Ke:
 * Ke |cos_l| A / (pi d^2 pick) (two-sided, as triangles are here). 0 light
 * for a degenerate triangle or a point on it. */
RT_HD RtLight rt_sample_emitter(const RtShadeEmitters *em, const RtFloat4 *verts, RtVec3 p, float u0, float u1,
                                float u2)
{
    RtLight s;
    s.type = RT_LIGHT_POINT;
    s.color = s.n = v3(0.0f, 0.0f, 0.0f);
    s.w = s.h = s.radius = 0.0f;
    uint32_t lo = 0, hi = em->count - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (em->e[mid].cdf < u0) lo = mid + 1;
        else hi = mid;
    }
    const RtEmitter *e = &em->e[lo];
    const RtFloat4 *v = &verts[3 * (size_t)e->tri];
    RtVec3 a = f4_xyz(v[0]), b = f4_xyz(v[1]), c = f4_xyz(v[2]);
    float su = sqrtf(u1), w0 = 1.0f - su, w1 = u2 * su;
    s.v = v3_add(v3_add(v3_scale(a, w0), v3_scale(b, w1)), v3_scale(c, 1.0f - w0 - w1));
    RtVec3 n = v3_cross(v3_sub(b, a), v3_sub(c, a)), d = v3_sub(p, s.v);
    float area2 = v3_len(n), dist2 = v3_dot(d, d);
    if (!(area2 > 0.0f) || !(dist2 > 0.0f) || !(e->pick > 0.0f)) return s;
    float cosl = fabsf(v3_dot(n, d)) / (area2 * sqrtf(dist2));
    s.color = v3_scale(e->ke, cosl * 0.5f * area2 / (RT_SHADE_PI * dist2 * e->pick));
    /* the light point a thousandth of the way toward p: on the triangle
       itself, the shadow ray (offset eps from p, ending eps short of the
       light) would reach the emitter at its very end and count it */
    s.v = v3_add(s.v, v3_scale(d, RT_SAMPLE_EMIT_LIFT));
    return s;
}

/* Light `index` of the shading loop: the scene's lights (rt_sample_light_at),
 * then, at index == light_count, one emissive triangle (its own streams). */
RT_HD RtLight rt_sample_light_or_emitter(const RtLight *lights, uint32_t light_count, const RtShadeEmitters *em,
                                         const RtFloat4 *verts, uint32_t index, RtVec3 p, uint32_t pixel,
                                         uint32_t sample)
{
    if (index < light_count) return rt_sample_light_at(&lights[index], index, p, pixel, sample);
    float u0, u1, u2, u3;
    rt_sample_draw(pixel, sample, RT_DRAW_EMIT, &u0, &u3);
    rt_sample_draw(pixel, sample, RT_DRAW_EMIT + 1, &u1, &u2);
    return rt_sample_emitter(em, verts, p, u0, u1, u2);
}

/* The diffuse ray of a primary hit on triangle (a, b, c) at barycentrics
 * (u, v), reached along dir from pixel `pixel` (y * width + x): the
 * hemisphere ray about the geometric normal facing dir. The caller casts
 * it closest-hit over [0, inf). */
RT_HD RtRay rt_sample_diffuse_ray(RtVec3 a, RtVec3 b, RtVec3 c, float u, float v, RtVec3 dir,
                                  uint32_t pixel, uint32_t seed, float eps)
{
    const RtVec3 none = v3(0.0f, 0.0f, 0.0f);
    RtShadeSurface sf = rt_shade_surface(a, b, c, none, none, none, u, v, dir, none);
    float u1, u2;
    rt_sample_uniform2(pixel, seed, &u1, &u2);
    return rt_sample_hemisphere_ray(&sf, u1, u2, eps);
}

/* ---- ambient occlusion ----------------------------------------------------- */

/* Chain depths (0..64, RtShadeParams.max_bounces) times AO rays per
 * surface: the draws of the AO stream per frame sample. */
#define RT_SAMPLE_AO_DRAWS (65u * RT_SHADE_AO_MAX_RAYS)

/* AO ray k (0..p->ao_rays - 1) of the surface at chain depth `depth` of
 * pixel `pixel` (y * width + x): the hemisphere ray of stream RT_DRAW_AO,
 * whose sample index counts (frame sample, depth, k), so every accumulated
 * frame draws new directions, the same on both backends. The caller casts
 * it any-hit over [0, rt_sample_ao_reach]. */
RT_HD RtRay rt_sample_ao_ray(const RtShadeParams *p, const RtShadeSurface *sf, uint32_t pixel, int depth,
                             int k, float eps)
{
    float u1, u2;
    rt_sample_draw(pixel, p->sample * RT_SAMPLE_AO_DRAWS + (uint32_t)depth * RT_SHADE_AO_MAX_RAYS + (uint32_t)k,
                   RT_DRAW_AO, &u1, &u2);
    return rt_sample_hemisphere_ray(sf, u1, u2, eps);
}

/* The environment-light ray of the surface at chain depth `depth`: one
 * cosine-weighted direction about the geometric normal per frame sample
 * (its own stream), cast any-hit to infinity; if it escapes, the surface
 * gains albedo x the map's radiance along it -- the cosine-weighted Monte
 * Carlo estimate of (albedo / pi) x the integral of L cos over the
 * hemisphere, converging as samples accumulate. */
RT_HD RtRay rt_sample_env_ray(const RtShadeParams *p, const RtShadeSurface *sf, uint32_t pixel, int depth, float eps)
{
    float u1, u2;
    /* 65 chain depths (max_bounces <= 64) per sample, as the AO draws */
    rt_sample_draw(pixel, p->sample * 65u + (uint32_t)depth, RT_DRAW_ENV, &u1, &u2);
    return rt_sample_hemisphere_ray(sf, u1, u2, eps);
}

/* An AO ray's reach: ao_distance of the scene diagonal behind eps. */
RT_HD float rt_sample_ao_reach(const RtShadeParams *p, float eps)
{
    return p->ao_distance * rt_shade_eps_diagonal(eps);
}

/* The ambient light at a surface whose `open` of p->ao_rays AO rays hit
 * nothing: ambient times the open fraction (the cosine-weighted estimate of
 * the unoccluded share of the hemisphere); ambient itself with AO off. */
RT_HD RtVec3 rt_sample_ao_ambient(const RtShadeParams *p, int open)
{
    return p->ao_rays > 0 ? v3_scale(p->ambient, (float)open / (float)p->ao_rays) : p->ambient;
}

#ifdef __cplusplus
}
#endif
#endif
