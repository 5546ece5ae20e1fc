/* options.h — the command line: one RtOptions filled from argv, read by the
 * headless runner and the interactive viewer. Parsing is separate from main
 * so tests can check it. The variant tables below are read by the CLI, the
 * viewer's hotkeys, its HUD and the help text alike. */
#ifndef RT_OPTIONS_H
#define RT_OPTIONS_H

#include <stdio.h>

#include "kd/kd_gpu.h"
#include "render/render_cpu.h"
#include "trace/trace.h"

typedef struct RtOptions {
    const char *scene_path;  /* NULL = the built-in default scene */
    int headless;            /* render without a window */
    int frames;              /* frames to render headless; default 1 */
    int width, height;       /* image / window size; default 1280x720 */
    const char *out_png;     /* headless output; default "rtviewer.png" */
    int cpu;                 /* force the CPU backend */
    int stats;               /* print tree statistics per frame */
    int gpu_info;            /* print the GPU and exit */
    int help;
    int has_camera;          /* --camera given: overrides the scene's */
    RtCamera camera;
    RtRenderParams render;
    RtKdCpuParams kd;
    RtLogLevel log_level;
    int size_given;          /* --size was given (the viewer has its own default) */
    const char *screenshot_dir; /* viewer F12 screenshots; NULL = current directory */
    int vsync;               /* viewer: swap interval 1; default 1, --no-vsync */
    int interop;             /* viewer: try CUDA-GL interop; default 1, --no-interop */
    /* GPU variants (docs/kd_gpu.md, docs/trace_gpu.md); shading fields of
     * `trace` come from `render` (rt_trace_params_merge) */
    RtKdGpuParams build;     /* --build k=v[,k=v...]; read it through rt_options_kd_gpu */
    RtTraceParams trace;     /* --trace k=v[,k=v...] */
    /* builder variants the hotkeys cycle (values of the tables below; -1 =
     * "custom": the fields of `build` as --build set them) */
    int kd_ladder;           /* Chang's ladder row 0..5 (default 5 = All) */
    int kd_costs;            /* SAH cost preset (rt_kd_cost_presets) */
    int kd_ce;               /* C_e in percent (15/25/35) */
    int kd_box;              /* RtKdGpuAssoc */
    int kd_small;            /* RtKdGpuSmallMode */
    int kd_leaf;             /* small-node threshold 32/64 */
    int kd_ways;             /* children per large-stage split: 2 or 4 */
    /* dynamic scenes (anim.h) */
    int has_time;            /* --time T given: render (headless) / start (viewer) at t = time */
    float time;
    int runners;             /* --runners N: add N walking figures (runners.h); default 0 */
    int paused;              /* --paused: the viewer starts with the animation paused */
    float speed;             /* --speed X: animation time per wall-clock second; default 1 */
    /* benchmark (bench.h) */
    int bench;               /* --bench SCENE: headless benchmark; scene_path = SCENE */
    int warmup;              /* --warmup N: frames run before the measured ones; default 3 */
    const char *json_path;   /* --json FILE */
    const char *csv_path;    /* --csv FILE */
} RtOptions;

void rt_options_default(RtOptions *o);
/* The GPU builder's parameters: o->build with the hotkey groups applied. */
RtKdGpuParams rt_options_kd_gpu(const RtOptions *o);
/* The GPU tracer's parameters: o->trace with the shading fields of o->render. */
RtTraceParams rt_options_trace_gpu(const RtOptions *o);
/* Parses argv; on error returns RT_ERR_ARG with a message naming the option. */
RtStatus rt_options_parse(int argc, char **argv, RtOptions *o, RtError *err);
void rt_options_usage(FILE *f);

/* --camera "px,py,pz,lx,ly,lz,ux,uy,uz,fov": position, look-at, up, vertical
 * fov in degrees. Formatting uses %.9g, so parse(format(c)) == c exactly. */
RtStatus rt_camera_parse(const char *s, RtCamera *c, RtError *err);
void rt_camera_format(const RtCamera *c, char *buf, size_t n);

/* Name tables shared by the CLI and (later) the viewer's hotkeys and HUD. */
typedef struct RtNamedValue {
    const char *name;
    int value;
    const char *description;
} RtNamedValue;
extern const RtNamedValue rt_isect_variants[]; /* terminated by a NULL name */

/* Variant groups: each a {name, value, description} table of the values it
 * cycles through. The viewer binds one key per group (`key`, an upper-case
 * letter or digit, which is also its GLFW key code), the HUD shows the
 * current value by name, --help lists them. Groups whose stage is not part of
 * this build say why in `unavailable` and are never faked. */
typedef enum RtVariantGroupId {
    RT_VAR_ISECT = 0,  /* shading and intersection: the CPU backend has them */
    RT_VAR_SHADOWS,
    RT_VAR_BOUNCES,
    RT_VAR_TEXTURES,
    RT_VAR_HEATMAP,
    RT_VAR_LADDER,     /* GPU builder (Zhou et al. 2008, Chang et al.'s steps) */
    RT_VAR_SAH_COSTS,
    RT_VAR_EMPTY_SPACE,
    RT_VAR_BOX,
    RT_VAR_SMALL_NODE,
    RT_VAR_LEAF_SIZE,
    RT_VAR_LARGE_WAYS,
    RT_VAR_TRAVERSAL,  /* GPU tracer */
    RT_VAR_STACK_SIZE,
    RT_VAR_PACKETS,
    RT_VAR_LEAF_SKIP,
    RT_VAR_RAY_MAP,
    RT_VAR_COUNT
} RtVariantGroupId;

typedef struct RtVariantGroup {
    const char *name;            /* HUD and help label, e.g. "intersection" */
    char key;                    /* viewer hotkey ('I'); Shift+key cycles backwards */
    const char *cli;             /* the option that sets it, or NULL */
    const RtNamedValue *values;  /* NULL-terminated; NULL when the GPU issue defines them */
    const char *unavailable;     /* NULL = usable in this build, else why not */
} RtVariantGroup;
extern const RtVariantGroup rt_variant_groups[RT_VAR_COUNT];

/* The current value of group g in o (0 for unavailable groups), and its name
 * (NULL when the value is not in the table, e.g. --bounces 7). */
int rt_variant_get(const RtOptions *o, RtVariantGroupId g);
const char *rt_variant_value_name(RtVariantGroupId g, int value);
/* Moves group g to the next (dir > 0) or previous value of its table,
 * wrapping. Returns RT_ERR_UNSUPPORTED (o unchanged) for an unavailable
 * group. */
RtStatus rt_variant_cycle(RtOptions *o, RtVariantGroupId g, int dir);

/* The viewer's other keys, for --help and the F1 overlay; terminated by a
 * NULL key. */
typedef struct RtKeyHelp {
    const char *key;   /* "W A S D" */
    const char *what;  /* "fly forward, left, back, right" */
} RtKeyHelp;
extern const RtKeyHelp rt_viewer_keys[];

#endif
