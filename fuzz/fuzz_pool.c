/* libFuzzer harness for the pool's decision function (pk_pool.c): the
 * input is a sequence of events (acquire, release, close, idle timeout,
 * server close, the descriptor limit reached and a descriptor freed, time
 * passing, a waiter cancelled) on a few connections and waiters. The
 * harness acts on each decision as the connection code does (an opened
 * connection is busy at once, unless the descriptor limit is on; a
 * connection to close is closed and the pool told), then checks:
 *   - no connection is both idle in the pool and busy with a request;
 *   - the pool's idle list is exactly the connections it parked;
 *   - the cap is never exceeded, and the pool counts every open connection;
 *   - no waiter is starved while a connection is free: waiters queue only
 *     when no connection is idle and no slot is free (or descriptors are
 *     short).
 * Linked with pk_pool.c and pk_error.c only. */
#include "pk_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCONN 8
#define NWAIT 16

enum { C_FREE, C_BUSY, C_IDLE };
enum { W_OUT, W_QUEUED, W_SERVED };

typedef struct {
  pk__pool_entry e;
  int state;
  int waiter; /* busy: the waiter it serves */
} conn;

typedef struct {
  pk__link link;
  int state;
} waiter;

static pk__pool pool;
static pk__pool_limits lim;
static conn conns[NCONN];
static waiter waiters[NWAIT];
static uint64_t now;
static int emfile; /* the next opens fail with EMFILE */

#define CHECK(c)                                                           \
  do {                                                                     \
    if (!(c)) {                                                            \
      fprintf(stderr, "fuzz_pool: %s:%d: %s\n", __FILE__, __LINE__, #c);   \
      abort();                                                             \
    }                                                                      \
  } while (0)

static void decide(pk__pool_event ev);

static conn *of_entry(pk__pool_entry *e) { return PK_CONTAINER_OF(e, conn, e); }
static waiter *of_link(pk__link *l) { return PK_CONTAINER_OF(l, waiter, link); }

static void serve(conn *c, waiter *w) {
  c->state = C_BUSY;
  c->waiter = (int)(w - waiters);
  w->state = W_SERVED;
}

static void act(pk__pool_decision d) {
  conn *c = d.entry ? of_entry(d.entry) : NULL;
  waiter *w = d.waiter ? of_link(d.waiter) : NULL;
  switch (d.action) {
  case PK_POOL_NOTHING: return;
  case PK_POOL_REUSE:
    CHECK(c->state == C_IDLE && !c->e.idle && w->state == W_OUT);
    serve(c, w);
    return;
  case PK_POOL_OPEN: {
    CHECK(w->state == W_OUT || w->state == W_QUEUED);
    CHECK(!pk__linked(&w->link));
    if (emfile) {
      w->state = W_OUT;
      decide((pk__pool_event){.kind = PK_POOL_NO_DESCRIPTOR, .waiter = &w->link});
      return;
    }
    int i = 0;
    while (i < NCONN && conns[i].state != C_FREE) i++;
    CHECK(i < NCONN); /* more open than the cap allows */
    memset(&conns[i].e, 0, sizeof conns[i].e);
    serve(&conns[i], w);
    decide((pk__pool_event){.kind = PK_POOL_OPENED});
    return;
  }
  case PK_POOL_WAIT:
    CHECK(pk__linked(&w->link));
    w->state = W_QUEUED;
    return;
  case PK_POOL_PARK:
    CHECK(c->state == C_BUSY && c->e.idle && d.at == now + lim.idle_timeout_ns);
    waiters[c->waiter].state = W_OUT;
    c->state = C_IDLE;
    return;
  case PK_POOL_HAND_OVER:
    CHECK(c->state == C_BUSY && !c->e.idle && w->state == W_QUEUED && !pk__linked(&w->link));
    waiters[c->waiter].state = W_OUT;
    serve(c, w);
    return;
  case PK_POOL_CLOSE_IT:
    CHECK(c->state == C_IDLE && !c->e.idle);
    if (w) {
      CHECK(pk__linked(&w->link));
      w->state = W_QUEUED;
    }
    c->state = C_FREE;
    decide((pk__pool_event){.kind = PK_POOL_CLOSE, .entry = &c->e, .descriptor = true});
    return;
  case PK_POOL_REARM:
    CHECK(c->state == C_IDLE && c->e.idle && d.at > now);
    return;
  }
  CHECK(0);
}

static void decide(pk__pool_event ev) {
  ev.now = now;
  act(pk__pool_decide(&pool, &lim, &ev));
}

static void check_invariants(void) {
  uint32_t open = 0, idle = 0, listed = 0, queued = 0, listed_waiters = 0;
  for (int i = 0; i < NCONN; i++) {
    conn *c = &conns[i];
    CHECK(!(c->e.idle && c->state == C_BUSY));
    CHECK(c->e.idle == (c->state == C_IDLE));
    if (c->state != C_FREE) open++;
    if (c->state == C_IDLE) idle++;
  }
  for (pk__link *l = pool.idle.next; l != &pool.idle; l = l->next) {
    CHECK(of_entry(PK_CONTAINER_OF(l, pk__pool_entry, link))->state == C_IDLE);
    listed++;
  }
  for (int i = 0; i < NWAIT; i++)
    if (waiters[i].state == W_QUEUED) queued++;
  for (pk__link *l = pool.waiters.next; l != &pool.waiters; l = l->next) {
    CHECK(of_link(l)->state == W_QUEUED);
    listed_waiters++;
  }
  CHECK(listed == idle && listed_waiters == queued);
  CHECK(pool.conns <= lim.cap);
  CHECK(pool.conns == open);
  if (queued) CHECK(!idle && (pool.fd_short || pool.conns == lim.cap));
}

static conn *pick_conn(uint8_t b, int state) {
  for (int k = 0; k < NCONN; k++) {
    conn *c = &conns[(b + k) % NCONN];
    if (c->state == state) return c;
  }
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  pk__pool_init(&pool);
  memset(conns, 0, sizeof conns);
  memset(waiters, 0, sizeof waiters);
  lim = (pk__pool_limits){.cap = 1 + data[0] % 4, .idle_timeout_ns = 1 + data[1] % 8};
  now = 0;
  emfile = 0;
  for (size_t i = 2; i + 1 < size; i += 2) {
    uint8_t op = data[i] % 10, arg = data[i + 1];
    conn *c;
    switch (op) {
    case 0: /* a waiter asks (bit 7 of arg: a retry, fresh) */
      for (int k = 0; k < NWAIT; k++) {
        waiter *w = &waiters[(arg + k) % NWAIT];
        if (w->state != W_OUT) continue;
        decide((pk__pool_event){.kind = PK_POOL_ACQUIRE, .waiter = &w->link, .fresh = (arg & 0x80) != 0});
        break;
      }
      break;
    case 1: /* a busy connection finished its exchange cleanly */
      if ((c = pick_conn(arg, C_BUSY))) decide((pk__pool_event){.kind = PK_POOL_RELEASE, .entry = &c->e});
      break;
    case 2: /* a busy connection failed and closes; its request is done */
      if ((c = pick_conn(arg, C_BUSY))) {
        waiters[c->waiter].state = W_OUT;
        c->state = C_FREE;
        decide((pk__pool_event){.kind = PK_POOL_CLOSE, .entry = &c->e, .descriptor = (arg & 1) != 0});
      }
      break;
    case 3: /* an idle timer fires (or a stale one on a busy connection) */
      c = &conns[arg % NCONN];
      if (c->state != C_FREE) decide((pk__pool_event){.kind = PK_POOL_TIMEOUT, .entry = &c->e});
      break;
    case 4: /* the server closes (a busy connection: its request sees it) */
      c = &conns[arg % NCONN];
      if (c->state != C_FREE) decide((pk__pool_event){.kind = PK_POOL_SERVER_CLOSED, .entry = &c->e});
      break;
    case 5: emfile = arg & 1; break;
    case 6: decide((pk__pool_event){.kind = PK_POOL_DESCRIPTOR_FREED}); break;
    case 7: now += arg % 4; break;
    case 8: { /* a queued waiter is cancelled (pk__req_finish unlinks it) */
      waiter *w = &waiters[arg % NWAIT];
      if (w->state == W_QUEUED) {
        pk__list_remove(&w->link);
        w->state = W_OUT;
      }
      break;
    }
    case 9: /* shutdown's sweep: an idle connection closed */
      if ((c = pick_conn(arg, C_IDLE))) {
        c->state = C_FREE;
        decide((pk__pool_event){.kind = PK_POOL_CLOSE, .entry = &c->e, .descriptor = true});
      }
      break;
    }
    check_invariants();
  }
  return 0;
}
