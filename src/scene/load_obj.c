/* load_obj.c — Wavefront OBJ + MTL into the scene model (stage 1, load).
 *
 * The file is read whole and parsed in place, one line at a time: each line
 * is cut with a NUL where its newline was, so statements are C strings and a
 * 10 MB line costs nothing special. Faces reference positions, texture
 * coordinates and normals separately; each distinct (v, vt, vn) corner
 * becomes one RtVertex through a hash map, which keeps Sponza's 262K
 * triangles at about its 180K distinct corners. Polygons are fanned when
 * convex and ear-clipped when not, whatever their size. Anything the file says wrong is one
 * RT_ERR_PARSE "file:line: OBJ: expected ..." and the scene is rolled back
 * to what it held before the call. docs/formats.md lists the subset. */
#include "scene/load.h"
#include "scene/scene.h"
#include "scene/texture.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A larger text file is certainly not a scene this viewer can hold: the
 * scene's 32-bit counts and the 2^31 growth limit in scene.c stop far
 * below what 4 GiB of OBJ text would describe. */
#define OBJ_MAX_FILE_BYTES ((size_t)4 << 30)
/* Ear clipping a concave polygon costs O(n r) point tests (r reflex
 * corners); past this many (about a second) the rest of the polygon is
 * fanned with a warning, so a hostile 10 MB polygon of alternating reflex
 * corners cannot stall the loader. Real polygons stay far below: a ring of
 * 10,000 corners needs about 25 million. */
#define OBJ_EAR_CLIP_BUDGET ((uint64_t)1 << 28)
/* Distinct unknown keywords (and unknown material names) reported before
 * the rest are summed up in one line. */
#define OBJ_WARN_DISTINCT_MAX 8

/* ---- lines and tokens --------------------------------------------------- */

/* Cuts trailing blanks off a string in place. */
static void trim_right(char *p)
{
    size_t n = strlen(p);
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t')) p[--n] = '\0';
}

/* A short printable excerpt of the token at p for error messages. */
static const char *excerpt(const char *p, char buf[32])
{
    size_t i = 0;
    for (; i < 24 && !rt_is_token_end(p[i]); i++) buf[i] = (p[i] >= 0x20 && p[i] < 0x7f) ? p[i] : '?';
    if (i == 24 && !rt_is_token_end(p[i])) {
        memcpy(buf + i, "...", 3);
        i += 3;
    }
    buf[i] = '\0';
    return i ? buf : "end of line";
}

/* Decimal number: [+-]digits[.digits][(e|E)[+-]digits], or [+-].digits.
 * Returns the first byte after it, or NULL when there is none (nan, inf
 * and hex floats are not numbers here). Up to 19 significant digits and a
 * power of ten up to 22 convert exactly in double (Clinger's fast path),
 * which rounds to the nearest float like strtof but several times faster
 * and independent of the locale. Longer mantissas keep their first 19
 * digits and other exponents go through pow(): off by at most an ulp of a
 * double, invisible after rounding to float, and linear-time even for a
 * 10 MB run of digits (where strtod would do bignum arithmetic). */
static char *parse_number(char *p, double *out)
{
    static const double pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    int neg = 0;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    uint64_t mant = 0;
    int digits = 0, exp10 = 0, any = 0;
    for (; *p >= '0' && *p <= '9'; p++, any = 1) {
        if (digits < 19) {
            mant = mant * 10 + (uint64_t)(*p - '0');
            digits += mant != 0;
        } else if (exp10 < 1000000) {
            exp10++; /* digits past 19 only scale (and saturate: inf anyway) */
        }
    }
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++, any = 1)
            if (digits < 19) {
                mant = mant * 10 + (uint64_t)(*p - '0');
                digits += mant != 0;
                exp10--;
            }
    if (!any) return NULL;
    if (*p == 'e' || *p == 'E') {
        char *q = p + 1;
        int eneg = 0, e = 0;
        if (*q == '+' || *q == '-') eneg = *q++ == '-';
        if (!(*q >= '0' && *q <= '9')) return NULL;
        for (; *q >= '0' && *q <= '9'; q++)
            if (e < 100000) e = e * 10 + (*q - '0');
        exp10 += eneg ? -e : e;
        p = q;
    }
    double v;
    if (mant == 0) v = 0.0;
    else if (mant <= (1ull << 53) && exp10 >= -22 && exp10 <= 22)
        v = exp10 >= 0 ? (double)mant * pow10[exp10] : (double)mant / pow10[-exp10];
    else
        v = exp10 >= 0 ? (double)mant * pow(10.0, exp10) : (double)mant / pow(10.0, -exp10);
    *out = neg ? -v : v;
    return p;
}

/* Parses a whole-token finite float. */
static char *parse_float_tok(char *p, float *out)
{
    double d;
    char *q = parse_number(p, &d);
    if (!q || !rt_is_token_end(*q)) return NULL;
    float f = (float)d;
    if (!isfinite(f)) return NULL;
    *out = f;
    return q;
}

/* Signed decimal integer (face indices); NULL when there is none. The value
 * saturates far beyond any valid index, so overflow cannot happen. */
static char *parse_int(char *p, long long *out)
{
    int neg = 0;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    if (!(*p >= '0' && *p <= '9')) return NULL;
    long long v = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        if (v < (1ll << 40)) v = v * 10 + (*p - '0');
    *out = neg ? -v : v;
    return p;
}

/* ---- string -> int map (materials, usemtl names, warned keywords) ------- */

typedef struct StrSlot {
    char *key;   /* owned; NULL = empty slot */
    uint64_t hash;
    int32_t val;
} StrSlot;
typedef struct StrMap {
    StrSlot *slots;
    size_t cap, count;
} StrMap;

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static StrSlot *strmap_find(const StrMap *m, const char *key, uint64_t h)
{
    if (!m->cap) return NULL;
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1))
        if (!m->slots[i].key || (m->slots[i].hash == h && !strcmp(m->slots[i].key, key)))
            return &m->slots[i];
}

/* Value stored for key, or -1. */
static int64_t strmap_get(const StrMap *m, const char *key)
{
    StrSlot *e = strmap_find(m, key, str_hash(key));
    return e && e->key ? e->val : -1;
}

/* Inserts or overwrites; returns the stored key (stable until free), or
 * NULL when out of memory. */
static const char *strmap_put(StrMap *m, const char *key, int32_t val)
{
    if (2 * (m->count + 1) > m->cap) {
        size_t ncap = m->cap ? 2 * m->cap : 16;
        StrSlot *ns = calloc(ncap, sizeof *ns);
        if (!ns) return NULL;
        StrMap nm = {ns, ncap, m->count};
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].key) *strmap_find(&nm, m->slots[i].key, m->slots[i].hash) = m->slots[i];
        free(m->slots);
        *m = nm;
    }
    uint64_t h = str_hash(key);
    StrSlot *e = strmap_find(m, key, h);
    if (!e->key) {
        if (!(e->key = strdup(key))) return NULL;
        e->hash = h;
        m->count++;
    }
    e->val = val;
    return e->key;
}

static void strmap_free(StrMap *m)
{
    for (size_t i = 0; i < m->cap; i++) free(m->slots[i].key);
    free(m->slots);
    memset(m, 0, sizeof *m);
}

/* Warns once per distinct unknown keyword, then once that more exist. */
static void warn_unknown(StrMap *seen, const char *tag, const char *path, int line, const char *kw)
{
    if (strmap_get(seen, kw) >= 0) return;
    if (seen->count < OBJ_WARN_DISTINCT_MAX)
        RT_WARN("OBJ", "%s:%d: %s: ignoring unsupported statement '%.32s' (reported once)", path, line,
                tag, kw);
    else if (seen->count == OBJ_WARN_DISTINCT_MAX)
        RT_WARN("OBJ", "%s:%d: %s: more unsupported statements ignored without report", path, line, tag);
    else
        return;
    strmap_put(seen, kw, 0); /* best effort: at worst it warns again */
}

/* ---- corner de-duplication: (v, vt, vn) -> RtVertex index -------------- */

typedef struct Corner {
    uint32_t v, t, n; /* 0-based; UINT32_MAX = absent */
    uint32_t idx;     /* index into RtScene.verts; UINT32_MAX = empty slot */
} Corner;
typedef struct CornerMap {
    Corner *slots;
    size_t cap, count;
} CornerMap;

static size_t corner_hash(uint32_t v, uint32_t t, uint32_t n)
{
    uint64_t h = ((uint64_t)v << 32 | t) ^ ((uint64_t)n * 0x9e3779b97f4a7c15ull);
    h ^= h >> 31; /* splitmix64 finaliser */
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return (size_t)h;
}

static Corner *corner_find(const CornerMap *m, uint32_t v, uint32_t t, uint32_t n)
{
    for (size_t i = corner_hash(v, t, n) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        Corner *c = &m->slots[i];
        if (c->idx == UINT32_MAX || (c->v == v && c->t == t && c->n == n)) return c;
    }
}

static int corner_reserve(CornerMap *m)
{
    if (2 * (m->count + 1) <= m->cap) return 1;
    size_t ncap = m->cap ? 2 * m->cap : 1024;
    Corner *ns = malloc(ncap * sizeof *ns);
    if (!ns) return 0;
    for (size_t i = 0; i < ncap; i++) ns[i].idx = UINT32_MAX;
    CornerMap nm = {ns, ncap, m->count};
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].idx != UINT32_MAX) {
            Corner *c = &m->slots[i];
            *corner_find(&nm, c->v, c->t, c->n) = *c;
        }
    free(m->slots);
    *m = nm;
    return 1;
}

/* ---- the loader's state -------------------------------------------------- */

typedef struct UsemtlName {
    const char *name; /* key stored in ObjLoad.slots */
    int line;         /* first usemtl naming it */
} UsemtlName;

typedef struct ObjLoad {
    RtScene *s;
    RtError *err;
    const char *path;    /* the OBJ as given: error messages name it */
    char dir[PATH_MAX];  /* its directory with a trailing '/', or "" */
    char base[64];       /* its file name without extension: default object name */
    int line;
    /* attribute streams as the file declares them */
    RtVec3 *pos, *nrm;
    size_t pos_n, pos_cap, nrm_n, nrm_cap;
    float *uv;           /* 2 per texture coordinate */
    size_t uv_n, uv_cap;
    CornerMap corners;
    uint32_t *poly;      /* the face being read, as RtScene vertex indices */
    size_t poly_cap;
    /* materials: names from the mtllib files, and usemtl names as "slots"
     * resolved at the end, so usemtl before mtllib works and an unknown
     * name is reported once */
    StrMap mats, slots, mtllibs, unknown;
    UsemtlName *slot_names;
    size_t slot_cap;
    int32_t cur_slot;     /* -1 until the first usemtl */
    int mtl_missing;      /* an mtllib could not be read (already warned) */
    int64_t cur_obj;      /* index into s->objects, -1 before the first face */
} ObjLoad;

static RtStatus obj_fail(ObjLoad *o, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static RtStatus obj_fail(ObjLoad *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    RtStatus st = rt_vfail_at(o->err, RT_ERR_PARSE, o->path, o->line, "OBJ", fmt, ap);
    va_end(ap);
    return st;
}

static RtStatus obj_oom(ObjLoad *o)
{
    return rt_fail(o->err, RT_ERR_OOM, "%s:%d: OBJ: out of memory", o->path, o->line);
}

/* dir (with trailing '/') + rel, backslashes turned into '/' except before
 * a blank ("my\ file.mtl", as exporters escape spaces: the blank is kept,
 * the backslash dropped), a pair of surrounding double quotes dropped;
 * absolute rel is taken as is. Returns
 * 0 when it does not fit. */
static int join_path(char out[PATH_MAX], const char *dir, const char *rel)
{
    size_t n = strlen(rel);
    if (n >= 2 && rel[0] == '"' && rel[n - 1] == '"') {
        rel++;
        n -= 2;
    }
    const char *d = (rel[0] == '/' || rel[0] == '\\') ? "" : dir;
    size_t dn = strlen(d);
    if (dn + n + 1 > PATH_MAX) return 0;
    memcpy(out, d, dn);
    size_t k = dn;
    for (size_t i = 0; i < n; i++) {
        if (rel[i] == '\\' && (rel[i + 1] == ' ' || rel[i + 1] == '\t')) continue; /* "\ ": an escaped blank */
        out[k++] = rel[i] == '\\' ? '/' : rel[i];
    }
    out[k] = '\0';
    return 1;
}

/* The directory part of path with its trailing '/', or "". */
static void dir_of(char out[PATH_MAX], const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) + 1 : 0;
    if (n >= PATH_MAX) n = 0;
    memcpy(out, path, n);
    out[n] = '\0';
}

/* ---- MTL ------------------------------------------------------------------ */

typedef struct MtlLoad {
    ObjLoad *o;
    const char *path;
    char dir[PATH_MAX];
    int line;
    int64_t cur;        /* index into s->mats of the newmtl being read, or -1 */
} MtlLoad;

static RtStatus mtl_fail(MtlLoad *m, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static RtStatus mtl_fail(MtlLoad *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    RtStatus st = rt_vfail_at(m->o->err, RT_ERR_PARSE, m->path, m->line, "MTL", fmt, ap);
    va_end(ap);
    return st;
}

/* "Kd r g b" (or one value for grey). Spectral and CIE-XYZ forms are
 * legal MTL that this viewer does not model: warned and skipped. */
static RtStatus mtl_color(MtlLoad *m, const char *kw, char *p, RtVec3 *out)
{
    char ex[32];
    if (!strncmp(p, "spectral", 8) || !strncmp(p, "xyz", 3)) {
        RT_WARN("OBJ", "%s:%d: %s %.8s is not supported; keeping the previous colour", m->path,
                m->line, kw, p);
        return RT_OK;
    }
    float c[3];
    int n = 0;
    for (; n < 3; n++) {
        p = rt_skip_blanks(p);
        if (!*p) break;
        char *q = parse_float_tok(p, &c[n]);
        if (!q) return mtl_fail(m, "expected 3 finite numbers after '%s' (r g b), got '%s'", kw, excerpt(p, ex));
        p = q;
    }
    p = rt_skip_blanks(p);
    if (*p) return mtl_fail(m, "expected end of line after '%s r g b', got '%s'", kw, excerpt(p, ex));
    if (n == 0 || n == 2) return mtl_fail(m, "expected 3 numbers after '%s' (r g b), got %d", kw, n);
    *out = n == 1 ? v3(c[0], c[0], c[0]) : v3(c[0], c[1], c[2]);
    return RT_OK;
}

/* One finite number after kw; options such as "d -halo 0.5" are skipped. */
static RtStatus mtl_scalar(MtlLoad *m, const char *kw, char *p, float *out)
{
    char ex[32];
    p = rt_skip_blanks(p);
    if (!strncmp(p, "-halo", 5) && rt_is_token_end(p[5])) p = rt_skip_blanks(p + 5);
    char *q = parse_float_tok(p, out);
    if (!q) return mtl_fail(m, "expected a finite number after '%s', got '%s'", kw, excerpt(p, ex));
    if (*rt_skip_blanks(q)) return mtl_fail(m, "expected end of line after '%s' and its number", kw);
    return RT_OK;
}

/* "map_Kd [-options] file name.png": skips the MTL texture options, then
 * takes the rest of the line (spaces included) as the file name and loads
 * it; a missing or unreadable image warns and the material keeps its flat
 * colour. */
static RtStatus mtl_map(MtlLoad *m, const char *kw, char *p, int32_t *out)
{
    /* MTL texture options and how many arguments each takes (-o, -s, -t
     * take one to three numbers; -mm takes two). */
    static const struct { const char *name; int args; int numeric; } opts[] = {
        {"-blendu", 1, 0}, {"-blendv", 1, 0}, {"-bm", 1, 1},     {"-boost", 1, 1}, {"-cc", 1, 0},
        {"-clamp", 1, 0},  {"-colorspace", 1, 0}, {"-imfchan", 1, 0}, {"-mm", 2, 1}, {"-o", 3, 1},
        {"-s", 3, 1},      {"-t", 3, 1},      {"-texres", 1, 1}, {"-type", 1, 0}};
    p = rt_skip_blanks(p);
    while (*p == '-') {
        char *e = p;
        while (!rt_is_token_end(*e)) e++;
        size_t len = (size_t)(e - p);
        int k = -1;
        for (int i = 0; i < (int)(sizeof opts / sizeof opts[0]); i++)
            if (strlen(opts[i].name) == len && !strncmp(opts[i].name, p, len)) k = i;
        if (k < 0)
            RT_WARN("OBJ", "%s:%d: %s: skipping unknown option '%.*s'", m->path, m->line, kw,
                    (int)(len > 32 ? 32 : len), p);
        p = rt_skip_blanks(e);
        /* An unknown option takes up to 3 numbers, or else one word when a
         * file name still follows it (the name is always last). */
        int args = k >= 0 ? opts[k].args : 3, numeric = k >= 0 ? opts[k].numeric : 1;
        for (int a = 0; a < args && *p; a++) {
            double d;
            char *q = parse_number(p, &d);
            int is_num = q && rt_is_token_end(*q);
            char *w = p;
            while (!rt_is_token_end(*w)) w++;
            int word_follows = *rt_skip_blanks(w) != '\0';
            if (numeric && !is_num) {
                if (a == 0 && k >= 0) return mtl_fail(m, "expected a number after '%s %s'", kw, opts[k].name);
                if (!(a == 0 && k < 0 && word_follows)) break; /* -o/-s/-t take 1 to 3 numbers */
                args = 1;
            }
            if (!numeric && !word_follows)
                return mtl_fail(m, "expected a texture file name after '%s %s %.*s'", kw, opts[k].name,
                                (int)(w - p > 32 ? 32 : w - p), p);
            p = rt_skip_blanks(w);
        }
    }
    trim_right(p);
    if (!*p) return mtl_fail(m, "expected a texture file name after '%s'", kw);
    char file[PATH_MAX];
    if (!join_path(file, m->dir, p)) {
        RT_WARN("OBJ", "%s:%d: %s: path too long; keeping the flat colour", m->path, m->line, kw);
        return RT_OK;
    }
    RtError e;
    RtStatus st = rt_texture_load(m->o->s, file, out, &e);
    if (st == RT_ERR_OOM) return rt_fail(m->o->err, st, "%s:%d: MTL: %s", m->path, m->line, e.msg);
    if (st != RT_OK) {
        *out = -1;
        RT_WARN("OBJ", "%s:%d: %s: %s; keeping the flat colour", m->path, m->line, kw, e.msg);
    }
    return RT_OK;
}

/* Reads one MTL file into s->mats. A file that cannot be read only warns
 * (the faces then get the default material); malformed content fails. */
static RtStatus mtl_load(ObjLoad *o, const char *path)
{
    if (strmap_get(&o->mtllibs, path) >= 0) return RT_OK; /* named twice */
    if (!strmap_put(&o->mtllibs, path, 1)) return obj_oom(o);
    char *data;
    size_t size;
    RtError e;
    RtStatus st = rt_read_file(path, "MTL", OBJ_MAX_FILE_BYTES, &data, &size, &e);
    if (st == RT_ERR_OOM) return rt_fail(o->err, st, "%s", e.msg);
    if (st != RT_OK) {
        RT_WARN("OBJ", "%s:%d: mtllib: %s; its materials fall back to the default", o->path, o->line, e.msg);
        o->mtl_missing = 1;
        return RT_OK;
    }
    MtlLoad m = {o, path, "", 0, -1};
    dir_of(m.dir, path);
    uint32_t first_mat = o->s->mat_count;
    StrMap unknown = {0};
    RtLines r = {data, data + size, 0, 0};
    char *p, ex[32];
    st = RT_OK;
    while (st == RT_OK && (p = rt_next_line(&r))) {
        m.line = r.line;
        if (strlen(p) != r.len) {
            st = mtl_fail(&m, "expected text, found a NUL byte (is this a binary file?)");
            break;
        }
        p = rt_skip_blanks(p);
        if (!*p || *p == '#') continue;
        char *kw = p;
        while (!rt_is_token_end(*p)) p++;
        if (*p) *p++ = '\0';
        p = rt_skip_blanks(p);
        RtMaterial *mat = m.cur >= 0 ? &o->s->mats[m.cur] : NULL;
        if (!strcmp(kw, "newmtl")) {
            trim_right(p);
            if (!*p) {
                st = mtl_fail(&m, "expected a material name after 'newmtl'");
                break;
            }
            RtMaterial nm = rt_material_default();
            snprintf(nm.name, sizeof nm.name, "%s", p);
            m.cur = rt_scene_add_material(o->s, &nm);
            if (m.cur < 0 || !strmap_put(&o->mats, p, (int32_t)m.cur)) st = obj_oom(o);
            continue;
        }
        int known = !strcmp(kw, "Kd") || !strcmp(kw, "Ks") || !strcmp(kw, "Ke") || !strcmp(kw, "Ns") ||
                    !strcmp(kw, "Ni") || !strcmp(kw, "d") || !strcmp(kw, "Tr") || !strcmp(kw, "illum") ||
                    !strcmp(kw, "map_Kd") || !strcmp(kw, "map_d");
        if (known && !mat) {
            st = mtl_fail(&m, "expected 'newmtl NAME' before '%s'", kw);
            break;
        }
        if (!strcmp(kw, "Kd")) st = mtl_color(&m, kw, p, &mat->kd);
        else if (!strcmp(kw, "Ks")) st = mtl_color(&m, kw, p, &mat->ks);
        else if (!strcmp(kw, "Ke")) st = mtl_color(&m, kw, p, &mat->ke);
        else if (!strcmp(kw, "Ns")) st = mtl_scalar(&m, kw, p, &mat->ns);
        else if (!strcmp(kw, "Ni")) st = mtl_scalar(&m, kw, p, &mat->ni);
        else if (!strcmp(kw, "d")) st = mtl_scalar(&m, kw, p, &mat->d);
        else if (!strcmp(kw, "Tr")) {
            float tr;
            if ((st = mtl_scalar(&m, kw, p, &tr)) == RT_OK) mat->d = 1.0f - tr;
        } else if (!strcmp(kw, "illum")) {
            long long v;
            char *q = parse_int(p, &v);
            if (!q || *rt_skip_blanks(q) || v < 0 || v > 10)
                st = mtl_fail(&m, "expected an illumination model 0..10 after 'illum', got '%s'", excerpt(p, ex));
            else
                mat->illum = (int)v;
        } else if (!strcmp(kw, "map_Kd")) st = mtl_map(&m, kw, p, &mat->map_kd);
        else if (!strcmp(kw, "map_d")) st = mtl_map(&m, kw, p, &mat->map_d);
        else if (strcmp(kw, "Ka") && strcmp(kw, "Tf") && strcmp(kw, "map_Ka") && strcmp(kw, "map_Ks") &&
                 strcmp(kw, "map_Ns") && strcmp(kw, "map_Ke") && strcmp(kw, "map_bump") &&
                 strcmp(kw, "map_Bump") && strcmp(kw, "bump") && strcmp(kw, "disp") &&
                 strcmp(kw, "decal") && strcmp(kw, "refl") && strcmp(kw, "sharpness") &&
                 strcmp(kw, "norm"))
            /* the common statements this viewer has no use for stay quiet */
            warn_unknown(&unknown, "MTL", path, m.line, kw);
    }
    /* Mirror reflectivity follows the illumination model: 3, 5 and 7 are
     * the MTL models with ray-traced reflection, scaled by Ks. */
    for (uint32_t i = first_mat; st == RT_OK && i < o->s->mat_count; i++) {
        RtMaterial *mat = &o->s->mats[i];
        int refl = mat->illum == 3 || mat->illum == 5 || mat->illum == 7;
        mat->reflect = refl ? fmaxf(mat->ks.x, fmaxf(mat->ks.y, mat->ks.z)) : 0.0f;
    }
    strmap_free(&unknown);
    free(data);
    return st;
}

/* "mtllib a.mtl b.mtl" names several files; a single name with spaces is
 * also common, so the whole rest of the line is tried first. A blank after
 * a backslash is part of a name ("my\ file.mtl"). */
static RtStatus obj_mtllib(ObjLoad *o, char *p)
{
    trim_right(p);
    if (!*p) return obj_fail(o, "expected an MTL file name after 'mtllib'");
    char file[PATH_MAX];
    struct stat st;
    if (join_path(file, o->dir, p) && stat(file, &st) == 0) return mtl_load(o, file);
    while (*(p = rt_skip_blanks(p))) {
        char *e = p;
        while (*e && (!rt_is_token_end(*e) || e[-1] == '\\')) e++; /* "\ " does not end a name */
        char c = *e;
        *e = '\0';
        if (!join_path(file, o->dir, p))
            RT_WARN("OBJ", "%s:%d: mtllib: path too long; skipped", o->path, o->line);
        else {
            RtStatus s = mtl_load(o, file);
            if (s != RT_OK) return s;
        }
        *e = c;
        p = e;
    }
    return RT_OK;
}

/* ---- objects and materials on faces --------------------------------------- */

/* o/g: a new RtObject starts; consecutive o/g lines with no face between
 * them name one object (the last name wins). */
static RtStatus obj_group(ObjLoad *o, char *p)
{
    trim_right(p);
    const char *name = *p ? p : o->base;
    RtScene *s = o->s;
    if (o->cur_obj >= 0 && s->objects[o->cur_obj].first_tri == s->tri_count) {
        snprintf(s->objects[o->cur_obj].name, sizeof s->objects[o->cur_obj].name, "%s", name);
        return RT_OK;
    }
    if (o->cur_obj >= 0) s->objects[o->cur_obj].tri_count = s->tri_count - s->objects[o->cur_obj].first_tri;
    o->cur_obj = rt_scene_add_object(s, name);
    return o->cur_obj < 0 ? obj_oom(o) : RT_OK;
}

static RtStatus obj_usemtl(ObjLoad *o, char *p)
{
    trim_right(p);
    if (!*p) return obj_fail(o, "expected a material name after 'usemtl'");
    int64_t slot = strmap_get(&o->slots, p);
    if (slot < 0) {
        slot = (int64_t)o->slots.count;
        if (!rt_grow_array((void **)&o->slot_names, &o->slot_cap, (size_t)slot + 1, sizeof *o->slot_names))
            return obj_oom(o);
        const char *key = strmap_put(&o->slots, p, (int32_t)slot);
        if (!key) return obj_oom(o);
        o->slot_names[slot].name = key;
        o->slot_names[slot].line = o->line;
    }
    o->cur_slot = (int32_t)slot;
    return RT_OK;
}

/* ---- faces ---------------------------------------------------------------- */

/* OBJ index (1-based, or negative = counted back from the latest) to
 * 0-based; what names the attribute in messages. */
static RtStatus resolve_index(ObjLoad *o, long long i, size_t count, const char *what, uint32_t *out)
{
    if (i > 0 && (unsigned long long)i <= count) {
        *out = (uint32_t)(i - 1);
        return RT_OK;
    }
    if (i < 0 && (unsigned long long)-i <= count) {
        *out = (uint32_t)((long long)count + i);
        return RT_OK;
    }
    if (count == 0)
        return obj_fail(o, "face refers to %s %lld but no %s is defined before this line", what, i, what);
    return obj_fail(o, "expected a %s index in 1..%zu or -1..-%zu (OBJ counts from 1; %zu defined so far), got %lld",
                    what, count, count, count, i);
}

/* The RtVertex for corner (v, t, n), created on first use. */
static int64_t corner_vertex(ObjLoad *o, uint32_t v, uint32_t t, uint32_t n)
{
    if (!corner_reserve(&o->corners)) return -1;
    Corner *c = corner_find(&o->corners, v, t, n);
    if (c->idx != UINT32_MAX) return c->idx;
    RtVertex vx;
    vx.p = o->pos[v];
    /* A zero normal stays zero: rt_scene_finish gives it a smooth one. */
    vx.n = n != UINT32_MAX ? v3_norm(o->nrm[n]) : v3(0, 0, 0);
    if (!isfinite(vx.n.x + vx.n.y + vx.n.z)) vx.n = v3(0, 0, 0);
    vx.u = t != UINT32_MAX ? o->uv[2 * t] : 0.0f;
    vx.v = t != UINT32_MAX ? o->uv[2 * t + 1] : 0.0f;
    int64_t idx = rt_scene_add_vertex(o->s, vx);
    if (idx < 0) return -1;
    c->v = v;
    c->t = t;
    c->n = n;
    c->idx = (uint32_t)idx;
    o->corners.count++;
    return idx;
}

static RtStatus add_tri(ObjLoad *o, uint32_t a, uint32_t b, uint32_t c)
{
    RtTriangle t = {{a, b, c}, o->cur_slot, (uint32_t)o->cur_obj};
    return rt_scene_add_triangle(o->s, t) < 0 ? obj_oom(o) : RT_OK;
}

/* Splits polygon poly[0..n) into n-2 triangles keeping its winding. Convex
 * polygons are fanned from the first vertex; concave ones, of any size, are
 * ear-clipped in the plane that drops the dominant axis of the Newell
 * normal (Eberly, "Triangulation by Ear Clipping": only reflex corners can
 * lie inside an ear, so each ear test looks at those alone, O(n r) in all),
 * falling back to a fan of what is left when no ear exists
 * (self-intersecting or degenerate input) or when the work passes
 * OBJ_EAR_CLIP_BUDGET (a hostile polygon of millions of reflex corners). */
static RtStatus triangulate(ObjLoad *o, const uint32_t *poly, size_t n)
{
    const RtVertex *vs = o->s->verts;
    if (n == 3) return add_tri(o, poly[0], poly[1], poly[2]);
    RtVec3 nn = v3(0, 0, 0);
    for (size_t i = 0; i < n; i++) {
        RtVec3 a = vs[poly[i]].p, b = vs[poly[(i + 1) % n]].p;
        nn = v3_add(nn, v3((a.y - b.y) * (a.z + b.z), (a.z - b.z) * (a.x + b.x), (a.x - b.x) * (a.y + b.y)));
    }
    int ax = fabsf(nn.x) > fabsf(nn.y) ? (fabsf(nn.x) > fabsf(nn.z) ? 0 : 2) : (fabsf(nn.y) > fabsf(nn.z) ? 1 : 2);
    int u = (ax + 1) % 3, w = (ax + 2) % 3;
    double sign = v3_get(nn, ax) >= 0 ? 1.0 : -1.0;
#define PX(i) ((double)v3_get(vs[poly[i]].p, u))
#define PY(i) (sign * (double)v3_get(vs[poly[i]].p, w))
#define CROSS2(a, b, c) ((PX(b) - PX(a)) * (PY(c) - PY(a)) - (PY(b) - PY(a)) * (PX(c) - PX(a)))
#define SAME(a, b) (PX(a) == PX(b) && PY(a) == PY(b))
    int convex = 1;
    for (size_t i = 0; i < n && convex; i++) convex = CROSS2(i, (i + 1) % n, (i + 2) % n) >= 0.0;
    size_t m = n, first = 0;
    uint32_t *prev = NULL, *next = NULL, *refl = NULL;
    uint8_t *is_refl = NULL;
    if (!convex) {
        prev = malloc(n * sizeof *prev);
        next = malloc(n * sizeof *next);
        refl = malloc(n * sizeof *refl);
        is_refl = malloc(n);
        if (!prev || !next || !refl || !is_refl) {
            free(prev), free(next), free(refl), free(is_refl);
            return obj_oom(o);
        }
        size_t nr = 0;
        for (size_t i = 0; i < n; i++) {
            prev[i] = (uint32_t)((i + n - 1) % n);
            next[i] = (uint32_t)((i + 1) % n);
            /* flat corners count as reflex: they may sit on an ear's edge */
            is_refl[i] = !(CROSS2(prev[i], i, next[i]) > 0.0);
            if (is_refl[i]) refl[nr++] = (uint32_t)i;
        }
        uint64_t work = 0;
        size_t i = 1, since = 0, stale = 0; /* start at 1: convex parts fan from vertex 0 */
        while (m > 3 && since <= m && work < OBJ_EAR_CLIP_BUDGET) {
            uint32_t a = prev[i], c = next[i];
            int ear = !is_refl[i] && CROSS2(a, i, c) > 0.0; /* recomputed: self-crossing input may turn it */
            for (size_t r = 0; r < nr && ear; r++) {
                uint32_t q = refl[r];
                work++;
                if (!is_refl[q] || q == a || q == i || q == c) continue;
                if (SAME(q, a) || SAME(q, i) || SAME(q, c)) continue;
                ear = !(CROSS2(a, i, q) >= 0.0 && CROSS2(i, c, q) >= 0.0 && CROSS2(c, a, q) >= 0.0);
            }
            work++;
            if (!ear) {
                i = next[i];
                since++;
                continue;
            }
            RtStatus st = add_tri(o, poly[a], poly[i], poly[c]);
            if (st != RT_OK) {
                free(prev), free(next), free(refl), free(is_refl);
                return st;
            }
            next[a] = c;
            prev[c] = a;
            is_refl[i] = 0; /* removed: never tested again */
            m--;
            /* a corner's neighbours change, and a reflex corner may turn
             * convex (never the other way round) */
            uint32_t nb[2] = {a, c};
            for (int k = 0; k < 2; k++)
                if (is_refl[nb[k]] && CROSS2(prev[nb[k]], nb[k], next[nb[k]]) > 0.0) {
                    is_refl[nb[k]] = 0;
                    stale++;
                }
            if (++stale > nr / 2 + 16) { /* drop the entries no longer reflex */
                size_t k = 0;
                for (size_t r = 0; r < nr; r++)
                    if (is_refl[refl[r]]) refl[k++] = refl[r];
                nr = k;
                stale = 0;
            }
            i = a;
            since = 0;
        }
        if (m > 3 && work >= OBJ_EAR_CLIP_BUDGET)
            RT_WARN("OBJ", "%s:%d: polygon of %zu corners: ear clipping stopped after %llu tests; the last %zu "
                    "corners are fanned", o->path, o->line, n, (unsigned long long)work, m);
        first = i;
    }
    RtStatus st = RT_OK;
    if (convex)
        for (size_t i = 1; i + 1 < n && st == RT_OK; i++) st = add_tri(o, poly[0], poly[i], poly[i + 1]);
    else /* what is left (a triangle, or no ear found): a fan */
        for (size_t k = 0, b = next[first]; k + 2 < m && st == RT_OK; k++, b = next[b])
            st = add_tri(o, poly[first], poly[b], poly[next[b]]);
#undef PX
#undef PY
#undef CROSS2
#undef SAME
    free(prev), free(next), free(refl), free(is_refl);
    return st;
}

/* f v1 v2 v3 ... with corners v, v/vt, v//vn or v/vt/vn. */
static RtStatus obj_face(ObjLoad *o, char *p)
{
    char ex[32];
    size_t n = 0;
    for (;;) {
        p = rt_skip_blanks(p);
        if (!*p) break;
        long long iv, it = 0, in = 0;
        int ht = 0, hn = 0;
        char *q = parse_int(p, &iv);
        if (!q)
            return obj_fail(o, "expected a face vertex (v, v/vt, v//vn or v/vt/vn), got '%s'", excerpt(p, ex));
        if (*q == '/') {
            q++;
            if (*q != '/') {
                char *r = parse_int(q, &it);
                if (!r) return obj_fail(o, "expected a texture coordinate index after '/' in '%s'", excerpt(p, ex));
                ht = 1;
                q = r;
            }
            if (*q == '/') {
                char *r = parse_int(q + 1, &in);
                if (!r) return obj_fail(o, "expected a normal index after '/' in '%s'", excerpt(p, ex));
                hn = 1;
                q = r;
            }
        }
        if (!rt_is_token_end(*q))
            return obj_fail(o, "expected a face vertex (v, v/vt, v//vn or v/vt/vn), got '%s'", excerpt(p, ex));
        uint32_t v, t = UINT32_MAX, nn = UINT32_MAX;
        RtStatus st = resolve_index(o, iv, o->pos_n, "vertex", &v);
        if (st == RT_OK && ht) st = resolve_index(o, it, o->uv_n, "texture coordinate", &t);
        if (st == RT_OK && hn) st = resolve_index(o, in, o->nrm_n, "normal", &nn);
        if (st != RT_OK) return st;
        if (!rt_grow_array((void **)&o->poly, &o->poly_cap, n + 1, sizeof *o->poly)) return obj_oom(o);
        int64_t idx = corner_vertex(o, v, t, nn);
        if (idx < 0) return obj_oom(o);
        o->poly[n++] = (uint32_t)idx;
        p = q;
    }
    if (n < 3) return obj_fail(o, "expected at least 3 vertices after 'f', got %zu", n);
    if (o->cur_obj < 0) {
        o->cur_obj = rt_scene_add_object(o->s, o->base);
        if (o->cur_obj < 0) return obj_oom(o);
    }
    return triangulate(o, o->poly, n);
}

/* ---- v, vt, vn ------------------------------------------------------------ */

/* Reads min..max finite numbers after kw into out; returns how many. */
static RtStatus obj_numbers(ObjLoad *o, const char *kw, const char *form, char *p, float *out,
                            int min, int max, int *count)
{
    char ex[32];
    int n = 0;
    for (;;) {
        p = rt_skip_blanks(p);
        if (!*p) break;
        if (n == max) return obj_fail(o, "expected end of line after '%s %s', got '%s'", kw, form, excerpt(p, ex));
        char *q = parse_float_tok(p, &out[n]);
        if (!q)
            return obj_fail(o, "expected %d finite number%s after '%s' (%s), got '%s'", min, min > 1 ? "s" : "", kw,
                            form, excerpt(p, ex));
        n++;
        p = q;
    }
    if (n < min)
        return obj_fail(o, "expected %d finite number%s after '%s' (%s), got %d", min, min > 1 ? "s" : "", kw, form, n);
    *count = n;
    return RT_OK;
}

static RtStatus obj_parse(ObjLoad *o, char *data, size_t size)
{
    RtLines r = {data, data + size, 0, 0};
    char *p, ex[32];
    while ((p = rt_next_line(&r))) {
        o->line = r.line;
        char *kw = rt_skip_blanks(p);
        if (!*kw || *kw == '#') continue;
        /* Binary data shows as a NUL byte or a line that does not start
         * with a keyword; either ends the load with one clear message. */
        if (strlen(p) != r.len) return obj_fail(o, "expected text, found a NUL byte (is this a binary file?)");
        int word = (*kw >= 'a' && *kw <= 'z') || (*kw >= 'A' && *kw <= 'Z') || *kw == '_';
        for (p = kw; word && !rt_is_token_end(*p); p++)
            word = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_';
        if (!word) {
            int bin = 0;
            for (p = kw; !rt_is_token_end(*p) && !bin; p++) bin = (*p & 0x80) || *p < 0x20 || *p == 0x7f;
            return obj_fail(o, "expected a statement (v, vt, vn, f, o, g, usemtl, mtllib, ...), got %s'%s'%s",
                            bin ? "binary data " : "", excerpt(kw, ex), bin ? " (is this a binary file?)" : "");
        }
        if (*p) *p++ = '\0';
        RtStatus st = RT_OK;
        float f[7];
        int n;
        if (kw[0] == 'v' && kw[1] == '\0') {
            /* x y z, then an optional w or r g b [a] that are not used */
            if ((st = obj_numbers(o, "v", "x y z", p, f, 3, 7, &n)) != RT_OK) return st;
            if (!rt_grow_array((void **)&o->pos, &o->pos_cap, o->pos_n + 1, sizeof *o->pos)) return obj_oom(o);
            o->pos[o->pos_n++] = v3(f[0], f[1], f[2]);
        } else if (kw[0] == 'v' && kw[1] == 't' && kw[2] == '\0') {
            if ((st = obj_numbers(o, "vt", "u v", p, f, 1, 3, &n)) != RT_OK) return st;
            if (!rt_grow_array((void **)&o->uv, &o->uv_cap, 2 * o->uv_n + 2, sizeof *o->uv)) return obj_oom(o);
            o->uv[2 * o->uv_n] = f[0];
            o->uv[2 * o->uv_n + 1] = n > 1 ? f[1] : 0.0f;
            o->uv_n++;
        } else if (kw[0] == 'v' && kw[1] == 'n' && kw[2] == '\0') {
            if ((st = obj_numbers(o, "vn", "x y z", p, f, 3, 3, &n)) != RT_OK) return st;
            if (!rt_grow_array((void **)&o->nrm, &o->nrm_cap, o->nrm_n + 1, sizeof *o->nrm)) return obj_oom(o);
            o->nrm[o->nrm_n++] = v3(f[0], f[1], f[2]);
        } else if (kw[0] == 'f' && kw[1] == '\0') st = obj_face(o, p);
        else if (!strcmp(kw, "o") || !strcmp(kw, "g")) st = obj_group(o, rt_skip_blanks(p));
        else if (!strcmp(kw, "usemtl")) st = obj_usemtl(o, rt_skip_blanks(p));
        else if (!strcmp(kw, "mtllib")) st = obj_mtllib(o, rt_skip_blanks(p));
        else if (strcmp(kw, "s") && strcmp(kw, "l") && strcmp(kw, "p"))
            /* smoothing groups (normals come from the file or from
             * rt_scene_finish), lines and points have no place here */
            warn_unknown(&o->unknown, "OBJ", o->path, o->line, kw);
        if (st != RT_OK) return st;
    }
    return RT_OK;
}

/* Ends the last object and gives each usemtl name its material index. */
static RtStatus obj_finish(ObjLoad *o, uint32_t first_tri)
{
    RtScene *s = o->s;
    if (o->cur_obj >= 0) {
        RtObject *ob = &s->objects[o->cur_obj];
        ob->tri_count = s->tri_count - ob->first_tri;
        if (ob->tri_count == 0) s->object_count--; /* an o/g after the last face */
    }
    size_t nslots = o->slots.count;
    int32_t *mat_of = malloc((nslots ? nslots : 1) * sizeof *mat_of);
    if (!mat_of) return obj_oom(o);
    int unknown = 0;
    for (size_t i = 0; i < nslots; i++) {
        int64_t m = strmap_get(&o->mats, o->slot_names[i].name);
        mat_of[i] = (int32_t)m;
        if (m >= 0) continue;
        /* with an mtllib missing (warned already) the names are expected to
         * be unknown: one line says so instead of one per name */
        if (o->mtl_missing) {
            if (!unknown++)
                RT_WARN("OBJ", "%s:%d: usemtl %.64s and any other name of the missing mtllib use the default material",
                        o->path, o->slot_names[i].line, o->slot_names[i].name);
            continue;
        }
        if (unknown++ < OBJ_WARN_DISTINCT_MAX)
            RT_WARN("OBJ", "%s:%d: usemtl %.64s: no such material in the mtllib files; using the default",
                    o->path, o->slot_names[i].line, o->slot_names[i].name);
    }
    if (!o->mtl_missing && unknown > OBJ_WARN_DISTINCT_MAX)
        RT_WARN("OBJ", "%s: %d more unknown material names use the default", o->path,
                unknown - OBJ_WARN_DISTINCT_MAX);
    for (uint32_t i = first_tri; i < s->tri_count; i++)
        if (s->tris[i].material >= 0) s->tris[i].material = mat_of[s->tris[i].material];
    free(mat_of);
    return RT_OK;
}

RtStatus rt_obj_load(const char *path, RtScene *s, RtError *err)
{
    double t0 = rt_now_ms();
    uint32_t v0 = s->vert_count, tri0 = s->tri_count, m0 = s->mat_count, tex0 = s->tex_count,
             ob0 = s->object_count;
    char *data;
    size_t size;
    RtStatus st = rt_read_file(path, "OBJ", OBJ_MAX_FILE_BYTES, &data, &size, err);
    if (st != RT_OK) return st;

    ObjLoad *o = calloc(1, sizeof *o);
    if (!o) {
        free(data);
        return rt_fail(err, RT_ERR_OOM, "%s: OBJ: out of memory", path);
    }
    o->s = s;
    o->err = err;
    o->path = path;
    o->cur_slot = -1;
    o->cur_obj = -1;
    dir_of(o->dir, path);
    const char *b = strrchr(path, '/');
    snprintf(o->base, sizeof o->base, "%s", b ? b + 1 : path);
    char *dot = strrchr(o->base, '.');
    if (dot && dot != o->base) *dot = '\0';

    st = obj_parse(o, data, size);
    if (st == RT_OK) st = obj_finish(o, tri0);
    if (st == RT_OK)
        RT_INFO("OBJ", "%s: %u triangles, %u vertices, %u materials, %u textures in %.0f ms", path,
                s->tri_count - tri0, s->vert_count - v0, s->mat_count - m0, s->tex_count - tex0,
                rt_now_ms() - t0);
    else {
        /* roll back to what the scene held before: it stays consistent */
        s->vert_count = v0;
        s->tri_count = tri0;
        s->mat_count = m0;
        s->object_count = ob0;
        rt_texture_truncate(s, tex0);
    }
    free(o->pos);
    free(o->nrm);
    free(o->uv);
    free(o->corners.slots);
    free(o->poly);
    free(o->slot_names);
    strmap_free(&o->mats);
    strmap_free(&o->slots);
    strmap_free(&o->mtllibs);
    strmap_free(&o->unknown);
    free(o);
    free(data);
    return st;
}
