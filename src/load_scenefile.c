/* load_scenefile.c — the .scene composition format (docs/formats.md): a
 * line-oriented text file that places a camera, lights, materials, meshes
 * (OBJ/PLY through their loaders) and built-in primitives, and includes other
 * .scene files. One statement per line; the first malformed line stops the
 * load with "file:line: SCENE: expected <what> after '<keyword>'". */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "primitives.h"
#include "scene.h"
#include "texture.h"

/* Nesting of include beyond this is an error (a cycle is caught earlier). */
#define SCENE_INCLUDE_DEPTH_MAX 16
/* A .scene is a hand-written description; a bigger file is a mistake (a
 * mesh renamed .scene, a binary file) rather than something to parse. */
#define SCENE_FILE_MAX (16u << 20)
/* Tokens on one line; the longest statement (material with every option)
 * has about 30. */
#define SCENE_TOKENS_MAX 128
/* Sphere tessellation from a file: 256 slices is already smooth under a
 * mirror, and the cap bounds what a short (or fuzzed) file can allocate. */
#define SCENE_SEGMENTS_DEFAULT 48
#define SCENE_SEGMENTS_MAX 256
#define SCENE_SEGMENTS_RANGE "an integer 3..256"
/* How much of an offending token a message quotes. */
#define SCENE_QUOTE_MAX 40

/* A material defined by a `material` line: its name, where, and its index. */
typedef struct SceneMatName {
    char name[64];
    int32_t index;
    char *file;
    int line;
} SceneMatName;

/* One load, shared across included files. */
typedef struct SceneCtx {
    RtScene *s;
    RtError *err;
    char *stack[SCENE_INCLUDE_DEPTH_MAX + 1]; /* real paths of the files being read, outermost first */
    int depth;                                 /* entries in stack */
    SceneMatName *names;
    uint32_t name_count;
    size_t name_cap;
} SceneCtx;

/* The tokens of the line being parsed, and a cursor over them. */
typedef struct SceneLine {
    const char *file; /* as given: what messages name */
    const char *dir;  /* where relative paths start */
    int no;
    char *tok[SCENE_TOKENS_MAX];
    int n, at;
} SceneLine;

static const char *next_tok(SceneLine *L) { return L->at < L->n ? L->tok[L->at++] : NULL; }
static const char *peek_tok(const SceneLine *L) { return L->at < L->n ? L->tok[L->at] : NULL; }

/* The one error form: "file:line: SCENE: expected WHAT after 'KW', found 'TOK'". */
static RtStatus expected(SceneCtx *c, const SceneLine *L, const char *what, const char *kw, const char *found)
{
    if (found)
        return rt_fail(c->err, RT_ERR_PARSE, "%s:%d: SCENE: expected %s after '%.*s', found '%.*s'%s", L->file,
                       L->no, what, SCENE_QUOTE_MAX, kw, SCENE_QUOTE_MAX, found,
                       strlen(found) > SCENE_QUOTE_MAX ? "..." : "");
    return rt_fail(c->err, RT_ERR_PARSE, "%s:%d: SCENE: expected %s after '%.*s', found the end of the line",
                   L->file, L->no, what, SCENE_QUOTE_MAX, kw);
}

/* ---- values ---------------------------------------------------------------- */

static int parse_float(const char *t, float *out)
{
    char *end;
    errno = 0;
    float v = strtof(t, &end);
    if (end == t || *end || !isfinite(v)) return 0;
    *out = v;
    return 1;
}

/* n finite numbers, each at least lo (use -INFINITY for any). */
static RtStatus read_floats(SceneCtx *c, SceneLine *L, const char *kw, const char *what, float *out, int n,
                            float lo)
{
    for (int k = 0; k < n; k++) {
        const char *t = next_tok(L);
        if (!t || !parse_float(t, &out[k]) || out[k] < lo) return expected(c, L, what, kw, t);
    }
    return RT_OK;
}

static RtStatus read_vec3(SceneCtx *c, SceneLine *L, const char *kw, const char *what, RtVec3 *v, float lo)
{
    float f[3];
    RtStatus st = read_floats(c, L, kw, what, f, 3, lo);
    if (st == RT_OK) *v = v3(f[0], f[1], f[2]);
    return st;
}

static RtStatus read_range(SceneCtx *c, SceneLine *L, const char *kw, const char *what, float *v, float lo,
                           float hi)
{
    const char *t = next_tok(L);
    if (!t || !parse_float(t, v) || *v < lo || *v > hi) return expected(c, L, what, kw, t);
    return RT_OK;
}

static RtStatus read_int(SceneCtx *c, SceneLine *L, const char *kw, const char *what, int *v, int lo, int hi)
{
    const char *t = next_tok(L);
    char *end;
    long x = t ? strtol(t, &end, 10) : 0;
    if (!t || end == t || *end || x < lo || x > hi) return expected(c, L, what, kw, t);
    *v = (int)x;
    return RT_OK;
}

/* A name (material, object): non-empty, fits RtMaterial/RtObject.name. */
static RtStatus read_name(SceneCtx *c, SceneLine *L, const char *kw, char out[64])
{
    const char *t = next_tok(L);
    if (!t || !*t || strlen(t) >= 64) return expected(c, L, "a name of 1 to 63 bytes", kw, t);
    memcpy(out, t, strlen(t) + 1);
    return RT_OK;
}

/* A path relative to the current file's directory (absolute stays). */
static RtStatus read_path(SceneCtx *c, SceneLine *L, const char *kw, const char *what, char out[PATH_MAX])
{
    const char *t = next_tok(L);
    if (!t || !*t) return expected(c, L, what, kw, t);
    int n = t[0] == '/' ? snprintf(out, PATH_MAX, "%s", t) : snprintf(out, PATH_MAX, "%s/%s", L->dir, t);
    if (n < 0 || n >= PATH_MAX) return expected(c, L, "a path shorter than PATH_MAX", kw, t);
    return RT_OK;
}

/* The file a statement names must exist and be a regular file; the message
 * names the .scene line and the path as resolved. */
static RtStatus check_file(SceneCtx *c, const SceneLine *L, const char *kw, const char *what, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return rt_fail(c->err, RT_ERR_IO, "%s:%d: SCENE: expected %s after '%s': '%s' not found (%s)", L->file,
                       L->no, what, kw, path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return rt_fail(c->err, RT_ERR_IO, "%s:%d: SCENE: expected %s after '%s': '%s' is a directory", L->file,
                       L->no, what, kw, path);
    if (!S_ISREG(st.st_mode))
        return rt_fail(c->err, RT_ERR_IO, "%s:%d: SCENE: expected %s after '%s': '%s' is not a regular file",
                       L->file, L->no, what, kw, path);
    return RT_OK;
}

static int has_ext(const char *path, const char *ext)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    return dot && (!slash || dot > slash) && !strcasecmp(dot, ext);
}

/* ---- materials by name ------------------------------------------------------ */

/* The .scene's own materials first; then any material already in the scene
 * (from an earlier mesh's MTL) with that name. -1 when none. */
static int32_t find_material(const SceneCtx *c, const char *name)
{
    for (uint32_t i = 0; i < c->name_count; i++)
        if (!strcmp(c->names[i].name, name)) return c->names[i].index;
    for (uint32_t i = 0; i < c->s->mat_count; i++)
        if (!strcmp(c->s->mats[i].name, name)) return (int32_t)i;
    return -1;
}

static RtStatus unknown_material(SceneCtx *c, const SceneLine *L, const char *name)
{
    /* List what is defined, as far as the message holds. */
    char list[512];
    size_t n = 0;
    list[0] = 0;
    for (uint32_t i = 0; i < c->name_count && n + 80 < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s'%s'", i ? ", " : "", c->names[i].name);
    if (c->name_count && n + 80 >= sizeof list) snprintf(list + n, sizeof list - n, ", ...");
    return rt_fail(c->err, RT_ERR_PARSE,
                   "%s:%d: SCENE: expected a defined material name after 'material', found '%.*s' (defined: %s)",
                   L->file, L->no, SCENE_QUOTE_MAX, name, c->name_count ? list : "none");
}

static RtStatus read_material_ref(SceneCtx *c, SceneLine *L, int32_t *mat)
{
    char name[64];
    RtStatus st = read_name(c, L, "material", name);
    if (st != RT_OK) return st;
    *mat = find_material(c, name);
    return *mat < 0 ? unknown_material(c, L, name) : RT_OK;
}

/* ---- statements ---------------------------------------------------------- */

typedef RtStatus (*SceneStatement)(SceneCtx *c, SceneLine *L);
static RtStatus parse_file(SceneCtx *c, const char *path);

/* What each kind of value is called in messages. */
#define SCENE_XYZ "3 finite numbers X Y Z"
#define SCENE_RGB "3 finite numbers R G B >= 0"
#define SCENE_FOV "a vertical field of view in degrees, 0 < DEG < 180"

/* camera pos X Y Z look X Y Z [up X Y Z] [fov DEG] */
static RtStatus st_camera(SceneCtx *c, SceneLine *L)
{
    RtCamera cam = {v3(0, 0, 0), v3(0, 0, 0), v3(0, 1, 0), 60.0f};
    int have_pos = 0, have_look = 0;
    RtStatus st = RT_OK;
    for (const char *t; st == RT_OK && (t = next_tok(L));) {
        if (!strcmp(t, "pos")) {
            st = read_vec3(c, L, t, SCENE_XYZ, &cam.pos, -INFINITY);
            have_pos = 1;
        } else if (!strcmp(t, "look")) {
            st = read_vec3(c, L, t, SCENE_XYZ, &cam.look, -INFINITY);
            have_look = 1;
        } else if (!strcmp(t, "up")) {
            st = read_vec3(c, L, t, SCENE_XYZ, &cam.up, -INFINITY);
        } else if (!strcmp(t, "fov")) {
            st = read_range(c, L, t, SCENE_FOV, &cam.fov_y, 0.0f, 180.0f);
            if (st == RT_OK && !(cam.fov_y > 0.0f && cam.fov_y < 180.0f))
                st = expected(c, L, SCENE_FOV, t, L->tok[L->at - 1]);
        } else {
            st = expected(c, L, "one of pos, look, up, fov", "camera", t);
        }
    }
    if (st != RT_OK) return st;
    if (!have_pos || !have_look) return expected(c, L, "'pos X Y Z' and 'look X Y Z'", "camera", NULL);
    RtVec3 fwd = v3_sub(cam.look, cam.pos);
    float dist2 = v3_dot(fwd, fwd);
    if (!(dist2 > 0.0f) || !isfinite(dist2))
        return rt_fail(c->err, RT_ERR_PARSE,
                       "%s:%d: SCENE: expected 'look' a finite, non-zero distance from 'pos' after 'camera'",
                       L->file, L->no);
    RtVec3 side = v3_cross(v3_norm(fwd), v3_norm(cam.up));
    if (!(v3_dot(side, side) > 1e-10f))
        return rt_fail(c->err, RT_ERR_PARSE,
                       "%s:%d: SCENE: expected a non-zero 'up' not parallel to the view direction after 'camera'",
                       L->file, L->no);
    cam.up = v3_norm(cam.up);
    c->s->camera = cam;
    c->s->has_camera = 1;
    return RT_OK;
}

/* light point pos X Y Z [color R G B] | light directional dir X Y Z [color R G B] */
static RtStatus st_light(SceneCtx *c, SceneLine *L)
{
    const char *type = next_tok(L);
    RtLight l = {RT_LIGHT_POINT, v3(0, 0, 0), v3(1, 1, 1)};
    if (type && !strcmp(type, "directional")) l.type = RT_LIGHT_DIRECTIONAL;
    else if (!type || strcmp(type, "point")) return expected(c, L, "'point' or 'directional'", "light", type);
    int point = l.type == RT_LIGHT_POINT, have = 0;
    RtStatus st = RT_OK;
    for (const char *t; st == RT_OK && (t = next_tok(L));) {
        if (!strcmp(t, point ? "pos" : "dir")) {
            st = read_vec3(c, L, t, SCENE_XYZ, &l.v, -INFINITY);
            have = 1;
        } else if (!strcmp(t, "color")) {
            st = read_vec3(c, L, t, SCENE_RGB, &l.color, 0.0f);
        } else {
            st = expected(c, L, point ? "one of pos, color" : "one of dir, color", type, t);
        }
    }
    if (st != RT_OK) return st;
    if (!have) return expected(c, L, point ? "'pos X Y Z'" : "'dir X Y Z'", type, NULL);
    if (!point) { /* stored as the unit direction toward the light */
        float len = v3_len(l.v);
        if (!(len > 0.0f) || !isfinite(len))
            return rt_fail(c->err, RT_ERR_PARSE, "%s:%d: SCENE: expected a non-zero direction X Y Z after 'dir'",
                           L->file, L->no);
        l.v = v3_scale(l.v, 1.0f / len);
    }
    if (rt_scene_add_light(c->s, l) < 0)
        return rt_fail(c->err, RT_ERR_OOM, "%s:%d: SCENE: out of memory", L->file, L->no);
    return RT_OK;
}

static RtStatus read_texture(SceneCtx *c, SceneLine *L, const char *kw, int32_t *index)
{
    char path[PATH_MAX];
    RtStatus st = read_path(c, L, kw, "an image PATH", path);
    if (st == RT_OK) st = check_file(c, L, kw, "an image PATH", path);
    if (st != RT_OK) return st;
    RtError inner = {RT_OK, ""};
    st = rt_texture_load(c->s, path, index, &inner);
    if (st != RT_OK)
        return rt_fail(c->err, st, "%s:%d: SCENE: expected a readable image after '%s': %s", L->file, L->no, kw,
                       inner.msg);
    return RT_OK;
}

/* material NAME [kd R G B] [ks R G B] [ke R G B] [ns N] [reflect R] [ni N]
 *               [d D] [illum N] [map_kd PATH] [map_d PATH] */
static RtStatus st_material(SceneCtx *c, SceneLine *L)
{
    RtMaterial m = rt_material_default();
    RtStatus st = read_name(c, L, "material", m.name);
    if (st != RT_OK) return st;
    for (uint32_t i = 0; i < c->name_count; i++)
        if (!strcmp(c->names[i].name, m.name))
            return rt_fail(c->err, RT_ERR_PARSE,
                           "%s:%d: SCENE: expected a new name after 'material': '%s' is already defined at %s:%d",
                           L->file, L->no, m.name, c->names[i].file, c->names[i].line);
    int illum = -1;
    for (const char *t; st == RT_OK && (t = next_tok(L));) {
        if (!strcmp(t, "kd")) st = read_vec3(c, L, t, SCENE_RGB, &m.kd, 0.0f);
        else if (!strcmp(t, "ks")) st = read_vec3(c, L, t, SCENE_RGB, &m.ks, 0.0f);
        else if (!strcmp(t, "ke")) st = read_vec3(c, L, t, SCENE_RGB, &m.ke, 0.0f);
        else if (!strcmp(t, "ns")) st = read_range(c, L, t, "a finite exponent >= 0", &m.ns, 0.0f, INFINITY);
        else if (!strcmp(t, "reflect")) st = read_range(c, L, t, "a reflectivity 0..1", &m.reflect, 0.0f, 1.0f);
        else if (!strcmp(t, "ni")) {
            st = read_range(c, L, t, "an index of refraction > 0", &m.ni, 0.0f, INFINITY);
            if (st == RT_OK && !(m.ni > 0.0f))
                st = expected(c, L, "an index of refraction > 0", t, L->tok[L->at - 1]);
        } else if (!strcmp(t, "d")) st = read_range(c, L, t, "an opacity 0..1", &m.d, 0.0f, 1.0f);
        else if (!strcmp(t, "illum")) st = read_int(c, L, t, "an MTL illumination model 0..10", &illum, 0, 10);
        else if (!strcmp(t, "map_kd")) st = read_texture(c, L, t, &m.map_kd);
        else if (!strcmp(t, "map_d")) st = read_texture(c, L, t, &m.map_d);
        else st = expected(c, L, "one of kd, ks, ke, ns, reflect, ni, d, illum, map_kd, map_d", "material", t);
    }
    if (st != RT_OK) return st;
    /* Without an explicit illum, pick the MTL model the tracers key on:
     * 7 (refraction) for a transparent material with an index, 3 (mirror)
     * when reflective, else 2 (Phong). */
    m.illum = illum >= 0 ? illum : (m.d < 1.0f && m.ni != 1.0f) ? 7 : (m.reflect > 0.0f ? 3 : 2);

    if (!rt_grow_array((void **)&c->names, &c->name_cap, (size_t)c->name_count + 1, sizeof *c->names))
        return rt_fail(c->err, RT_ERR_OOM, "%s:%d: SCENE: out of memory", L->file, L->no);
    int64_t idx = rt_scene_add_material(c->s, &m);
    char *file = strdup(L->file);
    if (idx < 0 || !file) {
        free(file);
        return rt_fail(c->err, RT_ERR_OOM, "%s:%d: SCENE: out of memory", L->file, L->no);
    }
    SceneMatName *n = &c->names[c->name_count++];
    memcpy(n->name, m.name, sizeof n->name);
    n->index = (int32_t)idx;
    n->file = file;
    n->line = L->no;
    return RT_OK;
}

/* Options shared by mesh and the primitives. */
typedef struct SceneObjOpts {
    char name[64];
    int32_t mat;
    int segments;
    float m[12];
} SceneObjOpts;

/* translate X Y Z | rotate AX AY AZ DEG | scale S | scale X Y Z: each
 * pre-multiplies, so they apply in the order written. */
static RtStatus read_transform(SceneCtx *c, SceneLine *L, const char *kw, float m[12])
{
    RtStatus st;
    float f[4];
    if (!strcmp(kw, "translate")) {
        if ((st = read_floats(c, L, kw, SCENE_XYZ, f, 3, -INFINITY)) != RT_OK) return st;
        rt_mat34_translate(m, v3(f[0], f[1], f[2]));
    } else if (!strcmp(kw, "rotate")) {
        if ((st = read_floats(c, L, kw, "4 finite numbers AX AY AZ DEG", f, 4, -INFINITY)) != RT_OK) return st;
        if (f[0] == 0.0f && f[1] == 0.0f && f[2] == 0.0f)
            return expected(c, L, "a non-zero axis AX AY AZ", kw, L->tok[L->at - 4]);
        rt_mat34_rotate(m, v3(f[0], f[1], f[2]), f[3]);
    } else { /* scale: one factor, or three when the next two tokens are numbers too */
        if ((st = read_floats(c, L, kw, "a finite number S or X Y Z", f, 1, -INFINITY)) != RT_OK) return st;
        f[1] = f[2] = f[0];
        const char *t = peek_tok(L);
        float probe;
        if (t && parse_float(t, &probe) &&
            (st = read_floats(c, L, kw, SCENE_XYZ, &f[1], 2, -INFINITY)) != RT_OK)
            return st;
        if (f[0] == 0.0f || f[1] == 0.0f || f[2] == 0.0f)
            return expected(c, L, "non-zero scale factors", kw, L->tok[L->at - 1]);
        rt_mat34_scale(m, v3(f[0], f[1], f[2]));
    }
    for (int k = 0; k < 12; k++)
        if (!isfinite(m[k])) return expected(c, L, "a transform that stays finite", kw, L->tok[L->at - 1]);
    return RT_OK;
}

static RtStatus read_obj_opts(SceneCtx *c, SceneLine *L, const char *kw, SceneObjOpts *o)
{
    int sphere = !strcmp(kw, "sphere");
    const char *valid = sphere ? "one of name, material, segments, translate, rotate, scale"
                               : "one of name, material, translate, rotate, scale";
    RtStatus st = RT_OK;
    for (const char *t; st == RT_OK && (t = next_tok(L));) {
        if (!strcmp(t, "name")) st = read_name(c, L, t, o->name);
        else if (!strcmp(t, "material")) st = read_material_ref(c, L, &o->mat);
        else if (sphere && !strcmp(t, "segments"))
            st = read_int(c, L, t, SCENE_SEGMENTS_RANGE, &o->segments, 3, SCENE_SEGMENTS_MAX);
        else if (!strcmp(t, "translate") || !strcmp(t, "rotate") || !strcmp(t, "scale"))
            st = read_transform(c, L, t, o->m);
        else st = expected(c, L, valid, kw, t);
    }
    return st;
}

static void obj_opts_init(SceneObjOpts *o, const char *name)
{
    snprintf(o->name, sizeof o->name, "%s", name);
    o->mat = -1;
    o->segments = SCENE_SEGMENTS_DEFAULT;
    rt_mat34_identity(o->m);
}

/* box|sphere|quad [name NAME] [material NAME] [segments N] [transforms] */
static RtStatus st_primitive(SceneCtx *c, SceneLine *L)
{
    const char *kw = L->tok[0];
    SceneObjOpts o;
    obj_opts_init(&o, kw);
    RtStatus st = read_obj_opts(c, L, kw, &o);
    if (st != RT_OK) return st;
    RtError inner = {RT_OK, ""};
    if (!strcmp(kw, "box")) st = rt_prim_box(c->s, o.m, o.mat, o.name, &inner);
    else if (!strcmp(kw, "sphere")) st = rt_prim_sphere(c->s, o.m, o.mat, o.segments, o.name, &inner);
    else st = rt_prim_quad(c->s, o.m, o.mat, o.name, &inner);
    if (st != RT_OK)
        return rt_fail(c->err, st, "%s:%d: SCENE: cannot place '%s': %s", L->file, L->no, o.name, inner.msg);
    return RT_OK;
}

/* mesh PATH [name NAME] [material NAME] [transforms] */
static RtStatus st_mesh(SceneCtx *c, SceneLine *L)
{
    char path[PATH_MAX];
    const char *what = "a .obj or .ply PATH";
    RtStatus st = read_path(c, L, "mesh", what, path);
    if (st != RT_OK) return st;
    int is_obj = has_ext(path, ".obj");
    if (!is_obj && !has_ext(path, ".ply")) return expected(c, L, what, "mesh", L->tok[L->at - 1]);
    SceneObjOpts o;
    obj_opts_init(&o, "");
    if ((st = read_obj_opts(c, L, "mesh", &o)) != RT_OK) return st;
    if ((st = check_file(c, L, "mesh", what, path)) != RT_OK) return st;
    int named = o.name[0] != 0;

    /* Load on its own, place it, then append: the loader's object and
     * material indices start at 0 and rt_scene_append rebases them. */
    RtScene tmp;
    rt_scene_init(&tmp);
    RtError inner = {RT_OK, ""};
    st = is_obj ? rt_obj_load(path, &tmp, &inner) : rt_ply_load(path, &tmp, &inner);
    if (st != RT_OK) {
        rt_scene_free(&tmp);
        return rt_fail(c->err, st, "%s:%d: SCENE: expected a valid .obj or .ply after 'mesh': %s", L->file, L->no,
                       inner.msg);
    }
    if (tmp.tri_count == 0)
        RT_WARN("SCENE", "%s:%d: mesh '%s' has no triangles", L->file, L->no, path);
    if (tmp.object_count == 0 && tmp.tri_count > 0) {
        /* A loader that made no object: one for the whole mesh. */
        int64_t k = rt_scene_add_object(&tmp, "");
        if (k < 0) {
            rt_scene_free(&tmp);
            return rt_fail(c->err, RT_ERR_OOM, "%s:%d: SCENE: out of memory", L->file, L->no);
        }
        tmp.objects[k].first_tri = 0;
        tmp.objects[k].tri_count = tmp.tri_count;
        for (uint32_t i = 0; i < tmp.tri_count; i++) tmp.tris[i].object = (uint32_t)k;
        if (!named) {
            const char *base = strrchr(path, '/');
            snprintf(tmp.objects[k].name, sizeof tmp.objects[k].name, "%.63s", base ? base + 1 : path);
        }
    }
    /* `name` renames a single-object mesh and prefixes a multi-object one. */
    if (named)
        for (uint32_t i = 0; i < tmp.object_count; i++) {
            char full[64 + 64 + 1];
            snprintf(full, sizeof full, "%s/%s", o.name, tmp.objects[i].name);
            const char *nm = tmp.object_count == 1 ? o.name : full;
            snprintf(tmp.objects[i].name, sizeof tmp.objects[i].name, "%.63s", nm);
        }
    /* Transform here rather than in rt_scene_append so mirrors (a negative
     * scale) also swap the winding and keep normals outward. */
    rt_scene_transform(&tmp, o.m);
    st = rt_scene_append(c->s, &tmp, NULL, o.mat, &inner);
    rt_scene_free(&tmp);
    if (st != RT_OK) return rt_fail(c->err, st, "%s:%d: SCENE: %s", L->file, L->no, inner.msg);
    return RT_OK;
}

/* include PATH */
static RtStatus st_include(SceneCtx *c, SceneLine *L)
{
    char path[PATH_MAX], real[PATH_MAX];
    const char *what = "a .scene PATH";
    RtStatus st = read_path(c, L, "include", what, path);
    if (st == RT_OK && !has_ext(path, ".scene")) st = expected(c, L, what, "include", L->tok[L->at - 1]);
    if (st == RT_OK && peek_tok(L)) st = expected(c, L, "the end of the line", "include PATH", peek_tok(L));
    if (st == RT_OK) st = check_file(c, L, "include", what, path);
    if (st != RT_OK) return st;
    if (!realpath(path, real))
        return rt_fail(c->err, RT_ERR_IO, "%s:%d: SCENE: expected %s after 'include': '%s': %s", L->file, L->no,
                       what, path, strerror(errno));
    for (int i = 0; i < c->depth; i++)
        if (!strcmp(c->stack[i], real))
            return rt_fail(c->err, RT_ERR_PARSE,
                           "%s:%d: SCENE: include cycle: '%s' is already being read (expected a file not "
                           "including itself after 'include')",
                           L->file, L->no, path);
    if (c->depth > SCENE_INCLUDE_DEPTH_MAX)
        return rt_fail(c->err, RT_ERR_PARSE,
                       "%s:%d: SCENE: includes nested deeper than %d (expected at most %d levels after 'include')",
                       L->file, L->no, SCENE_INCLUDE_DEPTH_MAX, SCENE_INCLUDE_DEPTH_MAX);
    st = parse_file(c, path);
    if (st != RT_OK && c->err) {
        /* Say where the failing file was included from, as far as it fits. */
        size_t n = strlen(c->err->msg);
        snprintf(c->err->msg + n, sizeof c->err->msg - n, " (included from %s:%d)", L->file, L->no);
    }
    return st;
}

/* animate ... : reserved for dynamic scenes (docs/formats.md, "planned"). */
static RtStatus st_animate(SceneCtx *c, SceneLine *L)
{
    return rt_fail(c->err, RT_ERR_UNSUPPORTED,
                   "%s:%d: SCENE: 'animate' is not supported yet (dynamic scenes land with issue 6); expected one "
                   "of: camera, light, material, mesh, box, sphere, quad, include",
                   L->file, L->no);
}

static const struct {
    const char *keyword;
    SceneStatement run;
} SCENE_STATEMENTS[] = {
    {"camera", st_camera}, {"light", st_light}, {"material", st_material}, {"mesh", st_mesh},
    {"box", st_primitive}, {"sphere", st_primitive}, {"quad", st_primitive}, {"include", st_include},
    {"animate", st_animate},
};

/* ---- lines and files ------------------------------------------------------------ */

/* Splits one line (NUL-terminated, no newline) into tokens in place:
 * whitespace separates, "double quotes" group (no escapes), # starts a
 * comment outside quotes. Control bytes mean this is not a text file. */
static RtStatus tokenize(SceneCtx *c, SceneLine *L, char *p)
{
    L->n = L->at = 0;
    for (char *q = p; *q; q++) {
        unsigned char ch = (unsigned char)*q;
        if ((ch < 0x20 && ch != '\t' && ch != '\r') || ch == 0x7f)
            return rt_fail(c->err, RT_ERR_PARSE,
                           "%s:%d: SCENE: expected text, found control byte 0x%02x (is this a binary file?)",
                           L->file, L->no, ch);
    }
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r') p++;
        if (!*p || *p == '#') return RT_OK;
        if (L->n == SCENE_TOKENS_MAX)
            return rt_fail(c->err, RT_ERR_PARSE, "%s:%d: SCENE: expected at most %d tokens on a line", L->file,
                           L->no, SCENE_TOKENS_MAX);
        if (*p == '"') {
            char *close = strchr(p + 1, '"');
            if (!close) return expected(c, L, "a closing '\"'", L->n ? L->tok[L->n - 1] : "\"", p);
            *close = 0;
            L->tok[L->n++] = p + 1;
            p = close + 1;
            if (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '#')
                return expected(c, L, "a space", "a closing '\"'", p);
            continue;
        }
        L->tok[L->n++] = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '#' && *p != '"') p++;
        if (*p == '"') return expected(c, L, "a space before '\"'", L->tok[L->n - 1], p);
        if (!*p) return RT_OK;
        char end = *p;
        *p++ = 0;
        if (end == '#') return RT_OK;
    }
}

static RtStatus run_line(SceneCtx *c, SceneLine *L)
{
    if (L->n == 0) return RT_OK;
    const char *kw = next_tok(L);
    size_t count = sizeof SCENE_STATEMENTS / sizeof SCENE_STATEMENTS[0];
    for (size_t i = 0; i < count; i++)
        if (!strcmp(kw, SCENE_STATEMENTS[i].keyword)) return SCENE_STATEMENTS[i].run(c, L);
    char valid[256];
    size_t n = 0;
    for (size_t i = 0; i < count && n < sizeof valid; i++)
        n += (size_t)snprintf(valid + n, sizeof valid - n, "%s%s", i ? ", " : "", SCENE_STATEMENTS[i].keyword);
    return rt_fail(c->err, RT_ERR_PARSE, "%s:%d: SCENE: unknown keyword '%.*s'%s (expected one of: %s)", L->file,
                   L->no, SCENE_QUOTE_MAX, kw, strlen(kw) > SCENE_QUOTE_MAX ? "..." : "", valid);
}

static RtStatus parse_file(SceneCtx *c, const char *path)
{
    char *text = NULL, dir[PATH_MAX], real[PATH_MAX];
    size_t len = 0;
    RtStatus st = rt_read_file(path, "SCENE", SCENE_FILE_MAX, &text, &len, c->err);
    if (st != RT_OK) return st;
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    c->stack[c->depth] = strdup(realpath(path, real) ? real : path);
    if (!c->stack[c->depth]) {
        free(text);
        return rt_fail(c->err, RT_ERR_OOM, "%s: SCENE: out of memory", path);
    }
    c->depth++;

    SceneLine L;
    L.file = path;
    L.dir = dir;
    size_t at = 0;
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) at = 3; /* UTF-8 byte order mark */
    for (L.no = 1; st == RT_OK && at < len; L.no++) {
        char *line = text + at;
        char *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) : len - at;
        line[n] = 0;
        at += n + 1;
        if (strlen(line) != n) /* a NUL byte inside the line */
            st = rt_fail(c->err, RT_ERR_PARSE,
                         "%s:%d: SCENE: expected text, found control byte 0x00 (is this a binary file?)", path,
                         L.no);
        if (st == RT_OK) st = tokenize(c, &L, line);
        if (st == RT_OK) st = run_line(c, &L);
    }
    c->depth--;
    free(c->stack[c->depth]);
    free(text);
    return st;
}

RtStatus rt_scenefile_load(const char *path, RtScene *s, RtError *err)
{
    SceneCtx c;
    memset(&c, 0, sizeof c);
    c.s = s;
    c.err = err;
    RtStatus st = parse_file(&c, path);
    for (uint32_t i = 0; i < c.name_count; i++) free(c.names[i].file);
    free(c.names);
    return st;
}
