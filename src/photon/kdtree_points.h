/* kdtree_points.h — the balanced k-d tree of points (photons, k = 3; the
 * seed's benchmark, k = 4; any 1 <= k <= RT_KDP_MAX_DIM): Brown 2015,
 * "Building a Balanced k-d Tree in O(kn log n) Time" (JCGT 4(1)), as seed
 * 004 (Robinson's GPU builder, KdTreeGPU) implements it. This header is THE
 * layout: the CPU oracle (kdtree_points.c) and the GPU builder and queries
 * to come include it; the comparisons and the query walk are written once
 * here as RT_HD functions. docs/photon.md describes the algorithm.
 *
 * Super key. Point a's super key from coordinate p is the tuple
 * (a[p], a[p+1], ..., a[k-1], a[0], ..., a[p-1]), compared
 * lexicographically (kdp_super_cmp). Two points are equal under every super
 * key only when all their coordinates are equal: such duplicates are
 * removed before the tree is built (the lowest input index is kept). -0 and
 * +0 compare equal. NaN and infinite points never enter the tree.
 *
 * Layout. n unique points give n nodes, numbered in order of the build's
 * ranges: the subtree over sorted range [lo, hi] (inclusive) has its root at
 * node m = kdp_median(lo, hi) = lo + (hi - lo) / 2 (Brown's median), its
 * left subtree over [lo, m-1] and its right over [m+1, hi]. The root is
 * kdp_median(0, n-1); node numbers are therefore the same whether the tree
 * is built depth first (CPU) or level by level (GPU), and so is the whole
 * tree. Each node stores its point's input index and both child numbers
 * (RT_KDP_NONE for none), so a walk needs no ranges; its coordinates are
 * coords[node * k + c]. A node at depth d (the root: 0) splits on
 * coordinate kdp_axis(d, k) = d mod k: every point of its left subtree has
 * a smaller super key from that coordinate, every point of its right
 * subtree a larger one. Depth = ceil(log2(n + 1)).
 *
 * Tie rules of the queries. Distances are squared Euclidean, summed in
 * coordinate order without contraction (RT_XADD/RT_XMUL), so host and
 * device give the same float. Results are ordered by (distance, input
 * index): equal distances go to the lower index, so the k nearest are one
 * set. A subtree across a split plane holds points whose split coordinate
 * is on the plane or beyond (super keys put equal coordinates on both
 * sides), so the plane distance squared is a lower bound for all of them
 * and the walk skips that subtree only when the bound is strictly greater
 * than the current k-th distance (or than r^2). */
#ifndef RT_KDTREE_POINTS_H
#define RT_KDTREE_POINTS_H

#include "core/rt_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RT_KDP_MAX_DIM 8   /* coordinates per point */
#define RT_KDP_MAX_KNN 64  /* neighbours per kNN query (issue 23) */
#define RT_KDP_NONE 0xffffffffu
/* The walk's stack: one far subtree per level; n < 2^32 points give at
 * most 32 levels. */
#define RT_KDP_STACK 32

typedef struct RtKdpNode {
    uint32_t point;    /* the input index of this node's point */
    uint32_t child[2]; /* left (smaller super key), right (larger); RT_KDP_NONE */
} RtKdpNode;
#ifdef __cplusplus
static_assert(sizeof(RtKdpNode) == 12, "RtKdpNode must stay 12 bytes");
#else
_Static_assert(sizeof(RtKdpNode) == 12, "RtKdpNode must stay 12 bytes");
#endif

typedef struct RtKdpTree {
    uint32_t dim;      /* k, coordinates per point, 1..RT_KDP_MAX_DIM */
    uint32_t count;    /* nodes = unique finite input points */
    uint32_t root;     /* kdp_median(0, count - 1); RT_KDP_NONE when empty */
    uint32_t depth;    /* levels: ceil(log2(count + 1)) */
    RtKdpNode *nodes;  /* count nodes, numbered as above */
    float *coords;     /* count * dim: node i's point at coords[i * dim] */
} RtKdpTree;

/* One query result. */
typedef struct RtKdpHit {
    float d2;       /* squared distance to the query */
    uint32_t point; /* input index */
} RtKdpHit;

/* ---- the per-element rules shared by CPU and GPU ----------------------------- */

RT_HD uint32_t kdp_median(uint32_t lo, uint32_t hi) { return lo + (hi - lo) / 2; }
RT_HD uint32_t kdp_axis(uint32_t depth, uint32_t dim) { return depth % dim; }
/* The range of the left (or right) child of the subtree over [lo, hi]
 * whose root is node = kdp_median(lo, hi): [lo, node - 1] or [node + 1,
 * hi] (empty when *clo > *chi). */
RT_HD void kdp_child_range(int32_t lo, int32_t hi, uint32_t node, int left, int32_t *clo, int32_t *chi)
{
    *clo = left ? lo : (int32_t)node + 1;
    *chi = left ? (int32_t)node - 1 : hi;
}
RT_HD int kdp_is_leaf(RtKdpNode n) { return n.child[0] == RT_KDP_NONE && n.child[1] == RT_KDP_NONE; }

/* Levels of the balanced tree of n points: ceil(log2(n + 1)). */
RT_HD uint32_t kdp_depth(uint32_t n)
{
    uint32_t d = 0;
    while (d < 32 && ((uint64_t)1 << d) < (uint64_t)n + 1) d++;
    return d;
}

/* Range i (0 .. 2^level - 1, left to right) of the given level of the
 * tree of n points: its first sorted position *lo and its size *size (0:
 * no range there). The bits of i, most significant first, are the path
 * from the root (0 left, 1 right): seed 004's "partition address", so a
 * level-by-level builder needs no range storage. Sizes at one level differ
 * by at most one; the largest is n >> level. */
RT_HD void kdp_level_range(uint32_t n, uint32_t level, uint32_t i, uint32_t *lo, uint32_t *size)
{
    uint32_t l = 0, s = n;
    for (uint32_t b = level; b-- > 0 && s > 0;) {
        uint32_t left = (s - 1) / 2; /* [lo, m - 1]; the right half (m, hi] has s / 2 */
        if ((i >> b) & 1u) {
            l += left + 1;
            s /= 2;
        } else {
            s = left;
        }
    }
    *lo = l;
    *size = s;
}

/* Super-key comparison from coordinate p: -1, 0 or 1 (Brown §2). */
RT_HD int kdp_super_cmp(const float *a, const float *b, uint32_t p, uint32_t dim)
{
    for (uint32_t i = 0, c = p; i < dim; i++, c = c + 1 == dim ? 0 : c + 1) {
        if (a[c] < b[c]) return -1;
        if (a[c] > b[c]) return 1;
    }
    return 0;
}

/* All coordinates finite (not NaN, not infinite). */
RT_HD int kdp_finite(const float *a, uint32_t dim)
{
    for (uint32_t c = 0; c < dim; c++)
        if (!(a[c] - a[c] == 0.0f)) return 0;
    return 1;
}

RT_HD float kdp_dist2(const float *a, const float *b, uint32_t dim)
{
    float s = 0.0f;
    for (uint32_t c = 0; c < dim; c++) {
        float d = RT_XSUB(a[c], b[c]);
        s = RT_XADD(s, RT_XMUL(d, d));
    }
    return s;
}

/* The result order: (d2, point) ascending. */
RT_HD int kdp_hit_less(RtKdpHit a, RtKdpHit b)
{
    return a.d2 < b.d2 || (a.d2 == b.d2 && a.point < b.point);
}

/* The kn best hits so far as a max-heap in kdp_hit_less order: h[0] is
 * the worst kept, so a full heap takes a closer hit in O(log kn) (an
 * insertion-sorted list moves ~kn/2 entries per hit: on the GPU, where the
 * list is in local memory, that dominated dense photon gathers). */
RT_HD void kdp_heap_sift_down(RtKdpHit *h, uint32_t n, uint32_t i)
{
    RtKdpHit x = h[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && kdp_hit_less(h[c], h[c + 1])) c++;
        if (!kdp_hit_less(x, h[c])) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/* Adds x to the heap h[0..*count) of at most kn, dropping the worst when full. */
RT_HD void kdp_heap_push(RtKdpHit *h, uint32_t *count, uint32_t kn, RtKdpHit x)
{
    if (*count == kn) {
        if (!kdp_hit_less(x, h[0])) return;
        h[0] = x;
        kdp_heap_sift_down(h, kn, 0);
        return;
    }
    uint32_t i = (*count)++;
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!kdp_hit_less(h[p], x)) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

/* The heap h[0..n) sorted ascending, in place. */
RT_HD void kdp_heap_sort(RtKdpHit *h, uint32_t n)
{
    for (uint32_t e = n; e > 1; e--) {
        RtKdpHit x = h[0];
        h[0] = h[e - 1];
        h[e - 1] = x;
        kdp_heap_sift_down(h, e - 1, 0);
    }
}

/* One step of a walk at node `node` of depth `depth`: the child on the
 * query's side (returned), the other (*far) and the squared distance from
 * the query to the split plane (*bound), a lower bound over *far's points. */
RT_HD uint32_t kdp_step(const RtKdpTree *t, const float *q, uint32_t node, uint32_t depth,
                        uint32_t *far, float *bound)
{
    uint32_t a = kdp_axis(depth, t->dim);
    float diff = RT_XSUB(q[a], t->coords[(size_t)node * t->dim + a]);
    int side = diff < 0.0f ? 0 : 1;
    *far = t->nodes[node].child[1 - side];
    *bound = RT_XMUL(diff, diff);
    return t->nodes[node].child[side];
}

/* The kn (<= RT_KDP_MAX_KNN) nearest points with d2 <= r2 into out as a
 * heap (kdp_heap_push: out[0] the farthest of them when all kn were
 * found); returns how many (fewer when the tree or the radius holds
 * fewer). r2 = INFINITY gives the plain kNN. A query with a NaN coordinate
 * finds nothing. The set is exact under the tie rule; its order in out is
 * the walk's, the same on host and device. */
RT_HD uint32_t kdp_knn_collect(const RtKdpTree *t, const float *q, uint32_t kn, float r2, RtKdpHit *out)
{
    /* The walk carries each subtree's range [lo, hi] of the sorted order:
     * its root is kdp_median(lo, hi) and its children's ranges follow from
     * that (the layout rule above), so a visit loads the node's
     * coordinates alone -- nodes[] only for a point that enters the heap --
     * and the next node's address is known before the current one's load
     * returns. */
    struct { int32_t lo, hi; uint32_t depth; float bound; } stack[RT_KDP_STACK];
    uint32_t count = 0, sp = 0;
    if (kn > RT_KDP_MAX_KNN) kn = RT_KDP_MAX_KNN;
    if (t->root == RT_KDP_NONE || kn == 0 || !kdp_finite(q, t->dim) || !(r2 >= 0.0f)) return 0;
    stack[sp].lo = 0;
    stack[sp].hi = (int32_t)t->count - 1;
    stack[sp].depth = 0;
    stack[sp++].bound = 0.0f;
    while (sp > 0) {
        sp--;
        int32_t lo = stack[sp].lo, hi = stack[sp].hi;
        uint32_t depth = stack[sp].depth;
        if (count == kn && stack[sp].bound > out[0].d2) continue;
        for (; lo <= hi; depth++) {
            uint32_t node = kdp_median((uint32_t)lo, (uint32_t)hi);
            const float *c = t->coords + (size_t)node * t->dim;
            float d2 = kdp_dist2(q, c, t->dim);
            if (d2 <= r2) {
                RtKdpHit h = {d2, t->nodes[node].point};
                kdp_heap_push(out, &count, kn, h);
            }
            uint32_t a = kdp_axis(depth, t->dim);
            float diff = RT_XSUB(q[a], c[a]), bound = RT_XMUL(diff, diff);
            /* the query's side: the left range when diff < 0 (kdp_step) */
            int32_t far_lo, far_hi;
            kdp_child_range(lo, hi, node, !(diff < 0.0f), &far_lo, &far_hi);
            kdp_child_range(lo, hi, node, diff < 0.0f, &lo, &hi);
            if (far_lo <= far_hi && bound <= r2 && (count < kn || bound <= out[0].d2) && sp < RT_KDP_STACK) {
                stack[sp].lo = far_lo;
                stack[sp].hi = far_hi;
                stack[sp].depth = depth + 1;
                stack[sp++].bound = bound;
            }
        }
    }
    return count;
}

/* kdp_knn_collect's hits sorted by (d2, point). */
RT_HD uint32_t kdp_knn_search(const RtKdpTree *t, const float *q, uint32_t kn, float r2, RtKdpHit *out)
{
    uint32_t n = kdp_knn_collect(t, q, kn, r2, out);
    kdp_heap_sort(out, n);
    return n;
}

/* Every point with d2 <= r2: the first `max` found (in walk order, not
 * sorted) into out; returns how many there are in all, so a result above
 * max says out was truncated. out may be NULL when max is 0 (a count). */
RT_HD uint32_t kdp_radius_search(const RtKdpTree *t, const float *q, float r2, RtKdpHit *out, uint32_t max)
{
    struct { uint32_t node, depth; } stack[RT_KDP_STACK];
    uint32_t sp = 0, count = 0;
    if (t->root == RT_KDP_NONE || !kdp_finite(q, t->dim) || !(r2 >= 0.0f)) return 0;
    stack[sp].node = t->root;
    stack[sp++].depth = 0;
    while (sp > 0) {
        sp--;
        uint32_t depth = stack[sp].depth;
        for (uint32_t node = stack[sp].node; node != RT_KDP_NONE; depth++) {
            float d2 = kdp_dist2(q, t->coords + (size_t)node * t->dim, t->dim);
            if (d2 <= r2) {
                if (count < max) {
                    RtKdpHit h = {d2, t->nodes[node].point};
                    out[count] = h;
                }
                count++;
            }
            uint32_t far;
            float bound;
            node = kdp_step(t, q, node, depth, &far, &bound);
            if (far != RT_KDP_NONE && bound <= r2 && sp < RT_KDP_STACK) {
                stack[sp].node = far;
                stack[sp++].depth = depth + 1;
            }
        }
    }
    return count;
}

/* Sorts h[0..n) by (d2, point) (insertion: short lists, no recursion on
 * the GPU). */
RT_HD void kdp_sort_hits(RtKdpHit *h, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        RtKdpHit x = h[i];
        uint32_t j = i;
        for (; j > 0 && kdp_hit_less(x, h[j - 1]); j--) h[j] = h[j - 1];
        h[j] = x;
    }
}

/* ---- the CPU oracle (kdtree_points.c) ------------------------------------------ */

typedef struct RtKdpStats {
    uint32_t input;      /* points given */
    uint32_t rejected;   /* with a NaN or infinite coordinate, left out */
    uint32_t duplicates; /* equal to a point of lower index, left out */
    double sort_ms;      /* the k presorts */
    double dedup_ms;     /* duplicate removal */
    double build_ms;     /* median and partition, all levels */
    uint32_t resorted;   /* GPU: presort arrays whose primary coordinates tied, sorted
                          * again on the whole super key (CPU: 0) */
} RtKdpStats;

/* Builds the tree of the n points pts[i * dim .. i * dim + dim) (Brown's
 * depth-first algorithm; the top levels split serially, the subtrees below
 * them on the project's threads). st may be NULL. Errors: RT_ERR_ARG (dim
 * outside 1..RT_KDP_MAX_DIM, pts NULL with n > 0), RT_ERR_OOM. An empty
 * tree (n = 0, or every point rejected) is valid. */
/* The start every builder (CPU, GPU) shares: *st (or a scratch when NULL:
 * *stp points at the one to fill) and *tree emptied for dim, then the
 * arguments checked (dim in 1..RT_KDP_MAX_DIM, pts given for n > 0, n below
 * RT_KDP_NONE). RT_ERR_ARG names the fault. */
RtStatus rt_kdp_build_begin(const void *pts, uint32_t n, uint32_t dim, RtKdpTree *tree, RtKdpStats *st,
                            RtError *err);

RtStatus rt_kdp_build_cpu(const float *pts, uint32_t n, uint32_t dim, RtKdpTree *tree,
                          RtKdpStats *st, RtError *err);
void rt_kdp_free(RtKdpTree *tree);

/* Checks the tree against the n input points it was built from: structure
 * (indices in range, every node reached once from the root, the numbering
 * rule above), depth = ceil(log2(count + 1)), each node's coordinates equal
 * its input point's, every node's subtrees on the right sides of its super
 * key from its split coordinate, and every finite input point present once
 * (itself, or the equal point of lowest index). The first violation is
 * named in err (RT_ERR_PARSE). */
RtStatus rt_kdp_validate(const RtKdpTree *tree, const float *pts, uint32_t n, RtError *err);

/* The kn nearest points to q (kn is clamped to RT_KDP_MAX_KNN), sorted by
 * (d2, point); returns how many. */
uint32_t rt_kdp_knn(const RtKdpTree *tree, const float *q, uint32_t kn, RtKdpHit *out);

/* Every point with d2 <= r2, sorted by (d2, point), into *hits (malloc'd;
 * free it), *count of them. RT_ERR_OOM. */
RtStatus rt_kdp_radius(const RtKdpTree *tree, const float *q, float r2, RtKdpHit **hits,
                       uint32_t *count, RtError *err);

#ifdef __cplusplus
}
#endif

#endif
