/* Internals shared by every mid-level file of the engine (prefix pk__):
 * timers, I/O registrations, the loop and the engine. The request
 * (pk_request.h), the pool (pk_pool.h) and the connection (pk_conn.h) have
 * headers of their own. Not installed. Which file may call which is written
 * in docs/ENGINE.md ("Layers") and checked by scripts/engine-dag.sh. */
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

/* ------------------------------------------------------------ elsewhere */

typedef struct pk__req pk__req;       /* pk_request.h */
typedef struct pk__conn pk__conn;     /* pk_conn.h */
typedef struct pk__origin pk__origin; /* pk_conn.h */

/* ----------------------------------------------------------------- loop */

typedef struct pk__post {
  void (*fn)(void *ctx, void *arg);
  void *arg;
} pk__post;

#define PK_ORIGIN_BUCKETS 256
/* A loop with timers armed sleeps at most this long, so a submission run on
 * the caller's thread (direct pass) rarely needs to wake it for a deadline. */
#define PK_SLEEP_CAP_MS 1000
/* Read buffers come in three sizes, each from its own free list on the loop
 * (pk__rbuf_get): an exchange starts with a small one, which holds a typical
 * head and a small body, so a busy connection costs little; a read that
 * fills it in the body, or a longer head, moves to PK_RBUF_SIZE (one TLS
 * record), and a large body on a plain connection to PK_BIGBUF_SIZE. */
#define PK_RBUF_SMALL 2048
#define PK_RBUF_SIZE 16384
#define PK_BIGBUF_SIZE (256 * 1024)
/* PK_RBUF_SIZE buffers a loop keeps free (beyond: freed); small ones it
 * keeps all, as many as it had busy connections at once. */
#define PK_RBUF_KEEP 64
/* Bytes one connection may read, and bytes it may write, in one event
 * before the loop moves on: a fast body must not hold the loop (other
 * connections, timers, cancels, an early response to an upload) for the
 * whole transfer. */
#define PK_IO_BUDGET (1024 * 1024)

/* A loop's free buffers of one size (pk__rbuf_get, pk__rbuf_put). */
typedef struct pk__buflist {
  char **items;
  uint32_t len, cap;
} pk__buflist;

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
  pk__buflist small_bufs;     /* free PK_RBUF_SMALL buffers */
  pk__buflist rbufs;          /* free PK_RBUF_SIZE buffers, at most PK_RBUF_KEEP */
  char *bigbuf;               /* one free PK_BIGBUF_SIZE buffer */
  pk__origin *origins[PK_ORIGIN_BUCKETS];
  pk__link short_origins;     /* origins whose waiters wait for a descriptor (EMFILE/ENFILE) */
  pk__timer fd_timer;         /* while any does: try again, for descriptors freed outside this loop */
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
  _Atomic uint32_t fd_waiting; /* loops with requests waiting for a descriptor (pk_conn.c) */
};

/* ------------------------------------------------------------ functions */

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
/* A buffer of `cap` bytes (PK_RBUF_SMALL, PK_RBUF_SIZE or PK_BIGBUF_SIZE),
 * from the loop's free list of that size, else allocated; NULL when out of
 * memory. */
char *pk__rbuf_get(pk__loop *loop, size_t cap);
/* Gives back a buffer of `cap` bytes: onto its free list, or freed (a size
 * without a list, a full list). NULL is allowed. */
void pk__rbuf_put(pk__loop *loop, char *buf, size_t cap);
/* Frees every buffer the loop keeps (at its end). */
void pk__rbufs_free(pk__loop *loop);

/* Engine data the lower files read (no call into pk_engine.c). */
static inline pk__tls_ctx *pk__engine_tls(pk_engine *eng, uint32_t id) {
  if (id == 0) return eng->tls;
  uint32_t n = atomic_load_explicit(&eng->tls_count, memory_order_acquire);
  return id <= n ? eng->tls_extra[id - 1] : NULL;
}

#endif
