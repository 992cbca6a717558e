/* The error table, the allocation wrapper and the clock: small things every
 * other file needs. */
#include "pk_base.h"
#include "CHTTPEngine.h" /* pk_alloc_count */
#include "pk_test_hooks.h"

#include <stdatomic.h>

#include <stdlib.h>
#include <time.h>

static const char *const names[] = {
#define PK__NAME(e, name, msg) name,
    PK_ERROR_TABLE(PK__NAME)
#undef PK__NAME
};

static const char *const messages[] = {
#define PK__MSG(e, name, msg) msg,
    PK_ERROR_TABLE(PK__MSG)
#undef PK__MSG
};

const char *pk_error_name(int code) {
  if (code < 0) code = -code;
  return code < PK__ERROR_COUNT ? names[code] : "unknown";
}

const char *pk_error_message(int code) {
  if (code < 0) code = -code;
  return code < PK__ERROR_COUNT ? messages[code] : "unknown error";
}

/* One wrapper for every allocation, so tests can count them (the warm
 * keep-alive path must make none) and inject failures. */
static _Atomic uint64_t alloc_count;
static _Atomic uint64_t fail_after;

uint64_t pk_alloc_count(void) { return atomic_load_explicit(&alloc_count, memory_order_relaxed); }

void pk_alloc_fail_after(uint64_t n) {
  atomic_store(&fail_after, n ? atomic_load(&alloc_count) + n : 0);
}

static bool should_fail(void) {
  uint64_t n = atomic_fetch_add_explicit(&alloc_count, 1, memory_order_relaxed) + 1;
  uint64_t f = atomic_load_explicit(&fail_after, memory_order_relaxed);
  return f != 0 && n >= f;
}

void *pk__malloc(size_t n) { return should_fail() ? NULL : malloc(n); }
void *pk__calloc(size_t count, size_t n) { return should_fail() ? NULL : calloc(count, n); }
void *pk__realloc(void *p, size_t n) { return should_fail() ? NULL : realloc(p, n); }
void pk__free(void *p) { free(p); }

uint64_t pk__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
