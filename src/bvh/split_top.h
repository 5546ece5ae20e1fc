/* split_top.h — a top of spatial splits over H-PLOC (issue 21's trace).
 *
 * H-PLOC's tree needs 1.5x the node visits of an SBVH on Sponza's view;
 * docs/bvh.md ("Spatial splits where they pay") measured that nearly all
 * of the difference is the SBVH's spatial splits in its top levels: a few
 * large triangles (floors, walls) bloat the boxes of the top nodes. So the
 * tree is built in two parts:
 *
 *   1. the top: `depth` levels, top-down, over references (a triangle id
 *      and a box: the triangle's, or the part of it a spatial split left on
 *      one side). Each node of at least `min_refs` references compares two
 *      binned SAH splits, RT_SPLIT_TOP_BINS - 1 planes an axis: an object
 *      split (references by centroid bin over the centroids' bounds) and,
 *      where the object split's children overlap by more than `alpha` of
 *      the root's area, a spatial split (Stich et al. 2009: bins over the
 *      node's box, a reference clipped into each bin it spans, both sides
 *      given the clipped parts of a straddler). It is split only when the
 *      spatial split is the cheaper: object splits are H-PLOC's to make
 *      (binned ones made the Cornell box's tree worse: 4.80 -> 5.91 visits
 *      a ray), so a scene where no spatial split pays gets H-PLOC's tree;
 *   2. under each leaf of the top, H-PLOC over its references (hploc.h,
 *      unchanged), Morton codes within the leaf's box.
 *
 * The rules below are written once for the CPU oracle and the GPU. A
 * triangle may then be referenced by more than one leaf; its references'
 * boxes cover it (RtBvh.split_refs tells the validator). */
#ifndef RT_SPLIT_TOP_H
#define RT_SPLIT_TOP_H

#include "bvh/lbvh.h"

#ifndef RT_SPLIT_TOP_BINS
#define RT_SPLIT_TOP_BINS 8
#endif
#define RT_SPLIT_TOP_MAX_DEPTH 10

typedef struct RtSplitTopParams {
    int depth;         /* levels of the top, 0..RT_SPLIT_TOP_MAX_DEPTH (0: H-PLOC alone); default 3 */
    float alpha;       /* spatial splits where the object split's children overlap by more than this
                          share of the root's area; default 1e-5 (Stich et al.) */
    uint32_t min_refs; /* a node of fewer references is a leaf of the top; default 64 */
} RtSplitTopParams;

RT_HD RtSplitTopParams rt_split_top_params_default(void)
{
    RtSplitTopParams p;
    p.depth = 3;
    p.alpha = 1e-5f;
    p.min_refs = 64u;
    return p;
}

/* A box's surface area (0 for the empty box). */
RT_HD float split_top_area(RtAabb b)
{
    if (aabb_is_empty(b)) return 0.0f;
    const float dx = RT_XSUB(b.hi.x, b.lo.x), dy = RT_XSUB(b.hi.y, b.lo.y), dz = RT_XSUB(b.hi.z, b.lo.z);
    return RT_XMUL(2.0f, RT_XADD(RT_XADD(RT_XMUL(dx, dy), RT_XMUL(dy, dz)), RT_XMUL(dz, dx)));
}

/* The bin of coordinate x in [lo, lo + RT_SPLIT_TOP_BINS / scale), clamped:
 * scale = RT_SPLIT_TOP_BINS / extent, 0 for a flat axis (every x in bin 0). */
RT_HD int split_top_bin(float x, float lo, float scale)
{
    const float f = RT_XMUL(RT_XSUB(x, lo), scale);
    if (!(f > 0.0f)) return 0;
    if (f >= (float)(RT_SPLIT_TOP_BINS - 1)) return RT_SPLIT_TOP_BINS - 1;
    return (int)f;
}
RT_HD float split_top_scale(float lo, float hi)
{
    const float e = RT_XSUB(hi, lo);
    return e > 0.0f && isfinite(e) ? RT_XDIV((float)RT_SPLIT_TOP_BINS, e) : 0.0f;
}
/* Plane k (1..RT_SPLIT_TOP_BINS - 1) of a spatial split over [lo, hi]: the
 * lower face of bin k. */
RT_HD float split_top_plane(float lo, float hi, int k)
{
    return RT_XADD(lo, RT_XMUL(RT_XSUB(hi, lo), RT_XDIV((float)k, (float)RT_SPLIT_TOP_BINS)));
}

/* The SAH cost of a split, relative to a leaf's per-reference cost: both
 * sides' areas times their references (the node's own area and C_trav are
 * the same for every candidate of a node, so they are left out). */
RT_HD float split_top_cost(float left_area, uint32_t left_refs, float right_area, uint32_t right_refs)
{
    return RT_XADD(RT_XMUL(left_area, (float)left_refs), RT_XMUL(right_area, (float)right_refs));
}

#endif
