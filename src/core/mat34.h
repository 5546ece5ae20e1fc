/* mat34.h — row-major 3x4 affine matrices, the convention of
 * rt_scene_append's m:
 *   x' = m[0]*x + m[1]*y + m[2]*z  + m[3]
 *   y' = m[4]*x + m[5]*y + m[6]*z  + m[7]
 *   z' = m[8]*x + m[9]*y + m[10]*z + m[11]
 * The builders pre-multiply, so calls read in the order they apply:
 *   rt_mat34_identity(m); rt_mat34_scale(m, s); rt_mat34_rotate(m, a, d);
 *   rt_mat34_translate(m, t);   -> scales, then rotates, then translates.
 * Used by the scene (placing objects), the animation (node transforms) and
 * the primitives. */
#ifndef RT_MAT34_H
#define RT_MAT34_H

#include "core/rt_base.h"

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

#ifdef __cplusplus
}
#endif
#endif
