/* png_diff.c — compares two PNGs for tests/test_viewer.sh (no image tools
 * are needed on the test machine).
 *   png_diff A.png B.png   prints "F differing pixels: N of M (WxH)", F the
 *                          fraction of pixels whose RGB differ at all
 *   png_diff --tol N A.png B.png   the same, counting only pixels where a
 *                          channel differs by more than N (GPU vs CPU frames)
 *   png_diff --size A.png  prints "WxH"
 * Exits 0 on success, 1 when the sizes differ, 2 when a file is unreadable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/image.h"

static int load(const char *path, RtImage *img)
{
    RtError err = {0};
    if (rt_image_read_png(img, path, &err) == RT_OK) return 1;
    fprintf(stderr, "png_diff: %s\n", err.msg);
    return 0;
}

int main(int argc, char **argv)
{
    RtImage a = {0}, b = {0};
    if (argc == 3 && !strcmp(argv[1], "--size")) {
        if (!load(argv[2], &a)) return 2;
        printf("%dx%d\n", a.w, a.h);
        rt_image_free(&a);
        return 0;
    }
    int tol = 0;
    if (argc == 5 && !strcmp(argv[1], "--tol")) {
        tol = atoi(argv[2]);
        argv += 2;
        argc -= 2;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: png_diff [--tol N] A.png B.png | png_diff --size A.png\n");
        return 2;
    }
    if (!load(argv[1], &a) || !load(argv[2], &b)) return 2;
    if (a.w != b.w || a.h != b.h) {
        printf("1 sizes differ: %dx%d vs %dx%d\n", a.w, a.h, b.w, b.h);
        return 1;
    }
    size_t n = (size_t)a.w * a.h, diff = 0;
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < 3; c++)
            if (abs((int)a.rgba[4 * i + c] - (int)b.rgba[4 * i + c]) > tol) {
                diff++;
                break;
            }
    printf("%.6f differing pixels: %zu of %zu (%dx%d)\n", (double)diff / (double)n, diff, n, a.w, a.h);
    rt_image_free(&a);
    rt_image_free(&b);
    return 0;
}
