/*
 * engine-bench: the C engine driven by itself, with no Swift layer, for
 * the figures in docs/BENCHMARKS.md, "The kernel's floor under a client". C requests
 * in flight on one loop thread: each request's on_done submits the next one
 * on its connection from the loop thread (a queue push, no system call), so
 * what it measures is the I/O backend, the request writer, the parser and
 * the pool, and nothing above them.
 *
 *   engine-bench --url http://HOST:PORT/PATH [--connections C]
 *                [--seconds T] [--warmup-seconds W] [--io-backend auto|epoll|io_uring]
 *
 * --max-seconds T is --seconds T, and --requests N and --json are accepted
 * and ignored, so the command lines written for pocket-bench run it too.
 * Prints one JSON line:
 *   {"backend":"io_uring","requests":N,"errors":E,"elapsed_s":S,"rps":R,
 *    "cpu_us_per_req":U,"p50_us":…,"p99_us":…,"requests_total":M,"connections_opened":K}
 * requests = requests finished in the measured T seconds (after W seconds
 * of warmup), cpu_us_per_req = the process's user + system CPU time over
 * the measured phase (getrusage) per request finished in it, latencies the
 * engine's own submit-to-done time of each measured request (nearest rank).
 * requests_total counts the warmup's too (for system calls per request).
 * Exits 1 when a request failed, 2 on bad usage.
 *
 * Build: cc -O2 -D_GNU_SOURCE -I Sources/CHTTPEngine/include -I Sources/CHTTPEngine \
 *          Benchmarks/engine-bench/engine_bench.c Sources/CHTTPEngine/ *.c \
 *          -lpthread -lz -ldeflate -lssl -lcrypto -luring -o engine-bench
 * (scripts/bench-engine.sh does this and runs it beside wrk.)
 */
#include "CHTTPEngine.h"
#include "bench_clock.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES (1u << 24)

static pk_engine *engine;
static pk_request_spec spec;
static char host[256];
static char target[1024];
static atomic_int measuring;  /* 1 during the measured phase */
static atomic_int stopping;   /* 1: on_done submits no more */
static atomic_long done_count, error_count, in_flight;
static uint32_t *samples;     /* latencies in µs of measured requests (loop thread only) */
static size_t nsamples;

static void on_done(void *ctx, int error, int sys_errno, const pk_timings *t) {
  (void)ctx;
  if (error != 0) {
    if (atomic_fetch_add(&error_count, 1) == 0)
      fprintf(stderr, "engine-bench: request failed: error %d, errno %d\n", error, sys_errno);
    atomic_store(&stopping, 1);
  } else {
    atomic_fetch_add_explicit(&done_count, 1, memory_order_relaxed);
    if (atomic_load_explicit(&measuring, memory_order_relaxed) && nsamples < MAX_SAMPLES)
      samples[nsamples++] = (uint32_t)(t->total_ns / 1000);
  }
  if (!atomic_load(&stopping) && pk_engine_submit(engine, &spec, NULL) == 0) return;
  atomic_fetch_sub(&in_flight, 1);
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {}
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static uint32_t percentile(double p) {
  if (nsamples == 0) return 0;
  size_t rank = (size_t)(p / 100.0 * (double)nsamples + 0.999999);
  if (rank < 1) rank = 1;
  return samples[rank - 1];
}

static int usage(void) {
  fprintf(stderr, "usage: engine-bench --url http://HOST:PORT/PATH [--connections C] [--seconds T]\n"
                  "                    [--warmup-seconds W] [--io-backend auto|epoll|io_uring]\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *url = NULL, *backend = "auto";
  long conns = 64;
  double seconds = 3, warmup = 0.5;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--json")) continue; /* the only output there is; accepted like pocket-bench's */
    if (!v) return usage();
    if (!strcmp(a, "--url")) url = v;
    else if (!strcmp(a, "--connections")) conns = strtol(v, NULL, 10);
    else if (!strcmp(a, "--seconds") || !strcmp(a, "--max-seconds")) seconds = strtod(v, NULL);
    else if (!strcmp(a, "--requests")) {} /* pocket-bench's flag, accepted and ignored: T bounds the run */
    else if (!strcmp(a, "--warmup-seconds")) warmup = strtod(v, NULL);
    else if (!strcmp(a, "--io-backend")) backend = v;
    else return usage();
    i++;
  }
  unsigned port = 80;
  if (!url || conns < 1 || conns > 4096 || seconds <= 0 || warmup < 0) return usage();
  if (sscanf(url, "http://%255[^:/]:%u%1023s", host, &port, target) < 2 || port == 0 || port > 65535) {
    fprintf(stderr, "engine-bench: only http://HOST:PORT/PATH URLs (numeric port): %s\n", url);
    return 2;
  }
  if (target[0] == 0) strcpy(target, "/");

  pk_engine_config cfg;
  pk_engine_config_init(&cfg);
  cfg.callbacks.on_done = on_done;
  cfg.max_conns_per_origin = (uint32_t)conns;
  cfg.no_direct_submit = 1;
  if (!strcmp(backend, "epoll")) cfg.io_backend = PK_IO_EPOLL;
  else if (!strcmp(backend, "io_uring")) cfg.io_backend = PK_IO_URING;
  else if (!strcmp(backend, "auto")) cfg.io_backend = PK_IO_AUTO;
  else return usage();
  int rc = pk_engine_create(&cfg, &engine);
  if (rc != 0) {
    fprintf(stderr, "engine-bench: pk_engine_create failed: %d\n", rc);
    return 1;
  }
  samples = malloc(sizeof(uint32_t) * MAX_SAMPLES);
  if (!samples) return 1;

  memset(&spec, 0, sizeof spec);
  spec.method = "GET"; spec.method_len = 3;
  spec.scheme = PK_SCHEME_HTTP;
  spec.host = host; spec.host_len = strlen(host);
  spec.port = (uint16_t)port;
  spec.target = target; spec.target_len = strlen(target);
  spec.idempotent = -1;

  atomic_store(&in_flight, conns);
  for (long i = 0; i < conns; i++) {
    rc = pk_engine_submit(engine, &spec, NULL);
    if (rc != 0) {
      fprintf(stderr, "engine-bench: submit failed: %d\n", rc);
      return 1;
    }
  }
  sleep_s(warmup);
  long d0 = atomic_load(&done_count);
  double t0 = now_s(), c0 = cpu_s();
  atomic_store(&measuring, 1);
  sleep_s(seconds);
  atomic_store(&measuring, 0);
  long d1 = atomic_load(&done_count);
  double t1 = now_s(), c1 = cpu_s();
  atomic_store(&stopping, 1);
  for (int i = 0; i < 5000 && atomic_load(&in_flight) > 0; i++) sleep_s(0.001);

  pk_engine_stats st;
  pk_engine_get_stats(engine, &st);
  pk_engine_destroy(engine);
  /* The loop is gone: samples are ours. */
  qsort(samples, nsamples, sizeof(uint32_t), cmp_u32);
  long n = d1 - d0;
  double elapsed = t1 - t0;
  printf("{\"backend\":\"%s\",\"requests\":%ld,\"errors\":%ld,\"elapsed_s\":%.6f,\"rps\":%.1f,"
         "\"cpu_us_per_req\":%.3f,\"p50_us\":%u,\"p99_us\":%u,\"requests_total\":%ld,\"connections_opened\":%llu}\n",
         st.io_backend == PK_IO_URING ? "io_uring" : "epoll", n, atomic_load(&error_count), elapsed,
         n / elapsed, n > 0 ? (c1 - c0) * 1e6 / n : 0.0, percentile(50), percentile(99), atomic_load(&done_count),
         (unsigned long long)st.connections_opened);
  free(samples);
  return atomic_load(&error_count) > 0 ? 1 : 0;
}
