/* Internals shared between the engine's files (prefix pk__). Not installed. */
#ifndef PK_INTERNAL_H
#define PK_INTERNAL_H

#include "CHTTPEngine.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/socket.h>

#define PK_CONTAINER_OF(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#define PK_UNUSED(x) ((void)(x))

/* ------------------------------------------------------------ allocation */

void *pk__malloc(size_t n);
void *pk__calloc(size_t count, size_t n);
void *pk__realloc(void *p, size_t n);
void pk__free(void *p);

uint64_t pk__now_ns(void);

/* ------------------------------------------------------- intrusive lists */

typedef struct pk__link {
  struct pk__link *prev, *next;
} pk__link;

static inline void pk__list_init(pk__link *head) { head->prev = head->next = head; }
static inline bool pk__list_empty(const pk__link *head) { return head->next == head; }
static inline bool pk__linked(const pk__link *l) { return l->next != NULL; }
static inline void pk__list_push_back(pk__link *head, pk__link *l) {
  l->prev = head->prev;
  l->next = head;
  head->prev->next = l;
  head->prev = l;
}
static inline void pk__list_push_front(pk__link *head, pk__link *l) {
  l->next = head->next;
  l->prev = head;
  head->next->prev = l;
  head->next = l;
}
static inline void pk__list_remove(pk__link *l) {
  l->prev->next = l->next;
  l->next->prev = l->prev;
  l->prev = l->next = NULL;
}

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
 * and re-arming are O(log n) and 100,000 pending timers stay cheap. */
typedef struct pk__heap {
  pk__timer **items;
  uint32_t len, cap;
  pk__timer *overflow; /* unsorted, scanned each pass; empty unless memory ran out */
} pk__heap;

void pk__timer_arm(struct pk__loop *loop, pk__timer *t, uint64_t deadline);
void pk__timer_cancel(struct pk__loop *loop, pk__timer *t);
static inline bool pk__timer_armed(const pk__timer *t) { return t->heap_index != PK_TIMER_IDLE; }

/* ---------------------------------------------------------------- TLS */

typedef struct pk__tls_ctx pk__tls_ctx;
typedef struct pk__tls pk__tls;

/* Results of the nonblocking calls besides byte counts and -PK_E_xxx. */
#define PK_TLS_WANT_READ (-200001)
#define PK_TLS_WANT_WRITE (-200002)
#define PK_TLS_EOF_UNCLEAN (-200003) /* TCP FIN without close_notify */

int pk__tls_ctx_create(const pk_tls_config *cfg, pk__tls_ctx **out);
void pk__tls_ctx_free(pk__tls_ctx *c);
pk__tls *pk__tls_new(pk__tls_ctx *c, int fd, const char *host, size_t host_len, void *session, void *conn);
void pk__conn_tls_session(void *conn, void *session); /* pk_conn.c: takes ownership */
int pk__tls_handshake(pk__tls_ctx *c, pk__tls *t, int *detail); /* 0 done, WANT_*, or -PK_E */
ssize_t pk__tls_read(pk__tls *t, char *buf, size_t len, int *detail);
ssize_t pk__tls_write(pk__tls *t, const char *buf, size_t len, int *detail);
bool pk__tls_drained(pk__tls *t); /* nothing decrypted waits and the socket was read dry */
bool pk__tls_pending(pk__tls *t);
int pk__tls_resumed(pk__tls *t);
void pk__tls_session_free(void *session);
bool pk__tls_session_resumable(void *session);
void pk__tls_free(pk__tls *t, bool clean);
uint64_t pk__tls_wire_out(pk__tls *t); /* bytes the BIO sent / received so far */
uint64_t pk__tls_wire_in(pk__tls *t);

/* ---------------------------------------------------------------- DNS */

#define PK_DNS_MAX_ADDRS 8

typedef struct pk__addrs {
  uint32_t count;
  int gai_error; /* 0 or getaddrinfo's code */
  struct sockaddr_storage addr[PK_DNS_MAX_ADDRS];
  socklen_t len[PK_DNS_MAX_ADDRS];
} pk__addrs;

typedef struct pk__dns_entry pk__dns_entry;
typedef struct pk__resolver pk__resolver;

int pk__resolver_create(uint32_t threads, pk__resolver **out);
/* Drops the engine's reference: no completion is posted to a loop after it
 * returns; resolver threads still inside getaddrinfo finish on their own. */
void pk__resolver_release(pk__resolver *r);

/* ------------------------------------------------------------ requests */

enum pk__req_state {
  PK_REQ_FREE = 0,
  PK_REQ_QUEUED,   /* in the submission queue */
  PK_REQ_WAITING,  /* in an origin's wait queue */
  PK_REQ_ACTIVE,   /* attached to a connection */
  PK_REQ_DONE,
};

typedef struct pk__origin pk__origin;
typedef struct pk__conn pk__conn;

typedef struct pk__req {
  struct pk__req *qnext;      /* submission queue / free list / done list */
  struct pk__req *cnext;      /* cancel list (under the loop lock) */
  pk__link link;              /* origin wait queue */
  pk__link all;               /* loop's list of requests it owns */
  _Atomic uint64_t id;        /* 0 once done; guards pk_engine_cancel */
  struct pk__loop *loop;
  void *ctx;
  pk__origin *origin;
  pk__conn *conn;
  pk__timer timer;

  char *buf;                  /* serialized head, then the host name */
  size_t buf_cap;
  size_t head_len;
  size_t host_off, host_len;
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

/* ----------------------------------------------------------- connections */

enum pk__conn_state {
  PK_CONN_RESOLVING = 1,
  PK_CONN_CONNECTING,
  PK_CONN_HANDSHAKE,          /* TLS */
  PK_CONN_ACTIVE,
  PK_CONN_IDLE,
  PK_CONN_CLOSED,
};

struct pk__conn {
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
  uint32_t requests;          /* responses completed on this connection */
  struct pk__loop *loop;
  pk__origin *origin;
  pk__req *req;
  pk__link link;              /* origin idle list or DNS waiters */
  pk__timer idle_timer;
  uint64_t idle_since;
  const pk__addrs *addrs;     /* borrowed from the DNS cache while connecting */
  pk__dns_entry *dns;
  pk__tls *tls;               /* NULL for plain HTTP */
  uint64_t wire_out_mark, wire_in_mark; /* BIO counters already charged to a request */
  uint64_t t_tls_start;
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
  uint32_t conns;            /* open + connecting */
  void *tls_session;         /* last resumable TLS session (https origins) */
  pk__link idle;             /* LIFO: most recently used first */
  pk__link waiters;          /* requests waiting for a connection (FIFO) */
  size_t host_len;
  char host[];
};

/* ----------------------------------------------------------------- loop */

typedef struct pk__post {
  void (*fn)(void *ctx, void *arg);
  void *arg;
} pk__post;

#define PK_ORIGIN_BUCKETS 256
#define PK_DNS_BUCKETS 256
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
  pthread_t thread;
  uint32_t index;

  pthread_mutex_t lock;       /* guards the fields up to `unlocked` */
  pk__req *sq_head, *sq_tail; /* submissions */
  pk__req *cancels;           /* cancel requests */
  pk__req *free_reqs;         /* recycled request structs */
  struct pk__dns_job *dns_done; /* completed lookups */
  struct pk__post *posts;     /* work for the loop thread (pk_engine_post) */
  uint32_t posts_len, posts_cap;
  bool closed;                /* the thread exited: posts are refused */
  _Atomic bool sleeping;      /* in (or about to enter) epoll_wait; set under the lock */
  bool wake_pending;          /* eventfd written since it last woke */
  bool stopping;

  /* loop thread only */
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
  pk__dns_entry *dns[PK_DNS_BUCKETS];
  uint32_t open_conns;
  bool stopping_local;        /* failing everything: no new connections */
  bool finished_in_pass;      /* on_head or on_done ran since the last on_pass_end */

  _Atomic uint64_t st_opened, st_closed, st_completed, st_retried, st_idle, st_wakeups, st_pending;
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
  _Atomic(pk__tls_ctx *) tls; /* the engine's own settings (id 0), made on first use if default */
  pk__tls_ctx *tls_extra[PK_MAX_TLS_CONFIGS]; /* ids 1..: per-request settings */
  _Atomic uint32_t tls_count; /* extra contexts published (release) */
  pthread_mutex_t tls_lock;   /* serialises pk_engine_add_tls */
};

/* pk_loop.c */
#define PK__EXPECT_DEADLINE (-1)      /* req_deadline's `which` for the 100-continue wait */
pk__tls_ctx *pk__engine_tls(pk_engine *eng, uint32_t id);
void pk__loop_wake(pk__loop *loop);
void pk__req_finish(pk__loop *loop, pk__req *req, int err, int sys_errno);
void pk__req_update_timer(pk__loop *loop, pk__req *req);
bool pk__on_loop_thread(pk_engine *eng);

/* pk_h1_write.c */
int pk__serialize_request(const pk_request_spec *spec, pk__req *req);
int pk__method_idempotent(const char *m, size_t n);

/* pk_pool.c */
void pk__dispatch(pk__loop *loop, pk__req *req, bool fresh);
void pk__conn_release(pk__loop *loop, pk__conn *conn); /* after a clean response */
void pk__conn_close(pk__loop *loop, pk__conn *conn);
void pk__pool_close_all(pk__loop *loop);
pk__conn *pk__conn_alloc(pk__loop *loop, pk__origin *origin);
void pk__recycle_dead(pk__loop *loop);

/* pk_conn.c */
void pk__conn_start(pk__loop *loop, pk__conn *conn);      /* resolve + connect, then write */
void pk__conn_begin_request(pk__loop *loop, pk__conn *conn); /* write the attached request */
void pk__conn_event(pk__loop *loop, pk__conn *conn, uint32_t events);
void pk__conn_expect_expired(pk__loop *loop, pk__conn *conn); /* no 100 Continue in time: send the body */
void pk__conn_fail(pk__loop *loop, pk__conn *conn, int err, int sys_errno);
void pk__charge_wire(pk__conn *conn, pk__req *req); /* wire bytes since the last charge */
void pk__conn_connect_addrs(pk__loop *loop, pk__conn *conn, const pk__addrs *addrs, int err);
char *pk__rbuf_get(pk__loop *loop);
void pk__rbuf_put(pk__loop *loop, char *buf, size_t cap);

/* pk_dns.c */
/* Resolves conn's origin host: immediately for numeric hosts and cache hits
 * (calls pk__conn_connect_addrs), else queues a lookup and parks the conn. */
void pk__dns_resolve(pk__loop *loop, pk__conn *conn);
void pk__dns_cancel(pk__loop *loop, pk__conn *conn); /* a parked conn is closing */
void pk__dns_release(pk__conn *conn);                 /* done with conn->addrs */
void pk__dns_process_done(pk__loop *loop, struct pk__dns_job *list);
void pk__dns_free_all(pk__loop *loop);

#endif
