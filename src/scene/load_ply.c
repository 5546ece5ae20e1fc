/* load_ply.c — Stanford PLY (ascii, binary little and big endian) into the
 * scene model (stage 1, load).
 *
 * The header is parsed into a list of elements with typed properties; the
 * body is then walked element by element: "vertex" gives positions (and
 * normals and UVs when present), "face" gives polygons (fanned into
 * triangles), anything else is skipped by size (binary) or by line (ascii).
 * Every count the header declares is checked against what the file can
 * hold before anything is allocated, and every read is bounds-checked, so
 * a hostile header or a truncated body is one RT_ERR_PARSE naming the
 * header line or the element and record. docs/formats.md lists the subset. */
#include "scene/load.h"
#include "scene/scene.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Larger files are beyond what the scene's 32-bit counts can hold. */
#define PLY_MAX_FILE_BYTES ((size_t)4 << 30)
/* Headers of real files have a handful of elements and properties; more
 * than this is garbage, refused before it costs memory or time. */
#define PLY_MAX_ELEMENTS 256
#define PLY_MAX_PROPS 256
/* The scene's growth stops at 2^31 elements (scene.c). */
#define PLY_MAX_VERTS ((uint64_t)1 << 31)

typedef enum { PLY_I8, PLY_U8, PLY_I16, PLY_U16, PLY_I32, PLY_U32, PLY_F32, PLY_F64, PLY_NTYPES } PlyType;

static const struct {
    const char *name, *alias;
    int size;
} ply_types[PLY_NTYPES] = {
    {"char", "int8", 1},   {"uchar", "uint8", 1}, {"short", "int16", 2},  {"ushort", "uint16", 2},
    {"int", "int32", 4},   {"uint", "uint32", 4}, {"float", "float32", 4}, {"double", "float64", 8},
};

/* What a property means to the loader. */
typedef enum { ROLE_NONE, ROLE_X, ROLE_Y, ROLE_Z, ROLE_NX, ROLE_NY, ROLE_NZ, ROLE_U, ROLE_V, ROLE_INDICES } PlyRole;

typedef struct PlyProp {
    int is_list;
    PlyType type;        /* scalar type, or the list's item type */
    PlyType count_type;  /* list length type */
    PlyRole role;
} PlyProp;

typedef enum { ELEM_OTHER, ELEM_VERTEX, ELEM_FACE } PlyElemKind;

typedef struct PlyElem {
    char name[32];
    uint64_t count;
    int line;            /* header line of "element" */
    PlyElemKind kind;
    PlyProp props[PLY_MAX_PROPS];
    int nprops;
} PlyElem;

typedef enum { FMT_NONE, FMT_ASCII, FMT_BLE, FMT_BBE } PlyFormat;

typedef struct PlyLoad {
    RtScene *s;
    RtError *err;
    const char *path;
    int line;            /* header or ascii body line; 0 in a binary body */
    PlyFormat fmt;
    PlyElem *elems;
    int nelems;
    size_t elem_cap;
    uint64_t nverts;     /* declared by "element vertex" */
    uint32_t v0;         /* first vertex of this file in s->verts */
    uint32_t object;
    uint32_t *poly;      /* the face being read */
    size_t poly_cap;
} PlyLoad;

static RtStatus ply_fail(PlyLoad *l, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static RtStatus ply_fail(PlyLoad *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    RtStatus st = rt_vfail_at(l->err, RT_ERR_PARSE, l->path, l->line, "PLY", fmt, ap);
    va_end(ap);
    return st;
}

static RtStatus ply_oom(PlyLoad *l)
{
    return rt_fail(l->err, RT_ERR_OOM, "%s: PLY: out of memory", l->path);
}

/* ---- tokens ------------------------------------------------------------- */

/* Splits the next blank-separated token off *p (NUL-terminating it). */
static char *token(char **p)
{
    char *s = rt_skip_blanks(*p);
    if (!*s) return NULL;
    char *e = s;
    while (!rt_is_token_end(*e)) e++;
    if (*e) *e++ = '\0';
    *p = e;
    return s;
}

/* ---- header ------------------------------------------------------------- */

static int parse_type(const char *name, PlyType *t)
{
    for (int i = 0; i < PLY_NTYPES; i++)
        if (!strcmp(name, ply_types[i].name) || !strcmp(name, ply_types[i].alias)) {
            *t = (PlyType)i;
            return 1;
        }
    return 0;
}
static int type_is_int(PlyType t) { return t != PLY_F32 && t != PLY_F64; }

static PlyRole vertex_role(const char *n)
{
    static const struct { const char *name; PlyRole role; } map[] = {
        {"x", ROLE_X},          {"y", ROLE_Y},          {"z", ROLE_Z},          {"nx", ROLE_NX},
        {"ny", ROLE_NY},        {"nz", ROLE_NZ},        {"u", ROLE_U},          {"v", ROLE_V},
        {"s", ROLE_U},          {"t", ROLE_V},          {"texture_u", ROLE_U},  {"texture_v", ROLE_V},
        {"texture_s", ROLE_U},  {"texture_t", ROLE_V}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(n, map[i].name)) return map[i].role;
    return ROLE_NONE;
}

/* Checks an element once its properties are all known. */
static RtStatus finish_elem(PlyLoad *l, PlyElem *e)
{
    int save = l->line;
    l->line = e->line;
    RtStatus st = RT_OK;
    if (e->kind == ELEM_VERTEX) {
        int seen[ROLE_INDICES + 1] = {0};
        for (int i = 0; i < e->nprops; i++) seen[e->props[i].role] = 1;
        if (!seen[ROLE_X] || !seen[ROLE_Y] || !seen[ROLE_Z])
            st = ply_fail(l, "expected 'property float x', 'y' and 'z' in element vertex");
        /* normals and UVs count only when complete */
        int has_n = seen[ROLE_NX] && seen[ROLE_NY] && seen[ROLE_NZ], has_uv = seen[ROLE_U] && seen[ROLE_V];
        for (int i = 0; i < e->nprops; i++) {
            PlyRole r = e->props[i].role;
            if ((!has_n && (r == ROLE_NX || r == ROLE_NY || r == ROLE_NZ)) || (!has_uv && (r == ROLE_U || r == ROLE_V)))
                e->props[i].role = ROLE_NONE;
        }
    } else if (e->kind == ELEM_FACE) {
        int n = 0;
        for (int i = 0; i < e->nprops; i++) n += e->props[i].role == ROLE_INDICES;
        if (n != 1)
            st = ply_fail(l, "expected one 'property list uchar int vertex_indices' in element face");
    }
    l->line = save;
    return st;
}

/* Parses the header; *body is set to the first byte after end_header. */
static RtStatus parse_header(PlyLoad *l, char *data, size_t size, char **body)
{
    RtLines r = {data, data + size, 0, 0};
    char *p, *t;
    int done = 0;
    while (!done && (p = rt_next_line(&r))) {
        l->line = r.line;
        if (strlen(p) != r.len) return ply_fail(l, "expected a text header line, found a NUL byte");
        if (r.line == 1) {
            t = token(&p);
            if (!t || strcmp(t, "ply") || token(&p))
                return ply_fail(l, "expected 'ply' on the first line (is this a PLY file?)");
            continue;
        }
        t = token(&p);
        if (!t) continue; /* a blank line, tolerated */
        if (!strcmp(t, "comment") || !strcmp(t, "obj_info")) continue;
        if (!strcmp(t, "format")) {
            char *f = token(&p), *v = token(&p);
            if (l->fmt != FMT_NONE) return ply_fail(l, "expected one 'format' line, got a second");
            if (f && !strcmp(f, "ascii")) l->fmt = FMT_ASCII;
            else if (f && !strcmp(f, "binary_little_endian")) l->fmt = FMT_BLE;
            else if (f && !strcmp(f, "binary_big_endian")) l->fmt = FMT_BBE;
            if (l->fmt == FMT_NONE || !v || strcmp(v, "1.0") || token(&p))
                return ply_fail(l, "expected 'format ascii 1.0', 'format binary_little_endian 1.0' or "
                                   "'format binary_big_endian 1.0'");
        } else if (!strcmp(t, "element")) {
            char *name = token(&p), *cnt = token(&p);
            char *end = NULL;
            errno = 0;
            unsigned long long c = cnt && *cnt >= '0' && *cnt <= '9' ? strtoull(cnt, &end, 10) : 0;
            if (!name || !cnt || !end || *end || errno || token(&p))
                return ply_fail(l, "expected 'element NAME COUNT' with a non-negative integer count");
            if (l->nelems && finish_elem(l, &l->elems[l->nelems - 1]) != RT_OK) return l->err->status;
            if (l->nelems == PLY_MAX_ELEMENTS)
                return ply_fail(l, "expected at most %d elements in the header", PLY_MAX_ELEMENTS);
            if (!rt_grow_array((void **)&l->elems, &l->elem_cap, (size_t)l->nelems + 1, sizeof *l->elems))
                return ply_oom(l);
            PlyElem *e = &l->elems[l->nelems++];
            memset(e, 0, sizeof *e);
            snprintf(e->name, sizeof e->name, "%s", name);
            e->count = c;
            e->line = r.line;
            e->kind = !strcmp(name, "vertex") ? ELEM_VERTEX : !strcmp(name, "face") ? ELEM_FACE : ELEM_OTHER;
            for (int i = 0; i + 1 < l->nelems; i++)
                if (e->kind != ELEM_OTHER && l->elems[i].kind == e->kind)
                    return ply_fail(l, "expected one 'element %s', got a second", name);
            if (e->kind == ELEM_VERTEX) {
                if (c >= PLY_MAX_VERTS)
                    return rt_fail(l->err, RT_ERR_OOM, "%s:%d: PLY: element vertex %llu: more vertices than a scene can hold (2^31)",
                                   l->path, l->line, c);
                l->nverts = c;
            }
        } else if (!strcmp(t, "property")) {
            if (!l->nelems) return ply_fail(l, "expected 'element NAME COUNT' before 'property'");
            PlyElem *e = &l->elems[l->nelems - 1];
            if (e->nprops == PLY_MAX_PROPS)
                return ply_fail(l, "expected at most %d properties in element %s", PLY_MAX_PROPS, e->name);
            PlyProp *pr = &e->props[e->nprops];
            memset(pr, 0, sizeof *pr);
            char *ty = token(&p), *name;
            if (ty && !strcmp(ty, "list")) {
                char *ct = token(&p), *it = token(&p);
                name = token(&p);
                if (!ct || !it || !name || token(&p) || !parse_type(ct, &pr->count_type) || !parse_type(it, &pr->type))
                    return ply_fail(l, "expected 'property list COUNT_TYPE ITEM_TYPE NAME' (types char, uchar, "
                                       "short, ushort, int, uint, float, double)");
                if (!type_is_int(pr->count_type))
                    return ply_fail(l, "expected an integer list count type for '%s'", name);
                pr->is_list = 1;
                if (e->kind == ELEM_FACE && (!strcmp(name, "vertex_indices") || !strcmp(name, "vertex_index"))) {
                    if (!type_is_int(pr->type))
                        return ply_fail(l, "expected integer vertex indices in '%s'", name);
                    pr->role = ROLE_INDICES;
                }
            } else {
                name = token(&p);
                if (!ty || !name || token(&p) || !parse_type(ty, &pr->type))
                    return ply_fail(l, "expected 'property TYPE NAME' (types char, uchar, short, ushort, int, "
                                       "uint, float, double)");
                if (e->kind == ELEM_VERTEX) pr->role = vertex_role(name);
            }
            e->nprops++;
        } else if (!strcmp(t, "end_header")) {
            done = 1;
        } else {
            return ply_fail(l, "expected format, element, property, comment or end_header, got '%.32s'", t);
        }
    }
    if (r.line == 0) {
        l->line = 1;
        return ply_fail(l, "expected 'ply' on the first line (the file is empty)");
    }
    if (!done) return ply_fail(l, "expected 'end_header' before the end of the file");
    if (l->fmt == FMT_NONE) return ply_fail(l, "expected a 'format' line before end_header");
    if (l->nelems && finish_elem(l, &l->elems[l->nelems - 1]) != RT_OK) return l->err->status;
    *body = r.p;
    return RT_OK;
}

/* Refuses counts the rest of the file cannot hold, before allocating: a
 * binary record takes at least its scalars and list counts; an ascii one
 * at least one character and one separator per value. */
static RtStatus check_counts(PlyLoad *l, size_t body_bytes)
{
    uint64_t need = 0;
    for (int i = 0; i < l->nelems; i++) {
        PlyElem *e = &l->elems[i];
        uint64_t min = 0;
        for (int k = 0; k < e->nprops; k++)
            min += l->fmt == FMT_ASCII ? 2 : (uint64_t)ply_types[e->props[k].is_list ? e->props[k].count_type : e->props[k].type].size;
        if (min == 0) continue; /* no properties: nothing to read (parse_body skips it) */
        uint64_t room = (uint64_t)body_bytes + (l->fmt == FMT_ASCII) - need;
        if (e->count > room / min) {
            l->line = e->line;
            return ply_fail(l, "element %s %llu: needs at least %llu bytes per record but only %llu bytes follow "
                               "(truncated file or absurd count?)",
                            e->name, (unsigned long long)e->count, (unsigned long long)min,
                            (unsigned long long)room);
        }
        need += e->count * min;
    }
    return RT_OK;
}

/* ---- body --------------------------------------------------------------- */

/* A value source: binary bytes or ascii tokens of the current line. */
typedef struct PlyIn {
    const uint8_t *p, *end; /* binary */
    int swap;               /* binary with the other byte order than this host */
    char *tok;              /* ascii: rest of the current line */
} PlyIn;

static int read_bin(PlyIn *in, PlyType t, double *out)
{
    int n = ply_types[t].size;
    if (in->end - in->p < n) return 0;
    uint8_t b[8];
    memcpy(b, in->p, (size_t)n);
    in->p += n;
    if (in->swap)
        for (int i = 0; i < n / 2; i++) {
            uint8_t c = b[i];
            b[i] = b[n - 1 - i];
            b[n - 1 - i] = c;
        }
    switch (t) {
    case PLY_I8: { int8_t v; memcpy(&v, b, 1); *out = v; break; }
    case PLY_U8: *out = b[0]; break;
    case PLY_I16: { int16_t v; memcpy(&v, b, 2); *out = v; break; }
    case PLY_U16: { uint16_t v; memcpy(&v, b, 2); *out = v; break; }
    case PLY_I32: { int32_t v; memcpy(&v, b, 4); *out = v; break; }
    case PLY_U32: { uint32_t v; memcpy(&v, b, 4); *out = v; break; }
    case PLY_F32: { float v; memcpy(&v, b, 4); *out = v; break; }
    default: { double v; memcpy(&v, b, 8); *out = v; break; }
    }
    return 1;
}

/* 1 = value read, 0 = the record ran out, -1 = not a number. */
static int read_ascii(PlyIn *in, double *out)
{
    char *t = token(&in->tok);
    if (!t) return 0;
    char *end;
    *out = strtod(t, &end);
    return *end || end == t ? -1 : 1;
}

/* Reads one value; on failure sets l's error naming element e, record i. */
static RtStatus read_value(PlyLoad *l, PlyIn *in, PlyType t, const PlyElem *e, uint64_t i, double *out)
{
    if (l->fmt != FMT_ASCII) {
        if (read_bin(in, t, out)) return RT_OK;
        return ply_fail(l, "%s %llu: unexpected end of file (the header declares %llu %s records; file truncated?)",
                        e->name, (unsigned long long)i, (unsigned long long)e->count, e->name);
    }
    int r = read_ascii(in, out);
    if (r > 0) return RT_OK;
    if (r == 0)
        return ply_fail(l, "%s %llu: line ends early (expected the %d properties the header declares)", e->name,
                        (unsigned long long)i, e->nprops);
    return ply_fail(l, "%s %llu: expected a number", e->name, (unsigned long long)i);
}

/* Checks that x is a whole number in [lo, hi]. */
static int whole_in(double x, double lo, double hi) { return x >= lo && x <= hi && x == (double)(int64_t)x; }

static RtStatus read_record(PlyLoad *l, PlyIn *in, const PlyElem *e, uint64_t i)
{
    RtVertex v = {{0, 0, 0}, {0, 0, 0}, 0, 0};
    size_t npoly = 0;
    for (int k = 0; k < e->nprops; k++) {
        const PlyProp *pr = &e->props[k];
        double x;
        RtStatus st;
        if (!pr->is_list) {
            if ((st = read_value(l, in, pr->type, e, i, &x)) != RT_OK) return st;
            if (pr->role == ROLE_NONE) continue;
            float f = (float)x;
            if (!isfinite(f))
                return ply_fail(l, "vertex %llu: expected finite coordinates, got %g", (unsigned long long)i, x);
            switch (pr->role) {
            case ROLE_X: v.p.x = f; break;
            case ROLE_Y: v.p.y = f; break;
            case ROLE_Z: v.p.z = f; break;
            case ROLE_NX: v.n.x = f; break;
            case ROLE_NY: v.n.y = f; break;
            case ROLE_NZ: v.n.z = f; break;
            case ROLE_U: v.u = f; break;
            case ROLE_V: v.v = f; break;
            default: break;
            }
            continue;
        }
        if ((st = read_value(l, in, pr->count_type, e, i, &x)) != RT_OK) return st;
        if (!whole_in(x, 0, 4294967295.0))
            return ply_fail(l, "%s %llu: expected a list length >= 0, got %g", e->name, (unsigned long long)i, x);
        uint64_t n = (uint64_t)x;
        /* a binary length can be checked against the bytes left at once */
        if (l->fmt != FMT_ASCII && n > (uint64_t)(in->end - in->p) / (uint64_t)ply_types[pr->type].size)
            return ply_fail(l, "%s %llu: unexpected end of file in a list of %llu items (file truncated or absurd length?)",
                            e->name, (unsigned long long)i, (unsigned long long)n);
        for (uint64_t j = 0; j < n; j++) {
            if ((st = read_value(l, in, pr->type, e, i, &x)) != RT_OK) return st;
            if (pr->role != ROLE_INDICES) continue;
            if (l->nverts == 0)
                return ply_fail(l, "face %llu: index %.10g but the header declares no vertices", (unsigned long long)i, x);
            if (!whole_in(x, 0, (double)l->nverts - 1))
                return ply_fail(l, "face %llu: index %.10g out of range (0..%lld)", (unsigned long long)i, x,
                                (long long)l->nverts - 1);
            if (!rt_grow_array((void **)&l->poly, &l->poly_cap, npoly + 1, sizeof *l->poly)) return ply_oom(l);
            l->poly[npoly++] = l->v0 + (uint32_t)x;
        }
        if (pr->role == ROLE_INDICES && n < 3)
            return ply_fail(l, "face %llu: expected at least 3 vertex indices, got %llu", (unsigned long long)i,
                            (unsigned long long)n);
    }
    if (l->fmt == FMT_ASCII && token(&in->tok))
        return ply_fail(l, "%s %llu: expected end of line after the %d properties the header declares", e->name,
                        (unsigned long long)i, e->nprops);
    if (e->kind == ELEM_VERTEX) {
        /* a zero normal stays zero: rt_scene_finish gives it a smooth one */
        v.n = v3_norm(v.n);
        if (rt_scene_add_vertex(l->s, v) < 0) return ply_oom(l);
    } else if (e->kind == ELEM_FACE) {
        /* PLY faces are convex in practice (scanners emit triangles and
         * quads): a fan keeps the winding. */
        for (size_t k = 1; k + 1 < npoly; k++) {
            RtTriangle t = {{l->poly[0], l->poly[k], l->poly[k + 1]}, -1, l->object};
            if (rt_scene_add_triangle(l->s, t) < 0) return ply_oom(l);
        }
    }
    return RT_OK;
}

/* Pre-sizes the scene's arrays from the declared (and checked) counts. */
static int reserve_scene(RtScene *s, uint64_t verts, uint64_t faces)
{
    uint64_t nv = (uint64_t)s->vert_count + verts, nt = (uint64_t)s->tri_count + faces;
    if (nv > PLY_MAX_VERTS || nt > PLY_MAX_VERTS) return 0;
    if (nv > s->vert_cap) {
        RtVertex *p = realloc(s->verts, (size_t)nv * sizeof *p);
        if (!p) return 0;
        s->verts = p;
        s->vert_cap = (uint32_t)nv;
    }
    if (nt > s->tri_cap) {
        RtTriangle *p = realloc(s->tris, (size_t)nt * sizeof *p);
        if (!p) return 0;
        s->tris = p;
        s->tri_cap = (uint32_t)nt;
    }
    return 1;
}

static RtStatus parse_body(PlyLoad *l, char *body, char *end, int header_lines)
{
    uint16_t one = 1;
    uint8_t host_le;
    memcpy(&host_le, &one, 1);
    PlyIn in = {(const uint8_t *)body, (const uint8_t *)end, (l->fmt == FMT_BLE) != host_le, NULL};
    RtLines r = {body, end, header_lines, 0};
    uint64_t faces = 0;
    for (int i = 0; i < l->nelems; i++)
        if (l->elems[i].kind == ELEM_FACE) faces = l->elems[i].count;
    if (!reserve_scene(l->s, l->nverts, faces)) return ply_oom(l);
    l->line = 0;
    for (int ei = 0; ei < l->nelems; ei++) {
        const PlyElem *e = &l->elems[ei];
        if (e->nprops == 0) continue; /* records of nothing take no bytes and no lines */
        for (uint64_t i = 0; i < e->count; i++) {
            if (l->fmt == FMT_ASCII) {
                char *p;
                do { /* blank lines between records are tolerated */
                    p = rt_next_line(&r);
                } while (p && !*rt_skip_blanks(p) && strlen(p) == r.len);
                l->line = r.line;
                if (!p)
                    return ply_fail(l, "%s %llu: unexpected end of file (the header declares %llu %s records; "
                                       "file truncated?)",
                                    e->name, (unsigned long long)i, (unsigned long long)e->count, e->name);
                if (strlen(p) != r.len) return ply_fail(l, "expected text, found a NUL byte");
                if (e->kind == ELEM_OTHER) continue; /* skipped by line */
                in.tok = p;
            }
            RtStatus st = read_record(l, &in, e, i);
            if (st != RT_OK) return st;
        }
    }
    return RT_OK;
}

RtStatus rt_ply_load(const char *path, RtScene *s, RtError *err)
{
    double t0 = rt_now_ms();
    uint32_t v0 = s->vert_count, tri0 = s->tri_count, ob0 = s->object_count;
    char *data;
    size_t size;
    RtStatus st = rt_read_file(path, "PLY", PLY_MAX_FILE_BYTES, &data, &size, err);
    if (st != RT_OK) return st;
    PlyLoad l;
    memset(&l, 0, sizeof l);
    l.s = s;
    l.err = err;
    l.path = path;
    l.v0 = v0;

    char *body = NULL;
    st = parse_header(&l, data, size, &body);
    int header_lines = l.line;
    if (st == RT_OK) st = check_counts(&l, (size_t)(data + size - body));
    if (st == RT_OK) {
        char name[64];
        const char *b = strrchr(path, '/');
        snprintf(name, sizeof name, "%s", b ? b + 1 : path);
        char *dot = strrchr(name, '.');
        if (dot && dot != name) *dot = '\0';
        int64_t ob = rt_scene_add_object(s, name);
        if (ob < 0) st = ply_oom(&l);
        else l.object = (uint32_t)ob;
    }
    if (st == RT_OK) st = parse_body(&l, body, data + size, header_lines);
    if (st == RT_OK) {
        s->objects[l.object].tri_count = s->tri_count - tri0;
        if (s->tri_count == tri0) s->object_count--; /* a point cloud: no object */
        RT_INFO("PLY", "%s: %u triangles, %u vertices (%s) in %.0f ms", path, s->tri_count - tri0,
                s->vert_count - v0, l.fmt == FMT_ASCII ? "ascii" : l.fmt == FMT_BLE ? "binary LE" : "binary BE",
                rt_now_ms() - t0);
    } else {
        s->vert_count = v0;
        s->tri_count = tri0;
        s->object_count = ob0;
    }
    free(l.elems);
    free(l.poly);
    free(data);
    return st;
}
