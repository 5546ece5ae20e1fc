/* test_obj.c — the OBJ + MTL loader: the subset it reads, the scene it
 * builds, and one clear error (never a crash or a hang) for each class of
 * bad input. Everything goes through rt_scene_load, the path users take. */
#include "test_util.h"

#include <fcntl.h>
#include <ftw.h>
#include <math.h>

#include "core/image.h"
#include "scene/load.h"
#include "scene/scene.h"

/* ---- helpers ------------------------------------------------------------- */

/* Loads text written to a fresh .obj file; the path comes back in path. */
static RtStatus load_text(const char *text, RtScene *s, RtError *err, char *path)
{
    RT_TEST_TMP_TEXT(".obj", text, path);
    memset(err, 0, sizeof *err);
    return rt_scene_load(path, s, err);
}

/* Bad input: the status, and a message naming the file, the line and what
 * was expected (expect). line 0 = no line number. */
static void expect_error(const char *text, RtStatus status, int line, const char *expect)
{
    char path[1024], where[1200];
    RtScene s;
    RtError err;
    RtStatus st = load_text(text, &s, &err, path);
    if (st != status) fail_msg("status %s (%s), expected %s", rt_status_name(st), err.msg, rt_status_name(status));
    snprintf(where, sizeof where, line ? "%s:%d: " : "%s", path, line);
    rt_test_assert_contains(err.msg, where);
    rt_test_assert_contains(err.msg, expect);
    assert_int_equal(s.tri_count, 0); /* freed */
    assert_null(s.verts);
    unlink(path);
}

/* stderr capture, to check what is warned and how often. */
static int g_saved_stderr = -1;
static char g_capture_path[1024];
static void capture_begin(void)
{
    fflush(stderr);
    snprintf(g_capture_path, sizeof g_capture_path, "/tmp/rt_test_obj_%d_stderr.txt", (int)getpid());
    int fd = open(g_capture_path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    assert_true(fd >= 0);
    g_saved_stderr = dup(2);
    dup2(fd, 2);
    close(fd);
}
/* Returns what was written to stderr since capture_begin (caller frees). */
static char *capture_end(void)
{
    fflush(stderr);
    dup2(g_saved_stderr, 2);
    close(g_saved_stderr);
    FILE *f = fopen(g_capture_path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = calloc(1, (size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    unlink(g_capture_path);
    return buf;
}
static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* A scratch directory with files written by relative path. */
static void make_dir(char dir[1024])
{
    snprintf(dir, 1024, "/tmp/rt_test_obj_XXXXXX");
    assert_non_null(mkdtemp(dir));
}
/* dir/rel, creating rel's folders. */
static void make_path(char path[2048], const char *dir, const char *rel)
{
    snprintf(path, 2048, "%s/%s", dir, rel);
    for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0700);
        *p = '/';
    }
}
static void write_file(const char *dir, const char *rel, const char *text)
{
    char path[2048];
    make_path(path, dir, rel);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}
static void write_png(const char *dir, const char *rel, int w, int h, uint8_t r, uint8_t g, uint8_t b)
{
    char path[2048];
    make_path(path, dir, rel);
    RtImage img;
    assert_int_equal(rt_image_alloc(&img, w, h), RT_OK);
    for (int i = 0; i < w * h; i++) {
        img.rgba[4 * i] = r;
        img.rgba[4 * i + 1] = g;
        img.rgba[4 * i + 2] = b;
        img.rgba[4 * i + 3] = 255;
    }
    RtError err;
    assert_int_equal(rt_image_write_png(&img, path, &err), RT_OK);
    rt_image_free(&img);
}
static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}
static void remove_dir(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static float tri_area(const RtScene *s, uint32_t i)
{
    const RtTriangle *t = &s->tris[i];
    RtVec3 a = s->verts[t->v[0]].p, b = s->verts[t->v[1]].p, c = s->verts[t->v[2]].p;
    return 0.5f * v3_len(v3_cross(v3_sub(b, a), v3_sub(c, a)));
}

static const char *k_tri = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n";

/* ---- valid input ---------------------------------------------------------- */

static void obj_single_triangle(void **state)
{
    (void)state;
    char path[1024];
    RtScene s;
    RtError err;
    assert_int_equal(load_text(k_tri, &s, &err, path), RT_OK);
    assert_int_equal(s.tri_count, 1);
    assert_int_equal(s.vert_count, 3);
    assert_int_equal(s.object_count, 1);
    assert_int_equal(s.objects[0].tri_count, 1);
    assert_int_equal(s.tris[0].material, -1);
    assert_int_equal(s.zero_area, 0);
    /* the object is named after the file */
    char base[1024];
    snprintf(base, sizeof base, "%s", strrchr(path, '/') + 1);
    *strrchr(base, '.') = '\0';
    assert_string_equal(s.objects[0].name, base);
    assert_non_null(s.path);
    assert_string_equal(s.path, path);
    rt_scene_free(&s);
    unlink(path);
}

static void obj_polygons_triangulated(void **state)
{
    (void)state;
    char path[1024];
    RtScene s;
    RtError err;
    /* a triangle, a quad, a pentagon and a hexagon: 1 + 2 + 3 + 4 */
    const char *text = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv -0.5 0.5 0\nv 0.5 1.5 0\n"
                       "f 1 2 3\nf 1 2 3 4\nf 1 2 3 6 4\nf 1 2 3 6 4 5\n";
    assert_int_equal(load_text(text, &s, &err, path), RT_OK);
    assert_int_equal(s.tri_count, 10);
    assert_int_equal(s.zero_area, 0);
    /* the quad covers the unit square exactly */
    assert_float_equal(tri_area(&s, 1) + tri_area(&s, 2), 1.0f, 1e-6f);
    /* every triangle keeps the polygon's winding: normal +z */
    for (uint32_t i = 0; i < s.tri_count; i++) {
        const RtTriangle *t = &s.tris[i];
        RtVec3 a = s.verts[t->v[0]].p, b = s.verts[t->v[1]].p, c = s.verts[t->v[2]].p;
        assert_true(v3_cross(v3_sub(b, a), v3_sub(c, a)).z > 0.0f);
    }
    rt_scene_free(&s);
    unlink(path);
}

static void obj_concave_polygon_ear_clipped(void **state)
{
    (void)state;
    char path[1024];
    RtScene s;
    RtError err;
    /* An L shape (area 3) listed from the reflex corner's neighbour, so a
     * fan from vertex 1 would cover area outside it (and flip a triangle).
     * Ear clipping gives triangles whose areas add up to the polygon's. */
    const char *text = "v 1 2 0\nv 0 2 0\nv 0 0 0\nv 2 0 0\nv 2 1 0\nv 1 1 0\nf 1 2 3 4 5 6\n";
    assert_int_equal(load_text(text, &s, &err, path), RT_OK);
    assert_int_equal(s.tri_count, 4);
    float sum = 0.0f;
    for (uint32_t i = 0; i < s.tri_count; i++) {
        sum += tri_area(&s, i);
        const RtTriangle *t = &s.tris[i];
        RtVec3 a = s.verts[t->v[0]].p, b = s.verts[t->v[1]].p, c = s.verts[t->v[2]].p;
        assert_true(v3_cross(v3_sub(b, a), v3_sub(c, a)).z > 0.0f); /* same winding, none flipped */
    }
    assert_float_equal(sum, 3.0f, 1e-5f);
    rt_scene_free(&s);
    unlink(path);
}

/* Signed area (z component) of triangle i, and of the polygon. */
static double tri_signed_area_z(const RtScene *s, uint32_t i)
{
    const RtTriangle *t = &s->tris[i];
    RtVec3 a = s->verts[t->v[0]].p, b = s->verts[t->v[1]].p, c = s->verts[t->v[2]].p;
    return 0.5 * ((double)(b.x - a.x) * (c.y - a.y) - (double)(b.y - a.y) * (c.x - a.x));
}

/* A ring (annulus) as one polygon: the outer circle counter-clockwise, a
 * bridge to the inner circle, the inner circle clockwise, and back. Fanned
 * it became a disc; ear clipped it keeps its hole, for 3 corners a side to
 * 1000 (more than the old 32-corner limit). */
static void obj_ring_polygon_of_any_size_keeps_its_hole(void **state)
{
    (void)state;
    const int sizes[] = {3, 4, 15, 16, 17, 48, 200, 1000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int n = sizes[k];
        const double ro = 1.0, ri = 0.5;
        size_t cap = (size_t)n * 2 * 64 + 256;
        char *text = malloc(cap), *p = text;
        for (int i = 0; i < n; i++) p += sprintf(p, "v %.9f %.9f 0\n", ro * cos(2 * M_PI * i / n), ro * sin(2 * M_PI * i / n));
        for (int i = 0; i < n; i++) p += sprintf(p, "v %.9f %.9f 0\n", ri * cos(2 * M_PI * i / n), ri * sin(2 * M_PI * i / n));
        p += sprintf(p, "f");
        for (int i = 0; i < n; i++) p += sprintf(p, " %d", i + 1);
        p += sprintf(p, " 1 %d", n + 1);                                  /* bridge out to the inner circle */
        for (int i = n - 1; i >= 1; i--) p += sprintf(p, " %d", n + 1 + i); /* inner circle, clockwise */
        p += sprintf(p, " %d\n", n + 1);                                  /* and back over the bridge */
        char path[1024];
        RtScene s;
        RtError err;
        assert_int_equal(load_text(text, &s, &err, path), RT_OK);
        size_t corners = (size_t)n + 2 + (size_t)n;
        assert_int_equal(s.tri_count, corners - 2);
        double area = 0.5 * n * sin(2 * M_PI / n) * (ro * ro - ri * ri), sum = 0;
        for (uint32_t i = 0; i < s.tri_count; i++) {
            double a = tri_signed_area_z(&s, i);
            assert_true(a >= -1e-9); /* the winding kept, none flipped */
            sum += a;
            if (a <= 1e-9) continue; /* the bridge's two zero-area slivers */
            const RtTriangle *t = &s.tris[i];
            RtVec3 c = v3_scale(v3_add(v3_add(s.verts[t->v[0]].p, s.verts[t->v[1]].p), s.verts[t->v[2]].p), 1.0f / 3);
            /* no triangle covers the hole (the inner polygon's inradius) */
            if (v3_len(c) < ri * cos(M_PI / n) - 1e-6) fail_msg("n = %d: triangle %u lies in the hole", n, i);
        }
        if (fabs(sum - area) > 1e-5 * area + 1e-6) fail_msg("n = %d: area %.9f, expected %.9f", n, sum, area);
        rt_scene_free(&s);
        unlink(path);
        free(text);
    }
}

/* Random star-shaped polygons (one radius per angle, so concave at random
 * corners) of 3 to 2000 corners: n - 2 triangles, none flipped, areas that
 * add up to the polygon's (shoelace). */
static void obj_random_star_polygons_triangulate_to_their_area(void **state)
{
    (void)state;
    RtTestRng rng = {2024};
    for (int round = 0; round < 40; round++) {
        int n = round < 3 ? 3 + round : 3 + (int)(rt_test_rand(&rng) % (round < 30 ? 120 : 2000));
        char *text = malloc((size_t)n * 64 + 64), *p = text;
        double px[2000 + 8], py[2000 + 8];
        for (int i = 0; i < n; i++) {
            double r = 0.2 + rt_test_randf(&rng), ang = 2 * M_PI * i / n;
            px[i] = (float)(r * cos(ang));
            py[i] = (float)(r * sin(ang));
            p += sprintf(p, "v %.9g %.9g 0\n", px[i], py[i]);
        }
        p += sprintf(p, "f");
        for (int i = 0; i < n; i++) p += sprintf(p, " %d", i + 1);
        strcpy(p, "\n");
        double area = 0;
        for (int i = 0; i < n; i++) area += 0.5 * (px[i] * py[(i + 1) % n] - px[(i + 1) % n] * py[i]);
        char path[1024];
        RtScene s;
        RtError err;
        assert_int_equal(load_text(text, &s, &err, path), RT_OK);
        assert_int_equal(s.tri_count, (uint32_t)n - 2);
        double sum = 0;
        for (uint32_t i = 0; i < s.tri_count; i++) {
            double a = tri_signed_area_z(&s, i);
            if (a < -1e-7) fail_msg("n = %d: triangle %u flipped (area %g)", n, i, a);
            sum += a;
        }
        if (fabs(sum - area) > 1e-4 * area) fail_msg("n = %d: area %.9f, expected %.9f", n, sum, area);
        rt_scene_free(&s);
        unlink(path);
        free(text);
    }
}

static void obj_negative_indices_resolve(void **state)
{
    (void)state;
    char p1[1024], p2[1024];
    RtScene a, b;
    RtError err;
    const char *pos = "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0.25 0.5\nvn 0 0 1\n"
                      "v 5 5 5\nv 6 5 5\nv 5 6 5\nvt 0.75 1\nvn 0 0 -1\nf 4/2/2 5/2/2 6/2/2\nf 1/1/1 2/1/1 3/1/1\n";
    const char *neg = "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0.25 0.5\nvn 0 0 1\n"
                      "v 5 5 5\nv 6 5 5\nv 5 6 5\nvt 0.75 1\nvn 0 0 -1\nf -3/-1/-1 -2/-1/-1 -1/-1/-1\nf -6/-2/-2 -5/-2/-2 -4/-2/-2\n";
    assert_int_equal(load_text(pos, &a, &err, p1), RT_OK);
    assert_int_equal(load_text(neg, &b, &err, p2), RT_OK);
    assert_int_equal(a.tri_count, 2);
    assert_int_equal(b.tri_count, 2);
    assert_int_equal(a.vert_count, b.vert_count);
    assert_memory_equal(a.verts, b.verts, a.vert_count * sizeof *a.verts);
    assert_memory_equal(a.tris, b.tris, a.tri_count * sizeof *a.tris);
    assert_float_equal(b.verts[b.tris[0].v[0]].p.x, 5.0f, 0);
    assert_float_equal(b.verts[b.tris[0].v[0]].u, 0.75f, 0);
    assert_float_equal(b.verts[b.tris[0].v[0]].n.z, -1.0f, 0);
    rt_scene_free(&a);
    rt_scene_free(&b);
    unlink(p1);
    unlink(p2);
}

static void obj_corner_forms_give_uv_and_normal(void **state)
{
    (void)state;
    char path[1024];
    RtScene s;
    RtError err;
    const char *text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0.5 0.25\nvt 1 1\nvn 0 0 2\n"
                       "f 1/1/1 2/2/1 3/1/1\n" /* v/vt/vn (the normal is normalised) */
                       "f 1//1 2//1 3//1\n"    /* v//vn */
                       "f 1/2 2/2 3/2\n"       /* v/vt */
                       "f 1 2 3\n";            /* v */
    assert_int_equal(load_text(text, &s, &err, path), RT_OK);
    assert_int_equal(s.tri_count, 4);
    RtVertex v = s.verts[s.tris[0].v[0]];
    assert_float_equal(v.u, 0.5f, 0);
    assert_float_equal(v.v, 0.25f, 0);
    assert_float_equal(v.n.z, 1.0f, 1e-6f);
    v = s.verts[s.tris[1].v[0]];
    assert_float_equal(v.u, 0.0f, 0); /* no vt: (0, 0) */
    assert_float_equal(v.v, 0.0f, 0);
    assert_float_equal(v.n.z, 1.0f, 1e-6f);
    v = s.verts[s.tris[2].v[1]];
    assert_float_equal(v.u, 1.0f, 0);
    assert_float_equal(v.v, 1.0f, 0);
    assert_float_equal(v3_len(v.n), 1.0f, 1e-5f); /* computed */
    rt_scene_free(&s);
    unlink(path);
}

static void obj_missing_normals_are_smooth_unit(void **state)
{
    (void)state;
    char path[1024];
    RtScene s;
    RtError err;
    /* a tent: two quads meeting at a ridge, split along mirrored
     * diagonals; ridge vertices are shared, so their computed normal is
     * the (unit) average of both sides' */
    const char *text = "v 0 0 0\nv 0 0 1\nv 1 1 0\nv 1 1 1\nv 2 0 0\nv 2 0 1\n"
                       "f 1 2 4 3\nf 4 6 5 3\n";
    assert_int_equal(load_text(text, &s, &err, path), RT_OK);
    assert_int_equal(s.tri_count, 4);
    assert_int_equal(s.vert_count, 6); /* corners de-duplicated */
    for (uint32_t i = 0; i < s.vert_count; i++) {
        assert_float_equal(v3_len(s.verts[i].n), 1.0f, 1e-5f);
        assert_float_equal(s.verts[i].u, 0.0f, 0);
        assert_float_equal(s.verts[i].v, 0.0f, 0);
    }
    for (uint32_t i = 0; i < s.vert_count; i++)
        if (s.verts[i].p.x == 1.0f) { /* ridge: straight up */
            assert_float_equal(s.verts[i].n.x, 0.0f, 1e-5f);
            assert_float_equal(fabsf(s.verts[i].n.y), 1.0f, 1e-5f);
        }
    rt_scene_free(&s);
    unlink(path);
}

static void obj_corners_deduplicated(void **state)
{
    (void)state;
    char path[1024];
    RtScene s;
    RtError err;
    /* the shared edge reuses vertices when (v, vt, vn) match, not when the
     * normal differs */
    const char *text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvn 0 0 1\nvn 0 0 -1\n"
                       "f 1//1 2//1 3//1\nf 2//1 4//1 3//1\nf 2//2 4//2 3//2\n";
    assert_int_equal(load_text(text, &s, &err, path), RT_OK);
    assert_int_equal(s.tri_count, 3);
    assert_int_equal(s.vert_count, 4 + 3);
    assert_int_equal(s.tris[0].v[1], s.tris[1].v[0]);
    assert_int_not_equal(s.tris[1].v[0], s.tris[2].v[0]);
    rt_scene_free(&s);
    unlink(path);
}

static void obj_groups_make_objects(void **state)
{
    (void)state;
    char path[1024];
    RtScene s;
    RtError err;
    const char *text = "v 0 0 0\nv 1 0 0\nv 0 1 0\n"
                       "f 1 2 3\n"                  /* before any o/g: named after the file */
                       "o first\nf 1 2 3\nf 1 2 3\n" /* 2 */
                       "o second\ng part\nf 1 2 3\n" /* o then g with no face between: one object */
                       "g\nf 1 2 3\nf 1 2 3\nf 1 2 3\n"
                       "g trailing\n";              /* no faces after it: no object */
    assert_int_equal(load_text(text, &s, &err, path), RT_OK);
    assert_int_equal(s.tri_count, 7);
    assert_int_equal(s.object_count, 4);
    assert_string_equal(s.objects[1].name, "first");
    assert_string_equal(s.objects[2].name, "part");
    uint32_t counts[4] = {1, 2, 1, 3}, first = 0;
    for (uint32_t i = 0; i < 4; i++) {
        assert_int_equal(s.objects[i].first_tri, first);
        assert_int_equal(s.objects[i].tri_count, counts[i]);
        for (uint32_t t = first; t < first + counts[i]; t++) assert_int_equal(s.tris[t].object, i);
        first += counts[i];
    }
    rt_scene_free(&s);
    unlink(path);
}

static void obj_ignored_statements_warn_once(void **state)
{
    (void)state;
    char path[1024];
    RtScene s;
    RtError err;
    const char *text = "# comment\n  \t\nv 0 0 0\nv 1 0 0\nv 0 1 0\ns 1\ns off\nl 1 2\np 1\n"
                       "curv 0 1 1 2\ncurv 0 1 1 2\ncurv 0 1 1 2\nvp 0.5\nf 1 2 3\r\n";
    capture_begin();
    RtStatus st = load_text(text, &s, &err, path);
    char *log = capture_end();
    assert_int_equal(st, RT_OK);
    assert_int_equal(s.tri_count, 1);
    assert_int_equal(count_of(log, "'curv'"), 1);
    assert_int_equal(count_of(log, "'vp'"), 1);
    assert_int_equal(count_of(log, "'s'"), 0);
    assert_int_equal(count_of(log, "'l'"), 0);
    char where[1200];
    snprintf(where, sizeof where, "%s:10:", path); /* the first curv */
    rt_test_assert_contains(log, where);
    free(log);
    rt_scene_free(&s);
    unlink(path);
}

static void obj_vertex_extras_and_floats(void **state)
{
    (void)state;
    char path[1024];
    RtScene s;
    RtError err;
    /* w and vertex colours are accepted and ignored; number forms parse
     * to what strtof gives */
    const char *nums[] = {"1e5", "-.5", "+3.", "1E-3", "0.000001234", "3.14159265358979323846264338327950288",
                          "-0", "123456789012345678901234567890", "1.17549435e-38", "3.4028234e38",
                          "0.1", "2.5e+1", "7", "-12.75e-2"};
    size_t n = sizeof nums / sizeof nums[0];
    char text[4096] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "v %s 0 0%s\n", nums[i],
                 i % 3 == 0 ? " 1" : i % 3 == 1 ? " 0.5 0.25 1" : "");
    strcat(text, "v 0 1 0\nv 0 0 1\n");
    for (size_t i = 0; i < n; i++) snprintf(text + strlen(text), sizeof text - strlen(text), "f %zu -2 -1\n", i + 1);
    assert_int_equal(load_text(text, &s, &err, path), RT_OK);
    assert_int_equal(s.tri_count, n);
    for (size_t i = 0; i < n; i++) {
        float expect = strtof(nums[i], NULL);
        float got = s.verts[s.tris[i].v[0]].p.x;
        if (got != expect) fail_msg("'%s' parsed as %.9g, strtof gives %.9g", nums[i], got, expect);
    }
    rt_scene_free(&s);
    unlink(path);
}

static void obj_random_floats_match_strtof(void **state)
{
    (void)state;
    char path[1024];
    RtScene s;
    RtError err;
    RtTestRng rng = {0x1234567};
    enum { N = 3000 };
    char *text = malloc(N * 80 + 64), *p = text;
    float *want = malloc(N * sizeof *want);
    for (int i = 0; i < N; i++) {
        float x = (rt_test_randf(&rng) - 0.5f) * powf(10.0f, (float)((int)(rt_test_rand(&rng) % 24) - 12));
        char num[40];
        snprintf(num, sizeof num, (i & 1) ? "%.9g" : "%.6f", x);
        want[i] = strtof(num, NULL);
        p += sprintf(p, "v %s 0 0\n", num);
    }
    p += sprintf(p, "v 0 1 0\nv 0 0 1\n");
    for (int i = 0; i < N; i++) p += sprintf(p, "f %d -2 -1\n", i + 1);
    assert_int_equal(load_text(text, &s, &err, path), RT_OK);
    for (int i = 0; i < N; i++) assert_true(s.verts[s.tris[i].v[0]].p.x == want[i]);
    free(text);
    free(want);
    rt_scene_free(&s);
    unlink(path);
}

static void obj_materials_parsed(void **state)
{
    (void)state;
    char dir[1024], path[1100];
    make_dir(dir);
    write_file(dir, "m.mtl",
               "# materials\nnewmtl plain\nKd 0.1 0.2 0.3\nKs 0.9 0.8 0.7\nNs 32\nillum 2\n\n"
               "newmtl mirror\nKd 0.5\nKs 0.25 0.75 0.5\nillum 3\nNi 1.5\nKe 1 2 3\nKa 0.1 0.1 0.1\n"
               "newmtl glass\nTr 0.25\nillum 7\nKs 0.4 0.4 0.4\nmap_Bump bump.png\n"
               "newmtl faded\nd -halo 0.6\nillum 5\n");
    write_file(dir, "a.obj",
               "mtllib m.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\n"
               "usemtl mirror\nf 1 2 3\nusemtl plain\nf 1 2 3\nusemtl glass\nf 1 2 3\nusemtl faded\nf 1 2 3\n");
    snprintf(path, sizeof path, "%s/a.obj", dir);
    RtScene s;
    RtError err;
    assert_int_equal(rt_scene_load(path, &s, &err), RT_OK);
    assert_int_equal(s.mat_count, 4);
    const RtMaterial *plain = &s.mats[s.tris[1].material], *mirror = &s.mats[s.tris[0].material];
    const RtMaterial *glass = &s.mats[s.tris[2].material], *faded = &s.mats[s.tris[3].material];
    assert_string_equal(plain->name, "plain");
    assert_float_equal(plain->kd.y, 0.2f, 0);
    assert_float_equal(plain->ks.x, 0.9f, 0);
    assert_float_equal(plain->ns, 32.0f, 0);
    assert_int_equal(plain->illum, 2);
    assert_float_equal(plain->reflect, 0.0f, 0); /* illum 2: no mirror */
    assert_int_equal(plain->map_kd, -1);
    assert_string_equal(mirror->name, "mirror");
    assert_float_equal(mirror->kd.z, 0.5f, 0); /* one value = grey */
    assert_float_equal(mirror->reflect, 0.75f, 0);
    assert_float_equal(mirror->ni, 1.5f, 0);
    assert_float_equal(mirror->ke.z, 3.0f, 0);
    assert_float_equal(mirror->d, 1.0f, 0);
    assert_float_equal(glass->d, 0.75f, 0); /* Tr = 1 - d */
    assert_float_equal(glass->reflect, 0.4f, 0);
    assert_float_equal(faded->d, 0.6f, 0);
    assert_float_equal(faded->reflect, 0.0f, 0); /* illum 5 but Ks = 0 */
    rt_scene_free(&s);
    remove_dir(dir);
}

static void obj_mtllib_relative_backslash_and_textures(void **state)
{
    (void)state;
    char dir[1024], path[1100];
    make_dir(dir);
    /* the OBJ names its MTL with a backslash, the MTL names textures
     * relative to its own folder, with options and spaces in the name */
    write_png(dir, "mats/tex/brick wall.png", 4, 2, 200, 100, 50);
    write_png(dir, "mats/tex/alpha.png", 1, 1, 255, 255, 255);
    write_file(dir, "mats/lib.mtl",
               "newmtl brick\nKd 1 1 1\nmap_Kd -bm 1 -s 2 2 1 -o 0.5 -clamp on tex\\brick wall.png  \n"
               "map_d -imfchan m tex/alpha.png\n"
               "newmtl brick2\nmap_Kd tex/brick wall.png\n");
    write_file(dir, "scenes/x.obj",
               "usemtl brick2\nmtllib ..\\mats\\lib.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\n"
               "f 1/1 2/1 3/1\nusemtl brick\nf 1/1 2/1 3/1\n");
    snprintf(path, sizeof path, "%s/scenes/x.obj", dir);
    RtScene s;
    RtError err;
    assert_int_equal(rt_scene_load(path, &s, &err), RT_OK);
    assert_int_equal(s.mat_count, 2);
    assert_int_equal(s.tex_count, 2); /* the same file twice is loaded once */
    const RtMaterial *b2 = &s.mats[s.tris[0].material], *b = &s.mats[s.tris[1].material];
    assert_string_equal(b2->name, "brick2"); /* usemtl before mtllib works */
    assert_string_equal(b->name, "brick");
    assert_int_equal(b->map_kd, b2->map_kd);
    assert_true(b->map_kd >= 0 && b->map_d >= 0 && b->map_d != b->map_kd);
    const RtTexture *t = &s.texs[b->map_kd];
    assert_int_equal(t->w, 4);
    assert_int_equal(t->h, 2);
    assert_int_equal(t->rgba[0], 200);
    assert_int_equal(t->rgba[1], 100);
    assert_int_equal(t->rgba[2], 50);
    assert_int_equal(t->rgba[3], 255);
    assert_non_null(strstr(t->path, "brick wall.png"));
    rt_scene_free(&s);
    remove_dir(dir);
}

/* Exporters escape blanks in names with a backslash: "mtllib my\ lib.mtl"
 * is one file "my lib.mtl", also among several names, and map_Kd names
 * may be escaped too. */
static void obj_mtllib_backslash_escaped_spaces(void **state)
{
    (void)state;
    char dir[1024], path[1100];
    make_dir(dir);
    write_png(dir, "my tex.png", 2, 1, 10, 20, 30);
    write_file(dir, "my lib.mtl", "newmtl a\nKd 0.5 0.5 0.5\nmap_Kd my\\ tex.png\n");
    write_file(dir, "other lib.mtl", "newmtl b\nKd 1 0 0\n");
    write_file(dir, "x.obj", "mtllib my\\ lib.mtl other\\ lib.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\n"
                             "usemtl a\nf 1 2 3\nusemtl b\nf 1 3 2\n");
    write_file(dir, "y.obj", "mtllib my\\ lib.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nusemtl a\nf 1 2 3\n");
    const char *names[] = {"x.obj", "y.obj"};
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        RtScene s;
        RtError err;
        capture_begin();
        RtStatus st = rt_scene_load(path, &s, &err);
        char *log = capture_end();
        assert_int_equal(st, RT_OK);
        if (strstr(log, "mtllib")) fail_msg("%s: warned: %s", names[k], log);
        free(log);
        assert_int_equal(s.mat_count, k == 0 ? 2 : 1);
        const RtMaterial *a = &s.mats[s.tris[0].material];
        assert_string_equal(a->name, "a");
        assert_true(a->map_kd >= 0);
        assert_non_null(strstr(s.texs[a->map_kd].path, "my tex.png"));
        if (k == 0) assert_string_equal(s.mats[s.tris[1].material].name, "b");
        rt_scene_free(&s);
    }
    remove_dir(dir);
}

/* Texture options of the MTL spec (and -colorspace, common in exported
 * files) before the file name are skipped with their arguments; the name
 * is what follows them, never an option's value. */
static void obj_map_kd_options_before_the_file_name(void **state)
{
    (void)state;
    char dir[1024], path[1100];
    make_dir(dir);
    write_png(dir, "t.png", 3, 1, 90, 80, 70);
    write_png(dir, "with space.png", 5, 1, 1, 2, 3);
    const char *lines[] = {
        "map_Kd -colorspace sRGB t.png", "map_Kd -bm 1 t.png", "map_Kd -o 0.5 0.5 0 t.png",
        "map_Kd -o 0.5 t.png", "map_Kd -s 2 2 t.png", "map_Kd -s 1 1 1 -t 0 0 0 t.png",
        "map_Kd -clamp on t.png", "map_Kd -blendu off -blendv on t.png", "map_Kd -boost 2.5 t.png",
        "map_Kd -mm 0 1 t.png", "map_Kd -texres 512 t.png", "map_Kd -cc on -imfchan l t.png",
        "map_Kd -type sphere t.png", "map_Kd -colorspace linear -bm 0.5 -clamp off -o 1 2 3 -s 4 5 6 t.png",
        "map_Kd -futureopt 1 2 t.png", "map_Kd -futureword abc t.png", "map_Kd\t-clamp\ton\tt.png",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        char mtl[512];
        snprintf(mtl, sizeof mtl, "newmtl m\nKd 1 1 1\n%s\n", lines[i]);
        write_file(dir, "m.mtl", mtl);
        write_file(dir, "x.obj", "mtllib m.mtl\nusemtl m\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
        snprintf(path, sizeof path, "%s/x.obj", dir);
        RtScene s;
        RtError err;
        capture_begin();
        RtStatus st = rt_scene_load(path, &s, &err);
        free(capture_end());
        if (st != RT_OK) fail_msg("'%s': %s", lines[i], err.msg);
        const RtMaterial *m = &s.mats[s.tris[0].material];
        if (m->map_kd < 0) fail_msg("'%s': no texture", lines[i]);
        assert_int_equal(s.texs[m->map_kd].w, 3);
        rt_scene_free(&s);
    }
    /* the file name keeps its blanks after the options */
    write_file(dir, "m.mtl", "newmtl m\nmap_Kd -colorspace sRGB -clamp on with space.png\n");
    snprintf(path, sizeof path, "%s/x.obj", dir);
    RtScene s;
    RtError err;
    assert_int_equal(rt_scene_load(path, &s, &err), RT_OK);
    assert_int_equal(s.texs[s.mats[0].map_kd].w, 5);
    rt_scene_free(&s);
    /* an option with no file name after it is an error naming both */
    write_file(dir, "m.mtl", "newmtl m\nmap_Kd -colorspace sRGB\n");
    assert_int_equal(rt_scene_load(path, &s, &err), RT_ERR_PARSE);
    rt_test_assert_contains(err.msg, "m.mtl:2: MTL: expected a texture file name after 'map_Kd -colorspace sRGB'");
    remove_dir(dir);
}

static void obj_missing_texture_and_mtl_warn_and_continue(void **state)
{
    (void)state;
    char dir[1024], path[1100];
    make_dir(dir);
    write_file(dir, "m.mtl", "newmtl a\nKd 0.25 0.5 1\nmap_Kd nothere.jpg\n"
                             "newmtl b\nmap_Kd notimage.png\n");
    write_file(dir, "notimage.png", "this is not a PNG\n");
    write_file(dir, "a.obj", "mtllib m.mtl\nmtllib absent.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\n"
                             "usemtl a\nf 1 2 3\nusemtl b\nf 1 2 3\nusemtl nosuch\nf 1 2 3\n");
    snprintf(path, sizeof path, "%s/a.obj", dir);
    RtScene s;
    RtError err;
    capture_begin();
    RtStatus st = rt_scene_load(path, &s, &err);
    char *log = capture_end();
    assert_int_equal(st, RT_OK);
    assert_int_equal(s.tri_count, 3);
    assert_int_equal(s.tex_count, 0);
    const RtMaterial *a = &s.mats[s.tris[0].material];
    assert_int_equal(a->map_kd, -1); /* flat Kd kept */
    assert_float_equal(a->kd.z, 1.0f, 0);
    assert_int_equal(s.mats[s.tris[1].material].map_kd, -1);
    assert_int_equal(s.tris[2].material, -1); /* unknown name: default */
    char where[1200];
    snprintf(where, sizeof where, "%s/m.mtl:3: map_Kd", dir);
    rt_test_assert_contains(log, where);
    rt_test_assert_contains(log, "nothere.jpg");
    rt_test_assert_contains(log, "notimage.png");
    snprintf(where, sizeof where, "%s:2: mtllib", path);
    rt_test_assert_contains(log, where);
    rt_test_assert_contains(log, "absent.mtl");
    rt_test_assert_contains(log, "usemtl nosuch");
    free(log);
    rt_scene_free(&s);
    remove_dir(dir);
}

static void obj_unknown_material_warns_once(void **state)
{
    (void)state;
    char path[1024];
    RtScene s;
    RtError err;
    const char *text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nusemtl ghost\nf 1 2 3\nusemtl ghost\nf 1 2 3\n";
    capture_begin();
    RtStatus st = load_text(text, &s, &err, path);
    char *log = capture_end();
    assert_int_equal(st, RT_OK);
    assert_int_equal(s.tris[0].material, -1);
    assert_int_equal(s.tris[1].material, -1);
    assert_int_equal(count_of(log, "usemtl ghost"), 1);
    char where[1200];
    snprintf(where, sizeof where, "%s:4:", path);
    rt_test_assert_contains(log, where);
    free(log);
    rt_scene_free(&s);
    unlink(path);
}

static void obj_appends_and_rolls_back(void **state)
{
    (void)state;
    char p1[1024], p2[1024];
    RtScene s;
    RtError err;
    rt_scene_init(&s);
    RT_TEST_TMP_TEXT(".obj", k_tri, p1);
    assert_int_equal(rt_obj_load(p1, &s, &err), RT_OK);
    assert_int_equal(rt_obj_load(p1, &s, &err), RT_OK);
    assert_int_equal(s.tri_count, 2);
    assert_int_equal(s.vert_count, 6);
    assert_int_equal(s.object_count, 2);
    assert_int_equal(s.tris[1].v[0], 3); /* indices of the second file are offset */
    assert_int_equal(s.tris[1].object, 1);
    /* a failing file leaves the scene as it was */
    RT_TEST_TMP_TEXT(".obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\no x\nf 1 2 3\nf 1 2 9\n", p2);
    assert_int_equal(rt_obj_load(p2, &s, &err), RT_ERR_PARSE);
    assert_int_equal(s.tri_count, 2);
    assert_int_equal(s.vert_count, 6);
    assert_int_equal(s.object_count, 2);
    rt_scene_free(&s);
    unlink(p1);
    unlink(p2);
}

static void obj_zero_area_triangles_kept(void **state)
{
    (void)state;
    char path[1024];
    RtScene s;
    RtError err;
    const char *text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 2 0 0\nf 1 2 3\nf 1 2 4\nf 1 1 1\n";
    assert_int_equal(load_text(text, &s, &err, path), RT_OK);
    assert_int_equal(s.tri_count, 3);
    assert_int_equal(s.zero_area, 2);
    rt_scene_free(&s);
    unlink(path);
}

/* ---- bad input ------------------------------------------------------------ */

static void obj_truncated_mid_line(void **state)
{
    (void)state;
    expect_error("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2", RT_ERR_PARSE, 4, "expected at least 3 vertices after 'f'");
    expect_error("v 0 0 0\nv 1 0", RT_ERR_PARSE, 2, "expected 3 finite numbers after 'v'");
    expect_error("v 0 0 0\nv 1 0 0\nv 0 1 0\nvn 0 0 1\nf 1//1 2//1 3/", RT_ERR_PARSE, 5,
                 "expected a texture coordinate index");
    expect_error("v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nf 1/1/ 2/1/1 3/1/1\n", RT_ERR_PARSE, 5, "expected a normal index");
    expect_error("v 0 0 0\nv 1 0 0\nv 0.5e", RT_ERR_PARSE, 3, "expected 3 finite numbers after 'v'");
    expect_error("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3x\n", RT_ERR_PARSE, 4, "expected a face vertex");
    expect_error("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nv 1 2 3 4 5 6 7 8\n", RT_ERR_PARSE, 5, "expected end of line");
}

static void obj_binary_garbage(void **state)
{
    (void)state;
    /* random bytes of sizes 1..4 KB: an error (never a crash), naming the
     * file; a NUL or a non-keyword byte is reported as binary data */
    RtTestRng rng = {42};
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + rt_test_rand(&rng) % 4096;
        uint8_t *buf = malloc(n);
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)rt_test_rand(&rng);
        char path[1024];
        rt_test_write_tmp(".obj", buf, n, path);
        RtScene s;
        RtError err = {0};
        RtStatus st = rt_scene_load(path, &s, &err);
        assert_int_not_equal(st, RT_OK);
        rt_test_assert_contains(err.msg, path);
        assert_null(s.tris);
        free(buf);
        unlink(path);
    }
    /* text that is plainly not OBJ */
    expect_error("v 0 0 0\n1 2 3\n", RT_ERR_PARSE, 2, "expected a statement");
}

static void obj_png_renamed(void **state)
{
    (void)state;
    char dir[1024], path[1100];
    make_dir(dir);
    write_png(dir, "img.obj", 8, 8, 1, 2, 3);
    snprintf(path, sizeof path, "%s/img.obj", dir);
    RtScene s;
    RtError err;
    assert_int_equal(rt_scene_load(path, &s, &err), RT_ERR_PARSE);
    char where[1200];
    snprintf(where, sizeof where, "%s:1: OBJ: ", path);
    rt_test_assert_contains(err.msg, where);
    rt_test_assert_contains(err.msg, "binary");
    remove_dir(dir);
}

static void obj_bad_indices(void **state)
{
    (void)state;
    const char *v = "v 0 0 0\nv 1 0 0\nv 0 1 0\n";
    char text[256];
    snprintf(text, sizeof text, "%sf 0 1 2\n", v);
    expect_error(text, RT_ERR_PARSE, 4, "expected a vertex index in 1..3 or -1..-3");
    snprintf(text, sizeof text, "%sf 1 2 99\n", v);
    expect_error(text, RT_ERR_PARSE, 4, "got 99");
    snprintf(text, sizeof text, "%sf 1 2 -4\n", v);
    expect_error(text, RT_ERR_PARSE, 4, "got -4");
    snprintf(text, sizeof text, "%sf 1/1 2/1 3/1\n", v);
    expect_error(text, RT_ERR_PARSE, 4, "no texture coordinate is defined");
    snprintf(text, sizeof text, "%svn 0 0 1\nf 1//1 2//2 3//1\n", v);
    expect_error(text, RT_ERR_PARSE, 5, "expected a normal index in 1..1");
    expect_error("f 1 2 3\nv 0 0 0\nv 1 0 0\nv 0 1 0\n", RT_ERR_PARSE, 1, "no vertex is defined");
    snprintf(text, sizeof text, "%sf 1 2 99999999999999999999\n", v);
    expect_error(text, RT_ERR_PARSE, 4, "expected a vertex index");
}

static void obj_non_finite_coordinates(void **state)
{
    (void)state;
    expect_error("v nan 0 0\n", RT_ERR_PARSE, 1, "expected 3 finite numbers after 'v' (x y z), got 'nan'");
    expect_error("v 0 0 0\nv inf 1 1\n", RT_ERR_PARSE, 2, "got 'inf'");
    expect_error("v 0 0 0\nv 1e39 1 1\n", RT_ERR_PARSE, 2, "finite");
    expect_error("v 0 0 0\nvn 0 -NaN 1\n", RT_ERR_PARSE, 2, "after 'vn'");
    expect_error("v 0 0 0\nvt 0x1p3 1\n", RT_ERR_PARSE, 2, "after 'vt'");
}

static void obj_empty_scene(void **state)
{
    (void)state;
    expect_error("", RT_ERR_EMPTY, 0, "empty");
    expect_error("# only a comment\nv 0 0 0\nv 1 0 0\nv 0 1 0\n", RT_ERR_EMPTY, 0, "no triangles");
    expect_error("v 0 0 0\nv 1 0 0\nf 1 2 2\n", RT_ERR_EMPTY, 0, "zero area");
}

static void obj_unreadable_paths(void **state)
{
    (void)state;
    RtScene s;
    RtError err;
    assert_int_equal(rt_scene_load("/nonexistent/dir/model.obj", &s, &err), RT_ERR_IO);
    rt_test_assert_contains(err.msg, "/nonexistent/dir/model.obj");
    rt_test_assert_contains(err.msg, "cannot open");
    char dir[1024], path[1100];
    make_dir(dir);
    snprintf(path, sizeof path, "%s/folder.obj", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(rt_scene_load(path, &s, &err), RT_ERR_IO);
    rt_test_assert_contains(err.msg, path);
    rt_test_assert_contains(err.msg, "directory");
    remove_dir(dir);
}

static void obj_malformed_mtl_is_an_error(void **state)
{
    (void)state;
    char dir[1024], path[1100], where[1200];
    make_dir(dir);
    write_file(dir, "m.mtl", "newmtl a\nKd 1 1 1\nKs 1 nan 1\n");
    write_file(dir, "a.obj", "mtllib m.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    snprintf(path, sizeof path, "%s/a.obj", dir);
    RtScene s;
    RtError err;
    assert_int_equal(rt_scene_load(path, &s, &err), RT_ERR_PARSE);
    snprintf(where, sizeof where, "%s/m.mtl:3: MTL: expected 3 finite numbers after 'Ks'", dir);
    rt_test_assert_contains(err.msg, where);
    write_file(dir, "m.mtl", "Kd 1 1 1\n");
    assert_int_equal(rt_scene_load(path, &s, &err), RT_ERR_PARSE);
    rt_test_assert_contains(err.msg, "m.mtl:1: MTL: expected 'newmtl NAME' before 'Kd'");
    write_file(dir, "m.mtl", "newmtl a\nillum x\n");
    assert_int_equal(rt_scene_load(path, &s, &err), RT_ERR_PARSE);
    rt_test_assert_contains(err.msg, "m.mtl:2: MTL: expected an illumination model");
    remove_dir(dir);
}

/* 10 MB on one line: a comment, an unknown keyword, a run of digits and a
 * huge polygon; each must finish quickly, without a crash. */
static void obj_overlong_lines(void **state)
{
    (void)state;
    const size_t big = 10u << 20;
    char *text = malloc(big + 256);
    char path[1024];
    RtScene s;
    RtError err;
    double t0 = rt_now_ms();

    text[0] = '#';
    memset(text + 1, 'x', big);
    strcpy(text + 1 + big, "\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    assert_int_equal(load_text(text, &s, &err, path), RT_OK);
    assert_int_equal(s.tri_count, 1);
    rt_scene_free(&s);
    unlink(path);

    memset(text, 'k', big);
    strcpy(text + big, " 1\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    capture_begin();
    RtStatus st = load_text(text, &s, &err, path);
    free(capture_end());
    assert_int_equal(st, RT_OK);
    rt_scene_free(&s);
    unlink(path);

    strcpy(text, "v 0 0 1");
    memset(text + 7, '9', big);
    strcpy(text + 7 + big, "\n");
    assert_int_equal(load_text(text, &s, &err, path), RT_ERR_PARSE);
    rt_test_assert_contains(err.msg, ":1: OBJ: expected 3 finite numbers");
    unlink(path);

    /* a polygon of millions of corners around a circle: fanned, not
     * ear-clipped */
    char *p = text;
    const int n = 64;
    for (int i = 0; i < n; i++)
        p += sprintf(p, "v %.6f %.6f 0\n", cos(2 * M_PI * i / n), sin(2 * M_PI * i / n));
    p += sprintf(p, "f");
    size_t corners = 0;
    while ((size_t)(p - text) < big - 8) {
        p += sprintf(p, " %d", (int)(corners % n) + 1);
        corners++;
    }
    strcpy(p, "\n");
    assert_int_equal(load_text(text, &s, &err, path), RT_OK);
    assert_int_equal(s.tri_count, corners - 2);
    rt_scene_free(&s);
    unlink(path);
    free(text);
    print_message("overlong lines: %.0f ms for 4 x 10 MB\n", rt_now_ms() - t0);
}

/* ---- real scenes ------------------------------------------------------------ */

static void obj_sponza_loads(void **state)
{
    (void)state;
    char buf[1024];
    const char *path = rt_test_asset("sponza/sponza.obj", buf);
    if (!path) skip();
    RtScene s;
    RtError err;
    double t0 = rt_now_ms();
    RtStatus st = rt_scene_load(path, &s, &err);
    double ms = rt_now_ms() - t0;
    if (st != RT_OK) fail_msg("%s", err.msg);
    print_message("sponza: %u triangles, %u vertices, %u materials, %u textures, %u objects in %.0f ms\n",
                  s.tri_count, s.vert_count, s.mat_count, s.tex_count, s.object_count, ms);
    assert_int_equal(s.tri_count, 262205);
    assert_true(s.tex_count >= 19);
    assert_true(s.vert_count < s.tri_count); /* corners de-duplicated */
    assert_true(s.object_count > 1);
    uint32_t textured = 0;
    for (uint32_t i = 0; i < s.tri_count; i++)
        textured += s.tris[i].material >= 0 && s.mats[s.tris[i].material].map_kd >= 0;
    assert_true(textured > s.tri_count / 2);
    rt_scene_free(&s);
}

static void obj_bunny_and_cornell_box_load(void **state)
{
    (void)state;
    char buf[1024];
    const char *path = rt_test_asset("models/bunny.obj", buf);
    if (!path) skip();
    RtScene s;
    RtError err;
    if (rt_scene_load(path, &s, &err) != RT_OK) fail_msg("%s", err.msg);
    assert_int_equal(s.tri_count, 69451);
    for (uint32_t i = 0; i < s.vert_count; i += 97) assert_float_equal(v3_len(s.verts[i].n), 1.0f, 1e-4f);
    rt_scene_free(&s);
    path = rt_test_asset("models/cornell_box.obj", buf);
    if (!path) skip();
    capture_begin(); /* its MTL is not shipped: warned */
    RtStatus st = rt_scene_load(path, &s, &err);
    free(capture_end());
    if (st != RT_OK) fail_msg("%s", err.msg);
    assert_int_equal(s.tri_count, 36); /* 18 quads */
    assert_true(s.object_count >= 6);
    rt_scene_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(obj_single_triangle),
        cmocka_unit_test(obj_polygons_triangulated),
        cmocka_unit_test(obj_concave_polygon_ear_clipped),
        cmocka_unit_test(obj_ring_polygon_of_any_size_keeps_its_hole),
        cmocka_unit_test(obj_random_star_polygons_triangulate_to_their_area),
        cmocka_unit_test(obj_mtllib_backslash_escaped_spaces),
        cmocka_unit_test(obj_map_kd_options_before_the_file_name),
        cmocka_unit_test(obj_negative_indices_resolve),
        cmocka_unit_test(obj_corner_forms_give_uv_and_normal),
        cmocka_unit_test(obj_missing_normals_are_smooth_unit),
        cmocka_unit_test(obj_corners_deduplicated),
        cmocka_unit_test(obj_groups_make_objects),
        cmocka_unit_test(obj_ignored_statements_warn_once),
        cmocka_unit_test(obj_vertex_extras_and_floats),
        cmocka_unit_test(obj_random_floats_match_strtof),
        cmocka_unit_test(obj_materials_parsed),
        cmocka_unit_test(obj_mtllib_relative_backslash_and_textures),
        cmocka_unit_test(obj_missing_texture_and_mtl_warn_and_continue),
        cmocka_unit_test(obj_unknown_material_warns_once),
        cmocka_unit_test(obj_appends_and_rolls_back),
        cmocka_unit_test(obj_zero_area_triangles_kept),
        cmocka_unit_test(obj_truncated_mid_line),
        cmocka_unit_test(obj_binary_garbage),
        cmocka_unit_test(obj_png_renamed),
        cmocka_unit_test(obj_bad_indices),
        cmocka_unit_test(obj_non_finite_coordinates),
        cmocka_unit_test(obj_empty_scene),
        cmocka_unit_test(obj_unreadable_paths),
        cmocka_unit_test(obj_malformed_mtl_is_an_error),
        cmocka_unit_test(obj_overlong_lines),
        cmocka_unit_test(obj_sponza_loads),
        cmocka_unit_test(obj_bunny_and_cornell_box_load),
    };
    rt_log_set_level(RT_LOG_WARN); /* keep the loaders' timing lines out of the test log */
    return cmocka_run_group_tests_name("obj", tests, NULL, NULL);
}
