/* bvh_build_cpu.c — the CPU oracle's LBVH: Karras 2012, "Maximizing
 * parallelism in the construction of BVHs, octrees, and k-d trees", as
 * loops over lbvh.h's steps, so the tree is the GPU builder's bit for bit.
 *
 * Each step is a parallel loop over fixed chunks (core/parallel.h) whose
 * result does not depend on which worker ran which chunk: the boxes and
 * codes are per triangle, the radix sort is stable with per-chunk counts,
 * the node ranges are per node, and the bottom-up pass is the GPU's own
 * scheme (the second child to arrive finishes its parent, an atomic counter
 * per node), whose output depends only on the children. So the tree is the
 * same for any thread count. docs/bvh.md describes the steps and the layout.
 */
#include "bvh/bvh_cpu.h"

#include "core/parallel.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Triangles or nodes per task: enough to pay for taking it, small enough to
 * balance (a task of the bottom-up pass climbs from this many leaves). */
#define LBVH_CHUNK 4096u
/* The radix sort: 8 bits a pass, four passes over the 32-bit code, so the
 * sorted ids end in the array they started in (bvh->tri_index). Items per
 * task: the per-chunk counts (1 KB each) stay small beside the data. */
#define LBVH_RADIX_BITS 8
#define LBVH_RADIX_BUCKETS (1u << LBVH_RADIX_BITS)
#define LBVH_RADIX_PASSES (32 / LBVH_RADIX_BITS)
#define LBVH_RADIX_CHUNK (1u << 16)

RtLbvhParams rt_lbvh_params_default(void)
{
    RtLbvhParams p;
    p.c_trav = 1.0f;
    p.c_isect = 1.5f;
    p.max_leaf = 8;
    return p;
}

RtStatus rt_lbvh_params_check(const RtLbvhParams *p, RtError *err)
{
    if (!p) return rt_fail(err, RT_ERR_ARG, "BVH: no LBVH parameters");
    if (!(p->c_trav >= 0.0f) || !isfinite(p->c_trav))
        return rt_fail(err, RT_ERR_ARG, "BVH: c_trav must be a finite number >= 0 (got %g)",
                       (double)p->c_trav);
    if (!(p->c_isect > 0.0f) || !isfinite(p->c_isect))
        return rt_fail(err, RT_ERR_ARG, "BVH: c_isect must be a finite number > 0 (got %g)",
                       (double)p->c_isect);
    if (p->max_leaf < 1 || p->max_leaf > (int)RT_BVH_MAX_LEAF)
        return rt_fail(err, RT_ERR_ARG, "BVH: max_leaf must be in [1, %u] (got %d)",
                       RT_BVH_MAX_LEAF, p->max_leaf);
    return RT_OK;
}

/* What the steps share. Internal node i of the n - 1 has the key range
 * [first[i], last[i]] split after split[i] (lbvh_node_range); up[] holds the
 * parent of internal node i at i and of sorted key k at n - 1 + k. */
typedef struct LbvhBuild {
    const RtTriArrays *tris;
    const RtLbvhParams *p;
    uint32_t count; /* input triangles */
    uint32_t n;     /* valid keys (non-degenerate triangles) */
    RtAabb *box;    /* per triangle id (lbvh_tri_box) */
    RtAabb *part;   /* per chunk: the union of its boxes */
    RtAabb scene;
    RtVec3 scale;
    uint32_t *code, *id;         /* the sort's keys and values: sorted in place */
    uint32_t *code_tmp, *id_tmp; /* the other half of each radix pass */
    uint32_t *counts;            /* radix: per chunk, per bucket; then the chunk's offsets */
    int shift;                   /* radix: the pass's digit */
    uint32_t *first, *last, *split, *up;
    _Atomic uint32_t *arrived; /* bottom-up: children finished, per internal node */
    float *cost;               /* bottom-up: the finished node's RtLbvhSub.cost */
    uint8_t *as_leaf;          /* ... and its as_leaf */
    RtBvhNode *nodes;
} LbvhBuild;

static void run(LbvhBuild *b, size_t tasks, RtTaskFn fn)
{
    rt_parallel_for(rt_parallel_workers(0, tasks), tasks, fn, b);
}

/* ---- step 1: boxes, and the scene box ---------------------------------------- */

static void box_task(void *ctx, int worker, size_t task)
{
    LbvhBuild *b = ctx;
    (void)worker;
    size_t i, end;
    rt_parallel_chunk(task, LBVH_CHUNK, b->count, &i, &end);
    RtAabb u = aabb_empty();
    for (; i < end; i++) {
        const RtFloat4 *w = b->tris->woop ? &b->tris->woop[3 * (size_t)i] : NULL;
        b->box[i] = lbvh_tri_box(&b->tris->verts[3 * (size_t)i], w);
        u = aabb_union(u, b->box[i]); /* an empty box changes nothing */
    }
    b->part[task] = u;
}

/* ---- step 2: Morton codes, sorted -------------------------------------------- */

static void code_task(void *ctx, int worker, size_t task)
{
    LbvhBuild *b = ctx;
    (void)worker;
    size_t i, end;
    rt_parallel_chunk(task, LBVH_CHUNK, b->count, &i, &end);
    for (; i < end; i++) {
        b->code[i] = lbvh_morton(b->box[i], b->scene, b->scale);
        b->id[i] = (uint32_t)i;
    }
}

static void radix_count_task(void *ctx, int worker, size_t task)
{
    LbvhBuild *b = ctx;
    (void)worker;
    uint32_t *c = &b->counts[task * LBVH_RADIX_BUCKETS];
    size_t i, end;
    rt_parallel_chunk(task, LBVH_RADIX_CHUNK, b->count, &i, &end);
    memset(c, 0, LBVH_RADIX_BUCKETS * sizeof *c);
    for (; i < end; i++) c[(b->code[i] >> b->shift) & (LBVH_RADIX_BUCKETS - 1)]++;
}

/* Each chunk writes its items, in order, from its own offset per bucket:
 * the pass is stable, so equal codes keep their ids ascending. */
static void radix_scatter_task(void *ctx, int worker, size_t task)
{
    LbvhBuild *b = ctx;
    (void)worker;
    uint32_t *off = &b->counts[task * LBVH_RADIX_BUCKETS];
    size_t i, end;
    rt_parallel_chunk(task, LBVH_RADIX_CHUNK, b->count, &i, &end);
    for (; i < end; i++) {
        uint32_t at = off[(b->code[i] >> b->shift) & (LBVH_RADIX_BUCKETS - 1)]++;
        b->code_tmp[at] = b->code[i];
        b->id_tmp[at] = b->id[i];
    }
}

/* LSD radix sort of (code, id) by code; ids start ascending, so the order is
 * by code, then id (lbvh.h's step 2). */
static void sort_codes(LbvhBuild *b)
{
    const size_t tasks = rt_parallel_chunks(b->count, LBVH_RADIX_CHUNK);
    for (int pass = 0; pass < LBVH_RADIX_PASSES; pass++) {
        b->shift = pass * LBVH_RADIX_BITS;
        run(b, tasks, radix_count_task);
        /* bucket by bucket, chunk by chunk: each chunk's first slot per bucket */
        uint32_t sum = 0;
        for (uint32_t d = 0; d < LBVH_RADIX_BUCKETS; d++)
            for (size_t c = 0; c < tasks; c++) {
                uint32_t k = b->counts[c * LBVH_RADIX_BUCKETS + d];
                b->counts[c * LBVH_RADIX_BUCKETS + d] = sum;
                sum += k;
            }
        run(b, tasks, radix_scatter_task);
        uint32_t *t = b->code;
        b->code = b->code_tmp;
        b->code_tmp = t;
        t = b->id;
        b->id = b->id_tmp;
        b->id_tmp = t;
    }
}

/* ---- step 3: the radix tree ---------------------------------------------------- */

static void range_task(void *ctx, int worker, size_t task)
{
    LbvhBuild *b = ctx;
    (void)worker;
    const uint32_t key = b->n - 1; /* up[] of sorted key k: up[key + k] */
    size_t lo, end;
    rt_parallel_chunk(task, LBVH_CHUNK, b->n - 1, &lo, &end);
    for (uint32_t i = (uint32_t)lo; i < end; i++) {
        lbvh_node_range(b->code, b->n, i, &b->first[i], &b->last[i], &b->split[i]);
        uint32_t s = b->split[i];
        b->up[s == b->first[i] ? key + s : s] = i;
        b->up[s + 1 == b->last[i] ? key + s + 1 : s + 1] = i;
        atomic_init(&b->arrived[i], 0u);
    }
}

/* ---- step 4: bottom-up ----------------------------------------------------------- */

/* Child k of internal node i as lbvh_finish_node takes it: a single key, or
 * a finished internal node rebuilt from what its finishing wrote (its output
 * node holds both child boxes, whose union is the box it returned). */
static RtLbvhSub child_sub(const LbvhBuild *b, uint32_t i, int k)
{
    uint32_t j = b->split[i] + (uint32_t)k;
    if (j == (k ? b->last[i] : b->first[i])) return lbvh_leaf_sub(b->box[b->id[j]], j, b->p);
    const RtBvhNode *nd = &b->nodes[j];
    RtLbvhSub s;
    s.box = aabb_union(bvh_child_box(nd, 0), bvh_child_box(nd, 1));
    s.cost = b->cost[j];
    s.first = b->first[j];
    s.count = b->last[j] - b->first[j] + 1;
    s.node = j;
    s.as_leaf = b->as_leaf[j];
    s.height = 0; /* the LBVH's depth is bounded by its keys (bvh_layout.h): not tracked */
    return s;
}

/* From each key up: the first child to arrive at a node stops there, the
 * second finishes the node and climbs on (Karras §4, as the GPU does it).
 * The counter's acquire-release orders the first child's output before the
 * second's reads. */
static void climb_task(void *ctx, int worker, size_t task)
{
    LbvhBuild *b = ctx;
    (void)worker;
    size_t k, end;
    rt_parallel_chunk(task, LBVH_CHUNK, b->n, &k, &end);
    for (; k < end; k++) {
        uint32_t i = b->up[b->n - 1 + k];
        while (atomic_fetch_add_explicit(&b->arrived[i], 1u, memory_order_acq_rel) == 1u) {
            RtLbvhSub s =
                lbvh_finish_node(i, child_sub(b, i, 0), child_sub(b, i, 1), b->p, &b->nodes[i]);
            b->cost[i] = s.cost;
            b->as_leaf[i] = (uint8_t)s.as_leaf;
            if (i == 0) break; /* the root: the walk's start, never collapsed */
            i = b->up[i];
        }
    }
}

/* ---- entry point ------------------------------------------------------------------- */

/* malloc for n items, n = 0 included (a valid, if unused, pointer), on
 * huge pages where the system has them: each array is written once, front
 * to back, and a big build's page faults cost as much as its arithmetic. */
static void *alloc(size_t n, size_t elem)
{
    void *p = malloc((n ? n : 1) * elem);
    if (p) rt_advise_huge(p, n * elem);
    return p;
}

static void build_free(LbvhBuild *b)
{
    free(b->box);
    free(b->part);
    free(b->code);
    free(b->code_tmp);
    free(b->id_tmp);
    free(b->counts);
    free(b->first);
    free(b->last);
    free(b->split);
    free(b->up);
    free((void *)b->arrived);
    free(b->cost);
    free(b->as_leaf);
}

/* Steps 1 and 2: boxes, codes, the sorted ids in ids[], b->n. */
static int sort_triangles(LbvhBuild *b, uint32_t *ids)
{
    const size_t tasks = rt_parallel_chunks(b->count, LBVH_CHUNK);
    b->box = alloc(b->count, sizeof *b->box);
    b->part = alloc(tasks, sizeof *b->part);
    b->code = alloc(b->count, sizeof *b->code);
    b->code_tmp = alloc(b->count, sizeof *b->code_tmp);
    b->id_tmp = alloc(b->count, sizeof *b->id_tmp);
    b->counts = alloc(rt_parallel_chunks(b->count, LBVH_RADIX_CHUNK) * LBVH_RADIX_BUCKETS,
                      sizeof *b->counts);
    if (!b->box || !b->part || !b->code || !b->code_tmp || !b->id_tmp || !b->counts) return 0;
    b->id = ids;
    run(b, tasks, box_task);
    b->scene = aabb_empty();
    for (size_t c = 0; c < tasks; c++) b->scene = aabb_union(b->scene, b->part[c]);
    b->scale = lbvh_scale(b->scene);
    run(b, tasks, code_task);
    sort_codes(b);
    /* the degenerate triangles' RT_LBVH_INVALID sorts last */
    b->n = b->count;
    while (b->n > 0 && b->code[b->n - 1] == RT_LBVH_INVALID) b->n--;
    free(b->code_tmp);
    free(b->id_tmp);
    free(b->counts);
    b->code_tmp = b->id_tmp = b->counts = NULL;
    return 1;
}

int rt_bvh_sort_keys_cpu(const RtTriArrays *tris, uint32_t *ids, RtBvhKeys *keys)
{
    LbvhBuild b;
    memset(&b, 0, sizeof b);
    b.tris = tris;
    b.count = tris->count;
    int ok = sort_triangles(&b, ids);
    keys->count = b.count;
    keys->n = ok ? b.n : 0;
    keys->box = b.box;
    keys->code = b.code;
    b.box = NULL;
    b.code = NULL;
    build_free(&b);
    if (!ok) rt_bvh_keys_free(keys);
    return ok;
}

void rt_bvh_keys_free(RtBvhKeys *keys)
{
    free(keys->box);
    free(keys->code);
    keys->box = NULL;
    keys->code = NULL;
}

/* Steps 3 and 4 for n >= 2 keys. */
static int build_tree(LbvhBuild *b)
{
    const uint32_t m = b->n - 1; /* internal nodes */
    b->first = alloc(m, sizeof *b->first);
    b->last = alloc(m, sizeof *b->last);
    b->split = alloc(m, sizeof *b->split);
    b->up = alloc((size_t)m + b->n, sizeof *b->up);
    b->arrived = alloc(m, sizeof *b->arrived);
    b->cost = alloc(m, sizeof *b->cost);
    b->as_leaf = alloc(m, 1);
    if (!b->first || !b->last || !b->split || !b->up || !b->arrived || !b->cost || !b->as_leaf)
        return 0;
    run(b, rt_parallel_chunks(m, LBVH_CHUNK), range_task);
    run(b, rt_parallel_chunks(b->n, LBVH_CHUNK), climb_task);
    return 1;
}

RtStatus rt_lbvh_build_cpu(const RtLbvhParams *params, const RtTriArrays *tris, RtBvh *bvh,
                           RtBvhStats *stats, RtError *err)
{
    double t0 = rt_now_ms();
    RtLbvhParams p = params ? *params : rt_lbvh_params_default();
    RtStatus st = rt_lbvh_params_check(&p, err);
    if (st != RT_OK) return st;
    if (!tris || !bvh || (tris->count && !tris->verts))
        return rt_fail(err, RT_ERR_ARG, "BVH: no triangle arrays or no BVH to build into");

    LbvhBuild b;
    memset(&b, 0, sizeof b);
    b.tris = tris;
    b.p = &p;
    b.count = tris->count;
    /* the arrays of a previous build are reused when large enough */
    int ok = rt_reserve_array((void **)&bvh->tri_index, &bvh->index_cap, b.count,
                              sizeof *bvh->tri_index) &&
             sort_triangles(&b, bvh->tri_index);
    /* n keys make n - 1 internal nodes; one key, a root with an empty leaf */
    uint32_t nodes = b.n > 1 ? b.n - 1 : b.n;
    ok = ok && rt_reserve_array((void **)&bvh->nodes, &bvh->node_cap, nodes, sizeof *bvh->nodes);
    b.nodes = bvh->nodes;
    if (ok && b.n > 1) ok = build_tree(&b);
    if (ok) {
        bvh->node_count = nodes;
        bvh->index_count = b.count;
        bvh->d_bounds = NULL;
        bvh->split_refs = 0;
        bvh->bounds = aabb_empty();
        if (b.n == 1) {
            lbvh_single_root(b.box[b.id[0]], &bvh->nodes[0]);
            bvh->bounds = b.box[b.id[0]];
        } else if (b.n > 1) {
            bvh->bounds =
                aabb_union(bvh_child_box(&bvh->nodes[0], 0), bvh_child_box(&bvh->nodes[0], 1));
        }
    }
    uint32_t valid = b.n;
    build_free(&b);
    ok = ok && rt_bvh_leaf_woop_cpu(bvh, tris);
    if (!ok) {
        /* the sort may have written over the old index: leave an empty tree */
        bvh->node_count = bvh->index_count = 0;
        bvh->bounds = aabb_empty();
        return rt_fail(err, RT_ERR_OOM, "BVH: out of memory while building over %u triangles",
                       tris->count);
    }
    double ms = rt_now_ms() - t0;
    if (stats) {
        rt_bvh_tree_stats(bvh, NULL, p.c_trav, p.c_isect, stats);
        stats->triangles = tris->count;
        stats->degenerate = tris->count - valid; /* lbvh_tri_box: rt_kd_tri_degenerate_v */
        stats->build_ms = ms;
    }
    return RT_OK;
}

/* Frees what rt_lbvh_build_cpu allocated. */
void rt_bvh_free(RtBvh *bvh)
{
    if (!bvh) return;
    free(bvh->nodes);
    free(bvh->tri_index);
    free(bvh->leaf_woop);
    memset(bvh, 0, sizeof *bvh);
}

typedef struct LeafWoop {
    RtBvh *bvh;
    const RtFloat4 *woop;
} LeafWoop;

static void leaf_woop_task(void *ctx, int worker, size_t task)
{
    (void)worker;
    const LeafWoop *l = ctx;
    size_t k, end;
    rt_parallel_chunk(task, LBVH_CHUNK, l->bvh->index_count, &k, &end);
    for (; k < end; k++) bvh_leaf_woop_copy(l->bvh->tri_index, l->woop, (uint32_t)k, l->bvh->leaf_woop);
}

int rt_bvh_leaf_woop_cpu(RtBvh *bvh, const RtTriArrays *tris)
{
    if (!tris->woop) { /* no rows to copy: none of an earlier build's either */
        free(bvh->leaf_woop);
        bvh->leaf_woop = NULL;
        bvh->leaf_woop_cap = 0;
        return 1;
    }
    if (bvh->index_count == 0) return 1;
    /* three rows per entry: the array's capacity counts entries */
    if (bvh->leaf_woop_cap < bvh->index_count) {
        free(bvh->leaf_woop);
        bvh->leaf_woop_cap = 0;
        bvh->leaf_woop = malloc((size_t)bvh->index_count * 3 * sizeof *bvh->leaf_woop);
        if (!bvh->leaf_woop) return 0;
        bvh->leaf_woop_cap = bvh->index_count;
    }
    LeafWoop l = {bvh, tris->woop};
    size_t tasks = rt_parallel_chunks(bvh->index_count, LBVH_CHUNK);
    rt_parallel_for(rt_parallel_workers(0, tasks), tasks, leaf_woop_task, &l);
    return 1;
}
