/* primitives.h — built-in shapes (quad, box, UV sphere) and the affine
 * matrices that place them. Used by the .scene loader (box, sphere, quad
 * statements and every object's translate/rotate/scale chain) and by the
 * built-in default scene.
 *
 * Matrices are row-major 3x4, the convention of rt_scene_append's m:
 *   x' = m[0]*x + m[1]*y + m[2]*z  + m[3]
 *   y' = m[4]*x + m[5]*y + m[6]*z  + m[7]
 *   z' = m[8]*x + m[9]*y + m[10]*z + m[11]
 * The builders pre-multiply, so calls read in the order they apply:
 *   rt_mat34_identity(m); rt_mat34_scale(m, s); rt_mat34_rotate(m, a, d);
 *   rt_mat34_translate(m, t);   -> scales, then rotates, then translates. */
#ifndef RT_PRIMITIVES_H
#define RT_PRIMITIVES_H

#include "scene/scene.h"

#ifdef __cplusplus
extern "C" {
#endif

void rt_mat34_identity(float m[12]);
void rt_mat34_translate(float m[12], RtVec3 t);               /* m = T * m */
void rt_mat34_scale(float m[12], RtVec3 s);                   /* m = S * m */
/* m = R * m: right-handed rotation by `degrees` about `axis` (any length;
 * a zero axis leaves m unchanged). */
void rt_mat34_rotate(float m[12], RtVec3 axis, float degrees);
/* out = a * b (b applies first); out may alias a or b. */
void rt_mat34_mul(float out[12], const float a[12], const float b[12]);
float rt_mat34_det(const float m[12]);                        /* of the linear 3x3 part */
RtVec3 rt_mat34_point(const float m[12], RtVec3 p);
/* A normal through m: the inverse transpose of the linear part, renormalised;
 * stays outward under mirrors (det < 0). A zero normal stays zero. */
RtVec3 rt_mat34_normal(const float m[12], RtVec3 n);

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
