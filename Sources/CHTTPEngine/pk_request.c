/* A request's life, in one file: the copy of its spec (submit), its state
 * (one function changes it, with a table of names: curl's mstate()), its
 * deadlines, the retry-once rule, the delivery of its response body
 * (content decoding, the sink file, on_body, progress) and its end
 * (on_done). It calls the loop (timers, buffers), the inflater and the
 * request writer; never a connection or the pool: those act on what it
 * decides (docs/ENGINE.md, "Layers"). */
#include "pk_request.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- state */

const char *const pk__req_state_names[PK__REQ_STATES] = {
    [PK_REQ_FREE] = "free",           [PK_REQ_QUEUED] = "queued", [PK_REQ_WAITING] = "waiting",
    [PK_REQ_CONNECTING] = "connecting", [PK_REQ_ACTIVE] = "active", [PK_REQ_DONE] = "done",
};

/* legal[from] has bit `to` set for every change the engine may make. */
#define B(s) (1u << (s))
static const unsigned legal[PK__REQ_STATES] = {
    [PK_REQ_FREE] = B(PK_REQ_QUEUED) | B(PK_REQ_FREE),
    /* QUEUED -> FREE: submit raced a shutdown, the request never ran */
    [PK_REQ_QUEUED] = B(PK_REQ_WAITING) | B(PK_REQ_CONNECTING) | B(PK_REQ_ACTIVE) | B(PK_REQ_DONE) | B(PK_REQ_FREE),
    [PK_REQ_WAITING] = B(PK_REQ_CONNECTING) | B(PK_REQ_ACTIVE) | B(PK_REQ_DONE),
    /* CONNECTING -> WAITING: no descriptor for its socket; back in its origin's queue */
    [PK_REQ_CONNECTING] = B(PK_REQ_ACTIVE) | B(PK_REQ_WAITING) | B(PK_REQ_DONE),
    /* ACTIVE -> QUEUED: the retry-once rule; ACTIVE -> ACTIVE: the next exchange */
    [PK_REQ_ACTIVE] = B(PK_REQ_ACTIVE) | B(PK_REQ_QUEUED) | B(PK_REQ_DONE),
    [PK_REQ_DONE] = B(PK_REQ_FREE),
};
#undef B

bool pk__req_state_legal(unsigned from, unsigned to) {
  return from < PK__REQ_STATES && to < PK__REQ_STATES && (legal[from] & (1u << to));
}

#ifdef PK_STATE_CHECKS
#include <stdio.h>
#include <stdlib.h>

void pk__req_state_check(const pk__req *req, enum pk__req_state to) {
  if (pk__req_state_legal(req->state, to)) return;
  fprintf(stderr, "pocket engine: request %p: illegal state change %s -> %s\n", (const void *)req,
          req->state < PK__REQ_STATES ? pk__req_state_names[req->state] : "?", pk__req_state_names[to]);
  abort();
}
#endif

/* --------------------------------------------------------------- submit */

int pk__req_init(pk__req *req, pk__loop *loop, const pk_request_spec *spec, void (*on_deadline)(pk__loop *, pk__timer *)) {
  int err = pk__serialize_request(spec, req);
  if (err) return err;
  req->qnext = NULL;
  req->link.prev = req->link.next = NULL;
  req->all.prev = req->all.next = NULL;
  req->loop = loop;
  req->ctx = spec->ctx;
  req->origin = NULL;
  req->conn = NULL;
  req->timer.heap_index = PK_TIMER_IDLE;
  req->timer.fire = on_deadline;
  req->body = spec->body;
  req->body_len = spec->body_len;
  req->body_kind = (uint8_t)spec->body_kind;
  req->body_chunked = (spec->body_kind == PK_BODY_STREAM || spec->body_kind == PK_BODY_SEGMENTS) && spec->body_chunked;
  req->segs = spec->body_kind == PK_BODY_SEGMENTS ? spec->segments : NULL;
  req->nsegs = spec->body_kind == PK_BODY_SEGMENTS ? spec->num_segments : 0;
  req->one_shot = spec->body_kind == PK_BODY_STREAM;
  for (size_t i = 0; i < req->nsegs; i++)
    if (req->segs[i].kind == PK_SEG_STREAM) req->one_shot = 1;
  req->body_fd = spec->body_fd;
  req->body_offset = spec->body_offset;
  req->expect_ms = spec->body_len || spec->body_kind != PK_BODY_MEMORY ? spec->expect_continue_ms : 0;
  req->use_sink = spec->use_sink != 0;
  req->sink_fd = spec->sink_fd;
  req->max_body = spec->max_body_bytes ? spec->max_body_bytes : loop->eng->cfg.max_body_bytes;
  req->progress_ms = spec->progress_interval_ms;
  req->port = spec->port;
  req->scheme = (uint8_t)spec->scheme;
  req->tls_id = spec->scheme == PK_SCHEME_HTTPS ? spec->tls_id : 0;
  req->idempotent = spec->idempotent >= 0 ? (uint8_t)(spec->idempotent != 0)
                                          : (uint8_t)pk__method_idempotent(spec->method, spec->method_len);
  req->is_head = spec->method_len == 4 && memcmp(spec->method, "HEAD", 4) == 0;
  req->retried = 0;
  req->cancel_queued = 0;
  req->got_head = 0;
  req->interim = 0;
  req->conn_reused = 0;
  req->connect_timeout_ms = spec->connect_timeout_ms;
  req->read_timeout_ms = spec->read_timeout_ms;
  req->total_timeout_ms = spec->total_timeout_ms;
  req->t_submit = req->t_last_activity = pk__now_ns();
  req->t_dns_start = req->t_connect_start = 0;
  memset(&req->timings, 0, sizeof req->timings);
  req->last_len = 0;
  req->ndec = 0;
  req->remaining = 0;
  req->body_bytes = 0;
  pk__req_set_state(req, PK_REQ_QUEUED);
  return 0;
}

/* ------------------------------------------------------------ deadlines */


/* One heap timer per request, armed at the earliest deadline that applies to
 * its phase. Deadlines that move later (idle-read after each read) are not
 * re-armed: the timer fires early and re-arms, which keeps the hot path free
 * of heap operations. */
uint64_t pk__req_deadline(const pk__req *req, int *which) {
  uint64_t best = UINT64_MAX;
  *which = 0;
  if (req->total_timeout_ms) {
    best = req->t_submit + (uint64_t)req->total_timeout_ms * 1000000u;
    *which = PK_E_TOTAL_TIMEOUT;
  }
  if (req->state == PK_REQ_CONNECTING && req->connect_timeout_ms) {
    uint64_t d = req->t_dns_start + (uint64_t)req->connect_timeout_ms * 1000000u;
    if (d < best) {
      best = d;
      *which = PK_E_CONNECT_TIMEOUT;
    }
  } else if (req->state == PK_REQ_ACTIVE && req->expect_wait) {
    /* Waiting for 100 Continue: past this, send the body anyway (RFC 9110 §10.1.1). */
    uint64_t d = req->t_expect + (uint64_t)req->expect_ms * 1000000u;
    if (d < best) {
      best = d;
      *which = PK__EXPECT_DEADLINE;
    }
  } else if (req->state == PK_REQ_ACTIVE && !req->paused && req->read_timeout_ms) {
    /* Idle: nothing read or written for that long (a server that stops
     * reading an upload stalls it as surely as one that stops sending). A
     * paused body is our consumer's delay, not the server's silence. */
    uint64_t d = req->t_last_activity + (uint64_t)req->read_timeout_ms * 1000000u;
    if (d < best) {
      best = d;
      *which = PK_E_READ_TIMEOUT;
    }
  }
  return best;
}

void pk__req_update_timer(pk__loop *loop, pk__req *req) {
  int which;
  uint64_t d = pk__req_deadline(req, &which);
  if (d == UINT64_MAX) return;
  if (!pk__timer_armed(&req->timer) || d < req->timer.deadline) pk__timer_arm(loop, &req->timer, d);
}

/* A new exchange on a connection (first, pooled or after a retry): the
 * response and body state start over. */
void pk__req_begin_exchange(pk__loop *loop, pk__req *req) {
  pk__req_set_state(req, PK_REQ_ACTIVE);
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
  if (req->body_kind == PK_BODY_SEGMENTS) pk__body_load_segment(req); /* again from the start on a retry */
  req->write_error = req->write_errno = 0;
  req->divert = req->paused = 0;
  req->sink_errno = 0;
  req->body_wire = 0;
  req->content_length = -1;
  req->t_progress = loop->now;
}

/* ------------------------------------------------------------------ end */

/* How a server ends a kept-alive connection under a request: a reset, a
 * close, a failed write or read; over TLS also a fatal alert. */
static bool retryable(pk_error err) {
  return err == PK_E_CONN_RESET || err == PK_E_CLOSED_BEFORE_RESPONSE || err == PK_E_WRITE ||
         err == PK_E_READ || err == PK_E_TLS_ALERT;
}

bool pk__req_retry(pk__loop *loop, pk__req *req, pk_error *err, int *sys_errno) {
  /* A body write failed and then no response came: the write is the story. */
  if (req->write_error && !req->got_head &&
      (*err == PK_E_CONN_RESET || *err == PK_E_CLOSED_BEFORE_RESPONSE || *err == PK_E_READ)) {
    *err = (pk_error)req->write_error;
    *sys_errno = req->write_errno;
  }
  /* A pooled connection may have been closed by the server just as we reused
   * it; nothing of the response arrived, so an idempotent request is safe to
   * send once more on a new connection (RFC 9112 §9.3.1). */
  bool may_retry = retryable(*err) && req->conn_reused && req->timings.bytes_received == 0 &&
                   req->idempotent && !req->retried;
  /* A one-shot body cannot be sent again: say so, so the caller can report why. */
  if (may_retry && req->one_shot) req->timings.retry_refused = 1;
  if (!may_retry || req->one_shot) return false;
  req->retried = 1;
  req->conn_reused = 0;
  req->timings.reused = 0;
  req->timings.bytes_sent = 0;
  pk__req_set_state(req, PK_REQ_QUEUED);
  atomic_fetch_add_explicit(&loop->st_retried, 1, memory_order_relaxed);
  return true;
}

void pk__req_finish(pk__loop *loop, pk__req *req, pk_error err, int sys_errno) {
  pk_engine *eng = loop->eng;
  pk__timer_cancel(loop, &req->timer);
  loop->last_done_at = loop->now; /* a submitter's wait looks at it (pk_engine.c) */
  /* Linked only while it waits in an origin queue (a popped waiter is not). */
  if (pk__linked(&req->link)) pk__list_remove(&req->link);
  if (pk__linked(&req->all)) pk__list_remove(&req->all);
  for (int i = 0; i < req->ndec; i++) pk_inflate_free(req->dec[i]);
  req->ndec = 0;
  if (req->wbuf) {
    pk__rbuf_put(loop, req->wbuf, PK_RBUF_SIZE);
    req->wbuf = NULL;
  }
  req->conn = NULL;
  pk__req_set_state(req, PK_REQ_DONE);
  atomic_store_explicit(&req->id, 0, memory_order_release);
  req->timings.total_ns = pk__now_ns() - req->t_submit;
  req->timings.retried = req->retried;
  if (!err) atomic_fetch_add_explicit(&loop->st_completed, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&loop->st_pending, 1, memory_order_relaxed);
  /* The one sign rule (pk_errors.h): on_done gets 0 or -PK_E_xxx. */
  eng->cfg.callbacks.on_done(req->ctx, err ? -(int)err : 0, err ? sys_errno : 0, &req->timings);
  loop->finished_in_pass = true;
  req->qnext = loop->done_reqs;
  loop->done_reqs = req;
}


/* ------------------------------------------------------------- delivery */

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
int pk__req_setup_decoding(pk__loop *loop, pk__req *req, const pk_response_head *head) {
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
void pk__req_report_progress(pk__loop *loop, pk__req *req, bool final) {
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

int pk__req_deliver_body(pk__req *req, const char *data, size_t n) {
  req->body_wire += n;
  if (req->ndec == 0) return body_out(req, data, n);
  return pk_inflate_feed(req->dec[0], data, n, req->ndec == 2 ? inner_out : body_out, req);
}

int pk__req_finish_decoding(pk__req *req) {
  for (int i = 0; i < req->ndec; i++) {
    int err = pk_inflate_finish(req->dec[i]);
    if (err) return err;
  }
  return 0;
}

