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
 *   - The levels' sizes live on the device (ExSizes): each level's last
 *     kernel before its children writes them. The thesis's host waits once
 *     per level for them; here that is only the first build of a scene (and
 *     timed builds): it records each level's sizes, and later builds run
 *     every level as one CUDA graph over arrays and grids sized for those
 *     with room to grow, a single wait at the end. A build that outgrows
 *     them is flagged on the device and built again host-driven (the
 *     ExSchedule comment). The per-level launch overhead, not the kernels,
 *     was most of a host-driven build of a small scene.
 *   - one-pass scans built from CUB's block primitives (ex_scan: their
 *     counts read on the device) stand in for the thesis's hand-written
 *     binary scans, and an atomic minimum for its hybrid reduction; the
 *     tight events are sorted by CUB's segmented sort host-driven and by
 *     rank counting (ex_tight_rank) in the graph, which must not wait for
 *     the host.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cub/cub.cuh>
#include <cuda/functional>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "kd/kd_clip.h"
#include "kd/kd_exact.cuh"
#include "kd/kd_gpu_internal.cuh"
#include "kd/kd_sah.h"
#include "gpu/cuda_check.h"
#include "gpu/gpu.h"

/* threads a block, every kernel: 128 rather than 256 spreads a level's
 * work over more blocks, which the small levels need (their kernels are
 * latency-bound); 512 is slower on every level */
#define EX_BLOCK 128
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

/* The split rules (the CPU oracle's, kd_sah.h) and the builder's switches;
 * the two that depend on the scene (the thinnest slab, the depth limit) are
 * ExSizes', set on the device. */
struct ExRules {
    double c_trav, c_isect, lambda;
    uint32_t max_leaf;
    int max_depth_asked; /* RtKdGpuParams.max_depth: rt_kd_max_depth's request */
    int exact_clip;
};

/* A level's sizes, in device memory: ex_root writes the root's, each
 * level's ex_sizes its children's (and its own T and N2), so the kernels
 * never need them from the host, which reads them back only when it drives
 * the levels itself (kd_exact_build has the two ways). */
struct ExSizes {
    uint32_t N, R;      /* active nodes, references (events per axis: ex_events) */
    uint32_t T, N2;     /* tight copies, children (ex_sizes; N2 = 0: nothing goes down) */
    uint32_t node_base, leaf_base, index_base; /* the tree's counts before the level */
    int max_depth;
    uint32_t build;     /* this build's number (ex_root): the scans' tile words carry it */
    double gap;         /* the thinnest slab a split may cut off (RT_KD_MIN_GAP of the scene) */
};
/* Events per axis of a level: two per reference (START and END, or two
 * PLANAR). */
__host__ __device__ __forceinline__ uint32_t ex_events(const ExSizes &S) { return 2u * S.R; }


/* The build's totals, in device memory (copied back once when the levels
 * run as one graph). overflow: EX_OVER_* bits; the tree is not to be used. */
enum { EX_OVER_CAP = 1, EX_OVER_SEGMENT = 2 };
struct ExTotals {
    uint32_t nodes, leaves, index, levels;
    uint32_t valid, overflow;
    RtAabb box;
};

/* Per reference, what the merges need of it, in one 16-byte record (one
 * access where its events find it through their ids, in no order): its
 * slots in the children's lists (left, right), its node, its sides (0: a
 * leaf's, or a split's ex_ref bits). */
struct __align__(16) ExRefOut {
    uint32_t slot[2];
    uint32_t node, side;
};

/* Everything a level's kernels read and write (passed by value). */
struct ExLevel {
    ExSizes *sz;            /* this level's sizes (sz[1]: the next level's) */
    ExTotals *tot;
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
    ExNodeScan *nscan;
    uint8_t *left, *right, *side; /* per reference: its events' verdicts, then its sides (bit 0 left,
                                     1 right, 2 tight: its planes are new) */
    RtAabb *tbox;           /* per tight reference: its boxes in the left and right child */
    const ExRefScan *scan_refs;
    u64 *tkeys;             /* tight events (list events of the level's references), per axis and
                               child, sorted; tvals: their references, the child's side in the top bit */
    uint32_t *tvals;
    u64 *tkeys_in;
    uint32_t *tvals_in;
    uint32_t *seg_begin, *seg_end; /* per axis and child: its tight events */
    ExRefOut *out;          /* per reference: where its copies went (ex_refs_scatter) */
    const u64 *scan_sides;  /* per axis, per event: left and right copies before it */
    RtKdNode *nodes;
    RtKdLeaf *leaves;
    RtAabb *leaf_boxes;
    uint32_t *tri_index;
    const float4 *verts;
    int level;
    ExRules k;
};

/* Event j of the three lists (n events each) taken axis-major. */
__host__ __device__ __forceinline__ u64 ex_axis_major(const u64 *ev0, const u64 *ev1, const u64 *ev2, uint32_t n,
                                                      uint32_t j)
{
    return j < n ? ev0[j] : (j < 2u * n ? ev1[j - n] : ev2[j - 2u * n]);
}

/* The scans' inputs, computed on the fly (ex_scan: count() and the
 * items; ex_emit: what else is done with a thread's exclusive prefixes). */
struct ExAxisMajor { /* the level's events of the three axes taken axis-major, plus a zero item */
    const u64 *ev0, *ev1, *ev2;
    const ExSizes *sz;
    __device__ uint32_t count() const { return 3u * ex_events(*sz) + 1u; }
    /* 0 past the events (the zero items), else 1 and event j in *e */
    __host__ __device__ int at(uint32_t j, u64 *e) const
    {
        const uint32_t n = ex_events(*sz);
        if (j >= 3u * n) return 0;
        *e = ex_axis_major(ev0, ev1, ev2, n, j);
        return 1;
    }
};
struct ExTypeCount : ExAxisMajor { /* per event: a START (low) or an END (high) */
    __host__ __device__ u64 operator()(uint32_t j) const
    {
        u64 e;
        if (!at(j, &e)) return 0;
        const uint32_t t = rt_kd_event_type(e);
        return t == RT_KD_EV_START ? 1ull : (t == RT_KD_EV_END ? (1ull << 32) : 0ull);
    }
};
struct ExSideCount : ExAxisMajor { /* per event: its reference's copies whose planes stay
                                      (not tight), left (low) and right (high) */
    const uint8_t *side;
    __host__ __device__ u64 operator()(uint32_t j) const
    {
        u64 e;
        if (!at(j, &e)) return 0;
        const uint8_t s = side[rt_kd_event_id(e)];
        if (s & 4u) return 0;
        return (u64)(s & 1u) | ((u64)((s >> 1) & 1u) << 32);
    }
};
/* Node n's decision from its best split (ex_best's key): a split (axis >=
 * 0) when its best cut beats a leaf (the CPU oracle's termination: a split
 * must beat C_i N), else a leaf (axis -1); the plane only with with_x. Made
 * where it is needed (the nodes' scan, the classification, the nodes and
 * references), so no launch of its own waits between the best splits and
 * them; ex_node records it (dec[n]) for the kernels after. */
__device__ __forceinline__ ExDec ex_decision(const u64 *best, const uint32_t *nd_count, const u64 *const ev[3],
                                             const uint32_t *nd_first, const ExRules &k, int level, int max_depth,
                                             uint32_t n, int with_x)
{
    const uint32_t count = nd_count[n];
    const u64 key = best[n];
    ExDec d = {0.0f, 0, -1};
    if (key != ~0ull && count > k.max_leaf && level < max_depth &&
        rt_kd_split_pays((double)__uint_as_float((uint32_t)(key >> 32)), k.c_isect, count)) {
        d.axis = (int32_t)((key >> 30) & 3u);
        d.cut = (uint32_t)(key >> 1) & ((1u << EX_CUT_BITS) - 1u);
        if (with_x) d.x = ex_plane(ev[d.axis][2 * nd_first[n] + d.cut - (uint32_t)(key & 1u)]);
    }
    return d;
}
/* The nodes' scan: per node its split (1 or 0) and its leaf references, and
 * a zero at the end. Its items only load (no store between them, so that a
 * thread's items' loads overlap). */
struct ExNodeCount {
    const u64 *best;
    const uint32_t *nd_count;
    const ExSizes *sz;
    ExRules k;
    int level;
    __device__ uint32_t count() const { return sz->N + 1u; }
    __device__ ExNodeScan operator()(uint32_t n) const
    {
        if (n >= sz->N) return ExNodeScan{0, 0};
        const int split = ex_decision(best, nd_count, NULL, NULL, k, level, sz->max_depth, n, 0).axis >= 0;
        return ExNodeScan{(uint32_t)split, split ? 0u : nd_count[n]};
    }
};
struct ExAdd {
    __host__ __device__ u64 operator()(u64 a, u64 b) const { return a + b; }
};
struct ExValid {
    const uint32_t *valid;
    uint32_t n;
    __host__ __device__ uint32_t operator()(uint32_t t) const { return t < n ? valid[t] : 0u; }
};

/* Every kernel here is launched as a programmatic dependent of the one
 * before it in its stream (rt_launch_dependent): a level is a chain of
 * short kernels, whose launch gaps were a large part of a small scene's
 * build. Each waits first (rt_wait_previous). */

/* ---- the root ------------------------------------------------------------------- */

/* The bounds' starting values (empty). */
__global__ void ex_start(int *bounds)
{
    rt_wait_previous();
    if (threadIdx.x < 6) bounds[threadIdx.x] = rt_f2ord(threadIdx.x < 3 ? INFINITY : -INFINITY);
}

/* Which triangles enter the tree (kd_clip.h's rule), and their bounds. */
__global__ void ex_tri_boxes(const float4 *verts, const float4 *woop, uint32_t n, uint32_t *valid, int *bounds)
{
    rt_wait_previous();
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

/* The root's references (valid triangles in id order) and their events;
 * an invalid triangle's two slots past the valid ones get keys above every
 * event's, so that the lists of all 2 n keys sort with the events first. */
__global__ void ex_root_events(const float4 *verts, const uint32_t *valid, const uint32_t *vscan, uint32_t n,
                               u64 *k0, u64 *k1, u64 *k2, uint32_t *prim, uint32_t *rnode)
{
    rt_wait_previous();
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const uint32_t r = vscan[t];
    if (!valid[t]) {
        const size_t pad = 2 * ((size_t)vscan[n] + (t - r));
        k0[pad] = k0[pad + 1] = k1[pad] = k1[pad + 1] = k2[pad] = k2[pad + 1] = ~0ull;
        return;
    }
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

/* One thread, after the valid triangles' scan: the root's sizes and node,
 * the scene's rules, the totals. */
__global__ void ex_root(const uint32_t *vscan, uint32_t n, const int *bounds, int max_depth_asked, ExSizes *sz,
                        ExTotals *tot, uint32_t *nd_first, uint32_t *nd_count, uint32_t *nd_tree, RtAabb *nd_cell,
                        RtAabb *root_box, u64 *best, uint32_t *builds)
{
    rt_wait_previous();
    const uint32_t valid = vscan[n];
    RtAabb box = aabb_empty();
    double extent = 0.0;
    if (valid) {
        box.lo = v3(rt_ord2f(bounds[0]), rt_ord2f(bounds[1]), rt_ord2f(bounds[2]));
        box.hi = v3(rt_ord2f(bounds[3]), rt_ord2f(bounds[4]), rt_ord2f(bounds[5]));
        for (int a = 0; a < 3; a++) extent = fmax(extent, (double)v3_get(box.hi, a) - v3_get(box.lo, a));
    }
    double gap = RT_KD_MIN_GAP * extent;
    if (!(gap > 0.0)) gap = 2.2250738585072014e-308; /* DBL_MIN: faces are never interior planes */
    ExSizes s;
    memset(&s, 0, sizeof s);
    s.N = 1, s.R = valid;
    s.node_base = 1; /* the root's children come after it */
    s.max_depth = rt_kd_max_depth(max_depth_asked, valid);
    s.gap = gap;
    s.build = ++*builds; /* (never 0: the tile words start zeroed) */
    if (!s.build) s.build = ++*builds;
    *sz = s;
    *nd_first = 0, *nd_count = valid, *nd_tree = 0, *nd_cell = box, *root_box = box;
    *best = ~0ull; /* the root's best split (ex_node clears the levels' below) */
    ExTotals t;
    memset(&t, 0, sizeof t);
    t.nodes = 1, t.valid = valid, t.box = box;
    *tot = t;
}

/* ---- ComputeBestSplits (Alg. 6) --------------------------------------------------- */

/* The candidates of the cut before position k of a node's list on axis a:
 * prev / cur are the events either side (has_prev / has_cur: they exist),
 * s / e the START / END events before the cut, plc the planar references
 * before it. */
__device__ __forceinline__ void ex_cut(const ExRules &L, double gap, u64 *key, int a, uint32_t k, int has_prev,
                                       u64 prev, int has_cur, u64 cur, uint32_t s, uint32_t e, uint32_t plc,
                                       uint32_t nnp, uint32_t npl, double lo, double hi, double A, double B)
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
        if (xl >= gap && xr >= gap) ok = 1;
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

/* The graph's margin levels run when the first of them has nodes
 * (ex_margin_begin). */
__global__ void ex_if_deeper(cudaGraphConditionalHandle h, const ExSizes *sz)
{
    rt_wait_previous();
    cudaGraphSetConditional(h, sz->N != 0u);
}

/* A thread per event position i: the cuts before position i on every axis
 * (the lists of a node line up on the three axes), the best to its node. */
__global__ void ex_best(ExLevel L)
{
    rt_wait_previous();
    const ExSizes S = *L.sz;
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t n = 0xffffffffu;
    u64 key = ~0ull;
    if (i < ex_events(S)) {
        n = L.rnode[rt_kd_event_id(L.ev[0][i])];
        const uint32_t count = L.nd_count[n];
        const RtAabb cell = L.nd_cell[n];
        double ext[3];
        const double half = rt_kd_half_area(cell, ext);
        if (rt_kd_may_split(count, L.k.max_leaf, L.level, S.max_depth, half)) {
            const uint32_t s0 = 2 * L.nd_first[n], k = i - s0, last = 2 * count - 1;
            const double inv = 1.0 / half;
            for (int a = 0; a < 3; a++) {
                const double lo = v3_get(cell.lo, a), hi = v3_get(cell.hi, a);
                if (!(hi > lo)) continue;
                const double A = ext[(a + 1) % 3] * ext[(a + 2) % 3] * inv;
                const double B = (ext[(a + 1) % 3] + ext[(a + 2) % 3]) * inv;
                const u64 *ev = L.ev[a];
                const u64 *sc = L.scan_types + (size_t)a * ex_events(S);
                const u64 c0 = sc[s0], ck = sc[i], ce = sc[s0 + 2 * count];
                const uint32_t nnp = lo32(ce - c0), npl = count - nnp;
                const u64 d = ck - c0;
                const uint32_t s = lo32(d), e = hi32(d), plc = (k - s - e) / 2;
                const u64 cur = ev[i], prev = k ? ev[i - 1] : 0;
                ex_cut(L.k, S.gap, &key, a, k, k > 0, prev, 1, cur, s, e, plc, nnp, npl, lo, hi, A, B);
                /* the last thread also has the cut after the list */
                if (k == last)
                    ex_cut(L.k, S.gap, &key, a, k + 1, 1, cur, 0, 0, nnp, nnp, npl, nnp, npl, lo, hi, A, B);
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

/* ---- ClippingAndPartitioning (Alg. 7) ---------------------------------------------- */

/* A thread per event position on the split axis: which side of the cut the
 * event lies on is its reference's verdict for that side. */
__device__ void ex_classify(const ExLevel &L, uint32_t i)
{
    const ExSizes S = *L.sz;
    if (i >= ex_events(S)) return;
    const uint32_t n = L.rnode[rt_kd_event_id(L.ev[0][i])];
    const ExDec d = ex_decision(L.best, L.nd_count, L.ev, L.nd_first, L.k, L.level, S.max_depth, n, 0);
    if (d.axis < 0) return;
    const u64 e = L.ev[d.axis][i];
    const uint32_t r = rt_kd_event_id(e), t = rt_kd_event_type(e);
    const uint8_t before = (i - 2 * L.nd_first[n]) < d.cut;
    if (t != RT_KD_EV_END) L.left[r] = before;   /* START, PLANAR */
    if (t != RT_KD_EV_START) L.right[r] = !before; /* END, PLANAR */
}

/* The classification rides in the nodes' scan's launch (ex_scan's job):
 * both need only the best splits, and the nodes' entries need both. */
struct ExClassifyJob {
    ExLevel L;
    __device__ void operator()(uint32_t block) const { ex_classify(L, block * EX_BLOCK + threadIdx.x); }
};

/* Node n's entry in nodes[] (and leaves[]): ex_nodes_refs' thread. */
__device__ void ex_node(const ExLevel &L, const ExSizes &S, uint32_t n)
{
    const ExDec d = ex_decision(L.best, L.nd_count, L.ev, L.nd_first, L.k, L.level, S.max_depth, n, 1);
    L.dec[n] = d; /* (for the kernels after this one) */
    const ExNodeScan s = L.nscan[n];
    const uint32_t slot = L.nd_tree[n];
    if (d.axis < 0) {
        const uint32_t leaf = S.leaf_base + (n - s.splits), count = L.nd_count[n];
        L.nodes[slot] = kd_make_leaf(leaf, count);
        L.leaves[leaf] = RtKdLeaf{S.index_base + s.index, count};
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
        L.nodes[slot] = kd_make_interior(d.axis, d.x, S.node_base + 2 * s.splits);
    }
}

/* Reference r: a leaf's goes to tri_index, a split node's gets its sides
 * (ex_classify's verdicts). Returns 1 for a straddler to clip (exact_clip),
 * whose sides ex_clip_ref writes. */
__device__ int ex_ref(const ExLevel &L, const ExSizes &S, uint32_t r)
{
    const uint32_t n = L.rnode[r];
    const ExDec d = ex_decision(L.best, L.nd_count, L.ev, L.nd_first, L.k, L.level, S.max_depth, n, 0);
    if (d.axis < 0) {
        L.tri_index[S.index_base + L.nscan[n].index + (r - L.nd_first[n])] = L.prim[r];
        L.side[r] = 0;
        return 0;
    }
    const int l = L.left[r], rt = L.right[r];
    if (l && rt && L.k.exact_clip) return 1;
    L.side[r] = (uint8_t)(l | (rt << 1));
    return 0;
}

/* Straddler r: the parts of its triangle in the two children; their boxes
 * are its planes there (tight), and a child it misses loses it. */
__device__ void ex_clip_ref(const ExLevel &L, const ExSizes &S, uint32_t r)
{
    const uint32_t n = L.rnode[r];
    const ExDec d = ex_decision(L.best, L.nd_count, L.ev, L.nd_first, L.k, L.level, S.max_depth, n, 1);
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

/* A thread per node, then one per reference (neither needs the other's
 * results: one launch). A block's straddlers (one reference in ten or so)
 * are gathered in shared memory and clipped by its first threads, so a warp
 * does not wait on its few straddlers' clipping and no launch of its own
 * follows the references'. */
__global__ void __launch_bounds__(EX_BLOCK) ex_nodes_refs(ExLevel L)
{
    rt_wait_previous();
    __shared__ uint32_t strad[EX_BLOCK];
    __shared__ uint32_t n_strad;
    if (threadIdx.x == 0) n_strad = 0;
    __syncthreads();
    const ExSizes S = *L.sz;
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < S.N) ex_node(L, S, j);
    else if (j - S.N < S.R && ex_ref(L, S, j - S.N)) strad[atomicAdd(&n_strad, 1u)] = j - S.N;
    __syncthreads();
    if (threadIdx.x < n_strad) ex_clip_ref(L, S, strad[threadIdx.x]);
}

/* What the arrays hold room for, for ex_sizes' check: the children (N2),
 * their references (R2), this level's tight copies (T), the tree's nodes,
 * leaves and leaf references. The host-driven levels size the arrays after
 * reading the totals back and pass no limits (all ones). */
struct ExCap {
    uint32_t N2, R2, T, nodes, leaves, index;
};

/* The references' scan's last item (f: the totals): the level's tight
 * copies and children, the next level's sizes and the totals. A level whose
 * children would not fit the arrays sends nothing down (N2 = 0, the next
 * level empty) and marks the build overflowed: its tree is not to be used. */
__device__ void ex_sizes(const ExLevel &L, const ExCap &cap, ExRefScan f)
{
    ExSizes *sz = L.sz;
    const ExSizes S = *sz;
    ExSizes nx = S;
    nx.N = nx.R = nx.T = nx.N2 = 0;
    if (!S.N) {
        sz[1] = nx;
        return;
    }
    const ExNodeScan t = L.nscan[S.N];
    const uint64_t R2 = (uint64_t)f.l + f.r;
    const uint32_t T = f.tl + f.tr, N2 = 2 * t.splits;
    nx.node_base = S.node_base + N2;
    nx.leaf_base = S.leaf_base + (S.N - t.splits);
    nx.index_base = S.index_base + t.index;
    ExTotals *tot = L.tot;
    tot->nodes = nx.node_base, tot->leaves = nx.leaf_base, tot->index = nx.index_base;
    tot->levels = (uint32_t)L.level + 1;
    if (N2 && (N2 > cap.N2 || R2 > cap.R2 || T > cap.T || nx.node_base > cap.nodes ||
               (uint64_t)nx.leaf_base + N2 > cap.leaves || nx.index_base + R2 > cap.index)) {
        tot->overflow |= EX_OVER_CAP;
        sz->T = sz->N2 = 0;
        sz[1] = nx;
        return;
    }
    sz->T = T, sz->N2 = N2;
    nx.N = N2, nx.R = (uint32_t)R2;
    sz[1] = nx;
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
__device__ __forceinline__ ExEventAt ex_event_at(const ExLevel &L, const ExSizes &S, uint32_t j)
{
    ExEventAt x;
    x.a = (int)(j / ex_events(S));
    x.i = j - (uint32_t)x.a * ex_events(S);
    x.e = L.ev[x.a][x.i];
    x.r = rt_kd_event_id(x.e);
    return x;
}
/* The kept copies (ex_scan_sides: left low, right high) before list position
 * p of axis a, from the start of node n's list (its first reference first). */
__device__ __forceinline__ u64 ex_kept_before(const ExLevel &L, const ExSizes &S, int a, uint32_t p, uint32_t first)
{
    const u64 *sc = L.scan_sides + (size_t)a * ex_events(S);
    return sc[p] - sc[2 * first];
}

__device__ void ex_tight_events(const ExLevel &L, const ExSizes &S, uint32_t r, uint8_t s, uint32_t n);

/* A thread per reference: its copies in the children's list (and a tight
 * one's new events); the first reference of a split node also writes the
 * children. */
__global__ void ex_refs_scatter(ExLevel L)
{
    rt_wait_previous();
    const ExSizes S = *L.sz;
    if (!S.N2) return;
    const uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= S.R) return;
    const uint32_t n = L.rnode[r];
    const ExDec d = L.dec[n];
    if (d.axis < 0) {
        L.out[r] = ExRefOut{{0, 0}, n, 0};
        return;
    }
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
    L.out[r] = ExRefOut{{slot.x, slot.y}, n, s};
    if (r == first) {
        /* the children's best splits start empty (nothing reads this
         * level's after ex_nodes_refs) */
        L.best[child] = L.best[child + 1] = ~0ull;
        RtAabb cell[2];
        kd_child_cells(L.nd_cell[n], kd_make_interior(d.axis, d.x, 0), &cell[0], &cell[1]);
        for (int h = 0; h < 2; h++) {
            L.nd_tree_out[child + h] = S.node_base + child + h;
            L.nd_first_out[child + h] = c[h].first;
            L.nd_count_out[child + h] = c[h].count;
            L.nd_cell_out[child + h] = cell[h];
            if (L.k.exact_clip) /* the child's tight events, per axis: the segments of their sort */
                for (int a = 0; a < 3; a++) {
                    const uint32_t at = a * S.N2 + child + h;
                    L.seg_begin[at] = a * 2 * S.T + 2 * c[h].tfirst;
                    L.seg_end[at] = L.seg_begin[at] + 2 * c[h].tcount;
                }
        }
    }
    if (s & 4u) ex_tight_events(L, S, r, s, n);
}

/* A thread per event of every axis: its copies, in order, into the
 * children's lists. On the split axis a copy that crosses the cut takes
 * the split plane (it stays sorted: it is the last of the left list or the
 * first of the right); on the other axes planes never change. */
__global__ void ex_events_scatter(ExLevel L)
{
    rt_wait_previous();
    const ExSizes S = *L.sz;
    if (!S.N2) return;
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= 3u * ex_events(S)) return;
    const ExEventAt x = ex_event_at(L, S, j);
    const ExRefOut o = L.out[x.r];
    const uint32_t s = o.side;
    if (!s) return;
    const uint32_t n = o.node;
    const ExDec d = L.dec[n];
    const uint32_t first = L.nd_first[n], k = x.i - 2 * first;
    const u64 rank = ex_kept_before(L, S, x.a, x.i, first);
    const uint2 slot = make_uint2(o.slot[0], o.slot[1]);
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

/* A tight event is a list event of its reference (rt_kd_event: plane,
 * type, the level's slot r), so its order in the child's list is its
 * value; the side it goes to rides in its value (tvals). */
#define EX_SIDE_BIT 0x80000000u

/* A tight reference r (side s, node n): its events in the children it
 * reaches, from its parts' boxes, unsorted (ex_refs_scatter's thread). */
__device__ void ex_tight_events(const ExLevel &L, const ExSizes &S, uint32_t r, uint8_t s, uint32_t n)
{
    const ExRefScan sr = L.scan_refs[r], sb = L.scan_refs[L.nd_first[n]];
    for (int side = 0; side < 2; side++) {
        if (!(s & (1u << side))) continue;
        /* a child's tight copies are one run, in reference order */
        const uint32_t q = ex_child(L, n, side).tfirst + (side ? sr.tr - sb.tr : sr.tl - sb.tl);
        const RtAabb b = L.tbox[2 * (size_t)r + side];
        for (int a = 0; a < 3; a++) {
            const float lo = v3_get(b.lo, a), hi = v3_get(b.hi, a);
            const size_t at = (size_t)a * 2 * S.T + 2 * (size_t)q;
            if (lo == hi) {
                L.tkeys_in[at] = L.tkeys_in[at + 1] = rt_kd_event(rt_kd_pos_key(lo), RT_KD_EV_PLANAR, r);
            } else {
                L.tkeys_in[at] = rt_kd_event(rt_kd_pos_key(hi), RT_KD_EV_END, r);
                L.tkeys_in[at + 1] = rt_kd_event(rt_kd_pos_key(lo), RT_KD_EV_START, r);
            }
            L.tvals_in[at] = L.tvals_in[at + 1] = r | (side ? EX_SIDE_BIT : 0u);
        }
    }
}

/* The tight events sorted per segment without the host, for the levels
 * run as one graph (CUB's segmented sort reads its segments' sizes back to
 * the host): each event's rank in its segment is the count of the
 * segment's events with a smaller key, or an equal key earlier in the list
 * (CUB's stable order, so the result is the same). A block brings the span
 * of its events' segments through shared memory a tile at a time; a
 * segment longer than EX_RANK_SEGMENT (the count is quadratic) stops the
 * build as overflowed, and the host-driven levels sort it. */
#define EX_RANK_SEGMENT 8192u
__global__ void ex_tight_rank(ExLevel L)
{
    rt_wait_previous();
    const ExSizes S = *L.sz;
    const uint32_t nt = 6u * S.T;
    if (!S.N2 || blockIdx.x * EX_BLOCK >= nt) return;
    __shared__ u64 tile[EX_BLOCK];
    __shared__ uint32_t span_lo, span_hi;
    __shared__ int too_long;
    if (threadIdx.x == 0) span_lo = 0xffffffffu, span_hi = 0, too_long = 0;
    __syncthreads();
    const uint32_t q = blockIdx.x * EX_BLOCK + threadIdx.x;
    uint32_t b = 0, e = 0, val = 0;
    u64 key = 0;
    if (q < nt) {
        key = L.tkeys_in[q], val = L.tvals_in[q];
        const uint32_t r = val & ~EX_SIDE_BIT, a = q / (2 * S.T);
        const uint32_t seg = a * S.N2 + 2 * L.nscan[L.rnode[r]].splits + (val >> 31);
        b = L.seg_begin[seg], e = L.seg_end[seg];
        atomicMin(&span_lo, b);
        atomicMax(&span_hi, e);
        if (e - b > EX_RANK_SEGMENT) too_long = 1;
    }
    __syncthreads();
    if (too_long) {
        if (threadIdx.x == 0) {
            atomicOr(&L.tot->overflow, (uint32_t)EX_OVER_SEGMENT);
            L.sz->N2 = 0;                          /* the merges do nothing */
            L.sz[1].N = L.sz[1].R = 0; /* nor the levels below */
        }
        return;
    }
    const uint32_t lo = span_lo, hi = span_hi;
    uint32_t rank = 0;
    for (uint32_t base = lo; base < hi; base += EX_BLOCK) {
        if (base + threadIdx.x < hi) tile[threadIdx.x] = L.tkeys_in[base + threadIdx.x];
        __syncthreads();
        const uint32_t from = b > base ? b : base, to = e < base + EX_BLOCK ? e : base + EX_BLOCK;
        for (uint32_t p = from; p < to; p++) {
            const u64 k = tile[p - base];
            rank += k < key || (k == key && p < q);
        }
        __syncthreads();
    }
    if (q < nt) L.tkeys[b + rank] = key, L.tvals[b + rank] = val;
}

/* Event j (axis-major) of a reference that keeps its planes: its
 * copies go where the merge with the child's sorted tight events puts them
 * (its rank among the kept events plus the tight events before it). */
__device__ void ex_events_merge(const ExLevel &L, const ExSizes &S, uint32_t j)
{
    const ExEventAt x = ex_event_at(L, S, j);
    const int a = x.a;
    const u64 e = x.e;
    const ExRefOut o = L.out[x.r];
    const uint32_t s = o.side, n = o.node;
    if (!s || (s & 4u)) return;
    const u64 rank = ex_kept_before(L, S, a, x.i, L.nd_first[n]);
    for (int side = 0; side < 2; side++) {
        if (!(s & (1u << side))) continue;
        const ExChild c = ex_child(L, n, side);
        /* tight events of this child before e */
        const u64 *k = L.tkeys + (size_t)a * 2 * S.T + 2 * (size_t)c.tfirst;
        uint32_t lo = 0, hi = 2 * c.tcount;
        while (lo < hi) {
            const uint32_t mid = (lo + hi) >> 1;
            if (k[mid] < e) lo = mid + 1;
            else hi = mid;
        }
        const uint32_t pos = 2 * c.first + (side ? hi32(rank) : lo32(rank)) + lo;
        L.ev_out[a][pos] = (e & ~(u64)RT_KD_EV_ID_MASK) | (side ? o.slot[1] : o.slot[0]);
    }
}

/* Sorted tight event q: its rank among the child's tight events
 * plus the kept events before it (found in the parent's list, which holds
 * them in order, and counted by the kept events' scan). */
__device__ void ex_tight_merge(const ExLevel &L, const ExSizes &S, uint32_t q)
{
    const u64 order = L.tkeys[q];
    const uint32_t r = rt_kd_event_id(order);
    const int a = (int)(q / (2 * S.T));
    const int side = (L.tvals[q] & EX_SIDE_BIT) != 0;
    const ExRefOut o = L.out[r];
    const uint32_t n = o.node;
    const ExChild c = ex_child(L, n, side);
    const uint32_t rank = q - (uint32_t)a * 2 * S.T - 2 * c.tfirst;
    const uint32_t first = L.nd_first[n], count = L.nd_count[n];
    const u64 *ev = L.ev[a];
    uint32_t lo = 2 * first, hi = 2 * (first + count);
    while (lo < hi) {
        const uint32_t mid = (lo + hi) >> 1;
        if (ev[mid] < order) lo = mid + 1;
        else hi = mid;
    }
    const u64 before = ex_kept_before(L, S, a, lo, first);
    const uint32_t pos = 2 * c.first + rank + (side ? hi32(before) : lo32(before));
    L.ev_out[a][pos] = (order & ~(u64)RT_KD_EV_ID_MASK) | (side ? o.slot[1] : o.slot[0]);
}

/* The two merges in one launch: a thread per event of every axis, then one
 * per sorted tight event. */
__global__ void ex_merge(ExLevel L)
{
    rt_wait_previous();
    const ExSizes S = *L.sz;
    if (!S.N2) return;
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x, kept = 3u * ex_events(S);
    if (j < kept) ex_events_merge(L, S, j);
    else if (j - kept < 6u * S.T) ex_tight_merge(L, S, j - kept);
}

/* What a scan's thread does with its exclusive prefixes x (of items
 * first, first + 1, ...; `items` in all) once they are known: nothing, but
 * for the references' scan (below). */
template <typename In, typename T, int I>
__device__ __forceinline__ void ex_emit(const In &, const T (&)[I], uint32_t, uint32_t)
{
}

/* The references' scan: an item per reference (and zeros from the end
 * on), its copies; the last item's prefix is the totals (ex_sizes). */
struct ExRefIn {
    ExLevel L;
    ExCap cap;
    __device__ uint32_t count() const { return L.sz->R + 1u; }
    __device__ ExRefScan operator()(uint32_t r) const
    {
        if (r >= L.sz->R) return ExRefScan{0, 0, 0, 0};
        const uint32_t s = L.side[r], t = (s >> 2) & 1u;
        return ExRefScan{s & 1u, (s >> 1) & 1u, (s & 1u) & t, ((s >> 1) & 1u) & t};
    }
};
template <int I>
__device__ __forceinline__ void ex_emit(const ExRefIn &in, const ExRefScan (&x)[I], uint32_t first, uint32_t items)
{
    for (int k = 0; k < I; k++) /* (no dynamic index: x stays in registers) */
        if (first + k == items - 1) ex_sizes(in.L, in.cap, x[k]);
}

/* ---- the levels' scans ------------------------------------------------------------ */

/* A level's exclusive scans in one pass: Merrill & Garland's decoupled
 * look-back, as CUB's DeviceScan, with two differences the graph needs.
 * The count is read on the device (the level's sizes), so a scan over a
 * capacity does the level's work and its tiles past the count end at once;
 * and a tile's words carry a tag (the build, the level, which scan), so a
 * word left by an earlier scan reads as not yet written, and no launch
 * clears them before each scan. A tile publishes its aggregate, sums its
 * predecessors' back to the nearest inclusive prefix, a block's worth of
 * them at a time (all threads, in parallel: the tiles of a level are
 * mostly resident at once, so their aggregates are all there), then
 * publishes its own inclusive prefix. Each 64 bits of a value travel with
 * the tag in one 16-byte word, written and read in one access (as CUB's
 * tile states): release and acquire on a separate tag cost a quarter more
 * on a 2.7M-item scan (H200: 32.9 against 26.5 us). */
/* items a thread: 64 bytes of values (8 pair counts, 4 reference counts) */
#define EX_SCAN_ITEMS(T) ((int)(64 / sizeof(T)))
#define EX_SCAN_TILE(T) (EX_BLOCK * EX_SCAN_ITEMS(T))
/* the tiles of the longest scan (8-byte values) */
#define EX_SCAN_TILE_MOST EX_SCAN_TILE(u64)
enum { EX_SCAN_TYPES, EX_SCAN_NODES, EX_SCAN_REFS, EX_SCAN_SIDES, EX_SCANS };

/* A tile's published aggregate and inclusive prefix: per 64 bits of the
 * value a word {tag, bits}; a value is there when all its words carry the
 * scan's tag. */
template <typename T>
struct ExTileWord {
    static_assert(sizeof(T) % 8 == 0, "tile values are whole 64-bit words");
    enum { K = sizeof(T) / 8 };
    ulonglong2 agg[K], incl[K];
};
/* The largest tile word: X_SCAN_TILES' stride is counted in these. */
#define EX_TILE_WORD_BYTES sizeof(ExTileWord<ExRefScan>)

/* A word is written and read whole by relaxed 16-byte accesses at GPU
 * scope (CUB's tile states' instructions); weak ones (st.cg / ld.cg) may
 * show the tag before the value. The values' members are 32-bit: their
 * 64-bit pieces go by memcpy. */
__device__ __forceinline__ void ex_store_word(ulonglong2 *p, u64 tag, u64 bits)
{
    asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(tag), "l"(bits) : "memory");
}
__device__ __forceinline__ ulonglong2 ex_load_word(const ulonglong2 *p)
{
    ulonglong2 v;
    asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p) : "memory");
    return v;
}
template <typename T>
__device__ __forceinline__ void ex_publish(ulonglong2 *w, u64 tag, const T &v)
{
    for (int k = 0; k < ExTileWord<T>::K; k++) {
        u64 bits;
        memcpy(&bits, (const char *)&v + 8 * k, 8);
        ex_store_word(w + k, tag, bits);
    }
}
/* 1 and the value when all its words carry the tag. */
template <typename T>
__device__ __forceinline__ int ex_published(const ulonglong2 *w, u64 tag, T *v)
{
    int ok = 1;
    for (int k = 0; k < ExTileWord<T>::K; k++) {
        const ulonglong2 x = ex_load_word(w + k);
        ok &= x.x == tag;
        memcpy((char *)v + 8 * k, &x.y, 8);
    }
    return ok;
}

/* No work beside a scan. */
struct ExNoJob {
    __device__ void operator()(uint32_t) const {}
};

/* The grid's first blocks are the scan's tiles (a capacity's: those past
 * the count end at once); the last job_blocks run job(0 .. job_blocks - 1),
 * work that may run beside the scan, in the same launch. */
template <typename In, typename T, typename Op, typename Job>
__global__ void __launch_bounds__(EX_BLOCK) ex_scan(In in, T *out, Op op, ExTileWord<T> *words, const ExSizes *sz,
                                                    uint32_t scan, Job job, uint32_t job_blocks)
{
    rt_wait_previous();
    const uint32_t tiles = gridDim.x - job_blocks;
    if (blockIdx.x >= tiles) {
        job(blockIdx.x - tiles);
        return;
    }
    enum { ITEMS = EX_SCAN_ITEMS(T), TILE = EX_SCAN_TILE(T) };
    typedef cub::BlockLoad<T, EX_BLOCK, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE> Load;
    typedef cub::BlockStore<T, EX_BLOCK, ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE> Store;
    typedef cub::BlockScan<T, EX_BLOCK> Scan;
    typedef cub::BlockReduce<T, EX_BLOCK> Reduce;
    typedef cub::BlockReduce<int, EX_BLOCK> Nearest;
    __shared__ union {
        typename Load::TempStorage load;
        typename Store::TempStorage store;
        typename Scan::TempStorage scan;
        typename Reduce::TempStorage reduce;
        typename Nearest::TempStorage nearest;
    } tmp;
    __shared__ T s_prefix;
    __shared__ int s_nearest;
    const uint32_t n = in.count(), tile = blockIdx.x, off = tile * TILE;
    if (off >= n) return;
    const uint32_t valid = n - off < (uint32_t)TILE ? n - off : (uint32_t)TILE;
    const u64 tag = ((u64)sz->build << 16) | scan;
    T items[ITEMS];
    Load(tmp.load).Load(thrust::make_transform_iterator(thrust::make_counting_iterator<uint32_t>(off), in), items,
                        (int)valid, T{});
    __syncthreads();
    T agg;
    Scan(tmp.scan).ExclusiveScan(items, items, T{}, op, agg);
    ExTileWord<T> *w = words + tile;
    if (threadIdx.x == 0) {
        ex_publish(w->agg, tag, agg);
        if (tile == 0) ex_publish(w->incl, tag, agg);
    }
    T prefix = T{};
    if (tile > 0) {
        for (int base = (int)tile;; base -= EX_BLOCK) {
            /* thread t: predecessor base - 1 - t; its inclusive prefix if
             * published, else its aggregate (which every tile publishes
             * before it waits for anything) */
            const int p = base - 1 - (int)threadIdx.x;
            T v = T{};
            int has_incl = 0;
            if (p >= 0) {
                const ExTileWord<T> *q = words + p;
                has_incl = ex_published(q->incl, tag, &v);
                if (!has_incl)
                    while (!ex_published(q->agg, tag, &v)) {
                    }
            }
            __syncthreads();
            const int nearest =
                Nearest(tmp.nearest).Reduce(has_incl ? (int)threadIdx.x : EX_BLOCK, ::cuda::minimum<int>());
            if (threadIdx.x == 0) s_nearest = nearest;
            __syncthreads();
            const int stop = s_nearest;
            const T sum = Reduce(tmp.reduce).Reduce((int)threadIdx.x <= stop ? v : T{}, op);
            if (threadIdx.x == 0) prefix = op(sum, prefix);
            if (stop < EX_BLOCK || base <= EX_BLOCK) break;
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            ex_publish(w->incl, tag, op(prefix, agg));
            s_prefix = prefix;
        }
        __syncthreads();
        prefix = s_prefix;
    }
    for (int k = 0; k < ITEMS; k++) items[k] = op(prefix, items[k]);
    ex_emit(in, items, off + threadIdx.x * ITEMS, n);
    __syncthreads();
    Store(tmp.store).Store(out + off, items, (int)valid);
}

/* ---- the driver ------------------------------------------------------------------- */

/* A device array that only grows (keep: its contents survive the growth). */
typedef struct ExArr {
    void *p;
    size_t bytes;
} ExArr;

enum {
    X_VALID, X_VSCAN, X_BOUNDS, X_ROOT_BOX, X_SIZES, X_TOTALS,
    X_EV, X_EV_END = X_EV + 6,          /* two lists per axis: read, written */
    X_PRIM = X_EV_END, X_PRIM2, X_RNODE, X_RNODE2,
    X_NFIRST, X_NFIRST2, X_NCOUNT, X_NCOUNT2, X_NTREE, X_NTREE2, X_NCELL, X_NCELL2,
    X_SCAN_TYPES, X_BEST, X_DEC, X_NSCAN, X_LEFT, X_RIGHT, X_SIDE, X_SCAN_REFS, X_REF_OUT, X_SCAN_SIDES,
    X_TBOX, X_TKEYS_IN, X_TKEYS, X_TVALS_IN, X_TVALS, X_SEG_BEGIN, X_SEG_END,
    X_NODES, X_LEAVES, X_LEAF_BOXES, X_TRI_INDEX, X_CUB, /* CUB's storage */
    X_BUILDS, X_SCAN_TILES, /* the builds counted, the level scans' tile words (ex_scan) */
    X_COUNT
};

/* The host's side of the copies back: a level's sizes and its children's
 * (host-driven levels), the totals (the root's, or the graph's at its end).
 * Pinned: the graph copies into it. */
typedef struct ExPinned {
    ExSizes sz[2];
    ExTotals tot;
} ExPinned;

/* At most this many levels (the depth limit's, and the root). */
#define EX_MAX_LEVELS (RT_KD_MAX_DEPTH + 2)

/* The levels as one graph. Each level's kernels read its sizes from the
 * device, so they can run without the host when the arrays and grids are
 * sized beforehand: for the capacities below, taken from the last build the
 * host drove (the sizes of each level and its neighbours, with room to
 * grow; two levels more: a turning scene's depth changes by one or two).
 * A build that does not fit them is flagged by the device
 * (ExTotals.overflow) and built again host-driven, which sets new
 * capacities. */
typedef struct ExSchedule {
    int valid;
    int levels;
    int sure;                       /* the levels the host-driven build had; the rest are a margin */
    uint32_t gen;                   /* counts the host-driven builds, which may move the arrays (the graph's key) */
    uint32_t n;                     /* triangles */
    ExRules rules;
    uint32_t N[EX_MAX_LEVELS], R[EX_MAX_LEVELS], T[EX_MAX_LEVELS];
    uint32_t nodes, leaves, index;
    /* the room to grow: a 2^-slack share of each capacity. Every capacity
     * costs the grids and scans sized for it (a level kernel's blocks past
     * the count still take their turn on a multiprocessor), so a scene
     * starts with little room and each build that outgrows the capacities
     * doubles it (EX_SLACK_FIRST down to EX_SLACK_MOST): a still scene
     * keeps tight grids, a moving one finds the room its motion needs after
     * a few host-driven frames. */
    int slack;
} ExSchedule;
enum { EX_SLACK_FIRST = 5, EX_SLACK_MOST = 1 };

/* How the levels are queued: host-driven (sizes read back per level),
 * planned (nothing launched: the arrays and CUB's storage are sized for the
 * schedule), captured (the schedule's launches into the graph). */
enum { EX_HOST, EX_PLAN, EX_CAPTURE };

struct KdExact {
    ExArr arr[X_COUNT];
    int cur;              /* which of each pair of level lists is read */
    int mode;
    cudaEvent_t ev[2];
    /* a level's kept copies' scan runs beside the stream (ex_split_queue) */
    cudaStream_t side;
    cudaStream_t margin;  /* captures the graph's margin levels (ex_margin_begin) */
    cudaEvent_t fork, join;
    int side_pending;     /* that scan not yet waited for */
    size_t tile_stride;   /* bytes of one level scan's tile words (X_SCAN_TILES holds EX_SCANS) */
    ExPinned *h;          /* pinned host memory, one allocation */
    ExSchedule sched;
    /* what the margin's capture added to the launch log (ex_margin_begin /
     * ex_margin_end): its kernels run only when the tree grows deeper than
     * the schedule's sure levels, so a replay that skips them takes them
     * off the count (ex_graph_build) */
    RtLaunchCounts margin_counts;
    int graph_off;        /* a segment too long for ex_tight_rank: host-driven for these rules and count */
    uint32_t off_n;
    ExRules off_rules;
    RtLaunchGraph graph;
};

/* The graph's key: what its launches depend on besides the schedule. */
typedef struct ExGraphKey {
    uint32_t gen, n;
    const float4 *verts, *woop;
    ExRules rules;
} ExGraphKey;

RtStatus kd_exact_create(KdExact **out, RtError *err)
{
    KdExact *x = (KdExact *)calloc(1, sizeof *x);
    *out = x;
    if (!x) return rt_fail(err, RT_ERR_OOM, "KD: out of host memory");
    x->sched.slack = EX_SLACK_FIRST;
    for (int i = 0; i < 2; i++) CUDA_CHECK(err, cudaEventCreate(&x->ev[i]));
    CUDA_CHECK(err, cudaEventCreateWithFlags(&x->fork, cudaEventDisableTiming));
    CUDA_CHECK(err, cudaEventCreateWithFlags(&x->join, cudaEventDisableTiming));
    CUDA_CHECK(err, cudaStreamCreateWithFlags(&x->side, cudaStreamNonBlocking));
    CUDA_CHECK(err, cudaStreamCreateWithFlags(&x->margin, cudaStreamNonBlocking));
    CUDA_CHECK(err, cudaMallocHost((void **)&x->h, sizeof(ExPinned)));
    return RT_OK;
}

void kd_exact_destroy(KdExact *x)
{
    if (!x) return;
    rt_launch_graph_destroy(&x->graph);
    for (int i = 0; i < X_COUNT; i++)
        if (x->arr[i].p) cudaFree(x->arr[i].p);
    for (int i = 0; i < 2; i++)
        if (x->ev[i]) cudaEventDestroy(x->ev[i]);
    if (x->fork) cudaEventDestroy(x->fork);
    if (x->join) cudaEventDestroy(x->join);
    if (x->side) cudaStreamDestroy(x->side);
    if (x->margin) cudaStreamDestroy(x->margin);
    if (x->h) cudaFreeHost(x->h);
    free(x);
}

/* One build's inputs and, host-driven, what the levels gave. */
typedef struct ExRun {
    KdExact *x;
    const float4 *verts, *woop;
    uint32_t n;
    cudaStream_t stream;
    RtLaunchLog *log;
    ExRules rules;
    int beside; /* the kept copies' scan beside the stream (not with a timed log: its events are the stream's) */
} ExRun;

/* At least `bytes` in array i (grown by half again, so a tree that grows a
 * little each frame does not reallocate each frame); keep copies the old
 * contents. While a graph is captured nothing may grow: the plan sized it. */
static RtStatus ex_reserve(KdExact *x, int i, size_t bytes, int keep, cudaStream_t stream, RtError *err)
{
    ExArr *a = &x->arr[i];
    if (bytes == 0) bytes = 16;
    if (a->bytes >= bytes) return RT_OK;
    if (x->mode == EX_CAPTURE)
        return rt_fail(err, RT_ERR_CUDA, "KD: exact builder: array %d outgrew its plan (%zu > %zu bytes)", i, bytes,
                       a->bytes);
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

/* ex_reserve for an array that starts zeroed when it is allocated (its old
 * contents are not kept). */
static RtStatus ex_reserve_zeroed(KdExact *x, int i, size_t bytes, cudaStream_t stream, RtError *err)
{
    const void *was = x->arr[i].p;
    RtStatus st = ex_reserve(x, i, bytes, 0, stream, err);
    if (st == RT_OK && x->arr[i].p != was) CUDA_CHECK(err, cudaMemsetAsync(x->arr[i].p, 0, x->arr[i].bytes, stream));
    return st;
}

#define ARR(x, i, T) ((T *)(x)->arr[i].p)

/* A kernel over `threads` threads in blocks of EX_BLOCK on the stream,
 * unless the levels are only planned. */
template <typename... KArgs, typename... Args>
static RtStatus ex_launch(const ExRun *u, const char *name, size_t threads, void (*kernel)(KArgs...), RtError *err,
                          Args... args)
{
    if (u->x->mode == EX_PLAN) return RT_OK;
    return rt_launch_dependent(u->log, u->stream, name, dim3((unsigned)((threads + EX_BLOCK - 1) / EX_BLOCK)),
                               dim3(EX_BLOCK), 0, kernel, err, args...);
}

/* CUB calls (call(tmp, bytes, stream)) on the stream, counted as one
 * launch each (as the other builders count them); planned, only their
 * storage is sized. */
template <typename F>
static RtStatus ex_cub(const ExRun *u, const char *name, F call, RtError *err)
{
    KdExact *x = u->x;
    size_t bytes = 0;
    CUDA_CHECK(err, call((void *)NULL, bytes, u->stream));
    RtStatus st = ex_reserve(x, X_CUB, bytes, 0, u->stream, err);
    if (st != RT_OK || x->mode == EX_PLAN) return st;
    int entry, slot;
    if ((st = rt_launch_begin(u->log, name, &entry, &slot, err)) != RT_OK) return st;
    bytes = x->arr[X_CUB].bytes;
    CUDA_CHECK(err, call(x->arr[X_CUB].p, bytes, u->stream));
    return rt_launch_end(u->log, entry, slot, err);
}

/* CUB's exclusive sum of f(0) .. f(items - 1) into out[0 .. items) (f: a
 * functor of the position), through ex_cub. */
template <typename F, typename T>
static RtStatus ex_count_scan(const ExRun *u, const char *name, F f, T *out, size_t items, RtError *err)
{
    auto in = thrust::make_transform_iterator(thrust::make_counting_iterator<uint32_t>(0), f);
    return ex_cub(u, name,
                  [&](void *tmp, size_t &bytes, cudaStream_t st) {
                      return cub::DeviceScan::ExclusiveSum(tmp, bytes, in, out, (int)items, st);
                  },
                  err);
}

/* A level's scan (ex_scan) of `in` into out, over a grid for `items` (the
 * level's count, or a capacity), with job_threads threads of job in the same
 * launch, on the stream or beside it (ExRun.beside, else the stream).
 * which: the level's scan (its tile words, EX_SCAN_*). */
template <typename In, typename T, typename Op, typename Job = ExNoJob>
static RtStatus ex_level_scan(const ExRun *u, int beside, const char *name, In in, T *out, Op op, size_t items,
                              const ExSizes *sz, int level, int which, RtError *err, Job job = Job(),
                              size_t job_threads = 0)
{
    KdExact *x = u->x;
    if (x->mode == EX_PLAN) return RT_OK;
    const size_t tiles = (items + EX_SCAN_TILE(T) - 1) / EX_SCAN_TILE(T);
    ExTileWord<T> *words = (ExTileWord<T> *)((char *)x->arr[X_SCAN_TILES].p + which * x->tile_stride);
    const size_t job_blocks = (job_threads + EX_BLOCK - 1) / EX_BLOCK;
    return rt_launch_dependent(u->log, beside && u->beside ? x->side : u->stream, name,
                               dim3((unsigned)(tiles + job_blocks)), dim3(EX_BLOCK), 0, ex_scan<In, T, Op, Job>, err,
                               in, out, op, words, sz, (uint32_t)(level * EX_SCANS + which), job,
                               (uint32_t)job_blocks);
}

/* The side stream takes up the stream's work from here (fork), marks the
 * end of what it queued (side_done), and the stream waits for that (join,
 * once: later joins of the level do nothing). Nothing when the scans do
 * not run beside it or the levels are only planned. */
static RtStatus ex_fork(const ExRun *u, RtError *err)
{
    KdExact *x = u->x;
    if (!u->beside || x->mode == EX_PLAN) return RT_OK;
    CUDA_CHECK(err, cudaEventRecord(x->fork, u->stream));
    CUDA_CHECK(err, cudaStreamWaitEvent(x->side, x->fork, 0));
    return RT_OK;
}
static RtStatus ex_side_done(const ExRun *u, RtError *err)
{
    KdExact *x = u->x;
    if (!u->beside || x->mode == EX_PLAN) return RT_OK;
    CUDA_CHECK(err, cudaEventRecord(x->join, x->side));
    x->side_pending = 1;
    return RT_OK;
}
static RtStatus ex_join(const ExRun *u, RtError *err)
{
    KdExact *x = u->x;
    if (!u->beside || x->mode == EX_PLAN || !x->side_pending) return RT_OK;
    CUDA_CHECK(err, cudaStreamWaitEvent(u->stream, x->join, 0));
    x->side_pending = 0;
    return RT_OK;
}

/* The root: valid triangles, bounds, the root's sizes and node (ex_root),
 * events sorted per axis. The lists hold 2 n events (the invalid
 * triangles' slots sort last), so nothing here needs the valid count. */
static RtStatus ex_root_queue(const ExRun *u, RtError *err)
{
    KdExact *x = u->x;
    const uint32_t n = u->n;
    const cudaStream_t stream = u->stream;
    RtStatus st;
    if ((st = ex_reserve(x, X_VALID, (size_t)n * 4 + 4, 0, stream, err)) != RT_OK ||
        (st = ex_reserve(x, X_VSCAN, (size_t)n * 4 + 4, 0, stream, err)) != RT_OK ||
        (st = ex_reserve(x, X_BOUNDS, 6 * sizeof(int), 0, stream, err)) != RT_OK ||
        (st = ex_reserve(x, X_ROOT_BOX, sizeof(RtAabb), 0, stream, err)) != RT_OK ||
        (st = ex_reserve(x, X_SIZES, (EX_MAX_LEVELS + 1) * sizeof(ExSizes), 0, stream, err)) != RT_OK ||
        (st = ex_reserve(x, X_TOTALS, sizeof(ExTotals), 0, stream, err)) != RT_OK)
        return st;
    for (int k = 0; k < 2; k++) {
        for (int a = 0; a < 3; a++)
            if ((st = ex_reserve(x, X_EV + 2 * a + k, (size_t)2 * n * 8, 0, stream, err)) != RT_OK) return st;
        if ((st = ex_reserve(x, X_PRIM + k, (size_t)n * 4, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(x, X_RNODE + k, (size_t)n * 4, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(x, X_NFIRST + k, 4, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(x, X_NCOUNT + k, 4, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(x, X_NTREE + k, 4, 0, stream, err)) != RT_OK ||
            (st = ex_reserve(x, X_NCELL + k, sizeof(RtAabb), 0, stream, err)) != RT_OK)
            return st;
    }
    if ((st = ex_reserve(x, X_BEST, 2 * 8, 1, stream, err)) != RT_OK ||
        (st = ex_reserve_zeroed(x, X_BUILDS, 4, stream, err)) != RT_OK)
        return st;
    int *bounds = ARR(x, X_BOUNDS, int);
    uint32_t *valid = ARR(x, X_VALID, uint32_t), *vscan = ARR(x, X_VSCAN, uint32_t);
    if ((st = ex_launch(u, "ex_start", 1, ex_start, err, bounds)) != RT_OK ||
        (st = ex_launch(u, "ex_tri_boxes", n, ex_tri_boxes, err, u->verts, u->woop, n, valid, bounds)) != RT_OK ||
        (st = ex_count_scan(u, "ex_scan_valid", ExValid{valid, n}, vscan, (size_t)n + 1, err)) !=
            RT_OK ||
        (st = ex_launch(u, "ex_root_events", n, ex_root_events, err, u->verts, (const uint32_t *)valid,
                        (const uint32_t *)vscan, n, ARR(x, X_EV + 1, u64), ARR(x, X_EV + 3, u64),
                        ARR(x, X_EV + 5, u64), ARR(x, X_PRIM, uint32_t), ARR(x, X_RNODE, uint32_t))) != RT_OK ||
        (st = ex_launch(u, "ex_root", 1, ex_root, err, (const uint32_t *)vscan, n, (const int *)bounds,
                        u->rules.max_depth_asked, ARR(x, X_SIZES, ExSizes), ARR(x, X_TOTALS, ExTotals),
                        ARR(x, X_NFIRST, uint32_t), ARR(x, X_NCOUNT, uint32_t), ARR(x, X_NTREE, uint32_t),
                        ARR(x, X_NCELL, RtAabb), ARR(x, X_ROOT_BOX, RtAabb),
                        ARR(x, X_BEST, u64), ARR(x, X_BUILDS, uint32_t))) != RT_OK)
        return st;
    /* the unsorted events went to the second lists, sorted into the first;
     * they enter in reference order and the sort is stable, so the
     * reference bits need no sorting */
    for (int a = 0; a < 3 && n; a++) {
        u64 *in = ARR(x, X_EV + 2 * a + 1, u64), *out = ARR(x, X_EV + 2 * a, u64);
        if ((st = ex_cub(u, "ex_sort_events",
                         [&](void *tmp, size_t &bytes, cudaStream_t sm) {
                             return cub::DeviceRadixSort::SortKeys(tmp, bytes, in, out, (int)(2 * n),
                                                                   RT_KD_EV_ID_BITS, 64, sm);
                         },
                         err)) != RT_OK)
            return st;
    }
    return RT_OK;
}

/* Level `level`'s view of the arrays (the lists it reads: x->cur). */
static ExLevel ex_level_view(const ExRun *u, int level)
{
    KdExact *x = u->x;
    const int c = x->cur, o = c ^ 1;
    ExLevel L;
    memset(&L, 0, sizeof L);
    L.sz = ARR(x, X_SIZES, ExSizes) + level;
    L.tot = ARR(x, X_TOTALS, ExTotals);
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
    L.nscan = ARR(x, X_NSCAN, ExNodeScan);
    L.left = ARR(x, X_LEFT, uint8_t), L.right = ARR(x, X_RIGHT, uint8_t), L.side = ARR(x, X_SIDE, uint8_t);
    L.scan_refs = ARR(x, X_SCAN_REFS, ExRefScan);
    L.tbox = ARR(x, X_TBOX, RtAabb);
    L.out = ARR(x, X_REF_OUT, ExRefOut);
    L.scan_sides = ARR(x, X_SCAN_SIDES, u64);
    L.tkeys_in = ARR(x, X_TKEYS_IN, u64), L.tkeys = ARR(x, X_TKEYS, u64);
    L.tvals_in = ARR(x, X_TVALS_IN, uint32_t), L.tvals = ARR(x, X_TVALS, uint32_t);
    L.seg_begin = ARR(x, X_SEG_BEGIN, uint32_t), L.seg_end = ARR(x, X_SEG_END, uint32_t);
    L.nodes = ARR(x, X_NODES, RtKdNode);
    L.leaves = ARR(x, X_LEAVES, RtKdLeaf);
    L.leaf_boxes = ARR(x, X_LEAF_BOXES, RtAabb);
    L.tri_index = ARR(x, X_TRI_INDEX, uint32_t);
    L.verts = u->verts;
    L.level = level;
    L.k = u->rules;
    return L;
}

/* A level's first half, up to its totals (ex_sizes): the best splits, the
 * nodes and leaves, the references' sides, the clipping. N and R size the
 * grids and arrays (the level's own, or capacities); nodes, leaves and
 * index the tree's arrays. */
static RtStatus ex_split_queue(const ExRun *u, int level, uint32_t N, uint32_t R, uint32_t nodes, uint32_t leaves,
                               uint32_t index, ExCap cap, RtError *err)
{
    KdExact *x = u->x;
    const cudaStream_t s = u->stream;
    const uint32_t E = 2 * R;
    RtStatus st;
    /* this level's scratch; the tree's arrays keep their contents */
    if ((st = ex_reserve(x, X_SCAN_TYPES, ((size_t)3 * E + 1) * 8, 0, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_SCAN_SIDES, ((size_t)3 * E + 1) * 8, 0, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_BEST, (size_t)2 * N * 8, 1, s, err)) != RT_OK || /* (cleared a level ahead) */
        (st = ex_reserve(x, X_DEC, (size_t)N * sizeof(ExDec), 0, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_NSCAN, ((size_t)N + 1) * sizeof(ExNodeScan), 0, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_LEFT, R, 0, s, err)) != RT_OK || (st = ex_reserve(x, X_RIGHT, R, 0, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_SIDE, R, 0, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_SCAN_REFS, ((size_t)R + 1) * sizeof(ExRefScan), 0, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_TBOX, (size_t)2 * R * sizeof(RtAabb), 0, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_REF_OUT, (size_t)R * sizeof(ExRefOut), 0, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_NODES, (size_t)nodes * sizeof(RtKdNode), 1, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_LEAVES, (size_t)leaves * sizeof(RtKdLeaf), 1, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_LEAF_BOXES, (size_t)leaves * sizeof(RtAabb), 1, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_TRI_INDEX, (size_t)index * 4, 1, s, err)) != RT_OK)
        return st;
    /* the scans' tile words, a run per scan, each for the longest (the events') */
    const size_t most = (size_t)3 * E > N ? (size_t)3 * E : N;
    x->tile_stride = ((most + EX_SCAN_TILE_MOST) / EX_SCAN_TILE_MOST) * EX_TILE_WORD_BYTES;
    if ((st = ex_reserve_zeroed(x, X_SCAN_TILES, EX_SCANS * x->tile_stride, s, err)) != RT_OK) return st;
    ExLevel L = ex_level_view(u, level);
    if (E && (st = ex_level_scan(u, 0, "ex_scan_types", ExTypeCount{{L.ev[0], L.ev[1], L.ev[2], L.sz}},
                                 ARR(x, X_SCAN_TYPES, u64), ExAdd(), (size_t)3 * E + 1, L.sz, level, EX_SCAN_TYPES,
                                 err)) != RT_OK)
        return st;
    if ((st = ex_launch(u, "ex_best", E, ex_best, err, L)) != RT_OK) return st;
    /* the nodes' scan and the classification in one launch, each making the
     * decisions it needs from the best splits; the nodes and the references
     * wait for both */
    if ((st = ex_level_scan(u, 0, "ex_scan_nodes_classify", ExNodeCount{L.best, L.nd_count, L.sz, L.k, level},
                            L.nscan, ExNodeSum(), (size_t)N + 1, L.sz, level, EX_SCAN_NODES, err,
                            ExClassifyJob{L}, E)) != RT_OK ||
        (st = ex_launch(u, "ex_nodes_refs", (size_t)N + R, ex_nodes_refs, err, L)) != RT_OK)
        return st;
    /* the sides are final: the kept copies' scan beside the references'
     * scan (with the totals: ExRefIn) and the children's lists (the merge
     * waits for it: ex_join) */
    if ((st = ex_fork(u, err)) != RT_OK ||
        (st = ex_level_scan(u, 1, "ex_scan_sides", ExSideCount{{L.ev[0], L.ev[1], L.ev[2], L.sz}, L.side},
                            ARR(x, X_SCAN_SIDES, u64), ExAdd(), (size_t)3 * E + 1, L.sz, level, EX_SCAN_SIDES, err)) !=
            RT_OK ||
        (st = ex_side_done(u, err)) != RT_OK)
        return st;
    return ex_level_scan(u, 0, "ex_scan_refs", ExRefIn{L, cap}, ARR(x, X_SCAN_REFS, ExRefScan), ExRefSum(),
                         (size_t)R + 1, L.sz, level, EX_SCAN_REFS, err);
}

/* A level's second half: the references and events of its N2 children
 * (R2 references, T tight copies among them) into the other lists. The
 * host-driven levels sort the tight events with CUB, the graph with
 * ex_tight_rank. */
static RtStatus ex_down_queue(const ExRun *u, int level, uint32_t N, uint32_t R, uint32_t T, uint32_t N2, uint32_t R2,
                              RtError *err)
{
    KdExact *x = u->x;
    const cudaStream_t s = u->stream;
    const int o = x->cur ^ 1;
    const uint32_t E = 2 * R;
    (void)N;
    RtStatus st;
    for (int a = 0; a < 3; a++)
        if ((st = ex_reserve(x, X_EV + 2 * a + o, (size_t)2 * R2 * 8, 0, s, err)) != RT_OK) return st;
    if ((st = ex_reserve(x, X_PRIM + o, (size_t)R2 * 4, 0, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_RNODE + o, (size_t)R2 * 4, 0, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_NFIRST + o, (size_t)N2 * 4, 0, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_NCOUNT + o, (size_t)N2 * 4, 0, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_NTREE + o, (size_t)N2 * 4, 0, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_NCELL + o, (size_t)N2 * sizeof(RtAabb), 0, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_SEG_BEGIN, (size_t)3 * N2 * 4, 0, s, err)) != RT_OK ||
        (st = ex_reserve(x, X_SEG_END, (size_t)3 * N2 * 4, 0, s, err)) != RT_OK)
        return st;
    const size_t nt = (size_t)6 * T;
    if (u->rules.exact_clip &&
        ((st = ex_reserve(x, X_TKEYS_IN, nt * 8, 0, s, err)) != RT_OK ||
         (st = ex_reserve(x, X_TKEYS, nt * 8, 0, s, err)) != RT_OK ||
         (st = ex_reserve(x, X_TVALS_IN, nt * 4, 0, s, err)) != RT_OK ||
         (st = ex_reserve(x, X_TVALS, nt * 4, 0, s, err)) != RT_OK))
        return st;
    ExLevel L = ex_level_view(u, level);
    if ((st = ex_launch(u, "ex_refs_scatter", R, ex_refs_scatter, err, L)) != RT_OK) return st;
    if (!u->rules.exact_clip)
        return (st = ex_join(u, err)) != RT_OK
                   ? st
                   : ex_launch(u, "ex_events_scatter", (size_t)3 * E, ex_events_scatter, err, L);
    /* the tight references' events, sorted, merged with the rest */
    if (T) {
        if (x->mode == EX_HOST) {
            u64 *kin = L.tkeys_in, *kout = L.tkeys;
            uint32_t *vin = L.tvals_in, *vout = L.tvals;
            const uint32_t *sbeg = L.seg_begin, *send = L.seg_end;
            if ((st = ex_cub(u, "ex_sort_tight",
                             [&](void *tmp, size_t &bytes, cudaStream_t sm) {
                                 return cub::DeviceSegmentedSort::StableSortPairs(
                                     tmp, bytes, kin, kout, vin, vout, (int)nt, (int)(3 * N2), sbeg, send, sm);
                             },
                             err)) != RT_OK)
                return st;
        } else if ((st = ex_launch(u, "ex_tight_rank", nt, ex_tight_rank, err, L)) != RT_OK) {
            return st;
        }
    }
    if ((st = ex_join(u, err)) != RT_OK) return st;
    return ex_launch(u, "ex_merge", (size_t)3 * E + nt, ex_merge, err, L);
}

/* No limit for ex_sizes: the host sizes the arrays after reading back. */
static const ExCap ex_no_cap = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};

/* Room to grow for a capacity (ExSchedule.slack), within what the builder
 * addresses. */
static uint32_t ex_grow(uint64_t v, int slack, uint64_t most)
{
    v += (v >> slack) + 256;
    return (uint32_t)(v < most ? v : most);
}

/* The schedule from a host-driven build's level sizes. */
static void ex_schedule(KdExact *x, const ExRun *u, int levels, const uint32_t *N, const uint32_t *R,
                        const uint32_t *T, uint32_t nodes, uint32_t leaves, uint32_t index)
{
    ExSchedule *s = &x->sched;
    const uint64_t most_refs = (1u << (EX_CUT_BITS - 1)) - 1u;
    s->levels = levels + 2 < EX_MAX_LEVELS ? levels + 2 : EX_MAX_LEVELS;
    s->sure = levels;
    for (int l = 0; l < s->levels; l++) {
        uint32_t n = 0, r = 0, t = 0;
        for (int k = l - 1; k <= l + 1; k++)
            if (k >= 0 && k < levels) {
                n = N[k] > n ? N[k] : n;
                r = R[k] > r ? R[k] : r;
                t = T[k] > t ? T[k] : t;
            }
        s->N[l] = ex_grow(n, s->slack, RT_KD_MAX_INDEX);
        s->R[l] = ex_grow(r, s->slack, most_refs);
        s->T[l] = ex_grow(2 * (uint64_t)t, s->slack, most_refs); /* few, and the most variable; they cost little */
    }
    s->N[0] = 1, s->R[0] = u->n; /* the root: every triangle may be valid */
    s->nodes = ex_grow(nodes, s->slack, RT_KD_MAX_INDEX);
    s->leaves = ex_grow(leaves, s->slack, RT_KD_MAX_INDEX);
    /* (a root that stays a leaf lists every valid triangle) */
    s->index = ex_grow(index > u->n ? index : u->n, s->slack, RT_KD_MAX_INDEX);
    s->n = u->n;
    s->rules = u->rules;
    s->valid = 1;
}

/* The graph's margin: the levels past those the host-driven build had, for
 * a tree that grows deeper from frame to frame, are the body of a
 * conditional node that runs them only when the first of them has nodes
 * (ex_if_deeper sets its condition). A tree that keeps its depth launches
 * none of their kernels, each of which would cost its launch and wait
 * though it has nothing to do. Begun while the stream is captured: the
 * margin's launches go to *margin (the same run on x->margin, captured into
 * the body, its scans on that stream too) until ex_margin_end. */
static RtStatus ex_margin_begin(const ExRun *u, int level, ExRun *margin, RtError *err)
{
    KdExact *x = u->x;
    cudaStreamCaptureStatus cs;
    cudaGraph_t g = NULL;
    const cudaGraphNode_t *deps = NULL;
    const cudaGraphEdgeData *edges = NULL;
    size_t n_deps = 0;
    cudaGraphConditionalHandle h;
    RtStatus st;
    CUDA_CHECK(err, cudaStreamGetCaptureInfo(u->stream, &cs, NULL, &g, NULL, NULL, NULL));
    CUDA_CHECK(err, cudaGraphConditionalHandleCreate(&h, g, 0, cudaGraphCondAssignDefault));
    if ((st = ex_launch(u, "ex_if_deeper", 1, ex_if_deeper, err, h, (const ExSizes *)ARR(x, X_SIZES, ExSizes) + level)) !=
        RT_OK)
        return st;
    CUDA_CHECK(err, cudaStreamGetCaptureInfo(u->stream, &cs, NULL, &g, &deps, &edges, &n_deps));
    cudaGraphNodeParams p = {cudaGraphNodeTypeConditional, {0, 0, 0}, {{0}}, 0}; /* (no default constructor) */
    p.conditional.handle = h;
    p.conditional.type = cudaGraphCondTypeIf;
    p.conditional.size = 1;
    cudaGraphNode_t node;
    CUDA_CHECK(err, cudaGraphAddNode(&node, g, deps, edges, n_deps, &p));
    CUDA_CHECK(err, cudaStreamUpdateCaptureDependencies(u->stream, &node, NULL, 1, cudaStreamSetCaptureDependencies));
    CUDA_CHECK(err, cudaStreamBeginCaptureToGraph(x->margin, p.conditional.phGraph_out[0], NULL, NULL, 0,
                                                  cudaStreamCaptureModeThreadLocal));
    *margin = *u;
    margin->stream = x->margin;
    margin->beside = 0; /* (x->side is in the outer capture: the margin scans on its stream) */
    rt_launch_counts_take(u->log, &x->margin_counts); /* (ex_margin_end keeps what the margin adds) */
    return RT_OK;
}
static RtStatus ex_margin_end(const ExRun *u, RtError *err)
{
    KdExact *x = u->x;
    rt_launch_counts_since(u->log, &x->margin_counts);
    cudaGraph_t body = NULL;
    CUDA_CHECK(err, cudaStreamEndCapture(x->margin, &body));
    return RT_OK;
}

/* The levels as one graph over the schedule's capacities (planned or
 * captured: x->mode), the totals copied back at the end. */
static RtStatus ex_graph_queue(void *ctx, RtError *err)
{
    const ExRun *u = (const ExRun *)ctx;
    KdExact *x = u->x;
    const ExSchedule *sc = &x->sched;
    RtStatus st;
    if ((st = ex_root_queue(u, err)) != RT_OK) return st;
    x->cur = 0;
    ExRun margin;
    int in_margin = 0;
    for (int l = 0; l < sc->levels; l++) {
        if (l == sc->sure && x->mode == EX_CAPTURE) {
            if ((st = ex_margin_begin(u, l, &margin, err)) != RT_OK) return st;
            u = &margin;
            in_margin = 1;
        }
        const int last = l + 1 == sc->levels;
        const uint32_t N2 = last ? 0 : sc->N[l + 1], R2 = last ? 0 : sc->R[l + 1];
        const ExCap cap = {N2, R2, sc->T[l], sc->nodes, sc->leaves, sc->index};
        if ((st = ex_split_queue(u, l, sc->N[l], sc->R[l], sc->nodes, sc->leaves, sc->index, cap, err)) != RT_OK ||
            (!last && (st = ex_down_queue(u, l, sc->N[l], sc->R[l], sc->T[l], N2, R2, err)) != RT_OK) ||
            (st = ex_join(u, err)) != RT_OK) { /* (the last level has no merge) */
            RtError ignored;
            if (in_margin) ex_margin_end(u, &ignored); /* (the first error is the one said) */
            return st;
        }
        x->cur ^= 1;
    }
    if (in_margin) {
        if ((st = ex_margin_end(u, err)) != RT_OK) return st;
        u = (const ExRun *)ctx;
    }
    if (x->mode == EX_PLAN) return RT_OK;
    ExTotals *tot = ARR(x, X_TOTALS, ExTotals);
    if ((st = kd_mark_empty_queue(u->log, ARR(x, X_NODES, RtKdNode), &tot->nodes, sc->nodes, err)) != RT_OK)
        return st;
    CUDA_CHECK(err, cudaMemcpyAsync(&x->h->tot, tot, sizeof(ExTotals), cudaMemcpyDeviceToHost, u->stream));
    return RT_OK;
}

static int ex_rules_equal(const ExRules *a, const ExRules *b) { return !memcmp(a, b, sizeof *a); }

/* The levels as the schedule's graph (planned and captured when its key is
 * new) and the wait for its totals. *built 0: the caller builds host-driven
 * (the build outgrew the capacities, or they do not fit the GPU's memory
 * beside what it holds; a segment too long or the memory turn the graph
 * off for this count and these rules). */
static RtStatus ex_graph_build(ExRun *u, RtKdGpuStats *s, RtAabb *bounds, int *built, RtError *err)
{
    KdExact *x = u->x;
    RtStatus st;
    *built = 0;
    ExGraphKey key;
    memset(&key, 0, sizeof key);
    key.gen = x->sched.gen, key.n = u->n, key.verts = u->verts, key.woop = u->woop, key.rules = u->rules;
    const RtLaunchGraph *g = &x->graph;
    if (!(g->exec && g->key_bytes == sizeof key && !memcmp(g->key, &key, sizeof key))) {
        x->mode = EX_PLAN;
        st = ex_graph_queue(u, err);
        x->mode = EX_HOST;
        if (st == RT_ERR_OOM) { /* host-driven, the levels' arrays fit their sizes */
            x->graph_off = 1, x->off_n = u->n, x->off_rules = u->rules;
            return RT_OK;
        }
        if (st != RT_OK) return st;
    }
    x->mode = EX_CAPTURE;
    st = rt_launch_graph_run(&x->graph, u->log, &key, sizeof key, ex_graph_queue, u, err);
    x->mode = EX_HOST;
    if (st != RT_OK) return st;
    CUDA_CHECK(err, cudaEventRecord(x->ev[1], u->stream));
    CUDA_CHECK(err, cudaEventSynchronize(x->ev[1]));
    s->round_trips++;
    /* the margin's kernels ran only if the tree went deeper than the sure
     * levels: otherwise they are no launches of this build */
    if (x->h->tot.levels <= (uint32_t)x->sched.sure && x->sched.levels > x->sched.sure)
        rt_launch_counts_add(u->log, &x->margin_counts, -1);
    if (!x->h->tot.overflow) {
        *built = 1;
        *bounds = x->h->tot.box;
    } else {
        s->rebuilds = 1; /* built again host-driven */
        if ((x->h->tot.overflow & EX_OVER_CAP) && x->sched.slack > EX_SLACK_MOST) x->sched.slack--;
        if (x->h->tot.overflow & EX_OVER_SEGMENT) x->graph_off = 1, x->off_n = u->n, x->off_rules = u->rules;
    }
    return RT_OK;
}

/* The levels driven by the host: each level's sizes read back, the arrays
 * sized to them, the schedule for the graph recorded. */
static RtStatus ex_host_build(const ExRun *u, RtKdGpuStats *s, RtAabb *bounds, RtError *err)
{
    KdExact *x = u->x;
    const cudaStream_t stream = u->stream;
    RtStatus st;
    x->mode = EX_HOST;
    /* this build may move the arrays: no graph over the old ones replays
     * (a new schedule, recorded at the end, is captured anew) */
    x->sched.valid = 0;
    x->sched.gen++;
    if ((st = ex_root_queue(u, err)) != RT_OK) return st;
    CUDA_CHECK(err, cudaMemcpyAsync(&x->h->sz[0], ARR(x, X_SIZES, ExSizes), sizeof(ExSizes), cudaMemcpyDeviceToHost,
                                    stream));
    CUDA_CHECK(err, cudaMemcpyAsync(&x->h->tot, ARR(x, X_TOTALS, ExTotals), sizeof(ExTotals),
                                    cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(err, cudaStreamSynchronize(stream));
    s->round_trips++;
    const uint32_t valid_n = x->h->tot.valid;
    *bounds = x->h->tot.box;
    if (valid_n >= (1u << (EX_CUT_BITS - 2)))
        return rt_fail(err, RT_ERR_ARG, "KD: exact builder: %u triangles are more than its events address",
                       valid_n);
    const int max_depth = x->h->sz[0].max_depth;
    static_assert(RT_KD_MAX_DEPTH + 1 < EX_MAX_LEVELS, "a level per depth and the root's");
    uint32_t rec_N[EX_MAX_LEVELS], rec_R[EX_MAX_LEVELS], rec_T[EX_MAX_LEVELS];
    uint32_t N = 1, R = valid_n, node_total = 1, leaf_total = 0, index_total = 0;
    x->cur = 0;
    int level = 0;
    for (; N > 0; level++) {
        if (level > max_depth || level + 1 >= EX_MAX_LEVELS)
            return rt_fail(err, RT_ERR_CUDA, "KD: exact builder: level %d beyond the depth limit %d", level,
                           max_depth);
        if ((uint64_t)node_total + 2 * N > RT_KD_MAX_INDEX || (uint64_t)leaf_total + N > RT_KD_MAX_INDEX)
            return rt_fail(err, RT_ERR_OOM, "KD: exact builder: more than %u nodes", RT_KD_MAX_INDEX);
        if ((st = ex_split_queue(u, level, N, R, node_total + 2 * N, leaf_total + N, index_total + R, ex_no_cap,
                                 err)) != RT_OK)
            return st;
        /* the level's totals: the next level's sizes */
        CUDA_CHECK(err, cudaMemcpyAsync(x->h->sz, ARR(x, X_SIZES, ExSizes) + level, 2 * sizeof(ExSizes),
                                        cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(err, cudaStreamSynchronize(stream));
        s->round_trips++;
        const uint32_t T = x->h->sz[0].T, N2 = x->h->sz[0].N2, R2 = x->h->sz[1].R;
        rec_N[level] = N, rec_R[level] = R, rec_T[level] = T;
        node_total = x->h->sz[1].node_base;
        leaf_total = x->h->sz[1].leaf_base;
        index_total = x->h->sz[1].index_base;
        if (R2 >= (1u << (EX_CUT_BITS - 1)) || (uint64_t)index_total + R2 > RT_KD_MAX_INDEX)
            return rt_fail(err, RT_ERR_OOM, "KD: exact builder: %u references at level %d, more than it addresses",
                           R2, level + 1);
        if (N2 && (st = ex_down_queue(u, level, N, R, T, N2, R2, err)) != RT_OK) return st;
        if ((st = ex_join(u, err)) != RT_OK) return st; /* (a level without children has no merge) */
        x->cur ^= 1;
        N = N2;
        R = R2;
    }
    if ((st = kd_mark_empty_queue(u->log, ARR(x, X_NODES, RtKdNode), NULL, node_total, err)) != RT_OK) return st;
    ExTotals *t = &x->h->tot;
    t->nodes = node_total, t->leaves = leaf_total, t->index = index_total, t->levels = (uint32_t)level;
    t->overflow = 0;
    if (valid_n) ex_schedule(x, u, level, rec_N, rec_R, rec_T, node_total, leaf_total, index_total);
    return RT_OK;
}

RtStatus kd_exact_build(KdExact *x, const RtKdGpuParams *p, const float4 *verts, const float4 *woop, uint32_t n,
                        cudaStream_t stream, RtLaunchLog *log, RtKdTree *tree, RtKdGpuStats *stats, RtError *err)
{
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
    ExRun u;
    memset(&u, 0, sizeof u);
    u.x = x, u.verts = verts, u.woop = woop, u.n = n, u.stream = stream, u.log = log;
    memset(&u.rules, 0, sizeof u.rules); /* compared as bytes */
    u.rules.c_trav = p->c_trav, u.rules.c_isect = p->c_isect, u.rules.lambda = 1.0 - (double)p->empty_bonus;
    u.rules.max_leaf = (uint32_t)p->exact_leaf;
    u.rules.max_depth_asked = p->max_depth;
    u.rules.exact_clip = p->exact_clip;
    u.beside = !log->timed;
    x->side_pending = 0;
    RtStatus st;
    CUDA_CHECK(err, cudaEventRecord(x->ev[0], stream));

    /* the graph, where a schedule for these rules and this count exists (a
     * timed log times each launch: those go host-driven) */
    const ExSchedule *sc = &x->sched;
    const int off = x->graph_off && x->off_n == n && ex_rules_equal(&x->off_rules, &u.rules);
    int built = 0;
    RtAabb bounds = aabb_empty();
    if (!log->timed && !off && sc->valid && sc->n == n && ex_rules_equal(&sc->rules, &u.rules) &&
        (st = ex_graph_build(&u, &s, &bounds, &built, err)) != RT_OK)
        return st;
    if (!built) {
        if ((st = ex_host_build(&u, &s, &bounds, err)) != RT_OK) return st;
        CUDA_CHECK(err, cudaEventRecord(x->ev[1], stream));
        CUDA_CHECK(err, cudaEventSynchronize(x->ev[1]));
        s.round_trips++;
    }
    const ExTotals tot = x->h->tot;

    memset(tree, 0, sizeof *tree);
    tree->nodes = ARR(x, X_NODES, RtKdNode);
    tree->leaves = ARR(x, X_LEAVES, RtKdLeaf);
    tree->leaf_boxes = ARR(x, X_LEAF_BOXES, RtAabb);
    tree->tri_index = ARR(x, X_TRI_INDEX, uint32_t);
    tree->node_count = tot.nodes;
    tree->leaf_count = tot.leaves;
    tree->index_count = tot.index;
    tree->node_cap = (uint32_t)(x->arr[X_NODES].bytes / sizeof(RtKdNode));
    tree->leaf_cap = (uint32_t)(x->arr[X_LEAVES].bytes / sizeof(RtKdLeaf));
    tree->index_cap = (uint32_t)(x->arr[X_TRI_INDEX].bytes / 4);
    tree->bounds = bounds;
    tree->d_bounds = ARR(x, X_ROOT_BOX, RtAabb);

    s.build_ms = rt_now_ms() - t0;
    cudaEventElapsedTime(&s.gpu_ms, x->ev[0], x->ev[1]);
    s.large_ms = s.gpu_ms;
    s.large_levels = tot.levels;
    s.nodes = tot.nodes;
    s.leaves = tot.leaves;
    s.references = tot.index;
    s.triangles = n;
    s.valid_triangles = tot.valid;
    *stats = s;
    return RT_OK;
}
