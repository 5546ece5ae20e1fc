/* variants.c — the registry's rows (variants.h) and the code that reads and
 * writes them. */
#include "app/variants.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- named values ------------------------------------------------------------- */

static const RtVariantValue kStructures[] = {
    {"kd", RT_STRUCT_KD, "kd-tree: SAH (CPU oracle), Zhou et al. 2008 / Chang et al. (GPU)"},
    {"lbvh", RT_STRUCT_LBVH, "BVH: Karras 2012's LBVH with SAH leaf collapse (the same tree on both backends)"},
    {"bvh", RT_STRUCT_BVH, "BVH: H-PLOC (Benthin et al. 2024), clustered in warps, the LBVH's collapse (the same "
                           "tree on both backends)"},
    {"auto", RT_STRUCT_AUTO, "each frame the one of kd, lbvh and bvh whose build + trace measured shortest (one "
                             "probed again every 120 frames or when the view changes; switches only for a 10 % "
                             "gain)"},
    {NULL, 0, NULL},
};
static const RtVariantValue kOnOff[] = {
    {"on", 1, "enabled"},
    {"off", 0, "disabled"},
    {NULL, 0, NULL},
};
static const RtVariantValue kOffOn[] = {
    {"off", 0, "disabled"},
    {"on", 1, "enabled"},
    {NULL, 0, NULL},
};
static const RtVariantValue kLeafRows[] = {
    {"auto", RT_BVH_LEAF_ROWS_AUTO, "copied where the frame has at least 3 pixels a triangle (bvh_layout.h)"},
    {"on", RT_BVH_LEAF_ROWS_ON, "copied every build: the walk tests a leaf's triangles without loading their ids"},
    {"off", RT_BVH_LEAF_ROWS_OFF, "not copied: the walk loads each triangle's id, then the scene's rows"},
    {NULL, 0, NULL},
};
static const RtVariantValue kBuilder[] = {
    {"chang", RT_KD_GPU_BUILDER_CHANG, "Zhou et al. 2008's large/small-node pipeline with Chang et al.'s optimisations"},
    {"exact", RT_KD_GPU_BUILDER_EXACT, "Kolodzey 2014: exact SAH over every event on every level, events sorted once"},
    {NULL, 0, NULL},
};
/* Chang et al.'s Table 1: each row adds one step to the one above. */
static const RtVariantValue kLadder[] = {
    {"Original", 0, "Zhou et al.: Impl. I (flags + scans), segmented box reduction, shared-memory scans/reductions, SWAR bit count"},
    {"[A]", 1, "+ triangle sorting by two atomicAdd per block (Impl. II)"},
    {"[A]-[B]", 2, "+ intra-block scans by ballot/popc/shfl"},
    {"[A]-[C]", 3, "+ node boxes by 6 atomics per chunk"},
    {"[A]-[D]", 4, "+ intra-block reductions by warp shuffles"},
    {"All", 5, "+ small-stage bit counting by __popc (Chang et al.'s fastest)"},
    {NULL, 0, NULL},
};
/* SAH cost presets C_trav / C_i, value = index into kCostPresets. */
static const struct { float c_trav, c_isect; } kCostPresets[] = {{1.0f, 0.5f}, {1.0f, 1.5f}, {1.0f, 1.0f}, {1.0f, 4.0f}};
static const RtVariantValue kCosts[] = {
    {"1/0.5", 0, "C_trav 1, C_i 0.5 (the default, kd_sah.h: bigger leaves, fewer references)"},
    {"1/1.5", 1, "C_trav 1, C_i 1.5 (near Wald and Havran's ratio: smaller leaves)"},
    {"1/1", 2, "C_trav 1, C_i 1"},
    {"1/4", 3, "C_trav 1, C_i 4 (intersection dear: the smallest leaves)"},
    {NULL, 0, NULL},
};
static const RtVariantValue kEmptyCut[] = {
    {"15%", 15, "cut empty space above 15 % of the node's extent"},
    {"25%", 25, "Zhou et al.'s C_e"},
    {"35%", 35, "Hoedt's recommendation"},
    {NULL, 0, NULL},
};
static const RtVariantValue kBox[] = {
    {"inclusion", RT_KD_GPU_BOX_INCLUSION, "a straddling triangle's AABB decides: fast, loose refs (Hoedt's BI)"},
    {"clipping", RT_KD_GPU_CLIP, "a straddler is clipped at the split and keeps the clipped box (Zhou)"},
    {NULL, 0, NULL},
};
static const RtVariantValue kSmall[] = {
    {"none", RT_KD_GPU_SMALL_NONE, "leaves straight from the large-node stage (Hoedt's no lower tree)"},
    {"sah", RT_KD_GPU_SMALL_SAH, "SAH with cell areas over the AABB-face candidates (Zhou)"},
    {"ssah", RT_KD_GPU_SMALL_SSAH, "Hoedt's simplified SAH: C_trav + C_i (nl^2 + nr^2) / n"},
    {NULL, 0, NULL},
};
static const RtVariantValue kLeaf[] = {
    {"32", 32, "a node of at most 32 triangles is small (32-bit masks)"},
    {"64", 64, "a node of at most 64 triangles is small (64-bit masks)"},
    {NULL, 0, NULL},
};
static const RtVariantValue kWays[] = {
    {"2", 2, "Zhou et al.'s binary split per level"},
    {"4", 4, "both halves split again in the same level (half the levels; needs [A] and [C])"},
    {NULL, 0, NULL},
};
static const RtVariantValue kFlow[] = {
    {"barrier", 0, "a grid barrier between large levels (Zhou's level by level)"},
    {"dataflow", 1, "a node's chunks start as soon as it is routed"},
    {"auto", 2, "dataflow below 2^22 triangles"},
    {NULL, 0, NULL},
};
static const RtVariantValue kTraversal[] = {
    {"restart", RT_TRAV_RESTART, "kd-restart (Foley and Sugerman 2005): every leaf by a descent from the root"},
    {"shortstack", RT_TRAV_SHORT_STACK, "circular short stack, kd-restart on underflow (Horn et al. 2007)"},
    {"stack", RT_TRAV_STACK, "a full stack, one entry per level (Wald's front-to-back walk)"},
    {NULL, 0, NULL},
};
static const RtVariantValue kStack[] = {
    {"1", 1, "one entry"},
    {"2", 2, "two entries"},
    {"4", 4, "four entries (Hoedt, Horn et al.)"},
    {"8", 8, "eight entries (measured fastest)"},
    {"16", 16, "sixteen entries (the most)"},
    {NULL, 0, NULL},
};
static const RtVariantValue kPacket[] = {
    {"off", RT_PACKET_OFF, "every ray traverses on its own"},
    {"warp", RT_PACKET_WARP, "a warp traverses as one packet with one shared stack, each ray its own interval"},
    {NULL, 0, NULL},
};
static const RtVariantValue kRayMap[] = {
    {"rows", RT_RAYMAP_ROWS, "a warp traces 32 consecutive pixels of a row"},
    {"tiles", RT_RAYMAP_TILES, "a warp traces a 4x8 pixel tile (Hoedt 2011 Alg. 22)"},
    {NULL, 0, NULL},
};
static const RtVariantValue kIsect[] = {
    {"woop", RT_ISECT_WOOP, "Woop 2004: the ray in each triangle's unit-triangle space (3 precomputed rows)"},
    {"mt", RT_ISECT_MT, "Moller-Trumbore 1997 on the raw vertices"},
    {NULL, 0, NULL},
};
/* The viewer cycles 0..3; --bounces and bounces= accept up to 64. */
static const RtVariantValue kBounces[] = {
    {"0", 0, "no mirror reflections"},
    {"1", 1, "one bounce"},
    {"2", 2, "two bounces"},
    {"3", 3, "three bounces"},
    {NULL, 0, NULL},
};

/* The viewer cycles off/on; --trace ao=N takes 0..RT_SHADE_AO_MAX_RAYS rays. */
static const RtVariantValue kAo[] = {
    {"off", 0, "ambient light everywhere alike"},
    {"on", RT_SHADE_AO_RAYS_ON, "ambient light times the open share of 2 rays per surface and frame"},
    {NULL, 0, NULL},
};
_Static_assert(RT_SHADE_AO_RAYS_ON == 2, "kAo's description counts the rays");
static const RtVariantValue kTonemap[] = {
    {"clamp", RT_TONEMAP_CLAMP, "clamped to [0, 1]: the scene's colours as authored"},
    {"aces", RT_TONEMAP_ACES, "ACES filmic curve (Narkowicz 2015): highlights roll off"},
    {NULL, 0, NULL},
};
static const RtVariantValue kTexFilter[] = {
    {"trilinear", RT_TEX_TRILINEAR, "mip levels picked by a ray cone's footprint (Akenine-Moller et al. 2019)"},
    {"bilinear", RT_TEX_BILINEAR, "the full-resolution texture at any distance (aliases when minified)"},
    {NULL, 0, NULL},
};

/* The viewer cycles these; --photons N takes any count up to 2^26. */
static const RtVariantValue kPhotons[] = {
    {"off", 0, "no photon mapping"},
    {"256K", 1 << 18, "262,144 photons per frame"},
    {"1M", 1 << 20, "1,048,576 photons per frame"},
    {NULL, 0, NULL},
};

/* ---- the rows ------------------------------------------------------------------ */

#define BUILD(f) offsetof(RtPipelineParams, build.f)
#define TRACE(f) offsetof(RtPipelineParams, trace.f)

/* The registry reads enum fields as int. */
_Static_assert(sizeof(RtKdGpuAssoc) == sizeof(int), "enum fields are read as int");
_Static_assert(sizeof(RtKdGpuSmallMode) == sizeof(int), "enum fields are read as int");
_Static_assert(sizeof(RtKdGpuBuilder) == sizeof(int), "enum fields are read as int");

const RtVariant rt_variants[RT_VAR_COUNT] = {
    [RT_VAR_STRUCTURE] = {"structure", "structure", RT_SCOPE_BUILD, RT_VK_INT, offsetof(RtPipelineParams, structure), 1,
                          0, RT_STRUCT_COUNT - 1, kStructures, 'X', 0, "the acceleration structure built and traced every frame"},
    [RT_VAR_BVH_LEAF] = {"bvhleaf", "BVH leaf", RT_SCOPE_BUILD, RT_VK_INT, offsetof(RtPipelineParams, lbvh.max_leaf), 1, 1,
                         RT_BVH_MAX_LEAF, NULL, 0, 0, "most triangles the LBVH's SAH collapse puts in one leaf"},
    [RT_VAR_BVH_CI] = {"bvhci", "BVH C_i", RT_SCOPE_BUILD, RT_VK_FLOAT, offsetof(RtPipelineParams, lbvh.c_isect), 1, 0.001,
                       1000, NULL, 0, 0, "SAH cost per triangle of the LBVH's leaf collapse (C_trav 1)"},
    [RT_VAR_HPLOC_RADIUS] = {"hplocradius", "H-PLOC radius", RT_SCOPE_BUILD, RT_VK_INT, offsetof(RtPipelineParams, hploc.radius),
                             1, 1, RT_HPLOC_MAX_RADIUS, NULL, 0, 0,
                             "PLOC search radius of the bvh structure: neighbours either side in Morton order"},
    [RT_VAR_HPLOC_THRESHOLD] = {"hplocthreshold", "H-PLOC threshold", RT_SCOPE_BUILD, RT_VK_INT,
                                offsetof(RtPipelineParams, hploc.threshold), 1, 1, RT_HPLOC_MAX_THRESHOLD, NULL, 0, 0,
                                "clusters a radix node of the bvh structure keeps (warp / 2 at most)"},
    [RT_VAR_HPLOC_LEAF] = {"hplocleaf", "H-PLOC leaf", RT_SCOPE_BUILD, RT_VK_INT, offsetof(RtPipelineParams, hploc.max_leaf),
                           1, 1, RT_BVH_MAX_LEAF, NULL, 0, 0, "most triangles the bvh structure's SAH collapse puts in one leaf"},
    [RT_VAR_HPLOC_CI] = {"hplocci", "H-PLOC C_i", RT_SCOPE_BUILD, RT_VK_FLOAT, offsetof(RtPipelineParams, hploc.c_isect), 1,
                         0.001, 1000, NULL, 0, 0, "SAH cost per triangle of the bvh structure's leaf collapse (C_trav 1)"},
    [RT_VAR_BVH_LEAF_ROWS] = {"leafrows", "BVH leaf rows", RT_SCOPE_BUILD, RT_VK_INT,
                              offsetof(RtPipelineParams, bvh_leaf_rows), 1, 0, 2, kLeafRows, 0, 1,
                              "whether the GPU BVH builds copy the leaf triangles' Woop rows in leaf order"},
    [RT_VAR_BVH_TOP] = {"bvhtop", "BVH top", RT_SCOPE_BUILD, RT_VK_INT, offsetof(RtPipelineParams, bvh_top.depth), 1, 0,
                        RT_SPLIT_TOP_MAX_DEPTH, NULL, 0, 0,
                        "levels of spatial splits above the bvh structure's H-PLOC (0: none; split_top.h)"},
    [RT_VAR_BUILDER] = {"builder", "kd builder", RT_SCOPE_BUILD, RT_VK_INT, BUILD(builder), 1, 0, 1, kBuilder, '\'', 1,
                        "which GPU builder makes the kd-tree"},
    [RT_VAR_EXACT_LEAF] = {"exactleaf", "exact leaf", RT_SCOPE_BUILD, RT_VK_INT, BUILD(exact_leaf), 1, 1, 1024, NULL, 0, 1,
                           "exact builder: a node of at most this many triangles is a leaf (1: only the SAH ends a "
                           "branch, as the CPU oracle; Kolodzey: 63)"},
    [RT_VAR_EXACT_SPLIT_CLIP] = {"exactclip", "exact clip", RT_SCOPE_BUILD, RT_VK_INT, BUILD(exact_clip), 1, 0, 1, NULL,
                                 0, 1, "exact builder: straddlers clipped exactly and dropped from a child they miss "
                                 "(1) or Kolodzey's split-axis clipping only (0)"},
    [RT_VAR_LADDER] = {"ladder", "Chang's ladder", RT_SCOPE_BUILD, RT_VK_LADDER, offsetof(RtPipelineParams, build), 1, 0, 5,
                       kLadder, '1', 1, "Chang et al.'s optimisation steps [A]-[E], cumulatively"},
    [RT_VAR_CHANG_A] = {"a", "[A]", RT_SCOPE_BUILD, RT_VK_INT, BUILD(chang_a), 1, 0, 1, NULL, 0, 1,
                        "triangle sorting by per-block atomics (Impl. II) instead of scans"},
    [RT_VAR_CHANG_B] = {"b", "[B]", RT_SCOPE_BUILD, RT_VK_INT, BUILD(chang_b), 1, 0, 1, NULL, 0, 1,
                        "intra-block scans by ballot/popc/shfl"},
    [RT_VAR_CHANG_C] = {"c", "[C]", RT_SCOPE_BUILD, RT_VK_INT, BUILD(chang_c), 1, 0, 1, NULL, 0, 1,
                        "node boxes by 6 atomics per chunk"},
    [RT_VAR_CHANG_D] = {"d", "[D]", RT_SCOPE_BUILD, RT_VK_INT, BUILD(chang_d), 1, 0, 1, NULL, 0, 1,
                        "intra-block reductions by warp shuffles"},
    [RT_VAR_CHANG_E] = {"e", "[E]", RT_SCOPE_BUILD, RT_VK_INT, BUILD(chang_e), 1, 0, 1, NULL, 0, 1,
                        "small-node bit counting by __popc"},
    [RT_VAR_SAH_COSTS] = {"costs", "C_trav/C_i", RT_SCOPE_BUILD, RT_VK_COSTS, offsetof(RtPipelineParams, build), 1, 0, 3,
                          kCosts, '2', 1, "SAH cost presets of the GPU builder"},
    [RT_VAR_C_TRAV] = {"ctrav", "C_trav", RT_SCOPE_BUILD, RT_VK_FLOAT, BUILD(c_trav), 1, 0.001, 1000, NULL, 0, 1,
                       "SAH traversal cost"},
    [RT_VAR_C_ISECT] = {"ci", "C_i", RT_SCOPE_BUILD, RT_VK_FLOAT, BUILD(c_isect), 1, 0.001, 1000, NULL, 0, 1,
                        "SAH intersection cost per triangle"},
    [RT_VAR_EMPTY_SPACE] = {"ce", "C_e", RT_SCOPE_BUILD, RT_VK_FLOAT, BUILD(empty_cut), 100, 1, 99, kEmptyCut, '3', 1,
                            "cut empty space off a large node above this percentage of its extent", .numeric = 1},
    [RT_VAR_BOX] = {"box", "box", RT_SCOPE_BUILD, RT_VK_INT, BUILD(assoc), 1, 0, 1, kBox, '4', 1,
                    "how triangles that straddle a large-node split are associated"},
    [RT_VAR_SMALL_NODE] = {"small", "small nodes", RT_SCOPE_BUILD, RT_VK_INT, BUILD(small_mode), 1, 0, 2, kSmall, '5', 1,
                           "what the small-node stage does with the large stage's small nodes"},
    [RT_VAR_LEAF_SIZE] = {"leaf", "small threshold", RT_SCOPE_BUILD, RT_VK_UINT, BUILD(small_threshold), 1, 32, 64, kLeaf,
                          '6', 1, "a node of at most this many triangles goes to the small-node stage"},
    [RT_VAR_LARGE_WAYS] = {"ways", "large split", RT_SCOPE_BUILD, RT_VK_INT, BUILD(large_ways), 1, 2, 4, kWays, 'K', 1,
                           "children per large-stage split"},
    [RT_VAR_SMALL_FUSED] = {"fused", "small launch", RT_SCOPE_BUILD, RT_VK_INT, BUILD(small_fused), 1, 0, 1, NULL, 0, 1,
                            "small stage as one launch (1) or Zhou's launch per level (0)"},
    [RT_VAR_EXACT_CLIP] = {"exact", "exact small roots", RT_SCOPE_BUILD, RT_VK_INT, BUILD(small_exact_clip), 1, 0, 1, NULL,
                           0, 1, "small roots' triangles clipped exactly to the root cell (perfect splits)"},
    [RT_VAR_DATAFLOW] = {"flow", "large schedule", RT_SCOPE_BUILD, RT_VK_INT, BUILD(large_dataflow), 1, 0, 2, kFlow, 0, 1,
                         "persistent large stage: barrier per level, dataflow, or auto"},
    [RT_VAR_CHUNK] = {"chunk", "chunk", RT_SCOPE_BUILD, RT_VK_UINT, BUILD(large_chunk), 1, 0, 2048, NULL, 0, 1,
                      "refs per large-stage chunk: 0 (auto) or a multiple of 128 (a block sorts 128 at a time)",
                      .step = 128},
    [RT_VAR_MAX_DEPTH] = {"depth", "max depth", RT_SCOPE_BUILD, RT_VK_INT, BUILD(max_depth), 1, 0, RT_KD_MAX_DEPTH, NULL, 0, 1,
                          "deepest level of the GPU tree, 0 = by the triangle count"},
    [RT_VAR_TIMED] = {"timed", "timed", RT_SCOPE_BUILD, RT_VK_INT, BUILD(timed), 1, 0, 1, NULL, 0, 1,
                      "CUDA events around every kernel (per-kernel times in the stats)"},
    [RT_VAR_TRAVERSAL] = {"traversal", "traversal", RT_SCOPE_TRACE, RT_VK_INT, TRACE(traversal), 1, 0, RT_TRAV_STACK, kTraversal, '7', 1,
                          "how a ray walks the kd-tree"},
    [RT_VAR_STACK_SIZE] = {"stack", "stack", RT_SCOPE_TRACE, RT_VK_INT, TRACE(stack_size), 1, 1, RT_TRACE_STACK_MAX, kStack,
                           '8', 1, "short-stack entries", .numeric = 1},
    [RT_VAR_PACKETS] = {"packet", "packets", RT_SCOPE_TRACE, RT_VK_INT, TRACE(packet), 1, 0, 1, kPacket, '9', 1,
                        "Horn et al.'s packet traversal"},
    [RT_VAR_LEAF_SKIP] = {"skip", "leaf skipping", RT_SCOPE_TRACE, RT_VK_INT, TRACE(leaf_skip), 1, 0, 1, kOffOn, '0', 1,
                          "the ray against a leaf's box before its triangles"},
    [RT_VAR_RAY_MAP] = {"map", "ray map", RT_SCOPE_TRACE, RT_VK_INT, TRACE(ray_map), 1, 0, 1, kRayMap, 'Y', 1,
                        "which pixels a warp traces"},
    [RT_VAR_ISECT] = {"isect", "intersection", RT_SCOPE_TRACE, RT_VK_INT, TRACE(isect), 1, 0, 1, kIsect, 'I', 0,
                      "the ray/triangle test"},
    [RT_VAR_SHADOWS] = {"shadows", "shadows", RT_SCOPE_TRACE, RT_VK_INT, TRACE(shade.shadows), 1, 0, 1, kOnOff, 'L', 0,
                        "a shadow ray per light"},
    [RT_VAR_BOUNCES] = {"bounces", "reflections", RT_SCOPE_TRACE, RT_VK_INT, TRACE(shade.max_bounces), 1, 0, 64, kBounces, 'B', 0,
                        "mirror / refraction depth", .numeric = 1},
    [RT_VAR_TEXTURES] = {"textures", "textures", RT_SCOPE_TRACE, RT_VK_INT, TRACE(shade.textures), 1, 0, 1, kOnOff, 'T', 0,
                         "map_Kd colours and map_d cut-outs"},
    [RT_VAR_TEX_FILTER] = {"filter", "texture filter", RT_SCOPE_TRACE, RT_VK_INT, TRACE(shade.tex_filter), 1, 0, 1,
                           kTexFilter, '/', 0, "how map_Kd is filtered with distance"},
    [RT_VAR_REFRACTION] = {"refraction", "refraction", RT_SCOPE_TRACE, RT_VK_INT, TRACE(shade.refraction), 1, 0, 1, kOnOff, 'F',
                           0, "materials with d < 1 refract (ni)"},
    [RT_VAR_HEATMAP] = {"heatmap", "heatmap", RT_SCOPE_TRACE, RT_VK_INT, TRACE(shade.heatmap), 1, 0, 1, kOffOn, 'M', 0,
                        "colour = tree nodes visited by the primary ray"},
    [RT_VAR_AO] = {"ao", "ambient occlusion", RT_SCOPE_TRACE, RT_VK_INT, TRACE(shade.ao_rays), 1, 0, RT_SHADE_AO_MAX_RAYS,
                   kAo, ';', 0, "ambient light times the share of cosine-weighted rays per surface and frame "
                   "(accumulated over frames) that leave within aodist", .numeric = 1},
    [RT_VAR_AO_DISTANCE] = {"aodist", "AO distance", RT_SCOPE_TRACE, RT_VK_FLOAT, TRACE(shade.ao_distance), 1, 0.0001, 1,
                            NULL, 0, 0, "how far an ambient-occlusion ray looks, a fraction of the scene's diagonal"},
    [RT_VAR_PHOTONS] = {"photons", "photons", RT_SCOPE_TRACE, RT_VK_UINT, offsetof(RtPipelineParams, photons.count), 1,
                        0, 1 << 26, kPhotons, 'U', 0,
                        "photons emitted per frame for caustics and indirect light (photon mapping), 0 = off",
                        .numeric = 1},
    [RT_VAR_TONEMAP] = {"tonemap", "tone mapping", RT_SCOPE_TRACE, RT_VK_INT, TRACE(shade.tonemap), 1, 0, 1, kTonemap, 'Z', 0,
                        "how linear colour becomes display values"},
    [RT_VAR_SKY] = {"sky", "sky", RT_SCOPE_TRACE, RT_VK_INT, TRACE(shade.sky), 1, 0, 1, kOnOff, 0, 0,
                    "rays leaving the scene see a sky gradient (on) or the flat background (off); an environment map wins"},
    [RT_VAR_EMITTERS] = {"emitters", "emissive lights", RT_SCOPE_TRACE, RT_VK_INT, TRACE(shade.emitters), 1, 0, 1, kOffOn,
                         0, 0, "emissive triangles (MTL Ke, glTF emissive) light other surfaces, one sampled per "
                         "surface and sample"},
    [RT_VAR_EXPOSURE] = {"exposure", "exposure", RT_SCOPE_TRACE, RT_VK_FLOAT, TRACE(shade.exposure), 1, -16, 16, NULL, 0, 0,
                         "stops of exposure before tone mapping (the window's , and . keys: -/+ 0.5)"},
    [RT_VAR_PHOTON_K] = {"photonk", "photons/estimate", RT_SCOPE_TRACE, RT_VK_UINT, offsetof(RtPipelineParams, photons.k),
                         1, 1, RT_KDP_MAX_KNN, NULL, 0, 0, "nearest photons per radiance estimate"},
};

/* ---- reading and writing a row ------------------------------------------------- */

const char *rt_variant_unavailable(RtVariantId id)
{
    if ((unsigned)id >= RT_VAR_COUNT) return "no such variant";
#if RT_HAVE_CUDA
    return NULL;
#else
    return rt_variants[id].gpu_only ? "this build has no CUDA (the GPU builder and tracer are not compiled in)" : NULL;
#endif
}

int rt_variant_find(RtVariantScope scope, const char *key)
{
    for (int i = 0; i < RT_VAR_COUNT && key; i++)
        if (rt_variants[i].scope == scope && !strcmp(rt_variants[i].key, key)) return i;
    return -1;
}

static int ladder_row(const RtKdGpuParams *p)
{
    for (int k = 0; k <= 5; k++) {
        RtKdGpuParams q = *p;
        rt_kd_gpu_params_ladder(&q, k);
        if (q.chang_a == p->chang_a && q.chang_b == p->chang_b && q.chang_c == p->chang_c &&
            q.chang_d == p->chang_d && q.chang_e == p->chang_e)
            return k;
    }
    return -1;
}

static int cost_preset(const RtKdGpuParams *p)
{
    for (int k = 0; k < (int)(sizeof kCostPresets / sizeof kCostPresets[0]); k++)
        if (kCostPresets[k].c_trav == p->c_trav && kCostPresets[k].c_isect == p->c_isect) return k;
    return -1;
}

double rt_variant_get(const RtPipelineParams *pp, RtVariantId id)
{
    if ((unsigned)id >= RT_VAR_COUNT) return 0;
    const RtVariant *v = &rt_variants[id];
    const char *f = (const char *)pp + v->offset;
    switch (v->kind) {
    case RT_VK_INT: return *(const int *)f;
    case RT_VK_UINT: return *(const uint32_t *)f;
    /* C_e = 0.35f reads back as 35, not 34.999998 */
    case RT_VK_FLOAT: return v->scale == 1 ? (double)*(const float *)f : round(*(const float *)f * v->scale * 1e4) / 1e4;
    case RT_VK_LADDER: return ladder_row((const RtKdGpuParams *)f);
    case RT_VK_COSTS: return cost_preset((const RtKdGpuParams *)f);
    }
    return 0;
}

static void set_value(RtPipelineParams *pp, RtVariantId id, double value)
{
    const RtVariant *v = &rt_variants[id];
    char *f = (char *)pp + v->offset;
    switch (v->kind) {
    case RT_VK_INT: *(int *)f = (int)value; break;
    case RT_VK_UINT: *(uint32_t *)f = (uint32_t)value; break;
    case RT_VK_FLOAT: *(float *)f = (float)(value / v->scale); break;
    case RT_VK_LADDER: rt_kd_gpu_params_ladder((RtKdGpuParams *)f, (int)value); break;
    case RT_VK_COSTS:
        ((RtKdGpuParams *)f)->c_trav = kCostPresets[(int)value].c_trav;
        ((RtKdGpuParams *)f)->c_isect = kCostPresets[(int)value].c_isect;
        break;
    }
}

const char *rt_variant_value_name(RtVariantId id, double value)
{
    if ((unsigned)id >= RT_VAR_COUNT || !rt_variants[id].values) return NULL;
    for (const RtVariantValue *t = rt_variants[id].values; t->name; t++)
        if (t->value == value) return t->name;
    return NULL;
}

void rt_variant_format(const RtPipelineParams *pp, RtVariantId id, char *buf, size_t n)
{
    double value = rt_variant_get(pp, id);
    const char *name = rt_variant_value_name(id, value);
    const RtVariant *v = &rt_variants[id];
    if (name) snprintf(buf, n, "%s", name);
    else if (v->kind == RT_VK_LADDER || v->kind == RT_VK_COSTS) snprintf(buf, n, "custom");
    else snprintf(buf, n, "%g", value);
}

/* Numbers beyond the named values are accepted (in lo..hi). */
static int takes_numbers(const RtVariant *v) { return !v->values || v->numeric; }

/* "a|b|c", "lo..hi" or both, for error messages and --help. */
static void valid_values(const RtVariant *v, char *buf, size_t n)
{
    buf[0] = 0;
    for (const RtVariantValue *t = v->values; t && t->name; t++) {
        size_t k = strlen(buf);
        snprintf(buf + k, n - k, "%s%s", k ? "|" : "", t->name);
    }
    if (takes_numbers(v)) {
        size_t k = strlen(buf);
        snprintf(buf + k, n - k, "%s%g..%g", k ? " or " : "", v->lo, v->hi);
    }
}

RtStatus rt_variant_parse(RtPipelineParams *pp, RtVariantId id, const char *text, const char *opt,
                          RtError *err)
{
    const RtVariant *v = &rt_variants[id];
    for (const RtVariantValue *t = v->values; text && t && t->name; t++)
        if (!strcmp(text, t->name)) {
            set_value(pp, id, t->value);
            return RT_OK;
        }
    char *end = NULL;
    errno = 0;
    double x = text ? strtod(text, &end) : NAN;
    int ok = text && *text && end && !*end && !errno && isfinite(x);
    if (ok && !takes_numbers(v)) ok = rt_variant_value_name(id, x) != NULL; /* a named value's number */
    else if (ok) ok = x >= v->lo && x <= v->hi && (v->kind == RT_VK_FLOAT || x == floor(x));
    if (ok && v->step && fmod(x, v->step) != 0) ok = 0;
    if (!ok) {
        char valid[256], step[48] = "";
        valid_values(v, valid, sizeof valid);
        if (v->step) snprintf(step, sizeof step, " (a multiple of %d)", v->step);
        if (opt) return rt_fail(err, RT_ERR_ARG, "CLI: %s %s: expected %s%s", opt, text ? text : "", valid, step);
        return rt_fail(err, RT_ERR_ARG, "CLI: %s %s=%s: expected %s%s", v->scope == RT_SCOPE_BUILD ? "--build" : "--trace",
                       v->key, text ? text : "", valid, step);
    }
    set_value(pp, id, x);
    return RT_OK;
}

RtStatus rt_variant_parse_list(RtPipelineParams *pp, RtVariantScope scope, const char *list, RtError *err)
{
    const char *opt = scope == RT_SCOPE_BUILD ? "--build" : "--trace";
    char buf[512];
    if (!list || !*list || strlen(list) >= sizeof buf)
        return rt_fail(err, RT_ERR_ARG, "CLI: %s expects key=value[,key=value...], got '%s'", opt,
                       list ? list : "(nothing)");
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq || eq == kv || !eq[1])
            return rt_fail(err, RT_ERR_ARG, "CLI: %s expects key=value, got '%s' in '%s'", opt, kv, list);
        *eq = 0;
        int id = rt_variant_find(scope, kv);
        if (id < 0) {
            char keys[512] = "";
            for (int i = 0; i < RT_VAR_COUNT; i++) {
                if (rt_variants[i].scope != scope) continue;
                size_t n = strlen(keys);
                snprintf(keys + n, sizeof keys - n, "%s%s", n ? ", " : "", rt_variants[i].key);
            }
            return rt_fail(err, RT_ERR_ARG, "CLI: %s: unknown key '%s' (valid: %s; --help describes them)", opt, kv,
                           keys);
        }
        RtStatus st = rt_variant_parse(pp, (RtVariantId)id, eq + 1, NULL, err);
        if (st != RT_OK) return st;
    }
    return RT_OK;
}

RtStatus rt_variant_cycle(RtPipelineParams *pp, RtVariantId id, int dir)
{
    if ((unsigned)id >= RT_VAR_COUNT || rt_variant_unavailable(id) || !rt_variants[id].values)
        return RT_ERR_UNSUPPORTED;
    const RtVariantValue *t = rt_variants[id].values;
    double value = rt_variant_get(pp, id);
    int n = 0, cur = -1;
    for (; t[n].name; n++)
        if (t[n].value == value) cur = n;
    int next = cur < 0 ? (dir > 0 ? 0 : n - 1) : (cur + (dir > 0 ? 1 : n - 1)) % n;
    set_value(pp, id, t[next].value);
    return RT_OK;
}

void rt_variants_usage(FILE *f, RtVariantScope scope)
{
    RtPipelineParams d = rt_pipeline_params_default();
    for (int i = 0; i < RT_VAR_COUNT; i++) {
        const RtVariant *v = &rt_variants[i];
        if (v->scope != scope) continue;
        char valid[256], def[64];
        valid_values(v, valid, sizeof valid);
        rt_variant_format(&d, (RtVariantId)i, def, sizeof def);
        fprintf(f, "      %s=%s (%s)%s: %s\n", v->key, valid, def, v->gpu_only ? " [GPU]" : "", v->description);
    }
}
