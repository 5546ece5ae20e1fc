/* scene_default.c — the built-in default scene, so `make run` and a bare
 * `./rtviewer` need no file: a room with a procedural checker floor, a mirror
 * sphere, a glass sphere (whose caustic photon mapping shows on the floor), a
 * diffuse sphere, a box and two lights. Made by the project. It
 * moves (anim.h): the mirror sphere bounces, the blue sphere circles, the
 * box spins; at t = 0 every motion is exactly the identity, so the scene at
 * t = 0 is the static one the reference images (tests/ref) show. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scene/primitives.h"
#include "scene/scene.h"
#include "scene/texture.h"

/* Checker texture generated here (sRGB bytes, like a loaded image; its mip
 * levels made as a loaded one's). */
static int32_t add_checker(RtScene *s, int size, int cells)
{
    uint8_t *rgba = malloc((size_t)size * size * 4);
    if (!rgba) return -1;
    for (int y = 0; y < size; y++)
        for (int x = 0; x < size; x++) {
            int on = ((x * cells / size) + (y * cells / size)) & 1;
            uint8_t *p = &rgba[4 * ((size_t)y * size + x)];
            p[0] = on ? 230 : 60;
            p[1] = on ? 225 : 62;
            p[2] = on ? 210 : 70;
            p[3] = 255;
        }
    int32_t i; /* the caller reports a failure as out of memory */
    return rt_texture_add_rgba(s, "(checker)", size, size, rgba, &i, NULL) == RT_OK ? i : -1;
}

static int32_t add_mat(RtScene *s, const char *name, RtVec3 kd, float reflect, int32_t tex)
{
    RtMaterial m = rt_material_default();
    snprintf(m.name, sizeof m.name, "%s", name);
    m.kd = kd;
    m.reflect = reflect;
    m.ks = v3(0.3f, 0.3f, 0.3f);
    m.ns = 40.0f;
    m.map_kd = tex;
    return (int32_t)rt_scene_add_material(s, &m);
}

/* One node moving vertices [first, vert_count): a root of the given kind
 * with identity static part. */
static RtStatus animate(RtScene *s, uint32_t first, RtAnimNodeKind kind, const float p[8], RtError *err)
{
    RtAnimNode n;
    memset(&n, 0, sizeof n);
    n.parent = -1;
    n.kind = kind;
    n.track = -1;
    rt_mat34_identity(n.m);
    memcpy(n.p, p, sizeof n.p);
    int64_t k = rt_anim_add_node(&s->anim, &n);
    if (k < 0) return rt_fail(err, RT_ERR_OOM, "(default): SCENE: out of memory");
    return rt_anim_set_vert_node(&s->anim, s->vert_count, first, s->vert_count - first, (uint32_t)k, err);
}

RtStatus rt_scene_make_default(RtScene *s, RtError *err)
{
    rt_scene_init(s);
    s->path = strdup("(default)");
    int32_t checker = add_checker(s, 256, 16);
    int32_t floor = add_mat(s, "floor", v3(1, 1, 1), 0.0f, checker);
    int32_t wall = add_mat(s, "wall", v3(0.75f, 0.72f, 0.68f), 0.0f, -1);
    int32_t red = add_mat(s, "red", v3(0.8f, 0.15f, 0.1f), 0.0f, -1);
    int32_t mirror = add_mat(s, "mirror", v3(0.9f, 0.9f, 0.9f), 0.85f, -1);
    int32_t blue = add_mat(s, "blue", v3(0.15f, 0.3f, 0.8f), 0.1f, -1);
    /* glass as scenes/caustics.scene has it: MTL illum 7, Snell with ni */
    RtMaterial gm = rt_material_default();
    snprintf(gm.name, sizeof gm.name, "glass");
    gm.kd = v3(0.9f, 0.95f, 1.0f);
    gm.ks = v3(1.0f, 1.0f, 1.0f);
    gm.ns = 600.0f;
    gm.ni = 1.5f;
    gm.d = 0.05f;
    gm.illum = 7;
    int32_t glass = (int32_t)rt_scene_add_material(s, &gm);
    if (checker < 0 || floor < 0 || wall < 0 || red < 0 || mirror < 0 || blue < 0 || glass < 0)
        return rt_fail(err, RT_ERR_OOM, "(default): SCENE: out of memory");

    float m[12];
    RtStatus st = RT_OK;
#define PLACE(call)                                                                         \
    do {                                                                                    \
        if (st == RT_OK) st = (call);                                                       \
    } while (0)
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(8, 1, 8));
    PLACE(rt_prim_quad(s, m, floor, "floor", err));
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(8, 1, 4));
    rt_mat34_rotate(m, v3(1, 0, 0), 90.0f);
    rt_mat34_translate(m, v3(0, 4, -8));
    PLACE(rt_prim_quad(s, m, wall, "back wall", err));
    /* Each moving object's vertices stay where the static scene has them
     * (node space = the placed shape) and its node is the identity at t = 0:
     * bounce |sin(0)| = 0, a spin by 0 degrees, an orbit whose centre is set
     * so its offset at phase 90 is exactly zero. Whole bounces, turns and laps
     * per RT_ANIM_DEFAULT_PERIOD (10 s), so the viewer's loop is seamless. */
    uint32_t v0 = s->vert_count;
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(1.5f, 1.5f, 1.5f));
    rt_mat34_translate(m, v3(-2.0f, 1.5f, -1.5f));
    PLACE(rt_prim_sphere(s, m, mirror, 64, "mirror sphere", err));
    const float bounce[8] = {0.8f, 2.0f, 0.0f}; /* height, period s, phase */
    PLACE(animate(s, v0, RT_NODE_BOUNCE, bounce, err));

    v0 = s->vert_count;
    rt_mat34_identity(m);
    rt_mat34_translate(m, v3(2.2f, 1.0f, 0.5f));
    PLACE(rt_prim_sphere(s, m, blue, 48, "blue sphere", err));
    /* a circle of radius 0.9 behind its resting place, one lap per 5 s,
     * counter-clockwise seen from above; the centre cancels the offset at
     * t = 0 in the very float arithmetic the orbit node uses (anim.c) */
    const float r = 0.9f, phase = 90.0f, a0 = phase / 57.29577951308232f;
    const float orbit[8] = {-r * cosf(a0), 0.0f, -r * sinf(a0), r, -72.0f, phase};
    PLACE(animate(s, v0, RT_NODE_ORBIT, orbit, err));

    v0 = s->vert_count;
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(0.8f, 0.8f, 0.8f));
    rt_mat34_rotate(m, v3(0, 1, 0), 30.0f);
    rt_mat34_translate(m, v3(0.3f, 0.8f, 2.0f));
    PLACE(rt_prim_box(s, m, red, "red box", err));
    const float spin[8] = {0, 1, 0, 36.0f, 0.0f, 0.3f, 0.8f, 2.0f}; /* axis, deg/s, phase, pivot */
    PLACE(animate(s, v0, RT_NODE_SPIN, spin, err));

    /* resting on the floor in front of the mirror sphere: the sun and the
     * lamp focus it onto the floor between the two */
    rt_mat34_identity(m);
    rt_mat34_scale(m, v3(0.75f, 0.75f, 0.75f));
    rt_mat34_translate(m, v3(-1.8f, 0.75f, 2.4f));
    PLACE(rt_prim_sphere(s, m, glass, 64, "glass sphere", err));
#undef PLACE
    if (st != RT_OK) return st;

    RtLight sun = {RT_LIGHT_DIRECTIONAL, v3_norm(v3(0.4f, 1.0f, 0.6f)), v3(0.7f, 0.68f, 0.62f)};
    RtLight lamp = {RT_LIGHT_POINT, v3(-3.0f, 6.0f, 4.0f), v3(0.5f, 0.5f, 0.55f)};
    if (rt_scene_add_light(s, sun) < 0 || rt_scene_add_light(s, lamp) < 0)
        return rt_fail(err, RT_ERR_OOM, "(default): SCENE: out of memory");
    s->camera.pos = v3(0.0f, 3.0f, 9.0f);
    s->camera.look = v3(0.0f, 1.2f, 0.0f);
    s->camera.up = v3(0, 1, 0);
    s->camera.fov_y = 55.0f;
    s->has_camera = 1;
    return rt_scene_finish(s, err);
}
