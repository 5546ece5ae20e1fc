/* bvh_validate.c — what any BVH in the shared layout (bvh_layout.h) must
 * satisfy, whichever builder made it: the structure (indices in range, no
 * node reached twice, depth and leaf sizes within what the tracers hold),
 * the boxes (each child's inside its parent's, each leaf's triangles inside
 * its box) and the references (every non-degenerate triangle exactly once,
 * no degenerate one). A tree of split references (RtBvh.split_refs) may
 * list a triangle more than once, each time in a leaf whose box meets the
 * triangle's; that the parts cover it, only the walks' hits check (against
 * the brute force). docs/bvh.md lists the checks.
 *
 * Boxes are checked exactly, without a tolerance: a builder takes unions of
 * its triangles' boxes (min and max round nothing), so a box that misses
 * one of its triangles by any amount is a fault; the tracers' widening
 * (bvh_traverse_cpu.c) is for their own rounding, not the builder's.
 *
 * Three passes, each O(N): a serial walk from the root (the structure,
 * which also marks the reachable nodes), then the leaves of the reachable
 * nodes and then the triangles, each in parallel chunks. A parallel pass
 * only marks the chunks that fail; the first of them is checked again,
 * serially, for the message, so the fault named is the same on any thread
 * count: the walk's first, else the lowest node's, else the lowest
 * triangle's.
 */
#include "bvh/bvh_cpu.h"

#include "core/parallel.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Nodes or triangles per task: enough to pay for taking it, small enough to
 * balance. */
#define BVH_NODES_PER_TASK 1024u
#define BVH_TRIS_PER_TASK 4096u

/* refs[] per triangle: the bits of the references the leaf pass found. */
#define BVH_REF_ONCE 1u
#define BVH_REF_TWICE 2u

typedef struct BvhCheck {
    const RtBvh *t;
    const RtTriArrays *tris;
    uint8_t *reached;      /* per node: reached from the root (the walk) */
    _Atomic uint8_t *refs; /* per triangle: BVH_REF_* (the leaf pass) */
    uint8_t *failed;       /* per task of the pass running: it found a fault */
} BvhCheck;

static int box_inside(RtAabb in, RtAabb out)
{
    for (int a = 0; a < 3; a++)
        if (!(v3_get(in.lo, a) >= v3_get(out.lo, a) && v3_get(in.hi, a) <= v3_get(out.hi, a)))
            return 0;
    return 1;
}

static RtStatus fail_box(RtError *err, uint32_t node, int k, const char *what, RtAabb in,
                         const char *where, RtAabb out)
{
    return rt_fail(err, RT_ERR_PARSE,
                   "BVH: node %u child %d: %s (%g %g %g)-(%g %g %g) not inside %s "
                   "(%g %g %g)-(%g %g %g)",
                   node, k, what, in.lo.x, in.lo.y, in.lo.z, in.hi.x, in.hi.y, in.hi.z, where,
                   out.lo.x, out.lo.y, out.lo.z, out.hi.x, out.hi.y, out.hi.z);
}

/* ---- the walk: structure ------------------------------------------------------ */

typedef struct BvhFrame {
    uint32_t node, depth;
    RtAabb box; /* the node's box as its parent holds it (the root's: bounds) */
} BvhFrame;

/* One child of a reached node: a leaf's size and range, or an interior
 * node's index; its box inside the node's; its depth. */
static RtStatus check_child(const BvhCheck *c, BvhFrame f, int k, RtError *err)
{
    const RtBvh *t = c->t;
    const RtBvhNode *n = &t->nodes[f.node];
    RtAabb box = bvh_child_box(n, k);
    if (bvh_child_is_leaf(n, k)) {
        uint32_t count = bvh_child_count(n, k), first = n->child[k];
        if (count > RT_BVH_MAX_LEAF)
            return rt_fail(err, RT_ERR_PARSE,
                           "BVH: node %u child %d: a leaf of %u triangles (at most %u)", f.node, k,
                           count, RT_BVH_MAX_LEAF);
        if (count == 0) {
            /* An empty leaf is never entered: its index is never read, and
             * the GPU walk enters a child without testing its count, so the
             * box must be one no slab test passes (bvh_set_empty_child). */
            if (!bvh_is_never_box(box))
                return rt_fail(err, RT_ERR_PARSE,
                               "BVH: node %u child %d: an empty leaf's box (%g %g %g)-(%g %g %g), not the "
                               "point at +inf on every axis that no walk enters",
                               f.node, k, box.lo.x, box.lo.y, box.lo.z, box.hi.x, box.hi.y, box.hi.z);
            return RT_OK;
        }
        if ((uint64_t)first + count > t->index_count)
            return rt_fail(err, RT_ERR_PARSE,
                           "BVH: node %u child %d: leaf range [%u, %llu) past the end of "
                           "tri_index (%u entries)",
                           f.node, k, first, (unsigned long long)first + count, t->index_count);
    } else if (n->count[k] != 0 || n->child[k] >= t->node_count) {
        return rt_fail(err, RT_ERR_PARSE,
                       "BVH: node %u child %d: node %u out of range (%u nodes) or count %#x "
                       "neither 0 nor a leaf's",
                       f.node, k, n->child[k], t->node_count, n->count[k]);
    }
    if (!box_inside(box, f.box))
        return fail_box(err, f.node, k, "box", box, "the node's box", f.box);
    if (f.depth + 1 > RT_BVH_MAX_DEPTH)
        return rt_fail(err, RT_ERR_PARSE,
                       "BVH: node %u child %d: at depth %u, deeper than %d (the tracers' stacks)",
                       f.node, k, f.depth + 1, RT_BVH_MAX_DEPTH);
    return RT_OK;
}

/* Depth first from the root, left first; marks c->reached. */
static RtStatus walk(const BvhCheck *c, RtError *err)
{
    const RtBvh *t = c->t;
    /* At most one pending sibling per level, and depths are checked before
     * a push: 2 per level is ample. */
    BvhFrame stack[2 * RT_BVH_MAX_DEPTH + 2];
    int sp = 0;
    stack[sp++] = (BvhFrame){0, 0, t->bounds};
    while (sp > 0) {
        BvhFrame f = stack[--sp];
        if (c->reached[f.node])
            return rt_fail(
                err, RT_ERR_PARSE,
                "BVH: node %u is reached twice from the root (a cycle or a shared child)", f.node);
        c->reached[f.node] = 1;
        const RtBvhNode *n = &t->nodes[f.node];
        for (int k = 0; k < 2; k++) {
            RtStatus st = check_child(c, f, k, err);
            if (st != RT_OK) return st;
        }
        for (int k = 1; k >= 0; k--) /* the left child on top: walked first */
            if (!bvh_child_is_leaf(n, k))
                stack[sp++] = (BvhFrame){n->child[k], f.depth + 1, bvh_child_box(n, k)};
    }
    return RT_OK;
}

/* ---- the leaves: references --------------------------------------------------------- */

static RtVec3 tri_v(const RtTriArrays *tris, uint32_t id, int k)
{
    return f4_xyz(tris->verts[3 * (size_t)id + k]);
}

static int boxes_meet(RtAabb a, RtAabb b)
{
    for (int k = 0; k < 3; k++)
        if (!(v3_get(a.lo, k) <= v3_get(b.hi, k) && v3_get(b.lo, k) <= v3_get(a.hi, k))) return 0;
    return 1;
}

/* The leaves of the reached nodes in [node, end): each triangle id in range
 * and inside the leaf's box. With mark, counts each reference in c->refs
 * (the parallel pass; the serial rerun for the message leaves them). The
 * triangle pass finds the degenerate ones among them: it reads the Woop
 * rows in id order, not in the leaves' scattered order. */
static RtStatus check_leaves(const BvhCheck *c, uint32_t node, uint32_t end, int mark, RtError *err)
{
    const RtBvh *t = c->t;
    for (; node < end; node++) {
        if (!c->reached[node]) continue;
        const RtBvhNode *n = &t->nodes[node];
        for (int k = 0; k < 2; k++) {
            if (!bvh_child_is_leaf(n, k)) continue;
            RtAabb box = bvh_child_box(n, k);
            uint32_t first = n->child[k], count = bvh_child_count(n, k);
            for (uint32_t i = first; i < first + count; i++) {
                uint32_t id = t->tri_index[i];
                if (id >= c->tris->count)
                    return rt_fail(err, RT_ERR_PARSE,
                                   "BVH: node %u child %d: tri_index[%u] = %u, out of range "
                                   "(%u triangles)",
                                   node, k, i, id, c->tris->count);
                for (int v = 0; v < 3; v++) {
                    RtVec3 p = tri_v(c->tris, id, v);
                    if (box_inside((RtAabb){p, p}, box)) continue;
                    /* a part of a triangle (split_refs): its box meets the leaf's */
                    if (t->split_refs && !rt_kd_tri_degenerate(c->tris, id) &&
                        boxes_meet(lbvh_tri_box(&c->tris->verts[3 * (size_t)id], NULL), box))
                        break;
                    if (rt_kd_tri_degenerate(c->tris, id)) /* a non-finite vertex: say why */
                        return rt_fail(err, RT_ERR_PARSE,
                                       "BVH: node %u child %d lists degenerate triangle %u", node,
                                       k, id);
                    return rt_fail(err, RT_ERR_PARSE,
                                   "BVH: node %u child %d: triangle %u's vertex %d (%g %g %g) "
                                   "not inside the leaf's box (%g %g %g)-(%g %g %g)",
                                   node, k, id, v, p.x, p.y, p.z, box.lo.x, box.lo.y, box.lo.z,
                                   box.hi.x, box.hi.y, box.hi.z);
                }
                if (mark && (atomic_fetch_or(&c->refs[id], BVH_REF_ONCE) & BVH_REF_ONCE))
                    atomic_fetch_or(&c->refs[id], BVH_REF_TWICE);
            }
        }
    }
    return RT_OK;
}

/* Task `task` of the leaf pass: with mark, in parallel; without, for the
 * message. */
static RtStatus leaves_chunk(const BvhCheck *c, size_t task, int mark, RtError *err)
{
    size_t lo, end;
    rt_parallel_chunk(task, BVH_NODES_PER_TASK, c->t->node_count, &lo, &end);
    return check_leaves(c, (uint32_t)lo, (uint32_t)end, mark, err);
}

static void leaves_task(void *ctx, int worker, size_t task)
{
    const BvhCheck *c = ctx;
    (void)worker;
    c->failed[task] = leaves_chunk(c, task, 1, NULL) != RT_OK;
}

/* ---- the triangles: coverage ------------------------------------------------------------ */

/* The first two leaves that list triangle id, for the message. */
static void find_refs(const BvhCheck *c, uint32_t id, uint32_t where[2][2])
{
    int found = 0;
    for (uint32_t node = 0; node < c->t->node_count && found < 2; node++) {
        if (!c->reached[node]) continue;
        const RtBvhNode *n = &c->t->nodes[node];
        for (int k = 0; k < 2 && found < 2; k++) {
            if (!bvh_child_is_leaf(n, k)) continue;
            for (uint32_t i = 0; i < bvh_child_count(n, k) && found < 2; i++)
                if (c->t->tri_index[n->child[k] + i] == id) {
                    where[found][0] = node;
                    where[found++][1] = (uint32_t)k;
                }
        }
    }
}

/* Every triangle of [id, end) referenced exactly once when it is not
 * degenerate, never when it is. */
static RtStatus check_tris(const BvhCheck *c, uint32_t id, uint32_t end, RtError *err)
{
    for (; id < end; id++) {
        uint8_t r = atomic_load_explicit(&c->refs[id], memory_order_relaxed);
        int degenerate = rt_kd_tri_degenerate(c->tris, id);
        if (r == BVH_REF_ONCE && !degenerate) continue;
        if (r && c->t->split_refs && !degenerate) continue; /* parts of it in several leaves */
        if (!r && degenerate) continue;
        if (!r)
            return rt_fail(err, RT_ERR_PARSE,
                           "BVH: triangle %u is not degenerate but no leaf lists it", id);
        uint32_t w[2][2] = {{0, 0}, {0, 0}};
        if (err) find_refs(c, id, w); /* the leaves, named in the message alone */
        if (degenerate)
            return rt_fail(err, RT_ERR_PARSE, "BVH: node %u child %u lists degenerate triangle %u",
                           w[0][0], w[0][1], id);
        return rt_fail(err, RT_ERR_PARSE,
                       "BVH: triangle %u is referenced more than once (node %u child %u and node "
                       "%u child %u)",
                       id, w[0][0], w[0][1], w[1][0], w[1][1]);
    }
    return RT_OK;
}

static RtStatus tris_chunk(const BvhCheck *c, size_t task, RtError *err)
{
    size_t lo, end;
    rt_parallel_chunk(task, BVH_TRIS_PER_TASK, c->tris->count, &lo, &end);
    return check_tris(c, (uint32_t)lo, (uint32_t)end, err);
}

static void tris_task(void *ctx, int worker, size_t task)
{
    const BvhCheck *c = ctx;
    (void)worker;
    c->failed[task] = tris_chunk(c, task, NULL) != RT_OK;
}

/* ---- entry point ------------------------------------------------------------------------- */

/* Runs a parallel pass: 1 when a task found a fault, the first such task in *task. */
static int pass_fails(BvhCheck *c, size_t tasks, RtTaskFn fn, size_t *task)
{
    if (tasks == 0) return 0;
    memset(c->failed, 0, tasks);
    rt_parallel_for(rt_parallel_workers(0, tasks), tasks, fn, c);
    for (size_t i = 0; i < tasks; i++)
        if (c->failed[i]) {
            *task = i;
            return 1;
        }
    return 0;
}

static RtStatus validate(BvhCheck *c, RtError *err)
{
    const RtBvh *t = c->t;
    size_t task;
    if (t->node_count) {
        RtStatus st = walk(c, err);
        if (st != RT_OK) return st;
        if (pass_fails(c, rt_parallel_chunks(t->node_count, BVH_NODES_PER_TASK), leaves_task,
                       &task))
            return leaves_chunk(c, task, 0, err);
    }
    if (pass_fails(c, rt_parallel_chunks(c->tris->count, BVH_TRIS_PER_TASK), tris_task, &task))
        return tris_chunk(c, task, err);
    return RT_OK;
}

RtStatus rt_bvh_validate(const RtBvh *bvh, const RtTriArrays *tris, RtError *err)
{
    if (!bvh || !tris)
        return rt_fail(err, RT_ERR_ARG, "BVH: validate needs a BVH and its triangles");
    if ((bvh->node_count && !bvh->nodes) || (bvh->index_count && !bvh->tri_index) ||
        (tris->count && !tris->verts))
        return rt_fail(err, RT_ERR_PARSE, "BVH: a node, index or triangle array is missing");
    RtAabb b = bvh->bounds;
    if (!aabb_is_empty(b) && !isfinite(b.lo.x + b.lo.y + b.lo.z + b.hi.x + b.hi.y + b.hi.z))
        return rt_fail(err, RT_ERR_PARSE, "BVH: the bounds are not finite");
    if (bvh->node_count == 0 && !aabb_is_empty(b))
        return rt_fail(err, RT_ERR_PARSE, "BVH: no nodes, but the bounds are not empty");

    BvhCheck c = {.t = bvh, .tris = tris};
    size_t tasks = rt_parallel_chunks(bvh->node_count, BVH_NODES_PER_TASK);
    size_t tri_tasks = rt_parallel_chunks(tris->count, BVH_TRIS_PER_TASK);
    c.reached = calloc((size_t)bvh->node_count + 1, 1);
    c.refs = calloc((size_t)tris->count + 1, sizeof *c.refs);
    c.failed = malloc((tasks > tri_tasks ? tasks : tri_tasks) + 1);
    RtStatus st = c.reached && c.refs && c.failed
                      ? validate(&c, err)
                      : rt_fail(err, RT_ERR_OOM, "BVH: out of memory while validating");
    free(c.reached);
    free((void *)c.refs);
    free(c.failed);
    return st;
}
