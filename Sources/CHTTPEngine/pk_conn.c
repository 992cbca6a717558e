/* One connection's life: connect, write a request, read and frame its
 * response, then back to the pool or closed. Sockets are registered once,
 * edge-triggered, for reading and writing, so a warm request costs one write
 * and one read and no epoll_ctl. */
#include "pk_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <unistd.h>

#define PK_HEADERS_ON_STACK 256

/* ---------------------------------------------------------- read buffers */

char *pk__rbuf_get(pk__loop *loop) {
  if (loop->rbufs_len) return loop->rbufs[--loop->rbufs_len];
  return pk__malloc(PK_RBUF_SIZE);
}

void pk__rbuf_put(pk__loop *loop, char *buf, size_t cap) {
  if (cap == PK_BIGBUF_SIZE && !loop->bigbuf) {
    loop->bigbuf = buf; /* one kept: large bodies come one after another */
    return;
  }
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
  /* A body write failed and then no response came: the write is the story. */
  if (req->write_error && !req->got_head &&
      (err == PK_E_CONN_RESET || err == PK_E_CLOSED_BEFORE_RESPONSE || err == PK_E_READ)) {
    err = req->write_error;
    sys_errno = req->write_errno;
  }
  bool may_retry = retryable(err) && req->conn_reused && req->timings.bytes_received == 0 &&
                   req->idempotent && !req->retried;
  /* A one-shot body cannot be sent again: say so, so the caller can report why. */
  if (may_retry && req->one_shot) req->timings.retry_refused = 1;
  if (may_retry && !req->one_shot) {
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

/* The request goes out as its head, then its body from one of three sources
 * (pk_body_kind). Plain connections write head and an in-memory body in one
 * sendmsg (writev semantics) and file bodies with sendfile(2); TLS has no
 * writev, so pieces go one at a time as large records. MSG_NOSIGNAL
 * on every send, and SIGPIPE blocked on the loop threads for sendfile and
 * sink writes (loop_main): a peer that closed early yields EPIPE, not a
 * process-killing SIGPIPE. */

#define PK_W_AGAIN (-1)  /* the socket is full: wait for EPOLLOUT */
#define PK_W_FAILED (-2) /* the request ended (or went on to read its response) */

static void conn_read(pk__loop *loop, pk__conn *conn, uint32_t events);

/* A body write failed. The server may have answered and closed first (an
 * early 413): read what it sent before giving up, and report the write error
 * only if no response came. */
static void write_failed(pk__loop *loop, pk__conn *conn, int err, int sys_errno) {
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
  conn_read(loop, conn, EPOLLIN | EPOLLRDHUP);
}

/* One write of up to `n` pieces. Returns the bytes written, PK_W_AGAIN or PK_W_FAILED. */
static ssize_t put_out(pk__loop *loop, pk__conn *conn, struct iovec *iov, int n) {
  pk__req *req = conn->req;
  ssize_t w;
  if (conn->tls) {
    int detail = 0;
    w = pk__tls_write(conn->tls, iov[0].iov_base, iov[0].iov_len, &detail);
    if (w == PK_TLS_WANT_WRITE || w == PK_TLS_WANT_READ) return PK_W_AGAIN;
    if (w < 0) {
      write_failed(loop, conn, (int)-w, detail);
      return PK_W_FAILED;
    }
  } else {
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    do w = sendmsg(conn->fd, &msg, MSG_NOSIGNAL);
    while (w < 0 && errno == EINTR);
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

static void report_progress(pk__loop *loop, pk__req *req, bool final);

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

/* Stream body: the current piece with its chunk framing (RFC 9112 §7.1),
 * from seg_off on. Returns the number of iovecs. */
static int stream_iov(pk__req *req, struct iovec *iov) {
  static char crlf[] = "\r\n", last_chunk[] = "0\r\n\r\n";
  struct iovec all[4];
  int n = 0;
  if (req->chunk_len) {
    if (req->body_chunked) all[n++] = (struct iovec){req->chunk_hdr, req->chunk_hdr_len};
    all[n++] = (struct iovec){(void *)req->chunk, req->chunk_len};
    if (req->body_chunked) all[n++] = (struct iovec){crlf, 2};
  }
  /* The last chunk ends a stream body, or segments once all are out. */
  if (req->chunk_last && req->body_chunked && (req->body_kind == PK_BODY_STREAM || req->seg_i == req->nsegs))
    all[n++] = (struct iovec){last_chunk, 5};
  size_t off = req->seg_off;
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (off >= all[i].iov_len) {
      off -= all[i].iov_len;
      continue;
    }
    iov[m].iov_base = (char *)all[i].iov_base + off;
    iov[m++].iov_len = all[i].iov_len - off;
    off = 0;
  }
  return m;
}

/* The current piece: data[0..len), the last of its stream (or segment) when
 * `last`; with chunked framing its chunk header is made here. */
static void set_piece(pk__req *req, const void *data, size_t len, bool last) {
  req->chunk = data ? data : "";
  req->chunk_len = len;
  req->chunk_last = last;
  req->seg_off = 0;
  if (len && req->body_chunked) {
    static const char hex[] = "0123456789abcdef";
    char tmp[16];
    int n = 0;
    size_t v = len;
    while (v) {
      tmp[n++] = hex[v & 15];
      v >>= 4;
    }
    int k = 0;
    while (n) req->chunk_hdr[k++] = tmp[--n];
    req->chunk_hdr[k++] = '\r';
    req->chunk_hdr[k++] = '\n';
    req->chunk_hdr_len = (uint8_t)k;
  }
}

/* Segments: makes segments[seg_i] (or the next one that is not empty: a
 * zero-size chunk would end the body) the current one. A memory segment is
 * one piece, already there; a stream waits for on_send_more's answers; a
 * file is written by put_file_segment. Past the last one, chunked framing
 * still owes the last chunk: an empty last piece. */
static void load_segment(pk__req *req) {
  req->chunk = NULL;
  req->chunk_len = req->seg_off = 0;
  req->chunk_last = req->chunk_asked = 0;
  req->body_provided = 0;
  req->seg_base = req->body_sent;
  while (req->seg_i < req->nsegs && req->segs[req->seg_i].kind != PK_SEG_STREAM && req->segs[req->seg_i].len == 0)
    req->seg_i++;
  if (req->seg_i == req->nsegs) {
    if (req->body_chunked) set_piece(req, NULL, 0, true);
    return;
  }
  const pk_body_segment *s = &req->segs[req->seg_i];
  if (s->kind == PK_SEG_MEMORY) set_piece(req, s->data, (size_t)s->len, true);
  if (s->kind == PK_SEG_FILE) {
    req->seg_phase = req->body_chunked ? 0 : 1;
    if (req->body_chunked) set_piece(req, NULL, (size_t)s->len, false); /* for its chunk header */
    req->chunk = NULL;
    req->chunk_len = 0;
  }
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
  int n = stream_iov(req, iov);
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
    load_segment(req);
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
        load_segment(req);
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
      load_segment(req);
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
  struct epoll_event ev = {.events = PK_CONN_EVENTS, .data.ptr = conn};
  return epoll_ctl(loop->epfd, EPOLL_CTL_MOD, conn->fd, &ev) == 0;
}

static void conn_write(pk__loop *loop, pk__conn *conn) {
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
    if (req->progress_ms) report_progress(loop, req, false);
    if (w > 0 && (put += (size_t)w) >= PK_IO_BUDGET && rearm(loop, conn)) {
      conn->want_write = 1;
      return;
    }
  }
  conn->want_write = 0;
}

/* Loop thread: the next piece of a stream body (see the header). */
int pk_request_send_body(pk_engine *eng, pk_request_handle h, const void *data, size_t len, int last) {
  pk__req *req = h.req;
  if (!req || !pk__on_loop_thread(eng)) return -PK_E_INVALID_ARGUMENT;
  if (atomic_load_explicit(&req->id, memory_order_acquire) != h.id || req->state != PK_REQ_ACTIVE)
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
  set_piece(req, data, len, last != 0);
  /* Inside conn_write (on_send_more answered at once) its loop goes on by itself. */
  if (conn->state == PK_CONN_ACTIVE && !req->body_stopped && !conn->want_write && !conn->writing) {
    conn_write(req->loop, conn);
    if (conn->req == req) pk__req_update_timer(req->loop, req);
  }
  return 0;
}

/* 100 Continue did not come in time: send the body anyway (RFC 9110 §10.1.1). */
void pk__conn_expect_expired(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  req->expect_wait = 0;
  conn_write(loop, conn);
  if (conn->req == req) pk__req_update_timer(loop, req);
}

void pk__conn_begin_request(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  conn->woff = 0;
  conn->rlen = 0;
  conn->read_full = 0;
  conn->read_again = 0;
  conn->clean = 0;
  req->last_len = 0;
  req->got_head = 0;
  req->interim = 0;
  req->t_last_activity = loop->now;
  req->body_sent = req->body_provided = 0;
  req->body_done = req->body_stopped = req->expect_wait = req->chunk_asked = req->chunk_last = 0;
  req->chunk = NULL;
  req->chunk_len = req->seg_off = 0;
  req->wbuf_len = req->wbuf_off = 0;
  req->seg_i = 0;
  if (req->body_kind == PK_BODY_SEGMENTS) load_segment(req); /* again from the start on a retry */
  req->write_error = req->write_errno = 0;
  req->divert = req->paused = 0;
  req->sink_errno = 0;
  req->body_wire = 0;
  req->content_length = -1;
  req->t_progress = loop->now;
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
    const pk_engine_config *cfg = &loop->eng->cfg;
    int fd = cfg->open_socket ? cfg->open_socket(cfg->open_socket_ctx, &ss, (unsigned)len)
                              : socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      pk__conn_fail(loop, conn, PK_E_SOCKET, errno);
      return;
    }
    if (cfg->open_socket) {
      int flags = fcntl(fd, F_GETFL);
      if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        int e = errno;
        close(fd);
        pk__conn_fail(loop, conn, PK_E_SOCKET, e);
        return;
      }
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct epoll_event ev = {.events = PK_CONN_EVENTS, .data.ptr = conn};
    if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
      int e = errno;
      close(fd);
      pk__conn_fail(loop, conn, PK_E_SOCKET, e);
      return;
    }
    conn->fd = fd;
    if (cfg->open_socket || connect(fd, (struct sockaddr *)&ss, len) == 0) {
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
              !conn->want_write && req->body_done;
  if (keep && conn->read_full) {
    /* The response ended exactly where a full read did: bytes (or an EOF)
     * may still wait in the socket, and edge-triggered epoll will not report
     * them again. Rare, so a peek is cheap insurance against pooling them. */
    char c;
    ssize_t r = recv(conn->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) keep = false;
  }
  pk__charge_wire(conn, req);
  if (req->progress_ms) report_progress(loop, req, true);
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
  if (n == 1 && req->body_info.framing == PK_FRAMING_LENGTH) pk_inflate_expect(req->dec[0], req->body_info.content_length);
  return 0;
}

/* Payload bytes of the current piece already written (body_sent counts a
 * piece once it is all out): a large in-memory part shows progress too. */
static uint64_t piece_sent(const pk__req *req) {
  if (!req->chunk || !req->chunk_len) return 0;
  size_t hdr = req->body_chunked ? req->chunk_hdr_len : 0;
  size_t n = req->seg_off > hdr ? req->seg_off - hdr : 0;
  return n < req->chunk_len ? n : req->chunk_len;
}

/* Progress at most once per interval (and a last time when complete), so a
 * fast transfer does not cost a callback per read. The clock is read here,
 * not taken from the loop pass: a pass that reads a fast body for a while
 * (up to PK_IO_BUDGET per connection, several connections) still reports
 * on time. */
static void report_progress(pk__loop *loop, pk__req *req, bool final) {
  uint64_t now = pk__now_ns();
  if (!final && now - req->t_progress < (uint64_t)req->progress_ms * 1000000u) return;
  req->t_progress = now;
  pk_callbacks *cb = &loop->eng->cfg.callbacks;
  if (!cb->on_progress) return;
  pk_progress p = {
      .body_sent = req->body_sent + piece_sent(req),
      .body_send_total = req->body_chunked ? -1 : (int64_t)req->body_len,
      .body_received = req->body_wire,
      .body_receive_total = req->content_length,
      .body_decoded = req->body_bytes,
      .decoding = req->ndec > 0,
      .final = final,
      .segment = req->seg_i,
      .segment_sent = req->body_kind == PK_BODY_SEGMENTS ? req->body_sent + piece_sent(req) - req->seg_base : 0,
  };
  cb->on_progress(req->ctx, &p);
}

/* The last stage: decoded (or plain) body bytes to the sink file or the caller. */
static int body_out(void *ctx, const char *data, size_t n) {
  pk__req *req = ctx;
  req->body_bytes += n;
  if (req->use_sink && !req->divert) {
    /* A regular file never blocks the way a socket does; a full disk is an
     * error of its own, with its errno. */
    while (n) {
      ssize_t w = write(req->sink_fd, data, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        req->sink_errno = w < 0 ? errno : ENOSPC;
        return -PK_E_FILE_WRITE;
      }
      data += w;
      n -= (size_t)w;
    }
    return 0;
  }
  if (req->max_body && req->body_bytes > req->max_body) return -PK_E_BODY_TOO_LARGE;
  pk_engine *eng = req->loop->eng;
  int answer = eng->cfg.callbacks.on_body ? eng->cfg.callbacks.on_body(req->ctx, data, n) : PK_BODY_CONTINUE;
  if (answer & PK_BODY_PAUSE) req->paused = 1;
  if (answer & PK_BODY_NOTIFY) req->loop->finished_in_pass = true;
  return 0;
}

static int inner_out(void *ctx, const char *data, size_t n) {
  pk__req *req = ctx;
  return pk_inflate_feed(req->dec[1], data, n, body_out, req);
}

static int deliver_body(pk__req *req, const char *data, size_t n) {
  req->body_wire += n;
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
      if (head.status == 100 && req->expect_wait) {
        /* The server wants the body (RFC 9110 §15.2.1). */
        req->expect_wait = 0;
        conn_write(loop, conn);
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
    int err = deliver_body(req, p, deliver);
    if (err) {
      pk__conn_fail(loop, conn, -err, err == -PK_E_FILE_WRITE ? req->sink_errno : 0);
      return true;
    }
    if (req->progress_ms && !done) report_progress(loop, req, false);
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
    ssize_t n = pk__tls_read(conn->tls, conn->rbuf + conn->rlen, space, &detail);
    if (n > 0) {
      if (received(loop, conn, (size_t)n, space)) return;
      /* OpenSSL may hold decrypted bytes epoll cannot see: read on until it
       * has none and the socket itself was read dry. */
      if (pk__tls_drained(conn->tls)) return;
      if ((got += (size_t)n) >= PK_IO_BUDGET && read_later(loop, conn)) return;
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

static void conn_read(pk__loop *loop, pk__conn *conn, uint32_t events) {
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
    ssize_t n = read(conn->fd, conn->rbuf + conn->rlen, space);
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
    if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) || conn->read_again) {
      conn->read_again = 0;
      conn_read(loop, conn, events);
    }
    return;
  default:
    return;
  }
}

/* Loop thread: a paused body may flow again (see the header). */
int pk_request_resume_read(pk_engine *eng, pk_request_handle h) {
  pk__req *req = h.req;
  if (!req || !pk__on_loop_thread(eng)) return -PK_E_INVALID_ARGUMENT;
  if (atomic_load_explicit(&req->id, memory_order_acquire) != h.id || req->state != PK_REQ_ACTIVE)
    return -PK_E_CANCELLED;
  if (!req->paused) return 0;
  req->paused = 0;
  req->t_last_activity = pk__now_ns();
  pk__conn *conn = req->conn;
  if (conn && conn->state == PK_CONN_ACTIVE) {
    /* Edge-triggered: bytes that arrived while paused raise no new event. */
    conn_read(req->loop, conn, 0);
    if (conn->req == req) pk__req_update_timer(req->loop, req);
  }
  return 0;
}
