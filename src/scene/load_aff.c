/* load_aff.c — BART AFF scenes into the scene model (stage 1, load).
 *
 * AFF (Lext, Assarsson, Moller 2001) is NFF plus materials, meshes,
 * textures, includes, a transform hierarchy and Kochanek-Bartels keyframes;
 * ../shared/formats/aff.md is the specification followed here, and
 * docs/aff.md says how it maps onto RtScene/RtAnim.
 *
 * The files are a flat stream of whitespace-separated tokens read as raw
 * bytes (CR is whitespace, Latin-1 comments pass). Includes are spliced in
 * recursively; materials leak across includes and braces by design (aff.md
 * 2). Geometry is written once, in the space of its innermost animated
 * (`x`) node: the static (`xs`) transforms between that node and the
 * geometry are baked into the vertices, and geometry with no `x` above it
 * is baked all the way to world space and never moves. Each `x` becomes an
 * RT_NODE_TRACK node whose track is resolved after the whole file has been
 * read (the LAST `k` of that name, aff.md 3.15). Anything malformed is one
 * RT_ERR_PARSE "file:line: AFF: expected ..." and the scene is rolled back
 * to what it held before the call. */
#include "scene/load.h"
#include "scene/primitives.h"
#include "scene/scene.h"
#include "scene/texture.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Larger text is certainly not a scene (the real files are < 1 MB each). */
#define AFF_MAX_FILE_BYTES ((size_t)1 << 30)
/* Nested includes beyond this are a runaway recursion, not a scene (the
 * real scenes nest 4 deep). */
#define AFF_MAX_INCLUDE_DEPTH 64
/* Open cones/cylinders (`c`) are tessellated into this many quads around. */
#define AFF_CONE_SEGMENTS 24
/* Spheres (`s`, unused by the BART scenes) go through rt_prim_sphere. */
#define AFF_SPHERE_SEGMENTS 32
/* Names index RtAnimTrack.name (64 bytes with the NUL). */
#define AFF_NAME_MAX 63
/* File names (include and texture) longer than this are refused. */
#define AFF_FILE_NAME_MAX 1023

/* ---- lexer --------------------------------------------------------------- */

typedef struct AffLex {
    const char *path;  /* as opened, for messages */
    const char *p, *end;
    int line;          /* 1-based line of p */
    int last_line;     /* line of the last token (where "end of file" is reported) */
} AffLex;

typedef struct AffTok {
    const char *s;
    size_t n;
    int line;
} AffTok;

static int aff_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

static void lex_skip_space(AffLex *L)
{
    while (L->p < L->end && aff_is_space(*L->p)) {
        if (*L->p == '\n') L->line++;
        L->p++;
    }
}

/* The next maximal run of non-whitespace bytes; 0 at the end of the file. */
static int lex_next(AffLex *L, AffTok *t)
{
    lex_skip_space(L);
    t->s = L->p;
    while (L->p < L->end && !aff_is_space(*L->p)) L->p++;
    t->n = (size_t)(L->p - t->s);
    if (t->n) L->last_line = L->line;
    t->line = t->n ? L->line : (L->last_line ? L->last_line : 1);
    return t->n > 0;
}

static int lex_peek(const AffLex *L, AffTok *t)
{
    AffLex c = *L;
    return lex_next(&c, t);
}

/* Comments run from a `#` or `%` token to the end of its line. */
static void lex_skip_line(AffLex *L)
{
    while (L->p < L->end && *L->p != '\n') L->p++;
}

static int tok_is(const AffTok *t, const char *kw)
{
    size_t n = strlen(kw);
    return t->n == n && !memcmp(t->s, kw, n);
}

static int tok_is_comment(const AffTok *t) { return t->n && (t->s[0] == '#' || t->s[0] == '%'); }

/* A short printable excerpt of a token for messages. */
static const char *tok_excerpt(const AffTok *t, char buf[40])
{
    if (!t || !t->n) return "end of file";
    size_t i = 0;
    buf[i++] = '\'';
    for (size_t k = 0; k < t->n && k < 24; k++) {
        char c = t->s[k];
        buf[i++] = (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    if (t->n > 24) buf[i++] = '.', buf[i++] = '.', buf[i++] = '.';
    buf[i++] = '\'';
    buf[i] = '\0';
    return buf;
}

/* strtod syntax without inf/nan/hex: [+-]digits[.digits][(e|E)[+-]digits]
 * or [+-].digits[...], the whole token. Up to 19 significant digits and a
 * power of ten up to 22 convert exactly in double (Clinger's fast path);
 * beyond that pow() is within an ulp of a double, invisible in a float.
 * Locale-independent, unlike strtod. Returns 0 when not a finite float. */
static int tok_number(const AffTok *t, double *out)
{
    static const double pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char *p = t->s, *e = t->s + t->n;
    int neg = 0, digits = 0, any = 0;
    long exp10 = 0;
    uint64_t mant = 0;
    if (p < e && (*p == '+' || *p == '-')) neg = *p++ == '-';
    for (; p < e && *p >= '0' && *p <= '9'; p++, any = 1) {
        if (digits < 19) {
            mant = mant * 10 + (uint64_t)(*p - '0');
            digits += mant != 0;
        } else if (exp10 < 1000000) {
            exp10++;
        }
    }
    if (p < e && *p == '.')
        for (p++; p < e && *p >= '0' && *p <= '9'; p++, any = 1)
            if (digits < 19) {
                mant = mant * 10 + (uint64_t)(*p - '0');
                digits += mant != 0;
                exp10--;
            }
    if (!any) return 0;
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        int eneg = 0;
        long x = 0;
        if (p < e && (*p == '+' || *p == '-')) eneg = *p++ == '-';
        if (!(p < e && *p >= '0' && *p <= '9')) return 0;
        for (; p < e && *p >= '0' && *p <= '9'; p++)
            if (x < 100000) x = x * 10 + (*p - '0');
        exp10 += eneg ? -x : x;
    }
    if (p != e) return 0;
    double v;
    if (mant == 0) v = 0.0;
    else if (mant <= (1ull << 53) && exp10 >= -22 && exp10 <= 22)
        v = exp10 >= 0 ? (double)mant * pow10[exp10] : (double)mant / pow10[-exp10];
    else
        v = exp10 >= 0 ? (double)mant * pow(10.0, (double)exp10) : (double)mant / pow(10.0, (double)-exp10);
    v = neg ? -v : v;
    if (!isfinite((float)v)) return 0;
    *out = v;
    return 1;
}

/* A decimal integer token (counts, indices, levels), saturating far beyond
 * any valid value. */
static int tok_int(const AffTok *t, long long *out)
{
    const char *p = t->s, *e = t->s + t->n;
    int neg = 0;
    if (p < e && (*p == '+' || *p == '-')) neg = *p++ == '-';
    if (p == e) return 0;
    long long v = 0;
    for (; p < e; p++) {
        if (*p < '0' || *p > '9') return 0;
        if (v < (1ll << 40)) v = v * 10 + (*p - '0');
    }
    *out = neg ? -v : v;
    return 1;
}

/* ---- the loader's state --------------------------------------------------- */

/* One open transform (x or xs) — or the root. Geometry at this level is
 * written in the space of `node` after `bake`. */
typedef struct AffFrame {
    uint32_t node;     /* innermost animated node, or RT_ANIM_STATIC */
    float bake[12];    /* static transforms between that node and here */
    char *file;        /* where the `{` was opened (owned), for messages */
    int line;
} AffFrame;

typedef struct AffNamed {
    uint32_t index;    /* node or light */
    char name[AFF_NAME_MAX + 1];
} AffNamed;

typedef struct AffTexName {
    char *name;
    int32_t tex;       /* -1: not found (warned once) */
} AffTexName;

typedef struct AffMatTex {
    int32_t mat, tex, out;
} AffMatTex;

typedef struct AffFile {
    char *path;        /* resolved */
    char *data;
    size_t size;
} AffFile;

/* Mesh corner dedupe: (vertex, normal, texcoord) -> scene vertex. */
typedef struct AffCorner {
    uint32_t v, n, t, out; /* out == UINT32_MAX: empty slot */
} AffCorner;

typedef struct AffLoad {
    RtScene *s;
    RtError *err;
    char *top_dir;     /* directory of the top-level file ("." when none) */
    int detail;        /* `d` level */
    int32_t mat;       /* current material (-1: none yet) */
    uint32_t mat0;     /* first material of this load (dedupe range) */

    AffFrame *stack;   size_t depth, stack_cap;
    size_t chain[AFF_MAX_INCLUDE_DEPTH]; /* files[] being read, outermost first */
    int chain_len;
    AffFile *files;    size_t file_count, file_cap;
    AffNamed *xnodes;  size_t xnode_count, xnode_cap;
    AffNamed *alights; size_t alight_count, alight_cap;
    AffTexName *texnames; size_t texname_count, texname_cap;
    AffMatTex *mattex; size_t mattex_count, mattex_cap;

    /* scratch for meshes (reused) */
    RtVec3 *mv, *mn;   size_t mv_cap, mn_cap;
    float *mt;         size_t mt_cap;   /* 2 per texcoord */
    uint32_t *mtri;    size_t mtri_cap; /* 9 per triangle */
    AffCorner *hash;   size_t hash_cap;

    /* non-mesh primitives of one kind and file share an object */
    int32_t prim_obj;  /* -1: none open (reset at every file boundary) */
    int prim_obj_kind;

    /* statistics for the summary line and docs/aff.md */
    uint32_t meshes, includes, missing_includes, flat_tris, cones, tpas;
} AffLoad;

static RtStatus aff_fail(AffLoad *A, const AffLex *L, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static RtStatus aff_fail(AffLoad *A, const AffLex *L, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    RtStatus st = rt_vfail_at(A->err, RT_ERR_PARSE, L->path, line, "AFF", fmt, ap);
    va_end(ap);
    return st;
}

static RtStatus aff_oom(AffLoad *A, const AffLex *L)
{
    return rt_fail(A->err, RT_ERR_OOM, "%s:%d: AFF: out of memory", L->path, L->line);
}

static int aff_grow(void *arr, size_t *cap, size_t need, size_t elem)
{
    return rt_grow_array((void **)arr, cap, need, elem);
}

/* ---- token expectations --------------------------------------------------- */

static RtStatus need_float(AffLoad *A, AffLex *L, float *out, const char *what)
{
    AffTok t;
    double d;
    char b[40];
    if (!lex_next(L, &t) || !tok_number(&t, &d))
        return aff_fail(A, L, t.line, "expected %s (a number), got %s", what, tok_excerpt(&t, b));
    *out = (float)d;
    return RT_OK;
}

static RtStatus need_vec3(AffLoad *A, AffLex *L, RtVec3 *out, const char *what)
{
    RtStatus st;
    if ((st = need_float(A, L, &out->x, what)) != RT_OK) return st;
    if ((st = need_float(A, L, &out->y, what)) != RT_OK) return st;
    return need_float(A, L, &out->z, what);
}

/* An integer in [lo, hi]. */
static RtStatus need_int(AffLoad *A, AffLex *L, long long lo, long long hi, long long *out, const char *what)
{
    AffTok t;
    char b[40];
    if (!lex_next(L, &t) || !tok_int(&t, out))
        return aff_fail(A, L, t.line, "expected %s (an integer), got %s", what, tok_excerpt(&t, b));
    if (*out < lo || *out > hi)
        return aff_fail(A, L, t.line, "expected %s in [%lld, %lld], got %lld", what, lo, hi, *out);
    return RT_OK;
}

/* A count of rows of at least min_bytes each: a count the rest of the file
 * cannot hold is an error before anything is allocated for it. */
static RtStatus need_count(AffLoad *A, AffLex *L, long long lo, size_t min_bytes, uint32_t *out,
                           const char *what)
{
    long long v;
    RtStatus st = need_int(A, L, lo, UINT32_MAX / 16, &v, what);
    if (st != RT_OK) return st;
    size_t left = (size_t)(L->end - L->p);
    if ((unsigned long long)v > left / (min_bytes ? min_bytes : 1))
        return aff_fail(A, L, L->line, "expected %lld rows after %s, but the file ends before", v, what);
    *out = (uint32_t)v;
    return RT_OK;
}

static RtStatus need_word(AffLoad *A, AffLex *L, const char *kw, const char *context)
{
    AffTok t;
    char b[40];
    if (!lex_next(L, &t) || !tok_is(&t, kw))
        return aff_fail(A, L, t.line, "expected '%s' %s, got %s", kw, context, tok_excerpt(&t, b));
    return RT_OK;
}

/* A name (transform, animation, file): one token of at most max bytes. */
static RtStatus need_name(AffLoad *A, AffLex *L, char *buf, size_t max, const char *what)
{
    AffTok t;
    if (!lex_next(L, &t)) return aff_fail(A, L, t.line, "expected %s, got end of file", what);
    if (t.n > max) return aff_fail(A, L, t.line, "expected %s of at most %zu characters", what, max);
    memcpy(buf, t.s, t.n);
    buf[t.n] = '\0';
    return RT_OK;
}

static int peek_is_number(const AffLex *L)
{
    AffTok t;
    double d;
    return lex_peek(L, &t) && tok_number(&t, &d);
}

/* ---- materials and textures ----------------------------------------------- */

static int mat_equal(const RtMaterial *a, const RtMaterial *b)
{
    return !memcmp(&a->kd, &b->kd, sizeof a->kd) && !memcmp(&a->ks, &b->ks, sizeof a->ks) &&
           !memcmp(&a->ke, &b->ke, sizeof a->ke) && a->ns == b->ns && a->ni == b->ni && a->d == b->d &&
           a->illum == b->illum && a->reflect == b->reflect && a->map_kd == b->map_kd && a->map_d == b->map_d;
}

/* Makes m the current material, reusing an identical one of this load:
 * the robots execute `colorN.aff` ~1800 times for 17 distinct materials. */
static RtStatus set_material(AffLoad *A, const AffLex *L, RtMaterial *m, int line)
{
    for (uint32_t i = A->mat0; i < A->s->mat_count; i++)
        if (mat_equal(&A->s->mats[i], m)) {
            A->mat = (int32_t)i;
            return RT_OK;
        }
    const char *base = strrchr(L->path, '/');
    snprintf(m->name, sizeof m->name, "%s:%d", base ? base + 1 : L->path, line);
    int64_t i = rt_scene_add_material(A->s, m);
    if (i < 0) return aff_oom(A, L);
    A->mat = (int32_t)i;
    return RT_OK;
}

/* fm: ambient, diffuse, specular RGB, Phong exponent, transmittance, ior.
 * Mapped to MTL semantics (docs/aff.md): the specular colour doubles as
 * mirror reflectance by NFF/SPD tradition (reflect = max(ks)); T > 0 is a
 * dielectric with opacity d = 1 - T. The ambient colour has no place in
 * RtMaterial (the renderer uses scene ambient * kd) and is dropped. */
static RtMaterial material_from_fm(RtVec3 kd, RtVec3 ks, float shine, float T, float ior)
{
    RtMaterial m = rt_material_default();
    memset(m.name, 0, sizeof m.name);
    m.kd = kd;
    m.ks = ks;
    m.ns = shine;
    m.d = 1.0f - fminf(fmaxf(T, 0.0f), 1.0f);
    m.ni = ior > 0.0f ? ior : 1.0f;
    m.reflect = fminf(fmaxf(fmaxf(ks.x, fmaxf(ks.y, ks.z)), 0.0f), 1.0f);
    m.illum = T > 0.0f ? 6 : (m.reflect > 0.0f ? 3 : 2);
    m.map_kd = -1;
    m.map_d = -1;
    return m;
}

static RtStatus cmd_fm(AffLoad *A, AffLex *L, int line)
{
    RtVec3 ka, kd, ks;
    float shine, T, ior;
    RtStatus st;
    if ((st = need_vec3(A, L, &ka, "fm ambient colour")) != RT_OK) return st;
    if ((st = need_vec3(A, L, &kd, "fm diffuse colour")) != RT_OK) return st;
    if ((st = need_vec3(A, L, &ks, "fm specular colour")) != RT_OK) return st;
    if ((st = need_float(A, L, &shine, "fm Phong exponent")) != RT_OK) return st;
    if ((st = need_float(A, L, &T, "fm transmittance")) != RT_OK) return st;
    if ((st = need_float(A, L, &ior, "fm index of refraction")) != RT_OK) return st;
    (void)ka;
    RtMaterial m = material_from_fm(kd, ks, shine, T, ior);
    return set_material(A, L, &m, line);
}

/* f (NFF): colour, Kd, Ks, Shine, T, ior. Highlights are white (NFF), and
 * Ks is also the mirror reflectance. */
static RtStatus cmd_f(AffLoad *A, AffLex *L, int line)
{
    RtVec3 rgb;
    float kd, ks, shine, T, ior;
    RtStatus st;
    if ((st = need_vec3(A, L, &rgb, "f colour")) != RT_OK) return st;
    if ((st = need_float(A, L, &kd, "f Kd")) != RT_OK) return st;
    if ((st = need_float(A, L, &ks, "f Ks")) != RT_OK) return st;
    if ((st = need_float(A, L, &shine, "f Phong exponent")) != RT_OK) return st;
    if ((st = need_float(A, L, &T, "f transmittance")) != RT_OK) return st;
    if ((st = need_float(A, L, &ior, "f index of refraction")) != RT_OK) return st;
    RtMaterial m = material_from_fm(v3_scale(rgb, kd), v3(ks, ks, ks), shine, T, ior);
    return set_material(A, L, &m, line);
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Texture by bare file name: ../TextureFiles/ beside the aff directory (the
 * BART layout), then the aff directory itself. Missing or undecodable: one
 * warning per name, and the primitive keeps its flat colour. */
static RtStatus texture_by_name(AffLoad *A, const AffLex *L, const char *name, int line, int32_t *out)
{
    for (size_t i = 0; i < A->texname_count; i++)
        if (!strcmp(A->texnames[i].name, name)) {
            *out = A->texnames[i].tex;
            return RT_OK;
        }
    char path[PATH_MAX];
    int32_t tex = -1;
    int found = 0;
    for (int k = 0; k < 2 && tex < 0; k++) {
        if (name[0] == '/') snprintf(path, sizeof path, "%s", name);
        else if (k == 0) snprintf(path, sizeof path, "%s/../TextureFiles/%s", A->top_dir, name);
        else snprintf(path, sizeof path, "%s/%s", A->top_dir, name);
        if (!file_exists(path)) continue;
        RtError e;
        found = 1;
        RtStatus st = rt_texture_load(A->s, path, &tex, &e);
        if (st == RT_ERR_OOM) return rt_fail(A->err, st, "%s", e.msg);
        if (st != RT_OK) {
            RT_WARN("AFF", "%s:%d: AFF: texture %s unusable, drawn untextured (%s)", L->path, line, name, e.msg);
            tex = -1;
            break;
        }
    }
    if (!found)
        RT_WARN("AFF", "%s:%d: AFF: texture %s not found in %s/../TextureFiles or %s, drawn untextured", L->path,
                line, name, A->top_dir, A->top_dir);
    if (!aff_grow(&A->texnames, &A->texname_cap, A->texname_count + 1, sizeof *A->texnames))
        return aff_oom(A, L);
    char *dup = strdup(name);
    if (!dup) return aff_oom(A, L);
    A->texnames[A->texname_count].name = dup;
    A->texnames[A->texname_count++].tex = tex;
    *out = tex;
    return RT_OK;
}

/* The current material with texture tex (< 0: the material as is). */
static RtStatus material_for(AffLoad *A, const AffLex *L, int32_t tex, int32_t *out)
{
    if (tex < 0) {
        *out = A->mat;
        return RT_OK;
    }
    for (size_t i = 0; i < A->mattex_count; i++)
        if (A->mattex[i].mat == A->mat && A->mattex[i].tex == tex) {
            *out = A->mattex[i].out;
            return RT_OK;
        }
    RtMaterial m = A->mat >= 0 ? A->s->mats[A->mat] : rt_material_default();
    m.map_kd = tex;
    char name[sizeof m.name];
    snprintf(name, sizeof name, "%.40s+tex%d", m.name, (int)tex);
    memcpy(m.name, name, sizeof m.name);
    int64_t i = rt_scene_add_material(A->s, &m);
    if (i < 0 || !aff_grow(&A->mattex, &A->mattex_cap, A->mattex_count + 1, sizeof *A->mattex))
        return aff_oom(A, L);
    AffMatTex mt = {A->mat, tex, (int32_t)i};
    A->mattex[A->mattex_count++] = mt;
    *out = (int32_t)i;
    return RT_OK;
}

/* ---- emitting geometry ---------------------------------------------------- */

static AffFrame *top(AffLoad *A) { return &A->stack[A->depth - 1]; }

/* The object new non-mesh triangles go to: one per run of the same kind of
 * primitive in the same file. */
static RtStatus prim_object(AffLoad *A, const AffLex *L, int kind, const char *label, int32_t *out)
{
    RtScene *s = A->s;
    if (A->prim_obj >= 0 && A->prim_obj == (int32_t)s->object_count - 1 && A->prim_obj_kind == kind) {
        *out = A->prim_obj;
        return RT_OK;
    }
    const char *base = strrchr(L->path, '/');
    char name[64];
    snprintf(name, sizeof name, "%s:%d %s", base ? base + 1 : L->path, L->line, label);
    int64_t o = rt_scene_add_object(s, name);
    if (o < 0) return aff_oom(A, L);
    A->prim_obj = (int32_t)o;
    A->prim_obj_kind = kind;
    *out = (int32_t)o;
    return RT_OK;
}

static void object_close(RtScene *s, int32_t obj)
{
    s->objects[obj].tri_count = s->tri_count - s->objects[obj].first_tri;
}

/* Adds a vertex given in the current frame's space. */
static RtStatus add_vert(AffLoad *A, const AffLex *L, RtVec3 p, RtVec3 n, float u, float v, uint32_t *out)
{
    const float *m = top(A)->bake;
    RtVertex x;
    x.p = rt_mat34_point(m, p);
    x.n = rt_mat34_normal(m, n);
    x.u = u;
    x.v = v;
    int64_t i = rt_scene_add_vertex(A->s, x);
    if (i < 0) return aff_oom(A, L);
    *out = (uint32_t)i;
    return RT_OK;
}

/* Adds a triangle; a mirroring bake swaps the winding so faces keep their
 * side (as rt_scene_transform does). */
static RtStatus add_tri(AffLoad *A, const AffLex *L, uint32_t a, uint32_t b, uint32_t c, int32_t mat,
                        int32_t obj)
{
    RtTriangle t;
    int mirror = rt_mat34_det(top(A)->bake) < 0.0f;
    t.v[0] = a;
    t.v[1] = mirror ? c : b;
    t.v[2] = mirror ? b : c;
    t.material = mat;
    t.object = (uint32_t)obj;
    if (rt_scene_add_triangle(A->s, t) < 0) return aff_oom(A, L);
    return RT_OK;
}

/* Assigns the vertices added since first to the frame's animated node. */
static RtStatus assign_node(AffLoad *A, uint32_t first)
{
    uint32_t node = top(A)->node;
    if (node == RT_ANIM_STATIC || A->s->vert_count == first) return RT_OK;
    return rt_anim_set_vert_node(&A->s->anim, A->s->vert_count, first, A->s->vert_count - first, node, A->err);
}

static RtVec3 tri_normal(RtVec3 a, RtVec3 b, RtVec3 c)
{
    return v3_norm(v3_cross(v3_sub(b, a), v3_sub(c, a)));
}

/* ---- p, pp, tt, ttp: polygons and textured triangles ---------------------- */

enum { AFF_KIND_POLY = 1, AFF_KIND_TT, AFF_KIND_TPA, AFF_KIND_CONE };

/* p/pp n: a convex planar polygon, fanned from vertex 0 (aff.md 3.7). */
static RtStatus cmd_polygon(AffLoad *A, AffLex *L, int with_normals)
{
    uint32_t n;
    RtStatus st = need_count(A, L, 3, with_normals ? 12 : 6, &n, with_normals ? "pp vertex count" : "p vertex count");
    if (st != RT_OK) return st;
    if (!aff_grow(&A->mv, &A->mv_cap, n, sizeof *A->mv) || !aff_grow(&A->mn, &A->mn_cap, n, sizeof *A->mn))
        return aff_oom(A, L);
    for (uint32_t i = 0; i < n; i++) {
        if ((st = need_vec3(A, L, &A->mv[i], "polygon vertex x y z")) != RT_OK) return st;
        A->mn[i] = v3(0, 0, 0);
        if (with_normals && (st = need_vec3(A, L, &A->mn[i], "polygon normal nx ny nz")) != RT_OK) return st;
    }
    /* Newell's normal: robust for any planar polygon, even with collinear
     * leading vertices. */
    RtVec3 nn = v3(0, 0, 0);
    for (uint32_t i = 0; i < n; i++) {
        RtVec3 a = A->mv[i], b = A->mv[(i + 1) % n];
        nn.x += (a.y - b.y) * (a.z + b.z);
        nn.y += (a.z - b.z) * (a.x + b.x);
        nn.z += (a.x - b.x) * (a.y + b.y);
    }
    nn = v3_norm(nn);
    int32_t obj;
    if ((st = prim_object(A, L, AFF_KIND_POLY, "polygons", &obj)) != RT_OK) return st;
    uint32_t first = A->s->vert_count, v0 = 0;
    for (uint32_t i = 0; i < n; i++) {
        RtVec3 nv = with_normals && v3_dot(A->mn[i], A->mn[i]) > 0.0f ? v3_norm(A->mn[i]) : nn;
        uint32_t idx;
        if ((st = add_vert(A, L, A->mv[i], nv, 0.0f, 0.0f, &idx)) != RT_OK) return st;
        if (i == 0) v0 = idx;
    }
    for (uint32_t k = 1; k + 1 < n; k++)
        if ((st = add_tri(A, L, v0, v0 + k, v0 + k + 1, A->mat, obj)) != RT_OK) return st;
    object_close(A->s, obj);
    return assign_node(A, first);
}

/* tt/ttp texname: one textured triangle (aff.md 3.8). v = 0 is the top row
 * of the image in AFF, the bottom in RtScene (OBJ), hence 1 - v. */
static RtStatus cmd_textured_tri(AffLoad *A, AffLex *L, int with_normals, int line)
{
    char name[AFF_FILE_NAME_MAX + 1];
    RtStatus st = need_name(A, L, name, AFF_FILE_NAME_MAX, "a texture file name");
    if (st != RT_OK) return st;
    RtVec3 p[3], n[3];
    float uv[3][2];
    for (int i = 0; i < 3; i++) {
        if ((st = need_vec3(A, L, &p[i], "triangle vertex x y z")) != RT_OK) return st;
        n[i] = v3(0, 0, 0);
        if (with_normals && (st = need_vec3(A, L, &n[i], "triangle normal nx ny nz")) != RT_OK) return st;
        if ((st = need_float(A, L, &uv[i][0], "texture coordinate u")) != RT_OK) return st;
        if ((st = need_float(A, L, &uv[i][1], "texture coordinate v")) != RT_OK) return st;
    }
    int32_t tex, mat, obj;
    if ((st = texture_by_name(A, L, name, line, &tex)) != RT_OK) return st;
    if ((st = material_for(A, L, tex, &mat)) != RT_OK) return st;
    if ((st = prim_object(A, L, AFF_KIND_TT, "textured triangles", &obj)) != RT_OK) return st;
    RtVec3 gn = tri_normal(p[0], p[1], p[2]);
    uint32_t first = A->s->vert_count, idx[3];
    for (int i = 0; i < 3; i++) {
        RtVec3 nv = v3_dot(n[i], n[i]) > 0.0f ? v3_norm(n[i]) : gn;
        if ((st = add_vert(A, L, p[i], nv, uv[i][0], 1.0f - uv[i][1], &idx[i])) != RT_OK) return st;
    }
    if ((st = add_tri(A, L, idx[0], idx[1], idx[2], mat, obj)) != RT_OK) return st;
    object_close(A->s, obj);
    return assign_node(A, first);
}

/* ---- tpa: an animated triangle patch --------------------------------------- */

/* tpa N: N records of a time and 3 vertices with normals, interpolated
 * linearly (aff.md 3.9) -> one RtAnimMorph of 3 vertices in the frame's
 * space. The data's normals are far from unit length (down to 1e-5), so
 * they are normalised; a zero one becomes the record's geometric normal. */
static RtStatus cmd_tpa(AffLoad *A, AffLex *L)
{
    uint32_t n;
    RtStatus st = need_count(A, L, 1, 38, &n, "tpa record count");
    if (st != RT_OK) return st;
    RtAnimMorph mo;
    memset(&mo, 0, sizeof mo);
    mo.vert_count = 3;
    mo.key_count = n;
    mo.times = malloc(n * sizeof *mo.times);
    mo.pos = malloc((size_t)n * 3 * sizeof *mo.pos);
    mo.nrm = malloc((size_t)n * 3 * sizeof *mo.nrm);
    if (!mo.times || !mo.pos || !mo.nrm) {
        st = aff_oom(A, L);
        goto fail;
    }
    const float *m = top(A)->bake;
    for (uint32_t k = 0; k < n; k++) {
        if ((st = need_float(A, L, &mo.times[k], "tpa record time")) != RT_OK) goto fail;
        int line = L->line; /* of the time just read */
        if (k > 0 && mo.times[k] < mo.times[k - 1]) {
            st = aff_fail(A, L, line, "expected tpa record times in non-decreasing order (%g after %g)",
                          (double)mo.times[k], (double)mo.times[k - 1]);
            goto fail;
        }
        RtVec3 p[3], nv[3];
        for (int i = 0; i < 3; i++) {
            if ((st = need_vec3(A, L, &p[i], "tpa vertex x y z")) != RT_OK) goto fail;
            if ((st = need_vec3(A, L, &nv[i], "tpa normal nx ny nz")) != RT_OK) goto fail;
        }
        RtVec3 gn = tri_normal(p[0], p[1], p[2]);
        for (int i = 0; i < 3; i++) {
            RtVec3 nn = v3_len(nv[i]) > 1e-20f ? v3_norm(nv[i]) : gn;
            mo.pos[3 * k + i] = rt_mat34_point(m, p[i]);
            mo.nrm[3 * k + i] = rt_mat34_normal(m, nn);
        }
    }
    int32_t obj;
    if ((st = prim_object(A, L, AFF_KIND_TPA, "tpa", &obj)) != RT_OK) goto fail;
    mo.first_vert = A->s->vert_count;
    for (int i = 0; i < 3; i++) {
        RtVertex x = {mo.pos[i], mo.nrm[i], 0.0f, 0.0f};
        if (rt_scene_add_vertex(A->s, x) < 0) {
            st = aff_oom(A, L);
            goto fail;
        }
    }
    RtTriangle t = {{mo.first_vert, mo.first_vert + 1, mo.first_vert + 2}, A->mat, (uint32_t)obj};
    if (rt_mat34_det(m) < 0.0f) t.v[1] = mo.first_vert + 2, t.v[2] = mo.first_vert + 1;
    if (rt_scene_add_triangle(A->s, t) < 0) {
        st = aff_oom(A, L);
        goto fail;
    }
    object_close(A->s, obj);
    if ((st = assign_node(A, mo.first_vert)) != RT_OK) goto fail;
    if (rt_anim_add_morph(&A->s->anim, &mo) < 0) {
        st = aff_oom(A, L);
        goto fail;
    }
    A->tpas++;
    return RT_OK;
fail:
    free(mo.times);
    free(mo.pos);
    free(mo.nrm);
    return st;
}

/* ---- c, s: cones/cylinders and spheres -------------------------------------- */

/* c base radius apex radius: an open cone frustum (no caps), tessellated
 * into AFF_CONE_SEGMENTS quads with smooth normals. A negative base radius
 * means "inside visible": radii negated, normals and winding turned in. */
static RtStatus cmd_cone(AffLoad *A, AffLex *L, int line)
{
    RtVec3 b, a;
    float br, ar;
    RtStatus st;
    if ((st = need_vec3(A, L, &b, "cone base centre x y z")) != RT_OK) return st;
    if ((st = need_float(A, L, &br, "cone base radius")) != RT_OK) return st;
    if ((st = need_vec3(A, L, &a, "cone apex centre x y z")) != RT_OK) return st;
    if ((st = need_float(A, L, &ar, "cone apex radius")) != RT_OK) return st;
    int inside = br < 0.0f;
    if (inside) br = -br, ar = -ar;
    RtVec3 d = v3_sub(a, b);
    float h = v3_len(d);
    if (!(h > 0.0f) || (br == 0.0f && ar == 0.0f)) {
        RT_WARN("AFF", "%s:%d: AFF: degenerate cone (zero height or radii), skipped", L->path, line);
        return RT_OK;
    }
    RtVec3 w = v3_scale(d, 1.0f / h);
    RtVec3 u = v3_norm(v3_cross(w, fabsf(w.x) < 0.9f ? v3(1, 0, 0) : v3(0, 1, 0)));
    RtVec3 v = v3_cross(w, u);
    int32_t obj;
    if ((st = prim_object(A, L, AFF_KIND_CONE, "cones", &obj)) != RT_OK) return st;
    uint32_t first = A->s->vert_count;
    const int n = AFF_CONE_SEGMENTS;
    for (int j = 0; j <= n; j++) {
        double th = 2.0 * 3.14159265358979323846 * j / n;
        RtVec3 r = v3_add(v3_scale(u, (float)cos(th)), v3_scale(v, (float)sin(th)));
        /* The slant normal: r tilted along the axis by (br - ar) / h. */
        RtVec3 nn = v3_norm(v3_add(r, v3_scale(w, (br - ar) / h)));
        if (inside) nn = v3_scale(nn, -1.0f);
        uint32_t i0, i1;
        if ((st = add_vert(A, L, v3_add(b, v3_scale(r, br)), nn, (float)j / n, 0.0f, &i0)) != RT_OK) return st;
        if ((st = add_vert(A, L, v3_add(a, v3_scale(r, ar)), nn, (float)j / n, 1.0f, &i1)) != RT_OK) return st;
    }
    for (int j = 0; j < n; j++) {
        uint32_t b0 = first + 2 * j, a0 = b0 + 1, b1 = b0 + 2, a1 = b0 + 3;
        if (inside) {
            if ((st = add_tri(A, L, b0, a1, b1, A->mat, obj)) != RT_OK) return st;
            if ((st = add_tri(A, L, b0, a0, a1, A->mat, obj)) != RT_OK) return st;
        } else {
            if ((st = add_tri(A, L, b0, b1, a1, A->mat, obj)) != RT_OK) return st;
            if ((st = add_tri(A, L, b0, a1, a0, A->mat, obj)) != RT_OK) return st;
        }
    }
    object_close(A->s, obj);
    A->cones++;
    return assign_node(A, first);
}

/* s centre radius: a UV sphere; a negative radius shows the inside. */
static RtStatus cmd_sphere(AffLoad *A, AffLex *L, int line)
{
    RtVec3 c;
    float r;
    RtStatus st;
    if ((st = need_vec3(A, L, &c, "sphere centre x y z")) != RT_OK) return st;
    if ((st = need_float(A, L, &r, "sphere radius")) != RT_OK) return st;
    if (r == 0.0f) {
        RT_WARN("AFF", "%s:%d: AFF: sphere of radius 0, skipped", L->path, line);
        return RT_OK;
    }
    float m[12];
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(fabsf(r), fabsf(r), fabsf(r)));
    rt_mat34_translate(m, c);
    rt_mat34_mul(m, top(A)->bake, m);
    uint32_t v0 = A->s->vert_count, t0 = A->s->tri_count;
    const char *base = strrchr(L->path, '/');
    char name[64];
    snprintf(name, sizeof name, "%s:%d sphere", base ? base + 1 : L->path, line);
    if ((st = rt_prim_sphere(A->s, m, A->mat, AFF_SPHERE_SEGMENTS, name, A->err)) != RT_OK) return st;
    if (r < 0.0f) {
        for (uint32_t i = v0; i < A->s->vert_count; i++) A->s->verts[i].n = v3_scale(A->s->verts[i].n, -1.0f);
        for (uint32_t i = t0; i < A->s->tri_count; i++) {
            uint32_t x = A->s->tris[i].v[1];
            A->s->tris[i].v[1] = A->s->tris[i].v[2];
            A->s->tris[i].v[2] = x;
        }
    }
    A->prim_obj = -1;
    return assign_node(A, v0);
}

/* ---- m: indexed triangle mesh ----------------------------------------------- */

static uint32_t corner_hash(uint32_t v, uint32_t n, uint32_t t)
{
    uint64_t h = (uint64_t)v * 0x9E3779B97F4A7C15ull ^ (uint64_t)n * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)t * 0x165667B19E3779F9ull;
    return (uint32_t)(h ^ (h >> 29));
}

static RtStatus cmd_mesh(AffLoad *A, AffLex *L, int line)
{
    RtStatus st;
    AffTok t;
    char b[40];
    uint32_t nv, nn = 0, nt = 0, nf;
    int has_n = 0, has_t = 0;
    char texname[AFF_FILE_NAME_MAX + 1] = "";

    if ((st = need_word(A, L, "vertices", "after 'm'")) != RT_OK) return st;
    if ((st = need_count(A, L, 0, 6, &nv, "vertex count")) != RT_OK) return st;
    if (!aff_grow(&A->mv, &A->mv_cap, nv, sizeof *A->mv)) return aff_oom(A, L);
    for (uint32_t i = 0; i < nv; i++)
        if ((st = need_vec3(A, L, &A->mv[i], "mesh vertex x y z")) != RT_OK) return st;

    if (!lex_next(L, &t)) return aff_fail(A, L, t.line, "expected 'normals', 'texturecoords' or 'triangles', got end of file");
    if (tok_is(&t, "normals")) {
        has_n = 1;
        if ((st = need_count(A, L, 0, 6, &nn, "normal count")) != RT_OK) return st;
        if (!aff_grow(&A->mn, &A->mn_cap, nn, sizeof *A->mn)) return aff_oom(A, L);
        for (uint32_t i = 0; i < nn; i++)
            if ((st = need_vec3(A, L, &A->mn[i], "mesh normal nx ny nz")) != RT_OK) return st;
        if (!lex_next(L, &t)) return aff_fail(A, L, t.line, "expected 'texturecoords' or 'triangles', got end of file");
    }
    int tex_line = t.line;
    if (tok_is(&t, "texturecoords")) {
        has_t = 1;
        if ((st = need_count(A, L, 0, 4, &nt, "texture coordinate count")) != RT_OK) return st;
        if ((st = need_name(A, L, texname, AFF_FILE_NAME_MAX, "a texture file name")) != RT_OK) return st;
        if (!aff_grow(&A->mt, &A->mt_cap, (size_t)nt * 2, sizeof *A->mt)) return aff_oom(A, L);
        for (uint32_t i = 0; i < nt; i++) {
            if ((st = need_float(A, L, &A->mt[2 * i], "texture coordinate u")) != RT_OK) return st;
            if ((st = need_float(A, L, &A->mt[2 * i + 1], "texture coordinate v")) != RT_OK) return st;
        }
        if (!lex_next(L, &t)) return aff_fail(A, L, t.line, "expected 'triangles', got end of file");
    }
    if (!tok_is(&t, "triangles"))
        return aff_fail(A, L, t.line, "expected '%s' in mesh, got %s",
                        has_t ? "triangles" : (has_n ? "texturecoords' or 'triangles" : "normals', 'texturecoords' or 'triangles"),
                        tok_excerpt(&t, b));
    int per = 3 * (1 + has_n + has_t);
    if ((st = need_count(A, L, 0, (size_t)per * 2, &nf, "triangle count")) != RT_OK) return st;
    if (!aff_grow(&A->mtri, &A->mtri_cap, (size_t)nf * 9, sizeof *A->mtri)) return aff_oom(A, L);
    /* A row is 3 vertex, then 3 normal, then 3 texcoord indices, each in
     * its own index space (aff.md 3.10). */
    for (uint32_t f = 0; f < nf; f++) {
        uint32_t *row = &A->mtri[9 * (size_t)f];
        row[3] = row[4] = row[5] = row[6] = row[7] = row[8] = 0;
        for (int k = 0; k < per; k++) {
            int section = k / 3;
            const char *what = section == 0 ? "vertex index" : (section == 1 && has_n ? "normal index" : "texture coordinate index");
            uint32_t limit = section == 0 ? nv : (section == 1 && has_n ? nn : nt);
            long long v;
            if (!lex_next(L, &t) || !tok_int(&t, &v))
                return aff_fail(A, L, t.line, "expected %s (an integer), got %s", what, tok_excerpt(&t, b));
            if (v < 0 || v >= (long long)limit)
                return aff_fail(A, L, t.line, "expected %s in [0, %u), got %lld", what, limit, v);
            int slot = section == 0 ? k : (section == 1 && has_n ? k : 6 + k % 3);
            row[slot] = (uint32_t)v;
        }
    }

    int32_t tex = -1, mat, obj;
    if (has_t && (st = texture_by_name(A, L, texname, tex_line, &tex)) != RT_OK) return st;
    if ((st = material_for(A, L, tex, &mat)) != RT_OK) return st;
    const char *base = strrchr(L->path, '/');
    char oname[64];
    snprintf(oname, sizeof oname, "%s:%d", base ? base + 1 : L->path, line);
    int64_t o = rt_scene_add_object(A->s, oname);
    if (o < 0) return aff_oom(A, L);
    obj = (int32_t)o;
    A->prim_obj = -1;
    uint32_t first = A->s->vert_count;

    if (!has_n) {
        /* No normals: flat shading, as NFF draws polygons; every triangle
         * gets its own corners with the geometric normal. */
        for (uint32_t f = 0; f < nf; f++) {
            const uint32_t *row = &A->mtri[9 * (size_t)f];
            RtVec3 gn = tri_normal(A->mv[row[0]], A->mv[row[1]], A->mv[row[2]]);
            uint32_t idx[3];
            for (int k = 0; k < 3; k++) {
                float u = has_t ? A->mt[2 * row[6 + k]] : 0.0f, v = has_t ? 1.0f - A->mt[2 * row[6 + k] + 1] : 0.0f;
                if ((st = add_vert(A, L, A->mv[row[k]], gn, u, v, &idx[k])) != RT_OK) return st;
            }
            if ((st = add_tri(A, L, idx[0], idx[1], idx[2], mat, obj)) != RT_OK) return st;
        }
        A->flat_tris += nf;
    } else {
        /* Each distinct (vertex, normal, texcoord) corner becomes one scene
         * vertex: door.aff's 8 positions with 24 normals make 24. */
        size_t hcap = 16;
        while (hcap < (size_t)nf * 6) hcap *= 2;
        if (!aff_grow(&A->hash, &A->hash_cap, hcap, sizeof *A->hash)) return aff_oom(A, L);
        for (size_t i = 0; i < hcap; i++) A->hash[i].out = UINT32_MAX;
        for (uint32_t f = 0; f < nf; f++) {
            const uint32_t *row = &A->mtri[9 * (size_t)f];
            uint32_t idx[3];
            for (int k = 0; k < 3; k++) {
                uint32_t vi = row[k], ni = row[3 + k], ti = has_t ? row[6 + k] : 0;
                size_t h = corner_hash(vi, ni, ti) & (hcap - 1);
                while (A->hash[h].out != UINT32_MAX &&
                       !(A->hash[h].v == vi && A->hash[h].n == ni && A->hash[h].t == ti))
                    h = (h + 1) & (hcap - 1);
                if (A->hash[h].out == UINT32_MAX) {
                    float u = has_t ? A->mt[2 * ti] : 0.0f, v = has_t ? 1.0f - A->mt[2 * ti + 1] : 0.0f;
                    if ((st = add_vert(A, L, A->mv[vi], v3_norm(A->mn[ni]), u, v, &A->hash[h].out)) != RT_OK)
                        return st;
                    A->hash[h].v = vi, A->hash[h].n = ni, A->hash[h].t = ti;
                }
                idx[k] = A->hash[h].out;
            }
            if ((st = add_tri(A, L, idx[0], idx[1], idx[2], mat, obj)) != RT_OK) return st;
        }
    }
    object_close(A->s, obj);
    A->meshes++;
    return assign_node(A, first);
}

/* ---- lights, view, background ------------------------------------------------ */

/* l X Y Z [R G B] and la name X Y Z [R G B]. The colour is optional; it is
 * there when the next token is a number (never probed with scanf, which
 * eats the `i` of a following include as the start of "inf"). */
static RtStatus cmd_light(AffLoad *A, AffLex *L, int animated)
{
    RtStatus st;
    AffNamed named;
    memset(&named, 0, sizeof named);
    if (animated && (st = need_name(A, L, named.name, AFF_NAME_MAX, "an animation name after 'la'")) != RT_OK)
        return st;
    RtLight l;
    l.type = RT_LIGHT_POINT;
    l.color = v3(1, 1, 1);
    if ((st = need_vec3(A, L, &l.v, "light position x y z")) != RT_OK) return st;
    if (peek_is_number(L) && (st = need_vec3(A, L, &l.color, "light colour r g b")) != RT_OK) return st;
    int64_t i = rt_scene_add_light(A->s, l);
    if (i < 0) return aff_oom(A, L);
    if (animated) {
        named.index = (uint32_t)i;
        if (!aff_grow(&A->alights, &A->alight_cap, A->alight_count + 1, sizeof *A->alights)) return aff_oom(A, L);
        A->alights[A->alight_count++] = named;
    }
    return RT_OK;
}

/* v: from, at, up, angle, hither, resolution, in this order (aff.md 3.1). */
static RtStatus cmd_view(AffLoad *A, AffLex *L)
{
    RtStatus st;
    RtCamera c;
    float hither;
    long long w, h;
    if ((st = need_word(A, L, "from", "in view 'v'")) != RT_OK) return st;
    if ((st = need_vec3(A, L, &c.pos, "view 'from' x y z")) != RT_OK) return st;
    if ((st = need_word(A, L, "at", "in view 'v'")) != RT_OK) return st;
    if ((st = need_vec3(A, L, &c.look, "view 'at' x y z")) != RT_OK) return st;
    if ((st = need_word(A, L, "up", "in view 'v'")) != RT_OK) return st;
    if ((st = need_vec3(A, L, &c.up, "view 'up' x y z")) != RT_OK) return st;
    if ((st = need_word(A, L, "angle", "in view 'v'")) != RT_OK) return st;
    if ((st = need_float(A, L, &c.fov_y, "view angle (degrees)")) != RT_OK) return st;
    if ((st = need_word(A, L, "hither", "in view 'v'")) != RT_OK) return st;
    if ((st = need_float(A, L, &hither, "view hither distance")) != RT_OK) return st;
    if ((st = need_word(A, L, "resolution", "in view 'v'")) != RT_OK) return st;
    if ((st = need_int(A, L, 1, 1 << 16, &w, "view resolution width")) != RT_OK) return st;
    if ((st = need_int(A, L, 1, 1 << 16, &h, "view resolution height")) != RT_OK) return st;
    if (!(c.fov_y > 0.0f && c.fov_y < 180.0f))
        return aff_fail(A, L, L->line, "expected a view angle in (0, 180) degrees, got %g", (double)c.fov_y);
    A->s->camera = c;
    A->s->has_camera = 1;
    return RT_OK;
}

static RtStatus cmd_color(AffLoad *A, AffLex *L, RtVec3 *out, int *has, const char *what)
{
    RtStatus st = need_vec3(A, L, out, what);
    if (st == RT_OK) *has = 1;
    return st;
}

/* ---- transforms ------------------------------------------------------------ */

static RtStatus push_frame(AffLoad *A, const AffLex *L, uint32_t node, const float bake[12], int line)
{
    if (!aff_grow(&A->stack, &A->stack_cap, A->depth + 1, sizeof *A->stack)) return aff_oom(A, L);
    AffFrame *f = &A->stack[A->depth];
    f->node = node;
    memcpy(f->bake, bake, sizeof f->bake);
    f->file = strdup(L->path);
    f->line = line;
    if (!f->file) return aff_oom(A, L);
    A->depth++;
    return RT_OK;
}

static RtStatus need_open_brace(AffLoad *A, AffLex *L, const char *what)
{
    AffTok t;
    char b[40];
    if (!lex_next(L, &t) || !tok_is(&t, "{"))
        return aff_fail(A, L, t.line, "expected '{' after %s, got %s", what, tok_excerpt(&t, b));
    return RT_OK;
}

/* xs scale, axis + degrees, translation: M = T R S (aff.md 3.12), folded
 * into the frame's bake matrix. */
static RtStatus cmd_xs(AffLoad *A, AffLex *L)
{
    RtVec3 sc, ax, tr;
    float deg;
    RtStatus st;
    int line = L->line;
    if ((st = need_vec3(A, L, &sc, "xs scale x y z")) != RT_OK) return st;
    if ((st = need_vec3(A, L, &ax, "xs rotation axis x y z")) != RT_OK) return st;
    if ((st = need_float(A, L, &deg, "xs rotation angle (degrees)")) != RT_OK) return st;
    if ((st = need_vec3(A, L, &tr, "xs translation x y z")) != RT_OK) return st;
    if ((st = need_open_brace(A, L, "'xs'")) != RT_OK) return st;
    float m[12];
    rt_mat34_identity(m);
    rt_mat34_scale(m, sc);
    rt_mat34_rotate(m, ax, deg);
    rt_mat34_translate(m, tr);
    rt_mat34_mul(m, top(A)->bake, m);
    return push_frame(A, L, top(A)->node, m, line);
}

static int mat_is_identity(const float m[12])
{
    static const float id[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
    return !memcmp(m, id, sizeof id);
}

/* x name: an animated node. Its parent is the enclosing node, with the
 * static transforms in between as an RT_NODE_STATIC node of their own
 * (RT_NODE_TRACK applies its m inside the track, not outside). */
static RtStatus cmd_x(AffLoad *A, AffLex *L)
{
    AffNamed named;
    memset(&named, 0, sizeof named);
    int line = L->line;
    RtStatus st = need_name(A, L, named.name, AFF_NAME_MAX, "an animation name after 'x'");
    if (st != RT_OK) return st;
    if ((st = need_open_brace(A, L, "'x name'")) != RT_OK) return st;
    RtAnim *an = &A->s->anim;
    const AffFrame *f = top(A);
    int32_t parent = f->node == RT_ANIM_STATIC ? -1 : (int32_t)f->node;
    RtAnimNode n;
    memset(&n, 0, sizeof n);
    if (!mat_is_identity(f->bake)) {
        n.parent = parent;
        n.kind = RT_NODE_STATIC;
        n.track = -1;
        memcpy(n.m, f->bake, sizeof n.m);
        int64_t i = rt_anim_add_node(an, &n);
        if (i < 0) return aff_oom(A, L);
        parent = (int32_t)i;
    }
    n.parent = parent;
    n.kind = RT_NODE_TRACK;
    n.track = -1; /* resolved after the whole file (aff.md 3.15: the last k of the name) */
    rt_mat34_identity(n.m);
    int64_t i = rt_anim_add_node(an, &n);
    if (i < 0) return aff_oom(A, L);
    named.index = (uint32_t)i;
    if (!aff_grow(&A->xnodes, &A->xnode_cap, A->xnode_count + 1, sizeof *A->xnodes)) return aff_oom(A, L);
    A->xnodes[A->xnode_count++] = named;
    float id[12];
    rt_mat34_identity(id);
    return push_frame(A, L, (uint32_t)i, id, line);
}

static RtStatus cmd_close(AffLoad *A, AffLex *L, int line)
{
    if (A->depth <= 1) return aff_fail(A, L, line, "expected a command, got '}' with no open 'x' or 'xs' block");
    free(top(A)->file);
    A->depth--;
    return RT_OK;
}

/* ---- k: keyframe blocks ---------------------------------------------------- */

static void track_free(RtAnimTrack *t)
{
    free(t->transl.keys);
    free(t->rot.keys);
    free(t->scale.keys);
    free(t->visibility.keys);
    memset(t, 0, sizeof *t);
}

/* k name { transl|rot|scale|visibility N rows ... } (aff.md 3.15). */
static RtStatus cmd_k(AffLoad *A, AffLex *L)
{
    RtAnimTrack tr;
    memset(&tr, 0, sizeof tr);
    RtStatus st = need_name(A, L, tr.name, AFF_NAME_MAX, "an animation name after 'k'");
    if (st != RT_OK) return st;
    if ((st = need_open_brace(A, L, "'k name'")) != RT_OK) return st;
    AffTok t;
    char b[40];
    for (;;) {
        if (!lex_next(L, &t)) {
            st = aff_fail(A, L, t.line, "expected a channel or '}' in 'k %s', got end of file", tr.name);
            goto fail;
        }
        if (tok_is(&t, "}")) break;
        if (tok_is_comment(&t)) {
            lex_skip_line(L);
            continue;
        }
        RtKbChannel *c;
        int nv, min;
        const char *cname;
        if (tok_is(&t, "transl")) c = &tr.transl, nv = 3, min = 4, cname = "transl";
        else if (tok_is(&t, "rot")) c = &tr.rot, nv = 4, min = 4, cname = "rot";
        else if (tok_is(&t, "scale")) c = &tr.scale, nv = 3, min = 4, cname = "scale";
        else if (tok_is(&t, "visibility")) c = &tr.visibility, nv = 1, min = 1, cname = "visibility";
        else {
            st = aff_fail(A, L, t.line, "expected 'transl', 'rot', 'scale', 'visibility' or '}' in 'k %s', got %s",
                          tr.name, tok_excerpt(&t, b));
            goto fail;
        }
        int kline = t.line;
        int tcb = nv > 1;
        uint32_t n;
        if ((st = need_count(A, L, 0, (size_t)(1 + nv + 3 * tcb) * 2, &n, "key count")) != RT_OK) goto fail;
        if ((int64_t)n < min) {
            st = aff_fail(A, L, kline, "expected at least %d keys in '%s' of 'k %s' (the spline needs them), got %u",
                          min, cname, tr.name, n);
            goto fail;
        }
        RtKbKey *keys = calloc(n, sizeof *keys);
        if (!keys) {
            st = aff_oom(A, L);
            goto fail;
        }
        /* A repeated channel overwrites the earlier one, as in the reference. */
        free(c->keys);
        c->keys = keys;
        c->count = n;
        for (uint32_t i = 0; i < n; i++) {
            RtKbKey *k = &keys[i];
            if ((st = need_float(A, L, &k->t, "key time")) != RT_OK) goto fail;
            for (int j = 0; j < nv; j++)
                if ((st = need_float(A, L, &k->v[j], nv == 1 ? "visibility flag" : "key value")) != RT_OK) goto fail;
            if (tcb) {
                if ((st = need_float(A, L, &k->tension, "key tension")) != RT_OK) goto fail;
                if ((st = need_float(A, L, &k->continuity, "key continuity")) != RT_OK) goto fail;
                if ((st = need_float(A, L, &k->bias, "key bias")) != RT_OK) goto fail;
            }
        }
    }
    if (rt_anim_add_track(&A->s->anim, &tr) < 0) {
        st = aff_oom(A, L);
        goto fail;
    }
    return RT_OK;
fail:
    track_free(&tr);
    return st;
}

/* ---- files and includes ---------------------------------------------------- */

static RtStatus parse_file(AffLoad *A, const char *path, int depth_line, const AffLex *from);

/* Reads a file once; includes of the same file (color1.aff: 291 times)
 * reuse the bytes. The lexer never writes into them. */
static RtStatus file_get(AffLoad *A, const char *path, size_t *out)
{
    for (size_t i = 0; i < A->file_count; i++)
        if (!strcmp(A->files[i].path, path)) {
            *out = i;
            return RT_OK;
        }
    AffFile f;
    RtStatus st = rt_read_file(path, "AFF", AFF_MAX_FILE_BYTES, &f.data, &f.size, A->err);
    if (st != RT_OK) return st;
    f.path = strdup(path);
    if (!f.path || !aff_grow(&A->files, &A->file_cap, A->file_count + 1, sizeof *A->files)) {
        free(f.path);
        free(f.data);
        return rt_fail(A->err, RT_ERR_OOM, "%s: AFF: out of memory", path);
    }
    A->files[A->file_count] = f;
    *out = A->file_count++;
    return RT_OK;
}

/* i level filename: spliced in when level <= the `d` level. Names resolve
 * against the top-level file's directory (every BART scene keeps its aff
 * files in one folder), then the including file's. A missing file is a
 * warning (museum7.aff names an absent animart7.aff, aff.md 8.4). */
static RtStatus cmd_include(AffLoad *A, AffLex *L, int line)
{
    long long level;
    char name[AFF_FILE_NAME_MAX + 1];
    RtStatus st = need_int(A, L, INT_MIN, INT_MAX, &level, "include detail level");
    if (st != RT_OK) return st;
    if ((st = need_name(A, L, name, AFF_FILE_NAME_MAX, "an include file name")) != RT_OK) return st;
    if (level > A->detail) return RT_OK;
    char path[PATH_MAX];
    if (name[0] == '/') snprintf(path, sizeof path, "%s", name);
    else snprintf(path, sizeof path, "%s/%s", A->top_dir, name);
    if (!file_exists(path) && name[0] != '/') {
        const char *slash = strrchr(L->path, '/');
        if (slash) snprintf(path, sizeof path, "%.*s/%s", (int)(slash - L->path), L->path, name);
    }
    if (!file_exists(path)) {
        struct stat sb;
        if (stat(path, &sb) == 0)
            return rt_fail(A->err, RT_ERR_IO, "%s:%d: AFF: include %s %s; expected a regular file", L->path, line,
                          path, rt_file_kind(sb.st_mode));
        RT_WARN("AFF", "%s:%d: AFF: include %s not found, skipped", L->path, line, name);
        A->missing_includes++;
        return RT_OK;
    }
    A->includes++;
    return parse_file(A, path, line, L);
}

static RtStatus cmd_anim_range(AffLoad *A, AffLex *L)
{
    float t0, t1;
    long long n;
    RtStatus st;
    if ((st = need_float(A, L, &t0, "animation start time")) != RT_OK) return st;
    if ((st = need_float(A, L, &t1, "animation end time")) != RT_OK) return st;
    if ((st = need_int(A, L, 1, INT_MAX, &n, "animation frame count")) != RT_OK) return st;
    A->s->anim.t_start = t0;
    A->s->anim.t_end = t1;
    A->s->anim.frames = (int)n;
    return RT_OK;
}

/* One command at the lexer's position; *done at the end of the file. */
static RtStatus parse_command(AffLoad *A, AffLex *L, int *done)
{
    AffTok t;
    char b[40];
    if (!lex_next(L, &t)) {
        *done = 1;
        return RT_OK;
    }
    int line = t.line;
    if (tok_is_comment(&t)) {
        lex_skip_line(L);
        return RT_OK;
    }
    if (tok_is(&t, "m")) return cmd_mesh(A, L, line);
    if (tok_is(&t, "i")) return cmd_include(A, L, line);
    if (tok_is(&t, "fm")) return cmd_fm(A, L, line);
    if (tok_is(&t, "xs")) return cmd_xs(A, L);
    if (tok_is(&t, "x")) return cmd_x(A, L);
    if (tok_is(&t, "}")) return cmd_close(A, L, line);
    if (tok_is(&t, "k")) return cmd_k(A, L);
    if (tok_is(&t, "p")) return cmd_polygon(A, L, 0);
    if (tok_is(&t, "pp")) return cmd_polygon(A, L, 1);
    if (tok_is(&t, "tt")) return cmd_textured_tri(A, L, 0, line);
    if (tok_is(&t, "ttp")) return cmd_textured_tri(A, L, 1, line);
    if (tok_is(&t, "tpa")) return cmd_tpa(A, L);
    if (tok_is(&t, "c")) return cmd_cone(A, L, line);
    if (tok_is(&t, "s")) return cmd_sphere(A, L, line);
    if (tok_is(&t, "l")) return cmd_light(A, L, 0);
    if (tok_is(&t, "la")) return cmd_light(A, L, 1);
    if (tok_is(&t, "f")) return cmd_f(A, L, line);
    if (tok_is(&t, "v")) return cmd_view(A, L);
    if (tok_is(&t, "b")) return cmd_color(A, L, &A->s->background, &A->s->has_background, "background colour r g b");
    if (tok_is(&t, "am")) return cmd_color(A, L, &A->s->ambient, &A->s->has_ambient, "ambient colour r g b");
    if (tok_is(&t, "a")) return cmd_anim_range(A, L);
    if (tok_is(&t, "d")) {
        long long d;
        RtStatus st = need_int(A, L, INT_MIN, INT_MAX, &d, "detail level");
        if (st == RT_OK) A->detail = (int)d;
        return st;
    }
    return aff_fail(A, L, line,
                    "unknown command %s (expected one of v b am l la f fm c s p pp tt ttp tpa m i d x xs } k a)",
                    tok_excerpt(&t, b));
}

static RtStatus parse_file(AffLoad *A, const char *path, int line, const AffLex *from)
{
    char resolved[PATH_MAX];
    const char *key = realpath(path, resolved) ? resolved : path;
    for (int i = 0; i < A->chain_len; i++)
        if (!strcmp(A->files[A->chain[i]].path, key))
            return rt_fail(A->err, RT_ERR_PARSE, "%s:%d: AFF: include cycle: %s includes itself (through %d file(s))",
                           from ? from->path : path, line, path, A->chain_len - i);
    if (A->chain_len >= AFF_MAX_INCLUDE_DEPTH)
        return rt_fail(A->err, RT_ERR_PARSE, "%s:%d: AFF: expected includes nested at most %d deep",
                       from ? from->path : path, line, AFF_MAX_INCLUDE_DEPTH);
    size_t fi = 0;
    RtStatus st = file_get(A, key, &fi);
    if (st != RT_OK) {
        if (from && st == RT_ERR_IO) {
            char msg[RT_ERROR_MAX];
            snprintf(msg, sizeof msg, "%s", A->err ? A->err->msg : "");
            return rt_fail(A->err, st, "%s:%d: AFF: include failed: %s", from->path, line, msg);
        }
        return st;
    }
    A->chain[A->chain_len++] = fi;
    /* The bytes stay put when files[] grows (each is its own block). */
    AffLex L = {path, A->files[fi].data, A->files[fi].data + A->files[fi].size, 1, 0};
    int done = 0;
    A->prim_obj = -1;
    while (!done && (st = parse_command(A, &L, &done)) == RT_OK) {
    }
    A->prim_obj = -1;
    A->chain_len--;
    return st;
}

/* ---- the whole load ---------------------------------------------------------- */

typedef struct AffMark {
    uint32_t verts, tris, mats, texs, lights, objects, tracks, nodes, morphs;
    RtCamera camera;
    int has_camera, has_background, has_ambient, frames;
    RtVec3 background, ambient;
    int32_t camera_track;
    float t_start, t_end;
} AffMark;

static AffMark mark_take(const RtScene *s)
{
    AffMark m = {s->vert_count, s->tri_count, s->mat_count, s->tex_count, s->light_count, s->object_count,
                 s->anim.track_count, s->anim.node_count, s->anim.morph_count, s->camera, s->has_camera,
                 s->has_background, s->has_ambient, s->anim.frames, s->background, s->ambient,
                 s->anim.camera_track, s->anim.t_start, s->anim.t_end};
    return m;
}

/* Gives back everything this load added (the scene is as before the call). */
static void mark_restore(RtScene *s, const AffMark *m)
{
    RtAnim *a = &s->anim;
    for (uint32_t i = m->tracks; i < a->track_count; i++) track_free(&a->tracks[i]);
    a->track_count = m->tracks;
    for (uint32_t i = m->morphs; i < a->morph_count; i++) {
        free(a->morphs[i].times);
        free(a->morphs[i].pos);
        free(a->morphs[i].nrm);
    }
    a->morph_count = m->morphs;
    a->node_count = m->nodes;
    if (a->vert_node)
        for (uint32_t i = m->verts; i < a->vert_node_cap; i++) a->vert_node[i] = RT_ANIM_STATIC;
    if (a->light_track)
        for (uint32_t i = m->lights; i < a->light_track_cap; i++) a->light_track[i] = -1;
    rt_texture_truncate(s, m->texs);
    s->vert_count = m->verts;
    s->tri_count = m->tris;
    s->mat_count = m->mats;
    s->light_count = m->lights;
    s->object_count = m->objects;
    s->camera = m->camera;
    s->has_camera = m->has_camera;
    s->has_background = m->has_background;
    s->has_ambient = m->has_ambient;
    s->background = m->background;
    s->ambient = m->ambient;
    a->camera_track = m->camera_track;
    a->t_start = m->t_start;
    a->t_end = m->t_end;
    a->frames = m->frames;
}

/* After the whole file: x nodes and la lights get the LAST track of their
 * name, the camera the track named "camera". */
static RtStatus resolve_names(AffLoad *A, const char *path)
{
    RtScene *s = A->s;
    RtAnim *a = &s->anim;
    uint32_t unnamed = 0;
    for (size_t i = 0; i < A->xnode_count; i++) {
        int32_t t = rt_anim_find_track(a, A->xnodes[i].name);
        a->nodes[A->xnodes[i].index].track = t;
        if (t < 0) {
            if (unnamed < 8)
                RT_INFO("AFF", "%s: AFF: 'x %s' has no 'k %s' block: identity (as in the reference)", path,
                        A->xnodes[i].name, A->xnodes[i].name);
            unnamed++;
        }
    }
    if (unnamed > 8) RT_INFO("AFF", "%s: AFF: %u more 'x' nodes without animation", path, unnamed - 8);
    if (A->alight_count) {
        size_t cap = a->light_track_cap, old = a->light_track ? a->light_track_cap : 0;
        if (!aff_grow(&a->light_track, &cap, s->light_count, sizeof *a->light_track))
            return rt_fail(A->err, RT_ERR_OOM, "%s: AFF: out of memory", path);
        for (size_t i = old; i < cap; i++) a->light_track[i] = -1;
        a->light_track_cap = (uint32_t)cap;
        for (size_t i = 0; i < A->alight_count; i++) {
            int32_t t = rt_anim_find_track(a, A->alights[i].name);
            if (t < 0)
                RT_WARN("AFF", "%s: AFF: animated light 'la %s' has no 'k %s' block: static", path,
                        A->alights[i].name, A->alights[i].name);
            a->light_track[A->alights[i].index] = t;
        }
    }
    int32_t cam = rt_anim_find_track(a, "camera");
    if (cam >= 0) a->camera_track = cam;
    return RT_OK;
}

static void load_free(AffLoad *A)
{
    for (size_t i = 0; i < A->depth; i++) free(A->stack[i].file);
    free(A->stack);
    for (size_t i = 0; i < A->file_count; i++) {
        free(A->files[i].path);
        free(A->files[i].data);
    }
    free(A->files);
    free(A->xnodes);
    free(A->alights);
    for (size_t i = 0; i < A->texname_count; i++) free(A->texnames[i].name);
    free(A->texnames);
    free(A->mattex);
    free(A->mv);
    free(A->mn);
    free(A->mt);
    free(A->mtri);
    free(A->hash);
    free(A->top_dir);
}

RtStatus rt_aff_load(const char *path, RtScene *s, RtError *err)
{
    double t0 = rt_now_ms();
    AffLoad A;
    memset(&A, 0, sizeof A);
    A.s = s;
    A.err = err;
    A.mat = -1;
    A.mat0 = s->mat_count;
    A.prim_obj = -1;
    const char *slash = strrchr(path, '/');
    A.top_dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
    AffMark mark = mark_take(s);
    AffLex none = {path, NULL, NULL, 0, 0};
    RtStatus st = A.top_dir ? RT_OK : aff_oom(&A, &none);
    float id[12];
    rt_mat34_identity(id);
    if (st == RT_OK) st = push_frame(&A, &none, RT_ANIM_STATIC, id, 0);
    if (st == RT_OK) st = parse_file(&A, path, 0, NULL);
    if (st == RT_OK && A.depth > 1) {
        const AffFrame *f = top(&A);
        st = rt_fail(err, RT_ERR_PARSE, "%s: AFF: expected '}' before the end of the file, for the block opened at %s:%d",
                     path, f->file, f->line);
    }
    if (st == RT_OK) st = resolve_names(&A, path);
    if (st == RT_OK) {
        RT_INFO("AFF", "%s: %u triangles (%u meshes, %u flat-shaded triangles, %u cones, %u tpa), %u lights, "
                       "%u textures, %u tracks, %u nodes; %u includes of %zu files (%u missing); %.0f ms",
                path, s->tri_count - mark.tris, A.meshes, A.flat_tris, A.cones, A.tpas, s->light_count - mark.lights,
                s->tex_count - mark.texs, s->anim.track_count - mark.tracks, s->anim.node_count - mark.nodes,
                A.includes, A.file_count, A.missing_includes, rt_now_ms() - t0);
    } else {
        mark_restore(s, &mark);
    }
    load_free(&A);
    return st;
}
