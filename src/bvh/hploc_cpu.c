/* hploc_cpu.c — the CPU oracle's H-PLOC: Benthin et al. 2024, "H-PLOC:
 * Hierarchical Parallel Locally-Ordered Clustering for Bounding Volume
 * Hierarchy Construction", as loops over hploc.h's steps, so the tree is
 * the GPU builder's node for node (the GPU places leaves elsewhere in
 * tri_index: hploc.h, step 5).
 *
 * Each step is a parallel loop over fixed chunks of keys (core/parallel.h)
 * whose result does not depend on which worker ran which chunk: step 3's
 * walks meet at each radix node through an atomic exchange on its split
 * slot, as the GPU's do, and a node's clusters depend only on its
 * children's; step 4's walks meet through an atomic counter per node (the
 * LBVH's scheme); step 5's are independent. A warp's PLOC merge is a loop
 * over an array of at most RT_HPLOC_WARP clusters here, with the same
 * rules (hploc.h). docs/bvh.md describes the steps. */
#include "bvh/bvh_cpu.h"

#include "core/parallel.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Keys per task: enough to pay for taking it, small enough to balance. */
#define HPLOC_CHUNK 4096u

RtHplocParams rt_hploc_params_default(void)
{
    RtHplocParams p;
    p.radius = RT_HPLOC_DEFAULT_RADIUS;
    p.threshold = RT_HPLOC_MAX_THRESHOLD;
    p.max_leaf = 8;
    p.c_trav = 1.0f;
    p.c_isect = 1.5f;
    return p;
}

RtStatus rt_hploc_params_check(const RtHplocParams *p, RtError *err)
{
    if (!p) return rt_fail(err, RT_ERR_ARG, "BVH: no H-PLOC parameters");
    if (p->radius < 1 || p->radius > RT_HPLOC_MAX_RADIUS)
        return rt_fail(err, RT_ERR_ARG, "BVH: the H-PLOC search radius must be in [1, %d] (got %d)",
                       RT_HPLOC_MAX_RADIUS, p->radius);
    if (p->threshold < 1 || p->threshold > RT_HPLOC_MAX_THRESHOLD)
        return rt_fail(err, RT_ERR_ARG, "BVH: the H-PLOC merging threshold must be in [1, %d] (got %d)",
                       RT_HPLOC_MAX_THRESHOLD, p->threshold);
    /* the collapse's fields: the LBVH's rule and ranges */
    const RtLbvhParams q = hploc_collapse_params(p);
    return rt_lbvh_params_check(&q, err);
}

/* One binary tree over the clusters (hploc.h, Names): child[2 id + k] of
 * interior id, parent[cluster] (RT_HPLOC_NONE at the root). */
typedef struct HplocTree {
    uint32_t *child, *parent;
    uint32_t root; /* the root's cluster */
} HplocTree;

typedef struct HplocBuild {
    const RtHplocParams *p;
    RtLbvhParams lp;    /* the collapse rule's parameters */
    uint32_t n;         /* valid keys */
    const uint32_t *code, *id;
    RtAabb *leaf_box;   /* per key: its triangle's box */
    /* step 3 */
    RtAabb *node_box;   /* per interior id: the merged box */
    uint32_t *max_key;  /* per interior id */
    uint32_t *cidx;     /* per key place: the clusters of the radix node whose range starts there */
    _Atomic uint32_t *slot; /* per split slot: the first child's range end (RT_HPLOC_NONE: none yet) */
    HplocTree ploc, radix;
    /* steps 4 and 5, over `tree` */
    const HplocTree *tree;
    _Atomic uint32_t *arrived; /* per interior id: children finished */
    RtLbvhSub *sub;            /* per interior id: the finished subtree */
    uint32_t *count;           /* per interior id: its triangles */
    uint32_t root_height;
    int force_radix;    /* the radix tree whatever the depth (split_top.h, Depth) */
    RtBvhNode *nodes;
    uint32_t *tri_index;
} HplocBuild;

static void run(HplocBuild *b, RtTaskFn fn)
{
    const size_t tasks = rt_parallel_chunks(b->n, HPLOC_CHUNK);
    rt_parallel_for(rt_parallel_workers(0, tasks), tasks, fn, b);
}

/* ---- step 3: the radix tree walked bottom-up, PLOC at its large nodes ---------- */

static RtHplocCluster cluster_of(const HplocBuild *b, uint32_t c)
{
    RtHplocCluster k;
    k.id = c;
    k.max_key = c < b->n ? c : b->max_key[c - b->n];
    k.box = c < b->n ? b->leaf_box[c] : b->node_box[c - b->n];
    return k;
}

/* Radix node [lo, hi], its right child starting at `split`: its children's
 * clusters merged down to the threshold (the root: one), stored from lo.
 * The GPU's warp merge (hploc_gpu.cu) with an array for the lanes. Returns
 * the first cluster (the root's only one). */
static uint32_t ploc_node(HplocBuild *b, uint32_t lo, uint32_t hi, uint32_t split, int final)
{
    const uint32_t n = b->n, t = (uint32_t)b->p->threshold, r = (uint32_t)b->p->radius;
    RtHplocCluster c[RT_HPLOC_WARP];
    uint32_t k = 0;
    const uint32_t from[2] = {lo, split}, len[2] = {split - lo, hi + 1 - split};
    for (int side = 0; side < 2; side++)
        for (uint32_t i = 0; i < len[side] && i < t; i++) {
            const uint32_t id = b->cidx[from[side] + i];
            if (id != RT_HPLOC_NONE) c[k++] = cluster_of(b, id);
        }
    const uint32_t target = final ? 1u : t;
    while (k > target) {
        /* each cluster's nearest neighbour within the radius */
        uint32_t nn[RT_HPLOC_WARP];
        for (uint32_t i = 0; i < k; i++) {
            uint64_t best = UINT64_MAX;
            const uint32_t j0 = i > r ? i - r : 0, j1 = i + r < k - 1 ? i + r : k - 1;
            for (uint32_t j = j0; j <= j1; j++) {
                if (j == i) continue;
                const float d = j < i ? hploc_distance(c[j].box, c[i].box) : hploc_distance(c[i].box, c[j].box);
                const uint64_t key = hploc_nn_key(d, j);
                if (key < best) best = key;
            }
            nn[i] = (uint32_t)best;
        }
        /* mutual pairs merge at the lower place; the rest close up in order */
        uint32_t m = 0;
        for (uint32_t i = 0; i < k; i++) {
            const uint32_t j = nn[i];
            const int mutual = nn[j] == i;
            if (mutual && j < i) continue; /* merged into place j */
            if (mutual) {
                c[m] = hploc_merge(c[i], c[j], n, b->ploc.child, b->ploc.parent, b->max_key);
                b->node_box[c[m].id - n] = c[m].box;
            } else {
                c[m] = c[i];
            }
            m++;
        }
        k = m;
    }
    const uint32_t size = hi - lo + 1;
    for (uint32_t i = 0; i < t && i < size; i++) b->cidx[lo + i] = i < k ? c[i].id : RT_HPLOC_NONE;
    return c[0].id;
}

/* From each key up (Apetrei 2014): the first child to reach a radix node
 * stops, the second takes its range and, at a large node or the root,
 * merges. The exchange's acquire-release orders the first child's clusters
 * before the second's reads, as the GPU's fences do. */
static void walk_task(void *ctx, int worker, size_t task)
{
    HplocBuild *b = ctx;
    (void)worker;
    const uint32_t n = b->n, t = (uint32_t)b->p->threshold;
    size_t p, end;
    rt_parallel_chunk(task, HPLOC_CHUNK, n, &p, &end);
    for (; p < end; p++) {
        uint32_t lo = (uint32_t)p, hi = (uint32_t)p, node = (uint32_t)p;
        for (;;) {
            const int left = lbvh_is_left_child(b->code, n, lo, hi);
            const uint32_t s = left ? hi : lo - 1;
            hploc_link_radix(n, node, s, left, b->radix.child, b->radix.parent);
            const uint32_t prev = atomic_exchange_explicit(&b->slot[s], left ? lo : hi, memory_order_acq_rel);
            if (prev == RT_HPLOC_NONE) break; /* the sibling's walk goes on */
            const uint32_t split = left ? hi + 1 : lo;
            if (left) hi = prev;
            else lo = prev;
            node = n + s;
            const int final = lo == 0 && hi == n - 1;
            if (hi - lo + 1 > t || final) {
                const uint32_t first = ploc_node(b, lo, hi, split, final);
                if (final) b->ploc.root = first;
            }
            if (final) {
                b->radix.root = node;
                break;
            }
        }
    }
}

/* ---- step 4: bottom-up boxes, SAH collapse and depth ------------------------------ */

static RtLbvhSub sub_of(const HplocBuild *b, uint32_t c)
{
    return c < b->n ? lbvh_leaf_sub(b->leaf_box[c], c, &b->lp) : b->sub[c - b->n];
}

/* From each key up: the second child to arrive finishes its parent
 * (lbvh_merge_sub), as the LBVH's climb_task. */
static void collapse_task(void *ctx, int worker, size_t task)
{
    HplocBuild *b = ctx;
    (void)worker;
    const HplocTree *tr = b->tree;
    const uint32_t n = b->n;
    size_t p, end;
    rt_parallel_chunk(task, HPLOC_CHUNK, n, &p, &end);
    for (; p < end; p++) {
        uint32_t c = (uint32_t)p, up;
        while ((up = tr->parent[c]) != RT_HPLOC_NONE) {
            const uint32_t u = up - n;
            if (atomic_fetch_add_explicit(&b->arrived[u], 1u, memory_order_acq_rel) == 0u) break;
            RtLbvhSub s = lbvh_merge_sub(sub_of(b, tr->child[2 * (size_t)u]), sub_of(b, tr->child[2 * (size_t)u + 1]),
                                         &b->lp);
            s.node = u;
            b->sub[u] = s;
            b->count[u] = s.count;
            if (up == tr->root) b->root_height = s.height;
            c = up;
        }
    }
}

static void collapse(HplocBuild *b, const HplocTree *tree)
{
    b->tree = tree;
    for (uint32_t u = 0; u + 1 < b->n; u++) atomic_init(&b->arrived[u], 0u);
    run(b, collapse_task);
}

/* ---- step 5: the output ------------------------------------------------------------ */

/* Key p: its triangle's place in tri_index, and the nodes it is the
 * leftmost key of (hploc.h step 5). */
static void output_task(void *ctx, int worker, size_t task)
{
    HplocBuild *b = ctx;
    (void)worker;
    const HplocTree *tr = b->tree;
    const uint32_t n = b->n;
    size_t p, end;
    rt_parallel_chunk(task, HPLOC_CHUNK, n, &p, &end);
    for (; p < end; p++) {
        uint32_t root, c = (uint32_t)p, up;
        const uint32_t first = hploc_key_position(tr->parent, tr->child, b->count, n, c, &root);
        b->tri_index[first] = b->id[p];
        while ((up = tr->parent[c]) != RT_HPLOC_NONE && tr->child[2 * (size_t)(up - n)] == c) {
            const uint32_t u = up - n, *ch = &tr->child[2 * (size_t)u];
            const RtLbvhSub s[2] = {sub_of(b, ch[0]), sub_of(b, ch[1])};
            hploc_output_node(ch, s, n, root, first, &b->nodes[hploc_out_index(u, root)]);
            c = up;
        }
    }
}

/* ---- entry point ---------------------------------------------------------------------- */

static void build_free(HplocBuild *b)
{
    void *bufs[] = {b->leaf_box, b->node_box, b->max_key, b->cidx, (void *)b->slot, b->ploc.child, b->ploc.parent,
                    b->radix.child, b->radix.parent, (void *)b->arrived, b->sub, b->count};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
}

static void *alloc(size_t n, size_t elem) { return malloc((n ? n : 1) * elem); }

/* A build over sorted keys (keys->n valid, their codes; ids the sorted ids). */
static HplocBuild build_begin(const RtHplocParams *p, const RtBvhKeys *keys, const uint32_t *ids)
{
    HplocBuild b;
    memset(&b, 0, sizeof b);
    b.p = p;
    b.lp = hploc_collapse_params(p);
    b.n = keys->n;
    b.code = keys->code;
    b.id = ids;
    return b;
}

/* Steps 3 to 5 for n >= 2 keys; 0 when out of memory. */
static int build_tree(HplocBuild *b, const RtBvhKeys *keys, RtHplocInfo *info)
{
    const uint32_t n = b->n, m = n - 1;
    b->leaf_box = alloc(n, sizeof *b->leaf_box);
    b->node_box = alloc(m, sizeof *b->node_box);
    b->max_key = alloc(m, sizeof *b->max_key);
    b->cidx = alloc(n, sizeof *b->cidx);
    b->slot = alloc(m, sizeof *b->slot);
    b->ploc.child = alloc(2 * (size_t)m, sizeof *b->ploc.child);
    b->ploc.parent = alloc((size_t)n + m, sizeof *b->ploc.parent);
    b->radix.child = alloc(2 * (size_t)m, sizeof *b->radix.child);
    b->radix.parent = alloc((size_t)n + m, sizeof *b->radix.parent);
    b->arrived = alloc(m, sizeof *b->arrived);
    b->sub = alloc(m, sizeof *b->sub);
    b->count = alloc(m, sizeof *b->count);
    if (!b->leaf_box || !b->node_box || !b->max_key || !b->cidx || !b->slot || !b->ploc.child || !b->ploc.parent ||
        !b->radix.child || !b->radix.parent || !b->arrived || !b->sub || !b->count)
        return 0;
    for (uint32_t p = 0; p < n; p++) {
        b->leaf_box[p] = keys->box[b->id[p]];
        b->cidx[p] = p;
    }
    for (uint32_t s = 0; s < m; s++) atomic_init(&b->slot[s], RT_HPLOC_NONE);
    run(b, walk_task);
    b->ploc.parent[b->ploc.root] = RT_HPLOC_NONE;
    b->radix.parent[b->radix.root] = RT_HPLOC_NONE;

    collapse(b, &b->ploc);
    info->cluster_depth = b->root_height;
    info->fallback = b->root_height > RT_BVH_MAX_DEPTH || b->force_radix;
    if (info->fallback) collapse(b, &b->radix); /* depth <= 62: hploc.h, Depth */
    run(b, output_task);
    return 1;
}

/* bvh's nodes (n - 1 for n >= 2 keys; one for a single key) and index_cap
 * entries of tri_index reserved, and for n >= 2 the tree over b's sorted
 * keys built into them (steps 3 to 5), its bounds set; 0 when out of
 * memory. */
static int tree_over_keys(HplocBuild *b, const RtBvhKeys *keys, uint32_t index_cap, RtBvh *bvh, RtHplocInfo *info)
{
    const uint32_t nodes = b->n > 1 ? b->n - 1 : b->n;
    if (!rt_reserve_array((void **)&bvh->tri_index, &bvh->index_cap, index_cap, sizeof *bvh->tri_index) ||
        !rt_reserve_array((void **)&bvh->nodes, &bvh->node_cap, nodes, sizeof *bvh->nodes))
        return 0;
    bvh->node_count = nodes;
    bvh->bounds = aabb_empty();
    if (b->n < 2) return 1;
    b->nodes = bvh->nodes;
    b->tri_index = bvh->tri_index;
    if (!build_tree(b, keys, info)) return 0;
    bvh->bounds = aabb_union(bvh_child_box(&bvh->nodes[0], 0), bvh_child_box(&bvh->nodes[0], 1));
    return 1;
}

RtStatus rt_hploc_build_cpu(const RtHplocParams *params, const RtTriArrays *tris, RtBvh *bvh, RtBvhStats *stats,
                            RtHplocInfo *info, RtError *err)
{
    double t0 = rt_now_ms();
    RtHplocParams p = params ? *params : rt_hploc_params_default();
    RtStatus st = rt_hploc_params_check(&p, err);
    if (st != RT_OK) return st;
    if (!tris || !bvh || (tris->count && !tris->verts))
        return rt_fail(err, RT_ERR_ARG, "BVH: no triangle arrays or no BVH to build into");
    RtHplocInfo local;
    if (!info) info = &local;
    memset(info, 0, sizeof *info);

    RtBvhKeys keys;
    memset(&keys, 0, sizeof keys);
    uint32_t *ids = alloc(tris->count, sizeof *ids);
    int ok = ids && rt_bvh_sort_keys_cpu(tris, ids, &keys);
    HplocBuild b = build_begin(&p, &keys, ids);
    /* n keys make n - 1 interior nodes; one key, a root with an empty leaf */
    ok = ok && tree_over_keys(&b, &keys, tris->count, bvh, info);
    if (ok) {
        /* the degenerate triangles' ids stay after the referenced ones, as the LBVH's */
        memcpy(bvh->tri_index + b.n, ids + b.n, (tris->count - b.n) * sizeof *ids);
        if (b.n == 1) {
            bvh->tri_index[0] = ids[0];
            bvh->bounds = keys.box[ids[0]];
            lbvh_single_root(bvh->bounds, &bvh->nodes[0]);
            info->cluster_depth = 1;
        }
    }
    build_free(&b);
    rt_bvh_keys_free(&keys);
    free(ids);
    if (ok) {
        bvh->index_count = tris->count;
        ok = rt_bvh_leaf_woop_cpu(bvh, tris);
    }
    if (!ok) {
        bvh->node_count = bvh->index_count = 0;
        bvh->bounds = aabb_empty();
        return rt_fail(err, RT_ERR_OOM, "BVH: out of memory while building H-PLOC over %u triangles", tris->count);
    }
    bvh->index_count = tris->count;
    bvh->d_bounds = NULL;
    bvh->split_refs = 0;
    double ms = rt_now_ms() - t0;
    if (stats) {
        rt_bvh_tree_stats(bvh, NULL, p.c_trav, p.c_isect, stats);
        stats->triangles = tris->count;
        stats->degenerate = tris->count - b.n;
        stats->build_ms = ms;
    }
    return RT_OK;
}

/* H-PLOC over keys the caller sorted (split_top_cpu.c's leaves): keys->n
 * >= 2 valid keys, keys->code sorted, keys->box by id, ids the sorted ids;
 * tri_index gets the ids, no leaf rows; force_radix: the radix tree (the
 * depth fallback) whatever the clustered depth. */
RtStatus rt_hploc_build_keys_cpu(const RtHplocParams *params, const RtBvhKeys *keys, const uint32_t *ids,
                                 int force_radix, RtBvh *bvh, RtHplocInfo *info, RtError *err)
{
    RtHplocParams p = params ? *params : rt_hploc_params_default();
    RtHplocInfo local;
    if (!info) info = &local;
    memset(info, 0, sizeof *info);
    HplocBuild b = build_begin(&p, keys, ids);
    b.force_radix = force_radix;
    if (b.n < 2) return rt_fail(err, RT_ERR_ARG, "H-PLOC: %u keys over sorted keys (at least 2)", b.n);
    const int ok = tree_over_keys(&b, keys, keys->n, bvh, info);
    build_free(&b);
    if (!ok) return rt_fail(err, RT_ERR_OOM, "H-PLOC: out of memory over %u sorted keys", b.n);
    bvh->index_count = keys->n;
    bvh->d_bounds = NULL;
    bvh->split_refs = 0;
    return RT_OK;
}
