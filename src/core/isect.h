/* isect.h — ray/triangle tests shared by the CPU and GPU tracers.
 * Woop 2004 (unit-triangle space) and Moller-Trumbore 1997; Hoedt 2011
 * compares them on the GPU. Both return 1 and fill t,u,v on a hit with
 * t in [tmin, tmax]; u,v are the barycentrics of v1 and v2. */
#ifndef RT_ISECT_H
#define RT_ISECT_H

#include "kd/kd_layout.h"

typedef struct RtRay {
    RtVec3 o, d;
} RtRay;

typedef struct RtHit {
    float t, u, v;
    uint32_t tri; /* RT_NO_HIT when nothing was hit */
} RtHit;
#define RT_NO_HIT 0xffffffffu

RT_HD int rt_isect_woop(const RtFloat4 rows[3], RtVec3 o, RtVec3 d, float tmin, float tmax,
                        float *t, float *u, float *v)
{
    float oz = rows[2].w + rows[2].x * o.x + rows[2].y * o.y + rows[2].z * o.z;
    float dz = rows[2].x * d.x + rows[2].y * d.y + rows[2].z * d.z;
    if (dz == 0.0f) return 0; /* parallel to the plane: -oz/0 would pass an infinite tmax */
    float tt = -oz / dz;
    if (!(tt >= tmin && tt <= tmax)) return 0; /* also rejects NaN */
    RtVec3 p = v3_add(o, v3_scale(d, tt));
    float uu = rows[0].w + rows[0].x * p.x + rows[0].y * p.y + rows[0].z * p.z;
    if (uu < 0.0f) return 0;
    float vv = rows[1].w + rows[1].x * p.x + rows[1].y * p.y + rows[1].z * p.z;
    if (vv < 0.0f || uu + vv > 1.0f) return 0;
    *t = tt; *u = uu; *v = vv;
    return 1;
}

RT_HD int rt_isect_mt(RtVec3 v0, RtVec3 v1, RtVec3 v2, RtVec3 o, RtVec3 d, float tmin,
                      float tmax, float *t, float *u, float *v)
{
    RtVec3 e1 = v3_sub(v1, v0), e2 = v3_sub(v2, v0);
    RtVec3 p = v3_cross(d, e2);
    float det = v3_dot(e1, p);
    if (det == 0.0f) return 0;
    float inv = 1.0f / det;
    RtVec3 s = v3_sub(o, v0);
    float uu = v3_dot(s, p) * inv;
    if (uu < 0.0f || uu > 1.0f) return 0;
    RtVec3 q = v3_cross(s, e1);
    float vv = v3_dot(d, q) * inv;
    if (vv < 0.0f || uu + vv > 1.0f) return 0;
    float tt = v3_dot(e2, q) * inv;
    if (!(tt >= tmin && tt <= tmax)) return 0;
    *t = tt; *u = uu; *v = vv;
    return 1;
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
