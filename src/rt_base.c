/* rt_base.c — errors, logging, clocks. */
#include "rt_base.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The log level is process configuration set once by main (--quiet,
 * --verbose) before any thread starts; it is the one piece of state that is
 * not passed around, as with stderr itself. */
static RtLogLevel g_log_level = RT_LOG_INFO;

void rt_log_set_level(RtLogLevel level) { g_log_level = level; }

void rt_log(RtLogLevel level, const char *tag, const char *fmt, ...)
{
    if (level > g_log_level) return;
    static const char *prefix[] = {"error: ", "warning: ", "", ""};
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s%s\n", tag, prefix[level], line);
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
