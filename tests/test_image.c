/* test_image.c — images out (core/image.c): the format follows the file
 * name's extension, an unknown one is refused, and what is written reads
 * back (stb_image) at its size with its pixels. */
#include "test_util.h"

#include "core/image.h"

#include <stb_image.h>

static void fill(RtImage *img, RtTestRng *rng, int smooth)
{
    for (int y = 0; y < img->h; y++)
        for (int x = 0; x < img->w; x++) {
            uint8_t *p = &img->rgba[4 * ((size_t)y * img->w + x)];
            for (int c = 0; c < 3; c++) p[c] = smooth ? (uint8_t)(40 + 3 * c + x / 2 + y / 3) : (uint8_t)rt_test_rand(rng);
            p[3] = 255;
        }
}

static void image_format_follows_the_extension(void **state)
{
    (void)state;
    struct { const char *path; RtImageFormat f; } cases[] = {
        {"a.png", RT_IMAGE_PNG}, {"a.PNG", RT_IMAGE_PNG}, {"a.jpg", RT_IMAGE_JPEG}, {"d/a.JPEG", RT_IMAGE_JPEG},
        {"a.bmp", RT_IMAGE_BMP}, {"a.tga", RT_IMAGE_TGA}, {"a.gif", RT_IMAGE_UNKNOWN}, {"a.png.x", RT_IMAGE_UNKNOWN},
        {"a", RT_IMAGE_NONE}, {"dir.d/a", RT_IMAGE_NONE}, {".png", RT_IMAGE_NONE}, {"d/.bashrc", RT_IMAGE_NONE},
        {"", RT_IMAGE_NONE}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (rt_image_format_of(cases[i].path) != cases[i].f)
            fail_msg("%s: format %d, expected %d", cases[i].path, rt_image_format_of(cases[i].path), cases[i].f);
}

/* Sizes 1x1 and random: PNG, BMP and TGA read back exactly, JPEG within
 * its loss on a smooth image. Size 0 cannot be allocated. */
static void image_writes_each_format_by_extension(void **state)
{
    (void)state;
    RtImage img;
    assert_int_equal(rt_image_alloc(&img, 0, 0), RT_ERR_ARG);
    assert_int_equal(rt_image_alloc(&img, 0, 5), RT_ERR_ARG);
    RtTestRng rng = {99};
    const char *exts[] = {".png", ".jpg", ".jpeg", ".bmp", ".tga", ""};
    for (int round = 0; round < 4; round++) {
        int w = round == 0 ? 1 : 1 + (int)(rt_test_rand(&rng) % 97), h = round == 0 ? 1 : 1 + (int)(rt_test_rand(&rng) % 61);
        assert_int_equal(rt_image_alloc(&img, w, h), RT_OK);
        for (size_t e = 0; e < sizeof exts / sizeof exts[0]; e++) {
            int lossy = strstr(exts[e], ".jp") != NULL;
            fill(&img, &rng, lossy);
            char path[1024];
            snprintf(path, sizeof path, "/tmp/rt_test_img_%d_%d%s", (int)getpid(), round, exts[e]);
            RtError err = {0};
            assert_int_equal(rt_image_write(&img, path, &err), RT_OK);
            FILE *f = fopen(path, "rb");
            assert_non_null(f);
            unsigned char magic[3] = {0};
            assert_true(fread(magic, 1, 3, f) >= 2);
            fclose(f);
            if (lossy) assert_true(magic[0] == 0xFF && magic[1] == 0xD8); /* JPEG SOI */
            if (!strcmp(exts[e], ".png") || !exts[e][0]) assert_memory_equal(magic, "\x89PN", 3);
            if (!strcmp(exts[e], ".bmp")) assert_memory_equal(magic, "BM", 2);
            int rw, rh, rn;
            uint8_t *px = stbi_load(path, &rw, &rh, &rn, 4);
            assert_non_null(px);
            assert_int_equal(rw, w);
            assert_int_equal(rh, h);
            int worst = 0;
            for (size_t i = 0; i < (size_t)w * h * 4; i++) {
                int d = abs((int)px[i] - (int)img.rgba[i]);
                if (d > worst) worst = d;
            }
            stbi_image_free(px);
            if (worst > (lossy ? 24 : 0)) fail_msg("%dx%d %s: worst channel error %d", w, h, exts[e], worst);
            unlink(path);
        }
        rt_image_free(&img);
    }
}

static void image_unknown_extension_refused_and_nothing_written(void **state)
{
    (void)state;
    RtImage img;
    assert_int_equal(rt_image_alloc(&img, 2, 2), RT_OK);
    char path[1024];
    snprintf(path, sizeof path, "/tmp/rt_test_img_%d.gif", (int)getpid());
    RtError err = {0};
    assert_int_equal(rt_image_write(&img, path, &err), RT_ERR_ARG);
    rt_test_assert_contains(err.msg, path);
    rt_test_assert_contains(err.msg, "expected .png, .jpg, .jpeg, .bmp or .tga");
    struct stat st;
    assert_int_not_equal(stat(path, &st), 0);
    rt_image_free(&img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(image_format_follows_the_extension),
        cmocka_unit_test(image_writes_each_format_by_extension),
        cmocka_unit_test(image_unknown_extension_refused_and_nothing_written),
    };
    return cmocka_run_group_tests_name("image", tests, NULL, NULL);
}
