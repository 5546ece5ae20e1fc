/* load_assimp.c — every other format through assimp (stage 1, load): glTF
 * 2.0, FBX, Collada, 3DS, MD2, Blender, DirectX .x, STL, LightWave and the
 * rest of kAssimpExts. OBJ/MTL, PLY, .scene and AFF stay with the project's
 * own loaders (fast, fuzzed, precise line numbers).
 *
 * assimp reads the file into its aiScene; this module maps that onto the
 * scene model: the node hierarchy is flattened (static meshes baked into
 * world space), materials become MTL-style RtMaterials (docs/formats.md has
 * the mapping), textures come from files beside the model or from the file
 * itself (embedded, decoded with stb_image), the first camera and the
 * punctual lights become rtviewer's. Motion goes onto the existing model
 * of anim.h, which the GPU's animate stage already evaluates:
 *   - node TRS channels -> RT_NODE_TRACK nodes with LINEAR channels
 *     (anim_keys.h), rotations by slerp; of a .gltf / .glb, the clip's
 *     channels in the file's own STEP / LINEAR / CUBICSPLINE keys, read by
 *     gltf_anim.c (assimp 5.2 drops the sampler's interpolation);
 *   - morph targets with animated weights -> RtAnimMorph poses, one per
 *     weight key (a pose is linear in the weights, so this is exact);
 *   - MD2 vertex animation -> RtAnimMorph poses, one import per frame;
 *   - bones (skinning) -> RtAnimJoints (the bone's node, mOffsetMatrix as
 *     the inverse bind matrix) and per-vertex RtAnimSkinVert weights.
 *
 * Built without assimp (RT_HAVE_ASSIMP=0, no libassimp-dev), the same
 * extensions are refused with a message that says so. */
#include "scene/gltf_anim.h"
#include "scene/load.h"
#include "scene/scene.h"
#include "scene/texture.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* assimp 5.2's aiGetExtensionList less the project's own .obj, .ply (and
 * the generic .xml): one table, so a build without assimp refuses the very
 * files a build with it reads. */
static const char *const kAssimpExts[] = {
    ".gltf", ".glb",  ".fbx", ".dae",  ".zae",  ".3ds", ".md2",     ".md3",  ".md5mesh", ".mdl",  ".mdc",
    ".blend", ".x",   ".stl", ".lwo",  ".lws",  ".lxo", ".ac",      ".ac3d", ".acc",     ".ase",  ".ask",
    ".b3d",  ".bvh",  ".cob", ".csm",  ".dxf",  ".enff", ".hmp",    ".ifc",  ".ifczip",  ".iqm",  ".irr",
    ".irrmesh", ".mesh", ".ms3d", ".ndo", ".nff", ".off", ".ogex",  ".pk3",  ".pmx",     ".prj",  ".q3o",
    ".q3s",  ".raw",  ".sib", ".smd",  ".ter",  ".uc",  ".vta",     ".x3d",  ".x3db",    ".xgl",  ".zgl",
    ".3d",   ".3mf",  ".amf", ".assbin", ".bsp", ".mot", ".md5anim", ".md5camera", ".step", ".stp", ".scn",
};

int rt_assimp_claims(const char *path)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash)) return 0;
    for (size_t i = 0; i < sizeof kAssimpExts / sizeof kAssimpExts[0]; i++)
        if (!strcasecmp(dot, kAssimpExts[i])) return 1;
    return 0;
}

const char *rt_assimp_models_dir(void)
{
    const char *dir = getenv(RT_ASSIMP_MODELS_VAR);
    return dir && dir[0] ? dir : RT_ASSIMP_MODELS_DEFAULT;
}

#if !RT_HAVE_ASSIMP

RtStatus rt_assimp_load(const char *path, const char *clip, RtScene *s, RtError *err)
{
    (void)clip, (void)s;
    return rt_fail(err, RT_ERR_UNSUPPORTED,
                   "%s: ASSIMP: this rtviewer was built without assimp (libassimp-dev): install it "
                   "(make deps) and rebuild to read this format",
                   path);
}

#else

#include <assimp/GltfMaterial.h>
#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>
#include <pthread.h>

#include "core/mat34.h"

/* Post-processing: triangles only (points and lines dropped: the tracer
 * has no use for them), shared corners welded (morph targets included),
 * normals generated where the file has none, the structure validated (a
 * broken index becomes assimp's error, not our crash), at most 4 bone
 * weights. No FlipUVs: assimp already hands out v = 0 at the bottom of the
 * image for every format (its glTF importer flips glTF's top-left origin),
 * which is the OBJ convention the renderer samples with. No
 * PreTransformVertices: the node hierarchy is what animation moves. */
#define AS_FLAGS                                                                                           \
    (aiProcess_Triangulate | aiProcess_JoinIdenticalVertices | aiProcess_GenSmoothNormals |                \
     aiProcess_SortByPType | aiProcess_ValidateDataStructure | aiProcess_LimitBoneWeights |                 \
     aiProcess_FindInvalidData)
/* Weights a vertex keeps (LimitBoneWeights): what GPU skinners take. */
#define AS_MAX_BONE_WEIGHTS 4
/* A node hierarchy deeper or larger than this is refused: a cycle that
 * slipped past assimp's validation must not loop forever. */
#define AS_MAX_NODES (1u << 20)
/* Ticks per second when the file gives none (assimp leaves 0): assimp's
 * own viewer and most engines assume 25. */
#define AS_DEFAULT_TICKS_PER_SECOND 25.0
/* MD2 stores no frame times: Quake II, the format's origin, steps its
 * models at the server's 10 Hz. */
#define AS_MD2_FPS 10.0f
/* Frames of an MD2 animation read (the format's own limit is 512). */
#define AS_MD2_MAX_FRAMES 512u
/* Phong exponents from roughness are clamped to this range: a mirror-
 * smooth roughness 0 would be an infinite exponent. */
#define AS_NS_MIN 1.0f
#define AS_NS_MAX 2048.0f
/* glTF's dielectric specular reflectance at normal incidence (F0 = 0.04). */
#define AS_DIELECTRIC_F0 0.04f

/* assimp's logger and its last-error string are process-wide: imports are
 * serialised so that one load's messages and error are its own. */
static pthread_mutex_t g_assimp_lock = PTHREAD_MUTEX_INITIALIZER;

/* A skinned mesh added in its own (bind-pose) space, waiting for the walk
 * to end: its bones' nodes may come after it. */
typedef struct AsSkin {
    const struct aiMesh *me;
    uint32_t v0;                     /* its first vertex in the scene */
} AsSkin;

typedef struct AsLoad {
    const char *path;
    const char *clip_arg;            /* --clip: a name or an index; NULL = the first with channels */
    char dir[PATH_MAX];              /* the model's folder, with its '/' */
    const struct aiScene *ai;
    const struct aiAnimation *clip;  /* the clip played, or NULL */
    double tps;                      /* its ticks per second */
    RtScene *s;                      /* the scene being filled (a fresh one) */
    RtError *err;
    int node_anim;                   /* 1: every node becomes an RtAnimNode */
    const struct aiNode **anim_node; /* per RtAnimNode made: its aiNode (bones find their node) */
    size_t anim_node_cap;
    AsSkin *skin;                    /* skinned meshes, joints resolved after the walk */
    size_t skin_count, skin_cap;
    uint32_t skinned, skinned_static, joints, morphs, tracks, dropped_tris, nodes;
    int camera_done;
    RtGltfAnim gltf;                 /* a .gltf / .glb's channels of the clip, from the file itself */
    uint32_t gltf_used;              /* of them, those that replaced assimp's keys */
} AsLoad;

static RtStatus as_oom(AsLoad *L, const char *what)
{
    return rt_fail(L->err, RT_ERR_OOM, "%s: ASSIMP: out of memory (%s)", L->path, what);
}

/* assimp's log lines ("Warn,  T0: ...", "Info,  T0: ...") through the
 * tagged log; errors that end a load also come back as its message. */
static void as_log(const char *msg, char *user)
{
    const char *path = user;
    RtLogLevel level = RT_LOG_DEBUG;
    if (!strncmp(msg, "Error", 5) || !strncmp(msg, "Warn", 4)) level = RT_LOG_WARN;
    else if (!strncmp(msg, "Info", 4)) level = RT_LOG_DEBUG; /* one line per import step: noise */
    const char *text = strstr(msg, ": ");
    text = text ? text + 2 : msg;
    int n = (int)strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r')) n--;
    rt_log(level, "ASSIMP", "%s: %.*s", path, n, text);
}

/* Imports path into *out under the lock, assimp's log routed to ours.
 * frame >= 0 picks an MD2 keyframe; weld 0 keeps every face corner its own
 * vertex (MD2 frames must line up vertex for vertex). */
static RtStatus as_import(const char *path, int frame, int weld, const struct aiScene **out, RtError *err)
{
    struct aiPropertyStore *props = aiCreatePropertyStore();
    if (!props) return rt_fail(err, RT_ERR_OOM, "%s: ASSIMP: out of memory", path);
    aiSetImportPropertyInteger(props, AI_CONFIG_PP_SBP_REMOVE, aiPrimitiveType_POINT | aiPrimitiveType_LINE);
    aiSetImportPropertyInteger(props, AI_CONFIG_PP_LBW_MAX_WEIGHTS, AS_MAX_BONE_WEIGHTS);
    if (frame >= 0) aiSetImportPropertyInteger(props, AI_CONFIG_IMPORT_MD2_KEYFRAME, frame);
    unsigned flags = AS_FLAGS & ~(weld ? 0u : (unsigned)aiProcess_JoinIdenticalVertices);
    pthread_mutex_lock(&g_assimp_lock);
    struct aiLogStream stream = {as_log, (char *)path};
    aiAttachLogStream(&stream);
    *out = aiImportFileExWithProperties(path, flags, NULL, props);
    RtStatus st = RT_OK;
    if (!*out) {
        const char *why = aiGetErrorString();
        st = rt_fail(err, RT_ERR_PARSE, "%s: ASSIMP: %s", path, why && why[0] ? why : "import failed (no reason given)");
    }
    aiDetachLogStream(&stream);
    pthread_mutex_unlock(&g_assimp_lock);
    aiReleasePropertyStore(props);
    return st;
}

/* An OFF file's header declares its vertex and face counts, and assimp 5.2's
 * OFF reader allocates and fills them before reading a line of data: a
 * header claiming 35 billion vertices makes it swap the machine, and a
 * library call cannot be interrupted. So the counts are checked against
 * the file's size first: an ASCII vertex takes at least 6 bytes ("0 0 0\n"),
 * a face at least 8 ("3 0 1 2\n"). Binary OFF (16 and 16 bytes at least)
 * likewise; a header that does not parse is left to assimp. */
static RtStatus as_check_off_counts(const char *path, RtError *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return RT_OK; /* assimp says why */
    char head[4096];
    size_t n = fread(head, 1, sizeof head - 1, f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    head[n] = 0;
    /* tokens of the header, comments (# to the end of the line) dropped */
    char *tok[8];
    int nt = 0;
    for (char *p = head; *p && nt < 8;) {
        if (*p == '#') {
            while (*p && *p != '\n') p++;
        } else if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
            *p++ = 0;
        } else {
            tok[nt++] = p;
            while (*p && !strchr(" \t\r\n#", *p)) p++;
        }
    }
    if (nt < 3) return RT_OK;
    size_t kl = strlen(tok[0]);
    if (kl < 3 || strcmp(tok[0] + kl - 3, "OFF")) return RT_OK;
    int k = 1, binary = 0;
    if (strchr(tok[0], 'n') && k < nt) k++; /* nOFF: the dimension comes first */
    if (k < nt && !strcmp(tok[k], "BINARY")) binary = 1, k++;
    if (k + 1 >= nt) return RT_OK;
    char *e1, *e2;
    unsigned long long nv = strtoull(tok[k], &e1, 10), nf = strtoull(tok[k + 1], &e2, 10);
    if (*e1 || *e2) return RT_OK;
    const unsigned long long need = binary ? nv * 12ull + nf * 16ull : nv * 6ull + nf * 8ull;
    if (size >= 0 && (nv > (1ull << 40) || nf > (1ull << 40) || need > (unsigned long long)size))
        return rt_fail(err, RT_ERR_PARSE,
                       "%s: OFF: the header declares %llu vertices and %llu faces, more than a file of %ld bytes "
                       "can hold (at least %llu bytes); refused before assimp allocates them",
                       path, nv, nf, size, need);
    return RT_OK;
}

/* ---- small conversions ------------------------------------------------------ */

static void as_mat34(const struct aiMatrix4x4 *a, float m[12])
{
    const float r[12] = {a->a1, a->a2, a->a3, a->a4, a->b1, a->b2, a->b3, a->b4, a->c1, a->c2, a->c3, a->c4};
    memcpy(m, r, sizeof r);
}

static RtVec3 as_v3(struct aiVector3D v) { return v3(v.x, v.y, v.z); }

static int as_finite(RtVec3 p) { return isfinite(p.x) && isfinite(p.y) && isfinite(p.z); }

static void as_name(char *out, size_t n, const struct aiString *a, const char *fallback)
{
    /* names longer than the field are cut (the precision keeps gcc sure of it) */
    snprintf(out, n, "%.*s", (int)n - 1, a && a->length ? a->data : fallback);
}

/* The linear part of m applied to a direction. */
static RtVec3 as_dir(const float m[12], RtVec3 d)
{
    return v3(m[0] * d.x + m[1] * d.y + m[2] * d.z, m[4] * d.x + m[5] * d.y + m[6] * d.z,
              m[8] * d.x + m[9] * d.y + m[10] * d.z);
}

/* ---- textures ------------------------------------------------------------------ */

/* An embedded texture: "*N" (glTF, glb, FBX, ...) or a file name that
 * matches one of the scene's embedded textures (FBX). */
static const struct aiTexture *as_embedded(const struct aiScene *ai, const char *name)
{
    if (name[0] == '*') {
        char *end;
        unsigned long i = strtoul(name + 1, &end, 10);
        return !*end && end != name + 1 && i < ai->mNumTextures ? ai->mTextures[i] : NULL;
    }
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    for (unsigned i = 0; i < ai->mNumTextures; i++) {
        const char *f = ai->mTextures[i]->mFilename.data, *fb = strrchr(f, '/');
        fb = fb ? fb + 1 : f;
        if (ai->mTextures[i]->mFilename.length && (!strcmp(f, name) || !strcmp(fb, base))) return ai->mTextures[i];
    }
    return NULL;
}

/* Decodes an embedded texture: compressed bytes (mHeight 0: PNG, JPG, ...)
 * with stb_image, or raw ARGB8888 texels (aiTexel is b, g, r, a). */
static RtStatus as_load_embedded(AsLoad *L, const struct aiTexture *tex, const char *name, int32_t *index)
{
    char key[PATH_MAX + 64];
    snprintf(key, sizeof key, "%s%s%s", L->path, name[0] == '*' ? "" : "#", name);
    if (tex->mHeight == 0)
        return rt_texture_load_memory(L->s, key, tex->pcData, tex->mWidth, index, L->err);
    if (tex->mWidth > (1u << 14) || tex->mHeight > (1u << 14))
        return rt_fail(L->err, RT_ERR_IO, "%s: TEX: %ux%u texels, over the 16K limit", key, tex->mWidth,
                       tex->mHeight);
    size_t n = (size_t)tex->mWidth * tex->mHeight;
    uint8_t *rgba = malloc(n * 4);
    if (!rgba) return rt_fail(L->err, RT_ERR_OOM, "%s: TEX: out of memory", key);
    for (size_t i = 0; i < n; i++) {
        const struct aiTexel *t = &tex->pcData[i];
        rgba[4 * i + 0] = t->r, rgba[4 * i + 1] = t->g, rgba[4 * i + 2] = t->b, rgba[4 * i + 3] = t->a;
    }
    return rt_texture_add_rgba(L->s, key, (int)tex->mWidth, (int)tex->mHeight, rgba, index, L->err);
}

/* The first texture of the given types, or -1. A texture that cannot be
 * read warns and keeps the flat colour, as in the OBJ loader; only running
 * out of memory fails the load. */
static RtStatus as_texture(AsLoad *L, const struct aiMaterial *mat, const enum aiTextureType *types, int ntypes,
                           int32_t *index)
{
    *index = -1;
    struct aiString p;
    int t = 0;
    while (t < ntypes && aiGetMaterialTexture(mat, types[t], 0, &p, NULL, NULL, NULL, NULL, NULL, NULL) != AI_SUCCESS)
        t++;
    if (t == ntypes || !p.length) return RT_OK;
    char name[PATH_MAX];
    snprintf(name, sizeof name, "%s", p.data);
    for (char *c = name; *c; c++)
        if (*c == '\\') *c = '/'; /* files written on Windows */
    RtError e = {0};
    RtStatus st;
    const struct aiTexture *emb = as_embedded(L->ai, name);
    if (emb) {
        st = as_load_embedded(L, emb, name, index);
        if (st != RT_OK) e = *L->err;
    } else {
        /* relative to the model's folder; an absolute path from the
         * author's machine falls back to the file name beside the model */
        char file[PATH_MAX + PATH_MAX];
        const char *base = strrchr(name, '/');
        if (name[0] == '/') snprintf(file, sizeof file, "%s", name);
        else snprintf(file, sizeof file, "%s%s", L->dir, name);
        st = rt_texture_load(L->s, file, index, &e);
        if (st != RT_OK && st != RT_ERR_OOM && base) {
            snprintf(file, sizeof file, "%s%s", L->dir, base + 1);
            st = rt_texture_load(L->s, file, index, &e);
        }
    }
    if (st == RT_ERR_OOM) return rt_fail(L->err, st, "%s: ASSIMP: %s", L->path, e.msg);
    if (st != RT_OK) {
        *index = -1;
        RT_WARN("ASSIMP", "%s: texture '%s': %s; keeping the flat colour", L->path, name, e.msg);
    }
    return RT_OK;
}

/* ---- materials ------------------------------------------------------------------- */

static int as_color(const struct aiMaterial *m, const char *key, unsigned type, unsigned idx, struct aiColor4D *c)
{
    return aiGetMaterialColor(m, key, type, idx, c) == AI_SUCCESS;
}

static int as_float(const struct aiMaterial *m, const char *key, unsigned type, unsigned idx, float *f)
{
    unsigned n = 1;
    return aiGetMaterialFloatArray(m, key, type, idx, f, &n) == AI_SUCCESS && n == 1 && isfinite(*f);
}

/* The mapping of docs/formats.md ("assimp: materials"). */
static RtStatus as_material(AsLoad *L, const struct aiMaterial *am, RtMaterial *out)
{
    RtMaterial m = rt_material_default();
    struct aiString name;
    if (aiGetMaterialString(am, AI_MATKEY_NAME, &name) == AI_SUCCESS) as_name(m.name, sizeof m.name, &name, "");
    struct aiColor4D c;
    float alpha = 1.0f, f;
    if (as_color(am, AI_MATKEY_BASE_COLOR, &c) || as_color(am, AI_MATKEY_COLOR_DIFFUSE, &c)) {
        m.kd = v3(c.r, c.g, c.b);
        alpha = c.a;
    }
    float metallic = 0.0f, rough = 1.0f;
    int pbr = as_float(am, AI_MATKEY_METALLIC_FACTOR, &metallic) | as_float(am, AI_MATKEY_ROUGHNESS_FACTOR, &rough);
    if (pbr) {
        /* metal-roughness: the metal's colour goes to the highlight, a
         * dielectric keeps F0 = 0.04; roughness r -> Beckmann alpha = r^2
         * -> Phong exponent 2 / alpha^2 - 2 (Walter et al. 2007, eq. 33) */
        metallic = fminf(fmaxf(metallic, 0.0f), 1.0f);
        rough = fminf(fmaxf(rough, 0.0f), 1.0f);
        m.ks = v3_lerp(v3(AS_DIELECTRIC_F0, AS_DIELECTRIC_F0, AS_DIELECTRIC_F0), m.kd, metallic);
        m.kd = v3_scale(m.kd, 1.0f - metallic);
        float a2 = rough * rough * rough * rough;
        m.ns = a2 > 0.0f ? 2.0f / a2 - 2.0f : AS_NS_MAX;
    } else {
        m.ks = v3(0, 0, 0);
        if (as_color(am, AI_MATKEY_COLOR_SPECULAR, &c)) m.ks = v3(c.r, c.g, c.b);
        if (as_float(am, AI_MATKEY_SHININESS_STRENGTH, &f) && f >= 0.0f) m.ks = v3_scale(m.ks, f);
        if (as_float(am, AI_MATKEY_SHININESS, &f) && f > 0.0f) m.ns = f;
    }
    m.ns = fminf(fmaxf(m.ns, AS_NS_MIN), AS_NS_MAX);
    if (as_color(am, AI_MATKEY_COLOR_EMISSIVE, &c)) {
        float k = as_float(am, AI_MATKEY_EMISSIVE_INTENSITY, &f) && f >= 0.0f ? f : 1.0f;
        m.ke = v3_scale(v3(c.r, c.g, c.b), k);
    }
    if (as_float(am, AI_MATKEY_REFRACTI, &f) && f >= 1.0f) m.ni = f;

    static const enum aiTextureType kColorTex[] = {aiTextureType_BASE_COLOR, aiTextureType_DIFFUSE};
    static const enum aiTextureType kAlphaTex[] = {aiTextureType_OPACITY};
    RtStatus st = as_texture(L, am, kColorTex, 2, &m.map_kd);
    if (st == RT_OK) st = as_texture(L, am, kAlphaTex, 1, &m.map_d);
    if (st != RT_OK) return st;

    /* Opacity: glTF's alphaMode (MASK cuts holes with the colour texture's
     * alpha; BLEND is a constant opacity from the base colour's alpha; the
     * renderer has one 0.5 cut-off and no per-texel blending), else the
     * file's opacity value. */
    struct aiString mode;
    if (aiGetMaterialString(am, AI_MATKEY_GLTF_ALPHAMODE, &mode) == AI_SUCCESS) {
        if (!strcmp(mode.data, "MASK") && m.map_d < 0) m.map_d = m.map_kd;
        if (!strcmp(mode.data, "BLEND")) m.d = alpha;
    } else if (as_float(am, AI_MATKEY_OPACITY, &f)) {
        m.d = f;
    }
    m.d = fminf(fmaxf(m.d, 0.0f), 1.0f);
    *out = m;
    return RT_OK;
}

/* ---- animation: node channels ------------------------------------------------------- */

/* One channel's keys as a LINEAR channel (anim_keys.h; rotations slerp
 * along the shorter arc), or the node's own value as a constant when the
 * file animates the other components only. assimp 5.2 hands over no
 * interpolation mode: its glTF importer keeps a STEP sampler's keys as they
 * are and only the values of a CUBICSPLINE one (the middle of each
 * in-tangent, value, out-tangent triple), FBX and Collada curves arrive
 * sampled; linear is what every one of them becomes (docs/animation.md),
 * except a glTF's channels, which as_gltf_channel replaces with the file's. */
typedef struct AsKey {
    double t;
    float v[4];
} AsKey;

static int as_channel(RtKbChannel *out, const AsKey *k, uint32_t n, const float *rest)
{
    AsKey one;
    if (n == 0) {
        one.t = 0.0;
        memcpy(one.v, rest, sizeof one.v);
        k = &one;
        n = 1;
    }
    RtKbKey *keys = calloc(n, sizeof *keys);
    if (!keys) return 0;
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        /* times must increase (anim_keys.h): a key at or before the last
         * one kept replaces it (a file's duplicate key: the later wins) */
        if (m && !((float)k[i].t > keys[m - 1].t)) m--;
        keys[m].t = (float)k[i].t;
        memcpy(keys[m].v, k[i].v, sizeof keys[m].v);
        m++;
    }
    out->keys = keys;
    out->count = m;
    out->interp = RT_KEYS_LINEAR;
    return 1;
}

/* A quaternion as a rotation key's value: unit, (x, y, z, w). */
static void as_quat_key(struct aiQuaternion q, float v[4])
{
    double l = sqrt((double)q.w * q.w + (double)q.x * q.x + (double)q.y * q.y + (double)q.z * q.z);
    if (!(l > 0.0 && isfinite(l))) {
        v[0] = v[1] = v[2] = 0.0f, v[3] = 1.0f;
        return;
    }
    v[0] = (float)(q.x / l), v[1] = (float)(q.y / l), v[2] = (float)(q.z / l), v[3] = (float)(q.w / l);
}

/* Translation or scale keys as AsKeys in seconds. */
static void as_vec_keys(const struct aiVectorKey *in, uint32_t n, double tps, AsKey *k)
{
    for (uint32_t i = 0; i < n; i++) {
        k[i].t = in[i].mTime / tps;
        k[i].v[0] = in[i].mValue.x, k[i].v[1] = in[i].mValue.y, k[i].v[2] = in[i].mValue.z, k[i].v[3] = 0.0f;
    }
}

/* The glTF's own keys for node `name`'s channel `path` (RtGltfPath) in
 * place of assimp's *c, when the file has them and the node's name says
 * unambiguously which node it is (else assimp's stay, with a warning). */
static void as_gltf_channel(AsLoad *L, const char *name, int path, RtKbChannel *c)
{
    for (uint32_t i = 0; i < L->gltf.count; i++) {
        RtGltfChannel *g = &L->gltf.ch[i];
        if (g->path != path || g->used || strcmp(g->node, name)) continue;
        g->used = 1;
        if (g->ambiguous) {
            RT_WARN("ASSIMP", "%s: glTF: more than one node is named '%s': its channels keep assimp's linear keys",
                    L->path, name);
            return;
        }
        free(c->keys);
        *c = g->keys;
        memset(&g->keys, 0, sizeof g->keys);
        L->gltf_used++;
        return;
    }
}

/* An RtAnimTrack from a node channel; the node's own transform (local)
 * fills in the components the channel does not animate, as glTF says. */
static RtStatus as_track(AsLoad *L, const struct aiNodeAnim *ch, const struct aiMatrix4x4 *local, int32_t *track)
{
    struct aiVector3D sc, pos;
    struct aiQuaternion rot;
    aiDecomposeMatrix(local, &sc, &rot, &pos);
    uint32_t n = ch->mNumPositionKeys;
    if (ch->mNumRotationKeys > n) n = ch->mNumRotationKeys;
    if (ch->mNumScalingKeys > n) n = ch->mNumScalingKeys;
    AsKey *k = malloc(((size_t)n + 1) * sizeof *k);
    if (!k) return as_oom(L, "animation keys");
    RtAnimTrack tr;
    memset(&tr, 0, sizeof tr);
    as_name(tr.name, sizeof tr.name, &ch->mNodeName, "node");
    const float t_rest[4] = {pos.x, pos.y, pos.z, 0.0f}, s_rest[4] = {sc.x, sc.y, sc.z, 0.0f};
    float r_rest[4];
    as_quat_key(rot, r_rest);
    as_vec_keys(ch->mPositionKeys, ch->mNumPositionKeys, L->tps, k);
    int ok = as_channel(&tr.transl, k, ch->mNumPositionKeys, t_rest);
    for (uint32_t i = 0; i < ch->mNumRotationKeys; i++) {
        k[i].t = ch->mRotationKeys[i].mTime / L->tps;
        as_quat_key(ch->mRotationKeys[i].mValue, k[i].v);
    }
    ok = ok && as_channel(&tr.rot, k, ch->mNumRotationKeys, r_rest);
    as_vec_keys(ch->mScalingKeys, ch->mNumScalingKeys, L->tps, k);
    ok = ok && as_channel(&tr.scale, k, ch->mNumScalingKeys, s_rest);
    free(k);
    if (ok && L->gltf.count) {
        as_gltf_channel(L, ch->mNodeName.data, RT_GLTF_TRANSLATION, &tr.transl);
        as_gltf_channel(L, ch->mNodeName.data, RT_GLTF_ROTATION, &tr.rot);
        as_gltf_channel(L, ch->mNodeName.data, RT_GLTF_SCALE, &tr.scale);
    }
    int64_t i = ok ? rt_anim_add_track(&L->s->anim, &tr) : -1;
    if (i < 0) {
        free(tr.transl.keys), free(tr.rot.keys), free(tr.scale.keys);
        return as_oom(L, "animation track");
    }
    *track = (int32_t)i;
    L->tracks++;
    return RT_OK;
}

static const struct aiNodeAnim *as_node_channel(const AsLoad *L, const struct aiString *name)
{
    if (!L->clip) return NULL;
    for (unsigned i = 0; i < L->clip->mNumChannels; i++) {
        const struct aiNodeAnim *ch = L->clip->mChannels[i];
        if (ch && ch->mNodeName.length == name->length && !strcmp(ch->mNodeName.data, name->data)) return ch;
    }
    return NULL;
}

/* ---- animation: morph targets --------------------------------------------------- */

/* The clip's morph channel for a mesh of node `node`: assimp names it
 * after the node (glTF) or the mesh. */
static const struct aiMeshMorphAnim *as_morph_channel(const AsLoad *L, const struct aiNode *node,
                                                      const struct aiMesh *me)
{
    if (!L->clip) return NULL;
    for (unsigned i = 0; i < L->clip->mNumMorphMeshChannels; i++) {
        const struct aiMeshMorphAnim *ch = L->clip->mMorphMeshChannels[i];
        if (ch && (!strcmp(ch->mName.data, node->mName.data) || (me->mName.length && !strcmp(ch->mName.data, me->mName.data))))
            return ch;
    }
    return NULL;
}

/* Vertex i of mesh me under morph weights (anim mesh index, weight)
 * pairs: base + sum w (target - base); assimp stores targets as whole
 * positions (and normals, when the target has them). */
static void as_morph_vertex(const struct aiMesh *me, const unsigned *idx, const double *w, unsigned nw, unsigned i,
                            RtVec3 *p, RtVec3 *n)
{
    RtVec3 p0 = as_v3(me->mVertices[i]), n0 = me->mNormals ? as_v3(me->mNormals[i]) : v3(0, 0, 0);
    *p = p0, *n = n0;
    for (unsigned j = 0; j < nw; j++) {
        if (idx[j] >= me->mNumAnimMeshes || !(w[j] != 0.0)) continue;
        const struct aiAnimMesh *am = me->mAnimMeshes[idx[j]];
        if (!am || am->mNumVertices != me->mNumVertices) continue;
        if (am->mVertices) *p = v3_add(*p, v3_scale(v3_sub(as_v3(am->mVertices[i]), p0), (float)w[j]));
        if (am->mNormals) *n = v3_add(*n, v3_scale(v3_sub(as_v3(am->mNormals[i]), n0), (float)w[j]));
    }
    *n = v3_norm(*n);
}

/* One pose per weight key of ch, placed like the mesh's vertices (m, or
 * node space when m is NULL). */
static RtStatus as_add_morph(AsLoad *L, const struct aiMesh *me, const struct aiMeshMorphAnim *ch, const float *m,
                             uint32_t v0)
{
    uint32_t nk = ch->mNumKeys, nv = me->mNumVertices;
    if (nk == 0) return RT_OK;
    uint64_t limit = rt_load_limits_default().morph_poses;
    if ((uint64_t)nk * nv > limit)
        return rt_fail(L->err, RT_ERR_OOM, "%s: ASSIMP: morph of '%s': %u keys of %u vertices is more than %llu poses",
                       L->path, me->mName.data, nk, nv, (unsigned long long)limit);
    RtAnimMorph mo = {v0, nv, nk, malloc(nk * sizeof(float)), malloc((size_t)nk * nv * sizeof(RtVec3)),
                      malloc((size_t)nk * nv * sizeof(RtVec3))};
    if (!mo.times || !mo.pos || !mo.nrm) goto oom;
    for (uint32_t k = 0; k < nk; k++) {
        const struct aiMeshMorphKey *key = &ch->mKeys[k];
        mo.times[k] = (float)(key->mTime / L->tps);
        if (k && mo.times[k] < mo.times[k - 1]) {
            RT_WARN("ASSIMP", "%s: morph of '%s': key times go backwards; the mesh stays still", L->path,
                    me->mName.data);
            free(mo.times), free(mo.pos), free(mo.nrm);
            return RT_OK;
        }
        for (uint32_t i = 0; i < nv; i++) {
            RtVec3 p, n;
            as_morph_vertex(me, key->mValues, key->mWeights, key->mNumValuesAndWeights, i, &p, &n);
            if (m) p = rt_mat34_point(m, p), n = rt_mat34_normal(m, n);
            mo.pos[(size_t)k * nv + i] = p;
            mo.nrm[(size_t)k * nv + i] = n;
        }
    }
    if (rt_anim_add_morph(&L->s->anim, &mo) < 0) goto oom;
    L->morphs++;
    return RT_OK;
oom:
    free(mo.times), free(mo.pos), free(mo.nrm);
    return as_oom(L, "morph poses");
}

/* ---- meshes -------------------------------------------------------------------------- */

/* Appends mesh me of `node`: vertices by m (world space; NULL: node space
 * for anim node `anode`), its triangles, its object, its morph. */
static RtStatus as_add_mesh(AsLoad *L, const struct aiNode *node, const struct aiMesh *me, const float *m,
                            int flip, uint32_t anode)
{
    RtScene *s = L->s;
    if (!(me->mPrimitiveTypes & aiPrimitiveType_TRIANGLE) || !me->mNumVertices || !me->mVertices) return RT_OK;
    if (me->mNumBones) L->skinned++;
    if (me->mNumBones && !L->node_anim) L->skinned_static++;
    const struct aiMeshMorphAnim *mch = me->mNumAnimMeshes ? as_morph_channel(L, node, me) : NULL;
    /* without an animated weight, the file's default weights are the pose */
    unsigned nw = mch ? 0 : me->mNumAnimMeshes;
    unsigned *idx = nw ? malloc(nw * sizeof *idx) : NULL;
    double *w = nw ? malloc(nw * sizeof *w) : NULL;
    if (nw && (!idx || !w)) {
        free(idx), free(w);
        return as_oom(L, "morph weights");
    }
    for (unsigned j = 0; j < nw; j++) idx[j] = j, w[j] = me->mAnimMeshes[j] ? me->mAnimMeshes[j]->mWeight : 0.0;

    uint32_t v0 = s->vert_count;
    const struct aiVector3D *uv = me->mTextureCoords[0];
    for (unsigned i = 0; i < me->mNumVertices; i++) {
        RtVertex v;
        memset(&v, 0, sizeof v);
        as_morph_vertex(me, idx, w, nw, i, &v.p, &v.n);
        if (m) v.p = rt_mat34_point(m, v.p), v.n = rt_mat34_normal(m, v.n);
        if (uv) v.u = uv[i].x, v.v = uv[i].y;
        if (!isfinite(v.u) || !isfinite(v.v)) v.u = v.v = 0.0f;
        if (rt_scene_add_vertex(s, v) < 0) {
            free(idx), free(w);
            return as_oom(L, "vertices");
        }
    }
    free(idx), free(w);
    char name[64];
    as_name(name, sizeof name, me->mName.length ? &me->mName : &node->mName, "mesh");
    int64_t obj = rt_scene_add_object(s, name);
    if (obj < 0) return as_oom(L, "objects");
    int32_t mat = me->mMaterialIndex < L->ai->mNumMaterials ? (int32_t)me->mMaterialIndex : -1;
    for (unsigned f = 0; f < me->mNumFaces; f++) {
        const struct aiFace *face = &me->mFaces[f];
        if (face->mNumIndices != 3) continue;
        const unsigned *ix = face->mIndices;
        if (ix[0] >= me->mNumVertices || ix[1] >= me->mNumVertices || ix[2] >= me->mNumVertices) {
            L->dropped_tris++;
            continue;
        }
        /* a corner at infinity (BoxWithInfinites) would poison the bounds */
        if (!as_finite(s->verts[v0 + ix[0]].p) || !as_finite(s->verts[v0 + ix[1]].p) ||
            !as_finite(s->verts[v0 + ix[2]].p)) {
            L->dropped_tris++;
            continue;
        }
        RtTriangle t = {{v0 + ix[0], v0 + (flip ? ix[2] : ix[1]), v0 + (flip ? ix[1] : ix[2])}, mat, (uint32_t)obj};
        if (rt_scene_add_triangle(s, t) < 0) return as_oom(L, "triangles");
    }
    s->objects[obj].tri_count = s->tri_count - s->objects[obj].first_tri;
    RtStatus st;
    if (anode != RT_ANIM_STATIC &&
        (st = rt_anim_set_vert_node(&s->anim, s->vert_count, v0, me->mNumVertices, anode, L->err)) != RT_OK)
        return st;
    return mch ? as_add_morph(L, me, mch, m, v0) : RT_OK;
}

/* ---- cameras and lights ------------------------------------------------------------- */

/* The first camera, placed by its node's world matrix w. assimp's
 * mHorizontalFOV is half the horizontal angle; RtCamera wants the full
 * vertical one (the aspect, when the file gives it, converts). */
static void as_camera(AsLoad *L, const struct aiCamera *c, const float w[12])
{
    RtCamera *cam = &L->s->camera;
    cam->pos = rt_mat34_point(w, as_v3(c->mPosition));
    RtVec3 dir = v3_norm(as_dir(w, as_v3(c->mLookAt))), up = v3_norm(as_dir(w, as_v3(c->mUp)));
    if (!(v3_len(dir) > 0.0f)) dir = v3(0, 0, -1);
    if (!(v3_len(up) > 0.0f)) up = v3(0, 1, 0);
    cam->look = v3_add(cam->pos, dir);
    cam->up = up;
    double half_h = c->mHorizontalFOV > 0.0f ? c->mHorizontalFOV : 0.25 * 3.14159265358979323846;
    double aspect = c->mAspect > 0.0f ? c->mAspect : 1.0;
    double fov = 2.0 * atan(tan(half_h) / aspect) * 180.0 / 3.14159265358979323846;
    cam->fov_y = (float)(fov > 1.0 && fov < 170.0 ? fov : 60.0);
    L->s->has_camera = as_finite(cam->pos);
    L->camera_done = 1;
}

/* A light placed by its node's world matrix. rtviewer's lights have no
 * falloff and no cone: a spot or area light becomes a point light at its
 * position, and a colour brighter than 1 (glTF's candela, FBX intensities)
 * is scaled so that its largest channel is 1. An ambient light adds to the
 * scene's ambient term. */
static RtStatus as_light(AsLoad *L, const struct aiLight *li, const float w[12])
{
    RtVec3 col = v3(li->mColorDiffuse.r, li->mColorDiffuse.g, li->mColorDiffuse.b);
    if (!as_finite(col)) return RT_OK;
    float mx = fmaxf(col.x, fmaxf(col.y, col.z));
    if (mx > 1.0f) col = v3_scale(col, 1.0f / mx);
    if (li->mType == aiLightSource_AMBIENT) {
        col = v3(li->mColorAmbient.r, li->mColorAmbient.g, li->mColorAmbient.b);
        if (as_finite(col)) {
            L->s->ambient = v3_add(L->s->has_ambient ? L->s->ambient : v3(0, 0, 0), col);
            L->s->has_ambient = 1;
        }
        return RT_OK;
    }
    RtLight l;
    if (li->mType == aiLightSource_DIRECTIONAL) {
        l.type = RT_LIGHT_DIRECTIONAL;
        l.v = v3_norm(v3_scale(as_dir(w, as_v3(li->mDirection)), -1.0f)); /* toward the light */
        if (!(v3_len(l.v) > 0.0f)) return RT_OK;
    } else {
        l.type = RT_LIGHT_POINT;
        l.v = rt_mat34_point(w, as_v3(li->mPosition));
    }
    l.color = col;
    if (!as_finite(l.v)) return RT_OK;
    return rt_scene_add_light(L->s, l) < 0 ? as_oom(L, "lights") : RT_OK;
}

/* ---- the node walk ---------------------------------------------------------------- */

typedef struct AsFrame {
    const struct aiNode *node;
    float world[12];   /* the parent's world matrix at the bind pose */
    int32_t parent;    /* the parent's RtAnimNode, or -1 */
    int moving;        /* the parent or an ancestor is animated */
} AsFrame;

/* One node: its RtAnimNode (when the clip moves nodes), meshes, camera
 * and lights; world is its own world matrix at the bind pose. */
static RtStatus as_visit(AsLoad *L, const AsFrame *f, float world[12], int32_t *anode, int *moving)
{
    const struct aiNode *nd = f->node;
    float local[12];
    as_mat34(&nd->mTransformation, local);
    rt_mat34_mul(world, f->world, local);
    const struct aiNodeAnim *ch = as_node_channel(L, &nd->mName);
    *moving = f->moving || ch;
    *anode = -1;
    RtStatus st;
    if (L->node_anim) {
        RtAnimNode an;
        memset(&an, 0, sizeof an);
        an.parent = f->parent;
        an.kind = ch ? RT_NODE_TRACK : RT_NODE_STATIC;
        an.track = -1;
        if (ch) {
            rt_mat34_identity(an.m); /* the channel is the whole local transform */
            if ((st = as_track(L, ch, &nd->mTransformation, &an.track)) != RT_OK) return st;
        } else {
            memcpy(an.m, local, sizeof local);
        }
        int64_t k = rt_anim_add_node(&L->s->anim, &an);
        if (k < 0 || !rt_grow_array((void **)&L->anim_node, &L->anim_node_cap, (size_t)k + 1, sizeof *L->anim_node))
            return as_oom(L, "nodes");
        L->anim_node[k] = nd;
        *anode = (int32_t)k;
    }
    int flip = rt_mat34_det(world) < 0.0f; /* a mirror: keep the winding counter-clockwise */
    for (unsigned i = 0; i < nd->mNumMeshes; i++) {
        if (nd->mMeshes[i] >= L->ai->mNumMeshes || !L->ai->mMeshes[nd->mMeshes[i]]) continue;
        const struct aiMesh *me = L->ai->mMeshes[nd->mMeshes[i]];
        /* a skinned mesh stays in its bind-pose space: its joints place it
         * (glTF: the mesh node's own transform does not apply to it) */
        int skin = me->mNumBones && L->node_anim;
        uint32_t v0 = L->s->vert_count;
        st = *moving || skin ? as_add_mesh(L, nd, me, NULL, flip, (uint32_t)*anode)
                             : as_add_mesh(L, nd, me, world, flip, RT_ANIM_STATIC);
        if (st != RT_OK) return st;
        if (skin && L->s->vert_count > v0) {
            if (!rt_grow_array((void **)&L->skin, &L->skin_cap, L->skin_count + 1, sizeof *L->skin))
                return as_oom(L, "skins");
            L->skin[L->skin_count].me = me;
            L->skin[L->skin_count++].v0 = v0;
        }
    }
    const struct aiScene *ai = L->ai;
    if (!L->camera_done && ai->mNumCameras && ai->mCameras[0] && !strcmp(ai->mCameras[0]->mName.data, nd->mName.data))
        as_camera(L, ai->mCameras[0], world);
    for (unsigned i = 0; i < ai->mNumLights; i++)
        if (ai->mLights[i] && !strcmp(ai->mLights[i]->mName.data, nd->mName.data) &&
            (st = as_light(L, ai->mLights[i], world)) != RT_OK)
            return st;
    return RT_OK;
}

/* Depth first, parents before children (RtAnimNode's order), with an
 * explicit stack: a deep hierarchy cannot overflow the C stack. */
static RtStatus as_walk(AsLoad *L)
{
    size_t cap = 64, n = 0;
    AsFrame *stack = malloc(cap * sizeof *stack);
    if (!stack) return as_oom(L, "node stack");
    stack[n].node = L->ai->mRootNode;
    rt_mat34_identity(stack[n].world);
    stack[n].parent = -1;
    stack[n++].moving = 0;
    RtStatus st = RT_OK;
    while (n && st == RT_OK) {
        AsFrame f = stack[--n];
        if (!f.node) continue;
        if (++L->nodes > AS_MAX_NODES) {
            st = rt_fail(L->err, RT_ERR_PARSE, "%s: ASSIMP: expected at most %u nodes (a cyclic node hierarchy?)",
                         L->path, AS_MAX_NODES);
            break;
        }
        AsFrame child;
        if ((st = as_visit(L, &f, child.world, &child.parent, &child.moving)) != RT_OK) break;
        if (!rt_grow_array((void **)&stack, &cap, n + f.node->mNumChildren, sizeof *stack)) {
            st = as_oom(L, "node stack");
            break;
        }
        for (unsigned i = f.node->mNumChildren; i-- > 0;) { /* reversed: the first child is visited first */
            child.node = f.node->mChildren[i];
            stack[n++] = child;
        }
    }
    free(stack);
    return st;
}

/* ---- skinning ------------------------------------------------------------------------ */

/* The RtAnimNode of the node named `name`, or -1. */
static int32_t as_anim_node_named(const AsLoad *L, const struct aiString *name)
{
    for (uint32_t i = 0; i < L->s->anim.node_count; i++)
        if (L->anim_node[i]->mName.length == name->length && !strcmp(L->anim_node[i]->mName.data, name->data))
            return (int32_t)i;
    return -1;
}

/* Puts (joint, w) into a vertex's RT_SKIN_WEIGHTS slots, keeping the
 * largest weights (assimp's LimitBoneWeights has already cut to 4; this
 * holds for any input). */
static void as_skin_put(RtAnimSkinVert *sv, uint32_t joint, float w)
{
    int low = 0;
    for (int k = 1; k < RT_SKIN_WEIGHTS; k++)
        if (sv->weight[k] < sv->weight[low]) low = k;
    if (w > sv->weight[low]) sv->weight[low] = w, sv->joint[low] = joint;
}

/* One skinned mesh: a joint per bone (its node, mOffsetMatrix = the inverse
 * bind matrix: mesh space -> bone space at the bind pose, so world(bone) *
 * offset takes a bind-pose vertex to world space, assimp's convention for
 * every format), the 4 largest weights per vertex, renormalised. A bone
 * whose node is missing is dropped (its weights with it, logged). */
static RtStatus as_add_skin(AsLoad *L, const AsSkin *sk)
{
    const struct aiMesh *me = sk->me;
    RtAnim *a = &L->s->anim;
    uint32_t nv = me->mNumVertices, missing = 0;
    RtAnimSkinVert *sv = calloc((size_t)nv + 1, sizeof *sv);
    if (!sv) return as_oom(L, "skin weights");
    for (unsigned b = 0; b < me->mNumBones; b++) {
        const struct aiBone *bone = me->mBones[b];
        int32_t node = bone ? as_anim_node_named(L, &bone->mName) : -1;
        if (node < 0) {
            missing++;
            continue;
        }
        RtAnimJoint jt;
        jt.node = (uint32_t)node;
        as_mat34(&bone->mOffsetMatrix, jt.inv_bind);
        int64_t j = rt_anim_add_joint(a, &jt);
        if (j < 0) {
            free(sv);
            return as_oom(L, "joints");
        }
        L->joints++;
        for (unsigned w = 0; w < bone->mNumWeights; w++) {
            const struct aiVertexWeight *vw = &bone->mWeights[w];
            if (vw->mVertexId < nv && vw->mWeight > 0.0f && isfinite(vw->mWeight))
                as_skin_put(&sv[vw->mVertexId], (uint32_t)j, vw->mWeight);
        }
    }
    for (uint32_t i = 0; i < nv; i++) {
        float sum = 0.0f;
        for (int k = 0; k < RT_SKIN_WEIGHTS; k++) sum += sv[i].weight[k];
        for (int k = 0; sum > 0.0f && k < RT_SKIN_WEIGHTS; k++) sv[i].weight[k] /= sum;
    }
    if (missing)
        RT_WARN("ASSIMP", "%s: mesh '%s': %u bones name no node; their weights are dropped", L->path, me->mName.data,
                missing);
    RtStatus st = rt_anim_set_vert_skin(a, L->s->vert_count, sk->v0, nv, sv, L->err);
    free(sv);
    return st;
}

/* ---- MD2: one import per keyframe ---------------------------------------------- */

/* The frame count of an MD2 file (header field num_frames, little-endian
 * int at byte 40), 0 when unreadable. */
static uint32_t as_md2_frames(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0;
    unsigned char h[44];
    size_t got = fread(h, 1, sizeof h, fp);
    fclose(fp);
    if (got != sizeof h || memcmp(h, "IDP2", 4)) return 0;
    uint32_t n = (uint32_t)h[40] | (uint32_t)h[41] << 8 | (uint32_t)h[42] << 16 | (uint32_t)h[43] << 24;
    return n > AS_MD2_MAX_FRAMES ? AS_MD2_MAX_FRAMES : n;
}

/* assimp reads one MD2 keyframe per import (AI_CONFIG_IMPORT_MD2_KEYFRAME):
 * the frames become the poses of one RtAnimMorph over the scene's
 * vertices, AS_MD2_FPS apart. The base import was made unwelded, so every
 * frame's mesh lines up with it vertex for vertex; a frame that does not
 * ends the animation there (logged). */
static RtStatus as_md2_frames_morph(AsLoad *L, uint32_t frames)
{
    RtScene *s = L->s;
    uint32_t nv = s->vert_count;
    uint64_t limit = rt_load_limits_default().morph_poses;
    if (frames < 2 || !nv) return RT_OK;
    if ((uint64_t)frames * nv > limit) frames = (uint32_t)(limit / nv);
    RtAnimMorph mo = {0, nv, 0, malloc(frames * sizeof(float)), malloc((size_t)frames * nv * sizeof(RtVec3)),
                      malloc((size_t)frames * nv * sizeof(RtVec3))};
    if (!mo.times || !mo.pos || !mo.nrm) {
        free(mo.times), free(mo.pos), free(mo.nrm);
        return as_oom(L, "MD2 frames");
    }
    for (uint32_t k = 0; k < frames; k++) {
        RtError e = {0};
        const struct aiScene *fr = NULL;
        if (k) as_import(L->path, (int)k, 0, &fr, &e);
        uint32_t got = 0;
        if (!k) { /* frame 0 is the scene itself */
            for (uint32_t i = 0; i < nv; i++) mo.pos[i] = s->verts[i].p, mo.nrm[i] = s->verts[i].n;
            got = nv;
        } else if (fr) {
            for (unsigned mi = 0; mi < fr->mNumMeshes && got < nv; mi++) {
                const struct aiMesh *me = fr->mMeshes[mi];
                for (unsigned i = 0; me && i < me->mNumVertices && got < nv; i++, got++) {
                    mo.pos[(size_t)k * nv + got] = as_v3(me->mVertices[i]);
                    mo.nrm[(size_t)k * nv + got] = me->mNormals ? v3_norm(as_v3(me->mNormals[i])) : v3(0, 0, 0);
                }
            }
            /* the root transform the base import baked in */
            float w[12];
            as_mat34(&fr->mRootNode->mTransformation, w);
            for (uint32_t i = 0; i < got; i++) {
                mo.pos[(size_t)k * nv + i] = rt_mat34_point(w, mo.pos[(size_t)k * nv + i]);
                mo.nrm[(size_t)k * nv + i] = rt_mat34_normal(w, mo.nrm[(size_t)k * nv + i]);
            }
            aiReleaseImport(fr);
        }
        if (got != nv) {
            RT_WARN("ASSIMP", "%s: MD2 frame %u does not match frame 0 (%s); animating frames 0..%u", L->path, k,
                    fr ? "another vertex count" : e.msg, k ? k - 1 : 0);
            break;
        }
        mo.times[k] = (float)k / AS_MD2_FPS;
        mo.key_count = k + 1;
    }
    if (mo.key_count < 2 || rt_anim_add_morph(&s->anim, &mo) < 0) {
        int oom = mo.key_count >= 2;
        free(mo.times), free(mo.pos), free(mo.nrm);
        return oom ? as_oom(L, "MD2 frames") : RT_OK;
    }
    s->anim.t_start = 0.0f;
    s->anim.t_end = mo.times[mo.key_count - 1];
    L->morphs++;
    return RT_OK;
}

/* ---- the loader ------------------------------------------------------------------------ */

/* The clip --clip names: by name first, else a decimal index; NULL when
 * the file has none such. */
static const struct aiAnimation *as_clip_named(const struct aiScene *ai, const char *arg)
{
    for (unsigned i = 0; i < ai->mNumAnimations; i++)
        if (ai->mAnimations[i] && !strcmp(ai->mAnimations[i]->mName.data, arg)) return ai->mAnimations[i];
    char *end;
    unsigned long k = arg[0] >= '0' && arg[0] <= '9' ? strtoul(arg, &end, 10) : ULONG_MAX;
    return k < ai->mNumAnimations && !*end ? ai->mAnimations[k] : NULL;
}

/* --clip NAME|N that the file does not have: the error lists its clips
 * (index, name, length), as many as fit the message. */
static RtStatus as_no_such_clip(AsLoad *L)
{
    const struct aiScene *ai = L->ai;
    char list[sizeof L->err->msg];
    size_t n = 0;
    list[0] = '\0';
    for (unsigned i = 0; i < ai->mNumAnimations && n + 1 < sizeof list; i++) {
        const struct aiAnimation *a = ai->mAnimations[i];
        double tps = a && a->mTicksPerSecond > 0.0 ? a->mTicksPerSecond : AS_DEFAULT_TICKS_PER_SECOND;
        int k = snprintf(list + n, sizeof list - n, "%s%u '%s' (%.2f s)", i ? ", " : "", i, a ? a->mName.data : "",
                         a ? a->mDuration / tps : 0.0);
        if (k < 0) break;
        n += (size_t)k;
    }
    if (!ai->mNumAnimations)
        return rt_fail(L->err, RT_ERR_ARG, "%s: ASSIMP: --clip %s: the file has no animation clips", L->path,
                       L->clip_arg);
    return rt_fail(L->err, RT_ERR_ARG, "%s: ASSIMP: --clip %s: no such clip; expected a name or an index of: %s",
                   L->path, L->clip_arg, list);
}

/* A .gltf / .glb: the played clip's channels as the file has them
 * (gltf_anim.h), matched to assimp's by the clip's index (assimp keeps
 * glTF's animation order) and the node's name. A file this cannot read
 * keeps assimp's linear keys, with a warning saying why. */
static void as_gltf_clip(AsLoad *L)
{
    if (!L->clip->mNumChannels || !rt_gltf_anim_claims(L->path)) return;
    if (!RT_HAVE_CJSON) {
        RT_INFO("ASSIMP", "%s: built without cJSON (libcjson-dev): glTF samplers play as assimp's linear keys",
                L->path);
        return;
    }
    RtError e = {0};
    if (rt_gltf_anim_load(L->path, (uint32_t)L->s->anim.clip, &L->gltf, &e) != RT_OK) {
        RT_WARN("ASSIMP", "%s; the clip keeps assimp's linear keys", e.msg);
        return;
    }
    if (L->gltf.anim_count != L->ai->mNumAnimations) {
        RT_WARN("ASSIMP", "%s: glTF: %u animations in the file, %u from assimp: clips cannot be matched; the clip "
                "keeps assimp's linear keys", L->path, L->gltf.anim_count, L->ai->mNumAnimations);
        rt_gltf_anim_free(&L->gltf);
    }
}

/* After the walk: glTF channels that found no assimp channel of their node. */
static void as_gltf_unmatched(const AsLoad *L)
{
    for (uint32_t i = 0; i < L->gltf.count; i++)
        if (!L->gltf.ch[i].used)
            RT_WARN("ASSIMP", "%s: glTF: no assimp channel for node '%s' (%s): its file keys are not used", L->path,
                    L->gltf.ch[i].node, L->gltf.ch[i].path == RT_GLTF_ROTATION ? "rotation"
                                        : L->gltf.ch[i].path == RT_GLTF_SCALE  ? "scale" : "translation");
}

/* The clip played: --clip's, else the first with node or morph channels. */
static RtStatus as_pick_clip(AsLoad *L)
{
    const struct aiScene *ai = L->ai;
    if (L->clip_arg && !(L->clip = as_clip_named(ai, L->clip_arg))) return as_no_such_clip(L);
    for (unsigned i = 0; i < ai->mNumAnimations && !L->clip; i++) {
        const struct aiAnimation *a = ai->mAnimations[i];
        if (a && (a->mNumChannels || a->mNumMorphMeshChannels)) L->clip = a;
    }
    if (!L->clip) return RT_OK;
    RtAnim *a = &L->s->anim;
    a->clip_count = ai->mNumAnimations;
    for (unsigned i = 0; i < ai->mNumAnimations; i++)
        if (ai->mAnimations[i] == L->clip) a->clip = (int32_t)i;
    as_name(a->clip_name, sizeof a->clip_name, &L->clip->mName, "");
    L->tps = L->clip->mTicksPerSecond > 0.0 ? L->clip->mTicksPerSecond : AS_DEFAULT_TICKS_PER_SECOND;
    L->node_anim = L->clip->mNumChannels > 0;
    double dur = L->clip->mDuration / L->tps;
    if (dur > 0.0 && isfinite(dur)) {
        L->s->anim.t_start = 0.0f;
        L->s->anim.t_end = (float)dur;
    }
    if (ai->mNumAnimations > 1 || L->clip_arg)
        RT_INFO("ASSIMP", "%s: %u animation clips; playing %s'%s' (%.2f s)", L->path, ai->mNumAnimations,
                L->clip_arg ? "" : "the first with channels, ", L->clip->mName.data, dur);
    as_gltf_clip(L);
    return RT_OK;
}

static RtStatus as_convert(AsLoad *L)
{
    const struct aiScene *ai = L->ai;
    RtStatus st;
    if ((st = as_pick_clip(L)) != RT_OK) return st;
    for (unsigned i = 0; i < ai->mNumMaterials; i++) {
        RtMaterial m = rt_material_default();
        if (ai->mMaterials[i] && (st = as_material(L, ai->mMaterials[i], &m)) != RT_OK) return st;
        if (rt_scene_add_material(L->s, &m) < 0) return as_oom(L, "materials");
    }
    if (!ai->mRootNode) return rt_fail(L->err, RT_ERR_EMPTY, "%s: ASSIMP: the file has no node hierarchy", L->path);
    if ((st = as_walk(L)) != RT_OK) return st;
    as_gltf_unmatched(L);
    for (size_t i = 0; i < L->skin_count; i++)
        if ((st = as_add_skin(L, &L->skin[i])) != RT_OK) return st;
    return RT_OK;
}

RtStatus rt_assimp_load(const char *path, const char *clip, RtScene *s, RtError *err)
{
    double t0 = rt_now_ms();
    /* assimp opens the file itself: refuse a FIFO (it would block) or a
     * directory with the project's message before it does */
    RtStatus st = rt_check_regular_file(path, "ASSIMP", err);
    if (st != RT_OK) return st;
    const char *dot = strrchr(path, '.');
    if (dot && !strcasecmp(dot, ".off") && (st = as_check_off_counts(path, err)) != RT_OK) return st;
    int md2 = dot && !strcasecmp(dot, ".md2");
    uint32_t md2_frames = md2 ? as_md2_frames(path) : 0;
    /* an MD2 with frames stays unwelded so that its frames line up */
    const struct aiScene *ai;
    if ((st = as_import(path, md2_frames > 1 ? 0 : -1, md2_frames <= 1, &ai, err)) != RT_OK) return st;

    RtScene tmp;
    rt_scene_init(&tmp);
    AsLoad L;
    memset(&L, 0, sizeof L);
    L.path = path;
    L.clip_arg = clip;
    L.ai = ai;
    L.s = &tmp;
    L.err = err;
    L.tps = AS_DEFAULT_TICKS_PER_SECOND;
    const char *slash = strrchr(path, '/');
    size_t dn = slash ? (size_t)(slash - path) + 1 : 0;
    if (dn >= sizeof L.dir) dn = 0;
    memcpy(L.dir, path, dn);
    L.dir[dn] = '\0';

    st = as_convert(&L);
    if (st == RT_OK && tmp.tri_count == 0)
        st = rt_fail(err, RT_ERR_EMPTY, "%s: ASSIMP: no triangles (%u meshes, none with a usable triangle)", path,
                     ai->mNumMeshes);
    if (st == RT_OK && md2_frames > 1 && !L.clip) st = as_md2_frames_morph(&L, md2_frames);
    if (st == RT_OK) {
        if (L.skinned_static)
            RT_INFO("ASSIMP", "%s: %u skinned meshes and no clip that moves nodes: shown in their bind pose", path,
                    L.skinned_static);
        if (ai->mNumCameras > 1 || ai->mNumAnimations > 1)
            RT_INFO("ASSIMP", "%s: %u cameras (the first is used), %u animation clips", path, ai->mNumCameras,
                    ai->mNumAnimations);
        if (L.dropped_tris)
            RT_WARN("ASSIMP", "%s: %u triangles dropped (an index out of range or a corner not finite)", path,
                    L.dropped_tris);
        /* converted into a scratch scene, then appended: a conversion that
         * fails leaves s as it was (only an append out of memory can leave
         * it part-filled, as rt_scene_append says) */
        uint32_t l0 = s->light_count;
        st = rt_scene_append(s, &tmp, NULL, -1, err);
        if (st == RT_OK && tmp.has_camera && !s->has_camera) s->camera = tmp.camera, s->has_camera = 1;
        if (st == RT_OK && tmp.has_ambient && !s->has_ambient) s->ambient = tmp.ambient, s->has_ambient = 1;
        char gl[64] = "";
        if (L.gltf_used) snprintf(gl, sizeof gl, " (%u channels in the glTF's own keys)", L.gltf_used);
        if (st == RT_OK)
            RT_INFO("ASSIMP", "%s: %u triangles, %u vertices, %u materials, %u textures, %u lights%s, %u nodes; "
                    "%u animated nodes%s, %u morphs, %u skinned meshes (%u joints) in %.0f ms",
                    path, tmp.tri_count, tmp.vert_count, tmp.mat_count, tmp.tex_count, s->light_count - l0,
                    tmp.has_camera ? ", a camera" : "", L.nodes, L.tracks, gl, L.morphs, L.skinned - L.skinned_static,
                    L.joints, rt_now_ms() - t0);
    }
    rt_scene_free(&tmp);
    free(L.anim_node);
    free(L.skin);
    rt_gltf_anim_free(&L.gltf);
    aiReleaseImport(ai);
    return st;
}

#endif
