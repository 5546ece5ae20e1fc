/* test_load.c — what every loader does with the files it is pointed at
 * (scene/load.c and the loaders behind it): a FIFO, device or socket is
 * refused before it is opened for reading, with a message naming the file
 * and what was expected; nothing hangs. Each load runs in a child process
 * under alarm(), so a loader that blocks fails the test instead of hanging
 * the suite. */
#include "test_util.h"

#include "core/image.h"
#include "scene/load.h"

#include <signal.h>
#include <sys/wait.h>

#define HANG_SECONDS 5 /* a load of these tiny files takes milliseconds */

typedef struct {
    char dir[1024];
} TmpDir;

static void tmp_begin(TmpDir *t)
{
    snprintf(t->dir, sizeof t->dir, "/tmp/rt_test_load_XXXXXX");
    assert_non_null(mkdtemp(t->dir));
}

static void tmp_end(TmpDir *t)
{
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->dir);
    assert_int_equal(system(cmd), 0);
}

static void put(const TmpDir *t, const char *name, const char *text)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", t->dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void fifo(const TmpDir *t, const char *name)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", t->dir, name);
    assert_int_equal(mkfifo(path, 0600), 0);
}

/* Loads dir/name in a child (rt_scene_load, or rt_image_read_png for an
 * image) with stderr captured; fails on a hang, else checks the status and
 * that `needle` occurs in the error message or the log. */
static void load_bounded(const TmpDir *t, const char *name, int image, RtStatus want, const char *needle)
{
    char path[1100], out[1100];
    snprintf(path, sizeof path, "%s/%s", t->dir, name);
    snprintf(out, sizeof out, "%s/.result", t->dir);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(HANG_SECONDS);
        FILE *f = fopen(out, "w");
        if (!f) _exit(100);
        dup2(fileno(f), 2);
        RtError err = {0};
        RtStatus st;
        if (image) {
            RtImage img;
            st = rt_image_read_png(&img, path, &err);
            if (st == RT_OK) rt_image_free(&img);
        } else {
            RtScene s;
            st = rt_scene_load(path, &s, &err);
            if (st == RT_OK) rt_scene_free(&s);
        }
        fprintf(stderr, "\nerror: %s\n", st == RT_OK ? "(none)" : err.msg);
        fflush(stderr);
        _exit((int)st);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        fail_msg("%s: the load %s (signal %d)", name,
                 WTERMSIG(status) == SIGALRM ? "hung for " "5 s" : "crashed", WTERMSIG(status));
    assert_true(WIFEXITED(status));
    char *text;
    size_t n;
    RtError err = {0};
    assert_int_equal(rt_read_file(out, "TEST", 1 << 20, &text, &n, &err), RT_OK);
    if (WEXITSTATUS(status) != (int)want)
        fail_msg("%s: status %d, expected %d; output:\n%s", name, WEXITSTATUS(status), (int)want, text);
    rt_test_assert_contains(text, needle);
    free(text);
}

static const char kTri[] = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n";

/* A FIFO named as the scene itself, for every loader. */
static void load_fifo_scene_refused_without_hanging(void **state)
{
    (void)state;
    TmpDir t;
    tmp_begin(&t);
    const char *names[] = {"f.obj", "f.ply", "f.scene", "f.aff"};
    const char *tags[] = {"OBJ", "PLY", "SCENE", "AFF"};
    for (int i = 0; i < 4; i++) {
        fifo(&t, names[i]);
        char needle[128];
        snprintf(needle, sizeof needle, "%s: %s: is a FIFO (named pipe); expected a regular file", names[i], tags[i]);
        load_bounded(&t, names[i], 0, RT_ERR_IO, needle);
    }
    tmp_end(&t);
}

/* Files a scene names: an mtllib and a map_Kd warn (the scene loads with
 * flat colours), a .scene mesh or include and an AFF include fail; each
 * message names the FIFO. */
static void load_fifo_named_inside_a_scene_refused_without_hanging(void **state)
{
    (void)state;
    TmpDir t;
    tmp_begin(&t);
    fifo(&t, "pipe.mtl");
    fifo(&t, "pipe.png");
    fifo(&t, "pipe.obj");
    fifo(&t, "pipe.scene");
    fifo(&t, "pipe.aff");
    char buf[512];
    snprintf(buf, sizeof buf, "mtllib pipe.mtl\nusemtl m\n%s", kTri);
    put(&t, "mtllib.obj", buf);
    load_bounded(&t, "mtllib.obj", 0, RT_OK, "pipe.mtl: MTL: is a FIFO (named pipe); expected a regular file");
    put(&t, "tex.mtl", "newmtl m\nKd 1 1 1\nmap_Kd pipe.png\n");
    snprintf(buf, sizeof buf, "mtllib tex.mtl\nusemtl m\n%s", kTri);
    put(&t, "tex.obj", buf);
    load_bounded(&t, "tex.obj", 0, RT_OK, "pipe.png: TEX: is a FIFO (named pipe); expected a regular file");
    put(&t, "mesh.scene", "mesh pipe.obj\n");
    load_bounded(&t, "mesh.scene", 0, RT_ERR_IO, "pipe.obj' is a FIFO (named pipe)");
    put(&t, "inc.scene", "include pipe.scene\n");
    load_bounded(&t, "inc.scene", 0, RT_ERR_IO, "pipe.scene' is a FIFO (named pipe)");
    put(&t, "inc.aff", "i 0 pipe.aff\np 3\n0 0 0\n1 0 0\n0 1 0\n");
    load_bounded(&t, "inc.aff", 0, RT_ERR_IO, "pipe.aff is a FIFO (named pipe); expected a regular file");
    load_bounded(&t, "pipe.png", 1, RT_ERR_IO, "pipe.png: PNG: is a FIFO (named pipe); expected a regular file");
    tmp_end(&t);
}

/* A directory and a character device: refused by name and kind. */
static void load_directory_and_device_refused(void **state)
{
    (void)state;
    TmpDir t;
    tmp_begin(&t);
    char path[1100];
    snprintf(path, sizeof path, "%s/d.obj", t.dir);
    assert_int_equal(mkdir(path, 0700), 0);
    load_bounded(&t, "d.obj", 0, RT_ERR_IO, "d.obj: OBJ: is a directory; expected a regular file");
    char *data;
    size_t n;
    RtError err = {0};
    assert_int_equal(rt_read_file("/dev/null", "OBJ", 100, &data, &n, &err), RT_ERR_IO);
    rt_test_assert_contains(err.msg, "/dev/null: OBJ: is a device; expected a regular file");
    tmp_end(&t);
}

/* Regular files of 0, 1 and random sizes still read whole and exact. */
static void load_regular_files_of_any_size_read_exactly(void **state)
{
    (void)state;
    RtTestRng rng = {4242};
    size_t sizes[] = {0, 1, 4095, 4096, 4097, 0};
    sizes[5] = 1 + rt_test_rand(&rng) % 300000;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        char *src = malloc(sizes[k] + 1);
        for (size_t i = 0; i < sizes[k]; i++) src[i] = (char)rt_test_rand(&rng);
        char path[1024];
        rt_test_write_tmp(".bin", src, sizes[k], path);
        char *data;
        size_t n;
        RtError err = {0};
        assert_int_equal(rt_read_file(path, "TEST", 1 << 20, &data, &n, &err), RT_OK);
        assert_int_equal(n, sizes[k]);
        assert_memory_equal(data, src, sizes[k]);
        assert_int_equal(data[n], 0);
        free(data);
        free(src);
        unlink(path);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(load_fifo_scene_refused_without_hanging),
        cmocka_unit_test(load_fifo_named_inside_a_scene_refused_without_hanging),
        cmocka_unit_test(load_directory_and_device_refused),
        cmocka_unit_test(load_regular_files_of_any_size_read_exactly),
    };
    return cmocka_run_group_tests_name("load", tests, NULL, NULL);
}
