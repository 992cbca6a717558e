/* The keep-alive pool: per-origin (scheme, host, port, TLS settings) idle
 * lists in LIFO order, a per-origin connection cap with a FIFO wait queue,
 * and idle expiry. It decides (reuse, open, wait) and hands the decision
 * back; the connection code acts on it (h2o's socket pool hands a socket to
 * its caller and takes it back). It opens, closes and writes nothing.
 * Idle sockets stay registered with epoll, so a connection the server closed
 * is dropped when its EOF arrives, not discovered by a failed reuse. */
#include "pk_conn.h"

#include <string.h>

static uint64_t origin_hash(uint8_t scheme, const char *host, size_t n, uint16_t port) {
  uint64_t h = 1469598103934665603ull ^ ((uint64_t)scheme << 16 | port);
  for (size_t i = 0; i < n; i++) {
    h ^= (uint8_t)host[i];
    h *= 1099511628211ull;
  }
  return h;
}

/* The pool key: scheme, host, port, TLS settings and the route (how the
 * connection reaches the origin: TCP, a Unix socket's path, the caller's
 * addresses, or a proxy with its port and tunnel credentials). */
static pk__origin *origin_get(pk__loop *loop, pk__req *req) {
  const char *host = req->buf + req->host_off, *route = host + req->host_len, *auth = route + req->route_len;
  uint16_t connect_port = req->route == PK_ROUTE_PROXY || req->route == PK_ROUTE_TUNNEL ? req->proxy_port : req->port;
  uint64_t h = origin_hash(req->scheme, host, req->host_len, req->port) ^ ((uint64_t)req->tls_id << 40);
  if (req->route != PK_ROUTE_TCP) h = origin_hash(req->route, route, req->route_len, connect_port) ^ (h * 31);
  pk__origin **slot = &loop->origins[h % PK_ORIGIN_BUCKETS];
  for (pk__origin *o = *slot; o; o = o->next)
    if (o->hash == h && o->scheme == req->scheme && o->port == req->port && o->tls_id == req->tls_id &&
        o->host_len == req->host_len && memcmp(o->host, host, req->host_len) == 0 && o->route == req->route &&
        o->connect_port == connect_port && o->route_len == req->route_len &&
        memcmp(pk__origin_route(o), route, req->route_len) == 0 && o->auth_len == req->auth_len &&
        memcmp(pk__origin_auth(o), auth, req->auth_len) == 0)
      return o;
  pk__origin *o = pk__calloc(1, sizeof *o + req->host_len + 1 + req->route_len + 1 + req->auth_len + 1);
  if (!o) return NULL;
  o->hash = h;
  o->scheme = req->scheme;
  o->port = req->port;
  o->tls_id = req->tls_id;
  o->host_len = req->host_len;
  memcpy(o->host, host, req->host_len);
  o->route = req->route;
  o->connect_port = connect_port;
  o->route_len = req->route_len;
  memcpy(o->host + req->host_len + 1, route, req->route_len);
  o->auth_len = req->auth_len;
  memcpy(o->host + req->host_len + 1 + req->route_len + 1, auth, req->auth_len);
  pk__list_init(&o->idle);
  pk__list_init(&o->waiters);
  o->next = *slot;
  *slot = o;
  return o;
}

bool pk__pool_has_idle(pk__loop *loop, pk__req *req) {
  pk__origin *o = req->origin ? req->origin : origin_get(loop, req);
  if (!o) return false;
  req->origin = o;
  return !pk__list_empty(&o->idle);
}

int pk__pool_acquire(pk__loop *loop, pk__req *req, bool fresh, pk__pool_action *action, pk__conn **conn) {
  pk__origin *o = req->origin ? req->origin : origin_get(loop, req);
  if (!o) return -PK_E_NOMEM;
  req->origin = o;
  if (!fresh && !pk__list_empty(&o->idle)) {
    pk__conn *c = PK_CONTAINER_OF(o->idle.next, pk__conn, link);
    pk__list_remove(&c->link);
    atomic_fetch_sub_explicit(&loop->st_idle, 1, memory_order_relaxed);
    c->state = PK_CONN_ACTIVE;
    *conn = c;
    *action = PK_POOL_REUSE;
    return 0;
  }
  if (o->conns < loop->eng->cfg.max_conns_per_origin) {
    o->conns++;
    *action = PK_POOL_OPEN;
    return 0;
  }
  pk__req_set_state(req, PK_REQ_WAITING);
  pk__list_push_back(&o->waiters, &req->link);
  *action = PK_POOL_WAIT;
  return 0;
}

void pk__pool_unreserve(pk__loop *loop, pk__origin *o) {
  PK_UNUSED(loop);
  o->conns--;
}

static pk__req *pop_waiter(pk__origin *o) {
  if (pk__list_empty(&o->waiters)) return NULL;
  pk__req *req = PK_CONTAINER_OF(o->waiters.next, pk__req, link);
  pk__list_remove(&req->link);
  return req;
}

pk__req *pk__pool_release(pk__loop *loop, pk__conn *conn) {
  pk__origin *o = conn->origin;
  pk__req *next = pop_waiter(o);
  if (next) return next;
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
  return NULL;
}

pk__req *pk__pool_forget(pk__loop *loop, pk__conn *conn) {
  pk__origin *o = conn->origin;
  if (conn->state == PK_CONN_IDLE) {
    pk__list_remove(&conn->link);
    atomic_fetch_sub_explicit(&loop->st_idle, 1, memory_order_relaxed);
  }
  o->conns--;
  /* A slot opened up: the first waiter gets it (a new connection). */
  if (loop->stopping_local) return NULL;
  pk__req *next = pop_waiter(o);
  if (next) o->conns++;
  return next;
}

pk__conn *pk__pool_any_idle(pk__loop *loop) {
  for (int b = 0; b < PK_ORIGIN_BUCKETS; b++)
    for (pk__origin *o = loop->origins[b]; o; o = o->next)
      if (!pk__list_empty(&o->idle)) return PK_CONTAINER_OF(o->idle.next, pk__conn, link);
  return NULL;
}

void pk__pool_free(pk__loop *loop) {
  for (int b = 0; b < PK_ORIGIN_BUCKETS; b++) {
    for (pk__origin *o = loop->origins[b]; o;) {
      pk__origin *next = o->next;
      pk__tls_session_free(o->tls_session);
      pk__free(o);
      o = next;
    }
    loop->origins[b] = NULL;
  }
}
