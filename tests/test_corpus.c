/* test_corpus.c — other people's files through our loaders: every .obj and
 * .ply of Debian's assimp-testmodels (/usr/share/assimp/models, or
 * $RT_CORPUS_DIR) goes through rt_scene_load, the path a user's file takes.
 * Each load runs in a child process under alarm(), so a crash or a hang
 * fails this test with the file's name instead of taking the suite down;
 * the load must give a consistent scene (indices in range) or a clean
 * error: a non-OK status, an empty scene, and a message that names the
 * file. assimp's files are written to break importers (empty materials,
 * 10,000-character lines, missing vertices, binary PLY of both byte
 * orders), so refusing one is fine; crashing is not. Skips, saying so,
 * when the package is absent (make deps-test installs it). */
#include "load_child.h"
#include "test_util.h"

#include "scene/load.h"

#include <ftw.h>
#include <strings.h>
#include <time.h>

#define CORPUS_DIR "/usr/share/assimp/models"
/* Seconds one load may take before it counts as a hang. The largest file of
 * the package (PLY/pond.0.ply, 2.2 MB) loads in about 0.1 s at -O2 and 1 s
 * under ASan; a hang never ends. */
#define CORPUS_HANG_SECONDS 20
/* Files larger than this are skipped (and counted), so a future corpus
 * with a 500 MB scan cannot stretch make test; today's largest is 2.2 MB. */
#define CORPUS_FILE_MAX (32u << 20)
#define CORPUS_FILES_MAX 4096

typedef struct Corpus {
    char *path[CORPUS_FILES_MAX];
    int n, too_big, too_many;
} Corpus;

static Corpus *g_corpus; /* nftw's callback takes no context pointer */

static int collect(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type != FTW_F) return 0;
    const char *dot = strrchr(path, '.');
    if (!dot || (strcasecmp(dot, ".obj") && strcasecmp(dot, ".ply"))) return 0;
    if ((uint64_t)st->st_size > CORPUS_FILE_MAX) {
        print_message("corpus: %s: %lld bytes, over the %u MB cap: skipped\n", path, (long long)st->st_size,
                      CORPUS_FILE_MAX >> 20);
        g_corpus->too_big++;
        return 0;
    }
    if (g_corpus->n == CORPUS_FILES_MAX) {
        g_corpus->too_many++;
        return 0;
    }
    g_corpus->path[g_corpus->n++] = strdup(path);
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* One load in a forked child (load_child.h): a crash or a hang fails the
 * test naming the file. */
static void load_one(const char *path, int *loaded, int *refused)
{
    char why[RT_CHILD_WHY_MAX];
    RtChildVerdict v = rt_test_load_in_child(path, CORPUS_HANG_SECONDS, why);
    if (v == RT_CHILD_BROKEN) fail_msg("%s: %s", path, why);
    if (v == RT_CHILD_LOADED) {
        (*loaded)++;
        print_message("corpus: %s: %s triangles\n", path, why + 3);
        return;
    }
    (*refused)++;
    print_message("corpus: %s: refused: %s\n", path, why);
}

static void corpus_every_obj_and_ply_loads_or_fails_cleanly(void **state)
{
    (void)state;
    const char *dir = getenv("RT_CORPUS_DIR");
    if (!dir || !dir[0]) dir = CORPUS_DIR;
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        print_message("skip: %s not found (Debian package assimp-testmodels; make deps-test installs it)\n", dir);
        skip();
    }
    Corpus *c = calloc(1, sizeof *c);
    assert_non_null(c);
    g_corpus = c;
    assert_int_equal(nftw(dir, collect, 16, FTW_PHYS), 0);
    qsort(c->path, (size_t)c->n, sizeof c->path[0], by_name);
    if (c->n == 0) {
        print_message("skip: no .obj or .ply under %s\n", dir);
        free(c);
        skip();
    }
    /* Loaders log warnings about these files on stderr; the verdicts above
     * say what matters. */
    rt_log_set_level(RT_LOG_NONE);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int loaded = 0, refused = 0;
    for (int i = 0; i < c->n; i++) load_one(c->path[i], &loaded, &refused);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    print_message("corpus: %d files under %s: %d loaded, %d refused cleanly, %d over %u MB skipped%s (%.1f s)\n",
                  c->n, dir, loaded, refused, c->too_big, CORPUS_FILE_MAX >> 20,
                  c->too_many ? ", more than CORPUS_FILES_MAX left out" : "",
                  (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    int files = c->n;
    for (int i = 0; i < c->n; i++) free(c->path[i]);
    free(c);
    g_corpus = NULL;
    assert_int_equal(loaded + refused, files);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(corpus_every_obj_and_ply_loads_or_fails_cleanly),
    };
    return cmocka_run_group_tests_name("corpus", tests, NULL, NULL);
}
