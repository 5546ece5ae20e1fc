/* test_photon.c — photon mapping's shared rules (src/photon/photon.h) and
 * the CPU backend's photon stage (render_cpu.c, photon_maps.c, the
 * pipeline): emission units, the roulette at a hit, the density estimate
 * on a plane of known irradiance, a photon-mapped frame that does not
 * depend on the thread count, and bad cases (no lights, 0 photons, bad
 * parameters). The GPU's stage is checked against these in
 * test_gpu_photon.c. */
#include "test_util.h"

#include "app/pipeline.h"
#include "app/variants.h"
#include "photon/photon_maps.h"
#include "scene/load.h"
#include "scene/primitives.h"

static RtShadeSurface flat_surface(RtVec3 p, RtVec3 kd)
{
    RtShadeSurface sf;
    memset(&sf, 0, sizeof sf);
    sf.p = p;
    sf.ng = sf.n = v3(0, 0, 1);
    sf.front = 1;
    sf.albedo = kd;
    return sf;
}

/* A point light's photons carry 4 pi I in all, I = colour d_ref^2, and
 * leave uniformly (mean direction ~0); a directional light's start outside
 * the bounding sphere, heading along -dir, and carry colour * pi R^2. */
static void photon_emission_carries_the_lights_flux(void **state)
{
    (void)state;
    RtAabb b = {{-1, -1, -1}, {1, 1, 1}};
    RtPhotonScene ps = rt_photon_scene(b);
    RtLight lights[2] = {{RT_LIGHT_POINT, {0, 0.5f, 0}, {1, 0.5f, 0.25f}},
                         {RT_LIGHT_DIRECTIONAL, {0, 1, 0}, {0.5f, 0.5f, 0.5f}}};
    const uint32_t n = 200000;
    double flux[2][3] = {{0, 0, 0}, {0, 0, 0}};
    RtVec3 mean = {0, 0, 0};
    for (uint32_t i = 0; i < n; i++) {
        RtRay r;
        RtVec3 pw;
        rt_photon_emit(lights, 2, &ps, i, n, 7, &r, &pw);
        flux[i % 2][0] += pw.x, flux[i % 2][1] += pw.y, flux[i % 2][2] += pw.z;
        assert_true(fabsf(v3_len(r.d) - 1.0f) < 1e-5f);
        if (i % 2 == 0) {
            mean = v3_add(mean, r.d);
            assert_true(v3_len(v3_sub(r.o, lights[0].v)) == 0.0f);
        } else {
            assert_true(r.d.y == -1.0f);
            assert_true(v3_len(v3_sub(r.o, ps.center)) >= ps.radius);
        }
    }
    double I = ps.ref_dist * ps.ref_dist;
    assert_true(fabs(flux[0][0] - 4.0 * RT_PHOTON_PI * I) < 1e-4 * 4.0 * RT_PHOTON_PI * I);
    assert_true(fabs(flux[0][2] - 0.25 * 4.0 * RT_PHOTON_PI * I) < 1e-4 * RT_PHOTON_PI * I);
    assert_true(fabs(flux[1][1] - 0.5 * RT_PHOTON_PI * ps.radius * ps.radius) < 1e-4 * ps.radius * ps.radius);
    /* 100,000 uniform directions: each mean coordinate within ~5 sigma (sigma = 1/sqrt(3n)) */
    assert_true(v3_len(v3_scale(mean, 1.0f / (n / 2))) < 0.01f);
}

/* The roulette: a perfect mirror reflects every photon and stores none; a
 * grey diffuse surface stores a photon that has bounced (never one from
 * the light), continues with P = max(Kd) and returns it with flux * Kd / P. */
static void photon_hit_roulette_follows_the_material(void **state)
{
    (void)state;
    RtShadeParams sp = rt_shade_params_default();
    RtShadeMaterial mirror;
    memset(&mirror, 0, sizeof mirror);
    mirror.reflect = 1.0f, mirror.d = 1.0f, mirror.kd = v3(0.5f, 0.5f, 0.5f);
    RtShadeMaterial grey = mirror;
    grey.reflect = 0.0f, grey.kd = v3(0.2f, 0.6f, 0.4f);
    RtShadeSurface sf = flat_surface(v3(0, 0, 0), grey.kd);
    RtVec3 dir = v3_norm(v3(0.3f, 0.1f, -1.0f));
    uint32_t on = 0, n = 20000;
    for (uint32_t i = 0; i < n; i++) {
        RtPhotonPath ph = {v3(1, 1, 1), 0};
        uint32_t store;
        RtRay next;
        assert_int_equal(rt_photon_hit(&ph, &sp, &mirror, &sf, dir, 1e-4f, i, 3, 0, &store, &next), 1);
        assert_int_equal(store, RT_PHOTON_NONE);
        assert_true(next.d.z > 0.0f && ph.bounced == 1);
        RtPhotonPath first = {v3(1, 1, 1), 0}, later = {v3(1, 1, 1), 1};
        int a = rt_photon_hit(&first, &sp, &grey, &sf, dir, 1e-4f, i, 3, 0, &store, &next);
        assert_int_equal(store, RT_PHOTON_NONE);
        int b = rt_photon_hit(&later, &sp, &grey, &sf, dir, 1e-4f, i, 3, 0, &store, &next);
        assert_int_equal(store, 1u + RT_PHOTON_CAUSTIC);
        assert_int_equal(a, b);
        if (b) {
            on++;
            assert_true(next.d.z > 0.0f);
            assert_true(fabsf(later.power.y - 1.0f) < 1e-6f && fabsf(later.power.x - 0.2f / 0.6f) < 1e-6f);
            assert_int_equal(later.bounced, 2);
        }
    }
    /* P = 0.6: 12,000 expected, sigma ~69 */
    assert_in_range(on, 11600, 12400);
}

/* Photons of flux w spread uniformly over a unit square of albedo 1 give
 * irradiance E = n w and radiance E / pi: the k-nearest estimate inside
 * the square lands within the estimator's noise (~1/sqrt(k)). Photons from
 * below (travelling with ng) do not count. */
static void photon_estimate_matches_a_known_irradiance(void **state)
{
    (void)state;
    const uint32_t n = 40000;
    float *pts = malloc(3 * (size_t)n * sizeof *pts);
    RtPhoton *rec = malloc((size_t)n * sizeof *rec);
    assert_true(pts && rec);
    RtTestRng rng = {12345};
    for (uint32_t i = 0; i < n; i++) {
        pts[3 * i] = rt_test_randf(&rng), pts[3 * i + 1] = rt_test_randf(&rng), pts[3 * i + 2] = 0.0f;
        rec[i].power = v3(1e-4f, 1e-4f, 1e-4f);
        rec[i].dir = v3(0, 0, i % 5 == 0 ? 1.0f : -1.0f); /* every fifth from below */
    }
    RtKdpTree t;
    RtError err = {0};
    assert_int_equal(rt_kdp_build_cpu(pts, n, 3, &t, NULL, &err), RT_OK);
    RtPhotonMap map = {t, rec};
    RtKdpHit scratch[RT_KDP_MAX_KNN];
    double want = 0.8 * n * 1e-4 / RT_PHOTON_PI, sum = 0.0;
    int queries = 0;
    for (float x = 0.2f; x <= 0.8f; x += 0.1f)
        for (float y = 0.2f; y <= 0.8f; y += 0.1f) {
            RtShadeSurface sf = flat_surface(v3(x, y, 0), v3(1, 1, 1));
            RtVec3 L = rt_photon_estimate(&map, 64, 1.0f, &sf, scratch);
            assert_true(fabs(L.x - want) < 0.35 * want);
            sum += L.x;
            queries++;
        }
    assert_true(fabs(sum / queries - want) < 0.1 * want);
    /* no photons within the radius: nothing */
    RtShadeSurface far = flat_surface(v3(5, 5, 0), v3(1, 1, 1));
    assert_true(rt_photon_estimate(&map, 50, 0.01f, &far, scratch).x == 0.0f);
    rt_kdp_free(&t);
    free(pts);
    free(rec);
}

/* One photon-mapped CPU frame of the caustics scene (paths to it from the
 * repository): the same image on 1 and 3 threads; caustic and global
 * photons stored; brighter than the frame without photons. */
static void photon_cpu_frame_is_deterministic_and_adds_light(void **state)
{
    (void)state;
    char path[1024];
    RtScene s;
    RtError err = {0};
    assert_int_equal(rt_scene_load(rt_test_src_path("scenes/caustics.scene", path), &s, &err), RT_OK);
    RtImage img[3];
    double mean[3];
    RtFrameStats fs[3];
    for (int run = 0; run < 3; run++) {
        RtPipelineParams pp = rt_pipeline_params_default();
        pp.photons.count = run < 2 ? 60000 : 0;
        pp.threads = run == 0 ? 1 : 3;
        RtPipeline *p;
        assert_int_equal(rt_pipeline_create(&s, RT_BACKEND_CPU, 96, 96, &p, &err), RT_OK);
        assert_int_equal(rt_image_alloc(&img[run], 96, 96), RT_OK);
        RtFrameTarget tg = {96, 96, NULL, &img[run]};
        memset(&fs[run], 0, sizeof fs[run]);
        if (rt_pipeline_frame(p, &pp, 0.0f, NULL, &tg, &fs[run], &err) != RT_OK) fail_msg("%s", err.msg);
        rt_pipeline_destroy(p);
        mean[run] = 0.0;
        for (int i = 0; i < 96 * 96 * 4; i++) mean[run] += img[run].rgba[i];
    }
    assert_memory_equal(img[0].rgba, img[1].rgba, 96 * 96 * 4);
    assert_true(fs[0].has_photons && !fs[2].has_photons);
    assert_int_equal(fs[0].photons.emitted, 60000);
    assert_true(fs[0].photons.stored[RT_PHOTON_CAUSTIC] > 100);
    assert_true(fs[0].photons.stored[RT_PHOTON_GLOBAL] > 10000);
    assert_int_equal(fs[0].photons.stored[RT_PHOTON_GLOBAL], fs[1].photons.stored[RT_PHOTON_GLOBAL]);
    print_message("mean byte with photons %.1f, without %.1f; caustic %u, global %u stored\n",
                  mean[0] / (96.0 * 96 * 4), mean[2] / (96.0 * 96 * 4), fs[0].photons.stored[0],
                  fs[0].photons.stored[1]);
    assert_true(mean[0] > 1.1 * mean[2]);
    for (int run = 0; run < 3; run++) rt_image_free(&img[run]);
    rt_scene_free(&s);
}

/* A scene without lights photon maps to nothing (no crash, no photons);
 * parameters out of range are refused by name; the registry takes
 * --photons counts and refuses photonk beyond 64. */
static void photon_bad_cases_fail_cleanly(void **state)
{
    (void)state;
    RtScene s;
    rt_scene_init(&s);
    RtError err = {0};
    float m[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
    assert_int_equal(rt_prim_quad(&s, m, -1, "floor", &err), RT_OK);
    assert_int_equal(rt_scene_finish(&s, &err), RT_OK);
    s.light_count = 0;
    RtPipelineParams pp = rt_pipeline_params_default();
    pp.photons.count = 1000;
    RtPipeline *p;
    assert_int_equal(rt_pipeline_create(&s, RT_BACKEND_CPU, 16, 16, &p, &err), RT_OK);
    RtImage img;
    assert_int_equal(rt_image_alloc(&img, 16, 16), RT_OK);
    RtFrameTarget tg = {16, 16, NULL, &img};
    RtFrameStats fs;
    memset(&fs, 0, sizeof fs);
    assert_int_equal(rt_pipeline_frame(p, &pp, 0.0f, NULL, &tg, &fs, &err), RT_OK);
    assert_int_equal(fs.photons.stored[0] + fs.photons.stored[1], 0);
    pp.photons.k = 65;
    assert_int_equal(rt_pipeline_frame(p, &pp, 0.0f, NULL, &tg, &fs, &err), RT_ERR_ARG);
    rt_test_assert_contains(err.msg, "k = 65");
    pp.photons.k = 50;
    pp.photons.max_depth = 0;
    assert_int_equal(rt_pipeline_frame(p, &pp, 0.0f, NULL, &tg, &fs, &err), RT_ERR_ARG);
    rt_test_assert_contains(err.msg, "max_depth");
    rt_pipeline_destroy(p);
    rt_image_free(&img);
    rt_scene_free(&s);
    RtPipelineParams q = rt_pipeline_params_default();
    assert_int_equal(rt_variant_parse(&q, RT_VAR_PHOTONS, "1M", "--photons", &err), RT_OK);
    assert_int_equal(q.photons.count, 1u << 20);
    assert_int_equal(rt_variant_parse(&q, RT_VAR_PHOTONS, "5000", "--photons", &err), RT_OK);
    assert_int_equal(q.photons.count, 5000);
    assert_int_not_equal(rt_variant_parse(&q, RT_VAR_PHOTON_K, "65", NULL, &err), RT_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(photon_emission_carries_the_lights_flux),
        cmocka_unit_test(photon_hit_roulette_follows_the_material),
        cmocka_unit_test(photon_estimate_matches_a_known_irradiance),
        cmocka_unit_test(photon_cpu_frame_is_deterministic_and_adds_light),
        cmocka_unit_test(photon_bad_cases_fail_cleanly),
    };
    return cmocka_run_group_tests_name("photon", tests, NULL, NULL);
}
