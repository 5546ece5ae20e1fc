/* scene.c — the scene model: growth, composition, finishing touches and the
 * flattening into the tracer's triangle arrays. The loaders (load.h) build
 * on these functions; nothing here calls a loader. */
#include "scene/scene.h"

#include "anim/anim_eval.h"
#include "core/camera.h"
#include "scene/primitives.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rt_scene_init(RtScene *s)
{
    memset(s, 0, sizeof *s);
    rt_anim_init(&s->anim);
}

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
    free(s->env.rgb);
    rt_anim_free(&s->anim);
    rt_scene_init(s);
}

/* Makes room for one more element (rt_grow_array's doubling) and returns
 * its index; -1 when the count would pass 2^31 (the tree's 28-bit indices
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

static RtAabb bounds_of(const RtScene *s)
{
    RtAabb b = aabb_empty();
    for (uint32_t i = 0; i < s->tri_count; i++)
        for (int k = 0; k < 3; k++) {
            RtVec3 p = s->verts[s->tris[i].v[k]].p;
            if (isfinite(p.x) && isfinite(p.y) && isfinite(p.z)) b = aabb_grow(b, p);
        }
    return b;
}

/* An animated scene's vertices are in node space: the bounds are those of
 * the scene at the start of its time range (a moment, not the whole
 * animation: the tree is rebuilt per frame, and a camera framed on the
 * first frame is what a viewer expects). */
RtAabb rt_scene_bounds(const RtScene *s)
{
    const RtAnim *a = &s->anim;
    if (!rt_anim_moves_verts(a)) return bounds_of(s);
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    float t0, t1;
    rt_scene_time_range(s, &t0, &t1);
    RtAabb b = rt_scene_frame_at(s, t0, &f, NULL) == RT_OK ? bounds_of(&f.view) : bounds_of(s);
    rt_scene_frame_free(&f);
    return b;
}

/* ---- composing scenes ------------------------------------------------------ */

static int channel_copy(RtKbChannel *dst, const RtKbChannel *src)
{
    dst->keys = NULL;
    dst->count = 0;
    if (!src->count) return 1;
    dst->keys = malloc((size_t)src->count * sizeof *dst->keys);
    if (!dst->keys) return 0;
    memcpy(dst->keys, src->keys, (size_t)src->count * sizeof *dst->keys);
    dst->count = src->count;
    return 1;
}

static int track_copy(RtAnimTrack *dst, const RtAnimTrack *src)
{
    *dst = *src;
    if (channel_copy(&dst->transl, &src->transl) && channel_copy(&dst->rot, &src->rot) &&
        channel_copy(&dst->scale, &src->scale) && channel_copy(&dst->visibility, &src->visibility))
        return 1;
    free(dst->transl.keys), free(dst->rot.keys), free(dst->scale.keys), free(dst->visibility.keys);
    return 0;
}

static void *dup_array(const void *p, size_t bytes)
{
    void *q = malloc(bytes ? bytes : 1);
    if (q && bytes) memcpy(q, p, bytes);
    return q;
}

/* How src's animation lands in dst (rt_scene_append). */
typedef struct AnimMerge {
    uint32_t track0, node0; /* dst index of src's track 0 / node 0 */
    int32_t root;           /* the static node holding m above src's roots, or -1 */
    uint8_t *local;         /* per src vertex: 1 = kept in node space (not moved by m) */
} AnimMerge;

/* Tracks, the root node and src's nodes go in before the vertices, so the
 * vertex loop knows which vertices keep their node-space positions: those
 * of a node, and, under a root, the static ones a morph or deform moves
 * (their motion is defined in src's space, so they join the root node). */
static int anim_merge_nodes(RtScene *dst, const RtScene *src, const float m[12], AnimMerge *am)
{
    RtAnim *d = &dst->anim;
    const RtAnim *sa = &src->anim;
    am->track0 = d->track_count;
    am->root = -1;
    am->local = NULL;
    for (uint32_t i = 0; i < sa->track_count; i++) {
        RtAnimTrack tr;
        if (!track_copy(&tr, &sa->tracks[i])) return 0;
        if (rt_anim_add_track(d, &tr) < 0) {
            free(tr.transl.keys), free(tr.rot.keys), free(tr.scale.keys), free(tr.visibility.keys);
            return 0;
        }
    }
    int moves = sa->node_count || sa->morph_count || sa->deform_count;
    if (m && moves) {
        RtAnimNode root;
        memset(&root, 0, sizeof root);
        root.parent = -1;
        root.kind = RT_NODE_STATIC;
        root.track = -1;
        memcpy(root.m, m, sizeof root.m);
        int64_t k = rt_anim_add_node(d, &root);
        if (k < 0) return 0;
        am->root = (int32_t)k;
    }
    am->node0 = d->node_count;
    for (uint32_t i = 0; i < sa->node_count; i++) {
        RtAnimNode n = sa->nodes[i];
        n.parent = n.parent >= 0 ? n.parent + (int32_t)am->node0 : am->root;
        n.track = n.track >= 0 ? n.track + (int32_t)am->track0 : -1;
        if (rt_anim_add_node(d, &n) < 0) return 0;
    }
    if (!moves) return 1;
    am->local = calloc(src->vert_count ? src->vert_count : 1, 1);
    if (!am->local) return 0;
    /* a skinned vertex is in its mesh's bind-pose space: its joints (under
     * the root) place it, so m must not move it either */
    for (uint32_t i = 0; i < src->vert_count; i++)
        am->local[i] = rt_anim_vert_node_of(sa->vert_node, sa->vert_node_cap, i) != RT_ANIM_STATIC ||
                       rt_anim_skin_of(sa->skin, sa->skin_cap, i) != NULL;
    if (am->root >= 0) {
        for (uint32_t i = 0; i < sa->morph_count; i++)
            for (uint32_t j = 0; j < sa->morphs[i].vert_count; j++)
                if (sa->morphs[i].first_vert + j < src->vert_count) am->local[sa->morphs[i].first_vert + j] = 1;
        for (uint32_t i = 0; i < sa->deform_count; i++)
            for (uint32_t j = 0; j < sa->deforms[i].vert_count; j++)
                if (sa->deforms[i].first_vert + j < src->vert_count) am->local[sa->deforms[i].first_vert + j] = 1;
    }
    return 1;
}

/* After the vertices (dst's first src vertex is v0) and lights (l0):
 * vertex nodes, morphs, deforms, light tracks, the time range. */
static RtStatus anim_merge_rest(RtScene *dst, const RtScene *src, const AnimMerge *am, uint32_t v0,
                                uint32_t l0, RtError *err)
{
    RtAnim *d = &dst->anim;
    const RtAnim *sa = &src->anim;
    RtStatus st;
    for (uint32_t i = 0; am->local && i < src->vert_count;) {
        uint32_t node = rt_anim_vert_node_of(sa->vert_node, sa->vert_node_cap, i);
        node = node != RT_ANIM_STATIC ? node + am->node0 : (am->local[i] ? (uint32_t)am->root : RT_ANIM_STATIC);
        uint32_t j = i + 1; /* one call per run of equal nodes */
        while (j < src->vert_count) {
            uint32_t nj = rt_anim_vert_node_of(sa->vert_node, sa->vert_node_cap, j);
            nj = nj != RT_ANIM_STATIC ? nj + am->node0 : (am->local[j] ? (uint32_t)am->root : RT_ANIM_STATIC);
            if (nj != node) break;
            j++;
        }
        if (node != RT_ANIM_STATIC &&
            (st = rt_anim_set_vert_node(d, dst->vert_count, v0 + i, j - i, node, err)) != RT_OK)
            return st;
        i = j;
    }
    for (uint32_t i = 0; i < sa->morph_count; i++) {
        RtAnimMorph mo = sa->morphs[i];
        size_t poses = (size_t)mo.key_count * mo.vert_count;
        mo.first_vert += v0;
        mo.times = dup_array(mo.times, mo.key_count * sizeof *mo.times);
        mo.pos = dup_array(mo.pos, poses * sizeof *mo.pos);
        mo.nrm = dup_array(mo.nrm, poses * sizeof *mo.nrm);
        if (!mo.times || !mo.pos || !mo.nrm || rt_anim_add_morph(d, &mo) < 0) {
            free(mo.times), free(mo.pos), free(mo.nrm);
            return RT_ERR_OOM;
        }
    }
    for (uint32_t i = 0; i < sa->deform_count; i++) {
        RtAnimDeform df = sa->deforms[i];
        df.first_vert += v0;
        if (rt_anim_add_deform(d, &df) < 0) return RT_ERR_OOM;
    }
    uint32_t joint0 = d->joint_count;
    for (uint32_t i = 0; i < sa->joint_count; i++) {
        RtAnimJoint jt = sa->joints[i];
        jt.node += am->node0;
        if (rt_anim_add_joint(d, &jt) < 0) return RT_ERR_OOM;
    }
    if (sa->skin && sa->joint_count) {
        uint32_t n = sa->skin_cap < src->vert_count ? sa->skin_cap : src->vert_count;
        RtAnimSkinVert *sv = dup_array(sa->skin, (size_t)n * sizeof *sv);
        if (!sv) return RT_ERR_OOM;
        for (uint32_t i = 0; i < n; i++)
            for (int k = 0; k < RT_SKIN_WEIGHTS; k++) sv[i].joint[k] += joint0;
        st = rt_anim_set_vert_skin(d, dst->vert_count, v0, n, sv, err);
        free(sv);
        if (st != RT_OK) return st;
    }
    /* Animated lights follow their track in world space: m does not apply
     * (a light has no node; AFF lights are all top level, aff.md 3.3). */
    int any = 0;
    for (uint32_t i = 0; sa->light_track && i < src->light_count && i < sa->light_track_cap; i++)
        any |= sa->light_track[i] >= 0;
    if (any) {
        size_t cap = d->light_track_cap, old = cap;
        if (!rt_grow_array((void **)&d->light_track, &cap, dst->light_count, sizeof *d->light_track))
            return RT_ERR_OOM;
        for (size_t i = old; i < cap; i++) d->light_track[i] = -1;
        d->light_track_cap = (uint32_t)cap;
        for (uint32_t i = 0; i < src->light_count && i < sa->light_track_cap; i++)
            if (sa->light_track[i] >= 0) d->light_track[l0 + i] = sa->light_track[i] + (int32_t)am->track0;
    }
    /* dst keeps its camera (and camera track); the time range is the union */
    if (sa->t_end > sa->t_start) {
        if (d->t_end > d->t_start) {
            d->t_start = fminf(d->t_start, sa->t_start);
            d->t_end = fmaxf(d->t_end, sa->t_end);
        } else {
            d->t_start = sa->t_start;
            d->t_end = sa->t_end;
            d->frames = sa->frames;
        }
    }
    /* the clip named is the first file's that has clips (a .scene placing
     * several models plays each one's default clip) */
    if (!d->clip_count && sa->clip_count) {
        d->clip_count = sa->clip_count;
        d->clip = sa->clip;
        memcpy(d->clip_name, sa->clip_name, sizeof d->clip_name);
    }
    return RT_OK;
}

RtStatus rt_scene_append(RtScene *dst, const RtScene *src, const float m[12],
                         int32_t material_override, RtError *err)
{
    uint32_t v0 = dst->vert_count, m0 = dst->mat_count, t0 = dst->tex_count, o0 = dst->object_count;
    uint32_t tri0 = dst->tri_count, l0 = dst->light_count;
    int flip = m && rt_mat34_det(m) < 0.0f;
    RtStatus st = RT_ERR_OOM;
    AnimMerge am;
    memset(&am, 0, sizeof am);
    /* src texture i becomes dst texture remap[i]: a file dst already holds is shared */
    int32_t *remap = calloc(src->tex_count ? src->tex_count : 1, sizeof *remap);
    if (!remap) goto fail;
    for (uint32_t i = 0; i < src->tex_count; i++) {
        remap[i] = -1;
        for (uint32_t j = 0; j < t0 && src->texs[i].path; j++)
            if (dst->texs[j].path && !strcmp(dst->texs[j].path, src->texs[i].path)) remap[i] = (int32_t)j;
        if (remap[i] >= 0) continue;
        RtTexture t = src->texs[i];
        t.path = t.path ? strdup(t.path) : NULL;
        t.rgba = malloc(rt_texture_bytes(&t)); /* its mip levels too */
        int64_t k = t.rgba ? rt_scene_add_texture(dst, t) : -1;
        if (k < 0) {
            free(t.path);
            free(t.rgba);
            goto fail;
        }
        memcpy(t.rgba, src->texs[i].rgba, rt_texture_bytes(&t));
        remap[i] = (int32_t)k;
    }
    for (uint32_t i = 0; i < src->mat_count; i++) {
        RtMaterial mm = src->mats[i];
        if (mm.map_kd >= 0) mm.map_kd = remap[mm.map_kd];
        if (mm.map_d >= 0) mm.map_d = remap[mm.map_d];
        if (rt_scene_add_material(dst, &mm) < 0) goto fail;
    }
    if (!anim_merge_nodes(dst, src, m, &am)) goto fail;
    for (uint32_t i = 0; i < src->vert_count; i++) {
        RtVertex v = src->verts[i];
        if (m && !(am.local && am.local[i])) { /* node-space vertices move with their node */
            v.p = rt_mat34_point(m, v.p);
            v.n = rt_mat34_normal(m, v.n);
        }
        if (rt_scene_add_vertex(dst, v) < 0) goto fail;
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
        if (rt_scene_add_triangle(dst, t) < 0) goto fail;
    }
    for (uint32_t i = 0; i < src->object_count; i++) {
        int64_t k = rt_scene_add_object(dst, src->objects[i].name);
        if (k < 0) goto fail;
        dst->objects[k].first_tri = src->objects[i].first_tri + tri0;
        dst->objects[k].tri_count = src->objects[i].tri_count;
    }
    for (uint32_t i = 0; i < src->light_count; i++) {
        RtLight l = src->lights[i];
        if (m && l.type != RT_LIGHT_DIRECTIONAL) l.v = rt_mat34_point(m, l.v);
        if (m && l.type == RT_LIGHT_DIRECTIONAL) /* a direction: the linear part only */
            l.v = v3_norm(v3_sub(rt_mat34_point(m, l.v), rt_mat34_point(m, v3(0, 0, 0))));
        if (m && l.type == RT_LIGHT_QUAD)
            l.n = v3_norm(v3_sub(rt_mat34_point(m, l.n), rt_mat34_point(m, v3(0, 0, 0))));
        if (rt_scene_add_light(dst, l) < 0) goto fail;
    }
    if ((st = anim_merge_rest(dst, src, &am, v0, l0, err)) != RT_OK) goto fail;
    dst->zero_area += src->zero_area;
    free(am.local);
    free(remap);
    return RT_OK;
fail:
    free(am.local);
    free(remap);
    if (st != RT_ERR_OOM) return st;
    return rt_fail(err, RT_ERR_OOM, "%s: SCENE: out of memory while composing", src->path ? src->path : "(scene)");
}

static int tri_degenerate(const RtScene *s, const RtTriangle *t)
{
    RtFloat4 rows[3];
    return !rt_woop_rows(s->verts[t->v[0]].p, s->verts[t->v[1]].p, s->verts[t->v[2]].p, rows);
}

/* ---- framing: a camera and lights for a file that has none ------------- */

/* Radiance of the two lights rt_scene_finish adds to a file without lights
 * (no falloff, renderer.md): the headlight and the one inside the bounds. */
#define HEADLIGHT 0.8f
#define INSIDE_LIGHT 0.6f
/* Below this fraction of the image covered, the framed view "shows no
 * geometry": one pixel of a 640x480 image. */
#define FRAME_MIN_VISIBLE (1.0f / (640.0f * 480.0f))
/* Another axis frames the scene only when it sees this many times the
 * front view's area of the bounds: a y-up model faces +z by convention, so
 * the front view stays for ordinary models (Sponza sees 1.2x more from
 * above) and a flat one is seen face-on. */
#define FRAME_SWITCH_RATIO 2.0f

/* Views from +z (the front, a bit above), +x and +y (down, -z at the top of
 * the image), each slightly oblique so that no face of the bounds is seen
 * exactly edge-on; offset in bounding radii, |offset| > 2. */
typedef struct FrameView {
    const char *name;
    RtVec3 axis, offset, up;
} FrameView;
static const FrameView kFrameViews[3] = {
    {"+z", {0, 0, 1}, {0.0f, 0.35f, 2.0f}, {0, 1, 0}},
    {"+x", {1, 0, 0}, {2.0f, 0.35f, 0.35f}, {0, 1, 0}},
    {"+y", {0, 1, 0}, {0.35f, 2.0f, 0.35f}, {0, 0, -1}},
};

/* Area of the bounds' projection seen from direction d (unit), up to the
 * scale of the view: |d.x| ey ez + |d.y| ex ez + |d.z| ex ey. */
static float box_area_seen(RtVec3 e, RtVec3 d)
{
    return fabsf(d.x) * e.y * e.z + fabsf(d.y) * e.x * e.z + fabsf(d.z) * e.x * e.y;
}

/* The view that sees the most of the bounds, the front view unless another
 * sees FRAME_SWITCH_RATIO times more (a model flat in x or y). */
static const FrameView *frame_view(RtAabb b)
{
    RtVec3 e = v3_sub(b.hi, b.lo);
    const FrameView *best = &kFrameViews[0];
    float front = box_area_seen(e, v3_norm(kFrameViews[0].offset)), best_area = front * FRAME_SWITCH_RATIO;
    for (int i = 1; i < 3; i++) {
        float a = box_area_seen(e, v3_norm(kFrameViews[i].offset));
        if (a > best_area) {
            best = &kFrameViews[i];
            best_area = a;
        }
    }
    return best;
}

/* Fraction of a square image that the scene's triangles cover seen from
 * cam (their projected areas summed, overlaps counted twice: a cheap O(n)
 * check that the view is not empty, not a coverage measure). A triangle
 * reaching behind the camera counts as covering the whole image. */
static float visible_area(const RtScene *s, RtCamera cam)
{
    RtCameraBasis cb = rt_camera_basis(cam, 1, 1);
    RtVec3 ru = v3_norm(cb.right), uu = v3_norm(cb.up);
    float th = v3_len(cb.up);
    double sum = 0.0;
    for (uint32_t i = 0; i < s->tri_count && sum < 1.0; i++) {
        float x[3], y[3];
        int behind = 0, out[4] = {0, 0, 0, 0};
        for (int k = 0; k < 3; k++) {
            RtVec3 v = v3_sub(s->verts[s->tris[i].v[k]].p, cb.o);
            float z = v3_dot(v, cb.fwd);
            if (!(z > 0.0f)) {
                behind = 1;
                break;
            }
            x[k] = v3_dot(v, ru) / (z * th);
            y[k] = v3_dot(v, uu) / (z * th);
            out[0] += x[k] < -1.0f, out[1] += x[k] > 1.0f, out[2] += y[k] < -1.0f, out[3] += y[k] > 1.0f;
        }
        if (behind) {
            if (!tri_degenerate(s, &s->tris[i])) sum += 1.0;
            continue;
        }
        if (out[0] == 3 || out[1] == 3 || out[2] == 3 || out[3] == 3) continue; /* off one side */
        double a2 = (double)(x[1] - x[0]) * (y[2] - y[0]) - (double)(y[1] - y[0]) * (x[2] - x[0]);
        sum += 0.125 * fabs(a2); /* area / 4, the square's area */
    }
    return (float)sum;
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
    const FrameView *view = &kFrameViews[0];
    if (!s->has_camera) {
        view = frame_view(b);
        /* Far enough that the bounding sphere fits a 60 degree view:
         * |offset| >= 2 radii. */
        s->camera.fov_y = 60.0f;
        s->camera.look = c;
        s->camera.up = view->up;
        s->camera.pos = v3_add(c, v3_scale(view->offset, r));
        s->has_camera = 1;
        if (view != &kFrameViews[0])
            RT_INFO("SCENE", "%s: framed from %s: the bounds are thinnest along that axis", path, view->name);
        float seen = visible_area(s, s->camera);
        if (!(seen >= FRAME_MIN_VISIBLE))
            RT_WARN("SCENE", "%s: the framed view shows no geometry (%.2g of the image covered; bounds %g x %g x %g); "
                    "try --camera", path, seen, b.hi.x - b.lo.x, b.hi.y - b.lo.y, b.hi.z - b.lo.z);
    }
    if (s->light_count == 0) {
        /* Two lights, so that the framed view and any --camera see lit
         * surfaces: the headlight above and behind the framed camera's left
         * shoulder lights the model from outside (occluded for a camera
         * inside a closed model), and a light inside the bounds, over the
         * centre a quarter below the top (y up, formats.md), lights an
         * interior such as Sponza's or a closed room (occluded, or behind
         * every face, for a closed object seen from outside). Where both
         * reach (an open model) they add up to 1.4: no clipping of the
         * default Kd 0.7. */
        RtVec3 fwd = v3_norm(v3_scale(view->offset, -1.0f));
        RtVec3 right = v3_norm(v3_cross(fwd, view->up));
        RtVec3 up = view->up, back = v3_norm(view->axis);
        RtVec3 head = v3_add(s->camera.pos, v3_scale(v3_add(v3_add(v3_scale(right, -0.5f), v3_scale(up, 1.5f)),
                                                             v3_scale(back, 0.5f)), r));
        RtVec3 inside = v3(c.x, b.lo.y + 0.75f * (b.hi.y - b.lo.y), c.z);
        RtLight l[2] = {{RT_LIGHT_POINT, head, v3(HEADLIGHT, HEADLIGHT, HEADLIGHT)},
                        {RT_LIGHT_POINT, inside, v3(INSIDE_LIGHT, INSIDE_LIGHT, INSIDE_LIGHT)}};
        for (int i = 0; i < 2; i++)
            if (rt_scene_add_light(s, l[i]) < 0) return rt_fail(err, RT_ERR_OOM, "%s: SCENE: out of memory", path);
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

RtStatus rt_scene_check_host_memory(const RtScene *s, uint64_t n, const char *what, uint64_t add_tris,
                                    RtError *err)
{
    /* "1000 runners (78224000 triangles)", or "4000000 wave grid triangles" */
    char asked[128];
    int per_tri = n == add_tris;
    if (per_tri) snprintf(asked, sizeof asked, "%llu %s triangles", (unsigned long long)n, what);
    else snprintf(asked, sizeof asked, "%llu %s (%llu triangles)", (unsigned long long)n, what, (unsigned long long)add_tris);
    uint64_t tris = (uint64_t)s->tri_count + add_tris;
    if (tris >= (1u << 31))
        return rt_fail(err, RT_ERR_OOM, "(%s): SCENE: %s with the scene's %u triangles pass the limit of 2^31", what,
                       asked, s->tri_count);
    const char *why;
    uint64_t avail = rt_host_memory_available(&why);
    uint64_t need = tris * RT_HOST_BYTES_PER_TRI;
    if (need <= avail) return RT_OK;
    uint64_t room = avail / RT_HOST_BYTES_PER_TRI;
    room = room > s->tri_count ? room - s->tri_count : 0;
    uint64_t fit = add_tris ? (uint64_t)((double)room / (double)add_tris * (double)n) : 0;
    return rt_fail(err, RT_ERR_OOM,
                   "(%s): SCENE: %s with the scene's %u triangles need about %.2f GB of host memory for a frame (%u bytes a "
                   "triangle), but %.2f GB are available (%s): at most %llu %s%s fit",
                   what, asked, s->tri_count, (double)need / 1e9, RT_HOST_BYTES_PER_TRI, (double)avail / 1e9, why,
                   (unsigned long long)fit, what, per_tri ? " triangles" : "");
}
