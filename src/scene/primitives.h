/* primitives.h — built-in shapes (quad, box, UV sphere) and placing them
 * with the affine matrices of core/mat34.h. Used by the .scene loader (box,
 * sphere, quad statements and every object's translate/rotate/scale chain)
 * and by the built-in default scene. */
#ifndef RT_PRIMITIVES_H
#define RT_PRIMITIVES_H

#include "core/mat34.h"
#include "scene/scene.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Transforms all of s in place by m: positions, normals, point-light
 * positions and directional-light directions. When det(m) < 0 (a mirror) the
 * triangles' winding is swapped so faces keep pointing outward. */
void rt_scene_transform(RtScene *s, const float m[12]);

/* Each appends one RtObject named `name` (NULL = the shape's name) made of
 * fresh vertices and triangles with material `mat` (an index into s->mats, or
 * -1 for the default material), transformed by m (NULL = identity). On
 * failure s is left as it was. */

/* [-1,1]^2 in the xz-plane at y = 0, normal +y; 2 triangles, 4 vertices.
 * uv: u = (x+1)/2, v = (1-z)/2 (so v grows toward -z, "up" seen from +z). */
RtStatus rt_prim_quad(RtScene *s, const float m[12], int32_t mat, const char *name, RtError *err);
/* [-1,1]^3, flat outward normals; 12 triangles, 24 vertices; each face has
 * its own uv square 0..1, upright seen from outside (top: like the quad). */
RtStatus rt_prim_box(RtScene *s, const float m[12], int32_t mat, const char *name, RtError *err);
/* Radius 1 at the origin, smooth normals. `segments` >= 3 slices of
 * longitude and max(2, segments/2) bands of latitude; the poles get one
 * triangle per slice, so 2*segments*(bands-1) triangles and
 * (segments+1)*(bands+1) vertices (the seam and poles repeat for uv).
 * uv: u = longitude / 360 degrees, v = 1 at the north pole (+y), 0 at the south. */
#define RT_PRIM_SPHERE_MAX_SEGMENTS 4096
RtStatus rt_prim_sphere(RtScene *s, const float m[12], int32_t mat, int segments, const char *name,
                        RtError *err);
/* Triangle count rt_prim_sphere makes for `segments` (0 when out of range). */
uint32_t rt_prim_sphere_tri_count(int segments);

#ifdef __cplusplus
}
#endif
#endif
