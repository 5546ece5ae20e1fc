/* runners.c — the project's procedural dynamic scenes (runners.h): walking
 * figures after Chang et al.'s "Sponza with i runners", a field of moving
 * objects, and a deforming wave grid. Geometry comes from primitives.h,
 * motion from the RtAnim model (anim.h): vertices are written in the space
 * of the node that moves them. Deterministic: positions, phases and colours
 * derive from the index of each runner or object. */
#include "scene/runners.h"

#include "scene/primitives.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- rolling back a half-made addition ------------------------------------------ */

/* Counts of everything these functions append, so a failure (only OOM can
 * happen after the arguments are checked) leaves the scene as it was. */
typedef struct SceneMark {
    uint32_t verts, tris, mats, objects, lights, nodes, tracks, deforms;
    int has_camera;
    RtCamera camera;
} SceneMark;

static SceneMark scene_mark(const RtScene *s)
{
    SceneMark m = {s->vert_count, s->tri_count, s->mat_count, s->object_count, s->light_count,
                   s->anim.node_count, s->anim.track_count, s->anim.deform_count, s->has_camera, s->camera};
    return m;
}

static void scene_rollback(RtScene *s, const SceneMark *m)
{
    RtAnim *a = &s->anim;
    for (uint32_t i = m->tracks; i < a->track_count; i++) {
        free(a->tracks[i].transl.keys);
        free(a->tracks[i].rot.keys);
        free(a->tracks[i].scale.keys);
        free(a->tracks[i].visibility.keys);
    }
    for (uint32_t i = m->verts; a->vert_node && i < a->vert_node_cap; i++) a->vert_node[i] = RT_ANIM_STATIC;
    a->track_count = m->tracks;
    a->node_count = m->nodes;
    a->deform_count = m->deforms;
    s->vert_count = m->verts;
    s->tri_count = m->tris;
    s->mat_count = m->mats;
    s->object_count = m->objects;
    s->light_count = m->lights;
    s->has_camera = m->has_camera;
    s->camera = m->camera;
}

static RtStatus oom(RtScene *s, const SceneMark *mark, RtError *err, const char *what)
{
    scene_rollback(s, mark);
    return rt_fail(err, RT_ERR_OOM, "(%s): SCENE: out of memory", what);
}

/* ---- small helpers ------------------------------------------------------------- */

static int32_t add_material(RtScene *s, const char *name, RtVec3 kd, RtVec3 ks, float ns, float reflect)
{
    RtMaterial m = rt_material_default();
    snprintf(m.name, sizeof m.name, "%s", name);
    m.kd = kd;
    m.ks = ks;
    m.ns = ns;
    m.reflect = reflect;
    m.illum = reflect > 0.0f ? 3 : 2;
    return (int32_t)rt_scene_add_material(s, &m);
}

/* A node whose static part is the identity (or translate t). */
static RtAnimNode node_make(int32_t parent, RtAnimNodeKind kind)
{
    RtAnimNode n;
    memset(&n, 0, sizeof n);
    n.parent = parent;
    n.kind = kind;
    n.track = -1;
    rt_mat34_identity(n.m);
    return n;
}

/* Integer hash (lowbias32): decorrelated per-index values without state. */
static uint32_t hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}
static float hash01(uint32_t i, uint32_t salt) { return (float)(hash32(i * 0x9e3779b9U + salt) >> 8) / 16777216.0f; }

/* The keyframes of looping motion cover [lo, hi]: the scene's range, at
 * least the viewer's default loop. */
static void anim_span(const RtScene *s, float *lo, float *hi)
{
    *lo = 0.0f;
    *hi = RT_ANIM_DEFAULT_PERIOD;
    if (s->anim.t_end > s->anim.t_start) {
        *lo = fminf(*lo, s->anim.t_start);
        *hi = fmaxf(*hi, s->anim.t_end);
    }
}

/* ---- runners ---------------------------------------------------------------------- */

/* The figure is modelled in units of its height H, facing +z, y up, the
 * pelvis frame at hip height; its left is +x. Joint frames hang their limb
 * down their -y. */
#define RUN_HIP_HEIGHT 0.50f     /* pelvis frame above the floor; the sole ends 0.002 H below */
#define RUN_BOB 0.015f           /* pelvis bounce, twice per stride */
#define RUN_STRIDE 1.3f          /* ground covered per stride (two steps), in H */
#define RUN_SPEED 1.7f           /* preferred ground speed, H per second (a jog) */
#define RUN_KEYS_MAX 4096        /* per channel: beyond it the pose holds */
/* Paths stay within this fraction of the bounds' narrower side from the
 * centre: inside Sponza's hall (its walls are ~0.28 of the bounds' depth
 * from the centre), and inside a floor. */
#define RUN_PATHS 0.3f

enum { RUN_PELVIS, RUN_HIP_L, RUN_KNEE_L, RUN_HIP_R, RUN_KNEE_R, RUN_SHOULDER_L, RUN_ELBOW_L, RUN_SHOULDER_R,
       RUN_ELBOW_R, RUN_JOINTS };
/* Materials: RUN_SHIRT and the RUN_SHIRTS - 1 after RUN_SHOES are the shirts. */
enum { RUN_SKIN, RUN_SHIRT, RUN_PANTS, RUN_SHOES, RUN_SHIRTS = 6, RUN_MATS = RUN_SHOES + RUN_SHIRTS };

/* Body parts: ellipsoids (a UV sphere scaled), centre and radii in H in
 * their joint's frame. Segments are tuned so a runner has ~78K triangles
 * (Chang et al.'s runner size): the torso and head, seen largest, get the
 * finest tessellation. */
static const struct RunPart {
    const char *name;
    int joint, segments, material;
    float c[3], r[3];
} RUN_PARTS[] = {
    {"pelvis", RUN_PELVIS, 80, RUN_PANTS, {0, 0.03f, 0}, {0.10f, 0.065f, 0.07f}},
    {"torso", RUN_PELVIS, 128, RUN_SHIRT, {0, 0.19f, 0}, {0.115f, 0.16f, 0.07f}},
    {"head", RUN_PELVIS, 104, RUN_SKIN, {0, 0.425f, 0.005f}, {0.06f, 0.075f, 0.068f}},
    {"left thigh", RUN_HIP_L, 80, RUN_PANTS, {0, -0.1225f, 0}, {0.05f, 0.135f, 0.05f}},
    {"left shin", RUN_KNEE_L, 80, RUN_PANTS, {0, -0.1225f, 0}, {0.04f, 0.13f, 0.04f}},
    {"left foot", RUN_KNEE_L, 48, RUN_SHOES, {0, -0.235f, 0.03f}, {0.035f, 0.022f, 0.065f}},
    {"right thigh", RUN_HIP_R, 80, RUN_PANTS, {0, -0.1225f, 0}, {0.05f, 0.135f, 0.05f}},
    {"right shin", RUN_KNEE_R, 80, RUN_PANTS, {0, -0.1225f, 0}, {0.04f, 0.13f, 0.04f}},
    {"right foot", RUN_KNEE_R, 48, RUN_SHOES, {0, -0.235f, 0.03f}, {0.035f, 0.022f, 0.065f}},
    {"left upper arm", RUN_SHOULDER_L, 64, RUN_SHIRT, {0, -0.085f, 0}, {0.034f, 0.095f, 0.034f}},
    {"left forearm", RUN_ELBOW_L, 64, RUN_SKIN, {0, -0.085f, 0}, {0.028f, 0.095f, 0.028f}},
    {"right upper arm", RUN_SHOULDER_R, 64, RUN_SHIRT, {0, -0.085f, 0}, {0.034f, 0.095f, 0.034f}},
    {"right forearm", RUN_ELBOW_R, 64, RUN_SKIN, {0, -0.085f, 0}, {0.028f, 0.095f, 0.028f}},
};
#define RUN_PART_COUNT (sizeof RUN_PARTS / sizeof RUN_PARTS[0])

/* Joints below the pelvis: parent, offset in the parent's frame (H), and
 * the swing about x (degrees) at the four quarter-strides u = 0, .25, .5,
 * .75 of the left side (the right side is half a stride later). Positive
 * angles move the limb's end backward (-z). Hip: passing, forward, passing,
 * back; the knee bends most in the swing phase (u = 0) and nearly straight
 * in the stance; arms swing against the legs with the elbows bent forward. */
static const struct RunJoint {
    int parent;
    float offset[3];
    int right;
    float deg[4];
} RUN_JOINTS_DEF[RUN_JOINTS] = {
    [RUN_HIP_L] = {RUN_PELVIS, {0.065f, 0, 0}, 0, {0, -28, 0, 28}},
    [RUN_KNEE_L] = {RUN_HIP_L, {0, -0.245f, 0}, 0, {50, 8, 4, 18}},
    [RUN_HIP_R] = {RUN_PELVIS, {-0.065f, 0, 0}, 1, {0, -28, 0, 28}},
    [RUN_KNEE_R] = {RUN_HIP_R, {0, -0.245f, 0}, 1, {50, 8, 4, 18}},
    [RUN_SHOULDER_L] = {RUN_PELVIS, {0.15f, 0.30f, 0}, 0, {0, 24, 0, -24}},
    [RUN_ELBOW_L] = {RUN_SHOULDER_L, {0, -0.17f, 0}, 0, {-30, -15, -30, -45}},
    [RUN_SHOULDER_R] = {RUN_PELVIS, {-0.15f, 0.30f, 0}, 1, {0, 24, 0, -24}},
    [RUN_ELBOW_R] = {RUN_SHOULDER_R, {0, -0.17f, 0}, 1, {-30, -15, -30, -45}},
};

uint32_t rt_runner_tri_count(void)
{
    uint32_t n = 0;
    for (size_t i = 0; i < RUN_PART_COUNT; i++) n += rt_prim_sphere_tri_count(RUN_PARTS[i].segments);
    return n;
}

/* Where the runners go, from the scene's bounds. */
typedef struct RunLayout {
    RtVec3 centre;     /* on the floor */
    float height;      /* H */
    float r_min, r_max;
    int lanes;
} RunLayout;

/* The floor of a scene (at t_start), the surface one would stand on where
 * the runners go: over a grid of columns on the scene's footprint, each
 * column's highest upward-facing surface in the lower third of the bounds;
 * the floor is the most common of those heights among the columns within
 * `radius` of the centre. Neither the bounds' min y nor the largest upward
 * area would do: Sponza's largest one is a ground plane under the whole
 * building, 11 units below the floor one walks on (which covers less of
 * the bounds, but most of the middle). Falls back to min y when nothing
 * faces up. */
#define RUN_FLOOR_GRID 32  /* columns per side */
#define RUN_FLOOR_BINS 64  /* height classes over the lower third */
#define RUN_FLOOR_COS 0.9f /* "faces up": a normal within ~26 degrees of +y */

/* 1 when (x, z) is inside the xz projection of triangle abc (either winding). */
static int inside_xz(RtVec3 a, RtVec3 b, RtVec3 c, float x, float z)
{
    float d0 = (b.x - a.x) * (z - a.z) - (b.z - a.z) * (x - a.x);
    float d1 = (c.x - b.x) * (z - b.z) - (c.z - b.z) * (x - b.x);
    float d2 = (a.x - c.x) * (z - c.z) - (a.z - c.z) * (x - c.x);
    return (d0 >= 0 && d1 >= 0 && d2 >= 0) || (d0 <= 0 && d1 <= 0 && d2 <= 0);
}

static float floor_height(const RtScene *s, RtAabb b, float radius)
{
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    float t0, t1;
    rt_scene_time_range(s, &t0, &t1);
    if (rt_scene_frame_at(s, t0, &f, NULL) != RT_OK) {
        rt_scene_frame_free(&f);
        return b.lo.y;
    }
    const RtScene *v = &f.view;
    float top[RUN_FLOOR_GRID * RUN_FLOOR_GRID];
    for (int k = 0; k < RUN_FLOOR_GRID * RUN_FLOOR_GRID; k++) top[k] = -INFINITY;
    float span = (b.hi.y - b.lo.y) / 3.0f;
    float cw = (b.hi.x - b.lo.x) / RUN_FLOOR_GRID, cd = (b.hi.z - b.lo.z) / RUN_FLOOR_GRID;
    for (uint32_t i = 0; span > 0.0f && cw > 0.0f && cd > 0.0f && i < v->tri_count; i++) {
        RtVec3 p0 = v->verts[v->tris[i].v[0]].p, p1 = v->verts[v->tris[i].v[1]].p, p2 = v->verts[v->tris[i].v[2]].p;
        RtVec3 n = v3_cross(v3_sub(p1, p0), v3_sub(p2, p0));
        float len = v3_len(n), y = (p0.y + p1.y + p2.y) / 3.0f;
        if (!(len > 0.0f) || !(n.y > RUN_FLOOR_COS * len) || !(y <= b.lo.y + span)) continue;
        /* the columns whose centres it covers, and the one holding its centroid */
        int x0 = (int)((fminf(p0.x, fminf(p1.x, p2.x)) - b.lo.x) / cw), x1 = (int)((fmaxf(p0.x, fmaxf(p1.x, p2.x)) - b.lo.x) / cw);
        int z0 = (int)((fminf(p0.z, fminf(p1.z, p2.z)) - b.lo.z) / cd), z1 = (int)((fmaxf(p0.z, fmaxf(p1.z, p2.z)) - b.lo.z) / cd);
        x0 = x0 < 0 ? 0 : x0, z0 = z0 < 0 ? 0 : z0;
        x1 = x1 >= RUN_FLOOR_GRID ? RUN_FLOOR_GRID - 1 : x1, z1 = z1 >= RUN_FLOOR_GRID ? RUN_FLOOR_GRID - 1 : z1;
        for (int gz = z0; gz <= z1; gz++)
            for (int gx = x0; gx <= x1; gx++)
                if (inside_xz(p0, p1, p2, b.lo.x + (gx + 0.5f) * cw, b.lo.z + (gz + 0.5f) * cd))
                    top[gz * RUN_FLOOR_GRID + gx] = fmaxf(top[gz * RUN_FLOOR_GRID + gx], y);
        int cx = (int)(((p0.x + p1.x + p2.x) / 3.0f - b.lo.x) / cw), cz = (int)(((p0.z + p1.z + p2.z) / 3.0f - b.lo.z) / cd);
        cx = cx < 0 ? 0 : (cx >= RUN_FLOOR_GRID ? RUN_FLOOR_GRID - 1 : cx);
        cz = cz < 0 ? 0 : (cz >= RUN_FLOOR_GRID ? RUN_FLOOR_GRID - 1 : cz);
        top[cz * RUN_FLOOR_GRID + cx] = fmaxf(top[cz * RUN_FLOOR_GRID + cx], y);
    }
    rt_scene_frame_free(&f);
    int count[RUN_FLOOR_BINS] = {0};
    double ysum[RUN_FLOOR_BINS] = {0};
    float cx0 = 0.5f * (b.lo.x + b.hi.x), cz0 = 0.5f * (b.lo.z + b.hi.z);
    for (int k = 0; k < RUN_FLOOR_GRID * RUN_FLOOR_GRID; k++) {
        float dx = b.lo.x + (k % RUN_FLOOR_GRID + 0.5f) * cw - cx0, dz = b.lo.z + (k / RUN_FLOOR_GRID + 0.5f) * cd - cz0;
        if (top[k] == -INFINITY || dx * dx + dz * dz > radius * radius) continue;
        int bin = (int)((top[k] - b.lo.y) / span * RUN_FLOOR_BINS);
        bin = bin < 0 ? 0 : (bin >= RUN_FLOOR_BINS ? RUN_FLOOR_BINS - 1 : bin);
        count[bin]++;
        ysum[bin] += top[k];
    }
    int best = -1;
    for (int k = 0; k < RUN_FLOOR_BINS; k++)
        if (count[k] > 0 && (best < 0 || count[k] > count[best])) best = k;
    return best < 0 ? b.lo.y : (float)(ysum[best] / count[best]);
}

static RunLayout run_layout(const RtScene *s, int n)
{
    RunLayout L;
    RtAabb b = s->tri_count ? rt_scene_bounds(s) : aabb_empty();
    float floor_y = 0.0f;
    if (!(b.lo.x <= b.hi.x)) { /* empty scene: a 15 x 15 area around the origin */
        b.lo = v3(-7.5f, 0, -7.5f);
        b.hi = v3(7.5f, 0, 7.5f);
    } else {
        float narrow0 = fminf(b.hi.x - b.lo.x, b.hi.z - b.lo.z);
        floor_y = floor_height(s, b, RUN_PATHS * narrow0 + 0.5f * fmaxf(b.hi.x - b.lo.x, b.hi.z - b.lo.z) / RUN_FLOOR_GRID);
    }
    RtVec3 ext = v3_sub(b.hi, b.lo);
    float wide = fmaxf(ext.x, ext.z), narrow = fminf(ext.x, ext.z);
    if (!(wide > 0.0f)) wide = narrow = 15.0f;
    if (!(narrow > 0.0f)) narrow = wide;
    /* A person is ~1/8 of a building's height (Sponza: 155 units high ->
     * 18.6); a flat scene (a floor) sizes by its width instead. */
    ext.y = b.hi.y - floor_y;
    L.height = ext.y < 0.05f * wide ? 0.12f * wide : fminf(fmaxf(0.12f * ext.y, 0.04f * wide), 0.15f * wide);
    L.centre = v3(0.5f * (b.lo.x + b.hi.x), floor_y, 0.5f * (b.lo.z + b.hi.z));
    L.r_min = fmaxf(1.5f * L.height, 0.1f * narrow);
    L.r_max = fmaxf(L.r_min, RUN_PATHS * narrow - 0.5f * L.height);
    /* lanes a body width apart, as many as fit (and as there are runners) */
    int fit = 1 + (int)((L.r_max - L.r_min) / (0.9f * L.height));
    L.lanes = n < fit ? (n > 0 ? n : 1) : fit;
    return L;
}

/* A constant channel: 4 equal keys (KB splines need 4) with the value v. */
static int channel_const(RtKbChannel *c, const float v[4])
{
    c->keys = calloc(4, sizeof *c->keys);
    if (!c->keys) return 0;
    for (int k = 0; k < 4; k++) {
        c->keys[k].t = (float)k;
        memcpy(c->keys[k].v, v, sizeof c->keys[k].v);
    }
    c->count = 4;
    return 1;
}

/* The swing of one joint: a rotation about x keyed every quarter stride
 * from t0 on, `count` keys, values cycling through deg[] starting at
 * quarter `q0`. */
static int channel_swing(RtKbChannel *c, const float deg[4], int q0, float t0, float quarter, uint32_t count)
{
    c->keys = calloc(count, sizeof *c->keys);
    if (!c->keys) return 0;
    for (uint32_t k = 0; k < count; k++) {
        RtKbKey *key = &c->keys[k];
        key->t = t0 + quarter * (float)k;
        key->v[0] = 1.0f;
        key->v[3] = deg[(q0 + k) % 4];
    }
    c->count = count;
    return 1;
}

static RtStatus add_runner(RtScene *s, int i, int n, const RunLayout *L, const int32_t mats[RUN_MATS], float lo,
                           float hi, RtError *err)
{
    RtAnim *a = &s->anim;
    float H = L->height;
    int lane = i % L->lanes, slot = i / L->lanes;
    int in_lane = (n - lane + L->lanes - 1) / L->lanes;
    float radius = L->lanes > 1 ? L->r_min + (L->r_max - L->r_min) * (float)lane / (float)(L->lanes - 1)
                                : 0.5f * (L->r_min + L->r_max);
    float dir = lane % 2 ? -1.0f : 1.0f;
    float phase = 360.0f * (float)slot / (float)in_lane + 47.0f * (float)lane;
    /* A whole number of laps and of strides per default period: the loop
     * the viewer plays is seamless. */
    float circ = 2.0f * 3.14159265f * radius;
    int laps = (int)lroundf(RUN_SPEED * H * RT_ANIM_DEFAULT_PERIOD / circ);
    if (laps < 1) laps = 1;
    float lap_time = RT_ANIM_DEFAULT_PERIOD / (float)laps;
    int strides = (int)lroundf(circ / (RUN_STRIDE * H));
    if (strides < 1) strides = 1;
    float stride_time = lap_time / (float)strides;
    float omega = dir * 360.0f / lap_time;

    /* root: around the centre; heading: face along the path */
    RtAnimNode root = node_make(-1, RT_NODE_ORBIT);
    root.p[0] = L->centre.x, root.p[1] = L->centre.y, root.p[2] = L->centre.z;
    root.p[3] = radius, root.p[4] = omega, root.p[5] = phase;
    int64_t k_root = rt_anim_add_node(a, &root);
    if (k_root < 0) return RT_ERR_OOM;
    RtAnimNode heading = node_make((int32_t)k_root, RT_NODE_SPIN);
    /* Rotation about +y by alpha takes +z to (sin alpha, 0, cos alpha); the
     * orbit's velocity is (-sin theta, 0, cos theta) * sign(omega). */
    heading.p[1] = 1.0f;
    heading.p[3] = -omega;
    heading.p[4] = (dir < 0.0f ? 180.0f : 0.0f) - phase;
    int64_t k_heading = rt_anim_add_node(a, &heading);
    if (k_heading < 0) return RT_ERR_OOM;
    RtAnimNode pelvis = node_make((int32_t)k_heading, RT_NODE_BOUNCE);
    pelvis.p[0] = RUN_BOB * H;
    pelvis.p[1] = 0.5f * stride_time;
    rt_mat34_translate(pelvis.m, v3(0, RUN_HIP_HEIGHT * H, 0));
    int64_t k_pelvis = rt_anim_add_node(a, &pelvis);
    if (k_pelvis < 0) return RT_ERR_OOM;

    int32_t joint_node[RUN_JOINTS];
    joint_node[RUN_PELVIS] = (int32_t)k_pelvis;
    /* Keys every quarter stride from one stride before lo to one after hi,
     * shifted per runner so they do not all step in unison. */
    float quarter = 0.25f * stride_time;
    float t0 = lo - stride_time * (1.0f + hash01((uint32_t)i, 7));
    double want = ceil(((double)hi + stride_time - t0) / quarter) + 1.0;
    uint32_t count = want > RUN_KEYS_MAX ? RUN_KEYS_MAX : (uint32_t)want;
    for (int j = RUN_PELVIS + 1; j < RUN_JOINTS; j++) {
        const struct RunJoint *J = &RUN_JOINTS_DEF[j];
        RtAnimTrack tr;
        memset(&tr, 0, sizeof tr);
        snprintf(tr.name, sizeof tr.name, "runner%d/joint%d", i, j);
        float off[4] = {J->offset[0] * H, J->offset[1] * H, J->offset[2] * H, 0};
        if (!channel_const(&tr.transl, off) || !channel_swing(&tr.rot, J->deg, J->right ? 2 : 0, t0, quarter, count)) {
            free(tr.transl.keys);
            free(tr.rot.keys);
            return RT_ERR_OOM;
        }
        int64_t kt = rt_anim_add_track(a, &tr);
        if (kt < 0) {
            free(tr.transl.keys);
            free(tr.rot.keys);
            return RT_ERR_OOM;
        }
        RtAnimNode jn = node_make(joint_node[J->parent], RT_NODE_TRACK);
        jn.track = (int32_t)kt;
        int64_t kn = rt_anim_add_node(a, &jn);
        if (kn < 0) return RT_ERR_OOM;
        joint_node[j] = (int32_t)kn;
    }

    uint32_t pick = hash32((uint32_t)i) % RUN_SHIRTS;
    int32_t shirt = mats[pick == 0 ? RUN_SHIRT : RUN_SHOES + pick];
    for (size_t p = 0; p < RUN_PART_COUNT; p++) {
        const struct RunPart *P = &RUN_PARTS[p];
        float m[12];
        rt_mat34_identity(m);
        rt_mat34_scale(m, v3(P->r[0] * H, P->r[1] * H, P->r[2] * H));
        rt_mat34_translate(m, v3(P->c[0] * H, P->c[1] * H, P->c[2] * H));
        char name[64];
        snprintf(name, sizeof name, "runner%d/%s", i, P->name);
        uint32_t v0 = s->vert_count;
        int32_t mat = P->material == RUN_SHIRT ? shirt : mats[P->material];
        RtStatus st = rt_prim_sphere(s, m, mat, P->segments, name, err);
        if (st == RT_OK)
            st = rt_anim_set_vert_node(a, s->vert_count, v0, s->vert_count - v0, (uint32_t)joint_node[P->joint], err);
        if (st != RT_OK) return st;
    }
    return RT_OK;
}

RtStatus rt_scene_add_runners(RtScene *s, int n, RtError *err)
{
    if (n < 0) return rt_fail(err, RT_ERR_ARG, "(runners): SCENE: expected a runner count >= 0, got %d", n);
    if (n == 0) return RT_OK;
    RtStatus fits = rt_scene_check_host_memory(s, (uint64_t)n, "runners", (uint64_t)n * rt_runner_tri_count(), err);
    if (fits != RT_OK) return fits;
    /* the scene's own extent decides size and paths, before any runner is in it */
    RunLayout L = run_layout(s, n);
    float lo, hi;
    anim_span(s, &lo, &hi);
    SceneMark mark = scene_mark(s);
    /* skin, (shirt: per runner, below), trousers, shoes; then the shirts */
    static const struct {
        const char *name;
        float kd[3];
    } COLORS[RUN_MATS] = {
        [RUN_SKIN] = {"runner skin", {0.80f, 0.58f, 0.45f}},
        [RUN_SHIRT] = {"runner shirt red", {0.75f, 0.12f, 0.10f}},
        [RUN_PANTS] = {"runner trousers", {0.12f, 0.14f, 0.25f}},
        [RUN_SHOES] = {"runner shoes", {0.06f, 0.06f, 0.06f}},
        {"runner shirt orange", {0.85f, 0.45f, 0.08f}},
        {"runner shirt yellow", {0.85f, 0.75f, 0.15f}},
        {"runner shirt green", {0.15f, 0.55f, 0.20f}},
        {"runner shirt blue", {0.12f, 0.30f, 0.80f}},
        {"runner shirt white", {0.85f, 0.85f, 0.85f}},
    };
    int32_t mats[RUN_MATS];
    for (int k = 0; k < RUN_MATS; k++) {
        RtVec3 kd = v3(COLORS[k].kd[0], COLORS[k].kd[1], COLORS[k].kd[2]);
        mats[k] = add_material(s, COLORS[k].name, kd, v3(0.1f, 0.1f, 0.1f), 20.0f, 0.0f);
        if (mats[k] < 0) return oom(s, &mark, err, "runners");
    }
    for (int i = 0; i < n; i++) {
        RtStatus st = add_runner(s, i, n, &L, mats, lo, hi, err);
        if (st != RT_OK) {
            scene_rollback(s, &mark);
            return rt_fail(err, st, "(runners): SCENE: out of memory adding runner %d of %d", i + 1, n);
        }
    }
    RT_INFO("SCENE", "%d runner(s) of %u triangles, %.3g units tall, on y = %g", n, rt_runner_tri_count(),
            (double)L.height, (double)L.centre.y);
    return RT_OK;
}

/* ---- a field of moving objects ---------------------------------------------------- */

#define FIELD_SPACING 3.0f   /* grid cell, units */
#define FIELD_SEGMENTS 24    /* sphere tessellation: round enough, cheap in bulk */

static uint32_t field_object_tris(int i)
{
    return (i % 4 == 1 || i % 4 == 2) ? rt_prim_sphere_tri_count(FIELD_SEGMENTS) : 12u;
}

uint32_t rt_field_tri_count(int n)
{
    if (n < 0 || n > RT_FIELD_MAX) return 0;
    uint32_t t = 2; /* the floor */
    for (int i = 0; i < n; i++) t += field_object_tris(i);
    return t;
}

/* Adds a camera and lights framing a square of half-size `half` around the
 * origin, when the scene has none. */
static RtStatus add_view(RtScene *s, float half, float height)
{
    if (!s->has_camera) {
        s->camera.pos = v3(0.0f, 0.9f * half + height, 1.7f * half + 2.0f * height);
        s->camera.look = v3(0.0f, 0.0f, 0.0f);
        s->camera.up = v3(0, 1, 0);
        s->camera.fov_y = 50.0f;
        s->has_camera = 1;
    }
    if (s->light_count == 0) {
        RtLight sun = {RT_LIGHT_DIRECTIONAL, v3_norm(v3(0.4f, 1.0f, 0.6f)), v3(0.75f, 0.72f, 0.66f)};
        RtLight lamp = {RT_LIGHT_POINT, v3(-0.4f * half, 0.8f * half + 4.0f, 0.5f * half), v3(0.45f, 0.45f, 0.5f)};
        if (rt_scene_add_light(s, sun) < 0 || rt_scene_add_light(s, lamp) < 0) return RT_ERR_OOM;
    }
    return RT_OK;
}

/* Object i of the field: its kind (i % 4) says how it moves. */
static RtStatus add_field_object(RtScene *s, int i, int cols, const int32_t mats[6], RtError *err)
{
    RtAnim *a = &s->anim;
    uint32_t u = (uint32_t)i;
    int kind = i % 4;
    float x = ((float)(i % cols) - 0.5f * (float)(cols - 1)) * FIELD_SPACING;
    float z = ((float)(i / cols) - 0.5f * (float)(cols - 1)) * FIELD_SPACING;
    x += (hash01(u, 1) - 0.5f) * 0.6f;
    z += (hash01(u, 2) - 0.5f) * 0.6f;
    /* whole turns and bounces per default period: a seamless loop */
    float turns = (float)(1 + hash32(u * 3 + 1) % 3) * (hash32(u) & 1 ? 1.0f : -1.0f);
    float size = 0.35f + 0.25f * hash01(u, 3);
    int32_t mat = mats[hash32(u * 5 + 2) % 6];
    char name[48];
    snprintf(name, sizeof name, "field%d", i);
    float m[12];
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(size, size, size));
    RtAnimNode node;
    int64_t k_outer = -1, k_node;
    if (kind == 2 || kind == 3) { /* orbit a point of the grid: vertices relative to it */
        node = node_make(-1, RT_NODE_ORBIT);
        node.p[0] = x, node.p[2] = z;
        node.p[3] = 0.3f * FIELD_SPACING;
        node.p[4] = 36.0f * turns;
        node.p[5] = 360.0f * hash01(u, 4);
        if ((k_outer = rt_anim_add_node(a, &node)) < 0) return RT_ERR_OOM;
        x = z = 0.0f;
    }
    rt_mat34_translate(m, v3(x, size, z));
    if (kind == 1) { /* bounce where it stands */
        node = node_make(-1, RT_NODE_BOUNCE);
        node.p[0] = 1.0f + 2.0f * hash01(u, 5) * size;
        node.p[1] = RT_ANIM_DEFAULT_PERIOD / (float)(6 + hash32(u * 7 + 3) % 7);
        node.p[2] = 3.14159265f * hash01(u, 6);
    } else if (kind != 2) { /* spin about a tilted axis through its centre (after the orbit for kind 3) */
        node = node_make((int32_t)k_outer, RT_NODE_SPIN);
        node.p[0] = 0.3f * (hash01(u, 8) - 0.5f), node.p[1] = 1.0f, node.p[2] = 0.3f * (hash01(u, 9) - 0.5f);
        node.p[3] = 36.0f * turns * (kind == 0 ? 2.0f : 1.0f);
        node.p[5] = x, node.p[6] = size, node.p[7] = z;
    }
    k_node = kind == 2 ? k_outer : rt_anim_add_node(a, &node);
    if (k_node < 0) return RT_ERR_OOM;
    uint32_t v0 = s->vert_count;
    RtStatus st = field_object_tris(i) == 12 ? rt_prim_box(s, m, mat, name, err)
                                             : rt_prim_sphere(s, m, mat, FIELD_SEGMENTS, name, err);
    if (st == RT_OK) st = rt_anim_set_vert_node(a, s->vert_count, v0, s->vert_count - v0, (uint32_t)k_node, err);
    return st;
}

RtStatus rt_scene_make_field(RtScene *s, int n, RtError *err)
{
    if (n < 0 || n > RT_FIELD_MAX)
        return rt_fail(err, RT_ERR_ARG, "(field): SCENE: expected an object count 0..%d, got %d", RT_FIELD_MAX, n);
    RtStatus fits = rt_scene_check_host_memory(s, (uint64_t)n, "field objects", rt_field_tri_count(n), err);
    if (fits != RT_OK) return fits;
    SceneMark mark = scene_mark(s);
    int cols = (int)ceil(sqrt((double)n));
    float half = 0.5f * FIELD_SPACING * (float)(cols > 0 ? cols : 1) + 2.0f;
    int32_t floor_mat = add_material(s, "field floor", v3(0.55f, 0.55f, 0.52f), v3(0, 0, 0), 10.0f, 0.0f);
    static const float PALETTE[6][3] = {{0.8f, 0.2f, 0.15f}, {0.2f, 0.5f, 0.85f}, {0.9f, 0.75f, 0.2f},
                                        {0.25f, 0.65f, 0.3f}, {0.85f, 0.85f, 0.85f}, {0.55f, 0.3f, 0.7f}};
    int32_t mats[6];
    for (int k = 0; k < 6; k++) {
        char name[32];
        snprintf(name, sizeof name, "field %d", k);
        RtVec3 kd = v3(PALETTE[k][0], PALETTE[k][1], PALETTE[k][2]);
        mats[k] = add_material(s, name, kd, v3(0.4f, 0.4f, 0.4f), 60.0f, k == 4 ? 0.6f : 0.0f);
        if (mats[k] < 0) floor_mat = -1;
    }
    if (floor_mat < 0) return oom(s, &mark, err, "field");
    float m[12];
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(half, 1, half));
    RtStatus st = rt_prim_quad(s, m, floor_mat, "field floor", err);
    if (st != RT_OK) return oom(s, &mark, err, "field");

    for (int i = 0; i < n && st == RT_OK; i++) st = add_field_object(s, i, cols, mats, err);
    if (st != RT_OK || add_view(s, half, 2.0f) != RT_OK) return oom(s, &mark, err, "field");
    return RT_OK;
}

/* ---- a deforming wave grid -------------------------------------------------------- */

#define WAVE_HALF 10.0f  /* the grid spans [-10, 10]^2 */

static uint32_t wave_cells(uint32_t tri_count)
{
    if (tri_count < 2 || tri_count > RT_WAVE_MAX_TRIS) return 0;
    uint32_t g = (uint32_t)lround(sqrt(tri_count / 2.0));
    return g < 1 ? 1 : g;
}

uint32_t rt_wave_tri_count(uint32_t tri_count)
{
    uint32_t g = wave_cells(tri_count);
    return 2u * g * g;
}

/* Grows a scene array to hold `need` elements at once (no doubling from
 * small steps for a mesh of millions). */
static int reserve(void **arr, uint32_t *cap, size_t need, size_t elem)
{
    size_t c = *cap;
    if (c >= need) return 1;
    if (!rt_grow_array(arr, &c, need, elem)) return 0;
    *cap = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
    return 1;
}

RtStatus rt_scene_make_wave(RtScene *s, uint32_t tri_count, RtError *err)
{
    if (tri_count < 2)
        return rt_fail(err, RT_ERR_ARG, "(wave): SCENE: expected a triangle count >= 2, got %u", tri_count);
    if (tri_count > RT_WAVE_MAX_TRIS)
        return rt_fail(err, RT_ERR_OOM,
                       "(wave): SCENE: %u triangles is more than a wave grid may have (%u, ~%u MB of scene)",
                       tri_count, RT_WAVE_MAX_TRIS, (unsigned)((36ull * RT_WAVE_MAX_TRIS) >> 20));
    uint32_t g = wave_cells(tri_count), row = g + 1;
    size_t nv = (size_t)row * row, nt = 2 * (size_t)g * g;
    if (nv + s->vert_count >= (1u << 31) || nt + s->tri_count >= (1u << 31))
        return rt_fail(err, RT_ERR_OOM, "(wave): SCENE: the scene would pass 2^31 vertices or triangles");
    RtStatus fits = rt_scene_check_host_memory(s, nt, "wave grid", nt, err);
    if (fits != RT_OK) return fits;
    SceneMark mark = scene_mark(s);
    int32_t water = add_material(s, "wave water", v3(0.10f, 0.32f, 0.55f), v3(0.6f, 0.6f, 0.6f), 80.0f, 0.25f);
    int64_t obj = water >= 0 ? rt_scene_add_object(s, "wave grid") : -1;
    if (obj < 0 || !reserve((void **)&s->verts, &s->vert_cap, s->vert_count + nv, sizeof *s->verts) ||
        !reserve((void **)&s->tris, &s->tri_cap, s->tri_count + nt, sizeof *s->tris))
        return oom(s, &mark, err, "wave");
    uint32_t v0 = s->vert_count;
    for (uint32_t i = 0; i < row; i++)
        for (uint32_t j = 0; j < row; j++) {
            RtVertex *v = &s->verts[v0 + (size_t)i * row + j];
            float u = (float)j / (float)g, w = (float)i / (float)g;
            v->p = v3(WAVE_HALF * (2.0f * u - 1.0f), 0.0f, WAVE_HALF * (2.0f * w - 1.0f));
            v->n = v3(0, 1, 0);
            v->u = u;
            v->v = 1.0f - w;
        }
    RtTriangle *t = &s->tris[s->tri_count];
    for (uint32_t i = 0; i < g; i++)
        for (uint32_t j = 0; j < g; j++) {
            /* row i+1 is nearer +z: (a, c, b) winds counter-clockwise seen from +y */
            uint32_t a = v0 + i * row + j, b = a + 1, c = a + row, d = c + 1;
            RtTriangle t0 = {{a, c, b}, water, (uint32_t)obj}, t1 = {{b, c, d}, water, (uint32_t)obj};
            *t++ = t0;
            *t++ = t1;
        }
    s->vert_count += (uint32_t)nv;
    s->tri_count += (uint32_t)nt;
    s->objects[obj].tri_count = (uint32_t)nt;
    /* Two crossing swells; frequencies give whole cycles per default period. */
    RtAnimDeform d = {v0, (uint32_t)nv, RT_DEFORM_WAVE, 0.25f, 4.0f, 0.3f, 1.0f, 0.0f};
    RtAnimDeform e = {v0, (uint32_t)nv, RT_DEFORM_WAVE, 0.12f, 2.5f, 0.5f, 0.6f, 0.8f};
    if (rt_anim_add_deform(&s->anim, &d) < 0 || rt_anim_add_deform(&s->anim, &e) < 0 ||
        add_view(s, WAVE_HALF, 3.0f) != RT_OK)
        return oom(s, &mark, err, "wave");
    return RT_OK;
}
