/* One connection's life: connect, write a request, read and frame its
 * response, then back to the pool or closed. Sockets are registered once,
 * edge-triggered, for reading and writing, so a warm request costs one write
 * and one read and no epoll_ctl. */
#include "pk_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#define PK_HEADERS_ON_STACK 256

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

void pk__conn_fail(pk__loop *loop, pk__conn *conn, pk_error err, int sys_errno) {
  pk__req *req = conn->req;
  if (req) charge_wire(conn, req);
  conn->req = NULL;
  pk__conn_close(loop, conn);
  if (!req) return;
  req->conn = NULL;
  if (pk__req_retry(loop, req, &err, &sys_errno)) pk__conn_dispatch(loop, req, true);
  else pk__req_finish(loop, req, err, sys_errno);
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

/* The request goes out as its head, then its body from one of three sources
 * (pk_body_kind). Plain connections write head and an in-memory body in one
 * sendmsg (writev semantics) and file bodies with sendfile(2); TLS has no
 * writev, so pieces go one at a time as large records. MSG_NOSIGNAL
 * on every send, and SIGPIPE blocked on the loop threads for sendfile and
 * sink writes (loop_main): a peer that closed early yields EPIPE, not a
 * process-killing SIGPIPE. */

#define PK_W_AGAIN (-1)  /* the socket is full: wait for EPOLLOUT */
#define PK_W_FAILED (-2) /* the request ended (or went on to read its response) */



/* A body write failed. The server may have answered and closed first (an
 * early 413): read what it sent before giving up, and report the write error
 * only if no response came. */
static void write_failed(pk__loop *loop, pk__conn *conn, pk_error err, int sys_errno) {
  pk__req *req = conn->req;
  if (err != PK_E_CONN_RESET && err != PK_E_WRITE) {
    pk__conn_fail(loop, conn, err, sys_errno);
    return;
  }
  req->write_error = err;
  req->write_errno = sys_errno;
  req->body_stopped = 1;
  conn->want_write = 0;
  conn->reusable = 0;
  conn->hup_seen = 1;
  pk__conn_read(loop, conn, EPOLLIN | EPOLLRDHUP);
}

/* One write of up to `n` pieces. Returns the bytes written, PK_W_AGAIN or PK_W_FAILED. */
static ssize_t put_out(pk__loop *loop, pk__conn *conn, struct iovec *iov, int n) {
  pk__req *req = conn->req;
  ssize_t w;
  if (conn->tls) {
    int detail = 0;
    size_t n_out;
    int st;
    if (n == 1 && req->body_kind == PK_BODY_MEMORY && !req->body_len && pk__loop_can_send(loop, &conn->send)) {
      /* The whole request is this head: its records are sealed and queued
       * on the ring like a plain head (send_done hands back what the
       * kernel did not take; conn_write_loop flushes it first). */
      const void *records;
      size_t records_len;
      st = pk__tls_seal(conn->tls, iov[0].iov_base, iov[0].iov_len, &records, &records_len, &n_out, &detail);
      if (st == PK__TLS_OK && !pk__loop_send(loop, conn->fd, records, records_len, &conn->send))
        pk__tls_sealed_sent(conn->tls, 0);
    } else {
      st = pk__tls_write(conn->tls, iov[0].iov_base, iov[0].iov_len, &n_out, &detail);
    }
    if (st == PK__TLS_WANT_WRITE || st == PK__TLS_WANT_READ) return PK_W_AGAIN;
    if (st < 0) {
      write_failed(loop, conn, (pk_error)-st, detail);
      return PK_W_FAILED;
    }
    w = (ssize_t)n_out;
  } else if (n == 1 && req->body_kind == PK_BODY_MEMORY && !req->body_len &&
             pk__loop_send(loop, conn->fd, iov[0].iov_base, iov[0].iov_len, &conn->send)) {
    /* The whole request is this head: queued on the ring (io_uring
     * backend), written with the pass's others. Nothing else is written
     * on this connection before its completion (send_done). */
    w = (ssize_t)iov[0].iov_len;
  } else {
    /* One piece (a request without a body, or its last piece) needs no
     * msghdr: send(2) skips the kernel's iovec import. */
    if (n == 1) {
      do w = send(conn->fd, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL);
      while (w < 0 && errno == EINTR);
    } else {
      struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
      do w = sendmsg(conn->fd, &msg, MSG_NOSIGNAL);
      while (w < 0 && errno == EINTR);
    }
    if (w < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return PK_W_AGAIN;
      int e = errno;
      write_failed(loop, conn, e == ECONNRESET ? PK_E_CONN_RESET : PK_E_WRITE, e);
      return PK_W_FAILED;
    }
  }
  req->timings.bytes_sent += (uint64_t)w;
  req->t_last_activity = loop->now;
  return w;
}


/* Plain file body (or file segment): sendfile(2) of `left` bytes of `fd`
 * from `at`, from the file's page cache to the socket. */
static ssize_t put_file_plain(pk__loop *loop, pk__conn *conn, int fd, uint64_t at, uint64_t left) {
  pk__req *req = conn->req;
  for (;;) {
    off_t off = (off_t)at;
    /* At most PK_IO_BUDGET per call: to a reader that drains as fast as we
     * send, one sendfile would otherwise move the whole file before the
     * loop sees anything else (an early 413). */
    ssize_t w = sendfile(conn->fd, fd, &off, left > PK_IO_BUDGET ? PK_IO_BUDGET : (size_t)left);
    if (w > 0) {
      req->timings.bytes_sent += (uint64_t)w;
      req->t_last_activity = loop->now;
      return w;
    }
    if (w == 0) {
      pk__conn_fail(loop, conn, PK_E_FILE_READ, 0); /* the file is shorter than declared */
      return PK_W_FAILED;
    }
    int e = errno;
    if (e == EINTR) continue;
    if (e == EAGAIN || e == EWOULDBLOCK) return PK_W_AGAIN;
    if (e == EPIPE || e == ECONNRESET) write_failed(loop, conn, e == ECONNRESET ? PK_E_CONN_RESET : PK_E_WRITE, e);
    else pk__conn_fail(loop, conn, PK_E_FILE_READ, e);
    return PK_W_FAILED;
  }
}

/* TLS file body (or file segment): pread into a staging buffer, then write
 * it as one record. The caller counts the bytes once the buffer is out. */
static ssize_t put_file_tls(pk__loop *loop, pk__conn *conn, int fd, uint64_t at, uint64_t left) {
  pk__req *req = conn->req;
  if (req->wbuf_off == req->wbuf_len) {
    if (!req->wbuf && !(req->wbuf = pk__rbuf_get(loop))) {
      pk__conn_fail(loop, conn, PK_E_NOMEM, 0);
      return PK_W_FAILED;
    }
    ssize_t r;
    do r = pread(fd, req->wbuf, left < PK_RBUF_SIZE ? (size_t)left : PK_RBUF_SIZE, (off_t)at);
    while (r < 0 && errno == EINTR);
    if (r <= 0) {
      pk__conn_fail(loop, conn, PK_E_FILE_READ, r < 0 ? errno : 0);
      return PK_W_FAILED;
    }
    req->wbuf_len = (size_t)r;
    req->wbuf_off = 0;
  }
  struct iovec iov = {req->wbuf + req->wbuf_off, req->wbuf_len - req->wbuf_off};
  ssize_t w = put_out(loop, conn, &iov, 1);
  if (w > 0) req->wbuf_off += (size_t)w;
  return w;
}

static void ask_for_body(pk__loop *loop, pk__req *req) {
  req->chunk_asked = 1;
  pk_request_handle h = {req, atomic_load_explicit(&req->id, memory_order_relaxed), loop->index};
  loop->eng->cfg.callbacks.on_send_more(req->ctx, h);
}

/* Writes the stream's current piece. Returns bytes, 0 when the piece is
 * done (asking for the next one), PK_W_AGAIN or PK_W_FAILED. */
static ssize_t put_stream(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  struct iovec iov[4];
  int n = pk__body_stream_iov(req, iov);
  if (n) {
    ssize_t w = put_out(loop, conn, iov, n);
    if (w > 0) req->seg_off += (size_t)w;
    return w;
  }
  /* The piece is out. */
  req->body_sent += req->chunk_len;
  req->chunk = NULL;
  req->chunk_len = 0;
  req->seg_off = 0;
  if (req->chunk_last && req->body_kind == PK_BODY_SEGMENTS && req->seg_i < req->nsegs) {
    req->seg_i++;
    pk__body_load_segment(req);
    return 0;
  }
  if (req->chunk_last) {
    req->body_done = 1;
    return 0;
  }
  if (req->body_kind == PK_BODY_STREAM) ask_for_body(loop, req); /* segments ask in put_segments */
  return 0;
}

#define PK_W_IDLE (-3) /* waiting for the caller's next stream piece */

/* A file segment: its chunk header, its bytes (as a PK_BODY_FILE body is
 * written), its CRLF. Returns bytes, 0 when it moved on, or PK_W_xxx. */
static ssize_t put_file_segment(pk__loop *loop, pk__conn *conn, const pk_body_segment *s) {
  pk__req *req = conn->req;
  if (req->seg_phase != 1) {
    static char crlf[] = "\r\n";
    char *frame = req->seg_phase == 0 ? req->chunk_hdr : crlf;
    size_t n = req->seg_phase == 0 ? req->chunk_hdr_len : 2;
    struct iovec iov = {frame + req->seg_off, n - req->seg_off};
    ssize_t w = put_out(loop, conn, &iov, 1);
    if (w > 0 && (req->seg_off += (size_t)w) == n) {
      req->seg_off = 0;
      if (req->seg_phase++ == 2) {
        req->seg_i++;
        pk__body_load_segment(req);
      }
    }
    return w;
  }
  uint64_t sent = req->body_sent - req->seg_base;
  if (sent == s->len) {
    if (req->body_chunked) {
      req->seg_phase = 2;
    } else {
      req->seg_i++;
      pk__body_load_segment(req);
    }
    return 0;
  }
  ssize_t w = conn->tls ? put_file_tls(loop, conn, s->fd, s->offset + sent, s->len - sent)
                        : put_file_plain(loop, conn, s->fd, s->offset + sent, s->len - sent);
  if (w > 0 && !conn->tls) req->body_sent += (uint64_t)w;
  else if (w > 0 && req->wbuf_off == req->wbuf_len) req->body_sent += req->wbuf_len;
  return w;
}

/* Segments: the current one. Returns bytes, 0 when it moved on (or asked
 * for a stream piece), or PK_W_xxx. */
static ssize_t put_segments(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  if (req->seg_i == req->nsegs && !req->chunk_last) {
    req->body_done = 1;
    return 0;
  }
  const pk_body_segment *s = req->seg_i < req->nsegs ? &req->segs[req->seg_i] : NULL;
  if (s && s->kind == PK_SEG_FILE) return put_file_segment(loop, conn, s);
  if (s && s->kind == PK_SEG_STREAM && !req->chunk && !req->chunk_last) {
    if (req->chunk_asked) return PK_W_IDLE;
    ask_for_body(loop, req);
    return 0;
  }
  return put_stream(loop, conn);
}

/* A connection's registration, made once (and renewed by rearm). */
#define PK_CONN_EVENTS (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)

static void conn_write_loop(pk__loop *loop, pk__conn *conn);

/* A connection that used its PK_IO_BUDGET with more to do: re-arming the
 * edge-triggered registration (EPOLL_CTL_MOD) queues a new event for a
 * socket that is ready, so the loop comes back to it after the others, its
 * timers and its queues (and a fast upload sees an early response). False if
 * that failed: go on now instead. */
static bool rearm(pk__loop *loop, pk__conn *conn) {
  return pk__io_rearm(loop, conn->fd, &conn->io, PK_CONN_EVENTS) == 0;
}

/* A head queued on the ring was answered (pk__loop_send). All of it went:
 * nothing to do. A short send, or -EAGAIN, writes the rest with send(2)
 * (no longer queued: a full socket would only come back the same way);
 * an error fails the write as a send(2) would have. */
static void send_done(pk__loop *loop, pk__send *op, int res) {
  pk__conn *conn = PK_CONTAINER_OF(op, pk__conn, send);
  /* TLS: the records are the pk__tls's; what did not go is pending there. */
  if (conn->tls) pk__tls_sealed_sent(conn->tls, res > 0 ? (size_t)res : 0);
  if (res >= 0 && (uint32_t)res == op->len) return;
  pk__req *req = conn->req;
  if (conn->state == PK_CONN_CLOSED || conn->fd < 0 || !req) return; /* closing: settled */
  if (res < 0 && res != -EAGAIN && res != -EWOULDBLOCK) {
    if (!conn->tls) req->timings.bytes_sent -= op->len;
    write_failed(loop, conn, res == -ECONNRESET ? PK_E_CONN_RESET : PK_E_WRITE, -res);
    return;
  }
  if (!conn->tls) { /* the head's plain bytes are sent again from where the kernel stopped */
    size_t unsent = op->len - (res > 0 ? (size_t)res : 0);
    conn->woff -= unsent;
    req->timings.bytes_sent -= unsent;
  }
  op->direct = 1;
  pk__conn_write(loop, conn);
}

void pk__conn_write(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  conn->writing = 1;
  conn_write_loop(loop, conn);
  if (conn->req == req) conn->writing = 0;
}

static void conn_write_loop(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  size_t put = 0;
  for (;;) {
    ssize_t w;
    if (conn->tls && pk__tls_pending(conn->tls)) {
      /* Sealed records the ring's send left (send_done) go before anything else. */
      int detail = 0;
      int st = pk__tls_flush(conn->tls, &detail);
      if (st == PK__TLS_WANT_WRITE) {
        conn->want_write = 1;
        return;
      }
      if (st < 0) {
        write_failed(loop, conn, (pk_error)-st, detail);
        return;
      }
    }
    if (conn->woff < req->head_len) {
      /* The head, and with it as much of an in-memory body as the socket takes. */
      struct iovec iov[2] = {{req->buf + conn->woff, req->head_len - conn->woff}};
      int n = 1;
      if (req->body_kind == PK_BODY_MEMORY && req->body_len && !req->expect_ms && !conn->tls)
        iov[n++] = (struct iovec){(void *)req->body, req->body_len};
      w = put_out(loop, conn, iov, n);
      if (w > 0) {
        size_t head = req->head_len - conn->woff;
        conn->woff += (size_t)w < head ? (size_t)w : head;
        if ((size_t)w > head) req->body_sent += (size_t)w - head;
        if (conn->woff == req->head_len && req->expect_ms) {
          req->expect_wait = 1;
          req->t_expect = loop->now;
        }
      }
    } else if (req->body_done || req->body_stopped || req->expect_wait) {
      break;
    } else if (req->body_kind == PK_BODY_STREAM) {
      if (!req->chunk && !req->chunk_last) {
        if (!req->chunk_asked) {
          ask_for_body(loop, req);
          if (conn->req != req) return;
          continue;
        }
        break; /* waiting for the caller's next piece */
      }
      w = put_stream(loop, conn);
      if (w == 0 && conn->req != req) return;
      if (w == 0) continue;
    } else if (req->body_kind == PK_BODY_SEGMENTS) {
      w = put_segments(loop, conn);
      if (w == 0 && conn->req != req) return;
      if (w == PK_W_IDLE) break;
      if (w == 0) continue;
    } else if (req->body_sent == req->body_len) {
      req->body_done = 1;
      continue;
    } else if (req->body_kind == PK_BODY_FILE) {
      uint64_t left = req->body_len - req->body_sent, at = req->body_offset + req->body_sent;
      w = conn->tls ? put_file_tls(loop, conn, req->body_fd, at, left) : put_file_plain(loop, conn, req->body_fd, at, left);
      if (w > 0 && !conn->tls) req->body_sent += (uint64_t)w;
      else if (w > 0 && req->wbuf_off == req->wbuf_len) req->body_sent += req->wbuf_len;
    } else {
      uint64_t left = req->body_len - req->body_sent;
      struct iovec iov = {(char *)req->body + req->body_sent, left > PK_IO_BUDGET ? PK_IO_BUDGET : (size_t)left};
      w = put_out(loop, conn, &iov, 1);
      if (w > 0) req->body_sent += (uint64_t)w;
    }
    if (w == PK_W_FAILED) return;
    if (w == PK_W_AGAIN) {
      conn->want_write = 1;
      return;
    }
    if (req->progress_ms) pk__req_report_progress(loop, req, false);
    if (w > 0 && (put += (size_t)w) >= PK_IO_BUDGET && rearm(loop, conn)) {
      conn->want_write = 1;
      return;
    }
  }
  conn->want_write = 0;
}

/* 100 Continue did not come in time: send the body anyway (RFC 9110 §10.1.1). */
static void expect_expired(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  req->expect_wait = 0;
  pk__conn_write(loop, conn);
  if (conn->req == req) pk__req_update_timer(loop, req);
}

static void begin_request(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  conn->send.done = send_done;
  conn->send.direct = 0;
  memcpy(req->timings.remote_addr, conn->peer_addr, sizeof conn->peer_addr);
  req->timings.remote_family = conn->peer_family;
  req->timings.remote_port = conn->peer_port;
  req->timings.local_port = conn->local_port;
  conn->woff = 0;
  conn->rlen = 0;
  conn->read_full = 0;
  conn->read_again = 0;
  conn->clean = 0;
  pk__req_begin_exchange(loop, req);
  if (!conn->rbuf) {
    conn->rbuf = pk__rbuf_get(loop);
    if (!conn->rbuf) {
      pk__conn_fail(loop, conn, PK_E_NOMEM, 0);
      return;
    }
    conn->rcap = PK_RBUF_SIZE;
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
    expect_expired(loop, req->conn);
    return;
  }
  if (req->conn) pk__conn_fail(loop, req->conn, (pk_error)which, ETIMEDOUT);
  else pk__req_finish(loop, req, (pk_error)which, ETIMEDOUT);
}

/* ------------------------------------------------- acting on the pool */

static void conn_event(pk__loop *loop, pk__io *io, uint32_t events);
static void race_timer_fire(pk__loop *loop, pk__timer *t);
static void conn_start(pk__loop *loop, pk__conn *conn);
static void dns_answer(pk__dns_query *q, const pk__addrs *addrs, int err);

/* An idle connection past its lifetime closes (the pool armed the timer). */
static void idle_timer_fire(pk__loop *loop, pk__timer *t) {
  pk__conn *conn = PK_CONTAINER_OF(t, pk__conn, idle_timer);
  if (conn->state != PK_CONN_IDLE) return;
  uint64_t expiry = conn->idle_since + (uint64_t)loop->eng->cfg.idle_timeout_ms * 1000000u;
  if (expiry > loop->now) pk__timer_arm(loop, t, expiry);
  else pk__conn_close(loop, conn);
}

static pk__conn *conn_alloc(pk__loop *loop, pk__origin *origin) {
  pk__conn *c = loop->free_conns;
  if (c) loop->free_conns = c->next_free;
  else if (!(c = pk__calloc(1, sizeof *c))) return NULL;
  pk__attempt *extra = c->extra; /* kept with the struct (rarely allocated) */
  memset(c, 0, sizeof *c);
  c->extra = extra;
  c->race_timer.heap_index = PK_TIMER_IDLE;
  c->race_timer.fire = race_timer_fire;
  c->io.handler = conn_event;
  c->fd = -1;
  c->loop = loop;
  c->origin = origin;
  c->reusable = 1;
  c->dnsq.cb = dns_answer;
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
    pk__pool_unreserve(loop, req->origin);
    pk__req_finish(loop, req, PK_E_NOMEM, 0);
    return;
  }
  attach(req, conn);
  req->conn_reused = 0;
  pk__req_set_state(req, PK_REQ_CONNECTING);
  conn_start(loop, conn);
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
  pk__pool_action action;
  pk__conn *conn = NULL;
  if (pk__pool_acquire(loop, req, fresh, &action, &conn) != 0) {
    pk__req_finish(loop, req, PK_E_NOMEM, 0);
    return;
  }
  switch (action) {
  case PK_POOL_REUSE:
    /* Out of epoll since a submitter's wait (pk__conn_wait_inline), it was
     * not watched for the server's close: a request the engine may not
     * send twice looks first. */
    if (conn->disarmed && !req->idempotent && conn_gone(conn)) {
      pk__conn_close(loop, conn);
      pk__conn_dispatch(loop, req, false);
      return;
    }
    run_on(loop, req, conn);
    return;
  case PK_POOL_OPEN: open_for(loop, req); return;
  case PK_POOL_WAIT: return;
  }
}

/* After a clean response: the next waiter of the origin runs on it now,
 * else the pool parks it. */
static void release(pk__loop *loop, pk__conn *conn) {
  conn->req = NULL;
  conn->woff = 0;
  conn->want_write = 0;
  pk__req *next = pk__pool_release(loop, conn);
  if (next) run_on(loop, next, conn);
}

void pk__conn_close(pk__loop *loop, pk__conn *conn) {
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
  if (conn->fd >= 0) {
    /* close() also removes it from the epoll set (we never dup it). */
    close(conn->fd);
    conn->fd = -1;
  }
  if (conn->rbuf) {
    pk__rbuf_put(loop, conn->rbuf, conn->rcap);
    conn->rbuf = NULL;
  }
  /* Out of the pool (idle list, slot); a waiter may get the slot. */
  pk__req *next = pk__pool_forget(loop, conn);
  conn->state = PK_CONN_CLOSED;
  conn->req = NULL;
  loop->open_conns--;
  atomic_fetch_add_explicit(&loop->st_closed, 1, memory_order_relaxed);
  conn->next_free = loop->dead_conns;
  loop->dead_conns = conn;
  if (next) open_for(loop, next);
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

/* -------------------------------------------------------------- connect */

static void handshake_step(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  int detail = 0;
  int r = pk__tls_handshake(conn->tls, &detail);
  if (r == PK__TLS_WANT_READ || r == PK__TLS_WANT_WRITE) return; /* edge-triggered: the next event resumes */
  if (r < 0) {
    pk__conn_fail(loop, conn, (pk_error)-r, detail);
    return;
  }
  req->timings.tls_ns = pk__now_ns() - conn->t_tls_start;
  req->timings.tls_resumed = pk__tls_resumed(conn->tls);
  conn->state = PK_CONN_ACTIVE;
  begin_request(loop, conn);
}

/* The newest resumable session of an origin is kept for its next new
 * connection (pk_tls.c's new-session callback, given to pk__tls_new). */
static void keep_session(void *c, void *session) {
  pk__origin *o = ((pk__conn *)c)->origin;
  pk__tls_session_free(o->tls_session);
  o->tls_session = session;
}

static void tunnel_start(pk__loop *loop, pk__conn *conn);

/* The socket (or the tunnel) leads to the origin: TLS for https, else the request. */
static void ready(pk__loop *loop, pk__conn *conn) {
  if (conn->origin->scheme == PK_SCHEME_HTTPS) {
    pk__origin *o = conn->origin;
    int err = pk__tls_new(pk__engine_tls(loop->eng, o->tls_id), conn->fd, o->host, o->host_len,
                          pk__tls_session_resumable(o->tls_session) ? o->tls_session : NULL, keep_session, conn,
                          &conn->tls);
    if (err) {
      pk__conn_fail(loop, conn, (pk_error)-err, 0);
      return;
    }
    conn->state = PK_CONN_HANDSHAKE;
    conn->t_tls_start = pk__now_ns();
    handshake_step(loop, conn);
    return;
  }
  conn->state = PK_CONN_ACTIVE;
  begin_request(loop, conn);
}

static void connected(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  req->timings.connect_ns = pk__now_ns() - req->t_connect_start;
  pk__dns_release(&conn->dnsq);
  conn->addrs = NULL;
  if (conn->origin->route == PK_ROUTE_TUNNEL) tunnel_start(loop, conn);
  else ready(loop, conn);
}

/* --------------------------------------------------------------- tunnel */

/* CONNECT through an HTTP proxy (RFC 9110 §9.3.6): the request line names
 * the origin as authority-form host:port, then the proxy's 2xx turns the
 * connection into a byte pipe to the origin. The exchange uses the
 * connection's read buffer: the CONNECT head is written from it (a proxy
 * reads it before it answers), then the answer is read into it. */
static void tunnel_write(pk__loop *loop, pk__conn *conn) {
  while (conn->woff < conn->rlen) {
    ssize_t w = send(conn->fd, conn->rbuf + conn->woff, conn->rlen - conn->woff, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return; /* EPOLLOUT resumes */
    if (w < 0) {
      pk__conn_fail(loop, conn, errno == ECONNRESET || errno == EPIPE ? PK_E_PROXY_CLOSED : PK_E_WRITE, errno);
      return;
    }
    conn->woff += (size_t)w;
  }
  if (conn->woff == conn->rlen && conn->woff) {
    conn->rlen = conn->woff = 0; /* written: the buffer now takes the answer */
    conn->want_write = 0;
  }
}

static void tunnel_start(pk__loop *loop, pk__conn *conn) {
  pk__origin *o = conn->origin;
  if (!conn->rbuf) {
    if (!(conn->rbuf = pk__rbuf_get(loop))) {
      pk__conn_fail(loop, conn, PK_E_NOMEM, 0);
      return;
    }
    conn->rcap = PK_RBUF_SIZE;
  }
  bool v6 = memchr(o->host, ':', o->host_len) != NULL;
  int n = snprintf(conn->rbuf, conn->rcap, "CONNECT %s%.*s%s:%u HTTP/1.1\r\nHost: %s%.*s%s:%u\r\n", v6 ? "[" : "",
                   (int)o->host_len, o->host, v6 ? "]" : "", o->port, v6 ? "[" : "", (int)o->host_len, o->host,
                   v6 ? "]" : "", o->port);
  if (n > 0 && o->auth_len)
    n += snprintf(conn->rbuf + n, conn->rcap - (size_t)n, "Proxy-Authorization: %.*s\r\n", (int)o->auth_len,
                  pk__origin_auth(o));
  if (n > 0) n += snprintf(conn->rbuf + n, conn->rcap - (size_t)n, "\r\n");
  if (n <= 0 || (size_t)n >= conn->rcap) {
    pk__conn_fail(loop, conn, PK_E_REQUEST_TOO_LARGE, 0);
    return;
  }
  conn->rlen = (size_t)n;
  conn->woff = 0;
  conn->want_write = 1;
  conn->state = PK_CONN_TUNNEL;
  conn->t_tunnel_start = pk__now_ns();
  tunnel_write(loop, conn);
}

/* The challenge of the CONNECT answer that is failing a request with
 * PK_E_PROXY_AUTH, for pk_proxy_challenge: set just around that request's
 * on_done (which runs inside pk__conn_fail, on this thread), NULL otherwise. */
static _Thread_local const char *tl_challenge;
static _Thread_local size_t tl_challenge_len;

const char *pk_proxy_challenge(size_t *len) {
  if (len) *len = tl_challenge ? tl_challenge_len : 0;
  return tl_challenge;
}

/* Fails the request of `conn` with PK_E_PROXY_AUTH, its on_done able to read
 * the values of the answer's Proxy-Authenticate fields (WWW-Authenticate for
 * a 401), combined into one list with ", " (RFC 9110 §5.3), so that the
 * caller can answer the challenge and submit again. */
static void tunnel_auth_failed(pk__loop *loop, pk__conn *conn, const pk_response_head *head) {
  const char *name = head->status == 407 ? "proxy-authenticate" : "www-authenticate";
  size_t nlen = strlen(name), total = 0;
  for (size_t i = 0; i < head->num_headers; i++)
    if (head->headers[i].name_len == nlen && !strncasecmp(head->headers[i].name, name, nlen))
      total += head->headers[i].value_len + 2;
  char *copy = total ? pk__malloc(total) : NULL; /* the head's bytes go with the connection */
  size_t n = 0;
  for (size_t i = 0; copy && i < head->num_headers; i++) {
    const pk_header *h = &head->headers[i];
    if (h->name_len != nlen || strncasecmp(h->name, name, nlen)) continue;
    if (n) {
      memcpy(copy + n, ", ", 2);
      n += 2;
    }
    memcpy(copy + n, h->value, h->value_len);
    n += h->value_len;
  }
  tl_challenge = copy;
  tl_challenge_len = n;
  pk__conn_fail(loop, conn, PK_E_PROXY_AUTH, head->status);
  tl_challenge = NULL;
  tl_challenge_len = 0;
  pk__free(copy);
}

/* The proxy's answer: 2xx and nothing after it opens the tunnel. */
static void tunnel_read(pk__loop *loop, pk__conn *conn) {
  for (;;) {
    if (conn->rlen == conn->rcap) {
      pk__conn_fail(loop, conn, PK_E_PROXY_PROTOCOL, 0); /* an answer larger than the buffer */
      return;
    }
    ssize_t r = recv(conn->fd, conn->rbuf + conn->rlen, conn->rcap - conn->rlen, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (r <= 0) {
      pk__conn_fail(loop, conn, PK_E_PROXY_CLOSED, r < 0 ? errno : 0);
      return;
    }
    conn->rlen += (size_t)r;
    pk_header hdrs[64];
    pk_response_head head = {.headers = hdrs, .num_headers = 64};
    pk_parse_limits lim = loop->eng->cfg.limits;
    int used = pk_parse_response_head(conn->rbuf, conn->rlen, 0, &head, &lim);
    if (used == PK_PARSE_INCOMPLETE) continue;
    if (used < 0) {
      pk__conn_fail(loop, conn, PK_E_PROXY_PROTOCOL, 0);
      return;
    }
    /* 407, or 401: nothing but the proxy answers CONNECT, and some proxies
     * (tinyproxy) answer wrong credentials with 401. */
    if (head.status == 407 || head.status == 401) {
      tunnel_auth_failed(loop, conn, &head);
      return;
    }
    if (head.status < 200 || head.status > 299) {
      pk__conn_fail(loop, conn, PK_E_PROXY_CONNECT, head.status);
      return;
    }
    if ((size_t)used != conn->rlen) {
      /* The origin speaks only after we do (TLS's ClientHello, or the
       * request): bytes here are the proxy's, and not a tunnel's. */
      pk__conn_fail(loop, conn, PK_E_PROXY_PROTOCOL, 0);
      return;
    }
    conn->rlen = 0;
    conn->req->timings.tunnel_ns = pk__now_ns() - conn->t_tunnel_start;
    ready(loop, conn);
    return;
  }
}

static void tunnel_event(pk__loop *loop, pk__conn *conn, uint32_t events) {
  if (conn->want_write) {
    tunnel_write(loop, conn);
    if (conn->state != PK_CONN_TUNNEL || conn->want_write) return;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) tunnel_read(loop, conn);
}

/* Makes a socket for `addr` (socket(2), or the config's open_socket hook),
 * nonblocking and registered with `io`, in *fd, then connect(2)s it.
 * Returns 1: connected (always so from the hook); 0: in progress; 2: the
 * attempt failed (errno set, the socket closed, *fd -1); -1: the connection
 * was failed here (no socket). */
static int open_fd(pk__loop *loop, pk__conn *conn, pk__io *io, int *fd_out, const struct sockaddr *addr, socklen_t len) {
  const pk_engine_config *cfg = &loop->eng->cfg;
  int fd = cfg->open_socket ? cfg->open_socket(cfg->open_socket_ctx, addr, (unsigned)len)
                            : socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    pk__conn_fail(loop, conn, PK_E_SOCKET, errno);
    return -1;
  }
  if (cfg->open_socket) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
      int e = errno;
      close(fd);
      pk__conn_fail(loop, conn, PK_E_SOCKET, e);
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
    pk__conn_fail(loop, conn, PK_E_SOCKET, e);
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

/* The race is decided: the socket of address `addr` connected. Every other
 * attempt is closed (no descriptor outlives the race); the winner becomes
 * the connection's socket. */
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
      pk__conn_fail(loop, conn, PK_E_SOCKET, errno);
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
  else if (conn->in_flight == 0) pk__conn_fail(loop, conn, connect_error(err), err);
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
  if (conn->in_flight == 0) pk__conn_fail(loop, conn, connect_error(conn->last_errno), conn->last_errno);
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
    pk__conn_fail(loop, conn, (pk_error)-err, addrs ? addrs->gai_error : 0);
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
  pk__conn_fail(loop, conn, unix_connect_error(e), e);
}

static void conn_start(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  pk__origin *o = conn->origin;
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

static void connect_event(pk__loop *loop, pk__conn *conn) {
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
    pk__conn_fail(loop, conn, unix_connect_error(err), err);
    return;
  }
  close(conn->fd);
  conn->fd = -1;
  attempt_failed(loop, conn, err);
}

/* ----------------------------------------------------------------- read */

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
      if (head.status == 100 && req->expect_wait) {
        /* The server wants the body (RFC 9110 §15.2.1). */
        req->expect_wait = 0;
        pk__conn_write(loop, conn);
        if (conn->req != req) return true;
      }
      continue;
    }
    if (!req->body_done && !req->body_stopped) {
      /* A final answer before the whole body went out (an early 413, or a
       * refusal after Expect): stop sending; the connection cannot carry
       * another request, since the server will not read the rest. */
      req->body_stopped = 1;
      req->expect_wait = 0;
      conn->want_write = 0;
      conn->reusable = 0;
    }
    int err = pk_response_body_info(&head, req->is_head, &req->body_info);
    if (err) {
      pk__conn_fail(loop, conn, -err, 0);
      return true;
    }
    if (req->body_info.framing == PK_FRAMING_LENGTH && req->max_body && !req->use_sink &&
        req->body_info.content_length > req->max_body) {
      pk__conn_fail(loop, conn, PK_E_BODY_TOO_LARGE, 0);
      return true;
    }
    if (eng->cfg.decode_content && req->body_info.framing != PK_FRAMING_NONE) {
      err = pk__req_setup_decoding(loop, req, &head);
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
    req->content_length = cl;
    loop->finished_in_pass = true; /* a streamed response resumes its caller at the head */
    int answer = eng->cfg.callbacks.on_head ? eng->cfg.callbacks.on_head(req->ctx, &head, conn->rbuf, (size_t)r, cl)
                                            : PK_HEAD_CONTINUE;
    if (answer == PK_HEAD_ABORT) {
      pk__conn_fail(loop, conn, PK_E_CANCELLED, 0);
      return true;
    }
    req->divert = answer == PK_HEAD_DIVERT;
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
    int err = pk__req_deliver_body(req, p, deliver);
    if (err) {
      pk__conn_fail(loop, conn, -err, err == -PK_E_FILE_WRITE ? req->sink_errno : 0);
      return true;
    }
    if (req->progress_ms && !done) pk__req_report_progress(loop, req, false);
  }
  if (done) {
    int err = pk__req_finish_decoding(req);
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
  int err = pk__req_finish_decoding(req);
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

/* The connection read its budget with bytes still waiting (see rearm). */
static bool read_later(pk__loop *loop, pk__conn *conn) {
  if (!rearm(loop, conn)) return false;
  conn->read_again = 1; /* also when only OpenSSL holds the bytes (the event may be EPOLLOUT alone) */
  return true;
}

static void conn_read_tls(pk__loop *loop, pk__conn *conn) {
  size_t got = 0;
  for (;;) {
    pk__req *req = conn->req;
    if (!req || conn->state != PK_CONN_ACTIVE || req->paused) return;
    size_t space = conn->rcap - conn->rlen;
    int detail = 0;
    size_t n;
    int st = pk__tls_read(conn->tls, conn->rbuf + conn->rlen, space, &n, &detail);
    if (st == PK__TLS_OK) {
      if (received(loop, conn, n, space)) return;
      /* OpenSSL may hold decrypted bytes epoll cannot see: read on until it
       * has none and the socket itself was read dry. A FIN that came with
       * the last record was reported by this very event (hup_seen) and will
       * not be again: read on to meet it, as the plain path does. */
      if (pk__tls_drained(conn->tls) && !conn->hup_seen) return;
      if ((got += n) >= PK_IO_BUDGET && read_later(loop, conn)) return;
      continue;
    }
    if (st == PK__TLS_WANT_READ || st == PK__TLS_WANT_WRITE) return;
    if (st == PK__TLS_CLOSED || st == PK__TLS_EOF_UNCLEAN) {
      on_eof(loop, conn, st == PK__TLS_EOF_UNCLEAN);
      return;
    }
    pk__conn_fail(loop, conn, (pk_error)-st, detail);
    return;
  }
}

/* An idle TLS connection became readable: TLS 1.3 session tickets arrive
 * like this and leave it fit for reuse; application data or a close do not. */
static void idle_tls_event(pk__loop *loop, pk__conn *conn) {
  char c;
  int detail = 0;
  size_t n;
  if (pk__tls_read(conn->tls, &c, 1, &n, &detail) == PK__TLS_WANT_READ) return; /* a ticket or other handshake message: still fit */
  pk__conn_close(loop, conn);
}

/* A body with much still to come (plain connections): reading it 256 KiB
 * at a time instead of 16 KiB cuts syscalls, callbacks and sink writes
 * sixteen-fold; that is how a download outruns a 16 KiB-read client. */
static bool large_body(const pk__req *req) {
  if (!req->got_head) return false;
  switch (req->body_info.framing) {
  case PK_FRAMING_LENGTH: return req->remaining >= 4 * PK_RBUF_SIZE;
  case PK_FRAMING_CHUNKED:
  case PK_FRAMING_CLOSE: return req->body_wire >= 4 * PK_RBUF_SIZE;
  default: return false;
  }
}

static void use_big_buffer(pk__loop *loop, pk__conn *conn) {
  char *big = loop->bigbuf;
  loop->bigbuf = NULL;
  if (!big && !(big = pk__malloc(PK_BIGBUF_SIZE))) return; /* the small one still works */
  pk__rbuf_put(loop, conn->rbuf, conn->rcap);
  conn->rbuf = big;
  conn->rcap = PK_BIGBUF_SIZE;
}

void pk__conn_read(pk__loop *loop, pk__conn *conn, uint32_t events) {
  if (conn->tls) {
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) conn->hup_seen = 1;
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) conn->reusable = 0;
    conn_read_tls(loop, conn);
    return;
  }
  /* The peer already hung up: whatever is left to read, this connection
   * cannot serve another request (and no later edge would tell us, so a
   * paused read remembers it). */
  if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    conn->hup_seen = 1;
    conn->reusable = 0;
  }
  bool hup = conn->hup_seen;
  size_t got = 0;
  for (;;) {
    pk__req *req = conn->req;
    if (!req || conn->state != PK_CONN_ACTIVE || req->paused) return;
    if (conn->rlen == 0 && conn->rcap == PK_RBUF_SIZE && large_body(req)) use_big_buffer(loop, conn);
    size_t space = conn->rcap - conn->rlen;
    /* recv(2), not read(2): on a socket it skips the file layer's
     * position lock, permission hook and fsnotify (about 0.1 µs a call). */
    ssize_t n = recv(conn->fd, conn->rbuf + conn->rlen, space, 0);
    if (n > 0) {
      if (received(loop, conn, (size_t)n, space)) return;
      /* A short read drained the socket; edge-triggered epoll reports new data. */
      if ((size_t)n < space && !hup) return;
      if ((got += (size_t)n) >= PK_IO_BUDGET && read_later(loop, conn)) return;
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

/* The connection's handler: the loop calls it through conn->io. */
static void conn_event(pk__loop *loop, pk__io *io, uint32_t events) {
  pk__conn *conn = PK_CONTAINER_OF(io, pk__conn, io);
  switch (conn->state) {
  case PK_CONN_CONNECTING:
    if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) connect_event(loop, conn);
    return;
  case PK_CONN_TUNNEL:
    tunnel_event(loop, conn, events);
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
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) pk__conn_close(loop, conn);
    /* A readable event may be stale: one the loop took from epoll_wait for
     * an answer that a submitter's wait then read (pk__conn_wait_inline).
     * Only a socket that is readable now is a reason to close. */
    else if ((events & EPOLLIN) && conn_gone(conn)) pk__conn_close(loop, conn);
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

/* ------------------------------------------------- the submitter's wait */

/* The socket goes back into the loop's epoll set (EPOLL_CTL_MOD with the
 * usual mask: an edge-triggered registration reports what is ready now, so
 * nothing that arrived while it was out is missed). */
static void conn_arm(pk__loop *loop, pk__conn *conn) {
  if (!conn->disarmed) return;
  conn->disarmed = 0;
  if (loop->disarmed == conn) loop->disarmed = NULL;
  if (conn->state != PK_CONN_CLOSED && conn->fd >= 0) (void)pk__io_rearm(loop, conn->fd, &conn->io, PK_CONN_EVENTS);
}

void pk__conn_arm_disarmed(pk__loop *loop) {
  if (loop->disarmed) conn_arm(loop, loop->disarmed);
}

void pk__conn_rearm_disarmed(pk__loop *loop) {
  pk__conn_arm_disarmed(loop);
  while (loop->deferred_opens) {
    pk__req *req = loop->deferred_opens;
    loop->deferred_opens = req->qnext;
    req->qnext = NULL;
    open_for(loop, req);
  }
}

/* A request written by a direct pass (pk_engine.c) on a pooled connection
 * of a loop with nothing else in flight: the submitting thread waits for
 * the answer on the socket itself (ppoll, up to wait_ns, the first
 * inline_spin_us of it busy-polled) and runs the
 * connection's event function there, so the response is parsed, the
 * request finished and its continuation resumed on the thread that will
 * run the caller next: no wake-up of the loop thread, one thread switch
 * per request instead of two. The socket is out of the loop's epoll set
 * meanwhile (a readable socket would wake the loop for nothing); an
 * eventfd wake-up (work for the loop: a submission, a cancel, a post) ends
 * the wait at once. A request still unanswered then, or one whose
 * connection needs the loop (a write that blocks, a body still to send),
 * goes back to the loop; a connection back in the pool stays out until
 * the loop's next pass, so the next direct pass needs no epoll_ctl. */
int pk__conn_wait_inline(pk__loop *loop, pk__req *req, uint64_t id, uint64_t wait_ns) {
  pk__conn *conn = req->conn;
  if (!conn || conn->req != req || conn->state != PK_CONN_ACTIVE || conn->want_write || !req->body_done ||
      req->expect_wait || conn->fd < 0)
    return PK__WAIT_SKIPPED;
  if (loop->disarmed && loop->disarmed != conn) conn_arm(loop, loop->disarmed);
  if (!conn->disarmed) {
    if (pk__io_rearm(loop, conn->fd, &conn->io, 0) != 0) return PK__WAIT_SKIPPED;
    conn->disarmed = 1;
    loop->disarmed = conn;
  }
  int outcome = PK__WAIT_ANSWERED;
  uint64_t start = pk__now_ns(), end = start + wait_ns;
  /* Busy-poll the first inline_spin_us of the wait, unless a recent spin
   * found nothing (the header says why and how long it backs off). */
  uint64_t spin_end = start;
  if (loop->eng->cfg.inline_spin_us) {
    if (loop->spin_skip) loop->spin_skip--;
    else spin_end = start + (uint64_t)loop->eng->cfg.inline_spin_us * 1000u;
    if (spin_end > end) spin_end = end;
  }
  bool spun = false, missed = false;
  for (;;) {
    uint32_t events = 0;
    if (!conn->read_again) { /* bytes OpenSSL already holds need no poll */
      uint64_t now = pk__now_ns();
      struct pollfd p[2] = {{.fd = conn->fd, .events = POLLIN | POLLRDHUP}, {.fd = loop->evfd, .events = POLLIN}};
      int n = 0;
      if (now < spin_end) {
        spun = true;
        do {
          struct timespec zero = {0, 0};
          n = ppoll(p, 2, &zero, NULL);
        } while (n == 0 && (now = pk__now_ns()) < spin_end);
        if (n == 0) missed = true;
      }
      if (n == 0) {
        struct timespec ts = {.tv_sec = (time_t)((end - now) / 1000000000u), .tv_nsec = (long)((end - now) % 1000000000u)};
        n = now >= end ? 0 : ppoll(p, 2, &ts, NULL);
      }
      if (n == 0) outcome = PK__WAIT_TIMED_OUT;
      if (n <= 0 || p[1].revents) break; /* time is up, or the loop has work */
      if (p[0].revents & POLLIN) events |= EPOLLIN;
      if (p[0].revents & POLLRDHUP) events |= EPOLLRDHUP;
      if (p[0].revents & POLLHUP) events |= EPOLLHUP;
      if (p[0].revents & POLLERR) events |= EPOLLERR;
    } else if (pk__now_ns() >= end) {
      break;
    }
    loop->now = pk__now_ns();
    conn_event(loop, &conn->io, events);
    /* Finished (its id is cleared), or no longer this connection's. */
    if (atomic_load_explicit(&req->id, memory_order_relaxed) != id || conn->req != req) break;
    if (conn->state != PK_CONN_ACTIVE || conn->want_write) break;
    /* The head is in and the body is not: the rest is the loop's (a
     * streamed response resumes its caller at the head, which this pass's
     * end does; a large body is not read on the caller's thread). */
    if (req->got_head || req->paused) break;
  }
  /* Pooled again: it stays out until the loop's next pass. Anything else
   * is the loop's to watch now. */
  if (conn->state != PK_CONN_IDLE) conn_arm(loop, conn);
  bool answered = atomic_load_explicit(&req->id, memory_order_relaxed) != id;
  if (answered) atomic_fetch_add_explicit(&loop->st_inline, 1, memory_order_relaxed);
  if (missed) {
    /* The server is slower than the spin: the next waits sleep at once. */
    atomic_fetch_add_explicit(&loop->st_spin_misses, 1, memory_order_relaxed);
    if (loop->spin_backoff < 16) loop->spin_backoff = 16;
    loop->spin_skip = loop->spin_backoff;
    if (loop->spin_backoff < 1024) loop->spin_backoff *= 2;
  } else if (spun && answered) {
    atomic_fetch_add_explicit(&loop->st_spin_hits, 1, memory_order_relaxed);
    loop->spin_backoff = 16;
  }
  return outcome;
}
