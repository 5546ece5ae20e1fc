/* kbspline.c — Kochanek-Bartels keyframe channels of BART AFF (stage 2,
 * animate). Evaluates one channel at time t exactly as the BART reference
 * does (Lext, Assarsson, Moller 2001; its spline code is Eberly's Magic
 * Software code), per ../shared/formats/aff.md section 5:
 *   - keys stay in file order; segment i spans keys i+1..i+2 and is found by
 *     a linear scan, so non-monotonic key times (robots gun_rot1) give the
 *     reference's result where a binary search would not;
 *   - translation/scale: cubic Hermite with TCB tangents;
 *   - rotation: quaternion "squad" with the reference's one-sided hemisphere
 *     fix (q3 of each segment left unprocessed) and its angle/axis output
 *     conversion. The axes of keys are used as written, not normalised: the
 *     robots' non-unit axes depend on it.
 * All arithmetic is double, like the reference; results are rounded to
 * float at the end. Channels of the other modes (step, linear, cubic
 * spline: glTF's samplers) are evaluated by anim_keys.h, in float, the
 * formulas a device stage would share. */
#include "anim/anim.h"
#include "anim/anim_keys.h"

#include <string.h>

#define KB_PI 3.14159265358979323846
/* The reference's cutoff for sin(angle) near zero (quat.c g_dEpsilon). */
#define KB_QUAT_EPS 1e-3
/* A time span below this is treated as zero (no division by it). */
#define KB_TIME_EPS 1e-12

/* ---- segment lookup (aff.md 5.1) ---------------------------------------- */

/* Segment i in [0, n-4] and its parameter u in [0, 1] for time t; n >= 4. */
static void kb_segment(const RtKbKey *k, uint32_t n, double t, uint32_t *seg, double *u)
{
    if (!(t > (double)k[1].t)) { /* also catches NaN t */
        *seg = 0;
        *u = 0.0;
        return;
    }
    if (!(t < (double)k[n - 2].t)) {
        *seg = n - 4;
        *u = 1.0;
        return;
    }
    uint32_t i = 0;
    while (i < n - 4 && !(t < (double)k[i + 2].t)) i++;
    double span = (double)k[i + 2].t - (double)k[i + 1].t;
    double s = span > KB_TIME_EPS || span < -KB_TIME_EPS ? (t - (double)k[i + 1].t) / span : 0.0;
    *seg = i;
    *u = s < 0.0 ? 0.0 : (s > 1.0 ? 1.0 : s);
}

/* TCB tangent weights of segment i (aff.md 5.2): out0/out1 at key i+1,
 * in0/in1 at key i+2. A zero denominator (never in the data) falls back to
 * the uniform-spacing weight 1 rather than dividing by zero. */
static void kb_weights(const RtKbKey *k, uint32_t i, double w[4])
{
    double dt = (double)k[i + 2].t - (double)k[i + 1].t;
    double d0 = (double)k[i + 2].t - (double)k[i].t;
    double d1 = (double)k[i + 3].t - (double)k[i + 1].t;
    double adj0 = fabs(d0) > KB_TIME_EPS ? 2.0 * dt / d0 : 1.0;
    double adj1 = fabs(d1) > KB_TIME_EPS ? 2.0 * dt / d1 : 1.0;
    double t1 = k[i + 1].tension, c1 = k[i + 1].continuity, b1 = k[i + 1].bias;
    double t2 = k[i + 2].tension, c2 = k[i + 2].continuity, b2 = k[i + 2].bias;
    w[0] = 0.5 * adj0 * (1 - t1) * (1 + c1) * (1 + b1); /* out0 */
    w[1] = 0.5 * adj0 * (1 - t1) * (1 - c1) * (1 - b1); /* out1 */
    w[2] = 0.5 * adj1 * (1 - t2) * (1 - c2) * (1 + b2); /* in0 */
    w[3] = 0.5 * adj1 * (1 - t2) * (1 + c2) * (1 - b2); /* in1 */
}

/* Channels with fewer than 4 keys are refused by the AFF loader; other
 * callers get a step function over them (the last key with t_k <= t, the
 * first before it) instead of reading past the array. */
static uint32_t kb_step_key(const RtKbChannel *c, float t)
{
    uint32_t j = 0;
    for (uint32_t i = 0; i < c->count; i++)
        if (c->keys[i].t <= t) j = i;
    return j;
}

/* ---- translation and scale (aff.md 5.3) --------------------------------- */

RtVec3 rt_kb_eval_vec3(const RtKbChannel *c, float t)
{
    if (!c || c->count == 0) return v3(0.0f, 0.0f, 0.0f);
    if (c->interp != RT_KEYS_TCB) {
        float v[4];
        rt_keys_eval(c->keys, c->count, c->interp, 0, t, v);
        return v3(v[0], v[1], v[2]);
    }
    if (c->count < 4) {
        const float *v = c->keys[kb_step_key(c, t)].v;
        return v3(v[0], v[1], v[2]);
    }
    const RtKbKey *k = c->keys;
    uint32_t i;
    double u, w[4];
    kb_segment(k, c->count, t, &i, &u);
    kb_weights(k, i, w);
    float out[3];
    for (int a = 0; a < 3; a++) {
        double p0 = k[i].v[a], p1 = k[i + 1].v[a], p2 = k[i + 2].v[a], p3 = k[i + 3].v[a];
        double d = p2 - p1;
        double tout = w[0] * (p1 - p0) + w[1] * d;
        double tin = w[2] * d + w[3] * (p3 - p2);
        double c2 = 3 * d - 2 * tout - tin, c3 = -2 * d + tout + tin;
        out[a] = (float)(p1 + u * (tout + u * (c2 + u * c3)));
    }
    return v3(out[0], out[1], out[2]);
}

/* ---- quaternions (Eberly's helpers, aff.md 5.4) ------------------------- */

typedef struct KbQuat { double w, x, y, z; } KbQuat;

/* The key quaternion: the axis as written (not normalised). */
static KbQuat kb_quat_from_key(const RtKbKey *k)
{
    double half = 0.5 * (double)k->v[3] * KB_PI / 180.0, s = sin(half);
    KbQuat q = {cos(half), s * k->v[0], s * k->v[1], s * k->v[2]};
    return q;
}

static double kb_quat_dot(KbQuat a, KbQuat b) { return a.w * b.w + a.x * b.x + a.y * b.y + a.z * b.z; }

static KbQuat kb_quat_mul(KbQuat a, KbQuat b)
{
    KbQuat r = {a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z, a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
                a.w * b.y + a.y * b.w + a.z * b.x - a.x * b.z, a.w * b.z + a.z * b.w + a.x * b.y - a.y * b.x};
    return r;
}

/* The conjugate, which the reference uses as the inverse even for the
 * non-unit key quaternions. */
static KbQuat kb_quat_conj(KbQuat q)
{
    KbQuat r = {q.w, -q.x, -q.y, -q.z};
    return r;
}

static KbQuat kb_quat_axpy(double a, KbQuat x, double b, KbQuat y)
{
    KbQuat r = {a * x.w + b * y.w, a * x.x + b * y.x, a * x.y + b * y.y, a * x.z + b * y.z};
    return r;
}

static KbQuat kb_quat_log(KbQuat q)
{
    KbQuat r = {0.0, q.x, q.y, q.z};
    if (fabs(q.w) < 1.0) {
        double a = acos(q.w), s = sin(a);
        if (fabs(s) >= KB_QUAT_EPS) {
            double f = a / s;
            r.x *= f, r.y *= f, r.z *= f;
        }
    }
    return r;
}

/* exp of the vector part; w is ignored. */
static KbQuat kb_quat_exp(KbQuat q)
{
    double a = sqrt(q.x * q.x + q.y * q.y + q.z * q.z), s = sin(a);
    KbQuat r = {cos(a), q.x, q.y, q.z};
    if (fabs(s) >= KB_QUAT_EPS) {
        double f = s / a;
        r.x *= f, r.y *= f, r.z *= f;
    }
    return r;
}

/* No shortest-path negation: the reference relies on its hemisphere fix. */
static KbQuat kb_quat_slerp(double s, KbQuat p, KbQuat q)
{
    double c = kb_quat_dot(p, q);
    c = c < -1.0 ? -1.0 : (c > 1.0 ? 1.0 : c);
    double a = acos(c), sn = sin(a);
    if (sn < KB_QUAT_EPS) return p;
    return kb_quat_axpy(sin((1.0 - s) * a) / sn, p, sin(s * a) / sn, q);
}

/* The reference's ToAngleAxis: angle 2 acos(w) (w clamped here, the
 * reference would return NaN), unit axis; a zero vector part is angle 0
 * about +x. */
static void kb_quat_to_angle_axis(KbQuat q, double *angle, double axis[3])
{
    double l2 = q.x * q.x + q.y * q.y + q.z * q.z;
    if (l2 > 0.0) {
        double w = q.w < -1.0 ? -1.0 : (q.w > 1.0 ? 1.0 : q.w), inv = 1.0 / sqrt(l2);
        *angle = 2.0 * acos(w);
        axis[0] = q.x * inv, axis[1] = q.y * inv, axis[2] = q.z * inv;
    } else {
        *angle = 0.0;
        axis[0] = 1.0, axis[1] = 0.0, axis[2] = 0.0;
    }
}

/* Q(t) of a rotation channel with >= 4 keys. */
static KbQuat kb_rot_quat(const RtKbChannel *c, float t)
{
    const RtKbKey *k = c->keys;
    uint32_t n = c->count, i;
    double u, w[4];
    kb_segment(k, n, t, &i, &u);
    kb_weights(k, i, w);

    /* Hemisphere fix, in the reference's order: key j (2 <= j <= n-2) is
     * compared with the already fixed key j-1 and, when on the far side,
     * negated and re-encoded through angle/axis (which also normalises
     * it). Segment i needs fixed keys i..i+2, so only a prefix is fixed. */
    KbQuat prev = kb_quat_from_key(&k[1]), fixed[3];
    for (uint32_t j = 0; j <= i + 2; j++) {
        KbQuat q = kb_quat_from_key(&k[j]);
        if (j >= 2 && j <= n - 2 && kb_quat_dot(prev, q) < 0.0) {
            KbQuat neg = {-q.w, -q.x, -q.y, -q.z};
            double ang, ax[3];
            kb_quat_to_angle_axis(neg, &ang, ax);
            double s = sin(0.5 * ang);
            KbQuat r = {cos(0.5 * ang), s * ax[0], s * ax[1], s * ax[2]};
            q = r;
        }
        if (j >= 1) prev = q;
        if (j >= i) fixed[j - i] = q;
    }
    KbQuat q0 = fixed[0], q1 = fixed[1], q2 = fixed[2], q3 = kb_quat_from_key(&k[i + 3]);

    KbQuat l = kb_quat_log(kb_quat_mul(kb_quat_conj(q1), q2));
    KbQuat tout = kb_quat_axpy(w[1], l, w[0], kb_quat_log(kb_quat_mul(kb_quat_conj(q0), q1)));
    KbQuat tin = kb_quat_axpy(w[2], l, w[3], kb_quat_log(kb_quat_mul(kb_quat_conj(q2), q3)));
    KbQuat a = kb_quat_mul(q1, kb_quat_exp(kb_quat_axpy(0.5, tout, -0.5, l)));
    KbQuat b = kb_quat_mul(q2, kb_quat_exp(kb_quat_axpy(0.5, l, -0.5, tin)));
    return kb_quat_slerp(2.0 * u * (1.0 - u), kb_quat_slerp(u, q1, q2), kb_quat_slerp(u, a, b));
}

/* Angle (radians) and unit axis of channel c at t, as the reference outputs
 * them; identity when the channel is absent. */
static void kb_rot_angle_axis(const RtKbChannel *c, float t, double *angle, double axis[3])
{
    if (!c || c->count == 0) {
        *angle = 0.0;
        axis[0] = 1.0, axis[1] = 0.0, axis[2] = 0.0;
        return;
    }
    KbQuat q;
    if (c->interp != RT_KEYS_TCB) {
        float v[4];
        rt_keys_eval(c->keys, c->count, c->interp, 1, t, v);
        KbQuat u = {v[3], v[0], v[1], v[2]};
        q = u;
    } else if (c->count < 4) {
        q = kb_quat_from_key(&c->keys[kb_step_key(c, t)]);
    } else {
        q = kb_rot_quat(c, t);
    }
    kb_quat_to_angle_axis(q, angle, axis);
}

void rt_kb_eval_rot_axis_angle(const RtKbChannel *c, float t, RtVec3 *axis, float *degrees)
{
    double ang, ax[3];
    kb_rot_angle_axis(c, t, &ang, ax);
    if (axis) *axis = v3((float)ax[0], (float)ax[1], (float)ax[2]);
    if (degrees) *degrees = (float)(ang * 180.0 / KB_PI);
}

void rt_kb_eval_rot(const RtKbChannel *c, float t, float r[9])
{
    /* Rebuilt from the unit axis and angle (aff.md 4), not from Q(t)
     * directly: with non-unit key axes Q(t) is not unit length, and the
     * reference's conversion is what the test vectors encode. */
    double ang, ax[3];
    kb_rot_angle_axis(c, t, &ang, ax);
    double s = sin(0.5 * ang);
    double w = cos(0.5 * ang), x = s * ax[0], y = s * ax[1], z = s * ax[2];
    r[0] = (float)(1 - 2 * (y * y + z * z));
    r[1] = (float)(2 * (x * y - w * z));
    r[2] = (float)(2 * (x * z + w * y));
    r[3] = (float)(2 * (x * y + w * z));
    r[4] = (float)(1 - 2 * (x * x + z * z));
    r[5] = (float)(2 * (y * z - w * x));
    r[6] = (float)(2 * (x * z - w * y));
    r[7] = (float)(2 * (y * z + w * x));
    r[8] = (float)(1 - 2 * (x * x + y * y));
}

/* ---- visibility (aff.md 5.5) -------------------------------------------- */

int rt_kb_eval_visible(const RtKbChannel *c, float t)
{
    if (!c || c->count == 0 || t < c->keys[0].t) return 1;
    int vis = 1;
    for (uint32_t i = 0; i < c->count; i++)
        if (c->keys[i].t <= t) vis = c->keys[i].v[0] != 0.0f;
    return vis;
}
