/* runners.h — procedural dynamic scenes made by the project (no downloads),
 * for the scale benchmark (docs/formats.md, "Procedural scenes"):
 *   - walking articulated figures of ~78K triangles each, added to any
 *     scene: Chang et al.'s "Sponza with i runners" pattern;
 *   - a field of n moving objects (spin, orbit, bounce) on a floor;
 *   - one deforming grid mesh (a travelling wave) of up to ~10M triangles.
 * Everything is deterministic (no clock, no global RNG): the same call
 * makes the same scene. All of it animates through the RtAnim model
 * (anim.h): vertices in node space, nodes and keyframe tracks. */
#ifndef RT_RUNNERS_H
#define RT_RUNNERS_H

#include "scene/scene.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Adds n walking figures to s (n = 0 does nothing). Each runner is 13
 * tessellated body parts (rt_runner_tri_count() triangles) with its own
 * node hierarchy: an ORBIT root circling the centre of the scene's bounds
 * (at t_start of its time range) on its floor, a SPIN node that turns it
 * along its path, a BOUNCE node for the pelvis, and TRACK nodes with
 * looping keyframed swings for hips, knees, shoulders and elbows. The floor
 * is the most common height of the highest upward-facing surface in the
 * lower third of the bounds, over the area the paths cover (not the bounds'
 * min y: Sponza has a ground plane 11 units under its hall's floor). Size
 * (~1/8 of the scene's height), radii (up to 0.3 of the narrower side) and
 * phases follow the bounds and the runner's index.
 * The keyframes cover the scene's time range (at least 0..RT_ANIM_DEFAULT_PERIOD),
 * and a lap and a whole number of strides fit RT_ANIM_DEFAULT_PERIOD, so
 * the default loop is seamless. An empty scene gets runners on y = 0 around
 * the origin. On error (RT_ERR_OOM, RT_ERR_ARG for n < 0) s is left as it was. */
RtStatus rt_scene_add_runners(RtScene *s, int n, RtError *err);
/* Triangles of one runner. */
uint32_t rt_runner_tri_count(void);

/* Appends a field of n moving objects (spinning boxes, bouncing spheres,
 * orbiting spheres, boxes that spin while orbiting, by index modulo 4) on a
 * checker-free floor quad sized to hold them; adds a camera and two lights
 * when s has none yet. n = 0 is the floor alone. s must be initialised
 * (rt_scene_init); the caller runs rt_scene_finish. On error s is left as
 * it was. */
RtStatus rt_scene_make_field(RtScene *s, int n, RtError *err);
/* Triangles rt_scene_make_field(s, n) adds (0 when n is out of range). */
uint32_t rt_field_tri_count(int n);
#define RT_FIELD_MAX 1000000

/* Appends one square grid mesh of about tri_count triangles (2 g^2, g =
 * round(sqrt(tri_count / 2))), 20 x 20 units centred on the origin at
 * y = 0, deformed by two crossing travelling waves (RT_DEFORM_WAVE); adds a
 * camera and a light when s has none yet. tri_count < 2 is RT_ERR_ARG;
 * above RT_WAVE_MAX_TRIS, or when memory runs out, RT_ERR_OOM. On error s
 * is left as it was. */
RtStatus rt_scene_make_wave(RtScene *s, uint32_t tri_count, RtError *err);
/* The triangle count rt_scene_make_wave makes for tri_count (0 when out of range). */
uint32_t rt_wave_tri_count(uint32_t tri_count);
/* 32M triangles: about 1.2 GB of host scene (36 bytes a triangle) before
 * any tree; the benchmark's largest deforming mesh is 10M. */
#define RT_WAVE_MAX_TRIS (32u << 20)

#ifdef __cplusplus
}
#endif
#endif
