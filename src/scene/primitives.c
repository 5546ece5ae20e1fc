/* primitives.c — the built-in shapes (quad, box, UV sphere). Shapes are
 * generated in their unit frame, then each vertex goes through the caller's
 * matrix as it is appended. */
#include "scene/primitives.h"

#include <stdlib.h>
#include <string.h>

static RtVec3 mat34_vector(const float m[12], RtVec3 d)
{
    return v3(m[0] * d.x + m[1] * d.y + m[2] * d.z, m[4] * d.x + m[5] * d.y + m[6] * d.z,
              m[8] * d.x + m[9] * d.y + m[10] * d.z);
}

void rt_scene_transform(RtScene *s, const float m[12])
{
    for (uint32_t i = 0; i < s->vert_count; i++) {
        s->verts[i].p = rt_mat34_point(m, s->verts[i].p);
        s->verts[i].n = rt_mat34_normal(m, s->verts[i].n);
    }
    if (rt_mat34_det(m) < 0.0f)
        for (uint32_t i = 0; i < s->tri_count; i++) {
            uint32_t t = s->tris[i].v[1];
            s->tris[i].v[1] = s->tris[i].v[2];
            s->tris[i].v[2] = t;
        }
    for (uint32_t i = 0; i < s->light_count; i++) {
        RtLight *l = &s->lights[i];
        /* positions as points, directions and normals by the linear part
           (an area light's size stays as authored) */
        l->v = l->type == RT_LIGHT_DIRECTIONAL ? v3_norm(mat34_vector(m, l->v)) : rt_mat34_point(m, l->v);
        if (l->type == RT_LIGHT_QUAD) l->n = v3_norm(mat34_vector(m, l->n));
    }
}

/* ---- shapes ---------------------------------------------------------------- */

/* Appends one object from a unit-frame vertex/index list, transformed by m;
 * rolls s back on failure so a half-made shape never remains. */
static RtStatus emit(RtScene *s, const float m[12], int32_t mat, const char *name, const RtVertex *v,
                     uint32_t nv, const uint32_t *idx, uint32_t ntri, RtError *err)
{
    if (mat < -1 || (mat >= 0 && (uint32_t)mat >= s->mat_count))
        return rt_fail(err, RT_ERR_ARG, "(%s): SCENE: material index %d out of range (%u materials)", name,
                       (int)mat, s->mat_count);
    uint32_t v0 = s->vert_count, t0 = s->tri_count, o0 = s->object_count;
    int flip = m && rt_mat34_det(m) < 0.0f;
    int64_t obj = rt_scene_add_object(s, name);
    if (obj < 0) goto oom;
    for (uint32_t i = 0; i < nv; i++) {
        RtVertex w = v[i];
        if (m) {
            w.p = rt_mat34_point(m, w.p);
            w.n = rt_mat34_normal(m, w.n);
        }
        if (rt_scene_add_vertex(s, w) < 0) goto oom;
    }
    for (uint32_t i = 0; i < ntri; i++) {
        const uint32_t *k = &idx[3 * i];
        RtTriangle t = {{v0 + k[0], v0 + (flip ? k[2] : k[1]), v0 + (flip ? k[1] : k[2])}, mat, (uint32_t)obj};
        if (rt_scene_add_triangle(s, t) < 0) goto oom;
    }
    s->objects[obj].tri_count = ntri;
    return RT_OK;
oom:
    s->vert_count = v0;
    s->tri_count = t0;
    s->object_count = o0;
    return rt_fail(err, RT_ERR_OOM, "(%s): SCENE: out of memory", name);
}

/* One face of a [-1,1] square: centre c, in-plane axes t (u) and b (v) with
 * t x b = the outward normal, so the corners below run counter-clockwise
 * seen from outside. */
static void square(RtVertex *v, uint32_t *idx, uint32_t base, RtVec3 c, RtVec3 t, RtVec3 b)
{
    static const float corner[4][2] = {{-1, -1}, {1, -1}, {1, 1}, {-1, 1}};
    RtVec3 n = v3_norm(v3_cross(t, b));
    for (int k = 0; k < 4; k++) {
        float su = corner[k][0], sv = corner[k][1];
        v[k].p = v3_add(c, v3_add(v3_scale(t, su), v3_scale(b, sv)));
        v[k].n = n;
        v[k].u = 0.5f * (su + 1.0f);
        v[k].v = 0.5f * (sv + 1.0f);
    }
    const uint32_t tri[6] = {0, 1, 2, 0, 2, 3};
    for (int k = 0; k < 6; k++) idx[k] = base + tri[k];
}

RtStatus rt_prim_quad(RtScene *s, const float m[12], int32_t mat, const char *name, RtError *err)
{
    RtVertex v[4];
    uint32_t idx[6];
    square(v, idx, 0, v3(0, 0, 0), v3(1, 0, 0), v3(0, 0, -1));
    return emit(s, m, mat, name ? name : "quad", v, 4, idx, 2, err);
}

RtStatus rt_prim_box(RtScene *s, const float m[12], int32_t mat, const char *name, RtError *err)
{
    /* Outward normal and the u axis of each face; v is "up" (+y on the
     * sides, -z on top, +z underneath). */
    static const float face[6][2][3] = {
        {{1, 0, 0}, {0, 0, -1}}, {{-1, 0, 0}, {0, 0, 1}}, {{0, 1, 0}, {1, 0, 0}},
        {{0, -1, 0}, {1, 0, 0}}, {{0, 0, 1}, {1, 0, 0}},  {{0, 0, -1}, {-1, 0, 0}},
    };
    RtVertex v[24];
    uint32_t idx[36];
    for (int f = 0; f < 6; f++) {
        RtVec3 n = v3(face[f][0][0], face[f][0][1], face[f][0][2]);
        RtVec3 t = v3(face[f][1][0], face[f][1][1], face[f][1][2]);
        square(&v[4 * f], &idx[6 * f], 4u * (uint32_t)f, n, t, v3_cross(n, t));
    }
    return emit(s, m, mat, name ? name : "box", v, 24, idx, 12, err);
}

static int sphere_bands(int segments) { return segments / 2 < 2 ? 2 : segments / 2; }

uint32_t rt_prim_sphere_tri_count(int segments)
{
    if (segments < 3 || segments > RT_PRIM_SPHERE_MAX_SEGMENTS) return 0;
    return 2u * (uint32_t)segments * (uint32_t)(sphere_bands(segments) - 1);
}

RtStatus rt_prim_sphere(RtScene *s, const float m[12], int32_t mat, int segments, const char *name,
                        RtError *err)
{
    name = name ? name : "sphere";
    if (segments < 3 || segments > RT_PRIM_SPHERE_MAX_SEGMENTS)
        return rt_fail(err, RT_ERR_ARG, "(%s): SCENE: sphere segments %d outside [3, %d]", name, segments,
                       RT_PRIM_SPHERE_MAX_SEGMENTS);
    uint32_t slices = (uint32_t)segments, bands = (uint32_t)sphere_bands(segments);
    uint32_t nv = (slices + 1) * (bands + 1), ntri = rt_prim_sphere_tri_count(segments);
    RtVertex *v = malloc(nv * sizeof *v);
    uint32_t *idx = malloc((size_t)ntri * 3 * sizeof *idx);
    if (!v || !idx) {
        free(v);
        free(idx);
        return rt_fail(err, RT_ERR_OOM, "(%s): SCENE: out of memory", name);
    }
    const double pi = 3.14159265358979323846;
    for (uint32_t i = 0; i <= bands; i++) {
        double theta = pi * i / bands; /* 0 at the north pole */
        for (uint32_t j = 0; j <= slices; j++) {
            double phi = 2.0 * pi * j / slices;
            RtVertex *w = &v[i * (slices + 1) + j];
            /* Exact poles and seam: the wrap-around column repeats column 0. */
            double st = (i == 0 || i == bands) ? 0.0 : sin(theta);
            double ct = i == 0 ? 1.0 : (i == bands ? -1.0 : cos(theta));
            double cp = j == slices ? 1.0 : cos(phi), sp = j == slices ? 0.0 : sin(phi);
            w->p = v3((float)(st * cp), (float)ct, (float)(-st * sp));
            w->n = w->p;
            w->u = (float)j / (float)slices;
            w->v = 1.0f - (float)i / (float)bands;
        }
    }
    /* Quad (a b c d) between rows i and i+1 is split into (a b c) and
     * (a c d); at a pole one of the two is degenerate and left out. */
    uint32_t k = 0;
    for (uint32_t i = 0; i < bands; i++)
        for (uint32_t j = 0; j < slices; j++) {
            uint32_t a = i * (slices + 1) + j, b = a + slices + 1, c = b + 1, d = a + 1;
            if (i != bands - 1) {
                idx[k++] = a; idx[k++] = b; idx[k++] = c;
            }
            if (i != 0) {
                idx[k++] = a; idx[k++] = c; idx[k++] = d;
            }
        }
    RtStatus st = emit(s, m, mat, name, v, nv, idx, ntri, err);
    free(v);
    free(idx);
    return st;
}
