/* A connection's life, at the top of its files (pk_conn.h): it acts on the
 * pool's decisions (open, reuse, hand over, park, close), starts each
 * exchange, sequences the steps (connect, tunnel, TLS, request), routes a
 * socket's events to the step the connection is in, fails and closes, and
 * waits at the descriptor limit. Sockets are registered once,
 * edge-triggered, for reading and writing, so a warm request costs one
 * write and one read and no epoll_ctl. */
#include "pk_conn.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ------------------------------------------------------------ wire bytes */

/* Plain connections: the wire is the payload. TLS: the BIO's counters, so a
 * request is charged its records and, on a new connection, the handshake. */
static void charge_wire(pk__conn *conn, pk__req *req) {
  if (!conn->tls) {
    req->timings.wire_bytes_sent = req->timings.bytes_sent;
    req->timings.wire_bytes_received = req->timings.bytes_received;
    return;
  }
  uint64_t out = pk__tls_wire_out(conn->tls), in = pk__tls_wire_in(conn->tls);
  req->timings.wire_bytes_sent += out - conn->wire_out_mark;
  req->timings.wire_bytes_received += in - conn->wire_in_mark;
  conn->wire_out_mark = out;
  conn->wire_in_mark = in;
}

/* -------------------------------------------------------------- failure */

static void no_descriptor(pk__loop *loop, pk__conn *conn, pk__req *req, int sys_errno);

void pk__conn_fail(pk__loop *loop, pk__conn *conn, pk_error err, int sys_errno) {
  pk__req *req = conn->req;
  if (req && err == PK_E_SOCKET && (sys_errno == EMFILE || sys_errno == ENFILE) && conn->fd < 0) {
    no_descriptor(loop, conn, req, sys_errno);
    return;
  }
  if (req) charge_wire(conn, req);
  conn->req = NULL;
  pk__conn_close(loop, conn);
  if (!req) return;
  req->conn = NULL;
  if (pk__req_retry(loop, req, &err, &sys_errno)) pk__conn_dispatch(loop, req, true);
  else pk__req_finish(loop, req, err, sys_errno);
}

/* A new exchange on the connection: the request's timings get the
 * connection's addresses, the buffers start over, and the request goes out. */
static void begin_request(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  pk__conn_write_begin(conn);
  memcpy(req->timings.remote_addr, conn->peer_addr, sizeof conn->peer_addr);
  req->timings.remote_family = conn->peer_family;
  req->timings.remote_port = conn->peer_port;
  req->timings.local_port = conn->local_port;
  conn->rlen = 0;
  conn->read_full = 0;
  conn->read_again = 0;
  conn->clean = 0;
  pk__req_begin_exchange(loop, req);
  /* Each exchange starts small (a buffer grown by the last one, or the
   * tunnel's, goes back): a busy connection costs PK_RBUF_SMALL until its
   * response asks for more (pk_conn_read.c). */
  if (conn->rbuf && conn->rcap != PK_RBUF_SMALL) {
    pk__rbuf_put(loop, conn->rbuf, conn->rcap);
    conn->rbuf = NULL;
  }
  if (!conn->rbuf) {
    conn->rbuf = pk__rbuf_get(loop, PK_RBUF_SMALL);
    if (!conn->rbuf) {
      pk__conn_fail(loop, conn, PK_E_NOMEM, 0);
      return;
    }
    conn->rcap = PK_RBUF_SMALL;
  }
  pk__conn_write(loop, conn);
  if (conn->req == req) pk__req_update_timer(loop, req);
}

/* A request's timer fired (pk_request.c decides which deadline passed;
 * the connection acts on it). */
void pk__conn_deadline(pk__loop *loop, pk__timer *t) {
  pk__req *req = PK_CONTAINER_OF(t, pk__req, timer);
  int which;
  uint64_t d = pk__req_deadline(req, &which);
  if (d == UINT64_MAX) return;
  if (d > loop->now) {
    pk__timer_arm(loop, t, d);
    return;
  }
  if (which == PK__EXPECT_DEADLINE) {
    pk__conn_expect_expired(loop, req->conn);
    return;
  }
  if (req->conn) pk__conn_fail(loop, req->conn, (pk_error)which, ETIMEDOUT);
  else pk__req_finish(loop, req, (pk_error)which, ETIMEDOUT);
}

/* ------------------------------------------------- acting on the pool */

static void conn_event(pk__loop *loop, pk__io *io, uint32_t events);
static const pk__conn_up up;

static inline __attribute__((always_inline)) void act(pk__loop *loop, pk__pool_decision d);
static void sync_short(pk__loop *loop, pk__origin *o);

/* Tells the origin's pool an event and acts on its decision (returned).
 * Inlined, with `act`, at each call site: a request's acquire and release
 * cost no call of their own, and `act`'s switch folds where the event's
 * kind allows. */
static inline __attribute__((always_inline)) pk__pool_action pool_event(pk__loop *loop, pk__origin *o, pk__pool_event ev) {
  pk__pool_limits lim = {
      .cap = loop->eng->cfg.max_conns_per_origin,
      .idle_timeout_ns = (uint64_t)loop->eng->cfg.idle_timeout_ms * 1000000u,
      .stopping = loop->stopping_local,
  };
  ev.now = loop->now;
  pk__pool_decision d = pk__pool_decide(&o->pool, &lim, &ev);
  act(loop, d);
  sync_short(loop, o);
  return d.action;
}

/* An idle connection's timer: the pool says whether it expired. */
static void idle_timer_fire(pk__loop *loop, pk__timer *t) {
  pk__conn *conn = PK_CONTAINER_OF(t, pk__conn, idle_timer);
  pool_event(loop, conn->origin, (pk__pool_event){.kind = PK_POOL_TIMEOUT, .entry = &conn->pool});
}

static pk__conn *conn_alloc(pk__loop *loop, pk__origin *origin) {
  pk__conn *c = loop->free_conns;
  if (c) loop->free_conns = c->next_free;
  else if (!(c = pk__calloc(1, sizeof *c))) return NULL;
  pk__attempt *extra = c->extra; /* kept with the struct (rarely allocated) */
  memset(c, 0, sizeof *c);
  c->extra = extra;
  c->race_timer.heap_index = PK_TIMER_IDLE;
  c->io.handler = conn_event;
  c->up = &up;
  c->fd = -1;
  c->loop = loop;
  c->origin = origin;
  c->reusable = 1;
  c->idle_timer.heap_index = PK_TIMER_IDLE;
  c->idle_timer.fire = idle_timer_fire;
  loop->open_conns++;
  atomic_fetch_add_explicit(&loop->st_opened, 1, memory_order_relaxed);
  return c;
}

static void attach(pk__req *req, pk__conn *conn) {
  req->conn = conn;
  conn->req = req;
}

/* A pooled connection takes the request: write it now. */
static void run_on(pk__loop *loop, pk__req *req, pk__conn *conn) {
  attach(req, conn);
  req->conn_reused = 1;
  req->timings.reused = 1;
  begin_request(loop, conn);
}

/* The pool reserved a slot of the origin for `req`: open a connection. */
static void open_for(pk__loop *loop, pk__req *req) {
  if (loop->in_direct) {
    /* Not from a submitter's thread while the loop sits in epoll_wait (a
     * socket set up meanwhile can be reported in a state the loop never
     * sees otherwise, an unconnected socket's EPOLLHUP): a retry or a
     * replaced pooled connection in a direct pass is opened by the loop,
     * first thing when it wakes (the direct pass wakes it). The pool slot
     * stays reserved for it. */
    req->qnext = loop->deferred_opens;
    loop->deferred_opens = req;
    return;
  }
  pk__conn *conn = conn_alloc(loop, req->origin);
  if (!conn) {
    pk__req_finish(loop, req, PK_E_NOMEM, 0);
    pool_event(loop, req->origin, (pk__pool_event){.kind = PK_POOL_CLOSE}); /* the slot back */
    return;
  }
  pk__origin *o = req->origin;
  attach(req, conn);
  req->conn_reused = 0;
  pk__req_set_state(req, PK_REQ_CONNECTING);
  pk__conn_connect(loop, conn);
  /* After a descriptor shortage, the next waiter may open one too. */
  if (!pk__list_empty(&o->pool.waiters)) pool_event(loop, o, (pk__pool_event){.kind = PK_POOL_OPENED});
}

/* Has the server closed (or written to) a pooled connection nobody
 * watched? Bytes on a TLS connection may be session tickets, not a sign. */
static bool conn_gone(const pk__conn *conn) {
  char b;
  ssize_t r = recv(conn->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  if (r < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  return r == 0 || !conn->tls;
}

void pk__conn_dispatch(pk__loop *loop, pk__req *req, bool fresh) {
  pk__origin *o = req->origin ? req->origin : pk__origin_get(loop, req);
  if (!o) {
    pk__req_finish(loop, req, PK_E_NOMEM, 0);
    return;
  }
  req->origin = o;
  pool_event(loop, o, (pk__pool_event){.kind = PK_POOL_ACQUIRE, .waiter = &req->link, .fresh = fresh});
}

/* A pooled connection leaves the idle list for a request. */
static void unpark(pk__loop *loop, pk__conn *conn) {
  conn->state = PK_CONN_ACTIVE;
  atomic_fetch_sub_explicit(&loop->st_idle, 1, memory_order_relaxed);
}

/* The pool put the connection in its idle list: it holds no buffer there,
 * and its timer closes it after the idle timeout. */
static void park(pk__loop *loop, pk__conn *conn, uint64_t expiry) {
  if (conn->rbuf) {
    pk__rbuf_put(loop, conn->rbuf, conn->rcap);
    conn->rbuf = NULL;
    conn->rcap = conn->rlen = 0;
  }
  conn->state = PK_CONN_IDLE;
  atomic_fetch_add_explicit(&loop->st_idle, 1, memory_order_relaxed);
  if (!pk__timer_armed(&conn->idle_timer)) pk__timer_arm(loop, &conn->idle_timer, expiry);
}

/* An idle connection taken for `req`. Out of epoll since a submitter's
 * wait (pk__conn_wait_inline), it was not watched for the server's close:
 * a request the engine may not send twice looks first. */
static void reuse(pk__loop *loop, pk__conn *conn, pk__req *req) {
  unpark(loop, conn);
  if (conn->disarmed && !req->idempotent && conn_gone(conn)) {
    pk__conn_close(loop, conn);
    pk__conn_dispatch(loop, req, false);
    return;
  }
  run_on(loop, req, conn);
}

/* The pool decided; the connection acts. */
static inline __attribute__((always_inline)) void act(pk__loop *loop, pk__pool_decision d) {
  pk__conn *conn = d.entry ? PK_CONTAINER_OF(d.entry, pk__conn, pool) : NULL;
  pk__req *req = d.waiter ? PK_CONTAINER_OF(d.waiter, pk__req, link) : NULL;
  switch (d.action) {
  case PK_POOL_NOTHING: return;
  case PK_POOL_REUSE: reuse(loop, conn, req); return;
  case PK_POOL_OPEN: open_for(loop, req); return;
  case PK_POOL_WAIT: pk__req_set_state(req, PK_REQ_WAITING); return;
  case PK_POOL_PARK:
    /* A loop waits for a descriptor: this one is freed for it, not kept idle. */
    if (atomic_load_explicit(&loop->eng->fd_waiting, memory_order_relaxed)) pk__conn_close(loop, conn);
    else park(loop, conn, d.at);
    return;
  case PK_POOL_HAND_OVER: run_on(loop, req, conn); return;
  case PK_POOL_CLOSE_IT:
    if (req) pk__req_set_state(req, PK_REQ_WAITING); /* queued; the close gives it the slot */
    pk__conn_close(loop, conn);
    return;
  case PK_POOL_REARM: pk__timer_arm(loop, &conn->idle_timer, d.at); return;
  }
}

/* After a clean response: the pool hands the connection to its next
 * waiter, or parks it. */
static void release(pk__loop *loop, pk__conn *conn) {
  conn->req = NULL;
  conn->woff = 0;
  conn->want_write = 0;
  pool_event(loop, conn->origin, (pk__pool_event){.kind = PK_POOL_RELEASE, .entry = &conn->pool});
}

/* Closes the connection; `tell_pool`: and frees its slot in the pool (a
 * waiter may get it; a descriptor it held goes to an origin that waits for
 * one). */
static void conn_close(pk__loop *loop, pk__conn *conn, bool tell_pool) {
  if (conn->state == PK_CONN_CLOSED) return;
  /* A head still queued on the ring is sent (or cancelled) before its
   * buffer and descriptor go: a descriptor number is reused at once. */
  if (conn->send.queued) {
    pk__req *req = conn->req;
    conn->req = NULL; /* its completion finds nothing to finish */
    pk__loop_send_settle(loop, &conn->send);
    conn->req = req;
  }
  if (conn->disarmed) { /* closing the descriptor takes it out of epoll */
    conn->disarmed = 0;
    if (loop->disarmed == conn) loop->disarmed = NULL;
  }
  if (conn->state == PK_CONN_RESOLVING) pk__dns_cancel(&conn->dnsq);
  pk__timer_cancel(loop, &conn->idle_timer);
  if (conn->state == PK_CONN_CONNECTING) {
    /* A race still running: its other attempts close with it. */
    pk__timer_cancel(loop, &conn->race_timer);
    for (int i = 0; conn->extra && i < PK_DNS_MAX_ADDRS; i++)
      if (conn->extra[i].fd >= 0) {
        close(conn->extra[i].fd);
        conn->extra[i].fd = -1;
      }
  }
  pk__dns_release(&conn->dnsq);
  conn->addrs = NULL;
  if (conn->tls) {
    /* close_notify only after a clean exchange; a failed one just ends. */
    pk__tls_free(conn->tls, conn->state == PK_CONN_IDLE || (conn->clean && !conn->req));
    conn->tls = NULL;
  }
  bool had_fd = conn->fd >= 0;
  if (had_fd) {
    /* close() also removes it from the epoll set (we never dup it). */
    close(conn->fd);
    conn->fd = -1;
  }
  if (conn->rbuf) {
    pk__rbuf_put(loop, conn->rbuf, conn->rcap);
    conn->rbuf = NULL;
  }
  if (conn->state == PK_CONN_IDLE) atomic_fetch_sub_explicit(&loop->st_idle, 1, memory_order_relaxed);
  conn->state = PK_CONN_CLOSED;
  conn->req = NULL;
  loop->open_conns--;
  atomic_fetch_add_explicit(&loop->st_closed, 1, memory_order_relaxed);
  conn->next_free = loop->dead_conns;
  loop->dead_conns = conn;
  if (!tell_pool) return;
  /* Out of the pool (idle list, slot): a waiter may get the slot. */
  pk__pool_action a =
      pool_event(loop, conn->origin, (pk__pool_event){.kind = PK_POOL_CLOSE, .entry = &conn->pool, .descriptor = had_fd});
  pk__origin *shorted = pk__origin_short(loop);
  if (had_fd && a != PK_POOL_OPEN && shorted)
    pool_event(loop, shorted, (pk__pool_event){.kind = PK_POOL_DESCRIPTOR_FREED});
}

void pk__conn_close(pk__loop *loop, pk__conn *conn) { conn_close(loop, conn, true); }

/* ------------------------------------------------- the descriptor limit */

#define PK_FD_RETRY_NS (20 * 1000000u)

/* Connections of the whole client (every loop) not yet closed. */
static uint64_t open_in_client(pk_engine *eng) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < eng->nloops; i++)
    n += atomic_load_explicit(&eng->loops[i].st_opened, memory_order_relaxed) -
         atomic_load_explicit(&eng->loops[i].st_closed, memory_order_relaxed);
  return n;
}

/* A descriptor may have been freed outside this loop (another loop, the
 * application): the first origin that waits for one tries again. */
static void fd_timer_fire(pk__loop *loop, pk__timer *t) {
  PK_UNUSED(t);
  pk__origin *o = pk__origin_short(loop);
  if (o) pool_event(loop, o, (pk__pool_event){.kind = PK_POOL_DESCRIPTOR_FREED});
  if (pk__origin_short(loop) && !pk__timer_armed(&loop->fd_timer))
    pk__timer_arm(loop, &loop->fd_timer, loop->now + PK_FD_RETRY_NS);
}

/* Keeps the loop's list of origins that wait for a descriptor (and the
 * client's count of loops that have one) in step with the origin's pool. */
static void sync_short(pk__loop *loop, pk__origin *o) {
  bool waits = o->pool.fd_short && !pk__list_empty(&o->pool.waiters);
  if (waits == pk__linked(&o->short_link)) return;
  bool was_empty = pk__list_empty(&loop->short_origins);
  if (waits) {
    pk__list_push_back(&loop->short_origins, &o->short_link);
    loop->fd_timer.fire = fd_timer_fire;
    if (!pk__timer_armed(&loop->fd_timer)) pk__timer_arm(loop, &loop->fd_timer, loop->now + PK_FD_RETRY_NS);
  } else {
    pk__list_remove(&o->short_link);
  }
  bool empty = pk__list_empty(&loop->short_origins);
  if (was_empty && !empty) atomic_fetch_add_explicit(&loop->eng->fd_waiting, 1, memory_order_relaxed);
  if (!was_empty && empty) atomic_fetch_sub_explicit(&loop->eng->fd_waiting, 1, memory_order_relaxed);
}

/* socket() found the descriptor limit (EMFILE, ENFILE) for the connection
 * opened for `req`. While another connection of this client is open, a
 * descriptor will be released (a request ends on it, it idles out, or an
 * idle one is closed now to make room): the request waits in its origin's
 * queue, first in line, within its timeouts. With none open, nothing can
 * free one: it fails, and so do the origin's other waiters, which wait for
 * a descriptor too. */
static void no_descriptor(pk__loop *loop, pk__conn *conn, pk__req *req, int sys_errno) {
  pk__origin *o = conn->origin;
  conn->req = NULL;
  req->conn = NULL;
  conn_close(loop, conn, false); /* its slot goes back with the pool's event */
  pk__pool_action a = pool_event(loop, o, (pk__pool_event){.kind = PK_POOL_NO_DESCRIPTOR, .waiter = &req->link});
  if (open_in_client(loop->eng) == 0) {
    while (!pk__list_empty(&o->pool.waiters)) {
      pk__req *w = PK_CONTAINER_OF(o->pool.waiters.next, pk__req, link);
      pk__req_finish(loop, w, PK_E_TOO_MANY_OPEN_FILES, sys_errno); /* unlinks it */
    }
    sync_short(loop, o);
    return;
  }
  /* Another origin's idle connection makes room (this origin's own were
   * closed by the pool's decision). */
  pk__conn *idle = a == PK_POOL_WAIT ? pk__origin_any_idle(loop) : NULL;
  if (idle) pk__conn_close(loop, idle);
}

/* Closed structs wait for the end of the batch (an event later in the same
 * epoll_wait batch may still name them), then go to the free list. */
void pk__conn_recycle_dead(pk__loop *loop) {
  while (loop->dead_conns) {
    pk__conn *c = loop->dead_conns;
    loop->dead_conns = c->next_free;
    c->next_free = loop->free_conns;
    loop->free_conns = c;
  }
}

void pk__conn_free_all(pk__loop *loop) {
  pk__conn_recycle_dead(loop);
  for (pk__conn *c = loop->free_conns; c;) {
    pk__conn *next = c->next_free;
    pk__free(c->extra);
    pk__free(c);
    c = next;
  }
  loop->free_conns = NULL;
}

/* The response ended (pk_conn_read.c): the request finishes, and the
 * connection goes back to the pool if it can carry another, else closes. */
static void complete(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  bool keep = conn->reusable && req->body_info.keep_alive && conn->state == PK_CONN_ACTIVE &&
              !conn->want_write && req->body_done;
  bool unsure = conn->read_full;
  if (keep && conn->tls) {
    /* Over TLS the bytes after the answer may be in a record of their own:
     * held by OpenSSL (it reads ahead), or still in the socket when its last
     * read was not short. Either way the connection cannot be reused. */
    if (pk__tls_buffered(conn->tls)) keep = false;
    else unsure |= !pk__tls_read_short(conn->tls);
  }
  if (keep && unsure) {
    /* The response ended exactly where a full read did: bytes (or an EOF)
     * may still wait in the socket, and edge-triggered epoll will not report
     * them again. Rare, so a peek is cheap insurance against pooling them. */
    char c;
    ssize_t r = recv(conn->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) keep = false;
  }
  charge_wire(conn, req);
  if (req->progress_ms) pk__req_report_progress(loop, req, true);
  conn->req = NULL;
  conn->requests++;
  pk__req_finish(loop, req, PK_OK, 0);
  conn->clean = 1; /* the exchange completed: a TLS close keeps its session */
  if (keep && !loop->stopping_local) release(loop, conn);
  else pk__conn_close(loop, conn);
}

/* Whether the server closed an idle connection (or sent bytes nobody asked
 * for: it cannot be reused either). TLS 1.3 session tickets arrive like
 * this on an idle TLS connection and leave it fit for reuse. A readable
 * event may be stale: one the loop took from epoll_wait for an answer that
 * a submitter's wait then read (pk__conn_wait_inline); only a socket that
 * is readable now counts. */
static bool idle_closed(pk__conn *conn, uint32_t events) {
  if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) return true;
  if (!(events & EPOLLIN)) return false;
  if (!conn->tls) return conn_gone(conn);
  char c;
  int detail = 0;
  size_t n;
  return pk__tls_read(conn->tls, &c, 1, &n, &detail) != PK__TLS_WANT_READ;
}

/* The connection's handler: the loop calls it through conn->io. */
static void conn_event(pk__loop *loop, pk__io *io, uint32_t events) {
  pk__conn *conn = PK_CONTAINER_OF(io, pk__conn, io);
  switch (conn->state) {
  case PK_CONN_CONNECTING:
    if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) pk__conn_connect_event(loop, conn);
    return;
  case PK_CONN_TUNNEL:
    pk__conn_tunnel_event(loop, conn, events);
    return;
  case PK_CONN_HANDSHAKE:
    pk__conn_handshake(loop, conn);
    return;
  case PK_CONN_IDLE:
    /* An idle connection that becomes readable was closed by the server or
     * sent bytes nobody asked for; either way it cannot be reused. */
    if (idle_closed(conn, events))
      pool_event(loop, conn->origin, (pk__pool_event){.kind = PK_POOL_SERVER_CLOSED, .entry = &conn->pool});
    return;
  case PK_CONN_ACTIVE:
    if ((events & (conn->tls ? (EPOLLOUT | EPOLLIN) : EPOLLOUT)) && conn->want_write) {
      pk__req *req = conn->req;
      pk__conn_write(loop, conn);
      if (conn->req != req || conn->state != PK_CONN_ACTIVE) return;
      if (!conn->want_write) pk__req_update_timer(loop, req);
    }
    if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) || conn->read_again) {
      conn->read_again = 0;
      pk__conn_read(loop, conn, events);
    }
    return;
  default:
    return;
  }
}

/* The step in conn->state finished: the next one. A socket to the origin's
 * route leads through the proxy's tunnel when there is one; then TLS for
 * https; then the request. */
static void advance(pk__loop *loop, pk__conn *conn) {
  if (conn->state == PK_CONN_CONNECTING && conn->origin->route == PK_ROUTE_TUNNEL) {
    pk__conn_tunnel_start(loop, conn);
  } else if (conn->state != PK_CONN_HANDSHAKE && conn->origin->scheme == PK_SCHEME_HTTPS) {
    pk__conn_secure(loop, conn);
  } else {
    conn->state = PK_CONN_ACTIVE;
    begin_request(loop, conn);
  }
}

static const pk__conn_up up = {
    .fail = pk__conn_fail,
    .advance = advance,
    .complete = complete,
    .read = pk__conn_read,
};

/* Loop thread, awake: the connection a submitter's wait left out of epoll
 * goes back in (pk_conn_wait.c), and the connections a direct pass needed
 * are opened. */
void pk__conn_rearm_disarmed(pk__loop *loop) {
  pk__conn_arm_disarmed(loop);
  while (loop->deferred_opens) {
    pk__req *req = loop->deferred_opens;
    loop->deferred_opens = req->qnext;
    req->qnext = NULL;
    open_for(loop, req);
  }
}
