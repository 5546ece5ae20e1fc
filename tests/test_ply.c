/* test_ply.c — the PLY loader: ascii and both binary byte orders give the
 * same scene; extra properties and elements are skipped; each class of bad
 * input is one clear error naming the header line or the element and
 * record, never a crash, a hang or a huge allocation. Binary files are made
 * here, byte by byte. */
#include "test_util.h"

#include <fcntl.h>
#include <math.h>

#include "core/image.h"
#include "scene/load.h"
#include "scene/scene.h"

/* ---- a growable byte buffer and PLY writers ------------------------------ */

typedef struct Buf {
    uint8_t *p;
    size_t n, cap;
} Buf;

static void put_bytes(Buf *b, const void *src, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
    b->p[b->n] = 0; /* keeps text buffers printable */
}
static void put_text(Buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    put_bytes(b, tmp, (size_t)n);
}
/* An n-byte value in the file's byte order, whatever the host's. */
static void put_uint(Buf *b, uint64_t v, int n, int big_endian)
{
    uint8_t out[8];
    for (int i = 0; i < n; i++) out[big_endian ? n - 1 - i : i] = (uint8_t)(v >> (8 * i));
    put_bytes(b, out, (size_t)n);
}
static void put_f32(Buf *b, float f, int be)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    put_uint(b, u, 4, be);
}
static void put_f64(Buf *b, double d, int be)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    put_uint(b, u, 8, be);
}

typedef struct Mesh {
    int nv, nf;
    float p[64][3], n[64][3], uv[64][2];
    int fsize[32], idx[32][6];
} Mesh;

static void random_mesh(Mesh *m, uint64_t seed)
{
    RtTestRng rng = {seed};
    m->nv = 40;
    m->nf = 20;
    for (int i = 0; i < m->nv; i++)
        for (int k = 0; k < 3; k++) {
            m->p[i][k] = rt_test_randf(&rng) * 10.0f - 5.0f;
            m->n[i][k] = rt_test_randf(&rng) - 0.5f;
            if (k < 2) m->uv[i][k] = rt_test_randf(&rng);
        }
    for (int f = 0; f < m->nf; f++) {
        m->fsize[f] = 3 + (int)(rt_test_rand(&rng) % 4); /* triangles to hexagons */
        for (int k = 0; k < m->fsize[f]; k++) m->idx[f][k] = (int)(rt_test_rand(&rng) % (uint32_t)m->nv);
    }
}

enum { PLY_ASCII, PLY_LE, PLY_BE };

/* The mesh with extra properties (a double z, a colour, a face flag and a
 * texcoord list) and an extra element between vertices and faces, so that
 * skipping by size and by line is exercised. */
static void write_mesh(Buf *b, const Mesh *m, int fmt)
{
    static const char *fmts[] = {"ascii", "binary_little_endian", "binary_big_endian"};
    int be = fmt == PLY_BE;
    put_text(b, "ply\nformat %s 1.0\ncomment made by test_ply\nobj_info nothing\n", fmts[fmt]);
    put_text(b, "element vertex %d\nproperty float x\nproperty float y\nproperty double z\n", m->nv);
    put_text(b, "property float nx\nproperty float ny\nproperty float nz\nproperty uchar red\n");
    put_text(b, "property float s\nproperty float t\n");
    put_text(b, "element edge 2\nproperty int vertex1\nproperty list uchar short weights\n");
    put_text(b, "element face %d\nproperty uchar flags\nproperty list uchar int vertex_indices\n", m->nf);
    put_text(b, "property list uchar float texcoord\nend_header\n");
    for (int i = 0; i < m->nv; i++) {
        const float *p = m->p[i], *n = m->n[i], *uv = m->uv[i];
        if (fmt == PLY_ASCII) {
            put_text(b, "%.9g %.9g %.17g %.9g %.9g %.9g 255 %.9g %.9g\n", p[0], p[1], (double)p[2], n[0], n[1],
                     n[2], uv[0], uv[1]);
            continue;
        }
        put_f32(b, p[0], be);
        put_f32(b, p[1], be);
        put_f64(b, p[2], be);
        for (int k = 0; k < 3; k++) put_f32(b, n[k], be);
        put_uint(b, 255, 1, be);
        put_f32(b, uv[0], be);
        put_f32(b, uv[1], be);
    }
    for (int e = 0; e < 2; e++) {
        if (fmt == PLY_ASCII) {
            put_text(b, "%d 3 1 -2 3\n", e);
            continue;
        }
        put_uint(b, (uint64_t)e, 4, be);
        put_uint(b, 3, 1, be);
        for (int k = 0; k < 3; k++) put_uint(b, (uint16_t)(k - 1), 2, be);
    }
    for (int f = 0; f < m->nf; f++) {
        if (fmt == PLY_ASCII) {
            put_text(b, "7 %d", m->fsize[f]);
            for (int k = 0; k < m->fsize[f]; k++) put_text(b, " %d", m->idx[f][k]);
            put_text(b, " 2 0.5 0.25\n");
            continue;
        }
        put_uint(b, 7, 1, be);
        put_uint(b, (uint64_t)m->fsize[f], 1, be);
        for (int k = 0; k < m->fsize[f]; k++) put_uint(b, (uint64_t)m->idx[f][k], 4, be);
        put_uint(b, 2, 1, be);
        put_f32(b, 0.5f, be);
        put_f32(b, 0.25f, be);
    }
}

static RtStatus load_bytes(const void *data, size_t n, RtScene *s, RtError *err, char *path)
{
    rt_test_write_tmp(".ply", data, n, path);
    memset(err, 0, sizeof *err);
    return rt_scene_load(path, s, err);
}

/* Bad input: status, and a message with the file (":line:" when line > 0)
 * and the expectation. */
static void expect_error_bytes(const void *data, size_t n, RtStatus status, int line, const char *expect)
{
    char path[1024], where[1200];
    RtScene s;
    RtError err;
    RtStatus st = load_bytes(data, n, &s, &err, path);
    if (st != status) fail_msg("status %s (%s), expected %s", rt_status_name(st), err.msg, rt_status_name(status));
    snprintf(where, sizeof where, line ? "%s:%d: PLY: " : "%s: ", path, line);
    rt_test_assert_contains(err.msg, where);
    rt_test_assert_contains(err.msg, expect);
    assert_null(s.tris);
    unlink(path);
}
static void expect_error(const char *text, RtStatus status, int line, const char *expect)
{
    expect_error_bytes(text, strlen(text), status, line, expect);
}

static const char *k_head3 = "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                             "property float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n";

/* ---- valid input ---------------------------------------------------------- */

static void ply_ascii_and_binary_give_identical_scenes(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        Mesh m;
        random_mesh(&m, seed);
        RtScene s[3];
        char path[3][1024];
        for (int fmt = 0; fmt < 3; fmt++) {
            Buf b = {0};
            write_mesh(&b, &m, fmt);
            RtError err;
            RtStatus st = load_bytes(b.p, b.n, &s[fmt], &err, path[fmt]);
            if (st != RT_OK) fail_msg("format %d: %s", fmt, err.msg);
            free(b.p);
        }
        uint32_t tris = 0;
        for (int f = 0; f < m.nf; f++) tris += (uint32_t)m.fsize[f] - 2;
        assert_int_equal(s[0].tri_count, tris);
        assert_int_equal(s[0].vert_count, (uint32_t)m.nv);
        assert_int_equal(s[0].object_count, 1);
        assert_int_equal(s[0].objects[0].tri_count, tris);
        for (int fmt = 1; fmt < 3; fmt++) {
            assert_int_equal(s[fmt].vert_count, s[0].vert_count);
            assert_int_equal(s[fmt].tri_count, s[0].tri_count);
            assert_memory_equal(s[fmt].verts, s[0].verts, s[0].vert_count * sizeof *s[0].verts);
            assert_memory_equal(s[fmt].tris, s[0].tris, s[0].tri_count * sizeof *s[0].tris);
        }
        for (int i = 0; i < m.nv; i++) {
            const RtVertex *v = &s[1].verts[i];
            assert_true(v->p.x == m.p[i][0] && v->p.y == m.p[i][1] && v->p.z == m.p[i][2]);
            assert_true(v->u == m.uv[i][0] && v->v == m.uv[i][1]);
            RtVec3 n = v3_norm(v3(m.n[i][0], m.n[i][1], m.n[i][2]));
            assert_float_equal(v->n.x, n.x, 1e-6f);
            assert_float_equal(v->n.z, n.z, 1e-6f);
        }
        /* faces are fanned in file order */
        assert_int_equal(s[2].tris[0].v[0], (uint32_t)m.idx[0][0]);
        assert_int_equal(s[2].tris[0].v[1], (uint32_t)m.idx[0][1]);
        assert_int_equal(s[2].tris[0].v[2], (uint32_t)m.idx[0][2]);
        assert_int_equal(s[2].tris[0].material, -1);
        for (int fmt = 0; fmt < 3; fmt++) {
            rt_scene_free(&s[fmt]);
            unlink(path[fmt]);
        }
    }
}

static void ply_single_triangle_smooth_normals(void **state)
{
    (void)state;
    char path[1024], text[512];
    snprintf(text, sizeof text, "%s0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n", k_head3);
    RtScene s;
    RtError err;
    assert_int_equal(load_bytes(text, strlen(text), &s, &err, path), RT_OK);
    assert_int_equal(s.tri_count, 1);
    assert_int_equal(s.vert_count, 3);
    for (int i = 0; i < 3; i++) {
        assert_float_equal(s.verts[i].n.z, 1.0f, 1e-6f); /* computed: none in the file */
        assert_float_equal(s.verts[i].u, 0.0f, 0);
    }
    char base[1024];
    snprintf(base, sizeof base, "%s", strrchr(path, '/') + 1);
    *strrchr(base, '.') = '\0';
    assert_string_equal(s.objects[0].name, base);
    rt_scene_free(&s);
    unlink(path);
}

/* The header of Stanford's bun_zipper.ply and dragon_vrip.ply: extra
 * confidence/intensity properties, CRLF tolerated, a quad fanned. */
static void ply_stanford_style_header(void **state)
{
    (void)state;
    const char *text = "ply\r\nformat ascii 1.0\r\ncomment zipper output\r\nelement vertex 5\r\n"
                       "property float x\r\nproperty float y\r\nproperty float z\r\n"
                       "property float confidence\r\nproperty float intensity\r\n"
                       "element face 2\r\nproperty list uchar int vertex_indices\r\nend_header\r\n"
                       "-0.0378297 0.12794 0.00447467 0.850855 0.452603\r\n"
                       "-0.0447794 0.128887 0.00190497 0.900159 0.538273\r\n"
                       "-0.0680095 0.151244 0.0371953 0.398443 0.184723\r\n"
                       "-0.00228741 0.13015 0.0232201 0.85268 0.577649\r\n"
                       "-0.0226054 0.126675 0.00715587 0.675938 0.410763\r\n"
                       "3 0 1 2\r\n4 1 3 4 2 \r\n\r\n";
    char path[1024];
    RtScene s;
    RtError err;
    assert_int_equal(load_bytes(text, strlen(text), &s, &err, path), RT_OK);
    assert_int_equal(s.tri_count, 3);
    assert_float_equal(s.verts[4].p.z, 0.00715587f, 0);
    for (uint32_t i = 0; i < s.vert_count; i++) assert_float_equal(v3_len(s.verts[i].n), 1.0f, 1e-5f);
    rt_scene_free(&s);
    unlink(path);
}

/* vertex_index, other integer types for counts and indices, int-typed
 * coordinates, texture_u/texture_v, big-endian. */
static void ply_index_and_type_variants(void **state)
{
    (void)state;
    for (int be = 0; be < 2; be++) {
        Buf b = {0};
        put_text(&b, "ply\nformat %s 1.0\nelement vertex 4\nproperty short x\nproperty ushort y\n"
                     "property int8 z\nproperty float32 texture_u\nproperty float64 texture_v\n"
                     "element face 1\nproperty list int uint16 vertex_index\nend_header\n",
                 be ? "binary_big_endian" : "binary_little_endian");
        int xy[4][2] = {{-1, 0}, {1, 0}, {1, 2}, {-1, 2}};
        for (int i = 0; i < 4; i++) {
            put_uint(&b, (uint16_t)xy[i][0], 2, be);
            put_uint(&b, (uint16_t)xy[i][1], 2, be);
            put_uint(&b, (uint8_t)-3, 1, be);
            put_f32(&b, 0.25f * i, be);
            put_f64(&b, 1.0 - 0.25 * i, be);
        }
        put_uint(&b, 4, 4, be);
        for (int i = 0; i < 4; i++) put_uint(&b, (uint64_t)i, 2, be);
        char path[1024];
        RtScene s;
        RtError err;
        RtStatus st = load_bytes(b.p, b.n, &s, &err, path);
        if (st != RT_OK) fail_msg("%s", err.msg);
        assert_int_equal(s.tri_count, 2);
        assert_float_equal(s.verts[0].p.x, -1.0f, 0);
        assert_float_equal(s.verts[2].p.y, 2.0f, 0);
        assert_float_equal(s.verts[3].p.z, -3.0f, 0);
        assert_float_equal(s.verts[3].u, 0.75f, 0);
        assert_float_equal(s.verts[3].v, 0.25f, 0);
        rt_scene_free(&s);
        unlink(path);
        free(b.p);
    }
}

static void ply_appends_and_rolls_back(void **state)
{
    (void)state;
    char p1[1024], p2[1024], text[512];
    snprintf(text, sizeof text, "%s0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n", k_head3);
    RtScene s;
    RtError err;
    rt_scene_init(&s);
    RT_TEST_TMP_TEXT(".ply", text, p1);
    assert_int_equal(rt_ply_load(p1, &s, &err), RT_OK);
    assert_int_equal(rt_ply_load(p1, &s, &err), RT_OK);
    assert_int_equal(s.tri_count, 2);
    assert_int_equal(s.tris[1].v[0], 3);
    assert_int_equal(s.tris[1].object, 1);
    snprintf(text, sizeof text, "%s0 0 0\n1 0 0\n0 1 0\n3 0 1 7\n", k_head3);
    RT_TEST_TMP_TEXT(".ply", text, p2);
    assert_int_equal(rt_ply_load(p2, &s, &err), RT_ERR_PARSE);
    assert_int_equal(s.tri_count, 2);
    assert_int_equal(s.vert_count, 6);
    assert_int_equal(s.object_count, 2);
    rt_scene_free(&s);
    unlink(p1);
    unlink(p2);
}

static void ply_zero_area_triangles_kept(void **state)
{
    (void)state;
    char path[1024], text[512];
    snprintf(text, sizeof text,
             "ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\nproperty float z\n"
             "element face 2\nproperty list uchar int vertex_indices\nend_header\n"
             "0 0 0\n1 0 0\n0 1 0\n2 0 0\n3 0 1 2\n3 0 1 3\n");
    RtScene s;
    RtError err;
    assert_int_equal(load_bytes(text, strlen(text), &s, &err, path), RT_OK);
    assert_int_equal(s.tri_count, 2);
    assert_int_equal(s.zero_area, 1);
    rt_scene_free(&s);
    unlink(path);
}

/* ---- bad input ------------------------------------------------------------ */

static void ply_truncated_binary_body(void **state)
{
    (void)state;
    Mesh m;
    random_mesh(&m, 7);
    Buf b = {0};
    write_mesh(&b, &m, PLY_LE);
    size_t body = (size_t)(strstr((char *)b.p, "end_header\n") - (char *)b.p) + 11;
    /* every cut in the body is an error, never a crash */
    for (size_t cut = body; cut < b.n; cut += 3) {
        char path[1024];
        RtScene s;
        RtError err;
        RtStatus st = load_bytes(b.p, cut, &s, &err, path);
        if (st != RT_ERR_PARSE) fail_msg("cut at %zu of %zu: %s (%s)", cut, b.n, rt_status_name(st), err.msg);
        rt_test_assert_contains(err.msg, path);
        rt_test_assert_contains(err.msg, "PLY: ");
        unlink(path);
    }
    /* a cut in the last face names it */
    char expect[128];
    snprintf(expect, sizeof expect, "face %d: unexpected end of file", m.nf - 1);
    expect_error_bytes(b.p, b.n - 3, RT_ERR_PARSE, 0, expect);
    free(b.p);
}

static void ply_absurd_counts(void **state)
{
    (void)state;
    /* more than a scene can hold: refused at the header line */
    expect_error("ply\nformat binary_little_endian 1.0\ncomment x\nelement vertex 4000000000\n"
                 "property float x\nproperty float y\nproperty float z\nend_header\n",
                 RT_ERR_OOM, 4, "element vertex 4000000000");
    /* more than the file's bytes can hold: refused before allocating */
    expect_error("ply\nformat binary_little_endian 1.0\nelement vertex 100000000\n"
                 "property float x\nproperty float y\nproperty float z\nend_header\n0123456789",
                 RT_ERR_PARSE, 3, "needs at least 12 bytes per record but only 10 bytes follow");
    expect_error("ply\nformat binary_big_endian 1.0\nelement vertex 0\nproperty float x\nproperty float y\n"
                 "property float z\nelement face 4000000000\nproperty list uchar int vertex_indices\nend_header\n",
                 RT_ERR_PARSE, 7, "element face 4000000000");
    expect_error("ply\nformat ascii 1.0\nelement vertex 1000000\nproperty float x\nproperty float y\n"
                 "property float z\nend_header\n0 0 0\n",
                 RT_ERR_PARSE, 3, "element vertex 1000000");
    expect_error("ply\nformat ascii 1.0\nelement vertex 99999999999999999999999\n", RT_ERR_PARSE, 3,
                 "expected 'element NAME COUNT'");
    /* a list length past the end of the data */
    Buf b = {0};
    put_text(&b, "ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                 "property float z\nelement face 1\nproperty list uint int vertex_indices\nend_header\n");
    for (int i = 0; i < 9; i++) put_f32(&b, (float)(i % 2), 0);
    put_uint(&b, 4000000000u, 4, 0);
    put_uint(&b, 0, 4, 0);
    expect_error_bytes(b.p, b.n, RT_ERR_PARSE, 0, "face 0: unexpected end of file in a list of 4000000000 items");
    free(b.p);
}

static void ply_index_out_of_range(void **state)
{
    (void)state;
    Buf b = {0};
    put_text(&b, "ply\nformat binary_little_endian 1.0\nelement vertex 4\nproperty float x\nproperty float y\n"
                 "property float z\nelement face 2\nproperty list uchar int vertex_indices\nend_header\n");
    for (int i = 0; i < 12; i++) put_f32(&b, (float)(i % 3 == 0), 0);
    put_uint(&b, 3, 1, 0);
    for (int i = 0; i < 3; i++) put_uint(&b, (uint64_t)i, 4, 0);
    put_uint(&b, 3, 1, 0);
    put_uint(&b, 0, 4, 0);
    put_uint(&b, 99999, 4, 0);
    put_uint(&b, 1, 4, 0);
    expect_error_bytes(b.p, b.n, RT_ERR_PARSE, 0, "face 1: index 99999 out of range (0..3)");
    free(b.p);
    char text[512];
    snprintf(text, sizeof text, "%s0 0 0\n1 0 0\n0 1 0\n3 0 1 -1\n", k_head3);
    expect_error(text, RT_ERR_PARSE, 13, "face 0: index -1 out of range (0..2)");
    snprintf(text, sizeof text, "%s0 0 0\n1 0 0\n0 1 0\n3 0 1 1.5\n", k_head3);
    expect_error(text, RT_ERR_PARSE, 13, "index 1.5 out of range");
    snprintf(text, sizeof text, "%s0 0 0\n1 0 0\n0 1 0\n2 0 1\n", k_head3);
    expect_error(text, RT_ERR_PARSE, 13, "face 0: expected at least 3 vertex indices, got 2");
    snprintf(text, sizeof text, "%s0 0 0\n1 0 0\n0 1 0\n-1 0 1 2\n", k_head3);
    expect_error(text, RT_ERR_PARSE, 13, "face 0: expected a list length >= 0");
}

static void ply_non_finite_coordinates(void **state)
{
    (void)state;
    char text[512];
    snprintf(text, sizeof text, "%s0 0 0\nnan 0 0\n0 1 0\n3 0 1 2\n", k_head3);
    expect_error(text, RT_ERR_PARSE, 11, "vertex 1: expected finite coordinates");
    snprintf(text, sizeof text, "%s0 0 0\n1 0 0\n0 1 inf\n3 0 1 2\n", k_head3);
    expect_error(text, RT_ERR_PARSE, 12, "vertex 2: expected finite coordinates");
    Buf b = {0};
    put_text(&b, "ply\nformat binary_big_endian 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                 "property float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n");
    for (int i = 0; i < 9; i++) put_f32(&b, i == 7 ? NAN : 1.0f, 1);
    put_uint(&b, 3, 1, 1);
    for (int i = 0; i < 3; i++) put_uint(&b, (uint64_t)i, 4, 1);
    expect_error_bytes(b.p, b.n, RT_ERR_PARSE, 0, "vertex 2: expected finite coordinates");
    free(b.p);
}

static void ply_not_a_ply_file(void **state)
{
    (void)state;
    /* a PNG renamed .ply */
    char png[1024];
    snprintf(png, sizeof png, "/tmp/rt_test_ply_%d.png", (int)getpid());
    RtImage img;
    RtError err;
    assert_int_equal(rt_image_alloc(&img, 4, 4), RT_OK);
    assert_int_equal(rt_image_write_png(&img, png, &err), RT_OK);
    rt_image_free(&img);
    FILE *f = fopen(png, "rb");
    uint8_t data[4096];
    size_t n = fread(data, 1, sizeof data, f);
    fclose(f);
    unlink(png);
    expect_error_bytes(data, n, RT_ERR_PARSE, 1, "expected 'ply' on the first line");
    expect_error("", RT_ERR_PARSE, 1, "expected 'ply' on the first line");
    expect_error("solid cube\nfacet normal 0 0 1\n", RT_ERR_PARSE, 1, "expected 'ply'");
    /* random bytes, some after a valid first line */
    RtTestRng rng = {99};
    for (int round = 0; round < 200; round++) {
        size_t len = 1 + rt_test_rand(&rng) % 2048;
        uint8_t *buf = malloc(len + 8);
        size_t off = round % 2 ? 4 : 0;
        memcpy(buf, "ply\n", off);
        for (size_t i = off; i < len + off; i++) buf[i] = (uint8_t)rt_test_rand(&rng);
        char path[1024];
        RtScene s;
        assert_int_not_equal(load_bytes(buf, len + off, &s, &err, path), RT_OK);
        rt_test_assert_contains(err.msg, path);
        assert_null(s.tris);
        unlink(path);
        free(buf);
    }
}

static void ply_header_errors_name_the_line(void **state)
{
    (void)state;
    static const struct { const char *text; int line; const char *expect; } cases[] = {
        {"ply\nformat ascii 2.0\n", 2, "expected 'format ascii 1.0'"},
        {"ply\nformat binary 1.0\n", 2, "expected 'format ascii 1.0'"},
        {"ply\nformat ascii 1.0\nformat ascii 1.0\n", 3, "expected one 'format' line"},
        {"ply\nformat ascii 1.0\nproperty float x\n", 3, "expected 'element NAME COUNT' before 'property'"},
        {"ply\nformat ascii 1.0\nelement vertex 3\nproperty flt x\n", 4, "expected 'property TYPE NAME'"},
        {"ply\nformat ascii 1.0\nelement vertex 3\nproperty list uchar x\n", 4, "expected 'property list COUNT_TYPE"},
        {"ply\nformat ascii 1.0\nelement vertex -3\n", 3, "non-negative integer count"},
        {"ply\nformat ascii 1.0\nelement vertex 0\n", 3, "expected 'end_header'"},
        {"ply\nelement vertex 0\nend_header\n", 3, "expected a 'format' line"},
        {"ply\nformat ascii 1.0\nfoo bar\n", 3, "expected format, element, property, comment or end_header, got 'foo'"},
        {"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nelement face 0\n"
         "property list uchar int vertex_indices\nend_header\n", 3, "expected 'property float x', 'y' and 'z'"},
        {"ply\nformat ascii 1.0\nelement vertex 0\nproperty float x\nproperty float y\nproperty float z\n"
         "element face 0\nproperty int vertex_indices\nend_header\n", 7, "expected one 'property list uchar int"},
        {"ply\nformat ascii 1.0\nelement vertex 0\nproperty float x\nproperty float y\nproperty float z\n"
         "element face 0\nproperty list uchar float vertex_indices\nend_header\n", 8, "expected integer vertex indices"},
        {"ply\nformat ascii 1.0\nelement face 0\nproperty list float int vertex_indices\nend_header\n", 4,
         "expected an integer list count type"},
        {"ply\nformat ascii 1.0\nelement vertex 0\nproperty float x\nproperty float y\nproperty float z\n"
         "element vertex 0\n", 7,
         "expected one 'element vertex', got a second"},
        {"ply\nformat ascii 1.0\ncomment a\0b\nend_header\n", 3, "found a NUL byte"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = strlen(cases[i].text);
        if (strstr(cases[i].expect, "NUL")) n += 1 + strlen(cases[i].text + n + 1);
        expect_error_bytes(cases[i].text, n, RT_ERR_PARSE, cases[i].line, cases[i].expect);
    }
}

static void ply_ascii_record_errors(void **state)
{
    (void)state;
    char text[512];
    snprintf(text, sizeof text, "%s0 0 0\n1 0\n0 1 0\n3 0 1 2\n", k_head3);
    expect_error(text, RT_ERR_PARSE, 11, "vertex 1: line ends early (expected the 3 properties the header declares)");
    snprintf(text, sizeof text, "%s0 0 0\n1 0 0 7\n0 1 0\n3 0 1 2\n", k_head3);
    expect_error(text, RT_ERR_PARSE, 11, "vertex 1: expected end of line after the 3 properties");
    snprintf(text, sizeof text, "%s0 0 0\n1 zero 0\n0 1 0\n3 0 1 2\n", k_head3);
    expect_error(text, RT_ERR_PARSE, 11, "vertex 1: expected a number");
    snprintf(text, sizeof text, "%s0 0 0\n1 0 0\n0 1 0\n", k_head3);
    expect_error(text, RT_ERR_PARSE, 7, "element face 1: needs at least 2 bytes per record but only 1 bytes follow");
    expect_error("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                 "property float z\nelement face 2\nproperty list uchar int vertex_indices\nend_header\n"
                 "0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n",
                 RT_ERR_PARSE, 13, "face 1: unexpected end of file");
    snprintf(text, sizeof text, "%s0 0 0\n1 0 0\n0 1 0\n4 0 1 2\n", k_head3);
    expect_error(text, RT_ERR_PARSE, 13, "face 0: line ends early");
}

static void ply_empty_scene(void **state)
{
    (void)state;
    expect_error("ply\nformat ascii 1.0\nelement vertex 0\nproperty float x\nproperty float y\nproperty float z\n"
                 "element face 0\nproperty list uchar int vertex_indices\nend_header\n",
                 RT_ERR_EMPTY, 0, "empty");
    /* a point cloud: vertices, no faces */
    expect_error("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\n"
                 "end_header\n0 0 0\n1 0 0\n0 1 0\n",
                 RT_ERR_EMPTY, 0, "no triangles");
}

static void ply_unreadable_paths(void **state)
{
    (void)state;
    RtScene s;
    RtError err;
    assert_int_equal(rt_scene_load("/nonexistent/dir/mesh.ply", &s, &err), RT_ERR_IO);
    rt_test_assert_contains(err.msg, "/nonexistent/dir/mesh.ply: PLY: cannot open");
    char dir[1024], path[1100];
    snprintf(dir, sizeof dir, "/tmp/rt_test_ply_XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/folder.PLY", dir); /* the extension is case-insensitive */
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(rt_scene_load(path, &s, &err), RT_ERR_IO);
    rt_test_assert_contains(err.msg, path);
    rt_test_assert_contains(err.msg, "is a directory");
    rmdir(path);
    rmdir(dir);
}

static void ply_overlong_lines(void **state)
{
    (void)state;
    const size_t big = 10u << 20;
    Buf b = {0};
    double t0 = rt_now_ms();
    /* a 10 MB comment in the header */
    put_text(&b, "ply\nformat ascii 1.0\ncomment ");
    char *chunk = malloc(1 << 20);
    memset(chunk, 'c', 1 << 20);
    for (int i = 0; i < 10; i++) put_bytes(&b, chunk, 1 << 20);
    put_text(&b, "\n%s", k_head3 + strlen("ply\nformat ascii 1.0\n"));
    put_text(&b, "0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n");
    char path[1024];
    RtScene s;
    RtError err;
    assert_int_equal(load_bytes(b.p, b.n, &s, &err, path), RT_OK);
    assert_int_equal(s.tri_count, 1);
    rt_scene_free(&s);
    unlink(path);
    /* a 10 MB vertex line */
    b.n = 0;
    put_text(&b, "%s0 0 0", k_head3);
    for (size_t i = 0; i < big / 2; i++) put_bytes(&b, " 1", 2);
    put_text(&b, "\n");
    expect_error_bytes(b.p, b.n, RT_ERR_PARSE, 10, "vertex 0: expected end of line after the 3 properties");
    /* a face of 2 million corners on one line: fanned */
    b.n = 0;
    put_text(&b, "%s0 0 0\n1 0 0\n0 1 0\n2000000 0", k_head3);
    for (size_t i = 1; i < 2000000; i++) put_bytes(&b, i % 2 ? " 1" : " 2", 2);
    put_text(&b, "\n");
    assert_int_equal(load_bytes(b.p, b.n, &s, &err, path), RT_OK);
    assert_int_equal(s.tri_count, 2000000 - 2);
    rt_scene_free(&s);
    unlink(path);
    free(chunk);
    free(b.p);
    print_message("overlong lines: %.0f ms\n", rt_now_ms() - t0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ply_ascii_and_binary_give_identical_scenes),
        cmocka_unit_test(ply_single_triangle_smooth_normals),
        cmocka_unit_test(ply_stanford_style_header),
        cmocka_unit_test(ply_index_and_type_variants),
        cmocka_unit_test(ply_appends_and_rolls_back),
        cmocka_unit_test(ply_zero_area_triangles_kept),
        cmocka_unit_test(ply_truncated_binary_body),
        cmocka_unit_test(ply_absurd_counts),
        cmocka_unit_test(ply_index_out_of_range),
        cmocka_unit_test(ply_non_finite_coordinates),
        cmocka_unit_test(ply_not_a_ply_file),
        cmocka_unit_test(ply_header_errors_name_the_line),
        cmocka_unit_test(ply_ascii_record_errors),
        cmocka_unit_test(ply_empty_scene),
        cmocka_unit_test(ply_unreadable_paths),
        cmocka_unit_test(ply_overlong_lines),
    };
    rt_log_set_level(RT_LOG_WARN); /* keep the loaders' timing lines out of the test log */
    return cmocka_run_group_tests_name("ply", tests, NULL, NULL);
}
