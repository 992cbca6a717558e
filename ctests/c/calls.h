/* One request's outcome for the engine's C tests (test_engine.c,
 * test_ring.c): the callbacks fill it, wait_call waits for on_done. */
#ifndef PK_TEST_CALLS_H
#define PK_TEST_CALLS_H

#include "CHTTPEngine.h"
#include "check.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int done, error, status;
  size_t body;
} call;

static inline int on_head(void *ctx, const pk_response_head *h, const char *raw, size_t n, int64_t cl) {
  (void)raw, (void)n, (void)cl;
  ((call *)ctx)->status = h->status;
  return PK_HEAD_CONTINUE;
}

static inline int on_body(void *ctx, const char *d, size_t n) {
  (void)d;
  ((call *)ctx)->body += n;
  return PK_BODY_CONTINUE;
}

static inline void on_done(void *ctx, int error, int sys_errno, const pk_timings *t) {
  (void)sys_errno, (void)t;
  call *c = ctx;
  pthread_mutex_lock(&c->lock);
  c->done = 1;
  c->error = error;
  pthread_cond_signal(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

static inline void init_call(call *c) {
  memset(c, 0, sizeof *c);
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->cond, NULL);
  c->error = -1;
}

/* Waits for on_done (bounded: a hang fails the test instead of blocking CI). */
static inline int wait_call(call *c) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 60;
  pthread_mutex_lock(&c->lock);
  while (!c->done)
    if (pthread_cond_timedwait(&c->cond, &c->lock, &until) == ETIMEDOUT) break;
  int done = c->done;
  pthread_mutex_unlock(&c->lock);
  EXPECT(done);
  return done ? c->error : -1;
}

static inline void destroy_call(call *c) {
  pthread_mutex_destroy(&c->lock);
  pthread_cond_destroy(&c->cond);
}

/* A GET / to 127.0.0.1:port for `c` (10 s idle read, 20 s in all). */
static inline void get_spec(pk_request_spec *s, unsigned short port, call *c) {
  memset(s, 0, sizeof *s);
  s->method = "GET";
  s->method_len = 3;
  s->host = "127.0.0.1";
  s->host_len = 9;
  s->port = port;
  s->target = "/";
  s->target_len = 1;
  s->read_timeout_ms = 10000;
  s->total_timeout_ms = 20000;
  s->idempotent = -1;
  s->ctx = c;
}

/* The backend under test: POCKET_IO_BACKEND (auto, epoll, io_uring), as
 * the Swift layer reads it; `make check` runs test_engine on each. */
static inline int test_io_backend(void) {
  const char *b = getenv("POCKET_IO_BACKEND");
  if (b && strcmp(b, "epoll") == 0) return PK_IO_EPOLL;
  if (b && strcmp(b, "io_uring") == 0) return PK_IO_URING;
  return PK_IO_AUTO;
}

#endif
