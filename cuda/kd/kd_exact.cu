/* kd_exact.cu — Kolodzey 2014's exact per-level SAH kd-tree builder (seed
 * 003; digest ../shared/research/kolodzey-2014.md), breadth-first on the GPU:
 *
 *   once:       triangle boxes and bounds; 6 events per triangle (a START
 *               and an END per axis, or two PLANAR ones on an axis where the
 *               triangle is flat), each axis sorted once (CUB radix sort)
 *   per level:  every event of every active node is a split candidate: its
 *               counts come from one scan over the event types (Alg. 6),
 *               the best per node by an atomic minimum; nodes whose best
 *               split does not beat a leaf (the CPU oracle's termination)
 *               become leaves; the others' references are classified and
 *               every event list is distributed to the children in order
 *               (Alg. 7): the lists are never sorted again as a whole.
 *
 * What is ours, and why (docs/kd_gpu.md has the detail):
 *   - Events are 8 bytes: the plane (order-preserving bits), the type and the
 *     reference's slot. A reference is a triangle id; the thesis's per-event
 *     box copy is not needed, because a reference's side is read off its
 *     events' positions relative to the chosen cut (below), not off a box.
 *   - A candidate is a cut between two consecutive events of a node's list,
 *     at the plane of the event after it or the one before it (the cost is
 *     linear in between). Left of the cut are the references whose START (or
 *     PLANAR) event lies before it, right those whose END (or PLANAR) event
 *     lies after: the counts the SAH uses are exactly the children's, so the
 *     thesis's risk of counts that disagree with the clipping (digest §10,
 *     item 7) cannot arise. Ties sort END < PLANAR < START (Wald & Havran),
 *     so planar triangles may go either side and faces of a cell can split
 *     off the triangles lying in them, as the CPU oracle's sweep does.
 *   - The cost, the empty-space bonus, the thin-slab rule, the termination
 *     and the depth limit are the CPU oracle's (kd_sah.h), so the two trees'
 *     SAH costs compare.
 *   - exact_clip = 0 is the thesis's clipping: a straddler's events keep their
 *     planes except on the split axis, where the crossing ones take the split
 *     plane (they stay in order), so its boxes stay loose on the other axes.
 *     exact_clip = 1 (default) clips a straddler exactly against both
 *     children (kd_clip.h's perfect-split parts, the oracle's), drops it from
 *     a child it misses, and makes its events there anew from its part's
 *     box: those few are sorted per child and merged into the kept events,
 *     which stay in order. The trees then cost what the oracle's do.
 *   - The host waits once per level for the level's totals (the next level's
 *     sizes), as the thesis does; CUB scans stand in for its hand-written
 *     binary scans and the atomic minimum for its hybrid reduction.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "kd/kd_clip.h"
#include "kd/kd_exact.cuh"
#include "kd/kd_gpu_internal.cuh"
#include "kd/kd_sah.h"
#include "gpu/cuda_check.h"
#include "gpu/gpu.h"

#define EX_BLOCK 256
/* a cut's position in its node's list takes 29 bits of the best-split key */
#define EX_CUT_BITS 29

typedef unsigned long long u64;

/* ---- events ------------------------------------------------------------------ */

/* kd_clip.h's events (rt_kd_event: position, type, and in the low bits
 * the reference's slot in the level's list), as the CPU oracle's. */
__device__ __forceinline__ float ex_plane(u64 e) { return rt_kd_key_pos(rt_kd_event_key(e)); }

/* Two counts in one 64-bit word (low, high): one scan serves both. */
__host__ __device__ __forceinline__ uint32_t lo32(u64 v) { return (uint32_t)v; }
__host__ __device__ __forceinline__ uint32_t hi32(u64 v) { return (uint32_t)(v >> 32); }

/* ---- per-level data ------------------------------------------------------------ */

/* A node's decision: split (axis >= 0) at x after `cut` events of its
 * lists, or a leaf (axis -1). */
struct ExDec {
    float x;
    uint32_t cut;
    int32_t axis;
};

/* Per node: splits, leaves and leaf references before it (exclusive scan). */
struct ExNodeScan { /* (a node is a split or a leaf: leaves before it = n - splits) */
    uint32_t splits, index;
};
/* Per reference: its left and right copies before it, and of those the
 * tight ones (exact_clip: straddlers with new, exact planes). */
struct ExRefScan {
    uint32_t l, r, tl, tr;
};
struct ExRefSum {
    __host__ __device__ ExRefScan operator()(const ExRefScan &a, const ExRefScan &b) const
    {
        return ExRefScan{a.l + b.l, a.r + b.r, a.tl + b.tl, a.tr + b.tr};
    }
};
struct ExNodeSum {
    __host__ __device__ ExNodeScan operator()(const ExNodeScan &a, const ExNodeScan &b) const
    {
        return ExNodeScan{a.splits + b.splits, a.index + b.index};
    }
};

/* The split rules (the CPU oracle's, kd_sah.h) and the builder's switches. */
struct ExRules {
    double c_trav, c_isect, lambda, gap;
    uint32_t max_leaf;
    int max_depth;
    int exact_clip;
};

/* Everything a level's kernels read and write (passed by value). */
struct ExLevel {
    const u64 *ev[3];
    u64 *ev_out[3];
    const uint32_t *prim, *rnode; /* per reference: triangle, active node */
    uint32_t *prim_out, *rnode_out;
    const uint32_t *nd_first, *nd_count, *nd_tree; /* per active node: refs, its slot in nodes[] */
    const RtAabb *nd_cell;
    uint32_t *nd_first_out, *nd_count_out, *nd_tree_out;
    RtAabb *nd_cell_out;
    const u64 *scan_types;  /* per axis, per event: STARTs (low) and ENDs (high) before it */
    u64 *best;              /* per node: the best candidate's key (ex_best) */
    ExDec *dec;
    ExNodeScan *nscan_in, *nscan;
    uint8_t *left, *right, *side; /* per reference: its events' verdicts, then its sides (bit 0 left,
                                     1 right, 2 tight: its planes are new) */
    RtAabb *tbox;           /* per tight reference: its boxes in the left and right child */
    uint32_t *strad, *n_strad; /* the straddlers to clip (exact_clip), and their count */
    const ExRefScan *scan_refs;
    const u64 *tkeys;       /* tight events (plane, type), per axis and child, sorted; tvals: their
                               references, the child's side in the top bit */
    const uint32_t *tvals;
    u64 *tkeys_in;
    uint32_t *tvals_in;
    uint32_t *seg_begin, *seg_end; /* per axis and child: its tight events */
    uint32_t n_tight;       /* tight copies (child references) this level */
    uint32_t n_children;
    uint2 *slot;            /* per reference: its slots in the children's list */
    const u64 *scan_sides;  /* per axis, per event: left and right copies before it */
    RtKdNode *nodes;
    RtKdLeaf *leaves;
    RtAabb *leaf_boxes;
    uint32_t *tri_index;
    const float4 *verts;
    uint32_t n_nodes, n_refs, n_events;
    uint32_t node_base, leaf_base, index_base;
    int level;
    ExRules k;
};

/* The scans' inputs, computed on the fly. */
struct ExTypeCount { /* per axis-major event index, plus one zero at the end */
    const u64 *ev0, *ev1, *ev2;
    uint32_t n;
    __host__ __device__ u64 operator()(uint32_t j) const
    {
        if (j >= 3u * n) return 0;
        const u64 e = j < n ? ev0[j] : (j < 2u * n ? ev1[j - n] : ev2[j - 2u * n]);
        const uint32_t t = rt_kd_event_type(e);
        return t == RT_KD_EV_START ? 1ull : (t == RT_KD_EV_END ? (1ull << 32) : 0ull);
    }
};
struct ExSideCount { /* per axis-major event index (and a zero at the end): its reference's
                       copies whose planes stay (not tight) */
    const u64 *ev0, *ev1, *ev2;
    const uint8_t *side;
    uint32_t n;
    __host__ __device__ u64 operator()(uint32_t j) const
    {
        if (j >= 3u * n) return 0;
        const u64 e = j < n ? ev0[j] : (j < 2u * n ? ev1[j - n] : ev2[j - 2u * n]);
        const uint8_t s = side[rt_kd_event_id(e)];
        if (s & 4u) return 0;
        return (u64)(s & 1u) | ((u64)((s >> 1) & 1u) << 32);
    }
};
struct ExRefCount { /* per reference, plus one zero at the end */
    const uint8_t *side;
    uint32_t n;
    __host__ __device__ ExRefScan operator()(uint32_t r) const
    {
        if (r >= n) return ExRefScan{0, 0, 0, 0};
        const uint32_t s = side[r], t = (s >> 2) & 1u;
        return ExRefScan{s & 1u, (s >> 1) & 1u, (s & 1u) & t, ((s >> 1) & 1u) & t};
    }
};
struct ExValid {
    const uint32_t *valid;
    uint32_t n;
    __host__ __device__ uint32_t operator()(uint32_t t) const { return t < n ? valid[t] : 0u; }
};

/* ---- the root ------------------------------------------------------------------- */

/* Which triangles enter the tree (kd_clip.h's rule), and their bounds. */
__global__ void ex_tri_boxes(const float4 *verts, const float4 *woop, uint32_t n, uint32_t *valid, int *bounds)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    if (t < n) {
        RtFloat4 v[3], w[3];
        for (int k = 0; k < 3; k++) {
            float4 a = verts[3 * (size_t)t + k];
            v[k] = f4(a.x, a.y, a.z, a.w);
            if (woop) {
                float4 b = woop[3 * (size_t)t + k];
                w[k] = f4(b.x, b.y, b.z, b.w);
            }
        }
        const int ok = !rt_kd_tri_degenerate_v(v, woop ? w : NULL);
        valid[t] = (uint32_t)ok;
        if (ok) {
            lo[0] = fminf(fminf(v[0].x, v[1].x), v[2].x), hi[0] = fmaxf(fmaxf(v[0].x, v[1].x), v[2].x);
            lo[1] = fminf(fminf(v[0].y, v[1].y), v[2].y), hi[1] = fmaxf(fmaxf(v[0].y, v[1].y), v[2].y);
            lo[2] = fminf(fminf(v[0].z, v[1].z), v[2].z), hi[2] = fmaxf(fmaxf(v[0].z, v[1].z), v[2].z);
        }
    }
    typedef cub::BlockReduce<float, EX_BLOCK> Reduce;
    __shared__ typename Reduce::TempStorage tmp;
    for (int a = 0; a < 6; a++) {
        const float v = a < 3 ? lo[a] : hi[a - 3];
        const float r = a < 3 ? Reduce(tmp).Reduce(v, [](float x, float y) { return fminf(x, y); })
                              : Reduce(tmp).Reduce(v, [](float x, float y) { return fmaxf(x, y); });
        if (threadIdx.x == 0 && isfinite(r)) {
            if (a < 3) atomicMin(&bounds[a], rt_f2ord(r));
            else atomicMax(&bounds[a], rt_f2ord(r));
        }
        __syncthreads();
    }
}

/* The root's references (valid triangles in id order) and their events. */
__global__ void ex_root_events(const float4 *verts, const uint32_t *valid, const uint32_t *vscan, uint32_t n,
                               u64 *k0, u64 *k1, u64 *k2, uint32_t *prim, uint32_t *rnode)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n || !valid[t]) return;
    const uint32_t r = vscan[t];
    prim[r] = t;
    rnode[r] = 0;
    const float4 a = verts[3 * (size_t)t], b = verts[3 * (size_t)t + 1], c = verts[3 * (size_t)t + 2];
    const float lo[3] = {fminf(fminf(a.x, b.x), c.x), fminf(fminf(a.y, b.y), c.y), fminf(fminf(a.z, b.z), c.z)};
    const float hi[3] = {fmaxf(fmaxf(a.x, b.x), c.x), fmaxf(fmaxf(a.y, b.y), c.y), fmaxf(fmaxf(a.z, b.z), c.z)};
    u64 *k[3] = {k0, k1, k2};
    for (int x = 0; x < 3; x++) {
        if (lo[x] == hi[x]) {
            k[x][2 * (size_t)r] = k[x][2 * (size_t)r + 1] = rt_kd_event(rt_kd_pos_key(lo[x]), RT_KD_EV_PLANAR, r);
        } else {
            k[x][2 * (size_t)r] = rt_kd_event(rt_kd_pos_key(hi[x]), RT_KD_EV_END, r);
            k[x][2 * (size_t)r + 1] = rt_kd_event(rt_kd_pos_key(lo[x]), RT_KD_EV_START, r);
        }
    }
}

/* ---- ComputeBestSplits (Alg. 6) --------------------------------------------------- */

/* The candidates of the cut before position k of a node's list on axis a:
 * prev / cur are the events either side (has_prev / has_cur: they exist),
 * s / e the START / END events before the cut, plc the planar references
 * before it. */
__device__ __forceinline__ void ex_cut(const ExRules &L, u64 *key, int a, uint32_t k, int has_prev, u64 prev,
                                       int has_cur, u64 cur, uint32_t s, uint32_t e, uint32_t plc, uint32_t nnp,
                                       uint32_t npl, double lo, double hi, double A, double B)
{
    /* no cut between two events of one key (a planar triangle's pair) */
    if (has_prev && has_cur && (prev >> RT_KD_EV_ID_BITS) == (cur >> RT_KD_EV_ID_BITS)) return;
    const uint32_t nl = s + plc, nr = (nnp - e) + (npl - plc);
    for (int which = 0; which < 2; which++) {
        float x;
        if (which == 0) {
            /* at the next event's plane: clean when nothing after the cut ends there */
            if (!has_cur || rt_kd_event_type(cur) == RT_KD_EV_END) continue;
            x = ex_plane(cur);
        } else {
            /* at the previous event's plane: clean when nothing before it starts there */
            if (!has_prev || rt_kd_event_type(prev) == RT_KD_EV_START) continue;
            x = ex_plane(prev);
            if (has_cur && rt_kd_event_type(cur) != RT_KD_EV_END && ex_plane(cur) == x) continue; /* the same plane */
        }
        const double xl = (double)x - lo, xr = hi - (double)x;
        int ok;
        if (xl >= L.gap && xr >= L.gap) ok = 1;
        /* a face of the cell splits off only the triangles lying in it */
        else if (xl == 0.0) ok = s == 0 && plc > 0;
        else if (xr == 0.0) ok = e == nnp && npl > plc;
        else ok = 0;
        if (!ok) continue;
        const double c = rt_kd_split_cost(L.c_trav, L.c_isect, L.lambda, A + B * xl, A + B * xr, nl, nr);
        const u64 kk = ((u64)__float_as_uint(__double2float_ru(c)) << 32) | ((u64)a << 30) | ((u64)k << 1) |
                       (u64)which;
        if (kk < *key) *key = kk;
    }
}

/* A thread per event position i: the cuts before position i on every axis
 * (the lists of a node line up on the three axes), the best to its node. */
__global__ void ex_best(ExLevel L)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t n = 0xffffffffu;
    u64 key = ~0ull;
    if (i < L.n_events) {
        n = L.rnode[rt_kd_event_id(L.ev[0][i])];
        const uint32_t count = L.nd_count[n];
        const RtAabb cell = L.nd_cell[n];
        double ext[3];
        const double half = rt_kd_half_area(cell, ext);
        if (rt_kd_may_split(count, L.k.max_leaf, L.level, L.k.max_depth, half)) {
            const uint32_t s0 = 2 * L.nd_first[n], k = i - s0, last = 2 * count - 1;
            const double inv = 1.0 / half;
            for (int a = 0; a < 3; a++) {
                const double lo = v3_get(cell.lo, a), hi = v3_get(cell.hi, a);
                if (!(hi > lo)) continue;
                const double A = ext[(a + 1) % 3] * ext[(a + 2) % 3] * inv;
                const double B = (ext[(a + 1) % 3] + ext[(a + 2) % 3]) * inv;
                const u64 *ev = L.ev[a];
                const u64 *sc = L.scan_types + (size_t)a * L.n_events;
                const u64 c0 = sc[s0], ck = sc[i], ce = sc[s0 + 2 * count];
                const uint32_t nnp = lo32(ce - c0), npl = count - nnp;
                const u64 d = ck - c0;
                const uint32_t s = lo32(d), e = hi32(d), plc = (k - s - e) / 2;
                const u64 cur = ev[i], prev = k ? ev[i - 1] : 0;
                ex_cut(L.k, &key, a, k, k > 0, prev, 1, cur, s, e, plc, nnp, npl, lo, hi, A, B);
                /* the last thread also has the cut after the list */
                if (k == last) ex_cut(L.k, &key, a, k + 1, 1, cur, 0, 0, nnp, nnp, npl, nnp, npl, lo, hi, A, B);
            }
        }
    }
    /* one atomic per warp where the whole warp serves one node (the upper
     * levels), else one per thread (nodes are small there) */
    const unsigned peers = __match_any_sync(0xffffffffu, n);
    if (peers == 0xffffffffu) {
        for (int o = 16; o; o >>= 1) {
            const u64 other = __shfl_xor_sync(0xffffffffu, key, o);
            key = other < key ? other : key;
        }
        if ((threadIdx.x & 31) == 0 && n != 0xffffffffu && key != ~0ull) atomicMin(&L.best[n], key);
    } else if (n != 0xffffffffu && key != ~0ull) {
        atomicMin(&L.best[n], key);
    }
}

/* A thread per node (and one for the scan's end): split or leaf. */
__global__ void ex_decide(ExLevel L)
{
    const uint32_t n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n > L.n_nodes) return;
    if (n == L.n_nodes) {
        L.nscan_in[n] = ExNodeScan{0, 0};
        return;
    }
    const uint32_t count = L.nd_count[n];
    const u64 key = L.best[n];
    /* the oracle's termination: a split must beat the leaf's C_i * N */
    int split = key != ~0ull && count > L.k.max_leaf && L.level < L.k.max_depth &&
                rt_kd_split_pays((double)__uint_as_float((uint32_t)(key >> 32)), L.k.c_isect, count);
    ExDec d = {0.0f, 0, -1};
    if (split) {
        d.axis = (int32_t)((key >> 30) & 3u);
        d.cut = (uint32_t)(key >> 1) & ((1u << EX_CUT_BITS) - 1u);
        const uint32_t at = 2 * L.nd_first[n] + d.cut - (uint32_t)(key & 1u);
        d.x = ex_plane(L.ev[d.axis][at]);
    }
    L.dec[n] = d;
    L.nscan_in[n] = ExNodeScan{(uint32_t)split, split ? 0u : count};
}

/* A thread per node: its entry in nodes[] (and leaves[]). */
__global__ void ex_nodes(ExLevel L)
{
    const uint32_t n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= L.n_nodes) return;
    const ExDec d = L.dec[n];
    const ExNodeScan s = L.nscan[n];
    const uint32_t slot = L.nd_tree[n];
    if (d.axis < 0) {
        const uint32_t leaf = L.leaf_base + (n - s.splits), count = L.nd_count[n];
        L.nodes[slot] = kd_make_leaf(leaf, count);
        L.leaves[leaf] = RtKdLeaf{L.index_base + s.index, count};
        /* its box: each sorted list's first and last plane (the CPU oracle's
         * rule), the bounds of its triangles' parts of its cell */
        const RtAabb cell = L.nd_cell[n];
        RtAabb box = aabb_empty();
        if (count) {
            const uint32_t first = 2 * L.nd_first[n], last = first + 2 * count - 1;
            for (int a = 0; a < 3; a++) {
                v3_set(&box.lo, a, fmaxf(ex_plane(L.ev[a][first]), v3_get(cell.lo, a)));
                v3_set(&box.hi, a, fminf(ex_plane(L.ev[a][last]), v3_get(cell.hi, a)));
            }
        }
        L.leaf_boxes[leaf] = box;
    } else {
        L.nodes[slot] = kd_make_interior(d.axis, d.x, L.node_base + 2 * s.splits);
    }
}

/* ---- ClippingAndPartitioning (Alg. 7) ---------------------------------------------- */

/* A thread per event position on the split axis: which side of the cut the
 * event lies on is its reference's verdict for that side. */
__global__ void ex_classify(ExLevel L)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= L.n_events) return;
    const uint32_t n = L.rnode[rt_kd_event_id(L.ev[0][i])];
    const ExDec d = L.dec[n];
    if (d.axis < 0) return;
    const u64 e = L.ev[d.axis][i];
    const uint32_t r = rt_kd_event_id(e), t = rt_kd_event_type(e);
    const uint8_t before = (i - 2 * L.nd_first[n]) < d.cut;
    if (t != RT_KD_EV_END) L.left[r] = before;   /* START, PLANAR */
    if (t != RT_KD_EV_START) L.right[r] = !before; /* END, PLANAR */
}

/* A thread per reference: a leaf's reference goes to tri_index; a
 * straddler, with exact_clip, is clipped against both children's cells and
 * leaves a child its triangle misses. */
__global__ void ex_refs(ExLevel L)
{
    const uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= L.n_refs) return;
    const uint32_t n = L.rnode[r];
    const ExDec d = L.dec[n];
    if (d.axis < 0) {
        L.tri_index[L.index_base + L.nscan[n].index + (r - L.nd_first[n])] = L.prim[r];
        L.side[r] = 0;
        return;
    }
    const int l = L.left[r], rt = L.right[r];
    if (l && rt && L.k.exact_clip) {
        /* a straddler: clipped by ex_clip, from a list (one in ten or so
         * references: here a warp would wait for its few straddlers) */
        L.strad[atomicAdd(L.n_strad, 1u)] = r;
        return;
    }
    L.side[r] = (uint8_t)(l | (rt << 1));
}

/* A thread per straddler (ex_refs' list; the grid is sized for every
 * reference): the parts of its triangle in the two children; their boxes
 * are its planes there (tight), and a child it misses loses it. */
__global__ void ex_clip(ExLevel L)
{
    const uint32_t q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= *L.n_strad) return;
    const uint32_t r = L.strad[q], n = L.rnode[r];
    const ExDec d = L.dec[n];
    const uint32_t t = L.prim[r];
    RtFloat4 v[3];
    for (int k = 0; k < 3; k++) {
        const float4 f = L.verts[3 * (size_t)t + k];
        v[k] = f4(f.x, f.y, f.z, f.w);
    }
    const RtAabb cell = L.nd_cell[n];
    RtAabb child[2], part[2];
    kd_child_cells(cell, kd_make_interior(d.axis, d.x, 0), &child[0], &child[1]);
    int mask = rt_tri_split_boxes(v, cell, d.axis, d.x, child, part);
    if (!mask) { /* rounding at the plane: keep both, never lose it */
        mask = 3;
        part[0] = child[0], part[1] = child[1];
    }
    L.tbox[2 * (size_t)r] = part[0];
    L.tbox[2 * (size_t)r + 1] = part[1];
    L.side[r] = (uint8_t)(mask | 4);
}

/* Child `side` of split node n in the next level's lists (which follow the
 * nodes' order: all copies before n's children are b.l + b.r): its first
 * reference and count, and its tight copies (their events in the sorted
 * tight list). */
struct ExChild {
    uint32_t first, count, tfirst, tcount;
};
__device__ __forceinline__ ExChild ex_child(const ExLevel &L, uint32_t n, int side)
{
    const uint32_t first = L.nd_first[n], count = L.nd_count[n];
    const ExRefScan b = L.scan_refs[first], e = L.scan_refs[first + count];
    if (!side) return ExChild{b.l + b.r, e.l - b.l, b.tl + b.tr, e.tl - b.tl};
    return ExChild{e.l + b.r, e.r - b.r, e.tl + b.tr, e.tr - b.tr};
}

/* Thread j's event: axis-major over the three lists. */
struct ExEventAt {
    int a;
    uint32_t i, r;
    u64 e;
};
__device__ __forceinline__ ExEventAt ex_event_at(const ExLevel &L, uint32_t j)
{
    ExEventAt x;
    x.a = (int)(j / L.n_events);
    x.i = j - (uint32_t)x.a * L.n_events;
    x.e = L.ev[x.a][x.i];
    x.r = rt_kd_event_id(x.e);
    return x;
}
/* The kept copies (ex_scan_sides: left low, right high) before list position
 * p of axis a, from the start of node n's list (its first reference first). */
__device__ __forceinline__ u64 ex_kept_before(const ExLevel &L, int a, uint32_t p, uint32_t first)
{
    const u64 *sc = L.scan_sides + (size_t)a * L.n_events;
    return sc[p] - sc[2 * first];
}

/* A thread per reference: its copies in the children's list; the first
 * reference of a split node also writes the children. */
__global__ void ex_refs_scatter(ExLevel L)
{
    const uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= L.n_refs) return;
    const uint32_t n = L.rnode[r];
    const ExDec d = L.dec[n];
    if (d.axis < 0) return;
    const uint32_t first = L.nd_first[n], child = 2 * L.nscan[n].splits;
    const ExRefScan sb = L.scan_refs[first], sr = L.scan_refs[r];
    const ExChild c[2] = {ex_child(L, n, 0), ex_child(L, n, 1)};
    const uint8_t s = L.side[r];
    uint2 slot = make_uint2(0, 0);
    if (s & 1u) {
        slot.x = c[0].first + (sr.l - sb.l);
        L.prim_out[slot.x] = L.prim[r];
        L.rnode_out[slot.x] = child;
    }
    if (s & 2u) {
        slot.y = c[1].first + (sr.r - sb.r);
        L.prim_out[slot.y] = L.prim[r];
        L.rnode_out[slot.y] = child + 1;
    }
    L.slot[r] = slot;
    if (r == first) {
        RtAabb cell[2];
        kd_child_cells(L.nd_cell[n], kd_make_interior(d.axis, d.x, 0), &cell[0], &cell[1]);
        for (int h = 0; h < 2; h++) {
            L.nd_tree_out[child + h] = L.node_base + child + h;
            L.nd_first_out[child + h] = c[h].first;
            L.nd_count_out[child + h] = c[h].count;
            L.nd_cell_out[child + h] = cell[h];
            if (L.k.exact_clip) /* the child's tight events, per axis: the segments of their sort */
                for (int a = 0; a < 3; a++) {
                    const uint32_t at = a * L.n_children + child + h;
                    L.seg_begin[at] = a * 2 * L.n_tight + 2 * c[h].tfirst;
                    L.seg_end[at] = L.seg_begin[at] + 2 * c[h].tcount;
                }
        }
    }
}

/* A thread per event of every axis: its copies, in order, into the
 * children's lists. On the split axis a copy that crosses the cut takes
 * the split plane (it stays sorted: it is the last of the left list or the
 * first of the right); on the other axes planes never change. */
__global__ void ex_events_scatter(ExLevel L)
{
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= 3u * L.n_events) return;
    const ExEventAt x = ex_event_at(L, j);
    const uint8_t s = L.side[x.r];
    if (!s) return;
    const uint32_t n = L.rnode[x.r];
    const ExDec d = L.dec[n];
    const uint32_t first = L.nd_first[n], k = x.i - 2 * first;
    const u64 rank = ex_kept_before(L, x.a, x.i, first);
    const uint2 slot = L.slot[x.r];
    const uint32_t type = rt_kd_event_type(x.e), snapped = rt_kd_pos_key(d.x), plane = rt_kd_event_key(x.e);
    if (s & 1u) {
        const uint32_t pos = 2 * ex_child(L, n, 0).first + lo32(rank);
        L.ev_out[x.a][pos] = rt_kd_event(x.a == d.axis && k >= d.cut ? snapped : plane, type, slot.x);
    }
    if (s & 2u) {
        const uint32_t pos = 2 * ex_child(L, n, 1).first + hi32(rank);
        L.ev_out[x.a][pos] = rt_kd_event(x.a == d.axis && k < d.cut ? snapped : plane, type, slot.y);
    }
}

/* ---- exact clipping: the tight events, merged in order -------------------- */

/* A tight event's sort key within its axis and child: its order in a list
 * (plane, type); the value, its reference, breaks ties as the lists do (the
 * sort is stable and the references come in order). */
__device__ __forceinline__ u64 ex_tight_key(uint32_t pos_key, uint32_t type)
{
    return ((u64)pos_key << 2) | type;
}
#define EX_SIDE_BIT 0x80000000u
/* The list order of a tight event with this key and reference. */
__device__ __forceinline__ u64 ex_tight_order(u64 key, uint32_t r)
{
    return (((key >> 2) & 0xffffffffull) << 32) | ((key & 3u) << RT_KD_EV_ID_BITS) | r;
}

/* A thread per tight reference: its events in the children it reaches,
 * from its parts' boxes, unsorted. */
__global__ void ex_tight_events(ExLevel L)
{
    const uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= L.n_refs) return;
    const uint8_t s = L.side[r];
    if (!(s & 4u)) return;
    const uint32_t n = L.rnode[r];
    const ExRefScan sr = L.scan_refs[r], sb = L.scan_refs[L.nd_first[n]];
    for (int side = 0; side < 2; side++) {
        if (!(s & (1u << side))) continue;
        /* a child's tight copies are one run, in reference order */
        const uint32_t q = ex_child(L, n, side).tfirst + (side ? sr.tr - sb.tr : sr.tl - sb.tl);
        const RtAabb b = L.tbox[2 * (size_t)r + side];
        for (int a = 0; a < 3; a++) {
            const float lo = v3_get(b.lo, a), hi = v3_get(b.hi, a);
            const size_t at = (size_t)a * 2 * L.n_tight + 2 * (size_t)q;
            if (lo == hi) {
                L.tkeys_in[at] = L.tkeys_in[at + 1] = ex_tight_key(rt_kd_pos_key(lo), RT_KD_EV_PLANAR);
            } else {
                L.tkeys_in[at] = ex_tight_key(rt_kd_pos_key(hi), RT_KD_EV_END);
                L.tkeys_in[at + 1] = ex_tight_key(rt_kd_pos_key(lo), RT_KD_EV_START);
            }
            L.tvals_in[at] = L.tvals_in[at + 1] = r | (side ? EX_SIDE_BIT : 0u);
        }
    }
}

/* A thread per event of every axis whose reference keeps its planes: its
 * copies go where the merge with the child's sorted tight events puts them
 * (its rank among the kept events plus the tight events before it). */
__global__ void ex_events_merge(ExLevel L)
{
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= 3u * L.n_events) return;
    const ExEventAt x = ex_event_at(L, j);
    const int a = x.a;
    const u64 e = x.e;
    const uint8_t s = L.side[x.r];
    if (!s || (s & 4u)) return;
    const uint32_t n = L.rnode[x.r];
    const u64 rank = ex_kept_before(L, a, x.i, L.nd_first[n]);
    const uint2 slot = L.slot[x.r];
    for (int side = 0; side < 2; side++) {
        if (!(s & (1u << side))) continue;
        const ExChild c = ex_child(L, n, side);
        /* tight events of this child before e */
        const u64 *k = L.tkeys + (size_t)a * 2 * L.n_tight + 2 * (size_t)c.tfirst;
        const uint32_t *v = L.tvals + (size_t)a * 2 * L.n_tight + 2 * (size_t)c.tfirst;
        uint32_t lo = 0, hi = 2 * c.tcount;
        while (lo < hi) {
            const uint32_t mid = (lo + hi) >> 1;
            if (ex_tight_order(k[mid], v[mid] & ~EX_SIDE_BIT) < e) lo = mid + 1;
            else hi = mid;
        }
        const uint32_t pos = 2 * c.first + (side ? hi32(rank) : lo32(rank)) + lo;
        L.ev_out[a][pos] = (e & ~(u64)RT_KD_EV_ID_MASK) | (side ? slot.y : slot.x);
    }
}

/* A thread per sorted tight event: its rank among the child's tight events
 * plus the kept events before it (found in the parent's list, which holds
 * them in order, and counted by the kept events' scan). */
__global__ void ex_tight_merge(ExLevel L)
{
    const uint32_t q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= 6u * L.n_tight) return;
    const u64 key = L.tkeys[q];
    const uint32_t r = L.tvals[q] & ~EX_SIDE_BIT;
    const int a = (int)(q / (2 * L.n_tight));
    const int side = (L.tvals[q] & EX_SIDE_BIT) != 0;
    const uint32_t n = L.rnode[r];
    const ExChild c = ex_child(L, n, side);
    const uint32_t rank = q - (uint32_t)a * 2 * L.n_tight - 2 * c.tfirst;
    const u64 order = ex_tight_order(key, r);
    const uint32_t first = L.nd_first[n], count = L.nd_count[n];
    const u64 *ev = L.ev[a];
    uint32_t lo = 2 * first, hi = 2 * (first + count);
    while (lo < hi) {
        const uint32_t mid = (lo + hi) >> 1;
        if (ev[mid] < order) lo = mid + 1;
        else hi = mid;
    }
    const u64 before = ex_kept_before(L, a, lo, first);
    const uint32_t pos = 2 * c.first + rank + (side ? hi32(before) : lo32(before));
    const uint2 slot = L.slot[r];
    L.ev_out[a][pos] = (order & ~(u64)RT_KD_EV_ID_MASK) | (side ? slot.y : slot.x);
}

/* ---- the driver ------------------------------------------------------------------- */

/* A device array that only grows (keep: its contents survive the growth). */
typedef struct ExArr {
    void *p;
    size_t bytes;
} ExArr;

enum {
    X_VALID, X_VSCAN, X_BOUNDS, X_ROOT_BOX,
    X_EV, X_EV_END = X_EV + 6,          /* two lists per axis: read, written */
    X_PRIM = X_EV_END, X_PRIM2, X_RNODE, X_RNODE2,
    X_NFIRST, X_NFIRST2, X_NCOUNT, X_NCOUNT2, X_NTREE, X_NTREE2, X_NCELL, X_NCELL2,
    X_SCAN_TYPES, X_BEST, X_DEC, X_NSCAN_IN, X_NSCAN, X_LEFT, X_RIGHT, X_SIDE, X_SCAN_REFS, X_SLOT, X_SCAN_SIDES,
    X_TBOX, X_STRAD, X_NSTRAD, X_TKEYS_IN, X_TKEYS, X_TVALS_IN, X_TVALS, X_SEG_BEGIN, X_SEG_END,
    X_NODES, X_LEAVES, X_LEAF_BOXES, X_TRI_INDEX, X_CUB,
    X_COUNT
};

/* The host's side of the round trips: the root's valid count and bounds
 * (and its first node going back: the list's start, count and tree node,
 * and its cell), each level's totals, read back once per level. Pinned, so
 * a copy from it runs behind the host, which rewrites it only in the next
 * build (each build waits for its end). */
typedef struct ExPinned {
    ExNodeScan nscan;
    ExRefScan refs;
    uint32_t valid;
    int bounds[6];
    uint32_t root_first, root_count, root_tree;
    RtAabb box;
} ExPinned;

struct KdExact {
    ExArr arr[X_COUNT];
    int cur;              /* which of each pair of level lists is read */
    cudaEvent_t ev[2];
    ExPinned *h; /* pinned host memory, one allocation */
};

RtStatus kd_exact_create(KdExact **out, RtError *err)
{
    KdExact *x = (KdExact *)calloc(1, sizeof *x);
    *out = x;
    if (!x) return rt_fail(err, RT_ERR_OOM, "KD: out of host memory");
    for (int i = 0; i < 2; i++) CUDA_CHECK(err, cudaEventCreate(&x->ev[i]));
    CUDA_CHECK(err, cudaMallocHost((void **)&x->h, sizeof(ExPinned)));
    return RT_OK;
}

void kd_exact_destroy(KdExact *x)
{
    if (!x) return;
    for (int i = 0; i < X_COUNT; i++)
        if (x->arr[i].p) cudaFree(x->arr[i].p);
    for (int i = 0; i < 2; i++)
        if (x->ev[i]) cudaEventDestroy(x->ev[i]);
    if (x->h) cudaFreeHost(x->h);
    free(x);
}

/* At least `bytes` in a (grown by half again, so a tree that grows a little
 * each frame does not reallocate each frame); keep copies the old contents. */
static RtStatus ex_reserve(ExArr *a, size_t bytes, int keep, cudaStream_t stream, RtError *err)
{
    if (bytes == 0) bytes = 16;
    if (a->bytes >= bytes) return RT_OK;
    const size_t want = bytes + bytes / 2;
    void *p = NULL;
    RtStatus st = rt_gpu_alloc(&p, want, "the exact kd-tree builder's arrays", err);
    if (st != RT_OK) return st;
    if (keep && a->p) CUDA_CHECK(err, cudaMemcpyAsync(p, a->p, a->bytes, cudaMemcpyDeviceToDevice, stream));
    if (a->p) {
        CUDA_CHECK(err, cudaStreamSynchronize(stream));
        cudaFree(a->p);
    }
    a->p = p;
    a->bytes = want;
    return RT_OK;
}

#define EX_GRID(n) dim3((unsigned)(((n) + EX_BLOCK - 1) / EX_BLOCK))

/* CUB calls, counted as one launch each (as the other builders count them). */
template <typename F>
static RtStatus ex_cub(KdExact *x, RtLaunchLog *log, const char *name, cudaStream_t stream, F call, RtError *err)
{
    size_t bytes = 0;
    CUDA_CHECK(err, call((void *)NULL, bytes));
    RtStatus st = ex_reserve(&x->arr[X_CUB], bytes, 0, stream, err);
    if (st != RT_OK) return st;
    int entry, slot;
    if ((st = rt_launch_begin(log, name, &entry, &slot, err)) != RT_OK) return st;
    bytes = x->arr[X_CUB].bytes;
    CUDA_CHECK(err, call(x->arr[X_CUB].p, bytes));
    return rt_launch_end(log, entry, slot, err);
}

/* CUB's exclusive sum of f(0) .. f(items - 1) into out[0 .. items) (f: a
 * functor of the position; its last item a zero, so out[items - 1] is the
 * total), through ex_cub. */
template <typename F, typename T>
static RtStatus ex_count_scan(KdExact *x, RtLaunchLog *log, const char *name, cudaStream_t stream, F f, T *out,
                              size_t items, RtError *err)
{
    auto in = thrust::make_transform_iterator(thrust::make_counting_iterator<uint32_t>(0), f);
    return ex_cub(x, log, name, stream,
                  [&](void *tmp, size_t &bytes) {
                      return cub::DeviceScan::ExclusiveSum(tmp, bytes, in, out, (int)items, stream);
                  },
                  err);
}

#define ARR(x, i, T) ((T *)(x)->arr[i].p)

RtStatus kd_exact_build(KdExact *x, const RtKdGpuParams *p, const float4 *verts, const float4 *woop, uint32_t n,
                        cudaStream_t stream, RtLaunchLog *log, RtKdTree *tree, RtKdGpuStats *stats, RtError *err)
{
    RtStatus st;
    const double t0 = rt_now_ms();
    if (!(p->c_trav >= 0.0f) || !isfinite(p->c_trav) || !(p->c_isect > 0.0f) || !isfinite(p->c_isect))
        return rt_fail(err, RT_ERR_ARG, "KD: exact builder: C_trav must be >= 0 and C_i > 0 (got %g, %g)",
                       (double)p->c_trav, (double)p->c_isect);
    if (!(p->empty_bonus >= 0.0f && p->empty_bonus < 1.0f))
        return rt_fail(err, RT_ERR_ARG, "KD: exact builder: empty bonus must be in [0, 1) (got %g)",
                       (double)p->empty_bonus);
    if (p->exact_leaf < 1)
        return rt_fail(err, RT_ERR_ARG, "KD: exact builder: leaf size must be >= 1 (got %d)", p->exact_leaf);
    if (p->exact_clip < 0 || p->exact_clip > 1)
        return rt_fail(err, RT_ERR_ARG, "KD: exact builder: exact clip %d: expected 0 or 1", p->exact_clip);
    if ((uint64_t)n * 3 > 0xffffffffu)
        return rt_fail(err, RT_ERR_ARG, "KD: exact builder: %u triangles are more than it addresses", n);
    RtKdGpuStats s;
    memset(&s, 0, sizeof s);
    CUDA_CHECK(err, cudaEventRecord(x->ev[0], stream));

    /* ---- the root: valid triangles, bounds, events sorted per axis ---- */
    if ((st = ex_reserve(&x->arr[X_VALID], (size_t)n * 4 + 4, 0, stream, err)) != RT_OK ||
        (st = ex_reserve(&x->arr[X_VSCAN], (size_t)n * 4 + 4, 0, stream, err)) != RT_OK ||
        (st = ex_reserve(&x->arr[X_BOUNDS], 6 * sizeof(int), 0, stream, err)) != RT_OK ||
        (st = ex_reserve(&x->arr[X_ROOT_BOX], sizeof(RtAabb), 0, stream, err)) != RT_OK)
        return st;
    for (int a = 0; a < 3; a++) {
        x->h->bounds[a] = rt_f2ord(INFINITY);
        x->h->bounds[3 + a] = rt_f2ord(-INFINITY);
    }
    int *d_bounds = ARR(x, X_BOUNDS, int);
    uint32_t *valid = ARR(x, X_VALID, uint32_t), *vscan = ARR(x, X_VSCAN, uint32_t);
    CUDA_CHECK(err, cudaMemcpyAsync(d_bounds, x->h->bounds, 6 * sizeof(int), cudaMemcpyHostToDevice, stream));
    if ((st = rt_launch(log, "ex_tri_boxes", EX_GRID(n), dim3(EX_BLOCK), 0, ex_tri_boxes, err, verts, woop, n, valid,
                        d_bounds)) != RT_OK)
        return st;
    if ((st = ex_count_scan(x, log, "ex_scan_valid", stream, ExValid{valid, n}, vscan, (size_t)n + 1, err)) != RT_OK)
        return st;
    CUDA_CHECK(err, cudaMemcpyAsync(&x->h->valid, vscan + n, sizeof(uint32_t), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(err, cudaMemcpyAsync(x->h->bounds, d_bounds, 6 * sizeof(int), cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(err, cudaStreamSynchronize(stream));
    s.round_trips++;
    const uint32_t valid_n = x->h->valid;
    RtAabb bounds = aabb_empty();
    if (valid_n) {
        bounds.lo = v3(rt_ord2f(x->h->bounds[0]), rt_ord2f(x->h->bounds[1]), rt_ord2f(x->h->bounds[2]));
        bounds.hi = v3(rt_ord2f(x->h->bounds[3]), rt_ord2f(x->h->bounds[4]), rt_ord2f(x->h->bounds[5]));
    }
    if (valid_n >= (1u << (EX_CUT_BITS - 2)))
        return rt_fail(err, RT_ERR_ARG, "KD: exact builder: %u triangles are more than its events address",
                       valid_n);
    double extent = 0.0;
    for (int a = 0; a < 3 && valid_n; a++)
        extent = fmax(extent, (double)v3_get(bounds.hi, a) - v3_get(bounds.lo, a));
    double gap = RT_KD_MIN_GAP * extent;
    if (!(gap > 0.0)) gap = 2.2250738585072014e-308; /* DBL_MIN: faces are never interior planes */
    const int max_depth = rt_kd_max_depth(p->max_depth, valid_n);
    ExRules rules;
    rules.c_trav = p->c_trav, rules.c_isect = p->c_isect, rules.lambda = 1.0 - (double)p->empty_bonus;
    rules.gap = gap;
    rules.max_leaf = (uint32_t)p->exact_leaf;
    rules.max_depth = max_depth;
    rules.exact_clip = p->exact_clip;

    uint32_t R = valid_n, N = 1;
    x->cur = 0;
    for (int k = 0; k < 2; k++) {
        for (int a = 0; a < 3; a++)
            if ((st = ex_reserve(&x->arr[X_EV + 2 * a + k], (size_t)2 * R * 8, 0, stream, err)) != RT_OK) return st;
        if ((st = ex_reserve(&x->arr[X_PRIM + k], (size_t)R * 4, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_RNODE + k], (size_t)R * 4, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_NFIRST + k], 4, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_NCOUNT + k], 4, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_NTREE + k], 4, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_NCELL + k], sizeof(RtAabb), 0, stream, err)) != RT_OK)
            return st;
    }
    /* the unsorted events go to the second lists, sorted into the first */
    if ((st = rt_launch(log, "ex_root_events", EX_GRID(n), dim3(EX_BLOCK), 0, ex_root_events, err, verts,
                        (const uint32_t *)valid, (const uint32_t *)vscan, n, ARR(x, X_EV + 1, u64),
                        ARR(x, X_EV + 3, u64), ARR(x, X_EV + 5, u64), ARR(x, X_PRIM, uint32_t),
                        ARR(x, X_RNODE, uint32_t))) != RT_OK)
        return st;
    for (int a = 0; a < 3 && R; a++) {
        u64 *in = ARR(x, X_EV + 2 * a + 1, u64), *out = ARR(x, X_EV + 2 * a, u64);
        if ((st = ex_cub(x, log, "ex_sort_events", stream,
                         [&](void *tmp, size_t &bytes) {
                             return cub::DeviceRadixSort::SortKeys(tmp, bytes, in, out, (int)(2 * R), 0, 64, stream);
                         },
                         err)) != RT_OK)
            return st;
    }
    x->h->root_first = 0, x->h->root_count = R, x->h->root_tree = 0;
    x->h->box = bounds;
    CUDA_CHECK(err, cudaMemcpyAsync(x->arr[X_NFIRST].p, &x->h->root_first, 4, cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(err, cudaMemcpyAsync(x->arr[X_NCOUNT].p, &x->h->root_count, 4, cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(err, cudaMemcpyAsync(x->arr[X_NTREE].p, &x->h->root_tree, 4, cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(err, cudaMemcpyAsync(x->arr[X_NCELL].p, &x->h->box, sizeof(RtAabb), cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(err, cudaMemcpyAsync(x->arr[X_ROOT_BOX].p, &x->h->box, sizeof(RtAabb), cudaMemcpyHostToDevice, stream));

    /* ---- the levels ---- */
    uint32_t node_total = 1, leaf_total = 0, index_total = 0;
    int level = 0;
    for (; N > 0; level++) {
        if (level > max_depth)
            return rt_fail(err, RT_ERR_CUDA, "KD: exact builder: level %d beyond the depth limit %d", level,
                           max_depth);
        const int c = x->cur, o = c ^ 1;
        const uint32_t E = 2 * R;
        /* this level's scratch; the tree's arrays keep their contents */
        if ((st = ex_reserve(&x->arr[X_SCAN_TYPES], ((size_t)3 * E + 1) * 8, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_SCAN_SIDES], ((size_t)3 * E + 1) * 8, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_BEST], (size_t)N * 8, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_DEC], (size_t)N * sizeof(ExDec), 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_NSCAN_IN], ((size_t)N + 1) * sizeof(ExNodeScan), 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_NSCAN], ((size_t)N + 1) * sizeof(ExNodeScan), 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_LEFT], R, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_RIGHT], R, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_SIDE], R, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_SCAN_REFS], ((size_t)R + 1) * sizeof(ExRefScan), 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_TBOX], (size_t)2 * R * sizeof(RtAabb), 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_STRAD], (size_t)R * 4, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_NSTRAD], 4, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_SLOT], (size_t)R * sizeof(uint2), 0, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_NODES], ((size_t)node_total + 2 * N) * sizeof(RtKdNode), 1, stream, err)) !=
                RT_OK ||
            (st = ex_reserve(&x->arr[X_LEAVES], ((size_t)leaf_total + N) * sizeof(RtKdLeaf), 1, stream, err)) != RT_OK ||
            (st = ex_reserve(&x->arr[X_LEAF_BOXES], ((size_t)leaf_total + N) * sizeof(RtAabb), 1, stream, err)) !=
                RT_OK ||
            (st = ex_reserve(&x->arr[X_TRI_INDEX], ((size_t)index_total + R) * 4, 1, stream, err)) != RT_OK)
            return st;
        if ((uint64_t)node_total + 2 * N > RT_KD_MAX_INDEX || (uint64_t)leaf_total + N > RT_KD_MAX_INDEX)
            return rt_fail(err, RT_ERR_OOM, "KD: exact builder: more than %u nodes", RT_KD_MAX_INDEX);

        ExLevel L;
        memset(&L, 0, sizeof L);
        for (int a = 0; a < 3; a++) {
            L.ev[a] = ARR(x, X_EV + 2 * a + c, u64);
            L.ev_out[a] = ARR(x, X_EV + 2 * a + o, u64);
        }
        L.prim = ARR(x, X_PRIM + c, uint32_t), L.prim_out = ARR(x, X_PRIM + o, uint32_t);
        L.rnode = ARR(x, X_RNODE + c, uint32_t), L.rnode_out = ARR(x, X_RNODE + o, uint32_t);
        L.nd_first = ARR(x, X_NFIRST + c, uint32_t), L.nd_first_out = ARR(x, X_NFIRST + o, uint32_t);
        L.nd_count = ARR(x, X_NCOUNT + c, uint32_t), L.nd_count_out = ARR(x, X_NCOUNT + o, uint32_t);
        L.nd_tree = ARR(x, X_NTREE + c, uint32_t), L.nd_tree_out = ARR(x, X_NTREE + o, uint32_t);
        L.nd_cell = ARR(x, X_NCELL + c, RtAabb), L.nd_cell_out = ARR(x, X_NCELL + o, RtAabb);
        L.scan_types = ARR(x, X_SCAN_TYPES, u64);
        L.best = ARR(x, X_BEST, u64);
        L.dec = ARR(x, X_DEC, ExDec);
        L.nscan_in = ARR(x, X_NSCAN_IN, ExNodeScan), L.nscan = ARR(x, X_NSCAN, ExNodeScan);
        L.left = ARR(x, X_LEFT, uint8_t), L.right = ARR(x, X_RIGHT, uint8_t), L.side = ARR(x, X_SIDE, uint8_t);
        L.scan_refs = ARR(x, X_SCAN_REFS, ExRefScan);
        L.tbox = ARR(x, X_TBOX, RtAabb);
        L.strad = ARR(x, X_STRAD, uint32_t), L.n_strad = ARR(x, X_NSTRAD, uint32_t);
        L.slot = ARR(x, X_SLOT, uint2);
        L.scan_sides = ARR(x, X_SCAN_SIDES, u64);
        L.nodes = ARR(x, X_NODES, RtKdNode);
        L.leaves = ARR(x, X_LEAVES, RtKdLeaf);
        L.leaf_boxes = ARR(x, X_LEAF_BOXES, RtAabb);
        L.tri_index = ARR(x, X_TRI_INDEX, uint32_t);
        L.verts = verts;
        L.n_nodes = N, L.n_refs = R, L.n_events = E;
        L.node_base = node_total, L.leaf_base = leaf_total, L.index_base = index_total;
        L.level = level;
        L.k = rules;

        if (E && (st = ex_count_scan(x, log, "ex_scan_types", stream, ExTypeCount{L.ev[0], L.ev[1], L.ev[2], E},
                                     ARR(x, X_SCAN_TYPES, u64), (size_t)3 * E + 1, err)) != RT_OK)
            return st;
        CUDA_CHECK(err, cudaMemsetAsync(L.best, 0xff, (size_t)N * 8, stream));
        CUDA_CHECK(err, cudaMemsetAsync(L.n_strad, 0, 4, stream));
        if ((st = rt_launch(log, "ex_best", EX_GRID(E), dim3(EX_BLOCK), 0, ex_best, err, L)) != RT_OK ||
            (st = rt_launch(log, "ex_decide", EX_GRID(N + 1), dim3(EX_BLOCK), 0, ex_decide, err, L)) != RT_OK)
            return st;
        {
            ExNodeScan *in = L.nscan_in, *out = L.nscan;
            if ((st = ex_cub(x, log, "ex_scan_nodes", stream,
                             [&](void *tmp, size_t &bytes) {
                                 return cub::DeviceScan::ExclusiveScan(tmp, bytes, in, out, ExNodeSum(),
                                                                       ExNodeScan{0, 0}, (int)N + 1, stream);
                             },
                             err)) != RT_OK)
                return st;
        }
        if ((st = rt_launch(log, "ex_nodes", EX_GRID(N), dim3(EX_BLOCK), 0, ex_nodes, err, L)) != RT_OK ||
            (st = rt_launch(log, "ex_classify", EX_GRID(E), dim3(EX_BLOCK), 0, ex_classify, err, L)) != RT_OK ||
            (st = rt_launch(log, "ex_refs", EX_GRID(R), dim3(EX_BLOCK), 0, ex_refs, err, L)) != RT_OK ||
            (p->exact_clip &&
             (st = rt_launch(log, "ex_clip", EX_GRID(R), dim3(EX_BLOCK), 0, ex_clip, err, L)) != RT_OK))
            return st;
        {
            auto in = thrust::make_transform_iterator(thrust::make_counting_iterator<uint32_t>(0),
                                                      ExRefCount{L.side, R});
            ExRefScan *out = ARR(x, X_SCAN_REFS, ExRefScan);
            if ((st = ex_cub(x, log, "ex_scan_refs", stream,
                             [&](void *tmp, size_t &bytes) {
                                 return cub::DeviceScan::ExclusiveScan(tmp, bytes, in, out, ExRefSum(),
                                                                       ExRefScan{0, 0, 0, 0}, (int)R + 1, stream);
                             },
                             err)) != RT_OK)
                return st;
        }
        /* the level's totals: the next level's sizes */
        CUDA_CHECK(err, cudaMemcpyAsync(&x->h->nscan, L.nscan + N, sizeof(ExNodeScan), cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(err, cudaMemcpyAsync(&x->h->refs, L.scan_refs + R, sizeof(ExRefScan), cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(err, cudaStreamSynchronize(stream));
        s.round_trips++;
        const ExNodeScan tot = x->h->nscan;
        const ExRefScan refs = x->h->refs;
        const uint64_t R2 = (uint64_t)refs.l + refs.r;
        const uint32_t T = refs.tl + refs.tr;
        const uint32_t N2 = 2 * tot.splits;
        node_total += N2;
        leaf_total += N - tot.splits;
        index_total += tot.index;
        if (R2 >= (1u << (EX_CUT_BITS - 1)) || (uint64_t)index_total + R2 > RT_KD_MAX_INDEX)
            return rt_fail(err, RT_ERR_OOM, "KD: exact builder: %llu references at level %d, more than it addresses",
                           (unsigned long long)R2, level + 1);
        if (N2) {
            for (int a = 0; a < 3; a++)
                if ((st = ex_reserve(&x->arr[X_EV + 2 * a + o], (size_t)2 * R2 * 8, 0, stream, err)) != RT_OK)
                    return st;
            if ((st = ex_reserve(&x->arr[X_PRIM + o], (size_t)R2 * 4, 0, stream, err)) != RT_OK ||
                (st = ex_reserve(&x->arr[X_RNODE + o], (size_t)R2 * 4, 0, stream, err)) != RT_OK ||
                (st = ex_reserve(&x->arr[X_NFIRST + o], (size_t)N2 * 4, 0, stream, err)) != RT_OK ||
                (st = ex_reserve(&x->arr[X_NCOUNT + o], (size_t)N2 * 4, 0, stream, err)) != RT_OK ||
                (st = ex_reserve(&x->arr[X_NTREE + o], (size_t)N2 * 4, 0, stream, err)) != RT_OK ||
                (st = ex_reserve(&x->arr[X_NCELL + o], (size_t)N2 * sizeof(RtAabb), 0, stream, err)) != RT_OK)
                return st;
            for (int a = 0; a < 3; a++) L.ev_out[a] = ARR(x, X_EV + 2 * a + o, u64);
            if ((st = ex_reserve(&x->arr[X_SEG_BEGIN], (size_t)3 * N2 * 4, 0, stream, err)) != RT_OK ||
                (st = ex_reserve(&x->arr[X_SEG_END], (size_t)3 * N2 * 4, 0, stream, err)) != RT_OK)
                return st;
            L.seg_begin = ARR(x, X_SEG_BEGIN, uint32_t), L.seg_end = ARR(x, X_SEG_END, uint32_t);
            L.n_tight = T;
            L.n_children = N2;
            L.prim_out = ARR(x, X_PRIM + o, uint32_t), L.rnode_out = ARR(x, X_RNODE + o, uint32_t);
            L.nd_first_out = ARR(x, X_NFIRST + o, uint32_t), L.nd_count_out = ARR(x, X_NCOUNT + o, uint32_t);
            L.nd_tree_out = ARR(x, X_NTREE + o, uint32_t), L.nd_cell_out = ARR(x, X_NCELL + o, RtAabb);
            if ((st = rt_launch(log, "ex_refs_scatter", EX_GRID(R), dim3(EX_BLOCK), 0, ex_refs_scatter, err, L)) !=
                RT_OK)
                return st;
            if ((st = ex_count_scan(x, log, "ex_scan_sides", stream,
                                    ExSideCount{L.ev[0], L.ev[1], L.ev[2], L.side, E}, ARR(x, X_SCAN_SIDES, u64),
                                    (size_t)3 * E + 1, err)) != RT_OK)
                return st;
            if (!p->exact_clip) {
                if ((st = rt_launch(log, "ex_events_scatter", EX_GRID((size_t)3 * E), dim3(EX_BLOCK), 0,
                                    ex_events_scatter, err, L)) != RT_OK)
                    return st;
            } else {
                /* the tight references' events, sorted, merged with the rest */
                const size_t nt = (size_t)6 * T;
                if ((st = ex_reserve(&x->arr[X_TKEYS_IN], nt * 8, 0, stream, err)) != RT_OK ||
                    (st = ex_reserve(&x->arr[X_TKEYS], nt * 8, 0, stream, err)) != RT_OK ||
                    (st = ex_reserve(&x->arr[X_TVALS_IN], nt * 4, 0, stream, err)) != RT_OK ||
                    (st = ex_reserve(&x->arr[X_TVALS], nt * 4, 0, stream, err)) != RT_OK)
                    return st;

                L.tkeys_in = ARR(x, X_TKEYS_IN, u64), L.tkeys = ARR(x, X_TKEYS, u64);
                L.tvals_in = ARR(x, X_TVALS_IN, uint32_t), L.tvals = ARR(x, X_TVALS, uint32_t);
                if (T) {
                    u64 *kin = L.tkeys_in, *kout = ARR(x, X_TKEYS, u64);
                    uint32_t *vin = L.tvals_in, *vout = ARR(x, X_TVALS, uint32_t);
                    const uint32_t *sbeg = L.seg_begin, *send = L.seg_end;
                    if ((st = rt_launch(log, "ex_tight_events", EX_GRID(R), dim3(EX_BLOCK), 0, ex_tight_events, err,
                                        L)) != RT_OK ||
                        (st = ex_cub(x, log, "ex_sort_tight", stream,
                                     [&](void *tmp, size_t &bytes) {
                                         return cub::DeviceSegmentedSort::StableSortPairs(
                                             tmp, bytes, kin, kout, vin, vout, (int)nt, (int)(3 * N2), sbeg, send,
                                             stream);
                                     },
                                     err)) != RT_OK)
                        return st;
                }
                if ((st = rt_launch(log, "ex_events_merge", EX_GRID((size_t)3 * E), dim3(EX_BLOCK), 0, ex_events_merge,
                                    err, L)) != RT_OK ||
                    (st = rt_launch(log, "ex_tight_merge", EX_GRID(nt), dim3(EX_BLOCK), 0, ex_tight_merge, err, L)) !=
                        RT_OK)
                    return st;
            }
        }
        x->cur = o;
        N = N2;
        R = (uint32_t)R2;
    }
    if ((st = kd_mark_empty_queue(log, ARR(x, X_NODES, RtKdNode), NULL, node_total, err)) != RT_OK) return st;
    CUDA_CHECK(err, cudaEventRecord(x->ev[1], stream));
    CUDA_CHECK(err, cudaEventSynchronize(x->ev[1]));
    s.round_trips++;

    memset(tree, 0, sizeof *tree);
    tree->nodes = ARR(x, X_NODES, RtKdNode);
    tree->leaves = ARR(x, X_LEAVES, RtKdLeaf);
    tree->leaf_boxes = ARR(x, X_LEAF_BOXES, RtAabb);
    tree->tri_index = ARR(x, X_TRI_INDEX, uint32_t);
    tree->node_count = node_total;
    tree->leaf_count = leaf_total;
    tree->index_count = index_total;
    tree->node_cap = (uint32_t)(x->arr[X_NODES].bytes / sizeof(RtKdNode));
    tree->leaf_cap = (uint32_t)(x->arr[X_LEAVES].bytes / sizeof(RtKdLeaf));
    tree->index_cap = (uint32_t)(x->arr[X_TRI_INDEX].bytes / 4);
    tree->bounds = bounds;
    tree->d_bounds = ARR(x, X_ROOT_BOX, RtAabb);

    s.build_ms = rt_now_ms() - t0;
    cudaEventElapsedTime(&s.gpu_ms, x->ev[0], x->ev[1]);
    s.large_ms = s.gpu_ms;
    s.large_levels = (uint32_t)level;
    s.nodes = node_total;
    s.leaves = leaf_total;
    s.references = index_total;
    s.triangles = n;
    s.valid_triangles = valid_n;
    *stats = s;
    return RT_OK;
}
