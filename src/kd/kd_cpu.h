/* kd_cpu.h — the CPU reference kd-tree: an O(N log N) SAH builder with exact
 * triangle clipping ("perfect splits", Wald & Havran 2006), multi-threaded,
 * and a CPU traversal of the shared layout (kd_layout.h). It is the quality
 * anchor for the GPU builders and the oracle of the tests. */
#ifndef RT_KD_CPU_H
#define RT_KD_CPU_H

#include "core/isect.h"
#include "kd/kd_clip.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct RtKdCpuParams {
    float c_trav;      /* SAH traversal cost, Wald & Havran 2006 use K_T = 15 vs K_I = 20; default 1.0 */
    float c_isect;     /* SAH intersection cost per triangle; default 1.5 (K_I/K_T of W&H) */
    float empty_bonus; /* lambda: cost bonus for cutting off empty space, W&H 0.8 -> (1 - 0.2); default 0.2 */
    int max_depth;     /* 0 = 8 + 1.3 log2(N) (pbrt's rule); at most 64 */
    int max_leaf;      /* never split below this many triangles; default 1 */
    int threads;       /* 0 = rt_thread_count() */
} RtKdCpuParams;

RtKdCpuParams rt_kd_cpu_params_default(void);

/* Builds a tree over tris (degenerate triangles, those with zero Woop rows or
 * non-finite vertices, are left out). The tree's arrays are host memory
 * owned by the tree (rt_kd_tree_free). stats may be NULL. */
RtStatus rt_kd_build_cpu(const RtKdCpuParams *p, const RtTriArrays *tris, RtKdTree *tree,
                         RtKdStats *stats, RtError *err);
void rt_kd_tree_free(RtKdTree *tree);
/* 1 when two host trees are the same byte for byte (counts, bounds, every
 * node, leaf, leaf box and reference): the determinism and GPU-path tests'
 * comparison. */
int rt_kd_tree_same(const RtKdTree *a, const RtKdTree *b);

/* Sets every interior node's empty-child marks (kd_layout.h's
 * kd_empty_marks) from its children as they are now: the host builder's
 * last step, and the tests' for trees they make by hand. */
void rt_kd_mark_empty(RtKdTree *tree);
/* Interior nodes (host memory) that lack a mark their children call for:
 * 0 for every builder's tree (the tests check it). */
uint32_t rt_kd_marks_missing(const RtKdTree *tree);

/* Deepest tree the CPU traversal's stack (kd_traverse_cpu.c: 128 entries)
 * holds, and rt_kd_tree_stats walks: above the layout's RT_KD_MAX_DEPTH
 * (kd_layout.h), which rt_kd_validate enforces, so an unvalidated deeper
 * tree is still walked safely. */
#define RT_KD_CPU_MAX_DEPTH 127

/* Fills the stats that depend on the tree alone (nodes, leaves, empty leaves,
 * depth, references, average triangles per leaf, SAH cost). Works for a tree
 * from any builder (copied to host); kd_stats.c. */
void rt_kd_tree_stats(const RtKdTree *tree, float c_trav, float c_isect, RtKdStats *stats);

/* Closest hit in [tmin, tmax] by kd traversal (tie rules of kd_layout.h).
 * use_woop selects Woop (1) or Moller-Trumbore (0). Returns 1 on a hit.
 * steps (may be NULL) counts visited nodes, for heatmaps. */
int rt_kd_closest_hit(const RtKdTree *tree, const RtTriArrays *tris, RtRay ray, float tmin,
                      float tmax, int use_woop, RtHit *hit, uint32_t *steps);
/* Any hit in [tmin, tmax] (shadow rays). The filter, when non-NULL, may
 * reject a hit (alpha-tested cutouts); the same filter is used by the
 * closest-hit variant below. */
typedef int (*RtHitFilter)(const void *ctx, uint32_t tri, float u, float v);
int rt_kd_closest_hit_filtered(const RtKdTree *tree, const RtTriArrays *tris, RtRay ray,
                               float tmin, float tmax, int use_woop, RtHitFilter filter,
                               const void *ctx, RtHit *hit, uint32_t *steps);
int rt_kd_any_hit(const RtKdTree *tree, const RtTriArrays *tris, RtRay ray, float tmin,
                  float tmax, RtHitFilter filter, const void *ctx);

/* A CPU tracer's leaf step, the tie rule written once for the kd and BVH
 * traversals: triangle id against the best hit so far (best->t: the
 * search's tmax; best->tri: RT_NO_HIT before the first). Replaces *best
 * and returns 1 when the triangle is hit closer, or as close with a lower
 * id, and the filter (may be NULL) accepts the hit. */
static inline int rt_hit_closer(const RtTriArrays *tris, uint32_t id, int use_woop, RtVec3 o,
                                RtVec3 d, float tmin, RtHitFilter filter, const void *ctx,
                                RtHit *best)
{
    float t, u, v;
    if (!rt_isect_tri(tris, id, use_woop, o, d, tmin, best->t, &t, &u, &v)) return 0;
    if (t == best->t && id > best->tri) return 0;
    if (filter && !filter(ctx, id, u, v)) return 0;
    best->t = t;
    best->u = u;
    best->v = v;
    best->tri = id;
    return 1;
}

/* Brute force over every triangle: the oracle for the tree. */
int rt_brute_closest_hit(const RtTriArrays *tris, RtRay ray, float tmin, float tmax,
                         int use_woop, RtHitFilter filter, const void *ctx, RtHit *hit);

/* Checks the tree's invariants: every index in range, child cells inside the
 * parent, every non-degenerate triangle that overlaps a leaf's cell (exact
 * triangle/box overlap, Akenine-Moller) is referenced by that leaf, leaf
 * boxes inside their cells. Returns RT_OK or RT_ERR_PARSE with the first
 * violation in err. Runs on rt_thread_count() threads (RT_THREADS); the
 * violation reported, when there are several, is the same for any count. */
RtStatus rt_kd_validate(const RtKdTree *tree, const RtTriArrays *tris, RtError *err);

/* Exact triangle/AABB overlap (separating axis test, Akenine-Moller 2001). */
int rt_tri_box_overlap(RtVec3 v0, RtVec3 v1, RtVec3 v2, RtAabb box);

/* ---- additions (kd_cpu.c family) -------------------------------------- */

/* rt_kd_tri_degenerate (which triangles never enter a tree) and
 * rt_tri_clip_box (a triangle's perfect-split box in a cell) are kd_clip.h,
 * shared with the GPU builder. */

/* rt_kd_validate with options. RT_KD_VALIDATE_LOOSE_REFS accepts references
 * to triangles that miss their leaf's cell while their bounding box meets it
 * (builders that split triangle boxes instead of clipping triangles, e.g.
 * Zhou et al. 2008's large-node stage); rt_kd_validate is flags = 0. */
#define RT_KD_VALIDATE_LOOSE_REFS 1u
RtStatus rt_kd_validate_flags(const RtKdTree *tree, const RtTriArrays *tris, unsigned flags,
                              RtError *err);
/* rt_kd_validate_flags that also counts, under RT_KD_VALIDATE_LOOSE_REFS, the
 * loose references: triangles a leaf lists whose box meets its cell while
 * the triangle misses it (*loose; 0 without the flag). They cost the tracer
 * triangle tests and the builder references; counting them takes the exact
 * overlap test per reference that the flag otherwise skips. */
RtStatus rt_kd_validate_count(const RtKdTree *tree, const RtTriArrays *tris, unsigned flags, uint64_t *loose,
                              RtError *err);

#ifdef __cplusplus
}
#endif
#endif
