/* photon.h — photon mapping (Jensen 1996; issue 23), the rules written once
 * for the CPU oracle (render_cpu.c, photon_cpu.c) and the GPU
 * (cuda/trace/trace.cu, cuda/photon/photon_gpu.cu): emission from the
 * scene's lights, what a photon does at a hit, where it is stored, and the
 * radiance estimate at a surface from the k nearest photons of a balanced
 * k-d tree (kdtree_points.h). docs/photon.md describes the model.
 *
 * Per frame:
 *   photon i (0..count-1) leaves light i mod L (rt_photon_emit), then per
 *   hit (depth 0..max_depth-1): rt_photon_hit decides store / specular /
 *   diffuse / absorbed and gives the next ray. A photon is stored at a
 *   surface with a diffuse share when it has bounced before: into the
 *   caustic map when every bounce so far was specular (paths L S+ D), into
 *   the global map once it has bounced diffusely (L .* D .* D). Photons
 *   arriving straight from the light are not stored: the Whitted shadow rays
 *   already give direct light. Slot depth of photon i holds its store at
 *   that depth, so the stored set, and its order, depend on (i, depth)
 *   alone: any thread count, either backend.
 *   Each map is compacted in slot order and built into a balanced tree;
 *   shading adds rt_photon_radiance at every surface the Whitted chain
 *   shades.
 *
 * Light units. The direct term has no distance falloff (shade.h: a light's
 * colour is the irradiance it gives a surface facing it). Photons carry
 * physical flux: a point light is a point of intensity colour * d_ref^2
 * (d_ref = RT_PHOTON_REF_DIST of the scene's diagonal), so at that
 * distance photon irradiance equals the Whitted term; a directional light
 * gives irradiance `colour` across the disc of the scene's bounding sphere.
 * The scene's rest-pose bounds fix both (the same numbers on either
 * backend, frame after frame). */
#ifndef RT_PHOTON_H
#define RT_PHOTON_H

#include "photon/kdtree_points.h"
#include "render/sample.h"
#include "render/shade.h"

#ifdef __cplusplus
extern "C" {
#endif

/* d_ref as a fraction of the scene's bounding-box diagonal: half of it,
 * about the distance from a light inside a room to the far wall. */
#define RT_PHOTON_REF_DIST 0.5f
/* Russian roulette never continues a diffuse bounce with certainty: a white
 * room (albedo 1) would otherwise bounce photons until max_depth. */
#define RT_PHOTON_MAX_CONTINUE 0.95f
#define RT_PHOTON_PI 3.14159265358979f

enum { RT_PHOTON_CAUSTIC = 0, RT_PHOTON_GLOBAL = 1, RT_PHOTON_MAPS = 2 };
/* A slot's kind: RT_PHOTON_NONE or 1 + the map it belongs to. */
#define RT_PHOTON_NONE 0u

/* Photon mapping of a frame; rt_photon_params_default's values. */
typedef struct RtPhotonParams {
    uint32_t count;    /* photons emitted per frame; 0 = off (default) */
    uint32_t k;        /* photons per estimate, 1..RT_KDP_MAX_KNN; 50 (Jensen's 50-100, the k) */
    float radius_rel;  /* largest gather radius, fraction of the scene's diagonal: 0.02 */
    uint32_t max_depth; /* hits a photon makes, 1..16; 8 */
    uint32_t seed;     /* the frame's photons depend on it and the index alone: 1 */
} RtPhotonParams;

RT_HD RtPhotonParams rt_photon_params_default(void)
{
    RtPhotonParams p;
    p.count = 0;
    p.k = 50;
    /* a caustic under a sphere of 1/10 of the room is a few times this
       wide; larger radii blur it, smaller find fewer than k photons */
    p.radius_rel = 0.02f;
    /* glass spheres cost 2 hits per pass, a mirror one: 8 covers a caustic
       through two glass objects plus diffuse bounces, where roulette ends
       most paths long before */
    p.max_depth = 8;
    p.seed = 1;
    return p;
}

#define RT_PHOTON_MAX_DEPTH 16

/* A stored photon: its flux and the direction it travelled (unit). Its
 * position is the tree's point (kdtree_points.h), same index. */
typedef struct RtPhoton {
    RtVec3 power;
    RtVec3 dir;
} RtPhoton;

/* One map as shading reads it: tree points index rec[]. Host pointers for
 * the CPU, device pointers for the GPU (the struct is the same). */
typedef struct RtPhotonMap {
    RtKdpTree tree;
    const RtPhoton *rec;
} RtPhotonMap;

typedef struct RtPhotonMaps {
    RtPhotonMap map[RT_PHOTON_MAPS]; /* caustic, global */
    uint32_t k;                      /* photons per estimate */
    float r2;                        /* largest gather radius, squared */
} RtPhotonMaps;

/* The photons of a frame before compaction: slot i * max_depth + depth
 * holds photon i's store at hit `depth` (kind RT_PHOTON_NONE: none). Host
 * memory on the CPU, device memory on the GPU. */
typedef struct RtPhotonSlots {
    uint32_t count, max_depth; /* photons and hits the arrays are sized for */
    uint8_t *kind;             /* count * max_depth */
    float *pos;                /* 3 per slot: where it was stored */
    RtPhoton *rec;             /* per slot */
} RtPhotonSlots;

/* Photon i's slots before its path: all empty. */
RT_HD void rt_photon_slots_clear(const RtPhotonSlots *sl, uint32_t i)
{
    for (uint32_t d = 0; d < sl->max_depth; d++) sl->kind[(size_t)i * sl->max_depth + d] = RT_PHOTON_NONE;
}

/* Photon i's store at hit `depth`: its kind (rt_photon_hit's), where, and
 * what arrived. */
RT_HD void rt_photon_slot_store(const RtPhotonSlots *sl, uint32_t i, uint32_t depth, uint32_t kind, RtVec3 p,
                                RtPhoton rec)
{
    size_t s = (size_t)i * sl->max_depth + depth;
    sl->kind[s] = (uint8_t)kind;
    sl->pos[3 * s] = p.x;
    sl->pos[3 * s + 1] = p.y;
    sl->pos[3 * s + 2] = p.z;
    sl->rec[s] = rec;
}

/* What the photon stage of a frame did. */
typedef struct RtPhotonStats {
    uint32_t emitted;
    uint32_t stored[RT_PHOTON_MAPS]; /* caustic, global (after compaction; the trees may drop
                                        duplicates and NaNs) */
    double trace_ms;                 /* emit + trace (GPU: events; CPU: wall) */
    double build_ms;                 /* compaction + both trees */
} RtPhotonStats;

/* The scene numbers emission needs, from the rest-pose bounds. */
typedef struct RtPhotonScene {
    RtVec3 center;
    float radius;    /* bounding sphere about center */
    float ref_dist;  /* d_ref */
} RtPhotonScene;

RT_HD RtPhotonScene rt_photon_scene(RtAabb bounds)
{
    RtPhotonScene s;
    int empty = aabb_is_empty(bounds);
    s.center = empty ? v3(0.0f, 0.0f, 0.0f) : v3_scale(v3_add(bounds.lo, bounds.hi), 0.5f);
    float diag = empty ? 0.0f : v3_len(v3_sub(bounds.hi, bounds.lo));
    if (!(diag > 0.0f) || !isfinite(diag)) diag = 1.0f;
    s.radius = 0.5f * diag;
    s.ref_dist = RT_PHOTON_REF_DIST * diag;
    return s;
}

/* Two uniform numbers for photon `index` at hit `depth`, draw `k` (0: the
 * event, 1: a direction): pcg2d with the seed mixed per (depth, k) by the
 * golden-ratio constant, so draws never repeat along a path. */
RT_HD void rt_photon_rand(uint32_t index, uint32_t seed, uint32_t depth, uint32_t k, float *u1, float *u2)
{
    rt_sample_uniform2(index, seed ^ (0x9E3779B9u * (2u * depth + k + 1u)), u1, u2);
}

/* Photon `index` of `count`: its light (index mod light_count), its ray
 * and its flux (docs/photon.md, "Light units"). */
RT_HD void rt_photon_emit(const RtLight *lights, uint32_t light_count, const RtPhotonScene *sc,
                          uint32_t index, uint32_t count, uint32_t seed, RtRay *ray, RtVec3 *power)
{
    const RtLight *l = &lights[index % light_count];
    float u1, u2, share = (float)light_count / (float)count;
    rt_sample_uniform2(index, seed, &u1, &u2);
    if (l->type == RT_LIGHT_DIRECTIONAL) {
        /* a point of the disc of radius R across the bounding sphere,
           on the light's side, heading into the scene */
        RtVec3 toward = v3_norm(l->v), t, b;
        rt_sample_basis(toward, &t, &b);
        float r = sc->radius * sqrtf(u1), phi = RT_SAMPLE_TWO_PI * u2;
        RtVec3 o = v3_add(sc->center, v3_scale(toward, 2.0f * sc->radius));
        o = v3_add(o, v3_add(v3_scale(t, r * cosf(phi)), v3_scale(b, r * sinf(phi))));
        ray->o = o;
        ray->d = v3_scale(toward, -1.0f);
        *power = v3_scale(l->color, RT_PHOTON_PI * sc->radius * sc->radius * share);
    } else if (rt_light_is_area(l)) {
        /* a point of the surface (rt_sample_area_point), a cosine-weighted
           direction about its normal: a Lambertian emitter whose radiance
           gives `colour` at d_ref, flux pi colour d_ref^2 for a quad (one
           side) and 4 pi colour d_ref^2 for a sphere (as a point light) */
        float v1, v2;
        rt_photon_rand(index, seed, RT_PHOTON_MAX_DEPTH, 0, &v1, &v2);
        RtVec3 n;
        ray->o = rt_sample_area_point(l, u1, u2, &n);
        ray->d = rt_sample_cosine_dir(n, v1, v2);
        float k = l->type == RT_LIGHT_QUAD ? 1.0f : 4.0f;
        *power = v3_scale(l->color, k * RT_PHOTON_PI * sc->ref_dist * sc->ref_dist * share);
    } else {
        /* uniform over the sphere: flux 4 pi I */
        ray->o = l->v;
        ray->d = v3_norm(rt_sample_sphere_dir(u1, u2));
        *power = v3_scale(l->color, 4.0f * RT_PHOTON_PI * sc->ref_dist * sc->ref_dist * share);
    }
}

/* A photon between hits. */
typedef struct RtPhotonPath {
    RtVec3 power;
    int bounced;  /* 0: straight from the light; 1: specular bounces only; 2: a diffuse one */
} RtPhotonPath;

/* The fraction of the light a surface passes on specularly, as the
 * Whitted chain splits it (rt_shade_path_next): 1 - d through a
 * transparent surface (with refraction on), else the mirror share. */
RT_HD float rt_photon_specular_share(const RtShadeParams *sp, const RtShadeMaterial *m)
{
    if (sp->refraction && m->d < 1.0f) return 1.0f - fmaxf(m->d, 0.0f);
    return fminf(fmaxf(m->reflect, 0.0f), 1.0f);
}

/* The photon on path ph reached surface sf (material m, textured albedo in
 * sf->albedo) along dir at hit `depth`. *store = the slot's kind
 * (RT_PHOTON_NONE or 1 + map) with the arriving flux; returns 1 with *next
 * and ph updated when the photon goes on. Russian roulette (Jensen 2001
 * §5.2): specular with the specular share (flux unchanged), else diffuse
 * with P = max(Kd) (capped), flux * albedo / P, cosine-weighted about the
 * geometric normal; else absorbed. P reads the material's Kd, not the
 * texel, so both backends take the same branches whatever their texture
 * filters round to. */
RT_HD int rt_photon_hit(RtPhotonPath *ph, const RtShadeParams *sp, const RtShadeMaterial *m,
                        const RtShadeSurface *sf, RtVec3 dir, float eps, uint32_t index, uint32_t seed,
                        uint32_t depth, uint32_t *store, RtRay *next)
{
    float spec = rt_photon_specular_share(sp, m);
    float pd = fminf(fmaxf(m->kd.x, fmaxf(m->kd.y, m->kd.z)), RT_PHOTON_MAX_CONTINUE);
    int diffuse = spec < 1.0f && pd > 0.0f;
    *store = diffuse && ph->bounced ? 1u + (ph->bounced == 2 ? RT_PHOTON_GLOBAL : RT_PHOTON_CAUSTIC)
                                    : RT_PHOTON_NONE;
    float u1, u2;
    rt_photon_rand(index, seed, depth, 0, &u1, &u2);
    if (u1 < spec) {
        if (sp->refraction && m->d < 1.0f) *next = rt_shade_refract_ray(m, sf, dir, eps);
        else *next = rt_shade_reflect_ray(sf, dir, eps);
        if (!ph->bounced) ph->bounced = 1;
        return 1;
    }
    /* u1 is uniform on [spec, 1) here: rescaled, it decides the diffuse branch */
    if (!diffuse || (u1 - spec) >= pd * (1.0f - spec)) return 0;
    ph->power = v3_mul(ph->power, v3_scale(sf->albedo, 1.0f / pd));
    ph->bounced = 2;
    float v1, v2;
    rt_photon_rand(index, seed, depth, 1, &v1, &v2);
    next->o = rt_shade_offset(sf, eps);
    next->d = rt_sample_cosine_dir(sf->ng, v1, v2);
    return 1;
}

/* Whether shading gathers photons at a surface of material m: it has a
 * diffuse share the Whitted chain shows (a perfect mirror or clear glass
 * shows only what its next ray brings). */
RT_HD int rt_photon_gathers(const RtShadeParams *sp, const RtShadeMaterial *m)
{
    return rt_photon_specular_share(sp, m) < 1.0f && fmaxf(m->kd.x, fmaxf(m->kd.y, m->kd.z)) > 0.0f;
}

/* Jensen 1996's density estimate from the n hits a kNN walk of map's tree
 * found around sf (kdp_knn_collect's heap: scratch[0] the k-th when n ==
 * k): L = (albedo / pi) * sum(flux) / (pi r^2), r the k-th neighbour's
 * distance (the gather radius when fewer were found), over photons that
 * arrived on the viewer's side (travelling against ng). Both backends' walks
 * give the same set; this sums it. */
RT_HD RtVec3 rt_photon_estimate_hits(const RtPhotonMap *map, uint32_t n, uint32_t k, float r2max,
                                     const RtShadeSurface *sf, const RtKdpHit *scratch)
{
    RtVec3 sum = v3(0.0f, 0.0f, 0.0f);
    if (n == 0) return sum;
    float r2 = n == k ? scratch[0].d2 : r2max;
    for (uint32_t i = 0; i < n; i++) {
        const RtPhoton *ph = &map->rec[scratch[i].point];
        if (v3_dot(ph->dir, sf->ng) < 0.0f) sum = v3_add(sum, ph->power);
    }
    /* k photons at one point: the radius of that point's float spacing */
    r2 = fmaxf(r2, 1e-30f);
    return v3_mul(sf->albedo, v3_scale(sum, 1.0f / (RT_PHOTON_PI * RT_PHOTON_PI * r2)));
}

/* Radiance toward the viewer from map's photons around surface sf
 * (rt_photon_estimate_hits over a lone walk). scratch holds k hits. */
RT_HD RtVec3 rt_photon_estimate(const RtPhotonMap *map, uint32_t k, float r2max, const RtShadeSurface *sf,
                                RtKdpHit *scratch)
{
    if (map->tree.count == 0) return v3(0.0f, 0.0f, 0.0f);
    float q[3] = {sf->p.x, sf->p.y, sf->p.z};
    /* the set is all the estimate needs: no sort (scratch[0] is the k-th) */
    uint32_t n = kdp_knn_collect(&map->tree, q, k, r2max, scratch);
    return rt_photon_estimate_hits(map, n, k, r2max, sf, scratch);
}

/* Both maps' radiance at sf (0 without maps). */
RT_HD RtVec3 rt_photon_radiance(const RtPhotonMaps *maps, const RtShadeSurface *sf, RtKdpHit *scratch)
{
    RtVec3 c = rt_photon_estimate(&maps->map[RT_PHOTON_CAUSTIC], maps->k, maps->r2, sf, scratch);
    return v3_add(c, rt_photon_estimate(&maps->map[RT_PHOTON_GLOBAL], maps->k, maps->r2, sf, scratch));
}

#ifdef __cplusplus
}
#endif
#endif
