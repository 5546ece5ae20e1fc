/* shade.h — the shading of stage "trace", written once for the CPU oracle
 * (src/render/render_cpu.c) and the GPU tracer (cuda/trace/trace.cu): the
 * shading parameters, the surface at a hit, texture lookups, the light
 * terms, the next ray of the Whitted chain (mirror or refraction) and the
 * pixel's bytes. docs/renderer.md describes the model.
 *
 * What stays with each backend is how it reaches its data and casts rays:
 * the CPU reads RtScene (indexed vertices, RtMaterial, RtTexture) and walks
 * its kd-tree per ray, the GPU reads per-triangle device arrays, filters
 * textures in the texture unit and traces warp-uniformly. So the functions
 * here take values (corner positions, a material's shading fields, a
 * light), never a scene, and the light loop is cut into steps around the
 * shadow ray the caller casts:
 *
 *   sf = rt_shade_surface(corners, hit, ray.d, kd)   albedo *= map_Kd texel at
 *        the mip level of the ray cone's width (rt_shade_cone_hit, _texture_lod)
 *   local = rt_shade_ambient(...)
 *   per light: ld = rt_shade_light(&sf, light)
 *              if shadows and rt_shade_shadow_ray(&ld, eps, &tmax):
 *                  cast from rt_shade_offset(&sf, eps) along ld.L to tmax;
 *                  through glass (rt_shade_shadow_casts_through): closest
 *                  hits, each crossing rt_shade_shadow_cross
 *              if ld.lit and not blocked:
 *                  local += transmittance * rt_shade_light_term(...)
 *   rt_shade_path_next(&path, ...): 0 = done, 1 = trace the new ray
 *   (a miss: rt_shade_path_miss), then rt_shade_pixel.
 *
 * The GPU image is checked against the CPU one (tests/test_gpu_trace.c), so
 * both run these very formulas; they differ where nvcc contracts a*b + c
 * into an FMA, in the last ulps of powf, and in the texture unit's 8-bit
 * bilinear and mip-level weights (docs/trace_gpu.md). */
#ifndef RT_SHADE_H
#define RT_SHADE_H

#include "core/camera.h"
#include "core/isect.h"
#include "scene/scene.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Secondary rays start this fraction of the scene's bounding-box diagonal
 * off the surface: above float round-off of hit points (~1e-7 relative)
 * and far below any feature a scene models (1e-4 of a 10 m room is 1 mm). */
#define RT_SHADE_RAY_EPS_REL 1e-4f
/* ... and at least this fraction of the hit point's largest coordinate: a
 * hit point is computed to a few units in the last place of its
 * coordinates, so far from the origin (a model at 15,000, floats 1e-3
 * apart) the scene-size offset alone would start secondary rays below the
 * surface (self-shadowing "acne"). 32 float ulps (2^-23 relative each)
 * clear that error several times over. */
#define RT_SHADE_RAY_EPS_POS (32.0f * 1.1920929e-7f)
/* Surfaces a shadow ray may cross (d < 1, refraction on) before the light
 * counts as blocked: a glass object is two surfaces (in, out), so 8 passes
 * four panes or glasses in a row (BART kitchen's glass on a glass table
 * is four); each costs one closest-hit cast, and the light left after 8
 * crossings of typical d >= 0.3 glass is below 0.7^8 = 6 %. */
#define RT_SHADE_SHADOW_MAX_CROSSINGS 8
/* Ambient occlusion: the rays "ao on" casts per shaded surface and frame,
 * and the most --trace ao= takes. Two give each frame a 0 / 1/2 / 1
 * estimate instead of one ray's black-or-white speckle; accumulated frames
 * (RtShadeParams.sample) average them to the integral, so more per frame
 * only buys a less noisy first frame at a proportional cost. */
#define RT_SHADE_AO_RAYS_ON 2
#define RT_SHADE_AO_MAX_RAYS 16
/* Heatmap: kd-tree nodes visited mapped to the top of the colour ramp. */
#define RT_SHADE_HEAT_MAX_STEPS 128.0f
/* An alpha-mask (map_d) value below this makes the surface a hole: the
 * midpoint of a 0..1 coverage, so a filtered edge cuts halfway between an
 * opaque and a clear texel. */
#define RT_SHADE_ALPHA_CUTOFF 0.5f
/* The largest mip level rt_shade_texture_lod returns: past the 1 x 1 level
 * of any texture (2^30 texels a side), and finite for the GPU's lookup
 * when a ray grazes (cos_nd -> 0). */
#define RT_SHADE_LOD_MAX 30.0f

/* ---- parameters ---------------------------------------------------------- */

/* How linear colour becomes display values (rt_shade_pixel). */
typedef enum RtShadeTonemap {
    RT_TONEMAP_CLAMP = 0, /* clamp to [0, 1]: the scene's colours as authored */
    RT_TONEMAP_ACES = 1   /* ACES filmic (Narkowicz 2015's fit): highlights roll off instead of clipping */
} RtShadeTonemap;

/* How map_Kd is filtered (RtShadeParams.tex_filter; docs/renderer.md,
 * "Texture filtering"). */
typedef enum RtTexFilter {
    RT_TEX_BILINEAR = 0, /* level 0 alone, at any distance: sharp, aliases when minified */
    RT_TEX_TRILINEAR = 1 /* two mip levels around the ray cone's footprint */
} RtTexFilter;

/* How a frame is shaded: RtRenderParams.shade (CPU) and RtTraceParams.shade
 * (GPU) are this struct, so both backends read the same switches. Defaults:
 * rt_shade_params_default, each value with its reason. */
typedef struct RtShadeParams {
    int max_bounces;   /* secondary rays (mirror or refraction) after the primary, 0..64 */
    int shadows;       /* 1: one shadow ray per light */
    int textures;      /* 1: map_Kd colours the surface, map_d cuts holes */
    int refraction;    /* 1: a material with d < 1 passes light on (Snell with ni for illum 4/6/7) */
    int heatmap;       /* 1: pixel = kd-tree nodes visited by the primary ray */
    int tex_filter;    /* RtTexFilter of map_Kd */
    RtVec3 background; /* linear RGB of rays that leave the scene (with sky off and no environment map) */
    int sky;           /* 1: rays that leave the scene see a sky gradient (rt_shade_sky) instead */
    int emitters;      /* 1: emissive triangles (material Ke) light other surfaces (render/sample.h) */
    RtVec3 ambient;    /* linear ambient light, times the albedo */
    float exposure;    /* stops: linear colour x 2^exposure before tone mapping */
    int tonemap;       /* RtShadeTonemap */
    uint32_t sample;   /* the frame's sample of a pixel (progressive accumulation; 0 = the first):
                          every random draw of the frame's shading takes it as its seed
                          (render/sample.h), so sample s is the same on both backends */
    int ao_rays;       /* ambient occlusion: rays per shaded surface and frame, 0 = off,
                          1..RT_SHADE_AO_MAX_RAYS (docs/renderer.md) */
    float ao_distance; /* an AO ray's reach, a fraction of the scene's bounding-box diagonal */
} RtShadeParams;

RT_HD RtShadeParams rt_shade_params_default(void)
{
    RtShadeParams p;
    p.max_bounces = 1; /* one bounce: mirrors and glass show what is behind
                          them at one extra ray per pixel */
    p.shadows = 1;     /* the point of a ray tracer; off only to time primary rays */
    p.textures = 1;    /* OBJ/MTL scenes (Sponza) need map_Kd and map_d to look right */
    p.refraction = 1;  /* MTL d < 1 (glass, AFF T > 0) is modelled, not drawn opaque */
    p.heatmap = 0;     /* a debugging view */
    p.tex_filter = RT_TEX_TRILINEAR; /* distant checkers and floors without moire */
    p.background = v3(0.05f, 0.06f, 0.09f); /* dark blue-grey: misses stand out from black surfaces */
    p.sky = 1;         /* a sky reads as outdoors and shows a view's orientation; flat is a key away */
    p.emitters = 0;    /* off: scenes written for the Whitted model pair a glowing lamp panel with
                          a point light, which would then light twice; on for files whose
                          emissive surfaces are their lights (glTF emissive, MTL Ke) */
    p.ambient = v3(0.08f, 0.08f, 0.08f);    /* shadowed sides stay readable under one light */
    p.exposure = 0.0f;               /* scenes are authored for display values as they are */
    p.tonemap = RT_TONEMAP_CLAMP;    /* likewise; ACES for light-heavy views (photons, area lights) */
    p.sample = 0;
    p.ao_rays = 0;        /* off: it multiplies the rays per hit; RT_SHADE_AO_RAYS_ON when chosen */
    p.ao_distance = 0.05f; /* 5 %: a Sponza column's base (~40 m diagonal: 2 m), the Cornell
                              boxes' feet (3.5 m: 17 cm) darken; walls across a room do not */
    return p;
}

/* ---- materials and surfaces ---------------------------------------------- */

/* What shading reads of a material (RtMaterial's fields, scene.h); the GPU
 * stores it as uploaded (RtGpuMaterial.shade), the CPU takes it per hit. */
typedef struct RtShadeMaterial {
    RtVec3 kd, ks, ke; /* diffuse, specular, emission (linear RGB) */
    float ns;          /* Phong exponent (clamped to >= 1 when used) */
    float ni;          /* index of refraction */
    float d;           /* opacity: < 1 refracts (with RtShadeParams.refraction) */
    float reflect;     /* mirror reflectivity, clamped to 0..1 when used */
    int illum;         /* MTL model: 4/6/7 bend transmitted rays by ni */
} RtShadeMaterial;

RT_HD RtShadeMaterial rt_shade_material(const RtMaterial *m)
{
    RtShadeMaterial s;
    s.kd = m->kd;
    s.ks = m->ks;
    s.ke = m->ke;
    s.ns = m->ns;
    s.ni = m->ni;
    s.d = m->d;
    s.reflect = m->reflect;
    s.illum = m->illum;
    return s;
}

typedef struct RtShadeSurface {
    RtVec3 p;      /* hit point, from the barycentrics (on the triangle's plane) */
    RtVec3 ng;     /* unit geometric normal, facing the incoming ray */
    RtVec3 n;      /* unit shading normal, on ng's side */
    int front;     /* 1: the ray hit the side the winding's normal points to */
    RtVec3 albedo; /* Kd; the caller multiplies in the map_Kd texel */
} RtShadeSurface;

/* The surface at barycentrics (u, v) of corners b and c, seen along dir.
 * Triangles are two-sided: ng faces the ray, and the interpolated normal is
 * flipped to ng's side (judged by the exact geometric normal, not by the
 * interpolated one, which may graze); ng when the normals sum to zero. */
RT_HD RtShadeSurface rt_shade_surface(RtVec3 a, RtVec3 b, RtVec3 c, RtVec3 na, RtVec3 nb,
                                      RtVec3 nc, float u, float v, RtVec3 dir, RtVec3 kd)
{
    RtShadeSurface sf;
    float w = 1.0f - u - v;
    sf.p = v3_add(v3_add(v3_scale(a, w), v3_scale(b, u)), v3_scale(c, v));
    sf.ng = v3_norm(v3_cross(v3_sub(b, a), v3_sub(c, a)));
    sf.front = v3_dot(sf.ng, dir) <= 0.0f;
    if (!sf.front) sf.ng = v3_scale(sf.ng, -1.0f);
    sf.n = v3_add(v3_add(v3_scale(na, w), v3_scale(nb, u)), v3_scale(nc, v));
    float nl = v3_len(sf.n);
    if (!(nl > 1e-12f) || !isfinite(nl)) sf.n = sf.ng;
    else sf.n = v3_scale(sf.n, 1.0f / nl);
    if (v3_dot(sf.n, sf.ng) < 0.0f) sf.n = v3_scale(sf.n, -1.0f);
    sf.albedo = kd;
    return sf;
}

/* The offset at point p: the scene's eps, or more where p's own float
 * spacing demands it (RT_SHADE_RAY_EPS_POS). */
RT_HD float rt_shade_eps_at(RtVec3 p, float eps)
{
    float m = fmaxf(fabsf(p.x), fmaxf(fabsf(p.y), fabsf(p.z)));
    return fmaxf(eps, RT_SHADE_RAY_EPS_POS * m);
}

/* Where secondary rays on the viewer's side start: eps (at least the hit
 * point's own, rt_shade_eps_at) along ng. */
RT_HD RtVec3 rt_shade_offset(const RtShadeSurface *sf, float eps)
{
    return v3_add(sf->p, v3_scale(sf->ng, rt_shade_eps_at(sf->p, eps)));
}

/* eps of the scene whose finite vertices span bounds (RT_SHADE_RAY_EPS_REL
 * of the diagonal; the constant itself for a point or an empty scene). */
RT_HD float rt_shade_ray_eps(RtAabb bounds)
{
    float diag = aabb_is_empty(bounds) ? 0.0f : v3_len(v3_sub(bounds.hi, bounds.lo));
    return diag > 0.0f && isfinite(diag) ? RT_SHADE_RAY_EPS_REL * diag : RT_SHADE_RAY_EPS_REL;
}

/* The scene diagonal that eps = rt_shade_ray_eps(bounds) came from (1 for
 * a point or an empty scene): both backends hold eps, not the bounds. */
RT_HD float rt_shade_eps_diagonal(float eps)
{
    return eps / RT_SHADE_RAY_EPS_REL;
}

/* ---- textures -------------------------------------------------------------- */

/* Texture coordinate at barycentrics (u, v); uv = u0 v0 u1 v1 u2 v2. */
RT_HD void rt_shade_uv(const float uv[6], float u, float v, float *tu, float *tv)
{
    float w = 1.0f - u - v;
    *tu = w * uv[0] + u * uv[2] + v * uv[4];
    *tv = w * uv[1] + u * uv[3] + v * uv[5];
}

/* sRGB byte -> linear, and linear [0, 1] -> sRGB byte (clamped; NaN -> 0). */
RT_HD float rt_shade_srgb8_to_linear(uint8_t c)
{
    float s = c / 255.0f;
    return s <= 0.04045f ? s / 12.92f : powf((s + 0.055f) / 1.055f, 2.4f);
}

RT_HD uint8_t rt_shade_linear_to_srgb8(float c)
{
    if (!(c > 0.0f)) return 0;
    if (c >= 1.0f) return 255;
    float s = c <= 0.0031308f ? 12.92f * c : 1.055f * powf(c, 1.0f / 2.4f) - 0.055f;
    return (uint8_t)(s * 255.0f + 0.5f);
}

typedef struct RtShadeTexel {
    float c[4]; /* r g b a, 0..1 */
} RtShadeTexel;

RT_HD int rt_shade_wrap(int i, int n)
{
    int r = i % n;
    return r < 0 ? r + n : r;
}

/* Texel (x, y), wrapped; RGB through srgb_lut (byte -> linear) when given. */
RT_HD RtShadeTexel rt_shade_texel(const RtTexture *t, int x, int y, const float *srgb_lut)
{
    const uint8_t *p = &t->rgba[4 * ((size_t)rt_shade_wrap(y, t->h) * t->w + rt_shade_wrap(x, t->w))];
    RtShadeTexel r;
    for (int k = 0; k < 3; k++) r.c[k] = srgb_lut ? srgb_lut[p[k]] : p[k] * (1.0f / 255.0f);
    r.c[3] = p[3] * (1.0f / 255.0f);
    return r;
}

/* The texture filter: bilinear, wrap-around, texel centres at half-integers;
 * UV follows OBJ (v = 0 is the image's bottom row, RtTexture row 0 its top,
 * hence 1 - v); RGB is decoded per texel before filtering when srgb_lut is
 * given (map_Kd), alpha never is (map_d reads raw texels). The CPU samples
 * with this; the GPU's texture unit runs the same filter (gpu_scene.cu sets
 * it up: wrap, linear, sRGB for map_Kd) with 8-bit weights. */
RT_HD RtShadeTexel rt_shade_texture_sample(const RtTexture *t, const float *srgb_lut, float tu,
                                           float tv)
{
    /* Wrap to [0, 1) first, so the int conversion below cannot overflow
     * for huge UVs (NaN/inf stay non-finite and fall back to texel 0). */
    tu -= floorf(tu);
    tv -= floorf(tv);
    float x = tu * (float)t->w - 0.5f, y = (1.0f - tv) * (float)t->h - 0.5f;
    if (!isfinite(x) || !isfinite(y)) x = y = 0.0f;
    float fx = floorf(x), fy = floorf(y);
    float ax = x - fx, ay = y - fy;
    int x0 = (int)fx, y0 = (int)fy;
    RtShadeTexel a = rt_shade_texel(t, x0, y0, srgb_lut), b = rt_shade_texel(t, x0 + 1, y0, srgb_lut);
    RtShadeTexel c = rt_shade_texel(t, x0, y0 + 1, srgb_lut);
    RtShadeTexel d = rt_shade_texel(t, x0 + 1, y0 + 1, srgb_lut);
    RtShadeTexel r;
    for (int k = 0; k < 4; k++) {
        float top = a.c[k] + (b.c[k] - a.c[k]) * ax;
        float bot = c.c[k] + (d.c[k] - c.c[k]) * ax;
        r.c[k] = top + (bot - top) * ay;
    }
    return r;
}

/* ---- texture level of detail: ray cones --------------------------------------
 * Akenine-Moller et al., "Texture Level of Detail Strategies for Real-Time
 * Ray Tracing", Ray Tracing Gems (2019), ch. 20: a cone around each eye
 * ray, as wide as a pixel's footprint, picks the mip level whose texels are
 * that wide. The curvature term (their beta) is omitted: a mirror or a
 * refraction passes the cone on with the spread it came with, so the width
 * grows with the whole chain's length, as if every surface were flat. */

typedef struct RtShadeCone {
    float width;  /* at the ray's origin, world units */
    float spread; /* angle, radians: width gained per unit of distance */
} RtShadeCone;

/* A primary ray's cone: width 0 at the eye, spread one pixel's angle,
 * gamma = atan(2 tan(fov_y / 2) / height) (their eq. 30; cam->up is
 * tan(fov_y / 2) long). With RT_TEX_BILINEAR the spread is 0: every
 * lookup lands on level 0, today's filter. */
RT_HD RtShadeCone rt_shade_cone_primary(const RtShadeParams *p, const RtCameraBasis *cam)
{
    RtShadeCone c;
    c.width = 0.0f;
    c.spread = p->tex_filter == RT_TEX_TRILINEAR ? atanf(2.0f * v3_len(cam->up) * cam->inv_h) : 0.0f;
    return c;
}

/* Moves the cone to a hit t along its ray and returns its width there
 * (w_i = w_{i-1} + gamma t_i, small angles): the width the lookup at the
 * hit uses and the next ray of the chain starts with. */
RT_HD float rt_shade_cone_hit(RtShadeCone *c, float t)
{
    c->width += c->spread * t;
    return c->width;
}

/* The mip level (lambda, their eq. 34) of a cone width wide meeting the
 * triangle (a, b, c) with texture coordinates uv (rt_shade_uv's) at cosine
 * cos_nd between its geometric normal and the ray, in a tw x th texture:
 *   lambda = Delta_0 + log2(|width| / |cos_nd|),
 *   Delta_0 = 0.5 log2(t_a / p_a), t_a = tw th |uv area x 2|, p_a = |world area x 2|
 * (texels per world unit, squared). 0 (level 0) for a zero width, a
 * triangle without UV area, or NaN; the caller clamps to its last level. */
RT_HD float rt_shade_texture_lod(RtVec3 a, RtVec3 b, RtVec3 c, const float uv[6], int tw, int th,
                                 float width, float cos_nd)
{
    float ta = (float)tw * (float)th *
               fabsf((uv[2] - uv[0]) * (uv[5] - uv[1]) - (uv[4] - uv[0]) * (uv[3] - uv[1]));
    float pa = v3_len(v3_cross(v3_sub(b, a), v3_sub(c, a)));
    float lod = 0.5f * log2f(ta / pa) + log2f(fabsf(width) / fabsf(cos_nd));
    return lod > 0.0f ? fminf(lod, RT_SHADE_LOD_MAX) : 0.0f;
}

/* The trilinear filter: rt_shade_texture_sample (bilinear) on levels
 * floor(lod) and the next, blended by lod's fraction (Williams 1983);
 * lod clamped to the levels t has. At lod 0 it is the bilinear filter of
 * level 0 exactly. The GPU's texture unit does the same (tex2DLod on the
 * mipmapped array gpu_scene.cu uploads these very levels into). */
RT_HD RtShadeTexel rt_shade_texture_trilinear(const RtTexture *t, const float *srgb_lut, float tu,
                                              float tv, float lod)
{
    float l = fminf(lod, (float)((t->levels > 1 ? t->levels : 1) - 1));
    if (!(l > 0.0f)) return rt_shade_texture_sample(t, srgb_lut, tu, tv);
    int l0 = (int)l;
    float f = l - (float)l0;
    RtTexture lv = rt_texture_level(t, l0);
    RtShadeTexel r = rt_shade_texture_sample(&lv, srgb_lut, tu, tv);
    if (f > 0.0f) {
        lv = rt_texture_level(t, l0 + 1);
        RtShadeTexel n = rt_shade_texture_sample(&lv, srgb_lut, tu, tv);
        for (int k = 0; k < 4; k++) r.c[k] += (n.c[k] - r.c[k]) * f;
    }
    return r;
}

/* Whether a map_d texture's mask is its alpha (some texel below 255) or,
 * for grey-scale masks (loaded as RGBA with alpha 255), its luminance.
 * Decided once per texture at load / upload. */
RT_HD int rt_shade_texture_has_alpha(const RtTexture *t)
{
    size_t n = (size_t)t->w * t->h;
    for (size_t i = 0; i < n; i++)
        if (t->rgba[4 * i + 3] != 255) return 1;
    return 0;
}

/* The map_d test of a filtered, undecoded texel: 0 = a hole (the hit
 * filter of primary, secondary and shadow rays alike). Masks are read at
 * level 0 at any distance, never through the cone's LOD: averaged alpha
 * falls below the cut-off where thin opaque strands (a fence, leaves) meet
 * holes, and a far fence would vanish (Castano 2010, "Computing Alpha
 * Mipmaps"); the hit filter also runs inside traversal, where no cone is
 * known, and shadow rays have none. */
RT_HD int rt_shade_alpha_passes(float r, float g, float b, float a, int uses_alpha)
{
    float mask = uses_alpha ? a : 0.2126f * r + 0.7152f * g + 0.0722f * b;
    return mask >= RT_SHADE_ALPHA_CUTOFF;
}

/* ---- direct light: Lambert + Phong per visible light ---------------------- */

/* Emission plus ambient: the local colour before any light. */
RT_HD RtVec3 rt_shade_ambient(const RtShadeMaterial *m, const RtShadeSurface *sf, RtVec3 ambient)
{
    return v3_add(m->ke, v3_mul(ambient, sf->albedo));
}

typedef struct RtShadeLight {
    RtVec3 L;   /* unit direction toward the light */
    float dist; /* distance to a point light; INFINITY for a directional one */
    float ndl;  /* N.L */
    int lit;    /* 1: the light faces the surface (a shadow ray may still block it) */
} RtShadeLight;

/* A light that lights nothing (a lane without a surface, on the GPU). */
RT_HD RtShadeLight rt_shade_light_none(void)
{
    RtShadeLight r;
    r.L = v3(0.0f, 0.0f, 1.0f);
    r.dist = INFINITY;
    r.ndl = 0.0f;
    r.lit = 0;
    return r;
}

/* The light as seen from the surface. It faces the surface when N.L > 0
 * and Ng.L > 0: a light behind the surface's plane does not reach the
 * viewer's side, whatever the interpolated normal says. A point light at
 * the hit point (distance 0) lights nothing. */
RT_HD RtShadeLight rt_shade_light(const RtShadeSurface *sf, const RtLight *l)
{
    RtShadeLight r = rt_shade_light_none();
    r.lit = 1;
    if (l->type == RT_LIGHT_DIRECTIONAL) {
        r.L = v3_norm(l->v);
    } else {
        RtVec3 d = v3_sub(l->v, sf->p);
        r.dist = v3_len(d);
        r.lit = r.dist > 0.0f;
        if (r.lit) r.L = v3_scale(d, 1.0f / r.dist);
    }
    r.ndl = v3_dot(sf->n, r.L);
    r.lit = r.lit && r.ndl > 0.0f && v3_dot(sf->ng, r.L) > 0.0f;
    return r;
}

/* The shadow ray's end: eps short of a point light (geometry the light sits
 * on does not shadow it), none for a directional one. Returns 1 when a ray
 * is to be cast (from rt_shade_offset along ld->L over [0, *tmax]); a lit
 * light closer than eps is visible without one. */
RT_HD int rt_shade_shadow_ray(const RtShadeLight *ld, float eps, float *tmax)
{
    *tmax = isinf(ld->dist) ? INFINITY : ld->dist - eps;
    return ld->lit && *tmax > 0.0f;
}

/* ---- shadow rays through transparent surfaces ------------------------------ */

/* Whether some of the n materials has d < 1: decided once per scene. A
 * frame's shadow rays look for transparent surfaces only when this holds
 * and refraction is on (rt_shade_shadow_casts_through); otherwise, in every
 * opaque scene, a shadow ray is one any-hit cast, as before transparency. */
RT_HD int rt_shade_materials_transmit(const RtMaterial *mats, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (mats[i].d < 1.0f) return 1;
    return 0;
}

RT_HD int rt_shade_shadow_casts_through(const RtShadeParams *p, int materials_transmit)
{
    return p->refraction && materials_transmit;
}

/* A shadow ray's closest hit at t on a surface of material m, the
 * crossing-th (from 0) of its cast from o along d: multiplies *trans by
 * what the surface lets through and returns 1 with *tmin where the next
 * cast starts (just past the hit), or 0 when the ray ends here (with
 * *trans = 0 when the light is blocked). The Whitted approximation:
 * light goes straight through (no bending by ni, no Fresnel, no
 * caustics), scaled by
 *   (1 - d) * Kd / max(Kd.r, Kd.g, Kd.b)
 * so clear glass (grey Kd) passes 1 - d, coloured glass tints by its hue
 * at full brightness, and a black Kd (MTL's usual for clear glass with a
 * specular highlight only) counts as white. The material's Kd, not the
 * map_Kd texel: a texture lookup per crossing is dear and tinted textured
 * glass is rare. Opaque surfaces (d >= 1, or refraction off) block. map_d
 * holes never get here: the cast's hit filter skips them, as for an
 * opaque shadow ray. */
RT_HD int rt_shade_shadow_cross(const RtShadeParams *p, const RtShadeMaterial *m, RtVec3 o, RtVec3 d,
                                float t, float tmax, float eps, int crossing, RtVec3 *trans, float *tmin)
{
    float k = fmaxf(m->kd.x, fmaxf(m->kd.y, m->kd.z));
    RtVec3 tint = k > 0.0f ? v3_scale(m->kd, 1.0f / k) : v3(1.0f, 1.0f, 1.0f);
    int passes = p->refraction && m->d < 1.0f && crossing < RT_SHADE_SHADOW_MAX_CROSSINGS;
    *trans = passes ? v3_mul(*trans, v3_scale(tint, 1.0f - fmaxf(m->d, 0.0f))) : v3(0.0f, 0.0f, 0.0f);
    *tmin = t + rt_shade_eps_at(v3_add(o, v3_scale(d, t)), eps);
    return passes && fmaxf(trans->x, fmaxf(trans->y, trans->z)) > 0.0f && *tmin < tmax;
}

/* A visible light's contribution: color * (albedo N.L + Ks max(0, R.V)^Ns),
 * R = L mirrored about N, V = view (unit, toward the viewer). No distance
 * falloff (docs/renderer.md says why). */
RT_HD RtVec3 rt_shade_light_term(const RtShadeSurface *sf, const RtShadeMaterial *m, RtVec3 color,
                                 const RtShadeLight *ld, RtVec3 view)
{
    RtVec3 lc = v3_mul(sf->albedo, v3_scale(color, ld->ndl));
    if (m->ks.x > 0.0f || m->ks.y > 0.0f || m->ks.z > 0.0f) {
        RtVec3 r = v3_sub(v3_scale(sf->n, 2.0f * ld->ndl), ld->L);
        float rv = v3_dot(r, view);
        float ns = m->ns > 1.0f ? m->ns : 1.0f;
        if (rv > 0.0f) lc = v3_add(lc, v3_scale(v3_mul(m->ks, color), powf(rv, ns)));
    }
    return lc;
}

/* ---- the next ray: mirror or refraction ------------------------------------ */

/* d mirrored about the unit normal n. */
RT_HD RtVec3 rt_shade_mirror(RtVec3 d, RtVec3 n)
{
    return v3_sub(d, v3_scale(n, 2.0f * v3_dot(d, n)));
}

/* The mirror ray: about the shading normal (tessellated spheres look
 * smooth); about the geometric one when that sends the ray into the surface
 * (grazing angles, interpolated normals). */
RT_HD RtRay rt_shade_reflect_ray(const RtShadeSurface *sf, RtVec3 d, float eps)
{
    RtVec3 r = rt_shade_mirror(d, sf->n);
    if (v3_dot(r, sf->ng) <= 0.0f) r = rt_shade_mirror(d, sf->ng);
    RtRay out = {rt_shade_offset(sf, eps), v3_norm(r)};
    return out;
}

/* The transmitted ray through a surface with d < 1: bent by Snell's law
 * about the geometric normal for MTL illum 4/6/7 with ni > 0 (eta = 1/ni
 * entering the front side, ni leaving through the back), straight on
 * otherwise; it starts eps behind the surface. Total internal reflection
 * mirrors it about the geometric normal instead. */
RT_HD RtRay rt_shade_refract_ray(const RtShadeMaterial *m, const RtShadeSurface *sf, RtVec3 d,
                                 float eps)
{
    int bends = (m->illum == 4 || m->illum == 6 || m->illum == 7) && m->ni > 0.0f;
    float eta = bends ? (sf->front ? 1.0f / m->ni : m->ni) : 1.0f;
    float cosi = -v3_dot(d, sf->ng);
    float k = 1.0f - eta * eta * (1.0f - cosi * cosi);
    RtRay out;
    if (k >= 0.0f) {
        RtVec3 t = v3_add(v3_scale(d, eta), v3_scale(sf->ng, eta * cosi - sqrtf(k)));
        out.o = v3_sub(sf->p, v3_scale(sf->ng, rt_shade_eps_at(sf->p, eps)));
        out.d = v3_norm(t);
    } else {
        out.o = rt_shade_offset(sf, eps);
        out.d = v3_norm(rt_shade_mirror(d, sf->ng));
    }
    return out;
}

/* A pixel's Whitted chain, unrolled: colour = sum over the chain of
 * through * (share of local), through *= what the surface passes on. */
typedef struct RtShadePath {
    RtVec3 color;   /* linear RGB gathered so far */
    RtVec3 through; /* weight of the next ray's colour */
} RtShadePath;

RT_HD RtShadePath rt_shade_path_start(void)
{
    RtShadePath path = {{0.0f, 0.0f, 0.0f}, {1.0f, 1.0f, 1.0f}};
    return path;
}

/* The ray left the scene: it brings what it sees there (rt_shade_background). */
RT_HD void rt_shade_path_miss(RtShadePath *path, RtVec3 radiance)
{
    path->color = v3_add(path->color, v3_mul(path->through, radiance));
}

/* Adds the surface's local colour to the path and continues it: returns 1
 * with *ray the next ray, or 0 when the chain ends here.
 *   transparent (d < 1, refraction on): d * local, the rest (1 - d) goes on
 *     through the surface (rt_shade_refract_ray);
 *   mirror (reflect r > 0): (1 - r) * local, r goes on (rt_shade_reflect_ray);
 *   else, or at depth max_bounces: the full local colour, so with
 *     max_bounces = 0 a mirror shows its own diffuse/specular colour.
 * Transparency wins over mirroring; both share the bounce budget. */
RT_HD int rt_shade_path_next(RtShadePath *path, const RtShadeParams *p, const RtShadeMaterial *m,
                             const RtShadeSurface *sf, RtVec3 local, float eps, int depth,
                             RtRay *ray)
{
    float r = fminf(fmaxf(m->reflect, 0.0f), 1.0f);
    int transparent = p->refraction && m->d < 1.0f;
    if (depth >= p->max_bounces || (r <= 0.0f && !transparent)) {
        path->color = v3_add(path->color, v3_mul(path->through, local));
        return 0;
    }
    if (transparent) {
        float opacity = fmaxf(m->d, 0.0f);
        path->color = v3_add(path->color, v3_mul(path->through, v3_scale(local, opacity)));
        path->through = v3_scale(path->through, 1.0f - opacity);
        *ray = rt_shade_refract_ray(m, sf, ray->d, eps);
        return 1;
    }
    path->color = v3_add(path->color, v3_mul(path->through, v3_scale(local, 1.0f - r)));
    path->through = v3_scale(path->through, r);
    *ray = rt_shade_reflect_ray(sf, ray->d, eps);
    return 1;
}

/* ---- what rays see when they leave the scene ------------------------------- */

/* An environment map as shading reads it (RtEnvMap's numbers; rgb: host
 * memory for the CPU, device memory for the GPU; NULL: none). */
typedef struct RtShadeEnv {
    const float *rgb;
    int w, h;
    float intensity, rotate;
} RtShadeEnv;

#define RT_SHADE_PI 3.14159265358979f

/* The map's radiance along unit direction d: equirectangular (RtEnvMap's
 * orientation), bilinear, wrapping in longitude and clamped at the poles;
 * the same float arithmetic on both backends (global memory, no texture
 * unit). */
RT_HD RtVec3 rt_shade_env_radiance(const RtShadeEnv *e, RtVec3 d)
{
    float lon = atan2f(d.x, -d.z) + e->rotate, lat = acosf(fminf(fmaxf(d.y, -1.0f), 1.0f));
    float u = lon * (0.5f / RT_SHADE_PI), v = lat * (1.0f / RT_SHADE_PI);
    u -= floorf(u);
    float x = u * (float)e->w - 0.5f, y = v * (float)e->h - 0.5f;
    if (!isfinite(x) || !isfinite(y)) x = y = 0.0f;
    float fx = floorf(x), fy = floorf(y), ax = x - fx, ay = y - fy;
    int x0 = (int)fx, y0 = (int)fy;
    RtVec3 c = v3(0.0f, 0.0f, 0.0f);
    for (int k = 0; k < 4; k++) {
        int xi = x0 + (k & 1), yi = y0 + (k >> 1);
        xi = ((xi % e->w) + e->w) % e->w;
        yi = yi < 0 ? 0 : yi >= e->h ? e->h - 1 : yi;
        float wgt = ((k & 1) ? ax : 1.0f - ax) * ((k >> 1) ? ay : 1.0f - ay);
        const float *t = &e->rgb[3 * ((size_t)yi * e->w + xi)];
        c = v3_add(c, v3_scale(v3(t[0], t[1], t[2]), wgt));
    }
    return v3_scale(c, e->intensity);
}

/* The default sky along unit direction d: a zenith blue fading to a pale
 * horizon above, a dim ground below (linear RGB, below 1 so that clamped
 * display keeps it). */
RT_HD RtVec3 rt_shade_sky(RtVec3 d)
{
    const RtVec3 zenith = v3(0.16f, 0.32f, 0.72f), horizon = v3(0.62f, 0.70f, 0.80f), ground = v3(0.18f, 0.17f, 0.16f);
    if (d.y < 0.0f) return v3_add(v3_scale(horizon, 1.0f + 4.0f * fmaxf(d.y, -0.25f)),
                                  v3_scale(ground, -4.0f * fmaxf(d.y, -0.25f)));
    float t = sqrtf(fminf(d.y, 1.0f));
    return v3_add(v3_scale(horizon, 1.0f - t), v3_scale(zenith, t));
}

/* What a ray along d sees past the scene: the environment map, else the
 * sky, else the flat background. */
RT_HD RtVec3 rt_shade_background(const RtShadeParams *p, const RtShadeEnv *env, RtVec3 d)
{
    if (env && env->rgb) return rt_shade_env_radiance(env, d);
    return p->sky ? rt_shade_sky(d) : p->background;
}

/* ---- the frame's per-pixel state ------------------------------------------- */

struct RtPhotonMaps; /* photon/photon.h */

/* An emissive triangle as a light (RtShadeParams.emitters): picked with
 * probability `pick` (its Ke luminance times its rest-pose area, of the
 * scene's total), cdf = the picks up to and including it. */
typedef struct RtEmitter {
    uint32_t tri;
    float pick, cdf;
    RtVec3 ke;
} RtEmitter;

typedef struct RtShadeEmitters {
    const RtEmitter *e; /* host or device; NULL: none */
    uint32_t count;
} RtShadeEmitters;

/* What a frame's shading reads and writes besides the scene and the
 * structure, each optional (NULL: none): host memory for the CPU renderer,
 * device memory for the GPU tracer. */
typedef struct RtShadeFrame {
    const struct RtPhotonMaps *photons; /* the frame's photon maps: every shaded surface adds their estimate */
    RtFloat4 *accum;                    /* w*h sums of linear colour (xyz) for progressive accumulation */
    RtShadeEnv env;                     /* the environment map (rgb NULL: none) */
    RtShadeEmitters emit;               /* the emissive triangles (with RtShadeParams.emitters) */
} RtShadeFrame;

/* Progressive accumulation: sample 0 starts pixel's sum, sample s adds the
 * (s+1)-th colour; returns the mean so far. Sums in float: 2^24 / 255
 * samples of a white pixel stay exact to a byte, far beyond any still
 * view. Sample 0 (every frame while the view moves) only writes: a read
 * of the old sum at the end of the GPU's pixel loop waits a memory latency
 * at low occupancy (ncu: Sponza's primary pass 2.00 -> 2.29 ms with it). */
RT_HD RtVec3 rt_shade_accumulate(RtFloat4 *sum, RtVec3 color, uint32_t sample)
{
    RtFloat4 a;
    a.x = color.x, a.y = color.y, a.z = color.z, a.w = 0.0f;
    if (sample == 0) {
        *sum = a;
        return color;
    }
    a = *sum;
    a.x += color.x, a.y += color.y, a.z += color.z, a.w = 0.0f;
    *sum = a;
    float inv = 1.0f / (float)(sample + 1u);
    return v3(a.x * inv, a.y * inv, a.z * inv);
}

/* ---- the pixel -------------------------------------------------------------- */

/* A fixed ramp (dark blue, blue, cyan, yellow, red, dark red) over
 * 0..RT_SHADE_HEAT_MAX_STEPS visited nodes, in display (sRGB) space; more
 * saturate at dark red. Fixed so heatmaps of different scenes compare. */
RT_HD void rt_shade_heat_color(uint32_t steps, uint8_t out[3])
{
    const float stops[6][3] = {{0, 0, 0.5f}, {0, 0, 1}, {0, 1, 1}, {1, 1, 0}, {1, 0, 0}, {0.5f, 0, 0}};
    const float at[6] = {0.0f, 0.125f, 0.375f, 0.625f, 0.875f, 1.0f};
    float x = fminf((float)steps / RT_SHADE_HEAT_MAX_STEPS, 1.0f);
    int i = 0;
    while (i < 4 && x > at[i + 1]) i++;
    float f = (x - at[i]) / (at[i + 1] - at[i]);
    for (int k = 0; k < 3; k++) {
        float c = stops[i][k] + (stops[i + 1][k] - stops[i][k]) * f;
        out[k] = (uint8_t)(c * 255.0f + 0.5f);
    }
}

/* ACES filmic tone curve, Narkowicz 2015 ("ACES Filmic Tone Mapping
 * Curve"): x (2.51 x + 0.03) / (x (2.43 x + 0.59) + 0.14), in [0, 1) for
 * x >= 0. */
RT_HD float rt_shade_aces(float x)
{
    x = fmaxf(x, 0.0f);
    return fminf(x * (2.51f * x + 0.03f) / (x * (2.43f * x + 0.59f) + 0.14f), 1.0f);
}

/* Linear colour after exposure and tone mapping, ready for sRGB encoding. */
RT_HD RtVec3 rt_shade_tonemap(const RtShadeParams *p, RtVec3 c)
{
    if (p->exposure != 0.0f) c = v3_scale(c, exp2f(p->exposure));
    if (p->tonemap == RT_TONEMAP_ACES) c = v3(rt_shade_aces(c.x), rt_shade_aces(c.y), rt_shade_aces(c.z));
    return c;
}

/* The pixel's RGBA bytes: the path's colour after exposure and tone
 * mapping as sRGB, or the heatmap of the primary ray's steps; alpha 255. */
RT_HD void rt_shade_pixel(const RtShadeParams *p, RtVec3 color, uint32_t steps, uint8_t out[4])
{
    if (p->heatmap) {
        rt_shade_heat_color(steps, out);
    } else {
        color = rt_shade_tonemap(p, color);
        out[0] = rt_shade_linear_to_srgb8(color.x);
        out[1] = rt_shade_linear_to_srgb8(color.y);
        out[2] = rt_shade_linear_to_srgb8(color.z);
    }
    out[3] = 255;
}

#ifdef __cplusplus
}
#endif
#endif
