/* accel.h — the acceleration structure a tracer walks, whichever the frame
 * pipeline's structure slot holds: a kd-tree (kd_layout.h) or a BVH
 * (bvh_layout.h). By pointer: host memory for the CPU renderer, device
 * memory for the GPU tracer; the struct is the same. Where a function takes
 * an optional one, NULL means brute force (CPU only). */
#ifndef RT_ACCEL_H
#define RT_ACCEL_H

#include "bvh/bvh_layout.h"
#include "kd/kd_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum RtAccelKind {
    RT_ACCEL_KD = 0,  /* kd: a kd-tree */
    RT_ACCEL_BVH = 1  /* bvh: a binary BVH (any BVH builder's) */
} RtAccelKind;

typedef struct RtAccel {
    int kind;              /* RtAccelKind: which pointer is set */
    const RtKdTree *kd;
    const RtBvh *bvh;
} RtAccel;

static inline RtAccel rt_accel_kd(const RtKdTree *t)
{
    RtAccel a = {RT_ACCEL_KD, t, NULL};
    return a;
}
static inline RtAccel rt_accel_bvh(const RtBvh *b)
{
    RtAccel a = {RT_ACCEL_BVH, NULL, b};
    return a;
}

#ifndef __cplusplus
/* A pointer to a kd-tree's RtAccel for one call (a C compound literal). */
#define RT_ACCEL_OF_KD(t) (&(const RtAccel){RT_ACCEL_KD, (t), NULL})
#define RT_ACCEL_OF_BVH(b) (&(const RtAccel){RT_ACCEL_BVH, NULL, (b)})
#endif

#ifdef __cplusplus
}
#endif
#endif
