/* anim_keys.h — the keyframe interpolation of glTF-style channels (step,
 * linear, cubic spline; quaternion slerp), written once for the host and
 * the device (RT_HD). The host evaluates tracks per frame for both paths
 * (anim.h step 1: few nodes) through rt_kb_eval_vec3 / rt_kb_eval_rot, which
 * call these for channels whose interp is not RT_KEYS_TCB; a device stage
 * that evaluates tracks itself would call the very same functions.
 *
 * Keys are sorted by time (strictly increasing, as glTF requires of a
 * sampler's input); before the first key the channel holds the first value,
 * after the last the last (glTF 2.0 "Animations": clamped). Rotation values
 * are quaternions (x, y, z, w), glTF's order. */
#ifndef RT_ANIM_KEYS_H
#define RT_ANIM_KEYS_H

#include "anim/anim.h"

/* Above this cosine of the angle between two quaternions slerp divides by
 * a sine near 0: the normalised lerp is within float precision there
 * (the angle is under 2 degrees; the lerp's error is O(angle^3)). */
#define RT_KEYS_SLERP_NLERP_DOT 0.9995f

/* The segment of t: *i with k[i].t <= t < k[i+1].t and *s in [0, 1) its
 * parameter; clamped (*s = 0 at the first key, *i = n-1 at and after the
 * last; NaN t gives the first key). Binary search: n may be thousands. */
RT_HD void rt_keys_segment(const RtKbKey *k, uint32_t n, float t, uint32_t *i, float *s)
{
    *i = 0;
    *s = 0.0f;
    if (n < 2 || !(t > k[0].t)) return;
    if (!(t < k[n - 1].t)) {
        *i = n - 1;
        return;
    }
    uint32_t lo = 0, hi = n - 1; /* k[lo].t <= t < k[hi].t */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (k[mid].t <= t) lo = mid;
        else hi = mid;
    }
    float d = k[lo + 1].t - k[lo].t;
    *i = lo;
    *s = d > 0.0f ? (t - k[lo].t) / d : 0.0f;
}

RT_HD void rt_quat_normalize(float q[4])
{
    float l = sqrtf(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (l > 0.0f) {
        for (int c = 0; c < 4; c++) q[c] /= l;
    } else {
        q[0] = q[1] = q[2] = 0.0f, q[3] = 1.0f;
    }
}

/* Spherical linear interpolation (Shoemake 1985) along the shorter arc:
 * q and -q are one rotation, so b is negated when the two are more than
 * 90 degrees apart in 4D (glTF 2.0 Appendix "Interpolation": the shortest
 * path). Unit quaternions in, a unit quaternion out. */
RT_HD void rt_quat_slerp(const float a[4], const float b[4], float s, float out[4])
{
    float d = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
    float sign = d < 0.0f ? -1.0f : 1.0f;
    d *= sign;
    float w0 = 1.0f - s, w1 = s;
    if (d < RT_KEYS_SLERP_NLERP_DOT) {
        float th = acosf(d), sn = sinf(th);
        w0 = sinf(w0 * th) / sn;
        w1 = sinf(s * th) / sn;
    }
    for (int c = 0; c < 4; c++) out[c] = w0 * a[c] + sign * w1 * b[c];
    rt_quat_normalize(out);
}

/* The value at t of keys k[0..n) (n >= 1) under interp (RT_KEYS_STEP,
 * RT_KEYS_LINEAR or RT_KEYS_CUBIC); quat = 1 for a rotation channel
 * (4 components, slerp, result normalised), 0 for a vector (x, y, z).
 *   STEP:   the value of the last key at or before t;
 *   LINEAR: v_i + s (v_i+1 - v_i); rotations slerp;
 *   CUBIC:  glTF's cubic Hermite spline (glTF 2.0 Appendix C), with
 *           td = t_i+1 - t_i and the keys' tangents in value units per second:
 *           p(s) = (2s^3 - 3s^2 + 1) v_i + td (s^3 - 2s^2 + s) out_i
 *                + (-2s^3 + 3s^2) v_i+1 + td (s^3 - s^2) in_i+1;
 *           a rotation is that on the 4 components, then normalised.
 * RT_KEYS_TCB is kbspline.c's, not this; here it reads as LINEAR. */
RT_HD void rt_keys_eval(const RtKbKey *k, uint32_t n, int interp, int quat, float t, float out[4])
{
    uint32_t i;
    float s;
    rt_keys_segment(k, n, t, &i, &s);
    int comps = quat ? 4 : 3;
    out[3] = 0.0f;
    if (i + 1 >= n || interp == RT_KEYS_STEP) {
        for (int c = 0; c < comps; c++) out[c] = k[i].v[c];
    } else if (interp == RT_KEYS_CUBIC) {
        float td = k[i + 1].t - k[i].t, s2 = s * s, s3 = s2 * s;
        float h00 = 2.0f * s3 - 3.0f * s2 + 1.0f, h10 = s3 - 2.0f * s2 + s;
        float h01 = -2.0f * s3 + 3.0f * s2, h11 = s3 - s2;
        for (int c = 0; c < comps; c++)
            out[c] = h00 * k[i].v[c] + td * h10 * k[i].out[c] + h01 * k[i + 1].v[c] + td * h11 * k[i + 1].in[c];
    } else if (quat) {
        rt_quat_slerp(k[i].v, k[i + 1].v, s, out);
        return;
    } else {
        for (int c = 0; c < comps; c++) out[c] = k[i].v[c] + s * (k[i + 1].v[c] - k[i].v[c]);
    }
    if (quat) rt_quat_normalize(out);
}

#endif
