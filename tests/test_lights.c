/* test_lights.c — area lights (issue 26): the .scene forms, the sample
 * points (render/sample.h's rt_sample_light) and the soft shadow they make
 * as samples accumulate, on the CPU oracle; test_gpu_shading.c compares the
 * GPU's accumulated image of scenes/soft_shadows.scene with the CPU's. */
#include "accum_check.h"

#include "app/pipeline.h"
#include "render/sample.h"
#include "scene/load.h"
#include "scene/primitives.h"

/* `light quad` and `light sphere` as written: position, size, normal (down
 * by default, unit), colour, radius. */
static void lights_scene_forms(void **state)
{
    (void)state;
    char path[1024];
    RT_TEST_TMP_TEXT(".scene",
                     "box\nlight quad pos 1 2 3 size 2 0.5 color 1 0.5 0.25\n"
                     "light quad pos 0 0 0 size 1 1 normal 0 0 2\n"
                     "light sphere pos -1 4 0 radius 0.25 color 0 1 0\n",
                     path);
    RtScene s;
    RtError err = {0};
    if (rt_scene_load(path, &s, &err) != RT_OK) fail_msg("%s", err.msg);
    assert_int_equal(s.light_count, 3);
    const RtLight *q = &s.lights[0], *q2 = &s.lights[1], *sp = &s.lights[2];
    assert_int_equal(q->type, RT_LIGHT_QUAD);
    assert_true(q->v.x == 1 && q->v.y == 2 && q->v.z == 3 && q->w == 2 && q->h == 0.5f);
    assert_true(q->n.x == 0 && q->n.y == -1 && q->n.z == 0 && q->color.y == 0.5f);
    assert_true(q2->n.z == 1.0f);
    assert_int_equal(sp->type, RT_LIGHT_SPHERE);
    assert_true(sp->radius == 0.25f && sp->color.y == 1.0f);
    assert_true(rt_light_is_area(q) && rt_light_is_area(sp) && !rt_light_is_area(&(RtLight){RT_LIGHT_POINT}));
    rt_scene_free(&s);
    unlink(path);
}

/* Quad samples lie on the quad (within W/2, H/2 of the centre along its
 * edges, in its plane), weighted by the cosine toward the point and 0
 * behind it; sphere samples lie on the sphere, on the half facing p; both
 * come back as point lights. */
static void lights_samples_on_the_surface(void **state)
{
    (void)state;
    RtLight q = {RT_LIGHT_QUAD, v3(0, 2, 0), v3(1, 1, 1)};
    q.n = v3(0, -1, 0), q.w = 2.0f, q.h = 1.0f;
    RtLight sp = {RT_LIGHT_SPHERE, v3(0, 2, 0), v3(1, 1, 1)};
    sp.radius = 0.5f;
    RtVec3 below = v3(0.3f, 0, 0.2f), above = v3(0, 5, 0);
    for (uint32_t i = 0; i < 2000; i++) {
        float u1, u2;
        rt_sample_draw(i, 1, RT_DRAW_LIGHT, &u1, &u2);
        RtLight a = rt_sample_light(&q, below, u1, u2);
        assert_int_equal(a.type, RT_LIGHT_POINT);
        assert_true(fabsf(a.v.y - 2.0f) < 1e-6f);
        assert_true(fabsf(a.v.x) <= 1.0f + 1e-6f && fabsf(a.v.z) <= 0.5f + 1e-6f);
        RtVec3 d = v3_norm(v3_sub(below, a.v));
        assert_true(fabsf(a.color.x - fmaxf(0.0f, v3_dot(q.n, d))) < 1e-5f);
        assert_true(rt_sample_light(&q, above, u1, u2).color.x == 0.0f);
        RtLight b = rt_sample_light(&sp, below, u1, u2);
        assert_true(fabsf(v3_len(v3_sub(b.v, sp.v)) - 0.5f) < 1e-5f);
        assert_true(v3_dot(v3_sub(b.v, sp.v), v3_sub(below, sp.v)) >= 0.0f); /* the half facing the point */
    }
}

/* A quad light over a floor with a small occluder between, no ambient: one
 * sample is a point light somewhere on the quad, so every pixel of the
 * penumbra is lit or black at random; 64 samples leave only the umbra
 * black (this occluder, small and low, has almost none) and the penumbra a
 * smooth ramp (far less pixel-to-pixel variation). */
static void lights_quad_makes_a_penumbra(void **state)
{
    (void)state;
    RtScene s;
    rt_scene_init(&s);
    RtError err = {0};
    float floor_m[12] = {4, 0, 0, 0, 0, 1, 0, 0, 0, 0, 4, 0};
    float block_m[12] = {0.5f, 0, 0, 0, 0, 0.05f, 0, 1.0f, 0, 0, 0.5f, 0};
    assert_int_equal(rt_prim_quad(&s, floor_m, -1, "floor", &err), RT_OK);
    assert_int_equal(rt_prim_box(&s, block_m, -1, "block", &err), RT_OK);
    RtLight q = {RT_LIGHT_QUAD, v3(0, 2, 0), v3(1, 1, 1)};
    q.n = v3(0, -1, 0), q.w = 1.0f, q.h = 1.0f;
    rt_scene_add_light(&s, q);
    RtCamera cam = {{0, 6, 0.001f}, {0, 0, 0}, {0, 0, -1}, 60.0f};
    s.camera = cam, s.has_camera = 1;
    assert_int_equal(rt_scene_finish(&s, &err), RT_OK);
    s.ambient = v3(0, 0, 0);
    RtPipelineParams pp = rt_pipeline_params_default();
    pp.trace.shade.ambient = v3(0, 0, 0);
    RtPipeline *p;
    const int W = 64;
    assert_int_equal(rt_pipeline_create(&s, RT_BACKEND_CPU, W, W, &p, &err), RT_OK);
    RtImage img;
    rt_image_alloc(&img, W, W);
    RtFrameTarget tg = {W, W, NULL, &img};
    RtFrameStats fs;
    int black[2] = {0, 0};
    long var[2] = {0, 0};
    for (uint32_t k = 0; k < 64; k++) {
        pp.trace.shade.sample = k;
        if (rt_pipeline_frame(p, &pp, 0.0f, NULL, &tg, &fs, &err) != RT_OK) fail_msg("%s", err.msg);
        if (k != 0 && k != 63) continue;
        int r = k != 0;
        for (int y = 0; y < W; y++)
            for (int x = 0; x < W; x++) {
                const uint8_t *px = &img.rgba[4 * (y * W + x)];
                black[r] += px[0] == 0;
                if (x + 1 < W) var[r] += abs((int)px[4] - (int)px[0]);
            }
    }
    print_message("black pixels %d at 1 sample, %d at 64; variation %ld, %ld\n", black[0], black[1], var[0], var[1]);
    assert_true(black[0] > 50 && black[1] < black[0] / 2);
    assert_true(var[1] < var[0] * 7 / 10);
    rt_pipeline_destroy(p);
    rt_image_free(&img);
    rt_scene_free(&s);
}

/* An emissive square of radiance L and area A a height h above a floor
 * of albedo a (no lights, no ambient): the floor right under it gets
 * radiance a L A / (pi h^2) (the patch is small against h: cosines ~1, the
 * finite size within 1 %), and nothing with emitters off. */
static void lights_emissive_triangles_light_the_floor(void **state)
{
    (void)state;
    char path[1024];
    RT_TEST_TMP_TEXT(".scene",
                     "camera pos 0 0.5 0.001 look 0 0 0 up 0 0 -1 fov 5\n"
                     "material grey kd 0.5 0.5 0.5\nmaterial lamp kd 0 0 0 ke 4 4 4\n"
                     "quad name floor material grey scale 5\n"
                     "quad name lamp material lamp scale 0.1 rotate 1 0 0 180 translate 0 2 0\n",
                     path);
    RtScene s;
    RtError err = {0};
    if (rt_scene_load(path, &s, &err) != RT_OK) fail_msg("%s", err.msg);
    s.light_count = 0;
    for (int on = 0; on < 2; on++) {
        RtPipelineParams pp = rt_pipeline_params_default();
        pp.trace.shade.ambient = v3(0, 0, 0);
        pp.trace.shade.emitters = on;
        int c = centre_after_samples(&s, pp, 8, 32);
        /* the quad primitive spans [-1, 1]^2 scaled: side 0.2, area 0.04, h = 2 */
        float want = 0.5f * 4.0f * 0.04f / (3.14159265f * 4.0f);
        print_message("emitters %s: floor byte %d (a L A / (pi h^2) = %.5f -> %d)\n", on ? "on" : "off", c, want,
                      rt_shade_linear_to_srgb8(want));
        if (on) assert_true(abs(c - rt_shade_linear_to_srgb8(want)) <= 2);
        else assert_int_equal(c, 0);
    }
    rt_scene_free(&s);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lights_scene_forms),
        cmocka_unit_test(lights_samples_on_the_surface),
        cmocka_unit_test(lights_quad_makes_a_penumbra),
        cmocka_unit_test(lights_emissive_triangles_light_the_floor),
    };
    return cmocka_run_group_tests_name("lights", tests, NULL, NULL);
}
