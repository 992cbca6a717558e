/* The keep-alive pool: per-origin (scheme, host, port) idle lists in LIFO
 * order, a per-origin connection cap with a FIFO wait queue, and idle expiry.
 * Idle sockets stay registered with epoll, so a connection the server closed
 * is dropped when its EOF arrives, not discovered by a failed reuse. */
#include "pk_internal.h"

#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static uint64_t origin_hash(uint8_t scheme, const char *host, size_t n, uint16_t port) {
  uint64_t h = 1469598103934665603ull ^ ((uint64_t)scheme << 16 | port);
  for (size_t i = 0; i < n; i++) {
    h ^= (uint8_t)host[i];
    h *= 1099511628211ull;
  }
  return h;
}

static pk__origin *origin_get(pk__loop *loop, pk__req *req) {
  const char *host = req->buf + req->host_off;
  uint64_t h = origin_hash(req->scheme, host, req->host_len, req->port) ^ ((uint64_t)req->tls_id << 40);
  pk__origin **slot = &loop->origins[h % PK_ORIGIN_BUCKETS];
  for (pk__origin *o = *slot; o; o = o->next)
    if (o->hash == h && o->scheme == req->scheme && o->port == req->port && o->tls_id == req->tls_id &&
        o->host_len == req->host_len && memcmp(o->host, host, req->host_len) == 0)
      return o;
  pk__origin *o = pk__calloc(1, sizeof *o + req->host_len + 1);
  if (!o) return NULL;
  o->hash = h;
  o->scheme = req->scheme;
  o->port = req->port;
  o->tls_id = req->tls_id;
  o->host_len = req->host_len;
  memcpy(o->host, host, req->host_len);
  pk__list_init(&o->idle);
  pk__list_init(&o->waiters);
  o->next = *slot;
  *slot = o;
  return o;
}

static void idle_timer_fire(pk__loop *loop, pk__timer *t) {
  pk__conn *conn = PK_CONTAINER_OF(t, pk__conn, idle_timer);
  if (conn->state != PK_CONN_IDLE) return;
  uint64_t expiry = conn->idle_since + (uint64_t)loop->eng->cfg.idle_timeout_ms * 1000000u;
  if (expiry > loop->now) pk__timer_arm(loop, t, expiry);
  else pk__conn_close(loop, conn);
}

pk__conn *pk__conn_alloc(pk__loop *loop, pk__origin *origin) {
  pk__conn *c = loop->free_conns;
  if (c) loop->free_conns = c->next_free;
  else if (!(c = pk__malloc(sizeof *c))) return NULL;
  memset(c, 0, sizeof *c);
  c->fd = -1;
  c->loop = loop;
  c->origin = origin;
  c->reusable = 1;
  c->idle_timer.heap_index = PK_TIMER_IDLE;
  c->idle_timer.fire = idle_timer_fire;
  origin->conns++;
  loop->open_conns++;
  atomic_fetch_add_explicit(&loop->st_opened, 1, memory_order_relaxed);
  return c;
}

static void attach(pk__req *req, pk__conn *conn) {
  req->conn = conn;
  req->state = PK_REQ_ACTIVE;
  conn->req = req;
}

/* Creates a connection for `req` (the origin has room). */
static void open_for(pk__loop *loop, pk__origin *o, pk__req *req) {
  pk__conn *conn = pk__conn_alloc(loop, o);
  if (!conn) {
    pk__req_finish(loop, req, PK_E_NOMEM, 0);
    return;
  }
  attach(req, conn);
  req->conn_reused = 0;
  pk__conn_start(loop, conn);
}

void pk__dispatch(pk__loop *loop, pk__req *req, bool fresh) {
  pk__origin *o = req->origin ? req->origin : origin_get(loop, req);
  if (!o) {
    pk__req_finish(loop, req, PK_E_NOMEM, 0);
    return;
  }
  req->origin = o;
  if (!fresh && !pk__list_empty(&o->idle)) {
    pk__conn *conn = PK_CONTAINER_OF(o->idle.next, pk__conn, link);
    pk__list_remove(&conn->link);
    atomic_fetch_sub_explicit(&loop->st_idle, 1, memory_order_relaxed);
    conn->state = PK_CONN_ACTIVE;
    attach(req, conn);
    req->conn_reused = 1;
    req->timings.reused = 1;
    pk__conn_begin_request(loop, conn);
    return;
  }
  if (o->conns < loop->eng->cfg.max_conns_per_origin) {
    open_for(loop, o, req);
    return;
  }
  req->state = PK_REQ_WAITING;
  pk__list_push_back(&o->waiters, &req->link);
}

static pk__req *pop_waiter(pk__origin *o) {
  if (pk__list_empty(&o->waiters)) return NULL;
  pk__req *req = PK_CONTAINER_OF(o->waiters.next, pk__req, link);
  pk__list_remove(&req->link);
  return req;
}

void pk__conn_release(pk__loop *loop, pk__conn *conn) {
  pk__origin *o = conn->origin;
  conn->req = NULL;
  conn->woff = 0;
  conn->want_write = 0;
  pk__req *next = pop_waiter(o);
  if (next) {
    attach(next, conn);
    next->conn_reused = 1;
    next->timings.reused = 1;
    pk__conn_begin_request(loop, conn);
    return;
  }
  if (conn->rbuf) {
    pk__rbuf_put(loop, conn->rbuf, conn->rcap);
    conn->rbuf = NULL;
    conn->rcap = conn->rlen = 0;
  }
  conn->state = PK_CONN_IDLE;
  conn->idle_since = loop->now;
  /* Most recently used first: it is the one least likely to have been closed
   * by the server's own idle timer. */
  pk__list_push_front(&o->idle, &conn->link);
  atomic_fetch_add_explicit(&loop->st_idle, 1, memory_order_relaxed);
  if (!pk__timer_armed(&conn->idle_timer))
    pk__timer_arm(loop, &conn->idle_timer,
                  loop->now + (uint64_t)loop->eng->cfg.idle_timeout_ms * 1000000u);
}

void pk__conn_close(pk__loop *loop, pk__conn *conn) {
  if (conn->state == PK_CONN_CLOSED) return;
  pk__origin *o = conn->origin;
  if (conn->state == PK_CONN_IDLE) {
    pk__list_remove(&conn->link);
    atomic_fetch_sub_explicit(&loop->st_idle, 1, memory_order_relaxed);
  } else if (conn->state == PK_CONN_RESOLVING) {
    pk__dns_cancel(loop, conn);
  }
  pk__timer_cancel(loop, &conn->idle_timer);
  pk__dns_release(conn);
  if (conn->tls) {
    /* close_notify only after a clean exchange; a failed one just ends. */
    pk__tls_free(conn->tls, conn->state == PK_CONN_IDLE || (conn->clean && !conn->req));
    conn->tls = NULL;
  }
  if (conn->fd >= 0) {
    /* close() also removes it from the epoll set (we never dup it). */
    close(conn->fd);
    conn->fd = -1;
  }
  if (conn->rbuf) {
    pk__rbuf_put(loop, conn->rbuf, conn->rcap);
    conn->rbuf = NULL;
  }
  conn->state = PK_CONN_CLOSED;
  conn->req = NULL;
  o->conns--;
  loop->open_conns--;
  atomic_fetch_add_explicit(&loop->st_closed, 1, memory_order_relaxed);
  conn->next_free = loop->dead_conns;
  loop->dead_conns = conn;
  /* A slot opened up: the first waiter gets a new connection. */
  if (!loop->stopping_local) {
    pk__req *next = pop_waiter(o);
    if (next) open_for(loop, o, next);
  }
}

void pk__recycle_dead(pk__loop *loop) {
  while (loop->dead_conns) {
    pk__conn *c = loop->dead_conns;
    loop->dead_conns = c->next_free;
    c->next_free = loop->free_conns;
    loop->free_conns = c;
  }
}

void pk__pool_close_all(pk__loop *loop) {
  loop->stopping_local = true;
  for (int b = 0; b < PK_ORIGIN_BUCKETS; b++)
    for (pk__origin *o = loop->origins[b]; o; o = o->next)
      while (!pk__list_empty(&o->idle))
        pk__conn_close(loop, PK_CONTAINER_OF(o->idle.next, pk__conn, link));
}
