/* render_cpu.h — the CPU reference renderer and the --cpu backend: a
 * multi-threaded tile renderer (pthreads) with the camera model of camera.h:
 * primary rays, a shadow ray per light, mirror reflections up to
 * max_bounces, Phong/Lambert shading with map_Kd textures and map_d alpha
 * cutouts. Brute-force mode intersects every triangle (tests only). */
#ifndef RT_RENDER_CPU_H
#define RT_RENDER_CPU_H

#include "core/camera.h"
#include "core/image.h"
#include "kd/kd_cpu.h"

typedef struct RtRenderParams {
    int max_bounces;   /* mirror reflection depth; default 1 */
    int shadows;       /* 1: a shadow ray per light; default 1 */
    int textures;      /* 1: sample map_Kd / map_d; default 1 */
    int use_woop;      /* 1: Woop, 0: Moller-Trumbore; default 1 */
    int brute_force;   /* 1: ignore the tree, test every triangle */
    int heatmap;       /* 1: color = traversal steps per pixel */
    int threads;       /* 0 = rt_thread_count() */
    RtVec3 background; /* linear RGB of rays that leave the scene */
    RtVec3 ambient;    /* linear ambient term */
} RtRenderParams;

RtRenderParams rt_render_params_default(void);

typedef struct RtRenderStats {
    uint64_t primary_rays, shadow_rays, reflection_rays;
    double ms;
} RtRenderStats;

/* Renders into img (allocated by the caller to the wanted size). tree may be
 * NULL only with brute_force. ids (may be NULL) receives the primary hit's
 * triangle id per pixel (RT_NO_HIT for background), for tests. */
RtStatus rt_render_cpu(const RtScene *scene, const RtTriArrays *tris, const RtKdTree *tree,
                       const RtCamera *cam, const RtRenderParams *p, RtImage *img,
                       uint32_t *ids, RtRenderStats *stats, RtError *err);

#endif
