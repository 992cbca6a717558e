/* From a name to a connected socket: the lookup (pk_dns.c), the
 * happy-eyeballs race over its addresses (RFC 8305), a Unix socket's
 * connect, and TLS on the socket (pk_tls.c). Each step's end advances the
 * connection through conn->up (pk_conn.c decides what comes next). */
#include "pk_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int connect_error(int e) {
  switch (e) {
  case ECONNREFUSED: return PK_E_CONNECT_REFUSED;
  case ENETUNREACH: return PK_E_NETWORK_UNREACHABLE;
  case EHOSTUNREACH: return PK_E_HOST_UNREACHABLE;
  case ETIMEDOUT: return PK_E_CONNECT_TIMEOUT;
  default: return PK_E_CONNECT;
  }
}

/* ------------------------------------------------------------------ TLS */

void pk__conn_handshake(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  int detail = 0;
  int r = pk__tls_handshake(conn->tls, &detail);
  if (r == PK__TLS_WANT_READ || r == PK__TLS_WANT_WRITE) return; /* edge-triggered: the next event resumes */
  if (r < 0) {
    pk__conn_up_fail(loop, conn, (pk_error)-r, detail);
    return;
  }
  req->timings.tls_ns = pk__now_ns() - conn->t_tls_start;
  req->timings.tls_resumed = pk__tls_resumed(conn->tls);
  conn->up->advance(loop, conn);
}

/* The newest resumable session of an origin is kept for its next new
 * connection (pk_tls.c's new-session callback, given to pk__tls_new). */
static void keep_session(void *c, void *session) {
  pk__origin *o = ((pk__conn *)c)->origin;
  pk__tls_session_free(o->tls_session);
  o->tls_session = session;
}

/* The socket (or the tunnel) leads to the origin: TLS for https. */
void pk__conn_secure(pk__loop *loop, pk__conn *conn) {
  if (conn->origin->scheme == PK_SCHEME_HTTPS) {
    pk__origin *o = conn->origin;
    int err = pk__tls_new(pk__engine_tls(loop->eng, o->tls_id), conn->fd, o->host, o->host_len,
                          pk__tls_session_resumable(o->tls_session) ? o->tls_session : NULL, keep_session, conn,
                          &conn->tls);
    if (err) {
      pk__conn_up_fail(loop, conn, (pk_error)-err, 0);
      return;
    }
    conn->state = PK_CONN_HANDSHAKE;
    conn->t_tls_start = pk__now_ns();
    pk__conn_handshake(loop, conn);
    return;
  }
  conn->up->advance(loop, conn);
}

static void connected(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  req->timings.connect_ns = pk__now_ns() - req->t_connect_start;
  pk__dns_release(&conn->dnsq);
  conn->addrs = NULL;
  conn->up->advance(loop, conn);
}

/* Makes a socket for `addr` (socket(2), or the config's open_socket hook),
 * nonblocking and registered with `io`, in *fd, then connect(2)s it.
 * Returns 1: connected (always so from the hook); 0: in progress; 2: the
 * attempt failed (errno set, the socket closed, *fd -1; also an overlapping
 * attempt that found the descriptor limit); -1: the connection was failed
 * here (no socket: PK_E_SOCKET with errno, EMFILE/ENFILE at the limit). */
static int open_fd(pk__loop *loop, pk__conn *conn, pk__io *io, int *fd_out, const struct sockaddr *addr, socklen_t len) {
  const pk_engine_config *cfg = &loop->eng->cfg;
  int fd = cfg->open_socket ? cfg->open_socket(cfg->open_socket_ctx, addr, (unsigned)len)
                            : socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 && io != &conn->io && (errno == EMFILE || errno == ENFILE)) return 2; /* an overlap: the race goes on */
  if (fd < 0) {
    pk__conn_up_fail(loop, conn, PK_E_SOCKET, errno);
    return -1;
  }
  if (cfg->open_socket) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
      int e = errno;
      close(fd);
      pk__conn_up_fail(loop, conn, PK_E_SOCKET, e);
      return -1;
    }
  }
  if (addr->sa_family != AF_UNIX) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  if (pk__io_add(loop, fd, io, PK_CONN_EVENTS) < 0) {
    int e = errno;
    close(fd);
    pk__conn_up_fail(loop, conn, PK_E_SOCKET, e);
    return -1;
  }
  *fd_out = fd;
  if (cfg->open_socket || connect(fd, addr, len) == 0) return 1;
  if (errno == EINPROGRESS) return 0;
  int e = errno;
  close(fd);
  *fd_out = -1;
  errno = e;
  return 2;
}

/* ------------------------------------------------------ happy eyeballs */

/* RFC 8305 §4: the addresses in the order tried, the two families
 * interleaved, the first address's family (the resolver's preference,
 * RFC 6724) first. */
static void order_addresses(pk__conn *conn, const pk__addrs *a) {
  uint8_t first[PK_DNS_MAX_ADDRS], second[PK_DNS_MAX_ADDRS];
  uint32_t nf = 0, ns = 0, k = 0;
  for (uint32_t i = 0; i < a->count; i++) {
    if (a->addr[i].ss_family == a->addr[0].ss_family) first[nf++] = (uint8_t)i;
    else second[ns++] = (uint8_t)i;
  }
  for (uint32_t i = 0; i < nf || i < ns; i++) {
    if (i < nf) conn->order[k++] = first[i];
    if (i < ns) conn->order[k++] = second[i];
  }
}

static void attempt_event(pk__loop *loop, pk__io *io, uint32_t events);

/* Where the connection goes and comes from, for the timings of each of its
 * requests (begin_request copies them): the address that won the race (the
 * proxy's when proxied), and the local port (one getsockname per
 * connection, none per request). */
static void note_peer(pk__conn *conn, const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET) {
    memcpy(conn->peer_addr, &((const struct sockaddr_in *)ss)->sin_addr, 4);
    conn->peer_family = 4;
  } else if (ss->ss_family == AF_INET6) {
    memcpy(conn->peer_addr, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
    conn->peer_family = 6;
  }
  conn->peer_port = conn->origin->connect_port;
  struct sockaddr_storage local;
  socklen_t len = sizeof local;
  if (getsockname(conn->fd, (struct sockaddr *)&local, &len) == 0) {
    if (local.ss_family == AF_INET) conn->local_port = ntohs(((struct sockaddr_in *)&local)->sin_port);
    else if (local.ss_family == AF_INET6) conn->local_port = ntohs(((struct sockaddr_in6 *)&local)->sin6_port);
  }
}

/* The race is decided: the socket of address `addr` connected. Every other
 * attempt is closed (no descriptor outlives the race); the winner becomes
 * the connection's socket. */
static void race_won(pk__loop *loop, pk__conn *conn, pk__attempt *winner) {
  pk__req *req = conn->req;
  pk__timer_cancel(loop, &conn->race_timer);
  uint8_t addr = winner ? winner->addr : conn->fd_addr;
  if (conn->extra) {
    for (int i = 0; i < PK_DNS_MAX_ADDRS; i++) {
      pk__attempt *a = &conn->extra[i];
      if (a == winner || a->fd < 0) continue;
      close(a->fd); /* also leaves the epoll set */
      a->fd = -1;
    }
  }
  if (winner) {
    if (conn->fd >= 0) close(conn->fd);
    conn->fd = winner->fd;
    winner->fd = -1;
    /* Events now go to the connection's handler; re-registering queues one
     * for a ready socket, as the edge already passed. */
    if (pk__io_rearm(loop, conn->fd, &conn->io, PK_CONN_EVENTS) < 0) {
      pk__conn_up_fail(loop, conn, PK_E_SOCKET, errno);
      return;
    }
  }
  conn->in_flight = 0;
  note_peer(conn, &conn->addrs->addr[addr]);
  req->timings.connect_attempts = conn->attempts;
  connected(loop, conn);
}

static void race_next(pk__loop *loop, pk__conn *conn);

/* An attempt failed (its socket is closed): the next address starts now
 * (RFC 8305 §5); with none left and none pending, the connection fails. */
static void attempt_failed(pk__loop *loop, pk__conn *conn, int err) {
  conn->last_errno = err;
  conn->in_flight--;
  if (conn->addr_index < conn->addrs->count) race_next(loop, conn);
  else if (conn->in_flight == 0) pk__conn_up_fail(loop, conn, connect_error(err), err);
}

static void race_timer_fire(pk__loop *loop, pk__timer *t) {
  pk__conn *conn = PK_CONTAINER_OF(t, pk__conn, race_timer);
  if (conn->state == PK_CONN_CONNECTING && conn->addrs && conn->addr_index < conn->addrs->count)
    race_next(loop, conn);
}

/* A free slot for an overlapping attempt, or NULL (out of memory: the race
 * goes on with the attempts it has). */
static pk__attempt *extra_slot(pk__conn *conn) {
  if (!conn->extra) {
    conn->extra = pk__malloc(PK_DNS_MAX_ADDRS * sizeof *conn->extra);
    if (!conn->extra) return NULL;
    for (int i = 0; i < PK_DNS_MAX_ADDRS; i++)
      conn->extra[i] = (pk__attempt){.io.handler = attempt_event, .fd = -1};
  }
  for (int i = 0; i < PK_DNS_MAX_ADDRS; i++)
    if (conn->extra[i].fd < 0) return &conn->extra[i];
  return NULL;
}

/* Starts the next address's attempt: on the connection's own socket when
 * it has none, else on an extra one. Failures at once move on to the next
 * address; the stagger timer starts the one after a pending attempt. */
static void race_next(pk__loop *loop, pk__conn *conn) {
  const pk__addrs *a = conn->addrs;
  uint32_t delay = loop->eng->cfg.connection_attempt_delay_ms;
  while (conn->addr_index < a->count) {
    pk__attempt *slot = NULL;
    if (conn->fd >= 0 && !(slot = extra_slot(conn))) return; /* the timer or a failure comes back */
    uint8_t i = conn->order[conn->addr_index++];
    struct sockaddr_storage ss = a->addr[i];
    if (ss.ss_family == AF_INET) ((struct sockaddr_in *)&ss)->sin_port = htons(conn->origin->connect_port);
    else ((struct sockaddr_in6 *)&ss)->sin6_port = htons(conn->origin->connect_port);
    conn->attempts++;
    int r;
    if (slot) {
      slot->addr = i;
      slot->conn = conn;
      r = open_fd(loop, conn, &slot->io, &slot->fd, (struct sockaddr *)&ss, a->len[i]);
    } else {
      conn->fd_addr = i;
      r = open_fd(loop, conn, &conn->io, &conn->fd, (struct sockaddr *)&ss, a->len[i]);
    }
    if (r < 0) return;
    if (r == 1) {
      race_won(loop, conn, slot);
      return;
    }
    if (r == 2) {
      conn->last_errno = errno;
      continue;
    }
    conn->in_flight++;
    if (delay && conn->addr_index < a->count) pk__timer_arm(loop, &conn->race_timer, loop->now + (uint64_t)delay * 1000000u);
    pk__req_update_timer(loop, conn->req);
    return;
  }
  if (conn->in_flight == 0) pk__conn_up_fail(loop, conn, connect_error(conn->last_errno), conn->last_errno);
}

/* An overlapping attempt's socket reported (the connection's own goes
 * through conn_event). Closed attempts (fd -1) may still have an event in
 * the batch being run: ignored. */
static void attempt_event(pk__loop *loop, pk__io *io, uint32_t events) {
  pk__attempt *at = PK_CONTAINER_OF(io, pk__attempt, io);
  pk__conn *conn = at->conn;
  if (at->fd < 0 || conn->state != PK_CONN_CONNECTING || !(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(at->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
  if (err == 0) {
    race_won(loop, conn, at);
    return;
  }
  if (err == EINPROGRESS || err == EALREADY) return;
  close(at->fd);
  at->fd = -1;
  attempt_failed(loop, conn, err);
}

static void try_connect(pk__loop *loop, pk__conn *conn) {
  conn->req->t_connect_start = pk__now_ns();
  conn->attempts = conn->in_flight = 0;
  conn->last_errno = ECONNREFUSED;
  order_addresses(conn, conn->addrs);
  race_next(loop, conn);
}

/* Addresses in hand (or not): connect to the first that answers. */
static void resolved(pk__loop *loop, pk__conn *conn, const pk__addrs *addrs, int err) {
  if (err) {
    pk__conn_up_fail(loop, conn, (pk_error)-err, addrs ? addrs->gai_error : 0);
    return;
  }
  conn->addrs = addrs;
  conn->addr_index = 0;
  conn->state = PK_CONN_CONNECTING;
  try_connect(loop, conn);
}

/* pk_dns.c's answer to a lookup that went to a resolver thread. */
static void dns_answer(pk__dns_query *q, const pk__addrs *addrs, int err) {
  pk__conn *conn = PK_CONTAINER_OF(q, pk__conn, dnsq);
  if (conn->req) conn->req->timings.dns_ns = q->took_ns;
  resolved(conn->loop, conn, addrs, err);
}

/* A Unix socket's connect errors, each its own code (the path is the
 * caller's to name): a missing file, nobody listening (or not a socket), no
 * permission. */
static int unix_connect_error(int e) {
  switch (e) {
  case ENOENT:
  case ENOTDIR: return PK_E_UNIX_SOCKET_NOT_FOUND;
  case ECONNREFUSED:
  case ENOTSOCK:
  case EPROTOTYPE: return PK_E_UNIX_SOCKET_REFUSED;
  case EACCES:
  case EPERM: return PK_E_UNIX_SOCKET_PERMISSION;
  default: return PK_E_CONNECT;
  }
}

/* The origin's route is a Unix domain socket: no resolution, one address.
 * A local connect completes (or fails) at once; EAGAIN means the listener's
 * backlog is full, which is reported (connect_failed, errno kept) rather than
 * waited for, as curl does. */
static void unix_connect(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  pk__origin *o = conn->origin;
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  memcpy(sa.sun_path, pk__origin_route(o), o->route_len); /* <= PK_UNIX_PATH_MAX, checked at submit */
  socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + o->route_len + 1);
  conn->state = PK_CONN_CONNECTING;
  req->t_connect_start = pk__now_ns();
  int r = open_fd(loop, conn, &conn->io, &conn->fd, (struct sockaddr *)&sa, len);
  if (r < 0) return;
  if (r == 1) {
    connected(loop, conn);
    return;
  }
  if (r == 0) {
    pk__req_update_timer(loop, req);
    return;
  }
  int e = errno;
  pk__conn_up_fail(loop, conn, unix_connect_error(e), e);
}

void pk__conn_connect(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  pk__origin *o = conn->origin;
  conn->race_timer.fire = race_timer_fire;
  conn->dnsq.cb = dns_answer;
  conn->state = PK_CONN_RESOLVING;
  req->t_dns_start = loop->now;
  pk__req_update_timer(loop, req);
  if (o->route == PK_ROUTE_UNIX) {
    unix_connect(loop, conn);
    return;
  }
  /* The caller's own addresses (numeric, so answered at once), the proxy's,
   * or the host's. */
  bool own = o->route == PK_ROUTE_ADDRS || o->route == PK_ROUTE_PROXY || o->route == PK_ROUTE_TUNNEL;
  const pk__addrs *addrs = NULL;
  int r = pk__dns_resolve(&loop->dns, own ? pk__origin_route(o) : o->host, own ? o->route_len : o->host_len, loop->now,
                          &conn->dnsq, &addrs);
  if (r == PK__DNS_PENDING) return; /* dns_answer follows */
  resolved(loop, conn, addrs, r);
}

void pk__conn_connect_event(pk__loop *loop, pk__conn *conn) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(conn->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
  bool is_unix = conn->origin->route == PK_ROUTE_UNIX;
  if (err == 0) {
    if (is_unix) connected(loop, conn);
    else race_won(loop, conn, NULL);
    return;
  }
  if (err == EINPROGRESS || err == EALREADY) return;
  if (is_unix) {
    pk__conn_up_fail(loop, conn, unix_connect_error(err), err);
    return;
  }
  close(conn->fd);
  conn->fd = -1;
  attempt_failed(loop, conn, err);
}
