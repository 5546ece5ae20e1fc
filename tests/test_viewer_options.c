/* test_viewer_options.c — the variant tables and window options that the
 * CLI, the viewer's hotkeys and its HUD share (no window needed). */
#include "test_util.h"

#include "options.h"

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
    assert_int_equal(o.render.max_bounces, 1);
    int expect[] = {2, 3, 0};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rt_variant_cycle(&o, RT_VAR_BOUNCES, 1), RT_OK);
        assert_int_equal(o.render.max_bounces, expect[i]);
    }
    assert_int_equal(rt_variant_cycle(&o, RT_VAR_BOUNCES, -1), RT_OK);
    assert_int_equal(o.render.max_bounces, 3);

    assert_int_equal(rt_variant_cycle(&o, RT_VAR_SHADOWS, 1), RT_OK);
    assert_int_equal(o.render.shadows, 0);
    assert_string_equal(rt_variant_value_name(RT_VAR_SHADOWS, 0), "off");
    assert_int_equal(rt_variant_cycle(&o, RT_VAR_HEATMAP, 1), RT_OK);
    assert_int_equal(o.render.heatmap, 1);
    assert_int_equal(rt_variant_cycle(&o, RT_VAR_TEXTURES, -1), RT_OK);
    assert_int_equal(o.render.textures, 0);
}

static void variants_value_outside_table_restarts_it(void **state)
{
    (void)state;
    RtOptions o;
    rt_options_default(&o);
    o.render.max_bounces = 7; /* --bounces 7 */
    assert_null(rt_variant_value_name(RT_VAR_BOUNCES, 7));
    assert_int_equal(rt_variant_cycle(&o, RT_VAR_BOUNCES, 1), RT_OK);
    assert_int_equal(o.render.max_bounces, 0);
    o.render.max_bounces = 7;
    assert_int_equal(rt_variant_cycle(&o, RT_VAR_BOUNCES, -1), RT_OK);
    assert_int_equal(o.render.max_bounces, 3);
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
    assert_int_equal(unavailable, RT_VAR_COUNT - RT_VAR_SORT); /* the GPU groups, until they land */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(variants_cycle_wraps_both_ways),
        cmocka_unit_test(variants_value_outside_table_restarts_it),
        cmocka_unit_test(variants_unavailable_groups_change_nothing),
        cmocka_unit_test(variants_keys_are_distinct),
        cmocka_unit_test(window_options_parsed),
    };
    return cmocka_run_group_tests_name("viewer_options", tests, NULL, NULL);
}
