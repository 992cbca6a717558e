/* The event loop: one epoll instance per thread, a timer heap, and the
 * thread-safe doors into it (submit, cancel, shutdown). Other threads only
 * touch the fields under loop->lock; everything else belongs to the loop. */
#include "pk_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define PK_MAX_EVENTS 256

static _Thread_local pk_engine *current_engine;

bool pk__on_loop_thread(pk_engine *eng) { return current_engine == eng; }

int pk_engine_on_loop_thread(pk_engine *eng) { return eng && current_engine == eng; }

/* The engine's own TLS context is made on first use when its settings are
 * the defaults: OpenSSL and the system trust store cost about 4 MB, which a
 * client that never speaks https should not pay. Settings that name files
 * are loaded at create, so their errors surface there. */
static bool tls_config_is_default(const pk_tls_config *t) {
  return !t->ca_file && !t->ca_dir && !t->cert_file && !t->key_file && !t->ciphers && !t->pin_count;
}

pk__tls_ctx *pk__engine_tls(pk_engine *eng, uint32_t id) {
  if (id == 0) {
    pk__tls_ctx *c = atomic_load_explicit(&eng->tls, memory_order_acquire);
    if (c) return c;
    pthread_mutex_lock(&eng->tls_lock);
    c = atomic_load_explicit(&eng->tls, memory_order_relaxed);
    if (!c && pk__tls_ctx_create(&eng->cfg.tls, &c) == 0) atomic_store_explicit(&eng->tls, c, memory_order_release);
    pthread_mutex_unlock(&eng->tls_lock);
    return c;
  }
  uint32_t n = atomic_load_explicit(&eng->tls_count, memory_order_acquire);
  return id <= n ? eng->tls_extra[id - 1] : NULL;
}

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

/* --------------------------------------------------------------- timers */

static void heap_swap(pk__heap *h, uint32_t a, uint32_t b) {
  pk__timer *t = h->items[a];
  h->items[a] = h->items[b];
  h->items[b] = t;
  h->items[a]->heap_index = a;
  h->items[b]->heap_index = b;
}

static void heap_up(pk__heap *h, uint32_t i) {
  while (i > 0) {
    uint32_t parent = (i - 1) / 2;
    if (h->items[parent]->deadline <= h->items[i]->deadline) break;
    heap_swap(h, i, parent);
    i = parent;
  }
}

static void heap_down(pk__heap *h, uint32_t i) {
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->len && h->items[l]->deadline < h->items[m]->deadline) m = l;
    if (r < h->len && h->items[r]->deadline < h->items[m]->deadline) m = r;
    if (m == i) return;
    heap_swap(h, i, m);
    i = m;
  }
}

static void overflow_unlink(pk__heap *h, pk__timer *t) {
  if (t->ov_prev) t->ov_prev->ov_next = t->ov_next;
  else h->overflow = t->ov_next;
  if (t->ov_next) t->ov_next->ov_prev = t->ov_prev;
  t->ov_prev = t->ov_next = NULL;
}

void pk__timer_cancel(pk__loop *loop, pk__timer *t) {
  pk__heap *h = &loop->timers;
  uint32_t i = t->heap_index;
  if (i == PK_TIMER_IDLE) return;
  if (i == PK_TIMER_OVERFLOW) {
    overflow_unlink(h, t);
    t->heap_index = PK_TIMER_IDLE;
    return;
  }
  t->heap_index = PK_TIMER_IDLE;
  h->len--;
  if (i == h->len) return;
  h->items[i] = h->items[h->len];
  h->items[i]->heap_index = i;
  heap_up(h, i);
  heap_down(h, h->items[i]->heap_index);
}

void pk__timer_arm(pk__loop *loop, pk__timer *t, uint64_t deadline) {
  pk__heap *h = &loop->timers;
  if (t->heap_index == PK_TIMER_OVERFLOW) {
    t->deadline = deadline;
    return;
  }
  if (t->heap_index != PK_TIMER_IDLE) {
    uint64_t old = t->deadline;
    t->deadline = deadline;
    if (deadline < old) heap_up(h, t->heap_index);
    else heap_down(h, t->heap_index);
    return;
  }
  if (h->len == h->cap) {
    uint32_t cap = h->cap ? h->cap * 2 : 256;
    pk__timer **items = pk__realloc(h->items, cap * sizeof *items);
    if (!items) {
      /* Out of memory: keep the deadline in the overflow list (no allocation). */
      t->deadline = deadline;
      t->heap_index = PK_TIMER_OVERFLOW;
      t->ov_prev = NULL;
      t->ov_next = h->overflow;
      if (h->overflow) h->overflow->ov_prev = t;
      h->overflow = t;
      return;
    }
    h->items = items;
    h->cap = cap;
  }
  t->deadline = deadline;
  t->heap_index = h->len;
  h->items[h->len++] = t;
  heap_up(h, t->heap_index);
}

static void run_timers(pk__loop *loop) {
  pk__heap *h = &loop->timers;
  while (h->len && h->items[0]->deadline <= loop->now) {
    pk__timer *t = h->items[0];
    pk__timer_cancel(loop, t);
    t->fire(loop, t);
  }
  /* A fired timer may arm or cancel others: rescan from the head each time. */
  for (pk__timer *t = h->overflow; t;) {
    if (t->deadline > loop->now) {
      t = t->ov_next;
      continue;
    }
    pk__timer_cancel(loop, t);
    t->fire(loop, t);
    t = h->overflow;
  }
}

static int next_timeout_ms(pk__loop *loop) {
  pk__heap *h = &loop->timers;
  uint64_t d = h->len ? h->items[0]->deadline : UINT64_MAX;
  for (pk__timer *t = h->overflow; t; t = t->ov_next)
    if (t->deadline < d) d = t->deadline;
  if (d == UINT64_MAX) return -1;
  if (d <= loop->now) return 0;
  uint64_t ms = (d - loop->now + 999999) / 1000000; /* round up: never wake early */
  return ms > 3600000 ? 3600000 : (int)ms;
}

/* ------------------------------------------------------ request deadlines */

/* One heap timer per request, armed at the earliest deadline that applies to
 * its phase. Deadlines that move later (idle-read after each read) are not
 * re-armed: the timer fires early and re-arms, which keeps the hot path free
 * of heap operations. */
static uint64_t req_deadline(pk__req *req, int *which) {
  uint64_t best = UINT64_MAX;
  *which = 0;
  if (req->total_timeout_ms) {
    best = req->t_submit + (uint64_t)req->total_timeout_ms * 1000000u;
    *which = PK_E_TOTAL_TIMEOUT;
  }
  pk__conn *c = req->conn;
  if (c && (c->state == PK_CONN_RESOLVING || c->state == PK_CONN_CONNECTING || c->state == PK_CONN_HANDSHAKE) &&
      req->connect_timeout_ms) {
    uint64_t d = req->t_dns_start + (uint64_t)req->connect_timeout_ms * 1000000u;
    if (d < best) {
      best = d;
      *which = PK_E_CONNECT_TIMEOUT;
    }
  } else if (c && c->state == PK_CONN_ACTIVE && req->expect_wait) {
    /* Waiting for 100 Continue: past this, send the body anyway (RFC 9110 §10.1.1). */
    uint64_t d = req->t_expect + (uint64_t)req->expect_ms * 1000000u;
    if (d < best) {
      best = d;
      *which = PK__EXPECT_DEADLINE;
    }
  } else if (c && c->state == PK_CONN_ACTIVE && !req->paused && req->read_timeout_ms) {
    /* Idle: nothing read or written for that long (a server that stops
     * reading an upload stalls it as surely as one that stops sending). A
     * paused body is our consumer's delay, not the server's silence. */
    uint64_t d = req->t_last_activity + (uint64_t)req->read_timeout_ms * 1000000u;
    if (d < best) {
      best = d;
      *which = PK_E_READ_TIMEOUT;
    }
  }
  return best;
}

void pk__req_update_timer(pk__loop *loop, pk__req *req) {
  int which;
  uint64_t d = req_deadline(req, &which);
  if (d == UINT64_MAX) return;
  if (!pk__timer_armed(&req->timer) || d < req->timer.deadline) pk__timer_arm(loop, &req->timer, d);
}

static void req_timer_fire(pk__loop *loop, pk__timer *t) {
  pk__req *req = PK_CONTAINER_OF(t, pk__req, timer);
  int which;
  uint64_t d = req_deadline(req, &which);
  if (d == UINT64_MAX) return;
  if (d > loop->now) {
    pk__timer_arm(loop, t, d);
    return;
  }
  if (which == PK__EXPECT_DEADLINE) {
    pk__conn_expect_expired(loop, req->conn);
    return;
  }
  if (req->conn) pk__conn_fail(loop, req->conn, which, ETIMEDOUT);
  else pk__req_finish(loop, req, which, ETIMEDOUT);
}

/* ------------------------------------------------------------- requests */

void pk__req_finish(pk__loop *loop, pk__req *req, int err, int sys_errno) {
  pk_engine *eng = loop->eng;
  pk__timer_cancel(loop, &req->timer);
  if (req->state == PK_REQ_WAITING) pk__list_remove(&req->link);
  if (pk__linked(&req->all)) pk__list_remove(&req->all);
  pk__conn *conn = req->conn;
  if (conn) pk__charge_wire(conn, req);
  for (int i = 0; i < req->ndec; i++) pk_inflate_free(req->dec[i]);
  req->ndec = 0;
  if (req->wbuf) {
    pk__rbuf_put(loop, req->wbuf, PK_RBUF_SIZE);
    req->wbuf = NULL;
  }
  req->conn = NULL;
  req->state = PK_REQ_DONE;
  atomic_store_explicit(&req->id, 0, memory_order_release);
  req->timings.total_ns = pk__now_ns() - req->t_submit;
  req->timings.retried = req->retried;
  if (!err) atomic_fetch_add_explicit(&loop->st_completed, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&loop->st_pending, 1, memory_order_relaxed);
  eng->cfg.callbacks.on_done(req->ctx, err, err ? sys_errno : 0, &req->timings);
  loop->finished_in_pass = true;
  req->qnext = loop->done_reqs;
  loop->done_reqs = req;
}

static void process_submissions(pk__loop *loop, pk__req *list, bool stopping) {
  while (list) {
    pk__req *req = list;
    list = req->qnext;
    req->qnext = NULL;
    if (stopping) {
      pk__req_finish(loop, req, PK_E_SHUTDOWN, 0);
      continue;
    }
    pk__list_push_back(&loop->reqs, &req->all);
    pk__req_update_timer(loop, req);
    pk__dispatch(loop, req, false);
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

/* Returns true if it ran posted work (which may have queued more). */
static bool drain_once(pk__loop *loop, bool *stopping) {
  pthread_mutex_lock(&loop->lock);
  loop->sleeping = false;
  loop->wake_pending = false;
  pk__req *subs = loop->sq_head;
  loop->sq_head = loop->sq_tail = NULL;
  pk__req *cancels = loop->cancels;
  loop->cancels = NULL;
  struct pk__dns_job *dns = loop->dns_done;
  loop->dns_done = NULL;
  /* Recycle finished request structs, except any that a cancel still names
   * (taken in this very swap, or queued since): such a struct must not be
   * handed out again before that cancel is looked at. It goes next time. */
  pk__req *keep = NULL;
  while (loop->done_reqs) {
    pk__req *r = loop->done_reqs;
    loop->done_reqs = r->qnext;
    if (r->cancel_queued) {
      r->qnext = keep;
      keep = r;
      continue;
    }
    r->state = PK_REQ_FREE;
    r->qnext = loop->free_reqs;
    loop->free_reqs = r;
  }
  loop->done_reqs = keep;
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

  if (dns) pk__dns_process_done(loop, dns);
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
  pk__pool_close_all(loop);
}

static void pass_end(pk__loop *loop) {
  if (!loop->finished_in_pass) return;
  loop->finished_in_pass = false;
  if (loop->eng->cfg.callbacks.on_pass_end) loop->eng->cfg.callbacks.on_pass_end(loop->eng->cfg.post_ctx);
}

static void *loop_main(void *arg) {
  pk__loop *loop = arg;
  current_engine = loop->eng;
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
  struct epoll_event events[PK_MAX_EVENTS];
  loop->now = pk__now_ns();
  for (;;) {
    bool stopping;
    drain_shared(loop, &stopping);
    if (stopping) {
      fail_everything(loop);
      pass_end(loop);
      pk__recycle_dead(loop);
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
    run_timers(loop);
    pass_end(loop);
    pk__recycle_dead(loop);

    int timeout = next_timeout_ms(loop);
    pthread_mutex_lock(&loop->lock);
    if (loop->sq_head || loop->cancels || loop->dns_done || loop->posts_len || loop->stopping) timeout = 0;
    else loop->sleeping = true;
    pthread_mutex_unlock(&loop->lock);

    int n = epoll_wait(loop->epfd, events, PK_MAX_EVENTS, timeout);
    /* Awake again: callbacks below may submit or post (a resumed task sending
     * its next request), and those must not pay for an eventfd write. Clearing
     * without the lock is safe: it was set under the lock after the queues
     * were seen empty, and a stale read only costs a spurious wake-up. */
    atomic_store_explicit(&loop->sleeping, false, memory_order_relaxed);
    loop->now = pk__now_ns();
    for (int i = 0; i < n; i++) {
      void *p = events[i].data.ptr;
      if (p == loop) {
        uint64_t v;
        ssize_t r = read(loop->evfd, &v, sizeof v);
        PK_UNUSED(r);
        continue;
      }
      pk__conn_event(loop, p, events[i].events);
    }
    pass_end(loop);
    pk__recycle_dead(loop);
  }
  current_engine = NULL;
  return NULL;
}

void pk__loop_wake(pk__loop *loop) {
  uint64_t one = 1;
  atomic_fetch_add_explicit(&loop->st_wakeups, 1, memory_order_relaxed);
  ssize_t r = write(loop->evfd, &one, sizeof one);
  PK_UNUSED(r);
}

/* --------------------------------------------------------------- engine */

void pk_engine_config_init(pk_engine_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->loops = 1;
  cfg->max_conns_per_origin = 64;
  cfg->idle_timeout_ms = 60000;
  cfg->dns_threads = 2;
  cfg->dns_cache_ttl_ms = 30000;
  cfg->max_interim = 8;
  cfg->decode_content = 1;
  pk_parse_limits_init(&cfg->limits);
  pk_inflate_limits_init(&cfg->inflate_limits);
}

static int loop_init(pk_engine *eng, pk__loop *loop, uint32_t index) {
  memset(loop, 0, sizeof *loop);
  loop->eng = eng;
  loop->index = index;
  loop->epfd = loop->evfd = -1;
  pthread_mutex_init(&loop->lock, NULL);
  pk__list_init(&loop->reqs);
  loop->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (loop->epfd < 0) return -PK_E_SOCKET;
  loop->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (loop->evfd < 0) return -PK_E_SOCKET;
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = loop};
  if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->evfd, &ev) < 0) return -PK_E_SOCKET;
  return 0;
}

static void loop_free(pk__loop *loop) {
  if (loop->epfd >= 0) close(loop->epfd);
  if (loop->evfd >= 0) close(loop->evfd);
  pk__dns_free_all(loop);
  pk__req *lists[3] = {loop->free_reqs, loop->done_reqs, loop->sq_head};
  for (int i = 0; i < 3; i++) {
    for (pk__req *r = lists[i]; r;) {
      pk__req *next = r->qnext;
      pk__free(r->buf);
      pk__free(r);
      r = next;
    }
  }
  for (pk__conn *c = loop->free_conns; c;) {
    pk__conn *next = c->next_free;
    pk__free(c);
    c = next;
  }
  for (uint32_t i = 0; i < loop->rbufs_len; i++) pk__free(loop->rbufs[i]);
  pk__free(loop->bigbuf);
  pk__free(loop->rbufs);
  pk__free(loop->timers.items);
  pk__free(loop->posts);
  pk__free(loop->run_posts);
  for (int b = 0; b < PK_ORIGIN_BUCKETS; b++) {
    for (pk__origin *o = loop->origins[b]; o;) {
      pk__origin *next = o->next;
      pk__tls_session_free(o->tls_session);
      pk__free(o);
      o = next;
    }
  }
  pthread_mutex_destroy(&loop->lock);
}

int pk_engine_create(const pk_engine_config *cfg, pk_engine **out) {
  pk_engine *eng = pk__calloc(1, sizeof *eng);
  if (!eng) return -PK_E_NOMEM;
  if (cfg) eng->cfg = *cfg;
  else pk_engine_config_init(&eng->cfg);
  pk_engine_config *c = &eng->cfg;
  if (!c->loops) c->loops = 1;
  if (!c->max_conns_per_origin) c->max_conns_per_origin = 64;
  if (!c->dns_threads) c->dns_threads = 1;
  if (!c->limits.max_head_bytes) pk_parse_limits_init(&c->limits);
  if (!c->callbacks.on_done) {
    pk__free(eng);
    return -PK_E_INVALID_ARGUMENT;
  }
  eng->nloops = c->loops;
  eng->loops = pk__calloc(eng->nloops, sizeof *eng->loops);
  int err = eng->loops ? 0 : -PK_E_NOMEM;
  uint32_t started = 0;
  if (!err) err = pk__resolver_create(c->dns_threads, &eng->resolver);
  pthread_mutex_init(&eng->tls_lock, NULL);
  if (!err && !tls_config_is_default(&c->tls)) {
    pk__tls_ctx *tls;
    err = pk__tls_ctx_create(&c->tls, &tls);
    if (!err) atomic_store_explicit(&eng->tls, tls, memory_order_release);
  }
  /* Only the defaults are kept for a lazy create: no borrowed strings. */
  c->tls = (pk_tls_config){.min_version = c->tls.min_version, .insecure = c->tls.insecure};
  for (uint32_t i = 0; !err && i < eng->nloops; i++) err = loop_init(eng, &eng->loops[i], i);
  for (uint32_t i = 0; !err && i < eng->nloops; i++) {
    if (pthread_create(&eng->loops[i].thread, NULL, loop_main, &eng->loops[i]) != 0) err = -PK_E_NOMEM;
    else started++;
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
    pk__tls_ctx_free(atomic_load(&eng->tls));
    pk__free(eng->loops);
    pk__free(eng);
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
  pk__tls_ctx_free(atomic_load(&eng->tls));
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

  int err = spec->scheme == PK_SCHEME_HTTPS && !pk__engine_tls(eng, spec->tls_id)
                ? (spec->tls_id ? -PK_E_INVALID_ARGUMENT : -PK_E_TLS_CONFIG)
                : pk__serialize_request(spec, req);
  if (err) {
    pthread_mutex_lock(&loop->lock);
    req->qnext = loop->free_reqs;
    loop->free_reqs = req;
    pthread_mutex_unlock(&loop->lock);
    return err;
  }
  req->qnext = NULL;
  req->link.prev = req->link.next = NULL;
  req->all.prev = req->all.next = NULL;
  req->loop = loop;
  req->ctx = spec->ctx;
  req->origin = NULL;
  req->conn = NULL;
  req->timer.heap_index = PK_TIMER_IDLE;
  req->timer.fire = req_timer_fire;
  req->body = spec->body;
  req->body_len = spec->body_len;
  req->body_kind = (uint8_t)spec->body_kind;
  req->body_chunked = (spec->body_kind == PK_BODY_STREAM || spec->body_kind == PK_BODY_SEGMENTS) && spec->body_chunked;
  req->segs = spec->body_kind == PK_BODY_SEGMENTS ? spec->segments : NULL;
  req->nsegs = spec->body_kind == PK_BODY_SEGMENTS ? spec->num_segments : 0;
  req->one_shot = spec->body_kind == PK_BODY_STREAM;
  for (size_t i = 0; i < req->nsegs; i++)
    if (req->segs[i].kind == PK_SEG_STREAM) req->one_shot = 1;
  req->body_fd = spec->body_fd;
  req->body_offset = spec->body_offset;
  req->expect_ms = spec->body_len || spec->body_kind != PK_BODY_MEMORY ? spec->expect_continue_ms : 0;
  req->use_sink = spec->use_sink != 0;
  req->sink_fd = spec->sink_fd;
  req->max_body = spec->max_body_bytes ? spec->max_body_bytes : eng->cfg.max_body_bytes;
  req->progress_ms = spec->progress_interval_ms;
  req->port = spec->port;
  req->scheme = (uint8_t)spec->scheme;
  req->tls_id = spec->scheme == PK_SCHEME_HTTPS ? spec->tls_id : 0;
  req->state = PK_REQ_QUEUED;
  req->idempotent = spec->idempotent >= 0 ? (uint8_t)(spec->idempotent != 0)
                                          : (uint8_t)pk__method_idempotent(spec->method, spec->method_len);
  req->is_head = spec->method_len == 4 && memcmp(spec->method, "HEAD", 4) == 0;
  req->retried = 0;
  req->cancel_queued = 0;
  req->got_head = 0;
  req->interim = 0;
  req->conn_reused = 0;
  req->connect_timeout_ms = spec->connect_timeout_ms;
  req->read_timeout_ms = spec->read_timeout_ms;
  req->total_timeout_ms = spec->total_timeout_ms;
  req->t_submit = req->t_last_activity = pk__now_ns();
  req->t_dns_start = req->t_connect_start = 0;
  memset(&req->timings, 0, sizeof req->timings);
  req->last_len = 0;
  req->ndec = 0;
  req->remaining = 0;
  req->body_bytes = 0;
  uint64_t id = atomic_fetch_add_explicit(&eng->next_id, 1, memory_order_relaxed) + 1;
  atomic_store_explicit(&req->id, id, memory_order_relaxed);

  bool wake = false;
  pthread_mutex_lock(&loop->lock);
  if (loop->stopping) {
    atomic_store_explicit(&req->id, 0, memory_order_relaxed);
    req->state = PK_REQ_FREE;
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
   * next pass, so a loaded engine makes no wake-up syscalls at all. */
  if (loop->sleeping && !loop->wake_pending) {
    loop->wake_pending = true;
    wake = true;
  }
  pthread_mutex_unlock(&loop->lock);
  if (wake) pk__loop_wake(loop);
  if (handle) {
    handle->req = req;
    handle->id = id;
    handle->loop = li;
  }
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
  }
}
