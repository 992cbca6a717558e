/* Writing a request onto its connection: the head, then the body from one
 * of its sources (memory, a file, the caller's stream pieces, segments),
 * plain or through TLS, by send(2), sendmsg(2), sendfile(2) or the loop's
 * io_uring ring; and the 100-continue wait. */
#include "pk_conn.h"

#include <errno.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <unistd.h>

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
    pk__conn_up_fail(loop, conn, err, sys_errno);
    return;
  }
  req->write_error = err;
  req->write_errno = sys_errno;
  req->body_stopped = 1;
  conn->want_write = 0;
  conn->reusable = 0;
  conn->hup_seen = 1;
  conn->up->read(loop, conn, EPOLLIN | EPOLLRDHUP);
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
      pk__conn_up_fail(loop, conn, PK_E_FILE_READ, 0); /* the file is shorter than declared */
      return PK_W_FAILED;
    }
    int e = errno;
    if (e == EINTR) continue;
    if (e == EAGAIN || e == EWOULDBLOCK) return PK_W_AGAIN;
    if (e == EPIPE || e == ECONNRESET) write_failed(loop, conn, e == ECONNRESET ? PK_E_CONN_RESET : PK_E_WRITE, e);
    else pk__conn_up_fail(loop, conn, PK_E_FILE_READ, e);
    return PK_W_FAILED;
  }
}

/* TLS file body (or file segment): pread into a staging buffer, then write
 * it as one record. The caller counts the bytes once the buffer is out. */
static ssize_t put_file_tls(pk__loop *loop, pk__conn *conn, int fd, uint64_t at, uint64_t left) {
  pk__req *req = conn->req;
  if (req->wbuf_off == req->wbuf_len) {
    if (!req->wbuf && !(req->wbuf = pk__rbuf_get(loop, PK_RBUF_SIZE))) {
      pk__conn_up_fail(loop, conn, PK_E_NOMEM, 0);
      return PK_W_FAILED;
    }
    ssize_t r;
    do r = pread(fd, req->wbuf, left < PK_RBUF_SIZE ? (size_t)left : PK_RBUF_SIZE, (off_t)at);
    while (r < 0 && errno == EINTR);
    if (r <= 0) {
      pk__conn_up_fail(loop, conn, PK_E_FILE_READ, r < 0 ? errno : 0);
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

static void conn_write_loop(pk__loop *loop, pk__conn *conn);

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
    if (w > 0 && (put += (size_t)w) >= PK_IO_BUDGET && pk__conn_rearm(loop, conn)) {
      conn->want_write = 1;
      return;
    }
  }
  conn->want_write = 0;
}

/* 100 Continue did not come in time: send the body anyway (RFC 9110 §10.1.1). */
void pk__conn_expect_expired(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  req->expect_wait = 0;
  pk__conn_write(loop, conn);
  if (conn->req == req) pk__req_update_timer(loop, req);
}

void pk__conn_write_begin(pk__conn *conn) {
  conn->send.done = send_done;
  conn->send.direct = 0;
  conn->woff = 0;
}
