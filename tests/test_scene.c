/* test_scene.c — what rt_scene_finish gives a file that has no camera or
 * no lights (scene/scene.c): a view that sees the model (a flat one
 * face-on), a warning when it still sees nothing, and lights that reach
 * both the framed view and a camera inside the model. Hits are checked
 * by brute force against every triangle (core/isect.h); lighting with the
 * CPU renderer, the oracle. */
#include "test_util.h"

#include <fcntl.h>
#include <math.h>

#include "core/camera.h"
#include "core/isect.h"
#include "render/render_cpu.h"
#include "scene/scene.h"

static void add_tri(RtScene *s, RtVec3 a, RtVec3 b, RtVec3 c)
{
    RtVertex v[3] = {{a, {0, 0, 0}, 0, 0}, {b, {0, 0, 0}, 0, 0}, {c, {0, 0, 0}, 0, 0}};
    uint32_t i0 = s->vert_count;
    for (int k = 0; k < 3; k++) assert_true(rt_scene_add_vertex(s, v[k]) >= 0);
    RtTriangle t = {{i0, i0 + 1, i0 + 2}, -1, 0};
    assert_true(rt_scene_add_triangle(s, t) >= 0);
}

/* A ring (annulus) of n segments, radii ri..ro, around c, in the plane
 * spanned by unit vectors e1, e2. */
static void add_ring(RtScene *s, RtVec3 c, RtVec3 e1, RtVec3 e2, float ri, float ro, int n)
{
    for (int i = 0; i < n; i++) {
        float a0 = 2 * (float)M_PI * i / n, a1 = 2 * (float)M_PI * (i + 1) / n;
        RtVec3 d0 = v3_add(v3_scale(e1, cosf(a0)), v3_scale(e2, sinf(a0)));
        RtVec3 d1 = v3_add(v3_scale(e1, cosf(a1)), v3_scale(e2, sinf(a1)));
        RtVec3 i0 = v3_add(c, v3_scale(d0, ri)), i1 = v3_add(c, v3_scale(d1, ri));
        RtVec3 o0 = v3_add(c, v3_scale(d0, ro)), o1 = v3_add(c, v3_scale(d1, ro));
        add_tri(s, i0, o0, o1);
        add_tri(s, i0, o1, i1);
    }
}

/* Fraction of the pixels of the image's middle third (w x h image) whose
 * ray from the scene's camera hits a triangle. */
static double centre_hits(const RtScene *s, int w, int h)
{
    RtCameraBasis b = rt_camera_basis(s->camera, w, h);
    int hits = 0, total = 0;
    for (int y = h / 3; y < 2 * h / 3; y++)
        for (int x = w / 3; x < 2 * w / 3; x++) {
            RtVec3 d = rt_camera_dir(&b, x + 0.5f, y + 0.5f);
            int hit = 0;
            for (uint32_t i = 0; i < s->tri_count && !hit; i++) {
                const RtTriangle *t = &s->tris[i];
                float tt, u, v;
                hit = rt_isect_mt(s->verts[t->v[0]].p, s->verts[t->v[1]].p, s->verts[t->v[2]].p, b.o, d, 0.0f,
                                  INFINITY, &tt, &u, &v);
            }
            hits += hit;
            total++;
        }
    return (double)hits / total;
}

/* stderr of fn(s) captured; caller frees. */
static char *finish_captured(RtScene *s, RtStatus *st)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/rt_test_scene_%d.log", (int)getpid());
    fflush(stderr);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600), saved = dup(2);
    dup2(fd, 2);
    close(fd);
    RtError err = {0};
    *st = rt_scene_finish(s, &err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(path, "rb");
    char *text = calloc(1, 8192);
    size_t n = fread(text, 1, 8191, f);
    text[n] = '\0';
    fclose(f);
    unlink(path);
    return text;
}

/* The case: a flat ring in the plane x = -1.1, which the old +z
 * framing saw edge-on (a blank image). Framed, most centre pixels hit it;
 * the same for rings flat in y and z, of 1 segment pair up to 256. */
static void scene_flat_ring_is_framed_face_on(void **state)
{
    (void)state;
    const int sizes[] = {3, 64, 256};
    RtVec3 axes[3] = {v3(1, 0, 0), v3(0, 1, 0), v3(0, 0, 1)};
    for (int a = 0; a < 3; a++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            RtScene s;
            rt_scene_init(&s);
            RtVec3 c = v3(0.3f, -0.4f, 0.2f);
            if (a == 0) c.x = -1.1f;
            RtVec3 e1 = axes[(a + 1) % 3], e2 = axes[(a + 2) % 3];
            add_ring(&s, c, e1, e2, 0.3f, 1.0f, sizes[k]);
            RtStatus st;
            char *log = finish_captured(&s, &st);
            assert_int_equal(st, RT_OK);
            if (strstr(log, "shows no geometry")) fail_msg("axis %d, n %d: %s", a, sizes[k], log);
            free(log);
            double f = centre_hits(&s, 96, 72);
            print_message("ring flat in %c, %d segments: %.0f%% of the centre pixels hit\n", "xyz"[a], sizes[k], 100 * f);
            if (f < 0.5) fail_msg("ring flat in %c (%d segments): only %.0f%% of the centre pixels hit", "xyz"[a],
                                  sizes[k], 100 * f);
            rt_scene_free(&s);
        }
}

/* Sizes 0, 1 and random: no triangle is an error; one triangle flat in
 * x = -1.1 is hit at the centre; random soups flat in a random axis plane
 * are seen (no warning, the centre pixel region hit). */
static void scene_framing_sizes_zero_one_and_random(void **state)
{
    (void)state;
    RtScene s;
    rt_scene_init(&s);
    RtError err = {0};
    assert_int_equal(rt_scene_finish(&s, &err), RT_ERR_EMPTY);
    rt_scene_free(&s);

    rt_scene_init(&s);
    add_tri(&s, v3(-1.1f, -1, -1), v3(-1.1f, 2, 0.5f), v3(-1.1f, -1, 2));
    assert_int_equal(rt_scene_finish(&s, &err), RT_OK);
    assert_true(centre_hits(&s, 9, 9) > 0.3);
    rt_scene_free(&s);

    RtTestRng rng = {31337};
    for (int round = 0; round < 12; round++) {
        rt_scene_init(&s);
        int axis = round % 3, n = 1 + (int)(rt_test_rand(&rng) % 300);
        float plane = rt_test_randf(&rng) * 10 - 5;
        for (int i = 0; i < n; i++) {
            RtVec3 p[3];
            for (int k = 0; k < 3; k++) {
                float q[3] = {rt_test_randf(&rng) * 4 - 2, rt_test_randf(&rng) * 4 - 2, rt_test_randf(&rng) * 4 - 2};
                q[axis] = plane;
                p[k] = v3(q[0], q[1], q[2]);
            }
            add_tri(&s, p[0], p[1], p[2]);
        }
        RtStatus st;
        char *log = finish_captured(&s, &st);
        assert_int_equal(st, RT_OK);
        if (strstr(log, "shows no geometry")) fail_msg("round %d: %s", round, log);
        free(log);
        assert_true(centre_hits(&s, 30, 30) > 0.0);
        /* looking across the plane, not along it */
        RtVec3 fwd = v3_norm(v3_sub(s.camera.look, s.camera.pos));
        assert_true(fabsf(v3_get(fwd, axis)) > 0.9f);
        rt_scene_free(&s);
    }
}

/* An ordinary model keeps the front view (+z, a bit above), so framing of
 * existing scenes does not move: bounds shaped like Sponza's. */
static void scene_ordinary_bounds_keep_the_front_view(void **state)
{
    (void)state;
    RtScene s;
    rt_scene_init(&s);
    add_tri(&s, v3(-15, 0, -9), v3(15, 0, -9), v3(-15, 12, 9));
    add_tri(&s, v3(15, 12, 9), v3(15, 0, -9), v3(-15, 12, 9));
    RtError err = {0};
    assert_int_equal(rt_scene_finish(&s, &err), RT_OK);
    float r = 0.5f * sqrtf(30 * 30 + 12 * 12 + 18 * 18);
    assert_true(fabsf(s.camera.pos.x - 0.0f) < 1e-4f);
    assert_true(fabsf(s.camera.pos.y - (6 + 0.35f * r)) < 1e-3f);
    assert_true(fabsf(s.camera.pos.z - 2 * r) < 1e-3f);
    rt_scene_free(&s);
}

/* A needle seen from any side covers less than a pixel: finish says so
 * with a SCENE: warning (and still succeeds). */
static void scene_framed_view_showing_nothing_warns(void **state)
{
    (void)state;
    RtScene s;
    rt_scene_init(&s);
    add_tri(&s, v3(0, 0, 0), v3(1, 0, 0), v3(0.5f, 2e-6f, 2e-6f));
    RtStatus st;
    char *log = finish_captured(&s, &st);
    assert_int_equal(st, RT_OK);
    rt_test_assert_contains(log, "SCENE: warning: ");
    rt_test_assert_contains(log, "the framed view shows no geometry");
    free(log);
    rt_scene_free(&s);
}

/* A closed box, triangles wound outward, walls 4 x 3 x 4. */
static void add_box(RtScene *s, RtVec3 lo, RtVec3 hi)
{
    RtVec3 p[8];
    for (int i = 0; i < 8; i++) p[i] = v3(i & 1 ? hi.x : lo.x, i & 2 ? hi.y : lo.y, i & 4 ? hi.z : lo.z);
    static const int q[6][4] = {{0, 2, 3, 1}, {4, 5, 7, 6}, {0, 1, 5, 4}, {2, 6, 7, 3}, {0, 4, 6, 2}, {1, 3, 7, 5}};
    for (int f = 0; f < 6; f++) {
        add_tri(s, p[q[f][0]], p[q[f][1]], p[q[f][2]]);
        add_tri(s, p[q[f][0]], p[q[f][2]], p[q[f][3]]);
    }
}

/* Mean sRGB byte of a render of s from cam, and the fraction of pixels
 * brighter than ambient alone would make them. */
static double render_mean(const RtScene *s, const RtCamera *cam, int w, int h, double *lit_frac)
{
    RtTriArrays tris;
    assert_int_equal(rt_tri_arrays_make(s, &tris, NULL), RT_OK);
    RtRenderParams p = rt_render_params_default();
    p.brute_force = 1;
    RtImage img, dark;
    RtError err = {0};
    assert_int_equal(rt_image_alloc(&img, w, h), RT_OK);
    assert_int_equal(rt_image_alloc(&dark, w, h), RT_OK);
    assert_int_equal(rt_render_cpu(s, &tris, NULL, NULL, cam, &p, &img, NULL, NULL, &err), RT_OK);
    RtScene unlit = *s;
    unlit.light_count = 0;
    assert_int_equal(rt_render_cpu(&unlit, &tris, NULL, NULL, cam, &p, &dark, NULL, NULL, &err), RT_OK);
    double sum = 0;
    int lit = 0;
    for (int i = 0; i < w * h; i++) {
        int a = 0, b = 0;
        for (int c = 0; c < 3; c++) a += img.rgba[4 * i + c], b += dark.rgba[4 * i + c];
        sum += a / 3.0;
        lit += a > b + 30;
    }
    *lit_frac = (double)lit / (w * h);
    rt_image_free(&img);
    rt_image_free(&dark);
    rt_tri_arrays_free(&tris);
    return sum / (w * h);
}

/* A file without lights, seen from inside (as Sponza with --camera): the
 * light inside the bounds lights the walls; the headlight lights the box
 * from outside in the framed view. */
static void scene_without_lights_is_lit_inside_and_out(void **state)
{
    (void)state;
    RtScene s;
    rt_scene_init(&s);
    add_box(&s, v3(-2, 0, -2), v3(2, 3, 2));
    RtError err = {0};
    assert_int_equal(rt_scene_finish(&s, &err), RT_OK);
    assert_int_equal(s.light_count, 2);
    RtAabb b = rt_scene_bounds(&s);
    int inside = 0;
    for (uint32_t i = 0; i < s.light_count; i++) {
        RtVec3 p = s.lights[i].v;
        inside += p.x > b.lo.x && p.x < b.hi.x && p.y > b.lo.y && p.y < b.hi.y && p.z > b.lo.z && p.z < b.hi.z;
    }
    assert_int_equal(inside, 1);
    RtCamera cams[3] = {
        {v3(0, 1.5f, 1.5f), v3(0, 1.2f, -2), v3(0, 1, 0), 70},   /* inside, looking at a wall and the floor */
        {v3(-1.5f, 0.5f, -1.5f), v3(1, 2, 1), v3(0, 1, 0), 90},  /* inside, a corner looking up across */
        s.camera,                                                /* the framed view, outside */
    };
    for (int k = 0; k < 3; k++) {
        double lit;
        double mean = render_mean(&s, &cams[k], 48, 36, &lit);
        print_message("camera %d: mean %.1f, %.0f%% of the pixels lit\n", k, mean, 100 * lit);
        if (lit < (k < 2 ? 0.8 : 0.2)) fail_msg("camera %d: only %.0f%% of the pixels lit", k, 100 * lit);
    }
    rt_scene_free(&s);
}

/* A file with its own lights keeps exactly those: 1 and random counts. */
static void scene_with_lights_keeps_them(void **state)
{
    (void)state;
    RtTestRng rng = {5};
    for (int round = 0; round < 4; round++) {
        RtScene s;
        rt_scene_init(&s);
        add_box(&s, v3(-2, 0, -2), v3(2, 3, 2));
        int n = round == 0 ? 1 : 1 + (int)(rt_test_rand(&rng) % 8);
        RtLight want[8];
        for (int i = 0; i < n; i++) {
            want[i] = (RtLight){i & 1 ? RT_LIGHT_DIRECTIONAL : RT_LIGHT_POINT,
                                v3(rt_test_randf(&rng), rt_test_randf(&rng), rt_test_randf(&rng)),
                                v3(rt_test_randf(&rng), 1, 0.5f)};
            assert_true(rt_scene_add_light(&s, want[i]) >= 0);
        }
        RtError err = {0};
        assert_int_equal(rt_scene_finish(&s, &err), RT_OK);
        assert_int_equal(s.light_count, (uint32_t)n);
        assert_memory_equal(s.lights, want, n * sizeof want[0]);
        rt_scene_free(&s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scene_flat_ring_is_framed_face_on),
        cmocka_unit_test(scene_framing_sizes_zero_one_and_random),
        cmocka_unit_test(scene_ordinary_bounds_keep_the_front_view),
        cmocka_unit_test(scene_framed_view_showing_nothing_warns),
        cmocka_unit_test(scene_without_lights_is_lit_inside_and_out),
        cmocka_unit_test(scene_with_lights_keeps_them),
    };
    return cmocka_run_group_tests_name("scene", tests, NULL, NULL);
}
