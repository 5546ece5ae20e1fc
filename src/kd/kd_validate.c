/* kd_validate.c — what any kd-tree in the shared layout (kd_layout.h) must
 * satisfy, whichever builder made it: structure, coverage of every triangle,
 * leaf boxes. docs/kdtree.md defines the tolerances used here; the tree's
 * statistics are kd_stats.c.
 */
#include "kd/kd_cpu.h"

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

typedef struct KdFrame {
    uint32_t node, depth;
    RtAabb cell;
} KdFrame;

/* ---- validation ------------------------------------------------------------------ */

typedef struct KdCheck {
    const RtKdTree *t;
    const RtTriArrays *tris;
    RtError *err;
    unsigned flags;
    double tol;
    uint32_t *stamp; /* per triangle: the leaf visit that last listed it */
    uint32_t gen;
    uint32_t *cand;  /* candidate lists of the coverage walk, as a stack */
    size_t cand_n, cand_cap;
} KdCheck;

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

/* Does triangle id overlap the box grown by g (g < 0: shrunk)? */
static int tri_meets(const KdCheck *c, uint32_t id, RtAabb box, double g)
{
    double tv[3][3], bc[3], bh[3];
    if (!box_d(box, g, bc, bh)) return 0;
    if (!boxes_meet(tri_box(c->tris, id), box, g)) return 0;
    tri_d(tri_v(c->tris, id, 0), tri_v(c->tris, id, 1), tri_v(c->tris, id, 2), tv);
    return overlap_d(tv, bc, bh);
}

static const char axis_name[3] = {'x', 'y', 'z'};

/* The references of one leaf: ids in range, usable, really in the cell; the
 * leaf box inside the cell and around each triangle's part of the cell. */
static RtStatus check_leaf(KdCheck *c, uint32_t node, RtKdNode n, RtAabb cell)
{
    const RtKdTree *t = c->t;
    uint32_t id = kd_leaf_id(n);
    if (id >= t->leaf_count)
        return rt_fail(c->err, RT_ERR_PARSE, "KD: node %u: leaf id %u out of range (%u leaves)",
                       node, id, t->leaf_count);
    RtKdLeaf lf = t->leaves[id];
    if (lf.count != kd_leaf_count(n))
        return rt_fail(c->err, RT_ERR_PARSE,
                       "KD: node %u: count %u differs from leaves[%u].count %u", node,
                       kd_leaf_count(n), id, lf.count);
    if ((uint64_t)lf.first + lf.count > t->index_count)
        return rt_fail(c->err, RT_ERR_PARSE,
                       "KD: leaf %u: range [%u, %u) past the end of tri_index (%u)", id, lf.first,
                       lf.first + lf.count, t->index_count);
    if (lf.count == 0) {
        /* An empty leaf's box is never read (count 0 skips it); accept the
         * empty box or one inside the cell. */
        RtAabb b = t->leaf_boxes[id];
        if (!aabb_is_empty(b) && !box_inside(b, cell, c->tol))
            return rt_fail(c->err, RT_ERR_PARSE, "KD: empty leaf %u: box outside its cell", id);
        return RT_OK;
    }
    if (aabb_is_empty(cell))
        return rt_fail(c->err, RT_ERR_PARSE,
                       "KD: leaf %u lists %u triangles but the tree's bounds are empty", id,
                       lf.count);
    RtAabb box = t->leaf_boxes[id];
    if (aabb_is_empty(box) || !box_inside(box, cell, c->tol))
        return rt_fail(c->err, RT_ERR_PARSE,
                       "KD: leaf %u: box (%g %g %g)-(%g %g %g) not inside its cell "
                       "(%g %g %g)-(%g %g %g)",
                       id, box.lo.x, box.lo.y, box.lo.z, box.hi.x, box.hi.y, box.hi.z, cell.lo.x,
                       cell.lo.y, cell.lo.z, cell.hi.x, cell.hi.y, cell.hi.z);
    for (uint32_t i = 0; i < lf.count; i++) {
        uint32_t tri = t->tri_index[lf.first + i];
        if (tri >= c->tris->count)
            return rt_fail(c->err, RT_ERR_PARSE, "KD: leaf %u: triangle %u out of range (%u)", id,
                           tri, c->tris->count);
        if (rt_kd_tri_degenerate(c->tris, tri))
            return rt_fail(c->err, RT_ERR_PARSE, "KD: leaf %u lists degenerate triangle %u", id,
                           tri);
        int meets = (c->flags & RT_KD_VALIDATE_LOOSE_REFS)
                        ? boxes_meet(tri_box(c->tris, tri), cell, c->tol)
                        : tri_meets(c, tri, cell, c->tol);
        if (!meets)
            return rt_fail(c->err, RT_ERR_PARSE,
                           "KD: leaf %u lists triangle %u, which does not overlap its cell", id,
                           tri);
        RtAabb part;
        if (rt_tri_clip_box(tri_v(c->tris, tri, 0), tri_v(c->tris, tri, 1),
                            tri_v(c->tris, tri, 2), cell, &part) &&
            !box_inside(part, box, c->tol))
            return rt_fail(c->err, RT_ERR_PARSE,
                           "KD: leaf %u: box does not contain triangle %u's part of the cell", id,
                           tri);
    }
    return RT_OK;
}

/* Structure: indices in range, each node and leaf reached exactly once from
 * the root (no cycles, nothing orphaned), splits inside their cells, depth
 * within the tracers' stacks; and each leaf (check_leaf). */
static RtStatus check_structure(KdCheck *c)
{
    const RtKdTree *t = c->t;
    uint8_t *node_seen = calloc(t->node_count, 1), *leaf_seen = calloc(t->leaf_count + 1, 1);
    KdFrame *stack = malloc((RT_KD_CPU_MAX_DEPTH + 3) * sizeof *stack);
    RtStatus st = RT_OK;
    if (!node_seen || !leaf_seen || !stack) {
        st = rt_fail(c->err, RT_ERR_OOM, "KD: out of memory while validating");
        goto out;
    }
    int sp = 0;
    stack[sp++] = (KdFrame){0, 0, t->bounds};
    while (sp > 0 && st == RT_OK) {
        KdFrame f = stack[--sp];
        if (node_seen[f.node]) {
            st = rt_fail(c->err, RT_ERR_PARSE,
                         "KD: node %u is reached twice from the root (cycle or shared child)",
                         f.node);
            break;
        }
        node_seen[f.node] = 1;
        RtKdNode n = t->nodes[f.node];
        if (kd_is_leaf(n)) {
            uint32_t id = kd_leaf_id(n);
            if (id < t->leaf_count) {
                if (leaf_seen[id]) {
                    st = rt_fail(c->err, RT_ERR_PARSE, "KD: leaf %u is used by two nodes", id);
                    break;
                }
                leaf_seen[id] = 1;
            }
            st = check_leaf(c, f.node, n, f.cell);
            continue;
        }
        int a = kd_axis(n);
        float s = kd_split(n);
        uint32_t l = kd_left(n);
        if ((uint64_t)l + 1 >= t->node_count) {
            st = rt_fail(c->err, RT_ERR_PARSE, "KD: node %u: children %u, %u out of range (%u nodes)",
                         f.node, l, l + 1, t->node_count);
            break;
        }
        if (!isfinite(s) || s < v3_get(f.cell.lo, a) || s > v3_get(f.cell.hi, a)) {
            st = rt_fail(c->err, RT_ERR_PARSE,
                         "KD: node %u: split %c = %g outside its cell [%g, %g]", f.node,
                         axis_name[a], s, v3_get(f.cell.lo, a), v3_get(f.cell.hi, a));
            break;
        }
        if (f.depth + 1 > RT_KD_CPU_MAX_DEPTH) {
            st = rt_fail(c->err, RT_ERR_PARSE,
                         "KD: node %u: deeper than %d levels (the tracers' stack)", f.node,
                         RT_KD_CPU_MAX_DEPTH);
            break;
        }
        RtAabb lc, rc;
        kd_child_cells(f.cell, n, &lc, &rc);
        stack[sp++] = (KdFrame){l + 1, f.depth + 1, rc};
        stack[sp++] = (KdFrame){l, f.depth + 1, lc};
    }
    for (uint32_t i = 0; st == RT_OK && i < t->node_count; i++)
        if (!node_seen[i])
            st = rt_fail(c->err, RT_ERR_PARSE, "KD: node %u is not reachable from the root", i);
    for (uint32_t i = 0; st == RT_OK && i < t->leaf_count; i++)
        if (!leaf_seen[i])
            st = rt_fail(c->err, RT_ERR_PARSE, "KD: leaf %u is used by no node", i);
out:
    free(node_seen);
    free(leaf_seen);
    free(stack);
    return st;
}

/* Coverage, per leaf: every usable triangle that reaches into the leaf's
 * cell by more than tol is listed by that leaf. Triangles that only touch
 * the cell (or lie in its face, like planar ones kept on the other side of a
 * split) are exempt: the tracers visit both cells of a shared face. The
 * candidates are filtered down the tree: cand[off, off + n) reach into cell. */
static RtStatus check_cover(KdCheck *c, uint32_t node, RtAabb cell, size_t off, size_t n)
{
    const RtKdTree *t = c->t;
    RtKdNode nd = t->nodes[node];
    if (kd_is_leaf(nd)) {
        RtKdLeaf lf = t->leaves[kd_leaf_id(nd)];
        c->gen++;
        for (uint32_t i = 0; i < lf.count; i++) c->stamp[t->tri_index[lf.first + i]] = c->gen;
        for (size_t i = 0; i < n; i++) {
            uint32_t tri = c->cand[off + i];
            if (c->stamp[tri] != c->gen)
                return rt_fail(c->err, RT_ERR_PARSE,
                               "KD: triangle %u reaches into leaf %u's cell (%g %g %g)-(%g %g "
                               "%g) but the leaf does not list it",
                               tri, kd_leaf_id(nd), cell.lo.x, cell.lo.y, cell.lo.z, cell.hi.x,
                               cell.hi.y, cell.hi.z);
        }
        return RT_OK;
    }
    RtAabb kid[2];
    kd_child_cells(cell, nd, &kid[0], &kid[1]);
    for (int s = 0; s < 2; s++) {
        size_t start = c->cand_n;
        if (!rt_grow_array((void **)&c->cand, &c->cand_cap, start + n, sizeof *c->cand))
            return rt_fail(c->err, RT_ERR_OOM, "KD: out of memory while validating");
        for (size_t i = 0; i < n; i++) {
            uint32_t tri = c->cand[off + i];
            if (tri_meets(c, tri, kid[s], -c->tol)) c->cand[c->cand_n++] = tri;
        }
        RtStatus st = check_cover(c, kd_left(nd) + (uint32_t)s, kid[s], start, c->cand_n - start);
        c->cand_n = start;
        if (st != RT_OK) return st;
    }
    return RT_OK;
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
            RtKdLeaf lf = t->leaves[kd_leaf_id(n)];
            for (uint32_t i = 0; i < lf.count; i++)
                if (t->tri_index[lf.first + i] == tri) return 1;
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
static RtStatus check_samples(KdCheck *c)
{
    static const double bary[7][3] = {{1, 0, 0},     {0, 1, 0},     {0, 0, 1},
                                      {0.5, 0.5, 0}, {0, 0.5, 0.5}, {0.5, 0, 0.5},
                                      {1.0 / 3, 1.0 / 3, 1.0 / 3}};
    for (uint32_t tri = 0; tri < c->tris->count; tri++) {
        if (rt_kd_tri_degenerate(c->tris, tri)) continue;
        if (!box_inside(tri_box(c->tris, tri), c->t->bounds, c->tol))
            return rt_fail(c->err, RT_ERR_PARSE, "KD: triangle %u lies outside the tree's bounds",
                           tri);
        for (int s = 0; s < 7; s++) {
            double q[3] = {0, 0, 0};
            for (int k = 0; k < 3; k++) {
                RtVec3 v = tri_v(c->tris, tri, k);
                q[0] += bary[s][k] * v.x;
                q[1] += bary[s][k] * v.y;
                q[2] += bary[s][k] * v.z;
            }
            if (!point_listed(c, q, tri))
                return rt_fail(c->err, RT_ERR_PARSE,
                               "KD: triangle %u: its point (%g %g %g) is in no leaf that lists it",
                               tri, q[0], q[1], q[2]);
        }
    }
    return RT_OK;
}

RtStatus rt_kd_validate_flags(const RtKdTree *tree, const RtTriArrays *tris, unsigned flags,
                              RtError *err)
{
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

    KdCheck c;
    memset(&c, 0, sizeof c);
    c.t = tree;
    c.tris = tris;
    c.err = err;
    c.flags = flags;
    if (!aabb_is_empty(b)) {
        double scale = 0.0;
        for (int a = 0; a < 3; a++)
            scale = fmax(scale, fmax(fabs(v3_get(b.lo, a)), fabs(v3_get(b.hi, a))));
        c.tol = KD_TOL_SCALE * scale;
    }
    RtStatus st = check_structure(&c);
    if (st == RT_OK && !aabb_is_empty(b)) {
        c.stamp = calloc(tris->count + 1, sizeof *c.stamp);
        c.cand_cap = (size_t)tris->count + 1;
        c.cand = malloc(c.cand_cap * sizeof *c.cand);
        if (!c.stamp || !c.cand) {
            st = rt_fail(err, RT_ERR_OOM, "KD: out of memory while validating");
        } else {
            for (uint32_t i = 0; i < tris->count; i++)
                if (!rt_kd_tri_degenerate(tris, i) && tri_meets(&c, i, b, -c.tol))
                    c.cand[c.cand_n++] = i;
            st = check_cover(&c, 0, b, 0, c.cand_n);
        }
        free(c.stamp);
        free(c.cand);
    }
    if (st == RT_OK) st = check_samples(&c);
    return st;
}

RtStatus rt_kd_validate(const RtKdTree *tree, const RtTriArrays *tris, RtError *err)
{
    return rt_kd_validate_flags(tree, tris, 0, err);
}
