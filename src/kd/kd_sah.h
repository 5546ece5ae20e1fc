/* kd_sah.h — the surface area heuristic of the SAH kd-tree builders, written
 * once for the CPU oracle (kd_build_cpu.c) and the GPU's exact builder
 * (cuda/kd/kd_exact.cu), so the GPU tree's choices are the oracle's rules
 * and the two trees' costs compare:
 *   - the cost of a split (Wald & Havran 2006, with their empty-space bonus);
 *   - the thinnest slab a split may cut off a cell (RT_KD_MIN_GAP);
 *   - the depth limit (pbrt's rule).
 * Costs are relative to the parent's surface area: a leaf costs
 * c_isect * N, a split c_trav + c_isect * (P_L * N_L + P_R * N_R). */
#ifndef RT_KD_SAH_H
#define RT_KD_SAH_H

#include "core/rt_base.h"
#include "kd/kd_layout.h"

/* The default costs of both builders (the CPU oracle's and the GPU's, so
 * their trees' SAH costs compare): a traversal step against one ray/triangle
 * test in the GPU tracer. Its Woop test is cheap beside a node visit (a
 * dependent load and a stack push), and larger leaves duplicate fewer
 * triangles: on an H200, C_i from 1.5 down to 0.5 cut the GPU tree's
 * references per triangle 6.5 -> 3.9 on Sponza and 7.0 -> 4.1 on a 12M-triangle
 * city, and shortened build + trace of every scene measured (docs/kdtree.md
 * has the sweep; incoherent diffuse rays lose ~6 %). */
#define RT_KD_C_TRAV 1.0f
#define RT_KD_C_ISECT 0.5f

/* A split plane keeps at least this fraction of the scene's largest extent
 * from both faces of its cell (the faces themselves stay candidates, for
 * planar triangles). Thinner slivers, around vertices that many triangles
 * share, bought no tracing speed on Sponza or the bunny yet made 60% and 25%
 * of their nodes and used up the depth limit; without them the SAH cost is
 * lower as well (docs/kdtree.md has the numbers). */
#define RT_KD_MIN_GAP (1.0 / 4096.0)

/* The deepest level a builder splits (the root is level 0): pbrt's
 * 8 + 1.3 log2(N) over the N usable triangles, at most cap. */
RT_HD int rt_kd_depth_limit(uint32_t valid, int cap)
{
    int d = (int)(8.0 + 1.3 * log2(valid > 1 ? (double)valid : 1.0));
    return d > cap ? cap : d;
}

/* The SAH builders' depth limit: the one asked for (> 0), at most the
 * layout's RT_KD_MAX_DEPTH (kd_layout.h), or
 * rt_kd_depth_limit's for the valid triangles. */
RT_HD int rt_kd_max_depth(int requested, uint32_t valid)
{
    if (requested > 0) return requested > RT_KD_MAX_DEPTH ? RT_KD_MAX_DEPTH : requested;
    return rt_kd_depth_limit(valid, RT_KD_MAX_DEPTH);
}

/* A cell's extents (double) and half its surface area, the SAH's
 * normaliser. */
RT_HD double rt_kd_half_area(RtAabb cell, double ext[3])
{
    ext[0] = (double)cell.hi.x - cell.lo.x;
    ext[1] = (double)cell.hi.y - cell.lo.y;
    ext[2] = (double)cell.hi.z - cell.lo.z;
    return ext[0] * ext[1] + ext[1] * ext[2] + ext[2] * ext[0];
}

/* Whether a node is a candidate for a split at all: more triangles than a
 * leaf must hold, above the depth limit, a cell of positive finite area. */
RT_HD int rt_kd_may_split(uint32_t count, uint32_t max_leaf, int depth, int max_depth, double half_area)
{
    return count > max_leaf && depth < max_depth && half_area > 0.0 && isfinite(half_area);
}

/* Wald & Havran's termination: the best split must cost less than the
 * leaf, C_i * N. */
RT_HD int rt_kd_split_pays(double cost, double c_isect, uint32_t count)
{
    return cost < c_isect * (double)count;
}

/* The cost of splitting a node into children with relative areas pl, pr
 * holding nl and nr triangles; lambda (1 - the empty bonus) rewards cutting
 * off empty space. */
RT_HD double rt_kd_split_cost(double c_trav, double c_isect, double lambda, double pl, double pr, uint32_t nl,
                              uint32_t nr)
{
    double c = c_trav + c_isect * (pl * (double)nl + pr * (double)nr);
    if (nl == 0 || nr == 0) c *= lambda;
    return c;
}

#endif
