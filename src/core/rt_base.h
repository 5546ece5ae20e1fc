/* rt_base.h — what every module of rtviewer shares: status codes, user-facing
 * errors, tagged logging and small vector math usable on host and device.
 * Plain C11; also compiled by nvcc (RT_HD = __host__ __device__ there). */
#ifndef RT_BASE_H
#define RT_BASE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

#ifdef __CUDACC__
#define RT_HD __host__ __device__ __forceinline__
#else
#define RT_HD static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* A float's bits and back, on host and device. */
RT_HD uint32_t rt_float_bits(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

RT_HD float rt_bits_float(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

/* Floats as order-preserving ints, for atomicMin / atomicMax on boxes (the
 * GPU builders' scene and node boxes): exact, so a reduction's order does
 * not matter and a box equals the CPU's union of its members' boxes.
 * Negative floats have their magnitude bits flipped, so int order is float
 * order for every non-NaN value (-0 sorts just below +0). */
RT_HD int rt_f2ord(float f)
{
    const int i = (int)rt_float_bits(f);
    return i >= 0 ? i : i ^ 0x7fffffff;
}

RT_HD float rt_ord2f(int i) { return rt_bits_float((uint32_t)(i >= 0 ? i : i ^ 0x7fffffff)); }

/* Every fallible function returns one of these; only main() exits. */
typedef enum RtStatus {
    RT_OK = 0,
    RT_ERR_IO,        /* file missing, unreadable, a directory, short read */
    RT_ERR_PARSE,     /* malformed input: RtError says file, line, expectation */
    RT_ERR_OOM,       /* host or device allocation failed / absurd size */
    RT_ERR_EMPTY,     /* a scene with no usable triangle */
    RT_ERR_ARG,       /* bad command-line or API argument */
    RT_ERR_CUDA,      /* a CUDA call failed */
    RT_ERR_NO_DEVICE, /* no usable NVIDIA GPU (or no CUDA in this build) */
    RT_ERR_UNSUPPORTED
} RtStatus;

const char *rt_status_name(RtStatus s);

/* A user-facing error: one line, "file:line: TAG: what was expected". */
#define RT_ERROR_MAX 1024
typedef struct RtError {
    RtStatus status;
    char msg[RT_ERROR_MAX];
} RtError;

/* Formats the message into err (if non-NULL) and returns status, so callers
 * can write `return rt_fail(err, RT_ERR_PARSE, "%s:%d: OBJ: ...", ...)`. */
RtStatus rt_fail(RtError *err, RtStatus status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The body of a parser's own printf-like fail helper: formats
 * "path:line: TAG: <fmt>" (line <= 0 leaves ":line" out) into err. */
RtStatus rt_vfail_at(RtError *err, RtStatus status, const char *path, int line, const char *tag,
                     const char *fmt, va_list ap);

/* Log lines are tagged by subsystem ("OBJ", "KD", "GL"). Level: 0 errors,
 * 1 warnings, 2 info (default), 3 debug; RT_LOG_NONE as the set level
 * silences everything (fuzzers, tests). Output goes to stderr. */
typedef enum { RT_LOG_NONE = -1, RT_LOG_ERROR = 0, RT_LOG_WARN, RT_LOG_INFO, RT_LOG_DEBUG } RtLogLevel;
void rt_log_set_level(RtLogLevel level);
void rt_log(RtLogLevel level, const char *tag, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
#define RT_WARN(tag, ...) rt_log(RT_LOG_WARN, tag, __VA_ARGS__)
#define RT_INFO(tag, ...) rt_log(RT_LOG_INFO, tag, __VA_ARGS__)

/* ---- host helpers shared by the loaders (not for device code) -------- */

/* Reads a whole regular file into a malloc'd, NUL-terminated buffer
 * (*size bytes + the NUL, writable: parsers cut lines in place). Reads to
 * EOF rather than trusting st_size, so /proc-style files work. Errors name
 * path and tag ("x.obj: OBJ: cannot open (...)", "is a directory", "larger
 * than the N-byte limit"); devices, FIFOs and sockets are refused before
 * any read ("is a FIFO (named pipe); expected a regular file"): the file is
 * opened non-blocking, so a FIFO without a writer cannot hang the loader. */
RtStatus rt_read_file(const char *path, const char *tag, size_t max_bytes, char **data, size_t *size,
                      RtError *err);
/* The same refusal for a reader that opens path itself (stb_image): RT_OK
 * when path is a regular file. */
RtStatus rt_check_regular_file(const char *path, const char *tag, RtError *err);
/* "is a directory", "is a FIFO (named pipe)", ... for a non-regular st_mode. */
const char *rt_file_kind(unsigned mode);

/* Grows a malloc'd array of elem-byte items so that it holds at least need
 * of them, doubling *cap (so appends stay amortised O(1)); 1 on success, 0
 * when the allocation fails or the size would overflow (*arr is then left
 * as it was). */
int rt_grow_array(void **arr, size_t *cap, size_t need, size_t elem);

/* Asks for transparent huge pages over the whole 2 MB pages inside
 * [p, p + bytes): a builder's big arrays are written once, front to back,
 * and a huge page turns 512 page faults into one (a fault costs
 * microseconds, more in a virtual machine). A hint only: nothing changes
 * where THP is off. */
void rt_advise_huge(void *p, size_t bytes);

/* A structure's output array (a tree's nodes, its triangle index) of
 * exactly need items (at least 1) on huge pages, unless *cap already holds
 * need: a builder reuses its last frame's arrays. 1 on success, 0 when the
 * allocation fails (*arr is then left as it was). */
int rt_reserve_array(void **arr, uint32_t *cap, uint32_t need, size_t elem);

/* Line cursor over a text buffer: rt_next_line returns the next line as a
 * C string, cut in place (the newline, and a CR before it, become NUL), or
 * NULL at the end. line is the 1-based number of the line last returned and
 * len its length, so strlen(line) != len reveals an embedded NUL byte. The
 * buffer needs a writable byte at end (rt_read_file provides it). */
typedef struct RtLines {
    char *p, *end;
    int line;
    size_t len;
} RtLines;
char *rt_next_line(RtLines *r);

/* Blanks within a line are spaces and tabs; a token ends at one or at NUL. */
static inline char *rt_skip_blanks(char *p)
{
    while (*p == ' ' || *p == '\t') p++;
    return p;
}
static inline int rt_is_token_end(char c) { return c == '\0' || c == ' ' || c == '\t'; }

/* Monotonic wall clock in milliseconds (for CPU timings). */
double rt_now_ms(void);
/* Number of worker threads to use: RT_THREADS env var, else online CPUs. */
int rt_thread_count(void);
/* Host memory this process may still allocate, in bytes: the smaller of
 * the system's MemAvailable (/proc/meminfo, what the kernel can hand out
 * without swapping) and what RLIMIT_AS leaves above the address space the
 * process holds now (ulimit -v); UINT64_MAX when neither is known. *why
 * (if not NULL) names the one that decided ("MemAvailable", "ulimit -v"). */
uint64_t rt_host_memory_available(const char **why);

/* ---- vector math (host and device) ---------------------------------- */
typedef struct RtVec3 { float x, y, z; } RtVec3;
/* 16-byte vector with the memory layout of CUDA's float4. */
typedef struct RtFloat4 { float x, y, z, w; } RtFloat4;
typedef struct RtAabb { RtVec3 lo, hi; } RtAabb;

RT_HD RtVec3 v3(float x, float y, float z) { RtVec3 r = {x, y, z}; return r; }
RT_HD RtVec3 v3_add(RtVec3 a, RtVec3 b) { return v3(a.x + b.x, a.y + b.y, a.z + b.z); }
RT_HD RtVec3 v3_sub(RtVec3 a, RtVec3 b) { return v3(a.x - b.x, a.y - b.y, a.z - b.z); }
RT_HD RtVec3 v3_mul(RtVec3 a, RtVec3 b) { return v3(a.x * b.x, a.y * b.y, a.z * b.z); }
RT_HD RtVec3 v3_scale(RtVec3 a, float s) { return v3(a.x * s, a.y * s, a.z * s); }
RT_HD float v3_dot(RtVec3 a, RtVec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
RT_HD RtVec3 v3_cross(RtVec3 a, RtVec3 b)
{
    return v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
RT_HD float v3_len(RtVec3 a) { return sqrtf(v3_dot(a, a)); }
RT_HD RtVec3 v3_norm(RtVec3 a)
{
    float l = v3_len(a);
    return l > 0.0f ? v3_scale(a, 1.0f / l) : a;
}
RT_HD float v3_get(RtVec3 a, int axis) { return axis == 0 ? a.x : (axis == 1 ? a.y : a.z); }
RT_HD void v3_set(RtVec3 *a, int axis, float v)
{
    if (axis == 0) a->x = v; else if (axis == 1) a->y = v; else a->z = v;
}
RT_HD RtVec3 v3_min(RtVec3 a, RtVec3 b)
{
    return v3(fminf(a.x, b.x), fminf(a.y, b.y), fminf(a.z, b.z));
}
RT_HD RtVec3 v3_max(RtVec3 a, RtVec3 b)
{
    return v3(fmaxf(a.x, b.x), fmaxf(a.y, b.y), fmaxf(a.z, b.z));
}
RT_HD RtVec3 v3_lerp(RtVec3 a, RtVec3 b, float t) { return v3_add(a, v3_scale(v3_sub(b, a), t)); }
RT_HD RtFloat4 f4(float x, float y, float z, float w) { RtFloat4 r = {x, y, z, w}; return r; }
RT_HD RtVec3 f4_xyz(RtFloat4 a) { return v3(a.x, a.y, a.z); }

/* Arithmetic the CPU and the GPU round alike. nvcc contracts a*b + c into
 * one FMA (one rounding) where the host's C11 build rounds twice, so one
 * formula gives results that differ in their last bits, and a ray through
 * an edge shared by two triangles can then miss both on one side and not on
 * the other. The formulas whose results the GPU and the CPU oracle must
 * agree on bit for bit (the Woop rows, kd_layout.h; the ray/triangle tests,
 * isect.h) are written once with these: on the device explicitly rounded,
 * never contracted operations, on the host the plain ones; RT_XFMA is one
 * rounding on both (the GPU's FFMA, C11's fmaf), half the instructions of
 * a multiply and an add where the GPU tracer's inner loop needs them. */
#ifdef __CUDA_ARCH__
#define RT_XADD(a, b) __fadd_rn((a), (b))
#define RT_XSUB(a, b) __fsub_rn((a), (b))
#define RT_XMUL(a, b) __fmul_rn((a), (b))
#define RT_XDIV(a, b) __fdiv_rn((a), (b))
#define RT_XFMA(a, b, c) __fmaf_rn((a), (b), (c))
#else
#define RT_XADD(a, b) ((a) + (b))
#define RT_XSUB(a, b) ((a) - (b))
#define RT_XMUL(a, b) ((a) * (b))
#define RT_XDIV(a, b) ((a) / (b))
#define RT_XFMA(a, b, c) fmaf((a), (b), (c))
#endif
RT_HD RtVec3 v3x_add(RtVec3 a, RtVec3 b) { return v3(RT_XADD(a.x, b.x), RT_XADD(a.y, b.y), RT_XADD(a.z, b.z)); }
RT_HD RtVec3 v3x_sub(RtVec3 a, RtVec3 b) { return v3(RT_XSUB(a.x, b.x), RT_XSUB(a.y, b.y), RT_XSUB(a.z, b.z)); }
RT_HD RtVec3 v3x_scale(RtVec3 a, float s) { return v3(RT_XMUL(a.x, s), RT_XMUL(a.y, s), RT_XMUL(a.z, s)); }
/* ((a.x b.x + a.y b.y) + a.z b.z), as v3_dot */
RT_HD float v3x_dot(RtVec3 a, RtVec3 b)
{
    return RT_XADD(RT_XADD(RT_XMUL(a.x, b.x), RT_XMUL(a.y, b.y)), RT_XMUL(a.z, b.z));
}
RT_HD RtVec3 v3x_cross(RtVec3 a, RtVec3 b)
{
    return v3(RT_XSUB(RT_XMUL(a.y, b.z), RT_XMUL(a.z, b.y)), RT_XSUB(RT_XMUL(a.z, b.x), RT_XMUL(a.x, b.z)),
              RT_XSUB(RT_XMUL(a.x, b.y), RT_XMUL(a.y, b.x)));
}
/* Fused forms (RT_XFMA): r.w + r.xyz . p as fma(z, pz, fma(y, py, fma(x,
 * px, w))), a . b as fma(z, bz, fma(y, by, x bx)), o + d t a component. */
RT_HD float f4f_affine(RtFloat4 r, RtVec3 p)
{
    return RT_XFMA(r.z, p.z, RT_XFMA(r.y, p.y, RT_XFMA(r.x, p.x, r.w)));
}
RT_HD float v3f_dot(RtVec3 a, RtVec3 b) { return RT_XFMA(a.z, b.z, RT_XFMA(a.y, b.y, RT_XMUL(a.x, b.x))); }
RT_HD RtVec3 v3f_madd(RtVec3 o, RtVec3 d, float t)
{
    return v3(RT_XFMA(d.x, t, o.x), RT_XFMA(d.y, t, o.y), RT_XFMA(d.z, t, o.z));
}

RT_HD RtAabb aabb_empty(void)
{
    RtAabb b = {{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}};
    return b;
}
RT_HD RtAabb aabb_grow(RtAabb b, RtVec3 p)
{
    b.lo = v3_min(b.lo, p);
    b.hi = v3_max(b.hi, p);
    return b;
}
RT_HD RtAabb aabb_union(RtAabb a, RtAabb b)
{
    a.lo = v3_min(a.lo, b.lo);
    a.hi = v3_max(a.hi, b.hi);
    return a;
}
RT_HD float aabb_area(RtAabb b)
{
    RtVec3 d = v3_sub(b.hi, b.lo);
    if (d.x < 0 || d.y < 0 || d.z < 0) return 0.0f;
    return 2.0f * (d.x * d.y + d.y * d.z + d.z * d.x);
}
RT_HD int aabb_is_empty(RtAabb b) { return b.lo.x > b.hi.x || b.lo.y > b.hi.y || b.lo.z > b.hi.z; }

#ifdef __cplusplus
}
#endif

#endif
