/* test_render.c — the CPU reference renderer: the kd-tree render equals the
 * brute-force render pixel for pixel, images match stored references
 * (tests/ref/<name>.png, regenerated with RT_UPDATE_REFS=1), and each feature
 * (shadows, mirrors, glass, alpha cutouts, textures, Woop vs
 * Moller-Trumbore, threads) and the shared shading math of shade.h (Snell,
 * sRGB, the heatmap ramp) does what docs/renderer.md says; the random rays
 * of sample.h (the benchmark's diffuse rays) are unit, on the normal's
 * side, cosine-distributed and a function of pixel and seed alone. */
#include "test_util.h"
#include "scene/load.h"

#include "kd/kd_cpu.h"
#include "scene/primitives.h"
#include "render/render_cpu.h"
#include "render/sample.h"
#include "scene/scene.h"
#include "scene/texture.h"

/* Reference-image tolerance (docs/renderer.md): it absorbs float
 * differences between compilers and CPUs (libm powf, FMA contraction), which
 * move a few sRGB bytes by one or two steps and, at an edge, may flip a
 * pixel to its neighbour's triangle. */
#define REF_MAX_CHANNEL_DIFF 2     /* a pixel "matches" when every channel is within this */
#define REF_MIN_MATCHING 0.995     /* ... and at least this fraction of pixels match */
#define REF_MAX_MEAN_DIFF 0.5      /* mean |diff| over all channels of all pixels */

#define W 160
#define H 120

/* ---- helpers -------------------------------------------------------------- */

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* A scene ready to render: triangle arrays and the CPU kd-tree. */
typedef struct Fixture {
    RtScene s;
    RtTriArrays tris;
    RtKdTree tree;
} Fixture;

/* Finishes s (camera, default light, normals) unless already finished, and
 * builds the arrays and the tree. */
static void fixture_build(Fixture *f, int finish)
{
    RtError err = {0};
    if (finish) assert_int_equal(rt_scene_finish(&f->s, &err), RT_OK);
    assert_int_equal(rt_tri_arrays_make(&f->s, &f->tris, NULL), RT_OK);
    RtKdCpuParams kp = rt_kd_cpu_params_default();
    memset(&f->tree, 0, sizeof f->tree);
    RtStatus st = rt_kd_build_cpu(&kp, &f->tris, &f->tree, NULL, &err);
    if (st != RT_OK) print_message("kd build: %s\n", err.msg);
    assert_int_equal(st, RT_OK);
}

/* The scene seen from cam (its own camera), finished and built. */
static void fixture_build_seen(Fixture *f, RtCamera cam)
{
    f->s.camera = cam;
    f->s.has_camera = 1;
    fixture_build(f, 1);
}

static int fixture_load(Fixture *f, const char *path)
{
    RtError err = {0};
    memset(f, 0, sizeof *f);
    RtStatus st = rt_scene_load(path, &f->s, &err);
    if (st != RT_OK) print_message("load %s: %s\n", path, err.msg);
    assert_int_equal(st, RT_OK);
    fixture_build(f, 0);
    return 1;
}

static void fixture_free(Fixture *f)
{
    rt_kd_tree_free(&f->tree);
    rt_tri_arrays_free(&f->tris);
    rt_scene_free(&f->s);
}

static void render(const Fixture *f, const RtCamera *cam, const RtRenderParams *p, int w, int h,
                   RtImage *img, uint32_t **ids, RtRenderStats *stats)
{
    RtError err = {0};
    assert_int_equal(rt_image_alloc(img, w, h), RT_OK);
    if (ids) {
        *ids = malloc((size_t)w * h * sizeof **ids);
        assert_non_null(*ids);
    }
    RtStatus st = rt_render_cpu(&f->s, &f->tris, p->brute_force ? NULL : RT_ACCEL_OF_KD(&f->tree), NULL, cam, p, img,
                                ids ? *ids : NULL, stats, &err);
    if (st != RT_OK) print_message("render: %s\n", err.msg);
    assert_int_equal(st, RT_OK);
}

static int count_differing_bytes(const RtImage *a, const RtImage *b)
{
    int n = 0;
    for (size_t i = 0; i < (size_t)a->w * a->h * 4; i++) n += a->rgba[i] != b->rgba[i];
    return n;
}

/* Tree vs brute force at W x H: identical ids everywhere, identical images. */
static void expect_tree_equals_brute(const Fixture *f, const RtCamera *cam, int w, int h)
{
    RtRenderParams p = rt_render_params_default();
    RtImage a, b;
    uint32_t *ida, *idb;
    render(f, cam, &p, w, h, &a, &ida, NULL);
    p.brute_force = 1;
    render(f, cam, &p, w, h, &b, &idb, NULL);
    int bad_ids = 0, hits = 0;
    for (int i = 0; i < w * h; i++) {
        bad_ids += ida[i] != idb[i];
        hits += ida[i] != RT_NO_HIT;
        if (ida[i] != idb[i] && bad_ids <= 5)
            print_message("pixel (%d,%d): tree tri %u, brute tri %u\n", i % w, i / w, ida[i], idb[i]);
    }
    assert_int_equal(bad_ids, 0);
    assert_true(hits > 0);
    assert_int_equal(count_differing_bytes(&a, &b), 0);
    rt_image_free(&a);
    rt_image_free(&b);
    free(ida);
    free(idb);
}

/* Compares img with tests/ref/<name>.png within the REF_* tolerance, or
 * rewrites the reference when RT_UPDATE_REFS=1. A failing image is saved to
 * /tmp for a look. */
static void expect_matches_ref(const RtImage *img, const char *name)
{
    char rel[256], path[1024];
    RtError err = {0};
    snprintf(rel, sizeof rel, "tests/ref/%s.png", name);
    rt_test_src_path(rel, path);
    const char *upd = getenv("RT_UPDATE_REFS");
    if (upd && atoi(upd) == 1) {
        assert_int_equal(rt_image_write_png(img, path, &err), RT_OK);
        print_message("RT_UPDATE_REFS: wrote %s\n", path);
        return;
    }
    RtImage ref;
    RtStatus st = rt_image_read_png(&ref, path, &err);
    if (st != RT_OK) print_message("%s (regenerate with RT_UPDATE_REFS=1)\n", err.msg);
    assert_int_equal(st, RT_OK);
    assert_int_equal(ref.w, img->w);
    assert_int_equal(ref.h, img->h);
    size_t n = (size_t)img->w * img->h, matching = 0;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        int ok = 1;
        for (int k = 0; k < 3; k++) {
            int d = abs((int)img->rgba[4 * i + k] - (int)ref.rgba[4 * i + k]);
            sum += d;
            ok &= d <= REF_MAX_CHANNEL_DIFF;
        }
        matching += ok;
    }
    double frac = (double)matching / (double)n, mean = sum / (3.0 * (double)n);
    print_message("%s: %.2f%% of pixels within %d, mean |diff| %.3f\n", name, 100.0 * frac,
                  REF_MAX_CHANNEL_DIFF, mean);
    if (frac < REF_MIN_MATCHING || mean >= REF_MAX_MEAN_DIFF) {
        char out[1024];
        snprintf(out, sizeof out, "/tmp/rt_test_render_%s.png", name);
        rt_image_write_png(img, out, &err);
        print_message("%s differs from %s: actual image saved to %s\n", name, path, out);
    }
    rt_image_free(&ref);
    assert_true(frac >= REF_MIN_MATCHING);
    assert_true(mean < REF_MAX_MEAN_DIFF);
}

static const uint8_t *pixel(const RtImage *img, int x, int y)
{
    return &img->rgba[4 * ((size_t)y * img->w + x)];
}

static RtCamera camera(RtVec3 pos, RtVec3 look, float fov)
{
    RtCamera c = {pos, look, v3(0, 1, 0), fov};
    return c;
}

/* Two triangles (a, b, c), (a, c, d) with UVs (0,0) (1,0) (1,1) (0,1) and the
 * face normal; returns the first triangle's id. */
static uint32_t add_quad(RtScene *s, RtVec3 a, RtVec3 b, RtVec3 c, RtVec3 d, int32_t mat)
{
    RtVec3 n = v3_norm(v3_cross(v3_sub(b, a), v3_sub(c, a)));
    RtVec3 p[4] = {a, b, c, d};
    float uv[4][2] = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
    uint32_t base = s->vert_count;
    for (int k = 0; k < 4; k++) {
        RtVertex v = {p[k], n, uv[k][0], uv[k][1]};
        assert_true(rt_scene_add_vertex(s, v) >= 0);
    }
    RtTriangle t0 = {{base, base + 1, base + 2}, mat, 0}, t1 = {{base, base + 2, base + 3}, mat, 0};
    int64_t id = rt_scene_add_triangle(s, t0);
    assert_true(id >= 0);
    assert_true(rt_scene_add_triangle(s, t1) >= 0);
    return (uint32_t)id;
}

static int32_t add_material(RtScene *s, RtVec3 kd, float reflect)
{
    RtMaterial m = rt_material_default();
    m.kd = kd;
    m.reflect = reflect;
    int64_t i = rt_scene_add_material(s, &m);
    assert_true(i >= 0);
    return (int32_t)i;
}

/* Adds a w x h RGBA texture whose texel (x, y) comes from fn, with its mip
 * levels as a loaded one; returns its index. */
static int32_t add_texture(RtScene *s, int w, int h, void (*fn)(int x, int y, uint8_t px[4]))
{
    uint8_t *rgba = malloc((size_t)w * h * 4);
    assert_non_null(rgba);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) fn(x, y, &rgba[4 * ((size_t)y * w + x)]);
    char key[32];
    snprintf(key, sizeof key, "(test %u)", s->tex_count);
    int32_t i;
    RtError err = {0};
    assert_int_equal(rt_texture_add_rgba(s, key, w, h, rgba, &i, &err), RT_OK);
    return i;
}

/* The Cornell box: scenes/cornell.scene, or the same room built here from
 * primitives when that file is absent. */
static void cornell_build(RtScene *s)
{
    RtError err = {0};
    rt_scene_init(s);
    int32_t white = add_material(s, v3(0.73f, 0.73f, 0.73f), 0.0f);
    int32_t red = add_material(s, v3(0.65f, 0.05f, 0.05f), 0.0f);
    int32_t green = add_material(s, v3(0.12f, 0.45f, 0.15f), 0.0f);
    float m[12];
    /* unit quad: [-1,1]^2 in xz, normal +y; room: [-1,1] x [0,2] x [-1,1] */
    rt_mat34_identity(m);
    assert_int_equal(rt_prim_quad(s, m, white, "floor", &err), RT_OK);
    rt_mat34_identity(m);
    rt_mat34_rotate(m, v3(1, 0, 0), 180.0f);
    rt_mat34_translate(m, v3(0, 2, 0));
    assert_int_equal(rt_prim_quad(s, m, white, "ceiling", &err), RT_OK);
    rt_mat34_identity(m);
    rt_mat34_rotate(m, v3(1, 0, 0), 90.0f);
    rt_mat34_translate(m, v3(0, 1, -1));
    assert_int_equal(rt_prim_quad(s, m, white, "back", &err), RT_OK);
    rt_mat34_identity(m);
    rt_mat34_rotate(m, v3(0, 0, 1), -90.0f);
    rt_mat34_translate(m, v3(-1, 1, 0));
    assert_int_equal(rt_prim_quad(s, m, red, "left", &err), RT_OK);
    rt_mat34_identity(m);
    rt_mat34_rotate(m, v3(0, 0, 1), 90.0f);
    rt_mat34_translate(m, v3(1, 1, 0));
    assert_int_equal(rt_prim_quad(s, m, green, "right", &err), RT_OK);
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(0.3f, 0.6f, 0.3f));
    rt_mat34_rotate(m, v3(0, 1, 0), 17.0f);
    rt_mat34_translate(m, v3(-0.35f, 0.6f, -0.3f));
    assert_int_equal(rt_prim_box(s, m, white, "tall box", &err), RT_OK);
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(0.3f, 0.3f, 0.3f));
    rt_mat34_rotate(m, v3(0, 1, 0), -18.0f);
    rt_mat34_translate(m, v3(0.35f, 0.3f, 0.3f));
    assert_int_equal(rt_prim_box(s, m, white, "short box", &err), RT_OK);
    RtLight l = {RT_LIGHT_POINT, v3(0.0f, 1.9f, 0.0f), v3(0.9f, 0.85f, 0.8f)};
    assert_true(rt_scene_add_light(s, l) >= 0);
    s->camera = camera(v3(0.0f, 1.0f, 3.4f), v3(0.0f, 1.0f, 0.0f), 40.0f);
    s->has_camera = 1;
}

/* Returns 1 when the scene came from the file (the reference image's). */
static int cornell_fixture(Fixture *f)
{
    char path[1024];
    if (file_exists(rt_test_src_path("scenes/cornell.scene", path))) {
        fixture_load(f, path);
        return 1;
    }
    print_message("note: %s absent: building the Cornell box from primitives\n", path);
    memset(f, 0, sizeof *f);
    cornell_build(&f->s);
    fixture_build(f, 1);
    return 0;
}

/* The textured scene with a fixed camera (the file has none). */
static RtCamera textured_camera(void) { return camera(v3(0.4f, 1.5f, 4.5f), v3(0.0f, 0.7f, -0.5f), 55.0f); }

static void textured_fixture(Fixture *f)
{
    char path[1024];
    fixture_load(f, rt_test_src_path("scenes/textured/textured.obj", path));
}

/* ---- tree == brute force ------------------------------------------------- */

static void render_tree_equals_brute_cornell(void **state)
{
    (void)state;
    Fixture f;
    cornell_fixture(&f);
    expect_tree_equals_brute(&f, &f.s.camera, W, H);
    fixture_free(&f);
}

static void render_tree_equals_brute_random(void **state)
{
    (void)state;
    Fixture f;
    memset(&f, 0, sizeof f);
    rt_scene_init(&f.s);
    RtTestRng rng = {0x9e3779b97f4a7c15ull};
    int32_t mats[4];
    mats[0] = add_material(&f.s, v3(0.8f, 0.3f, 0.2f), 0.0f);
    mats[1] = add_material(&f.s, v3(0.2f, 0.7f, 0.3f), 0.0f);
    mats[2] = add_material(&f.s, v3(0.9f, 0.9f, 0.9f), 0.7f);
    mats[3] = -1;
    for (int i = 0; i < 400; i++) {
        RtVec3 c = v3(rt_test_randf(&rng) * 4 - 2, rt_test_randf(&rng) * 4 - 2, rt_test_randf(&rng) * 4 - 2);
        uint32_t base = f.s.vert_count;
        for (int k = 0; k < 3; k++) {
            RtVertex v = {v3_add(c, v3(rt_test_randf(&rng) - 0.5f, rt_test_randf(&rng) - 0.5f,
                                       rt_test_randf(&rng) - 0.5f)),
                          v3(0, 0, 0), rt_test_randf(&rng), rt_test_randf(&rng)};
            assert_true(rt_scene_add_vertex(&f.s, v) >= 0);
        }
        RtTriangle t = {{base, base + 1, base + 2}, mats[rt_test_rand(&rng) % 4], 0};
        assert_true(rt_scene_add_triangle(&f.s, t) >= 0);
    }
    fixture_build(&f, 1);
    expect_tree_equals_brute(&f, &f.s.camera, W, H);
    fixture_free(&f);
}

static void render_tree_equals_brute_bunny(void **state)
{
    (void)state;
    char buf[1024];
    const char *path = rt_test_asset("models/bunny.obj", buf);
    if (!path) skip();
    Fixture f;
    fixture_load(&f, path);
    /* brute force over 69k triangles: a smaller image keeps this ~1 s */
    expect_tree_equals_brute(&f, &f.s.camera, 64, 48);
    fixture_free(&f);
}

/* ---- stored references ----------------------------------------------------- */

static void render_cornell_matches_reference(void **state)
{
    (void)state;
    Fixture f;
    if (!cornell_fixture(&f)) {
        print_message("skip: tests/ref/cornell.png is a render of scenes/cornell.scene\n");
        fixture_free(&f);
        skip();
    }
    RtRenderParams p = rt_render_params_default();
    RtImage img;
    render(&f, &f.s.camera, &p, W, H, &img, NULL, NULL);
    expect_matches_ref(&img, "cornell");
    rt_image_free(&img);
    fixture_free(&f);
}

/* textured.png is the image from before mip maps: the bilinear variant
 * still draws it; textured_trilinear.png is the default filter's. */
static void render_textured_matches_reference(void **state)
{
    (void)state;
    Fixture f;
    textured_fixture(&f);
    RtRenderParams p = rt_render_params_default();
    RtCamera cam = textured_camera();
    RtImage img;
    render(&f, &cam, &p, W, H, &img, NULL, NULL);
    expect_matches_ref(&img, "textured_trilinear");
    rt_image_free(&img);
    p.shade.tex_filter = RT_TEX_BILINEAR;
    render(&f, &cam, &p, W, H, &img, NULL, NULL);
    expect_matches_ref(&img, "textured");
    rt_image_free(&img);
    fixture_free(&f);
}

/* ---- features ------------------------------------------------------------- */

static void render_same_bytes_for_any_thread_count(void **state)
{
    (void)state;
    Fixture f;
    textured_fixture(&f);
    RtCamera cam = textured_camera();
    RtRenderParams p = rt_render_params_default();
    RtImage a, b, c;
    p.threads = 1;
    render(&f, &cam, &p, W, H, &a, NULL, NULL);
    p.threads = 2;
    render(&f, &cam, &p, W, H, &b, NULL, NULL);
    p.threads = 7; /* more threads than cores, tiles unevenly shared */
    render(&f, &cam, &p, W, H, &c, NULL, NULL);
    assert_int_equal(count_differing_bytes(&a, &b), 0);
    assert_int_equal(count_differing_bytes(&a, &c), 0);
    rt_image_free(&a);
    rt_image_free(&b);
    rt_image_free(&c);
    fixture_free(&f);
}

static void render_shadows_darken_the_image(void **state)
{
    (void)state;
    Fixture f;
    cornell_fixture(&f);
    RtRenderParams p = rt_render_params_default();
    RtImage on, off;
    RtRenderStats st_on, st_off;
    render(&f, &f.s.camera, &p, W, H, &on, NULL, &st_on);
    p.shade.shadows = 0;
    render(&f, &f.s.camera, &p, W, H, &off, NULL, &st_off);
    assert_true(st_on.shadow_rays > 0);
    assert_int_equal(st_off.shadow_rays, 0);
    /* every pixel is as bright or brighter without shadows, some strictly */
    int brighter = 0;
    for (size_t i = 0; i < (size_t)W * H * 4; i++) {
        assert_true(off.rgba[i] >= on.rgba[i]);
        brighter += off.rgba[i] > on.rgba[i];
    }
    assert_true(brighter > 100);
    rt_image_free(&on);
    rt_image_free(&off);
    fixture_free(&f);
}

/* Finishes a hand-built scene: a white point light at light, the camera
 * at the origin looking down -z (returned), arrays and tree. */
static RtCamera light_and_camera_down_z(Fixture *f, RtVec3 light)
{
    RtLight l = {RT_LIGHT_POINT, light, v3(1, 1, 1)};
    assert_true(rt_scene_add_light(&f->s, l) >= 0);
    fixture_build_seen(f, camera(v3(0, 0, 0), v3(0, 0, -1), 40.0f));
    return f->s.camera;
}

/* A lit, slanted floor far from the origin renders as it does at the origin: the
 * shadow ray's offset grows with the hit point's magnitude, where the
 * scene-size offset alone is below float spacing (1e-4 of a 4-unit floor
 * is 4e-4; floats near 15,000 are 1e-3 apart) and the floor would shadow
 * itself in speckles. */
static void render_far_from_origin_has_no_shadow_acne(void **state)
{
    (void)state;
    static const float kOffsets[] = {0.0f, 15000.0f};
    RtImage img[2];
    for (int k = 0; k < 2; k++) {
        RtVec3 o = v3(kOffsets[k], kOffsets[k], kOffsets[k]);
        Fixture f;
        memset(&f, 0, sizeof f);
        rt_scene_init(&f.s);
        int32_t grey = add_material(&f.s, v3(0.7f, 0.7f, 0.7f), 0.0f);
        /* tilted in both directions: no coordinate of a hit point is exact */
        add_quad(&f.s, v3_add(o, v3(-2, 0.3f, 2)), v3_add(o, v3(2, -0.2f, 2)), v3_add(o, v3(2, 0.1f, -2)),
                 v3_add(o, v3(-2, 0.6f, -2)), grey);
        RtLight l = {RT_LIGHT_POINT, v3_add(o, v3(0.5f, 1.5f, 0.0f)), v3(1, 1, 1)};
        assert_true(rt_scene_add_light(&f.s, l) >= 0);
        fixture_build_seen(&f, camera(v3_add(o, v3(0, 1.0f, 1.0f)), v3_add(o, v3(0, 0, -0.2f)), 50.0f));
        RtRenderParams p = rt_render_params_default();
        render(&f, &f.s.camera, &p, 64, 48, &img[k], NULL, NULL);
        fixture_free(&f);
    }
    /* the floor fills the view: no edges, so any dark pixel is acne */
    int dark = 0;
    for (int i = 0; i < 64 * 48; i++) {
        int d = abs((int)img[0].rgba[4 * i] - (int)img[1].rgba[4 * i]);
        dark += d > 16;
    }
    print_message("far from the origin: %d of %d pixels differ by > 16\n", dark, 64 * 48);
    assert_true(dark <= 64 * 48 / 200);
    rt_image_free(&img[0]);
    rt_image_free(&img[1]);
}

/* Camera at the origin looking down -z at a mirror (z = -3); a red wall at
 * z = +1 behind the camera faces the mirror. The centre pixel shows the red
 * wall via the mirror, and the grey mirror itself with no bounces. */
static void render_mirror_shows_reflected_object(void **state)
{
    (void)state;
    Fixture f;
    memset(&f, 0, sizeof f);
    rt_scene_init(&f.s);
    int32_t mirror = add_material(&f.s, v3(0.5f, 0.5f, 0.5f), 1.0f);
    int32_t red = add_material(&f.s, v3(0.9f, 0.05f, 0.05f), 0.0f);
    uint32_t mirror_tri = add_quad(&f.s, v3(-2, -2, -3), v3(2, -2, -3), v3(2, 2, -3), v3(-2, 2, -3), mirror);
    add_quad(&f.s, v3(3, -3, 1), v3(-3, -3, 1), v3(-3, 3, 1), v3(3, 3, 1), red);
    RtCamera cam = light_and_camera_down_z(&f, v3(0.0f, 1.0f, 0.5f));

    RtRenderParams p = rt_render_params_default();
    RtImage img, flat;
    uint32_t *ids;
    RtRenderStats st;
    render(&f, &cam, &p, 33, 33, &img, &ids, &st);
    const uint8_t *c = pixel(&img, 16, 16);
    print_message("mirror centre: %u %u %u\n", c[0], c[1], c[2]);
    assert_true(ids[16 * 33 + 16] == mirror_tri || ids[16 * 33 + 16] == mirror_tri + 1);
    assert_true(c[0] > 100 && c[0] > 3 * c[1] && c[0] > 3 * c[2]);
    assert_true(st.reflection_rays > 0);

    p.shade.max_bounces = 0;
    render(&f, &cam, &p, 33, 33, &flat, NULL, &st);
    c = pixel(&flat, 16, 16);
    assert_true(abs((int)c[0] - (int)c[1]) <= 2 && c[0] > 20);
    assert_int_equal(st.reflection_rays, 0);
    rt_image_free(&img);
    rt_image_free(&flat);
    free(ids);
    fixture_free(&f);
}

/* Camera at the origin looking down -z through a glass slab (a box, z in
 * [-2.1, -1.9], d = 0.2, ni 1.5, illum 7) at a red wall (z = -4) lit from
 * between the two. With refraction (the default) and bounces for both of
 * the slab's faces, the centre pixel shows the red wall through the glass;
 * with refraction off, or a budget that ends inside the slab, it shows the
 * grey glass. The primary hit is the slab either way. */
static void render_glass_shows_object_behind(void **state)
{
    (void)state;
    Fixture f;
    memset(&f, 0, sizeof f);
    rt_scene_init(&f.s);
    RtMaterial glass = rt_material_default();
    glass.kd = v3(0.9f, 0.9f, 0.9f);
    glass.d = 0.2f;
    glass.ni = 1.5f;
    glass.illum = 7;
    int64_t gm = rt_scene_add_material(&f.s, &glass);
    assert_true(gm >= 0);
    int32_t red = add_material(&f.s, v3(0.9f, 0.05f, 0.05f), 0.0f);
    RtError err = {0};
    float m[12];
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(1.5f, 1.5f, 0.1f));
    rt_mat34_translate(m, v3(0.0f, 0.0f, -2.0f));
    assert_int_equal(rt_prim_box(&f.s, m, (int32_t)gm, "slab", &err), RT_OK);
    uint32_t slab_tris = f.s.tri_count;
    add_quad(&f.s, v3(3, -3, -4), v3(3, 3, -4), v3(-3, 3, -4), v3(-3, -3, -4), red);
    RtCamera cam = light_and_camera_down_z(&f, v3(0.0f, 1.0f, -3.0f));

    RtRenderParams p = rt_render_params_default();
    assert_int_equal(p.shade.refraction, 1);
    p.shade.max_bounces = 2;
    RtImage img;
    uint32_t *ids;
    RtRenderStats st;
    render(&f, &cam, &p, 33, 33, &img, &ids, &st);
    const uint8_t *c = pixel(&img, 16, 16);
    print_message("through the glass: %u %u %u\n", c[0], c[1], c[2]);
    assert_true(ids[16 * 33 + 16] < slab_tris);
    assert_true(c[0] > 120 && c[0] > 2 * c[1] && c[0] > 2 * c[2]);
    assert_true(st.reflection_rays > 0); /* refracted rays count as secondary rays */
    rt_image_free(&img);
    free(ids);

    /* opaque: refraction off, or no bounce left to leave the slab */
    for (int k = 0; k < 2; k++) {
        p = rt_render_params_default();
        if (k == 0) p.shade.refraction = 0;
        else p.shade.max_bounces = 1;
        render(&f, &cam, &p, 33, 33, &img, &ids, &st);
        c = pixel(&img, 16, 16);
        print_message("glass, %s: %u %u %u\n", k == 0 ? "refraction off" : "1 bounce", c[0], c[1],
                      c[2]);
        assert_true(ids[16 * 33 + 16] < slab_tris);
        assert_true(abs((int)c[0] - (int)c[1]) <= 2 && abs((int)c[1] - (int)c[2]) <= 2);
        if (k == 0) assert_int_equal(st.reflection_rays, 0);
        rt_image_free(&img);
        free(ids);
    }
    fixture_free(&f);
}

static void assert_v3_near(RtVec3 a, RtVec3 b, float tol)
{
    if (fabsf(a.x - b.x) > tol || fabsf(a.y - b.y) > tol || fabsf(a.z - b.z) > tol)
        fail_msg("(%g, %g, %g) != (%g, %g, %g)", a.x, a.y, a.z, b.x, b.y, b.z);
}

/* The transmitted ray: Snell's law with ni for illum 4/6/7 (n1 sin t1 = n2
 * sin t2), straight on otherwise, total internal reflection leaving a
 * denser medium past the critical angle; it starts behind the surface, a
 * reflected one in front. The surface is the plane y = 0 at the origin. */
static void shade_refraction_follows_snell(void **state)
{
    (void)state;
    const float eps = 1e-3f, s = 0.70710678f; /* 45 degrees */
    RtMaterial glass = rt_material_default();
    glass.d = 0.2f;
    glass.ni = 1.5f;
    glass.illum = 7;
    RtShadeMaterial m = rt_shade_material(&glass);
    RtVec3 a = v3(-1, 0, 1), b = v3(1, 0, 1), c = v3(0, 0, -1), up = v3(0, 1, 0);
    /* entering from above, the side (b - a) x (c - a) = +y points to */
    RtVec3 down = v3(s, -s, 0);
    RtShadeSurface sf = rt_shade_surface(a, b, c, up, up, up, 0.25f, 0.25f, down, glass.kd);
    assert_v3_near(sf.ng, up, 1e-6f);
    RtRay r = rt_shade_refract_ray(&m, &sf, down, eps);
    float sin_t = s / 1.5f;
    assert_v3_near(r.d, v3(sin_t, -sqrtf(1.0f - sin_t * sin_t), 0), 1e-5f);
    assert_true(r.o.y < 0.0f); /* behind the surface */
    assert_int_equal(sf.front, 1);

    /* leaving the glass at 45 degrees: past the critical angle (41.8) */
    RtVec3 up45 = v3(s, s, 0);
    RtShadeSurface back = rt_shade_surface(a, b, c, up, up, up, 0.25f, 0.25f, up45, glass.kd);
    assert_int_equal(back.front, 0);
    assert_v3_near(back.ng, v3(0, -1, 0), 1e-6f);
    r = rt_shade_refract_ray(&m, &back, up45, eps);
    assert_v3_near(r.d, v3(s, -s, 0), 1e-5f); /* mirrored back into the glass */
    assert_true(r.o.y < 0.0f);                /* the ray's own side */

    /* leaving at 20 degrees: bent away from the normal by ni */
    RtVec3 up20 = v3(sinf(0.34906585f), cosf(0.34906585f), 0);
    r = rt_shade_refract_ray(&m, &back, up20, eps);
    float sin_out = 1.5f * up20.x;
    assert_v3_near(r.d, v3(sin_out, sqrtf(1.0f - sin_out * sin_out), 0), 1e-5f);
    assert_true(r.o.y > 0.0f);

    /* illum 2 (no refraction model): straight on */
    glass.illum = 2;
    m = rt_shade_material(&glass);
    r = rt_shade_refract_ray(&m, &sf, down, eps);
    assert_v3_near(r.d, down, 1e-6f);
}

/* sRGB: the clamps, NaN, the linear toe, a known mid value, and every byte
 * surviving byte -> linear -> byte. */
/* A ray parallel to a triangle's plane never hits it, even with an
 * infinite tmax: t = -oz/0 is infinite (or NaN in the plane), and its
 * barycentrics NaN, which no comparison rejects. The plane x = y contains
 * the z axis exactly (dz = 0). rt_isect_woop_finite is the kd traversal's
 * (its tmax is a cell's exit); with a finite tmax it agrees. */
static void isect_parallel_ray_never_hits_at_infinity(void **state)
{
    (void)state;
    RtFloat4 rows[3];
    assert_true(rt_woop_rows(v3(0, 0, 0), v3(4, 4, 0), v3(0, 0, 4), rows));
    assert_true(rows[2].z == 0.0f);
    const RtVec3 origins[] = {v3(1.0f, 1.2f, -1), v3(1.2f, 1.0f, -1), v3(1.0f, 1.0f, -1)};
    for (int i = 0; i < 3; i++) {
        float t, u, v;
        assert_int_equal(rt_isect_woop(rows, origins[i], v3(0, 0, 1), 0.0f, INFINITY, &t, &u, &v), 0);
        assert_int_equal(rt_isect_woop_finite(rows, origins[i], v3(0, 0, 1), 0.0f, 1e30f, &t, &u, &v), 0);
        assert_int_equal(rt_isect_mt(v3(0, 0, 0), v3(4, 4, 0), v3(0, 0, 4), origins[i], v3(0, 0, 1), 0.0f,
                                     INFINITY, &t, &u, &v),
                         0);
    }
    /* and a ray through the plane still hits, at the same t both ways */
    float t0, t1, u, v;
    assert_true(rt_isect_woop(rows, v3(-1, 3, 1), v3(1, -1, 0), 0.0f, INFINITY, &t0, &u, &v));
    assert_true(rt_isect_woop_finite(rows, v3(-1, 3, 1), v3(1, -1, 0), 0.0f, 100.0f, &t1, &u, &v));
    assert_true(t0 == t1 && fabsf(t0 - 2.0f) < 1e-6f);
}

static void shade_srgb_known_values(void **state)
{
    (void)state;
    assert_int_equal(rt_shade_linear_to_srgb8(0.0f), 0);
    assert_int_equal(rt_shade_linear_to_srgb8(-1.0f), 0);
    assert_int_equal(rt_shade_linear_to_srgb8(NAN), 0);
    assert_int_equal(rt_shade_linear_to_srgb8(1.0f), 255);
    assert_int_equal(rt_shade_linear_to_srgb8(7.0f), 255);
    assert_int_equal(rt_shade_linear_to_srgb8(INFINITY), 255);
    assert_int_equal(rt_shade_linear_to_srgb8(0.001f), 3);   /* 12.92 x in the toe */
    assert_int_equal(rt_shade_linear_to_srgb8(0.5f), 188);   /* 0.7354 of 255 */
    assert_true(rt_shade_srgb8_to_linear(0) == 0.0f);
    assert_true(fabsf(rt_shade_srgb8_to_linear(255) - 1.0f) < 1e-6f);
    assert_true(fabsf(rt_shade_srgb8_to_linear(128) - 0.2158605f) < 1e-5f);
    for (int i = 0; i < 256; i++)
        assert_int_equal(rt_shade_linear_to_srgb8(rt_shade_srgb8_to_linear((uint8_t)i)), i);
}

/* ---- sample.h: the diffuse rays' directions ----------------------------------- */

/* Normals a basis can trip on (the poles, -0, the equator, near-poles that
 * make 1 + n.z tiny in a naive formula) and random ones. */
static RtVec3 test_normal(int i, RtTestRng *rng)
{
    static const float fixed[][3] = {{0, 0, 1}, {0, 0, -1}, {1, 0, -0.0f}, {0, 1, 0}, {-1, 0, 0},
                                     {0, -1, 0}, {1e-4f, 0, -1}, {0, 1e-7f, -1}, {0.6f, 0, 0.8f}};
    const int nfixed = (int)(sizeof fixed / sizeof fixed[0]);
    if (i < nfixed) return v3_norm(v3(fixed[i][0], fixed[i][1], fixed[i][2]));
    RtVec3 d;
    do d = v3(2 * rt_test_randf(rng) - 1, 2 * rt_test_randf(rng) - 1, 2 * rt_test_randf(rng) - 1);
    while (v3_dot(d, d) < 1e-4f || v3_dot(d, d) > 1.0f);
    return v3_norm(d);
}

static void sample_dirs_are_unit_and_on_the_normals_side(void **state)
{
    (void)state;
    RtTestRng rng = {0xd1ff};
    for (int i = 0; i < 500; i++) {
        RtVec3 n = test_normal(i, &rng), t, b;
        /* the basis: orthonormal and right-handed for every normal */
        rt_sample_basis(n, &t, &b);
        assert_float_equal(v3_len(t), 1.0f, 1e-5f);
        assert_float_equal(v3_len(b), 1.0f, 1e-5f);
        assert_float_equal(v3_dot(t, n), 0.0f, 1e-5f);
        assert_float_equal(v3_dot(b, n), 0.0f, 1e-5f);
        assert_float_equal(v3_dot(t, b), 0.0f, 1e-5f);
        assert_float_equal(v3_dot(v3_cross(t, b), n), 1.0f, 1e-5f);
        for (uint32_t k = 0; k < 200; k++) {
            float u1, u2;
            rt_sample_uniform2(k + 1000u * (uint32_t)i, 3, &u1, &u2);
            assert_true(u1 >= 0.0f && u1 < 1.0f && u2 >= 0.0f && u2 < 1.0f);
            RtVec3 d = rt_sample_cosine_dir(n, u1, u2);
            assert_float_equal(v3_len(d), 1.0f, 1e-6f);
            assert_true(v3_dot(d, n) > 0.0f);
        }
        /* the extremes of [0, 1): the normal itself, and the grazing ring */
        assert_float_equal(v3_dot(rt_sample_cosine_dir(n, 0.0f, 0.0f), n), 1.0f, 1e-6f);
        float last = 1.0f - RT_SAMPLE_UNIT_24;
        assert_true(v3_dot(rt_sample_cosine_dir(n, last, 0.25f), n) > 0.0f);
        assert_true(v3_dot(rt_sample_cosine_dir(n, last, last), n) > 0.0f);
    }
}

/* Density cos(theta) / pi: P(cos theta <= c) = c^2, so E[cos theta] = 2/3,
 * and the azimuth is uniform (the tangential components average 0). With
 * 2^18 samples the mean's standard error is 0.24 / 512 = 5e-4, the CDF's
 * under 1e-3: the tolerances are 5-6 of them. */
static void sample_cosine_mean_is_two_thirds(void **state)
{
    (void)state;
    const uint32_t n = 1u << 18;
    RtTestRng rng = {0xc05};
    for (int i = 0; i < 3; i++) {
        RtVec3 nn = test_normal(i == 2 ? 40 : i, &rng), t, b;
        rt_sample_basis(nn, &t, &b);
        double sum = 0, st = 0, sb = 0;
        uint32_t below[3] = {0, 0, 0};
        const float cuts[3] = {0.25f, 0.5f, 0.75f};
        for (uint32_t k = 0; k < n; k++) {
            float u1, u2;
            rt_sample_uniform2(k, (uint32_t)i + 1, &u1, &u2);
            RtVec3 d = rt_sample_cosine_dir(nn, u1, u2);
            float c = v3_dot(d, nn);
            sum += c;
            st += v3_dot(d, t);
            sb += v3_dot(d, b);
            for (int j = 0; j < 3; j++) below[j] += c <= cuts[j];
        }
        print_message("  normal %d: mean cos theta %.5f (2/3), P(cos <= .25 .5 .75) %.4f %.4f %.4f\n", i,
                      sum / n, (double)below[0] / n, (double)below[1] / n, (double)below[2] / n);
        assert_float_equal(sum / n, 2.0 / 3.0, 3e-3);
        assert_float_equal(st / n, 0.0, 3e-3);
        assert_float_equal(sb / n, 0.0, 3e-3);
        for (int j = 0; j < 3; j++) assert_float_equal((double)below[j] / n, cuts[j] * cuts[j], 5e-3);
    }
}

/* A pixel's numbers depend on (pixel, seed) alone: the same again for the
 * same seed, others for another seed, and the diffuse ray likewise. */
static void sample_same_seed_same_rays_other_seed_others(void **state)
{
    (void)state;
    const uint32_t n = 10000;
    uint32_t same_other = 0, same_neighbour = 0;
    for (uint32_t i = 0; i < n; i++) {
        float a1, a2, b1, b2, c1, c2, d1, d2;
        rt_sample_uniform2(i, 42, &a1, &a2);
        rt_sample_uniform2(i, 42, &b1, &b2);
        rt_sample_uniform2(i, 43, &c1, &c2);
        rt_sample_uniform2(i + 1, 42, &d1, &d2);
        assert_memory_equal(&a1, &b1, sizeof a1);
        assert_memory_equal(&a2, &b2, sizeof a2);
        same_other += a1 == c1 || a2 == c2;
        same_neighbour += a1 == d1 || a2 == d2;
    }
    /* two 24-bit numbers coincide by chance about 2 n / 2^24 times */
    assert_true(same_other <= 2);
    assert_true(same_neighbour <= 2);

    /* the diffuse ray of a hit: on the side the ray came from, off the
     * surface by the offset, the same for the same seed */
    RtVec3 a = v3(0, 0, 0), b = v3(2, 0, 0), c = v3(0, 2, 0); /* winding normal +z */
    const float eps = 1e-3f;
    for (int side = 0; side < 2; side++) {
        RtVec3 dir = v3_norm(v3(0.3f, 0.2f, side ? 1.0f : -1.0f)); /* from +z, then from -z */
        float facing = side ? -1.0f : 1.0f;
        for (uint32_t px = 0; px < 100; px++) {
            RtRay r = rt_sample_diffuse_ray(a, b, c, 0.25f, 0.25f, dir, px, 9, eps);
            RtRay again = rt_sample_diffuse_ray(a, b, c, 0.25f, 0.25f, dir, px, 9, eps);
            RtRay other = rt_sample_diffuse_ray(a, b, c, 0.25f, 0.25f, dir, px, 10, eps);
            assert_memory_equal(&r, &again, sizeof r);
            assert_true(memcmp(&r.d, &other.d, sizeof r.d) != 0);
            assert_memory_equal(&r.o, &other.o, sizeof r.o);
            assert_float_equal(r.o.x, 0.5f, 1e-6f);
            assert_float_equal(r.o.y, 0.5f, 1e-6f);
            assert_float_equal(r.o.z, facing * eps, 1e-7f);
            assert_true(facing * r.d.z > 0.0f);
            assert_float_equal(v3_len(r.d), 1.0f, 1e-6f);
        }
    }
}

/* The heatmap ramp at its stops (docs/renderer.md's table), halfway
 * between two, and saturated past the top; the pixel's alpha is 255. */
static void shade_heatmap_ramp_stops(void **state)
{
    (void)state;
    const struct { uint32_t steps; uint8_t rgb[3]; } want[] = {
        {0, {0, 0, 128}},     {16, {0, 0, 255}},  {32, {0, 128, 255}}, {48, {0, 255, 255}},
        {80, {255, 255, 0}},  {112, {255, 0, 0}}, {128, {128, 0, 0}},  {100000, {128, 0, 0}},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        uint8_t px[3];
        rt_shade_heat_color(want[i].steps, px);
        print_message("steps %u: %u %u %u\n", want[i].steps, px[0], px[1], px[2]);
        assert_memory_equal(px, want[i].rgb, 3);
    }
    RtShadeParams p = rt_shade_params_default();
    p.heatmap = 1;
    uint8_t out[4];
    rt_shade_pixel(&p, v3(1, 1, 1), 16, out);
    const uint8_t blue[4] = {0, 0, 255, 255};
    assert_memory_equal(out, blue, 4);
    p.heatmap = 0;
    rt_shade_pixel(&p, v3(1, 0.5f, 0), 16, out);
    const uint8_t shaded[4] = {255, 188, 0, 255};
    assert_memory_equal(out, shaded, 4);
}

/* Mask textures (16 x 16): left half a hole, right half solid. */
static void mask_alpha(int x, int y, uint8_t px[4])
{
    (void)y;
    px[0] = px[1] = px[2] = 200;
    px[3] = x < 8 ? 0 : 255;
}
static void mask_luminance(int x, int y, uint8_t px[4])
{
    (void)y;
    px[0] = px[1] = px[2] = x < 8 ? 0 : 255;
    px[3] = 255;
}

/* Camera at the origin looking down -z (60 degrees, 40 x 40 pixels) at a
 * 2 x 2 cutout quad at z = -2 whose left half is a hole, in front of a wall
 * at z = -4; a point light at (-0.5, 0, 0). Pixel column 18 sees the wall
 * through the hole (x = -0.09 at z = -2), and its shadow ray leaves through
 * the hole too (it crosses z = -2 at x = -0.34): lit. Column 38 sees the
 * wall beside the quad (x = 2.14 at z = -4), but its shadow ray crosses the
 * solid half (x = 0.82): shadowed. Column 25 sees the solid half. */
static void alpha_cutout_case(void (*mask)(int, int, uint8_t *), const char *what)
{
    Fixture f;
    memset(&f, 0, sizeof f);
    rt_scene_init(&f.s);
    int32_t tex = add_texture(&f.s, 16, 16, mask);
    RtMaterial m = rt_material_default();
    m.map_d = tex;
    int32_t cut = (int32_t)rt_scene_add_material(&f.s, &m);
    uint32_t front = add_quad(&f.s, v3(-1, -1, -2), v3(1, -1, -2), v3(1, 1, -2), v3(-1, 1, -2), cut);
    uint32_t back = add_quad(&f.s, v3(-3, -3, -4), v3(3, -3, -4), v3(3, 3, -4), v3(-3, 3, -4), -1);
    RtLight l = {RT_LIGHT_POINT, v3(-0.5f, 0, 0), v3(1, 1, 1)};
    assert_true(rt_scene_add_light(&f.s, l) >= 0);
    RtCamera cam = camera(v3(0, 0, 0), v3(0, 0, -1), 60.0f);
    fixture_build_seen(&f, cam);

    RtRenderParams p = rt_render_params_default();
    RtImage img;
    uint32_t *ids;
    render(&f, &cam, &p, 40, 40, &img, &ids, NULL);
    uint32_t hole = ids[20 * 40 + 18], solid = ids[20 * 40 + 25], beside = ids[20 * 40 + 38];
    const uint8_t *lit = pixel(&img, 18, 20), *dark = pixel(&img, 38, 20);
    print_message("%s: hole pixel tri %u (red %u), solid pixel tri %u, beside tri %u (red %u)\n",
                  what, hole, lit[0], solid, beside, dark[0]);
    assert_true(hole == back || hole == back + 1);
    assert_true(solid == front || solid == front + 1);
    assert_true(beside == back || beside == back + 1);
    assert_true(lit[0] > dark[0] + 60);
    rt_image_free(&img);
    free(ids);

    p.shade.textures = 0; /* no cutouts without textures */
    render(&f, &cam, &p, 40, 40, &img, &ids, NULL);
    assert_true(ids[20 * 40 + 18] == front || ids[20 * 40 + 18] == front + 1);
    rt_image_free(&img);
    free(ids);
    fixture_free(&f);
}

static void render_alpha_cutout_ray_passes_hole(void **state)
{
    (void)state;
    alpha_cutout_case(mask_alpha, "alpha mask");
}

static void render_luminance_cutout_without_alpha(void **state)
{
    (void)state;
    alpha_cutout_case(mask_luminance, "luminance mask");
}

/* ---- texture filtering (docs/renderer.md) ------------------------------------ */

/* A checker of 2-texel cells on 1024 x 1024 texels: black and white, the
 * worst case for minification. */
static void fine_checker(int x, int y, uint8_t px[4])
{
    px[0] = px[1] = px[2] = ((x >> 1) + (y >> 1)) & 1 ? 255 : 0;
    px[3] = 255;
}

/* Sum of |pixel - right neighbour| + |pixel - neighbour below| (green)
 * where both lie on the plane (mask != 0): the image's high-frequency
 * energy. */
static double hf_energy(const RtImage *img, const uint8_t *mask)
{
    double e = 0;
    for (int y = 0; y + 1 < img->h; y++)
        for (int x = 0; x + 1 < img->w; x++) {
            size_t i = (size_t)y * img->w + x;
            if (!mask[i] || !mask[i + 1] || !mask[i + img->w]) continue;
            int c = pixel(img, x, y)[1];
            e += abs(c - pixel(img, x + 1, y)[1]) + abs(c - pixel(img, x, y + 1)[1]);
        }
    return e;
}

/* Mean |a - b| (green) over the plane's pixels. */
static double mean_diff(const RtImage *a, const RtImage *b, const uint8_t *mask)
{
    double sum = 0;
    int n = 0;
    for (int i = 0; i < a->w * a->h; i++)
        if (mask[i]) sum += abs((int)a->rgba[4 * i + 1] - (int)b->rgba[4 * i + 1]), n++;
    return n ? sum / n : 0;
}

/* A 40 x 40 m checker floor seen from 1.5 m up toward its far edge (60 m
 * to the horizon at a few degrees): bilinear lookups alias into noise
 * (moire) where a pixel covers many cells; trilinear by the ray cone has a
 * fraction of that energy and lies close to the reference, a bilinear
 * render with 8 x 8 samples a pixel averaged in linear light. */
static void render_grazing_checker_trilinear_is_smooth_and_close_to_supersampled(void **state)
{
    (void)state;
    enum { SS = 8 };
    Fixture f;
    memset(&f, 0, sizeof f);
    rt_scene_init(&f.s);
    RtMaterial m = rt_material_default();
    m.map_kd = add_texture(&f.s, 1024, 1024, fine_checker);
    int32_t mat = (int32_t)rt_scene_add_material(&f.s, &m);
    add_quad(&f.s, v3(-20, 0, 0), v3(20, 0, 0), v3(20, 0, -40), v3(-20, 0, -40), mat);
    RtLight l = {RT_LIGHT_DIRECTIONAL, v3(0, 1, 0), v3(1, 1, 1)};
    assert_true(rt_scene_add_light(&f.s, l) >= 0);
    RtCamera cam = camera(v3(0, 1.5f, 1), v3(0, 0, -20), 50.0f);
    fixture_build_seen(&f, cam);

    RtRenderParams p = rt_render_params_default();
    p.shade.shadows = 0;
    RtImage tri, bil, big, ref;
    uint32_t *ids;
    render(&f, &cam, &p, W, H, &tri, &ids, NULL);
    p.shade.tex_filter = RT_TEX_BILINEAR;
    render(&f, &cam, &p, W, H, &bil, NULL, NULL);
    render(&f, &cam, &p, W * SS, H * SS, &big, NULL, NULL);
    assert_int_equal(rt_image_alloc(&ref, W, H), RT_OK);
    uint8_t *mask = malloc((size_t)W * H);
    assert_non_null(mask);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            mask[y * W + x] = ids[y * W + x] != RT_NO_HIT;
            for (int k = 0; k < 4; k++) {
                double sum = 0;
                for (int j = 0; j < SS; j++)
                    for (int i = 0; i < SS; i++)
                        sum += rt_shade_srgb8_to_linear(pixel(&big, x * SS + i, y * SS + j)[k]);
                ref.rgba[4 * (y * W + x) + k] = rt_shade_linear_to_srgb8((float)(sum / (SS * SS)));
            }
        }
    double e_tri = hf_energy(&tri, mask), e_bil = hf_energy(&bil, mask), e_ref = hf_energy(&ref, mask);
    double d_tri = mean_diff(&tri, &ref, mask), d_bil = mean_diff(&bil, &ref, mask);
    print_message("high-frequency energy: trilinear %.0f, bilinear %.0f, supersampled %.0f; mean |diff| to "
                  "the supersampled image: trilinear %.2f, bilinear %.2f\n", e_tri, e_bil, e_ref, d_tri, d_bil);
    assert_true(e_tri < 0.25 * e_bil);
    assert_true(d_tri < 0.5 * d_bil);
    assert_true(d_tri < 12.0);
    free(mask);
    free(ids);
    rt_image_free(&tri);
    rt_image_free(&bil);
    rt_image_free(&big);
    rt_image_free(&ref);
    fixture_free(&f);
}

/* The bilinear variant is the filter from before mip maps: its image is
 * the one of the same textures with level 0 alone, byte for byte. */
static void render_bilinear_reads_level_zero_alone(void **state)
{
    (void)state;
    Fixture f;
    textured_fixture(&f);
    RtCamera cam = textured_camera();
    RtRenderParams p = rt_render_params_default();
    RtImage tri, bil, bare;
    render(&f, &cam, &p, W, H, &tri, NULL, NULL);
    p.shade.tex_filter = RT_TEX_BILINEAR;
    render(&f, &cam, &p, W, H, &bil, NULL, NULL);
    for (uint32_t i = 0; i < f.s.tex_count; i++) {
        assert_true(f.s.texs[i].levels > 1);
        f.s.texs[i].levels = 1;
    }
    p.shade.tex_filter = RT_TEX_TRILINEAR;
    render(&f, &cam, &p, W, H, &bare, NULL, NULL);
    assert_int_equal(count_differing_bytes(&bil, &bare), 0);
    assert_true(count_differing_bytes(&bil, &tri) > 0);
    rt_image_free(&tri);
    rt_image_free(&bil);
    rt_image_free(&bare);
    fixture_free(&f);
}

/* A fence (map_d: one opaque texel column in 8, 1/8 coverage) 10 m wide,
 * 200 m away: each strand far below a pixel. Masks are read at level 0
 * (shade.h's rt_shade_alpha_passes), so primary rays still hit strands at
 * about the coverage; through the mip levels alpha would average to 1/8,
 * under the cut-off, and the fence would vanish. */
static void fence_stripes(int x, int y, uint8_t px[4])
{
    (void)y;
    px[0] = px[1] = px[2] = 128;
    px[3] = x % 8 == 0 ? 255 : 0;
}

static void render_far_cutout_fence_keeps_its_coverage(void **state)
{
    (void)state;
    Fixture f;
    memset(&f, 0, sizeof f);
    rt_scene_init(&f.s);
    RtMaterial m = rt_material_default();
    m.map_d = add_texture(&f.s, 64, 64, fence_stripes);
    int32_t mat = (int32_t)rt_scene_add_material(&f.s, &m);
    uint32_t fence = add_quad(&f.s, v3(-5, -5, -200), v3(5, -5, -200), v3(5, 5, -200), v3(-5, 5, -200), mat);
    RtCamera cam = camera(v3(0, 0, 0), v3(0, 0, -1), 10.0f);
    fixture_build_seen(&f, cam);
    RtRenderParams p = rt_render_params_default();
    RtImage img;
    uint32_t *ids;
    render(&f, &cam, &p, W, H, &img, &ids, NULL);
    /* the fence spans x, y in [-5, 5] at 200 m: tan = 0.025 of the half
     * view's tan 5 = 0.0875, 17 rows either side of the centre (H = 120);
     * count the 14 rows and columns either side, inside it */
    int inside = 0, hits = 0;
    for (int y = H / 2 - 14; y < H / 2 + 14; y++)
        for (int x = W / 2 - 14; x < W / 2 + 14; x++) {
            inside++;
            hits += ids[y * W + x] == fence || ids[y * W + x] == fence + 1;
        }
    double cover = (double)hits / inside;
    print_message("far fence: %.3f of its pixels hit a strand (texel coverage 0.125)\n", cover);
    assert_true(cover > 0.05 && cover < 0.3);
    rt_image_free(&img);
    free(ids);
    fixture_free(&f);
}

static void render_textures_toggle_changes_image(void **state)
{
    (void)state;
    Fixture f;
    textured_fixture(&f);
    RtCamera cam = textured_camera();
    RtRenderParams p = rt_render_params_default();
    RtImage a, b;
    render(&f, &cam, &p, W, H, &a, NULL, NULL);
    p.shade.textures = 0;
    render(&f, &cam, &p, W, H, &b, NULL, NULL);
    assert_true(count_differing_bytes(&a, &b) > W * H / 4);
    rt_image_free(&a);
    rt_image_free(&b);
    fixture_free(&f);
}

static void render_woop_and_mt_nearly_equal(void **state)
{
    (void)state;
    Fixture f;
    textured_fixture(&f);
    RtCamera cam = textured_camera();
    RtRenderParams p = rt_render_params_default();
    RtImage a, b;
    render(&f, &cam, &p, W, H, &a, NULL, NULL);
    p.use_woop = 0;
    render(&f, &cam, &p, W, H, &b, NULL, NULL);
    int off = 0;
    for (int i = 0; i < W * H; i++)
        for (int k = 0; k < 3; k++)
            if (abs((int)a.rgba[4 * i + k] - (int)b.rgba[4 * i + k]) > 2) {
                off++;
                break;
            }
    print_message("woop vs mt: %d of %d pixels differ by more than 2\n", off, W * H);
    assert_true(off <= W * H / 200); /* at most 0.5 % (edges) */
    rt_image_free(&a);
    rt_image_free(&b);
    fixture_free(&f);
}

/* ---- sizes and edge cases ------------------------------------------------- */

static void render_one_pixel_image(void **state)
{
    (void)state;
    Fixture f;
    textured_fixture(&f);
    RtCamera cam = textured_camera();
    RtRenderParams p = rt_render_params_default();
    RtImage img;
    uint32_t *ids;
    RtRenderStats st;
    render(&f, &cam, &p, 1, 1, &img, &ids, &st);
    assert_int_equal(st.primary_rays, 1);
    assert_true(ids[0] < f.s.tri_count); /* the centre ray hits the scene */
    assert_int_equal(img.rgba[3], 255);
    rt_image_free(&img);
    free(ids);
    fixture_free(&f);
}

static void render_camera_looking_away_is_background(void **state)
{
    (void)state;
    Fixture f;
    textured_fixture(&f);
    RtCamera cam = camera(v3(0, 1, 6), v3(0, 1, 12), 50.0f); /* away from the scene */
    RtRenderParams p = rt_render_params_default();
    p.shade.sky = 0; /* the flat background (the sky: render_camera_looking_away_sees_the_sky) */
    RtImage img;
    uint32_t *ids;
    RtRenderStats st;
    render(&f, &cam, &p, 32, 24, &img, &ids, &st);
    uint8_t bg[3] = {rt_shade_linear_to_srgb8(p.shade.background.x),
                     rt_shade_linear_to_srgb8(p.shade.background.y),
                     rt_shade_linear_to_srgb8(p.shade.background.z)};
    for (int i = 0; i < 32 * 24; i++) {
        assert_int_equal(ids[i], RT_NO_HIT);
        assert_memory_equal(&img.rgba[4 * i], bg, 3);
    }
    assert_int_equal(st.primary_rays, 32 * 24);
    assert_int_equal(st.shadow_rays, 0);
    rt_image_free(&img);
    free(ids);
    fixture_free(&f);
}

/* With the sky on (the default), a miss sees rt_shade_sky of its own
 * direction: pixels higher in the image (looking further up) are bluer. */
static void render_camera_looking_away_sees_the_sky(void **state)
{
    (void)state;
    Fixture f;
    textured_fixture(&f);
    RtCamera cam = camera(v3(0, 1, 6), v3(0, 1.5f, 12), 50.0f);
    RtRenderParams p = rt_render_params_default();
    RtImage img;
    uint32_t *ids;
    RtRenderStats st;
    render(&f, &cam, &p, 32, 24, &img, &ids, &st);
    RtCameraBasis b = rt_camera_basis(cam, 32, 24);
    for (int i = 0; i < 32 * 24; i += 7) {
        RtVec3 c = rt_shade_sky(rt_camera_dir(&b, (float)(i % 32) + 0.5f, (float)(i / 32) + 0.5f));
        assert_int_equal(img.rgba[4 * i + 2], rt_shade_linear_to_srgb8(c.z));
    }
    const uint8_t *top = &img.rgba[4 * 16], *bottom = &img.rgba[4 * (23 * 32 + 16)];
    assert_true(top[2] - top[0] > bottom[2] - bottom[0]);
    rt_image_free(&img);
    free(ids);
    fixture_free(&f);
}

static void render_rejects_bad_arguments(void **state)
{
    (void)state;
    Fixture f;
    textured_fixture(&f);
    RtCamera cam = textured_camera();
    RtRenderParams p = rt_render_params_default();
    RtImage img;
    RtError err = {0};
    assert_int_equal(rt_image_alloc(&img, 8, 8), RT_OK);
    /* no tree without brute force */
    assert_int_equal(rt_render_cpu(&f.s, &f.tris, NULL, NULL, &cam, &p, &img, NULL, NULL, &err), RT_ERR_ARG);
    assert_non_null(strstr(err.msg, "RENDER"));
    /* brute force needs none */
    p.brute_force = 1;
    assert_int_equal(rt_render_cpu(&f.s, &f.tris, NULL, NULL, &cam, &p, &img, NULL, NULL, &err), RT_OK);
    /* a 0 x 0 image */
    RtImage empty = {0, 0, NULL};
    p.brute_force = 0;
    assert_int_equal(rt_render_cpu(&f.s, &f.tris, RT_ACCEL_OF_KD(&f.tree), NULL, &cam, &p, &empty, NULL, NULL, &err), RT_ERR_ARG);
    rt_image_free(&img);
    fixture_free(&f);
}

/* The heatmap is deterministic, uses the fixed ramp (background pixels
 * cheaper than those behind many nodes) and never touches the shading. */
static void render_heatmap_colours_by_steps(void **state)
{
    (void)state;
    Fixture f;
    cornell_fixture(&f);
    RtRenderParams p = rt_render_params_default();
    p.shade.heatmap = 1;
    RtImage a, b;
    render(&f, &f.s.camera, &p, W, H, &a, NULL, NULL);
    render(&f, &f.s.camera, &p, W, H, &b, NULL, NULL);
    assert_int_equal(count_differing_bytes(&a, &b), 0);
    /* not a single colour */
    int distinct = 0;
    for (int i = 1; i < W * H; i++) distinct += memcmp(&a.rgba[4 * i], &a.rgba[0], 3) != 0;
    assert_true(distinct > 0);
    rt_image_free(&a);
    rt_image_free(&b);
    fixture_free(&f);
}

/* The default lights of rt_scene_finish (the headlight and one inside the
 * bounds, tests/test_scene.c) light a file with no lights. */
static void render_default_headlight_lights_scene(void **state)
{
    (void)state;
    Fixture f;
    textured_fixture(&f);
    assert_int_equal(f.s.light_count, 2);
    RtRenderParams p = rt_render_params_default();
    RtImage img;
    render(&f, &f.s.camera, &p, 64, 48, &img, NULL, NULL);
    double sum = 0;
    for (int i = 0; i < 64 * 48; i++) sum += img.rgba[4 * i] + img.rgba[4 * i + 1] + img.rgba[4 * i + 2];
    double mean = sum / (3.0 * 64 * 48);
    print_message("headlight: mean sRGB byte %.1f\n", mean);
    assert_true(mean > 60.0);
    rt_image_free(&img);
    fixture_free(&f);
}


/* ---- shadows through glass, ambient occlusion ------------------------------ */

static void mask_alpha_hole(int x, int y, uint8_t px[4])
{
    (void)x, (void)y;
    px[0] = px[1] = px[2] = 200;
    px[3] = 0;
}
static void mask_alpha_solid(int x, int y, uint8_t px[4])
{
    (void)x, (void)y;
    px[0] = px[1] = px[2] = 200;
    px[3] = 255;
}

/* A white floor (y = 0, Kd 0.5) under a directional light straight down
 * (colour 1) with `panes` horizontal 2 x 2 panes of material pane at
 * y = 1, 1.25, ...; a 1 x 1 image from (3, 0.5, 0), below the panes, of
 * the floor at the origin under them. Returns the pixel's linear colour
 * (from its sRGB bytes) and the stats in *st. The floor's local colour is
 * ambient * 0.5 + 0.5 * transmittance (N.L = 1, no Ks). */
static RtVec3 floor_under_panes(const RtMaterial *pane, int panes, int32_t mask, const RtRenderParams *p,
                                RtRenderStats *st)
{
    Fixture f;
    memset(&f, 0, sizeof f);
    rt_scene_init(&f.s);
    int32_t white = add_material(&f.s, v3(0.5f, 0.5f, 0.5f), 0.0f);
    RtMaterial pm = *pane;
    if (mask >= 0) pm.map_d = add_texture(&f.s, 4, 4, mask == 0 ? mask_alpha_hole : mask_alpha_solid);
    int64_t pi = rt_scene_add_material(&f.s, &pm);
    assert_true(pi >= 0);
    uint32_t floor_tri = add_quad(&f.s, v3(-5, 0, 5), v3(5, 0, 5), v3(5, 0, -5), v3(-5, 0, -5), white);
    for (int k = 0; k < panes; k++) {
        float y = 1.0f + 0.25f * (float)k;
        add_quad(&f.s, v3(-1, y, 1), v3(1, y, 1), v3(1, y, -1), v3(-1, y, -1), (int32_t)pi);
    }
    RtLight l = {RT_LIGHT_DIRECTIONAL, v3(0, 1, 0), v3(1, 1, 1)};
    assert_true(rt_scene_add_light(&f.s, l) >= 0);
    fixture_build_seen(&f, camera(v3(3, 0.5f, 0), v3(0, 0, 0), 30.0f));
    RtImage img;
    uint32_t *ids;
    render(&f, &f.s.camera, p, 1, 1, &img, &ids, st);
    assert_true(ids[0] == floor_tri || ids[0] == floor_tri + 1);
    RtVec3 c = v3(rt_shade_srgb8_to_linear(img.rgba[0]), rt_shade_srgb8_to_linear(img.rgba[1]),
                  rt_shade_srgb8_to_linear(img.rgba[2]));
    rt_image_free(&img);
    free(ids);
    fixture_free(&f);
    return c;
}

/* The floor's expected colour at transmittance t (ambient 0.08), to the
 * pixel's 8-bit precision: each channel's sRGB byte equal within one. */
static void expect_floor(RtVec3 got, RtVec3 t, const char *what)
{
    float want[3] = {0.04f + 0.5f * t.x, 0.04f + 0.5f * t.y, 0.04f + 0.5f * t.z};
    float have[3] = {got.x, got.y, got.z};
    print_message("%s: floor %.4f %.4f %.4f, expected %.4f %.4f %.4f\n", what, have[0], have[1], have[2], want[0],
                  want[1], want[2]);
    for (int k = 0; k < 3; k++)
        assert_true(abs((int)rt_shade_linear_to_srgb8(have[k]) - (int)rt_shade_linear_to_srgb8(want[k])) <= 1);
}

/* shade.h's crossing rule, by hand: a pane of d = 0.25 and Kd (0.2, 0.4,
 * 0.8) passes (1 - d) * Kd / max(Kd) = 0.75 * (0.25, 0.5, 1); two such
 * panes the square; an opaque pane or a d = 0.25 one with refraction off
 * nothing; a map_d hole everything; a clear pane (d = 0) everything, eight
 * of them too, the ninth crossing (RT_SHADE_SHADOW_MAX_CROSSINGS) blocks.
 * Each cast along the shadow ray counts as one shadow ray. */
static void render_shadow_through_glass_panes(void **state)
{
    (void)state;
    RtRenderParams p = rt_render_params_default();
    RtRenderStats st;
    RtMaterial glass = rt_material_default();
    glass.kd = v3(0.2f, 0.4f, 0.8f);
    glass.d = 0.25f;
    RtVec3 t1 = v3(0.75f * 0.25f, 0.75f * 0.5f, 0.75f);
    expect_floor(floor_under_panes(&glass, 1, -1, &p, &st), t1, "one tinted pane");
    assert_int_equal(st.shadow_rays, 2);
    expect_floor(floor_under_panes(&glass, 2, -1, &p, &st), v3_mul(t1, t1), "two tinted panes");
    assert_int_equal(st.shadow_rays, 3);

    RtMaterial opaque = rt_material_default();
    expect_floor(floor_under_panes(&opaque, 1, -1, &p, &st), v3(0, 0, 0), "opaque pane");
    assert_int_equal(st.shadow_rays, 1);
    expect_floor(floor_under_panes(&opaque, 1, 0, &p, &st), v3(1, 1, 1), "opaque pane, map_d hole");
    expect_floor(floor_under_panes(&opaque, 1, 1, &p, &st), v3(0, 0, 0), "opaque pane, solid map_d");
    expect_floor(floor_under_panes(&glass, 1, 0, &p, &st), v3(1, 1, 1), "tinted pane, map_d hole");

    RtMaterial clear = rt_material_default();
    clear.d = 0.0f;
    expect_floor(floor_under_panes(&clear, RT_SHADE_SHADOW_MAX_CROSSINGS, -1, &p, &st), v3(1, 1, 1),
                 "clear panes up to the bound");
    assert_int_equal(st.shadow_rays, RT_SHADE_SHADOW_MAX_CROSSINGS + 1);
    expect_floor(floor_under_panes(&clear, RT_SHADE_SHADOW_MAX_CROSSINGS + 1, -1, &p, &st), v3(0, 0, 0),
                 "clear panes beyond the bound");

    p.shade.refraction = 0; /* d < 1 is opaque, as before transparent shadows */
    expect_floor(floor_under_panes(&glass, 1, -1, &p, &st), v3(0, 0, 0), "tinted pane, refraction off");
    assert_int_equal(st.shadow_rays, 1);
}

/* A scene with a d < 1 material that no triangle uses takes the crossing
 * loop (closest-hit casts); every hit is opaque, so its images are those of
 * the one any-hit cast per light, byte for byte, with the same ray counts
 * (the opaque fast path and the loop agree). */
static void render_crossing_loop_equals_any_hit_when_opaque(void **state)
{
    (void)state;
    Fixture a, b;
    cornell_fixture(&a);
    cornell_fixture(&b);
    RtMaterial unused = rt_material_default();
    unused.d = 0.5f;
    assert_true(rt_scene_add_material(&b.s, &unused) >= 0);
    RtRenderParams p = rt_render_params_default();
    RtImage ia, ib;
    RtRenderStats sa, sb;
    render(&a, &a.s.camera, &p, W, H, &ia, NULL, &sa);
    render(&b, &b.s.camera, &p, W, H, &ib, NULL, &sb);
    assert_int_equal(count_differing_bytes(&ia, &ib), 0);
    assert_int_equal(sa.shadow_rays, sb.shadow_rays);
    rt_image_free(&ia);
    rt_image_free(&ib);
    fixture_free(&a);
    fixture_free(&b);
}

/* A floor (y = 0) and, for `corner`, a wall (x = 0.02) beside the point
 * seen: the origin, from a 1 x 1 image, with ambient 1, albedo 1 and no
 * light reaching it, so the pixel is the AO estimate. Returns the mean
 * linear value over frame samples 0..samples-1 (RtShadeParams.sample) and
 * the smallest and largest in *lo, *hi. */
static double ao_at_origin(int corner, int ao_rays, uint32_t samples, double *lo, double *hi)
{
    Fixture f;
    memset(&f, 0, sizeof f);
    rt_scene_init(&f.s);
    int32_t white = add_material(&f.s, v3(1, 1, 1), 0.0f);
    add_quad(&f.s, v3(-5, 0, 5), v3(5, 0, 5), v3(5, 0, -5), v3(-5, 0, -5), white);
    if (corner) add_quad(&f.s, v3(0.02f, 0, 5), v3(0.02f, 0, -5), v3(0.02f, 10, -5), v3(0.02f, 10, 5), white);
    RtLight l = {RT_LIGHT_DIRECTIONAL, v3(0, -1, 0), v3(1, 1, 1)}; /* from below: lights nothing */
    assert_true(rt_scene_add_light(&f.s, l) >= 0);
    /* a narrow view: the samples' pixel jitter (sample > 0) moves the point seen by < 0.002 */
    fixture_build_seen(&f, camera(v3(-3, 3, 0), v3(0, 0, 0), 0.02f));
    RtRenderParams p = rt_render_params_default();
    p.shade.ambient = v3(1, 1, 1);
    p.shade.ao_rays = ao_rays;
    double sum = 0;
    *lo = INFINITY;
    *hi = -INFINITY;
    for (uint32_t s = 0; s < samples; s++) {
        p.shade.sample = s;
        RtImage img;
        RtRenderStats st;
        render(&f, &f.s.camera, &p, 1, 1, &img, NULL, &st);
        assert_int_equal(st.shadow_rays, (uint64_t)ao_rays); /* AO rays count as shadow rays; no light faces */
        double v = rt_shade_srgb8_to_linear(img.rgba[0]);
        sum += v;
        *lo = fmin(*lo, v);
        *hi = fmax(*hi, v);
        rt_image_free(&img);
    }
    fixture_free(&f);
    return sum / samples;
}

/* In the open every AO ray leaves: ambient unchanged, exactly as with AO
 * off. Beside a wall (0.02 away; the reach R, 5 % of the 17.3-unit
 * diagonal, is 43 times that) the cosine-weighted rays toward the wall are
 * blocked: half of them by symmetry, less the grazing ones that end short
 * of it (x = d.x, uniform on the unit disc for cosine-weighted directions,
 * below 0.02 / R: a share 2 / pi * 0.02 / R = 0.0147). Single frames show
 * 0, 1/2 or 1 (two rays), each frame sample draws anew, and the
 * accumulated mean tends to 0.5147 (512 samples, 1024 rays: within 0.05,
 * about 3 standard deviations). */
static void render_ao_open_and_corner(void **state)
{
    (void)state;
    double lo, hi;
    assert_true(ao_at_origin(0, RT_SHADE_AO_RAYS_ON, 8, &lo, &hi) == 1.0 && lo == 1.0);
    assert_true(ao_at_origin(0, 0, 1, &lo, &hi) == 1.0);
    double few = ao_at_origin(1, RT_SHADE_AO_RAYS_ON, 8, &lo, &hi);
    print_message("AO beside a wall: mean of 8 samples %.3f (%.3f..%.3f)\n", few, lo, hi);
    assert_true(lo < hi); /* a new draw per frame sample */
    double many = ao_at_origin(1, RT_SHADE_AO_RAYS_ON, 512, &lo, &hi);
    print_message("AO beside a wall: mean of 512 samples %.3f (%.3f..%.3f)\n", many, lo, hi);
    double reach = 0.05 * sqrt(300.0), open = 0.5 + 2.0 / M_PI * 0.02 / reach;
    assert_true(fabs(many - open) < 0.05);
    assert_true(lo == 0.0 && hi == 1.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(render_tree_equals_brute_cornell),
        cmocka_unit_test(render_tree_equals_brute_random),
        cmocka_unit_test(render_tree_equals_brute_bunny),
        cmocka_unit_test(render_cornell_matches_reference),
        cmocka_unit_test(render_textured_matches_reference),
        cmocka_unit_test(render_same_bytes_for_any_thread_count),
        cmocka_unit_test(render_shadows_darken_the_image),
        cmocka_unit_test(render_far_from_origin_has_no_shadow_acne),
        cmocka_unit_test(render_mirror_shows_reflected_object),
        cmocka_unit_test(render_glass_shows_object_behind),
        cmocka_unit_test(shade_refraction_follows_snell),
        cmocka_unit_test(isect_parallel_ray_never_hits_at_infinity),
        cmocka_unit_test(shade_srgb_known_values),
        cmocka_unit_test(shade_heatmap_ramp_stops),
        cmocka_unit_test(render_alpha_cutout_ray_passes_hole),
        cmocka_unit_test(render_luminance_cutout_without_alpha),
        cmocka_unit_test(render_textures_toggle_changes_image),
        cmocka_unit_test(render_grazing_checker_trilinear_is_smooth_and_close_to_supersampled),
        cmocka_unit_test(render_bilinear_reads_level_zero_alone),
        cmocka_unit_test(render_far_cutout_fence_keeps_its_coverage),
        cmocka_unit_test(render_woop_and_mt_nearly_equal),
        cmocka_unit_test(render_one_pixel_image),
        cmocka_unit_test(render_camera_looking_away_is_background),
        cmocka_unit_test(render_camera_looking_away_sees_the_sky),
        cmocka_unit_test(render_rejects_bad_arguments),
        cmocka_unit_test(render_heatmap_colours_by_steps),
        cmocka_unit_test(render_default_headlight_lights_scene),
        cmocka_unit_test(sample_dirs_are_unit_and_on_the_normals_side),
        cmocka_unit_test(sample_cosine_mean_is_two_thirds),
        cmocka_unit_test(sample_same_seed_same_rays_other_seed_others),
        cmocka_unit_test(render_shadow_through_glass_panes),
        cmocka_unit_test(render_crossing_loop_equals_any_hit_when_opaque),
        cmocka_unit_test(render_ao_open_and_corner),
    };
    return cmocka_run_group_tests_name("render", tests, NULL, NULL);
}
