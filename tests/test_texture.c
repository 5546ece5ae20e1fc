/* test_texture.c — texture filtering (docs/renderer.md, "Texture
 * filtering"): the mip levels rt_texture_build_mips makes are box averages
 * in linear light (sizes 1, odd and random, against hand-computed values
 * and an oracle written here from the sRGB standard); the ray cone's LOD
 * is Akenine-Moller et al.'s formula for a plane at a known distance and
 * angle; the trilinear filter is level 0's bilinear one at LOD 0 and blends
 * two levels between. The images (grazing checker, bilinear = the old
 * image, far fences) are in test_render.c. */
#include "test_util.h"

#include "render/shade.h"
#include "scene/texture.h"

/* ---- helpers -------------------------------------------------------------- */

/* w x h texels from fn, with its mip levels. */
static RtTexture make_texture(int w, int h, uint8_t (*fn)(int x, int y, int k, void *ctx), void *ctx)
{
    RtTexture t = {NULL, w, h, malloc((size_t)w * h * 4), 1};
    assert_non_null(t.rgba);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int k = 0; k < 4; k++) t.rgba[4 * ((size_t)y * w + x) + k] = fn(x, y, k, ctx);
    RtError err = {0};
    assert_int_equal(rt_texture_build_mips(&t, &err), RT_OK);
    return t;
}

static const uint8_t *texel(const RtTexture *t, int level, int x, int y)
{
    RtTexture l = rt_texture_level(t, level);
    return &l.rgba[4 * ((size_t)y * l.w + x)];
}

/* IEC 61966-2-1, in double: the oracle's own decoding and encoding. */
static double srgb_decode(int c)
{
    double s = c / 255.0;
    return s <= 0.04045 ? s / 12.92 : pow((s + 0.055) / 1.055, 2.4);
}

static int srgb_encode(double c)
{
    double s = c <= 0.0031308 ? 12.92 * c : 1.055 * pow(c, 1.0 / 2.4) - 0.055;
    return (int)floor(s * 255.0 + 0.5);
}

/* ---- mip levels --------------------------------------------------------------- */

static uint8_t fill_random(int x, int y, int k, void *ctx)
{
    (void)x, (void)y, (void)k;
    return (uint8_t)(rt_test_rand((RtTestRng *)ctx) & 255u);
}

static void mips_level_sizes_down_to_one(void **state)
{
    (void)state;
    const int sizes[][3] = {{1, 1, 1}, {2, 2, 2}, {5, 3, 3}, {7, 1, 3}, {1, 16, 5}, {256, 256, 9}, {300, 17, 9}};
    RtTestRng rng = {7};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int w = sizes[i][0], h = sizes[i][1];
        assert_int_equal(rt_texture_level_count(w, h), sizes[i][2]);
        RtTexture t = make_texture(w, h, fill_random, &rng);
        assert_int_equal(t.levels, sizes[i][2]);
        size_t bytes = 0;
        for (int l = 0; l < t.levels; l++) {
            RtTexture v = rt_texture_level(&t, l);
            assert_int_equal(v.w, w >> l ? w >> l : 1);
            assert_int_equal(v.h, h >> l ? h >> l : 1);
            bytes += (size_t)v.w * v.h * 4;
        }
        RtTexture last = rt_texture_level(&t, t.levels - 1);
        assert_int_equal(last.w, 1);
        assert_int_equal(last.h, 1);
        assert_int_equal(rt_texture_bytes(&t), bytes);
        free(t.rgba);
    }
}

/* 2 x 2 black/white checker, alpha 0/255: level 1 is linear 0.5, sRGB 188
 * (1.055 * 0.5^(1/2.4) - 0.055 = 0.7354, * 255 = 187.5), not the 128 an
 * average of the bytes gives; alpha averages as stored: (0 + 255 * 2 +
 * 0) / 4 = 127.5 -> 128. */
static uint8_t fill_checker2(int x, int y, int k, void *ctx)
{
    (void)k, (void)ctx;
    return (x + y) & 1 ? 255 : 0;
}

/* 3 x 3, one white texel among black (odd: level 1 is 1 x 1, all nine
 * folded in): linear 1/9 -> 1.055 * 0.1111^(1/2.4) - 0.055 = 0.3673,
 * * 255 = 93.7 -> 94; alpha (255 + 8 * 9) / 9 = 36.3 -> 36. */
static uint8_t fill_one_white(int x, int y, int k, void *ctx)
{
    (void)ctx;
    if (k == 3) return x == 1 && y == 1 ? 255 : 9;
    return x == 1 && y == 1 ? 255 : 0;
}

/* 5 x 3: level 1 is 2 x 1, texel 0 the 2 x 3 block of columns 0-1, texel
 * 1 the 3 x 3 block of columns 2-4 (the odd last column folded in); only
 * column 4 is white. */
static uint8_t fill_last_column(int x, int y, int k, void *ctx)
{
    (void)y, (void)ctx;
    if (k == 3) return 255;
    return x == 4 ? 255 : 0;
}

static void mips_box_average_by_hand(void **state)
{
    (void)state;
    RtTexture t = make_texture(2, 2, fill_checker2, NULL);
    const uint8_t *p = texel(&t, 1, 0, 0);
    assert_int_equal(p[0], 188);
    assert_int_equal(p[1], 188);
    assert_int_equal(p[2], 188);
    assert_int_equal(p[3], 128);
    free(t.rgba);

    t = make_texture(3, 3, fill_one_white, NULL);
    assert_int_equal(t.levels, 2);
    p = texel(&t, 1, 0, 0);
    assert_int_equal(p[0], 94);
    assert_int_equal(p[3], 36);
    free(t.rgba);

    t = make_texture(5, 3, fill_last_column, NULL);
    assert_int_equal(texel(&t, 1, 0, 0)[0], 0);
    /* texel 1: three of nine linear 1, the rest 0: 1/3 -> 0.6132 * 255 = 156.4 */
    assert_int_equal(texel(&t, 1, 1, 0)[0], 156);
    /* level 2 (1 x 1): level 1's two texels, from their bytes: 156 decodes
     * to 0.3325, half of it 0.1663 encodes to 0.4446 * 255 = 113.4 */
    int expect = srgb_encode(0.5 * srgb_decode(156));
    assert_int_equal(expect, 113);
    assert_int_equal(texel(&t, 2, 0, 0)[0], expect);
    free(t.rgba);
}

/* Every level of random textures (sizes 1, odd, even, random) against the
 * oracle: each texel of level l + 1 is the mean of its span of level l
 * (2 texels a side, 3 for the last of an odd side, 1 for a side of 1), RGB
 * in linear light to within one step of rounding, alpha exactly. */
static void mips_random_sizes_match_oracle(void **state)
{
    (void)state;
    RtTestRng rng = {0x5eed};
    int sizes[12][2] = {{1, 1}, {1, 2}, {2, 1}, {3, 3}, {4, 4}, {9, 6}};
    for (int i = 6; i < 12; i++) {
        sizes[i][0] = 1 + (int)(rt_test_rand(&rng) % 70);
        sizes[i][1] = 1 + (int)(rt_test_rand(&rng) % 70);
    }
    for (int i = 0; i < 12; i++) {
        RtTexture t = make_texture(sizes[i][0], sizes[i][1], fill_random, &rng);
        for (int l = 1; l < t.levels; l++) {
            RtTexture src = rt_texture_level(&t, l - 1), dst = rt_texture_level(&t, l);
            for (int y = 0; y < dst.h; y++)
                for (int x = 0; x < dst.w; x++) {
                    int x0 = 2 * x < src.w ? 2 * x : 0, x1 = x == dst.w - 1 ? src.w : 2 * x + 2;
                    int y0 = 2 * y < src.h ? 2 * y : 0, y1 = y == dst.h - 1 ? src.h : 2 * y + 2;
                    double c[3] = {0, 0, 0};
                    int a = 0, n = (x1 - x0) * (y1 - y0);
                    for (int sy = y0; sy < y1; sy++)
                        for (int sx = x0; sx < x1; sx++) {
                            const uint8_t *q = texel(&t, l - 1, sx, sy);
                            for (int k = 0; k < 3; k++) c[k] += srgb_decode(q[k]);
                            a += q[3];
                        }
                    const uint8_t *p = texel(&t, l, x, y);
                    for (int k = 0; k < 3; k++) assert_true(abs(p[k] - srgb_encode(c[k] / n)) <= 1);
                    assert_int_equal(p[3], (int)floor((double)a / n + 0.5));
                }
        }
        free(t.rgba);
    }
}

/* ---- the ray cone and the LOD ------------------------------------------------ */

/* A 2 x 2 m right triangle in the plane z = 0 mapped onto a 256 x 256
 * texture's UV unit square: 128 texels per metre, so Delta_0 = log2(128) = 7.
 * A camera with a 60 degree vertical field of view and 100 rows spreads
 * gamma = atan(2 tan 30 / 100) a pixel. Seen at distance 10 with the ray
 * 60 degrees off the normal (cos 0.5), the footprint is 10 gamma / 0.5
 * metres = 2560 gamma texels: lambda = log2(2560 gamma) = 4.886. */
static void lod_plane_at_known_distance_and_angle(void **state)
{
    (void)state;
    RtVec3 a = v3(0, 0, 0), b = v3(2, 0, 0), c = v3(0, 2, 0);
    const float uv[6] = {0, 0, 1, 0, 0, 1};
    RtCamera cam = {v3(0, 0, 0), v3(0, 0, -1), v3(0, 1, 0), 60.0f};
    RtCameraBasis basis = rt_camera_basis(cam, 150, 100);
    RtShadeParams p = rt_shade_params_default();
    assert_int_equal(p.tex_filter, RT_TEX_TRILINEAR);
    RtShadeCone cone = rt_shade_cone_primary(&p, &basis);
    double gamma = atan(2.0 * tan(30.0 * M_PI / 180.0) / 100.0);
    assert_true(fabs(cone.spread - gamma) < 1e-7);
    assert_true(cone.width == 0.0f);
    float w = rt_shade_cone_hit(&cone, 10.0f);
    assert_true(fabs(w - 10.0 * gamma) < 1e-6);
    double expect = log2(128.0 * 10.0 * gamma / 0.5);
    float lod = rt_shade_texture_lod(a, b, c, uv, 256, 256, w, 0.5f);
    print_message("lambda %.5f, expected %.5f\n", lod, expect);
    assert_true(fabs(lod - expect) < 1e-4);
    /* head-on (cos 1) the footprint is half as long: one level less */
    assert_true(fabs(rt_shade_texture_lod(a, b, c, uv, 256, 256, w, 1.0f) - (expect - 1.0)) < 1e-4);
    /* a mirror 5 further on: the chain's length, 15 gamma, without curvature */
    assert_true(fabs(rt_shade_cone_hit(&cone, 5.0f) - 15.0 * gamma) < 1e-6);
    /* close enough to magnify, no UV area, grazing, NaN: level 0 or the cap */
    assert_true(rt_shade_texture_lod(a, b, c, uv, 256, 256, 1e-4f, 1.0f) == 0.0f);
    const float flat[6] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
    assert_true(rt_shade_texture_lod(a, b, c, flat, 256, 256, w, 0.5f) == 0.0f);
    assert_true(rt_shade_texture_lod(a, b, c, uv, 256, 256, w, 0.0f) == RT_SHADE_LOD_MAX);
    assert_true(rt_shade_texture_lod(a, b, c, uv, 256, 256, NAN, 0.5f) == 0.0f);
    /* the bilinear variant: a cone of no spread, level 0 everywhere */
    p.tex_filter = RT_TEX_BILINEAR;
    cone = rt_shade_cone_primary(&p, &basis);
    assert_true(rt_shade_texture_lod(a, b, c, uv, 256, 256, rt_shade_cone_hit(&cone, 1e6f), 0.01f) == 0.0f);
}

/* At LOD 0 the trilinear filter is level 0's bilinear filter bit for bit
 * (the old filter); at 2.25 it is level 2 and level 3 blended 3:1; past
 * the last level it is the 1 x 1 level. */
static void trilinear_blends_levels_and_is_bilinear_at_zero(void **state)
{
    (void)state;
    RtTestRng rng = {99};
    RtTexture t = make_texture(37, 20, fill_random, &rng);
    float lut[256];
    for (int i = 0; i < 256; i++) lut[i] = rt_shade_srgb8_to_linear((uint8_t)i);
    RtTexture l2 = rt_texture_level(&t, 2), l3 = rt_texture_level(&t, 3), last = rt_texture_level(&t, t.levels - 1);
    for (int i = 0; i < 200; i++) {
        float u = rt_test_randf(&rng) * 4 - 2, v = rt_test_randf(&rng) * 4 - 2;
        RtShadeTexel a = rt_shade_texture_trilinear(&t, lut, u, v, 0.0f);
        RtShadeTexel b = rt_shade_texture_sample(&t, lut, u, v);
        assert_memory_equal(&a, &b, sizeof a);
        a = rt_shade_texture_trilinear(&t, lut, u, v, 2.25f);
        RtShadeTexel s2 = rt_shade_texture_sample(&l2, lut, u, v), s3 = rt_shade_texture_sample(&l3, lut, u, v);
        for (int k = 0; k < 4; k++) assert_true(fabsf(a.c[k] - (0.75f * s2.c[k] + 0.25f * s3.c[k])) < 1e-5f);
        a = rt_shade_texture_trilinear(&t, lut, u, v, 20.0f);
        b = rt_shade_texture_sample(&last, lut, u, v);
        assert_memory_equal(&a, &b, sizeof a);
    }
    /* a texture without levels (made by hand) stays at level 0 */
    RtTexture bare = t;
    bare.levels = 0;
    RtShadeTexel a = rt_shade_texture_trilinear(&bare, lut, 0.3f, 0.7f, 5.0f);
    RtShadeTexel b = rt_shade_texture_sample(&t, lut, 0.3f, 0.7f);
    assert_memory_equal(&a, &b, sizeof a);
    free(t.rgba);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mips_level_sizes_down_to_one),
        cmocka_unit_test(mips_box_average_by_hand),
        cmocka_unit_test(mips_random_sizes_match_oracle),
        cmocka_unit_test(lod_plane_at_known_distance_and_angle),
        cmocka_unit_test(trilinear_blends_levels_and_is_bilinear_at_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
