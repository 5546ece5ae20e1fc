/* test_runners.c — the procedural dynamic scenes of runners.h: runner size
 * and structure, n = 0 and 1, determinism, that runners stand on the floor,
 * stay inside the scene, really walk (limbs move against the torso) and
 * loop seamlessly over the default period; the field and the wave grid
 * (counts, motion, bad sizes). Motion is checked through rt_scene_frame_at,
 * the CPU evaluation every stage uses. */
#include "test_util.h"
#include "scene/load.h"

#include "scene/primitives.h"
#include "scene/runners.h"
#include "scene/scene.h"

#include <sys/resource.h>
#include <sys/wait.h>

/* A 20 x 20 floor at y = -1 with a camera: a scene to add runners to. */
static void floor_scene(RtScene *s)
{
    rt_scene_init(s);
    RtError err = {0};
    float m[12];
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(10, 1, 10));
    rt_mat34_translate(m, v3(0, -1, 0));
    assert_int_equal(rt_prim_quad(s, m, -1, "floor", &err), RT_OK);
}

static const RtObject *find_object(const RtScene *s, const char *name)
{
    for (uint32_t i = 0; i < s->object_count; i++)
        if (!strcmp(s->objects[i].name, name)) return &s->objects[i];
    fail_msg("no object '%s'", name);
    return NULL;
}

/* Centroid (world space, in frame f) of an object's vertices. */
static RtVec3 centroid(const RtScene *view, const RtObject *o)
{
    RtVec3 c = v3(0, 0, 0);
    uint32_t n = 0;
    for (uint32_t t = o->first_tri; t < o->first_tri + o->tri_count; t++)
        for (int k = 0; k < 3; k++, n++) c = v3_add(c, view->verts[view->tris[t].v[k]].p);
    return v3_scale(c, 1.0f / (float)n);
}

static RtAabb object_bounds(const RtScene *view, uint32_t first_tri, uint32_t tri_count)
{
    RtAabb b = aabb_empty();
    for (uint32_t t = first_tri; t < first_tri + tri_count; t++)
        for (int k = 0; k < 3; k++) b = aabb_grow(b, view->verts[view->tris[t].v[k]].p);
    return b;
}

static void frame(const RtScene *s, float t, RtSceneFrame *f)
{
    RtError err = {0};
    RtStatus st = rt_scene_frame_at(s, t, f, &err);
    if (st != RT_OK) fail_msg("%s", err.msg);
}

/* ---- runners -------------------------------------------------------------- */

static void runners_have_about_78k_triangles_and_their_own_hierarchy(void **state)
{
    (void)state;
    uint32_t per = rt_runner_tri_count();
    print_message("one runner: %u triangles\n", per);
    assert_in_range(per, 70000, 90000);

    RtScene s;
    floor_scene(&s);
    RtError err = {0};
    assert_int_equal(rt_scene_add_runners(&s, 1, &err), RT_OK);
    assert_int_equal(s.tri_count, 2 + per);
    /* root orbit, heading spin, pelvis bounce, 8 keyframed joints */
    assert_int_equal(s.anim.node_count, 11);
    assert_int_equal(s.anim.track_count, 8);
    assert_int_equal(s.anim.nodes[0].kind, RT_NODE_ORBIT);
    assert_int_equal(s.anim.nodes[0].parent, -1);
    uint32_t tracks = 0;
    for (uint32_t i = 1; i < s.anim.node_count; i++) {
        assert_true(s.anim.nodes[i].parent >= 0 && (uint32_t)s.anim.nodes[i].parent < i);
        tracks += s.anim.nodes[i].kind == RT_NODE_TRACK;
        if (s.anim.nodes[i].kind == RT_NODE_TRACK) assert_true(s.anim.tracks[s.anim.nodes[i].track].rot.count >= 4);
    }
    assert_int_equal(tracks, 8);
    assert_true(rt_anim_is_dynamic(&s.anim));
    /* every runner vertex hangs on a node, the floor stays static */
    assert_non_null(s.anim.vert_node);
    assert_int_equal(s.anim.vert_node[0], RT_ANIM_STATIC);
    for (uint32_t v = 4; v < s.vert_count; v++) assert_true(s.anim.vert_node[v] < s.anim.node_count);
    find_object(&s, "runner0/torso");
    find_object(&s, "runner0/left shin");
    assert_int_equal(rt_scene_finish(&s, &err), RT_OK);
    rt_scene_free(&s);
}

static void runners_zero_adds_nothing_and_negative_is_an_error(void **state)
{
    (void)state;
    RtScene s;
    floor_scene(&s);
    RtError err = {0};
    assert_int_equal(rt_scene_add_runners(&s, 0, &err), RT_OK);
    assert_int_equal(s.tri_count, 2);
    assert_int_equal(s.mat_count, 0);
    assert_int_equal(s.anim.node_count, 0);
    assert_int_equal(rt_scene_add_runners(&s, -1, &err), RT_ERR_ARG);
    rt_test_assert_contains(err.msg, "runner count");
    assert_int_equal(s.tri_count, 2);
    rt_scene_free(&s);
}

static void runners_are_deterministic(void **state)
{
    (void)state;
    RtScene a, b;
    RtError err = {0};
    floor_scene(&a);
    floor_scene(&b);
    assert_int_equal(rt_scene_add_runners(&a, 3, &err), RT_OK);
    assert_int_equal(rt_scene_add_runners(&b, 3, &err), RT_OK);
    assert_int_equal(a.vert_count, b.vert_count);
    assert_int_equal(a.tri_count, 2 + 3 * rt_runner_tri_count());
    assert_memory_equal(a.verts, b.verts, a.vert_count * sizeof *a.verts);
    assert_memory_equal(a.tris, b.tris, a.tri_count * sizeof *a.tris);
    assert_int_equal(a.anim.node_count, 33);
    assert_memory_equal(a.anim.nodes, b.anim.nodes, a.anim.node_count * sizeof *a.anim.nodes);
    for (uint32_t i = 0; i < a.anim.track_count; i++) {
        assert_int_equal(a.anim.tracks[i].rot.count, b.anim.tracks[i].rot.count);
        assert_memory_equal(a.anim.tracks[i].rot.keys, b.anim.tracks[i].rot.keys,
                            a.anim.tracks[i].rot.count * sizeof(RtKbKey));
    }
    /* ...and different runners differ: other paths (radius or phase) */
    const RtAnimNode *r0 = &a.anim.nodes[0], *r1 = &a.anim.nodes[11];
    assert_int_equal(r1->kind, RT_NODE_ORBIT);
    assert_true(r0->p[3] != r1->p[3] || r0->p[5] != r1->p[5]);
    rt_scene_free(&a);
    rt_scene_free(&b);
}

static void runners_walk_on_the_floor_inside_the_scene(void **state)
{
    (void)state;
    RtScene s;
    floor_scene(&s);
    RtError err = {0};
    assert_int_equal(rt_scene_add_runners(&s, 4, &err), RT_OK);
    assert_int_equal(rt_scene_finish(&s, &err), RT_OK);
    uint32_t per = rt_runner_tri_count();
    RtSceneFrame f0, f1;
    memset(&f0, 0, sizeof f0);
    memset(&f1, 0, sizeof f1);
    frame(&s, 0.0f, &f0);
    float height = 0.0f;
    for (int r = 0; r < 4; r++) {
        RtAabb b0 = object_bounds(&f0.view, 2 + r * per, per);
        height = b0.hi.y - b0.lo.y;
        /* on the floor (y = -1): the lowest sole within a few % of H of it */
        assert_true(b0.lo.y > -1.0f - 0.03f * height && b0.lo.y < -1.0f + 0.08f * height);
        /* inside the floor's 20 x 20 */
        assert_true(b0.lo.x > -10.0f && b0.hi.x < 10.0f && b0.lo.z > -10.0f && b0.hi.z < 10.0f);
    }
    print_message("runner height %.2f on a 20-unit floor\n", height);
    assert_true(height > 1.0f && height < 4.0f);

    /* Over half a second each runner moves along its path, and its limbs
     * move against each other (the path and heading move a runner
     * rigidly, so only the joints change these distances): the feet part
     * and close, so do the hands. */
    frame(&s, 0.5f, &f1);
    for (int r = 0; r < 4; r++) {
        char name[64];
        snprintf(name, sizeof name, "runner%d/torso", r);
        const RtObject *torso = find_object(&s, name);
        assert_true(v3_len(v3_sub(centroid(&f1.view, torso), centroid(&f0.view, torso))) > 0.2f * height);
        static const char *pairs[2][2] = {{"left foot", "right foot"}, {"left forearm", "right forearm"}};
        for (int p = 0; p < 2; p++) {
            const RtObject *o[2];
            for (int k = 0; k < 2; k++) {
                snprintf(name, sizeof name, "runner%d/%s", r, pairs[p][k]);
                o[k] = find_object(&s, name);
            }
            float lo = INFINITY, hi = 0.0f;
            for (int step = 0; step <= 8; step++) {
                RtSceneFrame *f = step == 0 ? &f0 : &f1;
                if (step > 0) frame(&s, 0.5f * (float)step / 8.0f, f);
                float d = v3_len(v3_sub(centroid(&f->view, o[0]), centroid(&f->view, o[1])));
                lo = fminf(lo, d), hi = fmaxf(hi, d);
            }
            if (!(hi - lo > (p == 0 ? 0.1f : 0.05f) * height))
                fail_msg("runner %d: %s and %s stay %g..%g apart", r, pairs[p][0], pairs[p][1], (double)lo, (double)hi);
        }
    }
    rt_scene_frame_free(&f0);
    rt_scene_frame_free(&f1);
    rt_scene_free(&s);
}

static void runners_face_where_they_go(void **state)
{
    (void)state;
    RtScene s;
    floor_scene(&s);
    RtError err = {0};
    assert_int_equal(rt_scene_add_runners(&s, 5, &err), RT_OK);
    uint32_t n = s.anim.node_count;
    float *w0 = malloc(n * 12 * sizeof *w0), *w1 = malloc(n * 12 * sizeof *w1);
    uint8_t *vis = malloc(n);
    for (float t = 0.0f; t < 10.0f; t += 1.7f) {
        rt_anim_eval_nodes(&s.anim, t, w0, vis);
        rt_anim_eval_nodes(&s.anim, t + 0.01f, w1, vis);
        for (uint32_t r = 0; r < 5; r++) {
            const float *h0 = &w0[12 * (11 * r + 1)], *h1 = &w1[12 * (11 * r + 1)]; /* heading nodes */
            RtVec3 vel = v3_norm(v3(h1[3] - h0[3], h1[7] - h0[7], h1[11] - h0[11]));
            RtVec3 fwd = v3(h0[2], h0[6], h0[10]); /* the figure's +z */
            if (!(v3_dot(vel, fwd) > 0.99f))
                fail_msg("runner %u at t=%g faces (%g %g %g), goes (%g %g %g)", r, (double)t, (double)fwd.x,
                         (double)fwd.y, (double)fwd.z, (double)vel.x, (double)vel.y, (double)vel.z);
        }
    }
    free(w0), free(w1), free(vis);
    rt_scene_free(&s);
}

static void runners_loop_seamlessly_over_the_default_period(void **state)
{
    (void)state;
    RtScene s;
    floor_scene(&s);
    RtError err = {0};
    assert_int_equal(rt_scene_add_runners(&s, 2, &err), RT_OK);
    float t0, t1;
    rt_scene_time_range(&s, &t0, &t1);
    assert_float_equal(t0, 0.0f, 0.0f);
    assert_float_equal(t1, RT_ANIM_DEFAULT_PERIOD, 0.0f);
    RtSceneFrame a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    frame(&s, 0.0f, &a);
    frame(&s, RT_ANIM_DEFAULT_PERIOD, &b);
    float worst = 0.0f;
    for (uint32_t v = 0; v < s.vert_count; v++) worst = fmaxf(worst, v3_len(v3_sub(a.view.verts[v].p, b.view.verts[v].p)));
    print_message("largest jump at the loop: %g units\n", (double)worst);
    assert_true(worst < 0.02f);
    rt_scene_frame_free(&a);
    rt_scene_frame_free(&b);
    rt_scene_free(&s);
}

/* Lowest point of runner r (all runners follow the scene's first `skip`
 * triangles) at time t. */
static float runner_low(const RtScene *s, uint32_t skip, int r, float t)
{
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    frame(s, t, &f);
    uint32_t per = rt_runner_tri_count();
    float lo = object_bounds(&f.view, skip + (uint32_t)r * per, per).lo.y;
    rt_scene_frame_free(&f);
    return lo;
}

static void runners_stand_on_the_floor_not_on_a_hidden_plane_below(void **state)
{
    (void)state;
    /* a ground plane under everything (as under Sponza), a floor 2 units
     * above it covering the middle, and a roof giving the scene height */
    RtScene s;
    rt_scene_init(&s);
    RtError err = {0};
    float m[12];
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(20, 1, 12));
    rt_mat34_translate(m, v3(0, -2, 0));
    assert_int_equal(rt_prim_quad(&s, m, -1, "ground", &err), RT_OK);
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(14, 1, 8));
    assert_int_equal(rt_prim_quad(&s, m, -1, "floor", &err), RT_OK);
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(14, 1, 8));
    rt_mat34_rotate(m, v3(1, 0, 0), 180);
    rt_mat34_translate(m, v3(0, 14, 0));
    assert_int_equal(rt_prim_quad(&s, m, -1, "roof", &err), RT_OK);
    assert_int_equal(rt_scene_add_runners(&s, 3, &err), RT_OK);
    for (int r = 0; r < 3; r++) {
        float lo = runner_low(&s, 6, r, 0.3f);
        if (!(lo > -0.1f && lo < 0.2f)) fail_msg("runner %d's lowest point is at y = %g, not on the floor y = 0", r, (double)lo);
    }
    rt_scene_free(&s);
}

static void runners_in_sponza(void **state)
{
    (void)state;
    char buf[1024];
    const char *path = rt_test_asset("sponza/sponza.obj", buf);
    if (!path) skip();
    RtScene s;
    RtError err = {0};
    rt_log_set_level(RT_LOG_NONE);
    RtStatus st = rt_scene_load(path, &s, &err);
    rt_log_set_level(RT_LOG_WARN);
    if (st != RT_OK) fail_msg("%s", err.msg);
    uint32_t skip_tris = s.tri_count;
    assert_int_equal(rt_scene_add_runners(&s, 2, &err), RT_OK);
    /* Sponza's hall floor is at y = -0.25 (its bounds reach -12.6); a
     * person there is ~17 units tall (the hall is ~155 high) */
    for (int r = 0; r < 2; r++) {
        float lo = runner_low(&s, skip_tris, r, 0.0f);
        assert_true(lo > -1.5f && lo < 1.0f);
    }
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    frame(&s, 0.0f, &f);
    RtAabb b = object_bounds(&f.view, skip_tris, rt_runner_tri_count());
    print_message("runner in Sponza: %.1f tall, feet at y = %.2f\n", (double)(b.hi.y - b.lo.y), (double)b.lo.y);
    assert_true(b.hi.y - b.lo.y > 12.0f && b.hi.y - b.lo.y < 25.0f);
    rt_scene_frame_free(&f);
    rt_scene_free(&s);
}

static void runners_on_an_empty_scene_stand_on_y_zero(void **state)
{
    (void)state;
    RtScene s;
    rt_scene_init(&s);
    RtError err = {0};
    assert_int_equal(rt_scene_add_runners(&s, 1, &err), RT_OK);
    assert_int_equal(rt_scene_finish(&s, &err), RT_OK);
    RtAabb b = rt_scene_bounds(&s);
    assert_true(fabsf(b.lo.y) < 0.1f);
    assert_true(b.hi.y > 1.0f);
    rt_scene_free(&s);
}

/* ---- the field --------------------------------------------------------------- */

static void field_counts_motion_and_view(void **state)
{
    (void)state;
    static const int sizes[] = {0, 1, 7, 50};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int n = sizes[k];
        RtScene s;
        rt_scene_init(&s);
        RtError err = {0};
        assert_int_equal(rt_scene_make_field(&s, n, &err), RT_OK);
        assert_int_equal(s.tri_count, rt_field_tri_count(n));
        assert_int_equal(s.object_count, 1 + (uint32_t)n);
        assert_int_equal(s.has_camera, 1);
        assert_int_equal(s.light_count, 2);
        assert_int_equal(rt_scene_finish(&s, &err), RT_OK);
        RtSceneFrame a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        frame(&s, 0.0f, &a);
        frame(&s, 0.7f, &b);
        for (int i = 0; i < n; i++) { /* every object moves */
            const RtObject *o = &s.objects[1 + i];
            float moved = 0.0f;
            for (uint32_t t = o->first_tri; t < o->first_tri + o->tri_count; t++) {
                uint32_t v = s.tris[t].v[0];
                moved = fmaxf(moved, v3_len(v3_sub(a.view.verts[v].p, b.view.verts[v].p)));
            }
            if (!(moved > 0.01f)) fail_msg("field object %d of %d does not move (%g)", i, n, (double)moved);
        }
        rt_scene_frame_free(&a);
        rt_scene_frame_free(&b);
        rt_scene_free(&s);
    }
    assert_int_equal(rt_field_tri_count(1), 2 + 12);
    assert_int_equal(rt_field_tri_count(2), 2 + 12 + rt_prim_sphere_tri_count(24));

    /* a scene with its own camera keeps it; bad counts are errors */
    RtScene s;
    rt_scene_init(&s);
    s.has_camera = 1;
    s.camera.pos = v3(1, 2, 3);
    RtError err = {0};
    assert_int_equal(rt_scene_make_field(&s, 3, &err), RT_OK);
    assert_float_equal(s.camera.pos.z, 3.0f, 0.0f);
    assert_int_equal(rt_scene_make_field(&s, -1, &err), RT_ERR_ARG);
    rt_test_assert_contains(err.msg, "object count");
    rt_scene_free(&s);
}

static void field_is_deterministic(void **state)
{
    (void)state;
    RtScene a, b;
    RtError err = {0};
    rt_scene_init(&a);
    rt_scene_init(&b);
    assert_int_equal(rt_scene_make_field(&a, 20, &err), RT_OK);
    assert_int_equal(rt_scene_make_field(&b, 20, &err), RT_OK);
    assert_memory_equal(a.verts, b.verts, a.vert_count * sizeof *a.verts);
    assert_memory_equal(a.anim.nodes, b.anim.nodes, a.anim.node_count * sizeof *a.anim.nodes);
    rt_scene_free(&a);
    rt_scene_free(&b);
}

/* ---- the wave grid ------------------------------------------------------------ */

static void wave_sizes_and_errors(void **state)
{
    (void)state;
    RtScene s;
    rt_scene_init(&s);
    RtError err = {0};
    assert_int_equal(rt_scene_make_wave(&s, 0, &err), RT_ERR_ARG);
    rt_test_assert_contains(err.msg, "triangle count >= 2");
    assert_int_equal(rt_scene_make_wave(&s, 1, &err), RT_ERR_ARG);
    assert_int_equal(rt_scene_make_wave(&s, RT_WAVE_MAX_TRIS + 1, &err), RT_ERR_OOM);
    rt_test_assert_contains(err.msg, "more than a wave grid may have");
    assert_int_equal(s.tri_count, 0);
    assert_int_equal(s.mat_count, 0);
    assert_int_equal(s.anim.deform_count, 0);
    assert_int_equal(rt_wave_tri_count(0), 0);
    assert_int_equal(rt_wave_tri_count(2), 2);
    assert_int_equal(rt_wave_tri_count(3), 2);

    static const uint32_t sizes[] = {2, 1000, 54321};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        rt_scene_init(&s);
        assert_int_equal(rt_scene_make_wave(&s, sizes[k], &err), RT_OK);
        assert_int_equal(s.tri_count, rt_wave_tri_count(sizes[k]));
        assert_true(fabs((double)s.tri_count - sizes[k]) <= 0.1 * sizes[k] + 2);
        assert_int_equal(s.anim.deform_count, 2);
        assert_int_equal(s.anim.deforms[0].vert_count, s.vert_count);
        assert_int_equal(rt_scene_finish(&s, &err), RT_OK);
        assert_int_equal(s.zero_area, 0);
        /* flat at rest, facing up; waving at t > 0 with unit normals */
        RtSceneFrame f;
        memset(&f, 0, sizeof f);
        frame(&s, 0.3f, &f);
        float ymax = 0.0f;
        for (uint32_t v = 0; v < s.vert_count; v++) {
            assert_float_equal(s.verts[v].p.y, 0.0f, 0.0f);
            ymax = fmaxf(ymax, fabsf(f.view.verts[v].p.y));
            assert_float_equal(v3_len(f.view.verts[v].n), 1.0f, 1e-4f);
            assert_true(f.view.verts[v].n.y > 0.5f);
        }
        if (sizes[k] > 100) assert_true(ymax > 0.05f && ymax <= 0.37f + 1e-4f);
        const RtTriangle *t = &s.tris[0];
        RtVec3 n = v3_cross(v3_sub(s.verts[t->v[1]].p, s.verts[t->v[0]].p),
                            v3_sub(s.verts[t->v[2]].p, s.verts[t->v[0]].p));
        assert_true(n.y > 0.0f); /* counter-clockwise seen from above */
        rt_scene_frame_free(&f);
        rt_scene_free(&s);
    }
}

/* Past 2^31 triangles: refused before anything is allocated. */
static void generators_refuse_past_2_31_triangles(void **state)
{
    (void)state;
    RtScene s;
    floor_scene(&s);
    uint32_t tris = s.tri_count;
    RtError err = {0};
    assert_int_equal(rt_scene_add_runners(&s, 30000, &err), RT_ERR_OOM);
    rt_test_assert_contains(err.msg, "30000 runners (2346720000 triangles)");
    rt_test_assert_contains(err.msg, "pass the limit of 2^31");
    assert_int_equal(s.tri_count, tris);
    rt_scene_free(&s);
}

/* Under `ulimit -v` (256 MB above what the process holds): 1000 runners,
 * a million field objects and the largest wave grid are refused with the
 * numbers and leave the scene as it was; one runner still fits. In a
 * child, so the limit ends with it. ASan reserves terabytes of shadow
 * address space, which makes RLIMIT_AS meaningless there: skipped. */
#if defined(__SANITIZE_ADDRESS__)
#define RT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RT_TEST_ASAN 1
#endif
#endif
static void generators_refuse_what_host_memory_cannot_hold(void **state)
{
    (void)state;
#ifdef RT_TEST_ASAN
    print_message("skip: RLIMIT_AS under AddressSanitizer\n");
    skip();
#else
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        RtScene s;
        floor_scene(&s);
        uint32_t tris = s.tri_count;
        const char *why;
        uint64_t before = rt_host_memory_available(&why);
        FILE *f = fopen("/proc/self/status", "r");
        char line[256];
        unsigned long long vm_kb = 0;
        while (f && fgets(line, sizeof line, f))
            if (!strncmp(line, "VmSize:", 7)) vm_kb = strtoull(line + 7, NULL, 10);
        if (f) fclose(f);
        struct rlimit lim = {(rlim_t)(vm_kb * 1024 + (256u << 20)), RLIM_INFINITY};
        if (vm_kb == 0 || setrlimit(RLIMIT_AS, &lim) != 0) _exit(10);
        uint64_t avail = rt_host_memory_available(&why);
        if (strcmp(why, "ulimit -v") || avail > (256u << 20) || avail > before) _exit(11);
        RtError err = {0};
        if (rt_scene_add_runners(&s, 1000, &err) != RT_ERR_OOM) _exit(12);
        printf("%s\n", err.msg);
        if (!strstr(err.msg, "1000 runners (78224000 triangles)") || !strstr(err.msg, "(ulimit -v): at most 1") ||
            !strstr(err.msg, "GB of host memory"))
            _exit(13);
        if (rt_scene_make_field(&s, RT_FIELD_MAX, &err) != RT_ERR_OOM || !strstr(err.msg, "field objects")) _exit(14);
        printf("%s\n", err.msg);
        if (rt_scene_make_wave(&s, RT_WAVE_MAX_TRIS, &err) != RT_ERR_OOM || !strstr(err.msg, "wave grid triangles"))
            _exit(15);
        printf("%s\n", err.msg);
        if (s.tri_count != tris) _exit(16);
        if (rt_scene_add_runners(&s, 1, &err) != RT_OK) _exit(17);
        rt_scene_free(&s);
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("child: %s %d (see the source for the step)", WIFEXITED(status) ? "exit" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
#endif
}

static void wave_of_a_million_triangles(void **state)
{
    (void)state;
    RtScene s;
    rt_scene_init(&s);
    RtError err = {0};
    double t0 = rt_now_ms();
    assert_int_equal(rt_scene_make_wave(&s, 1000000, &err), RT_OK);
    print_message("1M-triangle wave grid: %u triangles in %.0f ms\n", s.tri_count, rt_now_ms() - t0);
    assert_in_range(s.tri_count, 990000, 1010000);
    rt_scene_free(&s);
}

int main(void)
{
    rt_log_set_level(RT_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runners_have_about_78k_triangles_and_their_own_hierarchy),
        cmocka_unit_test(runners_zero_adds_nothing_and_negative_is_an_error),
        cmocka_unit_test(runners_are_deterministic),
        cmocka_unit_test(runners_walk_on_the_floor_inside_the_scene),
        cmocka_unit_test(runners_face_where_they_go),
        cmocka_unit_test(runners_loop_seamlessly_over_the_default_period),
        cmocka_unit_test(runners_stand_on_the_floor_not_on_a_hidden_plane_below),
        cmocka_unit_test(runners_in_sponza),
        cmocka_unit_test(runners_on_an_empty_scene_stand_on_y_zero),
        cmocka_unit_test(field_counts_motion_and_view),
        cmocka_unit_test(field_is_deterministic),
        cmocka_unit_test(wave_sizes_and_errors),
        cmocka_unit_test(generators_refuse_past_2_31_triangles),
        cmocka_unit_test(generators_refuse_what_host_memory_cannot_hold),
        cmocka_unit_test(wave_of_a_million_triangles),
    };
    return cmocka_run_group_tests_name("runners", tests, NULL, NULL);
}
