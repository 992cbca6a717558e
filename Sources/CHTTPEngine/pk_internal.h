/* Internals shared between the engine's files (prefix pk__). Not installed.
 * Which file may call which is written in docs/ENGINE.md ("Layers") and
 * checked by scripts/engine-dag.sh (make check). */
#ifndef PK_INTERNAL_H
#define PK_INTERNAL_H

#include "CHTTPEngine.h"
#include "pk_base.h"
#include "pk_dns.h"
#include "pk_tls.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* ---------------------------------------------------------------- timers */

struct pk__loop;
typedef struct pk__timer {
  uint64_t deadline;  /* monotonic ns */
  uint32_t heap_index; /* PK_TIMER_IDLE when not armed, PK_TIMER_OVERFLOW in the list */
  void (*fire)(struct pk__loop *loop, struct pk__timer *t);
  struct pk__timer *ov_prev, *ov_next; /* the overflow list */
} pk__timer;

#define PK_TIMER_IDLE UINT32_MAX
/* Armed, but in the heap's overflow list: the heap could not grow (out of
 * memory), and a deadline must never be dropped (a request would hang). */
#define PK_TIMER_OVERFLOW (UINT32_MAX - 1)

/* A binary min-heap with each timer's index stored in the timer, so removal
 * and re-arming are O(log n) and 100,000 pending timers stay cheap. Each
 * slot holds its deadline beside the timer's address: a sift compares
 * slots without touching the timers (one cache miss per level saved). */
typedef struct pk__heap_slot {
  uint64_t deadline; /* == timer->deadline */
  pk__timer *timer;
} pk__heap_slot;

typedef struct pk__heap {
  pk__heap_slot *items;
  uint32_t len, cap;
  pk__timer *overflow; /* unsorted, scanned each pass; empty unless memory ran out */
} pk__heap;

void pk__timer_arm(struct pk__loop *loop, pk__timer *t, uint64_t deadline);
void pk__timer_cancel(struct pk__loop *loop, pk__timer *t);
static inline bool pk__timer_armed(const pk__timer *t) { return t->heap_index != PK_TIMER_IDLE; }

/* ------------------------------------------------------------------ I/O */

struct pk__io;
/* What the loop calls for a registered socket's events (redis ae.c's
 * handler pointer): the loop knows no connection, only this. */
typedef void (*pk__io_handler)(struct pk__loop *loop, struct pk__io *io, uint32_t events);
typedef struct pk__io {
  pk__io_handler handler;
} pk__io;

/* A write queued on the loop's io_uring (pk__loop_send), embedded in its
 * connection. Its buffer must stay as it is while `queued`. The loop calls
 * `done` with the send's result (bytes, or -errno) when the kernel has
 * answered, on the loop's pass: a short or failed send is the connection's
 * to finish (pk_conn.c). */
struct pk__send;
typedef void (*pk__send_done)(struct pk__loop *loop, struct pk__send *op, int res);
typedef struct pk__send {
  pk__send_done done;
  uint32_t len;               /* bytes queued */
  uint8_t queued;             /* queued or in the kernel: no completion yet */
  uint8_t direct;             /* finish with send(2): a short ring send is not queued again */
} pk__send;

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

typedef struct pk__origin pk__origin;
typedef struct pk__conn pk__conn;

typedef struct pk__req {
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
} pk__req;

/* How a connection reaches its origin; part of the pool key, so a request
 * never reuses a connection made another way. */
enum pk__route {
  PK_ROUTE_TCP = 0,  /* host:port, resolved */
  PK_ROUTE_UNIX = 1, /* a Unix domain socket (the route's bytes are its path) */
  PK_ROUTE_ADDRS = 2, /* numeric addresses given by the caller instead of resolving (the bytes: "a,b") */
  PK_ROUTE_PROXY = 3, /* an HTTP proxy the requests are sent to (the bytes: its host) */
  PK_ROUTE_TUNNEL = 4, /* a CONNECT tunnel through an HTTP proxy (the bytes: its host, NUL, Proxy-Authorization) */
};

/* A happy-eyeballs attempt beyond the connection's own socket (RFC 8305):
 * a socket of its own, registered with its own handler, until the race is
 * decided. */
typedef struct pk__attempt {
  pk__io io;
  int fd;                     /* -1: unused or closed */
  uint8_t addr;               /* index into the connection's addresses */
  struct pk__conn *conn;
} pk__attempt;

/* ----------------------------------------------------------- connections */

enum pk__conn_state {
  PK_CONN_RESOLVING = 1,
  PK_CONN_CONNECTING,
  PK_CONN_TUNNEL,             /* CONNECT sent to a proxy, its answer awaited */
  PK_CONN_HANDSHAKE,          /* TLS */
  PK_CONN_ACTIVE,
  PK_CONN_IDLE,
  PK_CONN_CLOSED,
};

struct pk__conn {
  pk__io io;                  /* the loop's handle: its handler is pk_conn.c's event function */
  pk__send send;              /* a request head queued on the loop's ring (io_uring backend) */
  int fd;
  uint8_t state;
  uint8_t want_write;
  uint8_t reusable;           /* cleared when anything makes the connection unfit for reuse */
  uint8_t addr_index;
  uint8_t read_full;          /* the last read filled the buffer */
  uint8_t clean;              /* its last exchange completed (a close keeps the TLS session) */
  uint8_t writing;            /* inside conn_write */
  uint8_t hup_seen;           /* the peer hung up: read to the end, no later edge will come */
  uint8_t read_again;         /* stopped reading at PK_IO_BUDGET: read on at the next event */
  uint8_t peer_family;        /* 4, 6, or 0 before it connected (timings' remote_family) */
  uint8_t disarmed;           /* out of the epoll set for a submitter's wait (pk__conn_wait_inline) */
  uint16_t peer_port, local_port;
  uint8_t peer_addr[16];      /* copied into each request's timings */
  uint32_t requests;          /* responses completed on this connection */
  struct pk__loop *loop;
  pk__origin *origin;
  pk__req *req;
  pk__link link;              /* origin idle list (the pool's) */
  pk__timer idle_timer;
  uint64_t idle_since;
  const pk__addrs *addrs;     /* borrowed from the DNS cache while connecting */
  /* the race (pk_conn.c): addresses in the order tried, families interleaved */
  uint8_t order[PK_DNS_MAX_ADDRS];
  uint8_t fd_addr;            /* the address of `fd` while connecting */
  uint8_t in_flight;          /* attempts connecting: `fd` and the extra ones */
  uint8_t attempts;           /* attempts opened */
  int last_errno;             /* the latest failed attempt's */
  pk__timer race_timer;       /* the next attempt's start */
  pk__attempt *extra;         /* PK_DNS_MAX_ADDRS slots, allocated at the first overlap, kept with the struct */
  pk__dns_query dnsq;         /* the lookup (pk_dns.c reports through it) */
  pk__tls *tls;               /* NULL for plain HTTP */
  uint64_t wire_out_mark, wire_in_mark; /* BIO counters already charged to a request */
  uint64_t t_tls_start;
  uint64_t t_tunnel_start;
  char *rbuf;
  size_t rcap, rlen;
  size_t woff;
  struct pk__conn *next_free;
};

struct pk__origin {
  struct pk__origin *next;   /* hash chain */
  uint64_t hash;
  uint8_t scheme;
  uint16_t port;
  uint32_t tls_id;           /* TLS settings the connections were made with */
  uint8_t route;             /* pk__route */
  uint16_t connect_port;     /* the origin's port, or the proxy's */
  uint32_t conns;            /* open + connecting */
  void *tls_session;         /* last resumable TLS session (https origins) */
  pk__link idle;             /* LIFO: most recently used first */
  pk__link waiters;          /* requests waiting for a connection (FIFO) */
  size_t host_len;
  size_t route_len;          /* the route's bytes follow the host's NUL in host[] */
  size_t auth_len;           /* tunnel: Proxy-Authorization, after the route's NUL */
  char host[];
};

/* The route's bytes of an origin (NUL-terminated): a Unix socket's path. */
static inline const char *pk__origin_route(const pk__origin *o) { return o->host + o->host_len + 1; }
static inline const char *pk__origin_auth(const pk__origin *o) { return pk__origin_route(o) + o->route_len + 1; }

/* ----------------------------------------------------------------- loop */

typedef struct pk__post {
  void (*fn)(void *ctx, void *arg);
  void *arg;
} pk__post;

#define PK_ORIGIN_BUCKETS 256
/* A loop with timers armed sleeps at most this long, so a submission run on
 * the caller's thread (direct pass) rarely needs to wake it for a deadline. */
#define PK_SLEEP_CAP_MS 1000
#define PK_RBUF_SIZE 16384
#define PK_BIGBUF_SIZE (256 * 1024) /* read buffer for large bodies (plain connections) */
/* Bytes one connection may read, and bytes it may write, in one event
 * before the loop moves on: a fast body must not hold the loop (other
 * connections, timers, cancels, an early response to an upload) for the
 * whole transfer. */
#define PK_IO_BUDGET (1024 * 1024)

typedef struct pk__loop {
  pk_engine *eng;
  int epfd;
  int evfd;
  struct io_uring *ring;      /* io_uring backend: queued writes (pk_loop.c); NULL on epoll alone */
  pk__io ring_io;             /* the ring's descriptor in the epoll set: late completions */
  uint32_t ring_unsubmitted;  /* sends queued since the last submit */
  pthread_t thread;
  uint32_t index;
  pk__io wake_io;             /* the eventfd's registration */

  pthread_mutex_t lock;       /* guards the fields up to `unlocked` */
  pk__req *sq_head, *sq_tail; /* submissions */
  pk__req *cancels;           /* cancel requests */
  pk__req *free_reqs;         /* recycled request structs */
  struct pk__post *posts;     /* work for the loop thread (pk_engine_post) */
  uint32_t posts_len, posts_cap;
  bool closed;                /* the thread exited: posts are refused */
  _Atomic bool sleeping;      /* in (or about to enter) epoll_wait; set under the lock */
  bool wake_pending;          /* eventfd written since it last woke */
  bool stopping;

  /* The pass: held by the loop thread except while it blocks in epoll_wait.
   * A thread submitting to a sleeping loop takes it (trylock) and runs the
   * submission itself (pk_engine.c, "direct pass"): the request is written
   * from the caller's thread with no eventfd wake-up and no switch to the
   * loop thread. Every field below is guarded by it. */
  pthread_mutex_t pass_lock;
  uint64_t sleep_until;       /* when the loop's epoll_wait times out (UINT64_MAX: never) */

  /* loop thread (holding pass_lock) only */
  struct pk__post *run_posts; /* the other half of the double buffer */
  uint32_t run_cap;
  uint64_t now;
  pk__heap timers;
  pk__link reqs;              /* every dispatched, unfinished request */
  pk__req *done_reqs;         /* finished; recycled at the next swap */
  pk__conn *free_conns;
  pk__conn *dead_conns;       /* closed this iteration; recycled after the batch */
  char **rbufs;               /* free read buffers */
  char *bigbuf;               /* one free PK_BIGBUF_SIZE buffer */
  uint32_t rbufs_len, rbufs_cap;
  pk__origin *origins[PK_ORIGIN_BUCKETS];
  pk__dns_cache dns;
  uint32_t open_conns;
  bool stopping_local;        /* failing everything: no new connections */
  bool finished_in_pass;      /* on_head or on_done ran since the last on_pass_end */
  struct pk__conn *disarmed;  /* the connection a submitter's wait left out of epoll (at most one) */
  uint32_t inline_skip;       /* direct passes left that do not wait (after a wait timed out) */
  uint32_t spin_skip;         /* waits left that do not spin (after a spin found nothing) */
  uint32_t spin_backoff;      /* spin_skip after the next miss: 16, doubling per miss in a row, to 1024 */
  uint64_t crowded_at;        /* loop->now when a submission last found another request in flight */
  uint64_t last_done_at;      /* loop->now when a request last finished */
  bool in_direct;             /* a direct pass (a submitter's thread) holds the pass */
  struct pk__req *deferred_opens; /* new connections a direct pass left to the loop (via qnext) */

  _Atomic uint64_t st_opened, st_closed, st_completed, st_retried, st_idle, st_wakeups, st_pending, st_inline,
      st_spin_hits, st_spin_misses;
  _Atomic uint64_t st_ring_sends, st_ring_submits;
} pk__loop;

struct pk_engine {
  pk_engine_config cfg;
  pk__loop *loops;
  uint32_t nloops;
  _Atomic uint32_t rr;
  _Atomic uint64_t next_id;
  _Atomic int shut;
  _Atomic int joined;
  pk__resolver *resolver;
  pk__tls_ctx *tls;           /* the engine's own settings (id 0), made at create */
  pk__tls_ctx *tls_extra[PK_MAX_TLS_CONFIGS]; /* ids 1..: per-request settings */
  _Atomic uint32_t tls_count; /* extra contexts published (release) */
  pthread_mutex_t tls_lock;   /* serialises pk_engine_add_tls */
};

/* ------------------------------------------------------------ functions
 * Grouped by the file that defines them, from the bottom of the DAG up
 * (docs/ENGINE.md, "Layers"): a file calls only the groups above its own. */

/* pk_loop.c: epoll, the io_uring ring, handler dispatch, timers, wake-up, read buffers */
extern _Thread_local pk_engine *pk__current_engine;
static inline bool pk__on_loop_thread(pk_engine *eng) { return pk__current_engine == eng; }
void pk__timer_arm(struct pk__loop *loop, pk__timer *t, uint64_t deadline);
void pk__timer_cancel(struct pk__loop *loop, pk__timer *t);
void pk__loop_run_timers(pk__loop *loop);
int pk__loop_next_timeout(pk__loop *loop); /* ms for epoll_wait, -1: none */
/* Registers fd for `events` with io->handler as its event function. 0 or -1 (errno). */
int pk__io_add(pk__loop *loop, int fd, pk__io *io, uint32_t events);
/* Same mask again (EPOLL_CTL_MOD): queues a new event for a ready socket. */
int pk__io_rearm(pk__loop *loop, int fd, pk__io *io, uint32_t events);
/* The direct pass's wait (pk_conn.c): the submitting thread, holding the
 * sleeping loop's pass_lock, waits up to wait_ns for `req`'s answer on its
 * socket and handles it there. */
int pk__conn_wait_inline(pk__loop *loop, pk__req *req, uint64_t id, uint64_t wait_ns);
#define PK__WAIT_SKIPPED (-1)  /* not a request it waits for (a body to send, a blocked write) */
#define PK__WAIT_ANSWERED 0    /* handled here, or handed back early (the loop has work) */
#define PK__WAIT_TIMED_OUT 1   /* nothing came in time: the loop has it now */
/* Loop thread, awake: the connection a wait left out of epoll goes back in,
 * and the connections a direct pass needed are opened. */
void pk__conn_rearm_disarmed(pk__loop *loop);
/* Only the first half: the connection a wait left out of epoll goes back in. */
void pk__conn_arm_disarmed(pk__loop *loop);
/* One epoll_wait and the handlers of its events. A wait that can block
 * (timeout_ms != 0) releases the loop's pass_lock for its duration. */
void pk__loop_poll(pk__loop *loop, int timeout_ms);
/* The earliest armed timer's deadline, UINT64_MAX when none is armed. */
uint64_t pk__loop_next_deadline(pk__loop *loop);
/* epoll + eventfd, and the ring for backend (pk_io_backend) PK_IO_AUTO or
 * PK_IO_URING: 0, -PK_E_SOCKET, or -PK_E_IO_URING (PK_IO_URING only; AUTO
 * goes on without a ring). */
int pk__loop_open(pk__loop *loop, int backend);
/* Frees what pk__loop_open made (the ring, epoll, eventfd). */
void pk__loop_close(pk__loop *loop);
void pk__loop_wake(pk__loop *loop);
/* Queues a send(2) of buf[0..len) on fd on the ring, to be submitted with
 * the pass's others before the loop waits (pk__loop_flush): true, and
 * op->done is called with the result later. False when there is no ring
 * (epoll backend) or a direct pass runs (the caller's thread holds the
 * pass): then the caller sends now. Loop pass only. */
bool pk__loop_send(pk__loop *loop, int fd, const void *buf, size_t len, pk__send *op);
/* Whether pk__loop_send would queue now (for a caller that must prepare
 * the bytes differently for the ring: sealed TLS records). */
static inline bool pk__loop_can_send(const pk__loop *loop, const pk__send *op) {
  return loop->ring && !loop->in_direct && !op->direct;
}
/* Submits the queued sends and calls the done functions of every
 * completion (which may queue more: until none is left). */
void pk__loop_flush(pk__loop *loop);
/* Before its descriptor or buffer goes away: waits until `op` (queued) is
 * completed or cancelled; its done function runs. */
void pk__loop_send_settle(pk__loop *loop, pk__send *op);
char *pk__rbuf_get(pk__loop *loop);
void pk__rbuf_put(pk__loop *loop, char *buf, size_t cap);

/* Engine data the lower files read (no call into pk_engine.c). */
static inline pk__tls_ctx *pk__engine_tls(pk_engine *eng, uint32_t id) {
  if (id == 0) return eng->tls;
  uint32_t n = atomic_load_explicit(&eng->tls_count, memory_order_acquire);
  return id <= n ? eng->tls_extra[id - 1] : NULL;
}

/* pk_h1_write.c: the request head, and the framing of body pieces */
int pk__serialize_request(const pk_request_spec *spec, pk__req *req);
int pk__method_idempotent(const char *m, size_t n);
void pk__body_set_piece(pk__req *req, const void *data, size_t len, bool last);
int pk__body_stream_iov(pk__req *req, struct iovec *iov);
void pk__body_load_segment(pk__req *req);

/* pk_request.c: a request's life */
extern const char *const pk__req_state_names[PK__REQ_STATES];
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

/* pk_pool.c: decides; the connection acts */
typedef enum pk__pool_action {
  PK_POOL_REUSE, /* conn: an idle connection taken off its list, now the request's */
  PK_POOL_OPEN,  /* a slot of the origin is reserved: open a connection (or pk__pool_unreserve) */
  PK_POOL_WAIT,  /* the request waits in the origin's queue */
} pk__pool_action;
/* Finds (or makes) req's origin and decides. 0 or -PK_E_NOMEM. */
int pk__pool_acquire(pk__loop *loop, pk__req *req, bool fresh, pk__pool_action *action, pk__conn **conn);
/* Whether `req`'s origin has an idle connection (finds or makes the origin
 * and notes it in the request, as acquire would). */
bool pk__pool_has_idle(pk__loop *loop, pk__req *req);
void pk__pool_unreserve(pk__loop *loop, pk__origin *o);
/* After a clean response: the waiter that takes the connection now, or NULL
 * (the connection was parked idle). */
pk__req *pk__pool_release(pk__loop *loop, pk__conn *conn);
/* A connection is closing: out of the idle list and its slot freed. Returns
 * the first waiter with that slot reserved for it (open a connection), or NULL. */
pk__req *pk__pool_forget(pk__loop *loop, pk__conn *conn);
pk__conn *pk__pool_any_idle(pk__loop *loop); /* for shutdown */
void pk__pool_free(pk__loop *loop);

/* pk_conn.c: acts */
void pk__conn_dispatch(pk__loop *loop, pk__req *req, bool fresh); /* pool decision, then act */
void pk__conn_fail(pk__loop *loop, pk__conn *conn, pk_error err, int sys_errno);
void pk__conn_close(pk__loop *loop, pk__conn *conn);
void pk__conn_deadline(pk__loop *loop, pk__timer *t); /* a request's timer fired */
void pk__conn_recycle_dead(pk__loop *loop);
void pk__conn_write(pk__loop *loop, pk__conn *conn); /* write what the request has ready */
void pk__conn_read(pk__loop *loop, pk__conn *conn, uint32_t events); /* read what the socket holds */
void pk__conn_free_all(pk__loop *loop);

#endif
