/* The loop's origins: a hash table keyed by everything a connection must
 * share with a request to carry it (scheme, host, port, TLS settings, and
 * the route: TCP, a Unix socket's path, the caller's addresses, or a proxy
 * with its port and tunnel credentials). Each origin holds its pool
 * (pk_pool.c) and its newest resumable TLS session. */
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
pk__origin *pk__origin_get(pk__loop *loop, pk__req *req) {
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
  pk__pool_init(&o->pool);
  o->next = *slot;
  *slot = o;
  return o;
}

bool pk__origin_has_idle(pk__loop *loop, pk__req *req) {
  pk__origin *o = req->origin ? req->origin : pk__origin_get(loop, req);
  if (!o) return false;
  req->origin = o;
  return pk__pool_has_idle(&o->pool);
}

pk__conn *pk__origin_any_idle(pk__loop *loop) {
  for (int b = 0; b < PK_ORIGIN_BUCKETS; b++)
    for (pk__origin *o = loop->origins[b]; o; o = o->next) {
      pk__pool_entry *e = pk__pool_first_idle(&o->pool);
      if (e) return PK_CONTAINER_OF(e, pk__conn, pool);
    }
  return NULL;
}

pk__origin *pk__origin_short(pk__loop *loop) {
  return pk__list_empty(&loop->short_origins) ? NULL : PK_CONTAINER_OF(loop->short_origins.next, pk__origin, short_link);
}

void pk__origins_free(pk__loop *loop) {
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
