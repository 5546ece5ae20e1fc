/* hud.h — the viewer's on-screen display: frame rate and per-stage times,
 * ray throughput, tree statistics, active variants, a frame-time graph of
 * the last seconds stacked by stage, and the F1 key list. Text is
 * stb_easy_font quads; text, panels and bars go out in one draw call with
 * shaders/hud_*.glsl. Needs the window's GL context current; include after
 * GL/glew.h when calling GL yourself. */
#ifndef RT_HUD_H
#define RT_HUD_H

#include "app/options.h"

/* The per-frame pipeline's stages as the HUD times them. */
typedef enum RtStage {
    RT_STAGE_ANIMATE = 0,
    RT_STAGE_BUILD,
    RT_STAGE_TRACE,
    RT_STAGE_DISPLAY,
    RT_STAGE_COUNT
} RtStage;

typedef struct RtFrameTimes {
    double stage_ms[RT_STAGE_COUNT];
    double frame_ms;   /* the whole loop iteration: stages + events, HUD, swap */
} RtFrameTimes;

/* What the HUD shows besides the times it smooths itself. */
typedef struct RtHudInfo {
    const char *scene;        /* short scene name */
    const char *backend;      /* e.g. "CPU backend, 2 threads" */
    const char *gpu_stages;   /* why GPU stage times are n/a; NULL once they are measured */
    const char *display;      /* how frames reach the window */
    const char *gl_renderer;  /* GL_RENDERER */
    int width, height;        /* frame size */
    int vsync, orbit;
    float speed;              /* camera speed, scene units per second */
    uint64_t rays;            /* rays traced in the last frame */
    double trace_ms;          /* ... and the time they took */
    uint32_t triangles;
    const RtKdStats *kd;      /* NULL without a tree (--brute) */
    const RtKdGpuStats *kd_gpu; /* the GPU build's stages, launches, round trips; NULL on the CPU */
    const char *structure_note;    /* auto's choice and why, or the memory fallback; or NULL */
    const RtPhotonStats *photons;  /* the frame's photon stage; NULL when it had none */
    const RtRayRates *rates;  /* the trace per ray type (rt_pipeline_ray_rates), or NULL */
    const char *rates_note;   /* why there are none yet (rates NULL), or NULL */
    uint32_t samples;              /* samples per pixel accumulated in the image shown */
    int gpu_variants;         /* the GPU groups (1-0, Y) act on this frame */
    const char *anim;         /* animation state line, e.g. "t 3.20 s of 0..20  x1" */
    const RtPipelineParams *params; /* the current variant values */
    const char *message;      /* a transient line (a key's effect), or NULL */
    int show_help;            /* F1: the key list instead of the statistics */
} RtHudInfo;

typedef struct RtHud RtHud;

RtStatus rt_hud_create(RtHud **out, RtError *err);
void rt_hud_destroy(RtHud *hud);

/* Adds a frame ending at now_ms to the graph and the smoothed values. */
void rt_hud_record(RtHud *hud, double now_ms, const RtFrameTimes *t);

/* Draws the HUD (or the key list) over the fb_w x fb_h framebuffer. */
RtStatus rt_hud_draw(RtHud *hud, const RtHudInfo *info, int fb_w, int fb_h, RtError *err);

#endif
