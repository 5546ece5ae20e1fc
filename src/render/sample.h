/* sample.h — the random rays of stage "trace", written once for the CPU
 * oracle and the GPU: a stateless hash from (pixel, seed) to two uniform
 * numbers, a cosine-weighted direction about a unit normal, the diffuse
 * ray from a primary hit that the benchmark casts
 * (rt_pipeline_cast_diffuse), and the ambient-occlusion rays of shading. Stateless, so a ray depends on its pixel and
 * the seed alone: any thread count, any order, either backend, one ray set.
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

/* A cosine-weighted ray off surface sf for draw (index, seed): about the
 * geometric normal (interpolated normals may point under the surface),
 * from rt_shade_offset's point on the viewer's side. */
RT_HD RtRay rt_sample_hemisphere_ray(const RtShadeSurface *sf, uint32_t index, uint32_t seed, float eps)
{
    float u1, u2;
    rt_sample_uniform2(index, seed, &u1, &u2);
    RtRay ray;
    ray.o = rt_shade_offset(sf, eps);
    ray.d = rt_sample_cosine_dir(sf->ng, u1, u2);
    return ray;
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
    return rt_sample_hemisphere_ray(&sf, pixel, seed, eps);
}

/* ---- ambient occlusion ----------------------------------------------------- */

/* Chain depths (0..64, RtShadeParams.max_bounces) times AO rays per surface:
 * the seeds one frame sample spans. */
#define RT_SAMPLE_AO_STREAMS (65u * RT_SHADE_AO_MAX_RAYS)

/* AO ray k (0..p->ao_rays - 1) of the surface at chain depth `depth` of
 * pixel `pixel` (y * width + x): the hemisphere ray drawn with the pixel as
 * index and a seed that is new for every (frame sample, depth, k), so each
 * accumulated frame draws new directions, the same on both backends. The
 * caller casts it any-hit over [0, rt_sample_ao_reach]. */
RT_HD RtRay rt_sample_ao_ray(const RtShadeParams *p, const RtShadeSurface *sf, uint32_t pixel, int depth,
                             int k, float eps)
{
    uint32_t seed = p->sample * RT_SAMPLE_AO_STREAMS + (uint32_t)depth * RT_SHADE_AO_MAX_RAYS + (uint32_t)k;
    return rt_sample_hemisphere_ray(sf, pixel, seed, eps);
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
