/* load_child.h — one rt_scene_load in a forked child, for the corpus tests
 * (test_corpus.c, test_assimp.c): a crash or a hang of the loader fails
 * the test naming the file instead of taking the suite down. */
#ifndef RT_TEST_LOAD_CHILD_H
#define RT_TEST_LOAD_CHILD_H

#include "test_util.h"

#include "scene/load.h"

#include <signal.h>
#include <sys/wait.h>

/* What a successful load must hold (the fuzzer's invariants,
 * fuzz_loaders.c), or NULL. */
static inline const char *rt_test_scene_broken(const RtScene *s)
{
    if (s->tri_count == 0) return "no triangles";
    for (uint32_t i = 0; i < s->tri_count; i++) {
        const RtTriangle *t = &s->tris[i];
        for (int k = 0; k < 3; k++) {
            if (t->v[k] >= s->vert_count) return "a vertex index out of range";
            RtVec3 p = s->verts[t->v[k]].p;
            if (!isfinite(p.x) || !isfinite(p.y) || !isfinite(p.z)) return "a corner not finite";
        }
        if (t->material < -1 || (t->material >= 0 && (uint32_t)t->material >= s->mat_count))
            return "a material index out of range";
    }
    for (uint32_t i = 0; i < s->mat_count; i++)
        if (s->mats[i].map_kd >= (int32_t)s->tex_count || s->mats[i].map_d >= (int32_t)s->tex_count)
            return "a texture index out of range";
    if (!s->has_camera || s->light_count == 0) return "no camera or no light";
    return NULL;
}

typedef enum { RT_CHILD_LOADED, RT_CHILD_REFUSED, RT_CHILD_BROKEN } RtChildVerdict;
#define RT_CHILD_WHY_MAX 1200

/* Child: loads path under alarm(hang_seconds) and writes one line
 * ("ok TRIS", "error MESSAGE" or "broken WHAT") to a pipe. Parent: the
 * verdict, and in why (RT_CHILD_WHY_MAX bytes) the line, or what killed
 * the child. A refusal must leave the scene empty and name the file at
 * fault: this one, or one beside it that it names ("DIR/x.mtl:3: MTL: ..."). */
static inline RtChildVerdict rt_test_load_in_child(const char *path, int hang_seconds, char *why)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        alarm((unsigned)hang_seconds);
        FILE *out = fdopen(fd[1], "w");
        RtScene s;
        RtError err = {0};
        RtStatus st = rt_scene_load(path, &s, &err);
        int rc = 0;
        if (st == RT_OK) {
            const char *broken = rt_test_scene_broken(&s);
            if (broken) fprintf(out, "broken %s", broken), rc = 1;
            else fprintf(out, "ok %u", s.tri_count);
            rt_scene_free(&s);
        } else if (s.tri_count != 0 || s.verts != NULL) {
            fprintf(out, "broken status %d but the scene is not empty", (int)st), rc = 1;
        } else {
            fprintf(out, "error %s", err.msg);
        }
        fclose(out);
        _exit(rc);
    }
    close(fd[1]);
    char line[RT_CHILD_WHY_MAX] = "";
    size_t n = 0;
    ssize_t r;
    while (n + 1 < sizeof line && (r = read(fd[0], line + n, sizeof line - 1 - n)) > 0) n += (size_t)r;
    line[n] = 0;
    close(fd[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status)) {
        if (WTERMSIG(status) == SIGALRM) snprintf(why, RT_CHILD_WHY_MAX, "the load hung (over %d s)", hang_seconds);
        else snprintf(why, RT_CHILD_WHY_MAX, "the load crashed (signal %d)", WTERMSIG(status));
        return RT_CHILD_BROKEN;
    }
    snprintf(why, RT_CHILD_WHY_MAX, "%s", line);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return RT_CHILD_BROKEN;
    if (!strncmp(line, "ok ", 3)) return RT_CHILD_LOADED;
    if (strncmp(line, "error ", 6)) {
        snprintf(why, RT_CHILD_WHY_MAX, "the child said nothing (\"%.1100s\")", line);
        return RT_CHILD_BROKEN;
    }
    const char *msg = line + 6, *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    if (!msg[0] || (!strstr(msg, path) && !strstr(msg, slash ? slash + 1 : path) && strncmp(msg, path, (size_t)dir_len))) {
        snprintf(why, RT_CHILD_WHY_MAX, "refused without naming the file: \"%.1100s\"", msg);
        return RT_CHILD_BROKEN;
    }
    snprintf(why, RT_CHILD_WHY_MAX, "%s", msg);
    return RT_CHILD_REFUSED;
}

#endif
