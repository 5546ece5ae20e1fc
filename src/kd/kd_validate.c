/* kd_validate.c — what any kd-tree in the shared layout (kd_layout.h) must
 * satisfy, whichever builder made it: structure, coverage of every triangle,
 * leaf boxes. docs/kdtree.md defines the tolerances used here; the tree's
 * statistics are kd_stats.c.
 *
 * The checks run on rt_thread_count() threads and report the fault that
 * comes first in the serial order, so the message does not depend on the
 * thread count (the task runner below).
 */
#include "kd/kd_cpu.h"

#include "core/parallel.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Geometric tolerance: 2^-16 of the largest coordinate (about 128 float
 * ulps), the same scale as the traversal's. Builders round clipped boxes
 * outward by an ulp, GPU builders may be off by a few. */
#define KD_TOL_SCALE (1.0 / 65536.0)

/* ---- triangle/box overlap ---------------------------------------------------- */

/* Akenine-Moller 2001, "Fast 3D triangle-box overlap testing": the 13
 * separating axes (3 box normals, the triangle normal, 9 edge x box-axis
 * cross products), in double so that touching counts as overlap reliably.
 * Flat and zero-size boxes are handled: a zero half-size is just a smaller
 * projection radius. c, h: box centre and half-sizes. */
static int overlap_d(const double tv[3][3], const double c[3], const double h[3])
{
    double v[3][3];
    for (int i = 0; i < 3; i++)
        for (int a = 0; a < 3; a++) v[i][a] = tv[i][a] - c[a];
    for (int a = 0; a < 3; a++) {
        double lo = fmin(fmin(v[0][a], v[1][a]), v[2][a]);
        double hi = fmax(fmax(v[0][a], v[1][a]), v[2][a]);
        if (lo > h[a] || hi < -h[a]) return 0;
    }
    double e[3][3];
    for (int a = 0; a < 3; a++) {
        e[0][a] = v[1][a] - v[0][a];
        e[1][a] = v[2][a] - v[1][a];
        e[2][a] = v[0][a] - v[2][a];
    }
    double n[3] = {e[0][1] * e[1][2] - e[0][2] * e[1][1], e[0][2] * e[1][0] - e[0][0] * e[1][2],
                   e[0][0] * e[1][1] - e[0][1] * e[1][0]};
    double dist = n[0] * v[0][0] + n[1] * v[0][1] + n[2] * v[0][2];
    double rad = h[0] * fabs(n[0]) + h[1] * fabs(n[1]) + h[2] * fabs(n[2]);
    if (dist > rad || dist < -rad) return 0;
    for (int i = 0; i < 3; i++)
        for (int a = 0; a < 3; a++) {
            /* axis = e_i x unit_a */
            double ax[3] = {0.0, 0.0, 0.0};
            int b = (a + 1) % 3, d = (a + 2) % 3;
            ax[b] = e[i][d];
            ax[d] = -e[i][b];
            double p0 = ax[b] * v[0][b] + ax[d] * v[0][d];
            double p1 = ax[b] * v[1][b] + ax[d] * v[1][d];
            double p2 = ax[b] * v[2][b] + ax[d] * v[2][d];
            double lo = fmin(fmin(p0, p1), p2), hi = fmax(fmax(p0, p1), p2);
            double r = h[b] * fabs(ax[b]) + h[d] * fabs(ax[d]);
            if (lo > r || hi < -r) return 0;
        }
    return 1;
}

static void tri_d(RtVec3 v0, RtVec3 v1, RtVec3 v2, double out[3][3])
{
    RtVec3 v[3] = {v0, v1, v2};
    for (int i = 0; i < 3; i++)
        for (int a = 0; a < 3; a++) out[i][a] = v3_get(v[i], a);
}

/* The box grown by g on every side (g < 0 shrinks); 0 when nothing is left. */
static int box_d(RtAabb b, double g, double c[3], double h[3])
{
    for (int a = 0; a < 3; a++) {
        double lo = v3_get(b.lo, a), hi = v3_get(b.hi, a);
        c[a] = 0.5 * (lo + hi);
        h[a] = 0.5 * (hi - lo) + g;
        if (!(h[a] >= 0.0)) return 0;
    }
    return 1;
}

int rt_tri_box_overlap(RtVec3 v0, RtVec3 v1, RtVec3 v2, RtAabb box)
{
    double tv[3][3], c[3], h[3];
    if (!box_d(box, 0.0, c, h)) return 0;
    tri_d(v0, v1, v2, tv);
    return overlap_d(tv, c, h);
}


/* ---- validation ------------------------------------------------------------------ */

/* Threads: rt_thread_count() (RT_THREADS), never more than this. */
#define KD_MAX_THREADS 256
/* Leaves the structure walk collects before checking them in parallel
 * (32 bytes each: 2 MB), so the memory stays flat for any tree size. */
#define KD_LEAF_BATCH (1u << 16)
/* Work per task: enough to pay for taking it, small enough to balance. */
#define KD_LEAVES_PER_TASK 64u
#define KD_TRIS_PER_TASK 512u

typedef struct KdCheck {
    const RtKdTree *t;
    const RtTriArrays *tris;
    unsigned flags;
    double tol;
    int threads;
    uint8_t *leaf_sorted; /* per leaf: its triangle ids ascend (binary search) */
    uint64_t *loose;      /* NULL, or the loose references counted (rt_kd_validate_count) */
} KdCheck;

/* A triangle in double, with its box, for the overlap tests. */
typedef struct KdTri {
    double v[3][3];
    RtAabb box;
} KdTri;

static RtVec3 tri_v(const RtTriArrays *tris, uint32_t id, int k)
{
    return f4_xyz(tris->verts[3 * (size_t)id + k]);
}

static RtAabb tri_box(const RtTriArrays *tris, uint32_t id)
{
    RtAabb b = aabb_empty();
    for (int k = 0; k < 3; k++) b = aabb_grow(b, tri_v(tris, id, k));
    return b;
}

static KdTri kd_tri(const RtTriArrays *tris, uint32_t id)
{
    KdTri tr;
    tri_d(tri_v(tris, id, 0), tri_v(tris, id, 1), tri_v(tris, id, 2), tr.v);
    tr.box = tri_box(tris, id);
    return tr;
}

static int box_inside(RtAabb in, RtAabb out, double tol)
{
    for (int a = 0; a < 3; a++)
        if (v3_get(in.lo, a) < v3_get(out.lo, a) - tol || v3_get(in.hi, a) > v3_get(out.hi, a) + tol)
            return 0;
    return 1;
}

static int boxes_meet(RtAabb a, RtAabb b, double tol)
{
    for (int k = 0; k < 3; k++)
        if (v3_get(a.lo, k) > v3_get(b.hi, k) + tol || v3_get(a.hi, k) < v3_get(b.lo, k) - tol)
            return 0;
    return 1;
}

/* Does the triangle overlap the box grown by g (g < 0: shrunk)? */
static int tri_meets(const KdTri *tr, RtAabb box, double g)
{
    double bc[3], bh[3];
    if (!box_d(box, g, bc, bh)) return 0;
    if (!boxes_meet(tr->box, box, g)) return 0;
    return overlap_d(tr->v, bc, bh);
}

/* Does the leaf list triangle tri? */
static int leaf_lists(const KdCheck *c, uint32_t leaf, uint32_t tri)
{
    RtKdLeaf lf = c->t->leaves[leaf];
    const uint32_t *ids = c->t->tri_index + lf.first;
    if (!c->leaf_sorted[leaf]) {
        for (uint32_t i = 0; i < lf.count; i++)
            if (ids[i] == tri) return 1;
        return 0;
    }
    uint32_t lo = 0, hi = lf.count; /* the first id >= tri is in [lo, hi] */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < tri) lo = mid + 1;
        else hi = mid;
    }
    return lo < lf.count && ids[lo] == tri;
}

/* ---- a task runner ---------------------------------------------------------------- */

/* Each phase cuts its work into tasks 0..n-1 that c->threads workers (the
 * caller is one) take in order from a shared counter. A task that finds a
 * fault reports it with a key, the fault's place in the serial order (a
 * leaf's rank in the walk, a triangle id), and stops; the phase reports the
 * fault with the lowest key, so the message is the same for any thread
 * count. Work past the lowest key reported so far is skipped. */
typedef struct KdRun KdRun;

typedef struct KdWorker {
    KdRun *run;
    uint64_t key; /* its lowest fault (UINT64_MAX: none) and that fault's message */
    RtError err;
} KdWorker;

typedef void (*KdTaskFn)(KdWorker *w, size_t task);

struct KdRun {
    const KdCheck *c;
    const void *arg; /* the phase's own data */
    KdTaskFn task;
    KdWorker *workers;
    _Atomic uint64_t best; /* the lowest key reported by any worker */
};

static void report(KdWorker *w, uint64_t key, const RtError *e)
{
    if (key >= w->key) return;
    w->key = key;
    w->err = *e;
    uint64_t b = atomic_load(&w->run->best);
    while (key < b && !atomic_compare_exchange_weak(&w->run->best, &b, key)) {
    }
}

/* A fault with a lower key than this one is known: nothing here can matter. */
static int beaten(const KdWorker *w, uint64_t key)
{
    return atomic_load_explicit(&w->run->best, memory_order_relaxed) < key;
}

static void run_task(void *ctx, int worker, size_t task)
{
    KdRun *r = ctx;
    r->task(&r->workers[worker], task);
}

/* Runs the tasks (core/parallel.h); the lowest fault's status and message,
 * or RT_OK. */
static RtStatus run_tasks(const KdCheck *c, KdTaskFn task, const void *arg, size_t tasks,
                          RtError *err)
{
    if (tasks == 0) return RT_OK;
    int n = rt_parallel_workers(c->threads, tasks);
    KdWorker *ws = calloc((size_t)n, sizeof *ws);
    if (!ws) return rt_fail(err, RT_ERR_OOM, "KD: out of memory while validating");
    KdRun r = {.c = c, .arg = arg, .task = task, .workers = ws};
    atomic_init(&r.best, UINT64_MAX);
    for (int i = 0; i < n; i++) {
        ws[i].run = &r;
        ws[i].key = UINT64_MAX;
    }
    rt_parallel_for(n, tasks, run_task, &r);
    int first = 0;
    for (int i = 1; i < n; i++)
        if (ws[i].key < ws[first].key) first = i;
    RtStatus st = RT_OK;
    if (ws[first].key != UINT64_MAX) {
        st = ws[first].err.status;
        if (err) *err = ws[first].err;
    }
    free(ws);
    return st;
}

/* ---- the checks ----------------------------------------------------------------------- */

static const char axis_name[3] = {'x', 'y', 'z'};

/* The references of one leaf: ids in range, usable, really in the cell; the
 * leaf box inside the cell and around each triangle's part of the cell. */
static RtStatus check_leaf(const KdCheck *c, RtError *err, uint32_t node, RtAabb cell)
{
    const RtKdTree *t = c->t;
    RtKdNode n = t->nodes[node];
    uint32_t id = kd_leaf_id(n);
    if (id >= t->leaf_count)
        return rt_fail(err, RT_ERR_PARSE, "KD: node %u: leaf id %u out of range (%u leaves)", node,
                       id, t->leaf_count);
    RtKdLeaf lf = t->leaves[id];
    if (lf.count != kd_leaf_count(n))
        return rt_fail(err, RT_ERR_PARSE, "KD: node %u: count %u differs from leaves[%u].count %u",
                       node, kd_leaf_count(n), id, lf.count);
    if ((uint64_t)lf.first + lf.count > t->index_count)
        return rt_fail(err, RT_ERR_PARSE,
                       "KD: leaf %u: range [%u, %u) past the end of tri_index (%u)", id, lf.first,
                       lf.first + lf.count, t->index_count);
    if (lf.count == 0) {
        /* An empty leaf's box is never read (count 0 skips it); accept the
         * empty box or one inside the cell. */
        RtAabb b = t->leaf_boxes[id];
        if (!aabb_is_empty(b) && !box_inside(b, cell, c->tol))
            return rt_fail(err, RT_ERR_PARSE, "KD: empty leaf %u: box outside its cell", id);
        c->leaf_sorted[id] = 1;
        return RT_OK;
    }
    if (aabb_is_empty(cell))
        return rt_fail(err, RT_ERR_PARSE,
                       "KD: leaf %u lists %u triangles but the tree's bounds are empty", id,
                       lf.count);
    RtAabb box = t->leaf_boxes[id];
    if (aabb_is_empty(box) || !box_inside(box, cell, c->tol))
        return rt_fail(err, RT_ERR_PARSE,
                       "KD: leaf %u: box (%g %g %g)-(%g %g %g) not inside its cell "
                       "(%g %g %g)-(%g %g %g)",
                       id, box.lo.x, box.lo.y, box.lo.z, box.hi.x, box.hi.y, box.hi.z, cell.lo.x,
                       cell.lo.y, cell.lo.z, cell.hi.x, cell.hi.y, cell.hi.z);
    uint8_t sorted = 1;
    uint64_t loose = 0;
    for (uint32_t i = 0; i < lf.count; i++) {
        uint32_t tri = t->tri_index[lf.first + i];
        if (tri >= c->tris->count)
            return rt_fail(err, RT_ERR_PARSE, "KD: leaf %u: triangle %u out of range (%u)", id, tri,
                           c->tris->count);
        if (rt_kd_tri_degenerate(c->tris, tri))
            return rt_fail(err, RT_ERR_PARSE, "KD: leaf %u lists degenerate triangle %u", id, tri);
        KdTri tr = kd_tri(c->tris, tri);
        int meets = (c->flags & RT_KD_VALIDATE_LOOSE_REFS) ? boxes_meet(tr.box, cell, c->tol)
                                                           : tri_meets(&tr, cell, c->tol);
        if (meets && c->loose && (c->flags & RT_KD_VALIDATE_LOOSE_REFS) && !tri_meets(&tr, cell, c->tol)) loose++;
        if (!meets)
            return rt_fail(err, RT_ERR_PARSE,
                           "KD: leaf %u lists triangle %u, which does not overlap its cell", id,
                           tri);
        RtAabb part;
        if (rt_tri_clip_box(tri_v(c->tris, tri, 0), tri_v(c->tris, tri, 1),
                            tri_v(c->tris, tri, 2), cell, &part) &&
            !box_inside(part, box, c->tol))
            return rt_fail(err, RT_ERR_PARSE,
                           "KD: leaf %u: box does not contain triangle %u's part of the cell", id,
                           tri);
        if (i > 0 && tri < t->tri_index[lf.first + i - 1]) sorted = 0;
    }
    c->leaf_sorted[id] = sorted;
    if (loose) __atomic_fetch_add(c->loose, loose, __ATOMIC_RELAXED); /* leaves are checked in parallel */
    return RT_OK;
}

typedef struct KdLeafBatch {
    const RtKdFrame *leaf; /* in walk order */
    size_t n;
} KdLeafBatch;

static void leaf_task(KdWorker *w, size_t task)
{
    const KdLeafBatch *b = w->run->arg;
    size_t end = (task + 1) * KD_LEAVES_PER_TASK < b->n ? (task + 1) * KD_LEAVES_PER_TASK : b->n;
    for (size_t i = task * KD_LEAVES_PER_TASK; i < end && !beaten(w, i); i++) {
        RtError e;
        if (check_leaf(w->run->c, &e, b->leaf[i].node, b->leaf[i].cell) != RT_OK) {
            report(w, i, &e);
            return;
        }
    }
}

/* check_leaf on a batch of leaves in parallel: the first failure in walk order. */
static RtStatus check_leaves(const KdCheck *c, const RtKdFrame *leaf, size_t n, RtError *err)
{
    KdLeafBatch b = {leaf, n};
    return run_tasks(c, leaf_task, &b, (n + KD_LEAVES_PER_TASK - 1) / KD_LEAVES_PER_TASK, err);
}

/* Structure: indices in range, each node and leaf reached exactly once from
 * the root (no cycles, nothing orphaned), splits inside their cells, depth
 * within the tracers' stacks; and each leaf (check_leaf). The walk is serial
 * and cheap; the leaves it meets are checked in parallel, a batch at a time.
 * A leaf's fault comes before a fault the walk finds later, as if the leaves
 * were checked during the walk. */
static RtStatus check_structure(const KdCheck *c, RtError *err)
{
    const RtKdTree *t = c->t;
    uint8_t *node_seen = calloc(t->node_count, 1), *leaf_seen = calloc(t->leaf_count + 1, 1);
    RtKdFrame *stack = malloc((RT_KD_CPU_MAX_DEPTH + 3) * sizeof *stack);
    size_t nb = 0, batch_cap = t->node_count < KD_LEAF_BATCH ? t->node_count : KD_LEAF_BATCH;
    RtKdFrame *batch = malloc(batch_cap * sizeof *batch);
    RtError walk = {0}; /* the walk's own fault, reported after the leaves before it */
    RtStatus st = RT_OK;
    if (!node_seen || !leaf_seen || !stack || !batch) {
        st = rt_fail(err, RT_ERR_OOM, "KD: out of memory while validating");
        goto out;
    }
    int sp = 0;
    stack[sp++] = (RtKdFrame){0, 0, t->bounds};
    while (sp > 0) {
        RtKdFrame f = stack[--sp];
        if (node_seen[f.node]) {
            rt_fail(&walk, RT_ERR_PARSE,
                    "KD: node %u is reached twice from the root (cycle or shared child)", f.node);
            break;
        }
        node_seen[f.node] = 1;
        RtKdNode n = t->nodes[f.node];
        if (kd_is_leaf(n)) {
            uint32_t id = kd_leaf_id(n);
            if (id < t->leaf_count) {
                if (leaf_seen[id]) {
                    rt_fail(&walk, RT_ERR_PARSE, "KD: leaf %u is used by two nodes", id);
                    break;
                }
                leaf_seen[id] = 1;
            }
            batch[nb++] = f;
            if (nb == batch_cap) {
                st = check_leaves(c, batch, nb, err);
                nb = 0;
                if (st != RT_OK) goto out;
            }
            continue;
        }
        int a = kd_axis(n);
        float s = kd_split(n);
        uint32_t l = kd_left(n);
        if ((uint64_t)l + 1 >= t->node_count) {
            rt_fail(&walk, RT_ERR_PARSE, "KD: node %u: children %u, %u out of range (%u nodes)",
                    f.node, l, l + 1, t->node_count);
            break;
        }
        const uint32_t marks = kd_empty_children(n), empty = kd_empty_marks(t->nodes[l], t->nodes[l + 1]);
        if (marks & ~empty) {
            /* a wrong mark hides triangles from the GPU walk (a missing one
             * costs it a visit: the builders' completeness is tested apart) */
            rt_fail(&walk, RT_ERR_PARSE, "KD: node %u marks its %s child %u empty, and it is not",
                    f.node, (marks & ~empty) & RT_KD_EMPTY_LEFT ? "left" : "right",
                    (marks & ~empty) & RT_KD_EMPTY_LEFT ? l : l + 1);
            break;
        }
        if (!isfinite(s) || s < v3_get(f.cell.lo, a) || s > v3_get(f.cell.hi, a)) {
            rt_fail(&walk, RT_ERR_PARSE, "KD: node %u: split %c = %g outside its cell [%g, %g]",
                    f.node, axis_name[a], s, v3_get(f.cell.lo, a), v3_get(f.cell.hi, a));
            break;
        }
        if (f.depth + 1 > RT_KD_MAX_DEPTH) {
            rt_fail(&walk, RT_ERR_PARSE, "KD: node %u: deeper than %d levels (the layout's limit: the GPU tracer's stack)",
                    f.node, RT_KD_MAX_DEPTH);
            break;
        }
        RtAabb lc, rc;
        kd_child_cells(f.cell, n, &lc, &rc);
        stack[sp++] = (RtKdFrame){l + 1, f.depth + 1, rc};
        stack[sp++] = (RtKdFrame){l, f.depth + 1, lc};
    }
    st = check_leaves(c, batch, nb, err);
    if (st == RT_OK && walk.status != RT_OK) {
        st = walk.status;
        if (err) *err = walk;
    }
    for (uint32_t i = 0; st == RT_OK && i < t->node_count; i++)
        if (!node_seen[i])
            st = rt_fail(err, RT_ERR_PARSE, "KD: node %u is not reachable from the root", i);
    for (uint32_t i = 0; st == RT_OK && i < t->leaf_count; i++)
        if (!leaf_seen[i]) st = rt_fail(err, RT_ERR_PARSE, "KD: leaf %u is used by no node", i);
out:
    free(node_seen);
    free(leaf_seen);
    free(stack);
    free(batch);
    return st;
}

/* The per-triangle phases: KD_TRIS_PER_TASK triangles a task, task i has [*lo, *end). */
static size_t tri_tasks(const KdCheck *c)
{
    return ((size_t)c->tris->count + KD_TRIS_PER_TASK - 1) / KD_TRIS_PER_TASK;
}

static void tri_range(const KdCheck *c, size_t task, uint32_t *lo, uint32_t *end)
{
    uint64_t e = ((uint64_t)task + 1) * KD_TRIS_PER_TASK;
    *lo = (uint32_t)(task * KD_TRIS_PER_TASK);
    *end = e < c->tris->count ? (uint32_t)e : c->tris->count;
}

/* Coverage, per leaf: every usable triangle that reaches into the leaf's
 * cell by more than tol is listed by that leaf. Triangles that only touch
 * the cell (or lie in its face, like planar ones kept on the other side of a
 * split) are exempt: the tracers visit both cells of a shared face. Each
 * triangle goes down the tree into the cells it reaches into, so the
 * triangles are independent tasks; the fault reported is the lowest
 * triangle's, at its first leaf in depth-first order. */
static void cover_task(KdWorker *w, size_t task)
{
    const KdCheck *c = w->run->c;
    const RtKdTree *t = c->t;
    RtKdFrame stack[RT_KD_CPU_MAX_DEPTH + 3];
    uint32_t tri, end;
    tri_range(c, task, &tri, &end);
    for (; tri < end && !beaten(w, tri); tri++) {
        if (rt_kd_tri_degenerate(c->tris, tri)) continue;
        KdTri tr = kd_tri(c->tris, tri);
        if (!tri_meets(&tr, t->bounds, -c->tol)) continue;
        int sp = 0;
        stack[sp++] = (RtKdFrame){0, 0, t->bounds};
        while (sp > 0) {
            RtKdFrame f = stack[--sp];
            RtKdNode n = t->nodes[f.node];
            if (kd_is_leaf(n)) {
                if (leaf_lists(c, kd_leaf_id(n), tri)) continue;
                RtError e;
                rt_fail(&e, RT_ERR_PARSE,
                        "KD: triangle %u reaches into leaf %u's cell (%g %g %g)-(%g %g %g) but "
                        "the leaf does not list it",
                        tri, kd_leaf_id(n), f.cell.lo.x, f.cell.lo.y, f.cell.lo.z, f.cell.hi.x,
                        f.cell.hi.y, f.cell.hi.z);
                report(w, tri, &e);
                return;
            }
            RtAabb kid[2];
            kd_child_cells(f.cell, n, &kid[0], &kid[1]);
            for (int s = 1; s >= 0; s--) /* the left child on top: visited first */
                if (tri_meets(&tr, kid[s], -c->tol))
                    stack[sp++] = (RtKdFrame){kd_left(n) + (uint32_t)s, 0, kid[s]};
        }
    }
}

/* Does some leaf that holds point q (within tol of a split: both sides) list tri? */
static int point_listed(const KdCheck *c, const double q[3], uint32_t tri)
{
    const RtKdTree *t = c->t;
    uint32_t stack[RT_KD_CPU_MAX_DEPTH + 3];
    int sp = 0;
    stack[sp++] = 0;
    while (sp > 0) {
        RtKdNode n = t->nodes[stack[--sp]];
        if (kd_is_leaf(n)) {
            if (leaf_lists(c, kd_leaf_id(n), tri)) return 1;
            continue;
        }
        double x = q[kd_axis(n)], s = kd_split(n);
        if (x >= s - c->tol) stack[sp++] = kd_right(n);
        if (x <= s + c->tol) stack[sp++] = kd_left(n);
    }
    return 0;
}

/* Coverage, per triangle: the vertices, edge midpoints and centroid of every
 * usable triangle are each in a leaf that lists it. This catches what the
 * per-leaf check exempts: triangles lying in a split plane. */
static void samples_task(KdWorker *w, size_t task)
{
    static const double bary[7][3] = {{1, 0, 0},     {0, 1, 0},     {0, 0, 1},
                                      {0.5, 0.5, 0}, {0, 0.5, 0.5}, {0.5, 0, 0.5},
                                      {1.0 / 3, 1.0 / 3, 1.0 / 3}};
    const KdCheck *c = w->run->c;
    uint32_t tri, end;
    tri_range(c, task, &tri, &end);
    for (; tri < end && !beaten(w, tri); tri++) {
        if (rt_kd_tri_degenerate(c->tris, tri)) continue;
        RtError e;
        if (!box_inside(tri_box(c->tris, tri), c->t->bounds, c->tol)) {
            rt_fail(&e, RT_ERR_PARSE, "KD: triangle %u lies outside the tree's bounds", tri);
            report(w, tri, &e);
            return;
        }
        for (int s = 0; s < 7; s++) {
            double q[3] = {0, 0, 0};
            for (int k = 0; k < 3; k++) {
                RtVec3 v = tri_v(c->tris, tri, k);
                q[0] += bary[s][k] * v.x;
                q[1] += bary[s][k] * v.y;
                q[2] += bary[s][k] * v.z;
            }
            if (!point_listed(c, q, tri)) {
                rt_fail(&e, RT_ERR_PARSE,
                        "KD: triangle %u: its point (%g %g %g) is in no leaf that lists it", tri,
                        q[0], q[1], q[2]);
                report(w, tri, &e);
                return;
            }
        }
    }
}

RtStatus rt_kd_validate_count(const RtKdTree *tree, const RtTriArrays *tris, unsigned flags, uint64_t *loose,
                              RtError *err)
{
    if (loose) *loose = 0;
    if (!tree || !tris)
        return rt_fail(err, RT_ERR_ARG, "KD: validate needs a tree and its triangles");
    if (tree->node_count == 0 || !tree->nodes)
        return rt_fail(err, RT_ERR_PARSE,
                       "KD: the tree has no nodes (an empty tree is one empty leaf)");
    if ((tree->leaf_count && (!tree->leaves || !tree->leaf_boxes)) ||
        (tree->index_count && !tree->tri_index) || (tris->count && !tris->verts))
        return rt_fail(err, RT_ERR_PARSE, "KD: a tree or triangle array is missing");
    RtAabb b = tree->bounds;
    if (!aabb_is_empty(b) && !(isfinite(b.lo.x + b.lo.y + b.lo.z + b.hi.x + b.hi.y + b.hi.z)))
        return rt_fail(err, RT_ERR_PARSE, "KD: the tree's bounds are not finite");

    KdCheck c = {.t = tree, .tris = tris, .flags = flags, .loose = loose};
    c.threads = rt_thread_count();
    if (c.threads > KD_MAX_THREADS) c.threads = KD_MAX_THREADS;
    if (!aabb_is_empty(b)) {
        double scale = 0.0;
        for (int a = 0; a < 3; a++)
            scale = fmax(scale, fmax(fabs(v3_get(b.lo, a)), fabs(v3_get(b.hi, a))));
        c.tol = KD_TOL_SCALE * scale;
    }
    c.leaf_sorted = calloc((size_t)tree->leaf_count + 1, 1);
    if (!c.leaf_sorted) return rt_fail(err, RT_ERR_OOM, "KD: out of memory while validating");
    RtStatus st = check_structure(&c, err);
    if (st == RT_OK && !aabb_is_empty(b))
        st = run_tasks(&c, cover_task, NULL, tri_tasks(&c), err);
    if (st == RT_OK) st = run_tasks(&c, samples_task, NULL, tri_tasks(&c), err);
    free(c.leaf_sorted);
    return st;
}

RtStatus rt_kd_validate_flags(const RtKdTree *tree, const RtTriArrays *tris, unsigned flags,
                              RtError *err)
{
    return rt_kd_validate_count(tree, tris, flags, NULL, err);
}

RtStatus rt_kd_validate(const RtKdTree *tree, const RtTriArrays *tris, RtError *err)
{
    return rt_kd_validate_flags(tree, tris, 0, err);
}
