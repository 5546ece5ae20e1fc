/* render_cpu.h — the CPU reference renderer and the --cpu backend: a
 * multi-threaded tile renderer (pthreads) with the camera model of camera.h
 * and the shading of shade.h: primary rays, a shadow ray per light, mirror
 * reflections and refraction up to max_bounces, Phong/Lambert shading with
 * map_Kd textures and map_d alpha cutouts. Brute-force mode intersects
 * every triangle (tests only). */
#ifndef RT_RENDER_CPU_H
#define RT_RENDER_CPU_H

#include "core/camera.h"
#include "core/image.h"
#include "bvh/bvh_cpu.h"
#include "kd/kd_cpu.h"
#include "render/accel.h"
#include "photon/photon.h"
#include "render/shade.h"

typedef struct RtRenderParams {
    RtShadeParams shade; /* shading (shade.h), the GPU tracer's as well */
    int use_woop;        /* 1: Woop, 0: Moller-Trumbore; default 1 */
    int brute_force;     /* 1: ignore the tree, test every triangle */
    int threads;         /* 0 = rt_thread_count() */
} RtRenderParams;

RtRenderParams rt_render_params_default(void);

typedef struct RtRenderStats {
    uint64_t primary_rays, shadow_rays, reflection_rays; /* reflection includes refraction */
    double ms;
} RtRenderStats;

/* Renders into img (allocated by the caller to the wanted size) through
 * accel, a host kd-tree or BVH; NULL only with brute_force. frame (may be
 * NULL) holds the frame's photon maps (host memory,
 * rt_photon_maps_build_cpu: every shaded surface adds their estimate) and
 * the accumulation sums (img->w * img->h: the pixel is the mean of samples
 * 0..p->shade.sample, each jittered in the pixel; without sums, one
 * sample). ids (may be NULL) receives the primary hit's triangle id per
 * pixel (RT_NO_HIT for background), for tests. */
RtStatus rt_render_cpu(const RtScene *scene, const RtTriArrays *tris, const RtAccel *accel,
                       const RtShadeFrame *frame, const RtCamera *cam, const RtRenderParams *p,
                       RtImage *img, uint32_t *ids, RtRenderStats *stats, RtError *err);

/* The photon pass of a frame (photon.h): pp->count photons from the
 * scene's lights through accel (as rt_render_cpu casts: p's shading
 * switches, map_d cut-outs), their stores into slots (sized for at least
 * pp->count x pp->max_depth; rt_photon_slots_reserve). rest_bounds fixes
 * the lights' units (photon.h). No lights or count 0: every slot empty. */
RtStatus rt_render_photons_cpu(const RtScene *scene, const RtTriArrays *tris, const RtAccel *accel,
                               const RtRenderParams *p, const RtPhotonParams *pp, RtAabb rest_bounds,
                               RtPhotonSlots *slots, RtError *err);

/* Casts n rays closest-hit over [0, inf), geometry only (no map_d cut-outs):
 * the traversal of accel's kd-tree or BVH, or brute force when accel is NULL, on
 * `threads` threads (0 = rt_thread_count()) pulling chunks of rays as
 * rt_render_cpu pulls tiles. hits[i].tri = RT_NO_HIT for a miss; the hits
 * do not depend on the thread count. The benchmark's diffuse pass. */
RtStatus rt_render_cast_cpu(const RtTriArrays *tris, const RtAccel *accel, const RtRay *rays,
                            uint32_t n, int use_woop, int threads, RtHit *hits, RtError *err);

/* The secondary rays' offset of the renderer: rt_shade_ray_eps of tris'
 * finite vertices (the tree plays no part, so tree and brute force agree). */
float rt_render_ray_eps(const RtTriArrays *tris);

#endif
