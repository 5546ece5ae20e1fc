/* test_hud_text.c — the HUD's line wrapping (display/hud_text.h, no GL):
 * every piece fits the width, breaks fall on blanks when a word fits, a
 * word wider than the panel is cut, no character is lost or repeated, and
 * bytes stb_easy_font cannot draw become '?'. Sizes 0, 1 and random. */
#include "test_util.h"

#include "display/hud_text.h"

static float span_px(const char *t, RtHudSpan s, int scale)
{
    float w = 0;
    for (int i = 0; i < s.len; i++) w += rt_hud_char_px(t[s.start + i], scale);
    return w;
}

/* The pieces, with the blanks dropped at breaks put back, give the text. */
static void check_wrap(const char *t, float max_px, int scale)
{
    RtHudSpan sp[512];
    int n = rt_hud_wrap(t, max_px, scale, sp, 512);
    assert_true(n >= 1 && n <= 512);
    int at = 0;
    for (int k = 0; k < n; k++) {
        assert_true(sp[k].start >= at);
        for (int i = at; i < sp[k].start; i++) assert_int_equal(t[i], ' '); /* only blanks between pieces */
        /* fits, unless it is one character wider than the panel */
        if (sp[k].len > 1) assert_true(span_px(t, sp[k], scale) <= max_px);
        at = sp[k].start + sp[k].len;
    }
    for (int i = at; t[i]; i++) assert_int_equal(t[i], ' ');
}

static void hud_wrap_empty_and_short_lines_are_one_piece(void **state)
{
    (void)state;
    RtHudSpan sp[4];
    assert_int_equal(rt_hud_wrap("", 100.0f, 1, sp, 4), 1);
    assert_int_equal(sp[0].start, 0);
    assert_int_equal(sp[0].len, 0);
    assert_int_equal(rt_hud_wrap("x", 100.0f, 1, sp, 4), 1);
    assert_int_equal(sp[0].len, 1);
    assert_int_equal(rt_hud_wrap("fits in one line", 1000.0f, 2, sp, 4), 1);
    assert_int_equal(sp[0].len, 16);
}

static void hud_wrap_breaks_at_blanks_within_the_width(void **state)
{
    (void)state;
    /* the no-GPU line that ran off a 640-pixel window */
    const char *t = "GPU stage times: n/a (no usable NVIDIA GPU or driver was found (CUDA: CUDA driver version is "
                    "insufficient for CUDA runtime version); the CPU backend runs)";
    float full = 0;
    for (const char *p = t; *p; p++) full += rt_hud_char_px(*p, 1);
    assert_true(full > 640.0f - 24.0f);
    RtHudSpan sp[8];
    int n = rt_hud_wrap(t, 640.0f - 24.0f, 1, sp, 8);
    assert_true(n >= 2);
    for (int k = 0; k < n; k++) {
        assert_true(span_px(t, sp[k], 1) <= 616.0f);
        if (k + 1 < n) assert_int_equal(t[sp[k].start + sp[k].len], ' '); /* broken at a blank */
    }
    check_wrap(t, 616.0f, 1);
    check_wrap(t, 300.0f, 2);
}

static void hud_wrap_cuts_a_word_wider_than_the_panel(void **state)
{
    (void)state;
    const char *t = "/a/very/long/path/without/any/blank/in/it/scene.obj";
    RtHudSpan sp[64];
    int n = rt_hud_wrap(t, 60.0f, 1, sp, 64);
    assert_true(n >= 3);
    int total = 0;
    for (int k = 0; k < n; k++) total += sp[k].len;
    assert_int_equal(total, (int)strlen(t)); /* nothing lost, nothing twice */
    /* narrower than one character: one character a piece, and it ends */
    assert_int_equal(rt_hud_wrap("abc", 1.0f, 1, sp, 64), 3);
    /* more pieces than room: the count still says how many */
    assert_int_equal(rt_hud_wrap("abcdef", 1.0f, 1, sp, 2), 6);
}

static void hud_wrap_random_text_and_widths(void **state)
{
    (void)state;
    RtTestRng rng = {2024};
    char t[400];
    for (int iter = 0; iter < 500; iter++) {
        int len = (int)(rt_test_rand(&rng) % 300);
        for (int i = 0; i < len; i++) {
            uint32_t r = rt_test_rand(&rng) % 8;
            t[i] = r == 0 ? ' ' : (char)(33 + rt_test_rand(&rng) % 94);
        }
        t[len] = 0;
        check_wrap(t, 1.0f + (float)(rt_test_rand(&rng) % 700), 1 + (int)(rt_test_rand(&rng) % 2));
    }
}

static void hud_text_sanitize_replaces_what_the_font_cannot_draw(void **state)
{
    (void)state;
    char s[] = "caf\xc3\xa9\tx\x7f~ ";
    rt_hud_text_sanitize(s);
    assert_string_equal(s, "caf???x?~ ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hud_wrap_empty_and_short_lines_are_one_piece),
        cmocka_unit_test(hud_wrap_breaks_at_blanks_within_the_width),
        cmocka_unit_test(hud_wrap_cuts_a_word_wider_than_the_panel),
        cmocka_unit_test(hud_wrap_random_text_and_widths),
        cmocka_unit_test(hud_text_sanitize_replaces_what_the_font_cannot_draw),
    };
    return cmocka_run_group_tests_name("hud_text", tests, NULL, NULL);
}
