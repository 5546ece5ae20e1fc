/* test_gpu_trace.c — the GPU tracer (cuda/trace/trace.cu) against the CPU oracle:
 * for several scenes and every traversal / intersection / ray-map / packet
 * variant, the GPU's closest hit (triangle id and t) equals the CPU brute
 * force for >= 99.99 % of primary and secondary rays (differences are
 * printed and classified), any-hit shadow queries agree likewise, and full
 * images match the CPU renderer within the stated tolerance; the
 * benchmark's diffuse rays (rt_pipeline_cast_diffuse) and their hits are
 * the CPU pipeline's for the same seed. Skips with a message when no GPU is
 * usable.
 *
 * RT_GPU_BENCH=1 adds the benchmark of docs/benchmarks.md (Mrays/s per ray
 * type at 1920x1080 on the default scene and Sponza, every variant);
 * RT_GPU_BENCH_SCENES=sponza,bunny,... runs it alone on the scenes named;
 * RT_GPU_BENCH_TRAVERSAL=stack (a traversal's name) keeps that kd walk's rows
 * alone, for quick A/B runs of one walk; RT_GPU_BENCH_TOP_DEPTH=D builds
 * the "split top" rows' top D levels deep (default split_top.h's);
 * RT_TEST_FILTER="*axis*" runs the tests whose names match. */
#include "trace_check.h"
#include "scene/load.h"
#include "app/pipeline.h"
#include "app/variants.h"
#include "bvh/hploc_gpu.h"

static void need_gpu(void **state)
{
    if (!*state) {
        print_message("skip: no GPU: the GPU tracer tests need one\n");
        skip();
    }
}

/* The hit tests of trace_check.h, on the GPU. */
#define GPU_CHECK(name)                    \
    static void gpu_trace_##name(void **state) \
    {                                      \
        need_gpu(state);                   \
        check_##name(state);               \
    }
GPU_CHECK(soup_hits_match_brute_force)
GPU_CHECK(grid_hits_match_brute_force)
GPU_CHECK(axis_rays_on_split_planes)
GPU_CHECK(default_scene_hits_match_brute_force)
GPU_CHECK(cornell_hits_match_brute_force)
GPU_CHECK(one_triangle_and_empty_batches)
GPU_CHECK(deepest_tree_keeps_every_entry)
GPU_CHECK(parallel_rays_never_hit_at_infinity)

/* Crytek Sponza (../shared/assets; skipped when absent), from the atrium:
 * a real scene's flat cells (the CPU builder's zero-width slabs around
 * planar triangles) and depth, which the generated scenes lack. 96 x 72
 * camera rays plus their shadow and mirror rays, every variant. GPU only:
 * the brute force alone takes a while, the emulated packets far longer. */
static void gpu_trace_sponza_hits_match_brute_force(void **state)
{
    need_gpu(state);
    char buf[1024];
    if (!rt_test_asset("sponza/sponza.obj", buf)) skip();
    Fixture f;
    memset(&f, 0, sizeof f);
    RtError err = {0};
    f.name = "sponza";
    assert_int_equal(rt_scene_load(buf, &f.s, &err), RT_OK);
    RtCamera cam = {{110, 20, -4}, {-50, 40, 0}, {0, 1, 0}, 60.0f}; /* the benchmark's */
    f.s.camera = cam;
    f.s.has_camera = 1;
    f.gpu = 1;
    f.cam_w = 96;
    f.cam_h = 72;
    f.one_entry_limited = 1; /* 99.35 % of the hits agree on the H100 */
    fixture_finish(&f);
    check_fixture(&f, NULL);
    fixture_free(&f);
}

static void gpu_trace_rejects_bad_params(void **state)
{
    need_gpu(state);
    Fixture f;
    soup_fixture(&f, 1, 10, 1);
    RtError err = {0};
    RtTraceParams p = rt_trace_params_default();
    p.stack_size = 0;
    void *img;
    assert_int_equal(rt_gpu_malloc(&img, 16, &err), RT_OK);
    assert_int_equal(rt_trace_gpu(f.gs, RT_ACCEL_OF_KD(&f.dtree), NULL, &f.s.camera, &p, img, 2, 2, NULL, NULL, &err),
                     RT_ERR_ARG);
    assert_non_null(strstr(err.msg, "stack_size"));
    p = rt_trace_params_default();
    p.traversal = 7;
    assert_int_equal(rt_trace_gpu(f.gs, RT_ACCEL_OF_KD(&f.dtree), NULL, &f.s.camera, &p, img, 2, 2, NULL, NULL, &err),
                     RT_ERR_ARG);
    /* the ray cast's 16-byte loads and stores: unaligned arrays are refused
     * before any launch */
    void *buf;
    assert_int_equal(rt_gpu_malloc(&buf, 4 * sizeof(RtGpuRay), &err), RT_OK);
    assert_int_equal(rt_trace_gpu_rays(f.gs, RT_ACCEL_OF_KD(&f.dtree), NULL, (const RtGpuRay *)((char *)buf + 4), (RtHit *)buf, NULL, 1,
                                       1, 0, NULL, &err),
                     RT_ERR_ARG);
    assert_non_null(strstr(err.msg, "16-byte"));
    /* the camera cast: a camera, a size and aligned hits */
    const RtAccel a = *RT_ACCEL_OF_KD(&f.dtree);
    assert_int_equal(rt_trace_gpu_camera_rays(f.gs, &a, NULL, NULL, 2, 2, (RtHit *)buf, NULL, NULL, &err), RT_ERR_ARG);
    assert_int_equal(rt_trace_gpu_camera_rays(f.gs, &a, NULL, &f.s.camera, 0, 2, (RtHit *)buf, NULL, NULL, &err),
                     RT_ERR_ARG);
    assert_non_null(strstr(err.msg, "0x2"));
    assert_int_equal(rt_trace_gpu_camera_rays(f.gs, &a, NULL, &f.s.camera, 1, 1, (RtHit *)((char *)buf + 4), NULL,
                                              NULL, &err),
                     RT_ERR_ARG);
    assert_non_null(strstr(err.msg, "16-byte"));
    rt_gpu_free(buf);
    rt_gpu_free(img);
    fixture_free(&f);
}

static int hits_agree(const RtHit *a, const RtHit *b, float eps);

/* cam's primary rays at w x h cast by rt_trace_gpu_camera_rays into d_hits
 * and read back into made; returns the pixels whose closest triangle is
 * stored's (the cast of the same rays read from memory). */
static uint32_t camera_cast_same(Fixture *f, const RtAccel *a, const RtTraceParams *p, const RtCamera *cam, int w,
                                 int h, void *d_hits, const RtHit *stored, RtHit *made)
{
    RtError err = {0};
    const uint32_t n = (uint32_t)w * (uint32_t)h;
    assert_int_equal(rt_trace_gpu_camera_rays(f->gs, a, p, cam, w, h, d_hits, NULL, NULL, &err), RT_OK);
    assert_int_equal(rt_gpu_memcpy(made, d_hits, n * sizeof *made, RT_COPY_TO_HOST, &err), RT_OK);
    uint32_t same = 0;
    for (uint32_t k = 0; k < n; k++) same += made[k].tri == stored[k].tri;
    return same;
}

/* rt_trace_gpu_camera_rays makes the rays camera_rays stores (pixel
 * centres) and finds their closest hits, in every traversal and test: the
 * same triangles as the stored rays' cast on >= 99.99 % of pixels (a
 * direction the device rounds a bit apart may cross an edge), and the
 * hits' t within the brute force's tolerance where the triangle agrees. */
static void gpu_trace_camera_rays_match_stored_rays(void **state)
{
    need_gpu(state);
    Fixture f;
    default_fixture(&f, 1);
    enum { W = 320, H = 180 };
    RaySet prim = {0};
    camera_rays(&prim, &f.s.camera, W, H);
    const uint32_t n = prim.n;
    RtError err = {0};
    void *d_rays, *d_hits;
    assert_int_equal(rt_gpu_malloc(&d_rays, n * sizeof(RtGpuRay), &err), RT_OK);
    assert_int_equal(rt_gpu_malloc(&d_hits, n * sizeof(RtHit), &err), RT_OK);
    assert_int_equal(rt_gpu_memcpy(d_rays, prim.rays, n * sizeof(RtGpuRay), RT_COPY_TO_DEVICE, &err), RT_OK);
    RtHit *stored = malloc(n * sizeof *stored), *made = malloc(n * sizeof *made);
    assert_true(stored && made);
    const RtAccel a = *RT_ACCEL_OF_KD(&f.dtree);
    RtTraceParams v;
    for (int i = 0; variant(i, &v, &f.walk_bvh); i++) {
        if (f.walk_bvh) continue;
        assert_int_equal(rt_trace_gpu_rays(f.gs, &a, &v, d_rays, d_hits, NULL, n, W, 0, NULL, &err), RT_OK);
        assert_int_equal(rt_gpu_memcpy(stored, d_hits, n * sizeof(RtHit), RT_COPY_TO_HOST, &err), RT_OK);
        const uint32_t same = camera_cast_same(&f, &a, &v, &f.s.camera, W, H, d_hits, stored, made);
        uint32_t hits = 0;
        for (uint32_t k = 0; k < n; k++) {
            hits += stored[k].tri != RT_NO_HIT;
            if (made[k].tri == stored[k].tri && made[k].tri != RT_NO_HIT)
                assert_true(hits_agree(&made[k], &stored[k], rt_gpu_scene_epsilon(f.gs)));
        }
        assert_true(hits > n / 4); /* the view sees the scene */
        if ((double)same < 0.9999 * n) fail_msg("variant %d: %u of %u pixels agree", i, same, n);
    }
    free(stored);
    free(made);
    free(prim.rays);
    rt_gpu_free(d_rays);
    rt_gpu_free(d_hits);
    fixture_free(&f);
}

/* ---- the benchmark's diffuse rays ------------------------------------------------ */

/* hits agree as compare_hits counts them: the same triangle with t within
 * t_tol, a shared-edge tie at the same t, or both misses */
static int hits_agree(const RtHit *a, const RtHit *b, float eps)
{
    if (a->tri == RT_NO_HIT || b->tri == RT_NO_HIT) return a->tri == b->tri;
    return fabsf(a->t - b->t) <= t_tol(a->t, eps);
}

static float max_abs_diff(RtVec3 a, RtVec3 b)
{
    return fmaxf(fabsf(a.x - b.x), fmaxf(fabsf(a.y - b.y), fabsf(a.z - b.z)));
}

/* An animated scene's device vertices come from the GPU's animate stage,
 * equal to the host's to test_gpu_anim.c's tolerances (1e-5 relative
 * positions, 1e-4 normals; nvcc's FMAs and sinf/cosf), not bit for bit: its
 * rays are held to those, and its hits to this share (a ray grazing an edge
 * may change triangles when a corner moves by an ulp). */
#define DIFFUSE_ANIMATED_MIN 0.99
#define DIFFUSE_ANIMATED_POS_TOL 1e-4f
#define DIFFUSE_ANIMATED_DIR_TOL 1e-3f

/* rt_pipeline_cast_diffuse on a CPU and a GPU pipeline over s at t = 0,
 * the same camera and seed. Each backend casts its own primary rays
 * through its own tree (the GPU builder's on the GPU) and makes its diffuse
 * rays with sample.h on the host. On a static scene (the device vertices
 * are the host's), where both primaries hit the same triangle, the
 * directions are the same bits and the origins agree to the hit point's
 * last bits; the diffuse hits must agree there as well. Of all primary and
 * diffuse rays MATCH_MIN agree (a pixel whose primaries differ counts its
 * diffuse ray as a difference); an animated scene as said above. */
static void diffuse_backends_agree(const RtScene *s, const char *name, int animated)
{
    enum { DW = 120, DH = 90 };
    const uint32_t seed = 7;
    const size_t n = (size_t)DW * DH;
    RtError err = {0};
    RtPipelineParams pp = rt_pipeline_params_default();
    RtCamera cam;
    assert_int_equal(rt_scene_camera_at(s, 0.0f, &cam, &err), RT_OK);
    RtImage img;
    assert_int_equal(rt_image_alloc(&img, DW, DH), RT_OK);
    RtPipeline *pipe[2] = {NULL, NULL}; /* CPU, GPU */
    RtDiffuseCast dc[2];
    for (int g = 0; g < 2; g++) {
        RtStatus st = rt_pipeline_create(s, g ? RT_BACKEND_GPU : RT_BACKEND_CPU, DW, DH, &pipe[g], &err);
        RtFrameTarget target = {DW, DH, NULL, &img};
        if (st == RT_OK) st = rt_pipeline_frame(pipe[g], &pp, 0.0f, &cam, &target, NULL, &err);
        memset(&dc[g], 0, sizeof dc[g]);
        dc[g].primary = malloc(n * sizeof(RtHit));
        dc[g].hit = malloc(n * sizeof(RtHit));
        dc[g].ray = malloc(n * sizeof(RtRay));
        assert_true(dc[g].primary && dc[g].hit && dc[g].ray);
        if (st == RT_OK) st = rt_pipeline_cast_diffuse(pipe[g], &pp, &cam, DW, DH, seed, &dc[g], &err);
        if (st != RT_OK) fail_msg("%s (%s): %s", name, g ? "GPU" : "CPU", err.msg);
    }
    RtTriArrays tris;
    assert_int_equal(rt_tri_arrays_make(s, &tris, NULL), RT_OK);
    const float eps = rt_render_ray_eps(&tris);
    uint64_t rays = 0, agree = 0, both = 0, same_dir = 0, same_origin = 0;
    int shown = 0;
    for (size_t i = 0; i < n; i++) {
        const RtHit *pc = &dc[0].primary[i], *pg = &dc[1].primary[i];
        rays++;
        agree += hits_agree(pc, pg, eps);
        if (pc->tri == RT_NO_HIT && pg->tri == RT_NO_HIT) continue;
        rays++; /* a diffuse ray on one side at least */
        if (pc->tri != pg->tri) continue;
        both++;
        const RtRay *rc = &dc[0].ray[i], *rg = &dc[1].ray[i];
        int dir_same = !memcmp(&rc->d, &rg->d, sizeof rc->d), org_same = !memcmp(&rc->o, &rg->o, sizeof rc->o);
        same_dir += dir_same;
        same_origin += org_same;
        float oscale = fmaxf(fabsf(rc->o.x), fmaxf(fabsf(rc->o.y), fabsf(rc->o.z)));
        float pos_tol = animated ? DIFFUSE_ANIMATED_POS_TOL : T_REL_TOL;
        int close = (animated ? max_abs_diff(rc->d, rg->d) <= DIFFUSE_ANIMATED_DIR_TOL : dir_same) &&
                    max_abs_diff(rc->o, rg->o) <= pos_tol * oscale + T_EPS_TOL * eps;
        int ok = close && hits_agree(&dc[0].hit[i], &dc[1].hit[i], eps);
        agree += ok;
        if (!ok && shown++ < 2)
            print_message("    %s pixel %zu: diffuse o=(%.9g %.9g %.9g) d=(%.9g %.9g %.9g): cpu %d t=%.9g, gpu %d "
                          "t=%.9g (gpu ray o=(%.9g %.9g %.9g) d=(%.9g %.9g %.9g))\n", name, i, rc->o.x, rc->o.y,
                          rc->o.z, rc->d.x, rc->d.y, rc->d.z, (int)dc[0].hit[i].tri, dc[0].hit[i].t,
                          (int)dc[1].hit[i].tri, dc[1].hit[i].t, rg->o.x, rg->o.y, rg->o.z, rg->d.x, rg->d.y,
                          rg->d.z);
    }
    double frac = (double)agree / (double)rays, need = animated ? DIFFUSE_ANIMATED_MIN : MATCH_MIN;
    print_message("  %s diffuse: cpu %llu rays %llu hits, gpu %llu rays %llu hits (%.3f ms); %llu pixels with "
                  "the same primary triangle: directions %llu, origins %llu bit-identical; %.5f%% of %llu "
                  "rays agree (need %.2f%%)\n", name, (unsigned long long)dc[0].rays,
                  (unsigned long long)dc[0].hits, (unsigned long long)dc[1].rays, (unsigned long long)dc[1].hits,
                  dc[1].ms, (unsigned long long)both, (unsigned long long)same_dir,
                  (unsigned long long)same_origin, 100 * frac, (unsigned long long)rays, 100 * need);
    assert_true(dc[0].rays > 0);
    assert_true(dc[1].ms > 0);
    if (!animated) assert_int_equal(same_dir, both);
    assert_true(frac >= need);
    for (int g = 0; g < 2; g++) {
        free(dc[g].primary);
        free(dc[g].hit);
        free(dc[g].ray);
        rt_pipeline_destroy(pipe[g]);
    }
    rt_tri_arrays_free(&tris);
    rt_image_free(&img);
}

/* Static scenes (a random soup, the closed Cornell box, where nearly every
 * diffuse ray hits) and the benchmark's default scene (animated). */
static void gpu_trace_diffuse_rays_and_hits_match_cpu(void **state)
{
    need_gpu(state);
    Fixture f;
    soup_fixture(&f, 0, 1500, 0xd1f);
    diffuse_backends_agree(&f.s, "soup", 0);
    fixture_free(&f);
    memset(&f, 0, sizeof f);
    if (cornell_fixture(&f, 0)) {
        diffuse_backends_agree(&f.s, "cornell", 0);
        fixture_free(&f);
    }
    RtScene s;
    RtError err = {0};
    rt_scene_init(&s);
    assert_int_equal(rt_scene_make_default(&s, &err), RT_OK);
    assert_true(rt_anim_is_dynamic(&s.anim));
    diffuse_backends_agree(&s, "default", 1);
    rt_scene_free(&s);
}

/* ---- images ------------------------------------------------------------------ */

/* GPU render vs rt_render_cpu with the same conventions; returns the
 * fraction of pixels within PIXEL_TOL in every channel. */
static double compare_render(Fixture *f, const RtTraceParams *tp, int w, int h, double *id_match)
{
    RtError err = {0};
    RtImage cpu, gpu;
    assert_int_equal(rt_image_alloc(&cpu, w, h), RT_OK);
    assert_int_equal(rt_image_alloc(&gpu, w, h), RT_OK);
    uint32_t *ids_c = malloc((size_t)w * h * 4), *ids_g = malloc((size_t)w * h * 4);
    assert_non_null(ids_c);
    assert_non_null(ids_g);
    RtRenderParams rp = rt_render_params_default();
    rp.shade.max_bounces = tp->shade.max_bounces;
    rp.shade.tex_filter = tp->shade.tex_filter;
    rp.use_woop = tp->isect == RT_ISECT_WOOP;
    RtRenderStats cs;
    /* the CPU walks the host copy of the structure the GPU walks */
    const RtAccel host = f->walk_bvh ? rt_accel_bvh(&f->bvh) : rt_accel_kd(&f->tree), dev = fixture_accel(f);
    assert_int_equal(rt_render_cpu(&f->s, &f->tris, &host, NULL, &f->s.camera, &rp, &cpu, ids_c, &cs, &err), RT_OK);
    void *d_img, *d_ids;
    assert_int_equal(rt_gpu_malloc(&d_img, (size_t)w * h * 4, &err), RT_OK);
    assert_int_equal(rt_gpu_malloc(&d_ids, (size_t)w * h * 4, &err), RT_OK);
    RtTraceStats gst;
    RtStatus st = rt_trace_gpu(f->gs, &dev, NULL, &f->s.camera, tp, d_img, w, h, d_ids, &gst, &err);
    if (st != RT_OK) print_message("%s\n", err.msg);
    assert_int_equal(st, RT_OK);
    assert_int_equal(rt_gpu_memcpy(gpu.rgba, d_img, (size_t)w * h * 4, RT_COPY_TO_HOST, &err), RT_OK);
    assert_int_equal(rt_gpu_memcpy(ids_g, d_ids, (size_t)w * h * 4, RT_COPY_TO_HOST, &err), RT_OK);
    size_t n = (size_t)w * h, close = 0, same_id = 0;
    double sum = 0;
    int worst = 0;
    for (size_t i = 0; i < n; i++) {
        int ok = 1;
        for (int k = 0; k < 4; k++) {
            int d = abs((int)cpu.rgba[4 * i + k] - (int)gpu.rgba[4 * i + k]);
            sum += d;
            if (d > worst) worst = d;
            if (d > PIXEL_TOL) ok = 0;
        }
        close += ok;
        same_id += ids_c[i] == ids_g[i];
    }
    double frac = (double)close / n;
    *id_match = (double)same_id / n;
    print_message("  %s %s %dx%d: %.3f%% of pixels within %d/255, mean |diff| %.3f, worst %d, ids "
                  "%.3f%% equal; rays cpu %llu/%llu/%llu gpu %llu/%llu/%llu (primary/shadow/"
                  "reflection), gpu %.3f ms\n", f->name, f->walk_bvh ? "lbvh" : "kd", w, h, 100 * frac, PIXEL_TOL, sum / (4.0 * n),
                  worst, 100 * *id_match, (unsigned long long)cs.primary_rays,
                  (unsigned long long)cs.shadow_rays, (unsigned long long)cs.reflection_rays,
                  (unsigned long long)gst.primary_rays, (unsigned long long)gst.shadow_rays,
                  (unsigned long long)gst.reflection_rays, gst.ms);
    assert_int_equal(gst.primary_rays, (uint64_t)n);
    if (frac < PIXEL_MIN) {
        char path[128];
        snprintf(path, sizeof path, "/tmp/rt_test_gpu_trace_%s_gpu.png", f->name);
        rt_image_write_png(&gpu, path, &err);
        snprintf(path, sizeof path, "/tmp/rt_test_gpu_trace_%s_cpu.png", f->name);
        rt_image_write_png(&cpu, path, &err);
    }
    rt_gpu_free(d_img);
    rt_gpu_free(d_ids);
    free(ids_c);
    free(ids_g);
    rt_image_free(&cpu);
    rt_image_free(&gpu);
    return frac;
}

/* Returns 1 when the three variants' images match the CPU render. */
static int check_images(Fixture *f)
{
    RtTraceParams p = rt_trace_params_default();
    double ids, ids2, ids3;
    double a = compare_render(f, &p, 320, 240, &ids);
    /* two other corners of the variant space */
    p.packet = RT_PACKET_WARP;
    double c = compare_render(f, &p, 320, 240, &ids3);
    p.packet = RT_PACKET_OFF;
    p.traversal = RT_TRAV_RESTART;
    p.isect = RT_ISECT_MT;
    p.ray_map = RT_RAYMAP_ROWS;
    double b = compare_render(f, &p, 320, 240, &ids2);
    /* the BVH: the GPU's LBVH against the CPU renderer's walk of the CPU's */
    double ids4;
    f->walk_bvh = 1;
    double d = compare_render(f, &p, 320, 240, &ids4);
    f->walk_bvh = 0;
    return a >= PIXEL_MIN && b >= PIXEL_MIN && c >= PIXEL_MIN && d >= PIXEL_MIN && ids >= 0.999 &&
           ids2 >= 0.999 && ids3 >= 0.999 && ids4 >= 0.999;
}

static void gpu_trace_default_scene_image_matches_cpu(void **state)
{
    need_gpu(state);
    Fixture f;
    default_fixture(&f, 1);
    int ok = check_images(&f);
    fixture_free(&f);
    assert_true(ok);
}

static void gpu_trace_cornell_image_matches_cpu(void **state)
{
    need_gpu(state);
    Fixture f;
    memset(&f, 0, sizeof f);
    if (!cornell_fixture(&f, 1)) skip();
    int ok = check_images(&f);
    fixture_free(&f);
    assert_true(ok);
}

/* The textured scene: map_Kd (sRGB, trilinear by the ray cone and
 * bilinear, wrap) and map_d cutouts. */
static void gpu_trace_textured_image_matches_cpu(void **state)
{
    need_gpu(state);
    char path[1024];
    const char *me = __FILE__, *tail = strstr(me, "tests/test_gpu_trace.c");
    snprintf(path, sizeof path, "%.*sscenes/textured/textured.obj", tail ? (int)(tail - me) : 0, me);
    Fixture f;
    RtError err = {0};
    f.name = "textured";
    if (rt_scene_load(path, &f.s, &err) != RT_OK) {
        print_message("skip: %s\n", err.msg);
        skip();
    }
    RtCamera cam = {v3(0.4f, 1.5f, 4.5f), v3(0.0f, 0.7f, -0.5f), v3(0, 1, 0), 55.0f};
    f.s.camera = cam; /* test_render.c's textured_camera */
    f.s.has_camera = 1;
    f.gpu = 1;
    fixture_finish(&f);
    RtTraceParams p = rt_trace_params_default();
    double ids;
    double frac = compare_render(&f, &p, 320, 240, &ids);
    p.shade.tex_filter = RT_TEX_BILINEAR;
    double ids_bilinear;
    double bilinear_frac = compare_render(&f, &p, 320, 240, &ids_bilinear);
    p.shade.tex_filter = RT_TEX_TRILINEAR;
    /* heatmap mode: the same pixels, coloured by kd nodes visited */
    p.shade.heatmap = 1;
    double ids_heat;
    double heat_frac = compare_render(&f, &p, 320, 240, &ids_heat);
    fixture_free(&f);
    assert_true(frac >= PIXEL_MIN);
    assert_true(ids >= 0.999);
    assert_true(bilinear_frac >= PIXEL_MIN);
    assert_true(ids_bilinear >= 0.999);
    assert_true(ids_heat >= 0.999);
    assert_true(heat_frac < PIXEL_MIN); /* a heatmap is not the shaded image */
}

/* ---- benchmark (RT_GPU_BENCH=1) ------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median GPU ms of `runs` casts after 2 warm-up casts: of the n rays at
 * d_rays, or (cam non-NULL) of cam's primary rays made in the kernel. */
static double bench_cast(Fixture *f, const RtTraceParams *p, const RtCamera *cam, void *d_rays, void *d_hits,
                         uint32_t n, int width, int any)
{
    enum { RUNS = 7 };
    double ms[RUNS];
    RtError err = {0};
    const RtAccel a = fixture_accel(f);
    for (int i = 0; i < 2 + RUNS; i++) {
        double t = 0;
        if (cam)
            assert_int_equal(rt_trace_gpu_camera_rays(f->gs, &a, p, cam, width, (int)(n / (uint32_t)width), d_hits,
                                                      NULL, &t, &err),
                             RT_OK);
        else
            assert_int_equal(rt_trace_gpu_rays(f->gs, &a, p, d_rays, d_hits, NULL, n, width, any, &t, &err),
                             RT_OK);
        if (i >= 2) ms[i - 2] = t;
    }
    qsort(ms, RUNS, sizeof ms[0], cmp_double);
    return ms[RUNS / 2];
}

/* Mrays/s of primary, shadow (any hit) and reflection rays, the full
 * frame's median ms (primary + shadows + 1 bounce, shaded), and Mrays/s of
 * the primary rays made in the kernel (as the peers make theirs), for one
 * variant. */
static void bench_variant(Fixture *f, const RtCamera *cam, const RtTraceParams *v,
                          const RaySet *prim, const RaySet *shadow, const RaySet *refl,
                          void *d_rays, void *d_hits, void *d_img, int w, int h, double out[5])
{
    RtError err = {0};
    const RaySet *sets[3] = {prim, shadow, refl};
    for (int s = 0; s < 3; s++) {
        /* reflection rays are stored compacted (hits only), width w as well */
        assert_int_equal(rt_gpu_memcpy(d_rays, sets[s]->rays, sets[s]->n * sizeof(RtGpuRay),
                                       RT_COPY_TO_DEVICE, &err), RT_OK);
        double ms = bench_cast(f, v, NULL, d_rays, d_hits, sets[s]->n, w, s == 1);
        out[s] = sets[s]->n / (ms * 1e3);
    }
    out[4] = prim->n / (bench_cast(f, v, cam, NULL, d_hits, prim->n, w, 0) * 1e3);
    double frame[5];
    for (int k = 0; k < 7; k++) {
        RtTraceStats st;
        const RtAccel a = fixture_accel(f);
        assert_int_equal(rt_trace_gpu(f->gs, &a, NULL, cam, v, d_img, w, h, NULL, &st, &err), RT_OK);
        if (k >= 2) frame[k - 2] = st.ms;
    }
    qsort(frame, 5, sizeof frame[0], cmp_double);
    out[3] = frame[2];
}

/* bvh_only: the BVH walk's rows alone (RT_GPU_BENCH=2, for quick A/B runs). */
static void bench_scene(Fixture *f, const RtCamera *cam, const char *gpu_name, int bvh_only)
{
    const int w = 1920, h = 1080;
    RtError err = {0};
    RaySet prim = {0}, shadow = {0}, refl = {0};
    camera_rays(&prim, cam, w, h);
    uint32_t n = prim.n;
    void *d_rays, *d_hits, *d_img;
    size_t cap = (size_t)n * (f->s.light_count + 1);
    assert_int_equal(rt_gpu_malloc(&d_rays, cap * sizeof(RtGpuRay), &err), RT_OK);
    assert_int_equal(rt_gpu_malloc(&d_hits, cap * sizeof(RtHit), &err), RT_OK);
    assert_int_equal(rt_gpu_malloc(&d_img, (size_t)w * h * 4, &err), RT_OK);
    RtHit *hits = malloc(n * sizeof *hits);
    assert_non_null(hits);
    /* secondary rays start at the default variant's primary hits */
    RtTraceParams p = rt_trace_params_default();
    assert_int_equal(rt_gpu_memcpy(d_rays, prim.rays, n * sizeof(RtGpuRay), RT_COPY_TO_DEVICE, &err), RT_OK);
    assert_int_equal(rt_trace_gpu_rays(f->gs, RT_ACCEL_OF_KD(&f->dtree), &p, d_rays, d_hits, NULL, n, w, 0, NULL,
                                       &err), RT_OK);
    assert_int_equal(rt_gpu_memcpy(hits, d_hits, n * sizeof *hits, RT_COPY_TO_HOST, &err), RT_OK);
    {   /* the rays the camera cast makes in its kernel are these (the
         * device's arithmetic may round a direction's last bit apart) */
        RtHit *cam_hits = malloc(n * sizeof *cam_hits);
        assert_non_null(cam_hits);
        const uint32_t same = camera_cast_same(f, RT_ACCEL_OF_KD(&f->dtree), &p, cam, w, h, d_hits, hits, cam_hits);
        print_message("BENCH %s: the camera cast's closest hits equal the stored rays' on %u of %u pixels\n",
                      f->name, same, n);
        assert_true((double)same >= 0.9999 * n);
        free(cam_hits);
    }
    /* shadow rays per light in pixel order (one light after the other) */
    RaySet sh_one = {0};
    for (uint32_t l = 0; l < f->s.light_count; l++) {
        RtScene only = f->s;
        only.lights = &f->s.lights[l];
        only.light_count = 1;
        Fixture g = *f;
        g.s = only;
        RaySet dummy = {0};
        sh_one.n = 0;
        secondary_rays(&g, &prim, hits, rt_gpu_scene_epsilon(f->gs), &sh_one, l == 0 ? &refl : &dummy);
        for (uint32_t i = 0; i < sh_one.n; i++)
            rays_push(&shadow, sh_one.rays[i].o, sh_one.rays[i].d, sh_one.rays[i].tmin, sh_one.rays[i].tmax);
        free(dummy.rays);
    }
    free(sh_one.rays);
    uint32_t hit_count = 0;
    for (uint32_t i = 0; i < n; i++) hit_count += hits[i].tri != RT_NO_HIT;
    print_message("BENCH %s on %s: %u triangles, kd nodes %u, 1920x1080: %u primary hits, %u shadow "
                  "rays, %u reflection rays\n", f->name, gpu_name, f->s.tri_count, f->tree.node_count,
                  hit_count, shadow.n, refl.n);
    print_message("BENCH | traversal | isect | leaf skip | ray map | packet | primary Mrays/s | "
                  "shadow (any hit) Mrays/s | reflection Mrays/s | full frame ms | primary, made in the kernel, "
                  "Mrays/s |\n");
    RtTraceParams v;
    double r[5];
    /* every variant over the LBVH (and the kd-tree), then the BVH walk again
     * over the H-PLOC tree of the same triangles (the `bvh` structure): what
     * a better tree buys the same loop */
    static const char *const bvh_label[2][3] = {
        {"LBVH (stack)", "H-PLOC (stack)", "H-PLOC + split top (stack)"},
        {"LBVH (stack, rows by id)", "H-PLOC (stack, rows by id)", "H-PLOC + split top (stack, rows by id)"}};
    const char *only_walk = getenv("RT_GPU_BENCH_TRAVERSAL");
    RtHplocGpu *hb = NULL;
    const RtBvh lbvh_tree = f->dbvh;
    for (int tree = 0; tree < (only_walk ? 1 : 3); tree++) {
        if (tree >= 1) { /* 2: under the spatial-split top (split_top.h's defaults) */
            RtHplocParams hp = rt_hploc_params_default();
            RtTriArrays d = rt_gpu_scene_tris(f->gs);
            RtHplocGpuStats hs;
            memset(&f->dbvh, 0, sizeof f->dbvh);
            if (!hb) assert_int_equal(rt_hploc_gpu_create(&hb, &err), RT_OK);
            RtSplitTopParams top = rt_split_top_params_default();
            const char *depth = getenv("RT_GPU_BENCH_TOP_DEPTH");
            if (depth) top.depth = atoi(depth);
            assert_int_equal(rt_hploc_gpu_set_top(hb, tree == 2 ? &top : NULL, &err), RT_OK);
            assert_int_equal(rt_hploc_gpu_build(hb, &hp, d.verts, d.woop, d.count, &f->dbvh, NULL, &err), RT_OK);
            assert_int_equal(rt_hploc_gpu_build_finish(hb, &hs, &err), RT_OK);
            fixture_views(f);
        }
        for (int i = 0; variant(i, &v, &f->walk_bvh); i++) {
            if ((tree >= 1 || v.stack_size < 2 || bvh_only) && !f->walk_bvh) continue;
            if (only_walk &&
                (f->walk_bvh || strcmp(rt_variant_value_name(RT_VAR_TRAVERSAL, v.traversal), only_walk) != 0))
                continue;
            bench_variant(f, cam, &v, &prim, &shadow, &refl, d_rays, d_hits, d_img, w, h, r);
            print_message("BENCH | %s | %s | %s | %s | %s | %.0f | %.0f | %.0f | %.3f | %.0f |\n",
                          f->walk_bvh ? bvh_label[f->walk_bvh - 1][tree]
                                      : rt_variant_value_name(RT_VAR_TRAVERSAL, v.traversal),
                          rt_variant_value_name(RT_VAR_ISECT, v.isect), v.leaf_skip ? "yes" : "no",
                          v.ray_map ? "4x8" : "rows", rt_variant_value_name(RT_VAR_PACKETS, v.packet), r[0], r[1],
                          r[2], r[3], r[4]);
        }
    }
    f->walk_bvh = 0;
    f->dbvh = lbvh_tree;
    fixture_views(f);
    rt_hploc_gpu_destroy(hb);
    /* the default walk over the tree a frame traces: the GPU's own build of
     * the same triangles, with its default parameters, or with each of the
     * settings RT_GPU_BENCH_BUILD lists (';' between builds, each as
     * `rtviewer --build` takes it, e.g. "leaf=32;ce=10;builder=1") */
    if (!bvh_only) {
        const char *list = getenv("RT_GPU_BENCH_BUILD");
        char builds[512];
        snprintf(builds, sizeof builds, "%s", list && *list ? list : "");
        RtKdGpu *kb = NULL;
        assert_int_equal(rt_kd_gpu_create(&kb, &err), RT_OK);
        const RtTriArrays d = rt_gpu_scene_tris(f->gs);
        const RtKdTree oracle = f->dtree;
        char *save = NULL;
        char *one = strtok_r(builds, ";", &save); /* NULL: the defaults, once */
        do {
            const char *setting = one ? one : "default";
            RtPipelineParams pp = rt_pipeline_params_default();
            if (one) {
                if (rt_variant_parse_list(&pp, RT_SCOPE_BUILD, one, &err) != RT_OK) fail_msg("%s", err.msg);
            }
            RtKdTree gpu_tree;
            RtKdGpuStats ks;
            assert_int_equal(rt_kd_gpu_build(kb, &pp.build, d.verts, d.woop, d.count, &gpu_tree, &ks, &err), RT_OK);
            f->dtree = gpu_tree;
            v = rt_trace_params_default();
            bench_variant(f, cam, &v, &prim, &shadow, &refl, d_rays, d_hits, d_img, w, h, r);
            print_message("BENCH | %s, GPU-built tree (%s: %u nodes, %u references, %.3f ms) | %s | %s | %s | %s | "
                          "%.0f | %.0f | %.0f | %.3f | %.0f |\n",
                          rt_variant_value_name(RT_VAR_TRAVERSAL, v.traversal), setting, ks.nodes, ks.references,
                          ks.gpu_ms, rt_variant_value_name(RT_VAR_ISECT, v.isect), v.leaf_skip ? "yes" : "no",
                          v.ray_map ? "4x8" : "rows", rt_variant_value_name(RT_VAR_PACKETS, v.packet), r[0], r[1],
                          r[2], r[3], r[4]);
        } while (one && (one = strtok_r(NULL, ";", &save)));
        f->dtree = oracle;
        rt_kd_gpu_destroy(kb);
    }
    /* the short stack's size, on the fastest combination of the rest */
    print_message("BENCH stack | short-stack entries (shortstack, woop, no leaf skip, 4x8, no "
                  "packets) | primary Mrays/s | shadow Mrays/s | reflection Mrays/s | full frame ms |\n");
    static const int sizes[] = {1, 2, 4, 8, 16};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0] && !bvh_only && !only_walk; k++) {
        v = rt_trace_params_default();
        v.traversal = RT_TRAV_SHORT_STACK;
        v.isect = RT_ISECT_WOOP;
        v.leaf_skip = 0;
        v.ray_map = RT_RAYMAP_TILES;
        v.packet = RT_PACKET_OFF;
        v.stack_size = sizes[k];
        bench_variant(f, cam, &v, &prim, &shadow, &refl, d_rays, d_hits, d_img, w, h, r);
        print_message("BENCH stack | %d | %.0f | %.0f | %.0f | %.3f |\n", sizes[k], r[0], r[1], r[2],
                      r[3]);
    }
    free(hits);
    free(prim.rays);
    free(shadow.rays);
    free(refl.rays);
    rt_gpu_free(d_rays);
    rt_gpu_free(d_hits);
    rt_gpu_free(d_img);
}

static void gpu_trace_benchmark(void **state)
{
    need_gpu(state);
    const char *b = getenv("RT_GPU_BENCH");
    if (!b || (atoi(b) != 1 && atoi(b) != 2)) {
        print_message("skip: benchmark runs with RT_GPU_BENCH=1 (2: the BVH walk alone)\n");
        skip();
    }
    const char *gpu_name = rt_gpu_info((RtGpu *)*state)->name;
    const int bvh_only = atoi(b) == 2;
    /* RT_GPU_BENCH_SCENES: the scenes to bench (names, e.g. "sponza,bunny"; the
     * built-in scene is "default"), for profiler runs of one scene's casts */
    const char *only = getenv("RT_GPU_BENCH_SCENES");
    Fixture f;
    if (!bvh_only && (!only || strstr(only, "default"))) {
        default_fixture(&f, 1);
        bench_scene(&f, &f.s.camera, gpu_name, 0);
        fixture_free(&f);
    }
    /* the real scenes (each skipped with a message when its asset is absent):
     * Sponza inside the atrium (docs/renderer.md's camera), the BART kitchen
     * from its own camera at t = 0, the bunny from the framed default view */
    static const struct { const char *asset, *name; int own_camera; RtCamera cam; } scenes[] = {
        {"sponza/sponza.obj", "sponza", 0, {{110, 20, -4}, {-50, 40, 0}, {0, 1, 0}, 60.0f}},
        {"bart/kitchen/aff/kitchen.aff", "kitchen", 1, {{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, 60.0f}},
        {"models/bunny.obj", "bunny", 1, {{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, 60.0f}},
    };
    for (size_t k = 0; k < sizeof scenes / sizeof scenes[0]; k++) {
        char buf[1024];
        if (!rt_test_asset(scenes[k].asset, buf) || (bvh_only && strcmp(scenes[k].name, "kitchen") == 0) ||
            (only && !strstr(only, scenes[k].name)))
            continue;
        RtError err = {0};
        memset(&f, 0, sizeof f);
        f.name = scenes[k].name;
        double t0 = rt_now_ms();
        assert_int_equal(rt_scene_load(buf, &f.s, &err), RT_OK);
        f.gpu = 1;
        fixture_finish(&f);
        print_message("BENCH %s loaded + CPU kd-tree in %.0f ms\n", f.name, rt_now_ms() - t0);
        RtCamera cam = scenes[k].own_camera ? f.s.camera : scenes[k].cam;
        bench_scene(&f, &cam, gpu_name, bvh_only);
        fixture_free(&f);
    }
}

/* ---- main ------------------------------------------------------------------------ */

static int gpu_setup(void **state)
{
    RtGpu *gpu = NULL;
    RtError err = {0};
    if (rt_gpu_create(0, &gpu, &err) != RT_OK) {
        print_message("skip: no GPU: %s\n", err.msg);
        gpu = NULL;
    } else {
        print_message("GPU: %s\n", rt_gpu_info(gpu)->name);
    }
    *state = gpu;
    return 0;
}

static int gpu_teardown(void **state)
{
    rt_gpu_destroy((RtGpu *)*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_trace_one_triangle_and_empty_batches),
        cmocka_unit_test(gpu_trace_deepest_tree_keeps_every_entry),
        cmocka_unit_test(gpu_trace_parallel_rays_never_hit_at_infinity),
        cmocka_unit_test(gpu_trace_rejects_bad_params),
        cmocka_unit_test(gpu_trace_camera_rays_match_stored_rays),
        cmocka_unit_test(gpu_trace_soup_hits_match_brute_force),
        cmocka_unit_test(gpu_trace_grid_hits_match_brute_force),
        cmocka_unit_test(gpu_trace_axis_rays_on_split_planes),
        cmocka_unit_test(gpu_trace_default_scene_hits_match_brute_force),
        cmocka_unit_test(gpu_trace_cornell_hits_match_brute_force),
        cmocka_unit_test(gpu_trace_sponza_hits_match_brute_force),
        cmocka_unit_test(gpu_trace_diffuse_rays_and_hits_match_cpu),
        cmocka_unit_test(gpu_trace_default_scene_image_matches_cpu),
        cmocka_unit_test(gpu_trace_cornell_image_matches_cpu),
        cmocka_unit_test(gpu_trace_textured_image_matches_cpu),
        cmocka_unit_test(gpu_trace_benchmark),
    };
    /* RT_GPU_QUICK=1: a subset that still runs every kernel and variant,
     * for slow runs such as compute-sanitizer (docs/trace_gpu.md). */
    const struct CMUnitTest quick[] = {
        cmocka_unit_test(gpu_trace_one_triangle_and_empty_batches),
        cmocka_unit_test(gpu_trace_deepest_tree_keeps_every_entry),
        cmocka_unit_test(gpu_trace_parallel_rays_never_hit_at_infinity),
        cmocka_unit_test(gpu_trace_soup_hits_match_brute_force),
        cmocka_unit_test(gpu_trace_textured_image_matches_cpu),
        cmocka_unit_test(gpu_trace_default_scene_image_matches_cpu),
        cmocka_unit_test(gpu_trace_benchmark), /* with RT_GPU_BENCH=1 only */
    };
    /* RT_GPU_BENCH=2 (the BVH walk's rows) or RT_GPU_BENCH_SCENES: the
     * benchmark alone (profiler runs) */
    const struct CMUnitTest bench_only[] = {cmocka_unit_test(gpu_trace_benchmark)};
    /* RT_TEST_FILTER: only the tests whose names match (cmocka's * and ?
     * wildcards, e.g. "*axis*"), for short runs on the GPU machine */
    const char *filter = getenv("RT_TEST_FILTER");
    if (filter) cmocka_set_test_filter(filter);
    const char *b = getenv("RT_GPU_BENCH");
    if (b && (atoi(b) == 2 || getenv("RT_GPU_BENCH_SCENES")))
        return cmocka_run_group_tests_name("gpu_trace_bench", bench_only, gpu_setup, gpu_teardown);
    const char *q = getenv("RT_GPU_QUICK");
    if (q && atoi(q) == 1)
        return cmocka_run_group_tests_name("gpu_trace_quick", quick, gpu_setup, gpu_teardown);
    return cmocka_run_group_tests_name("gpu_trace", tests, gpu_setup, gpu_teardown);
}
