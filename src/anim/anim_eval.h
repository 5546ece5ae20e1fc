/* anim_eval.h — the per-vertex arithmetic of the animate stage (anim.h step
 * 2), written once for the host (scene_frame.c) and the device
 * (cuda/anim/anim_gpu.cu): morph, wave, skin, node transform. The GPU path is checked
 * against the CPU one (tests/test_gpu_anim.c), so both must run these very
 * formulas; they differ only where nvcc contracts a*b+c into an FMA and in
 * the last ulps of sinf/cosf (agreement to ~1e-6 relative).
 *
 * Order per vertex: base (node-space) vertex -> morph (if in a morph's
 * range) -> deform (if in a deform's range) -> skin (a skinned vertex: the
 * blend of its joint matrices, to world space) or else node world matrix. */
#ifndef RT_ANIM_EVAL_H
#define RT_ANIM_EVAL_H

#include "anim/anim.h"

/* The node of vertex i. vert_node may be shorter than the scene's vertex
 * array (vertices added after the last rt_anim_set_vert_node are static). */
RT_HD uint32_t rt_anim_vert_node_of(const uint32_t *vert_node, uint32_t vert_node_len, uint32_t i)
{
    return vert_node && i < vert_node_len ? vert_node[i] : RT_ANIM_STATIC;
}

/* ---- morph: segment lookup (once per morph, host) + per-vertex lerp ---- */

/* The key pair and weight at t (aff.md 3.9): key 0 up to times[0], the last
 * key from times[n-1] on, else the first j with times[j] <= t < times[j+1]
 * and s = (t - times[j]) / (times[j+1] - times[j]). *k1 == *k0 when clamped. */
RT_HD void rt_anim_morph_segment(const float *times, uint32_t n, float t, uint32_t *k0, uint32_t *k1,
                                 float *s)
{
    *k0 = *k1 = 0;
    *s = 0.0f;
    if (n == 0 || t <= times[0]) return;
    if (t >= times[n - 1]) {
        *k0 = *k1 = n - 1;
        return;
    }
    for (uint32_t j = 0; j + 1 < n; j++)
        if (times[j] <= t && t < times[j + 1]) {
            float d = times[j + 1] - times[j];
            *k0 = j;
            *k1 = j + 1;
            *s = d > 0.0f ? (t - times[j]) / d : 0.0f;
            return;
        }
}

/* Linear blend of two poses; the normal is renormalised (a zero blend stays
 * zero: rt_scene_finish's smooth normals are not recomputed per frame). */
RT_HD void rt_anim_morph_vertex(RtVec3 p0, RtVec3 n0, RtVec3 p1, RtVec3 n1, float s, RtVec3 *p,
                                RtVec3 *n)
{
    *p = v3_add(p0, v3_scale(v3_sub(p1, p0), s));
    *n = v3_norm(v3_add(n0, v3_scale(v3_sub(n1, n0), s)));
}

/* ---- wave deform ------------------------------------------------------- */

/* y += A sin(phase), phase = 2 pi (dot(xz, dir) / wavelength - speed t);
 * dir is used as given (loaders normalise it). The surface map
 * (x, y, z) -> (x, y + f(x, z), z) has Jacobian J with J^-T n =
 * (nx - fx ny, ny, nz - fz ny), fx = A cos(phase) 2 pi dir_x / wavelength:
 * exact for any base normal, not only for a flat y-up sheet. */
RT_HD void rt_anim_wave(const RtAnimDeform *d, float t, RtVec3 *p, RtVec3 *n)
{
    if (!(d->wavelength != 0.0f)) return;
    const float two_pi = 6.28318530717958647692f;
    float k = two_pi / d->wavelength;
    float phase = k * (p->x * d->dir_x + p->z * d->dir_z) - two_pi * d->speed * t;
    float a = d->amplitude * sinf(phase), da = d->amplitude * cosf(phase) * k;
    float fx = da * d->dir_x, fz = da * d->dir_z;
    p->y += a;
    *n = v3_norm(v3(n->x - fx * n->y, n->y, n->z - fz * n->y));
}

/* ---- node transform (row-major 3x4, primitives.h) ----------------------- */

RT_HD RtVec3 rt_anim_xform_point(const float *m, RtVec3 p)
{
    return v3(m[0] * p.x + m[1] * p.y + m[2] * p.z + m[3], m[4] * p.x + m[5] * p.y + m[6] * p.z + m[7],
              m[8] * p.x + m[9] * p.y + m[10] * p.z + m[11]);
}

/* As rt_mat34_normal: det * inverse transpose of the linear part (rows of
 * det * inverse are c1 x c2, c2 x c0, c0 x c1), sign restored for mirrors,
 * renormalised; a zero normal stays zero. */
RT_HD RtVec3 rt_anim_xform_normal(const float *m, RtVec3 n)
{
    RtVec3 c0 = v3(m[0], m[4], m[8]), c1 = v3(m[1], m[5], m[9]), c2 = v3(m[2], m[6], m[10]);
    RtVec3 x01 = v3_cross(c0, c1);
    RtVec3 r = v3_add(v3_add(v3_scale(v3_cross(c1, c2), n.x), v3_scale(v3_cross(c2, c0), n.y)),
                      v3_scale(x01, n.z));
    if (v3_dot(x01, c2) < 0.0f) r = v3_scale(r, -1.0f); /* det = (c0 x c1) . c2 */
    return v3_norm(r);
}

/* ---- linear blend skinning ---------------------------------------------- */

/* The skin entry of vertex i, or NULL (unskinned); skin may be shorter
 * than the vertex array, as vert_node. */
RT_HD const RtAnimSkinVert *rt_anim_skin_of(const RtAnimSkinVert *skin, uint32_t skin_len, uint32_t i)
{
    return skin && i < skin_len ? &skin[i] : NULL;
}

/* Linear blend skinning (Magnenat-Thalmann et al. 1988; glTF 2.0 "Skins"):
 * M = sum_k w_k J_k / sum_k w_k over the vertex's joints (joint_mats: this
 * frame's world(node) * inv_bind, 12 floats each); p' = M p (= sum_k w_k J_k p,
 * the blend is linear), n' by M's inverse transpose as a node matrix
 * (exact for scaled joints; for rigid ones it equals sum_k w_k R_k n,
 * renormalised). Weights are renormalised here so that a file whose
 * weights do not sum to 1 still gives an affine blend. Returns 0, leaving
 * p and n alone, when the vertex has no positive weight on a valid joint
 * (it is not skinned: its node applies). */
RT_HD int rt_anim_skin_vertex(const RtAnimSkinVert *sv, const float *joint_mats, uint32_t joint_count, RtVec3 *p,
                              RtVec3 *n)
{
    float m[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    float sum = 0.0f;
    for (int k = 0; k < RT_SKIN_WEIGHTS; k++) {
        float w = sv->weight[k];
        if (!(w > 0.0f) || sv->joint[k] >= joint_count) continue;
        const float *j = &joint_mats[12 * (size_t)sv->joint[k]];
        for (int e = 0; e < 12; e++) m[e] += w * j[e];
        sum += w;
    }
    if (!(sum > 0.0f)) return 0;
    float inv = 1.0f / sum;
    for (int e = 0; e < 12; e++) m[e] *= inv;
    *p = rt_anim_xform_point(m, *p);
    *n = rt_anim_xform_normal(m, *n);
    return 1;
}

/* A vertex of a hidden node collapses onto the node's origin: its triangles
 * get zero area (never hit, never in a tree) and stay inside the scene's
 * bounds, so the tree's root box does not grow. */
RT_HD RtVec3 rt_anim_hidden_point(const float *m) { return v3(m[3], m[7], m[11]); }

#endif
