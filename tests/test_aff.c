/* test_aff.c — BART AFF: the keyframe splines (kbspline.c) against hand
 * computed values and the reference's test vectors (aff.md 5.6), the loader
 * (load_aff.c) on small synthetic files for every command, on the real
 * kitchen and robots scenes when the assets are unpacked, and one clear
 * "file:line: AFF: expected ..." error (never a crash) for bad input. */
#include "test_util.h"

#include <math.h>

#include "anim/anim.h"
#include "render/render_cpu.h"
#include "scene/load.h"
#include "scene/scene.h"

/* ---- helpers ------------------------------------------------------------- */

#define EPS 1e-4

/* A scratch scene directory laid out as BART does: DIR/aff/ for the aff
 * files and DIR/TextureFiles/ for the images. */
typedef struct TmpScene {
    char dir[256];
    char files[32][512];
    int file_count;
} TmpScene;

static void tmp_begin(TmpScene *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->dir, sizeof t->dir, "/tmp/rt_test_aff_XXXXXX");
    assert_non_null(mkdtemp(t->dir));
    char sub[512];
    snprintf(sub, sizeof sub, "%s/aff", t->dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(sub, sizeof sub, "%s/TextureFiles", t->dir);
    assert_int_equal(mkdir(sub, 0700), 0);
}

/* Writes n bytes to DIR/rel and returns the path (valid until tmp_end). */
static const char *tmp_write_n(TmpScene *t, const char *rel, const void *data, size_t n)
{
    assert_true(t->file_count < 32);
    char full[512];
    snprintf(full, sizeof full, "%s/%s", t->dir, rel);
    char *p = t->files[t->file_count++];
    memcpy(p, full, sizeof full);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
    return p;
}
static const char *tmp_write(TmpScene *t, const char *rel, const char *text)
{
    return tmp_write_n(t, rel, text, strlen(text));
}

static void tmp_end(TmpScene *t)
{
    char sub[512];
    for (int i = 0; i < t->file_count; i++) unlink(t->files[i]);
    snprintf(sub, sizeof sub, "%s/aff", t->dir);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/TextureFiles", t->dir);
    rmdir(sub);
    rmdir(t->dir);
}

/* Loads one AFF text (as DIR/aff/main.aff) into a fresh scene. */
static RtStatus load_one(const char *text, RtScene *s, RtError *err, TmpScene *t)
{
    tmp_begin(t);
    const char *p = tmp_write(t, "aff/main.aff", text);
    rt_scene_init(s);
    memset(err, 0, sizeof *err);
    return rt_aff_load(p, s, err);
}

static void load_ok(const char *text, RtScene *s)
{
    TmpScene t;
    RtError err;
    RtStatus st = load_one(text, s, &err, &t);
    if (st != RT_OK) fail_msg("load failed: %s", err.msg);
    tmp_end(&t);
}

/* Bad input: the status and a message "main.aff:line: AFF: ...expect...";
 * the scene is left as it was (empty). */
static void expect_error(const char *text, RtStatus status, int line, const char *expect)
{
    TmpScene t;
    RtScene s;
    RtError err;
    rt_log_set_level(RT_LOG_NONE);
    RtStatus st = load_one(text, &s, &err, &t);
    rt_log_set_level(RT_LOG_WARN);
    if (st != status) fail_msg("status %s (%s), expected %s", rt_status_name(st), err.msg, rt_status_name(status));
    char where[64];
    snprintf(where, sizeof where, "main.aff:%d: AFF: ", line);
    rt_test_assert_contains(err.msg, where);
    rt_test_assert_contains(err.msg, expect);
    assert_int_equal(s.tri_count, 0);
    assert_int_equal(s.vert_count, 0);
    assert_int_equal(s.mat_count, 0);
    assert_int_equal(s.anim.track_count, 0);
    assert_int_equal(s.anim.node_count, 0);
    rt_scene_free(&s);
    tmp_end(&t);
}

static void assert_near(double a, double b, double eps)
{
    if (!(fabs(a - b) <= eps)) fail_msg("%.7f differs from %.7f by more than %g", a, b, eps);
}

static void assert_vec_near(RtVec3 a, double x, double y, double z, double eps)
{
    assert_near(a.x, x, eps);
    assert_near(a.y, y, eps);
    assert_near(a.z, z, eps);
}

/* A 1-D channel in x (y = z = 0) from times and values, TCB per key. */
typedef struct Chan {
    RtKbKey keys[16];
    RtKbChannel c;
} Chan;
static RtKbChannel *chan(Chan *ch, int n, const float *t, const float *x)
{
    memset(ch, 0, sizeof *ch);
    for (int i = 0; i < n; i++) {
        ch->keys[i].t = t[i];
        ch->keys[i].v[0] = x[i];
    }
    ch->c.keys = ch->keys;
    ch->c.count = (uint32_t)n;
    return &ch->c;
}

/* ---- splines: hand-computed values (aff.md 5.1-5.3) ------------------------- */

static void kb_linear_keys_give_linear_output(void **state)
{
    (void)state;
    Chan ch;
    float t[5] = {0, 1, 2, 3, 4}, x[5] = {0, 10, 20, 30, 40};
    RtKbChannel *c = chan(&ch, 5, t, x);
    /* uniform Catmull-Rom reproduces a straight line */
    for (float tt = 1.0f; tt <= 3.0f; tt += 0.125f) assert_near(rt_kb_eval_vec3(c, tt).x, 10.0 * tt, 1e-4);
    assert_near(rt_kb_eval_vec3(c, 0).y, 0.0, 0);
}

static void kb_value_is_held_outside_the_usable_range(void **state)
{
    (void)state;
    Chan ch;
    float t[5] = {0, 1, 2, 3, 4}, x[5] = {-100, 10, 20, 30, 100};
    RtKbChannel *c = chan(&ch, 5, t, x);
    /* the first and last keys only shape tangents: held at keys 1 and n-2 */
    assert_near(rt_kb_eval_vec3(c, -5.0f).x, 10.0, 1e-6);
    assert_near(rt_kb_eval_vec3(c, 0.5f).x, 10.0, 1e-6);
    assert_near(rt_kb_eval_vec3(c, 1.0f).x, 10.0, 1e-6);
    assert_near(rt_kb_eval_vec3(c, 3.0f).x, 30.0, 1e-6);
    assert_near(rt_kb_eval_vec3(c, 1e6f).x, 30.0, 1e-6);
}

static void kb_hermite_matches_hand_computed_values(void **state)
{
    (void)state;
    Chan ch;
    /* keys 0 0 1 1 at 0 1 2 3: out0 = out1 = in0 = in1 = 1/2, Tout = Tin =
     * 1/2, P(u) = u/2 + 3u^2/2 - u^3 */
    float t[4] = {0, 1, 2, 3}, x[4] = {0, 0, 1, 1};
    RtKbChannel *c = chan(&ch, 4, t, x);
    assert_near(rt_kb_eval_vec3(c, 1.5f).x, 0.5, 1e-6);
    assert_near(rt_kb_eval_vec3(c, 1.25f).x, 0.203125, 1e-6);
    /* non-uniform spacing 0 1 3 4: adj = 4/3, all weights 2/3,
     * P(u) = 2u/3 + u^2 - 2u^3/3; t = 1.5 is u = 1/4 */
    float t2[4] = {0, 1, 3, 4};
    c = chan(&ch, 4, t2, x);
    assert_near(rt_kb_eval_vec3(c, 2.0f).x, 0.5, 1e-6);
    assert_near(rt_kb_eval_vec3(c, 1.5f).x, 0.21875, 1e-6);
}

static void kb_tension_and_bias_change_the_tangents(void **state)
{
    (void)state;
    Chan ch;
    float t[4] = {0, 1, 2, 3}, x[4] = {0, 0, 1, 1};
    /* tension 1 on both inner keys: zero tangents, P(u) = 3u^2 - 2u^3 */
    RtKbChannel *c = chan(&ch, 4, t, x);
    ch.keys[1].tension = ch.keys[2].tension = 1.0f;
    assert_near(rt_kb_eval_vec3(c, 1.25f).x, 0.15625, 1e-6);
    /* P0 = -2: without bias Tout = 3/2, P(1/2) = 0.625; bias 1 on key 1
     * puts all the outgoing tangent on P1 - P0: Tout = 2, P(1/2) = 0.6875 */
    float x2[4] = {-2, 0, 1, 1};
    c = chan(&ch, 4, t, x2);
    assert_near(rt_kb_eval_vec3(c, 1.5f).x, 0.625, 1e-6);
    ch.keys[1].bias = 1.0f;
    assert_near(rt_kb_eval_vec3(c, 1.5f).x, 0.6875, 1e-6);
    /* continuity -1 at key 1: out0 = 0, out1 = 1 -> Tout = D = 1 */
    ch.keys[1].bias = 0.0f;
    ch.keys[1].continuity = -1.0f;
    /* Tout = 1, Tin = 1/2: P(u) = u + u^2 (3 - 2 - 1/2) + u^3 (-2 + 3/2) */
    assert_near(rt_kb_eval_vec3(c, 1.5f).x, 0.5 + 0.125 - 0.0625, 1e-6);
}

static void kb_duplicate_key_times_are_never_selected(void **state)
{
    (void)state;
    Chan ch;
    /* times 0 1 1 2 3: segment 0 ([1,1]) is skipped; t = 1.5 is segment 1
     * with adj0 = 2, adj1 = 1: P(u) = u + u^2/2 - u^3/2 */
    float t[5] = {0, 1, 1, 2, 3}, x[5] = {0, 0, 0, 1, 1};
    RtKbChannel *c = chan(&ch, 5, t, x);
    assert_near(rt_kb_eval_vec3(c, 1.5f).x, 0.5625, 1e-6);
    assert_near(rt_kb_eval_vec3(c, 1.0f).x, 0.0, 1e-6);
    assert_true(isfinite(rt_kb_eval_vec3(c, 1.0f + 1e-7f).x));
}

static void kb_non_monotonic_times_use_the_first_segment_by_linear_scan(void **state)
{
    (void)state;
    Chan ch;
    /* times 0 1 3 2 4 5 (as in robots gun_rot1): t = 2.5 falls in the
     * FIRST segment with t < t[i+2], [1,3] at u = 3/4; adj0 = 4/3,
     * adj1 = 4: P(u) = 2u/3 - u^2/3 + 2u^3/3 */
    float t[6] = {0, 1, 3, 2, 4, 5}, x[6] = {0, 0, 1, 1, 5, 5};
    RtKbChannel *c = chan(&ch, 6, t, x);
    assert_near(rt_kb_eval_vec3(c, 2.5f).x, 0.59375, 1e-6);
}

static void kb_channels_of_size_0_and_1(void **state)
{
    (void)state;
    Chan ch;
    float t[1] = {2}, x[1] = {7};
    RtKbChannel *c = chan(&ch, 0, t, x);
    assert_near(rt_kb_eval_vec3(c, 1.0f).x, 0.0, 0);
    assert_int_equal(rt_kb_eval_visible(c, 1.0f), 1);
    float r[9];
    rt_kb_eval_rot(c, 1.0f, r);
    assert_near(r[0], 1, 1e-7);
    assert_near(r[4], 1, 1e-7);
    assert_near(r[8], 1, 1e-7);
    c = chan(&ch, 1, t, x);
    assert_near(rt_kb_eval_vec3(c, 0.0f).x, 7.0, 0);
    assert_near(rt_kb_eval_vec3(c, 9.0f).x, 7.0, 0);
}

/* A rotation channel about one axis with the given angles, t = 0, 1, ... */
static RtKbChannel *rot_chan(Chan *ch, int n, RtVec3 axis, const float *deg)
{
    memset(ch, 0, sizeof *ch);
    for (int i = 0; i < n; i++) {
        ch->keys[i].t = (float)i;
        ch->keys[i].v[0] = axis.x;
        ch->keys[i].v[1] = axis.y;
        ch->keys[i].v[2] = axis.z;
        ch->keys[i].v[3] = deg[i];
    }
    ch->c.keys = ch->keys;
    ch->c.count = (uint32_t)n;
    return &ch->c;
}

static void kb_rotation_about_one_axis_interpolates_the_angle(void **state)
{
    (void)state;
    Chan ch;
    RtVec3 ax;
    float deg, r[9];
    /* evenly spaced angles: the squad tangents equal the chord, so the
     * rotation is the plain slerp, linear in the angle */
    float a[5] = {0, 90, 180, 270, 360};
    RtKbChannel *c = rot_chan(&ch, 5, v3(0, 0, 1), a);
    rt_kb_eval_rot_axis_angle(c, 1.5f, &ax, &deg);
    assert_vec_near(ax, 0, 0, 1, 1e-6);
    assert_near(deg, 135.0, 1e-3);
    rt_kb_eval_rot(c, 1.5f, r);
    double s = sin(135.0 * M_PI / 180.0), co = cos(135.0 * M_PI / 180.0);
    assert_near(r[0], co, 1e-5);
    assert_near(r[1], -s, 1e-5);
    assert_near(r[3], s, 1e-5);
    assert_near(r[8], 1.0, 1e-6);
    /* symmetric keys 0 0 90 90: the midpoint is 45 degrees */
    float b[4] = {0, 0, 90, 90};
    c = rot_chan(&ch, 4, v3(0, 1, 0), b);
    rt_kb_eval_rot_axis_angle(c, 1.5f, &ax, &deg);
    assert_vec_near(ax, 0, 1, 0, 1e-6);
    assert_near(deg, 45.0, 1e-3);
    rt_kb_eval_rot_axis_angle(c, 0.0f, &ax, &deg); /* held at key 1: 0 deg, axis +x */
    assert_near(deg, 0.0, 1e-4);
}

static void kb_non_unit_rotation_axes_are_used_as_written(void **state)
{
    (void)state;
    Chan ch;
    RtVec3 ax;
    float deg;
    /* axis (0, 0, 2) at 60 degrees: the key quaternion (cos 30, 2 sin 30 z)
     * converts back to 2 acos(cos 30) = 60 degrees about +z */
    float a[4] = {60, 60, 60, 60};
    RtKbChannel *c = rot_chan(&ch, 4, v3(0, 0, 2), a);
    rt_kb_eval_rot_axis_angle(c, 1.5f, &ax, &deg);
    assert_vec_near(ax, 0, 0, 1, 1e-6);
    assert_near(deg, 60.0, 1e-3);
}

static void kb_visibility_is_a_step_function(void **state)
{
    (void)state;
    Chan ch;
    float t[2] = {1, 2}, x[2] = {0, 1};
    RtKbChannel *c = chan(&ch, 2, t, x);
    assert_int_equal(rt_kb_eval_visible(c, 0.5f), 1); /* before the first key */
    assert_int_equal(rt_kb_eval_visible(c, 1.0f), 0);
    assert_int_equal(rt_kb_eval_visible(c, 1.5f), 0);
    assert_int_equal(rt_kb_eval_visible(c, 2.0f), 1);
    assert_int_equal(rt_kb_eval_visible(c, 99.0f), 1);
}

/* ---- the real scenes (aff.md 9) and the reference's test vectors (5.6) ---- */

static int load_asset(const char *rel, RtScene *s)
{
    char buf[1024];
    const char *p = rt_test_asset(rel, buf);
    if (!p) return 0;
    RtError err;
    double t0 = rt_now_ms();
    RtStatus st = rt_scene_load(p, s, &err);
    if (st != RT_OK) fail_msg("%s: %s", rel, err.msg);
    print_message("%s: %u triangles, %u vertices in %.0f ms\n", rel, s->tri_count, s->vert_count, rt_now_ms() - t0);
    return 1;
}

static const RtAnimTrack *track(const RtScene *s, const char *name)
{
    int32_t i = rt_anim_find_track(&s->anim, name);
    if (i < 0) fail_msg("no track %s", name);
    return &s->anim.tracks[i];
}

/* Triangles whose first vertex is attached to an animated node. */
static uint32_t dynamic_tris(const RtScene *s)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->tri_count; i++) {
        uint32_t v = s->tris[i].v[0];
        n += s->anim.vert_node && v < s->anim.vert_node_cap && s->anim.vert_node[v] != RT_ANIM_STATIC;
    }
    return n;
}

/* Camera eye, view direction -(3rd column) and up (2nd column) (aff.md 7). */
static void check_camera(const RtAnimTrack *tr, float t, const double eye[3], const double dir[3], const double *up)
{
    float m[12];
    rt_anim_track_matrix(tr, t, m);
    assert_vec_near(v3(m[3], m[7], m[11]), eye[0], eye[1], eye[2], EPS);
    assert_vec_near(v3(-m[2], -m[6], -m[10]), dir[0], dir[1], dir[2], EPS);
    if (up) assert_vec_near(v3(m[1], m[5], m[9]), up[0], up[1], up[2], EPS);
}

static void aff_kitchen_loads_with_its_counts_and_test_vectors(void **state)
{
    (void)state;
    RtScene s;
    if (!load_asset("bart/kitchen/aff/kitchen.aff", &s)) skip();
    assert_int_equal(s.tri_count, 110561);
    assert_int_equal(s.object_count, 393); /* one per mesh instance */
    assert_int_equal(s.light_count, 6);
    assert_int_equal(s.tex_count, 8);
    assert_int_equal(dynamic_tris(&s), 7218); /* only the toy car moves */
    assert_true(s.has_camera && s.has_background && s.has_ambient);
    assert_vec_near(s.ambient, 2.5, 2.5, 2.5, 0);
    assert_near(s.anim.t_start, 0, 0);
    assert_near(s.anim.t_end, 20, 0);
    assert_int_equal(s.anim.frames, 800);
    assert_int_equal(s.anim.track_count, 8); /* rotating_wheel_* twice each */
    assert_true(s.anim.camera_track >= 0);
    assert_string_equal(s.anim.tracks[s.anim.camera_track].name, "camera");
    for (uint32_t i = 0; i < s.anim.node_count; i++)
        if (s.anim.nodes[i].kind == RT_NODE_TRACK) assert_true(s.anim.nodes[i].track >= 0);

    const RtAnimTrack *cam = track(&s, "camera");
    check_camera(cam, 0.0f, (double[]){3.75, 2.3, 3.6}, (double[]){-0.313464, -0.419814, -0.851761},
                 (double[]){-0.127003, 0.907444, -0.400520});
    check_camera(cam, 10.0f, (double[]){3.117315, 0.488333, 1.05}, (double[]){-0.616961, -0.579906, -0.532041},
                 NULL);
    const RtAnimTrack *car = track(&s, "toycar");
    RtVec3 ax;
    float deg, m[12];
    rt_kb_eval_rot_axis_angle(&car->rot, 10.0f, &ax, &deg);
    assert_near(deg, 254.585266, 1e-3);
    assert_vec_near(ax, 0, 1, 0, EPS);
    rt_anim_track_matrix(car, 10.0f, m);
    const double m10[12] = {-0.265804, 0, -0.964027, 2.678804, 0, 1, 0, 0, 0.964027, 0, -0.265804, 0.603692};
    for (int i = 0; i < 12; i++) assert_near(m[i], m10[i], EPS);
    rt_anim_track_matrix(car, 19.9f, m);
    const double r0[4] = {0.007050, 0, -0.999901, 2.752400}, r2[4] = {0.499950, 0, 0.014099, 3.482464};
    for (int i = 0; i < 4; i++) {
        assert_near(m[i], r0[i], EPS);
        assert_near(m[8 + i], r2[i], EPS);
    }
    rt_scene_free(&s);
}

static void aff_robots_load_with_their_counts_and_test_vectors(void **state)
{
    (void)state;
    RtScene s;
    if (!load_asset("bart/robots/aff/Robot.aff", &s)) skip();
    assert_int_equal(s.tri_count, 71708);
    assert_int_equal(s.object_count, 1849);
    assert_int_equal(s.light_count, 1);
    assert_int_equal(s.tex_count, 44);
    assert_int_equal(s.anim.track_count, 187);
    assert_int_equal(dynamic_tris(&s), 10 * 6249); /* the city is static */
    assert_int_equal(s.anim.frames, 800);
    assert_string_equal(s.anim.tracks[s.anim.camera_track].name, "camera");
    uint32_t x_nodes = 0, unanimated = 0;
    for (uint32_t i = 0; i < s.anim.node_count; i++)
        if (s.anim.nodes[i].kind == RT_NODE_TRACK) {
            x_nodes++;
            unanimated += s.anim.nodes[i].track < 0;
        }
    assert_int_equal(x_nodes, 190);
    assert_int_equal(unanimated, 5); /* grip_lift1 grip_rot1 gun_lift2 gun_rot2 head_rot2 */

    check_camera(track(&s, "camera"), 20.0f, (double[]){5.765593, 6.706506, -98.781366},
                 (double[]){0.444602, -0.071259, 0.892889}, NULL);
    RtVec3 ax;
    float deg;
    rt_kb_eval_rot_axis_angle(&track(&s, "head_rot1")->rot, 10.0f, &ax, &deg);
    assert_vec_near(ax, 0, 0.978550, 0.206010, EPS);
    assert_near(deg, 32.273793, 1e-3);
    rt_kb_eval_rot_axis_angle(&track(&s, "gun_rot1")->rot, 48.25f, &ax, &deg);
    assert_vec_near(ax, 0, 0, -1, EPS);
    assert_near(deg, 315.0, 1e-3);
    rt_scene_free(&s);
}

/* ---- synthetic files: every command --------------------------------------- */

#define FM_RED "fm 0 0 0  1 0 0  0 0 0  10 0 1\n"

static void aff_polygons_are_fanned_with_a_flat_normal(void **state)
{
    (void)state;
    RtScene s;
    load_ok(FM_RED "p 5\n0 0 0\n1 0 0\n1.5 1 0\n0.5 2 0\n-0.5 1 0\n"
                   "pp 4\n0 0 1 0 0 2\n1 0 1 0 0 2\n1 1 1 0 0 2\n0 1 1 0 0 2\n",
            &s);
    assert_int_equal(s.tri_count, 3 + 2);
    assert_int_equal(s.vert_count, 5 + 4);
    assert_int_equal(s.mat_count, 1);
    assert_vec_near(s.mats[0].kd, 1, 0, 0, 0);
    for (int k = 0; k < 3; k++) { /* fan (v0, vk, vk+1) */
        assert_int_equal(s.tris[k].v[0], 0);
        assert_int_equal(s.tris[k].v[1], k + 1);
        assert_int_equal(s.tris[k].v[2], k + 2);
        assert_int_equal(s.tris[k].material, 0);
    }
    for (uint32_t i = 0; i < s.vert_count; i++) assert_vec_near(s.verts[i].n, 0, 0, 1, 1e-6);
    assert_int_equal(s.object_count, 1); /* consecutive polygons share one */
    assert_int_equal(s.objects[0].tri_count, 5);
    assert_null(s.anim.vert_node);
    rt_scene_free(&s);
}

/* A 2x1 binary PPM: red, green. */
static const char kPpm[] = "P6\n2 1\n255\n\xff\x00\x00\x00\xff\x00";

static void aff_textured_triangles_flip_v_and_find_texture_files(void **state)
{
    (void)state;
    TmpScene t;
    tmp_begin(&t);
    tmp_write_n(&t, "TextureFiles/a.ppm", kPpm, sizeof kPpm - 1);
    tmp_write_n(&t, "aff/b.ppm", kPpm, sizeof kPpm - 1); /* beside the aff file */
    const char *p = tmp_write(&t, "aff/main.aff",
                              FM_RED "tt a.ppm\n0 0 0 0 0\n1 0 0 1 0\n0 1 0 0 1\n"
                                     "ttp b.ppm\n0 0 0 0 0 1 0.25 0.75\n1 0 0 0 0 1 1 0\n0 1 0 0 0 1 0 1\n"
                                     "tt a.ppm\n0 0 1 0 0\n1 0 1 1 0\n0 1 1 0 1\n");
    RtScene s;
    RtError err;
    rt_scene_init(&s);
    assert_int_equal(rt_aff_load(p, &s, &err), RT_OK);
    assert_int_equal(s.tri_count, 3);
    assert_int_equal(s.tex_count, 2);
    assert_int_equal(s.texs[0].w, 2);
    assert_int_equal(s.texs[0].h, 1);
    assert_int_equal(s.texs[0].rgba[0], 255);
    /* AFF v = 0 is the image's top row; RtScene's v = 0 is the bottom */
    assert_near(s.verts[0].v, 1.0, 0);
    assert_near(s.verts[2].v, 0.0, 0);
    assert_near(s.verts[3].u, 0.25, 0);
    assert_near(s.verts[3].v, 0.25, 1e-7);
    /* the red material, textured: one variant per texture, shared */
    int32_t m0 = s.tris[0].material, m1 = s.tris[1].material;
    assert_int_equal(s.mats[m0].map_kd, 0);
    assert_int_equal(s.mats[m1].map_kd, 1);
    assert_int_equal(s.tris[2].material, m0);
    assert_vec_near(s.mats[m0].kd, 1, 0, 0, 0);
    rt_scene_free(&s);
    tmp_end(&t);
}

static void aff_missing_texture_warns_and_draws_untextured(void **state)
{
    (void)state;
    RtScene s;
    rt_log_set_level(RT_LOG_NONE);
    load_ok(FM_RED "tt nowhere.ppm\n0 0 0 0 0\n1 0 0 1 0\n0 1 0 0 1\n", &s);
    rt_log_set_level(RT_LOG_WARN);
    assert_int_equal(s.tri_count, 1);
    assert_int_equal(s.tex_count, 0);
    assert_int_equal(s.tris[0].material, 0);
    rt_scene_free(&s);
}

static void aff_mesh_index_spaces_are_independent(void **state)
{
    (void)state;
    RtScene s;
    /* 4 positions, 2 normals, 3 texcoords; rows of 9 indices */
    load_ok(FM_RED "m\nvertices 4\n0 0 0\n1 0 0\n1 1 0\n0 1 0\n"
                   "normals 2\n0 0 1\n0 0 -2\n"
                   "texturecoords 3 t.ppm\n0 0\n1 0\n1 1\n"
                   "triangles 2\n0 1 2  0 0 0  0 1 2\n0 2 3  1 1 1  0 2 2\n",
            &s);
    assert_int_equal(s.tri_count, 2);
    /* corners (0,0,0) (1,0,1) (2,0,2) (0,1,0) (2,1,2) (3,1,2): 6 distinct */
    assert_int_equal(s.vert_count, 6);
    const RtTriangle *t1 = &s.tris[1];
    assert_vec_near(s.verts[t1->v[0]].n, 0, 0, -1, 1e-6); /* normalised */
    assert_vec_near(s.verts[t1->v[2]].p, 0, 1, 0, 0);
    assert_near(s.verts[t1->v[2]].u, 1, 0);
    assert_near(s.verts[t1->v[2]].v, 0, 0);
    /* a mesh without normals is flat-shaded: own corners, geometric normal */
    RtScene f;
    load_ok(FM_RED "m vertices 4 0 0 0 1 0 0 1 1 0 0 1 0 triangles 2 0 1 2 0 2 3", &f);
    assert_int_equal(f.tri_count, 2);
    assert_int_equal(f.vert_count, 6);
    for (uint32_t i = 0; i < f.vert_count; i++) assert_vec_near(f.verts[i].n, 0, 0, 1, 1e-6);
    /* an empty mesh is fine */
    RtScene e;
    load_ok("m vertices 0 triangles 0", &e);
    assert_int_equal(e.tri_count, 0);
    assert_int_equal(e.object_count, 1);
    rt_scene_free(&s);
    rt_scene_free(&f);
    rt_scene_free(&e);
}

static void aff_tpa_becomes_a_morph_with_unit_normals(void **state)
{
    (void)state;
    RtScene s;
    load_ok(FM_RED "tpa 3\n"
                   "0  0 0 0 0 0 1e-5  1 0 0 0 0 2e-5  0 1 0 0 0 0\n"
                   "1  0 0 1 0 0 1e-5  1 0 1 0 0 1e-5  0 1 1 0 0 1e-5\n"
                   "4  0 0 2 0 1e-5 0  1 0 2 0 1e-5 0  0 1 2 0 1e-5 0\n"
                   "xs 2 2 2 0 1 0 0 0 0 0 { tpa 1 0 0 0 0 0 0 1 1 0 0 0 0 1 0 1 0 0 0 1 }\n",
            &s);
    assert_int_equal(s.tri_count, 2);
    assert_int_equal(s.anim.morph_count, 2);
    const RtAnimMorph *m = &s.anim.morphs[0];
    assert_int_equal(m->first_vert, 0);
    assert_int_equal(m->vert_count, 3);
    assert_int_equal(m->key_count, 3);
    assert_near(m->times[2], 4.0, 0);
    assert_vec_near(m->pos[3 * 2 + 1], 1, 0, 2, 0);
    assert_vec_near(m->nrm[1], 0, 0, 1, 1e-6);              /* 2e-5 normalised */
    assert_vec_near(m->nrm[2], 0, 0, 1, 1e-6);              /* zero: the geometric normal */
    assert_vec_near(m->nrm[3 * 2 + 0], 0, 1, 0, 1e-6);
    assert_vec_near(s.verts[1].p, 1, 0, 0, 0);              /* base = record 0 */
    assert_vec_near(s.anim.morphs[1].pos[1], 2, 0, 0, 1e-6); /* under xs: baked */
    assert_int_equal(s.anim.morphs[1].first_vert, 3);
    rt_scene_free(&s);
}

static void aff_cones_are_open_tessellated_surfaces(void **state)
{
    (void)state;
    RtScene s;
    load_ok(FM_RED "c 0 0 0 1  0 2 0 0.5\nc 5 0 0 -1  5 1 0 -1\n", &s);
    assert_int_equal(s.tri_count, 2 * 2 * 24);
    assert_int_equal(s.vert_count, 2 * 2 * 25);
    for (uint32_t i = 0; i < 50; i++) {
        RtVec3 p = s.verts[i].p, n = s.verts[i].n;
        double r = sqrt(p.x * p.x + p.z * p.z);
        assert_near(r, p.y == 0.0f ? 1.0 : 0.5, 1e-5);
        /* outward, tilted up by (br - ar) / h = 1/4 */
        assert_true(n.x * p.x + n.z * p.z > 0.0f);
        assert_near(n.y, 0.25 / sqrt(1.0625), 1e-5);
    }
    for (uint32_t i = 50; i < 100; i++) { /* negative radius: inside visible */
        RtVec3 p = s.verts[i].p, n = s.verts[i].n;
        assert_near(sqrt((p.x - 5) * (p.x - 5) + p.z * p.z), 1.0, 1e-5);
        assert_true(n.x * (p.x - 5) + n.z * p.z < 0.0f);
    }
    rt_scene_free(&s);
}

static void aff_spheres_use_the_uv_sphere(void **state)
{
    (void)state;
    RtScene s;
    load_ok(FM_RED "s 1 2 3 0.5\n", &s);
    assert_true(s.tri_count > 0);
    for (uint32_t i = 0; i < s.vert_count; i++)
        assert_near(v3_len(v3_sub(s.verts[i].p, v3(1, 2, 3))), 0.5, 1e-5);
    rt_scene_free(&s);
}

static void aff_nested_static_transforms_are_baked(void **state)
{
    (void)state;
    RtScene s;
    /* outer: scale 2 then translate (10,0,0); inner: rotate 90 about y.
     * (1,0,0) -> inner (0,0,-1) -> outer (10,0,-2) */
    load_ok(FM_RED "xs 2 2 2  0 1 0 0  10 0 0\n{\n xs 1 1 1 0 1 0 90 0 0 0 {\n"
                   "  p 3\n 1 0 0\n 0 1 0\n 0 0 1\n }\n}\n"
                   "xs 1 1 -1 0 1 0 0 0 0 0 { p 3 0 0 0 1 0 0 0 1 0 }\n",
            &s);
    assert_vec_near(s.verts[0].p, 10, 0, -2, 1e-5);
    assert_vec_near(s.verts[1].p, 10, 2, 0, 1e-5);
    assert_vec_near(s.verts[2].p, 12, 0, 0, 1e-5);
    assert_int_equal(s.anim.node_count, 0); /* nothing moves: nothing to evaluate */
    assert_null(s.anim.vert_node);
    /* a mirroring xs swaps the winding and keeps the normal outward */
    assert_int_equal(s.tris[1].v[1], 5);
    assert_vec_near(s.verts[3].n, 0, 0, -1, 1e-6);
    rt_scene_free(&s);
}

static void aff_animated_nodes_form_a_hierarchy_with_tracks_resolved_last(void **state)
{
    (void)state;
    RtScene s;
    load_ok(FM_RED "x a {\n xs 2 2 2 0 1 0 0 0 0 0 {\n  x b {\n   xs 1 1 1 0 1 0 0 5 0 0 { p 3 1 0 0 0 1 0 0 0 1 }\n"
                   "  }\n }\n p 3 0 0 0 1 0 0 0 1 0\n}\n"
                   "p 3 0 0 0 1 0 0 0 1 0\n"
                   "k b { transl 4 0 0 0 0 0 0 0  1 0 0 0 0 0 0  2 0 0 0 0 0 0  3 0 0 0 0 0 0 }\n"
                   "k b { transl 4 0 1 0 0 0 0 0  1 1 0 0 0 0 0  2 1 0 0 0 0 0  3 1 0 0 0 0 0 }\n"
                   "x nobody { }\n",
            &s);
    /* a (track), static scale 2, b (track), nobody (track) */
    assert_int_equal(s.anim.node_count, 4);
    const RtAnimNode *n = s.anim.nodes;
    assert_int_equal(n[0].kind, RT_NODE_TRACK);
    assert_int_equal(n[0].parent, -1);
    assert_int_equal(n[0].track, -1); /* no k a: identity */
    assert_int_equal(n[1].kind, RT_NODE_STATIC);
    assert_int_equal(n[1].parent, 0);
    assert_near(n[1].m[0], 2, 0);
    assert_int_equal(n[2].kind, RT_NODE_TRACK);
    assert_int_equal(n[2].parent, 1);
    assert_int_equal(n[2].track, 1); /* the LAST k b */
    assert_int_equal(n[3].parent, -1);
    /* under b: the inner xs baked into node space, vertices on node 2 */
    assert_vec_near(s.verts[0].p, 6, 0, 0, 0);
    assert_int_equal(s.anim.vert_node[0], 2);
    assert_int_equal(s.anim.vert_node[3], 0); /* the polygon directly in a */
    assert_true(s.anim.vert_node_cap < 7 || s.anim.vert_node[6] == RT_ANIM_STATIC);
    assert_true(rt_anim_is_dynamic(&s.anim));
    rt_scene_free(&s);
}

static void aff_includes_splice_files_and_materials_leak(void **state)
{
    (void)state;
    TmpScene t;
    tmp_begin(&t);
    tmp_write(&t, "aff/red.aff", "fm 0 0 0  1 0 0  0 0 0  10 0 1");   /* no final newline */
    tmp_write(&t, "aff/green.aff", "fm 0 0 0  0 1 0  0 0 0  10 0 1\n");
    tmp_write(&t, "aff/tri.aff", "p 3 0 0 0 1 0 0 0 1 0\n");
    tmp_write(&t, "aff/deep.aff", "i 1 tri.aff\n");
    const char *p = tmp_write(&t, "aff/main.aff",
                              "i 0 red.aff\ni 0 tri.aff\n"                 /* red from an include */
                              "xs 1 1 1 0 1 0 0 0 0 0 { i 0 green.aff }\n" /* set inside a closed block */
                              "i 0 tri.aff\n"
                              "i 0 missing.aff\n"                          /* warned and skipped */
                              "i 1 tri.aff\n"                              /* level 1 > detail 0 */
                              "d 1\ni 0 deep.aff\n");                      /* now level 1 is in */
    RtScene s;
    RtError err;
    rt_scene_init(&s);
    rt_log_set_level(RT_LOG_NONE);
    RtStatus st = rt_aff_load(p, &s, &err);
    rt_log_set_level(RT_LOG_WARN);
    if (st != RT_OK) fail_msg("%s", err.msg);
    assert_int_equal(s.tri_count, 3);
    assert_vec_near(s.mats[s.tris[0].material].kd, 1, 0, 0, 0);
    assert_vec_near(s.mats[s.tris[1].material].kd, 0, 1, 0, 0);
    assert_vec_near(s.mats[s.tris[2].material].kd, 0, 1, 0, 0);
    rt_scene_free(&s);
    tmp_end(&t);
}

static void aff_include_cycle_is_an_error(void **state)
{
    (void)state;
    TmpScene t;
    tmp_begin(&t);
    tmp_write(&t, "aff/a.aff", "p 3 0 0 0 1 0 0 0 1 0\ni 0 b.aff\n");
    tmp_write(&t, "aff/b.aff", "\n\ni 0 a.aff\n");
    const char *p = tmp_write(&t, "aff/main.aff", "i 0 a.aff\n");
    RtScene s;
    RtError err;
    rt_scene_init(&s);
    assert_int_equal(rt_aff_load(p, &s, &err), RT_ERR_PARSE);
    rt_test_assert_contains(err.msg, "b.aff:3: AFF: include cycle");
    assert_int_equal(s.tri_count, 0);
    rt_scene_free(&s);
    tmp_end(&t);
}

static void aff_lexer_takes_crlf_comments_and_strtod_numbers(void **state)
{
    (void)state;
    RtScene s;
    load_ok("# header comment\r\n% another\r\n  \t# indented\r\n" FM_RED
            "#p 3 this is commented out\r\n"
            "p 3\r\n-.077 0 0\r\n3. 0 0 \r\n0 6.37442E-4 +1e1\r\n\f"
            "a -1.0 5.0 300  % the last number is the number of frames\r\n"
            "# Latin-1 in a comment: \xf6\r\n"
            "p\t3 0 0 0 1 0 0 0 1 0",
            &s);
    assert_int_equal(s.tri_count, 2);
    assert_vec_near(s.verts[0].p, -0.077, 0, 0, 1e-7);
    assert_vec_near(s.verts[1].p, 3, 0, 0, 0);
    assert_vec_near(s.verts[2].p, 0, 6.37442e-4, 10, 1e-9);
    assert_near(s.anim.t_start, -1, 0);
    assert_int_equal(s.anim.frames, 300);
    rt_scene_free(&s);
}

static void aff_view_background_ambient_lights(void **state)
{
    (void)state;
    TmpScene t;
    tmp_begin(&t);
    tmp_write(&t, "aff/tri.aff", "p 3 0 0 0 1 0 0 0 1 0\n");
    const char *p = tmp_write(&t, "aff/main.aff",
                              "v\nfrom 1 2 3\nat 0 0 0\nup 0 1 0\nangle 40\nhither 0.01\nresolution 800 600\n"
                              "b 0.5 0.5 1.0\nam 2.5 2.5 2.5\n"
                              "l 1 2 3\n"                 /* no colour, and then an include: not 'inf' */
                              "i 0 tri.aff\n"
                              "l 4 5 6 0.3 0.3 0.3\n"
                              "la lamp 7 8 9 1 0 0\nla other 0 0 0\n"
                              "k lamp { transl 4 0 0 0 0 0 0 0 1 1 0 0 0 0 0 2 2 0 0 0 0 0 3 3 0 0 0 0 0 }\n");
    RtScene s;
    RtError err;
    rt_scene_init(&s);
    rt_log_set_level(RT_LOG_NONE);
    RtStatus st = rt_aff_load(p, &s, &err);
    rt_log_set_level(RT_LOG_WARN);
    if (st != RT_OK) fail_msg("%s", err.msg);
    assert_int_equal(s.tri_count, 1);
    assert_true(s.has_camera);
    assert_vec_near(s.camera.pos, 1, 2, 3, 0);
    assert_vec_near(s.camera.look, 0, 0, 0, 0);
    assert_near(s.camera.fov_y, 40, 0);
    assert_true(s.has_background && s.has_ambient);
    assert_vec_near(s.background, 0.5, 0.5, 1.0, 0);
    assert_int_equal(s.light_count, 4);
    assert_vec_near(s.lights[0].color, 1, 1, 1, 0);
    assert_vec_near(s.lights[1].color, 0.3, 0.3, 0.3, 1e-7);
    assert_vec_near(s.lights[2].v, 7, 8, 9, 0);
    assert_non_null(s.anim.light_track);
    assert_int_equal(s.anim.light_track[0], -1);
    assert_int_equal(s.anim.light_track[1], -1);
    assert_int_equal(s.anim.light_track[2], 0);
    assert_int_equal(s.anim.light_track[3], -1); /* no k other */
    assert_int_equal(s.anim.camera_track, -1);
    rt_scene_free(&s);
    tmp_end(&t);
}

static void aff_identical_materials_are_shared(void **state)
{
    (void)state;
    RtScene s;
    load_ok(FM_RED "p 3 0 0 0 1 0 0 0 1 0\n" FM_RED "p 3 0 0 0 1 0 0 0 1 0\n"
                   "fm 0 0 0  .5 .5 .5  .8 .8 .8  20 0.85 0\np 3 0 0 0 1 0 0 0 1 0\n",
            &s);
    assert_int_equal(s.mat_count, 2);
    const RtMaterial *g = &s.mats[1];
    assert_near(g->reflect, 0.8, 1e-6); /* max(specular) */
    assert_near(g->d, 0.15, 1e-6);      /* 1 - T */
    assert_near(g->ni, 1.0, 0);         /* ior 0 -> 1 */
    assert_near(g->ns, 20, 0);
    assert_int_equal(g->map_kd, -1);
    rt_scene_free(&s);
}

static void aff_empty_file_loads_nothing(void **state)
{
    (void)state;
    RtScene s;
    load_ok("", &s);
    assert_int_equal(s.tri_count, 0);
    rt_scene_free(&s);
    load_ok("# only a comment", &s);
    assert_int_equal(s.tri_count, 0);
    rt_scene_free(&s);
}

/* ---- malformed input ---------------------------------------------------------- */

static void aff_malformed_inputs_give_file_line_errors(void **state)
{
    (void)state;
    expect_error("m\nvertices 3\n0 0 0\n1 0 0\n", RT_ERR_PARSE, 2, "expected 3 rows");
    expect_error("m\nvertices 3\n0 0 0\n1 0 0\n0 1 0\ntriangles 1\n0 1        \n", RT_ERR_PARSE, 7,
                 "expected vertex index (an integer), got end of file");
    expect_error("m vertices 3 0 0 0 1 0 0 0 1 0\ntriangles 1\n0 1 3\n", RT_ERR_PARSE, 3,
                 "expected vertex index in [0, 3), got 3");
    expect_error("m vertices 1 0 0 0\nnormals 1 0 0 1\nfaces 1\n", RT_ERR_PARSE, 3, "expected 'texturecoords' or 'triangles'");
    expect_error("p 3\n0 0 0\n1 0 x\n0 1 0\n", RT_ERR_PARSE, 3, "expected polygon vertex x y z (a number), got 'x'");
    expect_error("p 3\n0 0 0\n1 0 nan\n0 1 0\n", RT_ERR_PARSE, 3, "got 'nan'");
    expect_error("p 3\n0 0 0\n1 0 1e99\n0 1 0\n", RT_ERR_PARSE, 3, "(a number)");
    expect_error("p 2 0 0 0 1 0 0\n", RT_ERR_PARSE, 1, "expected p vertex count in [3,");
    expect_error("\n\nsphere 0 0 0 1\n", RT_ERR_PARSE, 3, "unknown command 'sphere'");
    expect_error("{\n", RT_ERR_PARSE, 1, "unknown command '{'");
    expect_error("p 3 0 0 0 1 0 0 0 1 0\n}\n", RT_ERR_PARSE, 2, "'}' with no open 'x' or 'xs' block");
    expect_error("xs 1 1 1 0 1 0 0 0 0 0\np 3 0 0 0 1 0 0 0 1 0\n", RT_ERR_PARSE, 2, "expected '{' after 'xs'");
    expect_error("k cam {\n transl 3\n 0 0 0 0 0 0 0\n 1 0 0 0 0 0 0\n 2 0 0 0 0 0 0\n}\n", RT_ERR_PARSE, 2,
                 "expected at least 4 keys in 'transl' of 'k cam'");
    expect_error("k cam {\n spin 4\n}\n", RT_ERR_PARSE, 2, "expected 'transl', 'rot', 'scale', 'visibility' or '}'");
    expect_error("k cam {\n", RT_ERR_PARSE, 1, "got end of file");
    expect_error("v\nfrom 0 0 0\nat 0 0 1\nangle 40\n", RT_ERR_PARSE, 4, "expected 'up' in view 'v', got 'angle'");
    expect_error("tpa 2\n1 0 0 0 0 0 1 1 0 0 0 0 1 0 1 0 0 0 1\n0 0 0 0 0 0 1 1 0 0 0 0 1 0 1 0 0 0 1\n",
                 RT_ERR_PARSE, 3, "non-decreasing");
    expect_error("x " "0123456789012345678901234567890123456789012345678901234567890123456789 { }", RT_ERR_PARSE, 1,
                 "at most 63 characters");
    expect_error("m vertices 4000000000\n", RT_ERR_PARSE, 1, "expected vertex count in");
    expect_error("m vertices 100000 0 0 0\n", RT_ERR_PARSE, 1, "the file ends before");
}

static void aff_unclosed_block_is_an_error(void **state)
{
    (void)state;
    TmpScene t;
    RtScene s;
    RtError err;
    rt_log_set_level(RT_LOG_NONE);
    RtStatus st = load_one("\nx car\n{\n p 3 0 0 0 1 0 0 0 1 0\n", &s, &err, &t);
    rt_log_set_level(RT_LOG_WARN);
    assert_int_equal(st, RT_ERR_PARSE);
    rt_test_assert_contains(err.msg, "expected '}' before the end of the file");
    rt_test_assert_contains(err.msg, "main.aff:2");
    assert_int_equal(s.tri_count, 0);
    rt_scene_free(&s);
    tmp_end(&t);
}

static void aff_missing_file_is_an_io_error(void **state)
{
    (void)state;
    RtScene s;
    RtError err;
    rt_scene_init(&s);
    assert_int_equal(rt_aff_load("/nonexistent/dir/x.aff", &s, &err), RT_ERR_IO);
    rt_test_assert_contains(err.msg, "/nonexistent/dir/x.aff");
    rt_scene_free(&s);
}

static void aff_failed_load_rolls_the_scene_back(void **state)
{
    (void)state;
    TmpScene t;
    tmp_begin(&t);
    const char *good = tmp_write(&t, "aff/good.aff", FM_RED "p 3 0 0 0 1 0 0 0 1 0\nl 1 1 1\nk a { rot 4 0 0 1 0 0 0 0 0 "
                                                       "1 0 1 0 0 0 0 0 2 0 1 0 0 0 0 0 3 0 1 0 0 0 0 0 }\n");
    const char *bad = tmp_write(&t, "aff/bad.aff", "fm 0 0 0 0 1 0 0 0 0 1 0 1\nx a { p 3 0 0 0 1 0 0 0 1 0 }\n"
                                                   "l 2 2 2\nk b { }\nv from 1 1 1 at 0 0 0 up 0 1 0 angle 30 "
                                                   "hither 1 resolution 4 4\ntpa 1 0 0 0 0 0 0 1 1 0 0 0 0 1 0 1 0 0 0 1\n"
                                                   "p 3 0 0 0 1 0 0 0 1 oops\n");
    RtScene s;
    RtError err;
    rt_scene_init(&s);
    assert_int_equal(rt_aff_load(good, &s, &err), RT_OK);
    rt_log_set_level(RT_LOG_NONE);
    assert_int_equal(rt_aff_load(bad, &s, &err), RT_ERR_PARSE);
    rt_log_set_level(RT_LOG_WARN);
    rt_test_assert_contains(err.msg, "bad.aff:7: AFF: expected");
    assert_int_equal(s.tri_count, 1);
    assert_int_equal(s.vert_count, 3);
    assert_int_equal(s.mat_count, 1);
    assert_int_equal(s.light_count, 1);
    assert_int_equal(s.anim.track_count, 1);
    assert_int_equal(s.anim.node_count, 0);
    assert_int_equal(s.anim.morph_count, 0);
    assert_false(s.has_camera);
    rt_scene_free(&s);
    tmp_end(&t);
}

/* Every prefix of a file that uses every command loads or fails cleanly
 * (never crashes, never leaves a half scene), and so do random byte flips. */
static void aff_truncated_and_corrupted_files_never_crash(void **state)
{
    (void)state;
    static const char text[] =
        "v from 1 2 3 at 0 0 0 up 0 1 0 angle 40 hither 0.01 resolution 8 6\nb 0 0 0\nam 1 1 1\n"
        "l 1 2 3 1 1 1\nla m 0 0 0\n" FM_RED "f 1 1 1 0.5 0.5 10 0 1\n"
        "xs 1 1 1 0 1 0 30 0 0 0 {\n x m {\n  m vertices 3 0 0 0 1 0 0 0 1 0 normals 1 0 0 1 "
        "texturecoords 1 t.ppm 0 0 triangles 1 0 1 2 0 0 0 0 0 0\n  p 3 0 0 0 1 0 0 0 1 0\n"
        "  pp 3 0 0 0 0 0 1 1 0 0 0 0 1 0 1 0 0 0 1\n  tt t.ppm 0 0 0 0 0 1 0 0 1 0 0 1 0 0 1\n"
        "  c 0 0 0 1 0 1 0 1\n  s 0 0 0 1\n  tpa 2 0 0 0 0 0 0 1 1 0 0 0 0 1 0 1 0 0 0 1 "
        "1 0 0 0 0 0 1 1 0 0 0 0 1 0 1 0 0 0 1\n }\n}\n"
        "k m { transl 4 0 0 0 0 0 0 0 1 0 0 0 0 0 0 2 0 0 0 0 0 0 3 0 0 0 0 0 0 visibility 1 0 1 }\n"
        "a 0 1 10\nd 0\n";
    size_t n = sizeof text - 1;
    TmpScene t;
    tmp_begin(&t);
    RtTestRng rng = {12345};
    rt_log_set_level(RT_LOG_NONE);
    int ok = 0, failed = 0;
    char buf[sizeof text];
    for (size_t len = 0; len <= n + 200; len++) {
        size_t l = len;
        memcpy(buf, text, n);
        if (len > n) { /* random corruption of the whole file */
            l = n;
            for (int k = 0; k < 3; k++) buf[rt_test_rand(&rng) % n] = (char)(rt_test_rand(&rng) & 0xff);
        }
        char name[64];
        snprintf(name, sizeof name, "aff/f%zu.aff", len);
        const char *p = tmp_write_n(&t, name, buf, l);
        RtScene s;
        RtError err;
        rt_scene_init(&s);
        err.msg[0] = '\0';
        RtStatus st = rt_aff_load(p, &s, &err);
        if (st == RT_OK) {
            ok++;
            for (uint32_t i = 0; i < s.tri_count; i++)
                for (int k = 0; k < 3; k++) assert_true(s.tris[i].v[k] < s.vert_count);
        } else {
            failed++;
            assert_true(st == RT_ERR_PARSE || st == RT_ERR_IO);
            assert_non_null(strstr(err.msg, ": AFF: "));
            assert_int_equal(s.tri_count, 0);
        }
        rt_scene_free(&s);
        unlink(p);
        t.file_count--;
    }
    rt_log_set_level(RT_LOG_WARN);
    print_message("%d prefixes/corruptions loaded, %d failed cleanly\n", ok, failed);
    assert_true(ok > 0 && failed > 0);
    tmp_end(&t);
}

/* The kitchen at the start and the end of its animation (its own camera
 * path, the toy car elsewhere each time) renders through the CPU kd-tree
 * exactly as the brute-force oracle renders it: the same primary triangle
 * in every pixel, the same image. */
static void aff_kitchen_renders_as_the_oracle_at_start_and_end(void **state)
{
    (void)state;
    RtScene s;
    if (!load_asset("bart/kitchen/aff/kitchen.aff", &s)) {
        print_message("skip: bart/kitchen not found (../shared/assets absent or not unpacked)\n");
        skip();
    }
    float t0, t1;
    rt_scene_time_range(&s, &t0, &t1);
    assert_true(t1 > t0);
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    RtTriArrays tris = {0};
    RtKdTree tree;
    memset(&tree, 0, sizeof tree);
    RtError err = {0};
    const int w = 96, h = 72;
    RtImage a = {0}, b = {0};
    assert_int_equal(rt_image_alloc(&a, w, h), RT_OK);
    assert_int_equal(rt_image_alloc(&b, w, h), RT_OK);
    uint32_t *ia = malloc(sizeof *ia * w * h), *ib = malloc(sizeof *ib * w * h);
    assert_true(ia && ib);
    RtRenderParams rp = rt_render_params_default();
    rp.shade.shadows = 0;     /* the brute force tests every triangle per ray */
    rp.shade.max_bounces = 0;
    RtVec3 car[2];
    for (int k = 0; k < 2; k++) {
        float t = k ? t1 : t0;
        assert_int_equal(rt_scene_frame_at(&s, t, &f, &err), RT_OK);
        uint32_t degenerate = 0;
        assert_int_equal(rt_tri_arrays_update(&f.view, &tris, &degenerate), RT_OK);
        RtKdCpuParams kp = rt_kd_cpu_params_default();
        assert_int_equal(rt_kd_build_cpu(&kp, &tris, &tree, NULL, &err), RT_OK);
        RtRenderParams tp = rp, bp = rp;
        bp.brute_force = 1;
        assert_int_equal(rt_render_cpu(&f.view, &tris, RT_ACCEL_OF_KD(&tree), NULL, &f.view.camera, &tp, &a, ia, NULL, &err), RT_OK);
        assert_int_equal(rt_render_cpu(&f.view, &tris, NULL, NULL, &f.view.camera, &bp, &b, ib, NULL, &err), RT_OK);
        size_t hits = 0;
        for (int i = 0; i < w * h; i++) {
            assert_int_equal(ia[i], ib[i]);
            hits += ia[i] != RT_NO_HIT;
        }
        assert_memory_equal(a.rgba, b.rgba, (size_t)w * h * 4);
        assert_true(hits > (size_t)(w * h) / 2); /* the camera looks into the room */
        /* the toy car (the only moving geometry) is somewhere else at the end */
        RtAabb box = aabb_empty();
        for (uint32_t v = 0; v < s.vert_count; v++)
            if (s.anim.vert_node && v < s.anim.vert_node_cap && s.anim.vert_node[v] != RT_ANIM_STATIC)
                box = aabb_grow(box, f.view.verts[v].p);
        car[k] = v3_scale(v3_add(box.lo, box.hi), 0.5f);
        print_message("kitchen t=%.2f: camera (%.3f %.3f %.3f), car centre (%.3f %.3f %.3f), %zu of %d "
                      "pixels hit, tree == brute force\n", t, f.view.camera.pos.x, f.view.camera.pos.y,
                      f.view.camera.pos.z, car[k].x, car[k].y, car[k].z, hits, w * h);
    }
    assert_true(v3_len(v3_sub(car[0], car[1])) > 0.1f);
    free(ia);
    free(ib);
    rt_image_free(&a);
    rt_image_free(&b);
    rt_kd_tree_free(&tree);
    rt_tri_arrays_free(&tris);
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
}

int main(void)
{
    rt_log_set_level(RT_LOG_WARN); /* the loader's summary lines would drown the test names */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kb_linear_keys_give_linear_output),
        cmocka_unit_test(kb_value_is_held_outside_the_usable_range),
        cmocka_unit_test(kb_hermite_matches_hand_computed_values),
        cmocka_unit_test(kb_tension_and_bias_change_the_tangents),
        cmocka_unit_test(kb_duplicate_key_times_are_never_selected),
        cmocka_unit_test(kb_non_monotonic_times_use_the_first_segment_by_linear_scan),
        cmocka_unit_test(kb_channels_of_size_0_and_1),
        cmocka_unit_test(kb_rotation_about_one_axis_interpolates_the_angle),
        cmocka_unit_test(kb_non_unit_rotation_axes_are_used_as_written),
        cmocka_unit_test(kb_visibility_is_a_step_function),
        cmocka_unit_test(aff_polygons_are_fanned_with_a_flat_normal),
        cmocka_unit_test(aff_textured_triangles_flip_v_and_find_texture_files),
        cmocka_unit_test(aff_missing_texture_warns_and_draws_untextured),
        cmocka_unit_test(aff_mesh_index_spaces_are_independent),
        cmocka_unit_test(aff_tpa_becomes_a_morph_with_unit_normals),
        cmocka_unit_test(aff_cones_are_open_tessellated_surfaces),
        cmocka_unit_test(aff_spheres_use_the_uv_sphere),
        cmocka_unit_test(aff_nested_static_transforms_are_baked),
        cmocka_unit_test(aff_animated_nodes_form_a_hierarchy_with_tracks_resolved_last),
        cmocka_unit_test(aff_includes_splice_files_and_materials_leak),
        cmocka_unit_test(aff_include_cycle_is_an_error),
        cmocka_unit_test(aff_lexer_takes_crlf_comments_and_strtod_numbers),
        cmocka_unit_test(aff_view_background_ambient_lights),
        cmocka_unit_test(aff_identical_materials_are_shared),
        cmocka_unit_test(aff_empty_file_loads_nothing),
        cmocka_unit_test(aff_malformed_inputs_give_file_line_errors),
        cmocka_unit_test(aff_unclosed_block_is_an_error),
        cmocka_unit_test(aff_missing_file_is_an_io_error),
        cmocka_unit_test(aff_failed_load_rolls_the_scene_back),
        cmocka_unit_test(aff_truncated_and_corrupted_files_never_crash),
        cmocka_unit_test(aff_kitchen_loads_with_its_counts_and_test_vectors),
        cmocka_unit_test(aff_robots_load_with_their_counts_and_test_vectors),
        cmocka_unit_test(aff_kitchen_renders_as_the_oracle_at_start_and_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
