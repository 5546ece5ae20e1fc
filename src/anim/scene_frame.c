/* scene_frame.c — the scene at one moment on the CPU (anim.h's two steps):
 * node and joint matrices, then every animated vertex morphed / deformed in
 * its node's space and moved to world space (skinned by its joints, or by
 * its node); the camera and lights of that moment. The
 * GPU's animate stage (cuda/anim/anim_gpu.cu) runs the same per-vertex formulas
 * (anim_eval.h) and is tested against this one. */
#include "scene/scene.h"

#include "anim/anim_eval.h"

#include <stdlib.h>
#include <string.h>

void rt_scene_time_range(const RtScene *s, float *t0, float *t1)
{
    const RtAnim *a = &s->anim;
    if (a->t_end > a->t_start) {
        *t0 = a->t_start;
        *t1 = a->t_end;
    } else {
        *t0 = 0.0f;
        *t1 = rt_anim_is_dynamic(a) ? RT_ANIM_DEFAULT_PERIOD : 0.0f;
    }
}

/* Grows a frame array to n elements (never shrinks); 0 on OOM. */
static int reserve(void **arr, uint32_t *cap, size_t n, size_t elem)
{
    if (*arr && *cap >= n) return 1;
    size_t c = *cap;
    if (!rt_grow_array(arr, &c, n ? n : 1, elem)) return 0;
    *cap = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
    return 1;
}

/* aff.md 7: eye from the camera track's transl, orientation from its rot
 * (the camera looks down its local -z with +y up); a missing channel keeps
 * the file's static camera for that part. */
static void animate_camera(const RtScene *s, float t, RtCamera *cam)
{
    const RtAnim *a = &s->anim;
    if (a->camera_track < 0 || (uint32_t)a->camera_track >= a->track_count) return;
    const RtAnimTrack *tr = &a->tracks[a->camera_track];
    if (tr->transl.count) cam->pos = rt_kb_eval_vec3(&tr->transl, t);
    if (tr->rot.count) {
        float m[12];
        rt_anim_track_matrix(tr, t, m);
        RtVec3 dir = v3_norm(v3(-m[2], -m[6], -m[10]));
        cam->look = v3_add(cam->pos, dir);
        cam->up = v3_norm(v3(m[1], m[5], m[9]));
    } /* else `v at` and `v up` stay, even when the eye moves (aff.md 7) */
}

/* Morphs, then deforms, in node space; then the skin (joint matrices) or
 * the node's world matrix. */
static void animate_verts(const RtScene *s, float t, RtSceneFrame *f)
{
    const RtAnim *a = &s->anim;
    RtVertex *v = f->verts;
    memcpy(v, s->verts, (size_t)s->vert_count * sizeof *v);
    for (uint32_t i = 0; i < a->morph_count; i++) {
        const RtAnimMorph *mo = &a->morphs[i];
        if (!mo->key_count || mo->first_vert >= s->vert_count) continue;
        uint32_t k0, k1, n = mo->vert_count;
        float w;
        rt_anim_morph_segment(mo->times, mo->key_count, t, &k0, &k1, &w);
        if (n > s->vert_count - mo->first_vert) n = s->vert_count - mo->first_vert;
        const RtVec3 *p0 = &mo->pos[(size_t)k0 * mo->vert_count], *p1 = &mo->pos[(size_t)k1 * mo->vert_count];
        const RtVec3 *n0 = &mo->nrm[(size_t)k0 * mo->vert_count], *n1 = &mo->nrm[(size_t)k1 * mo->vert_count];
        for (uint32_t j = 0; j < n; j++)
            rt_anim_morph_vertex(p0[j], n0[j], p1[j], n1[j], w, &v[mo->first_vert + j].p,
                                 &v[mo->first_vert + j].n);
    }
    for (uint32_t i = 0; i < a->deform_count; i++) {
        const RtAnimDeform *d = &a->deforms[i];
        if (d->kind != RT_DEFORM_WAVE || d->first_vert >= s->vert_count) continue;
        uint32_t n = d->vert_count;
        if (n > s->vert_count - d->first_vert) n = s->vert_count - d->first_vert;
        for (uint32_t j = 0; j < n; j++) rt_anim_wave(d, t, &v[d->first_vert + j].p, &v[d->first_vert + j].n);
    }
    if (!a->node_count) return;
    for (uint32_t i = 0; i < s->vert_count; i++) {
        const RtAnimSkinVert *sv = rt_anim_skin_of(a->skin, a->skin_cap, i);
        if (sv && rt_anim_skin_vertex(sv, f->joints, a->joint_count, &v[i].p, &v[i].n)) continue;
        uint32_t node = rt_anim_vert_node_of(a->vert_node, a->vert_node_cap, i);
        if (node >= a->node_count) continue; /* static (or a bad index: left where it is) */
        const float *m = &f->world[12 * (size_t)node];
        v[i].p = f->visible[node] ? rt_anim_xform_point(m, v[i].p) : rt_anim_hidden_point(m);
        v[i].n = rt_anim_xform_normal(m, v[i].n);
    }
}

RtStatus rt_scene_frame_at(const RtScene *s, float t, RtSceneFrame *f, RtError *err)
{
    const RtAnim *a = &s->anim;
    const char *path = s->path ? s->path : "(scene)";
    f->t = t;
    f->view = *s;
    if (a->node_count) {
        /* world and visible share world_cap (in nodes) */
        if (!f->world || f->world_cap < a->node_count) {
            free(f->world);
            free(f->visible);
            f->world = malloc((size_t)a->node_count * 12 * sizeof *f->world);
            f->visible = malloc(a->node_count);
            f->world_cap = f->world && f->visible ? a->node_count : 0;
            if (!f->world_cap) return rt_fail(err, RT_ERR_OOM, "%s: ANIM: out of memory (%u nodes)", path, a->node_count);
        }
        rt_anim_eval_nodes(a, t, f->world, f->visible);
        if (a->joint_count) {
            if (!reserve((void **)&f->joints, &f->joint_cap, (size_t)a->joint_count * 12, sizeof *f->joints))
                return rt_fail(err, RT_ERR_OOM, "%s: ANIM: out of memory (%u joints)", path, a->joint_count);
            rt_anim_eval_joints(a, f->world, f->joints);
        }
    }
    if (rt_anim_moves_verts(a)) {
        if (!reserve((void **)&f->verts, &f->vert_cap, s->vert_count, sizeof *f->verts))
            return rt_fail(err, RT_ERR_OOM, "%s: ANIM: out of memory (%u vertices)", path, s->vert_count);
        animate_verts(s, t, f);
        f->view.verts = f->verts;
        f->view.vert_cap = s->vert_count;
        /* The view's vertices are world space now: its animation must not
         * move them again (rt_scene_bounds, a frame of the view, an upload
         * of it), so it keeps the nodes and tracks but no per-vertex motion. */
        f->view.anim.vert_node = NULL;
        f->view.anim.vert_node_cap = 0;
        f->view.anim.morphs = NULL;
        f->view.anim.morph_count = f->view.anim.morph_cap = 0;
        f->view.anim.deforms = NULL;
        f->view.anim.deform_count = f->view.anim.deform_cap = 0;
        f->view.anim.skin = NULL;
        f->view.anim.skin_cap = 0;
    }
    int lights_move = 0;
    for (uint32_t i = 0; a->light_track && i < s->light_count && i < a->light_track_cap; i++)
        lights_move |= a->light_track[i] >= 0;
    if (lights_move) {
        if (!reserve((void **)&f->lights, &f->light_cap, s->light_count, sizeof *f->lights))
            return rt_fail(err, RT_ERR_OOM, "%s: ANIM: out of memory (lights)", path);
        memcpy(f->lights, s->lights, (size_t)s->light_count * sizeof *f->lights);
        for (uint32_t i = 0; i < s->light_count && i < a->light_track_cap; i++) {
            int32_t k = a->light_track[i];
            /* AFF la: only the transl channel moves a light (aff.md 3.3) */
            if (k >= 0 && (uint32_t)k < a->track_count && a->tracks[k].transl.count &&
                f->lights[i].type != RT_LIGHT_DIRECTIONAL)
                f->lights[i].v = rt_kb_eval_vec3(&a->tracks[k].transl, t);
        }
        f->view.lights = f->lights;
        f->view.light_cap = s->light_count;
    }
    animate_camera(s, t, &f->view.camera);
    return RT_OK;
}

void rt_scene_frame_free(RtSceneFrame *f)
{
    free(f->verts);
    free(f->lights);
    free(f->world);
    free(f->visible);
    free(f->joints);
    memset(f, 0, sizeof *f);
}
