/* The event loop's machinery, at the bottom of the engine: one epoll
 * instance per loop thread whose events go to the handler stored with each
 * registration (redis ae.c's shape: the loop calls a pointer, never a
 * connection function by name), a timer heap, the eventfd wake-up and the
 * per-loop read buffers. What a loop pass does with its queues is
 * pk_engine.c's. */
#include "pk_internal.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define PK_MAX_EVENTS 256

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

int pk__loop_open(pk__loop *loop) {
  loop->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (loop->epfd < 0) return -PK_E_SOCKET;
  loop->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (loop->evfd < 0) return -PK_E_SOCKET;
  loop->wake_io.handler = wake_event;
  if (pk__io_add(loop, loop->evfd, &loop->wake_io, EPOLLIN) < 0) return -PK_E_SOCKET;
  return 0;
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

