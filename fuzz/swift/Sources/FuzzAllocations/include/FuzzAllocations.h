/* Counts the heap bytes the process allocates between fuzz_allocations_begin
 * and fuzz_allocations_end, through AddressSanitizer's malloc hooks (every
 * target is built with -sanitize=address, whose allocator calls them on
 * every allocation; up to five sets of hooks coexist, libFuzzer's among
 * them). Frees are not subtracted: the figure is everything allocated, a
 * bound on the peak. */
#ifndef FUZZ_ALLOCATIONS_H
#define FUZZ_ALLOCATIONS_H

#include <stddef.h>

/* Starts counting from zero (installs the hooks on the first call). */
void fuzz_allocations_begin(void);
/* Stops counting; the bytes allocated since fuzz_allocations_begin. */
size_t fuzz_allocations_end(void);

/* With FUZZ_ALLOCATIONS_REPORT set in the environment, prints
 * "allocated WHAT BYTES INPUT" to stderr; otherwise nothing. */
void fuzz_allocations_report(const char *what, size_t bytes, size_t input);

#endif
