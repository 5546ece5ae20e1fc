/* kd_gpu.h — the GPU kd-tree builder: Zhou et al. 2008's large-node and
 * small-node pipeline as implemented by Chang, Seo and Ihm (per-block
 * atomics, warp intrinsics), writing the shared layout of kd_layout.h in
 * device memory. Plain C boundary; the kernels are in kd_large*.cu (a
 * file per large-stage schedule) and kd_small.cu, the per-frame driver in
 * kd_gpu.cu.
 * docs/kd_gpu.md explains the pipeline and every parameter. */
#ifndef RT_KD_GPU_H
#define RT_KD_GPU_H

#include "kd/kd_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct RtKdGpu RtKdGpu;

/* How triangles that straddle a large-node split are associated. */
typedef enum RtKdGpuAssoc {
    RT_KD_GPU_BOX_INCLUSION = 0, /* the triangle's AABB decides (Hoedt's BI): fast, loose refs */
    RT_KD_GPU_CLIP,              /* Zhou: a straddling triangle is clipped to each child's cell and
                                    keeps the clipped part's box (tight; refs that miss are dropped) */
} RtKdGpuAssoc;

/* What the small-node stage does with the large stage's small nodes. */
typedef enum RtKdGpuSmallMode {
    RT_KD_GPU_SMALL_NONE = 0, /* leaves straight from the large stage (Hoedt's "no lower tree") */
    RT_KD_GPU_SMALL_SAH,      /* SAH with cell areas, candidates from triangle AABB faces */
    RT_KD_GPU_SMALL_SSAH,     /* Hoedt's simplified SAH: counts only, C_trav + (nl^2 + nr^2)/n */
} RtKdGpuSmallMode;

/* Which GPU builder makes the tree. */
typedef enum RtKdGpuBuilder {
    RT_KD_GPU_BUILDER_CHANG = 0, /* Zhou et al. 2008's large/small-node pipeline, Chang et al.'s optimisations */
    RT_KD_GPU_BUILDER_EXACT,     /* Kolodzey 2014: exact SAH on every level, events sorted once (kd_exact.cu) */
} RtKdGpuBuilder;

typedef struct RtKdGpuParams {
    RtKdGpuBuilder builder;      /* Chang (the default) or the exact SAH builder; the exact builder
                                    reads only builder, c_trav, c_isect, max_depth, empty_bonus,
                                    exact_leaf, exact_clip and timed */
    /* Chang et al.'s steps; all 1 = "Ours (All)", all 0 = "Original". */
    int chang_a;   /* [A] triangle sorting by per-block atomics (Impl. II) instead of scans (Impl. I) */
    int chang_b;   /* [B] intra-block scans by ballot/popc/shfl instead of shared-memory scans */
    int chang_c;   /* [C] node boxes by 6 atomics per chunk instead of a segmented reduction */
    int chang_d;   /* [D] intra-block reductions by warp shuffles instead of shared memory */
    int chang_e;   /* [E] small-node bit counting by __popc instead of Manku's SWAR count */
    float empty_cut;      /* C_e: cut empty space on a side above this fraction of the extent (0.25) */
    RtKdGpuAssoc assoc;   /* straddling triangles (box inclusion) */
    RtKdGpuSmallMode small_mode; /* SAH */
    uint32_t small_threshold;    /* a node at or below this many triangles is small: 32 or 64 (64) */
    int small_fused;             /* 1: small stage as one launch, a warp per root, nodes in batches (ours);
                                    0: Zhou's level-by-level launches (one host round trip per level) */
    int small_exact_clip;        /* 1: the small stage clips each root's triangles exactly to the
                                    root's cell (Wald and Havran's perfect splits; with either
                                    assoc); 0: it takes the large stage's boxes, which clipping cuts
                                    at every split plane (0: the same SAH within 0.1 %, faster) */
    float c_trav, c_isect;       /* SAH costs, as the CPU oracle's defaults (1.0, 1.5) */
    float empty_bonus;           /* exact builder: the oracle's bonus for cutting off empty space (0.2) */
    int exact_leaf;              /* exact builder: a node of at most this many triangles is a leaf
                                    (1, the oracle's: below that only the SAH ends a branch) */
    int exact_clip;              /* exact builder: 1 = a straddler is clipped exactly against both
                                    children and leaves one it misses (no leaf lists a triangle
                                    outside its cell); 0 = Kolodzey's split-axis clipping only */
    int max_depth;               /* depth guard (triangles sharing a point never fall below the
                                    small threshold): 0 = 16 + 1.3 log2(N); clamped to 2..RT_KD_MAX_DEPTH */
    int timed;                   /* 1: CUDA events around every kernel (per-kernel ms in stats) */
    int large_blocks_per_sm;     /* Impl. II's persistent large stage: resident blocks per
                                    multiprocessor (0 = 8, 6 with 4 ways; capped by the occupancy) */
    int large_dataflow;          /* persistent large stage ([A] and [C]): 1 = a node's chunks start as
                                    soon as it is routed (ours), 0 = a grid barrier between levels
                                    (Zhou's level by level), 2 = auto: dataflow below 2^22
                                    triangles (2) */
    int large_ways;              /* children per large-stage split: 2 (Zhou) or 4 (ours: each half
                                    split again at its own median in the same level; needs [A]
                                    and [C], else 2); 0 = 2 */
    uint32_t large_chunk;        /* refs per large-stage chunk with [A] and [C] (a block sorts
                                    them 128 at a time): a multiple of 128 up to 2048, or 0 =
                                    auto (the triangles over the resident blocks, so the root's
                                    level fills the GPU about once); 128 otherwise */
} RtKdGpuParams;

/* Applies ladder row `steps` (0..5) to p: steps 0 = Original, 5 = All. */
void rt_kd_gpu_params_ladder(RtKdGpuParams *p, int steps);

typedef struct RtKdGpuStageStats {
    const char *name;
    uint32_t launches;
    float ms; /* GPU time from CUDA events (0 unless params.timed) */
} RtKdGpuStageStats;

#define RT_KD_GPU_PROFILE_LEVELS 64

typedef struct RtKdGpuStats {
    double build_ms;       /* host wall time from the start of the build to its finish */
    float gpu_ms;          /* events around the whole build */
    float large_ms, small_ms; /* events around each stage */
    uint32_t launches;     /* kernel launches in this build (CUB's internal ones counted as 1 each call) */
    uint32_t round_trips;  /* device-to-host copies the host waited for inside the build (the
                              synchronous rt_kd_gpu_build counts its final wait; the async
                              pair none: its counters arrive behind the frame) */
    uint32_t large_levels, small_levels;
    uint32_t rebuilds;     /* builds repeated after growing an overflowed buffer */
    uint32_t nodes, leaves, references, triangles, valid_triangles;
    uint64_t device_bytes; /* the builder's device arrays during this build (scratch and the tree) */
    RtKdGpuStageStats kernels[48];
    int kernel_count;
    /* Per large level (the first RT_KD_GPU_PROFILE_LEVELS): active nodes,
     * chunks and, for the persistent stage (Impl. II), GPU microseconds from
     * the level's start to the next one's (%globaltimer; 0 for Impl. I). */
    uint32_t level_nodes[RT_KD_GPU_PROFILE_LEVELS], level_chunks[RT_KD_GPU_PROFILE_LEVELS];
    float level_us[RT_KD_GPU_PROFILE_LEVELS];
} RtKdGpuStats;

RtKdGpuParams rt_kd_gpu_params_default(void);

/* How the builder sizes its buffers (in elements; plain C, kd_gpu_params.c,
 * so the CPU tests check the rules). A build's need with slack: the need
 * and a quarter more (a moving scene's tree changes size from frame to
 * frame, and every overflow costs a build). After an overflow: at least the
 * counters' demand with slack, and at least 1.5x the capacity (a level after
 * the overflowing one, which the build never reached, may ask for more).
 * After a finished build: a capacity more than 1.2x the need with slack
 * comes down to that, any other stays (the band keeps a moving scene's
 * buffers still; its tree would have to shrink by a sixth). All at most
 * RT_KD_MAX_INDEX (rt_kd_gpu_cap_clamp). */
uint32_t rt_kd_gpu_cap_clamp(uint64_t want);
uint32_t rt_kd_gpu_cap_slack(uint64_t need);
uint32_t rt_kd_gpu_cap_grow(uint32_t cap, uint64_t need);
uint32_t rt_kd_gpu_cap_fit(uint32_t cap, uint64_t need);

/* Needs a CUDA device (rt_gpu_create first); RT_ERR_NO_DEVICE without one. */
RtStatus rt_kd_gpu_create(RtKdGpu **out, RtError *err);

/* Builds the tree over tri_count triangles (d_verts: device, 3 float4 per
 * triangle). d_woop (device, may be NULL) marks degenerate triangles as
 * rt_tri_arrays_make does (all-zero rows); without it the builder recomputes
 * rt_woop_rows. d_tree receives device pointers owned by b (valid until the
 * next build or rt_kd_gpu_destroy). stats may be NULL. */
RtStatus rt_kd_gpu_build(RtKdGpu *b, const RtKdGpuParams *p, const RtFloat4 *d_verts,
                         const RtFloat4 *d_woop, uint32_t tri_count, RtKdTree *d_tree,
                         RtKdGpuStats *stats, RtError *err);

/* The same build in two halves, so that no host thread waits for it: the
 * first queues every stage (on the builder's stream, ordered after the
 * caller's work on the default stream and before the caller's later work
 * there) and returns at once. d_tree then holds the device arrays and
 * d_bounds, the device copy of the root cell: enough for the tracer; its
 * counts and `bounds` are filled in by rt_kd_gpu_build_finish, which waits
 * for the build's final counters (call it after the frame's own wait, e.g.
 * after the trace). A build that overflowed a buffer is grown and redone
 * there: *rebuilt (may be NULL) says so, and whatever used the tree (the
 * trace) must be redone. stats may be NULL. */
RtStatus rt_kd_gpu_build_async(RtKdGpu *b, const RtKdGpuParams *p, const RtFloat4 *d_verts,
                               const RtFloat4 *d_woop, uint32_t tri_count, RtKdTree *d_tree,
                               RtError *err);
RtStatus rt_kd_gpu_build_finish(RtKdGpu *b, RtKdTree *d_tree, RtKdGpuStats *stats, int *rebuilt,
                                RtError *err);

/* Copies a device tree to host arrays (free with rt_kd_tree_free). */
RtStatus rt_kd_gpu_download(const RtKdTree *d_tree, RtKdTree *h_tree, RtError *err);

/* Host <-> device helpers for tests and tools: a device copy of n float4. */
RtStatus rt_kd_gpu_upload_f4(const RtFloat4 *host, size_t n, RtFloat4 **d_out, RtError *err);
void rt_kd_gpu_free(void *d_ptr);

void rt_kd_gpu_destroy(RtKdGpu *b);

#ifdef __cplusplus
}
#endif
#endif
