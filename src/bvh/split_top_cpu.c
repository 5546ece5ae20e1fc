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

/* A node's bins (split_top.h): object bins of the references' centres and
 * spatial bins, each over the node's box, every axis. */
static void node_bins(const SplitRef *r, uint32_t n, RtAabb box, SplitTopBins obj[3],
                      SplitTopBins spa[3])
{
    enum { B = RT_SPLIT_TOP_BINS };
    for (int a = 0; a < 3; a++) {
        for (int b = 0; b < B; b++) {
            obj[a].box[b] = spa[a].box[b] = aabb_empty();
            obj[a].enter[b] = obj[a].leave[b] = spa[a].enter[b] = spa[a].leave[b] = 0;
        }
        const float lo = v3_get(box.lo, a), hi = v3_get(box.hi, a), scale = split_top_scale(lo, hi);
        for (uint32_t i = 0; i < n; i++) {
            const int c = split_top_bin(split_top_centre(r[i].box, a), lo, scale);
            obj[a].box[c] = split_top_union(obj[a].box[c], r[i].box);
            obj[a].enter[c]++, obj[a].leave[c]++;
            const int b0 = split_top_bin(v3_get(r[i].box.lo, a), lo, scale);
            const int b1 = split_top_bin(v3_get(r[i].box.hi, a), lo, scale);
            spa[a].enter[b0]++, spa[a].leave[b1]++;
            if (b0 == b1) {
                spa[a].box[b0] = split_top_union(spa[a].box[b0], r[i].box);
                continue;
            }
            for (int b = b0; b <= b1; b++)
                spa[a].box[b] = split_top_union(spa[a].box[b], split_top_bin_part(r[i].box, box, a, b));
        }
    }
}

/* References r[0, n) of a node in box to the two sides of its spatial
 * split, in their order: dst[0, *nl) left, then dst[*nl, *nl + *nr) right
 * (dst holds 2n). */
static void partition(const RtTriArrays *tris, const SplitRef *r, uint32_t n, RtAabb box, SplitTopChoice s,
                      SplitRef *dst, uint32_t *nl, uint32_t *nr)
{
    const int a = s.axis;
    uint32_t l = 0, m = 0;
    SplitRef *right = dst + n; /* a scratch half: at most n go right */
    const float pos = split_top_pos(box, a, s.k);
    for (uint32_t i = 0; i < n; i++) {
        const int side = split_top_side_at(r[i].box, a, pos);
        if (side == 0) {
            dst[l++] = r[i];
        } else if (side == 1) {
            right[m++] = r[i];
        } else {
            RtAabb part[2];
            split_top_cut(&tris->verts[3 * (size_t)r[i].tri], r[i].box, box, a, pos, part);
            SplitRef p = r[i], q = r[i];
            p.box = part[0], q.box = part[1];
            if (!aabb_is_empty(p.box)) dst[l++] = p;
            if (!aabb_is_empty(q.box)) right[m++] = q;
        }
    }
    memmove(dst + l, right, m * sizeof *dst);
    *nl = l, *nr = m;
}

static RtAabb refs_box(const SplitRef *r, uint32_t n)
{
    RtAabb b = aabb_empty();
    for (uint32_t i = 0; i < n; i++) b = split_top_union(b, r[i].box);
    return b;
}

static int cmp_u64(const void *x, const void *y)
{
    const uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* One leaf's keys (split_top_key over its box), sorted by (key, place):
 * the run of the GPU's sorted keys that the leaf's references make. */
static int leaf_keys(const SplitRef *r, uint32_t n, RtAabb box, uint32_t leaf, int bits, RtBvhKeys *keys,
                     uint32_t *ids)
{
    uint64_t *kv = malloc((size_t)n * sizeof *kv);
    if (!kv) return 0;
    keys->count = keys->n = n;
    const RtVec3 scale = lbvh_scale(box);
    for (uint32_t i = 0; i < n; i++) {
        keys->box[i] = r[i].box;
        kv[i] = (uint64_t)split_top_key(leaf, bits, lbvh_morton(r[i].box, box, scale)) << 32 | i;
    }
    qsort(kv, n, sizeof *kv, cmp_u64);
    for (uint32_t i = 0; i < n; i++) keys->code[i] = (uint32_t)(kv[i] >> 32), ids[i] = (uint32_t)kv[i];
    free(kv);
    return 1;
}

RtStatus rt_split_top_params_check(const RtSplitTopParams *p, RtError *err)
{
    if (!p) return rt_fail(err, RT_ERR_ARG, "BVH: no split top parameters");
    if (p->depth == 0) return RT_OK;
    if (p->depth < 0 || p->depth > RT_SPLIT_TOP_MAX_DEPTH || !(p->alpha >= 0.0f) || p->min_refs < 2 ||
        !(p->extra >= 0.0f && p->extra <= 1.0f))
        return rt_fail(err, RT_ERR_ARG,
                       "BVH: split top: depth %d (0..%d), alpha %g (>= 0), min_refs %u (>= 2), extra %g (0..1)",
                       p->depth, RT_SPLIT_TOP_MAX_DEPTH, p->alpha, p->min_refs, p->extra);
    return RT_OK;
}

RtStatus rt_bvh_split_top_build_cpu(const RtHplocParams *hp, const RtSplitTopParams *sp, const RtTriArrays *tris,
                                    RtBvh *bvh, RtBvhStats *stats, RtSplitTopInfo *info, RtError *err)
{
    const double t0 = rt_now_ms();
    const RtSplitTopParams p = sp ? *sp : rt_split_top_params_default();
    RtSplitTopInfo local;
    if (!info) info = &local;
    memset(info, 0, sizeof *info);
    RtStatus st = rt_split_top_params_check(&p, err);
    if (st != RT_OK) return st;
    if (!tris || !bvh || (tris->count && !tris->verts))
        return rt_fail(err, RT_ERR_ARG, "BVH: no triangle arrays or no BVH to build into");
    const uint32_t max_refs = split_top_max_refs(tris->count, p.extra);
    /* the references: every usable triangle, its box */
    SplitRef *cur = malloc(((size_t)tris->count + 1) * sizeof *cur);
    if (!cur) return rt_fail(err, RT_ERR_OOM, "BVH: out of memory (split top)");
    uint32_t n = 0;
    for (uint32_t i = 0; i < tris->count; i++) {
        const RtAabb b = lbvh_tri_box(&tris->verts[3 * (size_t)i], tris->woop ? &tris->woop[3 * (size_t)i] : NULL);
        if (!aabb_is_empty(b)) cur[n++] = (SplitRef){i, b};
    }
    /* ---- the top, level by level: its nodes in left-to-right order ---- */
    TopNode top[RT_SPLIT_TOP_MAX_NODES];
    int order[RT_SPLIT_TOP_MAX_LEAVES], next_order[RT_SPLIT_TOP_MAX_LEAVES];
    int nodes = 1, leaves = 1;
    top[0] = (TopNode){0, n, refs_box(cur, n), 0, {-1, -1}};
    order[0] = 0;
    const float root_area = split_top_area(top[0].box);
    for (int d = 0; n >= 2 && d < p.depth; d++) {
        /* the splits, node by node while the references stay within max_refs */
        SplitTopChoice choice[RT_SPLIT_TOP_MAX_LEAVES];
        int split[RT_SPLIT_TOP_MAX_LEAVES], any = 0;
        uint32_t total = n;
        for (int j = 0; j < leaves; j++) {
            const TopNode *t = &top[order[j]];
            split[j] = 0;
            if (t->depth != d || t->count < p.min_refs) continue;
            SplitTopBins obj[3], spa[3];
            node_bins(cur + t->first, t->count, t->box, obj, spa);
            if (split_top_choose(obj, spa, t->box, t->count, p.alpha, root_area, &choice[j]) &&
                choice[j].added <= max_refs - total) {
                split[j] = any = 1;
                total += choice[j].added;
            }
        }
        if (!any) break;
        SplitRef *nxt = malloc(((size_t)total + n + 1) * sizeof *nxt); /* partition's scratch half: n */
        if (!nxt) {
            st = rt_fail(err, RT_ERR_OOM, "BVH: out of memory (split top)");
            break;
        }
        uint32_t m = 0;
        int next_leaves = 0;
        for (int j = 0; j < leaves; j++) {
            TopNode *t = &top[order[j]];
            uint32_t nl = 0, nr = 0;
            if (split[j]) partition(tris, cur + t->first, t->count, t->box, choice[j], nxt + m, &nl, &nr);
            if (split[j]) { /* a side may be empty: every straddler's part there missed the triangle */
                for (int k = 0; k < 2; k++) {
                    const uint32_t f = m + (k ? nl : 0), c = k ? nr : nl;
                    top[nodes] = (TopNode){f, c, refs_box(nxt + f, c), d + 1, {-1, -1}};
                    t->child[k] = nodes;
                    next_order[next_leaves++] = nodes++;
                }
                m += nl + nr;
            } else { /* a leaf of the top: its references as they were */
                memcpy(nxt + m, cur + t->first, t->count * sizeof *nxt);
                t->first = m;
                m += t->count;
                next_order[next_leaves++] = order[j];
            }
        }
        free(cur);
        cur = nxt;
        n = m;
        memcpy(order, next_order, sizeof order);
        leaves = next_leaves;
    }
    if (st != RT_OK || leaves == 1) { /* no spatial split paid: H-PLOC's own tree */
        free(cur);
        if (st != RT_OK) return st;
        RtHplocInfo hi;
        st = rt_hploc_build_cpu(hp, tris, bvh, stats, &hi, err);
        bvh->split_refs = 0;
        info->leaves = 1, info->refs = top[0].count;
        info->cluster_depth = hi.cluster_depth, info->fallback = hi.fallback;
        return st;
    }
    /* ---- H-PLOC under each leaf, its run of keys; every leaf's radix tree
     *      when the top and a subtree together pass the walks' depth ---- */
    const int bits = split_top_leaf_bits((uint32_t)leaves);
    RtBvh sub[RT_SPLIT_TOP_MAX_LEAVES];
    memset(sub, 0, sizeof sub);
    RtBvhKeys keys = {0, 0, malloc(((size_t)n + 1) * sizeof(RtAabb)), malloc(((size_t)n + 1) * sizeof(uint32_t))};
    uint32_t *ids = malloc(((size_t)n + 1) * sizeof *ids);
    if (!keys.box || !keys.code || !ids) st = rt_fail(err, RT_ERR_OOM, "BVH: out of memory (split top)");
    for (int pass = 0; st == RT_OK && pass < 2; pass++) {
        uint32_t depth = 0;
        for (int j = 0; st == RT_OK && j < leaves; j++) {
            const TopNode *t = &top[order[j]];
            if (t->count < 2) {
                if ((uint32_t)t->depth > depth) depth = (uint32_t)t->depth;
                continue;
            }
            RtHplocInfo hi;
            if (!leaf_keys(cur + t->first, t->count, t->box, (uint32_t)j, bits, &keys, ids))
                st = rt_fail(err, RT_ERR_OOM, "BVH: out of memory (split top)");
            else
                st = rt_hploc_build_keys_cpu(hp, &keys, ids, pass, &sub[j], &hi, err);
            if (st == RT_OK && (uint32_t)t->depth + hi.cluster_depth > depth)
                depth = (uint32_t)t->depth + hi.cluster_depth;
            /* the subtree's tri_index: the leaf's references' triangles */
            for (uint32_t i = 0; st == RT_OK && i < t->count; i++)
                sub[j].tri_index[i] = cur[t->first + sub[j].tri_index[i]].tri;
        }
        if (pass == 0) info->cluster_depth = depth;
        if (depth <= RT_BVH_MAX_DEPTH) break;
        info->fallback = 1;
    }
    free(keys.box);
    free(keys.code);
    free(ids);
    /* ---- one tree: the top's interior nodes, then each leaf's subtree ---- */
    uint32_t total_nodes = 0, place[RT_SPLIT_TOP_MAX_NODES] = {0}, leaf_first[RT_SPLIT_TOP_MAX_NODES] = {0};
    for (int i = 0; i < nodes; i++)
        if (top[i].child[0] >= 0) place[i] = total_nodes++;
    for (int j = 0; j < leaves; j++) {
        place[order[j]] = total_nodes;
        if (top[order[j]].count >= 2) total_nodes += sub[j].node_count;
    }
    if (st == RT_OK &&
        (!rt_reserve_array((void **)&bvh->nodes, &bvh->node_cap, total_nodes, sizeof *bvh->nodes) ||
         !rt_reserve_array((void **)&bvh->tri_index, &bvh->index_cap, n, sizeof *bvh->tri_index)))
        st = rt_fail(err, RT_ERR_OOM, "BVH: out of memory (split top: %u nodes, %u references)", total_nodes, n);
    if (st == RT_OK) {
        uint32_t at = 0;
        for (int j = 0; j < leaves; j++) {
            const TopNode *t = &top[order[j]];
            leaf_first[order[j]] = at;
            if (t->count < 2) {
                if (t->count) bvh->tri_index[at++] = cur[t->first].tri;
                continue;
            }
            const RtBvh *s = &sub[j];
            const uint32_t base = place[order[j]];
            memcpy(bvh->tri_index + at, s->tri_index, t->count * sizeof *s->tri_index);
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
        for (int i = 0; i < nodes; i++) {
            if (top[i].child[0] < 0) continue;
            RtBvhNode *nd = &bvh->nodes[place[i]];
            for (int k = 0; k < 2; k++) {
                const int c = top[i].child[k];
                if (top[c].child[0] < 0 && top[c].count == 0) bvh_set_empty_child(nd, k);
                else if (top[c].child[0] < 0 && top[c].count == 1)
                    bvh_set_child(nd, k, top[c].box, 1, leaf_first[c], 1);
                else bvh_set_child(nd, k, top[c].box, 0, place[c], 0);
            }
        }
        bvh->node_count = total_nodes;
        bvh->index_count = n;
        bvh->bounds = top[0].box;
        bvh->d_bounds = NULL;
        bvh->split_refs = 1;
        info->leaves = (uint32_t)leaves, info->refs = n;
        if (!rt_bvh_leaf_woop_cpu(bvh, tris)) st = rt_fail(err, RT_ERR_OOM, "BVH: out of memory (leaf rows)");
    }
    for (int j = 0; j < leaves; j++) rt_bvh_free(&sub[j]);
    free(cur);
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
