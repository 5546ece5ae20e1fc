/* load_scenefile.c — the .scene composition format (docs/formats.md): a
 * line-oriented text file that places a camera, lights, materials, meshes
 * (OBJ/PLY through their loaders) and built-in primitives, and includes other
 * .scene files, animates placed objects (spin, orbit, bounce, keyframes,
 * morph, wave) and adds the procedural scenes of runners.h. One statement
 * per line; the first malformed line stops the load with
 * "file:line: SCENE: expected <what> after '<keyword>'". Animations are
 * checked as they are read and turned into RtAnim nodes, tracks, morphs and
 * deforms once the whole file is read (finish_anim), when the time range
 * and the order of every object's motions are known. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "scene/envmap.h"
#include "scene/load.h"
#include "scene/primitives.h"
#include "scene/runners.h"
#include "scene/scene.h"
#include "scene/texture.h"

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

/* A rigid motion of a placed object (anim.h node kinds), in the order written. */
typedef enum { MOTION_SPIN, MOTION_ORBIT, MOTION_BOUNCE, MOTION_KEYS } SceneMotionKind;
typedef struct SceneMotion {
    SceneMotionKind kind;
    float p[8]; /* RtAnimNode.p of the node it becomes (MOTION_KEYS: unused) */
} SceneMotion;

/* Keyframe channels of a `key` statement: translate, rotate, scale. */
enum { KEY_TRANSL, KEY_ROT, KEY_SCALE, KEY_CHANNELS };

/* One placement (a primitive or mesh statement) that `animate` can name:
 * its vertices, as placed by its transforms, and what moves them. */
typedef struct ScenePlaced {
    char name[64];
    uint32_t first_vert, vert_count;
    float m[12];                     /* the placement: its origin is (m[3], m[7], m[11]) */
    SceneMotion *motions;
    uint32_t motion_count;
    size_t motion_cap;
    RtKbKey *keys[KEY_CHANNELS];     /* as written, one key per `key` line that gives the channel */
    uint32_t key_count[KEY_CHANNELS];
    size_t key_cap[KEY_CHANNELS];
    int has_keys;
    float last_key_t;
    RtVec3 *morph_pos, *morph_nrm;   /* the morph target, placed like the object */
    float morph_period;
    RtAnimDeform *waves;
    uint32_t wave_count;
    size_t wave_cap;
    int own_motion;                  /* a mesh file that animates itself (glTF, FBX, MD2, ...) */
} ScenePlaced;

/* A mesh file as its loader left it, kept for the load's later `mesh`
 * lines that name the same file (tens of copies of one model in a scene). */
typedef struct SceneMesh {
    char *real;   /* realpath of the file */
    RtScene scene;
} SceneMesh;

/* One load, shared across included files. */
typedef struct SceneCtx {
    RtScene *s;
    RtError *err;
    char *stack[SCENE_INCLUDE_DEPTH_MAX + 1]; /* real paths of the files being read, outermost first */
    int depth;                                 /* entries in stack */
    SceneMatName *names;
    uint32_t name_count;
    size_t name_cap;
    ScenePlaced *placed;
    uint32_t placed_count;
    size_t placed_cap;
    const char *top;        /* the file rt_scenefile_load was given */
    SceneMesh *meshes;      /* every mesh file read so far, parsed once (a file placed N times) */
    uint32_t mesh_count;
    size_t mesh_cap;
    long runners;           /* `runners N` statements, summed: added once the file is read */
    char *runners_file;     /* where the last one was (for messages) */
    int runners_line;
    RtLoadLimits lim;
    uint64_t procedural_tris; /* made by field and wavegrid so far (runners: `runners` above) */
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
    size_t var = strlen(RT_ASSIMP_MODELS_VAR);
    int n;
    if (t[0] == '$' && !strncmp(t + 1, RT_ASSIMP_MODELS_VAR, var) && t[1 + var] == '/')
        n = snprintf(out, PATH_MAX, "%s%s", rt_assimp_models_dir(), t + 1 + var);
    else
        n = t[0] == '/' ? snprintf(out, PATH_MAX, "%s", t) : snprintf(out, PATH_MAX, "%s/%s", L->dir, t);
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
        return rt_fail(c->err, RT_ERR_IO, "%s:%d: SCENE: expected %s after '%s': '%s' %s", L->file, L->no,
                       what, kw, path, rt_file_kind(st.st_mode));
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

/* light point pos X Y Z [color R G B] | light directional dir X Y Z [color R G B]
 * | light quad pos X Y Z size W H [normal X Y Z] [color R G B] (facing down by default)
 * | light sphere pos X Y Z radius R [color R G B] */
static RtStatus st_light(SceneCtx *c, SceneLine *L)
{
    const char *type = next_tok(L);
    RtLight l;
    memset(&l, 0, sizeof l);
    l.color = v3(1, 1, 1);
    l.n = v3(0, -1, 0);
    static const struct { const char *name; RtLightType type; const char *keys; } kTypes[] = {
        {"point", RT_LIGHT_POINT, "one of pos, color"},
        {"directional", RT_LIGHT_DIRECTIONAL, "one of dir, color"},
        {"quad", RT_LIGHT_QUAD, "one of pos, size, normal, color"},
        {"sphere", RT_LIGHT_SPHERE, "one of pos, radius, color"},
    };
    int kind = -1;
    for (int k = 0; k < 4; k++)
        if (type && !strcmp(type, kTypes[k].name)) kind = k;
    if (kind < 0) return expected(c, L, "'point', 'directional', 'quad' or 'sphere'", "light", type);
    l.type = kTypes[kind].type;
    int point = l.type != RT_LIGHT_DIRECTIONAL, have = 0, have_size = 0;
    RtStatus st = RT_OK;
    for (const char *t; st == RT_OK && (t = next_tok(L));) {
        if (!strcmp(t, point ? "pos" : "dir")) {
            st = read_vec3(c, L, t, SCENE_XYZ, &l.v, -INFINITY);
            have = 1;
        } else if (!strcmp(t, "color")) {
            st = read_vec3(c, L, t, SCENE_RGB, &l.color, 0.0f);
        } else if (l.type == RT_LIGHT_QUAD && !strcmp(t, "size")) {
            float wh[2];
            st = read_floats(c, L, t, "2 finite numbers W H > 0", wh, 2, 0.0f);
            if (st == RT_OK && !(wh[0] > 0.0f && wh[1] > 0.0f)) st = expected(c, L, "2 finite numbers W H > 0", t, NULL);
            l.w = wh[0], l.h = wh[1];
            have_size = 1;
        } else if (l.type == RT_LIGHT_QUAD && !strcmp(t, "normal")) {
            st = read_vec3(c, L, t, SCENE_XYZ, &l.n, -INFINITY);
            float len = v3_len(l.n);
            if (st == RT_OK && !(len > 0.0f && isfinite(len))) st = expected(c, L, "a non-zero normal X Y Z", t, NULL);
            if (st == RT_OK) l.n = v3_scale(l.n, 1.0f / len);
        } else if (l.type == RT_LIGHT_SPHERE && !strcmp(t, "radius")) {
            st = read_range(c, L, t, "a radius R > 0", &l.radius, 0.0f, INFINITY);
            if (st == RT_OK && !(l.radius > 0.0f)) st = expected(c, L, "a radius R > 0", t, NULL);
            have_size = 1;
        } else {
            st = expected(c, L, kTypes[kind].keys, type, t);
        }
    }
    if (st != RT_OK) return st;
    if (!have) return expected(c, L, point ? "'pos X Y Z'" : "'dir X Y Z'", type, NULL);
    if (rt_light_is_area(&l) && !have_size)
        return expected(c, L, l.type == RT_LIGHT_QUAD ? "'size W H'" : "'radius R'", type, NULL);
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

/* environment PATH [intensity X] [rotate DEG]: an equirectangular HDR map
 * (envmap.h) seen past the scene and lighting it */
static RtStatus st_environment(SceneCtx *c, SceneLine *L)
{
    char path[PATH_MAX];
    RtStatus st = read_path(c, L, "environment", "an image PATH (.hdr)", path);
    if (st == RT_OK) st = check_file(c, L, "environment", "an image PATH (.hdr)", path);
    float intensity = 1.0f, rotate = 0.0f;
    for (const char *t; st == RT_OK && (t = next_tok(L));) {
        if (!strcmp(t, "intensity")) st = read_range(c, L, t, "a number >= 0", &intensity, 0.0f, INFINITY);
        else if (!strcmp(t, "rotate")) st = read_range(c, L, t, "an angle in degrees", &rotate, -INFINITY, INFINITY);
        else st = expected(c, L, "one of intensity, rotate", "environment", t);
    }
    if (st != RT_OK) return st;
    RtError inner = {RT_OK, ""};
    if ((st = rt_envmap_load(c->s, path, intensity, rotate, &inner)) != RT_OK)
        return rt_fail(c->err, st, "%s:%d: SCENE: expected a readable environment map after 'environment': %s",
                       L->file, L->no, inner.msg);
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

/* Remembers a placement so `animate` can name it (the latest of a name wins). */
static RtStatus add_placed(SceneCtx *c, const SceneLine *L, const char *name, uint32_t first_vert,
                           const float m[12])
{
    if (!rt_grow_array((void **)&c->placed, &c->placed_cap, (size_t)c->placed_count + 1, sizeof *c->placed))
        return rt_fail(c->err, RT_ERR_OOM, "%s:%d: SCENE: out of memory", L->file, L->no);
    ScenePlaced *p = &c->placed[c->placed_count++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->first_vert = first_vert;
    p->vert_count = c->s->vert_count - first_vert;
    memcpy(p->m, m, sizeof p->m);
    return RT_OK;
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
    uint32_t v0 = c->s->vert_count;
    if (!strcmp(kw, "box")) st = rt_prim_box(c->s, o.m, o.mat, o.name, &inner);
    else if (!strcmp(kw, "sphere")) st = rt_prim_sphere(c->s, o.m, o.mat, o.segments, o.name, &inner);
    else st = rt_prim_quad(c->s, o.m, o.mat, o.name, &inner);
    if (st != RT_OK)
        return rt_fail(c->err, st, "%s:%d: SCENE: cannot place '%s': %s", L->file, L->no, o.name, inner.msg);
    return add_placed(c, L, o.name, v0, o.m);
}

/* The loaded mesh of path: parsed on the first line that names the file,
 * the same load for every later one. */
static RtStatus mesh_cached(SceneCtx *c, const SceneLine *L, const char *path, const RtScene **out)
{
    char *real = realpath(path, NULL);
    if (!real) return rt_fail(c->err, RT_ERR_IO, "%s:%d: SCENE: cannot resolve '%s': %s", L->file, L->no, path,
                              strerror(errno));
    for (uint32_t i = 0; i < c->mesh_count; i++)
        if (!strcmp(c->meshes[i].real, real)) {
            free(real);
            *out = &c->meshes[i].scene;
            return RT_OK;
        }
    if (c->mesh_count == c->mesh_cap) {
        size_t cap = c->mesh_cap ? 2 * c->mesh_cap : 8;
        SceneMesh *m = realloc(c->meshes, cap * sizeof *m);
        if (!m) {
            free(real);
            return rt_fail(c->err, RT_ERR_OOM, "%s:%d: SCENE: out of memory", L->file, L->no);
        }
        c->meshes = m;
        c->mesh_cap = cap;
    }
    SceneMesh *m = &c->meshes[c->mesh_count];
    m->real = real;
    rt_scene_init(&m->scene);
    RtError inner = {RT_OK, ""};
    RtStatus st = has_ext(path, ".obj")   ? rt_obj_load(path, &m->scene, &inner)
                  : has_ext(path, ".ply") ? rt_ply_load(path, &m->scene, &inner)
                                          : rt_assimp_load(path, NULL, &m->scene, &inner);
    if (st != RT_OK) {
        rt_scene_free(&m->scene);
        free(real);
        return rt_fail(c->err, st, "%s:%d: SCENE: expected a valid mesh file after 'mesh': %s", L->file, L->no,
                       inner.msg);
    }
    /* A placed model brings geometry, materials and motion: a file's own
     * camera and lights (FBX exports carry both) would come once per copy. */
    m->scene.light_count = 0;
    m->scene.has_camera = 0;
    c->mesh_count++;
    *out = &m->scene;
    return RT_OK;
}

/* mesh PATH [name NAME] [material NAME] [transforms] */
static RtStatus st_mesh(SceneCtx *c, SceneLine *L)
{
    char path[PATH_MAX];
    const char *what = "a .obj, .ply or assimp-format (.gltf, .fbx, ...) PATH";
    RtStatus st = read_path(c, L, "mesh", what, path);
    if (st != RT_OK) return st;
    if (!has_ext(path, ".obj") && !has_ext(path, ".ply") && !rt_assimp_claims(path))
        return expected(c, L, what, "mesh", L->tok[L->at - 1]);
    SceneObjOpts o;
    obj_opts_init(&o, "");
    if ((st = read_obj_opts(c, L, "mesh", &o)) != RT_OK) return st;
    if ((st = check_file(c, L, "mesh", what, path)) != RT_OK) return st;
    int named = o.name[0] != 0;

    /* Load on its own (or copy the load of an earlier line naming the same
     * file), place it, then append: the loader's object and material
     * indices start at 0 and rt_scene_append rebases them. */
    RtScene tmp;
    rt_scene_init(&tmp);
    RtError inner = {RT_OK, ""};
    const RtScene *cached = NULL;
    if ((st = mesh_cached(c, L, path, &cached)) != RT_OK) return st;
    st = rt_scene_append(&tmp, cached, NULL, -1, &inner);
    if (st != RT_OK) {
        rt_scene_free(&tmp);
        return rt_fail(c->err, st, "%s:%d: SCENE: %s", L->file, L->no, inner.msg);
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
     * scale) also swap the winding and keep normals outward. A model that
     * animates itself keeps its vertices in node or bind-pose space:
     * rt_scene_append puts its nodes under the placement instead, so each
     * copy has its own nodes and joints (a crowd of skinned copies is
     * skinned copy by copy). */
    int own_motion = rt_anim_moves_verts(&tmp.anim);
    if (!own_motion) rt_scene_transform(&tmp, o.m);
    uint32_t v0 = c->s->vert_count;
    st = rt_scene_append(c->s, &tmp, own_motion ? o.m : NULL, o.mat, &inner);
    rt_scene_free(&tmp);
    if (st != RT_OK) return rt_fail(c->err, st, "%s:%d: SCENE: %s", L->file, L->no, inner.msg);
    const char *base = strrchr(path, '/');
    st = add_placed(c, L, named ? o.name : (base ? base + 1 : path), v0, o.m);
    if (st == RT_OK) c->placed[c->placed_count - 1].own_motion = own_motion;
    return st;
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

/* ---- animation (docs/formats.md, "animate") ------------------------------------ */

#define SCENE_DEG "a finite number of degrees"
/* A morph stores every pose of its ping-pong over the time range
 * (RtAnimMorph is piecewise linear, key-major): RtLoadLimits.morph_poses
 * caps what a file may ask for rather than fail deep in an allocation. */

/* The placement `animate NAME` names: the latest one of that name. */
static RtStatus read_placed(SceneCtx *c, SceneLine *L, ScenePlaced **out)
{
    char name[64];
    RtStatus st = read_name(c, L, "animate", name);
    if (st != RT_OK) return st;
    for (uint32_t i = c->placed_count; i-- > 0;)
        if (!strcmp(c->placed[i].name, name)) {
            *out = &c->placed[i];
            return RT_OK;
        }
    char list[512];
    size_t n = 0;
    list[0] = 0;
    for (uint32_t i = 0; i < c->placed_count && n + 80 < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s'%s'", i ? ", " : "", c->placed[i].name);
    if (c->placed_count && n + 80 >= sizeof list) snprintf(list + n, sizeof list - n, ", ...");
    return rt_fail(c->err, RT_ERR_PARSE,
                   "%s:%d: SCENE: expected the name of an object placed earlier after 'animate', found '%.*s' "
                   "(placed so far: %s)",
                   L->file, L->no, SCENE_QUOTE_MAX, name, c->placed_count ? list : "none");
}

static RtStatus add_motion(SceneCtx *c, const SceneLine *L, ScenePlaced *p, SceneMotionKind kind, const float q[8])
{
    if (!rt_grow_array((void **)&p->motions, &p->motion_cap, (size_t)p->motion_count + 1, sizeof *p->motions))
        return rt_fail(c->err, RT_ERR_OOM, "%s:%d: SCENE: out of memory", L->file, L->no);
    SceneMotion *m = &p->motions[p->motion_count++];
    m->kind = kind;
    memcpy(m->p, q, sizeof m->p);
    return RT_OK;
}

/* A required option that was not given. */
static RtStatus missing(SceneCtx *c, const SceneLine *L, const char *what, const char *kind)
{
    return expected(c, L, what, kind, NULL);
}

/* spin [axis X Y Z] speed DEG_PER_S [phase DEG] [pivot X Y Z] */
static RtStatus anim_spin(SceneCtx *c, SceneLine *L, ScenePlaced *p)
{
    float q[8] = {0, 1, 0, 0, 0, p->m[3], p->m[7], p->m[11]};
    RtVec3 axis = v3(0, 1, 0), pivot;
    int have_speed = 0;
    RtStatus st = RT_OK;
    for (const char *t; st == RT_OK && (t = next_tok(L));) {
        if (!strcmp(t, "axis")) {
            if ((st = read_vec3(c, L, t, SCENE_XYZ, &axis, -INFINITY)) == RT_OK && v3_dot(axis, axis) == 0.0f)
                st = expected(c, L, "a non-zero axis X Y Z", t, L->tok[L->at - 1]);
        } else if (!strcmp(t, "speed")) {
            st = read_floats(c, L, t, "a finite number of degrees per second", &q[3], 1, -INFINITY);
            have_speed = 1;
        } else if (!strcmp(t, "phase")) {
            st = read_floats(c, L, t, SCENE_DEG, &q[4], 1, -INFINITY);
        } else if (!strcmp(t, "pivot")) {
            if ((st = read_vec3(c, L, t, SCENE_XYZ, &pivot, -INFINITY)) == RT_OK)
                q[5] = pivot.x, q[6] = pivot.y, q[7] = pivot.z;
        } else {
            st = expected(c, L, "one of axis, speed, phase, pivot", "spin", t);
        }
    }
    if (st != RT_OK) return st;
    if (!have_speed) return missing(c, L, "'speed DEG_PER_S'", "spin");
    axis = v3_norm(axis);
    q[0] = axis.x, q[1] = axis.y, q[2] = axis.z;
    return add_motion(c, L, p, MOTION_SPIN, q);
}

/* orbit [center X Y Z] radius R speed DEG_PER_S [phase DEG] */
static RtStatus anim_orbit(SceneCtx *c, SceneLine *L, ScenePlaced *p)
{
    float q[8] = {0};
    RtVec3 centre;
    int have_radius = 0, have_speed = 0;
    RtStatus st = RT_OK;
    for (const char *t; st == RT_OK && (t = next_tok(L));) {
        if (!strcmp(t, "center")) {
            if ((st = read_vec3(c, L, t, SCENE_XYZ, &centre, -INFINITY)) == RT_OK)
                q[0] = centre.x, q[1] = centre.y, q[2] = centre.z;
        } else if (!strcmp(t, "radius")) {
            st = read_floats(c, L, t, "a finite radius >= 0", &q[3], 1, 0.0f);
            have_radius = 1;
        } else if (!strcmp(t, "speed")) {
            st = read_floats(c, L, t, "a finite number of degrees per second", &q[4], 1, -INFINITY);
            have_speed = 1;
        } else if (!strcmp(t, "phase")) {
            st = read_floats(c, L, t, SCENE_DEG, &q[5], 1, -INFINITY);
        } else {
            st = expected(c, L, "one of center, radius, speed, phase", "orbit", t);
        }
    }
    if (st != RT_OK) return st;
    if (!have_radius) return missing(c, L, "'radius R'", "orbit");
    if (!have_speed) return missing(c, L, "'speed DEG_PER_S'", "orbit");
    return add_motion(c, L, p, MOTION_ORBIT, q);
}

/* bounce height H period S [phase DEG] */
static RtStatus anim_bounce(SceneCtx *c, SceneLine *L, ScenePlaced *p)
{
    float q[8] = {0}, phase = 0.0f;
    int have_height = 0, have_period = 0;
    RtStatus st = RT_OK;
    for (const char *t; st == RT_OK && (t = next_tok(L));) {
        if (!strcmp(t, "height")) {
            st = read_floats(c, L, t, "a finite height", &q[0], 1, -INFINITY);
            have_height = 1;
        } else if (!strcmp(t, "period")) {
            st = read_floats(c, L, t, "a period in seconds > 0", &q[1], 1, 0.0f);
            if (st == RT_OK && !(q[1] > 0.0f)) st = expected(c, L, "a period in seconds > 0", t, L->tok[L->at - 1]);
            have_period = 1;
        } else if (!strcmp(t, "phase")) {
            st = read_floats(c, L, t, SCENE_DEG, &phase, 1, -INFINITY);
        } else {
            st = expected(c, L, "one of height, period, phase", "bounce", t);
        }
    }
    if (st != RT_OK) return st;
    if (!have_height) return missing(c, L, "'height H'", "bounce");
    if (!have_period) return missing(c, L, "'period S'", "bounce");
    /* |sin| repeats every pi: 360 degrees of phase are one period */
    q[2] = (float)(fmod((double)phase, 360.0) / 360.0 * 3.14159265358979323846);
    return add_motion(c, L, p, MOTION_BOUNCE, q);
}

static RtStatus add_key(SceneCtx *c, const SceneLine *L, ScenePlaced *p, int ch, const RtKbKey *k)
{
    if (!rt_grow_array((void **)&p->keys[ch], &p->key_cap[ch], (size_t)p->key_count[ch] + 1, sizeof *p->keys[ch]))
        return rt_fail(c->err, RT_ERR_OOM, "%s:%d: SCENE: out of memory", L->file, L->no);
    p->keys[ch][p->key_count[ch]++] = *k;
    return RT_OK;
}

/* key T [translate X Y Z] [rotate AX AY AZ DEG] [scale S | scale X Y Z] [tcb T C B] */
static RtStatus anim_key(SceneCtx *c, SceneLine *L, ScenePlaced *p)
{
    float t;
    RtStatus st = read_floats(c, L, "key", "a key time T in seconds", &t, 1, -INFINITY);
    if (st != RT_OK) return st;
    if (p->has_keys && !(t > p->last_key_t)) {
        char what[96];
        snprintf(what, sizeof what, "a key time later than the previous key's %g", (double)p->last_key_t);
        return expected(c, L, what, "key", L->tok[L->at - 1]);
    }
    RtKbKey k[KEY_CHANNELS];
    int have[KEY_CHANNELS] = {0, 0, 0};
    float tcb[3] = {0, 0, 0};
    memset(k, 0, sizeof k);
    for (const char *w; st == RT_OK && (w = next_tok(L));) {
        if (!strcmp(w, "translate")) {
            st = read_floats(c, L, w, SCENE_XYZ, k[KEY_TRANSL].v, 3, -INFINITY);
            have[KEY_TRANSL] = 1;
        } else if (!strcmp(w, "rotate")) {
            st = read_floats(c, L, w, "4 finite numbers AX AY AZ DEG", k[KEY_ROT].v, 4, -INFINITY);
            RtVec3 axis = v3(k[KEY_ROT].v[0], k[KEY_ROT].v[1], k[KEY_ROT].v[2]);
            if (st == RT_OK && !(v3_dot(axis, axis) > 0.0f))
                st = expected(c, L, "a non-zero axis AX AY AZ", w, L->tok[L->at - 4]);
            axis = v3_norm(axis); /* the spline uses axes as given (aff.md 5.4) */
            k[KEY_ROT].v[0] = axis.x, k[KEY_ROT].v[1] = axis.y, k[KEY_ROT].v[2] = axis.z;
            have[KEY_ROT] = 1;
        } else if (!strcmp(w, "scale")) {
            float *f = k[KEY_SCALE].v;
            st = read_floats(c, L, w, "a finite number S or X Y Z", f, 1, -INFINITY);
            f[1] = f[2] = f[0];
            const char *nx = peek_tok(L);
            float probe;
            if (st == RT_OK && nx && parse_float(nx, &probe)) st = read_floats(c, L, w, SCENE_XYZ, &f[1], 2, -INFINITY);
            if (st == RT_OK && (f[0] == 0.0f || f[1] == 0.0f || f[2] == 0.0f))
                st = expected(c, L, "non-zero scale factors", w, L->tok[L->at - 1]);
            have[KEY_SCALE] = 1;
        } else if (!strcmp(w, "tcb")) {
            st = read_floats(c, L, w, "3 finite numbers TENSION CONTINUITY BIAS", tcb, 3, -INFINITY);
        } else {
            st = expected(c, L, "one of translate, rotate, scale, tcb", "key", w);
        }
    }
    if (st != RT_OK) return st;
    if (!have[KEY_TRANSL] && !have[KEY_ROT] && !have[KEY_SCALE])
        return missing(c, L, "at least one of 'translate X Y Z', 'rotate AX AY AZ DEG', 'scale S'", "key");
    if (!p->has_keys) { /* the track takes its place among the motions at its first key */
        float q[8] = {0};
        if ((st = add_motion(c, L, p, MOTION_KEYS, q)) != RT_OK) return st;
    }
    for (int ch = 0; ch < KEY_CHANNELS && st == RT_OK; ch++) {
        if (!have[ch]) continue;
        k[ch].t = t;
        k[ch].tension = tcb[0], k[ch].continuity = tcb[1], k[ch].bias = tcb[2];
        st = add_key(c, L, p, ch, &k[ch]);
    }
    p->has_keys = 1;
    p->last_key_t = t;
    return st;
}

/* Area-weighted smooth normals for the vertices of [first, first+count)
 * that have none, from the triangles [tri0, tri0+tris) (what
 * rt_scene_finish does for the whole scene). */
static int smooth_normals(RtScene *s, uint32_t first, uint32_t count, uint32_t tri0, uint32_t tris)
{
    int need = 0;
    for (uint32_t i = first; i < first + count && !need; i++) need = v3_dot(s->verts[i].n, s->verts[i].n) == 0.0f;
    if (!need) return 1;
    RtVec3 *acc = calloc(count ? count : 1, sizeof *acc);
    if (!acc) return 0;
    for (uint32_t i = tri0; i < tri0 + tris; i++) {
        const RtTriangle *t = &s->tris[i];
        RtVec3 a = s->verts[t->v[0]].p, b = s->verts[t->v[1]].p, d = s->verts[t->v[2]].p;
        RtVec3 n = v3_cross(v3_sub(b, a), v3_sub(d, a));
        if (!isfinite(n.x + n.y + n.z)) continue;
        for (int k = 0; k < 3; k++)
            if (t->v[k] >= first && t->v[k] - first < count) acc[t->v[k] - first] = v3_add(acc[t->v[k] - first], n);
    }
    for (uint32_t i = 0; i < count; i++)
        if (v3_dot(s->verts[first + i].n, s->verts[first + i].n) == 0.0f) s->verts[first + i].n = v3_norm(acc[i]);
    free(acc);
    return 1;
}

/* The triangles of the scene that use vertices [first, first+count): a
 * placement's triangles are contiguous and come with its vertices. */
static void placed_tris(const RtScene *s, uint32_t first, uint32_t count, uint32_t *tri0, uint32_t *tris)
{
    uint32_t lo = UINT32_MAX, hi = 0;
    for (uint32_t i = 0; i < s->tri_count; i++)
        if (s->tris[i].v[0] >= first && s->tris[i].v[0] - first < count) {
            if (lo == UINT32_MAX) lo = i;
            hi = i + 1;
        }
    *tri0 = lo == UINT32_MAX ? 0 : lo;
    *tris = lo == UINT32_MAX ? 0 : hi - lo;
}

/* morph PATH [period S] */
static RtStatus anim_morph(SceneCtx *c, SceneLine *L, ScenePlaced *p)
{
    char path[PATH_MAX];
    const char *what = "a .obj or .ply PATH";
    RtStatus st = read_path(c, L, "morph", what, path);
    if (st != RT_OK) return st;
    int is_obj = has_ext(path, ".obj");
    if (!is_obj && !has_ext(path, ".ply")) return expected(c, L, what, "morph", L->tok[L->at - 1]);
    float period = 2.0f;
    for (const char *t; st == RT_OK && (t = next_tok(L));) {
        if (!strcmp(t, "period")) {
            st = read_floats(c, L, t, "a period in seconds > 0", &period, 1, 0.0f);
            if (st == RT_OK && !(period > 0.0f)) st = expected(c, L, "a period in seconds > 0", t, L->tok[L->at - 1]);
        } else {
            st = expected(c, L, "'period S'", "morph PATH", t);
        }
    }
    if (st != RT_OK) return st;
    if (p->morph_pos)
        return rt_fail(c->err, RT_ERR_PARSE, "%s:%d: SCENE: expected one morph per object after 'animate', "
                       "but '%s' already has one", L->file, L->no, p->name);
    if ((st = check_file(c, L, "morph", what, path)) != RT_OK) return st;
    RtScene tmp;
    rt_scene_init(&tmp);
    RtError inner = {RT_OK, ""};
    st = is_obj ? rt_obj_load(path, &tmp, &inner) : rt_ply_load(path, &tmp, &inner);
    if (st != RT_OK) {
        rt_scene_free(&tmp);
        return rt_fail(c->err, st, "%s:%d: SCENE: expected a valid .obj or .ply after 'morph': %s", L->file, L->no,
                       inner.msg);
    }
    if (tmp.vert_count != p->vert_count) {
        rt_fail(c->err, RT_ERR_PARSE,
                "%s:%d: SCENE: expected a mesh with the %u vertices of '%s' after 'morph', found %u in '%s'",
                L->file, L->no, p->vert_count, p->name, tmp.vert_count, path);
        rt_scene_free(&tmp);
        return RT_ERR_PARSE;
    }
    /* The target is placed like the object, so both are in the same space. */
    rt_scene_transform(&tmp, p->m);
    p->morph_pos = malloc((p->vert_count ? p->vert_count : 1) * sizeof *p->morph_pos);
    p->morph_nrm = malloc((p->vert_count ? p->vert_count : 1) * sizeof *p->morph_nrm);
    if (!p->morph_pos || !p->morph_nrm || !smooth_normals(&tmp, 0, tmp.vert_count, 0, tmp.tri_count)) {
        rt_scene_free(&tmp);
        return rt_fail(c->err, RT_ERR_OOM, "%s:%d: SCENE: out of memory", L->file, L->no);
    }
    for (uint32_t i = 0; i < p->vert_count; i++) {
        p->morph_pos[i] = tmp.verts[i].p;
        p->morph_nrm[i] = tmp.verts[i].n;
    }
    p->morph_period = period;
    rt_scene_free(&tmp);
    return RT_OK;
}

/* wave amplitude A wavelength L [speed V] [dir X Z] */
static RtStatus anim_wave(SceneCtx *c, SceneLine *L, ScenePlaced *p)
{
    RtAnimDeform d = {0, 0, RT_DEFORM_WAVE, 0.0f, 0.0f, 0.0f, 1.0f, 0.0f};
    float speed = 1.0f, dir[2];
    int have_amp = 0, have_len = 0;
    RtStatus st = RT_OK;
    for (const char *t; st == RT_OK && (t = next_tok(L));) {
        if (!strcmp(t, "amplitude")) {
            st = read_floats(c, L, t, "a finite amplitude", &d.amplitude, 1, -INFINITY);
            have_amp = 1;
        } else if (!strcmp(t, "wavelength")) {
            st = read_floats(c, L, t, "a wavelength > 0", &d.wavelength, 1, 0.0f);
            if (st == RT_OK && !(d.wavelength > 0.0f)) st = expected(c, L, "a wavelength > 0", t, L->tok[L->at - 1]);
            have_len = 1;
        } else if (!strcmp(t, "speed")) {
            st = read_floats(c, L, t, "a finite speed in units per second", &speed, 1, -INFINITY);
        } else if (!strcmp(t, "dir")) {
            st = read_floats(c, L, t, "2 finite numbers X Z", dir, 2, -INFINITY);
            float len = sqrtf(dir[0] * dir[0] + dir[1] * dir[1]);
            if (st == RT_OK && !(len > 0.0f && isfinite(len)))
                st = expected(c, L, "a non-zero direction X Z", t, L->tok[L->at - 1]);
            if (st == RT_OK) d.dir_x = dir[0] / len, d.dir_z = dir[1] / len;
        } else {
            st = expected(c, L, "one of amplitude, wavelength, speed, dir", "wave", t);
        }
    }
    if (st != RT_OK) return st;
    if (!have_amp) return missing(c, L, "'amplitude A'", "wave");
    if (!have_len) return missing(c, L, "'wavelength L'", "wave");
    d.speed = speed / d.wavelength; /* crests per second passing a point (anim.h) */
    if (!isfinite(d.speed)) return expected(c, L, "a speed / wavelength that stays finite", "speed", NULL);
    d.first_vert = p->first_vert;
    d.vert_count = p->vert_count;
    if (!rt_grow_array((void **)&p->waves, &p->wave_cap, (size_t)p->wave_count + 1, sizeof *p->waves))
        return rt_fail(c->err, RT_ERR_OOM, "%s:%d: SCENE: out of memory", L->file, L->no);
    p->waves[p->wave_count++] = d;
    return RT_OK;
}

/* animate NAME spin|orbit|bounce|key|morph|wave ... */
static RtStatus st_animate(SceneCtx *c, SceneLine *L)
{
    ScenePlaced *p;
    RtStatus st = read_placed(c, L, &p);
    if (st != RT_OK) return st;
    /* its vertices are in its own nodes' or joints' space (a skinned one
     * ignores any node of ours): a .scene motion cannot add to that */
    if (p->own_motion)
        return rt_fail(c->err, RT_ERR_PARSE,
                       "%s:%d: SCENE: '%s' animates itself (its file's clip); expected an object without its own "
                       "motion after 'animate'",
                       L->file, L->no, p->name);
    static const struct {
        const char *kind;
        RtStatus (*read)(SceneCtx *, SceneLine *, ScenePlaced *);
    } KINDS[] = {{"spin", anim_spin}, {"orbit", anim_orbit}, {"bounce", anim_bounce},
                 {"key", anim_key},   {"morph", anim_morph}, {"wave", anim_wave}};
    const char *kind = next_tok(L);
    for (size_t i = 0; kind && i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (!strcmp(kind, KINDS[i].kind)) return KINDS[i].read(c, L, p);
    return expected(c, L, "one of spin, orbit, bounce, key, morph, wave", L->tok[1], kind);
}

/* time START END */
static RtStatus st_time(SceneCtx *c, SceneLine *L)
{
    float t[2];
    RtStatus st = read_floats(c, L, "time", "2 finite numbers START END (seconds)", t, 2, -INFINITY);
    if (st != RT_OK) return st;
    if (!(t[1] > t[0])) return expected(c, L, "an END later than START", "time", L->tok[L->at - 1]);
    if (peek_tok(L)) return expected(c, L, "the end of the line", "time START END", peek_tok(L));
    c->s->anim.t_start = t[0];
    c->s->anim.t_end = t[1];
    return RT_OK;
}

/* What one file may ask of the procedural statements: about 10M triangles
 * each, the benchmark's large scenes, and a 25M grid for the scaling sweep's
 * 20M point (rt_scene_add_runners and friends take more through the API). A
 * file is text anyone can hand over (or a fuzzer write): "runners 4096"
 * would want 320M triangles. */
#define SCENE_RUNNERS_MAX 128      /* x 78,224 = 10.0M triangles */
#define SCENE_FIELD_MAX 40000      /* ~270 triangles an object: 10.8M */
#define SCENE_WAVE_MAX (24u << 20) /* 25.2M triangles */

/* Refuses a procedural statement that would take the triangles of this
 * load's procedural statements past RtLoadLimits.procedural_tris. */
static RtStatus procedural_fits(SceneCtx *c, SceneLine *L, const char *kw, uint64_t tris)
{
    uint64_t made = c->procedural_tris + (uint64_t)c->runners * rt_runner_tri_count();
    if (made + tris <= c->lim.procedural_tris) return RT_OK;
    return rt_fail(c->err, RT_ERR_OOM,
                   "%s:%d: SCENE: '%s %s' adds %llu triangles to the %llu the procedural statements of this load "
                   "made: over the limit of %llu",
                   L->file, L->no, kw, L->tok[1], (unsigned long long)tris, (unsigned long long)made,
                   (unsigned long long)c->lim.procedural_tris);
}

/* runners N: added after the whole file is read, on its final bounds */
static RtStatus st_runners(SceneCtx *c, SceneLine *L)
{
    int n;
    RtStatus st = read_int(c, L, "runners", "an integer count 0..128", &n, 0, SCENE_RUNNERS_MAX);
    if (st == RT_OK && peek_tok(L)) st = expected(c, L, "the end of the line", "runners N", peek_tok(L));
    if (st != RT_OK) return st;
    if (c->runners + n > SCENE_RUNNERS_MAX)
        return expected(c, L, "at most 128 runners in all", "runners", L->tok[1]);
    if ((st = procedural_fits(c, L, "runners", (uint64_t)n * rt_runner_tri_count())) != RT_OK) return st;
    char *file = strdup(L->file);
    if (!file) return rt_fail(c->err, RT_ERR_OOM, "%s:%d: SCENE: out of memory", L->file, L->no);
    free(c->runners_file);
    c->runners_file = file;
    c->runners_line = L->no;
    c->runners += n;
    return RT_OK;
}

/* field N | wavegrid TRIS: the procedural scenes of runners.h, here */
static RtStatus st_procedural(SceneCtx *c, SceneLine *L)
{
    const char *kw = L->tok[0];
    int field = !strcmp(kw, "field");
    long n;
    const char *t = next_tok(L);
    char *end;
    n = t ? strtol(t, &end, 10) : -1;
    long hi = field ? SCENE_FIELD_MAX : (long)SCENE_WAVE_MAX;
    if (!t || end == t || *end || n < (field ? 0 : 2) || n > hi) {
        char what[80];
        snprintf(what, sizeof what, "an integer %s %d..%ld", field ? "count" : "triangle count", field ? 0 : 2, hi);
        return expected(c, L, what, kw, t);
    }
    if (peek_tok(L)) return expected(c, L, "the end of the line", field ? "field N" : "wavegrid TRIS", peek_tok(L));
    uint64_t tris = field ? rt_field_tri_count((int)n) : rt_wave_tri_count((uint32_t)n);
    RtStatus fits = procedural_fits(c, L, kw, tris);
    if (fits != RT_OK) return fits;
    RtError inner = {RT_OK, ""};
    RtStatus st = field ? rt_scene_make_field(c->s, (int)n, &inner) : rt_scene_make_wave(c->s, (uint32_t)n, &inner);
    if (st != RT_OK) return rt_fail(c->err, st, "%s:%d: SCENE: cannot make '%s %ld': %s", L->file, L->no, kw, n, inner.msg);
    c->procedural_tris += tris;
    return RT_OK;
}

/* ---- turning the animate statements into RtAnim data ------------------------------ */

/* The padded channel of one kind of key: the first and last keys repeated,
 * so the Kochanek-Bartels spline (which runs from its second key to its
 * next-to-last, aff.md 5.1) passes through every key written and holds the
 * end poses outside them; a lone key is repeated 4 times (a constant).
 * `add` is added to each value (the placement's origin, for translations). */
static int channel_padded(RtKbChannel *out, const RtKbKey *keys, uint32_t n, RtVec3 add)
{
    out->keys = NULL;
    out->count = 0;
    if (n == 0) return 1;
    uint32_t total = n == 1 ? 4 : n + 2;
    out->keys = malloc(total * sizeof *out->keys);
    if (!out->keys) return 0;
    for (uint32_t i = 0; i < total; i++) {
        uint32_t src = n == 1 ? 0 : (i == 0 ? 0 : (i >= n + 1 ? n - 1 : i - 1));
        out->keys[i] = keys[src];
        out->keys[i].v[0] += add.x, out->keys[i].v[1] += add.y, out->keys[i].v[2] += add.z;
    }
    out->count = total;
    return 1;
}

/* The TRACK of a placement's keys: T(o + translate) R S T(-o), so rotation
 * and scale turn the object about its own origin o as placed. */
static int64_t keys_track(RtAnim *a, const ScenePlaced *p)
{
    RtAnimTrack tr;
    memset(&tr, 0, sizeof tr);
    snprintf(tr.name, sizeof tr.name, "%s", p->name);
    RtVec3 o = v3(p->m[3], p->m[7], p->m[11]);
    RtKbKey origin;
    memset(&origin, 0, sizeof origin);
    int ok = p->key_count[KEY_TRANSL] ? channel_padded(&tr.transl, p->keys[KEY_TRANSL], p->key_count[KEY_TRANSL], o)
                                      : channel_padded(&tr.transl, &origin, 1, o);
    ok = ok && channel_padded(&tr.rot, p->keys[KEY_ROT], p->key_count[KEY_ROT], v3(0, 0, 0));
    ok = ok && channel_padded(&tr.scale, p->keys[KEY_SCALE], p->key_count[KEY_SCALE], v3(0, 0, 0));
    int64_t k = ok ? rt_anim_add_track(a, &tr) : -1;
    if (k < 0) {
        free(tr.transl.keys);
        free(tr.rot.keys);
        free(tr.scale.keys);
    }
    return k;
}

/* Ping-pong between the object's own shape and the target: keys every half
 * period over the animation range. */
static RtStatus morph_of(SceneCtx *c, ScenePlaced *p, float t0, float t1)
{
    RtScene *s = c->s;
    uint32_t n = p->vert_count, tri0, tris;
    double half = 0.5 * p->morph_period;
    double keys = ceil((double)(t1 - t0) / half) + 1.0;
    if (keys * (n ? n : 1) > (double)c->lim.morph_poses)
        return rt_fail(c->err, RT_ERR_OOM,
                       "%s: SCENE: morph of '%s': %.0f poses of %u vertices is more than %llu (use a longer period "
                       "or a shorter 'time')", c->top, p->name, keys, n, (unsigned long long)c->lim.morph_poses);
    placed_tris(s, p->first_vert, n, &tri0, &tris);
    RtAnimMorph mo = {p->first_vert, n, (uint32_t)keys, NULL, NULL, NULL};
    mo.times = malloc(mo.key_count * sizeof *mo.times);
    mo.pos = malloc((size_t)mo.key_count * (n ? n : 1) * sizeof *mo.pos);
    mo.nrm = malloc((size_t)mo.key_count * (n ? n : 1) * sizeof *mo.nrm);
    if (!mo.times || !mo.pos || !mo.nrm || !smooth_normals(s, p->first_vert, n, tri0, tris)) goto oom;
    for (uint32_t k = 0; k < mo.key_count; k++) {
        mo.times[k] = (float)(t0 + half * k);
        RtVec3 *pos = &mo.pos[(size_t)k * n], *nrm = &mo.nrm[(size_t)k * n];
        for (uint32_t i = 0; i < n; i++) {
            pos[i] = k % 2 ? p->morph_pos[i] : s->verts[p->first_vert + i].p;
            nrm[i] = k % 2 ? p->morph_nrm[i] : s->verts[p->first_vert + i].n;
        }
    }
    if (rt_anim_add_morph(&s->anim, &mo) >= 0) return RT_OK;
oom:
    free(mo.times);
    free(mo.pos);
    free(mo.nrm);
    return rt_fail(c->err, RT_ERR_OOM, "%s: SCENE: out of memory (morph of '%s')", c->top, p->name);
}

/* Every animated placement: morph, waves, then its motions as a chain of
 * nodes. Motions apply in the order written, so the last one is the root
 * and the first one holds the vertices. */
static RtStatus finish_anim(SceneCtx *c)
{
    RtScene *s = c->s;
    RtAnim *a = &s->anim;
    float t0 = 0.0f, t1 = RT_ANIM_DEFAULT_PERIOD;
    if (a->t_end > a->t_start) t0 = a->t_start, t1 = a->t_end;
    for (uint32_t i = 0; i < c->placed_count; i++) {
        ScenePlaced *p = &c->placed[i];
        RtStatus st;
        if (p->morph_pos && (st = morph_of(c, p, t0, t1)) != RT_OK) return st;
        for (uint32_t w = 0; w < p->wave_count; w++)
            if (rt_anim_add_deform(a, &p->waves[w]) < 0) goto oom;
        int32_t parent = -1;
        for (uint32_t k = p->motion_count; k-- > 0;) {
            const SceneMotion *m = &p->motions[k];
            RtAnimNode node;
            memset(&node, 0, sizeof node);
            node.parent = parent;
            node.track = -1;
            rt_mat34_identity(node.m);
            memcpy(node.p, m->p, sizeof node.p);
            switch (m->kind) {
            case MOTION_SPIN: node.kind = RT_NODE_SPIN; break;
            case MOTION_ORBIT: node.kind = RT_NODE_ORBIT; break;
            case MOTION_BOUNCE: node.kind = RT_NODE_BOUNCE; break;
            case MOTION_KEYS: {
                int64_t tr = keys_track(a, p);
                if (tr < 0) goto oom;
                node.kind = RT_NODE_TRACK;
                node.track = (int32_t)tr;
                memset(node.p, 0, sizeof node.p);
                rt_mat34_translate(node.m, v3(-p->m[3], -p->m[7], -p->m[11]));
                break;
            }
            }
            int64_t idx = rt_anim_add_node(a, &node);
            if (idx < 0) goto oom;
            parent = (int32_t)idx;
        }
        if (parent >= 0 &&
            (st = rt_anim_set_vert_node(a, s->vert_count, p->first_vert, p->vert_count, (uint32_t)parent, c->err)) != RT_OK)
            return st;
    }
    if (c->runners > 0) {
        RtError inner = {RT_OK, ""};
        RtStatus st = rt_scene_add_runners(s, (int)c->runners, &inner);
        if (st != RT_OK)
            return rt_fail(c->err, st, "%s:%d: SCENE: cannot add %ld runner(s): %s", c->runners_file,
                           c->runners_line, c->runners, inner.msg);
    }
    return RT_OK;
oom:
    return rt_fail(c->err, RT_ERR_OOM, "%s: SCENE: out of memory (animations)", c->top);
}

static const struct {
    const char *keyword;
    SceneStatement run;
} SCENE_STATEMENTS[] = {
    {"camera", st_camera}, {"light", st_light}, {"material", st_material}, {"mesh", st_mesh},
    {"box", st_primitive}, {"sphere", st_primitive}, {"quad", st_primitive}, {"include", st_include},
    {"animate", st_animate}, {"time", st_time}, {"runners", st_runners}, {"field", st_procedural},
    {"wavegrid", st_procedural}, {"environment", st_environment},
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

RtStatus rt_scenefile_load(const char *path, const RtLoadLimits *lim, RtScene *s, RtError *err)
{
    SceneCtx c;
    memset(&c, 0, sizeof c);
    c.lim = lim ? *lim : rt_load_limits_default();
    c.s = s;
    c.err = err;
    c.top = path;
    RtStatus st = parse_file(&c, path);
    if (st == RT_OK) st = finish_anim(&c);
    for (uint32_t i = 0; i < c.name_count; i++) free(c.names[i].file);
    free(c.names);
    for (uint32_t i = 0; i < c.placed_count; i++) {
        ScenePlaced *p = &c.placed[i];
        free(p->motions);
        for (int k = 0; k < KEY_CHANNELS; k++) free(p->keys[k]);
        free(p->morph_pos);
        free(p->morph_nrm);
        free(p->waves);
    }
    free(c.placed);
    for (uint32_t i = 0; i < c.mesh_count; i++) {
        rt_scene_free(&c.meshes[i].scene);
        free(c.meshes[i].real);
    }
    free(c.meshes);
    free(c.runners_file);
    return st;
}
