/* options.h — the command line: one RtOptions filled from argv, read by the
 * headless runner, the benchmark and the interactive viewer. Parsing is
 * separate from main so tests can check it. The variants (--build, --trace,
 * the shading flags) are rows of variants.h's registry. */
#ifndef RT_OPTIONS_H
#define RT_OPTIONS_H

#include <stdio.h>

#include "app/variants.h"

typedef struct RtOptions {
    const char *scene_path;  /* NULL = the built-in default scene */
    int headless;            /* render without a window */
    int frames;              /* frames to render headless; default 1 */
    int frames_given;        /* --frames was given: the window closes after that many frames */
    int width, height;       /* image / window size; default 1280x720 */
    const char *out_png;     /* headless output; default "rtviewer.png" */
    int cpu;                 /* force the CPU backend */
    int stats;               /* print tree statistics per frame */
    int gpu_info;            /* print the GPU and exit */
    int help;
    int has_camera;          /* --camera given: overrides the scene's */
    RtCamera camera;
    RtPipelineParams pipe;   /* every variant of the frame (variants.h names its fields) */
    RtLogLevel log_level;
    int size_given;          /* --size was given (the viewer has its own default) */
    const char *screenshot_dir; /* viewer F12 screenshots; NULL = current directory */
    int vsync;               /* viewer: swap interval 1; default 1, --no-vsync */
    int interop;             /* viewer: try CUDA-GL interop; default 1, --no-interop */
    /* dynamic scenes (anim.h) */
    int has_time;            /* --time T given: render (headless) / start (viewer) at t = time */
    float time;
    int runners;             /* --runners N: add N walking figures (runners.h); default 0 */
    int paused;              /* --paused: the viewer starts with the animation paused */
    float speed;             /* --speed X: animation time per wall-clock second; default 1 */
    const char *clip;        /* --clip NAME|N: the animation clip of a file with several (assimp); NULL = the first */
    /* benchmark (bench.h) */
    int bench;               /* --bench [SCENE]: headless benchmark of scene_path (positional or after --bench) */
    int bench_default;       /* "--bench default": the built-in scene, and no positional one */
    int warmup;              /* --warmup N: frames run before the measured ones; default 3 */
    int spp;                 /* --spp N: headless samples per pixel, accumulated (jittered); default 1 */
    int max_spp;             /* --max-spp N: the window accumulates at most N samples (1: none); default 65536 */
    const char *env_path;    /* --env FILE: an environment map (.hdr) for the scene; NULL: the scene's */
    const char *json_path;   /* --json FILE */
    const char *csv_path;    /* --csv FILE */
} RtOptions;

void rt_options_default(RtOptions *o);
/* Parses argv; on error returns RT_ERR_ARG with a message naming the option. */
RtStatus rt_options_parse(int argc, char **argv, RtOptions *o, RtError *err);
void rt_options_usage(FILE *f);

/* --camera "px,py,pz,lx,ly,lz,ux,uy,uz,fov": position, look-at, up, vertical
 * fov in degrees. Formatting uses %.9g, so parse(format(c)) == c exactly. */
RtStatus rt_camera_parse(const char *s, RtCamera *c, RtError *err);
void rt_camera_format(const RtCamera *c, char *buf, size_t n);

/* The viewer's other keys, for --help and the F1 overlay; terminated by a
 * NULL key. */
typedef struct RtKeyHelp {
    const char *key;   /* "W A S D" */
    const char *what;  /* "fly forward, left, back, right" */
} RtKeyHelp;
extern const RtKeyHelp rt_viewer_keys[];

#endif
