/* A request (pk_request.c): its state, its copy of the spec, its body's
 * progress and its response's; and the request writer (pk_h1_write.c),
 * which fills it. Not installed. */
#ifndef PK_REQUEST_H
#define PK_REQUEST_H

#include "pk_internal.h"

/* ------------------------------------------------------------ requests */

/* A request's life (pk_request.c). Changed only by pk__req_set_state. */
enum pk__req_state {
  PK_REQ_FREE = 0,     /* on a free list */
  PK_REQ_QUEUED,       /* submitted, or sent back by the retry-once rule: not yet dispatched */
  PK_REQ_WAITING,      /* in an origin's wait queue (the origin is at its cap) */
  PK_REQ_CONNECTING,   /* on a new connection: DNS, TCP connect, TLS handshake */
  PK_REQ_ACTIVE,       /* on a ready connection: writing the request, reading the response */
  PK_REQ_DONE,         /* on_done ran; recycled at the loop's next swap */
  PK__REQ_STATES
};

/* How a connection reaches its origin; part of the pool key, so a request
 * never reuses a connection made another way. */
enum pk__route {
  PK_ROUTE_TCP = 0,  /* host:port, resolved */
  PK_ROUTE_UNIX = 1, /* a Unix domain socket (the route's bytes are its path) */
  PK_ROUTE_ADDRS = 2, /* numeric addresses given by the caller instead of resolving (the bytes: "a,b") */
  PK_ROUTE_PROXY = 3, /* an HTTP proxy the requests are sent to (the bytes: its host) */
  PK_ROUTE_TUNNEL = 4, /* a CONNECT tunnel through an HTTP proxy (the bytes: its host, NUL, Proxy-Authorization) */
};

struct pk__req {
  struct pk__req *qnext;      /* submission queue / free list / done list */
  struct pk__req *cnext;      /* cancel list (under the loop lock) */
  pk__link link;              /* origin wait queue (the pool's) */
  pk__link all;               /* loop's list of requests it owns */
  _Atomic uint64_t id;        /* 0 once done; guards pk_engine_cancel */
  struct pk__loop *loop;
  void *ctx;
  pk__origin *origin;
  pk__conn *conn;
  pk__timer timer;

  char *buf;                  /* serialized head, then the host name, then the route's bytes */
  size_t buf_cap;
  size_t head_len;
  size_t host_off, host_len;
  size_t route_len;           /* bytes after the host: the Unix socket path, addresses or proxy host */
  size_t auth_len;            /* tunnel: the Proxy-Authorization value after the route's bytes and a NUL */
  uint16_t proxy_port;
  uint8_t route;              /* pk__route: how its connections reach the origin */
  /* request body (pk_body_kind) */
  const char *body;
  size_t body_len;
  uint8_t body_kind;
  uint8_t body_chunked;
  uint8_t body_done;          /* every body byte (and the last chunk) is written */
  uint8_t body_stopped;       /* a final response (or a failed write) ended the upload early */
  uint8_t expect_wait;        /* head written with Expect: 100-continue; body waits */
  uint8_t chunk_asked;        /* on_send_more called, no piece yet */
  uint8_t chunk_last;
  uint8_t chunk_hdr_len;
  int body_fd;
  uint64_t body_offset;
  uint64_t body_sent;         /* body payload bytes written */
  uint64_t body_provided;     /* stream: payload bytes handed over so far */
  const char *chunk;          /* stream: the current piece, borrowed */
  size_t chunk_len;
  size_t seg_off;             /* stream: bytes of the current piece's framing+data written */
  char chunk_hdr[20];         /* "<hex>\r\n" */
  const pk_body_segment *segs; /* PK_BODY_SEGMENTS, borrowed */
  size_t nsegs;
  size_t seg_i;               /* the segment being written (nsegs: all are out) */
  uint64_t seg_base;          /* body_sent when it began */
  uint8_t seg_phase;          /* file segment: 0 chunk header, 1 data, 2 CRLF */
  uint8_t one_shot;           /* a stream body or segment: never re-sent */
  char *wbuf;                 /* TLS file bodies: staging buffer (PK_RBUF_SIZE) */
  size_t wbuf_len, wbuf_off;
  uint32_t expect_ms;
  uint64_t t_expect;          /* when the head was written and the wait began */
  int write_error, write_errno; /* a failed body write, kept while the response is read */
  /* response sink */
  uint8_t use_sink;
  uint8_t divert;             /* on_head sent the body to on_body after all */
  uint8_t paused;             /* on_body asked for backpressure */
  int sink_fd;
  int sink_errno;
  uint64_t max_body;
  uint64_t body_wire;         /* response body bytes before content decoding */
  int64_t content_length;     /* of the final response, -1 unknown */
  uint32_t progress_ms;
  uint64_t t_progress;
  uint16_t port;
  uint8_t scheme;
  uint32_t tls_id;
  uint8_t state;
  uint8_t idempotent;
  uint8_t is_head;
  uint8_t retried;
  uint8_t cancel_queued;      /* on the loop's shared cancel list (under the loop lock) */
  uint8_t got_head;
  uint8_t interim;
  uint8_t conn_reused;

  uint32_t connect_timeout_ms, read_timeout_ms, total_timeout_ms;
  uint64_t t_submit, t_last_activity;
  uint64_t t_dns_start, t_connect_start;
  pk_timings timings;

  /* response state */
  size_t last_len;            /* resume hint for the head parser */
  pk_body_info body_info;
  uint64_t remaining;
  uint64_t body_bytes;
  pk_chunked chunked;
  pk_inflate *dec[2];         /* content decoders, innermost coding first */
  uint8_t ndec;
};


/* pk_h1_write.c: the request head, and the framing of body pieces */
int pk__serialize_request(const pk_request_spec *spec, pk__req *req);
int pk__method_idempotent(const char *m, size_t n);
void pk__body_set_piece(pk__req *req, const void *data, size_t len, bool last);
int pk__body_stream_iov(pk__req *req, struct iovec *iov);
void pk__body_load_segment(pk__req *req);

/* pk_request.c: a request's life */
extern const char *const pk__req_state_names[PK__REQ_STATES];
/* Whether the table of legal changes has from -> to. */
bool pk__req_state_legal(unsigned from, unsigned to);
#ifdef PK_STATE_CHECKS
void pk__req_state_check(const pk__req *req, enum pk__req_state to); /* aborts on an illegal change */
#endif
/* The one place a request's state changes (curl's mstate()). Inline: it is
 * a store on the hot path; test builds (PK_STATE_CHECKS) check every change
 * against the table of legal ones. */
static inline void pk__req_set_state(pk__req *req, enum pk__req_state to) {
#ifdef PK_STATE_CHECKS
  pk__req_state_check(req, to);
#endif
  req->state = (uint8_t)to;
}
static inline bool pk__req_attached(const pk__req *req) {
  return req->state == PK_REQ_CONNECTING || req->state == PK_REQ_ACTIVE;
}
/* Copies the spec into req (submit, caller's thread). 0 or -PK_E_xxx. */
int pk__req_init(pk__req *req, pk__loop *loop, const pk_request_spec *spec, void (*on_deadline)(pk__loop *, pk__timer *));
#define PK__EXPECT_DEADLINE (-1) /* pk__req_deadline's `which` for the 100-continue wait */
uint64_t pk__req_deadline(const pk__req *req, int *which);
void pk__req_update_timer(pk__loop *loop, pk__req *req);
void pk__req_begin_exchange(pk__loop *loop, pk__req *req); /* fresh response and body state */
/* The retry-once rule (RFC 9112 §9.3.1). May rewrite *err (a failed body
 * write is the story when no response came). True: req is QUEUED again and
 * the caller dispatches it; false: the caller finishes it with *err. */
bool pk__req_retry(pk__loop *loop, pk__req *req, pk_error *err, int *sys_errno);
void pk__req_finish(pk__loop *loop, pk__req *req, pk_error err, int sys_errno);
int pk__req_setup_decoding(pk__loop *loop, pk__req *req, const pk_response_head *head);
int pk__req_deliver_body(pk__req *req, const char *data, size_t n); /* 0 or -PK_E_xxx */
int pk__req_finish_decoding(pk__req *req);
void pk__req_report_progress(pk__loop *loop, pk__req *req, bool final);


#endif
