/* test_accum.c — progressive accumulation and anti-aliasing (issue 26) on
 * the CPU oracle through the pipeline: sample 0 is today's one-sample
 * image, later samples jitter inside the pixel and the image is their mean;
 * a new sample 0 starts over; the jitter's draws are uniform in the pixel.
 * The GPU's accumulation is compared with these in test_gpu_photon.c. */
#include "test_util.h"

#include "app/pipeline.h"
#include "render/sample.h"
#include "scene/load.h"

/* The default scene at sample s of the pipeline (its sums carry over). */
static void frame_at(RtPipeline *p, RtPipelineParams *pp, uint32_t s, RtImage *img)
{
    RtError err = {0};
    RtFrameTarget tg = {img->w, img->h, NULL, img};
    RtFrameStats fs;
    pp->trace.shade.sample = s;
    if (rt_pipeline_frame(p, pp, 0.0f, NULL, &tg, &fs, &err) != RT_OK) fail_msg("%s", err.msg);
}

static int count_diff(const RtImage *a, const RtImage *b, int tol)
{
    int n = 0;
    for (int i = 0; i < a->w * a->h; i++)
        for (int c = 0; c < 3; c++)
            if (abs((int)a->rgba[4 * i + c] - (int)b->rgba[4 * i + c]) > tol) {
                n++;
                break;
            }
    return n;
}

/* Sample 0 is the pixel centre (the image of a renderer without
 * accumulation); 32 accumulated samples soften edges: pixels change, but
 * only a minority (edges and texture detail), and a fresh sample 0 is
 * sample 0's image again. Any thread count gives the same accumulated
 * image. */
static void accum_converges_and_restarts(void **state)
{
    (void)state;
    RtScene s;
    RtError err = {0};
    assert_int_equal(rt_scene_make_default(&s, &err), RT_OK);
    RtPipelineParams pp = rt_pipeline_params_default();
    RtImage one, many, again, many3;
    rt_image_alloc(&one, 96, 64);
    rt_image_alloc(&many, 96, 64);
    rt_image_alloc(&again, 96, 64);
    rt_image_alloc(&many3, 96, 64);
    RtPipeline *p;
    assert_int_equal(rt_pipeline_create(&s, RT_BACKEND_CPU, 96, 64, &p, &err), RT_OK);
    pp.threads = 1;
    frame_at(p, &pp, 0, &one);
    for (uint32_t k = 0; k < 32; k++) frame_at(p, &pp, k, &many);
    frame_at(p, &pp, 0, &again);
    assert_memory_equal(one.rgba, again.rgba, (size_t)96 * 64 * 4);
    int changed = count_diff(&one, &many, 2);
    print_message("32 samples changed %d of %d pixels\n", changed, 96 * 64);
    assert_true(changed > 20 && changed < 96 * 64 / 2);
    rt_pipeline_destroy(p);
    pp.threads = 3;
    assert_int_equal(rt_pipeline_create(&s, RT_BACKEND_CPU, 96, 64, &p, &err), RT_OK);
    for (uint32_t k = 0; k < 32; k++) frame_at(p, &pp, k, &many3);
    assert_memory_equal(many.rgba, many3.rgba, (size_t)96 * 64 * 4);
    rt_pipeline_destroy(p);
    rt_image_free(&one);
    rt_image_free(&many);
    rt_image_free(&again);
    rt_image_free(&many3);
    rt_scene_free(&s);
}

/* The accumulated value of a pixel is the mean of its samples' colours. */
static void accum_is_the_running_mean(void **state)
{
    (void)state;
    RtFloat4 sum = {9, 9, 9, 9};
    const float c[4] = {0.2f, 0.6f, 1.0f, 0.0f};
    float total = 0.0f;
    for (uint32_t s = 0; s < 4; s++) {
        RtVec3 m = rt_shade_accumulate(&sum, v3(c[s], 2 * c[s], 0), s);
        total += c[s];
        assert_true(fabsf(m.x - total / (float)(s + 1)) < 1e-6f);
        assert_true(fabsf(m.y - 2 * total / (float)(s + 1)) < 1e-6f);
    }
    RtVec3 m = rt_shade_accumulate(&sum, v3(0.5f, 0, 0), 0);
    assert_true(m.x == 0.5f);
}

/* The jitter: the centre for sample 0, uniform in [0, 1)^2 after (mean
 * 1/2, variance 1/12 per axis), different per pixel and per sample. */
static void jitter_is_uniform_in_the_pixel(void **state)
{
    (void)state;
    float x, y;
    rt_sample_jitter(7, 0, &x, &y);
    assert_true(x == 0.5f && y == 0.5f);
    double sx = 0, sxx = 0, sy = 0;
    const int n = 100000;
    for (int i = 1; i <= n; i++) {
        rt_sample_jitter(12345, (uint32_t)i, &x, &y);
        assert_true(x >= 0.0f && x < 1.0f && y >= 0.0f && y < 1.0f);
        sx += x, sxx += (double)x * x, sy += y;
    }
    assert_true(fabs(sx / n - 0.5) < 0.005 && fabs(sy / n - 0.5) < 0.005);
    assert_true(fabs(sxx / n - 0.25 - 1.0 / 12.0) < 0.005);
    float a, b, c, d;
    rt_sample_jitter(1, 1, &a, &b);
    rt_sample_jitter(2, 1, &c, &d);
    assert_true(a != c || b != d);
}

/* Exposure scales linear colour by 2^stops; ACES maps 0 to 0, rises
 * monotonically and rolls highlights off below 1 (no clipping until far
 * beyond white); the default (clamp, 0 stops) is the plain sRGB encoding. */
static void tonemap_exposure_and_aces(void **state)
{
    (void)state;
    RtShadeParams p = rt_shade_params_default();
    uint8_t a[4], b[4];
    rt_shade_pixel(&p, v3(0.25f, 0.5f, 2.0f), 0, a);
    assert_int_equal(a[0], rt_shade_linear_to_srgb8(0.25f));
    assert_int_equal(a[2], 255);
    p.exposure = 1.0f;
    rt_shade_pixel(&p, v3(0.25f, 0.5f, 2.0f), 0, b);
    assert_int_equal(b[0], rt_shade_linear_to_srgb8(0.5f));
    assert_int_equal(b[1], 255);
    assert_true(rt_shade_aces(0.0f) == 0.0f);
    float last = 0.0f;
    for (float x = 0.01f; x < 6.0f; x *= 1.5f) { /* the fit reaches 1 near x = 8, then clamps */
        float y = rt_shade_aces(x);
        assert_true(y > last && y <= 1.0f);
        last = y;
    }
    assert_true(rt_shade_aces(1.0f) < 0.85f && rt_shade_aces(2.0f) < 0.95f);
    p.exposure = 0.0f;
    p.tonemap = RT_TONEMAP_ACES;
    rt_shade_pixel(&p, v3(1.0f, 2.0f, 4.0f), 0, b);
    assert_true(b[0] < b[1] && b[1] < b[2] && b[2] < 255); /* highlights keep their order */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accum_converges_and_restarts),
        cmocka_unit_test(accum_is_the_running_mean),
        cmocka_unit_test(jitter_is_uniform_in_the_pixel),
        cmocka_unit_test(tonemap_exposure_and_aces),
    };
    return cmocka_run_group_tests_name("accum", tests, NULL, NULL);
}
