/* scene.h — the scene model every loader fills and every stage reads:
 * indexed triangle meshes with per-vertex normal and UV, materials (MTL
 * semantics), textures (RGBA8, loaded with stb_image), lights and a camera.
 * Stage 1 of the per-frame pipeline (load -> animate -> build -> trace ->
 * display). docs/formats.md describes the file formats. */
#ifndef RT_SCENE_H
#define RT_SCENE_H

#include "anim/anim.h"
#include "kd/kd_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct RtVertex {
    RtVec3 p;      /* position */
    RtVec3 n;      /* unit shading normal */
    float u, v;    /* texture coordinates (0,0 when the file has none) */
} RtVertex;

typedef struct RtTriangle {
    uint32_t v[3];     /* into RtScene.verts */
    int32_t material;  /* into RtScene.mats; -1 = the default grey material */
    uint32_t object;   /* into RtScene.objects */
} RtTriangle;

typedef struct RtTexture {
    char *path;        /* as resolved on disk */
    int w, h;
    uint8_t *rgba;     /* level 0 (w*h*4 bytes, row 0 = top of the image, sRGB-encoded), then
                          mip levels 1..levels-1 the same way (rt_texture_level) */
    int levels;        /* mip levels in rgba, level 0 included (rt_texture_build_mips); 0 or 1:
                          level 0 alone (a texture made by hand, never filtered by distance) */
} RtTexture;

/* Mip level l of a w x h texture is max(1, w >> l) x max(1, h >> l): each
 * level halves the one above, rounding down, to 1 x 1 (texture.c folds an
 * odd last row or column into its neighbour), the extents CUDA's
 * mipmapped arrays give their levels. */
RT_HD int rt_texture_level_count(int w, int h)
{
    int n = 1;
    for (int m = w > h ? w : h; m > 1; m >>= 1) n++;
    return n;
}

/* Level l (clamped to the levels present) as a one-level texture that
 * points into t's pixels (path NULL). */
RT_HD RtTexture rt_texture_level(const RtTexture *t, int l)
{
    RtTexture v = *t;
    v.path = NULL;
    v.levels = 1;
    for (int k = 0; k < l && k + 1 < t->levels; k++) {
        v.rgba += (size_t)v.w * v.h * 4;
        v.w = v.w > 1 ? v.w >> 1 : 1;
        v.h = v.h > 1 ? v.h >> 1 : 1;
    }
    return v;
}

/* Bytes of t's rgba, every level. */
RT_HD size_t rt_texture_bytes(const RtTexture *t)
{
    size_t n = 0;
    int w = t->w, h = t->h;
    for (int l = 0; l < (t->levels > 1 ? t->levels : 1); l++, w = w > 1 ? w >> 1 : 1, h = h > 1 ? h >> 1 : 1)
        n += (size_t)w * h * 4;
    return n;
}

/* MTL semantics; colors are linear RGB. */
typedef struct RtMaterial {
    char name[64];
    RtVec3 kd, ks, ke; /* diffuse, specular, emission */
    float ns;          /* Phong exponent */
    float ni;          /* index of refraction (1 = none) */
    float d;           /* opacity: 1 opaque, < 1 transmits (refraction when illum 4/6/7) */
    int illum;         /* MTL illumination model, kept for the tracers */
    float reflect;     /* mirror reflectivity 0..1: MTL illum 3/5/7 -> max(Ks); .scene "reflect" */
    int32_t map_kd;    /* texture index or -1 */
    int32_t map_d;     /* alpha-mask texture index or -1 (texel alpha, else luminance, < 0.5 = hole) */
} RtMaterial;

/* An equirectangular environment map: row 0 is straight up (+y), column 0
 * looks along -z, longitude grows toward +x; rotate turns it about +y. */
typedef struct RtEnvMap {
    int w, h;
    float *rgb;        /* w*h*3 linear floats (malloc'd), NULL: no map */
    float intensity;   /* radiance scale */
    float rotate;      /* radians about +y */
} RtEnvMap;

typedef enum {
    RT_LIGHT_POINT = 0,
    RT_LIGHT_DIRECTIONAL = 1,
    RT_LIGHT_QUAD = 2,   /* a one-sided rectangle: soft shadows (render/sample.h samples it) */
    RT_LIGHT_SPHERE = 3  /* a sphere: soft shadows */
} RtLightType;
typedef struct RtLight {
    RtLightType type;
    RtVec3 v;          /* point, quad, sphere: position (centre); directional: unit direction TOWARD the light */
    RtVec3 color;      /* linear RGB radiance scale: what a surface facing the light receives (no falloff) */
    RtVec3 n;          /* quad: unit normal of the emitting side */
    float w, h;        /* quad: size along its two edges (rt_sample_basis of n) */
    float radius;      /* sphere */
} RtLight;

/* Lights with a surface: sampled per pixel and sample (soft shadows). */
RT_HD int rt_light_is_area(const RtLight *l) { return l->type == RT_LIGHT_QUAD || l->type == RT_LIGHT_SPHERE; }

/* Pinhole camera, the same model for the CPU and GPU paths (camera.h). */
typedef struct RtCamera {
    RtVec3 pos, look, up;
    float fov_y;       /* vertical field of view, degrees */
} RtCamera;

typedef struct RtObject {
    char name[64];     /* OBJ o/g name, PLY/.scene mesh name */
    uint32_t first_tri, tri_count;
} RtObject;

typedef struct RtScene {
    RtVertex *verts;      uint32_t vert_count, vert_cap;
    RtTriangle *tris;     uint32_t tri_count, tri_cap;
    RtMaterial *mats;     uint32_t mat_count, mat_cap;
    RtTexture *texs;      uint32_t tex_count, tex_cap;
    RtLight *lights;      uint32_t light_count, light_cap;
    RtObject *objects;    uint32_t object_count, object_cap;
    RtCamera camera;
    int has_camera;       /* 0: rt_scene_finish frames one on the bounds */
    uint32_t zero_area;   /* degenerate triangles seen (kept, never put in a tree) */
    char *path;           /* file it came from, or "(default)" */
    RtAnim anim;          /* what moves (anim.h); verts of animated nodes are in node space */
    RtVec3 background, ambient; /* linear RGB from the file (AFF b, am) when has_* */
    int has_background, has_ambient;
    RtEnvMap env;         /* the environment map (envmap.h); rgb NULL: none */
} RtScene;

void rt_scene_init(RtScene *s);
void rt_scene_free(RtScene *s);

/* Appends src's vertices, triangles, materials, textures and objects to dst,
 * transforming positions by the row-major 3x4 matrix m (normals by its
 * inverse transpose; m = NULL means identity). material_override >= 0
 * replaces every triangle's material (an index into dst->mats). */
RtStatus rt_scene_append(RtScene *dst, const RtScene *src, const float m[12],
                         int32_t material_override, RtError *err);

/* Growth helpers for loaders: return the new element's index, or -1 (OOM). */
int64_t rt_scene_add_vertex(RtScene *s, RtVertex v);
int64_t rt_scene_add_triangle(RtScene *s, RtTriangle t);
int64_t rt_scene_add_material(RtScene *s, const RtMaterial *m);
int64_t rt_scene_add_light(RtScene *s, RtLight l);
int64_t rt_scene_add_object(RtScene *s, const char *name);
/* Appends t, taking ownership of t.path and t.rgba (freed by rt_scene_free;
 * on -1 they stay the caller's). */
int64_t rt_scene_add_texture(RtScene *s, RtTexture t);
RtMaterial rt_material_default(void);

/* Host bytes a triangle costs through a frame: the scene, its animation,
 * the triangle arrays, the kd-tree and its build. Measured: a CPU frame's
 * peak RSS grows 313 bytes a triangle with runners (0.3M-1.3M triangles)
 * and 316 with a wave grid (0.25M-2M), on top of a fixed ~30 MB. */
#define RT_HOST_BYTES_PER_TRI 320u
/* Before a generator adds n items of `what` (e.g. "runners"), add_tris
 * triangles in all: refuses with RT_ERR_OOM, and a message with the numbers
 * (triangles, bytes needed, bytes available and why, how many items fit),
 * when the scene with them would need more host memory than the process
 * may still have (rt_host_memory_available) at RT_HOST_BYTES_PER_TRI, or
 * would pass 2^31 triangles. A line in a file must not get the process
 * killed by the kernel's OOM killer. */
RtStatus rt_scene_check_host_memory(const RtScene *s, uint64_t n, const char *what, uint64_t add_tris,
                                    RtError *err);

/* After loading: checks for emptiness, computes missing normals (smooth),
 * counts zero-area triangles, and frames a camera and adds a default light
 * when the file had none. */
RtStatus rt_scene_finish(RtScene *s, RtError *err);

RtAabb rt_scene_bounds(const RtScene *s);

/* Flattens the (animated) scene into the tracer's triangle arrays: 3 float4
 * vertices and 3 Woop rows per triangle. Degenerate triangles get zero Woop
 * rows (never hit) and are reported in *degenerate. Caller frees with
 * rt_tri_arrays_free. */
RtStatus rt_tri_arrays_make(const RtScene *s, RtTriArrays *out, uint32_t *degenerate);
void rt_tri_arrays_free(RtTriArrays *a);
/* Per frame: refills out (zeroed, or from an earlier make/update) from the
 * scene's current vertices, reusing its memory while the triangle count
 * stays the same. */
RtStatus rt_tri_arrays_update(const RtScene *s, RtTriArrays *out, uint32_t *degenerate);

/* ---- animation (anim.h): the scene at one moment ------------------------ */
/* A read-only view of s at time t: `view` is a shallow copy of s whose
 * verts (world space, normals renormalised), lights and camera are this
 * moment's; every other array is shared with s (do not free view). Hidden
 * subtrees (visibility channel) collapse to zero-area triangles. Reuses its
 * own arrays between calls: zero it before the first call, free with
 * rt_scene_frame_free. For a static scene view.verts == s->verts. */
typedef struct RtSceneFrame {
    RtScene view;
    float t;
    RtVertex *verts;  uint32_t vert_cap;
    RtLight *lights;  uint32_t light_cap;
    float *world;     uint32_t world_cap;   /* node matrices, 12 floats each */
    uint8_t *visible;                       /* per node */
    float *joints;    uint32_t joint_cap;   /* joint matrices, 12 floats each (joint_cap in floats) */
} RtSceneFrame;
RtStatus rt_scene_frame_at(const RtScene *s, float t, RtSceneFrame *f, RtError *err);
void rt_scene_frame_free(RtSceneFrame *f);
/* The animation's time range: [anim.t_start, anim.t_end] when given (AFF
 * `a`), else [0, 0] (static) or [0, RT_ANIM_DEFAULT_PERIOD] for procedural
 * motion, which the viewer loops. */
#define RT_ANIM_DEFAULT_PERIOD 10.0f
void rt_scene_time_range(const RtScene *s, float *t0, float *t1);

/* The built-in default scene (no file needed): a project-made room with
 * spheres, a mirror and a checker texture, camera and lights included. */
RtStatus rt_scene_make_default(RtScene *s, RtError *err);

#ifdef __cplusplus
}
#endif
#endif
