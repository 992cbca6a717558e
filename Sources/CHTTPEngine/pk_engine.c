/* The engine: what the Swift layer calls (create, submit, cancel, post,
 * shutdown, destroy, TLS settings, statistics) and what a loop thread does
 * each pass: drain the shared queues (submissions, cancels, posted work,
 * DNS results), run timers, poll. The top of the engine's DAG: it calls the
 * request, the connection, the pool, DNS, TLS and the loop; none of them
 * calls back here (docs/ENGINE.md, "Layers"). */
#include "pk_conn.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int pk_engine_on_loop_thread(pk_engine *eng) { return eng && pk__current_engine == eng; }

int pk_engine_add_tls(pk_engine *eng, const pk_tls_config *cfg, uint32_t *id) {
  if (!eng || !cfg || !id) return -PK_E_INVALID_ARGUMENT;
  pk__tls_ctx *ctx;
  int err = pk__tls_ctx_create(cfg, &ctx);
  if (err) return err;
  pthread_mutex_lock(&eng->tls_lock);
  uint32_t n = atomic_load_explicit(&eng->tls_count, memory_order_relaxed);
  if (n == PK_MAX_TLS_CONFIGS) {
    pthread_mutex_unlock(&eng->tls_lock);
    pk__tls_ctx_free(ctx);
    return -PK_E_TLS_CONFIG;
  }
  eng->tls_extra[n] = ctx;
  atomic_store_explicit(&eng->tls_count, n + 1, memory_order_release);
  pthread_mutex_unlock(&eng->tls_lock);
  *id = n + 1;
  return 0;
}

/* ------------------------------------------------------------- the pass */

static void process_submissions(pk__loop *loop, pk__req *list, bool stopping) {
  while (list) {
    pk__req *req = list;
    list = req->qnext;
    req->qnext = NULL;
    if (stopping) {
      pk__req_finish(loop, req, PK_E_SHUTDOWN, 0);
      continue;
    }
    /* Not a one-at-a-time caller: no submitter's wait for a while (direct_pass). */
    if (!pk__list_empty(&loop->reqs)) loop->crowded_at = loop->now;
    pk__list_push_back(&loop->reqs, &req->all);
    pk__req_update_timer(loop, req);
    pk__conn_dispatch(loop, req, false);
  }
}

static void process_cancels(pk__loop *loop, pk__req *list) {
  while (list) {
    pk__req *req = list;
    list = req->cnext;
    req->cnext = NULL;
    /* Cleared only now, under the lock: until here a second cancel of the
     * same request must not relink it (that would rewrite cnext mid-walk). */
    pthread_mutex_lock(&loop->lock);
    req->cancel_queued = 0;
    pthread_mutex_unlock(&loop->lock);
    if (req->state == PK_REQ_DONE || req->state == PK_REQ_FREE) continue;
    if (req->conn) pk__conn_fail(loop, req->conn, PK_E_CANCELLED, 0);
    else pk__req_finish(loop, req, PK_E_CANCELLED, 0);
  }
}

/* Swaps the shared queues out under one lock acquisition and hands back the
 * request structs finished since the last swap. */
static bool drain_once(pk__loop *loop, bool *stopping);

/* Posted work usually submits requests (a task resumed on the loop sends
 * its next one): pick those up in the same pass so they are written now,
 * not after another epoll_wait. Bounded, so I/O is never starved. */
static void drain_shared(pk__loop *loop, bool *stopping) {
  for (int pass = 0; pass < 4 && drain_once(loop, stopping); pass++) {
  }
}

/* Under loop->lock: finished request structs go back to the free list,
 * except any that a cancel still names (taken in this very swap, or queued
 * since): such a struct must not be handed out again before that cancel is
 * looked at. It goes next time. */
static void recycle_done(pk__loop *loop) {
  pk__req *keep = NULL;
  while (loop->done_reqs) {
    pk__req *r = loop->done_reqs;
    loop->done_reqs = r->qnext;
    if (r->cancel_queued) {
      r->qnext = keep;
      keep = r;
      continue;
    }
    pk__req_set_state(r, PK_REQ_FREE);
    r->qnext = loop->free_reqs;
    loop->free_reqs = r;
  }
  loop->done_reqs = keep;
}

/* Returns true if it ran posted work (which may have queued more). */
static bool drain_once(pk__loop *loop, bool *stopping) {
  pthread_mutex_lock(&loop->lock);
  loop->sleeping = false;
  loop->wake_pending = false;
  pk__req *subs = loop->sq_head;
  loop->sq_head = loop->sq_tail = NULL;
  pk__req *cancels = loop->cancels;
  loop->cancels = NULL;
  recycle_done(loop);
  *stopping = loop->stopping;
  /* Double-buffered posts: swap the arrays, run ours outside the lock. */
  pk__post *posts = loop->posts;
  uint32_t nposts = loop->posts_len, cap = loop->posts_cap;
  loop->posts = loop->run_posts;
  loop->posts_cap = loop->run_cap;
  loop->posts_len = 0;
  loop->run_posts = posts;
  loop->run_cap = cap;
  pthread_mutex_unlock(&loop->lock);

  if (pk__dns_has_done(&loop->dns)) pk__dns_process(&loop->dns, loop->now);
  if (subs) process_submissions(loop, subs, *stopping);
  if (cancels) process_cancels(loop, cancels);
  void *ctx = loop->eng->cfg.post_ctx;
  for (uint32_t i = 0; i < nposts; i++) posts[i].fn(ctx, posts[i].arg);
  return nposts > 0;
}

int pk_engine_post(pk_engine *eng, uint32_t loop_index, void (*fn)(void *ctx, void *arg), void *arg) {
  if (!eng || !fn) return -PK_E_INVALID_ARGUMENT;
  pk__loop *loop = &eng->loops[loop_index % eng->nloops];
  bool wake = false;
  pthread_mutex_lock(&loop->lock);
  if (loop->closed) {
    pthread_mutex_unlock(&loop->lock);
    return -PK_E_SHUTDOWN;
  }
  if (loop->posts_len == loop->posts_cap) {
    uint32_t ncap = loop->posts_cap ? loop->posts_cap * 2 : 64;
    pk__post *np = pk__realloc(loop->posts, ncap * sizeof *np);
    if (!np) {
      pthread_mutex_unlock(&loop->lock);
      return -PK_E_NOMEM;
    }
    loop->posts = np;
    loop->posts_cap = ncap;
  }
  loop->posts[loop->posts_len++] = (pk__post){fn, arg};
  if (loop->sleeping && !loop->wake_pending) {
    loop->wake_pending = true;
    wake = true;
  }
  pthread_mutex_unlock(&loop->lock);
  if (wake) pk__loop_wake(loop);
  return 0;
}

static void fail_everything(pk__loop *loop) {
  loop->stopping_local = true;
  while (!pk__list_empty(&loop->reqs)) {
    pk__req *req = PK_CONTAINER_OF(loop->reqs.next, pk__req, all);
    if (req->conn) pk__conn_fail(loop, req->conn, PK_E_SHUTDOWN, 0);
    else pk__req_finish(loop, req, PK_E_SHUTDOWN, 0);
  }
  for (pk__conn *c; (c = pk__origin_any_idle(loop));) pk__conn_close(loop, c);
}

static void pass_end(pk__loop *loop) {
  if (!loop->finished_in_pass) return;
  loop->finished_in_pass = false;
  if (loop->eng->cfg.callbacks.on_pass_end) loop->eng->cfg.callbacks.on_pass_end(loop->eng->cfg.post_ctx);
}

/* A loop thread: drain the shared queues, run due timers, sleep in
 * epoll_wait until I/O, a timer or a wake-up, dispatch the events. */
static void *loop_main(void *arg) {
  pk__loop *loop = arg;
  pk__current_engine = loop->eng;
  pthread_mutex_lock(&loop->pass_lock);
  pthread_setname_np(pthread_self(), "pocket-loop"); /* visible in top -H, gdb, /proc */
  /* sendfile(2) and write(2) (file bodies, sink files that are pipes) have
   * no MSG_NOSIGNAL: to a peer or reader that went away they raise SIGPIPE,
   * which is sent to the writing thread and by default kills the process.
   * Blocked here, on the engine's own threads only (no process-wide handler
   * is touched), the write fails with EPIPE and is reported as an error. */
  sigset_t pipe_only;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, NULL);
  loop->now = pk__now_ns();
  for (;;) {
    bool stopping;
    drain_shared(loop, &stopping);
    if (stopping) {
      fail_everything(loop);
      pass_end(loop);
      pk__conn_recycle_dead(loop);
      /* Requests submitted while we failed the others are failed on the
       * next pass; exit only when the queue is empty under the lock. */
      pthread_mutex_lock(&loop->lock);
      bool empty = loop->sq_head == NULL && loop->posts_len == 0 && loop->cancels == NULL &&
                   pk__list_empty(&loop->reqs);
      if (empty) loop->closed = true; /* from here on, posts are refused */
      pthread_mutex_unlock(&loop->lock);
      if (empty) break;
      continue;
    }
    loop->now = pk__now_ns();
    pk__loop_run_timers(loop);
    pass_end(loop);
    pk__conn_recycle_dead(loop);

    int timeout = pk__loop_next_timeout(loop);
    /* With timers armed, sleep at most PK_SLEEP_CAP_MS: a direct pass that
     * arms a later deadline then needs no wake-up (see pk_engine_submit). */
    if (timeout > PK_SLEEP_CAP_MS) timeout = PK_SLEEP_CAP_MS;
    pthread_mutex_lock(&loop->lock);
    if (loop->sq_head || loop->cancels || pk__dns_has_done(&loop->dns) || loop->posts_len || loop->stopping)
      timeout = 0;
    else loop->sleeping = true;
    pthread_mutex_unlock(&loop->lock);
    loop->sleep_until = timeout < 0 ? UINT64_MAX : loop->now + (uint64_t)timeout * 1000000u;

    pk__loop_poll(loop, timeout);
    /* Awake: a connection a submitter's wait left out of epoll is watched again. */
    pk__conn_rearm_disarmed(loop);
    pass_end(loop);
    pk__conn_recycle_dead(loop);
  }
  pthread_mutex_unlock(&loop->pass_lock);
  pk__current_engine = NULL;
  pk__tls_thread_end();
  return NULL;
}

/* A direct pass: the submitting thread holds the sleeping loop's pass_lock
 * and does what the loop's next pass would do with its submission (the
 * request is written now, from this thread, on a pooled connection), then
 * the pass's end (finished requests' continuations). Posted work, cancels and DNS results stay the
 * loop thread's. The loop is woken only if it must see something before its
 * epoll_wait times out: an earlier deadline than it sleeps to, or queued work. */
static void direct_pass(pk__loop *loop, pk__req *req, uint64_t id) {
  pk_engine *outer = pk__current_engine;
  pk__current_engine = loop->eng;
  loop->in_direct = true;
  loop->now = pk__now_ns();
  pthread_mutex_lock(&loop->lock);
  pk__req *subs = loop->sq_head;
  loop->sq_head = loop->sq_tail = NULL;
  bool stopping = loop->stopping;
  pthread_mutex_unlock(&loop->lock);
  if (subs) process_submissions(loop, subs, stopping);
  /* The request is written: wait for its answer here (pk_conn.c). */
  int32_t wait_us = loop->eng->cfg.inline_wait_us;
  bool waited = false;
  if (loop->inline_skip) {
    loop->inline_skip--;
  } else if (wait_us > 0 && !stopping &&
             /* Only for a caller sending one request at a time: none has had
              * company in flight on this loop for inline_wait_quiet_ms.
              * Callers sending concurrently (a server's handlers) keep their
              * threads, even in a moment when the loop happens to be idle. */
             loop->now - loop->crowded_at >= (uint64_t)loop->eng->cfg.inline_wait_quiet_ms * 1000000u &&
             /* ...in a tight loop: this request follows the last answer at once. */
             (!loop->eng->cfg.inline_wait_gap_us ||
              loop->now - loop->last_done_at <= (uint64_t)loop->eng->cfg.inline_wait_gap_us * 1000u) &&
             atomic_load_explicit(&req->id, memory_order_relaxed) == id && req->state == PK_REQ_ACTIVE) {
    /* A server slower than the wait: the next 64 direct passes do not
     * wait (a caller's thread is not held for answers that come later). */
    waited = true;
    if (pk__conn_wait_inline(loop, req, id, (uint64_t)wait_us * 1000u) == PK__WAIT_TIMED_OUT) loop->inline_skip = 64;
  }
  /* No wait: the loop watches the answer, so the connection an earlier wait
   * left out of its epoll set (perhaps this request's) goes back in now. */
  if (!waited) pk__conn_arm_disarmed(loop);
  pass_end(loop);
  /* Connections closed here are recycled by the loop thread, after the
   * events it may already hold for them. */
  loop->in_direct = false;
  bool late = pk__loop_next_deadline(loop) < loop->sleep_until || loop->deferred_opens;
  pk__current_engine = outer;
  bool wake = false;
  pthread_mutex_lock(&loop->lock);
  /* Requests this pass finished (answered here, with no loop pass to
   * recycle them) are free again for the next submission. */
  recycle_done(loop);
  if ((late || loop->sq_head || loop->cancels || loop->posts_len || loop->stopping || pk__dns_has_done(&loop->dns)) &&
      loop->sleeping && !loop->wake_pending) {
    loop->wake_pending = true;
    wake = true;
  }
  pthread_mutex_unlock(&loop->lock);
  pthread_mutex_unlock(&loop->pass_lock);
  if (wake) pk__loop_wake(loop);
}

/* The resolver's wake-up (pk_dns.h): a result is on the cache's list. Only
 * a sleeping loop needs the eventfd. */
static void dns_wake(void *ctx) {
  pk__loop *loop = ctx;
  bool wake = false;
  pthread_mutex_lock(&loop->lock);
  if (loop->sleeping && !loop->wake_pending) {
    loop->wake_pending = true;
    wake = true;
  }
  pthread_mutex_unlock(&loop->lock);
  if (wake) pk__loop_wake(loop);
}

/* --------------------------------------------------------------- engine */

void pk_engine_config_init(pk_engine_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->loops = 1;
  cfg->max_conns_per_origin = 64;
  cfg->idle_timeout_ms = 60000;
  cfg->dns_threads = 2;
  cfg->dns_cache_ttl_ms = 30000;
  cfg->connection_attempt_delay_ms = 250;
  cfg->inline_wait_quiet_ms = 10;
  cfg->inline_wait_gap_us = 50;
  cfg->max_interim = 8;
  cfg->decode_content = 1;
  cfg->io_backend = PK_IO_AUTO;
  pk_parse_limits_init(&cfg->limits);
  pk_inflate_limits_init(&cfg->inflate_limits);
}

static int loop_init(pk_engine *eng, pk__loop *loop, uint32_t index) {
  memset(loop, 0, sizeof *loop);
  loop->eng = eng;
  loop->index = index;
  loop->epfd = loop->evfd = -1;
  pthread_mutex_init(&loop->lock, NULL);
  pthread_mutex_init(&loop->pass_lock, NULL);
  loop->sleep_until = UINT64_MAX;
  pk__list_init(&loop->reqs);
  pk__list_init(&loop->short_origins);
  loop->fd_timer.heap_index = PK_TIMER_IDLE;
  pk__dns_cache_init(&loop->dns, eng->resolver, eng->cfg.dns_cache_ttl_ms, dns_wake, loop);
  return pk__loop_open(loop, eng->cfg.io_backend);
}

static void loop_free(pk__loop *loop) {
  pk__loop_close(loop);
  pk__dns_cache_free(&loop->dns);
  pk__req *lists[3] = {loop->free_reqs, loop->done_reqs, loop->sq_head};
  for (int i = 0; i < 3; i++) {
    for (pk__req *r = lists[i]; r;) {
      pk__req *next = r->qnext;
      pk__free(r->buf);
      pk__free(r);
      r = next;
    }
  }
  pk__conn_free_all(loop);
  pk__rbufs_free(loop);
  pk__free(loop->timers.items);
  pk__free(loop->posts);
  pk__free(loop->run_posts);
  pk__origins_free(loop);
  pthread_mutex_destroy(&loop->lock);
  pthread_mutex_destroy(&loop->pass_lock);
}

int pk_engine_create(const pk_engine_config *cfg, pk_engine **out) {
  if (!out) return -PK_E_INVALID_ARGUMENT;
  pk_engine *eng = pk__calloc(1, sizeof *eng);
  if (!eng) return -PK_E_NOMEM;
  if (cfg) eng->cfg = *cfg;
  else pk_engine_config_init(&eng->cfg);
  pk_engine_config *c = &eng->cfg;
  if (!c->loops) c->loops = 1;
  if (!c->max_conns_per_origin) c->max_conns_per_origin = 64;
  if (!c->dns_threads) c->dns_threads = 1;
  if (!c->limits.max_head_bytes) pk_parse_limits_init(&c->limits);
  if (!c->callbacks.on_done || c->io_backend < PK_IO_EPOLL || c->io_backend > PK_IO_URING) {
    pk__free(eng);
    return -PK_E_INVALID_ARGUMENT;
  }
  eng->nloops = c->loops;
  eng->loops = pk__calloc(eng->nloops, sizeof *eng->loops);
  int err = eng->loops ? 0 : -PK_E_NOMEM;
  uint32_t started = 0;
  int sys_errno = 0;
  pthread_mutex_init(&eng->tls_lock, NULL);
  /* TLS first: OpenSSL is linked, so every setting that can fail fails
   * here, once, and not at the first https request (pk_tls.h). */
  if (!err) err = pk__tls_ctx_create(&c->tls, &eng->tls);
  /* The strings were read: none is kept. */
  c->tls = (pk_tls_config){.min_version = c->tls.min_version, .insecure = c->tls.insecure};
  /* No resolver thread starts until a lookup needs one (pk_dns.h). */
  if (!err) err = pk__resolver_create(c->dns_threads, &eng->resolver);
  for (uint32_t i = 0; !err && i < eng->nloops; i++) err = loop_init(eng, &eng->loops[i], i);
  for (uint32_t i = 0; !err && i < eng->nloops; i++) {
    int rc = pthread_create(&eng->loops[i].thread, NULL, loop_main, &eng->loops[i]);
    if (rc != 0) {
      err = -PK_E_THREAD;
      sys_errno = rc;
    } else {
      started++;
    }
  }
  if (err) {
    for (uint32_t i = 0; i < started; i++) {
      pthread_mutex_lock(&eng->loops[i].lock);
      eng->loops[i].stopping = true;
      pthread_mutex_unlock(&eng->loops[i].lock);
      pk__loop_wake(&eng->loops[i]);
      pthread_join(eng->loops[i].thread, NULL);
    }
    if (eng->loops)
      for (uint32_t i = 0; i < eng->nloops; i++)
        if (eng->loops[i].eng) loop_free(&eng->loops[i]);
    if (eng->resolver) pk__resolver_release(eng->resolver);
    pk__tls_ctx_free(eng->tls);
    pthread_mutex_destroy(&eng->tls_lock);
    pk__free(eng->loops);
    pk__free(eng);
    if (sys_errno) errno = sys_errno; /* pthread_create's answer, for the caller */
    return err;
  }
  *out = eng;
  return 0;
}

static void start_shutdown(pk_engine *eng) {
  if (atomic_exchange(&eng->shut, 1)) return;
  for (uint32_t i = 0; i < eng->nloops; i++) {
    pk__loop *loop = &eng->loops[i];
    pthread_mutex_lock(&loop->lock);
    loop->stopping = true;
    pthread_mutex_unlock(&loop->lock);
    pk__loop_wake(loop);
  }
}

static void join_loops(pk_engine *eng) {
  if (atomic_exchange(&eng->joined, 1)) return;
  for (uint32_t i = 0; i < eng->nloops; i++) pthread_join(eng->loops[i].thread, NULL);
}

void pk_engine_shutdown(pk_engine *eng) {
  if (!eng) return;
  start_shutdown(eng);
  if (!pk__on_loop_thread(eng)) join_loops(eng);
}

static void engine_free(pk_engine *eng) {
  pk__resolver_release(eng->resolver); /* first: no lookup result may reach a freed loop */
  for (uint32_t i = 0; i < eng->nloops; i++) loop_free(&eng->loops[i]);
  pk__tls_ctx_free(eng->tls);
  for (uint32_t i = 0; i < atomic_load(&eng->tls_count); i++) pk__tls_ctx_free(eng->tls_extra[i]);
  pthread_mutex_destroy(&eng->tls_lock);
  void (*release)(void *) = eng->cfg.post_ctx_release;
  void *ctx = eng->cfg.post_ctx;
  pk__free(eng->loops);
  pk__free(eng);
  if (release) release(ctx);
}

/* Destroy from inside a callback cannot join its own thread: a short-lived
 * reaper thread joins the loops and frees the engine once they are gone. */
static void *reaper_main(void *arg) {
  pk_engine *eng = arg;
  join_loops(eng);
  engine_free(eng);
  pk__tls_thread_end();
  return NULL;
}

void pk_engine_destroy(pk_engine *eng) {
  if (!eng) return;
  start_shutdown(eng);
  if (pk__on_loop_thread(eng)) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, reaper_main, eng) != 0) {
      /* No thread to spare: leak the engine rather than deadlock. */
    }
    pthread_attr_destroy(&attr);
    return;
  }
  join_loops(eng);
  engine_free(eng);
}

int pk_engine_submit(pk_engine *eng, const pk_request_spec *spec, pk_request_handle *handle) {
  if (!eng || !spec) return -PK_E_INVALID_ARGUMENT;
  if (atomic_load_explicit(&eng->shut, memory_order_acquire)) return -PK_E_SHUTDOWN;
  uint32_t li = eng->nloops == 1 ? 0 : atomic_fetch_add_explicit(&eng->rr, 1, memory_order_relaxed) % eng->nloops;
  pk__loop *loop = &eng->loops[li];

  pthread_mutex_lock(&loop->lock);
  pk__req *req = loop->free_reqs;
  if (req) loop->free_reqs = req->qnext;
  pthread_mutex_unlock(&loop->lock);
  if (!req) {
    req = pk__calloc(1, sizeof *req);
    if (!req) return -PK_E_NOMEM;
  }

  int err = spec->scheme == PK_SCHEME_HTTPS && !pk__engine_tls(eng, spec->tls_id) ? -PK_E_INVALID_ARGUMENT
                                                                                  : pk__req_init(req, loop, spec, pk__conn_deadline);
  if (err) {
    pthread_mutex_lock(&loop->lock);
    req->qnext = loop->free_reqs;
    loop->free_reqs = req;
    pthread_mutex_unlock(&loop->lock);
    return err;
  }
  uint64_t id = atomic_fetch_add_explicit(&eng->next_id, 1, memory_order_relaxed) + 1;
  atomic_store_explicit(&req->id, id, memory_order_relaxed);

  bool wake = false;
  pthread_mutex_lock(&loop->lock);
  if (loop->stopping) {
    atomic_store_explicit(&req->id, 0, memory_order_relaxed);
    pk__req_set_state(req, PK_REQ_FREE);
    req->qnext = loop->free_reqs;
    loop->free_reqs = req;
    pthread_mutex_unlock(&loop->lock);
    return -PK_E_SHUTDOWN;
  }
  atomic_fetch_add_explicit(&loop->st_pending, 1, memory_order_relaxed);
  if (loop->sq_tail) loop->sq_tail->qnext = req;
  else loop->sq_head = req;
  loop->sq_tail = req;
  /* Only a sleeping loop needs the eventfd; a busy one drains the queue on its
   * next pass, so a loaded engine makes no wake-up syscalls at all. A
   * sleeping, idle loop whose pass this thread can take (not blocked on)
   * gets no wake-up either: this thread runs the submission (direct_pass). */
  bool direct = false;
  if (loop->sleeping && !loop->wake_pending) {
    /* Only for a loop with nothing in flight (one request at a time: the
     * case where the wake-up is the whole cost; a busy loop writes its
     * submissions in batches, which is cheaper than each sender writing its
     * own under the pass lock), and only onto a pooled connection: a socket
     * being set up while the loop sits in epoll_wait could be reported in
     * a state the loop never sees otherwise (an unconnected socket's
     * EPOLLHUP). The loop sleeps with an empty queue and no wake-up
     * pending, so this request is the only submission. */
    if (!eng->cfg.no_direct_submit && !pk__on_loop_thread(eng) && pthread_mutex_trylock(&loop->pass_lock) == 0) {
      if (pk__list_empty(&loop->reqs) && pk__origin_has_idle(loop, req)) direct = true;
      else pthread_mutex_unlock(&loop->pass_lock);
    }
    if (!direct) {
      loop->wake_pending = true;
      wake = true;
    }
  }
  pthread_mutex_unlock(&loop->lock);
  /* The handle is the caller's before the request can run (and finish). */
  if (handle) {
    handle->req = req;
    handle->id = id;
    handle->loop = li;
  }
  if (wake) pk__loop_wake(loop);
  if (direct) direct_pass(loop, req, id);
  return 0;
}

void pk_engine_cancel(pk_engine *eng, pk_request_handle handle) {
  if (!eng || !handle.req || !handle.id) return;
  pk__req *req = handle.req;
  pk__loop *loop = req->loop;
  bool wake = false;
  pthread_mutex_lock(&loop->lock);
  /* Request structs live until the engine is destroyed, so reading the id of
   * a recycled one is safe; a different id means this request is long done. */
  if (atomic_load_explicit(&req->id, memory_order_acquire) == handle.id && !req->cancel_queued) {
    req->cancel_queued = 1;
    req->cnext = loop->cancels;
    loop->cancels = req;
    if (loop->sleeping && !loop->wake_pending) {
      loop->wake_pending = true;
      wake = true;
    }
  }
  pthread_mutex_unlock(&loop->lock);
  if (wake) pk__loop_wake(loop);
}

void pk_engine_get_stats(pk_engine *eng, pk_engine_stats *out) {
  memset(out, 0, sizeof *out);
  for (uint32_t i = 0; i < eng->nloops; i++) {
    pk__loop *l = &eng->loops[i];
    out->connections_opened += atomic_load(&l->st_opened);
    out->connections_closed += atomic_load(&l->st_closed);
    out->connections_idle += atomic_load(&l->st_idle);
    out->requests_completed += atomic_load(&l->st_completed);
    out->requests_retried += atomic_load(&l->st_retried);
    out->wakeups += atomic_load(&l->st_wakeups);
    out->requests_pending += atomic_load(&l->st_pending);
    out->requests_answered_inline += atomic_load(&l->st_inline);
    out->inline_spins_answered += atomic_load(&l->st_spin_hits);
    out->inline_spins_missed += atomic_load(&l->st_spin_misses);
    out->ring_sends += atomic_load(&l->st_ring_sends);
    out->ring_submits += atomic_load(&l->st_ring_submits);
  }
  out->io_backend = eng->nloops && eng->loops[0].ring ? PK_IO_URING : PK_IO_EPOLL;
}

/* ------------------------------------------------- loop-thread requests */

/* Loop thread: the next piece of a stream body (see the header). */
int pk_request_send_body(pk_engine *eng, pk_request_handle h, const void *data, size_t len, int last) {
  pk__req *req = h.req;
  if (!req || !pk__on_loop_thread(eng)) return -PK_E_INVALID_ARGUMENT;
  if (atomic_load_explicit(&req->id, memory_order_acquire) != h.id || !pk__req_attached(req))
    return -PK_E_CANCELLED;
  bool segment = req->body_kind == PK_BODY_SEGMENTS && req->seg_i < req->nsegs &&
                 req->segs[req->seg_i].kind == PK_SEG_STREAM;
  if ((req->body_kind != PK_BODY_STREAM && !segment) || !req->chunk_asked || (len && !data))
    return -PK_E_INVALID_ARGUMENT;
  pk__conn *conn = req->conn;
  if (!conn) return -PK_E_INVALID_ARGUMENT;
  req->chunk_asked = 0;
  req->body_provided += len;
  uint64_t declared = segment ? req->segs[req->seg_i].len : req->body_chunked ? PK_SEG_UNKNOWN_LEN : req->body_len;
  if (declared != PK_SEG_UNKNOWN_LEN && (req->body_provided > declared || (last && req->body_provided != declared))) {
    pk__conn_fail(req->loop, conn, PK_E_BODY_LENGTH, 0);
    return 0;
  }
  pk__body_set_piece(req, data, len, last != 0);
  /* Inside conn_write (on_send_more answered at once) its loop goes on by itself. */
  if (conn->state == PK_CONN_ACTIVE && !req->body_stopped && !conn->want_write && !conn->writing) {
    pk__conn_write(req->loop, conn);
    if (conn->req == req) pk__req_update_timer(req->loop, req);
  }
  return 0;
}

/* Loop thread: a paused body may flow again (see the header). */
int pk_request_resume_read(pk_engine *eng, pk_request_handle h) {
  pk__req *req = h.req;
  if (!req || !pk__on_loop_thread(eng)) return -PK_E_INVALID_ARGUMENT;
  if (atomic_load_explicit(&req->id, memory_order_acquire) != h.id || !pk__req_attached(req))
    return -PK_E_CANCELLED;
  if (!req->paused) return 0;
  req->paused = 0;
  req->t_last_activity = pk__now_ns();
  pk__conn *conn = req->conn;
  if (conn && conn->state == PK_CONN_ACTIVE) {
    /* Edge-triggered: bytes that arrived while paused raise no new event. */
    pk__conn_read(req->loop, conn, 0);
    if (conn->req == req) pk__req_update_timer(req->loop, req);
  }
  return 0;
}
