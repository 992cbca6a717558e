/*
 * malloccount: an LD_PRELOAD library that counts heap allocation calls of
 * the whole process: malloc, calloc, realloc, reallocarray, posix_memalign,
 * aligned_alloc, memalign, valloc, pvalloc (every call, realloc included,
 * whatever its arguments). free is not counted. Each call is forwarded to
 * glibc's own allocator (__libc_*), so there is no dlsym bootstrap problem
 * and no recursion.
 *
 *   uint64_t malloc_count_get(void)   calls so far (relaxed atomic load)
 *   uint64_t malloc_count_bytes(void) bytes requested so far
 *
 * A program finds them with dlsym(RTLD_DEFAULT, "malloc_count_get").
 * With MALLOC_COUNT_REPORT=1 the totals are printed to stderr at exit.
 *
 * Build: scripts/malloc-count/build.sh (glibc only).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

#define EXPORT __attribute__((visibility("default")))

static uint64_t g_calls;
static uint64_t g_bytes;

static inline void count(size_t bytes) {
    __atomic_fetch_add(&g_calls, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&g_bytes, (uint64_t)bytes, __ATOMIC_RELAXED);
}

EXPORT uint64_t malloc_count_get(void) { return __atomic_load_n(&g_calls, __ATOMIC_RELAXED); }
EXPORT uint64_t malloc_count_bytes(void) { return __atomic_load_n(&g_bytes, __ATOMIC_RELAXED); }

EXPORT void *malloc(size_t n) {
    count(n);
    return __libc_malloc(n);
}

EXPORT void *calloc(size_t m, size_t n) {
    count(m * n);
    return __libc_calloc(m, n);
}

EXPORT void *realloc(void *p, size_t n) {
    count(n);
    return __libc_realloc(p, n);
}

EXPORT void *reallocarray(void *p, size_t m, size_t n) {
    size_t total;
    if (__builtin_mul_overflow(m, n, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    count(total);
    return __libc_realloc(p, total);
}

static int is_pow2(size_t a) { return a && (a & (a - 1)) == 0; }

EXPORT int posix_memalign(void **out, size_t align, size_t n) {
    if (!is_pow2(align) || align % sizeof(void *) != 0) return EINVAL;
    count(n);
    void *p = __libc_memalign(align, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

EXPORT void *aligned_alloc(size_t align, size_t n) {
    if (!is_pow2(align)) {
        errno = EINVAL;
        return NULL;
    }
    count(n);
    return __libc_memalign(align, n);
}

EXPORT void *memalign(size_t align, size_t n) {
    count(n);
    return __libc_memalign(align, n);
}

EXPORT void *valloc(size_t n) {
    count(n);
    return __libc_valloc(n);
}

EXPORT void *pvalloc(size_t n) {
    count(n);
    return __libc_pvalloc(n);
}

/* Decimal without stdio (which may allocate). */
static size_t put_u64(char *buf, uint64_t v) {
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++) buf[i] = tmp[n - 1 - i];
    return n;
}

__attribute__((destructor)) static void report(void) {
    const char *e = getenv("MALLOC_COUNT_REPORT");
    if (!e || strcmp(e, "1") != 0) return;
    char buf[128];
    size_t n = 0;
    static const char a[] = "malloc-count: ", b[] = " allocations, ", c[] = " bytes requested\n";
    memcpy(buf + n, a, sizeof(a) - 1); n += sizeof(a) - 1;
    n += put_u64(buf + n, malloc_count_get());
    memcpy(buf + n, b, sizeof(b) - 1); n += sizeof(b) - 1;
    n += put_u64(buf + n, malloc_count_bytes());
    memcpy(buf + n, c, sizeof(c) - 1); n += sizeof(c) - 1;
    (void)!write(2, buf, n);
}
