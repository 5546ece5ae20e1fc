/* test_anim.c — the animation model on the CPU (anim.h, rt_scene_frame_at):
 * static scenes pass through untouched, each node kind at hand-computed
 * times, nesting, morph, wave, visibility, composition with
 * rt_scene_append, time ranges, camera and light tracks, and a random
 * 50-node hierarchy against a naive recursive evaluation. */
#include "test_util.h"
#include "scene/load.h"

#include "anim/anim_eval.h"
#include "anim/anim_keys.h"
#include "scene/primitives.h"
#include "scene/scene.h"

static const float kTol = 1e-5f;

#define assert_near(a, b, tol)                                                                \
    do {                                                                                      \
        double a_ = (a), b_ = (b);                                                            \
        if (!(fabs(a_ - b_) <= (tol) * (1.0 + fabs(b_))))                                     \
            fail_msg("%s = %.9g, expected %.9g (%s:%d)", #a, a_, b_, __FILE__, __LINE__);     \
    } while (0)
#define assert_v3_near(a, b, tol)              \
    do {                                       \
        RtVec3 av_ = (a), bv_ = (b);           \
        assert_near(av_.x, bv_.x, tol);        \
        assert_near(av_.y, bv_.y, tol);        \
        assert_near(av_.z, bv_.z, tol);        \
    } while (0)

/* ---- helpers ----------------------------------------------------------------- */

/* n unit quads in the xz-plane, side by side along x (4 vertices, 2
 * triangles each, normal +y); one object. */
static void make_quads(RtScene *s, uint32_t n)
{
    rt_scene_init(s);
    assert_true(rt_scene_add_object(s, "quads") >= 0);
    for (uint32_t q = 0; q < n; q++) {
        uint32_t v0 = s->vert_count;
        float x = 2.0f * (float)q;
        RtVertex v[4] = {{v3(x, 0, 0), v3(0, 1, 0), 0, 0},
                         {v3(x + 1, 0, 0), v3(0, 1, 0), 1, 0},
                         {v3(x + 1, 0, -1), v3(0, 1, 0), 1, 1},
                         {v3(x, 0, -1), v3(0, 1, 0), 0, 1}};
        for (int k = 0; k < 4; k++) assert_true(rt_scene_add_vertex(s, v[k]) >= 0);
        RtTriangle a = {{v0, v0 + 1, v0 + 2}, -1, 0}, b = {{v0, v0 + 2, v0 + 3}, -1, 0};
        assert_true(rt_scene_add_triangle(s, a) >= 0);
        assert_true(rt_scene_add_triangle(s, b) >= 0);
    }
    s->objects[0].tri_count = s->tri_count;
}

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

static uint32_t add_node(RtScene *s, RtAnimNode n)
{
    int64_t k = rt_anim_add_node(&s->anim, &n);
    assert_true(k >= 0);
    return (uint32_t)k;
}

static void assign(RtScene *s, uint32_t first, uint32_t count, uint32_t node)
{
    RtError err = {0};
    assert_int_equal(rt_anim_set_vert_node(&s->anim, s->vert_count, first, count, node, &err), RT_OK);
}

/* A channel of 4+ keys with every value equal (or linear in t): the KB
 * spline reproduces it exactly (Catmull-Rom on linear data is linear). */
static RtKbChannel channel_linear(float t0, float dt, uint32_t n, const float v0[4], const float dv[4])
{
    RtKbChannel c;
    c.count = n;
    c.keys = calloc(n, sizeof *c.keys);
    assert_non_null(c.keys);
    for (uint32_t i = 0; i < n; i++) {
        c.keys[i].t = t0 + dt * (float)i;
        for (int k = 0; k < 4; k++) c.keys[i].v[k] = v0[k] + dv[k] * (float)i;
    }
    return c;
}

static int32_t add_track(RtScene *s, const char *name, RtAnimTrack *tr)
{
    snprintf(tr->name, sizeof tr->name, "%s", name);
    int64_t k = rt_anim_add_track(&s->anim, tr);
    assert_true(k >= 0);
    return (int32_t)k;
}

static RtSceneFrame frame_at(const RtScene *s, float t, RtSceneFrame *f)
{
    RtError err = {0};
    assert_int_equal(rt_scene_frame_at(s, t, f, &err), RT_OK);
    return *f;
}

/* ---- static scenes, sizes 0 and 1 ------------------------------------------- */

static void anim_static_scene_frame_shares_verts(void **state)
{
    (void)state;
    RtScene s;
    make_quads(&s, 3);
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    frame_at(&s, 3.5f, &f);
    assert_ptr_equal(f.view.verts, s.verts);
    assert_ptr_equal(f.view.lights, s.lights);
    assert_int_equal(f.view.tri_count, s.tri_count);
    assert_false(rt_anim_is_dynamic(&s.anim));
    float t0 = -1, t1 = -1;
    rt_scene_time_range(&s, &t0, &t1);
    assert_true(t0 == 0.0f && t1 == 0.0f);
    /* static nodes with vertices: a copy, but identity motion */
    uint32_t n = add_node(&s, node_make(-1, RT_NODE_STATIC));
    assign(&s, 0, 4, n);
    assert_false(rt_anim_is_dynamic(&s.anim));
    frame_at(&s, 1.0f, &f);
    for (uint32_t i = 0; i < s.vert_count; i++) {
        assert_v3_near(f.view.verts[i].p, s.verts[i].p, 0);
        assert_v3_near(f.view.verts[i].n, s.verts[i].n, 0);
    }
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
}

static void anim_zero_and_one_node(void **state)
{
    (void)state;
    RtAnim a;
    rt_anim_init(&a);
    assert_int_equal(a.camera_track, -1);
    rt_anim_eval_nodes(&a, 1.0f, NULL, NULL); /* 0 nodes: touches nothing */
    RtAnimNode n = node_make(-1, RT_NODE_BOUNCE);
    n.p[0] = 2.0f, n.p[1] = 1.0f, n.p[2] = 0.0f;
    assert_int_equal(rt_anim_add_node(&a, &n), 0);
    float w[12];
    uint8_t vis = 0;
    rt_anim_eval_nodes(&a, 0.5f, w, &vis); /* |sin(pi/2)| = 1 */
    assert_int_equal(vis, 1);
    assert_near(w[7], 2.0f, kTol);
    assert_near(w[3], 0.0f, kTol);
    assert_near(w[0], 1.0f, kTol);
    assert_true(rt_anim_is_dynamic(&a));
    rt_anim_free(&a);
    assert_int_equal(a.node_count, 0);
    assert_null(a.nodes);
}

static void anim_set_vert_node_rejects_bad_ranges(void **state)
{
    (void)state;
    RtAnim a;
    rt_anim_init(&a);
    RtError err = {0};
    assert_int_equal(rt_anim_set_vert_node(&a, 10, 8, 3, RT_ANIM_STATIC, &err), RT_ERR_ARG);
    assert_int_equal(rt_anim_set_vert_node(&a, 10, 0, 1, 0, &err), RT_ERR_ARG); /* no node 0 yet */
    rt_test_assert_contains(err.msg, "ANIM:");
    RtAnimNode n = node_make(-1, RT_NODE_STATIC);
    rt_anim_add_node(&a, &n);
    assert_int_equal(rt_anim_set_vert_node(&a, 10, 2, 3, 0, &err), RT_OK);
    assert_true(a.vert_node_cap >= 10);
    for (uint32_t i = 0; i < 10; i++)
        assert_int_equal(rt_anim_vert_node_of(a.vert_node, a.vert_node_cap, i), i >= 2 && i < 5 ? 0 : RT_ANIM_STATIC);
    /* a vertex past the array (added later) is static */
    assert_int_equal(rt_anim_vert_node_of(a.vert_node, a.vert_node_cap, a.vert_node_cap + 5), RT_ANIM_STATIC);
    rt_anim_free(&a);
}

static void anim_find_track_returns_last_of_a_name(void **state)
{
    (void)state;
    RtScene s;
    rt_scene_init(&s);
    RtAnimTrack a, b, c;
    memset(&a, 0, sizeof a), memset(&b, 0, sizeof b), memset(&c, 0, sizeof c);
    add_track(&s, "wheel", &a);
    add_track(&s, "car", &b);
    add_track(&s, "wheel", &c);
    assert_int_equal(rt_anim_find_track(&s.anim, "wheel"), 2);
    assert_int_equal(rt_anim_find_track(&s.anim, "car"), 1);
    assert_int_equal(rt_anim_find_track(&s.anim, "none"), -1);
    rt_scene_free(&s);
}

/* ---- node kinds at hand-computed times ------------------------------------- */

static void anim_spin_orbit_bounce_at_known_times(void **state)
{
    (void)state;
    RtScene s;
    make_quads(&s, 3);
    RtAnimNode spin = node_make(-1, RT_NODE_SPIN);
    /* about +y at 90 deg/s from 0, pivot (1, 0, 0) */
    spin.p[1] = 1.0f, spin.p[3] = 90.0f, spin.p[5] = 1.0f;
    RtAnimNode orbit = node_make(-1, RT_NODE_ORBIT);
    /* centre (0, 5, 0), radius 2, 180 deg/s, phase 90 deg */
    orbit.p[1] = 5.0f, orbit.p[3] = 2.0f, orbit.p[4] = 180.0f, orbit.p[5] = 90.0f;
    RtAnimNode bounce = node_make(-1, RT_NODE_BOUNCE);
    /* height 3, period 2 s, phase 0 */
    bounce.p[0] = 3.0f, bounce.p[1] = 2.0f;
    assign(&s, 0, 4, add_node(&s, spin));
    assign(&s, 4, 4, add_node(&s, orbit));
    assign(&s, 8, 4, add_node(&s, bounce));
    assert_true(rt_anim_is_dynamic(&s.anim));
    RtSceneFrame f;
    memset(&f, 0, sizeof f);

    frame_at(&s, 1.0f, &f);
    /* spin: 90 deg about +y through (1,0,0): (0,0,0) -> (1,0,1); (1,0,-1) -> (0,0,0) */
    assert_v3_near(f.view.verts[0].p, v3(1, 0, 1), kTol);
    assert_v3_near(f.view.verts[2].p, v3(0, 0, 0), kTol);
    assert_v3_near(f.view.verts[0].n, v3(0, 1, 0), kTol);
    /* orbit: angle 270 deg -> offset (0, 5, -2); vertex 4 is (2, 0, 0) */
    assert_v3_near(f.view.verts[4].p, v3(2, 5, -2), kTol);
    /* bounce: 3 |sin(pi/2)| = 3 */
    assert_v3_near(f.view.verts[8].p, v3(4, 3, 0), kTol);

    frame_at(&s, 0.5f, &f);
    /* spin 45 deg: (0,0,0) - pivot = (-1,0,0) -> (-c, 0, c), c = sqrt(1/2) */
    float c = sqrtf(0.5f);
    assert_v3_near(f.view.verts[0].p, v3(1 - c, 0, c), kTol);
    /* orbit: 180 deg -> (-2, 5, 0) */
    assert_v3_near(f.view.verts[5].p, v3(1, 5, 0), kTol);
    /* bounce: 3 |sin(pi/4)| */
    assert_near(f.view.verts[9].p.y, 3.0f * c, kTol);

    frame_at(&s, 2.0f, &f); /* bounce back on the ground */
    assert_near(f.view.verts[8].p.y, 0.0f, 1e-5f);
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
}

static void anim_spin_applies_static_part_after(void **state)
{
    (void)state;
    /* local = m * rotate: the spin happens in the node's own space, m then
     * places it (anim.h "then m") */
    RtAnim a;
    rt_anim_init(&a);
    RtAnimNode n = node_make(-1, RT_NODE_SPIN);
    n.p[2] = 1.0f, n.p[3] = 0.0f, n.p[4] = 90.0f; /* 90 deg about z, constant */
    rt_mat34_translate(n.m, v3(10, 0, 0));
    rt_anim_add_node(&a, &n);
    float w[12];
    uint8_t vis;
    rt_anim_eval_nodes(&a, 7.0f, w, &vis);
    /* (1,0,0) -> rotate -> (0,1,0) -> translate -> (10,1,0) */
    assert_v3_near(rt_mat34_point(w, v3(1, 0, 0)), v3(10, 1, 0), kTol);
    rt_anim_free(&a);
}

static void anim_nested_nodes_compose_parent_times_child(void **state)
{
    (void)state;
    RtScene s;
    make_quads(&s, 1);
    RtAnimNode parent = node_make(-1, RT_NODE_STATIC);
    rt_mat34_scale(parent.m, v3(2, 2, 2));
    rt_mat34_translate(parent.m, v3(0, 0, 10));
    RtAnimNode child = node_make(0, RT_NODE_BOUNCE);
    child.p[0] = 1.0f, child.p[1] = 1.0f;
    uint32_t p = add_node(&s, parent);
    child.parent = (int32_t)p;
    assign(&s, 0, 4, add_node(&s, child));
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    frame_at(&s, 0.5f, &f); /* child lifts by 1, parent scales by 2 then moves +z 10 */
    assert_v3_near(f.view.verts[1].p, v3(2, 2, 10), kTol);
    assert_v3_near(f.view.verts[2].p, v3(2, 2, 8), kTol);
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
}

static void anim_track_matrix_is_t_r_s(void **state)
{
    (void)state;
    RtAnimTrack tr;
    memset(&tr, 0, sizeof tr);
    float z4[4] = {0, 0, 0, 0};
    float tv[4] = {0, 1, 2, 0}, dtv[4] = {1, 0, 0, 0}; /* x = t + 1 on keys -1, 0, 1, 2 */
    float rv[4] = {0, 0, 1, 90}, sv[4] = {2, 3, 4, 0};
    tr.transl = channel_linear(-1.0f, 1.0f, 4, tv, dtv);
    tr.rot = channel_linear(-1.0f, 1.0f, 4, rv, z4);
    tr.scale = channel_linear(-1.0f, 1.0f, 4, sv, z4);
    float m[12];
    rt_anim_track_matrix(&tr, 0.5f, m);
    /* T(1.5, 1, 2) R(z, 90) S(2, 3, 4): x -> 2y-ish */
    assert_v3_near(rt_mat34_point(m, v3(1, 0, 0)), v3(1.5f, 3, 2), 1e-5f);
    assert_v3_near(rt_mat34_point(m, v3(0, 1, 0)), v3(1.5f - 3, 1, 2), 1e-5f);
    assert_v3_near(rt_mat34_point(m, v3(0, 0, 1)), v3(1.5f, 1, 6), 1e-5f);
    /* a track with no channel is the identity */
    RtAnimTrack none;
    memset(&none, 0, sizeof none);
    rt_anim_track_matrix(&none, 3.0f, m);
    float id[12];
    rt_mat34_identity(id);
    for (int i = 0; i < 12; i++) assert_near(m[i], id[i], 0);
    free(tr.transl.keys), free(tr.rot.keys), free(tr.scale.keys);
}

static void anim_track_node_and_missing_track(void **state)
{
    (void)state;
    RtScene s;
    make_quads(&s, 2);
    RtAnimTrack tr;
    memset(&tr, 0, sizeof tr);
    float tv[4] = {0, 0, 0, 0}, dtv[4] = {0, 1, 0, 0}; /* y = t + 1 */
    tr.transl = channel_linear(-1.0f, 1.0f, 4, tv, dtv);
    RtAnimNode n = node_make(-1, RT_NODE_TRACK);
    n.track = add_track(&s, "lift", &tr);
    rt_mat34_translate(n.m, v3(0, 0, 5)); /* m applies first: local = track * m */
    RtAnimNode none = node_make(-1, RT_NODE_TRACK); /* track -1: identity */
    assign(&s, 0, 4, add_node(&s, n));
    assign(&s, 4, 4, add_node(&s, none));
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    frame_at(&s, 0.25f, &f);
    assert_v3_near(f.view.verts[0].p, v3(0, 1.25f, 5), kTol);
    assert_v3_near(f.view.verts[4].p, s.verts[4].p, 0);
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
}

static void anim_visibility_hides_subtree(void **state)
{
    (void)state;
    RtScene s;
    make_quads(&s, 3);
    RtAnimTrack tr;
    memset(&tr, 0, sizeof tr);
    tr.visibility.count = 2;
    tr.visibility.keys = calloc(2, sizeof *tr.visibility.keys);
    tr.visibility.keys[0].t = 1.0f, tr.visibility.keys[0].v[0] = 0.0f; /* hidden from 1 */
    tr.visibility.keys[1].t = 2.0f, tr.visibility.keys[1].v[0] = 1.0f; /* back at 2 */
    RtAnimNode top = node_make(-1, RT_NODE_TRACK);
    top.track = add_track(&s, "blink", &tr);
    rt_mat34_translate(top.m, v3(0, 7, 0));
    uint32_t a = add_node(&s, top);
    RtAnimNode child = node_make((int32_t)a, RT_NODE_STATIC);
    uint32_t b = add_node(&s, child);
    RtAnimNode other = node_make(-1, RT_NODE_STATIC);
    uint32_t c = add_node(&s, other);
    assign(&s, 0, 4, a);
    assign(&s, 4, 4, b);
    assign(&s, 8, 4, c);
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    RtTriArrays ta;
    memset(&ta, 0, sizeof ta);
    uint32_t degenerate = 0;

    frame_at(&s, 0.5f, &f); /* visible before the first key */
    assert_int_equal(rt_tri_arrays_update(&f.view, &ta, &degenerate), RT_OK);
    assert_int_equal(degenerate, 0);
    frame_at(&s, 1.5f, &f);
    assert_int_equal(f.visible[a], 0);
    assert_int_equal(f.visible[b], 0);
    assert_int_equal(f.visible[c], 1);
    assert_int_equal(rt_tri_arrays_update(&f.view, &ta, &degenerate), RT_OK);
    assert_int_equal(degenerate, 4); /* both quads of the subtree, nothing else */
    for (uint32_t i = 0; i < 8; i++) assert_v3_near(f.view.verts[i].p, v3(0, 7, 0), 0);
    assert_v3_near(f.view.verts[8].p, s.verts[8].p, 0);
    frame_at(&s, 2.0f, &f);
    assert_int_equal(rt_tri_arrays_update(&f.view, &ta, &degenerate), RT_OK);
    assert_int_equal(degenerate, 0);
    rt_tri_arrays_free(&ta);
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
}

/* ---- morph and wave ---------------------------------------------------------- */

static void add_morph(RtScene *s, uint32_t first, uint32_t n)
{
    /* 3 keys at t = 1, 2, 4: pose k lifts every vertex by k*k and tilts the
     * normal toward +x by k (unnormalised on purpose) */
    RtAnimMorph m;
    memset(&m, 0, sizeof m);
    m.first_vert = first;
    m.vert_count = n;
    m.key_count = 3;
    m.times = malloc(3 * sizeof *m.times);
    m.pos = malloc(3 * n * sizeof *m.pos);
    m.nrm = malloc(3 * n * sizeof *m.nrm);
    m.times[0] = 1, m.times[1] = 2, m.times[2] = 4;
    for (uint32_t k = 0; k < 3; k++)
        for (uint32_t j = 0; j < n; j++) {
            RtVec3 p = s->verts[first + j].p;
            m.pos[k * n + j] = v3(p.x, p.y + (float)(k * k), p.z);
            m.nrm[k * n + j] = v3((float)k * 3.0f, 3.0f, 0.0f);
        }
    assert_true(rt_anim_add_morph(&s->anim, &m) >= 0);
}

static void anim_morph_interpolates_and_clamps(void **state)
{
    (void)state;
    RtScene s;
    make_quads(&s, 2);
    add_morph(&s, 4, 4); /* the second quad, static vertices */
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    struct { float t, y, nx; } cases[] = {
        {-5.0f, 0.0f, 0.0f}, {1.0f, 0.0f, 0.0f}, {1.5f, 0.5f, 1.5f}, {2.0f, 1.0f, 3.0f},
        {3.0f, 2.5f, 4.5f},  {4.0f, 4.0f, 6.0f}, {9.0f, 4.0f, 6.0f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        frame_at(&s, cases[i].t, &f);
        RtVec3 n = v3_norm(v3(cases[i].nx, 3.0f, 0.0f));
        for (uint32_t j = 4; j < 8; j++) {
            assert_near(f.view.verts[j].p.y, cases[i].y, kTol);
            assert_near(f.view.verts[j].p.x, s.verts[j].p.x, 0);
            assert_v3_near(f.view.verts[j].n, n, kTol);
            assert_near(v3_len(f.view.verts[j].n), 1.0f, 1e-6f);
        }
        for (uint32_t j = 0; j < 4; j++) assert_v3_near(f.view.verts[j].p, s.verts[j].p, 0);
    }
    float t0, t1;
    rt_scene_time_range(&s, &t0, &t1); /* procedural motion, no range given */
    assert_true(t0 == 0.0f && t1 == RT_ANIM_DEFAULT_PERIOD);
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
}

static void anim_morph_segment_edge_cases(void **state)
{
    (void)state;
    uint32_t k0, k1;
    float w;
    float one[1] = {3.0f};
    rt_anim_morph_segment(one, 1, 10.0f, &k0, &k1, &w);
    assert_true(k0 == 0 && k1 == 0 && w == 0.0f);
    float dup[4] = {0.0f, 1.0f, 1.0f, 2.0f}; /* a zero-length segment is never chosen */
    rt_anim_morph_segment(dup, 4, 1.0f, &k0, &k1, &w);
    assert_true(k0 == 2 && k1 == 3 && w == 0.0f);
    rt_anim_morph_segment(dup, 4, 0.5f, &k0, &k1, &w);
    assert_true(k0 == 0 && k1 == 1);
    assert_near(w, 0.5f, 0);
}

static void anim_wave_displaces_with_analytic_normal(void **state)
{
    (void)state;
    RtScene s;
    make_quads(&s, 1);
    RtAnimDeform d;
    memset(&d, 0, sizeof d);
    d.first_vert = 0;
    d.vert_count = 4;
    d.kind = RT_DEFORM_WAVE;
    d.amplitude = 0.5f, d.wavelength = 4.0f, d.speed = 0.25f, d.dir_x = 1.0f, d.dir_z = 0.0f;
    assert_true(rt_anim_add_deform(&s.anim, &d) >= 0);
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    const double pi = 3.14159265358979;
    for (int ti = 0; ti < 3; ti++) {
        float t = 0.7f * (float)ti;
        frame_at(&s, t, &f);
        for (uint32_t j = 0; j < 4; j++) {
            double x = s.verts[j].p.x, ph = 2 * pi * (x / 4.0 - 0.25 * t);
            double y = 0.5 * sin(ph), dy = 0.5 * cos(ph) * 2 * pi / 4.0;
            assert_near(f.view.verts[j].p.y, y, 1e-5f);
            assert_near(f.view.verts[j].p.x, x, 0);
            /* the surface y = f(x): normal (-f', 1, 0) normalised */
            double l = sqrt(dy * dy + 1);
            assert_v3_near(f.view.verts[j].n, v3((float)(-dy / l), (float)(1 / l), 0), 1e-5f);
        }
    }
    /* a zero wavelength is no wave at all (no division by it) */
    s.anim.deforms[0].wavelength = 0.0f;
    frame_at(&s, 1.0f, &f);
    assert_v3_near(f.view.verts[1].p, s.verts[1].p, 0);
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
}

static void anim_morph_then_wave_then_node(void **state)
{
    (void)state;
    RtScene s;
    make_quads(&s, 1);
    add_morph(&s, 0, 4);
    RtAnimDeform d;
    memset(&d, 0, sizeof d);
    d.vert_count = 4;
    d.amplitude = 1.0f, d.wavelength = 1.0f, d.speed = 0.0f, d.dir_x = 0.0f, d.dir_z = 1.0f;
    assert_true(rt_anim_add_deform(&s.anim, &d) >= 0);
    RtAnimNode n = node_make(-1, RT_NODE_STATIC);
    rt_mat34_translate(n.m, v3(100, 0, 0));
    assign(&s, 0, 4, add_node(&s, n));
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    frame_at(&s, 2.0f, &f); /* morph +1, wave 0 at z = 0 and z = -1, node +100 x */
    assert_v3_near(f.view.verts[1].p, v3(101, 1, 0), 1e-5f);
    assert_v3_near(f.view.verts[2].p, v3(101, 1, -1), 1e-5f);
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
}

/* ---- normals through nodes ----------------------------------------------------- */

static void anim_normals_use_inverse_transpose(void **state)
{
    (void)state;
    RtScene s;
    rt_scene_init(&s);
    RtVertex v = {v3(1, 1, 0), v3_norm(v3(1, 1, 0)), 0, 0};
    assert_true(rt_scene_add_vertex(&s, v) >= 0);
    RtAnimNode n = node_make(-1, RT_NODE_STATIC);
    rt_mat34_scale(n.m, v3(2, 1, 1)); /* non-uniform: the normal tilts toward y */
    assign(&s, 0, 1, add_node(&s, n));
    RtAnimNode mirror = node_make(-1, RT_NODE_STATIC);
    rt_mat34_scale(mirror.m, v3(-1, 1, 1));
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    frame_at(&s, 0.0f, &f);
    assert_v3_near(f.view.verts[0].n, v3_norm(v3(0.5f, 1, 0)), kTol);
    assert_v3_near(f.view.verts[0].n, rt_mat34_normal(n.m, v.n), 1e-6f);
    /* the shared helper agrees with rt_mat34_normal under a mirror too */
    assert_v3_near(rt_anim_xform_normal(mirror.m, v.n), rt_mat34_normal(mirror.m, v.n), 1e-6f);
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
}

/* ---- camera and lights ------------------------------------------------------- */

static void anim_camera_and_light_tracks(void **state)
{
    (void)state;
    RtScene s;
    make_quads(&s, 1);
    s.camera.pos = v3(0, 0, 10), s.camera.look = v3(0, 0, 0), s.camera.up = v3(0, 1, 0);
    s.camera.fov_y = 40.0f;
    s.has_camera = 1;
    RtLight l0 = {RT_LIGHT_POINT, v3(1, 2, 3), v3(1, 1, 1)}, l1 = {RT_LIGHT_POINT, v3(4, 5, 6), v3(1, 1, 1)};
    rt_scene_add_light(&s, l0);
    rt_scene_add_light(&s, l1);
    float z4[4] = {0, 0, 0, 0};
    RtAnimTrack cam;
    memset(&cam, 0, sizeof cam);
    float ev[4] = {0, 1, 20, 0}, dev[4] = {1, 0, 0, 0}; /* eye x = t + 1 */
    float rv[4] = {0, 1, 0, 90};                   /* yaw 90: looks down -x */
    cam.transl = channel_linear(-1, 1, 4, ev, dev);
    cam.rot = channel_linear(-1, 1, 4, rv, z4);
    s.anim.camera_track = add_track(&s, "camera", &cam);
    RtAnimTrack lt;
    memset(&lt, 0, sizeof lt);
    float lv[4] = {0, 9, 0, 0}, dlv[4] = {0, 0, 1, 0}; /* z = t + 1 */
    lt.transl = channel_linear(-1, 1, 4, lv, dlv);
    int32_t lk = add_track(&s, "lamp", &lt);
    s.anim.light_track = malloc(2 * sizeof *s.anim.light_track);
    s.anim.light_track_cap = 2;
    s.anim.light_track[0] = -1;
    s.anim.light_track[1] = lk;
    assert_true(rt_anim_is_dynamic(&s.anim));
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    frame_at(&s, 0.5f, &f);
    assert_ptr_equal(f.view.verts, s.verts); /* nothing but camera and light moves */
    assert_v3_near(f.view.camera.pos, v3(1.5f, 1, 20), 1e-5f);
    assert_v3_near(v3_sub(f.view.camera.look, f.view.camera.pos), v3(-1, 0, 0), 1e-5f);
    assert_v3_near(f.view.camera.up, v3(0, 1, 0), 1e-5f);
    assert_near(f.view.camera.fov_y, 40.0f, 0);
    assert_v3_near(f.view.lights[0].v, v3(1, 2, 3), 0);
    assert_v3_near(f.view.lights[1].v, v3(0, 9, 1.5f), 1e-5f);
    assert_v3_near(s.lights[1].v, v3(4, 5, 6), 0); /* the scene is untouched */
    assert_v3_near(s.camera.pos, v3(0, 0, 10), 0);
    /* no rot channel: the eye moves, `at` and `up` stay the file's */
    free(s.anim.tracks[s.anim.camera_track].rot.keys);
    s.anim.tracks[s.anim.camera_track].rot.keys = NULL;
    s.anim.tracks[s.anim.camera_track].rot.count = 0;
    frame_at(&s, 1.0f, &f);
    assert_v3_near(f.view.camera.pos, v3(2, 1, 20), 1e-5f);
    assert_v3_near(f.view.camera.look, v3(0, 0, 0), 0);
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
}

/* ---- time range -------------------------------------------------------------- */

static void anim_time_range(void **state)
{
    (void)state;
    RtScene s;
    make_quads(&s, 1);
    float t0, t1;
    s.anim.t_start = 2.0f, s.anim.t_end = 7.0f, s.anim.frames = 100;
    rt_scene_time_range(&s, &t0, &t1); /* given (AFF a): used even for a static scene */
    assert_true(t0 == 2.0f && t1 == 7.0f);
    s.anim.t_end = 2.0f; /* none given, static */
    rt_scene_time_range(&s, &t0, &t1);
    assert_true(t0 == 0.0f && t1 == 0.0f);
    RtAnimNode n = node_make(-1, RT_NODE_ORBIT);
    add_node(&s, n);
    rt_scene_time_range(&s, &t0, &t1);
    assert_true(t0 == 0.0f && t1 == RT_ANIM_DEFAULT_PERIOD);
    rt_scene_free(&s);
}

/* ---- composition ----------------------------------------------------------- */

static void anim_append_under_matrix_keeps_node_space(void **state)
{
    (void)state;
    /* src: quad 0 bounces, quad 1 static, quad 2 waves (static vertices) */
    RtScene src;
    make_quads(&src, 3);
    RtAnimNode b = node_make(-1, RT_NODE_BOUNCE);
    b.p[0] = 1.0f, b.p[1] = 1.0f;
    assign(&src, 0, 4, add_node(&src, b));
    RtAnimDeform d;
    memset(&d, 0, sizeof d);
    d.first_vert = 8, d.vert_count = 4, d.amplitude = 0.25f, d.wavelength = 2.0f, d.speed = 1.0f, d.dir_x = 1.0f;
    assert_true(rt_anim_add_deform(&src.anim, &d) >= 0);
    add_morph(&src, 4, 4);
    RtLight l = {RT_LIGHT_POINT, v3(0, 3, 0), v3(1, 1, 1)};
    rt_scene_add_light(&src, l);
    RtAnimTrack lt;
    memset(&lt, 0, sizeof lt);
    float lv[4] = {5, 5, 5, 0}, z4[4] = {0, 0, 0, 0};
    lt.transl = channel_linear(-1, 1, 4, lv, z4);
    int32_t lk = add_track(&src, "lamp", &lt);
    src.anim.light_track = malloc(sizeof *src.anim.light_track);
    src.anim.light_track_cap = 1;
    src.anim.light_track[0] = lk;
    src.anim.t_start = 1.0f, src.anim.t_end = 3.0f;

    /* dst: one static quad, its own light, its own static node */
    RtScene dst;
    make_quads(&dst, 1);
    rt_scene_add_light(&dst, l);
    add_node(&dst, node_make(-1, RT_NODE_STATIC));
    RtAnimTrack dummy;
    memset(&dummy, 0, sizeof dummy);
    add_track(&dst, "dummy", &dummy);

    float m[12];
    rt_mat34_identity(m);
    rt_mat34_rotate(m, v3(0, 1, 0), 90.0f);
    rt_mat34_translate(m, v3(0, 0, 50));
    RtError err = {0};
    assert_int_equal(rt_scene_append(&dst, &src, m, -1, &err), RT_OK);
    assert_int_equal(dst.vert_count, 16);
    assert_int_equal(dst.light_count, 2);
    assert_int_equal(dst.anim.track_count, 2);
    assert_int_equal(dst.anim.node_count, 3); /* dst's, the root holding m, src's bounce */
    assert_int_equal(dst.anim.nodes[2].parent, 1);
    assert_int_equal(dst.anim.morph_count, 1);
    assert_int_equal(dst.anim.morphs[0].first_vert, 8);
    assert_int_equal(dst.anim.deforms[0].first_vert, 12);
    assert_int_equal(dst.anim.light_track[0], -1);
    assert_int_equal(dst.anim.light_track[1], 1);
    assert_true(dst.anim.t_start == 1.0f && dst.anim.t_end == 3.0f);

    RtSceneFrame fs, fd;
    memset(&fs, 0, sizeof fs);
    memset(&fd, 0, sizeof fd);
    for (float t = 0.0f; t < 3.0f; t += 0.37f) {
        frame_at(&src, t, &fs);
        frame_at(&dst, t, &fd);
        for (uint32_t i = 0; i < 4; i++) assert_v3_near(fd.view.verts[i].p, dst.verts[i].p, 0);
        for (uint32_t i = 0; i < 12; i++) { /* dst = m * (src at t) */
            assert_v3_near(fd.view.verts[4 + i].p, rt_mat34_point(m, fs.view.verts[i].p), 1e-5f);
            assert_v3_near(fd.view.verts[4 + i].n, rt_mat34_normal(m, fs.view.verts[i].n), 1e-5f);
        }
        assert_v3_near(fd.view.lights[1].v, v3(5, 5, 5), 1e-5f); /* world-space track */
    }
    /* src is untouched and still evaluates on its own */
    assert_int_equal(src.anim.node_count, 1);
    /* the view is world space: its bounds and its own frames do not move it again */
    RtAabb bv = rt_scene_bounds(&fd.view), bw = aabb_empty();
    for (uint32_t i = 0; i < dst.tri_count; i++)
        for (int k = 0; k < 3; k++) bw = aabb_grow(bw, fd.view.verts[dst.tris[i].v[k]].p);
    assert_v3_near(bv.lo, bw.lo, 0);
    assert_v3_near(bv.hi, bw.hi, 0);
    RtSceneFrame fv;
    memset(&fv, 0, sizeof fv);
    frame_at(&fd.view, 0.5f, &fv);
    assert_ptr_equal(fv.view.verts, fd.view.verts);
    rt_scene_frame_free(&fv);
    rt_scene_frame_free(&fs);
    rt_scene_frame_free(&fd);

    /* without a matrix: no root node, src's roots stay roots */
    RtScene dst2;
    rt_scene_init(&dst2);
    assert_int_equal(rt_scene_append(&dst2, &src, NULL, -1, &err), RT_OK);
    assert_int_equal(dst2.anim.node_count, 1);
    assert_int_equal(dst2.anim.nodes[0].parent, -1);
    rt_scene_free(&dst2);
    rt_scene_free(&dst);
    rt_scene_free(&src);
}

/* Linear blend skinning over two joints: a spinning root (90 deg/s about
 * z, identity inverse bind) and a static node at (0,2,0) whose inverse
 * bind T(0,-2,0) makes its joint matrix the identity; the mesh's node is
 * T(10,0,0). At t = 1: vertex 1 on the spinning joint alone (weight 2,
 * renormalised) turns to (0,1,0) and its normal to (-1,0,0); vertex 2
 * half and half is the mean of turned and still; vertex 0 on the still
 * joint stays (its node does not apply); vertex 3 and the second quad (no
 * weight) follow the node. The same under rt_scene_append with a matrix. */
static void anim_skin_blends_joints_unweighted_follow_node(void **state)
{
    (void)state;
    RtScene s;
    make_quads(&s, 2);
    RtAnimNode spin = node_make(-1, RT_NODE_SPIN), still = node_make(-1, RT_NODE_STATIC);
    spin.p[2] = 1.0f, spin.p[3] = 90.0f;
    rt_mat34_translate(still.m, v3(0, 2, 0));
    RtAnimNode mesh = node_make(-1, RT_NODE_STATIC);
    rt_mat34_translate(mesh.m, v3(10, 0, 0));
    uint32_t n0 = add_node(&s, spin), n1 = add_node(&s, still), n2 = add_node(&s, mesh);
    assign(&s, 0, 8, n2);
    RtAnimJoint j0 = {n0, {0}}, j1 = {n1, {0}};
    rt_mat34_identity(j0.inv_bind);
    rt_mat34_identity(j1.inv_bind);
    rt_mat34_translate(j1.inv_bind, v3(0, -2, 0));
    assert_int_equal(rt_anim_add_joint(&s.anim, &j0), 0);
    assert_int_equal(rt_anim_add_joint(&s.anim, &j1), 1);
    RtAnimJoint nowhere = {99, {0}};
    assert_true(rt_anim_add_joint(&s.anim, &nowhere) < 0);
    RtAnimSkinVert sv[4];
    memset(sv, 0, sizeof sv);
    sv[0].joint[0] = 1, sv[0].weight[0] = 1.0f;
    sv[1].joint[0] = 0, sv[1].weight[0] = 2.0f;
    sv[2].joint[0] = 0, sv[2].weight[0] = 0.5f, sv[2].joint[1] = 1, sv[2].weight[1] = 0.5f;
    RtError err = {0};
    RtAnimSkinVert bad = sv[1];
    bad.joint[0] = 2;
    assert_int_equal(rt_anim_set_vert_skin(&s.anim, s.vert_count, 0, 1, &bad, &err), RT_ERR_ARG);
    bad.joint[0] = 0, bad.weight[0] = -1.0f;
    assert_int_equal(rt_anim_set_vert_skin(&s.anim, s.vert_count, 0, 1, &bad, &err), RT_ERR_ARG);
    assert_int_equal(rt_anim_set_vert_skin(&s.anim, s.vert_count, 7, 2, sv, &err), RT_ERR_ARG);
    assert_int_equal(rt_anim_set_vert_skin(&s.anim, s.vert_count, 0, 4, sv, &err), RT_OK);
    assert_true(rt_anim_moves_verts(&s.anim));
    RtScene d;
    rt_scene_init(&d);
    float m[12];
    rt_mat34_identity(m);
    rt_mat34_translate(m, v3(0, 0, 5));
    assert_int_equal(rt_scene_append(&d, &s, m, -1, &err), RT_OK);
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    for (int pass = 0; pass < 2; pass++) {
        const RtScene *sc = pass ? &d : &s;
        RtVec3 dz = v3(0, 0, pass ? 5.0f : 0.0f);
        frame_at(sc, 1.0f, &f);
        assert_v3_near(f.view.verts[0].p, v3_add(v3(0, 0, 0), dz), kTol);
        assert_v3_near(f.view.verts[1].p, v3_add(v3(0, 1, 0), dz), kTol);
        assert_v3_near(f.view.verts[1].n, v3(-1, 0, 0), kTol);
        assert_v3_near(f.view.verts[2].p, v3_add(v3(0.5f, 0.5f, -1), dz), kTol);
        assert_v3_near(f.view.verts[3].p, v3_add(v3(10, 0, -1), dz), kTol);
        assert_v3_near(f.view.verts[4].p, v3_add(v3(12, 0, 0), dz), kTol);
        assert_null(f.view.anim.skin); /* the view is world space: nothing skins it again */
        frame_at(sc, 0.0f, &f); /* the spin at 0: every skinned vertex where it was */
        assert_v3_near(f.view.verts[1].p, v3_add(v3(1, 0, 0), dz), kTol);
        assert_v3_near(f.view.verts[2].p, v3_add(v3(1, 0, -1), dz), kTol);
    }
    rt_scene_frame_free(&f);
    rt_scene_free(&d);
    rt_scene_free(&s);
}

static void anim_bounds_and_finish_use_start_time(void **state)
{
    (void)state;
    RtScene s;
    make_quads(&s, 1);
    RtAnimNode n = node_make(-1, RT_NODE_STATIC);
    rt_mat34_translate(n.m, v3(0, 100, 0)); /* node space at y = 0, world at y = 100 */
    assign(&s, 0, 4, add_node(&s, n));
    RtAabb b = rt_scene_bounds(&s);
    assert_near(b.lo.y, 100.0f, 0);
    assert_near(b.hi.y, 100.0f, 0);
    RtError err = {0};
    assert_int_equal(rt_scene_finish(&s, &err), RT_OK);
    assert_near(s.camera.look.y, 100.0f, kTol); /* framed on the world position */
    rt_scene_free(&s);
}

/* ---- BART: the reference's test vectors (aff.md 5.6, section 7) ------------- */

static void anim_bart_camera_and_toycar_match_reference(void **state)
{
    (void)state;
    char buf[1024];
    const char *path = rt_test_asset("bart/kitchen/aff/kitchen.aff", buf);
    if (!path) skip();
    RtScene s;
    RtError err = {0};
    if (rt_scene_load(path, &s, &err) != RT_OK) fail_msg("%s", err.msg);
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    frame_at(&s, 0.0f, &f);
    RtCamera c = f.view.camera;
    assert_v3_near(c.pos, v3(3.75f, 2.3f, 3.6f), 1e-5f);
    assert_v3_near(v3_norm(v3_sub(c.look, c.pos)), v3(-0.313464f, -0.419814f, -0.851761f), 2e-6f);
    assert_v3_near(c.up, v3(-0.127003f, 0.907444f, -0.400520f), 2e-6f);
    frame_at(&s, 10.0f, &f);
    c = f.view.camera;
    assert_v3_near(c.pos, v3(3.117315f, 0.488333f, 1.05f), 2e-6f);
    assert_v3_near(v3_norm(v3_sub(c.look, c.pos)), v3(-0.616961f, -0.579906f, -0.532041f), 2e-6f);
    /* the kitchen's room, not its node-space parts, at every moment */
    RtAabb b = rt_scene_bounds(&f.view);
    assert_true(b.lo.y > -2.0f && b.hi.y < 4.0f);
    float m[12];
    rt_anim_track_matrix(&s.anim.tracks[rt_anim_find_track(&s.anim, "toycar")], 10.0f, m);
    const float row0[4] = {-0.265804f, 0, -0.964027f, 2.678804f}, row2[4] = {0.964027f, 0, -0.265804f, 0.603692f};
    for (int i = 0; i < 4; i++) {
        assert_near(m[i], row0[i], 2e-6f);
        assert_near(m[8 + i], row2[i], 2e-6f);
    }
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
}

/* ---- random hierarchy vs a naive recursive evaluation ------------------------- */

static void naive_world(const RtAnim *a, uint32_t i, float t, float out[12], int *vis)
{
    RtAnim one = *a; /* evaluate node i alone as a root: its local matrix */
    RtAnimNode n = a->nodes[i];
    n.parent = -1;
    one.nodes = &n;
    one.node_count = 1;
    float local[12];
    uint8_t v;
    rt_anim_eval_nodes(&one, t, local, &v);
    if (a->nodes[i].parent < 0) {
        memcpy(out, local, sizeof local);
        *vis = v;
        return;
    }
    float pw[12];
    int pv;
    naive_world(a, (uint32_t)a->nodes[i].parent, t, pw, &pv);
    rt_mat34_mul(out, pw, local);
    *vis = pv && v;
}

static void anim_random_hierarchy_matches_naive_recursion(void **state)
{
    (void)state;
    RtTestRng rng = {0x5eed1234u};
    RtScene s;
    make_quads(&s, 50);
    for (uint32_t i = 0; i < 50; i++) {
        RtAnimNode n = node_make(i ? (int32_t)(rt_test_rand(&rng) % (i + 1)) - 1 : -1,
                                 (RtAnimNodeKind)(rt_test_rand(&rng) % 4 == 0 ? RT_NODE_STATIC
                                                                              : 2 + rt_test_rand(&rng) % 3));
        for (int k = 0; k < 8; k++) n.p[k] = rt_test_randf(&rng) * 2.0f - 1.0f;
        n.p[1] += 0.5f; /* bounce period away from 0 */
        rt_mat34_scale(n.m, v3(0.5f + rt_test_randf(&rng), 0.5f + rt_test_randf(&rng), 1.0f));
        rt_mat34_rotate(n.m, v3(rt_test_randf(&rng), 1, rt_test_randf(&rng)), 360.0f * rt_test_randf(&rng));
        rt_mat34_translate(n.m, v3(rt_test_randf(&rng), rt_test_randf(&rng), rt_test_randf(&rng)));
        assign(&s, 4 * i, 4, add_node(&s, n));
    }
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    for (int ti = 0; ti < 5; ti++) {
        float t = 0.83f * (float)ti - 0.5f;
        frame_at(&s, t, &f);
        for (uint32_t i = 0; i < 50; i++) {
            float w[12];
            int vis;
            naive_world(&s.anim, i, t, w, &vis);
            assert_int_equal(f.visible[i], vis);
            for (int k = 0; k < 12; k++) assert_near(f.world[12 * i + k], w[k], 1e-5f);
            for (uint32_t j = 4 * i; j < 4 * i + 4; j++) {
                assert_v3_near(f.view.verts[j].p, rt_mat34_point(w, s.verts[j].p), 1e-4f);
                assert_v3_near(f.view.verts[j].n, rt_mat34_normal(w, s.verts[j].n), 1e-5f);
            }
        }
    }
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
}

/* ---- glTF-style channels: step, linear, cubic spline (anim_keys.h) ---------- */

/* A channel of n keys at times t[] with values v[][4] in mode interp. */
static RtKbChannel keys_channel(RtKbKey *k, uint32_t n, const float *t, const float (*v)[4], int interp)
{
    memset(k, 0, n * sizeof *k);
    for (uint32_t i = 0; i < n; i++) {
        k[i].t = t[i];
        memcpy(k[i].v, v[i], sizeof k[i].v);
    }
    RtKbChannel c = {k, n, interp};
    return c;
}

/* A unit quaternion (x, y, z, w) of deg degrees about z. */
static void quat_z(float deg, float q[4])
{
    float h = 0.5f * deg * 3.14159265358979f / 180.0f;
    q[0] = q[1] = 0.0f, q[2] = sinf(h), q[3] = cosf(h);
}

/* The channel at each row's time t equals the row's (x, y, z): rows
 * {t, x, y, z} of hand-computed values. */
static void expect_vec3_at(const RtKbChannel *c, const float (*rows)[4], int n)
{
    for (int i = 0; i < n; i++) assert_v3_near(rt_kb_eval_vec3(c, rows[i][0]), v3(rows[i][1], rows[i][2], rows[i][3]), kTol);
}

static float rot_degrees_about_z(const RtKbChannel *c, float t)
{
    RtVec3 axis;
    float d;
    rt_kb_eval_rot_axis_angle(c, t, &axis, &d);
    if (d > 1e-3f) assert_near(fabsf(axis.z), 1.0, 1e-5);
    return axis.z < 0.0f ? -d : d;
}

/* Keys at t[0] and t[1]: 0 and 90 degrees about z. */
static RtKbChannel quarter_turn(RtKbKey *k, const float *t, int interp)
{
    float q[2][4];
    quat_z(0.0f, q[0]);
    quat_z(90.0f, q[1]);
    return keys_channel(k, 2, t, (const float (*)[4])q, interp);
}

/* STEP holds a key's value up to the next key; before the first and after
 * the last the channel is clamped. Hand-computed values. */
static void keys_step_holds_each_value_until_the_next_key(void **state)
{
    (void)state;
    const float t[3] = {0.0f, 1.0f, 3.0f}, v[3][4] = {{1, 2, 3, 0}, {4, 5, 6, 0}, {7, 8, 9, 0}};
    RtKbKey k[3];
    RtKbChannel c = keys_channel(k, 3, t, v, RT_KEYS_STEP);
    const float want[6][4] = {{-1.0f, 1, 2, 3}, {0.5f, 1, 2, 3}, {1.0f, 4, 5, 6},
                              {2.99f, 4, 5, 6}, {3.0f, 7, 8, 9}, {50.0f, 7, 8, 9}};
    expect_vec3_at(&c, want, 6);
    /* rotations: 0, then 90 degrees from t = 1 */
    RtKbChannel r = quarter_turn(k, t, RT_KEYS_STEP);
    assert_near(rot_degrees_about_z(&r, 0.99f), 0.0, 1e-4);
    assert_near(rot_degrees_about_z(&r, 1.0f), 90.0, 1e-4);
    /* sizes 0 and 1: identity, then a constant */
    RtKbChannel none = {NULL, 0, RT_KEYS_STEP};
    assert_v3_near(rt_kb_eval_vec3(&none, 1.0f), v3(0, 0, 0), kTol);
    RtKbChannel one = keys_channel(k, 1, t, v, RT_KEYS_STEP);
    const float held[2][4] = {{-5.0f, 1, 2, 3}, {5.0f, 1, 2, 3}};
    expect_vec3_at(&one, held, 2);
}

/* LINEAR: the straight line between two keys at uneven spacing; rotations
 * slerp, along the shorter arc even when the second key is written as the
 * negated quaternion. */
static void keys_linear_lerps_and_slerps_the_shorter_arc(void **state)
{
    (void)state;
    const float t[3] = {0.0f, 1.0f, 3.0f}, v[3][4] = {{1, 2, 3, 0}, {4, 5, 6, 0}, {7, 8, 9, 0}};
    RtKbKey k[3];
    RtKbChannel c = keys_channel(k, 3, t, v, RT_KEYS_LINEAR);
    const float want[5][4] = {{-1.0f, 1, 2, 3}, {0.5f, 2.5f, 3.5f, 4.5f}, {2.0f, 5.5f, 6.5f, 7.5f},
                              {2.5f, 6.25f, 7.25f, 8.25f}, {4.0f, 7, 8, 9}};
    expect_vec3_at(&c, want, 5);
    float q[3][4];
    quat_z(0.0f, q[0]);
    quat_z(90.0f, q[1]);
    quat_z(-90.0f, q[2]);
    RtKbChannel r = keys_channel(k, 3, t, (const float (*)[4])q, RT_KEYS_LINEAR);
    assert_near(rot_degrees_about_z(&r, 0.5f), 45.0, 1e-4);
    assert_near(rot_degrees_about_z(&r, 0.25f), 22.5, 1e-4);
    assert_near(rot_degrees_about_z(&r, 2.0f), 0.0, 1e-3); /* 90 -> -90 through 0 */
    for (int c4 = 0; c4 < 4; c4++) k[1].v[c4] = -k[1].v[c4]; /* the same rotation, far hemisphere */
    assert_near(rot_degrees_about_z(&r, 0.5f), 45.0, 1e-4);
    /* 170 degrees apart: halfway is 85, not the long way round */
    quat_z(170.0f, k[1].v);
    assert_near(rot_degrees_about_z(&r, 0.5f), 85.0, 1e-3);
    /* nearly equal keys (the nlerp branch): still the right angle */
    quat_z(0.5f, k[1].v);
    assert_near(rot_degrees_about_z(&r, 0.5f), 0.25, 1e-3);
}

/* CUBICSPLINE (glTF 2.0 Appendix C): the out-tangent of the first key and
 * the in-tangent of the second shape the segment, scaled by its length;
 * the other two tangents must not matter. Hand-computed: td = 2, s = 0.5
 * gives h = (0.5, 0.125, 0.5, -0.125), s = 0.25 gives
 * (0.84375, 0.140625, 0.15625, -0.046875). */
static void keys_cubic_spline_uses_out_then_in_tangents(void **state)
{
    (void)state;
    const float t[2] = {0.0f, 2.0f}, v[2][4] = {{0, 0, 5, 0}, {1, 1, 5, 0}};
    RtKbKey k[2];
    RtKbChannel c = keys_channel(k, 2, t, v, RT_KEYS_CUBIC);
    k[0].out[0] = 2.0f, k[1].in[1] = -1.0f;       /* x leaves with slope 2, y arrives with slope -1 */
    k[0].in[0] = k[1].out[0] = 100.0f;            /* unused: before the first key, after the last */
    k[0].in[1] = k[1].out[1] = -100.0f;
    /* x = 0.5*0 + 2*0.125*2 + 0.5*1 = 1;  y = 0.5*1 + 2*(-0.125)*(-1) = 0.75;  z stays 5 */
    /* x = 2*0.140625*2 + 0.15625 = 0.71875;  y = 0.15625 + 2*(-0.046875)*(-1) = 0.25 (t = 0.5) */
    const float want[4][4] = {{1.0f, 1.0f, 0.75f, 5.0f}, {0.5f, 0.71875f, 0.25f, 5.0f}, {2.0f, 1, 1, 5}, {-3.0f, 0, 0, 5}};
    expect_vec3_at(&c, want, 4);
    /* rotation 0 -> 90 degrees about z, zero tangents: the Hermite blend of
     * the components, normalised: 45 at s = 0.5, 2 atan2(0.15625 sin 45,
     * 0.84375 + 0.15625 cos 45) = 13.2090804 degrees at s = 0.25 */
    RtKbChannel r = quarter_turn(k, t, RT_KEYS_CUBIC);
    assert_near(rot_degrees_about_z(&r, 1.0f), 45.0, 1e-4);
    assert_near(rot_degrees_about_z(&r, 0.5f), 13.2090804, 1e-4);
}

/* The segment search (binary) against a linear scan: sizes 0, 1, 2 and
 * random sorted times, t before, on, between and after the keys. */
static void keys_segment_matches_a_linear_scan(void **state)
{
    (void)state;
    RtTestRng rng = {0x6b657973u};
    RtKbKey k[64];
    for (int round = 0; round < 200; round++) {
        uint32_t n = round < 3 ? (uint32_t)round : 1 + (uint32_t)(rt_test_randf(&rng) * 63.0f);
        float t = 0.0f;
        for (uint32_t i = 0; i < n; i++) k[i].t = t += 0.01f + rt_test_randf(&rng);
        for (int j = 0; j < 50; j++) {
            float q = j < (int)n ? k[j].t : (t + 2.0f) * rt_test_randf(&rng) - 1.0f;
            uint32_t i, want = 0;
            float s;
            rt_keys_segment(k, n, q, &i, &s);
            for (uint32_t m = 0; m < n; m++)
                if (k[m].t <= q) want = m;
            assert_int_equal(i, want);
            assert_true(s >= 0.0f && s < 1.0f);
            if (n && want + 1 < n && q > k[0].t) assert_near(s, (q - k[want].t) / (k[want + 1].t - k[want].t), 1e-5);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(anim_static_scene_frame_shares_verts),
        cmocka_unit_test(keys_step_holds_each_value_until_the_next_key),
        cmocka_unit_test(keys_linear_lerps_and_slerps_the_shorter_arc),
        cmocka_unit_test(keys_cubic_spline_uses_out_then_in_tangents),
        cmocka_unit_test(keys_segment_matches_a_linear_scan),
        cmocka_unit_test(anim_zero_and_one_node),
        cmocka_unit_test(anim_set_vert_node_rejects_bad_ranges),
        cmocka_unit_test(anim_find_track_returns_last_of_a_name),
        cmocka_unit_test(anim_spin_orbit_bounce_at_known_times),
        cmocka_unit_test(anim_spin_applies_static_part_after),
        cmocka_unit_test(anim_nested_nodes_compose_parent_times_child),
        cmocka_unit_test(anim_track_matrix_is_t_r_s),
        cmocka_unit_test(anim_track_node_and_missing_track),
        cmocka_unit_test(anim_visibility_hides_subtree),
        cmocka_unit_test(anim_morph_interpolates_and_clamps),
        cmocka_unit_test(anim_morph_segment_edge_cases),
        cmocka_unit_test(anim_wave_displaces_with_analytic_normal),
        cmocka_unit_test(anim_morph_then_wave_then_node),
        cmocka_unit_test(anim_normals_use_inverse_transpose),
        cmocka_unit_test(anim_camera_and_light_tracks),
        cmocka_unit_test(anim_time_range),
        cmocka_unit_test(anim_append_under_matrix_keeps_node_space),
        cmocka_unit_test(anim_skin_blends_joints_unweighted_follow_node),
        cmocka_unit_test(anim_bounds_and_finish_use_start_time),
        cmocka_unit_test(anim_bart_camera_and_toycar_match_reference),
        cmocka_unit_test(anim_random_hierarchy_matches_naive_recursion),
    };
    rt_log_set_level(RT_LOG_NONE);
    return cmocka_run_group_tests_name("anim", tests, NULL, NULL);
}
