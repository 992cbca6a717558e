/* Hooks for the engine's own tests and fuzz harnesses (ctests/c, fuzz/).
 * Not in include/: the Swift layer never sees them. */
#ifndef PK_TEST_HOOKS_H
#define PK_TEST_HOOKS_H

#include <stdint.h>

/* The n-th allocation from now and every later one fail (0 disables), so a
 * test can walk every allocation failure in turn. Any thread. */
void pk_alloc_fail_after(uint64_t n);

#endif
