/* test_scenefile.c — the .scene format and the built-in primitives: every
 * keyword, transforms, primitive topology, include, material override on a
 * mesh, each class of bad input (messages name file, line, expectation), and
 * the shipped scenes/cornell.scene. Run from the repository root. */
#define _XOPEN_SOURCE 700
#include "test_util.h"
#include "scene/load.h"

#include <ftw.h>

#include "scene/primitives.h"
#include "scene/runners.h"
#include "scene/scene.h"

/* ---- helpers ----------------------------------------------------------------- */

/* Each test gets a fresh temporary directory (its path is *state). */
static int dir_setup(void **state)
{
    char *dir = strdup("/tmp/rt_scenefile_XXXXXX");
    if (!dir || !mkdtemp(dir)) return -1;
    *state = dir;
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static int dir_teardown(void **state)
{
    nftw((char *)*state, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(*state);
    return 0;
}

/* Writes n bytes to dir/rel (creating its sub-directories); returns the path. */
static const char *put_bytes(void **state, const char *rel, const void *data, size_t n, char buf[1024])
{
    snprintf(buf, 1024, "%s/%s", (char *)*state, rel);
    for (char *p = buf + strlen((char *)*state) + 1; (p = strchr(p, '/')); p++) {
        *p = 0;
        mkdir(buf, 0700);
        *p = '/';
    }
    FILE *f = fopen(buf, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
    return buf;
}
static const char *put(void **state, const char *rel, const char *text, char buf[1024])
{
    return put_bytes(state, rel, text, strlen(text), buf);
}

/* Loads `text` as dir/t.scene through rt_scene_load. */
static RtStatus load_text(void **state, const char *text, RtScene *s, RtError *err, char path[1024])
{
    put(state, "t.scene", text, path);
    memset(err, 0, sizeof *err);
    return rt_scene_load(path, s, err);
}

/* The message names file:line, the SCENE tag and contains `what`. */
static void assert_message(const RtError *err, const char *path, int line, const char *what)
{
    char where[1100];
    snprintf(where, sizeof where, "%s:%d: SCENE: ", path, line);
    if (!strstr(err->msg, where) || !strstr(err->msg, what)) {
        print_error("message: %s\nwanted: '%s' and '%s'\n", err->msg, where, what);
        fail();
    }
}

/* Loads text that must fail with `status` at `line` saying `what`. */
static void assert_bad(void **state, const char *text, RtStatus status, int line, const char *what)
{
    RtScene s;
    RtError err;
    char path[1024];
    RtStatus st = load_text(state, text, &s, &err, path);
    if (st != status) print_error("text: %s\nstatus %d, message: %s\n", text, (int)st, err.msg);
    assert_int_equal(st, status);
    assert_message(&err, path, line, what);
    assert_int_equal(s.tri_count, 0); /* freed on error */
}

static RtVec3 tri_normal(const RtScene *s, uint32_t t, float *area)
{
    const RtTriangle *tr = &s->tris[t];
    RtVec3 a = s->verts[tr->v[0]].p, b = s->verts[tr->v[1]].p, c = s->verts[tr->v[2]].p;
    RtVec3 n = v3_cross(v3_sub(b, a), v3_sub(c, a));
    if (area) *area = 0.5f * v3_len(n);
    return v3_norm(n);
}

/* Sum of the signed tetrahedra (origin, triangle): the enclosed volume when
 * the surface is closed and wound outward. */
static double signed_volume(const RtScene *s, uint32_t first, uint32_t count)
{
    double v = 0;
    for (uint32_t t = first; t < first + count; t++) {
        const RtTriangle *tr = &s->tris[t];
        RtVec3 a = s->verts[tr->v[0]].p, b = s->verts[tr->v[1]].p, c = s->verts[tr->v[2]].p;
        v += v3_dot(a, v3_cross(b, c)) / 6.0;
    }
    return v;
}

static double total_area(const RtScene *s, uint32_t first, uint32_t count)
{
    double sum = 0;
    for (uint32_t t = first; t < first + count; t++) {
        float a;
        tri_normal(s, t, &a);
        sum += a;
    }
    return sum;
}

typedef struct {
    RtVec3 p;
    uint32_t i;
} PosIdx;
static int cmp_pos(const void *x, const void *y)
{
    const RtVec3 *a = &((const PosIdx *)x)->p, *b = &((const PosIdx *)y)->p;
    if (a->x != b->x) return a->x < b->x ? -1 : 1;
    if (a->y != b->y) return a->y < b->y ? -1 : 1;
    if (a->z != b->z) return a->z < b->z ? -1 : 1;
    return 0;
}
static int cmp_edge(const void *x, const void *y)
{
    const uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Closed and consistently wound: with vertices welded by exact position,
 * every directed edge (a,b) appears once and its twin (b,a) once. */
static int is_closed(const RtScene *s, uint32_t first, uint32_t count)
{
    PosIdx *pi = malloc(s->vert_count * sizeof *pi);
    uint32_t *weld = malloc(s->vert_count * sizeof *weld);
    uint64_t *e = malloc((size_t)count * 3 * sizeof *e);
    assert_true(pi && weld && e);
    for (uint32_t i = 0; i < s->vert_count; i++) pi[i] = (PosIdx){s->verts[i].p, i};
    qsort(pi, s->vert_count, sizeof *pi, cmp_pos);
    uint32_t id = 0;
    for (uint32_t i = 0; i < s->vert_count; i++) {
        if (i && cmp_pos(&pi[i - 1], &pi[i])) id++;
        weld[pi[i].i] = id;
    }
    for (uint32_t t = 0; t < count; t++)
        for (int k = 0; k < 3; k++) {
            uint64_t a = weld[s->tris[first + t].v[k]], b = weld[s->tris[first + t].v[(k + 1) % 3]];
            e[3 * t + k] = a << 32 | b;
        }
    qsort(e, (size_t)count * 3, sizeof *e, cmp_edge);
    int ok = 1;
    for (size_t i = 0; i < (size_t)count * 3 && ok; i++) {
        uint64_t twin = (e[i] & 0xffffffffu) << 32 | e[i] >> 32;
        if (i && e[i] == e[i - 1]) ok = 0;                                      /* same direction twice */
        if (!bsearch(&twin, e, (size_t)count * 3, sizeof *e, cmp_edge)) ok = 0; /* open edge */
    }
    free(pi);
    free(weld);
    free(e);
    return ok;
}

/* Every vertex normal of an object is unit length, and every face's
 * geometric normal agrees with its vertices' shading normals. */
static void assert_normals_consistent(const RtScene *s, uint32_t first, uint32_t count)
{
    for (uint32_t t = first; t < first + count; t++) {
        float area;
        RtVec3 g = tri_normal(s, t, &area);
        for (int k = 0; k < 3; k++) {
            RtVec3 n = s->verts[s->tris[t].v[k]].n;
            assert_float_equal(v3_len(n), 1.0f, 1e-5f);
            if (!(v3_dot(n, g) > 0.0f))
                print_error("tri %u k %d n %g %g %g g %g %g %g area %g\n", t, k, n.x, n.y, n.z, g.x, g.y, g.z,
                            area);
            assert_true(v3_dot(n, g) > 0.0f);
        }
    }
}

static void assert_vec3(RtVec3 a, RtVec3 b, float eps)
{
    assert_float_equal(a.x, b.x, eps);
    assert_float_equal(a.y, b.y, eps);
    assert_float_equal(a.z, b.z, eps);
}

/* ---- matrices ------------------------------------------------------------- */

static void mat34_transforms_apply_in_call_order(void **state)
{
    (void)state;
    float m[12];
    rt_mat34_identity(m);
    assert_vec3(rt_mat34_point(m, v3(1, 2, 3)), v3(1, 2, 3), 0);
    rt_mat34_scale(m, v3(2, 3, 4));
    rt_mat34_rotate(m, v3(0, 1, 0), 90.0f); /* right-handed: +x -> -z */
    rt_mat34_translate(m, v3(10, 20, 30));
    /* (1,1,1) -> scale (2,3,4) -> rotate (4,3,-2) -> translate. */
    assert_vec3(rt_mat34_point(m, v3(1, 1, 1)), v3(14, 23, 28), 1e-5f);
    assert_float_equal(rt_mat34_det(m), 24.0f, 1e-4f);

    float a[12], b[12], ab[12];
    rt_mat34_identity(a);
    rt_mat34_rotate(a, v3(1, 1, 0), 33.0f);
    rt_mat34_translate(a, v3(1, -2, 3));
    rt_mat34_identity(b);
    rt_mat34_scale(b, v3(-1, 2, 0.5f));
    rt_mat34_mul(ab, a, b);
    RtVec3 p = v3(0.3f, -0.7f, 2.0f);
    assert_vec3(rt_mat34_point(ab, p), rt_mat34_point(a, rt_mat34_point(b, p)), 1e-5f);
    rt_mat34_mul(a, a, b); /* aliasing */
    assert_memory_equal(a, ab, sizeof ab);

    /* A zero axis leaves the matrix as it was. */
    rt_mat34_identity(m);
    rt_mat34_rotate(m, v3(0, 0, 0), 45.0f);
    rt_mat34_identity(a);
    assert_memory_equal(m, a, sizeof a);
}

static void mat34_normals_stay_outward_under_mirrors(void **state)
{
    (void)state;
    float m[12];
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(-1, 1, 1));
    assert_vec3(rt_mat34_normal(m, v3(1, 0, 0)), v3(-1, 0, 0), 0);
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(1, 4, 1)); /* non-uniform: normals use the inverse transpose */
    RtVec3 n = rt_mat34_normal(m, v3_norm(v3(1, 1, 0)));
    assert_vec3(n, v3_norm(v3(4, 1, 0)), 1e-6f);
    assert_vec3(rt_mat34_normal(m, v3(0, 0, 0)), v3(0, 0, 0), 0);
    /* A rotation turns normals exactly as it turns directions. */
    rt_mat34_identity(m);
    rt_mat34_rotate(m, v3(1, 0, 0), 90.0f);
    assert_vec3(rt_mat34_normal(m, v3(0, 1, 0)), v3(0, 0, 1), 1e-7f);
    RtTestRng rng = {3};
    for (int i = 0; i < 100; i++) {
        rt_mat34_identity(m);
        RtVec3 axis = v3(rt_test_randf(&rng) - 0.5f, rt_test_randf(&rng) - 0.5f, rt_test_randf(&rng) - 0.5f);
        rt_mat34_scale(m, v3(1 + rt_test_randf(&rng), 1 + rt_test_randf(&rng), i % 2 ? -1.0f : 1.0f));
        rt_mat34_rotate(m, axis, 360.0f * rt_test_randf(&rng));
        rt_mat34_translate(m, v3(5, 6, 7));
        /* The transformed normal stays perpendicular to transformed tangents
         * and on the side the transformed point moved to. */
        RtVec3 nn =
            v3_norm(v3(rt_test_randf(&rng) - 0.5f, rt_test_randf(&rng) - 0.5f, rt_test_randf(&rng) - 0.5f));
        RtVec3 tan = v3_norm(v3_cross(nn, v3(0.3f, 0.5f, 0.7f)));
        RtVec3 tn = rt_mat34_normal(m, nn);
        RtVec3 o = rt_mat34_point(m, v3(0, 0, 0));
        RtVec3 tt = v3_sub(rt_mat34_point(m, tan), o), tp = v3_sub(rt_mat34_point(m, nn), o);
        assert_float_equal(v3_len(tn), 1.0f, 1e-5f);
        assert_float_equal(v3_dot(tn, tt), 0.0f, 1e-4f);
        assert_true(v3_dot(tn, tp) > 0.0f);
    }
}

/* ---- primitives --------------------------------------------------------------- */

static void prim_quad_is_two_triangles_of_area_four_facing_up(void **state)
{
    (void)state;
    RtScene s;
    rt_scene_init(&s);
    RtError err = {0};
    assert_int_equal(rt_prim_quad(&s, NULL, -1, NULL, &err), RT_OK);
    assert_int_equal(s.tri_count, 2);
    assert_int_equal(s.vert_count, 4);
    assert_int_equal(s.object_count, 1);
    assert_string_equal(s.objects[0].name, "quad");
    assert_int_equal(s.objects[0].tri_count, 2);
    assert_float_equal(total_area(&s, 0, 2), 4.0, 1e-6);
    for (uint32_t t = 0; t < 2; t++) assert_vec3(tri_normal(&s, t, NULL), v3(0, 1, 0), 0);
    assert_normals_consistent(&s, 0, 2);
    for (uint32_t i = 0; i < 4; i++) {
        RtVertex v = s.verts[i];
        assert_float_equal(v.p.y, 0, 0);
        assert_float_equal(v.u, 0.5f * (v.p.x + 1), 0);
        assert_float_equal(v.v, 0.5f * (1 - v.p.z), 0);
    }
    rt_scene_free(&s);
}

static void prim_box_is_closed_with_twelve_outward_triangles(void **state)
{
    (void)state;
    RtScene s;
    rt_scene_init(&s);
    RtError err = {0};
    assert_int_equal(rt_prim_box(&s, NULL, -1, "b", &err), RT_OK);
    assert_int_equal(s.tri_count, 12);
    assert_int_equal(s.vert_count, 24);
    assert_string_equal(s.objects[0].name, "b");
    assert_true(is_closed(&s, 0, 12));
    assert_float_equal(total_area(&s, 0, 12), 24.0, 1e-5);
    assert_float_equal(signed_volume(&s, 0, 12), 8.0, 1e-5);
    assert_normals_consistent(&s, 0, 12);
    for (uint32_t t = 0; t < 12; t++) {
        /* Flat: all three vertices share the face normal, pointing away from the centre. */
        RtVec3 n = s.verts[s.tris[t].v[0]].n;
        assert_float_equal(v3_dot(n, s.verts[s.tris[t].v[0]].p), 1.0f, 0);
        assert_true(fabsf(n.x) + fabsf(n.y) + fabsf(n.z) == 1.0f);
    }
    for (uint32_t i = 0; i < 24; i++) {
        assert_true(s.verts[i].u == 0.0f || s.verts[i].u == 1.0f);
        assert_true(s.verts[i].v == 0.0f || s.verts[i].v == 1.0f);
    }
    rt_scene_free(&s);
}

static void check_sphere(int segments)
{
    RtScene s;
    rt_scene_init(&s);
    RtError err = {0};
    assert_int_equal(rt_prim_sphere(&s, NULL, -1, segments, NULL, &err), RT_OK);
    int bands = segments / 2 < 2 ? 2 : segments / 2;
    uint32_t tris = 2u * (uint32_t)segments * (uint32_t)(bands - 1);
    assert_int_equal(s.tri_count, tris);
    assert_int_equal(rt_prim_sphere_tri_count(segments), tris);
    assert_int_equal(s.vert_count, (uint32_t)(segments + 1) * (uint32_t)(bands + 1));
    assert_string_equal(s.objects[0].name, "sphere");
    assert_true(is_closed(&s, 0, s.tri_count));
    for (uint32_t i = 0; i < s.vert_count; i++) {
        assert_float_equal(v3_len(s.verts[i].p), 1.0f, 1e-6f);
        assert_vec3(s.verts[i].n, s.verts[i].p, 0);
    }
    for (uint32_t t = 0; t < s.tri_count; t++) {
        float area;
        RtVec3 g = tri_normal(&s, t, &area);
        assert_true(area > 0.0f);
        const RtTriangle *tr = &s.tris[t];
        RtVec3 centre = v3_scale(
            v3_add(v3_add(s.verts[tr->v[0]].p, s.verts[tr->v[1]].p), s.verts[tr->v[2]].p), 1.0f / 3.0f);
        assert_true(v3_dot(g, centre) > 0.0f); /* outward */
    }
    double vol = signed_volume(&s, 0, s.tri_count);
    assert_true(vol > 0.0 && vol < 4.0 / 3.0 * M_PI + 1e-6);
    if (segments >= 64) assert_float_equal(vol, 4.0 / 3.0 * M_PI, 0.02);
    rt_scene_free(&s);
}

static void prim_sphere_counts_closedness_and_normals(void **state)
{
    (void)state;
    static const int sizes[] = {3, 4, 5, 6, 7, 8, 64, 255};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) check_sphere(sizes[i]);
    RtTestRng rng = {0x5eed};
    for (int i = 0; i < 8; i++) check_sphere(3 + (int)(rt_test_rand(&rng) % 300));
}

static void prim_rejects_bad_arguments_and_leaves_scene_unchanged(void **state)
{
    (void)state;
    RtScene s;
    rt_scene_init(&s);
    RtError err = {0};
    assert_int_equal(rt_prim_sphere(&s, NULL, -1, 0, NULL, &err), RT_ERR_ARG);
    assert_int_equal(rt_prim_sphere(&s, NULL, -1, 2, NULL, &err), RT_ERR_ARG);
    assert_int_equal(rt_prim_sphere(&s, NULL, -1, RT_PRIM_SPHERE_MAX_SEGMENTS + 1, NULL, &err), RT_ERR_ARG);
    assert_non_null(strstr(err.msg, "segments"));
    assert_int_equal(rt_prim_box(&s, NULL, 0, NULL, &err), RT_ERR_ARG); /* no materials yet */
    assert_int_equal(rt_prim_quad(&s, NULL, -2, NULL, &err), RT_ERR_ARG);
    assert_int_equal(s.tri_count + s.vert_count + s.object_count, 0);
    assert_int_equal(rt_prim_sphere_tri_count(2), 0);
    rt_scene_free(&s);
}

static void prim_box_transformed_lands_where_expected(void **state)
{
    (void)state;
    RtTestRng rng = {77};
    for (int iter = 0; iter < 50; iter++) {
        RtVec3 sc = v3(0.2f + 3 * rt_test_randf(&rng), 0.2f + 3 * rt_test_randf(&rng),
                       0.2f + 3 * rt_test_randf(&rng));
        if (iter % 2) sc.x = -sc.x; /* a mirror */
        RtVec3 axis = v3(rt_test_randf(&rng) - 0.5f, rt_test_randf(&rng) - 0.5f, rt_test_randf(&rng) - 0.5f);
        float deg = 360.0f * rt_test_randf(&rng);
        RtVec3 tr = v3(10 * rt_test_randf(&rng), -5 * rt_test_randf(&rng), 3.0f);
        float m[12];
        rt_mat34_identity(m);
        rt_mat34_scale(m, sc);
        rt_mat34_rotate(m, axis, deg);
        rt_mat34_translate(m, tr);
        RtScene s;
        rt_scene_init(&s);
        RtError err = {0};
        assert_int_equal(rt_prim_box(&s, m, -1, NULL, &err), RT_OK);
        assert_true(is_closed(&s, 0, 12));
        double vol = fabs((double)sc.x * sc.y * sc.z) * 8.0;
        assert_float_equal(signed_volume(&s, 0, 12), vol, 1e-3 * vol + 1e-4); /* outward even when mirrored */
        assert_normals_consistent(&s, 0, 12);
        /* The centre is at the translation, the corners where the chain puts them. */
        RtAabb b = rt_scene_bounds(&s);
        assert_vec3(v3_scale(v3_add(b.lo, b.hi), 0.5f), tr, 1e-4f);
        rt_scene_free(&s);
    }
    /* An axis-aligned case with exact numbers. */
    float m[12];
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(1, 2, 3));
    rt_mat34_rotate(m, v3(0, 0, 1), 90.0f); /* x -> y, y -> -x */
    rt_mat34_translate(m, v3(5, 0, 0));
    RtScene s;
    rt_scene_init(&s);
    assert_int_equal(rt_prim_box(&s, m, -1, NULL, NULL), RT_OK);
    RtAabb b = rt_scene_bounds(&s);
    assert_vec3(b.lo, v3(3, -1, -3), 1e-5f);
    assert_vec3(b.hi, v3(7, 1, 3), 1e-5f);
    rt_scene_free(&s);
}

static void scene_transform_mirrors_keep_winding_outward(void **state)
{
    (void)state;
    RtScene s;
    rt_scene_init(&s);
    assert_int_equal(rt_prim_sphere(&s, NULL, -1, 16, NULL, NULL), RT_OK);
    RtLight pl = {RT_LIGHT_POINT, v3(1, 2, 3), v3(1, 1, 1)},
            dl = {RT_LIGHT_DIRECTIONAL, v3(1, 0, 0), v3(1, 1, 1)};
    rt_scene_add_light(&s, pl);
    rt_scene_add_light(&s, dl);
    double v0 = signed_volume(&s, 0, s.tri_count);
    float m[12];
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(-2, 1, 1));
    rt_mat34_translate(m, v3(0, 5, 0));
    rt_scene_transform(&s, m);
    assert_float_equal(signed_volume(&s, 0, s.tri_count), 2 * v0, 1e-4);
    assert_normals_consistent(&s, 0, s.tri_count);
    assert_vec3(s.lights[0].v, v3(-2, 7, 3), 0);
    assert_vec3(s.lights[1].v, v3(-1, 0, 0), 0);
    rt_scene_free(&s);
}

/* ---- the .scene format --------------------------------------------------------------- */

/* A 2x2 binary PPM: the smallest image stb_image reads without a PNG encoder. */
static const char *put_ppm(void **state, const char *rel, char buf[1024])
{
    static const unsigned char ppm[] = "P6\n2 2\n255\n"
                                       "\xff\x00\x00\x00\xff\x00\x00\x00\xff\xff\xff\xff";
    return put_bytes(state, rel, ppm, sizeof ppm - 1, buf);
}

static void scenefile_every_keyword_parsed(void **state)
{
    char tex[1024], path[1024];
    put_ppm(state, "tex.ppm", tex);
    const char *text = "# a comment line\n"
                       "   \t\n"
                       "camera pos 1 2 3 look 1 2 -3 up 0 2 0 fov 45.5   # trailing comment\n"
                       "light point pos 0 10 0 color 1 0.5 0.25\n"
                       "light directional dir 0 3 4 color 0.1 0.2 0.3\n"
                       "light point color 2 2 2 pos -1 -2 -3\n"
                       "material plain\n"
                       "material shiny kd 0.1 0.2 0.3 ks 0.4 0.5 0.6 ns 80 reflect 0.75 ke 0 0 0.5\n"
                       "material glass kd 1 1 1 ni 1.5 d 0.25\n"
                       "material \"tex tured\" map_kd tex.ppm map_d \"tex.ppm\" illum 4\n"
                       "box name b1 material shiny\n"
                       "sphere name ball material glass segments 12 scale 0.5\n"
                       "quad material \"tex tured\"\n"
                       "box\n";
    RtScene s;
    RtError err;
    RtStatus st = load_text(state, text, &s, &err, path);
    if (st != RT_OK) print_error("%s\n", err.msg);
    assert_int_equal(st, RT_OK);

    assert_int_equal(s.has_camera, 1);
    assert_vec3(s.camera.pos, v3(1, 2, 3), 0);
    assert_vec3(s.camera.look, v3(1, 2, -3), 0);
    assert_vec3(s.camera.up, v3(0, 1, 0), 0); /* normalised */
    assert_float_equal(s.camera.fov_y, 45.5f, 0);

    assert_int_equal(s.light_count, 3);
    assert_int_equal(s.lights[0].type, RT_LIGHT_POINT);
    assert_vec3(s.lights[0].v, v3(0, 10, 0), 0);
    assert_vec3(s.lights[0].color, v3(1, 0.5f, 0.25f), 0);
    assert_int_equal(s.lights[1].type, RT_LIGHT_DIRECTIONAL);
    assert_vec3(s.lights[1].v, v3(0, 0.6f, 0.8f), 1e-6f); /* normalised */
    assert_vec3(s.lights[1].color, v3(0.1f, 0.2f, 0.3f), 0);
    assert_vec3(s.lights[2].v, v3(-1, -2, -3), 0);
    assert_vec3(s.lights[2].color, v3(2, 2, 2), 0);

    assert_int_equal(s.mat_count, 4);
    RtMaterial def = rt_material_default();
    assert_string_equal(s.mats[0].name, "plain");
    assert_vec3(s.mats[0].kd, def.kd, 0);
    assert_int_equal(s.mats[0].illum, 2);
    assert_int_equal(s.mats[0].map_kd, -1);
    const RtMaterial *sh = &s.mats[1];
    assert_string_equal(sh->name, "shiny");
    assert_vec3(sh->kd, v3(0.1f, 0.2f, 0.3f), 0);
    assert_vec3(sh->ks, v3(0.4f, 0.5f, 0.6f), 0);
    assert_vec3(sh->ke, v3(0, 0, 0.5f), 0);
    assert_float_equal(sh->ns, 80, 0);
    assert_float_equal(sh->reflect, 0.75f, 0);
    assert_int_equal(sh->illum, 3);
    const RtMaterial *gl = &s.mats[2];
    assert_float_equal(gl->ni, 1.5f, 0);
    assert_float_equal(gl->d, 0.25f, 0);
    assert_int_equal(gl->illum, 7);
    const RtMaterial *tx = &s.mats[3];
    assert_string_equal(tx->name, "tex tured");
    assert_int_equal(tx->illum, 4);
    assert_int_equal(s.tex_count, 1); /* the same file is shared */
    assert_int_equal(tx->map_kd, 0);
    assert_int_equal(tx->map_d, 0);
    assert_int_equal(s.texs[0].w, 2);
    assert_int_equal(s.texs[0].h, 2);

    /* box 12 + sphere(12) 2*12*5 = 120 + quad 2 + box 12 */
    assert_int_equal(s.object_count, 4);
    assert_int_equal(s.tri_count, 12 + 120 + 2 + 12);
    assert_string_equal(s.objects[0].name, "b1");
    assert_string_equal(s.objects[1].name, "ball");
    assert_string_equal(s.objects[2].name, "quad");
    assert_string_equal(s.objects[3].name, "box");
    assert_int_equal(s.tris[0].material, 1);
    assert_int_equal(s.tris[12].material, 2);
    assert_int_equal(s.tris[12 + 120].material, 3);
    assert_int_equal(s.tris[12 + 120 + 2].material, -1);
    for (uint32_t i = 0; i < s.tri_count; i++) {
        const RtObject *o = &s.objects[s.tris[i].object];
        assert_true(i >= o->first_tri && i < o->first_tri + o->tri_count);
    }
    RtAabb b = rt_scene_bounds(&s);
    assert_vec3(b.lo, v3(-1, -1, -1), 0);
    assert_vec3(b.hi, v3(1, 1, 1), 0);
    rt_scene_free(&s);
}

/* Bounds of the single object a one-line scene makes. */
static RtAabb load_bounds(void **state, const char *text)
{
    RtScene s;
    RtError err;
    char path[1024];
    RtStatus st = load_text(state, text, &s, &err, path);
    if (st != RT_OK) print_error("%s\n", err.msg);
    assert_int_equal(st, RT_OK);
    RtAabb b = rt_scene_bounds(&s);
    assert_normals_consistent(&s, 0, s.tri_count);
    rt_scene_free(&s);
    return b;
}

static void scenefile_transforms_apply_in_written_order(void **state)
{
    RtAabb b = load_bounds(state, "box translate 1 2 3\n");
    assert_vec3(b.lo, v3(0, 1, 2), 1e-6f);
    assert_vec3(b.hi, v3(2, 3, 4), 1e-6f);
    b = load_bounds(state, "box scale 2 translate 1 0 0\n"); /* scaled, then moved */
    assert_vec3(b.lo, v3(-1, -2, -2), 1e-6f);
    assert_vec3(b.hi, v3(3, 2, 2), 1e-6f);
    b = load_bounds(state, "box translate 1 0 0 scale 2\n"); /* moved, then scaled about the origin */
    assert_vec3(b.lo, v3(0, -2, -2), 1e-6f);
    assert_vec3(b.hi, v3(4, 2, 2), 1e-6f);
    b = load_bounds(state, "box scale 1 2 3 rotate 0 0 1 90 translate 5 0 0\n");
    assert_vec3(b.lo, v3(3, -1, -3), 1e-5f);
    assert_vec3(b.hi, v3(7, 1, 3), 1e-5f);
    b = load_bounds(state, "quad rotate 1 0 0 90\n"); /* the normal +y turns to +z */
    assert_vec3(b.lo, v3(-1, -1, 0), 1e-6f);
    assert_vec3(b.hi, v3(1, 1, 0), 1e-6f);
    /* mirrored: normals still outward */
    b = load_bounds(state, "sphere segments 64 scale 2 -2 2 translate 0 0 -1\n");
    assert_vec3(b.lo, v3(-2, -2, -3), 1e-5f);
    assert_vec3(b.hi, v3(2, 2, 1), 1e-5f);

    char path[1024];
    RtScene s;
    RtError err;
    assert_int_equal(load_text(state, "quad scale 3 1 2 rotate 0 0 1 180\n", &s, &err, path), RT_OK);
    assert_float_equal(total_area(&s, 0, 2), 24.0, 1e-4);
    for (uint32_t i = 0; i < 4; i++) assert_vec3(s.verts[i].n, v3(0, -1, 0), 1e-6f);
    rt_scene_free(&s);
}

static void scenefile_include_resolves_relative_paths(void **state)
{
    char tex[1024], path[1024], buf[1024];
    put_ppm(state, "sub/deeper/t.ppm", tex);
    put(state, "sub/deeper/leaf.scene",
        "material leafmat kd 0 1 0 map_kd t.ppm\nbox material leafmat translate 0 10 0\n", buf);
    put(state, "sub/mid.scene", "include \"deeper/leaf.scene\"\nsphere name s material top segments 8\n",
        buf);
    put(state, "sub/again.scene", "quad name q material leafmat\n", buf);
    RtScene s;
    RtError err;
    RtStatus st = load_text(state,
                            "material top kd 1 0 0\n"
                            "include sub/mid.scene\n"
                            "include sub/again.scene\n"
                            "include sub/again.scene  # twice is fine: not a cycle\n",
                            &s, &err, path);
    if (st != RT_OK) print_error("%s\n", err.msg);
    assert_int_equal(st, RT_OK);
    assert_int_equal(s.object_count, 4);
    assert_string_equal(s.objects[0].name, "box");
    assert_string_equal(s.objects[1].name, "s");
    assert_string_equal(s.objects[3].name, "q");
    assert_int_equal(s.tris[0].material, 1);
    assert_int_equal(s.tris[s.objects[1].first_tri].material, 0); /* includes share material names */
    assert_int_equal(s.tris[s.objects[3].first_tri].material, 1);
    assert_int_equal(s.tex_count, 1);
    rt_scene_free(&s);

    /* Absolute paths stay absolute. */
    char inc[1100];
    snprintf(inc, sizeof inc, "include \"%s/sub/again.scene\"\nmaterial leafmat\n", (char *)*state);
    st = load_text(state, inc, &s, &err, path);
    assert_int_equal(st, RT_ERR_PARSE); /* again.scene uses leafmat before this file defines it */
    assert_non_null(
        strstr(err.msg, "again.scene:1: SCENE: expected a defined material name after 'material'"));
    assert_non_null(strstr(err.msg, "(included from"));
}

static void scenefile_include_cycle_and_depth_are_errors(void **state)
{
    char a[1024], b[1024], path[1024];
    put(state, "a.scene", "box\ninclude b.scene\n", a);
    put(state, "b.scene", "\n\ninclude a.scene\n", b);
    RtScene s;
    RtError err;
    assert_int_equal(load_text(state, "include a.scene\n", &s, &err, path), RT_ERR_PARSE);
    assert_message(&err, b, 3, "include cycle");
    assert_non_null(strstr(err.msg, "included from"));
    assert_bad(state, "box\ninclude t.scene\n", RT_ERR_PARSE, 2, "include cycle"); /* itself */

    /* A chain d0 -> d1 -> ... : 16 levels below the top file load, 17 do not. */
    for (int i = 0; i < 18; i++) {
        char rel[32], text[64];
        snprintf(rel, sizeof rel, "d%d.scene", i);
        snprintf(text, sizeof text, i < 17 ? "include d%d.scene\n" : "box\n", i + 1);
        put(state, rel, text, a);
    }
    put(state, "d16.scene", "box\n", a);
    assert_int_equal(load_text(state, "include d1.scene\n", &s, &err, path), RT_OK); /* d1..d16: 16 levels */
    rt_scene_free(&s);
    put(state, "d16.scene", "include d17.scene\n", a);
    assert_int_equal(load_text(state, "include d1.scene\n", &s, &err, path), RT_ERR_PARSE);
    assert_non_null(strstr(err.msg, "d16.scene:1: SCENE: includes nested deeper than 16"));
}

static void scenefile_material_override_on_mesh(void **state)
{
    char obj[1024], path[1024];
    put(state, "m/tri.obj",
        "o first\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\no second\nv 0 0 1\nv 1 0 1\nv 0 1 1\nf 4 5 6\n", obj);
    RtScene s;
    RtError err;
    RtStatus st = load_text(state,
                            "material red kd 1 0 0\n"
                            "mesh m/tri.obj\n"
                            "mesh \"m/tri.obj\" name copy material red scale -1 1 1 translate 0 0 5\n",
                            &s, &err, path);
    if (st != RT_OK) print_error("%s\n", err.msg);
    assert_int_equal(st, RT_OK);
    assert_int_equal(s.tri_count, 4);
    assert_true(s.object_count >= 2);
    for (uint32_t i = 0; i < 2; i++) assert_int_not_equal(s.tris[i].material, 0);
    for (uint32_t i = 2; i < 4; i++) assert_int_equal(s.tris[i].material, 0);
    /* Named mesh objects carry the name as a prefix. */
    const RtObject *o = &s.objects[s.tris[3].object];
    assert_string_equal(o->name, "copy/second");
    /* Mirrored and moved: x flips, z moves by 5, and faces still face +z. */
    for (int k = 0; k < 3; k++) {
        RtVec3 p = s.verts[s.tris[3].v[k]].p;
        assert_true(p.x <= 0.0f);
        assert_float_equal(p.z, 6.0f, 0);
    }
    assert_true(tri_normal(&s, 3, NULL).z > 0.99f);
    rt_scene_free(&s);
}

/* A file placed many times is read once and copied: the scene equals the
 * one made from distinct copies of the file (same vertices, triangles,
 * materials, textures shared by path), for 0, 1 and many placements. */
static void scenefile_mesh_placed_many_times_equals_distinct_files(void **state)
{
    char a[1024], path[1024];
    static const char kObj[] = "mtllib m.mtl\nusemtl red\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 1 2 3 4\n";
    put(state, "cache/a.obj", kObj, a);
    put(state, "cache/m.mtl", "newmtl red\nKd 1 0 0\n", a);
    static const int kCounts[] = {0, 1, 7};
    for (int k = 0; k < 3; k++) {
        char same[2048] = "box\n", distinct[2048] = "box\n";
        for (int i = 0; i < kCounts[k]; i++) {
            char name[64];
            snprintf(name, sizeof name, "cache/c%d.obj", i);
            put(state, name, kObj, a);
            size_t n = strlen(same), m = strlen(distinct);
            snprintf(same + n, sizeof same - n, "mesh cache/a.obj translate %d 0 0\n", 2 * i);
            snprintf(distinct + m, sizeof distinct - m, "mesh %s translate %d 0 0\n", name, 2 * i);
        }
        RtScene s1, s2;
        RtError err;
        assert_int_equal(load_text(state, same, &s1, &err, path), RT_OK);
        assert_int_equal(load_text(state, distinct, &s2, &err, path), RT_OK);
        assert_int_equal(s1.tri_count, 12 + 2 * kCounts[k]);
        assert_int_equal(s1.tri_count, s2.tri_count);
        assert_int_equal(s1.vert_count, s2.vert_count);
        assert_int_equal(s1.mat_count, s2.mat_count);
        assert_int_equal(s1.tex_count, s2.tex_count);
        for (uint32_t i = 0; i < s1.vert_count; i++) assert_memory_equal(&s1.verts[i], &s2.verts[i], sizeof s1.verts[i]);
        for (uint32_t i = 0; i < s1.tri_count; i++) {
            assert_memory_equal(s1.tris[i].v, s2.tris[i].v, sizeof s1.tris[i].v);
            assert_int_equal(s1.tris[i].material, s2.tris[i].material);
        }
        rt_scene_free(&s1);
        rt_scene_free(&s2);
    }
}

static void scenefile_bad_lines_name_file_line_and_expectation(void **state)
{
    /* truncated lines */
    assert_bad(state, "box\ncamera pos 1 2\n", RT_ERR_PARSE, 2,
               "expected 3 finite numbers X Y Z after 'pos', found the end");
    assert_bad(state, "box\ncamera pos 0 0 5\n", RT_ERR_PARSE, 2,
               "expected 'pos X Y Z' and 'look X Y Z' after 'camera'");
    assert_bad(state, "box\nlight\n", RT_ERR_PARSE, 2, "expected 'point', 'directional', 'quad' or 'sphere' after 'light'");
    assert_bad(state, "box\nlight quad pos 0 1 0\n", RT_ERR_PARSE, 2, "expected 'size W H' after 'quad'");
    assert_bad(state, "box\nlight quad pos 0 1 0 size 1 0\n", RT_ERR_PARSE, 2, "2 finite numbers W H > 0");
    assert_bad(state, "box\nlight quad pos 0 1 0 size 1 1 normal 0 0 0\n", RT_ERR_PARSE, 2, "non-zero normal");
    assert_bad(state, "box\nlight quad pos 0 1 0 size 1 1 radius 2\n", RT_ERR_PARSE, 2,
               "expected one of pos, size, normal, color after 'quad'");
    assert_bad(state, "box\nlight sphere pos 0 1 0\n", RT_ERR_PARSE, 2, "expected 'radius R' after 'sphere'");
    assert_bad(state, "box\nlight sphere pos 0 1 0 radius -1\n", RT_ERR_PARSE, 2, "a radius R > 0");
    assert_bad(state, "box\nlight point color 1 1 1\n", RT_ERR_PARSE, 2,
               "expected 'pos X Y Z' after 'point'");
    assert_bad(state, "box\nlight directional dir 0 0 0\n", RT_ERR_PARSE, 2, "non-zero direction");
    assert_bad(state, "material\n", RT_ERR_PARSE, 1, "expected a name of 1 to 63 bytes after 'material'");
    assert_bad(state, "material m kd 1 1\n", RT_ERR_PARSE, 1,
               "expected 3 finite numbers R G B >= 0 after 'kd'");
    assert_bad(state, "box translate 1 2\n", RT_ERR_PARSE, 1, "after 'translate'");
    assert_bad(state, "box rotate 0 1 0\n", RT_ERR_PARSE, 1,
               "expected 4 finite numbers AX AY AZ DEG after 'rotate'");
    assert_bad(state, "box rotate 0 0 0 90\n", RT_ERR_PARSE, 1, "non-zero axis");
    assert_bad(state, "box scale\n", RT_ERR_PARSE, 1, "after 'scale'");
    assert_bad(state, "box scale 1 2\n", RT_ERR_PARSE, 1, "expected 3 finite numbers X Y Z after 'scale'");
    assert_bad(state, "box scale 0\n", RT_ERR_PARSE, 1, "non-zero scale factors");
    assert_bad(state, "box name\n", RT_ERR_PARSE, 1, "after 'name'");
    assert_bad(state, "sphere segments 2\n", RT_ERR_PARSE, 1, "expected an integer 3..256 after 'segments'");
    assert_bad(state, "sphere segments 1.5\n", RT_ERR_PARSE, 1, "after 'segments'");
    assert_bad(state, "box segments 8\n", RT_ERR_PARSE, 1,
               "expected one of name, material, translate, rotate, scale after 'box'");
    assert_bad(state, "mesh\n", RT_ERR_PARSE, 1, "expected a .obj, .ply or assimp-format (.gltf, .fbx, ...) PATH after 'mesh'");
    assert_bad(state, "mesh x.txt\n", RT_ERR_PARSE, 1,
               "expected a .obj, .ply or assimp-format (.gltf, .fbx, ...) PATH after 'mesh', found 'x.txt'");
    assert_bad(state, "include\n", RT_ERR_PARSE, 1, "expected a .scene PATH after 'include'");
    assert_bad(state, "box\ninclude a.scene b\n", RT_ERR_PARSE, 2, "expected the end of the line");
    assert_bad(state, "box \"unterminated\n", RT_ERR_PARSE, 1, "expected a closing '\"'");
    assert_bad(state, "camera fov 0 pos 0 0 1 look 0 0 0\n", RT_ERR_PARSE, 1, "0 < DEG < 180");
    assert_bad(state, "camera pos 0 0 1 look 0 0 1\n", RT_ERR_PARSE, 1,
               "'look' a finite, non-zero distance from 'pos'");
    assert_bad(state, "camera pos 0 0 1 look 0 0 0 up 0 0 3\n", RT_ERR_PARSE, 1, "not parallel");
    assert_bad(state, "material m reflect 1.5\n", RT_ERR_PARSE, 1,
               "expected a reflectivity 0..1 after 'reflect', found '1.5'");
    assert_bad(state, "material m kd 1 -1 1\n", RT_ERR_PARSE, 1, "found '-1'");
    /* non-finite numbers */
    assert_bad(state, "box translate nan 0 0\n", RT_ERR_PARSE, 1,
               "expected 3 finite numbers X Y Z after 'translate', found 'nan'");
    assert_bad(state, "box translate 0 inf 0\n", RT_ERR_PARSE, 1, "found 'inf'");
    assert_bad(state, "box translate 0 0 1e39\n", RT_ERR_PARSE, 1, "found '1e39'");
    assert_bad(state, "light point pos 0 0 0 color -inf 1 1\n", RT_ERR_PARSE, 1, "after 'color'");
    assert_bad(state, "box scale 1e30 scale 1e30\n", RT_ERR_PARSE, 1, "a transform that stays finite");
    assert_bad(state, "box translate 1x 0 0\n", RT_ERR_PARSE, 1, "found '1x'");
    /* unknown keyword / option / material */
    assert_bad(
        state, "box\n\nboxx\n", RT_ERR_PARSE, 3,
        "unknown keyword 'boxx' (expected one of: camera, light, material, mesh, box, sphere, quad, include");
    assert_bad(state, "Camera pos 0 0 0\n", RT_ERR_PARSE, 1, "unknown keyword 'Camera'");
    assert_bad(state, "camera pos 0 0 1 look 0 0 0 zoom 2\n", RT_ERR_PARSE, 1,
               "expected one of pos, look, up, fov after 'camera', found 'zoom'");
    assert_bad(state, "material a kd 1 1 1 shiny\n", RT_ERR_PARSE, 1, "expected one of kd, ks, ke, ns");
    assert_bad(state, "material a\nmaterial b\nbox material c\n", RT_ERR_PARSE, 3,
               "expected a defined material name after 'material', found 'c' (defined: 'a', 'b')");
    assert_bad(state, "material a\nbox\nmaterial a kd 1 1 1\n", RT_ERR_PARSE, 3, "'a' is already defined at");
}

static void scenefile_missing_files_and_directories_are_errors(void **state)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/adir.obj", (char *)*state);
    mkdir(dir, 0700);
    snprintf(dir, sizeof dir, "%s/bdir.scene", (char *)*state);
    mkdir(dir, 0700);
    assert_bad(state, "box\nmesh missing.obj\n", RT_ERR_IO, 2, "missing.obj' not found");
    assert_bad(state, "box\nmesh \"no such.ply\" name x\n", RT_ERR_IO, 2, "no such.ply' not found");
    assert_bad(state, "mesh adir.obj\n", RT_ERR_IO, 1, "adir.obj' is a directory");
    assert_bad(state, "include nope.scene\n", RT_ERR_IO, 1, "expected a .scene PATH after 'include'");
    assert_bad(state, "include bdir.scene\n", RT_ERR_IO, 1, "bdir.scene' is a directory");
    assert_bad(state, "material m map_kd gone.png\n", RT_ERR_IO, 1, "expected an image PATH after 'map_kd'");
    assert_bad(state, "include /dev/null.scene\n", RT_ERR_IO, 1, "not found");
    /* A file that is there but broken: the .scene line, then the loader's own message. */
    char buf[1024];
    put(state, "bad.obj", "v 0 0 0\nv 1 0 0\nv 0 1\nf 1 2 3\n", buf);
    put(state, "notimage.png", "this is text\n", buf);
    assert_bad(state, "box\nmesh bad.obj\n", RT_ERR_PARSE, 2, "expected a valid mesh file after 'mesh': ");
    assert_bad(state, "box\nmesh bad.obj\n", RT_ERR_PARSE, 2, "bad.obj:3: OBJ: ");
    assert_bad(state, "material m map_kd notimage.png\n", RT_ERR_IO, 1, "expected a readable image after 'map_kd'");
    assert_bad(state, "box\ninclude /dev/null\n", RT_ERR_PARSE, 2, "expected a .scene PATH after 'include'");
    /* The top-level file itself. */
    RtScene s;
    RtError err = {0};
    assert_int_equal(rt_scene_load(dir, &s, &err), RT_ERR_IO);
    assert_non_null(strstr(err.msg, "is a directory"));
    snprintf(dir, sizeof dir, "%s/absent.scene", (char *)*state);
    assert_int_equal(rt_scene_load(dir, &s, &err), RT_ERR_IO);
    assert_non_null(strstr(err.msg, "absent.scene: SCENE: cannot open"));
}

static void scenefile_garbage_bytes_are_errors(void **state)
{
    assert_bad(state, "box\n\x01\x02garbage\n", RT_ERR_PARSE, 2, "control byte 0x01");
    char path[1024];
    static const char nul[] = "box\nbox\0 nul\n";
    put_bytes(state, "nul.scene", nul, sizeof nul - 1, path);
    RtScene s;
    RtError err = {0};
    assert_int_equal(rt_scene_load(path, &s, &err), RT_ERR_PARSE);
    assert_message(&err, path, 2, "control byte 0x00");
    assert_bad(state, "\xff\xfe\xfd box\n", RT_ERR_PARSE, 1, "unknown keyword");

    /* Random bytes and random token soup: never a crash, and any error
     * names the file and a line. */
    RtTestRng rng = {0xfa11};
    static const char *vocab[] = {
        "camera",   "light",     "point",  "directional", "material", "mesh",    "box",   "sphere", "quad",
        "include",  "animate",   "pos",    "look",        "up",       "fov",     "dir",   "color",  "kd",
        "ks",       "ke",        "ns",     "reflect",     "ni",       "d",       "illum", "map_kd", "name",
        "segments", "translate", "rotate", "scale",       "0",        "1",       "-1",    "90",     "0.5",
        "1e9",      "nan",       "\"",     "#",           "m",        "t.scene", "x.obj", "3",      "\n"};
    for (int iter = 0; iter < 300; iter++) {
        char text[512];
        size_t n = 0;
        if (iter % 3 == 0) {
            size_t len = rt_test_rand(&rng) % 200;
            for (size_t i = 0; i < len; i++) text[n++] = (char)(rt_test_rand(&rng) % 255 + 1);
        } else {
            while (n < 400) {
                const char *w = vocab[rt_test_rand(&rng) % (sizeof vocab / sizeof vocab[0])];
                n += (size_t)snprintf(text + n, sizeof text - n, "%s ", w);
            }
        }
        text[n] = 0;
        RtStatus st = load_text(state, text, &s, &err, path);
        if (st == RT_OK) {
            rt_scene_free(&s);
        } else if (st != RT_ERR_EMPTY) {
            char where[1100];
            snprintf(where, sizeof where, "%s:", path);
            assert_non_null(strstr(err.msg, where));
            assert_non_null(strstr(err.msg, "SCENE:"));
        }
    }
}

static void scenefile_empty_scene_is_rt_err_empty(void **state)
{
    char path[1024];
    RtScene s;
    RtError err;
    assert_int_equal(load_text(state, "", &s, &err, path), RT_ERR_EMPTY); /* size 0 */
    assert_int_equal(load_text(state,
                               "# only\n\ncamera pos 0 0 5 look 0 0 0\nlight point pos 0 1 0\n"
                               "material m kd 1 1 1\n",
                               &s, &err, path),
                     RT_ERR_EMPTY);
    assert_non_null(strstr(err.msg, "empty"));
    /* size 1: one primitive, and a file without a final newline */
    assert_int_equal(load_text(state, "quad", &s, &err, path), RT_OK);
    assert_int_equal(s.tri_count, 2);
    assert_int_equal(s.light_count, 2); /* the default headlight and inside light */
    rt_scene_free(&s);
    assert_int_equal(load_text(state, "\xEF\xBB\xBFquad\r\nbox\r\n", &s, &err, path), RT_OK); /* BOM, CRLF */
    assert_int_equal(s.tri_count, 14);
    rt_scene_free(&s);
}

static void scenefile_cornell_box_loads(void **state)
{
    (void)state;
    RtScene s;
    RtError err = {0};
    RtStatus st = rt_scene_load("scenes/cornell.scene", &s, &err);
    if (st != RT_OK) print_error("%s\n", err.msg);
    assert_int_equal(st, RT_OK);
    assert_int_equal(s.has_camera, 1);
    assert_int_equal(s.light_count, 1);
    assert_int_equal(s.mat_count, 5);
    /* 5 walls + light panel (2 each), 2 boxes (12 each), a 64-segment sphere */
    assert_int_equal(s.tri_count, 6 * 2 + 2 * 12 + rt_prim_sphere_tri_count(64));
    assert_int_equal(s.object_count, 9);
    assert_int_equal(s.zero_area, 0);
    RtAabb b = rt_scene_bounds(&s);
    assert_vec3(b.lo, v3(-2.75f, 0, -2.75f), 1e-5f);
    assert_vec3(b.hi, v3(2.75f, 5.5f, 2.75f), 1e-5f);
    for (uint32_t o = 0; o < s.object_count; o++) {
        const RtObject *ob = &s.objects[o];
        assert_normals_consistent(&s, ob->first_tri, ob->tri_count);
        if (strstr(ob->name, "box") || strstr(ob->name, "sphere"))
            assert_true(is_closed(&s, ob->first_tri, ob->tri_count));
        if (strstr(ob->name, "wall") || !strcmp(ob->name, "floor") || !strcmp(ob->name, "ceiling")) {
            /* walls face the inside of the room */
            RtVec3 n = s.verts[s.tris[ob->first_tri].v[0]].n, p = s.verts[s.tris[ob->first_tri].v[0]].p;
            assert_true(v3_dot(n, v3_sub(v3(0, 2.75f, 0), p)) > 0.0f);
        }
    }
    rt_scene_free(&s);
}

/* ---- animation ----------------------------------------------------------------- */

/* World position of vertex v at time t (rt_scene_frame_at, the CPU path). */
static RtVec3 pos_at(const RtScene *s, float t, uint32_t v)
{
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    RtError err = {0};
    assert_int_equal(rt_scene_frame_at(s, t, &f, &err), RT_OK);
    RtVec3 p = f.view.verts[v].p;
    rt_scene_frame_free(&f);
    return p;
}

static RtVec3 centroid_at(const RtScene *s, float t, const RtObject *o)
{
    RtSceneFrame f;
    memset(&f, 0, sizeof f);
    RtError err = {0};
    assert_int_equal(rt_scene_frame_at(s, t, &f, &err), RT_OK);
    RtVec3 c = v3(0, 0, 0);
    for (uint32_t t2 = o->first_tri; t2 < o->first_tri + o->tri_count; t2++)
        for (int k = 0; k < 3; k++) c = v3_add(c, f.view.verts[f.view.tris[t2].v[k]].p);
    rt_scene_frame_free(&f);
    return v3_scale(c, 1.0f / (3.0f * (float)o->tri_count));
}

static const RtObject *object_named(const RtScene *s, const char *name)
{
    for (uint32_t i = 0; i < s->object_count; i++)
        if (!strcmp(s->objects[i].name, name)) return &s->objects[i];
    fail_msg("no object '%s'", name);
    return NULL;
}

/* The vertices of an object: [first, first+count) (primitives own theirs). */
static void object_verts(const RtScene *s, const RtObject *o, uint32_t *first, uint32_t *count)
{
    uint32_t lo = UINT32_MAX, hi = 0;
    for (uint32_t t = o->first_tri; t < o->first_tri + o->tri_count; t++)
        for (int k = 0; k < 3; k++) {
            lo = s->tris[t].v[k] < lo ? s->tris[t].v[k] : lo;
            hi = s->tris[t].v[k] + 1 > hi ? s->tris[t].v[k] + 1 : hi;
        }
    *first = lo;
    *count = hi - lo;
}

static void load_ok(void **state, const char *text, RtScene *s)
{
    RtError err;
    char path[1024];
    RtStatus st = load_text(state, text, s, &err, path);
    if (st != RT_OK) fail_msg("%s", err.msg);
}

static void scenefile_animate_spin_orbit_bounce(void **state)
{
    RtScene s;
    load_ok(state,
            "box name spinner translate 2 0 0\n"
            "animate spinner spin speed 90\n"
            "sphere name moon segments 8 translate 0 1 0\n"
            "animate moon orbit center 1 0 2 radius 3 speed 90 phase 30\n"
            "box name ball\n"
            "animate ball bounce height 2 period 1 phase 90\n"
            "box name tilted translate 0 5 0\n"
            "animate tilted spin axis 0 0 2 speed -45 phase 10 pivot 1 5 0\n"
            "box name still translate 9 9 9\n",
            &s);
    assert_int_equal(s.anim.node_count, 4);
    assert_int_equal(s.anim.nodes[0].kind, RT_NODE_SPIN);
    assert_int_equal(s.anim.nodes[1].kind, RT_NODE_ORBIT);
    assert_int_equal(s.anim.nodes[2].kind, RT_NODE_BOUNCE);
    assert_int_equal(s.anim.nodes[3].kind, RT_NODE_SPIN);
    assert_vec3(v3(s.anim.nodes[3].p[0], s.anim.nodes[3].p[1], s.anim.nodes[3].p[2]), v3(0, 0, 1), 0); /* normalised */
    assert_true(rt_anim_is_dynamic(&s.anim));
    uint32_t first, count;

    /* spin: about the vertical through the box's placed origin (2, 0, 0);
     * a right-handed quarter turn about +y takes (x, z) to (z, -x) */
    object_verts(&s, object_named(&s, "spinner"), &first, &count);
    for (uint32_t v = first; v < first + count; v++) {
        RtVec3 p = v3_sub(s.verts[v].p, v3(2, 0, 0));
        assert_vec3(pos_at(&s, 1.0f, v), v3(2 + p.z, p.y, -p.x), 1e-5f);
        assert_vec3(pos_at(&s, 0.0f, v), s.verts[v].p, 1e-6f);
        assert_int_equal(s.anim.vert_node[v], 0);
    }
    /* orbit: offset by C + R (cos, 0, sin)(phase + speed t) */
    object_verts(&s, object_named(&s, "moon"), &first, &count);
    float th = (30.0f + 90.0f * 1.0f) * 3.14159265f / 180.0f;
    RtVec3 off = v3(1 + 3 * cosf(th), 0, 2 + 3 * sinf(th));
    assert_vec3(pos_at(&s, 1.0f, first + 3), v3_add(s.verts[first + 3].p, off), 1e-5f);
    /* bounce: up by H |sin(pi t / period + phase)|, 360 degrees of phase = a period */
    object_verts(&s, object_named(&s, "ball"), &first, &count);
    assert_vec3(pos_at(&s, 0.25f, first), v3_add(s.verts[first].p, v3(0, 2, 0)), 1e-5f);
    assert_vec3(pos_at(&s, 0.75f, first), s.verts[first].p, 1e-5f);
    /* spin with axis, phase and pivot: -45 deg/s about +z through (1, 5, 0) */
    object_verts(&s, object_named(&s, "tilted"), &first, &count);
    float a = (10.0f - 45.0f * 2.0f) * 3.14159265f / 180.0f;
    RtVec3 p = v3_sub(s.verts[first].p, v3(1, 5, 0));
    assert_vec3(pos_at(&s, 2.0f, first),
                v3(1 + p.x * cosf(a) - p.y * sinf(a), 5 + p.x * sinf(a) + p.y * cosf(a), p.z), 1e-5f);
    /* an object without animate stays static */
    object_verts(&s, object_named(&s, "still"), &first, &count);
    assert_int_equal(s.anim.vert_node[first], RT_ANIM_STATIC);
    assert_vec3(pos_at(&s, 3.0f, first), s.verts[first].p, 0);
    /* no `time`: the viewer loops the default period */
    float t0, t1;
    rt_scene_time_range(&s, &t0, &t1);
    assert_float_equal(t1, RT_ANIM_DEFAULT_PERIOD, 0);
    rt_scene_free(&s);
}

static void scenefile_animate_keyframes_pass_through_every_key(void **state)
{
    RtScene s;
    load_ok(state,
            "box name k translate 1 0 0\n"
            "animate k key 0 translate 0 0 0\n"
            "animate k key 1 translate 0 2 0 rotate 0 2 0 90\n"
            "animate k key 2 translate 0 0 0 scale 2 tcb 0.5 0 0\n"
            "box name r translate 0 3 0\n"
            "animate r key 0 rotate 1 0 0 0\n"
            "animate r key 4 rotate 1 0 0 90\n",
            &s);
    assert_int_equal(s.anim.track_count, 2);
    const RtAnimTrack *tr = &s.anim.tracks[0];
    /* padded for the spline: ends repeated (3 keys -> 5), a lone key x4 */
    assert_int_equal(tr->transl.count, 5);
    assert_int_equal(tr->rot.count, 4);
    assert_int_equal(tr->scale.count, 4);
    assert_float_equal(tr->scale.keys[0].tension, 0.5f, 0);
    assert_int_equal(s.anim.nodes[0].kind, RT_NODE_TRACK);
    uint32_t first, count;
    object_verts(&s, object_named(&s, "k"), &first, &count);
    for (uint32_t v = first; v < first + count; v += 5) {
        /* T(o + translate) R S about the placed origin o = (1, 0, 0); the
         * lone rotate and scale keys hold for all t */
        RtVec3 q = v3_scale(v3_sub(s.verts[v].p, v3(1, 0, 0)), 2.0f);
        RtVec3 rq = v3(q.z, q.y, -q.x);
        assert_vec3(pos_at(&s, 1.0f, v), v3_add(v3(1, 2, 0), rq), 1e-4f);
        assert_vec3(pos_at(&s, 2.0f, v), v3_add(v3(1, 0, 0), rq), 1e-4f);
        assert_vec3(pos_at(&s, -5.0f, v), v3_add(v3(1, 0, 0), rq), 1e-4f); /* holds before the first key */
        assert_vec3(pos_at(&s, 9.0f, v), v3_add(v3(1, 0, 0), rq), 1e-4f);  /* and after the last */
        float y = pos_at(&s, 0.5f, v).y - rq.y;
        assert_true(y > 0.5f && y < 2.5f);
    }
    /* rotation keys alone turn about the object's own origin (0, 3, 0) */
    object_verts(&s, object_named(&s, "r"), &first, &count);
    RtVec3 p = v3_sub(s.verts[first].p, v3(0, 3, 0));
    assert_vec3(pos_at(&s, 4.0f, first), v3(p.x, 3 - p.z, p.y), 1e-4f);
    assert_vec3(pos_at(&s, 0.0f, first), s.verts[first].p, 1e-5f);
    rt_scene_free(&s);

    /* size 1: one key is a constant pose */
    load_ok(state, "box name one\nanimate one key 3 translate 1 2 3\n", &s);
    assert_vec3(pos_at(&s, 0.0f, 0), v3_add(s.verts[0].p, v3(1, 2, 3)), 1e-5f);
    assert_vec3(pos_at(&s, 7.0f, 0), v3_add(s.verts[0].p, v3(1, 2, 3)), 1e-5f);
    rt_scene_free(&s);
}

static void scenefile_animate_motions_compose_in_written_order(void **state)
{
    /* spin, then orbit: spins in place, and the spinning box goes round */
    RtScene s;
    load_ok(state, "box name a translate 3 0 0\nanimate a spin speed 90\nanimate a orbit radius 2 speed 90\n", &s);
    assert_int_equal(s.anim.node_count, 2);
    assert_int_equal(s.anim.nodes[0].kind, RT_NODE_ORBIT); /* the last written is the root */
    assert_int_equal(s.anim.nodes[0].parent, -1);
    assert_int_equal(s.anim.nodes[1].kind, RT_NODE_SPIN);
    assert_int_equal(s.anim.nodes[1].parent, 0);
    assert_int_equal(s.anim.vert_node[0], 1); /* vertices on the first written */
    assert_vec3(centroid_at(&s, 1.0f, object_named(&s, "a")), v3(3, 0, 2), 1e-4f);
    rt_scene_free(&s);
    /* orbit, then spin: the spin (about the placed origin) swings the orbiting box */
    load_ok(state, "box name a translate 3 0 0\nanimate a orbit radius 2 speed 90\nanimate a spin speed 90\n", &s);
    assert_vec3(centroid_at(&s, 1.0f, object_named(&s, "a")), v3(5, 0, 0), 1e-4f);
    rt_scene_free(&s);
    /* a keyframe track takes the place of its first key among the motions */
    load_ok(state,
            "box name b\nanimate b key 0 translate 0 0 0\nanimate b bounce height 1 period 2\n"
            "animate b key 1 translate 1 0 0\n",
            &s);
    assert_int_equal(s.anim.node_count, 2);
    assert_int_equal(s.anim.nodes[0].kind, RT_NODE_BOUNCE);
    assert_int_equal(s.anim.nodes[1].kind, RT_NODE_TRACK);
    assert_vec3(centroid_at(&s, 1.0f, object_named(&s, "b")), v3(1, 1, 0), 1e-4f);
    rt_scene_free(&s);
    /* the latest object of a name is the one animated; included files count */
    char buf[1024];
    put(state, "inc.scene", "sphere name ball segments 6 translate 0 4 0\n", buf);
    load_ok(state, "box name ball\ninclude inc.scene\nanimate ball bounce height 1 period 1\n", &s);
    assert_int_equal(s.anim.vert_node ? s.anim.vert_node[0] : RT_ANIM_STATIC, RT_ANIM_STATIC);
    assert_int_equal(s.anim.vert_node[24], 0);
    rt_scene_free(&s);
}

static void put_obj_triangle(void **state, const char *rel, float scale, char buf[1024])
{
    char text[256];
    snprintf(text, sizeof text, "v 0 0 0\nv %g 0 0\nv 0 %g 0\nf 1 2 3\n", (double)scale, (double)scale);
    put(state, rel, text, buf);
}

static void scenefile_animate_morph_and_wave(void **state)
{
    char buf[1024];
    put_obj_triangle(state, "a.obj", 1.0f, buf);
    put_obj_triangle(state, "b.obj", 2.0f, buf);
    put(state, "quad.obj", "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n", buf);
    RtScene s;
    load_ok(state, "time 0 4\nmesh a.obj name m translate 0 0 1\nanimate m morph b.obj period 2\n", &s);
    assert_int_equal(s.anim.morph_count, 1);
    const RtAnimMorph *mo = &s.anim.morphs[0];
    assert_int_equal(mo->vert_count, 3);
    assert_int_equal(mo->key_count, 5); /* base, target, base, target, base over 0..4 */
    assert_float_equal(mo->times[4], 4.0f, 0);
    /* the target is placed like the object: (2, 0, 0) + (0, 0, 1) */
    assert_vec3(pos_at(&s, 1.0f, 1), v3(2, 0, 1), 1e-6f);
    assert_vec3(pos_at(&s, 0.5f, 1), v3(1.5f, 0, 1), 1e-6f);
    assert_vec3(pos_at(&s, 2.0f, 1), v3(1, 0, 1), 1e-6f);
    assert_vec3(pos_at(&s, 3.0f, 2), v3(0, 2, 1), 1e-6f);
    float t0, t1;
    rt_scene_time_range(&s, &t0, &t1);
    assert_float_equal(t1, 4.0f, 0);
    rt_scene_free(&s);
    /* the default range 0..10 at a 1 s period: 21 poses */
    load_ok(state, "mesh a.obj name m\nanimate m morph b.obj period 1\n", &s);
    assert_int_equal(s.anim.morphs[0].key_count, 21);
    rt_scene_free(&s);

    /* wave: y += A sin(2 pi (dot(xz, dir) / L - (V / L) t)), in world units */
    load_ok(state, "quad name w scale 4\nanimate w wave amplitude 0.5 wavelength 2 speed 1 dir 0 3\n", &s);
    assert_int_equal(s.anim.deform_count, 1);
    const RtAnimDeform *d = &s.anim.deforms[0];
    assert_float_equal(d->dir_z, 1.0f, 0);
    assert_float_equal(d->speed, 0.5f, 0);
    assert_int_equal(d->vert_count, 4);
    for (uint32_t v = 0; v < 4; v++) {
        RtVec3 p = s.verts[v].p, q = pos_at(&s, 0.3f, v);
        float y = 0.5f * sinf(6.2831853f * (p.z / 2.0f - 0.5f * 0.3f));
        assert_vec3(q, v3(p.x, y, p.z), 1e-4f);
    }
    rt_scene_free(&s);
    /* two waves compose; a morphing object can also move */
    load_ok(state,
            "mesh a.obj name m\nanimate m morph b.obj\nanimate m wave amplitude 1 wavelength 3\n"
            "animate m wave amplitude 1 wavelength 5 dir 1 1\nanimate m spin speed 10\n",
            &s);
    assert_int_equal(s.anim.deform_count, 2);
    assert_int_equal(s.anim.morph_count, 1);
    assert_int_equal(s.anim.node_count, 1);
    rt_scene_free(&s);
}

static void scenefile_time_and_procedural_statements(void **state)
{
    RtScene s;
    load_ok(state, "time 1 3\nbox\n", &s);
    assert_float_equal(s.anim.t_start, 1.0f, 0);
    assert_float_equal(s.anim.t_end, 3.0f, 0);
    assert_false(rt_anim_is_dynamic(&s.anim)); /* a range alone moves nothing */
    rt_scene_free(&s);
    /* runners go on the final bounds: this floor comes after the statement */
    load_ok(state, "runners 1\nquad name floor scale 10 translate 0 -2 0\n", &s);
    assert_int_equal(s.tri_count, 2 + rt_runner_tri_count());
    RtAabb b = rt_scene_bounds(&s);
    assert_float_equal(b.lo.y, -2.0f, 0.05f);
    assert_true(b.hi.y > -1.0f);
    rt_scene_free(&s);
    load_ok(state, "runners 0\nbox\n", &s);
    assert_int_equal(s.tri_count, 12);
    rt_scene_free(&s);
    load_ok(state, "camera pos 0 1 9 look 0 0 0\nfield 5\n", &s);
    assert_int_equal(s.tri_count, rt_field_tri_count(5));
    assert_float_equal(s.camera.pos.z, 9.0f, 0); /* the file's camera stays */
    assert_int_equal(s.light_count, 2);
    rt_scene_free(&s);
    load_ok(state, "wavegrid 200\n", &s);
    assert_int_equal(s.tri_count, rt_wave_tri_count(200));
    assert_int_equal(s.anim.deform_count, 2);
    rt_scene_free(&s);
}

/* RtLoadLimits: the procedural statements of one load share a triangle
 * budget (includes counted), refused with file:line and the numbers, the
 * scene left empty; the default budget is 32M triangles. */
static void scenefile_procedural_statements_share_a_budget(void **state)
{
    RtLoadLimits d = rt_load_limits_default();
    assert_int_equal(d.procedural_tris, 32u << 20);
    assert_int_equal(d.morph_poses, 64u << 20);
    RtLoadLimits lim = {.procedural_tris = 100000, .morph_poses = 1u << 20};
    char path[1024], inc[1024];
    RtScene s;
    RtError err;
    struct {
        const char *text, *needle;
        int line;
    } refused[] = {
        {"runners 1\nrunners 1\n", "'runners 1' adds 78224 triangles to the 78224 the procedural statements of "
                                    "this load made: over the limit of 100000", 2},
        {"field 10\nwavegrid 99000\n", "'wavegrid 99000' adds 98568 triangles to the 2702", 2},
        {"wavegrid 100001\n", "adds 100352 triangles to the 0", 1},
        {"include inc.scene\nrunners 1\n", "'runners 1' adds 78224 triangles to the 99458", 2},
    };
    put(state, "inc.scene", "wavegrid 99458\n", inc);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        put(state, "t.scene", refused[i].text, path);
        memset(&err, 0, sizeof err);
        assert_int_equal(rt_scene_load_limited(path, &lim, &s, &err), RT_ERR_OOM);
        assert_message(&err, path, refused[i].line, refused[i].needle);
        assert_int_equal(s.tri_count, 0);
        assert_null(s.verts);
    }
    /* within the budget: one runner and a small field */
    put(state, "t.scene", "runners 1\nfield 20\n", path);
    memset(&err, 0, sizeof err);
    assert_int_equal(rt_scene_load_limited(path, &lim, &s, &err), RT_OK);
    assert_int_equal(s.tri_count, rt_runner_tri_count() + rt_field_tri_count(20));
    rt_scene_free(&s);
}

static void scenefile_animate_errors_name_the_line(void **state)
{
    char buf[1024];
    put_obj_triangle(state, "a.obj", 1.0f, buf);
    put(state, "quad.obj", "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n", buf);
    /* unknown object */
    assert_bad(state, "box\nanimate spin 0 1 0 90\n", RT_ERR_PARSE, 2,
               "expected the name of an object placed earlier after 'animate', found 'spin' (placed so far: 'box')");
    assert_bad(state, "animate ghost spin speed 1\nbox name ghost\n", RT_ERR_PARSE, 1, "(placed so far: none)");
    assert_bad(state, "box\nanimate\n", RT_ERR_PARSE, 2, "expected a name of 1 to 63 bytes after 'animate'");
    assert_bad(state, "box\nanimate box\n", RT_ERR_PARSE, 2,
               "expected one of spin, orbit, bounce, key, morph, wave after 'box', found the end of the line");
    assert_bad(state, "box\nanimate box fly\n", RT_ERR_PARSE, 2, "found 'fly'");
    /* missing arguments */
    assert_bad(state, "box\nanimate box spin\n", RT_ERR_PARSE, 2, "expected 'speed DEG_PER_S' after 'spin'");
    assert_bad(state, "box\nanimate box spin speed\n", RT_ERR_PARSE, 2,
               "expected a finite number of degrees per second after 'speed'");
    assert_bad(state, "box\nanimate box orbit speed 3\n", RT_ERR_PARSE, 2, "expected 'radius R' after 'orbit'");
    assert_bad(state, "box\nanimate box orbit radius 1\n", RT_ERR_PARSE, 2, "expected 'speed DEG_PER_S' after 'orbit'");
    assert_bad(state, "box\nanimate box bounce height 1\n", RT_ERR_PARSE, 2, "expected 'period S' after 'bounce'");
    assert_bad(state, "box\nanimate box bounce period 1\n", RT_ERR_PARSE, 2, "expected 'height H' after 'bounce'");
    assert_bad(state, "box\nanimate box key\n", RT_ERR_PARSE, 2, "expected a key time T in seconds after 'key'");
    assert_bad(state, "box\nanimate box key 1\n", RT_ERR_PARSE, 2, "expected at least one of 'translate X Y Z'");
    assert_bad(state, "box\nanimate box wave amplitude 1\n", RT_ERR_PARSE, 2, "expected 'wavelength L' after 'wave'");
    assert_bad(state, "box\nanimate box wave wavelength 1\n", RT_ERR_PARSE, 2, "expected 'amplitude A' after 'wave'");
    assert_bad(state, "box\nanimate box morph\n", RT_ERR_PARSE, 2, "expected a .obj or .ply PATH after 'morph'");
    /* bad numbers */
    assert_bad(state, "box\nanimate box spin speed nan\n", RT_ERR_PARSE, 2, "found 'nan'");
    assert_bad(state, "box\nanimate box spin speed 1 axis 0 0 0\n", RT_ERR_PARSE, 2, "a non-zero axis X Y Z");
    assert_bad(state, "box\nanimate box spin speed 1 pivot 1 2\n", RT_ERR_PARSE, 2, "after 'pivot'");
    assert_bad(state, "box\nanimate box spin speed 1 spin\n", RT_ERR_PARSE, 2,
               "expected one of axis, speed, phase, pivot after 'spin', found 'spin'");
    assert_bad(state, "box\nanimate box orbit radius -1 speed 1\n", RT_ERR_PARSE, 2,
               "expected a finite radius >= 0 after 'radius', found '-1'");
    assert_bad(state, "box\nanimate box bounce height 1 period 0\n", RT_ERR_PARSE, 2, "a period in seconds > 0");
    assert_bad(state, "box\nanimate box bounce height 1e39 period 1\n", RT_ERR_PARSE, 2, "found '1e39'");
    assert_bad(state, "box\nanimate box key 1 rotate 0 0 0 90\n", RT_ERR_PARSE, 2, "a non-zero axis AX AY AZ");
    assert_bad(state, "box\nanimate box key 1 scale 0\n", RT_ERR_PARSE, 2, "non-zero scale factors");
    assert_bad(state, "box\nanimate box key 1 translate 1 2\n", RT_ERR_PARSE, 2, "after 'translate'");
    assert_bad(state, "box\nanimate box key 1 tcb 1\n", RT_ERR_PARSE, 2, "3 finite numbers TENSION CONTINUITY BIAS");
    assert_bad(state, "box\nanimate box key 1 translate 0 0 0\nanimate box key 1 translate 1 0 0\n", RT_ERR_PARSE, 3,
               "expected a key time later than the previous key's 1 after 'key', found '1'");
    assert_bad(state, "box\nanimate box wave amplitude 1 wavelength 0\n", RT_ERR_PARSE, 2, "a wavelength > 0");
    assert_bad(state, "box\nanimate box wave amplitude 1 wavelength 1 dir 0 0\n", RT_ERR_PARSE, 2,
               "a non-zero direction X Z");
    assert_bad(state, "box\nanimate box morph a.obj period -1\n", RT_ERR_PARSE, 2, "a period in seconds > 0");
    /* morph: vertex counts must match; one morph per object; files must exist */
    assert_bad(state, "mesh quad.obj name q\nanimate q morph a.obj\n", RT_ERR_PARSE, 2,
               "expected a mesh with the 4 vertices of 'q' after 'morph', found 3 in");
    assert_bad(state, "box\nanimate box morph a.obj\n", RT_ERR_PARSE, 2, "the 24 vertices of 'box'");
    assert_bad(state, "mesh a.obj\nanimate a.obj morph a.obj\nanimate a.obj morph a.obj\n", RT_ERR_PARSE, 3,
               "one morph per object");
    assert_bad(state, "box\nanimate box morph gone.obj\n", RT_ERR_IO, 2, "gone.obj' not found");
    assert_bad(state, "box\nanimate box morph x.stl\n", RT_ERR_PARSE, 2, "found 'x.stl'");
    /* time and the procedural statements */
    assert_bad(state, "box\ntime 2 1\n", RT_ERR_PARSE, 2, "expected an END later than START after 'time'");
    assert_bad(state, "box\ntime 0\n", RT_ERR_PARSE, 2, "2 finite numbers START END");
    assert_bad(state, "box\ntime 0 1 2\n", RT_ERR_PARSE, 2, "expected the end of the line");
    assert_bad(state, "box\nruns 2\n", RT_ERR_PARSE, 2, "unknown keyword 'runs'");
    assert_bad(state, "box\nrunners -1\n", RT_ERR_PARSE, 2, "expected an integer count 0..128 after 'runners'");
    assert_bad(state, "box\nrunners 2.5\n", RT_ERR_PARSE, 2, "found '2.5'");
    assert_bad(state, "box\nrunners 100\nrunners 29\n", RT_ERR_PARSE, 3, "at most 128 runners in all");
    assert_bad(state, "field\n", RT_ERR_PARSE, 1, "expected an integer count 0..40000 after 'field'");
    assert_bad(state, "field 40001\n", RT_ERR_PARSE, 1, "found '40001'");
    assert_bad(state, "wavegrid 30000000\n", RT_ERR_PARSE, 1, "expected an integer triangle count 2..25165824");
    assert_bad(state, "wavegrid 1\n", RT_ERR_PARSE, 1, "expected an integer triangle count 2..");
    assert_bad(state, "wavegrid 0\n", RT_ERR_PARSE, 1, "found '0'");
    assert_bad(state, "wavegrid 100 x\n", RT_ERR_PARSE, 1, "expected the end of the line");
}

static void scenefile_shipped_dynamic_scenes_load(void **state)
{
    (void)state;
    static const struct {
        const char *path;
        uint32_t min_tris;
    } files[] = {{"scenes/dynamic.scene", 1000}, {"scenes/runners.scene", 300000}, {"scenes/field.scene", 10000},
                 {"scenes/wave.scene", 990000}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        RtScene s;
        RtError err = {0};
        RtStatus st = rt_scene_load(files[i].path, &s, &err);
        if (st != RT_OK) fail_msg("%s: %s", files[i].path, err.msg);
        assert_true(s.tri_count >= files[i].min_tris);
        assert_true(rt_anim_is_dynamic(&s.anim));
        /* it moves: some vertex is elsewhere a moment later */
        RtSceneFrame a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        assert_int_equal(rt_scene_frame_at(&s, 0.0f, &a, &err), RT_OK);
        assert_int_equal(rt_scene_frame_at(&s, 0.4f, &b, &err), RT_OK);
        float moved = 0.0f;
        for (uint32_t v = 0; v < s.vert_count; v += 7) moved = fmaxf(moved, v3_len(v3_sub(a.view.verts[v].p, b.view.verts[v].p)));
        assert_true(moved > 0.01f);
        rt_scene_frame_free(&a);
        rt_scene_frame_free(&b);
        rt_scene_free(&s);
    }
    /* dynamic.scene shows every form */
    RtScene s;
    RtError err = {0};
    assert_int_equal(rt_scene_load("scenes/dynamic.scene", &s, &err), RT_OK);
    int kinds[5] = {0};
    for (uint32_t i = 0; i < s.anim.node_count; i++) kinds[s.anim.nodes[i].kind]++;
    assert_true(kinds[RT_NODE_SPIN] >= 2 && kinds[RT_NODE_ORBIT] >= 2 && kinds[RT_NODE_BOUNCE] >= 1 &&
                kinds[RT_NODE_TRACK] >= 1);
    assert_int_equal(s.anim.morph_count, 1);
    assert_int_equal(s.anim.deform_count, 1);
    assert_float_equal(s.anim.t_end, 8.0f, 0);
    rt_scene_free(&s);
}

static void default_scene_moves_but_is_the_static_scene_at_t0(void **state)
{
    (void)state;
    RtScene s;
    RtError err = {0};
    assert_int_equal(rt_scene_make_default(&s, &err), RT_OK);
    assert_true(rt_anim_is_dynamic(&s.anim));
    assert_int_equal(s.anim.node_count, 3);
    RtSceneFrame a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    assert_int_equal(rt_scene_frame_at(&s, 0.0f, &a, &err), RT_OK);
    assert_int_equal(rt_scene_frame_at(&s, 1.0f, &b, &err), RT_OK);
    uint32_t moved = 0;
    for (uint32_t v = 0; v < s.vert_count; v++) {
        /* exactly the same positions at t = 0 */
        assert_memory_equal(&a.view.verts[v].p, &s.verts[v].p, sizeof(RtVec3));
        moved += v3_len(v3_sub(b.view.verts[v].p, s.verts[v].p)) > 1e-3f;
    }
    assert_true(moved > s.vert_count / 2);
    rt_scene_frame_free(&a);
    rt_scene_frame_free(&b);
    rt_scene_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mat34_transforms_apply_in_call_order),
        cmocka_unit_test_setup_teardown(scenefile_mesh_placed_many_times_equals_distinct_files, dir_setup, dir_teardown),
        cmocka_unit_test(mat34_normals_stay_outward_under_mirrors),
        cmocka_unit_test(prim_quad_is_two_triangles_of_area_four_facing_up),
        cmocka_unit_test(prim_box_is_closed_with_twelve_outward_triangles),
        cmocka_unit_test(prim_sphere_counts_closedness_and_normals),
        cmocka_unit_test(prim_rejects_bad_arguments_and_leaves_scene_unchanged),
        cmocka_unit_test(prim_box_transformed_lands_where_expected),
        cmocka_unit_test(scene_transform_mirrors_keep_winding_outward),
        cmocka_unit_test_setup_teardown(scenefile_every_keyword_parsed, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(scenefile_transforms_apply_in_written_order, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(scenefile_include_resolves_relative_paths, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(scenefile_include_cycle_and_depth_are_errors, dir_setup,
                                        dir_teardown),
        cmocka_unit_test_setup_teardown(scenefile_material_override_on_mesh, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(scenefile_bad_lines_name_file_line_and_expectation, dir_setup,
                                        dir_teardown),
        cmocka_unit_test_setup_teardown(scenefile_missing_files_and_directories_are_errors, dir_setup,
                                        dir_teardown),
        cmocka_unit_test_setup_teardown(scenefile_garbage_bytes_are_errors, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(scenefile_empty_scene_is_rt_err_empty, dir_setup, dir_teardown),
        cmocka_unit_test(scenefile_cornell_box_loads),
        cmocka_unit_test_setup_teardown(scenefile_animate_spin_orbit_bounce, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(scenefile_animate_keyframes_pass_through_every_key, dir_setup,
                                        dir_teardown),
        cmocka_unit_test_setup_teardown(scenefile_animate_motions_compose_in_written_order, dir_setup,
                                        dir_teardown),
        cmocka_unit_test_setup_teardown(scenefile_animate_morph_and_wave, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(scenefile_time_and_procedural_statements, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(scenefile_procedural_statements_share_a_budget, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(scenefile_animate_errors_name_the_line, dir_setup, dir_teardown),
        cmocka_unit_test(scenefile_shipped_dynamic_scenes_load),
        cmocka_unit_test(default_scene_moves_but_is_the_static_scene_at_t0),
    };
    return cmocka_run_group_tests_name("scenefile", tests, NULL, NULL);
}
