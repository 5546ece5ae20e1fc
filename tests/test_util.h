/* test_util.h — shared by the cmocka test programs. */
#ifndef RT_TEST_UTIL_H
#define RT_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Path of an unpacked file from ../shared/assets (tests/run.sh unpacks the
 * archives into $RT_TEST_EXT, default build/ext), or NULL when absent: the
 * caller then skips with a message. buf must hold 1024 bytes. */
static inline const char *rt_test_asset(const char *rel, char *buf)
{
    const char *ext = getenv("RT_TEST_EXT");
    snprintf(buf, 1024, "%s/%s", ext ? ext : "build/ext", rel);
    struct stat st;
    if (stat(buf, &st) != 0) {
        print_message("skip: %s not found (../shared/assets absent or not unpacked)\n", buf);
        return NULL;
    }
    return buf;
}

/* Writes text to a fresh temporary file with the given suffix; returns the
 * path in buf (1024 bytes). */
static inline const char *rt_test_write_tmp(const char *suffix, const void *data, size_t n,
                                            char *buf)
{
    static unsigned counter;
    snprintf(buf, 1024, "/tmp/rt_test_%d_%u%s", (int)getpid(), counter++, suffix);
    FILE *f = fopen(buf, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
    return buf;
}
#define RT_TEST_TMP_TEXT(suffix, text, buf) rt_test_write_tmp(suffix, text, strlen(text), buf)

/* The project file rel (e.g. "scenes/cornell.scene") in buf (1024 bytes):
 * tests run from the project root (tests/run.sh), and a binary started
 * elsewhere still finds it when __FILE__ is absolute. */
static inline const char *rt_test_src_path(const char *rel, char *buf)
{
    const char *me = __FILE__, *tail = strstr(me, "tests/test_util.h");
    snprintf(buf, 1024, "%.*s%s", tail ? (int)(tail - me) : 0, me, rel);
    return buf;
}

/* Fails the test unless needle occurs in hay (an error message, a log). */
static inline void rt_test_assert_contains(const char *hay, const char *needle)
{
    if (!hay || !strstr(hay, needle)) fail_msg("expected \"%s\" in \"%s\"", needle, hay ? hay : "(null)");
}

/* Small deterministic RNG for tests (xorshift). */
typedef struct { uint64_t s; } RtTestRng;
static inline uint32_t rt_test_rand(RtTestRng *r)
{
    r->s ^= r->s << 13; r->s ^= r->s >> 7; r->s ^= r->s << 17;
    return (uint32_t)(r->s >> 11);
}
static inline float rt_test_randf(RtTestRng *r) { return (rt_test_rand(r) & 0xffffff) / 16777216.0f; }

#endif
