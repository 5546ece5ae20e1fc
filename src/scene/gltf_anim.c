/* gltf_anim.c — the samplers of one glTF 2.0 animation, read from the file
 * (gltf_anim.h says why). glTF 2.0 specification sections followed: "GLB
 * File Format Specification" (header, JSON and BIN chunks), "Buffers and
 * Buffer Views", "Accessors" (bounds, byteStride), "Animations" (samplers,
 * channels, the accessor types of each path). */
#include "scene/gltf_anim.h"

#include "anim/anim_keys.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int rt_gltf_anim_claims(const char *path)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash)) return 0;
    return !strcasecmp(dot, ".gltf") || !strcasecmp(dot, ".glb");
}

void rt_gltf_anim_free(RtGltfAnim *a)
{
    for (uint32_t i = 0; i < a->count; i++) {
        free(a->ch[i].node);
        free(a->ch[i].keys.keys);
    }
    free(a->ch);
    memset(a, 0, sizeof *a);
}

#if !(RT_HAVE_ASSIMP && RT_HAVE_CJSON)

RtStatus rt_gltf_anim_load(const char *path, uint32_t anim, RtGltfAnim *out, RtError *err)
{
    (void)anim;
    memset(out, 0, sizeof *out);
    return rt_fail(err, RT_ERR_UNSUPPORTED, "%s: GLTF: built without cJSON (libcjson-dev): samplers not read", path);
}

#else

#include <cJSON.h>

/* The largest .gltf, .glb or .bin read: the size of texture.c's limit. */
#define GL_MAX_FILE_BYTES ((size_t)1 << 30)
/* Keys of one channel at most (each RtKbKey is ~80 bytes: 1.3 GB). */
#define GL_MAX_KEYS ((uint32_t)1 << 24)
/* GLB (spec "GLB File Format Specification"): magic "glTF", version 2,
 * 12-byte header, chunks of (length, type, data) aligned to 4 bytes. */
#define GL_GLB_MAGIC 0x46546C67u
#define GL_GLB_JSON 0x4E4F534Au
#define GL_GLB_BIN 0x004E4942u
#define GL_GLB_HEADER 12u
#define GL_CHUNK_HEADER 8u
/* accessor componentType codes (spec "Accessors") */
enum { GL_BYTE = 5120, GL_UBYTE = 5121, GL_SHORT = 5122, GL_USHORT = 5123, GL_UINT = 5125, GL_FLOAT = 5126 };
/* byteStride's range (spec "bufferView.byteStride"): 4..252, a multiple of 4 */
#define GL_STRIDE_MIN 4
#define GL_STRIDE_MAX 252

typedef struct GlBuffer {
    uint8_t *data;     /* owned, or NULL: the GLB's BIN chunk */
    const uint8_t *p;  /* the bytes (data or the BIN chunk); NULL until loaded */
    size_t size;       /* its byteLength */
} GlBuffer;

typedef struct GlFile {
    const char *path;
    RtError *err;
    char dir[PATH_MAX];          /* the model's folder, with its '/' */
    char *file;                  /* the whole file (rt_read_file) */
    size_t file_size;
    const uint8_t *bin;          /* GLB: the BIN chunk's bytes, NULL when none */
    size_t bin_size;
    cJSON *root;
    cJSON **acc, **view, **buf_json, **node;
    uint32_t acc_n, view_n, buf_n, node_n;
    GlBuffer *buf;
} GlFile;

/* An accessor resolved to bytes: element i, component c is at
 * p + i * stride + c * csize. */
typedef struct GlAcc {
    const uint8_t *p;
    size_t stride;
    uint32_t count;
    int comps, ctype, csize, normalized;
} GlAcc;

static RtStatus gl_fail(GlFile *G, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static RtStatus gl_fail(GlFile *G, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    RtStatus st = rt_vfail_at(G->err, RT_ERR_PARSE, G->path, 0, "GLTF", fmt, ap);
    va_end(ap);
    return st;
}

static uint32_t gl_u32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* ---- JSON ------------------------------------------------------------------------------ */

/* obj[key] as an integer in [lo, hi]; absent: *out = def, unless def < lo
 * (the member is required). what names the object in the message. */
static RtStatus gl_int(GlFile *G, const cJSON *obj, const char *key, int64_t def, int64_t lo, int64_t hi,
                       int64_t *out, const char *what)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (def < lo) return gl_fail(G, "%s: \"%s\" is missing", what, key);
        *out = def;
        return RT_OK;
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1.0 - (double)INT64_MAX;
    if (!(d >= (double)lo && d <= (double)hi && d == (double)(int64_t)d))
        return gl_fail(G, "%s: \"%s\" must be an integer in [%lld, %lld]", what, key, (long long)lo, (long long)hi);
    *out = (int64_t)d;
    return RT_OK;
}

/* root[key] as a table of its items (an absent array is empty). */
static RtStatus gl_table(GlFile *G, const char *key, cJSON ***items, uint32_t *n)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(G->root, key);
    *items = NULL, *n = 0;
    if (!arr) return RT_OK;
    if (!cJSON_IsArray(arr)) return gl_fail(G, "\"%s\" is not an array", key);
    uint32_t count = 0;
    for (const cJSON *c = arr->child; c; c = c->next) count++;
    if (!count) return RT_OK;
    *items = malloc(count * sizeof **items);
    if (!*items) return rt_fail(G->err, RT_ERR_OOM, "%s: GLTF: out of memory (%s)", G->path, key);
    count = 0;
    for (cJSON *c = arr->child; c; c = c->next) {
        if (!cJSON_IsObject(c)) return gl_fail(G, "%s[%u] is not an object", key, count);
        (*items)[count++] = c;
    }
    *n = count;
    return RT_OK;
}

/* ---- the file: .gltf text or GLB chunks ------------------------------------------------ */

static RtStatus gl_open(GlFile *G)
{
    RtStatus st = rt_read_file(G->path, "GLTF", GL_MAX_FILE_BYTES, &G->file, &G->file_size, G->err);
    if (st != RT_OK) return st;
    const uint8_t *f = (const uint8_t *)G->file;
    const char *json = G->file;
    size_t json_len = G->file_size;
    if (G->file_size >= 4 && gl_u32(f) == GL_GLB_MAGIC) {
        if (G->file_size < GL_GLB_HEADER + GL_CHUNK_HEADER) return gl_fail(G, "GLB: truncated header");
        uint32_t version = gl_u32(f + 4), length = gl_u32(f + 8);
        if (version != 2) return gl_fail(G, "GLB: version %u; expected 2", version);
        if (length > G->file_size)
            return gl_fail(G, "GLB: truncated: the header says %u bytes, the file has %zu", length, G->file_size);
        size_t at = GL_GLB_HEADER;
        for (int chunk = 0; at + GL_CHUNK_HEADER <= length; chunk++) {
            uint32_t clen = gl_u32(f + at), type = gl_u32(f + at + 4);
            at += GL_CHUNK_HEADER;
            if (clen > length - at) return gl_fail(G, "GLB: chunk %d (%u bytes) runs past the file's end", chunk, clen);
            if (chunk == 0 && type != GL_GLB_JSON) return gl_fail(G, "GLB: the first chunk is not JSON");
            if (chunk == 0) json = (const char *)f + at, json_len = clen;
            if (chunk == 1 && type == GL_GLB_BIN) G->bin = f + at, G->bin_size = clen;
            at += (clen + 3u) & ~(size_t)3u;
        }
        if (json == G->file) return gl_fail(G, "GLB: no JSON chunk");
    }
    G->root = cJSON_ParseWithLength(json, json_len);
    if (!G->root || !cJSON_IsObject(G->root)) return gl_fail(G, "the JSON does not parse as an object");
    if ((st = gl_table(G, "accessors", &G->acc, &G->acc_n)) != RT_OK) return st;
    if ((st = gl_table(G, "bufferViews", &G->view, &G->view_n)) != RT_OK) return st;
    if ((st = gl_table(G, "buffers", &G->buf_json, &G->buf_n)) != RT_OK) return st;
    if ((st = gl_table(G, "nodes", &G->node, &G->node_n)) != RT_OK) return st;
    if (G->buf_n && !(G->buf = calloc(G->buf_n, sizeof *G->buf)))
        return rt_fail(G->err, RT_ERR_OOM, "%s: GLTF: out of memory (buffers)", G->path);
    return RT_OK;
}

static void gl_close(GlFile *G)
{
    for (uint32_t i = 0; i < G->buf_n && G->buf; i++) free(G->buf[i].data);
    free(G->buf), free(G->acc), free(G->view), free(G->buf_json), free(G->node);
    cJSON_Delete(G->root);
    free(G->file);
}

/* ---- buffers ------------------------------------------------------------------------------ */

static int gl_b64(int c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* RFC 4648 base64 of s (padding optional) into a malloc'd *out; 0 on a
 * character outside the alphabet or out of memory. */
static int gl_base64(const char *s, uint8_t **out, size_t *n)
{
    size_t len = strlen(s);
    while (len && s[len - 1] == '=') len--;
    uint8_t *o = malloc(len / 4 * 3 + 3);
    if (!o) return 0;
    size_t k = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = gl_b64((unsigned char)s[i]);
        if (v < 0) {
            free(o);
            return 0;
        }
        acc = acc << 6 | (uint32_t)v, bits += 6;
        if (bits >= 8) bits -= 8, o[k++] = (uint8_t)(acc >> bits);
    }
    *out = o, *n = k;
    return 1;
}

/* A relative URI's %XX escapes decoded into out; 0 when it does not fit,
 * is absolute (a scheme, a leading '/') or has a bad escape. */
static int gl_uri_path(const char *uri, char *out, size_t cap)
{
    if (uri[0] == '/' || strchr(uri, ':') || strchr(uri, '\\')) return 0;
    size_t k = 0;
    for (const char *p = uri; *p; p++) {
        int c = (unsigned char)*p;
        if (c == '%') {
            unsigned v;
            if (sscanf(p + 1, "%2x", &v) != 1 || !p[1] || !p[2] || v == 0) return 0;
            c = (int)v, p += 2;
        }
        if (k + 1 >= cap) return 0;
        out[k++] = (char)c;
    }
    out[k] = '\0';
    return 1;
}

/* Buffer i's bytes, loaded on first use: the GLB's BIN chunk (no uri), a
 * data: URI (base64) or a file beside the model, read through rt_read_file
 * (which refuses FIFOs and devices). */
static RtStatus gl_buffer(GlFile *G, int64_t i, const GlBuffer **out)
{
    char what[64];
    snprintf(what, sizeof what, "buffers[%lld]", (long long)i);
    GlBuffer *b = &G->buf[i];
    if (b->p) {
        *out = b;
        return RT_OK;
    }
    int64_t len;
    RtStatus st = gl_int(G, G->buf_json[i], "byteLength", -1, 1, INT64_MAX, &len, what);
    if (st != RT_OK) return st;
    const cJSON *uri = cJSON_GetObjectItemCaseSensitive(G->buf_json[i], "uri");
    size_t have;
    if (!uri) {
        if (i != 0 || !G->bin) return gl_fail(G, "%s has no uri and the file no GLB BIN chunk", what);
        b->p = G->bin, have = G->bin_size;
    } else if (!cJSON_IsString(uri)) {
        return gl_fail(G, "%s: \"uri\" is not a string", what);
    } else if (!strncmp(uri->valuestring, "data:", 5)) {
        const char *comma = strchr(uri->valuestring, ',');
        if (!comma || comma - uri->valuestring < 12 || strncmp(comma - 7, ";base64", 7))
            return gl_fail(G, "%s: a data: URI that is not base64", what);
        if (!gl_base64(comma + 1, &b->data, &have)) return gl_fail(G, "%s: the data: URI's base64 is malformed", what);
        b->p = b->data;
    } else {
        char rel[PATH_MAX], full[PATH_MAX];
        if (!gl_uri_path(uri->valuestring, rel, sizeof rel) ||
            snprintf(full, sizeof full, "%s%s", G->dir, rel) >= (int)sizeof full)
            return gl_fail(G, "%s: uri \"%.200s\" is not a relative file name", what, uri->valuestring);
        char *data;
        if ((st = rt_read_file(full, "GLTF", GL_MAX_FILE_BYTES, &data, &have, G->err)) != RT_OK) return st;
        b->data = (uint8_t *)data, b->p = b->data;
    }
    if ((uint64_t)len > have) {
        b->p = NULL;
        return gl_fail(G, "%s: byteLength %lld but only %zu bytes", what, (long long)len, have);
    }
    b->size = (size_t)len;
    *out = b;
    return RT_OK;
}

/* ---- accessors ----------------------------------------------------------------------------- */

static int gl_comps(const char *type)
{
    static const struct { const char *name; int comps; } kTypes[] = {
        {"SCALAR", 1}, {"VEC2", 2}, {"VEC3", 3}, {"VEC4", 4},
    };
    for (size_t i = 0; i < sizeof kTypes / sizeof kTypes[0]; i++)
        if (!strcmp(type, kTypes[i].name)) return kTypes[i].comps;
    return 0;
}

static int gl_csize(int64_t ctype)
{
    switch (ctype) {
    case GL_BYTE: case GL_UBYTE: return 1;
    case GL_SHORT: case GL_USHORT: return 2;
    case GL_UINT: case GL_FLOAT: return 4;
    default: return 0;
    }
}

/* Accessor idx resolved to bytes, every byte of it checked to lie inside
 * its buffer view and that view inside its buffer. */
static RtStatus gl_accessor(GlFile *G, int64_t idx, GlAcc *a)
{
    char what[64];
    snprintf(what, sizeof what, "accessors[%lld]", (long long)idx);
    const cJSON *ac = G->acc[idx];
    int64_t view, off, ctype, count;
    RtStatus st;
    if (cJSON_GetObjectItemCaseSensitive(ac, "sparse")) return gl_fail(G, "%s: sparse accessors are not read", what);
    if (!cJSON_GetObjectItemCaseSensitive(ac, "bufferView"))
        return gl_fail(G, "%s: no bufferView (an all-zero accessor) is not read", what);
    if ((st = gl_int(G, ac, "bufferView", -1, 0, (int64_t)G->view_n - 1, &view, what)) != RT_OK ||
        (st = gl_int(G, ac, "byteOffset", 0, 0, INT64_MAX, &off, what)) != RT_OK ||
        (st = gl_int(G, ac, "componentType", -1, GL_BYTE, GL_FLOAT, &ctype, what)) != RT_OK ||
        (st = gl_int(G, ac, "count", -1, 1, GL_MAX_KEYS * 3ll, &count, what)) != RT_OK)
        return st;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(ac, "type");
    a->comps = cJSON_IsString(type) ? gl_comps(type->valuestring) : 0;
    a->csize = gl_csize(ctype);
    if (!a->comps) return gl_fail(G, "%s: \"type\" must be SCALAR, VEC2, VEC3 or VEC4 here", what);
    if (!a->csize) return gl_fail(G, "%s: componentType %lld is not one of glTF's", what, (long long)ctype);
    if (off % a->csize) return gl_fail(G, "%s: byteOffset %lld is not a multiple of the component size", what, (long long)off);
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(ac, "normalized");
    a->normalized = cJSON_IsTrue(norm);
    a->ctype = (int)ctype;
    a->count = (uint32_t)count;

    char vwhat[64];
    snprintf(vwhat, sizeof vwhat, "bufferViews[%lld]", (long long)view);
    const cJSON *vj = G->view[view];
    int64_t buf, voff, vlen, stride;
    if ((st = gl_int(G, vj, "buffer", -1, 0, (int64_t)G->buf_n - 1, &buf, vwhat)) != RT_OK ||
        (st = gl_int(G, vj, "byteOffset", 0, 0, INT64_MAX, &voff, vwhat)) != RT_OK ||
        (st = gl_int(G, vj, "byteLength", -1, 1, INT64_MAX, &vlen, vwhat)) != RT_OK ||
        (st = gl_int(G, vj, "byteStride", 0, 0, GL_STRIDE_MAX, &stride, vwhat)) != RT_OK)
        return st;
    size_t elem = (size_t)a->comps * (size_t)a->csize;
    if (stride && (stride < GL_STRIDE_MIN || stride % 4 || (size_t)stride < elem))
        return gl_fail(G, "%s: byteStride %lld: expected a multiple of 4 in [%d, %d], at least the %zu-byte element",
                       vwhat, (long long)stride, GL_STRIDE_MIN, GL_STRIDE_MAX, elem);
    a->stride = stride ? (size_t)stride : elem;
    /* all in 64 bits: count < 2^26, stride <= 252, offsets checked against lengths first */
    if ((uint64_t)off > (uint64_t)vlen || a->stride * (uint64_t)(count - 1) + elem > (uint64_t)vlen - (uint64_t)off)
        return gl_fail(G, "%s: %lld elements from byteOffset %lld run past %s (%lld bytes)", what, (long long)count,
                       (long long)off, vwhat, (long long)vlen);
    const GlBuffer *b;
    if ((st = gl_buffer(G, buf, &b)) != RT_OK) return st;
    if ((uint64_t)voff > b->size || (uint64_t)vlen > b->size - (uint64_t)voff)
        return gl_fail(G, "%s: bytes %lld..%lld run past buffers[%lld] (%zu bytes)", vwhat, (long long)voff,
                       (long long)(voff + vlen), (long long)buf, b->size);
    a->p = b->p + voff + off;
    return RT_OK;
}

/* Component c of element i as a float: floats as stored (little-endian, as
 * glTF is and the host), normalized integers by the spec's rule
 * ("Animations": max(c / 127, -1) for signed bytes, c / 255 unsigned, ...). */
static float gl_get(const GlAcc *a, uint32_t i, int c)
{
    const uint8_t *p = a->p + (size_t)i * a->stride + (size_t)c * (size_t)a->csize;
    float f;
    int16_t s16;
    uint16_t u16;
    switch (a->ctype) {
    case GL_FLOAT: memcpy(&f, p, 4); return f;
    case GL_BYTE: return fmaxf((float)(int8_t)p[0] / 127.0f, -1.0f);
    case GL_UBYTE: return (float)p[0] / 255.0f;
    case GL_SHORT: memcpy(&s16, p, 2); return fmaxf((float)s16 / 32767.0f, -1.0f);
    case GL_USHORT: memcpy(&u16, p, 2); return (float)u16 / 65535.0f;
    default: return NAN;
    }
}

/* ---- samplers -------------------------------------------------------------------------------- */

static const struct { const char *name; int interp; } kInterp[] = {
    {"LINEAR", RT_KEYS_LINEAR}, {"STEP", RT_KEYS_STEP}, {"CUBICSPLINE", RT_KEYS_CUBIC},
};
static const char *const kPath[] = {"translation", "rotation", "scale"};

/* The keys of sampler `sj` for a channel of path `path` (what names it). */
static RtStatus gl_sampler(GlFile *G, const cJSON *sj, int path, RtKbChannel *out, const char *what)
{
    int64_t in_i, out_i;
    RtStatus st;
    if ((st = gl_int(G, sj, "input", -1, 0, (int64_t)G->acc_n - 1, &in_i, what)) != RT_OK ||
        (st = gl_int(G, sj, "output", -1, 0, (int64_t)G->acc_n - 1, &out_i, what)) != RT_OK)
        return st;
    const cJSON *ij = cJSON_GetObjectItemCaseSensitive(sj, "interpolation");
    int interp = ij ? -1 : RT_KEYS_LINEAR; /* the spec's default */
    for (size_t k = 0; ij && cJSON_IsString(ij) && k < sizeof kInterp / sizeof kInterp[0]; k++)
        if (!strcmp(ij->valuestring, kInterp[k].name)) interp = kInterp[k].interp;
    if (interp < 0) return gl_fail(G, "%s: \"interpolation\" must be LINEAR, STEP or CUBICSPLINE", what);
    GlAcc in, val;
    if ((st = gl_accessor(G, in_i, &in)) != RT_OK || (st = gl_accessor(G, out_i, &val)) != RT_OK) return st;
    if (in.comps != 1 || in.ctype != GL_FLOAT)
        return gl_fail(G, "%s: input accessors[%lld] must be SCALAR floats (seconds)", what, (long long)in_i);
    if (in.count > GL_MAX_KEYS) return gl_fail(G, "%s: %u keys; at most %u are read", what, in.count, GL_MAX_KEYS);
    int rot = path == RT_GLTF_ROTATION, comps = rot ? 4 : 3;
    /* translation and scale: floats only; rotation: floats or normalized
     * signed/unsigned bytes and shorts (spec "Animations", accessor table) */
    int int_ok = rot && val.normalized && val.ctype != GL_UINT;
    if (val.comps != comps || !(val.ctype == GL_FLOAT || int_ok))
        return gl_fail(G, "%s: output accessors[%lld] must be %s %s", what, (long long)out_i, rot ? "VEC4" : "VEC3",
                       rot ? "floats or normalized (unsigned) bytes or shorts" : "floats");
    uint32_t per = interp == RT_KEYS_CUBIC ? 3u : 1u;
    if ((uint64_t)val.count != (uint64_t)in.count * per)
        return gl_fail(G, "%s: output accessors[%lld] has %u elements; expected %s%u (the input's count)", what,
                       (long long)out_i, val.count, per == 3 ? "3 x " : "", in.count);
    RtKbKey *keys = calloc(in.count, sizeof *keys);
    if (!keys) return rt_fail(G->err, RT_ERR_OOM, "%s: GLTF: out of memory (%u keys)", G->path, in.count);
    for (uint32_t i = 0; i < in.count; i++) {
        RtKbKey *k = &keys[i];
        k->t = gl_get(&in, i, 0);
        int ok = isfinite(k->t) && (i == 0 || k->t > keys[i - 1].t);
        for (int c = 0; c < comps; c++) {
            /* CUBICSPLINE: (in-tangent, value, out-tangent) per key, the
             * tangents kept as stored (gltf_anim.h) */
            k->v[c] = gl_get(&val, i * per + (per == 3), c);
            if (per == 3) k->in[c] = gl_get(&val, i * 3, c), k->out[c] = gl_get(&val, i * 3 + 2, c);
            ok = ok && isfinite(k->v[c]) && isfinite(k->in[c]) && isfinite(k->out[c]);
        }
        if (!ok) {
            const char *why = isfinite(k->t) && !(i == 0 || k->t > keys[i - 1].t) ? "times must increase strictly"
                                                                                   : "a value is not finite";
            free(keys);
            return gl_fail(G, "%s: key %u: %s", what, i, why);
        }
        if (rot && per == 1) rt_quat_normalize(k->v);
    }
    out->keys = keys, out->count = in.count, out->interp = interp;
    return RT_OK;
}

/* The name assimp 5.2 gives node n: its "name", else "nodes[N]". */
static void gl_node_name(const GlFile *G, int64_t n, char *out, size_t cap)
{
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(G->node[n], "name");
    if (cJSON_IsString(nm) && nm->valuestring[0]) snprintf(out, cap, "%s", nm->valuestring);
    else snprintf(out, cap, "nodes[%lld]", (long long)n);
}

static int gl_name_unique(const GlFile *G, int64_t n, const char *name)
{
    char other[1024];
    for (uint32_t i = 0; i < G->node_n; i++) {
        if (i == n) continue;
        gl_node_name(G, i, other, sizeof other);
        if (!strcmp(other, name)) return 0;
    }
    return 1;
}

static RtStatus gl_animation(GlFile *G, uint32_t anim, RtGltfAnim *out)
{
    const cJSON *anims = cJSON_GetObjectItemCaseSensitive(G->root, "animations");
    out->anim_count = (uint32_t)cJSON_GetArraySize(anims);
    const cJSON *aj = cJSON_IsArray(anims) ? cJSON_GetArrayItem(anims, (int)anim) : NULL;
    if (!cJSON_IsObject(aj)) return gl_fail(G, "animations[%u]: no such animation (the file has %u)", anim, out->anim_count);
    const cJSON *samplers = cJSON_GetObjectItemCaseSensitive(aj, "samplers");
    const cJSON *channels = cJSON_GetObjectItemCaseSensitive(aj, "channels");
    if (!cJSON_IsArray(samplers) || !cJSON_IsArray(channels))
        return gl_fail(G, "animations[%u]: \"samplers\" and \"channels\" must be arrays", anim);
    uint32_t n = (uint32_t)cJSON_GetArraySize(channels), ci = 0;
    if (n && !(out->ch = calloc(n, sizeof *out->ch)))
        return rt_fail(G->err, RT_ERR_OOM, "%s: GLTF: out of memory (channels)", G->path);
    for (const cJSON *cj = channels->child; cj; cj = cj->next, ci++) {
        char what[128];
        snprintf(what, sizeof what, "animations[%u].channels[%u]", anim, ci);
        const cJSON *target = cJSON_GetObjectItemCaseSensitive(cj, "target");
        const cJSON *pj = cJSON_GetObjectItemCaseSensitive(target, "path");
        if (!cJSON_IsObject(target) || !cJSON_IsString(pj)) return gl_fail(G, "%s: no target path", what);
        int path = -1;
        for (int k = 0; k < 3; k++)
            if (!strcmp(pj->valuestring, kPath[k])) path = k;
        if (!strcmp(pj->valuestring, "weights")) out->weight_channels++;
        /* "weights" stays assimp's; a target without a node or with an
         * extension's path animates nothing of ours (spec: ignore it) */
        if (path < 0 || !cJSON_GetObjectItemCaseSensitive(target, "node")) continue;
        int64_t node, si;
        RtStatus st;
        if ((st = gl_int(G, target, "node", -1, 0, (int64_t)G->node_n - 1, &node, what)) != RT_OK ||
            (st = gl_int(G, cj, "sampler", -1, 0, (int64_t)cJSON_GetArraySize(samplers) - 1, &si, what)) != RT_OK)
            return st;
        const cJSON *sj = cJSON_GetArrayItem(samplers, (int)si);
        if (!cJSON_IsObject(sj)) return gl_fail(G, "%s: sampler %lld is not an object", what, (long long)si);
        char name[1024];
        gl_node_name(G, node, name, sizeof name);
        for (uint32_t k = 0; k < out->count; k++)
            if (out->ch[k].path == path && !strcmp(out->ch[k].node, name) && gl_name_unique(G, node, name))
                return gl_fail(G, "%s: node %lld's %s is animated twice", what, (long long)node, kPath[path]);
        RtGltfChannel *c = &out->ch[out->count];
        if ((st = gl_sampler(G, sj, path, &c->keys, what)) != RT_OK) return st;
        out->count++;
        c->path = path;
        c->ambiguous = !gl_name_unique(G, node, name);
        if (!(c->node = strdup(name))) return rt_fail(G->err, RT_ERR_OOM, "%s: GLTF: out of memory (names)", G->path);
    }
    return RT_OK;
}

RtStatus rt_gltf_anim_load(const char *path, uint32_t anim, RtGltfAnim *out, RtError *err)
{
    memset(out, 0, sizeof *out);
    GlFile G;
    memset(&G, 0, sizeof G);
    G.path = path, G.err = err;
    const char *slash = strrchr(path, '/');
    size_t dn = slash ? (size_t)(slash - path) + 1 : 0;
    if (dn >= sizeof G.dir) return rt_fail(err, RT_ERR_ARG, "%s: GLTF: the path is too long", path);
    memcpy(G.dir, path, dn);
    G.dir[dn] = '\0';
    RtStatus st = gl_open(&G);
    if (st == RT_OK) st = gl_animation(&G, anim, out);
    if (st != RT_OK) {
        uint32_t anims = out->anim_count;
        rt_gltf_anim_free(out);
        out->anim_count = anims;
    }
    gl_close(&G);
    return st;
}

#endif
