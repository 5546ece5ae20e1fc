/* scene.c — the scene model: growth, composition, finishing touches and the
 * flattening into the tracer's triangle arrays. Loaders live in load_*.c. */
#include "scene.h"

#include "primitives.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void rt_scene_init(RtScene *s) { memset(s, 0, sizeof *s); }

void rt_scene_free(RtScene *s)
{
    for (uint32_t i = 0; i < s->tex_count; i++) {
        free(s->texs[i].path);
        free(s->texs[i].rgba);
    }
    free(s->verts);
    free(s->tris);
    free(s->mats);
    free(s->texs);
    free(s->lights);
    free(s->objects);
    free(s->path);
    rt_scene_init(s);
}

/* Makes room for one more element (rt_grow_array's doubling) and returns
 * its index; -1 when the count would pass 2^31 (the tree's 30-bit indices
 * and every loader's limit are far below) or the allocation fails. */
static int64_t grow(void **arr, uint32_t *count, uint32_t *cap, size_t elem)
{
    if (*count >= (1u << 31)) return -1;
    size_t c = *cap;
    if (!rt_grow_array(arr, &c, (size_t)*count + 1, elem)) return -1;
    *cap = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
    return (*count)++;
}
#define GROW(s, arr, cnt, cap) grow((void **)&(s)->arr, &(s)->cnt, &(s)->cap, sizeof *(s)->arr)

int64_t rt_scene_add_vertex(RtScene *s, RtVertex v)
{
    int64_t i = GROW(s, verts, vert_count, vert_cap);
    if (i >= 0) s->verts[i] = v;
    return i;
}
int64_t rt_scene_add_triangle(RtScene *s, RtTriangle t)
{
    int64_t i = GROW(s, tris, tri_count, tri_cap);
    if (i >= 0) s->tris[i] = t;
    return i;
}
int64_t rt_scene_add_material(RtScene *s, const RtMaterial *m)
{
    int64_t i = GROW(s, mats, mat_count, mat_cap);
    if (i >= 0) s->mats[i] = *m;
    return i;
}
int64_t rt_scene_add_light(RtScene *s, RtLight l)
{
    int64_t i = GROW(s, lights, light_count, light_cap);
    if (i >= 0) s->lights[i] = l;
    return i;
}
int64_t rt_scene_add_object(RtScene *s, const char *name)
{
    int64_t i = GROW(s, objects, object_count, object_cap);
    if (i < 0) return i;
    RtObject *o = &s->objects[i];
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", name ? name : "");
    o->first_tri = s->tri_count;
    return i;
}

int64_t rt_scene_add_texture(RtScene *s, RtTexture t)
{
    int64_t i = GROW(s, texs, tex_count, tex_cap);
    if (i >= 0) s->texs[i] = t;
    return i;
}

RtMaterial rt_material_default(void)
{
    RtMaterial m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "default");
    m.kd = v3(0.7f, 0.7f, 0.7f);
    m.ns = 10.0f;
    m.ni = 1.0f;
    m.d = 1.0f;
    m.illum = 2;
    m.map_kd = m.map_d = -1;
    return m;
}

RtAabb rt_scene_bounds(const RtScene *s)
{
    RtAabb b = aabb_empty();
    for (uint32_t i = 0; i < s->tri_count; i++)
        for (int k = 0; k < 3; k++) {
            RtVec3 p = s->verts[s->tris[i].v[k]].p;
            if (isfinite(p.x) && isfinite(p.y) && isfinite(p.z)) b = aabb_grow(b, p);
        }
    return b;
}

RtStatus rt_scene_append(RtScene *dst, const RtScene *src, const float m[12],
                         int32_t material_override, RtError *err)
{
    uint32_t v0 = dst->vert_count, m0 = dst->mat_count, t0 = dst->tex_count, o0 = dst->object_count;
    uint32_t tri0 = dst->tri_count;
    int flip = m && rt_mat34_det(m) < 0.0f;
    /* src texture i becomes dst texture remap[i]: a file dst already holds is shared */
    int32_t *remap = calloc(src->tex_count ? src->tex_count : 1, sizeof *remap);
    if (!remap) goto oom;
    for (uint32_t i = 0; i < src->tex_count; i++) {
        remap[i] = -1;
        for (uint32_t j = 0; j < t0 && src->texs[i].path; j++)
            if (dst->texs[j].path && !strcmp(dst->texs[j].path, src->texs[i].path)) remap[i] = (int32_t)j;
        if (remap[i] >= 0) continue;
        RtTexture t = src->texs[i];
        t.path = t.path ? strdup(t.path) : NULL;
        t.rgba = malloc((size_t)t.w * t.h * 4);
        int64_t k = t.rgba ? rt_scene_add_texture(dst, t) : -1;
        if (k < 0) {
            free(t.path);
            free(t.rgba);
            goto oom;
        }
        memcpy(t.rgba, src->texs[i].rgba, (size_t)t.w * t.h * 4);
        remap[i] = (int32_t)k;
    }
    for (uint32_t i = 0; i < src->mat_count; i++) {
        RtMaterial mm = src->mats[i];
        if (mm.map_kd >= 0) mm.map_kd = remap[mm.map_kd];
        if (mm.map_d >= 0) mm.map_d = remap[mm.map_d];
        if (rt_scene_add_material(dst, &mm) < 0) goto oom;
    }
    for (uint32_t i = 0; i < src->vert_count; i++) {
        RtVertex v = src->verts[i];
        if (m) {
            v.p = rt_mat34_point(m, v.p);
            v.n = rt_mat34_normal(m, v.n);
        }
        if (rt_scene_add_vertex(dst, v) < 0) goto oom;
    }
    for (uint32_t i = 0; i < src->tri_count; i++) {
        RtTriangle t = src->tris[i];
        for (int k = 0; k < 3; k++) t.v[k] += v0;
        if (flip) { /* a mirroring transform reverses the winding; keep it counter-clockwise */
            uint32_t tmp = t.v[1];
            t.v[1] = t.v[2];
            t.v[2] = tmp;
        }
        t.material = material_override >= 0 ? material_override
                     : (t.material >= 0 ? t.material + (int32_t)m0 : -1);
        t.object += o0;
        if (rt_scene_add_triangle(dst, t) < 0) goto oom;
    }
    for (uint32_t i = 0; i < src->object_count; i++) {
        int64_t k = rt_scene_add_object(dst, src->objects[i].name);
        if (k < 0) goto oom;
        dst->objects[k].first_tri = src->objects[i].first_tri + tri0;
        dst->objects[k].tri_count = src->objects[i].tri_count;
    }
    for (uint32_t i = 0; i < src->light_count; i++) {
        RtLight l = src->lights[i];
        if (m && l.type == RT_LIGHT_POINT) l.v = rt_mat34_point(m, l.v);
        if (m && l.type == RT_LIGHT_DIRECTIONAL) /* a direction: the linear part only */
            l.v = v3_norm(v3_sub(rt_mat34_point(m, l.v), rt_mat34_point(m, v3(0, 0, 0))));
        if (rt_scene_add_light(dst, l) < 0) goto oom;
    }
    dst->zero_area += src->zero_area;
    free(remap);
    return RT_OK;
oom:
    free(remap);
    return rt_fail(err, RT_ERR_OOM, "%s: SCENE: out of memory while composing", src->path ? src->path : "(scene)");
}

static int tri_degenerate(const RtScene *s, const RtTriangle *t)
{
    RtFloat4 rows[3];
    return !rt_woop_rows(s->verts[t->v[0]].p, s->verts[t->v[1]].p, s->verts[t->v[2]].p, rows);
}

RtStatus rt_scene_finish(RtScene *s, RtError *err)
{
    const char *path = s->path ? s->path : "(scene)";
    if (s->tri_count == 0)
        return rt_fail(err, RT_ERR_EMPTY, "%s: SCENE: the scene is empty (no triangles); nothing to render", path);
    s->zero_area = 0;
    for (uint32_t i = 0; i < s->tri_count; i++) s->zero_area += tri_degenerate(s, &s->tris[i]);
    if (s->zero_area == s->tri_count)
        return rt_fail(err, RT_ERR_EMPTY,
                       "%s: SCENE: all %u triangles have zero area or non-finite vertices; nothing to render",
                       path, s->tri_count);
    if (s->zero_area)
        RT_WARN("SCENE", "%s: %u zero-area triangle(s) kept out of the tree", path, s->zero_area);

    /* Smooth normals for vertices that have none (n == 0): area-weighted sum
     * of the adjacent faces' normals. */
    int need = 0;
    for (uint32_t i = 0; i < s->vert_count && !need; i++) need = v3_dot(s->verts[i].n, s->verts[i].n) == 0.0f;
    if (need) {
        RtVec3 *acc = calloc(s->vert_count, sizeof *acc);
        if (!acc) return rt_fail(err, RT_ERR_OOM, "%s: SCENE: out of memory (normals)", path);
        for (uint32_t i = 0; i < s->tri_count; i++) {
            const RtTriangle *t = &s->tris[i];
            RtVec3 a = s->verts[t->v[0]].p, b = s->verts[t->v[1]].p, c = s->verts[t->v[2]].p;
            RtVec3 n = v3_cross(v3_sub(b, a), v3_sub(c, a));
            if (!isfinite(n.x + n.y + n.z)) continue;
            for (int k = 0; k < 3; k++) acc[t->v[k]] = v3_add(acc[t->v[k]], n);
        }
        for (uint32_t i = 0; i < s->vert_count; i++)
            if (v3_dot(s->verts[i].n, s->verts[i].n) == 0.0f) s->verts[i].n = v3_norm(acc[i]);
        free(acc);
    }

    RtAabb b = rt_scene_bounds(s);
    RtVec3 c = v3_scale(v3_add(b.lo, b.hi), 0.5f);
    float r = 0.5f * v3_len(v3_sub(b.hi, b.lo));
    if (!(r > 0.0f)) r = 1.0f;
    if (!s->has_camera) {
        /* Framed on the bounds: look at the centre from the +z side, a bit
         * above, far enough that the bounding sphere fits a 60 degree view. */
        s->camera.fov_y = 60.0f;
        s->camera.look = c;
        s->camera.up = v3(0, 1, 0);
        s->camera.pos = v3_add(c, v3(0.0f, 0.35f * r, 2.0f * r));
        s->has_camera = 1;
    }
    if (s->light_count == 0) {
        /* A "headlight" above and behind the camera's left shoulder. */
        RtLight l = {RT_LIGHT_POINT, v3_add(s->camera.pos, v3(-0.5f * r, 1.5f * r, 0.5f * r)), v3(1, 1, 1)};
        if (rt_scene_add_light(s, l) < 0) return rt_fail(err, RT_ERR_OOM, "%s: SCENE: out of memory", path);
    }
    return RT_OK;
}

RtStatus rt_tri_arrays_update(const RtScene *s, RtTriArrays *out, uint32_t *degenerate)
{
    if (!out->verts || out->count != s->tri_count) { /* first frame, or the mesh changed */
        rt_tri_arrays_free(out);
        size_t n = (size_t)s->tri_count * 3;
        out->verts = malloc((n ? n : 1) * sizeof *out->verts);
        out->woop = malloc((n ? n : 1) * sizeof *out->woop);
        if (!out->verts || !out->woop) {
            rt_tri_arrays_free(out);
            return RT_ERR_OOM;
        }
    }
    uint32_t bad = 0;
    for (uint32_t i = 0; i < s->tri_count; i++) {
        RtVec3 p[3];
        for (int k = 0; k < 3; k++) {
            p[k] = s->verts[s->tris[i].v[k]].p;
            out->verts[3 * i + k] = f4(p[k].x, p[k].y, p[k].z, 0.0f);
        }
        if (!rt_woop_rows(p[0], p[1], p[2], &out->woop[3 * i])) {
            memset(&out->woop[3 * i], 0, 3 * sizeof *out->woop);
            bad++;
        }
    }
    out->count = s->tri_count;
    if (degenerate) *degenerate = bad;
    return RT_OK;
}

RtStatus rt_tri_arrays_make(const RtScene *s, RtTriArrays *out, uint32_t *degenerate)
{
    memset(out, 0, sizeof *out);
    return rt_tri_arrays_update(s, out, degenerate);
}

void rt_tri_arrays_free(RtTriArrays *a)
{
    free(a->verts);
    free(a->woop);
    memset(a, 0, sizeof *a);
}

/* Dispatch by extension; loaders append, so start from an empty scene. */
RtStatus rt_scene_load(const char *path, RtScene *s, RtError *err)
{
    rt_scene_init(s);
    const char *dot = strrchr(path, '.');
    RtStatus st;
    if (dot && !strcasecmp(dot, ".obj")) st = rt_obj_load(path, s, err);
    else if (dot && !strcasecmp(dot, ".ply")) st = rt_ply_load(path, s, err);
    else if (dot && !strcasecmp(dot, ".scene")) st = rt_scenefile_load(path, s, err);
    else st = rt_fail(err, RT_ERR_ARG, "%s: SCENE: unknown file type (expected .obj, .ply or .scene)", path);
    if (st == RT_OK) {
        free(s->path);
        s->path = strdup(path);
        st = rt_scene_finish(s, err);
    }
    if (st != RT_OK) rt_scene_free(s);
    return st;
}
