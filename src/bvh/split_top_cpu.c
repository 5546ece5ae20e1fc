/* split_top_cpu.c — the CPU oracle of split_top.h: a top of spatial splits,
 * H-PLOC under each of its leaves (rt_hploc_build_keys_cpu), grafted into
 * one tree in the shared layout. The top is built level by level, as the
 * GPU would: each level reads the references of the one before and writes
 * its own, node by node in the top's left-to-right order. */
#include "bvh/bvh_cpu.h"
#include "bvh/split_top.h"
#include "kd/kd_clip.h"

#include <stdlib.h>
#include <string.h>

typedef struct SplitRef {
    uint32_t tri;
    RtAabb box;
} SplitRef;

/* A node of the top: its references' range at the current level and box;
 * child[k] >= 0: top nodes once it is split. */
typedef struct TopNode {
    uint32_t first, count;
    RtAabb box;
    int depth;
    int child[2];
} TopNode;

typedef struct TopSplit {
    int spatial, axis, k;
    float cost;
} TopSplit;

static RtAabb box_meet(RtAabb a, RtAabb b)
{
    RtAabb c = {v3(fmaxf(a.lo.x, b.lo.x), fmaxf(a.lo.y, b.lo.y), fmaxf(a.lo.z, b.lo.z)),
                v3(fminf(a.hi.x, b.hi.x), fminf(a.hi.y, b.hi.y), fminf(a.hi.z, b.hi.z))};
    if (!(c.lo.x <= c.hi.x && c.lo.y <= c.hi.y && c.lo.z <= c.hi.z)) return aabb_empty();
    return c;
}

static RtAabb with_axis(RtAabb b, int axis, float lo, float hi)
{
    float l[3] = {b.lo.x, b.lo.y, b.lo.z}, h[3] = {b.hi.x, b.hi.y, b.hi.z};
    l[axis] = lo;
    h[axis] = hi;
    return (RtAabb){v3(l[0], l[1], l[2]), v3(h[0], h[1], h[2])};
}

/* The part of reference r's triangle inside slab (its box's part): the
 * perfect-split box of Wald & Havran, kept inside the reference's box. */
static RtAabb clip_ref(const RtTriArrays *tris, SplitRef r, RtAabb slab)
{
    const RtAabb in = box_meet(r.box, slab);
    if (aabb_is_empty(in)) return in;
    const RtFloat4 *v = &tris->verts[3 * (size_t)r.tri];
    RtAabb out;
    if (!rt_tri_clip_box(f4_xyz(v[0]), f4_xyz(v[1]), f4_xyz(v[2]), in, &out)) return aabb_empty();
    return box_meet(out, r.box);
}

static float centre(RtAabb b, int a) { return RT_XMUL(RT_XADD(v3_get(b.lo, a), v3_get(b.hi, a)), 0.5f); }

/* The planes between an axis's bins: left of plane k the bins below it and
 * the references that start there (enter), right of it the others and the
 * references that end there (leave; an object split counts each reference
 * once in both). Keeps the cheapest in *best when cheaper, its sides in
 * side (may be NULL). */
static void sweep(const RtAabb *bin, const uint32_t *enter, const uint32_t *leave, int spatial, int axis,
                  TopSplit *best, RtAabb side[2])
{
    enum { B = RT_SPLIT_TOP_BINS };
    RtAabb right[B];
    uint32_t nr[B];
    right[B - 1] = bin[B - 1], nr[B - 1] = leave[B - 1];
    for (int b = B - 2; b >= 0; b--) right[b] = aabb_union(right[b + 1], bin[b]), nr[b] = nr[b + 1] + leave[b];
    RtAabb left = aabb_empty();
    uint32_t nl = 0;
    for (int k = 1; k < B; k++) {
        left = aabb_union(left, bin[k - 1]), nl += enter[k - 1];
        if (!nl || !nr[k]) continue;
        const float c = split_top_cost(split_top_area(left), nl, split_top_area(right[k]), nr[k]);
        if (!(c < best->cost)) continue;
        *best = (TopSplit){spatial, axis, k, c};
        if (side) side[0] = left, side[1] = right[k];
    }
}

/* The cheaper binned split of references r[0, n) in box: object splits by
 * centroid bin, spatial splits where the best object split's sides
 * overlap by more than alpha * root_area. Ties keep the earlier candidate
 * (object before spatial, lower axis, lower plane). 0 when none has both
 * sides. */
static int best_split(const RtTriArrays *tris, const SplitRef *r, uint32_t n, RtAabb box, float root_area,
                      float alpha, TopSplit *out)
{
    enum { B = RT_SPLIT_TOP_BINS };
    out->cost = INFINITY;
    RtAabb cb = aabb_empty();
    for (uint32_t i = 0; i < n; i++) {
        const RtVec3 c = v3(centre(r[i].box, 0), centre(r[i].box, 1), centre(r[i].box, 2));
        cb = aabb_union(cb, (RtAabb){c, c});
    }
    RtAabb obj_side[2] = {aabb_empty(), aabb_empty()};
    for (int a = 0; a < 3; a++) {
        const float lo = v3_get(cb.lo, a), scale = split_top_scale(lo, v3_get(cb.hi, a));
        if (scale == 0.0f) continue;
        RtAabb bin[B];
        uint32_t cnt[B] = {0};
        for (int b = 0; b < B; b++) bin[b] = aabb_empty();
        for (uint32_t i = 0; i < n; i++) {
            const int b = split_top_bin(centre(r[i].box, a), lo, scale);
            bin[b] = aabb_union(bin[b], r[i].box);
            cnt[b]++;
        }
        sweep(bin, cnt, cnt, 0, a, out, obj_side);
    }
    const int spatial = !(out->cost < INFINITY) ||
                        split_top_area(box_meet(obj_side[0], obj_side[1])) > RT_XMUL(alpha, root_area);
    for (int a = 0; spatial && a < 3; a++) {
        const float lo = v3_get(box.lo, a), hi = v3_get(box.hi, a), scale = split_top_scale(lo, hi);
        if (scale == 0.0f) continue;
        RtAabb bin[B];
        uint32_t enter[B] = {0}, leave[B] = {0};
        for (int b = 0; b < B; b++) bin[b] = aabb_empty();
        for (uint32_t i = 0; i < n; i++) {
            const int b0 = split_top_bin(v3_get(r[i].box.lo, a), lo, scale);
            const int b1 = split_top_bin(v3_get(r[i].box.hi, a), lo, scale);
            enter[b0]++, leave[b1]++;
            if (b0 == b1) {
                bin[b0] = aabb_union(bin[b0], r[i].box);
                continue;
            }
            for (int b = b0; b <= b1; b++) {
                const float s0 = b ? split_top_plane(lo, hi, b) : lo, s1 = b < B - 1 ? split_top_plane(lo, hi, b + 1) : hi;
                bin[b] = aabb_union(bin[b], clip_ref(tris, r[i], with_axis(box, a, s0, s1)));
            }
        }
        sweep(bin, enter, leave, 1, a, out, NULL);
    }
    return out->cost < INFINITY;
}

/* References r[0, n) of a node in box to its two sides, in their order:
 * dst[0, *nl) left, then dst[*nl, *nl + *nr) right. */
static void partition(const RtTriArrays *tris, const SplitRef *r, uint32_t n, RtAabb box, TopSplit s, SplitRef *dst,
                      uint32_t *nl, uint32_t *nr)
{
    const int a = s.axis;
    uint32_t l = 0, m = 0;
    SplitRef *right = dst + n; /* a scratch half: at most n go right */
    if (!s.spatial) {
        RtAabb cb = aabb_empty();
        for (uint32_t i = 0; i < n; i++) {
            const RtVec3 c = v3(centre(r[i].box, 0), centre(r[i].box, 1), centre(r[i].box, 2));
            cb = aabb_union(cb, (RtAabb){c, c});
        }
        const float lo = v3_get(cb.lo, a), scale = split_top_scale(lo, v3_get(cb.hi, a));
        for (uint32_t i = 0; i < n; i++) {
            if (split_top_bin(centre(r[i].box, a), lo, scale) < s.k) dst[l++] = r[i];
            else right[m++] = r[i];
        }
    } else {
        const float lo = v3_get(box.lo, a), hi = v3_get(box.hi, a), pos = split_top_plane(lo, hi, s.k);
        const RtAabb ls = with_axis(box, a, lo, pos), rs = with_axis(box, a, pos, hi);
        for (uint32_t i = 0; i < n; i++) {
            if (v3_get(r[i].box.hi, a) <= pos) dst[l++] = r[i];
            else if (v3_get(r[i].box.lo, a) >= pos) right[m++] = r[i];
            else {
                SplitRef p = r[i], q = r[i];
                p.box = clip_ref(tris, r[i], ls), q.box = clip_ref(tris, r[i], rs);
                if (!aabb_is_empty(p.box)) dst[l++] = p;
                if (!aabb_is_empty(q.box)) right[m++] = q;
            }
        }
    }
    memmove(dst + l, right, m * sizeof *dst);
    *nl = l, *nr = m;
}

static RtAabb refs_box(const SplitRef *r, uint32_t n)
{
    RtAabb b = aabb_empty();
    for (uint32_t i = 0; i < n; i++) b = aabb_union(b, r[i].box);
    return b;
}

static int cmp_u64(const void *x, const void *y)
{
    const uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* H-PLOC over one leaf's references (n >= 2): Morton codes within the
 * leaf's box, sorted by (code, index). tri_index gets local indices. */
static RtStatus leaf_tree(const RtHplocParams *hp, const SplitRef *r, uint32_t n, RtAabb box, RtBvh *out,
                          RtError *err)
{
    RtBvhKeys keys = {n, n, malloc(n * sizeof(RtAabb)), malloc(n * sizeof(uint32_t))};
    uint64_t *kv = malloc(n * sizeof *kv);
    uint32_t *ids = malloc(n * sizeof *ids);
    RtStatus st = RT_OK;
    if (!keys.box || !keys.code || !kv || !ids) st = rt_fail(err, RT_ERR_OOM, "BVH: out of memory (split top)");
    if (st == RT_OK) {
        const RtVec3 scale = lbvh_scale(box);
        for (uint32_t i = 0; i < n; i++) {
            keys.box[i] = r[i].box;
            kv[i] = (uint64_t)lbvh_morton(r[i].box, box, scale) << 32 | i;
        }
        qsort(kv, n, sizeof *kv, cmp_u64);
        for (uint32_t i = 0; i < n; i++) keys.code[i] = (uint32_t)(kv[i] >> 32), ids[i] = (uint32_t)kv[i];
        st = rt_hploc_build_keys_cpu(hp, &keys, ids, out, NULL, err);
    }
    free(keys.box);
    free(keys.code);
    free(kv);
    free(ids);
    return st;
}

/* The tree without a top: H-PLOC's own, every triangle listed once. */
static RtStatus hploc_alone(const RtHplocParams *hp, const RtTriArrays *tris, RtBvh *bvh, RtBvhStats *stats,
                            RtError *err)
{
    const RtStatus st = rt_hploc_build_cpu(hp, tris, bvh, stats, NULL, err);
    bvh->split_refs = 0;
    return st;
}

RtStatus rt_bvh_split_top_build_cpu(const RtHplocParams *hp, const RtSplitTopParams *sp, const RtTriArrays *tris,
                                    RtBvh *bvh, RtBvhStats *stats, RtError *err)
{
    const double t0 = rt_now_ms();
    const RtSplitTopParams p = sp ? *sp : rt_split_top_params_default();
    if (p.depth < 0 || p.depth > RT_SPLIT_TOP_MAX_DEPTH || !(p.alpha >= 0.0f) || p.min_refs < 2)
        return rt_fail(err, RT_ERR_ARG, "BVH: split top: depth %d (0..%d), alpha %g (>= 0), min_refs %u (>= 2)",
                       p.depth, RT_SPLIT_TOP_MAX_DEPTH, p.alpha, p.min_refs);
    /* the references: every usable triangle, its box */
    SplitRef *cur = malloc(((size_t)tris->count + 1) * sizeof *cur);
    if (!cur) return rt_fail(err, RT_ERR_OOM, "BVH: out of memory (split top)");
    uint32_t n = 0;
    for (uint32_t i = 0; i < tris->count; i++) {
        const RtAabb b = lbvh_tri_box(&tris->verts[3 * (size_t)i], tris->woop ? &tris->woop[3 * (size_t)i] : NULL);
        if (!aabb_is_empty(b)) cur[n++] = (SplitRef){i, b};
    }
    if (n < 2 || p.depth == 0) {
        free(cur);
        return hploc_alone(hp, tris, bvh, stats, err);
    }
    /* ---- the top, level by level ---- */
    const int max_nodes = (2 << p.depth) - 1;
    TopNode *top = calloc((size_t)max_nodes, sizeof *top);
    int *order = malloc((size_t)max_nodes * sizeof *order), *next_order = malloc((size_t)max_nodes * sizeof *order);
    int nodes = 1, leaves = 1;
    RtStatus st = RT_OK;
    if (!top || !order || !next_order) st = rt_fail(err, RT_ERR_OOM, "BVH: out of memory (split top)");
    else {
        top[0] = (TopNode){0, n, refs_box(cur, n), 0, {-1, -1}};
        order[0] = 0;
    }
    const float root_area = st == RT_OK ? split_top_area(top[0].box) : 0.0f;
    for (int d = 0; st == RT_OK && d < p.depth; d++) {
        /* at most 2 references a reference a level */
        SplitRef *nxt = malloc((2 * (size_t)n + 1) * 2 * sizeof *nxt);
        if (!nxt) {
            st = rt_fail(err, RT_ERR_OOM, "BVH: out of memory (split top)");
            break;
        }
        uint32_t m = 0;
        int next_leaves = 0;
        for (int j = 0; j < leaves; j++) {
            TopNode *t = &top[order[j]];
            TopSplit s;
            uint32_t nl = 0, nr = 0;
            if (t->depth == d && t->count >= p.min_refs &&
                best_split(tris, cur + t->first, t->count, t->box, root_area, p.alpha, &s) && s.spatial) {
                partition(tris, cur + t->first, t->count, t->box, s, nxt + m, &nl, &nr);
            }
            if (nl && nr) {
                for (int k = 0; k < 2; k++) {
                    const uint32_t f = m + (k ? nl : 0), c = k ? nr : nl;
                    top[nodes] = (TopNode){f, c, refs_box(nxt + f, c), d + 1, {-1, -1}};
                    t->child[k] = nodes;
                    next_order[next_leaves++] = nodes++;
                }
                m += nl + nr;
            } else {
                memcpy(nxt + m, cur + t->first, t->count * sizeof *nxt);
                t->first = m;
                m += t->count;
                next_order[next_leaves++] = order[j];
            }
        }
        free(cur);
        cur = nxt;
        n = m;
        int *tmp = order;
        order = next_order, next_order = tmp;
        leaves = next_leaves;
    }
    int alone = nodes == 1; /* no spatial split paid: H-PLOC's own tree */
    /* ---- H-PLOC under each leaf; the top's interior nodes first ---- */
    RtBvh *sub = st == RT_OK && !alone ? calloc((size_t)leaves, sizeof *sub) : NULL;
    if (st == RT_OK && !alone && !sub) st = rt_fail(err, RT_ERR_OOM, "BVH: out of memory (split top)");
    uint32_t total_nodes = 0, *place = st == RT_OK && !alone ? calloc((size_t)nodes, sizeof *place) : NULL;
    for (int i = 0; st == RT_OK && !alone && i < nodes; i++)
        if (top[i].child[0] >= 0) place[i] = total_nodes++;
    for (int j = 0; st == RT_OK && !alone && j < leaves; j++) {
        const TopNode *t = &top[order[j]];
        if (t->count < 2) continue;
        st = leaf_tree(hp, cur + t->first, t->count, t->box, &sub[j], err);
        place[order[j]] = total_nodes;
        total_nodes += sub[j].node_count;
    }
    /* the top's levels above a leaf's subtree must leave the walks' stacks
     * enough: else H-PLOC alone (whose own depth rule then holds) */
    for (int j = 0; st == RT_OK && !alone && j < leaves; j++) {
        if (top[order[j]].count < 2) continue;
        RtBvhStats ss;
        rt_bvh_tree_stats(&sub[j], NULL, 1.0f, 1.0f, &ss);
        alone |= (uint32_t)top[order[j]].depth + ss.depth > RT_BVH_MAX_DEPTH;
    }
    if (st == RT_OK && !alone &&
        (!rt_reserve_array((void **)&bvh->nodes, &bvh->node_cap, total_nodes, sizeof *bvh->nodes) ||
         !rt_reserve_array((void **)&bvh->tri_index, &bvh->index_cap, n, sizeof *bvh->tri_index)))
        st = rt_fail(err, RT_ERR_OOM, "BVH: out of memory (split top: %u nodes, %u references)", total_nodes, n);
    if (st == RT_OK && !alone) {
        /* leaves' subtrees, their ranges in the leaves' order */
        uint32_t *leaf_first = malloc((size_t)nodes * sizeof *leaf_first), at = 0;
        for (int j = 0; j < leaves; j++) {
            const TopNode *t = &top[order[j]];
            leaf_first[order[j]] = at;
            if (t->count < 2) {
                bvh->tri_index[at++] = cur[t->first].tri;
                continue;
            }
            const RtBvh *s = &sub[j];
            const uint32_t base = place[order[j]];
            for (uint32_t i = 0; i < t->count; i++) bvh->tri_index[at + i] = cur[t->first + s->tri_index[i]].tri;
            for (uint32_t k = 0; k < s->node_count; k++) {
                RtBvhNode nd = s->nodes[k];
                for (int c = 0; c < 2; c++) {
                    if (!bvh_child_is_leaf(&nd, c)) nd.child[c] += base;
                    else if (bvh_child_count(&nd, c)) nd.child[c] += at;
                }
                bvh->nodes[base + k] = nd;
            }
            at += t->count;
        }
        /* the top's interior nodes */
        for (int i = 0; i < nodes; i++) {
            if (top[i].child[0] < 0) continue;
            RtBvhNode *nd = &bvh->nodes[place[i]];
            for (int k = 0; k < 2; k++) {
                const TopNode *c = &top[top[i].child[k]];
                if (c->count < 2) bvh_set_child(nd, k, c->box, 1, leaf_first[top[i].child[k]], c->count);
                else bvh_set_child(nd, k, c->box, 0, place[top[i].child[k]], 0);
            }
        }
        free(leaf_first);
        bvh->node_count = total_nodes;
        bvh->index_count = n;
        bvh->bounds = top[0].box;
        bvh->d_bounds = NULL;
        bvh->split_refs = 1;
        if (!rt_bvh_leaf_woop_cpu(bvh, tris)) st = rt_fail(err, RT_ERR_OOM, "BVH: out of memory (leaf rows)");
    }
    for (int j = 0; sub && j < leaves; j++) rt_bvh_free(&sub[j]);
    free(sub);
    free(place);
    free(top);
    free(order);
    free(next_order);
    free(cur);
    if (st == RT_OK && alone) return hploc_alone(hp, tris, bvh, stats, err);
    if (st != RT_OK) {
        bvh->node_count = bvh->index_count = 0;
        bvh->bounds = aabb_empty();
        return st;
    }
    if (stats) {
        rt_bvh_tree_stats(bvh, tris, hp ? hp->c_trav : 1.0f, hp ? hp->c_isect : 1.5f, stats);
        stats->build_ms = rt_now_ms() - t0;
    }
    return RT_OK;
}
