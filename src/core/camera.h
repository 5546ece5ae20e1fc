/* camera.h — the pinhole camera model shared by the CPU renderer and the GPU
 * tracer, so the same --camera gives the same rays on both paths.
 * Pixel (0,0) is the top-left corner of the image; a pixel's ray goes through
 * its centre (px + 0.5, py + 0.5). */
#ifndef RT_CAMERA_H
#define RT_CAMERA_H

#include "scene/scene.h"

typedef struct RtCameraBasis {
    RtVec3 o;        /* eye */
    RtVec3 fwd;      /* unit view direction */
    RtVec3 right;    /* scaled: half image width at distance 1 */
    RtVec3 up;       /* scaled: half image height at distance 1 */
    float inv_w, inv_h;
} RtCameraBasis;

RT_HD RtCameraBasis rt_camera_basis(RtCamera c, int width, int height)
{
    RtCameraBasis b;
    b.o = c.pos;
    b.fwd = v3_norm(v3_sub(c.look, c.pos));
    RtVec3 r = v3_cross(b.fwd, c.up);
    if (v3_dot(r, r) < 1e-12f) /* up parallel to the view: pick any other up */
        r = v3_cross(b.fwd, fabsf(b.fwd.y) < 0.9f ? v3(0, 1, 0) : v3(1, 0, 0));
    r = v3_norm(r);
    RtVec3 u = v3_cross(r, b.fwd);
    float th = tanf(0.5f * c.fov_y * 3.14159265358979f / 180.0f);
    float aspect = (float)width / (float)(height > 0 ? height : 1);
    b.right = v3_scale(r, th * aspect);
    b.up = v3_scale(u, th);
    b.inv_w = 1.0f / (float)width;
    b.inv_h = 1.0f / (float)height;
    return b;
}

/* Unit direction through image point (px, py), both in pixels. */
RT_HD RtVec3 rt_camera_dir(const RtCameraBasis *b, float px, float py)
{
    float sx = 2.0f * px * b->inv_w - 1.0f;
    float sy = 1.0f - 2.0f * py * b->inv_h;
    return v3_norm(v3_add(b->fwd, v3_add(v3_scale(b->right, sx), v3_scale(b->up, sy))));
}

#endif
