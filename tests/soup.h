/* soup.h — triangle soups and their rays for the tests of the acceleration
 * structures (test_kd_cpu.c, test_bvh_cpu.c): triangles with their Woop
 * rows, random points and directions, and the hit filters the traversals
 * are checked with. */
#ifndef RT_TEST_SOUP_H
#define RT_TEST_SOUP_H

#include "test_util.h"

#include <math.h>

#include "kd/kd_cpu.h"

typedef struct Soup {
    RtTriArrays t;
    uint32_t cap;
} Soup;

/* Appends a triangle with its Woop rows; zero rows mark a degenerate one,
 * as rt_tri_arrays_make leaves them. */
static inline void soup_add(Soup *s, RtVec3 a, RtVec3 b, RtVec3 c)
{
    if (s->t.count == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->t.verts = realloc(s->t.verts, 3 * (size_t)s->cap * sizeof *s->t.verts);
        s->t.woop = realloc(s->t.woop, 3 * (size_t)s->cap * sizeof *s->t.woop);
        assert_non_null(s->t.verts);
        assert_non_null(s->t.woop);
    }
    RtFloat4 *v = &s->t.verts[3 * (size_t)s->t.count], *w = &s->t.woop[3 * (size_t)s->t.count];
    v[0] = f4(a.x, a.y, a.z, 0);
    v[1] = f4(b.x, b.y, b.z, 0);
    v[2] = f4(c.x, c.y, c.z, 0);
    if (!rt_woop_rows(a, b, c, w)) memset(w, 0, 3 * sizeof *w);
    s->t.count++;
}

static inline void soup_free(Soup *s)
{
    free(s->t.verts);
    free(s->t.woop);
    memset(s, 0, sizeof *s);
}

/* A point of the unit cube; a unit direction (uniform on the sphere); a
 * point of box b. */
static inline RtVec3 rnd_vec(RtTestRng *r)
{
    return v3(rt_test_randf(r), rt_test_randf(r), rt_test_randf(r));
}
static inline RtVec3 rnd_dir(RtTestRng *r)
{
    for (;;) {
        RtVec3 d = v3_sub(v3_scale(rnd_vec(r), 2.0f), v3(1, 1, 1));
        float l = v3_dot(d, d);
        if (l > 1e-4f && l <= 1.0f) return v3_scale(d, 1.0f / sqrtf(l));
    }
}
static inline RtVec3 point_in(RtTestRng *r, RtAabb b)
{
    RtVec3 u = rnd_vec(r);
    return v3(b.lo.x + u.x * (b.hi.x - b.lo.x), b.lo.y + u.y * (b.hi.y - b.lo.y),
              b.lo.z + u.z * (b.hi.z - b.lo.z));
}

/* Alpha cutouts in the tests: odd triangles with u > 0.3 are holes. */
static inline int filter_odd(const void *ctx, uint32_t tri, float u, float v)
{
    (void)ctx;
    (void)v;
    return !(tri & 1u) || u <= 0.3f;
}

/* Rejects every hit, counting the calls in *(int *)ctx. */
static inline int reject_all(const void *ctx, uint32_t tri, float u, float v)
{
    (void)tri;
    (void)u;
    (void)v;
    (*(int *)ctx)++;
    return 0;
}

/* Rejects the triangles below *(const uint32_t *)ctx. */
static inline int reject_below(const void *ctx, uint32_t tri, float u, float v)
{
    (void)u;
    (void)v;
    return tri >= *(const uint32_t *)ctx;
}

#endif
