/* test_gpu_shading.c — issue 26's shading on the GPU against the CPU
 * oracle through the pipeline: the image after N accumulated samples (the
 * same jitter draws on both backends) within a stated tolerance, on the
 * default scene, the Cornell box and the soft-shadow box (area lights
 * sampled with the same draws); shadows through glass and ambient
 * occlusion likewise. Skips without a GPU. */
#include "gpu_check.h"

#include "app/pipeline.h"
#include "scene/envmap.h"
#include "scene/load.h"

/* 16 accumulated samples of s with pp on the CPU and the GPU (into gpu,
 * 128 x 96) within the tolerance below; name and the figures printed. */
static void gpu_matches_cpu(const RtScene *s, const RtPipelineParams *pp, const char *name, RtImage *gpu)
{
    RtImage cpu;
    rt_image_alloc(&cpu, 128, 96);
    rt_image_alloc(gpu, 128, 96);
    accumulate(s, RT_BACKEND_CPU, pp, 16, &cpu, NULL);
    accumulate(s, RT_BACKEND_GPU, pp, 16, gpu, NULL);
    double mean, over;
    image_diff(&cpu, gpu, 8, &mean, &over);
    print_message("%s, 16 samples: GPU vs CPU mean %.3f, %.3f%% of pixels off by > 8\n", name, mean, 100 * over);
    assert_true(mean <= 0.5 && over <= 0.005);
    rt_image_free(&cpu);
}

/* The GPU's accumulated image: the same jittered rays as the CPU's
 * (rt_sample_jitter is integer hashing), so the differences are today's
 * single-sample ones (FMA contraction, the texture unit's 8-bit weights;
 * docs/trace_gpu.md), averaged over the samples: a mean of 0.5 levels and
 * 0.5 % of pixels off by more than 8 bound them. */
static void gpu_accumulated_image_matches_cpu(void **state)
{
    (void)state;
    need_gpu();
    char path[1024];
    char soft[1024];
    const char *scenes[5] = {NULL, rt_test_src_path("scenes/cornell.scene", path),
                             rt_test_src_path("scenes/soft_shadows.scene", soft), NULL, path};
    const char *names[5] = {"default", "cornell", "soft_shadows (quad and sphere lights)",
                            "default under scenes/env/sky.hdr (background and environment light)",
                            "cornell, its lamp panel an emitter (emitters on)"};
    for (int i = 0; i < 5; i++) {
        RtScene s;
        RtError err = {0};
        if (i == 0 || i == 3) assert_int_equal(rt_scene_make_default(&s, &err), RT_OK);
        else assert_int_equal(rt_scene_load(scenes[i], &s, &err), RT_OK);
        char sky[1024];
        if (i == 3) assert_int_equal(rt_envmap_load(&s, rt_test_src_path("scenes/env/sky.hdr", sky), 1.0f, 30.0f, &err), RT_OK);
        RtPipelineParams pp = rt_pipeline_params_default();
        pp.trace.shade.emitters = i == 4;
        RtImage gpu, one;
        gpu_matches_cpu(&s, &pp, names[i], &gpu);
        rt_image_alloc(&one, 128, 96);
        accumulate(&s, RT_BACKEND_GPU, &pp, 1, &one, NULL);
        double mean1, over1;
        image_diff(&gpu, &one, 8, &mean1, &over1);
        print_message("  GPU 16 vs 1 sample: %.3f%% of pixels off by > 8\n", 100 * over1);
        assert_true(over1 > 0.01); /* accumulation changed the image: the check can fail */
        rt_image_free(&gpu);
        rt_image_free(&one);
        rt_scene_free(&s);
    }
}

/* Shadows through glass (caustics.scene's glass sphere, demo.scene's glass
 * ball: the GPU's warp-uniform crossing loop against render_cpu.c's) and
 * ambient occlusion on the Cornell box (the same RT_DRAW_AO directions on
 * both backends): 16 accumulated samples within the tolerance above, and
 * AO changes the image (the check can fail). */
static void gpu_glass_shadows_and_ao_match_cpu(void **state)
{
    (void)state;
    need_gpu();
    char paths[3][1024];
    const char *scenes[3] = {rt_test_src_path("scenes/caustics.scene", paths[0]),
                             rt_test_src_path("scenes/demo.scene", paths[1]),
                             rt_test_src_path("scenes/cornell.scene", paths[2])};
    const char *names[3] = {"caustics (glass shadows)", "demo (glass shadows)", "cornell, ao on"};
    for (int i = 0; i < 3; i++) {
        RtScene s;
        RtError err = {0};
        assert_int_equal(rt_scene_load(scenes[i], &s, &err), RT_OK);
        RtPipelineParams pp = rt_pipeline_params_default();
        if (i == 2) pp.trace.shade.ao_rays = RT_SHADE_AO_RAYS_ON;
        RtImage gpu, off;
        gpu_matches_cpu(&s, &pp, names[i], &gpu);
        rt_image_alloc(&off, 128, 96);
        double mean_off, over_off;
        if (i == 2) {
            pp.trace.shade.ao_rays = 0;
            accumulate(&s, RT_BACKEND_GPU, &pp, 16, &off, NULL);
            image_diff(&gpu, &off, 8, &mean_off, &over_off);
            print_message("  AO on vs off (GPU): %.3f%% of pixels off by > 8\n", 100 * over_off);
            assert_true(mean_off > 0.5);
        }
        rt_image_free(&gpu);
        rt_image_free(&off);
        rt_scene_free(&s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_accumulated_image_matches_cpu),
        cmocka_unit_test(gpu_glass_shadows_and_ao_match_cpu),
    };
    return cmocka_run_group_tests_name("gpu_shading", tests, NULL, NULL);
}
