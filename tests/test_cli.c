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
    assert_int_equal(o.pipe.trace.isect, RT_ISECT_WOOP);
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
    assert_int_equal(o.pipe.trace.isect, RT_ISECT_MT);
    assert_int_equal(o.pipe.trace.shade.max_bounces, 2);
    assert_int_equal(o.pipe.trace.shade.shadows, 0);
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
        {{"--runners", "100000"}, "--runners expects an integer in 0..1000, got '100000'"},
        {{"--size", "12"}, "--size"},
        {{"--size", "0x10"}, "--size"},
        {{"--camera", "1,2,3"}, "--camera"},
        {{"--camera", "0,0,0,0,0,1,0,1,0,nan"}, "--camera"},
        {{"--camera", "0,0,0,0,0,0,0,1,0,60"}, "look-at"},
        {{"--isect", "fast"}, "woop|mt"},
        {{"--bogus"}, "--bogus"},
        {{"--frames"}, "expects a value"},
        {{"--build", "chunk=100"}, "--build chunk"},
        {{"--build", "chunk=4096"}, "--build chunk"},
        {{"--build", "local=1000"}, "unknown key 'local'"},
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

/* --camera's up vector fixes the roll: zero, or along the view, is refused;
 * any up across the view is taken. */
static void cli_camera_up_zero_or_along_view_rejected(void **state)
{
    (void)state;
    RtTestRng rng = {777};
    for (int i = 0; i < 200; i++) {
        RtVec3 p = v3(rt_test_randf(&rng) * 20 - 10, rt_test_randf(&rng) * 20 - 10, rt_test_randf(&rng) * 20 - 10);
        RtVec3 d = v3(rt_test_randf(&rng) * 2 - 1, rt_test_randf(&rng) * 2 - 1, rt_test_randf(&rng) * 2 - 1);
        if (v3_len(d) < 0.1f) continue;
        float k = (rt_test_randf(&rng) * 4 + 0.25f) * (i & 1 ? -1.0f : 1.0f);
        RtVec3 ups[3] = {v3(0, 0, 0), v3_scale(d, k), v3_cross(d, v3(0.3f, 1, -0.2f))};
        for (int u = 0; u < 3; u++) {
            RtCamera c = {p, v3_add(p, d), ups[u], 60.0f};
            char buf[512];
            rt_camera_format(&c, buf, sizeof buf);
            RtCamera out;
            RtError err = {0};
            RtStatus st = rt_camera_parse(buf, &out, &err);
            if (u == 2) {
                assert_int_equal(st, RT_OK);
                continue;
            }
            assert_int_equal(st, RT_ERR_ARG);
            rt_test_assert_contains(err.msg, u == 0 ? "up vector (values 7-9) is zero" : "parallel to the view direction");
        }
    }
}

/* Headless writes the image type its name says (.png, .jpg/.jpeg, .bmp,
 * .tga, none = PNG); another extension is refused before any rendering,
 * rather than PNG bytes under a wrong name. */
static void cli_output_type_by_extension(void **state)
{
    (void)state;
    const char *bad[] = {"out.gif", "out.webp", "shots/x.exr", "x.png.tiff", "a.jpgx"};
    const char *good[] = {"out.png", "OUT.JPEG", "out", "dir.d/out.bmp", "./x.tga"};
    for (size_t i = 0; i < 5; i++) {
        RtOptions o;
        RtError err = {0};
        const char *argv[] = {"rtviewer", "-o", bad[i]};
        assert_int_equal(parse(&o, &err, 3, argv), RT_ERR_ARG);
        rt_test_assert_contains(err.msg, bad[i]);
        rt_test_assert_contains(err.msg, "expected a file name ending in .png");
        const char *argv2[] = {"rtviewer", "--output", good[i]};
        assert_int_equal(parse(&o, &err, 3, argv2), RT_OK);
        assert_string_equal(o.out_png, good[i]);
    }
}

/* --bench is a flag: the scene is the positional one, in any order, or the
 * word after it; 'default' and nothing mean the built-in scene. */
static void cli_bench_takes_the_positional_scene_in_any_order(void **state)
{
    (void)state;
    struct { int argc; const char *args[4]; const char *scene; int cpu; } cases[] = {
        {3, {"scene.obj", "--bench", "--cpu"}, "scene.obj", 1},
        {3, {"--bench", "--cpu", "scene.obj"}, "scene.obj", 1},
        {3, {"--cpu", "scene.obj", "--bench"}, "scene.obj", 1},
        {2, {"--bench", "scene.obj"}, "scene.obj", 0},
        {3, {"--bench", "scene.obj", "--cpu"}, "scene.obj", 1},
        {2, {"--bench", "default"}, NULL, 0},
        {1, {"--bench"}, NULL, 0},
        {4, {"--bench", "--frames", "5", "x.ply"}, "x.ply", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *argv[5] = {"rtviewer"};
        for (int k = 0; k < cases[i].argc; k++) argv[k + 1] = cases[i].args[k];
        RtOptions o;
        RtError err = {0};
        if (parse(&o, &err, cases[i].argc + 1, argv) != RT_OK) fail_msg("case %zu: %s", i, err.msg);
        assert_true(o.bench && o.headless);
        assert_int_equal(o.cpu, cases[i].cpu);
        if (cases[i].scene) assert_string_equal(o.scene_path, cases[i].scene);
        else assert_null(o.scene_path);
    }
    struct { int argc; const char *args[3]; } bad[] = {
        {3, {"a.obj", "--bench", "b.obj"}},
        {3, {"--bench", "default", "a.obj"}},
        {3, {"--bench", "a.obj", "b.obj"}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *argv[4] = {"rtviewer", bad[i].args[0], bad[i].args[1], bad[i].args[2]};
        RtOptions o;
        RtError err = {0};
        assert_int_equal(parse(&o, &err, 4, argv), RT_ERR_ARG);
        rt_test_assert_contains(err.msg, "one scene file expected");
    }
}

/* "--frames --cpu": the option is not swallowed as the value. */
static void cli_value_never_starts_with_two_dashes(void **state)
{
    (void)state;
    const char *opts[] = {"--frames", "-o", "--camera", "--size", "--build", "--json", "--screenshot-dir"};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        const char *argv[] = {"rtviewer", opts[i], "--cpu"};
        RtOptions o;
        RtError err = {0};
        assert_int_equal(parse(&o, &err, 3, argv), RT_ERR_ARG);
        rt_test_assert_contains(err.msg, "expects a value, got the option '--cpu'");
    }
    /* a negative number is a value */
    const char *argv[] = {"rtviewer", "--time", "-2.5"};
    RtOptions o;
    RtError err = {0};
    assert_int_equal(parse(&o, &err, 3, argv), RT_OK);
    assert_true(o.has_time && o.time == -2.5f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cli_defaults_without_arguments),
        cmocka_unit_test(cli_headless_options_parsed),
        cmocka_unit_test(cli_camera_round_trip_is_exact),
        cmocka_unit_test(cli_bad_values_name_the_option),
        cmocka_unit_test(cli_two_scene_files_rejected),
        cmocka_unit_test(cli_camera_up_zero_or_along_view_rejected),
        cmocka_unit_test(cli_output_type_by_extension),
        cmocka_unit_test(cli_bench_takes_the_positional_scene_in_any_order),
        cmocka_unit_test(cli_value_never_starts_with_two_dashes),
    };
    return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
