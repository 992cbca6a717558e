#include "FuzzAllocations.h"

#include <sanitizer/allocator_interface.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_size_t counted;
static atomic_int counting;
static atomic_int installed;

/* Called by the sanitizer's allocator with its own locks held: nothing here
 * allocates. */
static void on_malloc(const volatile void *pointer, size_t size) {
  (void)pointer;
  if (atomic_load_explicit(&counting, memory_order_relaxed))
    atomic_fetch_add_explicit(&counted, size, memory_order_relaxed);
}

static void on_free(const volatile void *pointer) { (void)pointer; }

void fuzz_allocations_begin(void) {
  if (!atomic_exchange(&installed, 1)) __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
  atomic_store(&counted, 0);
  atomic_store(&counting, 1);
}

size_t fuzz_allocations_end(void) {
  atomic_store(&counting, 0);
  return atomic_load(&counted);
}

void fuzz_allocations_report(const char *what, size_t bytes, size_t input) {
  static int report = -1;
  if (report < 0) report = getenv("FUZZ_ALLOCATIONS_REPORT") != NULL;
  if (report) fprintf(stderr, "allocated %s %zu %zu\n", what, bytes, input);
}
