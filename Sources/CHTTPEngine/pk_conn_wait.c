/* The submitter's wait (the direct pass, pk_engine.c): the thread that
 * wrote a request on a sleeping loop waits for its answer on the socket and
 * runs the connection's event function there. Calls the connection only
 * through its registration's handler. */
#include "pk_conn.h"

#include <poll.h>

/* The socket goes back into the loop's epoll set (EPOLL_CTL_MOD with the
 * usual mask: an edge-triggered registration reports what is ready now, so
 * nothing that arrived while it was out is missed). */
static void conn_arm(pk__loop *loop, pk__conn *conn) {
  if (!conn->disarmed) return;
  conn->disarmed = 0;
  if (loop->disarmed == conn) loop->disarmed = NULL;
  if (conn->state != PK_CONN_CLOSED && conn->fd >= 0) (void)pk__io_rearm(loop, conn->fd, &conn->io, PK_CONN_EVENTS);
}

void pk__conn_arm_disarmed(pk__loop *loop) {
  if (loop->disarmed) conn_arm(loop, loop->disarmed);
}


/* A request written by a direct pass (pk_engine.c) on a pooled connection
 * of a loop with nothing else in flight: the submitting thread waits for
 * the answer on the socket itself (ppoll, up to wait_ns, the first
 * inline_spin_us of it busy-polled) and runs the
 * connection's event function there, so the response is parsed, the
 * request finished and its continuation resumed on the thread that will
 * run the caller next: no wake-up of the loop thread, one thread switch
 * per request instead of two. The socket is out of the loop's epoll set
 * meanwhile (a readable socket would wake the loop for nothing); an
 * eventfd wake-up (work for the loop: a submission, a cancel, a post) ends
 * the wait at once. A request still unanswered then, or one whose
 * connection needs the loop (a write that blocks, a body still to send),
 * goes back to the loop; a connection back in the pool stays out until
 * the loop's next pass, so the next direct pass needs no epoll_ctl. */
int pk__conn_wait_inline(pk__loop *loop, pk__req *req, uint64_t id, uint64_t wait_ns) {
  pk__conn *conn = req->conn;
  if (!conn || conn->req != req || conn->state != PK_CONN_ACTIVE || conn->want_write || !req->body_done ||
      req->expect_wait || conn->fd < 0)
    return PK__WAIT_SKIPPED;
  if (loop->disarmed && loop->disarmed != conn) conn_arm(loop, loop->disarmed);
  if (!conn->disarmed) {
    if (pk__io_rearm(loop, conn->fd, &conn->io, 0) != 0) return PK__WAIT_SKIPPED;
    conn->disarmed = 1;
    loop->disarmed = conn;
  }
  int outcome = PK__WAIT_ANSWERED;
  uint64_t start = pk__now_ns(), end = start + wait_ns;
  /* Busy-poll the first inline_spin_us of the wait, unless a recent spin
   * found nothing (the header says why and how long it backs off). */
  uint64_t spin_end = start;
  if (loop->eng->cfg.inline_spin_us) {
    if (loop->spin_skip) loop->spin_skip--;
    else spin_end = start + (uint64_t)loop->eng->cfg.inline_spin_us * 1000u;
    if (spin_end > end) spin_end = end;
  }
  bool spun = false, missed = false;
  for (;;) {
    uint32_t events = 0;
    if (!conn->read_again) { /* bytes OpenSSL already holds need no poll */
      uint64_t now = pk__now_ns();
      struct pollfd p[2] = {{.fd = conn->fd, .events = POLLIN | POLLRDHUP}, {.fd = loop->evfd, .events = POLLIN}};
      int n = 0;
      if (now < spin_end) {
        spun = true;
        do {
          struct timespec zero = {0, 0};
          n = ppoll(p, 2, &zero, NULL);
        } while (n == 0 && (now = pk__now_ns()) < spin_end);
        if (n == 0) missed = true;
      }
      if (n == 0) {
        struct timespec ts = {.tv_sec = (time_t)((end - now) / 1000000000u), .tv_nsec = (long)((end - now) % 1000000000u)};
        n = now >= end ? 0 : ppoll(p, 2, &ts, NULL);
      }
      if (n == 0) outcome = PK__WAIT_TIMED_OUT;
      if (n <= 0 || p[1].revents) break; /* time is up, or the loop has work */
      if (p[0].revents & POLLIN) events |= EPOLLIN;
      if (p[0].revents & POLLRDHUP) events |= EPOLLRDHUP;
      if (p[0].revents & POLLHUP) events |= EPOLLHUP;
      if (p[0].revents & POLLERR) events |= EPOLLERR;
    } else if (pk__now_ns() >= end) {
      break;
    }
    loop->now = pk__now_ns();
    conn->io.handler(loop, &conn->io, events); /* pk_conn.c's event function */
    /* Finished (its id is cleared), or no longer this connection's. */
    if (atomic_load_explicit(&req->id, memory_order_relaxed) != id || conn->req != req) break;
    if (conn->state != PK_CONN_ACTIVE || conn->want_write) break;
    /* The head is in and the body is not: the rest is the loop's (a
     * streamed response resumes its caller at the head, which this pass's
     * end does; a large body is not read on the caller's thread). */
    if (req->got_head || req->paused) break;
  }
  /* Pooled again: it stays out until the loop's next pass. Anything else
   * is the loop's to watch now. */
  if (conn->state != PK_CONN_IDLE) conn_arm(loop, conn);
  bool answered = atomic_load_explicit(&req->id, memory_order_relaxed) != id;
  if (answered) atomic_fetch_add_explicit(&loop->st_inline, 1, memory_order_relaxed);
  if (missed) {
    /* The server is slower than the spin: the next waits sleep at once. */
    atomic_fetch_add_explicit(&loop->st_spin_misses, 1, memory_order_relaxed);
    if (loop->spin_backoff < 16) loop->spin_backoff = 16;
    loop->spin_skip = loop->spin_backoff;
    if (loop->spin_backoff < 1024) loop->spin_backoff *= 2;
  } else if (spun && answered) {
    atomic_fetch_add_explicit(&loop->st_spin_hits, 1, memory_order_relaxed);
    loop->spin_backoff = 16;
  }
  return outcome;
}
