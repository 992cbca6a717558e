/* The event loop's machinery, at the bottom of the engine: one epoll
 * instance per loop thread whose events go to the handler stored with each
 * registration (redis ae.c's shape: the loop calls a pointer, never a
 * connection function by name), a timer heap, the eventfd wake-up and the
 * per-loop read buffers. What a loop pass does with its queues is
 * pk_engine.c's. */
#include "pk_internal.h"

#include <errno.h>
#include <liburing.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define PK_MAX_EVENTS 256
#define PK_RING_ENTRIES 256 /* queued sends between submits (a full queue submits early) */

/* Set by each loop thread (pk_engine.c) for pk__on_loop_thread. */
_Thread_local pk_engine *pk__current_engine;

/* ------------------------------------------------------------------ I/O */

int pk__io_add(pk__loop *loop, int fd, pk__io *io, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.ptr = io};
  return epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev);
}

int pk__io_rearm(pk__loop *loop, int fd, pk__io *io, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.ptr = io};
  return epoll_ctl(loop->epfd, EPOLL_CTL_MOD, fd, &ev);
}

void pk__loop_poll(pk__loop *loop, int timeout_ms) {
  struct epoll_event events[PK_MAX_EVENTS];
  /* The pass's queued writes go out before the loop waits for their answers. */
  if (loop->ring) pk__loop_flush(loop);
  if (timeout_ms != 0) pthread_mutex_unlock(&loop->pass_lock);
  int n = epoll_wait(loop->epfd, events, PK_MAX_EVENTS, timeout_ms);
  if (timeout_ms != 0) pthread_mutex_lock(&loop->pass_lock);
  /* Awake again: callbacks below may submit or post (a resumed task sending
   * its next request), and those must not pay for an eventfd write. Clearing
   * without the lock is safe: it was set under the lock after the queues
   * were seen empty, and a stale read only costs a spurious wake-up. */
  atomic_store_explicit(&loop->sleeping, false, memory_order_relaxed);
  loop->now = pk__now_ns();
  for (int i = 0; i < n; i++) {
    pk__io *io = events[i].data.ptr;
    io->handler(loop, io, events[i].events);
  }
}

static void wake_event(pk__loop *loop, pk__io *io, uint32_t events) {
  PK_UNUSED(io);
  PK_UNUSED(events);
  uint64_t v;
  ssize_t r = read(loop->evfd, &v, sizeof v);
  PK_UNUSED(r);
}

/* ----------------------------------------------------------- the ring
 *
 * The io_uring backend (docs/ENGINE.md, "I/O backends"): readiness still
 * comes from epoll, but a pass's request writes are queued here as
 * IORING_OP_SEND and reach the kernel together, in one io_uring_enter(2)
 * before the loop waits, instead of one send(2) each. The kernel runs a
 * socket send at submission (MSG_DONTWAIT: a full socket answers -EAGAIN
 * there and then, it is never parked); its completion is read right after.
 * Should a completion still come later, the ring's descriptor is in the
 * epoll set (level-triggered), so the loop wakes for it. */

static void ring_submit(pk__loop *loop) {
  if (!loop->ring_unsubmitted) return;
  int r;
  do r = io_uring_submit(loop->ring);
  while (r == -EINTR);
  /* What the kernel did not take (-EAGAIN, -EBUSY: short of memory) stays
   * in the submission queue for the next submit. */
  if (r > 0) loop->ring_unsubmitted = (uint32_t)r >= loop->ring_unsubmitted ? 0 : loop->ring_unsubmitted - (uint32_t)r;
  atomic_fetch_add_explicit(&loop->st_ring_submits, 1, memory_order_relaxed);
}

/* Calls the done function of every completion there is; their number. The
 * completions are taken off the ring first: a done function may queue,
 * submit or settle. */
static unsigned ring_reap(pk__loop *loop) {
  unsigned total = 0;
  for (;;) {
    struct io_uring_cqe *cqes[64];
    unsigned n = io_uring_peek_batch_cqe(loop->ring, cqes, 64);
    if (!n) return total;
    pk__send *ops[64];
    int res[64];
    for (unsigned i = 0; i < n; i++) {
      ops[i] = io_uring_cqe_get_data(cqes[i]); /* NULL: a cancel's own completion */
      res[i] = cqes[i]->res;
    }
    io_uring_cq_advance(loop->ring, n);
    for (unsigned i = 0; i < n; i++) {
      if (!ops[i]) continue;
      ops[i]->queued = 0;
      ops[i]->done(loop, ops[i], res[i]);
    }
    total += n;
  }
}

void pk__loop_flush(pk__loop *loop) {
  if (!loop->ring) return;
  /* Bounded: a done function sends what a short send left with send(2), so
   * a round queues nothing new in practice. */
  for (int round = 0; round < 8; round++) {
    ring_submit(loop);
    if (!ring_reap(loop) && !loop->ring_unsubmitted) return;
  }
}

bool pk__loop_send(pk__loop *loop, int fd, const void *buf, size_t len, pk__send *op) {
  if (!loop->ring || loop->in_direct || op->direct || len > UINT32_MAX) return false;
  struct io_uring_sqe *sqe = io_uring_get_sqe(loop->ring);
  if (!sqe) { /* a full queue: submit what is there (their completions are read at the flush) */
    ring_submit(loop);
    sqe = io_uring_get_sqe(loop->ring);
    if (!sqe) return false;
  }
  /* MSG_DONTWAIT: a full socket answers -EAGAIN at once (send_done then
   * waits for EPOLLOUT), as send(2) does; without it the kernel would
   * park the send on the socket and complete it later, on this thread's
   * next entry, holding the buffer meanwhile. */
  io_uring_prep_send(sqe, fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  io_uring_sqe_set_data(sqe, op);
  op->len = (uint32_t)len;
  op->queued = 1;
  loop->ring_unsubmitted++;
  atomic_fetch_add_explicit(&loop->st_ring_sends, 1, memory_order_relaxed);
  return true;
}

void pk__loop_send_settle(pk__loop *loop, pk__send *op) {
  if (!op->queued || !loop->ring) return;
  pk__loop_flush(loop); /* the usual case: the kernel answers at submission */
  if (!op->queued) return;
  /* Still in the kernel (waiting for room): cancel it, and wait for both answers. */
  struct io_uring_sqe *sqe = io_uring_get_sqe(loop->ring);
  if (!sqe) {
    ring_submit(loop);
    sqe = io_uring_get_sqe(loop->ring);
  }
  if (sqe) {
    io_uring_prep_cancel(sqe, op, 0);
    io_uring_sqe_set_data(sqe, NULL);
    loop->ring_unsubmitted++;
  }
  for (int i = 0; op->queued && i < 1000; i++) {
    ring_submit(loop);
    if (ring_reap(loop)) continue;
    struct io_uring_cqe *cqe;
    struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 10 * 1000 * 1000};
    (void)io_uring_wait_cqe_timeout(loop->ring, &cqe, &ts);
  }
}

static void ring_event(pk__loop *loop, pk__io *io, uint32_t events) {
  PK_UNUSED(io);
  PK_UNUSED(events);
  pk__loop_flush(loop);
}

/* The ring of the io_uring backend: made and checked (the kernel may refuse
 * io_uring_setup(2): kernel.io_uring_disabled, a seccomp filter such as
 * Docker's default, an old kernel; or lack IORING_OP_SEND). 0 with or
 * without it, or -PK_E_IO_URING when PK_IO_URING asked for it. */
static int ring_open(pk__loop *loop, int backend) {
  if (backend != PK_IO_AUTO && backend != PK_IO_URING) return 0;
  int fail = backend == PK_IO_URING ? -PK_E_IO_URING : 0;
  struct io_uring *ring = pk__calloc(1, sizeof *ring);
  if (!ring) return fail;
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  /* Completions are read by this thread after each submit: no interrupt
   * to run them (Linux 5.19; older kernels refuse the flag). */
  p.flags = IORING_SETUP_COOP_TASKRUN;
  int r = io_uring_queue_init_params(PK_RING_ENTRIES, ring, &p);
  if (r == -EINVAL) {
    memset(&p, 0, sizeof p);
    r = io_uring_queue_init_params(PK_RING_ENTRIES, ring, &p);
  }
  if (r < 0) {
    pk__free(ring);
    return fail;
  }
  struct io_uring_probe *probe = io_uring_get_probe_ring(ring);
  bool ok = probe && io_uring_opcode_supported(probe, IORING_OP_SEND) &&
            io_uring_opcode_supported(probe, IORING_OP_ASYNC_CANCEL);
  if (probe) io_uring_free_probe(probe);
  loop->ring_io.handler = ring_event;
  if (!ok || pk__io_add(loop, ring->ring_fd, &loop->ring_io, EPOLLIN) < 0) {
    io_uring_queue_exit(ring);
    pk__free(ring);
    return fail;
  }
  loop->ring = ring;
  return 0;
}

int pk__loop_open(pk__loop *loop, int backend) {
  loop->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (loop->epfd < 0) return -PK_E_SOCKET;
  loop->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (loop->evfd < 0) return -PK_E_SOCKET;
  loop->wake_io.handler = wake_event;
  if (pk__io_add(loop, loop->evfd, &loop->wake_io, EPOLLIN) < 0) return -PK_E_SOCKET;
  return ring_open(loop, backend);
}

void pk__loop_close(pk__loop *loop) {
  if (loop->ring) {
    io_uring_queue_exit(loop->ring); /* cancels what is left (nothing: every connection is closed) */
    pk__free(loop->ring);
    loop->ring = NULL;
  }
  if (loop->epfd >= 0) close(loop->epfd);
  if (loop->evfd >= 0) close(loop->evfd);
  loop->epfd = loop->evfd = -1;
}

void pk__loop_wake(pk__loop *loop) {
  uint64_t one = 1;
  atomic_fetch_add_explicit(&loop->st_wakeups, 1, memory_order_relaxed);
  ssize_t r = write(loop->evfd, &one, sizeof one);
  PK_UNUSED(r);
}

/* --------------------------------------------------------------- timers */

/* Moves the slot `s` to index i, telling its timer. */
static inline void heap_put(pk__heap *h, uint32_t i, pk__heap_slot s) {
  h->items[i] = s;
  s.timer->heap_index = i;
}

static void heap_up(pk__heap *h, uint32_t i) {
  pk__heap_slot s = h->items[i];
  while (i > 0) {
    uint32_t parent = (i - 1) / 2;
    if (h->items[parent].deadline <= s.deadline) break;
    heap_put(h, i, h->items[parent]);
    i = parent;
  }
  heap_put(h, i, s);
}

static void heap_down(pk__heap *h, uint32_t i) {
  pk__heap_slot s = h->items[i];
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, m = l;
    if (l >= h->len) break;
    if (r < h->len && h->items[r].deadline < h->items[l].deadline) m = r;
    if (h->items[m].deadline >= s.deadline) break;
    heap_put(h, i, h->items[m]);
    i = m;
  }
  heap_put(h, i, s);
}

static void overflow_unlink(pk__heap *h, pk__timer *t) {
  if (t->ov_prev) t->ov_prev->ov_next = t->ov_next;
  else h->overflow = t->ov_next;
  if (t->ov_next) t->ov_next->ov_prev = t->ov_prev;
  t->ov_prev = t->ov_next = NULL;
}

void pk__timer_cancel(pk__loop *loop, pk__timer *t) {
  pk__heap *h = &loop->timers;
  uint32_t i = t->heap_index;
  if (i == PK_TIMER_IDLE) return;
  if (i == PK_TIMER_OVERFLOW) {
    overflow_unlink(h, t);
    t->heap_index = PK_TIMER_IDLE;
    return;
  }
  t->heap_index = PK_TIMER_IDLE;
  h->len--;
  if (i == h->len) return;
  pk__heap_slot last = h->items[h->len];
  heap_put(h, i, last);
  if (i > 0 && h->items[(i - 1) / 2].deadline > last.deadline) heap_up(h, i);
  else heap_down(h, i);
}

void pk__timer_arm(pk__loop *loop, pk__timer *t, uint64_t deadline) {
  pk__heap *h = &loop->timers;
  if (t->heap_index == PK_TIMER_OVERFLOW) {
    t->deadline = deadline;
    return;
  }
  if (t->heap_index != PK_TIMER_IDLE) {
    uint64_t old = t->deadline;
    t->deadline = deadline;
    h->items[t->heap_index].deadline = deadline;
    if (deadline < old) heap_up(h, t->heap_index);
    else heap_down(h, t->heap_index);
    return;
  }
  if (h->len == h->cap) {
    uint32_t cap = h->cap ? h->cap * 2 : 256;
    pk__heap_slot *items = pk__realloc(h->items, cap * sizeof *items);
    if (!items) {
      /* Out of memory: keep the deadline in the overflow list (no allocation). */
      t->deadline = deadline;
      t->heap_index = PK_TIMER_OVERFLOW;
      t->ov_prev = NULL;
      t->ov_next = h->overflow;
      if (h->overflow) h->overflow->ov_prev = t;
      h->overflow = t;
      return;
    }
    h->items = items;
    h->cap = cap;
  }
  t->deadline = deadline;
  uint32_t i = h->len++;
  heap_put(h, i, (pk__heap_slot){deadline, t});
  heap_up(h, i);
}

void pk__loop_run_timers(pk__loop *loop) {
  pk__heap *h = &loop->timers;
  while (h->len && h->items[0].deadline <= loop->now) {
    pk__timer *t = h->items[0].timer;
    pk__timer_cancel(loop, t);
    t->fire(loop, t);
  }
  /* A fired timer may arm or cancel others: rescan from the head each time. */
  for (pk__timer *t = h->overflow; t;) {
    if (t->deadline > loop->now) {
      t = t->ov_next;
      continue;
    }
    pk__timer_cancel(loop, t);
    t->fire(loop, t);
    t = h->overflow;
  }
}

uint64_t pk__loop_next_deadline(pk__loop *loop) {
  pk__heap *h = &loop->timers;
  uint64_t d = h->len ? h->items[0].deadline : UINT64_MAX;
  for (pk__timer *t = h->overflow; t; t = t->ov_next)
    if (t->deadline < d) d = t->deadline;
  return d;
}

int pk__loop_next_timeout(pk__loop *loop) {
  uint64_t d = pk__loop_next_deadline(loop);
  if (d == UINT64_MAX) return -1;
  if (d <= loop->now) return 0;
  uint64_t ms = (d - loop->now + 999999) / 1000000; /* round up: never wake early */
  return ms > 3600000 ? 3600000 : (int)ms;
}

/* ---------------------------------------------------------- read buffers */

char *pk__rbuf_get(pk__loop *loop, size_t cap) {
  if (cap == PK_RBUF_SMALL && loop->small_bufs.len) return loop->small_bufs.items[--loop->small_bufs.len];
  if (cap == PK_RBUF_SIZE && loop->rbufs.len) return loop->rbufs.items[--loop->rbufs.len];
  if (cap == PK_BIGBUF_SIZE && loop->bigbuf) {
    char *b = loop->bigbuf;
    loop->bigbuf = NULL;
    return b;
  }
  return pk__malloc(cap);
}

static void list_put(pk__buflist *l, char *buf, uint32_t keep) {
  if (l->len == l->cap) {
    uint32_t ncap = l->cap ? l->cap * 2 : 64;
    char **nb = l->cap < keep ? pk__realloc(l->items, ncap * sizeof *nb) : NULL;
    if (!nb) {
      pk__free(buf);
      return;
    }
    l->items = nb;
    l->cap = ncap;
  }
  l->items[l->len++] = buf;
}

void pk__rbuf_put(pk__loop *loop, char *buf, size_t cap) {
  if (!buf) return;
  if (cap == PK_RBUF_SMALL) list_put(&loop->small_bufs, buf, UINT32_MAX);
  else if (cap == PK_RBUF_SIZE) list_put(&loop->rbufs, buf, PK_RBUF_KEEP);
  else if (cap == PK_BIGBUF_SIZE && !loop->bigbuf) loop->bigbuf = buf; /* large bodies come one after another */
  else pk__free(buf); /* grown for a large head: rare, not worth keeping */
}

void pk__rbufs_free(pk__loop *loop) {
  pk__buflist *lists[2] = {&loop->small_bufs, &loop->rbufs};
  for (int i = 0; i < 2; i++) {
    for (uint32_t j = 0; j < lists[i]->len; j++) pk__free(lists[i]->items[j]);
    pk__free(lists[i]->items);
    *lists[i] = (pk__buflist){0};
  }
  pk__free(loop->bigbuf);
  loop->bigbuf = NULL;
}
