/* test_viewer_options.c — the variant registry (variants.h) and the window
 * options that the CLI, the viewer's hotkeys and its HUD share (no window
 * needed). */
#include "test_util.h"

#include "app/options.h"

static void variants_cycle_wraps_both_ways(void **state)
{
    (void)state;
    RtOptions o;
    rt_options_default(&o);
    RtPipelineParams *p = &o.pipe;
    assert_int_equal(rt_variant_get(p, RT_VAR_ISECT), RT_ISECT_WOOP);
    assert_int_equal(rt_variant_cycle(p, RT_VAR_ISECT, 1), RT_OK);
    assert_string_equal(rt_variant_value_name(RT_VAR_ISECT, rt_variant_get(p, RT_VAR_ISECT)), "mt");
    assert_int_equal(p->trace.isect, RT_ISECT_MT);
    assert_int_equal(rt_variant_cycle(p, RT_VAR_ISECT, 1), RT_OK);
    assert_int_equal(p->trace.isect, RT_ISECT_WOOP);

    /* reflections 1 -> 2 -> 3 -> 0, and back 0 -> 3 */
    assert_int_equal(p->trace.shade.max_bounces, 1);
    int expect[] = {2, 3, 0};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rt_variant_cycle(p, RT_VAR_BOUNCES, 1), RT_OK);
        assert_int_equal(p->trace.shade.max_bounces, expect[i]);
    }
    assert_int_equal(rt_variant_cycle(p, RT_VAR_BOUNCES, -1), RT_OK);
    assert_int_equal(p->trace.shade.max_bounces, 3);

    assert_int_equal(rt_variant_cycle(p, RT_VAR_SHADOWS, 1), RT_OK);
    assert_int_equal(p->trace.shade.shadows, 0);
    assert_string_equal(rt_variant_value_name(RT_VAR_SHADOWS, 0), "off");
    assert_int_equal(rt_variant_cycle(p, RT_VAR_HEATMAP, 1), RT_OK);
    assert_int_equal(p->trace.shade.heatmap, 1);
    assert_int_equal(rt_variant_cycle(p, RT_VAR_TEXTURES, -1), RT_OK);
    assert_int_equal(p->trace.shade.textures, 0);
}

static void variants_value_outside_table_restarts_it(void **state)
{
    (void)state;
    RtOptions o;
    rt_options_default(&o);
    o.pipe.trace.shade.max_bounces = 7; /* --bounces 7 */
    assert_null(rt_variant_value_name(RT_VAR_BOUNCES, 7));
    assert_int_equal(rt_variant_cycle(&o.pipe, RT_VAR_BOUNCES, 1), RT_OK);
    assert_int_equal(o.pipe.trace.shade.max_bounces, 0);
    o.pipe.trace.shade.max_bounces = 7;
    assert_int_equal(rt_variant_cycle(&o.pipe, RT_VAR_BOUNCES, -1), RT_OK);
    assert_int_equal(o.pipe.trace.shade.max_bounces, 3);
}

static void variants_unavailable_rows_change_nothing(void **state)
{
    (void)state;
    RtOptions o, before;
    rt_options_default(&o);
    before = o;
    int unavailable = 0, gpu_rows = 0;
    for (int i = 0; i < RT_VAR_COUNT; i++) {
        gpu_rows += rt_variants[i].gpu_only;
        if (!rt_variant_unavailable((RtVariantId)i)) continue;
        unavailable++;
        assert_int_equal(rt_variant_cycle(&o.pipe, (RtVariantId)i, 1), RT_ERR_UNSUPPORTED);
        assert_memory_equal(&o, &before, sizeof o);
    }
    /* the GPU rows act only in builds with CUDA */
    assert_true(gpu_rows > 0);
    assert_int_equal(unavailable, RT_HAVE_CUDA ? 0 : gpu_rows);
    assert_int_equal(rt_variant_cycle(&o.pipe, RT_VAR_COUNT, 1), RT_ERR_UNSUPPORTED);
    assert_null(rt_variant_value_name(RT_VAR_COUNT, 0));
}

/* Each hotkey is unique and collides with no other window key; each row
 * has a key unique in its scope, a name and a description. */
static void variants_keys_are_distinct(void **state)
{
    (void)state;
    for (int i = 0; i < RT_VAR_COUNT; i++) {
        const RtVariant *v = &rt_variants[i];
        assert_non_null(v->key);
        assert_non_null(v->name);
        assert_non_null(v->description);
        assert_int_equal(rt_variant_find(v->scope, v->key), i);
        if (!v->hotkey) continue;
        assert_true((v->hotkey >= 'A' && v->hotkey <= 'Z') || (v->hotkey >= '0' && v->hotkey <= '9') ||
                    (v->hotkey && strchr(";'/-=", v->hotkey)));
        assert_non_null(v->values); /* a hotkey cycles named values */
        for (int j = i + 1; j < RT_VAR_COUNT; j++)
            if (rt_variants[j].hotkey == v->hotkey)
                fail_msg("rows %s and %s share key %c", v->name, rt_variants[j].name, v->hotkey);
        for (const RtKeyHelp *k = rt_viewer_keys; k->key; k++) {
            char keys[64];
            snprintf(keys, sizeof keys, "%s", k->key);
            for (char *t = strtok(keys, " "); t; t = strtok(NULL, " "))
                if (t[0] == v->hotkey && !t[1]) fail_msg("row %s's key %c is also '%s'", v->name, v->hotkey, k->what);
        }
    }
}

/* Every named value of every row, set by name through the CLI's parser,
 * reads back as that value, and changes no other row's field. */
static void variants_every_value_round_trips(void **state)
{
    (void)state;
    RtError err = {0};
    for (int i = 0; i < RT_VAR_COUNT; i++) {
        for (const RtVariantValue *t = rt_variants[i].values; t && t->name; t++) {
            RtPipelineParams p = rt_pipeline_params_default();
            assert_int_equal(rt_variant_parse(&p, (RtVariantId)i, t->name, NULL, &err), RT_OK);
            if (rt_variant_get(&p, (RtVariantId)i) != t->value)
                fail_msg("%s=%s reads back as %g", rt_variants[i].key, t->name, rt_variant_get(&p, (RtVariantId)i));
            char text[64];
            rt_variant_format(&p, (RtVariantId)i, text, sizeof text);
            assert_string_equal(text, t->name);
        }
    }
}

/* The defaults come from the stages' params functions, and every default
 * is a value the registry accepts (so --help's default is parseable). */
static void variants_defaults_are_the_stages(void **state)
{
    (void)state;
    RtOptions o;
    RtError err = {0};
    rt_options_default(&o);
    RtKdGpuParams kd = rt_kd_gpu_params_default();
    RtTraceParams tr = rt_trace_params_default();
    assert_memory_equal(&o.pipe.build, &kd, sizeof kd);
    assert_memory_equal(&o.pipe.trace, &tr, sizeof tr);
    assert_int_equal(o.pipe.structure, RT_STRUCT_KD);
    for (int i = 0; i < RT_VAR_COUNT; i++) {
        char text[64];
        rt_variant_format(&o.pipe, (RtVariantId)i, text, sizeof text);
        RtPipelineParams q = o.pipe;
        if (rt_variant_parse(&q, (RtVariantId)i, text, NULL, &err) != RT_OK)
            fail_msg("default of %s ('%s') does not parse: %s", rt_variants[i].key, text, err.msg);
        assert_memory_equal(&q, &o.pipe, sizeof q);
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
    const char *argv[] = {"rtviewer", "--build", "ladder=[A]-[B],ce=35,box=inclusion,small=ssah,leaf=32,ways=4",
                          "--trace", "traversal=restart,stack=8,skip=0,map=rows,packet=warp"};
    assert_int_equal(rt_options_parse(5, (char **)argv, &o, &err), RT_OK);
    RtKdGpuParams b = o.pipe.build;
    assert_int_equal(b.chang_a, 1);
    assert_int_equal(b.chang_b, 1);
    assert_int_equal(b.chang_c, 0);
    assert_int_equal(b.chang_e, 0);
    assert_true(fabsf(b.empty_cut - 0.35f) < 1e-6f);
    assert_int_equal(b.assoc, RT_KD_GPU_BOX_INCLUSION);
    assert_int_equal(b.small_mode, RT_KD_GPU_SMALL_SSAH);
    assert_int_equal(b.small_threshold, 32);
    assert_int_equal(b.large_ways, 4);
    RtTraceParams t = o.pipe.trace;
    assert_int_equal(t.traversal, RT_TRAV_RESTART);
    assert_int_equal(t.stack_size, 8);
    assert_int_equal(t.leaf_skip, 0);
    assert_int_equal(t.ray_map, RT_RAYMAP_ROWS);
    assert_int_equal(t.packet, RT_PACKET_WARP);
    assert_int_equal(t.isect, RT_ISECT_WOOP); /* shading fields from --isect & co. */

    /* the exact builder and its switches */
    rt_options_default(&o);
    assert_int_equal(o.pipe.build.builder, RT_KD_GPU_BUILDER_CHANG);
    const char *exact[] = {"rtviewer", "--build", "builder=exact,exactclip=0,exactleaf=63"};
    assert_int_equal(rt_options_parse(3, (char **)exact, &o, &err), RT_OK);
    assert_int_equal(o.pipe.build.builder, RT_KD_GPU_BUILDER_EXACT);
    assert_int_equal(o.pipe.build.exact_clip, 0);
    assert_int_equal(o.pipe.build.exact_leaf, 63);
    const char *bad_builder[] = {"rtviewer", "--build", "builder=wu"};
    assert_int_not_equal(rt_options_parse(3, (char **)bad_builder, &o, &err), RT_OK);
    assert_non_null(strstr(err.msg, "exact")); /* the valid values are listed */

    /* single steps make the ladder "custom"; explicit costs too */
    rt_options_default(&o);
    const char *steps[] = {"rtviewer", "--build", "a=0,e=0,ctrav=2,ci=3"};
    assert_int_equal(rt_options_parse(3, (char **)steps, &o, &err), RT_OK);
    b = o.pipe.build;
    assert_int_equal(b.chang_a, 0);
    assert_int_equal(b.chang_b, 1);
    assert_int_equal(b.chang_e, 0);
    assert_true(b.c_trav == 2.0f && b.c_isect == 3.0f);
    assert_int_equal(rt_variant_get(&o.pipe, RT_VAR_LADDER), -1);
    assert_int_equal(rt_variant_get(&o.pipe, RT_VAR_SAH_COSTS), -1);
    char text[32];
    rt_variant_format(&o.pipe, RT_VAR_LADDER, text, sizeof text);
    assert_string_equal(text, "custom");

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
    /* --clip: a name or an index, checked against the file at load */
    rt_options_default(&o);
    assert_null(o.clip);
    const char *clip[] = {"rtviewer", "a.glb", "--clip", "Walk Cycle"};
    assert_int_equal(rt_options_parse(4, (char **)clip, &o, &err), RT_OK);
    assert_string_equal(o.clip, "Walk Cycle");
    rt_options_default(&o);
    const char *no_clip[] = {"rtviewer", "a.glb", "--clip"};
    assert_int_equal(rt_options_parse(3, (char **)no_clip, &o, &err), RT_ERR_ARG);
    assert_non_null(strstr(err.msg, "--clip"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(variants_cycle_wraps_both_ways),
        cmocka_unit_test(variants_value_outside_table_restarts_it),
        cmocka_unit_test(variants_unavailable_rows_change_nothing),
        cmocka_unit_test(variants_keys_are_distinct),
        cmocka_unit_test(variants_every_value_round_trips),
        cmocka_unit_test(variants_defaults_are_the_stages),
        cmocka_unit_test(window_options_parsed),
        cmocka_unit_test(gpu_variant_options_parsed),
        cmocka_unit_test(animation_and_bench_options_parsed),
    };
    return cmocka_run_group_tests_name("viewer_options", tests, NULL, NULL);
}
