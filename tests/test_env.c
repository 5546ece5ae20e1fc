/* test_env.c — the environment map and the sky (issue 26): loading (.hdr,
 * bad files), the equirectangular lookup's orientation, rotation and
 * filtering, the `environment` statement, and what missed rays see on the
 * CPU oracle (the GPU's image: test_gpu_shading.c). */
#include "accum_check.h"

#include <stb_image_write.h>

#include "app/pipeline.h"
#include "render/shade.h"
#include "scene/envmap.h"
#include "scene/load.h"

/* An 8 x 4 map: the top row (up) red, the bottom (down) blue, between them
 * green on columns 0-1 (looking along -z, the map's left edge) and white
 * elsewhere. Written as .hdr into path. */
static void write_test_hdr(char *path)
{
    float px[8 * 4 * 3];
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 8; x++) {
            float *p = &px[3 * (y * 8 + x)];
            p[0] = p[1] = p[2] = 1.0f;
            if (y == 0) p[1] = p[2] = 0.0f;
            if (y == 3) p[0] = p[1] = 0.0f;
            if ((y == 1 || y == 2) && (x == 0 || x == 7)) p[0] = p[2] = 0.0f;
        }
    char tmpl[] = "/tmp/rt_test_env_XXXXXX";
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    close(fd);
    snprintf(path, 1024, "%s.hdr", tmpl);
    unlink(tmpl);
    assert_true(stbi_write_hdr(path, 8, 4, 3, px));
}

static void env_loads_and_looks_up(void **state)
{
    (void)state;
    char path[1024];
    write_test_hdr(path);
    RtScene s;
    rt_scene_init(&s);
    RtError err = {0};
    assert_int_equal(rt_envmap_load(&s, path, 2.0f, 0.0f, &err), RT_OK);
    assert_int_equal(s.env.w, 8);
    assert_int_equal(s.env.h, 4);
    RtShadeEnv e = {s.env.rgb, s.env.w, s.env.h, s.env.intensity, s.env.rotate};
    RtVec3 up = rt_shade_env_radiance(&e, v3(0, 1, 0)), down = rt_shade_env_radiance(&e, v3(0, -1, 0));
    RtVec3 back = rt_shade_env_radiance(&e, v3(0, 0, -1)), front = rt_shade_env_radiance(&e, v3(0, 0, 1));
    assert_true(up.x > 1.9f && up.y < 0.1f && up.z < 0.1f);         /* red x intensity 2 */
    assert_true(down.z > 1.9f && down.x < 0.1f);                     /* blue */
    assert_true(back.y > 1.9f && back.x < 0.1f && back.z < 0.1f);    /* green along -z */
    assert_true(front.x > 1.9f && front.y > 1.9f && front.z > 1.9f); /* white along +z */
    /* turned half a revolution, -z sees what +z saw */
    e.rotate = 3.14159265f;
    RtVec3 turned = rt_shade_env_radiance(&e, v3(0, 0, -1));
    assert_true(turned.x > 1.9f && turned.z > 1.9f);
    /* what a missed ray sees: the map wins over the sky and the flat colour */
    RtShadeParams p = rt_shade_params_default();
    e.rotate = 0.0f;
    RtVec3 b = rt_shade_background(&p, &e, v3(0, 0, -1));
    assert_true(b.y > 1.9f);
    RtShadeEnv none = {NULL, 0, 0, 0, 0};
    RtVec3 sky = rt_shade_background(&p, &none, v3(0, 1, 0));
    assert_true(sky.z > sky.x); /* blue overhead */
    p.sky = 0;
    RtVec3 flat = rt_shade_background(&p, &none, v3(0, 1, 0));
    assert_true(flat.x == p.background.x && flat.z == p.background.z);
    rt_scene_free(&s);

    /* the statement, and bad input named */
    char scene[1024], text[2048];
    snprintf(text, sizeof text, "box\nenvironment %s intensity 0.5 rotate 90\n", path);
    RT_TEST_TMP_TEXT(".scene", text, scene);
    if (rt_scene_load(scene, &s, &err) != RT_OK) fail_msg("%s", err.msg);
    assert_true(s.env.rgb && s.env.intensity == 0.5f && fabsf(s.env.rotate - 1.5707963f) < 1e-5f);
    rt_scene_free(&s);
    unlink(scene);
    RT_TEST_TMP_TEXT(".scene", "box\nenvironment /nonexistent/sky.hdr\n", scene);
    assert_int_not_equal(rt_scene_load(scene, &s, &err), RT_OK);
    rt_test_assert_contains(err.msg, ":2: SCENE: expected an image PATH (.hdr) after 'environment'");
    unlink(scene);
    snprintf(text, sizeof text, "box\nenvironment %s intensity -1\n", path);
    RT_TEST_TMP_TEXT(".scene", text, scene);
    assert_int_not_equal(rt_scene_load(scene, &s, &err), RT_OK);
    rt_test_assert_contains(err.msg, "a number >= 0");
    unlink(scene);
    RT_TEST_TMP_TEXT(".hdr", "#?RADIANCE\nnot an image", scene);
    rt_scene_init(&s);
    assert_int_equal(rt_envmap_load(&s, scene, 1.0f, 0.0f, &err), RT_ERR_IO);
    rt_test_assert_contains(err.msg, "ENV:");
    rt_scene_free(&s);
    unlink(scene);
    unlink(path);
}

/* A frame of a scene with a map: the pixels of missed rays show the map
 * (here: looking along -z with nothing in the way, green). */
static void env_seen_by_missed_rays(void **state)
{
    (void)state;
    char path[1024];
    write_test_hdr(path);
    RtScene s;
    RtError err = {0};
    assert_int_equal(rt_scene_make_default(&s, &err), RT_OK);
    assert_int_equal(rt_envmap_load(&s, path, 1.0f, 0.0f, &err), RT_OK);
    RtPipelineParams pp = rt_pipeline_params_default();
    RtPipeline *p;
    assert_int_equal(rt_pipeline_create(&s, RT_BACKEND_CPU, 16, 16, &p, &err), RT_OK);
    RtImage img;
    rt_image_alloc(&img, 16, 16);
    RtFrameTarget tg = {16, 16, NULL, &img};
    RtFrameStats fs;
    RtCamera cam = {{0, 50, 0}, {0, 50, -10}, {0, 1, 0}, 10.0f}; /* above the scene, looking along -z */
    if (rt_pipeline_frame(p, &pp, 0.0f, &cam, &tg, &fs, &err) != RT_OK) fail_msg("%s", err.msg);
    const uint8_t *c = &img.rgba[4 * (8 * 16 + 8)];
    assert_true(c[1] > 200 && c[0] < 30 && c[2] < 30);
    rt_pipeline_destroy(p);
    rt_image_free(&img);
    rt_scene_free(&s);
    unlink(path);
}

/* The map as a light: under a constant sky of radiance L (no lights, no
 * ambient), an open floor of albedo a is a L every sample (each escaping
 * cosine-weighted ray brings exactly L); under a roof, far less. */
static void env_lights_the_scene(void **state)
{
    (void)state;
    float px[4 * 2 * 3];
    for (int i = 0; i < 4 * 2 * 3; i++) px[i] = 0.5f;
    char path[1024];
    char tmpl[] = "/tmp/rt_test_env_XXXXXX";
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    close(fd);
    snprintf(path, sizeof path, "%s.hdr", tmpl);
    unlink(tmpl);
    assert_true(stbi_write_hdr(path, 4, 2, 3, px));
    char scene[1024], text[2048];
    for (int roof = 0; roof < 2; roof++) {
        snprintf(text, sizeof text,
                 "camera pos 0 0.1 0.01 look 0 0 0 up 0 0 -1 fov 20\nenvironment %s\nmaterial grey kd 0.5 0.5 0.5\n"
                 "quad name floor material grey scale 4\n%s",
                 path, roof ? "quad name roof material grey scale 4 rotate 1 0 0 180 translate 0 0.2 0\n" : "");
        RT_TEST_TMP_TEXT(".scene", text, scene);
        RtScene s;
        RtError err = {0};
        if (rt_scene_load(scene, &s, &err) != RT_OK) fail_msg("%s", err.msg);
        s.light_count = 0; /* the map alone */
        RtPipelineParams pp = rt_pipeline_params_default();
        pp.trace.shade.ambient = v3(0, 0, 0);
        int c = centre_after_samples(&s, pp, 8, 16);
        print_message("%s: floor byte %d (a L = 0.25 -> %d)\n", roof ? "roofed" : "open", c,
                      rt_shade_linear_to_srgb8(0.25f));
        if (!roof) assert_int_equal(c, rt_shade_linear_to_srgb8(0.25f));
        else assert_true(c < rt_shade_linear_to_srgb8(0.25f) / 2);
        rt_scene_free(&s);
        unlink(scene);
    }
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(env_loads_and_looks_up),
        cmocka_unit_test(env_seen_by_missed_rays),
        cmocka_unit_test(env_lights_the_scene),
    };
    return cmocka_run_group_tests_name("env", tests, NULL, NULL);
}
