/* hploc.h — H-PLOC, the `bvh` structure: Benthin, Meister, Barczak,
 * Mehalwal, Tsakok and Kensler 2024, "H-PLOC: Hierarchical Parallel
 * Locally-Ordered Clustering for Bounding Volume Hierarchy Construction"
 * (HPG 2024). The rules are written once here for the CPU oracle
 * (hploc_cpu.c) and the GPU builder (cuda/bvh/hploc_gpu.cu), so the two
 * make the same tree, node for node, up to where the leaves lie in
 * tri_index (step 5; tests/test_gpu_bvh.c compares them).
 *
 * The steps:
 *   1-2. the LBVH's triangle boxes, Morton codes and sort (lbvh.h steps 1
 *        and 2, the same code): n valid keys, sorted by (code, triangle id);
 *   3.   one bottom-up walk over the implicit binary radix tree of the
 *        augmented keys (code, sorted position) — Karras 2012's tree, walked
 *        as Apetrei 2014 does: a walk starts at every key; at each radix
 *        node an exchange on the node's split slot stops the first child's
 *        walk and lets the second continue with the node's key range.
 *        Where a node holds more than `threshold` keys, or is the root, the
 *        clusters of its two children (each at most `threshold`, stored
 *        compactly from the start of the child's range, the left child's
 *        first) are merged by PLOC (Meister and Bittner 2018) inside one
 *        warp until at most `threshold` remain (the root: one), and are
 *        stored from the start of the node's range. A PLOC step: each
 *        cluster's nearest neighbour among the clusters within `radius`
 *        places either side (hploc_distance, ties to the lower place);
 *        mutual nearest neighbours merge into a new interior node held at
 *        the lower place; the rest close up, order kept.
 *        So a radix node's clusters depend only on its children's: the
 *        tree is the same whichever walk gets where first.
 *   4.   bottom-up over the binary tree (one triangle per leaf): boxes and
 *        the LBVH's SAH leaf collapse (lbvh_merge_sub) and the tree's depth;
 *        the CPU in a pass with an atomic counter per node (the LBVH's step
 *        4), the GPU at each merge of step 3 (both clusters are finished);
 *   5.   the output (bvh_layout.h): each leaf (a collapsed child of a
 *        node the walk reaches) one range of tri_index, interior nodes at
 *        their ids, nodes[0] the root. The CPU lays the leaves out depth
 *        first (hploc_key_position) and writes every interior node from
 *        the walk of its leftmost key (hploc_output_node). The GPU writes
 *        each node's links at its merge and gives each leaf its range
 *        from a counter (hploc_gpu.cu), so its leaves lie elsewhere in
 *        tri_index: relaid out depth first, each leaf's own order kept,
 *        its tree is the CPU's in every node a walk reaches (the nodes
 *        inside a leaf, never walked, the GPU leaves as its merges wrote
 *        them).
 *
 * Names. A cluster is a uint32_t c: c < n is sorted key c (its triangle
 * alone), c >= n is interior node c - n. Interior node ids are in
 * [0, n - 1) and depend on the tree alone: the node merging clusters A and
 * B is min(max key of A, max key of B) (hploc_node_id). That is a
 * bijection onto [0, n - 1): key p is that number exactly for the lowest
 * ancestor of key p whose other child holds a key above p, and key n - 1
 * never is. Output node of id u: hploc_out_index (the
 * root's id and id 0 swap places).
 *
 * Depth. A clustering tree has no depth bound of its own (triangles whose
 * sizes grow geometrically along a line cluster into a chain), while the
 * tracers' stacks hold RT_BVH_MAX_DEPTH entries. Step 4 measures the
 * collapsed tree's depth; above RT_BVH_MAX_DEPTH the build falls back to
 * the radix tree itself, whose depth is at most 62 (each level splits on a
 * lower bit of the 62-bit augmented key): it then equals the LBVH's tree
 * with the same collapse, and the statistics say it fell back. The CPU's
 * walk of step 3 records the radix tree's links for this
 * (hploc_link_radix); the GPU walks the radix tree again. */
#ifndef RT_HPLOC_H
#define RT_HPLOC_H

#include "bvh/lbvh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The width of a PLOC merge: one warp, a cluster per lane. */
#define RT_HPLOC_WARP 32
/* The merging threshold's upper bound: two children of at most this many
 * clusters each fill one warp. */
#define RT_HPLOC_MAX_THRESHOLD (RT_HPLOC_WARP / 2)
/* The search radius's upper bound: a cluster's window fits the warp. */
#define RT_HPLOC_MAX_RADIUS (RT_HPLOC_WARP / 2)
/* The default search radius (rt_hploc_params_default; Benthin et al. 2024, §4), for which the
 * GPU's search is unrolled. */
#define RT_HPLOC_DEFAULT_RADIUS 8
/* No cluster (an emptied place; a free split slot; the root's parent). */
#define RT_HPLOC_NONE 0xffffffffu

typedef struct RtHplocParams {
    int radius;    /* PLOC search radius r: a cluster's nearest neighbour is sought among r places
                      either side; 1..RT_HPLOC_MAX_RADIUS, default RT_HPLOC_DEFAULT_RADIUS */
    int threshold; /* merging threshold: a radix node of more keys merges its clusters down to this
                      many; 1..RT_HPLOC_MAX_THRESHOLD, default 16 = warp / 2 (Benthin et al. §4) */
    int max_leaf;  /* largest collapsed leaf, 1..RT_BVH_MAX_LEAF; default 8 (the LBVH's) */
    float c_trav;  /* SAH cost of an interior node; default 1.0 (the kd-tree's, kd_cpu.h) */
    float c_isect; /* SAH cost per triangle; default 1.5 (the kd-tree's own are kd_sah.h's) */
} RtHplocParams;

/* The LBVH's collapse rule (lbvh_merge_sub) with H-PLOC's costs. */
RT_HD RtLbvhParams hploc_collapse_params(const RtHplocParams *p)
{
    RtLbvhParams q;
    q.c_trav = p->c_trav;
    q.c_isect = p->c_isect;
    q.max_leaf = p->max_leaf;
    return q;
}

/* ---- step 3: the radix tree, walked bottom-up --------------------------------- */

/* The radix tree's nodes bottom-up (Apetrei 2014): lbvh.h's
 * lbvh_is_left_child and lbvh_boundary, the LBVH's GPU climb's rule. */

/* ---- step 3: PLOC inside a radix node ----------------------------------------- */

/* A cluster as a merge holds it. */
typedef struct RtHplocCluster {
    uint32_t id;      /* the cluster (see Names) */
    uint32_t max_key; /* its highest key */
    RtAabb box;
} RtHplocCluster;

/* PLOC's distance: the surface area of the merged box (clusters are valid
 * triangles and their unions: never empty). Both sides pass the lower place
 * first (the union's zero signs then agree). */
RT_HD float hploc_distance(RtAabb lower, RtAabb upper) { return lbvh_area_nonempty(lbvh_union(lower, upper)); }

/* A neighbour candidate as one number, distance then place, so the least
 * is the nearest with ties to the lower place. A distance is >= 0 (a zero
 * of either sign, or NaN from an overflowed box, counts as 0): its bits
 * then order as the floats. */
RT_HD uint64_t hploc_nn_key(float dist, uint32_t place)
{
    const uint32_t bits = dist > 0.0f ? rt_float_bits(dist) : 0u;
    return ((uint64_t)bits << 32) | place;
}

/* The interior node merging clusters whose highest keys are a and b. */
RT_HD uint32_t hploc_node_id(uint32_t max_a, uint32_t max_b) { return max_a < max_b ? max_a : max_b; }

/* The merge of clusters lower and upper (mutual nearest neighbours, lower
 * at the lower place) as interior node id: child[2 id + k] and the parents
 * of both; returns the new cluster. box_out (may be NULL): where the
 * node's box goes for later merges to read. */
RT_HD RtHplocCluster hploc_merge(RtHplocCluster lower, RtHplocCluster upper, uint32_t n, uint32_t *child,
                                 uint32_t *parent, uint32_t *max_key)
{
    const uint32_t id = hploc_node_id(lower.max_key, upper.max_key);
    child[2 * (size_t)id] = lower.id;
    child[2 * (size_t)id + 1] = upper.id;
    parent[lower.id] = n + id;
    parent[upper.id] = n + id;
    RtHplocCluster c;
    c.id = n + id;
    c.max_key = lower.max_key > upper.max_key ? lower.max_key : upper.max_key;
    c.box = lbvh_union(lower.box, upper.box);
    max_key[id] = c.max_key;
    return c;
}

/* The radix tree's own links, recorded by the walk for the depth fallback:
 * cluster `node` is child `left ? 0 : 1` of the radix node at split slot
 * `slot` (interior id slot: the slots are the n - 1 interior nodes). */
RT_HD void hploc_link_radix(uint32_t n, uint32_t node, uint32_t slot, int left, uint32_t *child,
                            uint32_t *parent)
{
    child[2 * (size_t)slot + (left ? 0 : 1)] = node;
    parent[node] = n + slot;
}

/* ---- step 5: the output ------------------------------------------------------- */

/* Output node index of interior id u: the root's id and 0 swap places. */
RT_HD uint32_t hploc_out_index(uint32_t u, uint32_t root)
{
    return u == root ? 0u : (u == 0u ? root : u);
}

/* Triangles under cluster c (count[]: per interior id, from step 4). */
RT_HD uint32_t hploc_count(const uint32_t *count, uint32_t n, uint32_t c) { return c < n ? 1u : count[c - n]; }

/* Key p's place in the depth-first order of the leaves (left child first):
 * the triangles of the left siblings on its way up. A collapsed subtree's
 * keys are consecutive in this order, so a leaf is one range of tri_index.
 * *root: the root's interior id. At most the tree's depth of steps. */
RT_HD uint32_t hploc_key_position(const uint32_t *parent, const uint32_t *child, const uint32_t *count, uint32_t n,
                                  uint32_t p, uint32_t *root)
{
    uint32_t pos = 0, c = p, up;
    while ((up = parent[c]) != RT_HPLOC_NONE) {
        const size_t u = up - n;
        if (child[2 * u + 1] == c) pos += hploc_count(count, n, child[2 * u]);
        c = up;
    }
    *root = c - n;
    return pos;
}

/* The output node merging clusters c[0] and c[1] (in depth-first order),
 * whose subtrees are s[k] (a key's: lbvh_leaf_sub), before its place in
 * the tree is known: the children's boxes, and for each child either its
 * leaf, as the place of its first triangle counted from the node's own
 * first (0, then s[0].count), or its interior id. hploc_node_place
 * finishes it; the GPU writes this half at the merge, the other at the
 * output. */
RT_HD void hploc_node_links(const uint32_t c[2], const RtLbvhSub s[2], uint32_t n, RtBvhNode *out)
{
    for (int k = 0; k < 2; k++) {
        const uint32_t index = s[k].as_leaf ? (k ? s[0].count : 0u) : c[k] - n;
        bvh_set_child(out, k, s[k].box, s[k].as_leaf, index, s[k].as_leaf ? s[k].count : 0u);
    }
}

/* hploc_node_links's node placed: `first` is the depth-first place of its
 * leftmost key, so a collapsed child is the leaf from first on; an
 * interior child is its output node. */
RT_HD void hploc_node_place(RtBvhNode *out, uint32_t first, uint32_t root)
{
    for (int k = 0; k < 2; k++)
        out->child[k] = bvh_child_is_leaf(out, k) ? first + out->child[k] : hploc_out_index(out->child[k], root);
}

/* Output node of interior id u from its children's subtrees s[k] (a key's:
 * lbvh_leaf_sub) and `first`, the depth-first place of its leftmost key:
 * a collapsed child is the leaf of its range, another its output node. */
RT_HD void hploc_output_node(const uint32_t c[2], const RtLbvhSub s[2], uint32_t n, uint32_t root, uint32_t first,
                             RtBvhNode *out)
{
    hploc_node_links(c, s, n, out);
    hploc_node_place(out, first, root);
}

#ifdef __cplusplus
}
#endif
#endif
