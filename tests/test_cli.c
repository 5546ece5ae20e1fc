/* test_cli.c — the command line: options, --camera round trip, errors. */
#include "test_util.h"

#include "app/options.h"

static RtStatus parse(RtOptions *o, RtError *err, int argc, const char **argv)
{
    rt_options_default(o);
    return rt_options_parse(argc, (char **)argv, o, err);
}

static void cli_defaults_without_arguments(void **state)
{
    (void)state;
    RtOptions o;
    RtError err = {0};
    const char *argv[] = {"rtviewer"};
    assert_int_equal(parse(&o, &err, 1, argv), RT_OK);
    assert_null(o.scene_path);
    assert_int_equal(o.width, 1280);
    assert_int_equal(o.height, 720);
    assert_int_equal(o.frames, 1);
    assert_int_equal(o.render.use_woop, 1);
}

static void cli_headless_options_parsed(void **state)
{
    (void)state;
    RtOptions o;
    RtError err = {0};
    const char *argv[] = {"rtviewer", "scene.obj", "--headless", "--frames", "3", "-o", "x.png",
                          "--size", "64x48", "--cpu", "--isect", "mt", "--bounces", "2", "--no-shadows"};
    assert_int_equal(parse(&o, &err, 15, argv), RT_OK);
    assert_string_equal(o.scene_path, "scene.obj");
    assert_true(o.headless && o.cpu);
    assert_int_equal(o.frames, 3);
    assert_string_equal(o.out_png, "x.png");
    assert_int_equal(o.width, 64);
    assert_int_equal(o.height, 48);
    assert_int_equal(o.render.use_woop, 0);
    assert_int_equal(o.render.max_bounces, 2);
    assert_int_equal(o.render.shadows, 0);
}

static void cli_camera_round_trip_is_exact(void **state)
{
    (void)state;
    RtTestRng rng = {12345};
    for (int i = 0; i < 1000; i++) {
        RtCamera c = {v3(rt_test_randf(&rng) * 1e3f - 500, rt_test_randf(&rng) * 1e-3f, -rt_test_randf(&rng)),
                      v3(rt_test_randf(&rng), rt_test_randf(&rng) + 1.0f, 3.0f),
                      v3(0, 1, rt_test_randf(&rng) * 1e-7f), 1.0f + 170.0f * rt_test_randf(&rng)};
        char buf[512];
        rt_camera_format(&c, buf, sizeof buf);
        RtCamera d;
        RtError err = {0};
        assert_int_equal(rt_camera_parse(buf, &d, &err), RT_OK);
        assert_memory_equal(&c, &d, sizeof c);
    }
}

static void cli_bad_values_name_the_option(void **state)
{
    (void)state;
    struct { const char *args[3]; const char *needle; } cases[] = {
        {{"--frames", "zero"}, "--frames"},
        {{"--frames", "0"}, "--frames"},
        {{"--size", "12"}, "--size"},
        {{"--size", "0x10"}, "--size"},
        {{"--camera", "1,2,3"}, "--camera"},
        {{"--camera", "0,0,0,0,0,1,0,1,0,nan"}, "--camera"},
        {{"--camera", "0,0,0,0,0,0,0,1,0,60"}, "look-at"},
        {{"--isect", "fast"}, "woop, mt"},
        {{"--bogus"}, "--bogus"},
        {{"--frames"}, "expects a value"},
        {{"--build", "chunk=100"}, "--build chunk"},
        {{"--build", "chunk=4096"}, "--build chunk"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *argv[4] = {"rtviewer", cases[i].args[0], cases[i].args[1], NULL};
        int argc = cases[i].args[1] ? 3 : 2;
        RtOptions o;
        RtError err = {0};
        assert_int_equal(parse(&o, &err, argc, argv), RT_ERR_ARG);
        if (!strstr(err.msg, cases[i].needle)) fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].needle);
    }
}

static void cli_two_scene_files_rejected(void **state)
{
    (void)state;
    RtOptions o;
    RtError err = {0};
    const char *argv[] = {"rtviewer", "a.obj", "b.obj"};
    assert_int_equal(parse(&o, &err, 3, argv), RT_ERR_ARG);
    assert_non_null(strstr(err.msg, "b.obj"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cli_defaults_without_arguments),
        cmocka_unit_test(cli_headless_options_parsed),
        cmocka_unit_test(cli_camera_round_trip_is_exact),
        cmocka_unit_test(cli_bad_values_name_the_option),
        cmocka_unit_test(cli_two_scene_files_rejected),
    };
    return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
