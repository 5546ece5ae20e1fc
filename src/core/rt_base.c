/* rt_base.c — errors, logging, clocks, whole-file reading. */
#include "core/rt_base.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *rt_status_name(RtStatus s)
{
    static const char *names[] = {"ok", "I/O error", "parse error", "out of memory",
                                  "empty scene", "bad argument", "CUDA error", "no GPU",
                                  "unsupported"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown error";
}

RtStatus rt_fail(RtError *err, RtStatus status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

RtStatus rt_vfail_at(RtError *err, RtStatus status, const char *path, int line, const char *tag,
                     const char *fmt, va_list ap)
{
    char msg[RT_ERROR_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (line > 0) return rt_fail(err, status, "%s:%d: %s: %s", path, line, tag, msg);
    return rt_fail(err, status, "%s: %s: %s", path, tag, msg);
}

/* The log level is process configuration set once by main (--quiet,
 * --verbose) before any thread starts; it is the one piece of state that is
 * not passed around, as with stderr itself. */
static RtLogLevel g_log_level = RT_LOG_INFO;

void rt_log_set_level(RtLogLevel level) { g_log_level = level; }

void rt_log(RtLogLevel level, const char *tag, const char *fmt, ...)
{
    if (level < RT_LOG_ERROR || level > g_log_level) return; /* NONE is a threshold, never a line's level */
    static const char *prefix[] = {"error: ", "warning: ", "", ""};
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s%s\n", tag, prefix[level], line);
}

const char *rt_file_kind(unsigned mode)
{
    if (S_ISDIR(mode)) return "is a directory";
    if (S_ISFIFO(mode)) return "is a FIFO (named pipe)";
    if (S_ISSOCK(mode)) return "is a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "is a device";
    return "is not a regular file";
}

RtStatus rt_check_regular_file(const char *path, const char *tag, RtError *err)
{
    struct stat st;
    if (stat(path, &st) != 0) return rt_fail(err, RT_ERR_IO, "%s: %s: cannot open (%s)", path, tag, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return rt_fail(err, RT_ERR_IO, "%s: %s: %s; expected a regular file", path, tag, rt_file_kind(st.st_mode));
    return RT_OK;
}

RtStatus rt_read_file(const char *path, const char *tag, size_t max_bytes, char **data, size_t *size,
                      RtError *err)
{
    *data = NULL;
    *size = 0;
    /* Opened non-blocking and checked before any read: fopen of a FIFO
     * blocks until a writer appears, so a FIFO named as a scene, an mtllib
     * or a texture would hang the loader. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return rt_fail(err, RT_ERR_IO, "%s: %s: cannot open (%s)", path, tag, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return rt_fail(err, RT_ERR_IO, "%s: %s: cannot stat (%s)", path, tag, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return rt_fail(err, RT_ERR_IO, "%s: %s: %s; expected a regular file", path, tag, rt_file_kind(st.st_mode));
    }
    /* A regular file: back to blocking reads. */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        return rt_fail(err, RT_ERR_IO, "%s: %s: cannot open (%s)", path, tag, strerror(e));
    }
    if ((uint64_t)st.st_size > max_bytes) {
        fclose(f);
        return rt_fail(err, RT_ERR_OOM, "%s: %s: file of %lld bytes is larger than the %zu-byte limit", path, tag,
                       (long long)st.st_size, max_bytes);
    }
    /* One byte past st_size, so a file that is as large as it says ends in
     * a single short fread; max_bytes + 1 read bytes means too large. */
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        fclose(f);
        return rt_fail(err, RT_ERR_OOM, "%s: %s: out of memory reading %zu bytes", path, tag, cap - 1);
    }
    for (;;) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap || n > max_bytes) break;
        size_t ncap = cap > max_bytes / 2 ? max_bytes + 1 : cap * 2;
        char *p = realloc(buf, ncap + 1);
        if (!p) {
            free(buf);
            fclose(f);
            return rt_fail(err, RT_ERR_OOM, "%s: %s: out of memory reading %zu bytes", path, tag, ncap);
        }
        buf = p;
        cap = ncap;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return rt_fail(err, RT_ERR_IO, "%s: %s: read error after %zu bytes", path, tag, n);
    }
    if (n > max_bytes) {
        free(buf);
        return rt_fail(err, RT_ERR_OOM, "%s: %s: file is larger than the %zu-byte limit", path, tag, max_bytes);
    }
    buf[n] = '\0';
    *data = buf;
    *size = n;
    return RT_OK;
}

void rt_advise_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + bytes) & ~(huge - 1);
    if (e > a) madvise((void *)a, e - a, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

int rt_reserve_array(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need == 0) need = 1;
    if (*arr && *cap >= need) return 1;
    void *q = realloc(*arr, (size_t)need * elem);
    if (!q) return 0;
    rt_advise_huge(q, (size_t)need * elem);
    *arr = q;
    *cap = need;
    return 1;
}

int rt_grow_array(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 1;
    size_t ncap = *cap ? *cap : 64;
    while (ncap < need) ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
    if (ncap > SIZE_MAX / elem) return 0;
    void *p = realloc(*arr, ncap * elem);
    if (!p) return 0;
    *arr = p;
    *cap = ncap;
    return 1;
}

char *rt_next_line(RtLines *r)
{
    if (r->p >= r->end) return NULL;
    char *s = r->p;
    char *nl = memchr(s, '\n', (size_t)(r->end - s));
    char *e = nl ? nl : r->end;
    r->p = nl ? nl + 1 : r->end;
    if (e > s && e[-1] == '\r') e--;
    *e = '\0';
    r->len = (size_t)(e - s);
    r->line++;
    return s;
}

double rt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

int rt_thread_count(void)
{
    const char *env = getenv("RT_THREADS");
    if (env && atoi(env) > 0) return atoi(env);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n > 256 ? 256 : n) : 1;
}

/* The value in kB of the line "key: N kB" of a /proc file, in bytes; 0 if absent. */
static uint64_t proc_kb(const char *file, const char *key)
{
    FILE *f = fopen(file, "r");
    if (!f) return 0;
    char line[256];
    size_t n = strlen(key);
    uint64_t v = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':') {
            v = strtoull(line + n + 1, NULL, 10) * 1024u;
            break;
        }
    fclose(f);
    return v;
}

uint64_t rt_host_memory_available(const char **why)
{
    uint64_t avail = proc_kb("/proc/meminfo", "MemAvailable");
    const char *what = "MemAvailable";
    if (avail == 0) avail = UINT64_MAX, what = "unknown";
    struct rlimit lim;
    if (getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
        uint64_t held = proc_kb("/proc/self/status", "VmSize");
        uint64_t left = (uint64_t)lim.rlim_cur > held ? (uint64_t)lim.rlim_cur - held : 0;
        if (left < avail) avail = left, what = "ulimit -v";
    }
    if (why) *why = what;
    return avail;
}
