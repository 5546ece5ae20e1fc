/* bvh_cpu.h — the CPU side of the BVH family: the oracle's builders, LBVH
 * and H-PLOC (lbvh.h's and hploc.h's steps as loops: the very trees the GPU
 * builders make), the validator, the statistics (SAH with the kd-tree's
 * constants, so the two structures' costs compare) and a CPU traversal of
 * the shared layout (bvh_layout.h) for the reference renderer and the
 * tests. */
#ifndef RT_BVH_CPU_H
#define RT_BVH_CPU_H

#include "bvh/hploc.h"
#include "bvh/lbvh.h"
#include "kd/kd_cpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Defaults as lbvh.h documents them. */
RtLbvhParams rt_lbvh_params_default(void);
/* RT_OK, or RT_ERR_ARG naming the field out of range. */
RtStatus rt_lbvh_params_check(const RtLbvhParams *p, RtError *err);

/* Builds Karras's LBVH over tris (host arrays) into bvh, whose arrays are
 * host memory it owns (rt_bvh_free; a bvh from an earlier build is reused).
 * Degenerate triangles are left out. stats may be NULL. */
RtStatus rt_lbvh_build_cpu(const RtLbvhParams *p, const RtTriArrays *tris, RtBvh *bvh,
                           RtBvhStats *stats, RtError *err);
void rt_bvh_free(RtBvh *bvh);
/* Fills bvh->leaf_woop from its tri_index and tris->woop (left NULL when
 * tris has no Woop rows): the builders' last step. Returns 0 when out of
 * memory. */
int rt_bvh_leaf_woop_cpu(RtBvh *bvh, const RtTriArrays *tris);

/* lbvh.h's steps 1 and 2, which both BVH builders (the LBVH, H-PLOC) start
 * with: each triangle's box, the Morton codes of their centres, sorted by
 * (code, triangle id), the degenerate triangles last. */
typedef struct RtBvhKeys {
    uint32_t count; /* input triangles */
    uint32_t n;     /* valid keys (non-degenerate triangles): the first n sorted */
    RtAabb *box;    /* per triangle id; empty for a degenerate one */
    uint32_t *code; /* the sorted codes */
} RtBvhKeys;
/* ids (tris->count entries, the caller's) receives the sorted triangle ids.
 * Returns 0 when out of memory; rt_bvh_keys_free frees the rest. */
int rt_bvh_sort_keys_cpu(const RtTriArrays *tris, uint32_t *ids, RtBvhKeys *keys);
void rt_bvh_keys_free(RtBvhKeys *keys);

/* H-PLOC (hploc.h): defaults as hploc.h documents them; RT_OK or RT_ERR_ARG
 * naming the field out of range. */
RtHplocParams rt_hploc_params_default(void);
RtStatus rt_hploc_params_check(const RtHplocParams *p, RtError *err);

/* What an H-PLOC build reports beside RtBvhStats. */
typedef struct RtHplocInfo {
    uint32_t cluster_depth; /* the clustered tree's depth once collapsed */
    int fallback;           /* 1: cluster_depth exceeded RT_BVH_MAX_DEPTH and the radix tree (the
                               LBVH's) was output instead (hploc.h, Depth) */
} RtHplocInfo;

/* Builds H-PLOC's BVH over tris (host arrays) into bvh, as
 * rt_lbvh_build_cpu does (arrays reused, degenerate triangles left out):
 * the tree the GPU builder makes, node for node. stats and info may be
 * NULL. */
RtStatus rt_hploc_build_cpu(const RtHplocParams *p, const RtTriArrays *tris, RtBvh *bvh, RtBvhStats *stats,
                            RtHplocInfo *info, RtError *err);

/* H-PLOC over keys sorted by the caller: keys->n >= 2 valid keys, keys->code
 * sorted, keys->box by id, ids the sorted ids; tri_index gets the ids (no
 * leaf rows); force_radix: the depth fallback's radix tree whatever the
 * clustered depth (info->cluster_depth is the clustered tree's either way). */
RtStatus rt_hploc_build_keys_cpu(const RtHplocParams *params, const RtBvhKeys *keys, const uint32_t *ids,
                                 int force_radix, RtBvh *bvh, RtHplocInfo *info, RtError *err);

/* split_top.h's tree: a top of spatial splits, H-PLOC under its leaves
 * (hp; NULL: the defaults), sp NULL: the defaults. bvh->split_refs is set
 * when the top split anything; info (may be NULL): the top's leaves, the
 * references, the depth and the fallback, as the GPU reports them. */
struct RtSplitTopParams;
struct RtSplitTopInfo;
/* RT_ERR_ARG naming the field unless p (split_top.h) is usable: depth 0
 * (no top) always is. */
RtStatus rt_split_top_params_check(const struct RtSplitTopParams *p, RtError *err);
RtStatus rt_bvh_split_top_build_cpu(const RtHplocParams *hp, const struct RtSplitTopParams *sp,
                                    const RtTriArrays *tris, RtBvh *bvh, RtBvhStats *stats,
                                    struct RtSplitTopInfo *info, RtError *err);

/* The statistics that depend on the tree alone (reachable nodes and leaves,
 * depth, references, SAH cost with c_trav, c_isect; triangles and
 * degenerate from tris when not NULL). Any builder's tree, in host memory. */
void rt_bvh_tree_stats(const RtBvh *bvh, const RtTriArrays *tris, float c_trav, float c_isect,
                       RtBvhStats *stats);

/* Checks the invariants of bvh_layout.h: indices in range, no node reached
 * twice, depth <= RT_BVH_MAX_DEPTH, leaf counts <= RT_BVH_MAX_LEAF, every
 * child box inside its parent's box (the root's: bounds), every leaf's
 * triangles inside its box, every non-degenerate triangle referenced
 * exactly once and no degenerate one. RT_OK, or RT_ERR_PARSE naming the
 * first violation. */
RtStatus rt_bvh_validate(const RtBvh *bvh, const RtTriArrays *tris, RtError *err);

/* Closest hit in [tmin, tmax] (the tie rules of bvh_layout.h: ties go to
 * the lower triangle id, so the hits equal the kd-tree's and the brute
 * force's). use_woop: Woop (1) or Moller-Trumbore (0); filter (may be NULL)
 * rejects hits (map_d cut-outs); steps (may be NULL) += nodes visited.
 * Returns 1 on a hit. */
int rt_bvh_closest_hit(const RtBvh *bvh, const RtTriArrays *tris, RtRay ray, float tmin,
                       float tmax, int use_woop, RtHitFilter filter, const void *ctx, RtHit *hit,
                       uint32_t *steps);
/* Any hit in [tmin, tmax] (shadow rays), with the same filter. */
int rt_bvh_any_hit(const RtBvh *bvh, const RtTriArrays *tris, RtRay ray, float tmin, float tmax,
                   int use_woop, RtHitFilter filter, const void *ctx);

#ifdef __cplusplus
}
#endif
#endif
