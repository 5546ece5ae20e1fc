/* test_viewer_options.c — the variant tables and window options that the
 * CLI, the viewer's hotkeys and its HUD share (no window needed). */
#include "test_util.h"

#include "app/options.h"

static void variants_cycle_wraps_both_ways(void **state)
{
    (void)state;
    RtOptions o;
    rt_options_default(&o);
    assert_int_equal(rt_variant_get(&o, RT_VAR_ISECT), 1); /* woop */
    assert_int_equal(rt_variant_cycle(&o, RT_VAR_ISECT, 1), RT_OK);
    assert_string_equal(rt_variant_value_name(RT_VAR_ISECT, rt_variant_get(&o, RT_VAR_ISECT)), "mt");
    assert_int_equal(o.render.use_woop, 0);
    assert_int_equal(rt_variant_cycle(&o, RT_VAR_ISECT, 1), RT_OK);
    assert_int_equal(o.render.use_woop, 1);

    /* reflections 1 -> 2 -> 3 -> 0, and back 0 -> 3 */
    assert_int_equal(o.render.shade.max_bounces, 1);
    int expect[] = {2, 3, 0};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rt_variant_cycle(&o, RT_VAR_BOUNCES, 1), RT_OK);
        assert_int_equal(o.render.shade.max_bounces, expect[i]);
    }
    assert_int_equal(rt_variant_cycle(&o, RT_VAR_BOUNCES, -1), RT_OK);
    assert_int_equal(o.render.shade.max_bounces, 3);

    assert_int_equal(rt_variant_cycle(&o, RT_VAR_SHADOWS, 1), RT_OK);
    assert_int_equal(o.render.shade.shadows, 0);
    assert_string_equal(rt_variant_value_name(RT_VAR_SHADOWS, 0), "off");
    assert_int_equal(rt_variant_cycle(&o, RT_VAR_HEATMAP, 1), RT_OK);
    assert_int_equal(o.render.shade.heatmap, 1);
    assert_int_equal(rt_variant_cycle(&o, RT_VAR_TEXTURES, -1), RT_OK);
    assert_int_equal(o.render.shade.textures, 0);
}

static void variants_value_outside_table_restarts_it(void **state)
{
    (void)state;
    RtOptions o;
    rt_options_default(&o);
    o.render.shade.max_bounces = 7; /* --bounces 7 */
    assert_null(rt_variant_value_name(RT_VAR_BOUNCES, 7));
    assert_int_equal(rt_variant_cycle(&o, RT_VAR_BOUNCES, 1), RT_OK);
    assert_int_equal(o.render.shade.max_bounces, 0);
    o.render.shade.max_bounces = 7;
    assert_int_equal(rt_variant_cycle(&o, RT_VAR_BOUNCES, -1), RT_OK);
    assert_int_equal(o.render.shade.max_bounces, 3);
}

static void variants_unavailable_groups_change_nothing(void **state)
{
    (void)state;
    RtOptions o, before;
    rt_options_default(&o);
    before = o;
    int unavailable = 0;
    for (int g = 0; g < RT_VAR_COUNT; g++) {
        if (!rt_variant_groups[g].unavailable) continue;
        unavailable++;
        assert_int_equal(rt_variant_cycle(&o, (RtVariantGroupId)g, 1), RT_ERR_UNSUPPORTED);
        assert_memory_equal(&o, &before, sizeof o);
    }
    /* the GPU groups exist only in builds with CUDA */
    assert_int_equal(unavailable, RT_HAVE_CUDA ? 0 : RT_VAR_COUNT - RT_VAR_LADDER);
    assert_int_equal(rt_variant_cycle(&o, RT_VAR_COUNT, 1), RT_ERR_UNSUPPORTED);
    assert_null(rt_variant_value_name(RT_VAR_COUNT, 0));
}

/* Each group's key is unique and collides with no other window key. */
static void variants_keys_are_distinct(void **state)
{
    (void)state;
    for (int g = 0; g < RT_VAR_COUNT; g++) {
        const RtVariantGroup *v = &rt_variant_groups[g];
        assert_non_null(v->name);
        assert_true((v->key >= 'A' && v->key <= 'Z') || (v->key >= '0' && v->key <= '9'));
        if (!v->unavailable) assert_non_null(v->values);
        for (int h = g + 1; h < RT_VAR_COUNT; h++)
            if (rt_variant_groups[h].key == v->key) fail_msg("groups %s and %s share key %c", v->name, rt_variant_groups[h].name, v->key);
        for (const RtKeyHelp *k = rt_viewer_keys; k->key; k++) {
            char keys[64];
            snprintf(keys, sizeof keys, "%s", k->key);
            for (char *t = strtok(keys, " "); t; t = strtok(NULL, " "))
                if (t[0] == v->key && !t[1]) fail_msg("group %s's key %c is also '%s'", v->name, v->key, k->what);
        }
    }
}

static void window_options_parsed(void **state)
{
    (void)state;
    RtOptions o;
    RtError err = {0};
    rt_options_default(&o);
    assert_int_equal(o.vsync, 1);
    assert_int_equal(o.interop, 1);
    assert_int_equal(o.size_given, 0);
    assert_null(o.screenshot_dir);
    const char *argv[] = {"rtviewer", "--no-vsync", "--no-interop", "--screenshot-dir", "/tmp/shots", "--size", "320x240"};
    assert_int_equal(rt_options_parse(7, (char **)argv, &o, &err), RT_OK);
    assert_int_equal(o.vsync, 0);
    assert_int_equal(o.interop, 0);
    assert_int_equal(o.size_given, 1);
    assert_string_equal(o.screenshot_dir, "/tmp/shots");
    const char *bad[] = {"rtviewer", "--screenshot-dir"};
    assert_int_equal(rt_options_parse(2, (char **)bad, &o, &err), RT_ERR_ARG);
    assert_non_null(strstr(err.msg, "--screenshot-dir"));
}

/* --build and --trace fill the GPU parameters; bad keys and values name
 * the valid ones. */
static void gpu_variant_options_parsed(void **state)
{
    (void)state;
    RtOptions o;
    RtError err = {0};
    rt_options_default(&o);
    RtKdGpuParams d = rt_options_kd_gpu(&o), ref = rt_kd_gpu_params_default();
    assert_memory_equal(&d, &ref, sizeof d); /* defaults agree with kd_gpu.h's */
    const char *argv[] = {"rtviewer", "--build", "ladder=[A]-[B],ce=35,box=inclusion,small=ssah,leaf=32,ways=4",
                          "--trace", "traversal=restart,stack=8,skip=0,map=rows,packet=warp"};
    assert_int_equal(rt_options_parse(5, (char **)argv, &o, &err), RT_OK);
    RtKdGpuParams b = rt_options_kd_gpu(&o);
    assert_int_equal(b.chang_a, 1);
    assert_int_equal(b.chang_b, 1);
    assert_int_equal(b.chang_c, 0);
    assert_int_equal(b.chang_e, 0);
    assert_true(fabsf(b.empty_cut - 0.35f) < 1e-6f);
    assert_int_equal(b.assoc, RT_KD_GPU_BOX_INCLUSION);
    assert_int_equal(b.small_mode, RT_KD_GPU_SMALL_SSAH);
    assert_int_equal(b.small_threshold, 32);
    assert_int_equal(b.large_ways, 4);
    RtTraceParams t = rt_options_trace_gpu(&o);
    assert_int_equal(t.traversal, RT_TRAV_RESTART);
    assert_int_equal(t.stack_size, 8);
    assert_int_equal(t.leaf_skip, 0);
    assert_int_equal(t.ray_map, RT_RAYMAP_ROWS);
    assert_int_equal(t.packet, RT_PACKET_WARP);
    assert_int_equal(t.isect, RT_ISECT_WOOP); /* shading fields from --isect & co. */

    /* single steps make the ladder "custom"; explicit costs too */
    rt_options_default(&o);
    const char *steps[] = {"rtviewer", "--build", "a=0,e=0,ctrav=2,ci=3"};
    assert_int_equal(rt_options_parse(3, (char **)steps, &o, &err), RT_OK);
    b = rt_options_kd_gpu(&o);
    assert_int_equal(b.chang_a, 0);
    assert_int_equal(b.chang_b, 1);
    assert_int_equal(b.chang_e, 0);
    assert_true(b.c_trav == 2.0f && b.c_isect == 3.0f);
    assert_int_equal(o.kd_ladder, -1);
    assert_null(rt_variant_value_name(RT_VAR_LADDER, o.kd_ladder));

    const char *bad[][3] = {
        {"rtviewer", "--build", "ladder=9"}, {"rtviewer", "--build", "box=cube"},
        {"rtviewer", "--build", "speed=1"},  {"rtviewer", "--build", "ce"},
        {"rtviewer", "--trace", "stack=99"}, {"rtviewer", "--trace", "packet=yes"},
        {"rtviewer", "--trace", ""},         {"rtviewer", "--trace", "traversal="},
        {"rtviewer", "--build", "ways=3"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rt_options_default(&o);
        assert_int_equal(rt_options_parse(3, (char **)bad[i], &o, &err), RT_ERR_ARG);
        assert_non_null(strstr(err.msg, bad[i][1]));
    }
    rt_options_default(&o);
    assert_int_equal(rt_options_parse(3, (char **)bad[2], &o, &err), RT_ERR_ARG);
    assert_non_null(strstr(err.msg, "ladder")); /* the valid keys are listed */
}

static void animation_and_bench_options_parsed(void **state)
{
    (void)state;
    RtOptions o;
    RtError err = {0};
    rt_options_default(&o);
    assert_true(o.speed == 1.0f && o.warmup == 3 && !o.bench && !o.has_time);
    const char *argv[] = {"rtviewer", "--bench", "scenes/x.scene", "--frames", "20", "--warmup", "2",
                          "--json", "a.json", "--csv", "a.csv", "--time", "2.5", "--speed", "0.5",
                          "--paused", "--runners", "3"};
    assert_int_equal(rt_options_parse(18, (char **)argv, &o, &err), RT_OK);
    assert_true(o.bench && o.headless);
    assert_string_equal(o.scene_path, "scenes/x.scene");
    assert_int_equal(o.frames, 20);
    assert_int_equal(o.warmup, 2);
    assert_string_equal(o.json_path, "a.json");
    assert_string_equal(o.csv_path, "a.csv");
    assert_true(o.has_time && o.time == 2.5f && o.speed == 0.5f && o.paused);
    assert_int_equal(o.runners, 3);
    rt_options_default(&o);
    const char *def[] = {"rtviewer", "--bench", "default"};
    assert_int_equal(rt_options_parse(3, (char **)def, &o, &err), RT_OK);
    assert_null(o.scene_path);
    const char *two[] = {"rtviewer", "a.obj", "--bench", "b.obj"};
    assert_int_equal(rt_options_parse(4, (char **)two, &o, &err), RT_ERR_ARG);
    const char *bad_t[] = {"rtviewer", "--time", "soon"};
    assert_int_equal(rt_options_parse(3, (char **)bad_t, &o, &err), RT_ERR_ARG);
    assert_non_null(strstr(err.msg, "--time"));
    const char *bad_r[] = {"rtviewer", "--runners", "-1"};
    assert_int_equal(rt_options_parse(3, (char **)bad_r, &o, &err), RT_ERR_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(variants_cycle_wraps_both_ways),
        cmocka_unit_test(variants_value_outside_table_restarts_it),
        cmocka_unit_test(variants_unavailable_groups_change_nothing),
        cmocka_unit_test(variants_keys_are_distinct),
        cmocka_unit_test(window_options_parsed),
        cmocka_unit_test(gpu_variant_options_parsed),
        cmocka_unit_test(animation_and_bench_options_parsed),
    };
    return cmocka_run_group_tests_name("viewer_options", tests, NULL, NULL);
}
