/* anim.c — the animation model of anim.h: growth helpers, track matrices and
 * step 1 of the evaluation (node world matrices and visibility). The spline
 * channels themselves are kbspline.c; per-vertex work is scene_frame.c (CPU)
 * and cuda/anim/anim_gpu.cu (GPU). */
#include "anim/anim.h"

#include "core/mat34.h"

#include <stdlib.h>
#include <string.h>

void rt_anim_init(RtAnim *a)
{
    memset(a, 0, sizeof *a);
    a->camera_track = -1;
    a->clip = -1;
}

static void channel_free(RtKbChannel *c)
{
    free(c->keys);
    c->keys = NULL;
    c->count = 0;
}

void rt_anim_free(RtAnim *a)
{
    for (uint32_t i = 0; i < a->track_count; i++) {
        channel_free(&a->tracks[i].transl);
        channel_free(&a->tracks[i].rot);
        channel_free(&a->tracks[i].scale);
        channel_free(&a->tracks[i].visibility);
    }
    for (uint32_t i = 0; i < a->morph_count; i++) {
        free(a->morphs[i].times);
        free(a->morphs[i].pos);
        free(a->morphs[i].nrm);
    }
    free(a->tracks);
    free(a->nodes);
    free(a->vert_node);
    free(a->morphs);
    free(a->deforms);
    free(a->joints);
    free(a->skin);
    free(a->light_track);
    rt_anim_init(a);
}

int rt_anim_is_dynamic(const RtAnim *a)
{
    if (a->morph_count || a->deform_count || a->camera_track >= 0) return 1;
    for (uint32_t i = 0; i < a->node_count; i++)
        if (a->nodes[i].kind != RT_NODE_STATIC) return 1;
    if (a->light_track)
        for (uint32_t i = 0; i < a->light_track_cap; i++)
            if (a->light_track[i] >= 0) return 1;
    return 0;
}

int rt_anim_moves_verts(const RtAnim *a)
{
    return a->morph_count || a->deform_count || (a->vert_node && a->node_count) || (a->skin && a->joint_count);
}

/* ---- growth ------------------------------------------------------------------ */

/* Room for one more element; its index, or -1 (OOM, or 2^31 elements). */
static int64_t grow(void **arr, uint32_t *count, uint32_t *cap, size_t elem)
{
    if (*count >= (1u << 31)) return -1;
    size_t c = *cap;
    if (!rt_grow_array(arr, &c, (size_t)*count + 1, elem)) return -1;
    *cap = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
    return (*count)++;
}
#define GROW(a, arr, cnt, cap) grow((void **)&(a)->arr, &(a)->cnt, &(a)->cap, sizeof *(a)->arr)

int64_t rt_anim_add_track(RtAnim *a, const RtAnimTrack *t)
{
    int64_t i = GROW(a, tracks, track_count, track_cap);
    if (i >= 0) a->tracks[i] = *t;
    return i;
}

int64_t rt_anim_add_node(RtAnim *a, const RtAnimNode *n)
{
    int64_t i = GROW(a, nodes, node_count, node_cap);
    if (i >= 0) a->nodes[i] = *n;
    return i;
}

int64_t rt_anim_add_morph(RtAnim *a, const RtAnimMorph *m)
{
    int64_t i = GROW(a, morphs, morph_count, morph_cap);
    if (i >= 0) a->morphs[i] = *m;
    return i;
}

int64_t rt_anim_add_deform(RtAnim *a, const RtAnimDeform *d)
{
    int64_t i = GROW(a, deforms, deform_count, deform_cap);
    if (i >= 0) a->deforms[i] = *d;
    return i;
}

int32_t rt_anim_find_track(const RtAnim *a, const char *name)
{
    /* the LAST block of a name wins, as the BART reference's lookup (aff.md 3.15) */
    for (uint32_t i = a->track_count; i-- > 0;)
        if (!strcmp(a->tracks[i].name, name)) return (int32_t)i;
    return -1;
}

RtStatus rt_anim_set_vert_node(RtAnim *a, uint32_t vert_count, uint32_t first, uint32_t count,
                               uint32_t node, RtError *err)
{
    if (first > vert_count || count > vert_count - first)
        return rt_fail(err, RT_ERR_ARG, "ANIM: vertices %u..%u out of range (%u vertices)", first,
                       first + count, vert_count);
    if (node != RT_ANIM_STATIC && node >= a->node_count)
        return rt_fail(err, RT_ERR_ARG, "ANIM: node %u out of range (%u nodes)", node, a->node_count);
    if (!a->vert_node && node == RT_ANIM_STATIC) return RT_OK; /* NULL already means all static */
    /* Every entry up to vert_node_cap is valid (new ones static), so the
     * array can be shorter than the scene's vertices and still be read. */
    if (a->vert_node_cap < vert_count) {
        size_t cap = a->vert_node_cap, old = cap;
        if (!rt_grow_array((void **)&a->vert_node, &cap, vert_count, sizeof *a->vert_node))
            return rt_fail(err, RT_ERR_OOM, "ANIM: out of memory (%u vertex nodes)", vert_count);
        for (size_t i = old; i < cap; i++) a->vert_node[i] = RT_ANIM_STATIC;
        a->vert_node_cap = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
    }
    for (uint32_t i = 0; i < count; i++) a->vert_node[first + i] = node;
    return RT_OK;
}

int64_t rt_anim_add_joint(RtAnim *a, const RtAnimJoint *j)
{
    if (j->node >= a->node_count) return -1;
    int64_t i = GROW(a, joints, joint_count, joint_cap);
    if (i >= 0) a->joints[i] = *j;
    return i;
}

RtStatus rt_anim_set_vert_skin(RtAnim *a, uint32_t vert_count, uint32_t first, uint32_t count,
                               const RtAnimSkinVert *sv, RtError *err)
{
    if (first > vert_count || count > vert_count - first)
        return rt_fail(err, RT_ERR_ARG, "ANIM: skinned vertices %u..%u out of range (%u vertices)", first,
                       first + count, vert_count);
    for (uint32_t i = 0; i < count; i++)
        for (int k = 0; k < RT_SKIN_WEIGHTS; k++)
            if (sv[i].weight[k] != 0.0f && !(sv[i].weight[k] > 0.0f && sv[i].joint[k] < a->joint_count))
                return rt_fail(err, RT_ERR_ARG, "ANIM: vertex %u: joint %u weight %g (%u joints; weights >= 0)",
                               first + i, sv[i].joint[k], sv[i].weight[k], a->joint_count);
    /* as vert_node: every entry up to skin_cap is valid, new ones unskinned */
    if (a->skin_cap < vert_count) {
        size_t cap = a->skin_cap, old = cap;
        if (!rt_grow_array((void **)&a->skin, &cap, vert_count, sizeof *a->skin))
            return rt_fail(err, RT_ERR_OOM, "ANIM: out of memory (%u skinned vertices)", vert_count);
        memset(a->skin + old, 0, (cap - old) * sizeof *a->skin);
        a->skin_cap = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
    }
    memcpy(a->skin + first, sv, (size_t)count * sizeof *sv);
    return RT_OK;
}

/* ---- step 1: node matrices ------------------------------------------------- */

void rt_anim_track_matrix(const RtAnimTrack *tr, float t, float m[12])
{
    /* M = T R S (aff.md 4): M[r][c] = R[r][c] S[c], M[r][3] = T[r] */
    float r[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    RtVec3 s = v3(1, 1, 1), tr3 = v3(0, 0, 0);
    if (tr->rot.count) rt_kb_eval_rot(&tr->rot, t, r);
    if (tr->scale.count) s = rt_kb_eval_vec3(&tr->scale, t);
    if (tr->transl.count) tr3 = rt_kb_eval_vec3(&tr->transl, t);
    float sc[3] = {s.x, s.y, s.z}, tt[3] = {tr3.x, tr3.y, tr3.z};
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) m[4 * i + j] = r[3 * i + j] * sc[j];
        m[4 * i + 3] = tt[i];
    }
}

static const float kDegPerRad = 57.29577951308232f;

/* The node's local matrix at t and its own visibility (anim.h's kinds). */
static int node_local(const RtAnim *a, const RtAnimNode *n, float t, float local[12])
{
    float x[12];
    int visible = 1;
    rt_mat34_identity(x);
    switch (n->kind) {
    case RT_NODE_TRACK:
        if (n->track >= 0 && (uint32_t)n->track < a->track_count) {
            const RtAnimTrack *tr = &a->tracks[n->track];
            rt_anim_track_matrix(tr, t, x);
            if (tr->visibility.count) visible = rt_kb_eval_visible(&tr->visibility, t);
        }
        rt_mat34_mul(local, x, n->m);
        break;
    case RT_NODE_SPIN: {
        /* about the pivot: T(p) R T(-p), applied before the static part m */
        RtVec3 pivot = v3(n->p[5], n->p[6], n->p[7]);
        rt_mat34_translate(x, v3_scale(pivot, -1.0f));
        rt_mat34_rotate(x, v3(n->p[0], n->p[1], n->p[2]), n->p[3] * t + n->p[4]);
        rt_mat34_translate(x, pivot);
        rt_mat34_mul(local, n->m, x);
        break;
    }
    case RT_NODE_ORBIT: {
        float ang = (n->p[4] * t + n->p[5]) / kDegPerRad;
        rt_mat34_translate(x, v3(n->p[0] + n->p[3] * cosf(ang), n->p[1], n->p[2] + n->p[3] * sinf(ang)));
        rt_mat34_mul(local, x, n->m);
        break;
    }
    case RT_NODE_BOUNCE: {
        float h = n->p[1] != 0.0f ? n->p[0] * fabsf(sinf(3.14159265358979324f * t / n->p[1] + n->p[2])) : 0.0f;
        rt_mat34_translate(x, v3(0.0f, h, 0.0f));
        rt_mat34_mul(local, x, n->m);
        break;
    }
    default: /* RT_NODE_STATIC and unknown kinds: the static part alone */
        memcpy(local, n->m, sizeof n->m);
        break;
    }
    return visible;
}

void rt_anim_eval_nodes(const RtAnim *a, float t, float *world, uint8_t *visible)
{
    for (uint32_t i = 0; i < a->node_count; i++) {
        const RtAnimNode *n = &a->nodes[i];
        float local[12];
        int vis = node_local(a, n, t, local);
        /* parents come first (anim.h); a forward or self reference is a root */
        if (n->parent >= 0 && (uint32_t)n->parent < i) {
            rt_mat34_mul(&world[12 * i], &world[12 * n->parent], local);
            vis = vis && visible[n->parent];
        } else {
            memcpy(&world[12 * i], local, sizeof local);
        }
        visible[i] = (uint8_t)(vis != 0);
    }
}

void rt_anim_eval_joints(const RtAnim *a, const float *world, float *joint_mats)
{
    for (uint32_t j = 0; j < a->joint_count; j++) {
        const RtAnimJoint *jt = &a->joints[j];
        if (jt->node < a->node_count) rt_mat34_mul(&joint_mats[12 * (size_t)j], &world[12 * (size_t)jt->node], jt->inv_bind);
        else rt_mat34_identity(&joint_mats[12 * (size_t)j]);
    }
}
