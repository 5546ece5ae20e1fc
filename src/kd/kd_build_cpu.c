/* kd_build_cpu.c — the CPU reference kd-tree builder.
 *
 * Wald & Havran 2006, "On building fast kd-trees for ray tracing, and on
 * doing that in O(N log N)": the surface area heuristic over "perfect
 * splits" (a triangle that straddles a plane is clipped to each child's cell
 * and contributes the bounds of the clipped polygon), evaluated by a sweep
 * over sorted events. Events are sorted once at the root; a split partitions
 * the sorted lists in O(N) and only the clipped straddlers' new events are
 * sorted and merged back, so each level costs O(N) and the build O(N log N).
 *
 * Parallelism: a node with many triangles is a task in a shared LIFO queue
 * (splitting it pushes its two children); a smaller node is built as a whole
 * subtree by one worker into that worker's own buffers. A final pass lays all
 * pieces out in one canonical depth-first order, and every split decision
 * depends on the node's own (totally ordered) events alone, so the tree is the
 * same whatever the thread count or the scheduling.
 * docs/kdtree.md describes the algorithm, the parameters and the layout.
 */
#include "kd/kd_cpu.h"
#include "kd/kd_sah.h"

#include <float.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Subtrees below this many triangles are not worth a task of their own. */
#define KD_TASK_MIN_TRIS 256u
/* Tasks per thread the top of the tree is cut into, for load balance. */
#define KD_TASKS_PER_THREAD 16u

RtKdCpuParams rt_kd_cpu_params_default(void)
{
    RtKdCpuParams p;
    p.c_trav = RT_KD_C_TRAV;
    p.c_isect = RT_KD_C_ISECT;
    p.empty_bonus = 0.2f;
    p.max_depth = 0;
    p.max_leaf = 1;
    p.threads = 0;
    return p;
}

/* ---- perfect-split clipping (kd_clip.h) ----------------------------------- */

static float min3f(float a, float b, float c) { return a < b ? (a < c ? a : c) : (b < c ? b : c); }
static float max3f(float a, float b, float c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }

/* ---- events --------------------------------------------------------------- */

/* An event is kd_clip.h's 64-bit key (rt_kd_event: position, type,
 * triangle id), as the exact GPU builder's. */
typedef uint64_t KdEvent;

static KdEvent ev_make(float pos, unsigned type, uint32_t tri)
{
    return rt_kd_event(rt_kd_pos_key(pos), type, tri);
}

/* The events of one box on one axis: a planar event when the box is flat. */
static uint32_t emit_events(KdEvent *out, RtAabb box, int axis, uint32_t tri)
{
    float lo = v3_get(box.lo, axis), hi = v3_get(box.hi, axis);
    if (lo == hi) {
        out[0] = ev_make(lo, RT_KD_EV_PLANAR, tri);
        return 1;
    }
    out[0] = ev_make(lo, RT_KD_EV_START, tri);
    out[1] = ev_make(hi, RT_KD_EV_END, tri);
    return 2;
}

static void insertion_sort(KdEvent *a, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        KdEvent x = a[i];
        uint32_t j = i;
        for (; j > 0 && a[j - 1] > x; j--) a[j] = a[j - 1];
        a[j] = x;
    }
}

/* Bottom-up merge sort for the few new events of a split (tmp holds n). */
static void sort_events(KdEvent *a, KdEvent *tmp, uint32_t n)
{
    const uint32_t run = 16;
    for (uint32_t i = 0; i < n; i += run) insertion_sort(a + i, n - i < run ? n - i : run);
    KdEvent *src = a, *dst = tmp;
    for (uint32_t w = run; w < n; w *= 2) {
        for (uint32_t i = 0; i < n; i += 2 * w) {
            uint32_t m = i + w < n ? i + w : n, e = i + 2 * w < n ? i + 2 * w : n;
            uint32_t x = i, y = m, o = i;
            while (x < m && y < e) dst[o++] = src[x] < src[y] ? src[x++] : src[y++];
            while (x < m) dst[o++] = src[x++];
            while (y < e) dst[o++] = src[y++];
        }
        KdEvent *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
}

/* Root lists are generated in triangle order, so a stable LSD radix sort on
 * the position and type bits [30, 64) yields the full (position, type, id)
 * order. Three passes of 11, 11 and 12 bits. */
static int radix_sort_root(KdEvent *a, uint32_t n)
{
    static const int shift[3] = {30, 41, 52}, bits[3] = {11, 11, 12};
    KdEvent *tmp = malloc((n ? n : 1) * sizeof *tmp);
    uint32_t *count = malloc((1u << 12) * sizeof *count);
    if (!tmp || !count) {
        free(tmp);
        free(count);
        return 0;
    }
    KdEvent *src = a, *dst = tmp;
    for (int p = 0; p < 3; p++) {
        uint32_t buckets = 1u << bits[p], mask = buckets - 1;
        memset(count, 0, buckets * sizeof *count);
        for (uint32_t i = 0; i < n; i++) count[(src[i] >> shift[p]) & mask]++;
        uint32_t sum = 0;
        for (uint32_t b = 0; b < buckets; b++) {
            uint32_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (uint32_t i = 0; i < n; i++) dst[count[(src[i] >> shift[p]) & mask]++] = src[i];
        KdEvent *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
    free(tmp);
    free(count);
    return 1;
}

/* ---- per-worker arena ------------------------------------------------------ */

/* A depth-first build frees in reverse order of allocation: a stack of
 * blocks with mark/release, kept for reuse, replaces a malloc per node. */
typedef struct KdBlock {
    unsigned char *mem;
    size_t size;
} KdBlock;
typedef struct KdArena {
    KdBlock *blocks;
    int count, cap, cur; /* cur = -1: nothing allocated */
    size_t used;         /* bytes used in blocks[cur] */
} KdArena;
typedef struct KdMark {
    int cur;
    size_t used;
} KdMark;
#define KD_ARENA_BLOCK ((size_t)1 << 20)

static void *arena_alloc(KdArena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (a->cur >= 0 && a->used + size <= a->blocks[a->cur].size) {
        void *p = a->blocks[a->cur].mem + a->used;
        a->used += size;
        return p;
    }
    int next = a->cur + 1;
    if (next == a->count) {
        if (a->count == a->cap) {
            int cap = a->cap ? 2 * a->cap : 16;
            KdBlock *b = realloc(a->blocks, (size_t)cap * sizeof *b);
            if (!b) return NULL;
            a->blocks = b;
            a->cap = cap;
        }
        a->blocks[a->count++] = (KdBlock){NULL, 0};
    }
    KdBlock *b = &a->blocks[next];
    if (b->size < size) {
        size_t bs = KD_ARENA_BLOCK << (next < 6 ? next : 6);
        if (bs < size) bs = size;
        free(b->mem);
        b->mem = malloc(bs);
        b->size = b->mem ? bs : 0;
        if (!b->mem) return NULL;
        rt_advise_huge(b->mem, bs);
    }
    a->cur = next;
    a->used = size;
    return b->mem;
}
static KdMark arena_mark(const KdArena *a) { return (KdMark){a->cur, a->used}; }
static void arena_release(KdArena *a, KdMark m)
{
    a->cur = m.cur;
    a->used = m.used;
}
static void arena_free(KdArena *a)
{
    for (int i = 0; i < a->count; i++) free(a->blocks[i].mem);
    free(a->blocks);
    memset(a, 0, sizeof *a);
    a->cur = -1;
}

/* ---- build state -------------------------------------------------------- */

/* A node under construction: its sorted event lists and its cell, or a
 * leaf already made from its parent's lists. */
typedef struct KdSet {
    KdEvent *ev[3];
    uint32_t n[3];
    uint32_t tris;
    RtAabb cell;
    int depth;
    uint32_t leaf; /* a leaf already made from the parent's lists, else UINT32_MAX */
} KdSet;

typedef struct KdSplit {
    double cost;
    int axis;
    float pos;
    int planar_left; /* triangles lying in the plane go left (W&H's pLeft) */
} KdSplit;

/* Nodes a worker builds, in its own numbering (the layout pass renumbers). */
typedef struct KdLocalNode {
    uint32_t kind; /* axis, or RT_KD_LEAF_TAG */
    float split;
    uint32_t a, b; /* interior: local children; leaf: a = local leaf */
} KdLocalNode;
typedef struct KdLocalLeaf {
    uint32_t first, count; /* into the worker's idx[] */
    RtAabb box;
} KdLocalLeaf;

/* A node anywhere: owner -1 is the shared top array, else a worker. */
typedef struct KdRef {
    int32_t owner;
    uint32_t index;
} KdRef;
typedef struct KdTop {
    int axis;
    float split;
    KdRef child[2];
} KdTop;
/* A node waiting in the queue; its result goes to top[parent].child[side]
 * (parent -1: the root). mem owns the event lists. */
typedef struct KdTask {
    KdSet set;
    void *mem;
    int32_t parent;
    int side;
} KdTask;

enum { SIDE_LEFT = 1, SIDE_RIGHT = 2, SIDE_BOTH = 3 };

struct KdBuilder;
typedef struct KdWorker {
    struct KdBuilder *b;
    int id;
    uint8_t *side; /* per triangle id: its side at the split being made */
    KdArena arena;
    KdLocalNode *nodes;
    uint32_t node_n, node_cap;
    KdLocalLeaf *leaves;
    uint32_t leaf_n, leaf_cap;
    uint32_t *idx;
    uint32_t idx_n, idx_cap;
    uint32_t *cand; /* scratch of a split: straddlers, their boxes, new events */
    RtAabb *sbox;
    KdEvent *stmp;
    uint32_t cand_cap, sbox_cap, stmp_cap;
    int failed;
} KdWorker;

typedef struct KdBuilder {
    const RtTriArrays *tris;
    double c_trav, c_isect, lambda; /* lambda = 1 - empty_bonus */
    double min_gap;
    int max_depth;
    uint32_t max_leaf, task_min;
    /* shared between workers, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    KdTask *queue;
    uint32_t queue_n, queue_cap, pending;
    KdTop *top;
    uint32_t top_n, top_cap;
    KdRef root;
    int failed;
} KdBuilder;

static int grow(void **p, uint32_t *cap, uint64_t need, size_t elem)
{
    if (need <= *cap) return 1;
    if (need > 0xffffffffu) return 0;
    uint64_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    if (c > 0xffffffffu) c = 0xffffffffu;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q) return 0;
    rt_advise_huge(q, (size_t)c * elem);
    *p = q;
    *cap = (uint32_t)c;
    return 1;
}

/* ---- SAH sweep (W&H section 4.3) --------------------------------------- */

/* Areas are in double: float areas overflow at 1e19 and underflow at 1e-19.
 * Children's areas relative to the parent's: P(x) = A + B * (x - lo) on the
 * left, A + B * (hi - x) on the right (A: the two faces across the axis,
 * B: the rim). The best candidate lives in locals: stores to *best would
 * make the compiler reload the builder's constants after each one. */
static void sweep_axis(const KdBuilder *b, const KdSet *s, int k, const double ext[3],
                       double inv_area, KdSplit *best)
{
    const KdEvent *e = s->ev[k];
    const uint32_t n = s->n[k];
    const double lo = v3_get(s->cell.lo, k), hi = v3_get(s->cell.hi, k);
    if (!(hi > lo)) return; /* a flat cell has no plane across this axis */
    const double A = ext[(k + 1) % 3] * ext[(k + 2) % 3] * inv_area;
    const double B = (ext[(k + 1) % 3] + ext[(k + 2) % 3]) * inv_area;
    const double ct = b->c_trav, ci = b->c_isect, lam = b->lambda, gap = b->min_gap;
    double bc = best->cost;
    float bp = 0.0f;
    int bl = -1; /* planar side of the best plane on this axis; -1: none better */
    uint32_t nl = 0, nr = s->tris;
    for (uint32_t i = 0; i < n;) {
        /* One group per position, counted by type in registers. */
        const uint32_t key = rt_kd_event_key(e[i]);
        const uint32_t first = i;
        uint32_t ne = 0, np = 0;
        do {
            const unsigned type = rt_kd_event_type(e[i]);
            ne += type == RT_KD_EV_END;
            np += type == RT_KD_EV_PLANAR;
        } while (++i < n && rt_kd_event_key(e[i]) == key);
        const uint32_t ns = i - first - ne - np;
        nr -= ne + np;
        const float p = rt_kd_key_pos(key);
        const double xl = (double)p - lo, xr = hi - (double)p;
        const double pl = A + B * xl, pr = A + B * xr;
        if (xl >= gap && xr >= gap) {
            /* Planar triangles left, then right (W&H's pLeft wins ties).
             * The bonus rewards cutting off empty space (W&H's lambda). */
            double c = rt_kd_split_cost(ct, ci, lam, pl, pr, nl + np, nr);
            if (c < bc) bc = c, bp = p, bl = 1;
            if (np) {
                c = rt_kd_split_cost(ct, ci, lam, pl, pr, nl, nr + np);
                if (c < bc) bc = c, bp = p, bl = 0;
            }
        } else if (np > 0 && (xl == 0.0 || xr == 0.0)) {
            /* On a face of the cell a split only pays by separating the
             * triangles lying in that face into a flat child, the other
             * child being the whole cell with the rest. A flat empty child
             * cuts off no space: no bonus for it. */
            double c;
            if (xl == 0.0) c = rt_kd_split_cost(ct, ci, lam, pl, pr, np, nr);
            else c = rt_kd_split_cost(ct, ci, lam, pl, pr, nl, np);
            if (c < bc) bc = c, bp = p, bl = xl == 0.0;
        }
        nl += ns + np;
    }
    if (bl >= 0) {
        best->cost = bc;
        best->axis = k;
        best->pos = bp;
        best->planar_left = bl;
    }
}

/* Returns 1 with the best plane when splitting beats a leaf (W&H's
 * termination: cost of the best split < C_i * N). */
static int find_split(const KdBuilder *b, const KdSet *s, KdSplit *best)
{
    double ext[3];
    const double half_area = rt_kd_half_area(s->cell, ext);
    if (!rt_kd_may_split(s->tris, b->max_leaf, s->depth, b->max_depth, half_area)) return 0;
    best->cost = INFINITY;
    for (int k = 0; k < 3; k++) sweep_axis(b, s, k, ext, 1.0 / half_area, best);
    return rt_kd_split_pays(best->cost, b->c_isect, s->tris);
}

/* ---- split and merge (W&H section 5.2) ----------------------------------- */

/* Per-worker scratch of a split, grown to the largest node seen. */
static int scratch(KdWorker *w, uint32_t tris)
{
    return grow((void **)&w->cand, &w->cand_cap, (uint64_t)tris + 1, sizeof *w->cand) &&
           grow((void **)&w->sbox, &w->sbox_cap, 2 * (uint64_t)tris + 2, sizeof *w->sbox) &&
           grow((void **)&w->stmp, &w->stmp_cap, 6 * (uint64_t)tris + 4, sizeof *w->stmp);
}

/* Classifies the node's triangles against the plane (w->side, W&H's
 * "classify" pass over the split axis' list), lists the straddlers in
 * w->cand[0..*ns) in that list's order and counts each side's others. */
static void classify(KdWorker *w, const KdSet *s, const KdSplit *sp, uint32_t *ns,
                     uint32_t only[2])
{
    const KdEvent *e = s->ev[sp->axis];
    const uint32_t n = s->n[sp->axis], pk = rt_kd_pos_key(sp->pos);
    const uint8_t planar_side = sp->planar_left ? SIDE_LEFT : SIDE_RIGHT;
    uint8_t *side = w->side;
    /* Branch-free: a triangle's new side by (event type, key <, =, > plane).
     * 0 keeps the side its start gave (an end right of the plane: BOTH or
     * RIGHT stays). A start precedes its end in the list, so an end left of
     * the plane turns the BOTH of its start into LEFT. Starts left of the
     * plane are the straddler candidates. */
    const uint8_t table[3][3] = {
        [RT_KD_EV_END] = {SIDE_LEFT, SIDE_LEFT, 0},
        [RT_KD_EV_PLANAR] = {SIDE_LEFT, planar_side, SIDE_RIGHT},
        [RT_KD_EV_START] = {SIDE_BOTH, SIDE_RIGHT, SIDE_RIGHT},
    };
    uint32_t *cand = w->cand, nc = 0, cnt[4] = {0, 0, 0, 0};
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t t = rt_kd_event_id(e[i]), key = rt_kd_event_key(e[i]);
        const unsigned type = rt_kd_event_type(e[i]), rel = (key >= pk) + (key > pk);
        const uint8_t sd = table[type][rel];
        side[t] = sd ? sd : side[t];
        cnt[sd]++;
        cand[nc] = t;
        nc += sd == SIDE_BOTH;
    }
    const uint32_t nl = cnt[SIDE_LEFT], nr = cnt[SIDE_RIGHT];
    /* Candidates whose end came left of the plane too are LEFT now. */
    uint32_t m = 0;
    for (uint32_t i = 0; i < nc; i++) {
        cand[m] = cand[i];
        m += side[cand[i]] == SIDE_BOTH;
    }
    *ns = m;
    only[0] = nl;
    only[1] = nr;
}

static uint32_t new_leaf(KdWorker *w, uint32_t count, uint32_t **ids);
static void finish_leaf(KdWorker *w, uint32_t node, uint32_t count, RtAabb box);

/* A child that will be a leaf whatever its events say (too few triangles or
 * too deep) is made here from the parent's lists, skipping the events it
 * would never sweep. The result equals make_leaf on the child's lists. */
static uint32_t leaf_from_parent(KdWorker *w, const KdSet *s, unsigned want, uint32_t count,
                                 const uint32_t *strad, const RtAabb *box, uint32_t ns)
{
    uint32_t *ids, c = 0;
    uint32_t node = new_leaf(w, count, &ids);
    if (node == UINT32_MAX) return node;
    const uint8_t *side = w->side;
    RtAabb bb = aabb_empty();
    for (uint32_t i = 0; i < s->n[0]; i++)
        if (side[rt_kd_event_id(s->ev[0][i])] == want && rt_kd_event_type(s->ev[0][i]) != RT_KD_EV_END)
            ids[c++] = rt_kd_event_id(s->ev[0][i]);
    if (c)
        for (int a = 0; a < 3; a++) { /* the lists are sorted: first and last on this side */
            const KdEvent *e = s->ev[a];
            uint32_t i = 0, j = s->n[a];
            while (side[rt_kd_event_id(e[i])] != want) i++;
            while (side[rt_kd_event_id(e[j - 1])] != want) j--;
            v3_set(&bb.lo, a, rt_kd_key_pos(rt_kd_event_key(e[i])));
            v3_set(&bb.hi, a, rt_kd_key_pos(rt_kd_event_key(e[j - 1])));
        }
    for (uint32_t i = 0; i < ns; i++)
        if (!aabb_is_empty(box[i])) {
            ids[c++] = strad[i];
            bb = aabb_union(bb, box[i]);
        }
    finish_leaf(w, node, c, bb);
    return node;
}

/* Splits s into l and r. With mem == NULL the children's lists come from the
 * worker's arena (depth-first subtree); otherwise from malloc, returned in
 * mem[0..1] (queued tasks outlive the arena's order). A child that must be a
 * leaf is made at once (its set's leaf is a local node, its lists empty). */
static RtStatus partition(KdWorker *w, const KdSet *s, const KdSplit *sp, KdSet *l, KdSet *r,
                          void **mem)
{
    const KdBuilder *b = w->b;
    const int k = sp->axis;
    if (!scratch(w, s->tris)) return RT_ERR_OOM;
    uint32_t ns, only[2];
    classify(w, s, sp, &ns, only);
    const uint8_t *side = w->side;

    /* Perfect splits: each straddler's box in a child is the bounds of the
     * triangle clipped to that child's cell. */
    KdSet *child[2] = {l, r};
    memset(l, 0, sizeof *l);
    memset(r, 0, sizeof *r);
    l->cell = r->cell = s->cell;
    v3_set(&l->cell.hi, k, sp->pos);
    v3_set(&r->cell.lo, k, sp->pos);
    l->depth = r->depth = s->depth + 1;
    const uint32_t *strad = w->cand;
    RtAabb *box[2] = {w->sbox, w->sbox + ns};
    uint32_t nboth[2] = {0, 0};
    const RtFloat4 *tv = b->tris->verts;
    RtAabb cells[2] = {l->cell, r->cell};
    for (uint32_t i = 0; i < ns; i++) {
        RtAabb bx[2];
        rt_tri_split_boxes(&tv[3 * (size_t)strad[i]], s->cell, k, sp->pos, cells, bx);
        for (int c = 0; c < 2; c++) {
            box[c][i] = bx[c];
            nboth[c] += !aabb_is_empty(bx[c]);
        }
    }

    /* Each child: a leaf now (too few triangles or too deep) or lists. */
    int lists[2];
    for (int c = 0; c < 2; c++) {
        const unsigned want = c ? SIDE_RIGHT : SIDE_LEFT;
        KdSet *ch = child[c];
        ch->tris = only[c] + nboth[c];
        ch->leaf = UINT32_MAX;
        lists[c] = 0;
        if (ch->tris <= b->max_leaf || ch->depth >= b->max_depth) {
            ch->leaf = leaf_from_parent(w, s, want, ch->tris, strad, box[c], ns);
            if (ch->leaf == UINT32_MAX) return RT_ERR_OOM;
        } else {
            lists[c] = 1;
        }
    }

    /* One slack slot: the branch-free filter below writes before it counts. */
    size_t cap[3], total = 0;
    for (int a = 0; a < 3; a++) total += cap[a] = (size_t)s->n[a] + 2 * (size_t)ns + 1;
    KdEvent *buf[2] = {NULL, NULL};
    for (int c = 0; c < 2; c++) {
        if (!lists[c]) continue;
        if (mem) buf[c] = mem[c] = malloc(total * sizeof(KdEvent));
        else buf[c] = arena_alloc(&w->arena, total * sizeof(KdEvent));
        if (!buf[c]) {
            if (mem) {
                free(mem[0]);
                free(mem[1]);
                mem[0] = mem[1] = NULL;
            }
            return RT_ERR_OOM;
        }
        rt_advise_huge(buf[c], total * sizeof(KdEvent));
    }
    if (!lists[0] && !lists[1]) return RT_OK;

    /* Filter each list by side and merge the straddlers' new (sorted)
     * events in, in one pass: W&H's split and merge. */
    size_t off = 0;
    KdEvent *tmp[2] = {w->stmp, w->stmp + 2 * (size_t)ns + 1};
    KdEvent *scr = w->stmp + 4 * (size_t)ns + 2;
    KdEvent sink[2]; /* destination of a side without lists: the filter has no branch */
    for (int a = 0; a < 3; a++) {
        uint32_t q[2] = {0, 0};
        for (int c = 0; c < 2; c++) {
            if (lists[c]) {
                for (uint32_t i = 0; i < ns; i++)
                    if (!aabb_is_empty(box[c][i]))
                        q[c] += emit_events(tmp[c] + q[c], box[c][i], a, strad[i]);
                sort_events(tmp[c], scr, q[c]);
            }
            tmp[c][q[c]] = UINT64_MAX; /* sentinel: no event is that large */
        }
        KdEvent *d0 = lists[0] ? buf[0] + off : sink, *d1 = lists[1] ? buf[1] + off : sink;
        const KdEvent *t0 = tmp[0], *t1 = tmp[1];
        const uint32_t inc0 = (uint32_t)lists[0], inc1 = (uint32_t)lists[1];
        uint32_t m0 = 0, m1 = 0;
        const KdEvent *e = s->ev[a];
        for (uint32_t i = 0; i < s->n[a]; i++) {
            const KdEvent x = e[i];
            while (*t0 < x) d0[m0++] = *t0++;
            while (*t1 < x) d1[m1++] = *t1++;
            unsigned sd = side[rt_kd_event_id(x)];
            d0[m0] = x;
            d1[m1] = x;
            m0 += (sd == SIDE_LEFT) & inc0;
            m1 += (sd == SIDE_RIGHT) & inc1;
        }
        while (*t0 != UINT64_MAX) d0[m0++] = *t0++;
        while (*t1 != UINT64_MAX) d1[m1++] = *t1++;
        if (lists[0]) {
            l->ev[a] = d0;
            l->n[a] = m0;
        }
        if (lists[1]) {
            r->ev[a] = d1;
            r->n[a] = m1;
        }
        off += cap[a];
    }
    return RT_OK;
}

/* ---- leaves and subtrees ---------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static uint32_t new_node(KdWorker *w)
{
    if (!grow((void **)&w->nodes, &w->node_cap, (uint64_t)w->node_n + 1, sizeof *w->nodes)) {
        w->failed = 1;
        return UINT32_MAX;
    }
    return w->node_n++;
}

/* A leaf node with room for count ids (filled by the caller, then finish_leaf). */
static uint32_t new_leaf(KdWorker *w, uint32_t count, uint32_t **ids)
{
    uint32_t node = new_node(w);
    if (node == UINT32_MAX ||
        !grow((void **)&w->leaves, &w->leaf_cap, (uint64_t)w->leaf_n + 1, sizeof *w->leaves) ||
        !grow((void **)&w->idx, &w->idx_cap, (uint64_t)w->idx_n + count, sizeof *w->idx)) {
        w->failed = 1;
        return UINT32_MAX;
    }
    *ids = w->idx + w->idx_n;
    return node;
}

/* A leaf lists its triangles by increasing id. */
static void finish_leaf(KdWorker *w, uint32_t node, uint32_t count, RtAabb box)
{
    uint32_t *x = w->idx + w->idx_n;
    if (count > 32) {
        qsort(x, count, sizeof *x, cmp_u32);
    } else {
        for (uint32_t i = 1; i < count; i++) {
            uint32_t v = x[i], j = i;
            for (; j > 0 && x[j - 1] > v; j--) x[j] = x[j - 1];
            x[j] = v;
        }
    }
    uint32_t leaf = w->leaf_n++;
    w->leaves[leaf] = (KdLocalLeaf){w->idx_n, count, box};
    w->idx_n += count;
    w->nodes[node] = (KdLocalNode){RT_KD_LEAF_TAG, 0.0f, leaf, 0};
}

/* Its box is the union of the (clipped) triangle boxes, which the sorted
 * lists give at their ends. */
static uint32_t make_leaf(KdWorker *w, const KdSet *s)
{
    if (s->leaf != UINT32_MAX) return s->leaf;
    uint32_t *ids, c = 0;
    uint32_t node = new_leaf(w, s->tris, &ids);
    if (node == UINT32_MAX) return node;
    for (uint32_t i = 0; i < s->n[0]; i++)
        if (rt_kd_event_type(s->ev[0][i]) != RT_KD_EV_END) ids[c++] = rt_kd_event_id(s->ev[0][i]);
    RtAabb box = aabb_empty();
    if (c)
        for (int a = 0; a < 3; a++) {
            v3_set(&box.lo, a, rt_kd_key_pos(rt_kd_event_key(s->ev[a][0])));
            v3_set(&box.hi, a, rt_kd_key_pos(rt_kd_event_key(s->ev[a][s->n[a] - 1])));
        }
    finish_leaf(w, node, c, box);
    return node;
}

/* Depth-first subtree in the worker's own buffers; the children's lists live
 * in the arena until the subtree is done. Returns the local node. */
static uint32_t build_subtree(KdWorker *w, const KdSet *s)
{
    KdSplit sp;
    if (w->failed) return UINT32_MAX;
    if (s->leaf != UINT32_MAX) return s->leaf;
    if (!find_split(w->b, s, &sp)) return make_leaf(w, s);
    KdMark m = arena_mark(&w->arena);
    KdSet l, r;
    if (partition(w, s, &sp, &l, &r, NULL) != RT_OK) {
        w->failed = 1;
        return UINT32_MAX;
    }
    uint32_t node = new_node(w);
    uint32_t a = node == UINT32_MAX ? node : build_subtree(w, &l);
    uint32_t c = a == UINT32_MAX ? a : build_subtree(w, &r);
    arena_release(&w->arena, m);
    if (c == UINT32_MAX) return UINT32_MAX;
    w->nodes[node] = (KdLocalNode){(uint32_t)sp.axis, sp.pos, a, c};
    return node;
}

/* ---- task queue -------------------------------------------------------------- */

/* Under b->mu. */
static void link_result(KdBuilder *b, int32_t parent, int side, KdRef ref)
{
    if (parent < 0) b->root = ref;
    else b->top[parent].child[side] = ref;
}

/* Under b->mu. */
static int push_task(KdBuilder *b, KdTask t)
{
    if (!grow((void **)&b->queue, &b->queue_cap, (uint64_t)b->queue_n + 1, sizeof *b->queue))
        return 0;
    b->queue[b->queue_n++] = t;
    b->pending++;
    return 1;
}

static void run_task(KdWorker *w, KdTask *t)
{
    KdBuilder *b = w->b;
    KdSplit sp;
    if (t->set.tris <= b->task_min || !find_split(b, &t->set, &sp)) {
        uint32_t n = build_subtree(w, &t->set);
        free(t->mem);
        pthread_mutex_lock(&b->mu);
        if (n == UINT32_MAX) b->failed = 1;
        else link_result(b, t->parent, t->side, (KdRef){w->id, n});
        pthread_mutex_unlock(&b->mu);
        return;
    }
    KdSet l, r;
    void *mem[2] = {NULL, NULL};
    RtStatus st = partition(w, &t->set, &sp, &l, &r, mem);
    free(t->mem);
    pthread_mutex_lock(&b->mu);
    if (st != RT_OK ||
        !grow((void **)&b->top, &b->top_cap, (uint64_t)b->top_n + 1, sizeof *b->top)) {
        b->failed = 1;
        free(mem[0]);
        free(mem[1]);
    } else {
        uint32_t id = b->top_n++;
        b->top[id] = (KdTop){sp.axis, sp.pos, {{0, 0}, {0, 0}}};
        link_result(b, t->parent, t->side, (KdRef){-1, id});
        /* Right first: LIFO pops the left child next, depth-first. */
        KdSet *kid[2] = {&l, &r};
        for (int c = 1; c >= 0; c--) {
            if (kid[c]->leaf != UINT32_MAX)
                link_result(b, (int32_t)id, c, (KdRef){w->id, kid[c]->leaf});
            else if (!push_task(b, (KdTask){*kid[c], mem[c], (int32_t)id, c})) {
                b->failed = 1;
                free(mem[c]);
            }
        }
        pthread_cond_broadcast(&b->cv);
    }
    pthread_mutex_unlock(&b->mu);
}

static void *worker_main(void *arg)
{
    KdWorker *w = arg;
    KdBuilder *b = w->b;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (b->queue_n == 0 && b->pending > 0) pthread_cond_wait(&b->cv, &b->mu);
        if (b->queue_n == 0) break;
        KdTask t = b->queue[--b->queue_n];
        if (b->failed) {
            free(t.mem); /* drain the queue after a failure */
        } else {
            pthread_mutex_unlock(&b->mu);
            run_task(w, &t);
            pthread_mutex_lock(&b->mu);
        }
        if (w->failed) b->failed = 1;
        if (--b->pending == 0) pthread_cond_broadcast(&b->cv);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

/* ---- root ---------------------------------------------------------------------- */

typedef struct KdSortJob {
    KdEvent *ev[3];
    uint32_t n[3];
    int first, step, ok;
} KdSortJob;

static void *sort_job(void *arg)
{
    KdSortJob *j = arg;
    j->ok = 1;
    for (int a = j->first; a < 3; a += j->step) j->ok &= radix_sort_root(j->ev[a], j->n[a]);
    return NULL;
}

/* Root events of every usable triangle, sorted per axis (the one full sort
 * of the build; the three axes sort in parallel). */
static RtStatus root_set(const RtTriArrays *tris, int threads, KdSet *s, void **mem,
                         uint32_t *valid)
{
    /* Room for every triangle; degenerate ones leave theirs unused. */
    KdEvent *ev = *mem = malloc(6 * (size_t)tris->count * sizeof *ev + 1);
    if (!ev) return RT_ERR_OOM;
    rt_advise_huge(ev, 6 * (size_t)tris->count * sizeof *ev);
    memset(s, 0, sizeof *s);
    s->leaf = UINT32_MAX;
    for (int a = 0; a < 3; a++) s->ev[a] = ev + 2 * (size_t)tris->count * a;
    uint32_t n = 0;
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t i = 0; i < tris->count; i++) {
        if (rt_kd_tri_degenerate(tris, i)) continue;
        const RtFloat4 *v = &tris->verts[3 * (size_t)i];
        const float p[3][3] = {{v[0].x, v[0].y, v[0].z}, {v[1].x, v[1].y, v[1].z},
                               {v[2].x, v[2].y, v[2].z}};
        for (int a = 0; a < 3; a++) {
            float l = min3f(p[0][a], p[1][a], p[2][a]), h = max3f(p[0][a], p[1][a], p[2][a]);
            KdEvent *e = s->ev[a] + s->n[a];
            if (l == h) {
                e[0] = ev_make(l, RT_KD_EV_PLANAR, i);
                s->n[a] += 1;
            } else {
                e[0] = ev_make(l, RT_KD_EV_START, i);
                e[1] = ev_make(h, RT_KD_EV_END, i);
                s->n[a] += 2;
            }
            lo[a] = l < lo[a] ? l : lo[a];
            hi[a] = h > hi[a] ? h : hi[a];
        }
        n++;
    }
    RtAabb bounds = {{lo[0], lo[1], lo[2]}, {hi[0], hi[1], hi[2]}};
    s->tris = n;
    s->cell = bounds;
    *valid = n;

    KdSortJob jobs[3];
    pthread_t th[3];
    int nj = threads < 3 ? threads : 3, started[3] = {0, 0, 0};
    for (int j = 0; j < nj; j++) {
        jobs[j] = (KdSortJob){{s->ev[0], s->ev[1], s->ev[2]}, {s->n[0], s->n[1], s->n[2]}, j, nj, 0};
        if (j > 0) started[j] = pthread_create(&th[j], NULL, sort_job, &jobs[j]) == 0;
    }
    sort_job(&jobs[0]);
    int ok = jobs[0].ok;
    for (int j = 1; j < nj; j++) {
        if (started[j]) pthread_join(th[j], NULL);
        else sort_job(&jobs[j]); /* no thread: do it here */
        ok &= jobs[j].ok;
    }
    return ok ? RT_OK : RT_ERR_OOM;
}

/* ---- canonical layout ------------------------------------------------------ */

/* Depth-first, left before right, both children placed when their parent is
 * visited: the order a single-threaded recursive build would produce. */
static RtStatus lay_out(const KdBuilder *b, const KdWorker *ws, int nw, RtKdTree *tree,
                        RtError *err)
{
    uint64_t nodes = b->top_n, leaves = 0, refs = 0;
    for (int i = 0; i < nw; i++) {
        nodes += ws[i].node_n;
        leaves += ws[i].leaf_n;
        refs += ws[i].idx_n;
    }
    if (nodes > RT_KD_MAX_INDEX || leaves > RT_KD_MAX_INDEX || refs > 0xffffffffu)
        return rt_fail(err, RT_ERR_OOM,
                       "KD: tree too large for the layout (%llu nodes, %llu references; "
                       "at most %u nodes)",
                       (unsigned long long)nodes, (unsigned long long)refs, RT_KD_MAX_INDEX);
    /* The arrays of a previous build are reused when large enough. */
    int ok = rt_reserve_array((void **)&tree->nodes, &tree->node_cap, (uint32_t)nodes, sizeof *tree->nodes) &&
             rt_reserve_array((void **)&tree->tri_index, &tree->index_cap, (uint32_t)refs,
                     sizeof *tree->tri_index);
    if (ok && (!tree->leaves || !tree->leaf_boxes || tree->leaf_cap < leaves)) {
        uint32_t cap = leaves ? (uint32_t)leaves : 1;
        RtKdLeaf *lv = realloc(tree->leaves, (size_t)cap * sizeof *lv);
        if (lv) tree->leaves = lv, rt_advise_huge(lv, (size_t)cap * sizeof *lv);
        RtAabb *bx = realloc(tree->leaf_boxes, (size_t)cap * sizeof *bx);
        if (bx) tree->leaf_boxes = bx, rt_advise_huge(bx, (size_t)cap * sizeof *bx);
        ok = lv && bx;
        if (ok) tree->leaf_cap = cap;
    }
    if (!ok) return rt_fail(err, RT_ERR_OOM, "KD: out of memory for the tree arrays");

    struct {
        KdRef ref;
        uint32_t out;
    } stack[2 * RT_KD_MAX_DEPTH + 4];
    int sp = 0;
    uint32_t next_node = 1, next_leaf = 0, next_index = 0;
    stack[sp].ref = b->root;
    stack[sp++].out = 0;
    while (sp > 0) {
        KdRef ref = stack[--sp].ref;
        uint32_t out = stack[sp].out;
        KdRef kids[2];
        int axis;
        float split;
        if (ref.owner < 0) {
            const KdTop *t = &b->top[ref.index];
            axis = t->axis;
            split = t->split;
            kids[0] = t->child[0];
            kids[1] = t->child[1];
        } else {
            const KdWorker *w = &ws[ref.owner];
            const KdLocalNode *n = &w->nodes[ref.index];
            if (n->kind == RT_KD_LEAF_TAG) {
                const KdLocalLeaf *lf = &w->leaves[n->a];
                uint32_t id = next_leaf++;
                memcpy(tree->tri_index + next_index, w->idx + lf->first,
                       (size_t)lf->count * sizeof *tree->tri_index);
                tree->leaves[id] = (RtKdLeaf){next_index, lf->count};
                tree->leaf_boxes[id] = lf->box;
                tree->nodes[out] = kd_make_leaf(id, lf->count);
                next_index += lf->count;
                continue;
            }
            axis = (int)n->kind;
            split = n->split;
            kids[0] = (KdRef){ref.owner, n->a};
            kids[1] = (KdRef){ref.owner, n->b};
        }
        uint32_t c = next_node;
        next_node += 2;
        tree->nodes[out] = kd_make_interior(axis, split, c);
        stack[sp].ref = kids[1];
        stack[sp++].out = c + 1;
        stack[sp].ref = kids[0];
        stack[sp++].out = c;
    }
    tree->node_count = next_node;
    tree->leaf_count = next_leaf;
    tree->index_count = next_index;
    rt_kd_mark_empty(tree);
    return RT_OK;
}

uint32_t rt_kd_marks_missing(const RtKdTree *tree)
{
    uint32_t missing = 0;
    for (uint32_t i = 0; i < tree->node_count; i++)
        missing += (kd_with_marks(tree->nodes, tree->node_count, i).bits & ~tree->nodes[i].bits) != 0;
    return missing;
}

void rt_kd_mark_empty(RtKdTree *tree)
{
    /* in place: a node's marks change none of what its parent reads of it */
    for (uint32_t i = 0; i < tree->node_count; i++) tree->nodes[i] = kd_with_marks(tree->nodes, tree->node_count, i);
}

/* Room for a worker's share of the output, so that it rarely grows (a grown
 * array is copied and its new pages faulted again). Unused reserved pages
 * are never touched and cost nothing. Sponza: 6.7 nodes, 3.4 leaves and 5
 * references per triangle. */
static int reserve_output(KdWorker *w, uint32_t tris, int threads)
{
    uint64_t share = tris / (uint64_t)threads + 1024;
    return grow((void **)&w->nodes, &w->node_cap, 8 * share, sizeof *w->nodes) &&
           grow((void **)&w->leaves, &w->leaf_cap, 4 * share, sizeof *w->leaves) &&
           grow((void **)&w->idx, &w->idx_cap, 6 * share, sizeof *w->idx);
}

/* ---- entry point --------------------------------------------------------------- */

static RtStatus check_params(const RtKdCpuParams *p, RtError *err)
{
    if (!(p->c_trav >= 0.0f) || !isfinite(p->c_trav))
        return rt_fail(err, RT_ERR_ARG, "KD: c_trav must be a finite number >= 0 (got %g)",
                       (double)p->c_trav);
    if (!(p->c_isect > 0.0f) || !isfinite(p->c_isect))
        return rt_fail(err, RT_ERR_ARG, "KD: c_isect must be a finite number > 0 (got %g)",
                       (double)p->c_isect);
    if (!(p->empty_bonus >= 0.0f && p->empty_bonus < 1.0f))
        return rt_fail(err, RT_ERR_ARG, "KD: empty_bonus must be in [0, 1) (got %g)",
                       (double)p->empty_bonus);
    if (p->max_depth < 0 || p->max_depth > RT_KD_MAX_DEPTH)
        return rt_fail(err, RT_ERR_ARG, "KD: max_depth must be in [0, %d] (got %d)",
                       RT_KD_MAX_DEPTH, p->max_depth);
    if (p->max_leaf < 1)
        return rt_fail(err, RT_ERR_ARG, "KD: max_leaf must be >= 1 (got %d)", p->max_leaf);
    if (p->threads < 0)
        return rt_fail(err, RT_ERR_ARG, "KD: threads must be >= 0 (got %d)", p->threads);
    return RT_OK;
}

RtStatus rt_kd_build_cpu(const RtKdCpuParams *params, const RtTriArrays *tris, RtKdTree *tree,
                         RtKdStats *stats, RtError *err)
{
    double t0 = rt_now_ms();
    RtKdCpuParams p = params ? *params : rt_kd_cpu_params_default();
    RtStatus st = check_params(&p, err);
    if (st != RT_OK) return st;
    if (!tris || !tree || (tris->count && !tris->verts))
        return rt_fail(err, RT_ERR_ARG, "KD: no triangle arrays or no tree to build into");
    if (tris->count > RT_KD_EV_ID_MASK)
        return rt_fail(err, RT_ERR_ARG, "KD: %u triangles; the tree holds at most %u",
                       tris->count, RT_KD_EV_ID_MASK);

    int threads = p.threads > 0 ? p.threads : rt_thread_count();
    if (threads > 64) threads = 64;

    KdBuilder b;
    memset(&b, 0, sizeof b);
    b.tris = tris;
    b.c_trav = p.c_trav;
    b.c_isect = p.c_isect;
    b.lambda = 1.0 - p.empty_bonus;
    b.max_leaf = (uint32_t)p.max_leaf;

    KdTask root;
    uint32_t valid = 0;
    st = root_set(tris, threads, &root.set, &root.mem, &valid);
    if (st != RT_OK) {
        free(root.mem);
        return rt_fail(err, st, "KD: out of memory for %u triangles' events", tris->count);
    }
    /* Planes closer than this to a face of their cell are no candidates
     * (the faces themselves still are, for planar triangles). */
    double extent = 0.0;
    for (int a = 0; a < 3 && valid; a++)
        extent = fmax(extent, (double)v3_get(root.set.cell.hi, a) - v3_get(root.set.cell.lo, a));
    b.min_gap = RT_KD_MIN_GAP * extent;
    if (!(b.min_gap > 0.0)) b.min_gap = DBL_MIN; /* faces are never interior planes */
    root.parent = -1;
    root.side = 0;
    /* pbrt's depth rule, 8 + 1.3 log2(N). */
    b.max_depth = rt_kd_max_depth(p.max_depth, valid);
    /* One thread builds the whole tree as one subtree; several cut the top
     * into tasks of at most N / (threads * 16) triangles. */
    b.task_min = valid / ((uint32_t)threads * KD_TASKS_PER_THREAD);
    if (b.task_min < KD_TASK_MIN_TRIS) b.task_min = KD_TASK_MIN_TRIS;

    KdWorker *ws = calloc((size_t)threads, sizeof *ws);
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    int ok = ws && th;
    for (int i = 0; ok && i < threads; i++) {
        ws[i].b = &b;
        ws[i].id = i;
        ws[i].arena.cur = -1;
        ws[i].side = malloc(tris->count + 1);
        ok = ws[i].side && reserve_output(&ws[i], valid, threads);
    }
    if (ok) {
        pthread_mutex_init(&b.mu, NULL);
        pthread_cond_init(&b.cv, NULL);
        ok = push_task(&b, root);
        if (ok) {
            int started[64] = {0};
            for (int i = 1; i < threads; i++)
                started[i] = pthread_create(&th[i], NULL, worker_main, &ws[i]) == 0;
            worker_main(&ws[0]);
            for (int i = 1; i < threads; i++)
                if (started[i]) pthread_join(th[i], NULL);
        } else {
            free(root.mem);
        }
        pthread_cond_destroy(&b.cv);
        pthread_mutex_destroy(&b.mu);
    } else {
        free(root.mem);
    }
    if (ok && b.failed) ok = 0;
    if (ok) {
        st = lay_out(&b, ws, threads, tree, err);
        tree->bounds = root.set.cell;
        tree->d_bounds = NULL;
    } else {
        st = rt_fail(err, RT_ERR_OOM, "KD: out of memory while building over %u triangles",
                     tris->count);
    }
    for (int i = 0; ws && i < threads; i++) {
        free(ws[i].side);
        free(ws[i].nodes);
        free(ws[i].leaves);
        free(ws[i].idx);
        free(ws[i].cand);
        free(ws[i].sbox);
        free(ws[i].stmp);
        arena_free(&ws[i].arena);
    }
    free(ws);
    free(th);
    free(b.queue);
    free(b.top);
    if (st != RT_OK) return st;

    if (stats) {
        memset(stats, 0, sizeof *stats);
        rt_kd_tree_stats(tree, p.c_trav, p.c_isect, stats);
        stats->triangles = tris->count;
        stats->degenerate = tris->count - valid;
        stats->build_ms = rt_now_ms() - t0;
    }
    return RT_OK;
}

/* Frees what rt_kd_build_cpu (or rt_kd_gpu_download) allocated. */
void rt_kd_tree_free(RtKdTree *tree)
{
    if (!tree) return;
    free(tree->nodes);
    free(tree->leaves);
    free(tree->leaf_boxes);
    free(tree->tri_index);
    memset(tree, 0, sizeof *tree);
}

int rt_kd_tree_same(const RtKdTree *a, const RtKdTree *b)
{
    return a->node_count == b->node_count && a->leaf_count == b->leaf_count && a->index_count == b->index_count &&
           !memcmp(a->nodes, b->nodes, a->node_count * sizeof *a->nodes) &&
           !memcmp(a->leaves, b->leaves, a->leaf_count * sizeof *a->leaves) &&
           !memcmp(a->leaf_boxes, b->leaf_boxes, a->leaf_count * sizeof *a->leaf_boxes) &&
           !memcmp(a->tri_index, b->tri_index, a->index_count * sizeof *a->tri_index) &&
           !memcmp(&a->bounds, &b->bounds, sizeof a->bounds);
}
