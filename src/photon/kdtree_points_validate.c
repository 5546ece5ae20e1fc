/* kdtree_points_validate.c — what any point k-d tree in the shared layout
 * (kdtree_points.h) must satisfy, whichever builder made it (the CPU oracle
 * now, the GPU builder of issue 23 later). docs/photon.md lists the checks.
 * Serial and in a fixed order (a walk from the root, left before right, then
 * the input points in index order), so the violation named is always the
 * first one. */
#include "photon/kdtree_points.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct KdpCheck {
    const RtKdpTree *t;
    const float *pts;
    uint32_t n;
    uint8_t *reached; /* per node */
    uint8_t *used;    /* per input point: some node holds it */
    /* the path from the root: ancestors and the side taken below each */
    uint32_t path[RT_KDP_STACK + 1];
    int side[RT_KDP_STACK + 1];
    RtError *err;
} KdpCheck;

static const float *node_pt(const RtKdpTree *t, uint32_t node) { return t->coords + (size_t)node * t->dim; }

/* "(x, y, z)" of a point, into buf. */
static const char *fmt_pt(const float *a, uint32_t dim, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    for (uint32_t c = 0; c < dim && o < size; c++)
        o += (size_t)snprintf(buf + o, size - o, "%s%g", c ? ", " : "(", (double)a[c]);
    if (o < size) snprintf(buf + o, size - o, ")");
    return buf;
}

/* Node `node` at `depth` over the range [lo, hi] of the numbering rule:
 * itself, its place against every ancestor, then its children. */
static RtStatus check_node(KdpCheck *c, uint32_t node, uint32_t depth, uint32_t lo, uint32_t hi)
{
    const RtKdpTree *t = c->t;
    char a[160], b[160];
    if (depth >= t->depth)
        return rt_fail(c->err, RT_ERR_PARSE, "KDP: node %u at depth %u; a balanced tree of %u points has %u levels",
                       node, depth, t->count, t->depth);
    if (node >= t->count)
        return rt_fail(c->err, RT_ERR_PARSE, "KDP: node index %u out of range (%u nodes)", node, t->count);
    if (node != kdp_median(lo, hi))
        return rt_fail(c->err, RT_ERR_PARSE, "KDP: node %u at depth %u roots the range [%u, %u]; expected node %u (its median)",
                       node, depth, lo, hi, kdp_median(lo, hi));
    if (c->reached[node]) return rt_fail(c->err, RT_ERR_PARSE, "KDP: node %u reached twice", node);
    c->reached[node] = 1;
    uint32_t p = t->nodes[node].point;
    if (p >= c->n) return rt_fail(c->err, RT_ERR_PARSE, "KDP: node %u holds point %u of %u", node, p, c->n);
    if (c->used[p]) return rt_fail(c->err, RT_ERR_PARSE, "KDP: point %u is in the tree twice (node %u)", p, node);
    c->used[p] = 1;
    const float *x = node_pt(t, node), *in = c->pts + (size_t)p * t->dim;
    if (memcmp(x, in, t->dim * sizeof(float)) != 0 || !kdp_finite(in, t->dim))
        return rt_fail(c->err, RT_ERR_PARSE, "KDP: node %u holds %s; point %u is %s", node,
                       fmt_pt(x, t->dim, a, sizeof a), p, fmt_pt(in, t->dim, b, sizeof b));
    for (uint32_t d = 0; d < depth; d++) {
        uint32_t anc = c->path[d], axis = kdp_axis(d, t->dim);
        int cmp = kdp_super_cmp(x, node_pt(t, anc), axis, t->dim);
        if (c->side[d] == 0 ? cmp < 0 : cmp > 0) continue;
        return rt_fail(c->err, RT_ERR_PARSE,
                       "KDP: node %u %s is in the %s subtree of node %u %s but its super key from "
                       "coordinate %u is not %s",
                       node, fmt_pt(x, t->dim, a, sizeof a), c->side[d] ? "right" : "left", anc,
                       fmt_pt(node_pt(t, anc), t->dim, b, sizeof b), axis, c->side[d] ? "above" : "below");
    }
    c->path[depth] = node;
    for (int s = 0; s < 2; s++) {
        uint32_t ch = t->nodes[node].child[s];
        uint32_t clo = s ? node + 1 : lo, chi = s ? hi : node - 1;
        int empty = s ? node == hi : node == lo;
        if (empty) {
            if (ch != RT_KDP_NONE)
                return rt_fail(c->err, RT_ERR_PARSE, "KDP: node %u has %s child %u; its range [%u, %u] leaves none",
                               node, s ? "a right" : "a left", ch, lo, hi);
            continue;
        }
        if (ch == RT_KDP_NONE)
            return rt_fail(c->err, RT_ERR_PARSE, "KDP: node %u has no %s child; its range [%u, %u] needs one",
                           node, s ? "right" : "left", lo, hi);
        c->side[depth] = s;
        RtStatus st = check_node(c, ch, depth + 1, clo, chi);
        if (st != RT_OK) return st;
    }
    return RT_OK;
}

/* Finds the node equal to x by super-key descent (the order is checked). */
static uint32_t find(const RtKdpTree *t, const float *x)
{
    uint32_t node = t->root;
    for (uint32_t depth = 0; node != RT_KDP_NONE; depth++) {
        int cmp = kdp_super_cmp(x, node_pt(t, node), kdp_axis(depth, t->dim), t->dim);
        if (cmp == 0) return node;
        node = t->nodes[node].child[cmp > 0];
    }
    return RT_KDP_NONE;
}

RtStatus rt_kdp_validate(const RtKdpTree *t, const float *pts, uint32_t n, RtError *err)
{
    if (t->dim < 1 || t->dim > RT_KDP_MAX_DIM)
        return rt_fail(err, RT_ERR_PARSE, "KDP: %u coordinates per point; expected 1..%d", t->dim, RT_KDP_MAX_DIM);
    if (t->count > n) return rt_fail(err, RT_ERR_PARSE, "KDP: %u nodes for %u input points", t->count, n);
    uint32_t want = kdp_depth(t->count);
    if (t->depth != want)
        return rt_fail(err, RT_ERR_PARSE, "KDP: depth %u; a balanced tree of %u points has ceil(log2(%u + 1)) = %u",
                       t->depth, t->count, t->count, want);
    if (t->count == 0) {
        if (t->root != RT_KDP_NONE) return rt_fail(err, RT_ERR_PARSE, "KDP: an empty tree with root %u", t->root);
    } else if (t->root != kdp_median(0, t->count - 1)) {
        return rt_fail(err, RT_ERR_PARSE, "KDP: root %u; expected node %u, the median of %u", t->root,
                       kdp_median(0, t->count - 1), t->count);
    }
    KdpCheck c = {t, pts, n, calloc((size_t)t->count + 1, 1), calloc((size_t)n + 1, 1), {0}, {0}, err};
    RtStatus st = RT_OK;
    if (!c.reached || !c.used) {
        st = rt_fail(err, RT_ERR_OOM, "KDP: out of memory to validate %u nodes", t->count);
        goto done;
    }
    if (t->count > 0 && (st = check_node(&c, t->root, 0, 0, t->count - 1)) != RT_OK) goto done;
    /* the walk reached count distinct nodes (no index out of range, none twice) */
    char a[160], b[160];
    for (uint32_t i = 0; i < n; i++) {
        const float *x = pts + (size_t)i * t->dim;
        if (c.used[i] || !kdp_finite(x, t->dim)) continue;
        uint32_t node = find(t, x);
        if (node == RT_KDP_NONE) {
            st = rt_fail(err, RT_ERR_PARSE, "KDP: point %u %s is missing from the tree", i,
                         fmt_pt(x, t->dim, a, sizeof a));
            goto done;
        }
        if (t->nodes[node].point > i) {
            st = rt_fail(err, RT_ERR_PARSE,
                         "KDP: point %u %s is in the tree as point %u; duplicates keep the lowest index", i,
                         fmt_pt(x, t->dim, b, sizeof b), t->nodes[node].point);
            goto done;
        }
    }
done:
    free(c.reached);
    free(c.used);
    return st;
}
