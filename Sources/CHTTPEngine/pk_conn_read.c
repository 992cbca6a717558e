/* Reading a response off its connection and framing it into the request:
 * recv(2) or TLS records into the connection's buffer, the head parsed
 * (interim responses skipped, the head handed to on_head), the body framed
 * by its length, chunks or the close, and delivered (pk_request.c). */
#include "pk_conn.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#define PK_HEADERS_ON_STACK 256

/* What a step of process() says. */
enum {
  STEP_ON,    /* go on */
  STEP_MORE,  /* the buffer holds no more to act on: read again */
  STEP_ENDED, /* the request ended (completed or failed) */
};

/* A head larger than the buffer: grow it (a small one to PK_RBUF_SIZE,
 * then doubling), up to the head limit. */
static int grow_for_head(pk__loop *loop, pk__conn *conn, const pk_parse_limits *lim) {
  size_t want = conn->rcap < PK_RBUF_SIZE ? PK_RBUF_SIZE : conn->rcap * 2;
  size_t ncap = want > lim->max_head_bytes ? lim->max_head_bytes : want;
  if (ncap <= conn->rcap) {
    pk__conn_up_fail(loop, conn, PK_E_HEAD_TOO_LARGE, 0);
    return STEP_ENDED;
  }
  char *nb = pk__rbuf_get(loop, ncap);
  if (!nb) {
    pk__conn_up_fail(loop, conn, PK_E_NOMEM, 0);
    return STEP_ENDED;
  }
  memcpy(nb, conn->rbuf, conn->rlen);
  pk__rbuf_put(loop, conn->rbuf, conn->rcap);
  conn->rbuf = nb;
  conn->rcap = ncap;
  return STEP_MORE;
}

/* An interim response (RFC 9110 §15.2), `used` bytes: skipped, a bounded
 * number; a 100 Continue releases a body that waits for it. */
static int interim(pk__loop *loop, pk__conn *conn, int status, size_t used) {
  pk__req *req = conn->req;
  if (status == 101) {
    pk__conn_up_fail(loop, conn, PK_E_UNEXPECTED_UPGRADE, 0);
    return STEP_ENDED;
  }
  if (++req->interim > loop->eng->cfg.max_interim) {
    pk__conn_up_fail(loop, conn, PK_E_TOO_MANY_INTERIM, 0);
    return STEP_ENDED;
  }
  memmove(conn->rbuf, conn->rbuf + used, conn->rlen - used);
  conn->rlen -= used;
  req->last_len = 0;
  if (status == 100 && req->expect_wait) {
    /* The server wants the body (RFC 9110 §15.2.1). */
    req->expect_wait = 0;
    pk__conn_write(loop, conn);
    if (conn->req != req) return STEP_ENDED;
  }
  return STEP_ON;
}

/* The final head, checked and set up for its body (framing, limits,
 * decoding), then handed to on_head with its `used` bytes. */
static int final_head(pk__loop *loop, pk__conn *conn, const pk_response_head *head, size_t used) {
  pk__req *req = conn->req;
  pk_engine *eng = loop->eng;
  if (!req->body_done && !req->body_stopped) {
    /* A final answer before the whole body went out (an early 413, or a
     * refusal after Expect): stop sending; the connection cannot carry
     * another request, since the server will not read the rest. */
    req->body_stopped = 1;
    req->expect_wait = 0;
    conn->want_write = 0;
    conn->reusable = 0;
  }
  int err = pk_response_body_info(head, req->is_head, &req->body_info);
  if (!err && req->body_info.framing == PK_FRAMING_LENGTH && req->max_body && !req->use_sink &&
      req->body_info.content_length > req->max_body)
    err = -PK_E_BODY_TOO_LARGE;
  if (!err && eng->cfg.decode_content && req->body_info.framing != PK_FRAMING_NONE)
    err = pk__req_setup_decoding(loop, req, head);
  if (err) {
    pk__conn_up_fail(loop, conn, -err, 0);
    return STEP_ENDED;
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
  int answer = eng->cfg.callbacks.on_head ? eng->cfg.callbacks.on_head(req->ctx, head, conn->rbuf, used, cl)
                                          : PK_HEAD_CONTINUE;
  if (answer == PK_HEAD_ABORT) {
    pk__conn_up_fail(loop, conn, PK_E_CANCELLED, 0);
    return STEP_ENDED;
  }
  req->divert = answer == PK_HEAD_DIVERT;
  return STEP_ON;
}

/* Parses heads until the final one: *used is its length. */
static int read_head(pk__loop *loop, pk__conn *conn, size_t *used) {
  pk__req *req = conn->req;
  const pk_parse_limits *lim = &loop->eng->cfg.limits;
  for (;;) {
    pk_header hdrs[PK_HEADERS_ON_STACK];
    pk_response_head head = {.headers = hdrs};
    head.num_headers = lim->max_header_fields < PK_HEADERS_ON_STACK ? lim->max_header_fields : PK_HEADERS_ON_STACK;
    int r = pk_parse_response_head(conn->rbuf, conn->rlen, req->last_len, &head, lim);
    if (r == PK_PARSE_INCOMPLETE) {
      req->last_len = conn->rlen;
      return conn->rlen == conn->rcap ? grow_for_head(loop, conn, lim) : STEP_MORE;
    }
    if (r < 0) {
      pk__conn_up_fail(loop, conn, -r, 0);
      return STEP_ENDED;
    }
    int st = head.status < 200 ? interim(loop, conn, head.status, (size_t)r)
                               : final_head(loop, conn, &head, (size_t)r);
    if (st != STEP_ON || head.status >= 200) {
      *used = (size_t)r;
      return st;
    }
  }
}

/* The body's framing applied to `len` bytes: how many are body (*deliver)
 * and whether the body ends with them. Bytes past its end make the
 * connection unfit for reuse. Negative: -PK_E_xxx. */
static int frame(pk__loop *loop, pk__conn *conn, char *p, size_t len, size_t *deliver, bool *done) {
  pk__req *req = conn->req;
  *deliver = 0;
  *done = false;
  switch (req->body_info.framing) {
  case PK_FRAMING_NONE:
    *done = true;
    if (len) conn->reusable = 0; /* bytes nobody asked for */
    break;
  case PK_FRAMING_LENGTH:
    *deliver = len < req->remaining ? len : (size_t)req->remaining;
    req->remaining -= *deliver;
    if (len > *deliver) conn->reusable = 0;
    *done = req->remaining == 0;
    break;
  case PK_FRAMING_CHUNKED: {
    size_t out = len;
    ssize_t used = pk_chunked_decode(&req->chunked, p, &out, &loop->eng->cfg.limits);
    if (used < 0) return (int)used;
    *deliver = out;
    if (req->chunked.done) {
      *done = true;
      if ((size_t)used < len) conn->reusable = 0;
    }
    break;
  }
  case PK_FRAMING_CLOSE:
    *deliver = len;
    conn->reusable = 0;
    break;
  }
  return 0;
}

/* What the buffer holds, acted on: the head (once), then body bytes,
 * delivered; the body's end completes the request. Returns true when the
 * request ended (completed or failed). */
static bool process(pk__loop *loop, pk__conn *conn) {
  pk__req *req = conn->req;
  char *p = conn->rbuf;
  size_t len = conn->rlen;
  if (!req->got_head) {
    size_t used = 0;
    int st = read_head(loop, conn, &used);
    if (st != STEP_ON) return st == STEP_ENDED;
    p = conn->rbuf + used;
    len = conn->rlen - used;
  }
  conn->rlen = 0;
  size_t deliver;
  bool done;
  int err = frame(loop, conn, p, len, &deliver, &done);
  if (!err && deliver) {
    err = pk__req_deliver_body(req, p, deliver);
    if (!err && req->progress_ms && !done) pk__req_report_progress(loop, req, false);
  }
  if (!err && done) err = pk__req_finish_decoding(req);
  if (err) {
    pk__conn_up_fail(loop, conn, -err, err == -PK_E_FILE_WRITE ? req->sink_errno : 0);
    return true;
  }
  if (done) conn->up->complete(loop, conn);
  return done;
}

static void on_eof(pk__loop *loop, pk__conn *conn, bool unclean_tls) {
  pk__req *req = conn->req;
  conn->reusable = 0;
  /* Over TLS a close-delimited body ends only with close_notify: a bare FIN
   * could be a truncation attack (RFC 9112 §9.8). */
  if (unclean_tls && req->got_head && req->body_info.framing == PK_FRAMING_CLOSE) {
    pk__conn_up_fail(loop, conn, PK_E_TRUNCATED_BODY, 0);
    return;
  }
  if (!req->got_head) {
    pk__conn_up_fail(loop, conn, conn->rlen ? PK_E_TRUNCATED_HEAD : PK_E_CLOSED_BEFORE_RESPONSE, 0);
    return;
  }
  /* Only a close-delimited body ends with the connection (RFC 9112 §6.3 p8);
   * for the others an EOF means the body was cut short. */
  if (req->body_info.framing != PK_FRAMING_CLOSE) {
    pk__conn_up_fail(loop, conn, PK_E_TRUNCATED_BODY, 0);
    return;
  }
  int err = pk__req_finish_decoding(req);
  if (err) pk__conn_up_fail(loop, conn, -err, 0);
  else conn->up->complete(loop, conn);
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
  if (!pk__conn_rearm(loop, conn)) return false;
  conn->read_again = 1; /* also when only OpenSSL holds the bytes (the event may be EPOLLOUT alone) */
  return true;
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

/* The buffer for the next read, between reads (nothing held in it): a
 * large body on a plain connection reads into PK_BIGBUF_SIZE; a body that
 * filled the small buffer goes on in PK_RBUF_SIZE. If the larger one cannot
 * be had, the one in hand still works. */
static void fit_buffer(pk__loop *loop, pk__conn *conn, const pk__req *req) {
  if (conn->rlen || !req->got_head || conn->rcap >= PK_BIGBUF_SIZE) return;
  size_t want = !conn->tls && large_body(req) ? PK_BIGBUF_SIZE
                : conn->rcap == PK_RBUF_SMALL && conn->read_full ? PK_RBUF_SIZE
                                                                 : 0;
  if (!want) return;
  char *nb = pk__rbuf_get(loop, want);
  if (!nb) return;
  pk__rbuf_put(loop, conn->rbuf, conn->rcap);
  conn->rbuf = nb;
  conn->rcap = want;
}

static void conn_read_tls(pk__loop *loop, pk__conn *conn) {
  size_t got = 0;
  for (;;) {
    pk__req *req = conn->req;
    if (!req || conn->state != PK_CONN_ACTIVE || req->paused) return;
    fit_buffer(loop, conn, req);
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
    pk__conn_up_fail(loop, conn, (pk_error)-st, detail);
    return;
  }
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
    fit_buffer(loop, conn, req);
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
    pk__conn_up_fail(loop, conn, e == ECONNRESET ? PK_E_CONN_RESET : PK_E_READ, e);
    return;
  }
}
