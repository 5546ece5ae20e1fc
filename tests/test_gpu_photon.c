/* test_gpu_photon.c — the GPU photon stage (trace.cu's photon_kernel,
 * cuda/photon/photon_gpu.cu, the GPU point-tree builder) against the CPU
 * oracle through the pipeline: the same photons stored, the same
 * photon-mapped image within a stated tolerance, for the kd-tree and the
 * LBVH; a scene without lights; and the cost at 1080p with 1M photons
 * (printed, never asserted). Skips without a GPU. */
#include "gpu_check.h"

#include "app/pipeline.h"
#include "scene/load.h"

/* Images for people go to $RT_TEST_PNG_DIR when it is set. */
static void save_png(const RtImage *img, const char *name)
{
    const char *dir = getenv("RT_TEST_PNG_DIR");
    if (!dir) return;
    char path[1024];
    RtError err = {0};
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (rt_image_write_png(img, path, &err) != RT_OK) print_message("%s\n", err.msg);
}

static void load_caustics(RtScene *s)
{
    char path[1024];
    RtError err = {0};
    if (rt_scene_load(rt_test_src_path("scenes/caustics.scene", path), s, &err) != RT_OK) fail_msg("%s", err.msg);
}

/* Tolerances of the GPU image (docs/photon.md, "GPU vs CPU"): the GPU
 * contracts a*b+c into FMAs in the hit point and the bounce directions, so
 * a few photon paths part from the CPU's after a grazing hit and land
 * elsewhere; each photon is one of k = 50 in an estimate, so a pixel near
 * such a photon moves by up to 1/50 of its indirect light (a few levels),
 * never more than a handful of pixels by much. Measured on an H200:
 * printed below. */
#define GPU_PHOTON_MEAN_TOL 1.0     /* mean |GPU - CPU| per channel, bytes */
#define GPU_PHOTON_PIXEL_TOL 16     /* a pixel's largest channel difference ... */
#define GPU_PHOTON_PIXEL_SHARE 0.01 /* ... exceeded by at most this share of pixels */
#define GPU_PHOTON_STORE_TOL 0.002  /* relative difference of the stored counts */

static void gpu_photon_frames_match_the_cpu(void **state)
{
    (void)state;
    need_gpu();
    RtScene s;
    load_caustics(&s);
    const int structures[2] = {RT_STRUCT_KD, RT_STRUCT_LBVH};
    for (int k = 0; k < 2; k++) {
        RtPipelineParams pp = rt_pipeline_params_default();
        pp.structure = structures[k];
        pp.photons.count = 200000;
        pp.trace.shade.max_bounces = 3;
        RtImage cpu, gpu, none;
        rt_image_alloc(&cpu, 160, 160);
        rt_image_alloc(&gpu, 160, 160);
        rt_image_alloc(&none, 160, 160);
        RtFrameStats fc, fg, fn;
        accumulate(&s, RT_BACKEND_CPU, &pp, 1, &cpu, &fc);
        accumulate(&s, RT_BACKEND_GPU, &pp, 1, &gpu, &fg);
        RtPipelineParams off = pp;
        off.photons.count = 0;
        accumulate(&s, RT_BACKEND_GPU, &off, 1, &none, &fn);
        double mean, over, mean_off, over_off;
        image_diff(&cpu, &gpu, GPU_PHOTON_PIXEL_TOL, &mean, &over);
        image_diff(&cpu, &none, GPU_PHOTON_PIXEL_TOL, &mean_off, &over_off);
        print_message("structure %d: stored CPU %u + %u, GPU %u + %u; image GPU vs CPU: mean %.3f, %.3f%% of "
                      "pixels off by > %d; without photons: mean %.2f\n",
                      structures[k], fc.photons.stored[0], fc.photons.stored[1], fg.photons.stored[0],
                      fg.photons.stored[1], mean, 100.0 * over, GPU_PHOTON_PIXEL_TOL, mean_off);
        char out[64];
        snprintf(out, sizeof out, "gpu_photon_%d_gpu.png", structures[k]);
        save_png(&gpu, out);
        snprintf(out, sizeof out, "gpu_photon_%d_cpu.png", structures[k]);
        save_png(&cpu, out);
        assert_true(fg.has_photons && fg.photons.emitted == 200000);
        for (int m = 0; m < RT_PHOTON_MAPS; m++) {
            double a = fc.photons.stored[m], b = fg.photons.stored[m];
            assert_true(fabs(a - b) <= GPU_PHOTON_STORE_TOL * a + 2.0);
        }
        assert_true(mean <= GPU_PHOTON_MEAN_TOL);
        assert_true(over <= GPU_PHOTON_PIXEL_SHARE);
        /* the check can fail: photons change the image far beyond it */
        assert_true(mean_off > 5.0 * GPU_PHOTON_MEAN_TOL);
        rt_image_free(&cpu);
        rt_image_free(&gpu);
        rt_image_free(&none);
    }
    rt_scene_free(&s);
}

/* No lights: no photons, a valid frame; 1 photon; photons re-emitted at
 * another count reuse and grow the buffers. */
static void gpu_photon_bad_cases(void **state)
{
    (void)state;
    need_gpu();
    RtScene s;
    RtError err = {0};
    load_caustics(&s);
    RtPipeline *p;
    assert_int_equal(rt_pipeline_create(&s, RT_BACKEND_GPU, 32, 32, &p, &err), RT_OK);
    RtImage img;
    rt_image_alloc(&img, 32, 32);
    RtFrameTarget tg = {32, 32, NULL, &img};
    RtPipelineParams pp = rt_pipeline_params_default();
    const uint32_t counts[] = {1, 1000, 300000, 5};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        pp.photons.count = counts[i];
        RtFrameStats fs;
        memset(&fs, 0, sizeof fs);
        if (rt_pipeline_frame(p, &pp, 0.0f, NULL, &tg, &fs, &err) != RT_OK) fail_msg("%s", err.msg);
        assert_int_equal(fs.photons.emitted, counts[i]);
    }
    rt_pipeline_destroy(p);
    uint32_t lights = s.light_count;
    s.light_count = 0;
    assert_int_equal(rt_pipeline_create(&s, RT_BACKEND_GPU, 32, 32, &p, &err), RT_OK);
    RtFrameStats fs;
    memset(&fs, 0, sizeof fs);
    pp.photons.count = 1000;
    if (rt_pipeline_frame(p, &pp, 0.0f, NULL, &tg, &fs, &err) != RT_OK) fail_msg("%s", err.msg);
    assert_int_equal(fs.photons.stored[0] + fs.photons.stored[1], 0);
    rt_pipeline_destroy(p);
    s.light_count = lights;
    rt_image_free(&img);
    rt_scene_free(&s);
}

/* The cost of photon mapping at 1080p: 1M photons, k = 50, per scene
 * (caustics.scene, Sponza when the asset is there): photon trace, maps
 * (compaction + both trees) and the trace's gather, as the frame's
 * difference with photons off (medians of 7 frames). */
static void gpu_photon_benchmark(void **state)
{
    (void)state;
    need_gpu();
    char path[1024], sponza[1024];
    const char *scenes[2] = {rt_test_src_path("scenes/caustics.scene", path), rt_test_asset("sponza/sponza.obj", sponza)};
    for (int i = 0; i < 2; i++) {
        if (!scenes[i]) continue;
        RtScene s;
        RtError err = {0};
        assert_int_equal(rt_scene_load(scenes[i], &s, &err), RT_OK);
        RtPipeline *p;
        assert_int_equal(rt_pipeline_create(&s, RT_BACKEND_GPU, 1920, 1080, &p, &err), RT_OK);
        RtImage img;
        rt_image_alloc(&img, 1920, 1080);
        RtFrameTarget tg = {1920, 1080, NULL, &img};
        double med[2][4];
        RtFrameStats last;
        for (int on = 0; on < 2; on++) {
            RtPipelineParams pp = rt_pipeline_params_default();
            pp.photons.count = on ? 1u << 20 : 0;
            double v[4][9];
            for (int f = 0; f < 9; f++) {
                memset(&last, 0, sizeof last);
                if (rt_pipeline_frame(p, &pp, 0.0f, NULL, &tg, &last, &err) != RT_OK) fail_msg("%s", err.msg);
                v[0][f] = last.frame_ms - last.readback_ms, v[1][f] = last.photons.trace_ms;
                v[2][f] = last.photons.build_ms, v[3][f] = last.trace_ms;
            }
            for (int q = 0; q < 4; q++) {
                /* median of the last 7 (the first frames grow buffers) */
                double w[7];
                memcpy(w, &v[q][2], sizeof w);
                for (int a = 0; a < 7; a++)
                    for (int b = a + 1; b < 7; b++)
                        if (w[b] < w[a]) { double t = w[a]; w[a] = w[b]; w[b] = t; }
                med[on][q] = w[3];
            }
        }
        print_message("benchmark %s 1920x1080, %u photons, k 50: frame %.2f -> %.2f ms (+%.2f): photon trace %.2f, "
                      "maps %.2f, trace with gather %.2f (without %.2f); stored caustic %u, global %u\n",
                      scenes[i], last.photons.emitted, med[0][0], med[1][0], med[1][0] - med[0][0], med[1][1],
                      med[1][2], med[1][3], med[0][3], last.photons.stored[0], last.photons.stored[1]);
        save_png(&img, i ? "gpu_photon_sponza.png" : "gpu_photon_caustics.png");
        rt_image_free(&img);
        rt_pipeline_destroy(p);
        rt_scene_free(&s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_photon_frames_match_the_cpu),
        cmocka_unit_test(gpu_photon_bad_cases),
        cmocka_unit_test(gpu_photon_benchmark),
    };
    return cmocka_run_group_tests_name("gpu_photon", tests, NULL, NULL);
}
