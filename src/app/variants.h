/* variants.h — the one registry of rtviewer's variants: every setting of the
 * frame a user can choose (builder, tracer, shading) is one row naming a
 * field of RtPipelineParams. The CLI (--build K=V, --trace K=V and the
 * shading flags), the viewer's hotkeys, the HUD, --help and the benchmark's
 * JSON all read these rows; nothing keeps a copy of a value. Defaults are
 * not here: each is written once, next to its field, in the stage's params
 * function (rt_kd_gpu_params_default, rt_trace_params_default, ...).
 *
 * Adding a variant: a field in the stage's params struct with its default,
 * then one row in variants.c (docs/conventions.md walks one through). */
#ifndef RT_VARIANTS_H
#define RT_VARIANTS_H

#include <stddef.h>
#include <stdio.h>

#include "app/pipeline.h"

/* A named value of a variant, e.g. {"clipping", RT_KD_GPU_CLIP, "..."}. */
typedef struct RtVariantValue {
    const char *name;
    int value;
    const char *description;
} RtVariantValue;

typedef enum RtVariantScope {
    RT_SCOPE_BUILD = 0, /* --build KEY=V: the acceleration structure and its builder */
    RT_SCOPE_TRACE      /* --trace KEY=V: traversal and shading */
} RtVariantScope;

/* How a row's value lives in RtPipelineParams. */
typedef enum RtVariantKind {
    RT_VK_INT = 0,  /* an int (or int-sized enum) field: value = field */
    RT_VK_UINT,     /* a uint32_t field */
    RT_VK_FLOAT,    /* a float field = value / scale (C_e is chosen in percent) */
    RT_VK_LADDER,   /* Chang et al.'s steps chang_a..chang_e: value = the ladder row they match */
    RT_VK_COSTS     /* the builder's (c_trav, c_isect): value = the preset they match */
} RtVariantKind;

/* The rows. The ids are stable handles for code that means one row (the
 * HUD's hints, tests); everything else loops over rt_variants. */
typedef enum RtVariantId {
    RT_VAR_STRUCTURE = 0,  /* the acceleration-structure slot */
    RT_VAR_BVH_LEAF, RT_VAR_BVH_CI, /* the LBVH builder (both backends) */
    RT_VAR_HPLOC_RADIUS, RT_VAR_HPLOC_THRESHOLD, RT_VAR_HPLOC_LEAF, RT_VAR_HPLOC_CI, /* the H-PLOC builder (both backends) */
    RT_VAR_BVH_LEAF_ROWS,  /* both GPU BVH builders: the leaf triangles' rows */
    RT_VAR_BVH_TOP,        /* the bvh structure's spatial-split top (both backends) */
    RT_VAR_BUILDER,        /* GPU kd builder: Chang's pipeline or Kolodzey's exact SAH */
    RT_VAR_EXACT_LEAF, RT_VAR_EXACT_SPLIT_CLIP,
    RT_VAR_LADDER,         /* GPU builder: Chang et al.'s ladder */
    RT_VAR_CHANG_A, RT_VAR_CHANG_B, RT_VAR_CHANG_C, RT_VAR_CHANG_D, RT_VAR_CHANG_E,
    RT_VAR_SAH_COSTS, RT_VAR_C_TRAV, RT_VAR_C_ISECT,
    RT_VAR_EMPTY_SPACE,
    RT_VAR_BOX,
    RT_VAR_SMALL_NODE,
    RT_VAR_LEAF_SIZE,
    RT_VAR_LARGE_WAYS,
    RT_VAR_SMALL_FUSED, RT_VAR_EXACT_CLIP, RT_VAR_DATAFLOW, RT_VAR_CHUNK, RT_VAR_MAX_DEPTH, RT_VAR_TIMED,
    RT_VAR_TRAVERSAL,      /* tracer */
    RT_VAR_STACK_SIZE,
    RT_VAR_PACKETS,
    RT_VAR_LEAF_SKIP,
    RT_VAR_RAY_MAP,
    RT_VAR_ISECT,          /* shading and intersection: both backends */
    RT_VAR_SHADOWS,
    RT_VAR_BOUNCES,
    RT_VAR_TEXTURES,
    RT_VAR_TEX_FILTER,
    RT_VAR_REFRACTION,
    RT_VAR_HEATMAP,
    RT_VAR_AO, RT_VAR_AO_DISTANCE, /* ambient occlusion: both backends */
    RT_VAR_PHOTONS,        /* photon mapping: both backends */
    RT_VAR_PHOTON_K,
    RT_VAR_TONEMAP,        /* display: both backends */
    RT_VAR_SKY,
    RT_VAR_EMITTERS,
    RT_VAR_EXPOSURE,
    RT_VAR_COUNT
} RtVariantId;

typedef struct RtVariant {
    const char *key;             /* --build / --trace key, the JSON key */
    const char *name;            /* HUD and help label */
    RtVariantScope scope;
    RtVariantKind kind;
    size_t offset;               /* of the field in RtPipelineParams (RT_VK_LADDER/COSTS: of `build`) */
    float scale;                 /* RT_VK_FLOAT: field = value / scale */
    double lo, hi;               /* accepted numbers (in value units); names are accepted too */
    const RtVariantValue *values;/* NULL-terminated; the values a hotkey cycles; NULL: numbers only */
    char hotkey;                 /* viewer key: an upper-case letter, a digit or one of ; ' / - = (each its
                                    own GLFW key code); 0: none */
    int gpu_only;                /* 1: only the GPU path has it (the CPU oracle ignores it) */
    const char *description;
    int numeric;                 /* with values: any number in lo..hi is accepted too, not only the
                                    named ones (bounces=7); rows without values always take numbers */
    int step;                    /* numbers must be multiples of this (0: any) */
} RtVariant;

extern const RtVariant rt_variants[RT_VAR_COUNT];

/* Why row id cannot act in this build (a GPU row without CUDA), or NULL. */
const char *rt_variant_unavailable(RtVariantId id);
/* The row of `key` in `scope`, or -1. */
int rt_variant_find(RtVariantScope scope, const char *key);

/* The row's value in pp (RT_VK_LADDER / RT_VK_COSTS: the matching row of
 * its table, -1 when the fields match none, e.g. [C] alone). */
double rt_variant_get(const RtPipelineParams *pp, RtVariantId id);
/* The name of `value` in the row's table, or NULL (e.g. --bounces 7). */
const char *rt_variant_value_name(RtVariantId id, double value);
/* The current value for people: its name, else the number, else "custom". */
void rt_variant_format(const RtPipelineParams *pp, RtVariantId id, char *buf, size_t n);

/* Sets the row from text: a name of its table or a number in lo..hi.
 * RT_ERR_ARG names the option and the valid values: `opt` as the user typed
 * it (e.g. "--isect"), or NULL for "--build KEY=" / "--trace KEY=". */
RtStatus rt_variant_parse(RtPipelineParams *pp, RtVariantId id, const char *text, const char *opt,
                          RtError *err);
/* "k=v[,k=v...]" of one scope, as --build / --trace take it. */
RtStatus rt_variant_parse_list(RtPipelineParams *pp, RtVariantScope scope, const char *list, RtError *err);
/* The hotkey: the next (dir > 0) or previous value of the row's table,
 * wrapping; a value outside the table continues from the table's start.
 * RT_ERR_UNSUPPORTED (pp unchanged) for an unavailable row or one without
 * named values. */
RtStatus rt_variant_cycle(RtPipelineParams *pp, RtVariantId id, int dir);

/* --help's lines for one scope: "key=values (default) description". */
void rt_variants_usage(FILE *f, RtVariantScope scope);

#endif
