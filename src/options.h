/* options.h — the command line: one RtOptions filled from argv, read by the
 * headless runner (and the viewer once it lands). Parsing is separate from
 * main so tests can check it. */
#ifndef RT_OPTIONS_H
#define RT_OPTIONS_H

#include <stdio.h>

#include "render_cpu.h"

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
} RtOptions;

void rt_options_default(RtOptions *o);
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

#endif
