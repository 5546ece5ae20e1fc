/* isect.h — ray/triangle tests shared by the CPU and GPU tracers.
 * Woop 2004 (unit-triangle space) and Moller-Trumbore 1997; Hoedt 2011
 * compares them on the GPU. Both return 1 and fill t,u,v on a hit with
 * t in [tmin, tmax]; u,v are the barycentrics of v1 and v2. */
#ifndef RT_ISECT_H
#define RT_ISECT_H

#include <float.h>

#include "kd/kd_layout.h"

typedef struct RtRay {
    RtVec3 o, d;
} RtRay;

typedef struct RtHit {
    float t, u, v;
    uint32_t tri; /* RT_NO_HIT when nothing was hit */
} RtHit;
#define RT_NO_HIT 0xffffffffu

/* Both tests round alike on the CPU and the GPU (rt_base.h's RT_X*): the
 * GPU tracer and the CPU oracle agree bit for bit on t, u and v. Woop's is
 * written with fused multiply-adds: 56 instructions a test in the GPU's
 * inner loop instead of 70 with separate roundings.
 *
 * Woop's test for a FINITE tmax, as a kd traversal has (the cell's exit): a
 * ray parallel to the plane (dz = 0) gives t = -oz/0 = +-inf or NaN, which
 * the range test rejects. */
RT_HD int rt_isect_woop_finite(const RtFloat4 rows[3], RtVec3 o, RtVec3 d, float tmin, float tmax,
                               float *t, float *u, float *v)
{
    float oz = f4f_affine(rows[2], o);
    float dz = v3f_dot(f4_xyz(rows[2]), d);
    float tt = RT_XDIV(-oz, dz);
    if (!(tt >= tmin && tt <= tmax)) return 0; /* also rejects NaN */
    RtVec3 p = v3f_madd(o, d, tt);
    float uu = f4f_affine(rows[0], p);
    if (uu < 0.0f) return 0;
    float vv = f4f_affine(rows[1], p);
    if (vv < 0.0f || RT_XADD(uu, vv) > 1.0f) return 0;
    *t = tt; *u = uu; *v = vv;
    return 1;
}

/* Woop's test for any tmax: an infinite one (a ray to a directional light,
 * brute force) is held to the largest float, so the infinite t of a ray
 * parallel to the plane still fails it. */
RT_HD int rt_isect_woop(const RtFloat4 rows[3], RtVec3 o, RtVec3 d, float tmin, float tmax,
                        float *t, float *u, float *v)
{
    return rt_isect_woop_finite(rows, o, d, tmin, fminf(tmax, FLT_MAX), t, u, v);
}

RT_HD int rt_isect_mt(RtVec3 v0, RtVec3 v1, RtVec3 v2, RtVec3 o, RtVec3 d, float tmin,
                      float tmax, float *t, float *u, float *v)
{
    RtVec3 e1 = v3x_sub(v1, v0), e2 = v3x_sub(v2, v0);
    RtVec3 p = v3x_cross(d, e2);
    float det = v3x_dot(e1, p);
    if (det == 0.0f) return 0;
    float inv = RT_XDIV(1.0f, det);
    RtVec3 s = v3x_sub(o, v0);
    float uu = RT_XMUL(v3x_dot(s, p), inv);
    if (uu < 0.0f || uu > 1.0f) return 0;
    RtVec3 q = v3x_cross(s, e1);
    float vv = RT_XMUL(v3x_dot(d, q), inv);
    if (vv < 0.0f || RT_XADD(uu, vv) > 1.0f) return 0;
    float tt = RT_XMUL(v3x_dot(e2, q), inv);
    if (!(tt >= tmin && tt <= tmax)) return 0;
    *t = tt; *u = uu; *v = vv;
    return 1;
}

/* Triangle id of host arrays (kd_layout.h's RtTriArrays) by Woop's test
 * (use_woop 1, its rows) or Moller-Trumbore's (0, its vertices), as every
 * CPU tracer and the brute-force oracle call it, so their hits agree bit for
 * bit. A hit needs a finite t: with tmax = INFINITY, Woop's test takes a ray
 * parallel to a triangle's plane (dz = 0, oz != 0) for a hit at t = inf. */
RT_HD int rt_isect_tri(const RtTriArrays *tris, uint32_t id, int use_woop, RtVec3 o, RtVec3 d,
                       float tmin, float tmax, float *t, float *u, float *v)
{
    int hit;
    if (use_woop) {
        hit = rt_isect_woop(&tris->woop[3 * (size_t)id], o, d, tmin, tmax, t, u, v);
    } else {
        const RtFloat4 *p = &tris->verts[3 * (size_t)id];
        hit = rt_isect_mt(f4_xyz(p[0]), f4_xyz(p[1]), f4_xyz(p[2]), o, d, tmin, tmax, t, u, v);
    }
    return hit && *t < INFINITY;
}

/* One slab of the slab test. A ray parallel to the slab whose origin lies ON
 * one of its planes gives 0 * inf = NaN: it is inside the closed slab for
 * its whole length, so the slab does not limit it. */
RT_HD void rt_slab(float lo, float hi, float o, float inv_d, float *t_near, float *t_far)
{
    float a = (lo - o) * inv_d, b = (hi - o) * inv_d;
    if (isnan(a) || isnan(b)) {
        *t_near = -INFINITY;
        *t_far = INFINITY;
        return;
    }
    *t_near = fminf(a, b);
    *t_far = fmaxf(a, b);
}

/* Slab test against the closed box; returns 1 and the clipped [t0, t1] when
 * the ray meets it. */
RT_HD int rt_ray_aabb(RtAabb b, RtVec3 o, RtVec3 inv_d, float tmin, float tmax, float *t0,
                      float *t1)
{
    float nx, fx, ny, fy, nz, fz;
    rt_slab(b.lo.x, b.hi.x, o.x, inv_d.x, &nx, &fx);
    rt_slab(b.lo.y, b.hi.y, o.y, inv_d.y, &ny, &fy);
    rt_slab(b.lo.z, b.hi.z, o.z, inv_d.z, &nz, &fz);
    float lo = fmaxf(fmaxf(nx, ny), fmaxf(nz, tmin));
    float hi = fminf(fminf(fx, fy), fminf(fz, tmax));
    *t0 = lo; *t1 = hi;
    return lo <= hi;
}

#endif
