/* One connection's life: connect, write a request, read and frame its
 * response, then back to the pool or closed. Sockets are registered once,
 * edge-triggered, for reading and writing, so a warm request costs one write
 * and one read and no epoll_ctl. */
#include "pk_internal.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

#define PK_HEADERS_ON_STACK 256

/* ---------------------------------------------------------- read buffers */

char *pk__rbuf_get(pk__loop *loop) {
  if (loop->rbufs_len) return loop->rbufs[--loop->rbufs_len];
  return pk__malloc(PK_RBUF_SIZE);
}

void pk__rbuf_put(pk__loop *loop, char *buf, size_t cap) {
  if (cap != PK_RBUF_SIZE) {
    pk__free(buf); /* grown for a large head: rare, not worth keeping */
    return;
  }
  if (loop->rbufs_len == loop->rbufs_cap) {
    uint32_t ncap = loop->rbufs_cap ? loop->rbufs_cap * 2 : 64;
    char **nb = pk__realloc(loop->rbufs, ncap * sizeof *nb);
    if (!nb) {
      pk__free(buf);
      return;
    }
    loop->rbufs = nb;
    loop->rbufs_cap = ncap;
  }
  loop->rbufs[loop->rbufs_len++] = buf;
}

/* ------------------------------------------------------------ wire bytes */

/* Plain connections: the wire is the payload. TLS: the BIO's counters, so a
 * request is charged its records and, on a new connection, the handshake. */
void pk__charge_wire(pk__conn *conn, pk__req *req) {
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

static bool retryable(int err) {
  return err == PK_E_CONN_RESET || err == PK_E_CLOSED_BEFORE_RESPONSE || err == PK_E_WRITE ||
         err == PK_E_READ;
}

void pk__conn_fail(pk__loop *loop, pk__conn *conn, int err, int sys_errno) {
  pk__req *req = conn->req;
  if (req) pk__charge_wire(conn, req);
  conn->req = NULL;
  pk__conn_close(loop, conn);
  if (!req) return;
  req->conn = NULL;
  /* A pooled connection may have been closed by the server just as we reused
   * it; nothing of the response arrived, so an idempotent request is safe to
   * send once more on a new connection (RFC 9112 §9.3.1). */
  if (retryable(err) && req->conn_reused && req->timings.bytes_received == 0 && req->idempotent &&
      !req->retried) {
    req->retried = 1;
    req->conn_reused = 0;
    req->timings.reused = 0;
    req->timings.bytes_sent = 0;
    req->state = PK_REQ_QUEUED;
    atomic_fetch_add_explicit(&loop->st_retried, 1, memory_order_relaxed);
    pk__dispatch(loop, req, true);
    return;
  }
  pk__req_finish(loop, req, err, sys_errno);
}

static int connect_error(int e) {
  switch (e) {
  case ECONNREFUSED: return PK_E_CONNECT_REFUSED;
  case ENETUNREACH: return PK_E_NETWORK_UNREACHABLE;
  case EHOSTUNREACH: return PK_E_HOST_UNREACHABLE;
  case ETIMEDOUT: return PK_E_CONNECT_TIMEOUT;
  default: return PK_E_CONNECT;
  }
}

/* ---------------------------------------------------------------- write */

/* Head and body leave in one sendmsg (writev semantics); MSG_NOSIGNAL so a
 * peer that closed early yields EPIPE, not a process-killing SIGPIPE. */
/* TLS has no writev: head, then body, each as large records. */
static void conn_write_tls(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  size_t total = req->head_len + req->body_len;
  while (conn->woff < total) {
    const char *p;
    size_t n;
    if (conn->woff < req->head_len) {
      p = req->buf + conn->woff;
      n = req->head_len - conn->woff;
    } else {
      p = req->body + (conn->woff - req->head_len);
      n = total - conn->woff;
    }
    int detail = 0;
    ssize_t w = pk__tls_write(conn->tls, p, n, &detail);
    if (w == PK_TLS_WANT_WRITE || w == PK_TLS_WANT_READ) {
      conn->want_write = 1;
      return;
    }
    if (w < 0) {
      pk__conn_fail(loop, conn, (int)-w, detail);
      return;
    }
    conn->woff += (size_t)w;
    req->timings.bytes_sent += (uint64_t)w;
    req->t_last_activity = loop->now;
  }
  conn->want_write = 0;
}

static void conn_write(pk__loop *loop, pk__conn *conn) {
  if (conn->tls) {
    conn_write_tls(loop, conn);
    return;
  }
  pk__req *req = conn->req;
  size_t total = req->head_len + req->body_len;
  while (conn->woff < total) {
    struct iovec iov[2];
    int n = 0;
    if (conn->woff < req->head_len) {
      iov[n].iov_base = req->buf + conn->woff;
      iov[n++].iov_len = req->head_len - conn->woff;
      if (req->body_len) {
        iov[n].iov_base = (void *)req->body;
        iov[n++].iov_len = req->body_len;
      }
    } else {
      size_t off = conn->woff - req->head_len;
      iov[n].iov_base = (char *)req->body + off;
      iov[n++].iov_len = req->body_len - off;
    }
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    ssize_t w = sendmsg(conn->fd, &msg, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        conn->want_write = 1;
        return;
      }
      int e = errno;
      pk__conn_fail(loop, conn, e == ECONNRESET ? PK_E_CONN_RESET : PK_E_WRITE, e);
      return;
    }
    conn->woff += (size_t)w;
    req->timings.bytes_sent += (uint64_t)w;
    req->t_last_activity = loop->now;
  }
  conn->want_write = 0;
}

void pk__conn_begin_request(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  conn->woff = 0;
  conn->rlen = 0;
  conn->read_full = 0;
  conn->clean = 0;
  req->last_len = 0;
  req->got_head = 0;
  req->interim = 0;
  req->t_last_activity = loop->now;
  if (!conn->rbuf) {
    conn->rbuf = pk__rbuf_get(loop);
    if (!conn->rbuf) {
      pk__conn_fail(loop, conn, PK_E_NOMEM, 0);
      return;
    }
    conn->rcap = PK_RBUF_SIZE;
  }
  conn_write(loop, conn);
  if (conn->req == req) pk__req_update_timer(loop, req);
}

/* -------------------------------------------------------------- connect */

static void handshake_step(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  int detail = 0;
  int r = pk__tls_handshake(pk__engine_tls(loop->eng, conn->origin->tls_id), conn->tls, &detail);
  if (r == PK_TLS_WANT_READ || r == PK_TLS_WANT_WRITE) return; /* edge-triggered: the next event resumes */
  if (r < 0) {
    pk__conn_fail(loop, conn, -r, detail);
    return;
  }
  req->timings.tls_ns = pk__now_ns() - conn->t_tls_start;
  req->timings.tls_resumed = pk__tls_resumed(conn->tls);
  conn->state = PK_CONN_ACTIVE;
  pk__conn_begin_request(loop, conn);
}

/* The newest resumable session of an origin is kept for its next new
 * connection (OpenSSL's new-session callback lands here). */
void pk__conn_tls_session(void *c, void *session) {
  pk__origin *o = ((pk__conn *)c)->origin;
  pk__tls_session_free(o->tls_session);
  o->tls_session = session;
}

static void connected(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  req->timings.connect_ns = pk__now_ns() - req->t_connect_start;
  pk__dns_release(conn);
  if (conn->origin->scheme == PK_SCHEME_HTTPS) {
    pk__origin *o = conn->origin;
    conn->tls = pk__tls_new(pk__engine_tls(loop->eng, o->tls_id), conn->fd, o->host, o->host_len,
                            pk__tls_session_resumable(o->tls_session) ? o->tls_session : NULL, conn);
    if (!conn->tls) {
      pk__conn_fail(loop, conn, PK_E_TLS_HANDSHAKE, 0);
      return;
    }
    conn->state = PK_CONN_HANDSHAKE;
    conn->t_tls_start = pk__now_ns();
    handshake_step(loop, conn);
    return;
  }
  conn->state = PK_CONN_ACTIVE;
  pk__conn_begin_request(loop, conn);
}

static void try_connect(pk__loop *loop, pk__conn *conn) {
  const pk__addrs *a = conn->addrs;
  pk__req *req = conn->req;
  int last = ECONNREFUSED;
  req->t_connect_start = pk__now_ns();
  for (; conn->addr_index < a->count; conn->addr_index++) {
    struct sockaddr_storage ss = a->addr[conn->addr_index];
    socklen_t len = a->len[conn->addr_index];
    if (ss.ss_family == AF_INET) ((struct sockaddr_in *)&ss)->sin_port = htons(conn->origin->port);
    else ((struct sockaddr_in6 *)&ss)->sin6_port = htons(conn->origin->port);
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      pk__conn_fail(loop, conn, PK_E_SOCKET, errno);
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = conn};
    if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
      int e = errno;
      close(fd);
      pk__conn_fail(loop, conn, PK_E_SOCKET, e);
      return;
    }
    conn->fd = fd;
    if (connect(fd, (struct sockaddr *)&ss, len) == 0) {
      connected(loop, conn);
      return;
    }
    if (errno == EINPROGRESS) {
      conn->state = PK_CONN_CONNECTING;
      pk__req_update_timer(loop, req);
      return;
    }
    last = errno;
    close(fd);
    conn->fd = -1;
  }
  pk__conn_fail(loop, conn, connect_error(last), last);
}

void pk__conn_connect_addrs(pk__loop *loop, pk__conn *conn, const pk__addrs *addrs, int err) {
  if (err) {
    pk__conn_fail(loop, conn, err, addrs ? addrs->gai_error : 0);
    return;
  }
  conn->addrs = addrs;
  conn->addr_index = 0;
  conn->state = PK_CONN_CONNECTING;
  try_connect(loop, conn);
}

void pk__conn_start(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  conn->state = PK_CONN_RESOLVING;
  req->t_dns_start = loop->now;
  pk__req_update_timer(loop, req);
  pk__dns_resolve(loop, conn);
}

static void connect_event(pk__loop *loop, pk__conn *conn) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(conn->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
  if (err == 0) {
    connected(loop, conn);
    return;
  }
  if (err == EINPROGRESS || err == EALREADY) return;
  close(conn->fd);
  conn->fd = -1;
  conn->addr_index++;
  if (conn->addr_index < conn->addrs->count) try_connect(loop, conn);
  else pk__conn_fail(loop, conn, connect_error(err), err);
}

/* ----------------------------------------------------------------- read */

static void complete(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  bool keep = conn->reusable && req->body_info.keep_alive && conn->state == PK_CONN_ACTIVE &&
              !conn->want_write && conn->woff == req->head_len + req->body_len;
  if (keep && conn->read_full) {
    /* The response ended exactly where a full read did: bytes (or an EOF)
     * may still wait in the socket, and edge-triggered epoll will not report
     * them again. Rare, so a peek is cheap insurance against pooling them. */
    char c;
    ssize_t r = recv(conn->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) keep = false;
  }
  pk__charge_wire(conn, req);
  conn->req = NULL;
  conn->requests++;
  pk__req_finish(loop, req, PK_OK, 0);
  conn->clean = 1; /* the exchange completed: a TLS close keeps its session */
  if (keep && !loop->stopping_local) pk__conn_release(loop, conn);
  else pk__conn_close(loop, conn);
}

/* ------------------------------------------------------ content decoding */

static bool token_eq(const char *p, size_t n, const char *lit) {
  size_t m = strlen(lit);
  if (n != m) return false;
  for (size_t i = 0; i < n; i++) {
    char c = p[i];
    if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
    if (c != lit[i]) return false;
  }
  return true;
}

/* Sets up decoders for Content-Encoding (RFC 9110 §8.4): gzip and deflate,
 * at most two stacked. A coding we do not decode (br, zstd: the caller must
 * have asked for it) leaves the body as sent. Returns 0 or -PK_E_xxx. */
static int setup_decoding(pk__loop *loop, pk__req *req, const pk_response_head *head) {
  pk_coding codings[3];
  int n = 0;
  for (size_t i = 0; i < head->num_headers; i++) {
    const pk_header *h = &head->headers[i];
    if (!token_eq(h->name, h->name_len, "content-encoding")) continue;
    const char *p = h->value, *end = h->value + h->value_len;
    while (p < end) {
      while (p < end && (*p == ' ' || *p == '\t' || *p == ',')) p++;
      const char *t = p;
      while (p < end && *p != ',' && *p != ' ' && *p != '\t') p++;
      size_t len = (size_t)(p - t);
      if (!len || token_eq(t, len, "identity")) continue;
      if (n == 2) return -PK_E_TOO_MANY_ENCODINGS;
      if (token_eq(t, len, "gzip") || token_eq(t, len, "x-gzip")) codings[n++] = PK_CODING_GZIP;
      else if (token_eq(t, len, "deflate")) codings[n++] = PK_CODING_DEFLATE;
      else return 0; /* not ours to decode: deliver as sent */
    }
  }
  /* Codings are listed in the order applied: undo the last first. */
  for (int i = n - 1; i >= 0; i--) {
    int err = pk_inflate_create(codings[i], &loop->eng->cfg.inflate_limits, &req->dec[req->ndec]);
    if (err) return err;
    req->ndec++;
  }
  return 0;
}

/* The last stage: decoded (or plain) body bytes to the caller. */
static int body_out(void *ctx, const char *data, size_t n) {
  pk__req *req = ctx;
  pk_engine *eng = req->loop->eng;
  req->body_bytes += n;
  if (eng->cfg.max_body_bytes && req->body_bytes > eng->cfg.max_body_bytes) return -PK_E_BODY_TOO_LARGE;
  if (eng->cfg.callbacks.on_body) eng->cfg.callbacks.on_body(req->ctx, data, n);
  return 0;
}

static int inner_out(void *ctx, const char *data, size_t n) {
  pk__req *req = ctx;
  return pk_inflate_feed(req->dec[1], data, n, body_out, req);
}

static int deliver_body(pk__req *req, const char *data, size_t n) {
  if (req->ndec == 0) return body_out(req, data, n);
  return pk_inflate_feed(req->dec[0], data, n, req->ndec == 2 ? inner_out : body_out, req);
}

static int finish_decoding(pk__req *req) {
  for (int i = 0; i < req->ndec; i++) {
    int err = pk_inflate_finish(req->dec[i]);
    if (err) return err;
  }
  return 0;
}

/* Returns true when the request ended (completed or failed). */
static bool process(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  pk_engine *eng = loop->eng;
  const pk_parse_limits *lim = &eng->cfg.limits;
  char *p = conn->rbuf;
  size_t len = conn->rlen;

  while (!req->got_head) {
    pk_header hdrs[PK_HEADERS_ON_STACK];
    pk_response_head head = {.headers = hdrs};
    head.num_headers = lim->max_header_fields < PK_HEADERS_ON_STACK ? lim->max_header_fields : PK_HEADERS_ON_STACK;
    int r = pk_parse_response_head(conn->rbuf, conn->rlen, req->last_len, &head, lim);
    if (r == PK_PARSE_INCOMPLETE) {
      req->last_len = conn->rlen;
      if (conn->rlen == conn->rcap) {
        /* A head larger than the usual buffer: grow, up to the head limit. */
        size_t ncap = conn->rcap * 2 > lim->max_head_bytes ? lim->max_head_bytes : conn->rcap * 2;
        if (ncap <= conn->rcap) {
          pk__conn_fail(loop, conn, PK_E_HEAD_TOO_LARGE, 0);
          return true;
        }
        char *nb = pk__malloc(ncap);
        if (!nb) {
          pk__conn_fail(loop, conn, PK_E_NOMEM, 0);
          return true;
        }
        memcpy(nb, conn->rbuf, conn->rlen);
        pk__rbuf_put(loop, conn->rbuf, conn->rcap);
        conn->rbuf = nb;
        conn->rcap = ncap;
      }
      return false;
    }
    if (r < 0) {
      pk__conn_fail(loop, conn, -r, 0);
      return true;
    }
    if (head.status < 200) {
      if (head.status == 101) {
        pk__conn_fail(loop, conn, PK_E_UNEXPECTED_UPGRADE, 0);
        return true;
      }
      /* Interim responses (RFC 9110 §15.2) are skipped, a bounded number. */
      if (++req->interim > eng->cfg.max_interim) {
        pk__conn_fail(loop, conn, PK_E_TOO_MANY_INTERIM, 0);
        return true;
      }
      memmove(conn->rbuf, conn->rbuf + r, conn->rlen - (size_t)r);
      conn->rlen -= (size_t)r;
      req->last_len = 0;
      continue;
    }
    int err = pk_response_body_info(&head, req->is_head, &req->body_info);
    if (err) {
      pk__conn_fail(loop, conn, -err, 0);
      return true;
    }
    if (req->body_info.framing == PK_FRAMING_LENGTH && eng->cfg.max_body_bytes &&
        req->body_info.content_length > eng->cfg.max_body_bytes) {
      pk__conn_fail(loop, conn, PK_E_BODY_TOO_LARGE, 0);
      return true;
    }
    if (eng->cfg.decode_content && req->body_info.framing != PK_FRAMING_NONE) {
      err = setup_decoding(loop, req, &head);
      if (err) {
        pk__conn_fail(loop, conn, -err, 0);
        return true;
      }
    }
    req->got_head = 1;
    if (!req->body_info.keep_alive) conn->reusable = 0;
    req->remaining = req->body_info.content_length;
    req->body_bytes = 0;
    pk_chunked_init(&req->chunked);
    int64_t cl = req->body_info.framing == PK_FRAMING_LENGTH ? (int64_t)req->body_info.content_length
                 : req->body_info.framing == PK_FRAMING_NONE ? 0 : -1;
    if (eng->cfg.callbacks.on_head) eng->cfg.callbacks.on_head(req->ctx, &head, conn->rbuf, (size_t)r, cl);
    p = conn->rbuf + r;
    len = conn->rlen - (size_t)r;
  }
  conn->rlen = 0;

  size_t deliver = 0;
  bool done = false;
  switch (req->body_info.framing) {
  case PK_FRAMING_NONE:
    done = true;
    if (len) conn->reusable = 0; /* bytes nobody asked for */
    break;
  case PK_FRAMING_LENGTH:
    deliver = len < req->remaining ? len : (size_t)req->remaining;
    req->remaining -= deliver;
    if (len > deliver) conn->reusable = 0;
    done = req->remaining == 0;
    break;
  case PK_FRAMING_CHUNKED: {
    size_t out = len;
    ssize_t used = pk_chunked_decode(&req->chunked, p, &out, lim);
    if (used < 0) {
      pk__conn_fail(loop, conn, (int)-used, 0);
      return true;
    }
    deliver = out;
    if (req->chunked.done) {
      done = true;
      if ((size_t)used < len) conn->reusable = 0;
    }
    break;
  }
  case PK_FRAMING_CLOSE:
    deliver = len;
    conn->reusable = 0;
    break;
  }
  if (deliver) {
    int err = deliver_body(req, p, deliver);
    if (err) {
      pk__conn_fail(loop, conn, -err, 0);
      return true;
    }
  }
  if (done) {
    int err = finish_decoding(req);
    if (err) {
      pk__conn_fail(loop, conn, -err, 0);
      return true;
    }
    complete(loop, conn);
    return true;
  }
  return false;
}

static void on_eof(pk__loop *loop, pk__conn *conn, bool unclean_tls) {
  pk__req *req = conn->req;
  conn->reusable = 0;
  /* Over TLS a close-delimited body ends only with close_notify: a bare FIN
   * could be a truncation attack (RFC 9112 §9.8). */
  if (unclean_tls && req->got_head && req->body_info.framing == PK_FRAMING_CLOSE) {
    pk__conn_fail(loop, conn, PK_E_TRUNCATED_BODY, 0);
    return;
  }
  if (!req->got_head) {
    pk__conn_fail(loop, conn, conn->rlen ? PK_E_TRUNCATED_HEAD : PK_E_CLOSED_BEFORE_RESPONSE, 0);
    return;
  }
  /* Only a close-delimited body ends with the connection (RFC 9112 §6.3 p8);
   * for the others an EOF means the body was cut short. */
  if (req->body_info.framing != PK_FRAMING_CLOSE) {
    pk__conn_fail(loop, conn, PK_E_TRUNCATED_BODY, 0);
    return;
  }
  int err = finish_decoding(req);
  if (err) pk__conn_fail(loop, conn, -err, 0);
  else complete(loop, conn);
}

/* n new bytes landed in the read buffer: account for them and parse.
 * Returns true when the request ended. */
static bool received(pk__loop *loop, pk__conn *conn, size_t n, size_t space) {
  pk__req *req = conn->req;
  if (req->timings.bytes_received == 0) req->timings.first_byte_ns = loop->now - req->t_submit;
  req->timings.bytes_received += n;
  req->t_last_activity = loop->now;
  conn->rlen += n;
  conn->read_full = n == space;
  return process(loop, conn);
}

static void conn_read_tls(pk__loop *loop, pk__conn *conn) {
  for (;;) {
    pk__req *req = conn->req;
    if (!req || conn->state != PK_CONN_ACTIVE) return;
    size_t space = conn->rcap - conn->rlen;
    int detail = 0;
    ssize_t n = pk__tls_read(conn->tls, conn->rbuf + conn->rlen, space, &detail);
    if (n > 0) {
      if (received(loop, conn, (size_t)n, space)) return;
      /* OpenSSL may hold decrypted bytes epoll cannot see: read on until it
       * has none and the socket itself was read dry. */
      if (pk__tls_drained(conn->tls)) return;
      continue;
    }
    if (n == PK_TLS_WANT_READ || n == PK_TLS_WANT_WRITE) return;
    if (n == 0 || n == PK_TLS_EOF_UNCLEAN) {
      on_eof(loop, conn, n == PK_TLS_EOF_UNCLEAN);
      return;
    }
    pk__conn_fail(loop, conn, (int)-n, detail);
    return;
  }
}

/* An idle TLS connection became readable: TLS 1.3 session tickets arrive
 * like this and leave it fit for reuse; application data or a close do not. */
static void idle_tls_event(pk__loop *loop, pk__conn *conn) {
  char c;
  int detail = 0;
  ssize_t n = pk__tls_read(conn->tls, &c, 1, &detail);
  if (n == PK_TLS_WANT_READ) return; /* a ticket or other handshake message: still fit */
  pk__conn_close(loop, conn);
}

static void conn_read(pk__loop *loop, pk__conn *conn, uint32_t events) {
  if (conn->tls) {
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) conn->reusable = 0;
    conn_read_tls(loop, conn);
    return;
  }
  bool hup = events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR);
  /* The peer already hung up: whatever is left to read, this connection
   * cannot serve another request (and no later edge would tell us). */
  if (hup) conn->reusable = 0;
  for (;;) {
    pk__req *req = conn->req;
    if (!req || conn->state != PK_CONN_ACTIVE) return;
    size_t space = conn->rcap - conn->rlen;
    ssize_t n = read(conn->fd, conn->rbuf + conn->rlen, space);
    if (n > 0) {
      if (received(loop, conn, (size_t)n, space)) return;
      /* A short read drained the socket; edge-triggered epoll reports new data. */
      if ((size_t)n < space && !hup) return;
      continue;
    }
    if (n == 0) {
      on_eof(loop, conn, false);
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    int e = errno;
    pk__conn_fail(loop, conn, e == ECONNRESET ? PK_E_CONN_RESET : PK_E_READ, e);
    return;
  }
}

void pk__conn_event(pk__loop *loop, pk__conn *conn, uint32_t events) {
  switch (conn->state) {
  case PK_CONN_CONNECTING:
    if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) connect_event(loop, conn);
    return;
  case PK_CONN_HANDSHAKE:
    handshake_step(loop, conn);
    return;
  case PK_CONN_IDLE:
    /* An idle connection that becomes readable was closed by the server or
     * sent bytes nobody asked for; either way it cannot be reused. */
    if (conn->tls && !(events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && (events & EPOLLIN)) {
      idle_tls_event(loop, conn);
      return;
    }
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) pk__conn_close(loop, conn);
    return;
  case PK_CONN_ACTIVE:
    if ((events & (conn->tls ? (EPOLLOUT | EPOLLIN) : EPOLLOUT)) && conn->want_write) {
      pk__req *req = conn->req;
      conn_write(loop, conn);
      if (conn->req != req || conn->state != PK_CONN_ACTIVE) return;
      if (!conn->want_write) pk__req_update_timer(loop, req);
    }
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) conn_read(loop, conn, events);
    return;
  default:
    return;
  }
}
