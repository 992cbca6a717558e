/*
 * CPocketBenchCount: the instruction counters of `pocket-bench --count`,
 * and the shared counters of its latency histogram.
 *
 * Two sources of user-space instruction counts:
 *  - perf: one hardware counter (PERF_COUNT_HW_INSTRUCTIONS, exclude_kernel,
 *    inherit) per thread of this process, threads named `skip_comm` left out
 *    (the embedded server's `pkbs-loop`). Needs a PMU: a virtual machine
 *    without one refuses it (ENOENT).
 *  - callgrind: this process runs under `valgrind --tool=callgrind
 *    --instr-atstart=no`; the window is instrumented, zeroed at its start and
 *    dumped at its end (the dump's `totals:` line is its instruction count).
 */
#ifndef CPOCKETBENCHCOUNT_H
#define CPOCKETBENCHCOUNT_H

#include <stdint.h>

/* 1 when this process runs under valgrind, else 0. */
int pkbc_on_valgrind(void);

/* callgrind: instrument and count from now on (zeroing what came before). */
void pkbc_callgrind_start(void);
/* callgrind: dump the counts since pkbc_callgrind_start (its dump file gets
 * `label` as its description), then stop instrumenting. */
void pkbc_callgrind_stop(const char *label);

/* perf: the open counters of one window. */
typedef struct pkbc_perf {
    int fds[512];
    int count;
} pkbc_perf;

/* Opens and starts one counter per thread of this process, except those whose
 * name is `skip_comm` (NULL: none). Returns 0, or -errno of the first counter
 * the kernel refuses (nothing is left open then). */
int pkbc_perf_start(pkbc_perf *p, const char *skip_comm);
/* Reads the sum of the counters into *out and closes them; 0 or -errno. */
int pkbc_perf_stop(pkbc_perf *p, uint64_t *out);

/* One more at counts[i], from any thread (a relaxed atomic add): the
 * latency buckets every request task of a phase records into. */
static inline void pkbc_count_add(uint64_t *counts, long i) {
    __atomic_fetch_add(&counts[i], 1, __ATOMIC_RELAXED);
}

#endif
