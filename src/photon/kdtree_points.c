/* kdtree_points.c — the CPU oracle of the balanced point k-d tree
 * (kdtree_points.h): Brown 2015's depth-first builder, the verifier and the
 * radius query. The steps, as seed 004 names them:
 *   1. reject points with a NaN or infinite coordinate;
 *   2. presort: k reference arrays, array p sorted by the super key from
 *      coordinate p (merge sort of (coordinate p, index) pairs: Robinson's
 *      value array, the full super key only on equal values), in parallel;
 *   3. remove duplicates: equal tuples are adjacent in every array, the
 *      lowest index first; all but that one go;
 *   4. build: the median of the split coordinate's array becomes the node,
 *      the other k - 1 arrays are partitioned around it, stably, then both
 *      halves recurse with the next coordinate. The top levels split
 *      serially, the subtrees below run on the project's threads (Brown's
 *      own multithreading: threads down different branches). */
#include "photon/kdtree_points.h"

#include "core/parallel.h"

#include <stdlib.h>
#include <string.h>

/* Merge sort runs below this length are insertion-sorted. */
#define KDP_SORT_SMALL 16u
/* The build splits serially until it has this many subtrees per worker,
 * and only for trees of at least KDP_PARALLEL_MIN points. */
#define KDP_TASKS_PER_WORKER 8u
#define KDP_PARALLEL_MIN 65536u

/* ---- 2. presort ------------------------------------------------------------- */

/* Robinson's value array: the primary coordinate next to the reference, so
 * the sort reads the tuple only on equal values. */
typedef struct KdpKey {
    float v;
    uint32_t i;
} KdpKey;

typedef struct KdpSort {
    const float *pts;
    uint32_t dim, n;
    uint32_t **refs; /* out: dim arrays of n */
    KdpKey *keys;    /* dim * 2 * n: per array, the keys and the merge buffer */
} KdpSort;

/* Super key from p, then index: a total order, so the sort is unique. */
static int key_less(const KdpSort *s, uint32_t p, KdpKey a, KdpKey b)
{
    if (a.v != b.v) return a.v < b.v;
    int c = kdp_super_cmp(s->pts + (size_t)a.i * s->dim, s->pts + (size_t)b.i * s->dim, p, s->dim);
    return c != 0 ? c < 0 : a.i < b.i;
}

/* Sorts a[0..n) using tmp[0..n). */
static void merge_sort(const KdpSort *s, uint32_t p, KdpKey *a, KdpKey *tmp, uint32_t n)
{
    if (n <= KDP_SORT_SMALL) {
        for (uint32_t i = 1; i < n; i++) {
            KdpKey x = a[i];
            uint32_t j = i;
            for (; j > 0 && key_less(s, p, x, a[j - 1]); j--) a[j] = a[j - 1];
            a[j] = x;
        }
        return;
    }
    uint32_t h = n / 2;
    merge_sort(s, p, a, tmp, h);
    merge_sort(s, p, a + h, tmp + h, n - h);
    if (!key_less(s, p, a[h], a[h - 1])) return; /* already in order */
    memcpy(tmp, a, (size_t)n * sizeof *a);
    uint32_t i = 0, j = h, o = 0;
    while (i < h && j < n) a[o++] = key_less(s, p, tmp[j], tmp[i]) ? tmp[j++] : tmp[i++];
    while (i < h) a[o++] = tmp[i++];
    while (j < n) a[o++] = tmp[j++];
}

static void sort_task(void *ctx, int worker, size_t task)
{
    (void)worker;
    KdpSort *s = ctx;
    uint32_t p = (uint32_t)task, *ref = s->refs[p];
    KdpKey *a = s->keys + (size_t)p * 2 * s->n, *tmp = a + s->n;
    for (uint32_t j = 0; j < s->n; j++) a[j] = (KdpKey){s->pts[(size_t)ref[j] * s->dim + p], ref[j]};
    merge_sort(s, p, a, tmp, s->n);
    for (uint32_t j = 0; j < s->n; j++) ref[j] = a[j].i;
}

/* ---- 4. build ----------------------------------------------------------------- */

typedef struct KdpBuild {
    const float *pts;
    uint32_t dim;
    uint32_t **refs;  /* dim arrays of n: array p sorted by super key p, per range */
    uint32_t *tmp;    /* n: the partition's output, per range */
    RtKdpTree *tree;
} KdpBuild;

typedef struct KdpRange {
    uint32_t lo, hi, depth; /* inclusive; hi < lo is empty */
} KdpRange;

static const float *pt(const KdpBuild *b, uint32_t i) { return b->pts + (size_t)i * b->dim; }

static uint32_t range_root(uint32_t lo, uint32_t hi) { return hi < lo || hi == RT_KDP_NONE ? RT_KDP_NONE : kdp_median(lo, hi); }

/* Makes the node of [lo, hi] (non-empty) and partitions the other arrays
 * around it, so both halves are again sorted ranges of every array. */
static void split(const KdpBuild *b, KdpRange r)
{
    uint32_t p = kdp_axis(r.depth, b->dim), m = kdp_median(r.lo, r.hi), med = b->refs[p][m];
    const float *mp = pt(b, med);
    RtKdpTree *t = b->tree;
    t->nodes[m].point = med;
    t->nodes[m].child[0] = m > r.lo ? range_root(r.lo, m - 1) : RT_KDP_NONE;
    t->nodes[m].child[1] = range_root(m + 1, r.hi);
    memcpy(t->coords + (size_t)m * b->dim, mp, b->dim * sizeof(float));
    for (uint32_t q = 0; q < b->dim; q++) {
        if (q == p) continue; /* array p is split already: [lo, m) < median < (m, hi] */
        uint32_t *ref = b->refs[q], lo = r.lo, hi = m + 1;
        for (uint32_t j = r.lo; j <= r.hi; j++) {
            int c = kdp_super_cmp(pt(b, ref[j]), mp, p, b->dim);
            if (c < 0) b->tmp[lo++] = ref[j];
            else if (c > 0) b->tmp[hi++] = ref[j];
        }
        b->tmp[m] = med;
        memcpy(ref + r.lo, b->tmp + r.lo, (size_t)(r.hi - r.lo + 1) * sizeof *ref);
    }
}

static void build_range(const KdpBuild *b, KdpRange r)
{
    while (r.lo <= r.hi && r.hi != RT_KDP_NONE) {
        split(b, r);
        uint32_t m = kdp_median(r.lo, r.hi);
        if (m > r.lo) build_range(b, (KdpRange){r.lo, m - 1, r.depth + 1});
        r = (KdpRange){m + 1, r.hi, r.depth + 1};
    }
}

typedef struct KdpBuildRun {
    const KdpBuild *b;
    const KdpRange *ranges;
} KdpBuildRun;

static void build_task(void *ctx, int worker, size_t task)
{
    (void)worker;
    const KdpBuildRun *run = ctx;
    build_range(run->b, run->ranges[task]);
}

/* The top levels serially, level by level, until there are enough subtrees
 * for the workers; then the subtrees in parallel. Each range writes only its
 * own nodes and array slots, so the tree is the same on any thread count. */
static RtStatus build_tree(const KdpBuild *b, uint32_t n, RtError *err)
{
    int workers = rt_parallel_workers(0, n / KDP_PARALLEL_MIN + 1);
    size_t want = workers > 1 ? (size_t)workers * KDP_TASKS_PER_WORKER : 1;
    KdpRange *cur = malloc(2 * want * sizeof *cur), *next = malloc(2 * want * sizeof *next);
    if (!cur || !next) {
        free(cur);
        free(next);
        return rt_fail(err, RT_ERR_OOM, "KDP: out of memory for %zu build ranges", want);
    }
    size_t count = 1;
    cur[0] = (KdpRange){0, n - 1, 0};
    while (count < want) {
        size_t out = 0;
        for (size_t i = 0; i < count; i++) {
            KdpRange r = cur[i];
            split(b, r);
            uint32_t m = kdp_median(r.lo, r.hi);
            if (m > r.lo) next[out++] = (KdpRange){r.lo, m - 1, r.depth + 1};
            if (m < r.hi) next[out++] = (KdpRange){m + 1, r.hi, r.depth + 1};
        }
        KdpRange *swap = cur;
        cur = next;
        next = swap;
        count = out;
        if (out == 0) break;
    }
    KdpBuildRun run = {b, cur};
    rt_parallel_for(rt_parallel_workers(workers, count), count, build_task, &run);
    free(cur);
    free(next);
    return RT_OK;
}

/* ---- the driver ----------------------------------------------------------------- */

void rt_kdp_free(RtKdpTree *tree)
{
    if (!tree) return;
    free(tree->nodes);
    free(tree->coords);
    memset(tree, 0, sizeof *tree);
    tree->root = RT_KDP_NONE;
}

RtStatus rt_kdp_build_begin(const void *pts, uint32_t n, uint32_t dim, RtKdpTree *tree, RtKdpStats *st,
                            RtError *err)
{
    if (st) {
        memset(st, 0, sizeof *st);
        st->input = n;
    }
    memset(tree, 0, sizeof *tree);
    tree->root = RT_KDP_NONE;
    tree->dim = dim;
    if (dim < 1 || dim > RT_KDP_MAX_DIM)
        return rt_fail(err, RT_ERR_ARG, "KDP: %u coordinates per point; expected 1..%d", dim, RT_KDP_MAX_DIM);
    if (n > 0 && !pts) return rt_fail(err, RT_ERR_ARG, "KDP: %u points but no coordinates", n);
    if (n == RT_KDP_NONE) return rt_fail(err, RT_ERR_ARG, "KDP: %u points; at most %u", n, n - 1);
    return RT_OK;
}

RtStatus rt_kdp_build_cpu(const float *pts, uint32_t n, uint32_t dim, RtKdpTree *tree,
                          RtKdpStats *st, RtError *err)
{
    RtKdpStats local;
    if (!st) st = &local;
    RtStatus begun = rt_kdp_build_begin(pts, n, dim, tree, st, err);
    if (begun != RT_OK) return begun;

    /* 1. finite points only */
    double t0 = rt_now_ms();
    uint32_t *refs[RT_KDP_MAX_DIM] = {0}, *tmp = NULL;
    KdpKey *keys = NULL;
    RtStatus status = RT_OK;
    uint32_t m = 0;
    for (uint32_t p = 0; p < dim; p++)
        if (!(refs[p] = malloc(((size_t)n + 1) * sizeof(uint32_t)))) goto oom;
    for (uint32_t i = 0; i < n; i++)
        if (kdp_finite(pts + (size_t)i * dim, dim)) refs[0][m++] = i;
    st->rejected = n - m;
    for (uint32_t p = 1; p < dim; p++) memcpy(refs[p], refs[0], (size_t)m * sizeof(uint32_t));

    /* 2. presort, one array per task */
    if (!(keys = malloc((size_t)dim * 2 * ((size_t)m + 1) * sizeof *keys))) goto oom;
    KdpSort s = {pts, dim, m, refs, keys};
    rt_parallel_for(rt_parallel_workers(0, dim), dim, sort_task, &s);
    free(keys);
    keys = NULL;
    double t1 = rt_now_ms();
    st->sort_ms = t1 - t0;

    /* 3. duplicates: array 0 holds each run of equal tuples together, its
     * lowest index first; the others drop the same indices */
    uint8_t *gone = m ? calloc(n, 1) : NULL;
    if (m && !gone) goto oom;
    uint32_t u = m ? 1 : 0;
    for (uint32_t j = 1; j < m; j++) {
        if (kdp_super_cmp(pts + (size_t)refs[0][j] * dim, pts + (size_t)refs[0][u - 1] * dim, 0, dim) == 0)
            gone[refs[0][j]] = 1;
        else
            refs[0][u++] = refs[0][j];
    }
    for (uint32_t p = 1; p < dim; p++) {
        uint32_t o = 0;
        for (uint32_t j = 0; j < m; j++)
            if (!gone[refs[p][j]]) refs[p][o++] = refs[p][j];
    }
    free(gone);
    st->duplicates = m - u;
    double t2 = rt_now_ms();
    st->dedup_ms = t2 - t1;

    /* 4. the tree */
    tree->count = u;
    tree->depth = kdp_depth(u);
    if (u > 0) {
        tree->nodes = malloc((size_t)u * sizeof *tree->nodes);
        tree->coords = malloc((size_t)u * dim * sizeof(float));
        tmp = malloc((size_t)u * sizeof *tmp);
        if (!tree->nodes || !tree->coords || !tmp) goto oom;
        tree->root = kdp_median(0, u - 1);
        KdpBuild b = {pts, dim, refs, tmp, tree};
        status = build_tree(&b, u, err);
    }
    st->build_ms = rt_now_ms() - t2;
    goto done;
oom:
    status = rt_fail(err, RT_ERR_OOM, "KDP: out of memory for the tree of %u points of %u coordinates", n, dim);
done:
    for (uint32_t p = 0; p < dim; p++) free(refs[p]);
    free(keys);
    free(tmp);
    if (status != RT_OK) rt_kdp_free(tree);
    return status;
}

/* ---- queries ------------------------------------------------------------------- */

uint32_t rt_kdp_knn(const RtKdpTree *tree, const float *q, uint32_t kn, RtKdpHit *out)
{
    return kdp_knn_search(tree, q, kn, INFINITY, out);
}

static int hit_cmp(const void *a, const void *b)
{
    RtKdpHit x = *(const RtKdpHit *)a, y = *(const RtKdpHit *)b;
    return kdp_hit_less(x, y) ? -1 : kdp_hit_less(y, x) ? 1 : 0;
}

RtStatus rt_kdp_radius(const RtKdpTree *t, const float *q, float r2, RtKdpHit **hits,
                       uint32_t *count, RtError *err)
{
    /* two walks: the count, then the hits into an array of that size */
    uint32_t n = kdp_radius_search(t, q, r2, NULL, 0);
    *hits = NULL;
    *count = 0;
    if (n == 0) return RT_OK;
    if (!(*hits = malloc((size_t)n * sizeof **hits)))
        return rt_fail(err, RT_ERR_OOM, "KDP: out of memory for %u radius hits", n);
    kdp_radius_search(t, q, r2, *hits, n);
    qsort(*hits, n, sizeof **hits, hit_cmp);
    *count = n;
    return RT_OK;
}
