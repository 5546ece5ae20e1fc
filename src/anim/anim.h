/* anim.h — dynamic scenes: what moves, and how to evaluate it at time t.
 * Stage 2 of the per-frame pipeline (load -> ANIMATE -> build -> trace ->
 * display). One model serves every source of motion:
 *   - BART AFF (../shared/formats/aff.md): a hierarchy of static (xs) and
 *     keyframed (x name) transforms, Kochanek-Bartels splines per channel,
 *     tpa vertex-morphing patches, an animated camera and lights (la);
 *   - the .scene format's `animate` statements (spin, orbit, bounce,
 *     keyframes, morph, wave) and the procedural runner/field/deform scenes.
 *
 * The scene's vertices (RtScene.verts) hold each vertex in the LOCAL space
 * of its node; a vertex whose node is RT_ANIM_STATIC is in world space and
 * never moves. Evaluation at t:
 *   1. per node (few, on the CPU): world matrix = parent's world * local(t);
 *      hidden (visibility channel) propagates to the subtree;
 *   2. per vertex (many, on the CPU here or on the GPU in cuda/anim/anim_gpu.h):
 *      local position = morph(t) or deform(t) of the base vertex, then
 *      world = node world matrix * local; normals by the inverse transpose.
 *      A skinned vertex (linear blend skinning: up to 4 joints) is moved by
 *      the blend of its joints' matrices (joint's node world * inverse
 *      bind) instead of its node's.
 * Matrices are row-major 3x4 as in primitives.h. */
#ifndef RT_ANIM_H
#define RT_ANIM_H

#include "core/rt_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- keyframe channels ------------------------------------------------------ */
/* How a channel interpolates between its keys. AFF and the .scene format's
 * `key` lines are Kochanek-Bartels splines (aff.md section 5); glTF's
 * samplers are STEP, LINEAR or CUBICSPLINE (glTF 2.0 "Animations", read
 * from the file by gltf_anim.c); what assimp hands over of other formats is
 * read as LINEAR (docs/animation.md says why). */
typedef enum RtKbInterp {
    RT_KEYS_TCB = 0,   /* KB spline: keys in file order, keys 0 and n-1 only bound the range
                          (aff.md 5.1); rot keys are axis + degrees (kbspline.c) */
    RT_KEYS_STEP,      /* the value of the last key at or before t (anim_keys.h) */
    RT_KEYS_LINEAR,    /* lerp; rotations slerp along the shorter arc (anim_keys.h) */
    RT_KEYS_CUBIC,     /* cubic Hermite through the keys with their in/out tangents (anim_keys.h) */
} RtKbInterp;

typedef struct RtKbKey {
    float t;
    float v[4];                        /* transl/scale: xyz; rot: axis xyz + degrees (TCB) or a
                                          quaternion x y z w (other modes); visibility: v[0] != 0 = visible */
    float tension, continuity, bias;   /* RT_KEYS_TCB */
    float in[4], out[4];               /* RT_KEYS_CUBIC: in- and out-tangent, value units per second
                                          (glTF's a_k and b_k) */
} RtKbKey;

typedef struct RtKbChannel {
    RtKbKey *keys;                     /* TCB: in file order, never sorted (aff.md 5.1); other
                                          modes: strictly increasing times */
    uint32_t count;                    /* 0 = channel absent (identity) */
    int32_t interp;                    /* RtKbInterp; 0 (a zeroed channel) = TCB */
} RtKbChannel;

/* One named keyframe animation (an AFF `k name { }` block, a glTF node's
 * channels). */
typedef struct RtAnimTrack {
    char name[64];
    RtKbChannel transl, rot, scale, visibility;
} RtAnimTrack;

/* A channel at t. TCB channels per aff.md 5.1-5.5 (kbspline.c):
 * transl/scale cubic Hermite (count >= 4), rot quaternion squad; the other
 * modes through anim_keys.h (any count >= 1). rot -> row-major 3x3 in r[9];
 * visibility: a step function, 1 before the first key, whatever interp. */
RtVec3 rt_kb_eval_vec3(const RtKbChannel *c, float t);
void rt_kb_eval_rot(const RtKbChannel *c, float t, float r[9]);
/* The rotation at t as angle (degrees) and unit axis, as the reference
 * converts it (aff.md 5.4 "Output"). */
void rt_kb_eval_rot_axis_angle(const RtKbChannel *c, float t, RtVec3 *axis, float *degrees);
int rt_kb_eval_visible(const RtKbChannel *c, float t);
/* M(t) = T(t) R(t) S(t) of a track (missing channels are identity). */
void rt_anim_track_matrix(const RtAnimTrack *tr, float t, float m[12]);

/* ---- transform nodes ------------------------------------------------------ */
typedef enum RtAnimNodeKind {
    RT_NODE_STATIC = 0,  /* local = m */
    RT_NODE_TRACK,       /* local = track(t) * m  (m usually identity); track < 0 = identity */
    RT_NODE_SPIN,        /* local = rotate(axis p[0..2], p[3] deg/s * t + p[4] deg) about pivot p[5..7], then m */
    RT_NODE_ORBIT,       /* local = translate(center p[0..2] + radius p[3] * (cos, 0, sin)(p[4] deg/s * t + p[5] deg)) * m */
    RT_NODE_BOUNCE,      /* local = translate(0, p[0] * |sin(pi * t / p[1] + p[2])|, 0) * m  (height, period s, phase rad) */
} RtAnimNodeKind;

typedef struct RtAnimNode {
    int32_t parent;      /* index of an EARLIER node, or -1 for the root */
    int32_t kind;        /* RtAnimNodeKind */
    int32_t track;       /* RT_NODE_TRACK: index into RtAnim.tracks, -1 = identity */
    float m[12];         /* static part (see kind) */
    float p[8];          /* helper parameters (see kind) */
} RtAnimNode;
#define RT_ANIM_STATIC 0xffffffffu

/* ---- per-vertex motion in local space ------------------------------------- */
/* Vertex morphing (AFF tpa; .scene morph between meshes): key_count poses of
 * vert_count consecutive vertices starting at first_vert; piecewise linear in
 * t, clamped outside [times[0], times[key_count-1]], normals renormalised. */
typedef struct RtAnimMorph {
    uint32_t first_vert, vert_count, key_count;
    float *times;        /* key_count, non-decreasing */
    RtVec3 *pos, *nrm;   /* key_count * vert_count each, key-major */
} RtAnimMorph;

/* Procedural deformation of a vertex range, before the node transform.
 * RT_DEFORM_WAVE: y += amplitude * sin(2 pi (dot(xz, dir) / wavelength - speed * t));
 * normals from the analytic derivative. */
typedef enum { RT_DEFORM_WAVE = 0 } RtAnimDeformKind;
typedef struct RtAnimDeform {
    uint32_t first_vert, vert_count;
    int32_t kind;
    float amplitude, wavelength, speed, dir_x, dir_z;
} RtAnimDeform;

/* Linear blend skinning (glTF skins, assimp bones). A joint is a node with
 * the inverse of its world matrix at the bind pose; its matrix at t is
 * world(node, t) * inv_bind, which maps the vertex's bind-pose (mesh)
 * space to world space. A skinned vertex is sum_k w_k J_k p over its up to
 * RT_SKIN_WEIGHTS joints (weights renormalised to sum 1); it is world space
 * afterwards, so its own node (vert_node) does not apply. A vertex whose
 * weights are all 0 is not skinned and follows its node as usual. */
#define RT_SKIN_WEIGHTS 4
typedef struct RtAnimJoint {
    uint32_t node;       /* index into RtAnim.nodes */
    float inv_bind[12];  /* inverse bind matrix: bind-pose mesh space -> joint space */
} RtAnimJoint;
typedef struct RtAnimSkinVert {
    uint32_t joint[RT_SKIN_WEIGHTS];  /* indices into RtAnim.joints */
    float weight[RT_SKIN_WEIGHTS];    /* >= 0; all 0 = not skinned */
} RtAnimSkinVert;

/* ---- the whole animation of a scene ---------------------------------------- */
typedef struct RtAnim {
    RtAnimTrack *tracks;   uint32_t track_count, track_cap;
    RtAnimNode *nodes;     uint32_t node_count, node_cap;
    uint32_t *vert_node;   /* per scene vertex, RT_ANIM_STATIC or a node; NULL = all static */
    uint32_t vert_node_cap;
    RtAnimMorph *morphs;   uint32_t morph_count, morph_cap;
    RtAnimDeform *deforms; uint32_t deform_count, deform_cap;
    RtAnimJoint *joints;   uint32_t joint_count, joint_cap;
    RtAnimSkinVert *skin;  /* per scene vertex up to skin_cap (later ones unskinned); NULL = none */
    uint32_t skin_cap;
    int32_t camera_track;  /* -1 or the track driving the camera (aff.md section 7) */
    int32_t *light_track;  /* per scene light, -1 = static; NULL = all static (AFF la) */
    uint32_t light_track_cap;
    float t_start, t_end;  /* animation range, seconds (AFF `a`); t_end <= t_start: none given */
    int frames;            /* AFF `a`'s frame count; 0 = none given */
    /* The clip played, of a file with animation clips (assimp formats:
     * --clip and the viewer's clip key pick one per load) */
    uint32_t clip_count;   /* clips in the file; 0 = none (or a format without clips) */
    int32_t clip;          /* the index of the clip played, -1 = none */
    char clip_name[64];    /* its name ("" when unnamed) */
} RtAnim;

void rt_anim_init(RtAnim *a);
void rt_anim_free(RtAnim *a);
/* 1 when anything moves: nodes with a non-static kind, morphs, deforms, an
 * animated camera or light. */
int rt_anim_is_dynamic(const RtAnim *a);
/* 1 when the scene's vertices are not world space as stored: morphs,
 * deforms, vertices in nodes or skinned vertices (rt_scene_frame_at
 * computes them). */
int rt_anim_moves_verts(const RtAnim *a);

/* Growth helpers (index or -1 on OOM). add_track takes ownership of the
 * channel key arrays. */
int64_t rt_anim_add_track(RtAnim *a, const RtAnimTrack *t);
int64_t rt_anim_add_node(RtAnim *a, const RtAnimNode *n);
int64_t rt_anim_add_morph(RtAnim *a, const RtAnimMorph *m);   /* takes ownership of arrays */
int64_t rt_anim_add_deform(RtAnim *a, const RtAnimDeform *d);
int32_t rt_anim_find_track(const RtAnim *a, const char *name); /* LAST one of that name, or -1 */
/* Assigns vertices [first, first+count) to node (grows vert_node to
 * vert_count entries, new ones RT_ANIM_STATIC). */
RtStatus rt_anim_set_vert_node(RtAnim *a, uint32_t vert_count, uint32_t first, uint32_t count,
                               uint32_t node, RtError *err);
/* A joint (index or -1 on OOM); its node must exist. */
int64_t rt_anim_add_joint(RtAnim *a, const RtAnimJoint *j);
/* Skins vertices [first, first+count) with sv[0..count) (grows skin to
 * vert_count entries, new ones unskinned); every joint index of a non-zero
 * weight must be below joint_count. */
RtStatus rt_anim_set_vert_skin(RtAnim *a, uint32_t vert_count, uint32_t first, uint32_t count,
                               const RtAnimSkinVert *sv, RtError *err);

/* Step 1: world matrices (node_count * 12 floats) and visibility (node_count). */
void rt_anim_eval_nodes(const RtAnim *a, float t, float *world, uint8_t *visible);
/* The joint matrices (joint_count * 12 floats) from step 1's world
 * matrices: world(node) * inv_bind per joint (few: host, CPU and GPU path). */
void rt_anim_eval_joints(const RtAnim *a, const float *world, float *joint_mats);

#ifdef __cplusplus
}
#endif
#endif
