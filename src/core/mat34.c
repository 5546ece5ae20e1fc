/* mat34.c — row-major 3x4 affine matrices (mat34.h). */
#include "core/mat34.h"

#include <math.h>
#include <string.h>

void rt_mat34_identity(float m[12])
{
    static const float id[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0};
    memcpy(m, id, sizeof id);
}

void rt_mat34_mul(float out[12], const float a[12], const float b[12])
{
    /* Both are 4x4 with an implicit last row (0 0 0 1). */
    float r[12];
    for (int i = 0; i < 3; i++) {
        const float *ai = &a[4 * i];
        for (int j = 0; j < 4; j++)
            r[4 * i + j] = ai[0] * b[j] + ai[1] * b[4 + j] + ai[2] * b[8 + j] + (j == 3 ? ai[3] : 0.0f);
    }
    memcpy(out, r, sizeof r);
}

void rt_mat34_translate(float m[12], RtVec3 t)
{
    m[3] += t.x;
    m[7] += t.y;
    m[11] += t.z;
}

void rt_mat34_scale(float m[12], RtVec3 s)
{
    for (int j = 0; j < 4; j++) {
        m[j] *= s.x;
        m[4 + j] *= s.y;
        m[8 + j] *= s.z;
    }
}

void rt_mat34_rotate(float m[12], RtVec3 axis, float degrees)
{
    /* Rodrigues' formula, in double: the axis length cannot overflow or
     * underflow, and 90-degree steps stay within an ulp of exact. */
    double x = axis.x, y = axis.y, z = axis.z, len = sqrt(x * x + y * y + z * z);
    if (!(len > 0.0) || !isfinite(len)) return;
    x /= len, y /= len, z /= len;
    double rad = (double)degrees * 3.14159265358979323846 / 180.0;
    double c = cos(rad), s = sin(rad), t = 1.0 - c;
    float r[12] = {
        (float)(t * x * x + c),     (float)(t * x * y - s * z), (float)(t * x * z + s * y), 0.0f,
        (float)(t * x * y + s * z), (float)(t * y * y + c),     (float)(t * y * z - s * x), 0.0f,
        (float)(t * x * z - s * y), (float)(t * y * z + s * x), (float)(t * z * z + c),     0.0f,
    };
    rt_mat34_mul(m, r, m);
}

float rt_mat34_det(const float m[12])
{
    return m[0] * (m[5] * m[10] - m[6] * m[9]) - m[1] * (m[4] * m[10] - m[6] * m[8]) +
           m[2] * (m[4] * m[9] - m[5] * m[8]);
}

RtVec3 rt_mat34_point(const float m[12], RtVec3 p)
{
    return v3(m[0] * p.x + m[1] * p.y + m[2] * p.z + m[3], m[4] * p.x + m[5] * p.y + m[6] * p.z + m[7],
              m[8] * p.x + m[9] * p.y + m[10] * p.z + m[11]);
}

RtVec3 rt_mat34_normal(const float m[12], RtVec3 n)
{
    /* With columns c0 c1 c2 of the linear part, the rows of det * inverse
     * are c1 x c2, c2 x c0, c0 x c1, so det * inverse transpose * n is
     * their sum weighted by n. Right up to a positive scale only when
     * det > 0: a mirror needs the sign put back. */
    RtVec3 c0 = v3(m[0], m[4], m[8]), c1 = v3(m[1], m[5], m[9]), c2 = v3(m[2], m[6], m[10]);
    RtVec3 t = v3_add(v3_add(v3_scale(v3_cross(c1, c2), n.x), v3_scale(v3_cross(c2, c0), n.y)),
                      v3_scale(v3_cross(c0, c1), n.z));
    if (rt_mat34_det(m) < 0.0f) t = v3_scale(t, -1.0f);
    return v3_norm(t);
}
