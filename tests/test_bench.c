/* test_bench.c — the headless benchmark (bench.h): on the default scene at a
 * small size (2 measured frames after 1 warm-up) its JSON is valid and has
 * every field the benchmark reports (scene, triangles, GPU and driver, params,
 * per-frame and median stage times, launches, round trips, tree
 * statistics, rays/s, peak GPU memory), its CSV has one row per measured
 * frame, and an unwritable output path is a clear error before anything
 * runs. The CPU path runs everywhere; the GPU variant skips without a GPU.
 * The diffuse pass (rt_pipeline_cast_diffuse) on the CPU: its primary and
 * diffuse hits are the brute force's, its rays the ones sample.h makes for
 * the pixel and the seed, at any thread count, with or without a tree, for
 * 0, 1 and many rays. (The GPU's against the CPU's: test_gpu_trace.c.)
 * The trace per ray type (rt_pipeline_ray_rates): the passes' differences,
 * and the frame's image kept, on both backends. */
#include "test_util.h"

#include <ctype.h>
#include <math.h>

#include "app/bench.h"
#include "app/pipeline.h"
#include "gpu/gpu.h"
#include "app/headless.h"
#include "scene/load.h"
#include "scene/runners.h"
#include "render/sample.h"

/* ---- a minimal JSON reader: syntax check + "does this object have key K" -- */

typedef struct Json {
    const char *p;
    int ok;
} Json;

static void js_ws(Json *j)
{
    while (isspace((unsigned char)*j->p)) j->p++;
}

static void js_value(Json *j);

static void js_string(Json *j)
{
    if (*j->p != '"') {
        j->ok = 0;
        return;
    }
    for (j->p++; *j->p && *j->p != '"'; j->p++)
        if (*j->p == '\\' && j->p[1]) j->p++;
    if (*j->p != '"') j->ok = 0;
    else j->p++;
}

static void js_container(Json *j, char close, int keyed)
{
    j->p++;
    js_ws(j);
    if (*j->p == close) {
        j->p++;
        return;
    }
    while (j->ok) {
        js_ws(j);
        if (keyed) {
            js_string(j);
            js_ws(j);
            if (*j->p++ != ':') j->ok = 0;
        }
        js_value(j);
        js_ws(j);
        if (*j->p == ',') j->p++;
        else if (*j->p == close) {
            j->p++;
            return;
        } else {
            j->ok = 0;
        }
    }
}

static void js_value(Json *j)
{
    js_ws(j);
    if (!j->ok) return;
    char c = *j->p;
    if (c == '{') js_container(j, '}', 1);
    else if (c == '[') js_container(j, ']', 0);
    else if (c == '"') js_string(j);
    else if (!strncmp(j->p, "true", 4)) j->p += 4;
    else if (!strncmp(j->p, "false", 5)) j->p += 5;
    else if (!strncmp(j->p, "null", 4)) j->p += 4;
    else {
        char *end;
        strtod(j->p, &end);
        if (end == j->p) j->ok = 0;
        j->p = end;
    }
}

static int json_valid(const char *text)
{
    Json j = {text, 1};
    js_value(&j);
    js_ws(&j);
    return j.ok && *j.p == 0;
}

/* The text of the value of "key" inside `scope` (first occurrence), or NULL. */
static const char *json_find(const char *scope, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *k = strstr(scope, pat);
    if (!k) return NULL;
    k += strlen(pat);
    while (*k == ' ') k++;
    return k;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

/* ---- the runs ----------------------------------------------------------------- */

static void small_bench_options(RtOptions *o, int cpu, const char *json, const char *csv)
{
    rt_options_default(o);
    o->bench = 1;
    o->headless = 1;
    o->cpu = cpu;
    o->width = 64;
    o->height = 48;
    o->frames = 2;
    o->warmup = 1;
    o->json_path = json;
    o->csv_path = csv;
    o->log_level = RT_LOG_WARN;
}

/* The per-frame keys the issue names (stage times per ray type, launches,
 * round trips, tree statistics, rays/s). */
static const char *const kFrameKeys[] = {
    "t", "structure", "animate_ms", "build_ms", "build_large_ms", "build_small_ms", "launches",
    "round_trips", "trace_ms", "trace_primary_ms", "trace_shadow_ms", "trace_reflection_ms", "frame_ms",
    "primary_rays", "shadow_rays", "reflection_rays", "mrays_per_s", "nodes", "leaves", "depth",
    "references", "sah_cost", "gpu_mem_mb", "trace_diffuse_ms", "diffuse_rays", "diffuse_mrays_per_s"};
#define FRAME_KEYS (sizeof kFrameKeys / sizeof kFrameKeys[0])

static void check_outputs(const char *json_path, const char *csv_path, int gpu)
{
    char *js = slurp(json_path);
    assert_true(json_valid(js));
    static const char *const top[] = {"scene", "triangles", "backend", "gpu", "driver", "cpu", "params",
                                      "validation", "tree", "peak_gpu_mem_mb", "frames", "medians", "warmup",
                                      "frames_measured", "width", "height"};
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
        if (!json_find(js, top[i])) fail_msg("JSON lacks \"%s\"", top[i]);
    assert_int_equal(atoi(json_find(js, "triangles")) > 0, 1);
    assert_int_equal(atoi(json_find(js, "frames_measured")), 2);
    assert_int_equal(atoi(json_find(js, "warmup")), 1);
    assert_true(!strncmp(json_find(js, "ok"), "true", 4)); /* the first frame's tree was validated */
    const char *params = json_find(js, "params");
    assert_non_null(json_find(params, "build"));
    assert_non_null(json_find(params, "trace"));
    const char *tree = json_find(js, "tree");
    assert_true(atoi(json_find(tree, "nodes")) > 0);
    assert_true(atoi(json_find(tree, "depth")) > 0);
    assert_true(atof(json_find(tree, "sah_cost")) > 0);
    if (gpu) {
        assert_true(!strncmp(json_find(js, "backend"), "\"gpu\"", 5));
        assert_true(*json_find(js, "gpu") == '"');
        assert_true(atof(json_find(js, "peak_gpu_mem_mb")) > 0);
    } else {
        assert_true(!strncmp(json_find(js, "backend"), "\"cpu\"", 5));
        assert_true(!strncmp(json_find(js, "gpu"), "null", 4)); /* never a GPU number from the CPU path */
    }

    /* frames[]: two objects, each with every key; then the medians */
    const char *frames = json_find(js, "frames");
    const char *medians = json_find(js, "medians");
    assert_non_null(frames);
    assert_non_null(medians);
    assert_true(frames < medians);
    int n = 0;
    for (const char *p = frames; (p = strstr(p, "\"frame\":")) && p < medians; p++) {
        for (size_t k = 0; k < FRAME_KEYS; k++)
            if (!json_find(p, kFrameKeys[k])) fail_msg("frame %d lacks \"%s\"", n, kFrameKeys[k]);
        n++;
    }
    assert_int_equal(n, 2);
    for (size_t k = 0; k < FRAME_KEYS; k++)
        if (!json_find(medians, kFrameKeys[k])) fail_msg("medians lack \"%s\"", kFrameKeys[k]);
    assert_true(atof(json_find(medians, "frame_ms")) > 0);
    assert_true(atof(json_find(medians, "trace_primary_ms")) > 0);
    assert_true(atof(json_find(medians, "mrays_per_s")) > 0);
    assert_true(atoi(json_find(medians, "primary_rays")) == 64 * 48);
    /* one diffuse ray per primary hit: the default scene fills part of the view */
    assert_true(atoi(json_find(medians, "diffuse_rays")) > 0);
    assert_true(atoi(json_find(medians, "diffuse_rays")) <= 64 * 48);
    assert_true(atof(json_find(medians, "trace_diffuse_ms")) > 0);
    assert_true(atof(json_find(medians, "diffuse_mrays_per_s")) > 0);
    if (gpu) assert_true(atoi(json_find(medians, "launches")) > 0);
    else assert_true(!strncmp(json_find(medians, "launches"), "null", 4));
    free(js);

    /* CSV: a header and one row per measured frame, all of the same width */
    char *csv = slurp(csv_path);
    int lines = 0, header_fields = 0;
    for (char *line = strtok(csv, "\n"); line; line = strtok(NULL, "\n"), lines++) {
        int fields = 1;
        for (char *c = line; *c; c++) fields += *c == ',';
        if (lines == 0) {
            header_fields = fields;
            rt_test_assert_contains(line, "frame,t,structure,animate_ms,build_ms");
        }
        assert_int_equal(fields, header_fields);
    }
    assert_int_equal(lines, 1 + 2);
    free(csv);
}

static void bench_cpu_json_has_every_field_and_csv_a_row_per_frame(void **state)
{
    (void)state;
    char json[256], csv[256];
    snprintf(json, sizeof json, "/tmp/rt_test_bench_%d.json", (int)getpid());
    snprintf(csv, sizeof csv, "/tmp/rt_test_bench_%d.csv", (int)getpid());
    RtOptions o;
    small_bench_options(&o, 1, json, csv);
    rt_log_set_level(o.log_level);
    RtError err = {0};
    double t0 = rt_now_ms();
    RtStatus st = rt_bench_run(&o, &err);
    if (st != RT_OK) fail_msg("bench: %s", err.msg);
    print_message("bench --cpu: %.0f ms\n", rt_now_ms() - t0);
    check_outputs(json, csv, 0);
    remove(json);
    remove(csv);
}

static void bench_gpu_json_has_every_field(void **state)
{
    (void)state;
    RtGpu *gpu = NULL;
    RtError err = {0};
    if (rt_gpu_create(0, &gpu, &err) != RT_OK) {
        print_message("skip: no GPU: %s\n", err.msg);
        skip();
    }
    rt_gpu_destroy(gpu);
    char json[256], csv[256];
    snprintf(json, sizeof json, "/tmp/rt_test_bench_gpu_%d.json", (int)getpid());
    snprintf(csv, sizeof csv, "/tmp/rt_test_bench_gpu_%d.csv", (int)getpid());
    RtOptions o;
    small_bench_options(&o, 0, json, csv);
    rt_log_set_level(o.log_level);
    if (rt_bench_run(&o, &err) != RT_OK) fail_msg("bench: %s", err.msg);
    check_outputs(json, csv, 1);
    remove(json);
    remove(csv);
}

static void bench_unwritable_json_is_a_clear_error(void **state)
{
    (void)state;
    RtOptions o;
    small_bench_options(&o, 1, "/nonexistent-rt-dir/out.json", NULL);
    RtError err = {0};
    double t0 = rt_now_ms();
    assert_int_equal(rt_bench_run(&o, &err), RT_ERR_IO);
    rt_test_assert_contains(err.msg, "/nonexistent-rt-dir/out.json");
    rt_test_assert_contains(err.msg, "BENCH");
    rt_test_assert_contains(err.msg, "--json");
    assert_true(rt_now_ms() - t0 < 1000); /* before the scene is even loaded */

    /* an unwritable CSV likewise, and the JSON opened before it is removed */
    char json[256];
    snprintf(json, sizeof json, "/tmp/rt_test_bench_rm_%d.json", (int)getpid());
    small_bench_options(&o, 1, json, "/nonexistent-rt-dir/out.csv");
    assert_int_equal(rt_bench_run(&o, &err), RT_ERR_IO);
    rt_test_assert_contains(err.msg, "--csv");
    assert_int_equal(access(json, F_OK), -1);
}

/* ---- the diffuse pass on the CPU ------------------------------------------------ */

/* Rays agreeing with the brute force: trace_check.h's MATCH_MIN (the CPU
 * traversal is exact, so all of them do in practice). */
#define DIFFUSE_MATCH_MIN 0.9999

typedef struct DiffuseRun {
    RtHit *primary, *hit;
    RtRay *ray;
    RtDiffuseCast dc;
} DiffuseRun;

static RtStatus diffuse_run(RtPipeline *p, const RtPipelineParams *pp, const RtCamera *cam, int w, int h,
                            uint32_t seed, DiffuseRun *r, RtError *err)
{
    size_t n = (size_t)w * h;
    memset(r, 0, sizeof *r);
    r->primary = malloc(n * sizeof *r->primary);
    r->hit = malloc(n * sizeof *r->hit);
    r->ray = malloc(n * sizeof *r->ray);
    assert_true(r->primary && r->hit && r->ray);
    r->dc.primary = r->primary;
    r->dc.hit = r->hit;
    r->dc.ray = r->ray;
    return rt_pipeline_cast_diffuse(p, pp, cam, w, h, seed, &r->dc, err);
}

static void diffuse_run_free(DiffuseRun *r)
{
    free(r->primary);
    free(r->hit);
    free(r->ray);
}

/* A CPU pipeline over s with one frame at t = 0 traced. */
static RtPipeline *cpu_pipeline(const RtScene *s, const RtPipelineParams *pp, int w, int h)
{
    RtError err = {0};
    RtPipeline *p = NULL;
    RtImage img;
    assert_int_equal(rt_image_alloc(&img, w, h), RT_OK);
    if (rt_pipeline_create(s, RT_BACKEND_CPU, w, h, &p, &err) != RT_OK) fail_msg("%s", err.msg);
    RtFrameTarget target = {w, h, NULL, &img};
    if (rt_pipeline_frame(p, pp, 0.0f, NULL, &target, NULL, &err) != RT_OK) fail_msg("%s", err.msg);
    rt_image_free(&img);
    return p;
}

static int same_hit(const RtHit *a, const RtHit *b)
{
    if (a->tri == RT_NO_HIT || b->tri == RT_NO_HIT) return a->tri == b->tri;
    return a->t == b->t; /* the same triangle, or a tie on a shared edge */
}

static RtHit brute_hit(const RtTriArrays *tris, RtRay ray)
{
    RtHit h;
    if (!rt_brute_closest_hit(tris, ray, 0.0f, INFINITY, 1, NULL, NULL, &h)) h.tri = RT_NO_HIT;
    return h;
}

static void bench_cpu_diffuse_hits_match_brute_force(void **state)
{
    (void)state;
    enum { DW = 80, DH = 60 };
    const uint32_t seed = 1;
    RtError err = {0};
    RtScene s;
    rt_scene_init(&s);
    assert_int_equal(rt_scene_make_default(&s, &err), RT_OK);
    RtPipelineParams pp = rt_pipeline_params_default();
    RtPipeline *p = cpu_pipeline(&s, &pp, DW, DH);
    RtCamera cam;
    assert_int_equal(rt_scene_camera_at(&s, 0.0f, &cam, &err), RT_OK);
    DiffuseRun r;
    if (diffuse_run(p, &pp, &cam, DW, DH, seed, &r, &err) != RT_OK) fail_msg("%s", err.msg);

    /* the oracle: the scene's triangles at t = 0, brute force */
    RtSceneFrame fr;
    memset(&fr, 0, sizeof fr);
    assert_int_equal(rt_scene_frame_at(&s, 0.0f, &fr, &err), RT_OK);
    RtTriArrays tris;
    assert_int_equal(rt_tri_arrays_make(&fr.view, &tris, NULL), RT_OK);
    const float eps = rt_render_ray_eps(&tris);
    RtCameraBasis cb = rt_camera_basis(cam, DW, DH);
    uint64_t rays = 0, agree = 0, prim_hits = 0, diff_hits = 0, same_ray = 0;
    for (uint32_t i = 0; i < DW * DH; i++) {
        RtRay pr = {cb.o, rt_camera_dir(&cb, (float)(i % DW) + 0.5f, (float)(i / DW) + 0.5f)};
        RtHit pb = brute_hit(&tris, pr);
        rays++;
        agree += same_hit(&pb, &r.primary[i]);
        if (r.primary[i].tri == RT_NO_HIT) {
            assert_int_equal(r.hit[i].tri, RT_NO_HIT); /* no ray, no hit */
            continue;
        }
        prim_hits++;
        /* the ray is sample.h's for this pixel, seed and hit */
        const RtFloat4 *v = &tris.verts[3 * (size_t)r.primary[i].tri];
        RtRay want = rt_sample_diffuse_ray(f4_xyz(v[0]), f4_xyz(v[1]), f4_xyz(v[2]), r.primary[i].u,
                                           r.primary[i].v, pr.d, i, seed, eps);
        same_ray += !memcmp(&want, &r.ray[i], sizeof want);
        RtHit db = brute_hit(&tris, r.ray[i]);
        rays++;
        agree += same_hit(&db, &r.hit[i]);
        diff_hits += r.hit[i].tri != RT_NO_HIT;
    }
    print_message("  diffuse (cpu): %llu primary hits, %llu diffuse hits, %.5f%% of %llu rays agree with "
                  "brute force, %.3f ms\n", (unsigned long long)prim_hits, (unsigned long long)diff_hits,
                  100.0 * agree / rays, (unsigned long long)rays, r.dc.ms);
    assert_true(prim_hits > 0 && diff_hits > 0);
    assert_int_equal(r.dc.rays, prim_hits);
    assert_int_equal(r.dc.hits, diff_hits);
    assert_int_equal(same_ray, prim_hits);
    assert_true((double)agree / rays >= DIFFUSE_MATCH_MIN);

    /* the same seed again: the same rays and hits; another: other directions */
    DiffuseRun again, other;
    assert_int_equal(diffuse_run(p, &pp, &cam, DW, DH, seed, &again, &err), RT_OK);
    assert_int_equal(diffuse_run(p, &pp, &cam, DW, DH, seed + 1, &other, &err), RT_OK);
    uint32_t moved = 0;
    for (uint32_t i = 0; i < DW * DH; i++) {
        if (r.primary[i].tri == RT_NO_HIT) continue;
        assert_memory_equal(&r.ray[i], &again.ray[i], sizeof r.ray[i]);
        assert_memory_equal(&r.hit[i], &again.hit[i], sizeof r.hit[i]);
        assert_memory_equal(&r.ray[i].o, &other.ray[i].o, sizeof r.ray[i].o);
        moved += memcmp(&r.ray[i].d, &other.ray[i].d, sizeof r.ray[i].d) != 0;
    }
    assert_int_equal(moved, prim_hits);
    diffuse_run_free(&again);
    diffuse_run_free(&other);

    /* one thread, and brute force (no tree): the same hits */
    RtPipelineParams one = pp, brute = pp;
    one.threads = 1;
    brute.brute_force = 1;
    RtPipeline *pb = cpu_pipeline(&s, &brute, DW, DH);
    const RtPipelineParams *alt[2] = {&one, &brute};
    RtPipeline *alt_pipe[2] = {p, pb};
    for (int k = 0; k < 2; k++) {
        DiffuseRun x;
        assert_int_equal(diffuse_run(alt_pipe[k], alt[k], &cam, DW, DH, seed, &x, &err), RT_OK);
        assert_int_equal(x.dc.rays, r.dc.rays);
        for (uint32_t i = 0; i < DW * DH; i++) {
            assert_true(same_hit(&x.primary[i], &r.primary[i]));
            if (x.primary[i].tri == r.primary[i].tri && x.primary[i].tri != RT_NO_HIT)
                assert_true(same_hit(&x.hit[i], &r.hit[i]));
        }
        diffuse_run_free(&x);
    }
    rt_pipeline_destroy(pb);
    diffuse_run_free(&r);
    rt_tri_arrays_free(&tris);
    rt_scene_frame_free(&fr);
    rt_pipeline_destroy(p);
    rt_scene_free(&s);
}

/* 1 pixel: at most one ray; a camera that sees nothing: no diffuse ray at
 * all, and a time of its own (the empty cast) that is no error; a cast
 * before any frame or of no pixels is an argument error. */
static void bench_cpu_diffuse_zero_and_one_ray(void **state)
{
    (void)state;
    RtError err = {0};
    RtScene s;
    rt_scene_init(&s);
    assert_int_equal(rt_scene_make_default(&s, &err), RT_OK);
    RtPipelineParams pp = rt_pipeline_params_default();
    RtPipeline *fresh = NULL;
    assert_int_equal(rt_pipeline_create(&s, RT_BACKEND_CPU, 4, 4, &fresh, &err), RT_OK);
    RtDiffuseCast dc;
    memset(&dc, 0, sizeof dc);
    assert_int_equal(rt_pipeline_cast_diffuse(fresh, &pp, NULL, 4, 4, 1, &dc, &err), RT_ERR_ARG);
    rt_test_assert_contains(err.msg, "before the first frame");
    rt_pipeline_destroy(fresh);

    RtPipeline *p = cpu_pipeline(&s, &pp, 16, 12);
    assert_int_equal(rt_pipeline_cast_diffuse(p, &pp, NULL, 0, 12, 1, &dc, &err), RT_ERR_ARG);
    /* one pixel at the view's centre: the default scene's camera looks at it */
    DiffuseRun r;
    assert_int_equal(diffuse_run(p, &pp, NULL, 1, 1, 1, &r, &err), RT_OK);
    assert_int_equal(r.dc.rays, r.primary[0].tri != RT_NO_HIT);
    assert_int_equal(r.dc.hits, r.hit[0].tri != RT_NO_HIT);
    assert_true(r.dc.rays == 1 || r.hit[0].tri == RT_NO_HIT);
    diffuse_run_free(&r);
    /* looking away from everything */
    RtAabb bounds = aabb_empty();
    for (uint32_t i = 0; i < s.vert_count; i++) bounds = aabb_grow(bounds, s.verts[i].p);
    float far = 10.0f * (1.0f + v3_len(v3_sub(bounds.hi, bounds.lo)));
    RtCamera away = {v3_add(bounds.hi, v3(far, far, far)), v3_add(bounds.hi, v3(2 * far, 2 * far, 2 * far)),
                     v3(0, 1, 0), 40.0f};
    assert_int_equal(diffuse_run(p, &pp, &away, 16, 12, 1, &r, &err), RT_OK);
    assert_int_equal(r.dc.rays, 0);
    assert_int_equal(r.dc.hits, 0);
    assert_true(r.dc.ms >= 0);
    for (int i = 0; i < 16 * 12; i++) {
        assert_int_equal(r.primary[i].tri, RT_NO_HIT);
        assert_int_equal(r.hit[i].tri, RT_NO_HIT);
    }
    diffuse_run_free(&r);
    rt_pipeline_destroy(p);
    rt_scene_free(&s);
}


/* A w x h pipeline of s on a backend, or NULL (after saying so) when the
 * backend has no device: the caller skips. Any other failure fails. */
static RtPipeline *pipeline_or_none(const RtScene *s, RtBackend backend, int w, int h)
{
    RtError err = {0};
    RtPipeline *p = NULL;
    RtStatus rs = rt_pipeline_create(s, backend, w, h, &p, &err);
    if (rs == RT_ERR_NO_DEVICE) {
        print_message("skip: no GPU: %s\n", err.msg);
        return NULL;
    }
    if (rs != RT_OK) fail_msg("%s", err.msg);
    return p;
}

/* ---- the trace per ray type (rt_pipeline_ray_rates) ------------------------------------ */

/* Shadow and reflection rays take the differences of the passes; a pass
 * faster than the one before it (the timer's noise) leaves that type 0 ms
 * and no rate, and a type without rays has none either. */
static void ray_rates_derive_differences_and_rates(void **state)
{
    (void)state;
    RtRayRates r = {{2.0, 2.5, 2.4}};
    const uint64_t rays[3] = {1000000, 500000, 0};
    rt_ray_rates_derive(&r, rays);
    assert_true(r.type_ms[0] == 2.0 && r.type_ms[1] == 0.5 && r.type_ms[2] == 0.0);
    assert_true(fabs(r.mrays[0] - 500.0) < 1e-9 && fabs(r.mrays[1] - 1000.0) < 1e-9);
    assert_true(isnan(r.mrays[2]));
    const uint64_t more[3] = {1000000, 500000, 7};
    rt_ray_rates_derive(&r, more);
    assert_true(isnan(r.mrays[2])); /* rays, but no time left to them */
}

/* The passes on a backend, after a frame of sample 0 (the window's case):
 * every pass timed, the frame's ray counts give the rates, and the target
 * holds the frame's own image again after one round (the last pass is the
 * full one). Zero rounds is an argument error. */
static void ray_rates_on(RtBackend backend)
{
    enum { W = 96, H = 72 };
    RtError err = {0};
    RtScene s;
    rt_scene_init(&s);
    assert_int_equal(rt_scene_make_default(&s, &err), RT_OK);
    RtPipeline *p = pipeline_or_none(&s, backend, W, H);
    if (!p) {
        rt_scene_free(&s);
        skip();
    }
    RtImage frame, img;
    assert_int_equal(rt_image_alloc(&frame, W, H), RT_OK);
    assert_int_equal(rt_image_alloc(&img, W, H), RT_OK);
    RtPipelineParams pp = rt_pipeline_params_default();
    RtFrameTarget target = {W, H, NULL, &img};
    RtFrameStats fs;
    if (rt_pipeline_frame(p, &pp, 0.0f, NULL, &target, &fs, &err) != RT_OK) fail_msg("%s", err.msg);
    memcpy(frame.rgba, img.rgba, (size_t)W * H * 4);
    assert_true(fs.primary_rays == (uint64_t)W * H && fs.shadow_rays > 0 && fs.reflection_rays > 0);
    RtRayRates r;
    assert_int_equal(rt_pipeline_ray_rates(p, &pp, NULL, &target, 0, &r, &err), RT_ERR_ARG);
    if (rt_pipeline_ray_rates(p, &pp, NULL, &target, 1, &r, &err) != RT_OK) fail_msg("%s", err.msg);
    for (int k = 0; k < 3; k++) assert_true(r.pass_ms[k] > 0 && isfinite(r.pass_ms[k]));
    assert_true(r.mrays[0] > 0 && isfinite(r.mrays[0]));
    assert_true(fabs(r.mrays[0] - (double)fs.primary_rays / (r.pass_ms[0] * 1e3)) <= 1e-9 * r.mrays[0]); /* the frame's rays */
    assert_memory_equal(frame.rgba, img.rgba, (size_t)W * H * 4);
    print_message("  %s: passes %.3f / %.3f / %.3f ms, primary %.2f Mrays/s\n",
                  backend == RT_BACKEND_GPU ? "GPU" : "CPU", r.pass_ms[0], r.pass_ms[1], r.pass_ms[2], r.mrays[0]);
    rt_image_free(&frame);
    rt_image_free(&img);
    rt_pipeline_destroy(p);
    rt_scene_free(&s);
}

static void pipeline_cpu_ray_rates_keep_the_frame(void **state)
{
    (void)state;
    ray_rates_on(RT_BACKEND_CPU);
}

static void pipeline_gpu_ray_rates_keep_the_frame(void **state)
{
    (void)state;
    ray_rates_on(RT_BACKEND_GPU);
}

/* ---- the structure slot: kd vs lbvh vs bvh --------------------------------------------- */

/* One frame of s through the slot's structure on a backend into img; the
 * validator and the tree statistics of it. 0 (skip) when the backend is
 * not there (no GPU). */
static int structure_frame(const RtScene *s, RtBackend backend, int structure, float t, RtImage *img,
                           RtFrameStats *st)
{
    RtError err = {0};
    RtPipeline *p = pipeline_or_none(s, backend, img->w, img->h);
    if (!p) return 0;
    RtPipelineParams pp = rt_pipeline_params_default();
    pp.structure = structure;
    RtFrameTarget target = {img->w, img->h, NULL, img};
    if (rt_pipeline_frame(p, &pp, t, NULL, &target, st, &err) != RT_OK) fail_msg("%s", err.msg);
    assert_int_equal(st->structure, structure);
    const char *what = NULL;
    if (rt_pipeline_validate(p, &what, NULL, &err) != RT_OK) fail_msg("%s: %s", what, err.msg);
    if (rt_pipeline_tree_stats(p, &pp, st, &err) != RT_OK) fail_msg("%s", err.msg);
    rt_pipeline_destroy(p);
    return 1;
}

static double pixels_within(const RtImage *a, const RtImage *b, int tol)
{
    size_t n = (size_t)a->w * a->h, close = 0;
    for (size_t i = 0; i < n; i++) {
        int ok = 1;
        for (int k = 0; k < 4; k++)
            if (abs((int)a->rgba[4 * i + k] - (int)b->rgba[4 * i + k]) > tol) ok = 0;
        close += ok;
    }
    return (double)close / (double)n;
}

/* The CPU renderer through a BVH (structure lbvh or bvh) gives the
 * kd-tree's image to the pixel: the walks are exact and break ties alike
 * (bvh_layout.h, kd_layout.h). The BVH references every non-degenerate
 * triangle once, and its SAH cost (the kd-tree's constants) is a finite
 * positive number. On the default scene, and on scenes/kolodzey.scene
 * (mirrors, glass, moving spheres) at two times when the bunny it names is
 * unpacked. */
static void bvh_equals_kd_on(const RtScene *s, const char *name, float t, int structure)
{
    enum { W = 96, H = 72 };
    RtImage kd, bvh;
    assert_int_equal(rt_image_alloc(&kd, W, H), RT_OK);
    assert_int_equal(rt_image_alloc(&bvh, W, H), RT_OK);
    RtFrameStats sk, sb;
    assert_true(structure_frame(s, RT_BACKEND_CPU, RT_STRUCT_KD, t, &kd, &sk));
    assert_true(structure_frame(s, RT_BACKEND_CPU, structure, t, &bvh, &sb));
    print_message("  %s t=%g: kd %u nodes, SAH %.2f; %s %u nodes, %u leaves, depth %u, SAH %.2f\n", name, t,
                  sk.tree.nodes, sk.tree.sah_cost, structure == RT_STRUCT_BVH ? "bvh" : "lbvh", sb.tree.nodes,
                  sb.tree.leaves, sb.tree.depth, sb.tree.sah_cost);
    assert_memory_equal(kd.rgba, bvh.rgba, (size_t)W * H * 4);
    assert_int_equal(sb.tree.references, (uint64_t)(sb.tree.triangles - sb.tree.degenerate));
    assert_true(sb.tree.sah_cost > 0 && isfinite(sb.tree.sah_cost));
    assert_true(sb.primary_rays == sk.primary_rays && sb.shadow_rays == sk.shadow_rays &&
                sb.reflection_rays == sk.reflection_rays);
    rt_image_free(&kd);
    rt_image_free(&bvh);
}

static void cpu_bvh_frames_equal_kd_frames(int structure)
{
    RtError err = {0};
    RtScene s;
    rt_scene_init(&s);
    assert_int_equal(rt_scene_make_default(&s, &err), RT_OK);
    bvh_equals_kd_on(&s, "default scene", 0.0f, structure);
    rt_scene_free(&s);
    char path[1024];
    const char *me = __FILE__, *tail = strstr(me, "tests/test_bench.c");
    snprintf(path, sizeof path, "%.*sscenes/kolodzey.scene", tail ? (int)(tail - me) : 0, me);
    if (rt_scene_load(path, &s, &err) != RT_OK) {
        print_message("skip: %s (its bunny comes from ../shared/assets)\n", err.msg);
        return;
    }
    bvh_equals_kd_on(&s, "kolodzey.scene", 0.0f, structure);
    bvh_equals_kd_on(&s, "kolodzey.scene", 1.0f, structure);
    rt_scene_free(&s);
}

static void pipeline_cpu_lbvh_frame_equals_kd_frame(void **state)
{
    (void)state;
    cpu_bvh_frames_equal_kd_frames(RT_STRUCT_LBVH);
}

static void pipeline_cpu_bvh_frame_equals_kd_frame(void **state)
{
    (void)state;
    cpu_bvh_frames_equal_kd_frames(RT_STRUCT_BVH);
}

/* The GPU's BVH frame (structure lbvh or bvh) against the CPU's: the same
 * tree (lbvh.h, hploc.h), traced by the two tracers, images within 2/255
 * on >= 99 % of pixels (as the kd path, docs/trace_gpu.md), the
 * downloaded tree valid. */
static void gpu_bvh_frame_matches_cpu(int structure)
{
    enum { W = 160, H = 120 };
    RtError err = {0};
    RtScene s;
    rt_scene_init(&s);
    assert_int_equal(rt_scene_make_default(&s, &err), RT_OK);
    RtImage cpu, gpu;
    assert_int_equal(rt_image_alloc(&cpu, W, H), RT_OK);
    assert_int_equal(rt_image_alloc(&gpu, W, H), RT_OK);
    RtFrameStats sc, sg;
    if (!structure_frame(&s, RT_BACKEND_GPU, structure, 0.0f, &gpu, &sg)) {
        rt_image_free(&cpu);
        rt_image_free(&gpu);
        rt_scene_free(&s);
        skip();
    }
    assert_true(structure_frame(&s, RT_BACKEND_CPU, structure, 0.0f, &cpu, &sc));
    double f = pixels_within(&cpu, &gpu, 2);
    print_message("  %s gpu vs cpu: %.3f%% of pixels within 2/255; nodes %u / %u, SAH %.4f / %.4f, build %.3f ms "
                  "(GPU)\n",
                  structure == RT_STRUCT_BVH ? "bvh" : "lbvh", 100 * f, sg.tree.nodes, sc.tree.nodes,
                  sg.tree.sah_cost, sc.tree.sah_cost, sg.build_ms);
    assert_true(f >= 0.99);
    /* the same tree: the same reachable nodes and SAH cost */
    assert_int_equal(sg.tree.nodes, sc.tree.nodes);
    assert_int_equal(sg.tree.leaves, sc.tree.leaves);
    assert_true(sg.tree.sah_cost == sc.tree.sah_cost);
    rt_image_free(&cpu);
    rt_image_free(&gpu);
    rt_scene_free(&s);
}

static void pipeline_gpu_lbvh_frame_matches_cpu(void **state)
{
    (void)state;
    gpu_bvh_frame_matches_cpu(RT_STRUCT_LBVH);
}

static void pipeline_gpu_bvh_frame_matches_cpu(void **state)
{
    (void)state;
    gpu_bvh_frame_matches_cpu(RT_STRUCT_BVH);
}

/* One GPU frame of s with the device held to `headroom_mib` beyond what the
 * pipeline holds then (RT_GPU_MEM_LIMIT_MB, rt_gpu_alloc): after a first
 * lbvh frame when warm (what every structure shares, and the lbvh's own
 * arrays, are then allocated), else right after the scene's upload.
 * Returns the status, *used_structure what the frame used. */
static RtStatus oom_frame(const RtScene *s, int warm, int structure, double headroom_mib, int *used_structure,
                          char *note, size_t note_n, RtError *err)
{
    enum { W = 64, H = 48 };
    RtPipeline *p = NULL;
    RtStatus st = rt_pipeline_create(s, RT_BACKEND_GPU, W, H, &p, err);
    if (st != RT_OK) return st;
    RtPipelineParams pp = rt_pipeline_params_default();
    pp.structure = RT_STRUCT_LBVH;
    RtFrameStats fs;
    RtImage img;
    assert_int_equal(rt_image_alloc(&img, W, H), RT_OK);
    RtFrameTarget target = {W, H, NULL, &img};
    /* a first lbvh frame allocates what every structure shares (scene, image) */
    if (warm) st = rt_pipeline_frame(p, &pp, 0.0f, NULL, &target, &fs, err);
    size_t used = 0, total = 0;
    if (st == RT_OK) st = rt_gpu_mem_used(&used, &total, err);
    if (st == RT_OK) {
        char v[64];
        snprintf(v, sizeof v, "%.0f", used / 1048576.0 + headroom_mib);
        setenv("RT_GPU_MEM_LIMIT_MB", v, 1);
        pp.structure = structure;
        st = rt_pipeline_frame(p, &pp, 0.5f, NULL, &target, &fs, err);
        unsetenv("RT_GPU_MEM_LIMIT_MB");
        *used_structure = fs.structure;
        snprintf(note, note_n, "%s", st == RT_OK && fs.structure_note ? fs.structure_note : "");
    }
    rt_image_free(&img);
    rt_pipeline_destroy(p);
    return st;
}

/* Out of device memory in the middle of a run (RT_GPU_MEM_LIMIT_MB plays a
 * smaller GPU): a kd frame that no longer fits is redone with the leaner
 * lbvh, saying so with the numbers; with no room at all the frame fails
 * with RT_ERR_OOM and the message (the callers then go on on the CPU);
 * nothing crashes, and a pipeline opened afterwards works as before. */
static void pipeline_gpu_out_of_memory_falls_back(void **state)
{
    (void)state;
    RtError err = {0};
    RtScene s;
    rt_scene_init(&s);
    assert_int_equal(rt_scene_make_wave(&s, 400000, &err), RT_OK);
    RtPipeline *probe = NULL;
    if (rt_pipeline_create(&s, RT_BACKEND_GPU, 8, 8, &probe, &err) != RT_OK) {
        print_message("skip: no GPU pipeline: %s\n", err.msg);
        rt_scene_free(&s);
        skip();
    }
    rt_pipeline_destroy(probe);
    /* room for the lbvh's arrays but not for the kd-tree's: found by trying */
    int fell_back = 0;
    for (double headroom = 16; headroom <= 1024 && !fell_back; headroom *= 2) {
        int used = -1;
        char note[RT_ERROR_MAX + 64];
        RtStatus st = oom_frame(&s, 1, RT_STRUCT_KD, headroom, &used, note, sizeof note, &err);
        if (st == RT_ERR_OOM) {
            rt_test_assert_contains(err.msg, "out of device memory");
            rt_test_assert_contains(err.msg, "MiB free of");
            print_message("  headroom %.0f MiB: %s\n", headroom, err.msg);
            continue;
        }
        if (st != RT_OK) fail_msg("%s", err.msg);
        if (used == RT_STRUCT_LBVH) {
            fell_back = 1;
            rt_test_assert_contains(note, "kd -> lbvh");
            print_message("  headroom %.0f MiB: the kd frame fell back: %s\n", headroom, note);
        } else {
            print_message("  headroom %.0f MiB: the kd frame fit\n", headroom);
            break;
        }
    }
    assert_true(fell_back);
    /* no room at all: a clean error */
    int used = -1;
    char note[8];
    assert_int_equal(oom_frame(&s, 0, RT_STRUCT_LBVH, 0, &used, note, sizeof note, &err), RT_ERR_OOM);
    rt_test_assert_contains(err.msg, "out of device memory");
    /* and the device is fine afterwards */
    RtImage img;
    assert_int_equal(rt_image_alloc(&img, 32, 24), RT_OK);
    RtFrameStats fs;
    assert_true(structure_frame(&s, RT_BACKEND_GPU, RT_STRUCT_KD, 0.0f, &img, &fs));
    assert_int_equal(fs.structure, RT_STRUCT_KD);
    rt_image_free(&img);
    rt_scene_free(&s);
}

/* --structure auto on the CPU: kd, lbvh and bvh measured twice each first,
 * then the cheapest by the last measurements (within the 10 % margin), one
 * other re-probed every RT_AUTO_REPROBE frames and when the camera turns;
 * every frame's image is the same (the structures are exact), and the note
 * says why. */
static void pipeline_auto_measures_each_then_keeps_the_fastest(void **state)
{
    (void)state;
    enum { W = 48, H = 36 };
    RtError err = {0};
    RtScene s;
    rt_scene_init(&s);
    assert_int_equal(rt_scene_make_default(&s, &err), RT_OK);
    RtPipeline *p = NULL;
    assert_int_equal(rt_pipeline_create(&s, RT_BACKEND_CPU, W, H, &p, &err), RT_OK);
    RtPipelineParams pp = rt_pipeline_params_default();
    pp.structure = RT_STRUCT_AUTO;
    RtImage img, first;
    assert_int_equal(rt_image_alloc(&img, W, H), RT_OK);
    assert_int_equal(rt_image_alloc(&first, W, H), RT_OK);
    RtFrameTarget target = {W, H, NULL, &img};
    RtCamera cam;
    assert_int_equal(rt_scene_camera_at(&s, 0.0f, &cam, &err), RT_OK);
    RtFrameStats st;
    int seen[RT_STRUCT_AUTO] = {0, 0, 0};
    double cost[RT_STRUCT_AUTO] = {0, 0, 0};
    const int n = RT_STRUCT_AUTO; /* candidates */
    for (int f = 0; f < 2 * n + 2 * RT_AUTO_REPROBE + 2; f++) {
        if (rt_pipeline_frame(p, &pp, 0.0f, &cam, &target, &st, &err) != RT_OK) fail_msg("%s", err.msg);
        assert_true(st.structure >= RT_STRUCT_KD && st.structure < RT_STRUCT_AUTO);
        assert_non_null(st.structure_note);
        rt_test_assert_contains(st.structure_note, "auto:");
        if (f < 2 * n) assert_int_equal(st.structure, f % n);
        /* the first choice: another than kd only when its second frame was 10 % cheaper */
        if (f == 2 * n) {
            int best = RT_STRUCT_KD;
            for (int k = 0; k < n; k++)
                if (cost[k] < cost[best]) best = k;
            assert_int_equal(st.structure, cost[best] < 0.9 * cost[RT_STRUCT_KD] ? best : RT_STRUCT_KD);
        }
        if (f == 0) memcpy(first.rgba, img.rgba, (size_t)W * H * 4);
        else assert_memory_equal(first.rgba, img.rgba, (size_t)W * H * 4);
        seen[st.structure]++;
        cost[st.structure] = st.build_ms + st.trace_ms;
    }
    print_message("  auto: kd %d frames, lbvh %d frames, bvh %d frames; %s\n", seen[0], seen[1], seen[2],
                  st.structure_note);
    /* each measured twice, and the ones not chosen probed again, one every RT_AUTO_REPROBE frames */
    assert_true(seen[0] >= 3 && seen[1] >= 3 && seen[2] >= 3);
    /* a turned camera: the very next frame probes the structure not in use */
    /* (which one that is depends on the last frame's timing: a frame whose
     * own cost reads 10 % above the other's last one switches after it, so
     * the note's "probed 0 frames ago" is the check) */
    if (rt_pipeline_frame(p, &pp, 0.0f, &cam, &target, &st, &err) != RT_OK) fail_msg("%s", err.msg);
    assert_null(strstr(st.structure_note, "probed 0 frames ago"));
    RtCamera turned = cam;
    turned.look = v3_add(cam.pos, v3_sub(cam.pos, cam.look)); /* looking back */
    if (rt_pipeline_frame(p, &pp, 0.0f, &turned, &target, &st, &err) != RT_OK) fail_msg("%s", err.msg);
    rt_test_assert_contains(st.structure_note, "probed 0 frames ago");
    rt_image_free(&img);
    rt_image_free(&first);
    rt_pipeline_destroy(p);
    rt_scene_free(&s);
}

/* Frame f of n over the scene's time range: the ends for the first and the
 * last frame, t0 for a single frame, --time everywhere when given. */
static void bench_frames_advance_through_the_animation(void **state)
{
    (void)state;
    RtScene s;
    RtError err = {0};
    rt_scene_init(&s);
    RtOptions o;
    rt_options_default(&o);
    /* a static scene: every frame at its t0 */
    assert_int_equal(rt_scene_make_default(&s, &err), RT_OK);
    float t0, t1;
    rt_scene_time_range(&s, &t0, &t1);
    assert_float_equal(rt_app_frame_time(&o, &s, 0, 1), t0, 0);
    assert_float_equal(rt_app_frame_time(&o, &s, 0, 0), t0, 0);
    assert_float_equal(rt_app_frame_time(&o, &s, 0, 5), t0, 0);
    assert_float_equal(rt_app_frame_time(&o, &s, 4, 5), t1, 1e-5);
    assert_float_equal(rt_app_frame_time(&o, &s, 2, 5), 0.5f * (t0 + t1), 1e-5);
    RtTestRng r = {7};
    for (int i = 0; i < 100; i++) {
        int n = 2 + (int)(rt_test_rand(&r) % 100), f = (int)(rt_test_rand(&r) % (uint32_t)n);
        float t = rt_app_frame_time(&o, &s, f, n);
        assert_true(t >= t0 - 1e-5f && t <= t1 + 1e-5f);
        assert_true(f == 0 || t >= rt_app_frame_time(&o, &s, f - 1, n));
    }
    o.has_time = 1;
    o.time = 2.5f;
    assert_float_equal(rt_app_frame_time(&o, &s, 3, 7), 2.5f, 0);
    rt_scene_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bench_frames_advance_through_the_animation),
        cmocka_unit_test(bench_unwritable_json_is_a_clear_error),
        cmocka_unit_test(bench_cpu_json_has_every_field_and_csv_a_row_per_frame),
        cmocka_unit_test(bench_gpu_json_has_every_field),
        cmocka_unit_test(bench_cpu_diffuse_hits_match_brute_force),
        cmocka_unit_test(bench_cpu_diffuse_zero_and_one_ray),
        cmocka_unit_test(ray_rates_derive_differences_and_rates),
        cmocka_unit_test(pipeline_cpu_ray_rates_keep_the_frame),
        cmocka_unit_test(pipeline_gpu_ray_rates_keep_the_frame),
        cmocka_unit_test(pipeline_cpu_lbvh_frame_equals_kd_frame),
        cmocka_unit_test(pipeline_gpu_lbvh_frame_matches_cpu),
        cmocka_unit_test(pipeline_cpu_bvh_frame_equals_kd_frame),
        cmocka_unit_test(pipeline_gpu_bvh_frame_matches_cpu),
        cmocka_unit_test(pipeline_auto_measures_each_then_keeps_the_fastest),
        cmocka_unit_test(pipeline_gpu_out_of_memory_falls_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
