/* The pool's decision function (pk_pool.c) without sockets: linked with
 * nothing but pk_error.c, driven by events on entries and waiters made
 * here. LIFO reuse, the per-origin cap, the FIFO wait queue, idle timeouts,
 * a server close while idle, the retry's fresh connection, and the
 * descriptor limit. ASan+UBSan, LeakSanitizer at exit. */
#include "pk_pool.h"

#include "check.h"

int pk_test_failures;

typedef struct {
  pk__pool_entry e;
  int id;
} conn;

typedef struct {
  pk__link link;
  int id;
} waiter;

static const pk__pool_limits lim2 = {.cap = 2, .idle_timeout_ns = 10};

static pk__pool_decision ev(pk__pool *p, const pk__pool_limits *lim, pk__pool_event_kind kind, conn *c, waiter *w,
                            uint64_t now) {
  pk__pool_event e = {.kind = kind, .entry = c ? &c->e : NULL, .waiter = w ? &w->link : NULL, .now = now};
  return pk__pool_decide(p, lim, &e);
}

static int conn_id(pk__pool_decision d) { return d.entry ? PK_CONTAINER_OF(d.entry, conn, e)->id : 0; }
static int waiter_id(pk__pool_decision d) { return d.waiter ? PK_CONTAINER_OF(d.waiter, waiter, link)->id : 0; }

/* Two connections open and park; the most recently parked is reused first. */
static void test_lifo_reuse(void) {
  pk__pool p;
  pk__pool_init(&p);
  conn a = {.id = 1}, b = {.id = 2};
  waiter w1 = {.id = 1}, w2 = {.id = 2}, w3 = {.id = 3};
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w1, 0).action, PK_POOL_OPEN);
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w2, 0).action, PK_POOL_OPEN);
  pk__pool_decision d = ev(&p, &lim2, PK_POOL_RELEASE, &a, NULL, 1);
  EXPECT_EQ(d.action, PK_POOL_PARK);
  EXPECT_EQ(d.at, 11);
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_RELEASE, &b, NULL, 2).action, PK_POOL_PARK);
  EXPECT(a.e.idle && b.e.idle);
  d = ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w3, 3);
  EXPECT_EQ(d.action, PK_POOL_REUSE);
  EXPECT_EQ(conn_id(d), 2);
  EXPECT_EQ(waiter_id(d), 3);
  EXPECT(!b.e.idle);
  d = ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w1, 3);
  EXPECT_EQ(d.action, PK_POOL_REUSE);
  EXPECT_EQ(conn_id(d), 1);
  EXPECT(!pk__pool_has_idle(&p));
  EXPECT_EQ(p.conns, 2);
}

/* At the cap a request waits; waiters are served in arrival order, by a
 * released connection first, then by a closed one's slot. */
static void test_cap_and_fifo(void) {
  pk__pool p;
  pk__pool_init(&p);
  conn a = {.id = 1}, b = {.id = 2};
  waiter w[6];
  for (int i = 0; i < 6; i++) w[i] = (waiter){.id = i + 1};
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w[0], 0).action, PK_POOL_OPEN);
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w[1], 0).action, PK_POOL_OPEN);
  for (int i = 2; i < 6; i++) EXPECT_EQ(ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w[i], 0).action, PK_POOL_WAIT);
  EXPECT_EQ(p.conns, 2);
  pk__pool_decision d = ev(&p, &lim2, PK_POOL_RELEASE, &a, NULL, 1);
  EXPECT_EQ(d.action, PK_POOL_HAND_OVER);
  EXPECT_EQ(conn_id(d), 1);
  EXPECT_EQ(waiter_id(d), 3);
  EXPECT(!a.e.idle);
  d = ev(&p, &lim2, PK_POOL_RELEASE, &b, NULL, 1);
  EXPECT_EQ(waiter_id(d), 4);
  /* b closes: its slot goes to the next waiter, a new connection. */
  d = ev(&p, &lim2, PK_POOL_CLOSE, &b, NULL, 2);
  EXPECT_EQ(d.action, PK_POOL_OPEN);
  EXPECT_EQ(waiter_id(d), 5);
  EXPECT_EQ(p.conns, 2);
  d = ev(&p, &lim2, PK_POOL_RELEASE, &a, NULL, 3);
  EXPECT_EQ(d.action, PK_POOL_HAND_OVER);
  EXPECT_EQ(waiter_id(d), 6);
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_RELEASE, &a, NULL, 4).action, PK_POOL_PARK);
  /* Shutting down, a closed slot is given to nobody. */
  waiter late = {.id = 7}, later = {.id = 8};
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &late, 5).action, PK_POOL_REUSE);
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &later, 5).action, PK_POOL_WAIT);
  pk__pool_limits stopping = lim2;
  stopping.stopping = true;
  EXPECT_EQ(ev(&p, &stopping, PK_POOL_CLOSE, &a, NULL, 6).action, PK_POOL_NOTHING);
  EXPECT_EQ(p.conns, 1);
  pk__list_remove(&later.link);
}

/* The idle timer: early, it is armed again for the expiry; at the expiry
 * the connection leaves the idle list and is closed; a busy one's timer
 * does nothing. */
static void test_idle_timeout(void) {
  pk__pool p;
  pk__pool_init(&p);
  conn a = {.id = 1}, b = {.id = 2};
  waiter w1 = {.id = 1}, w2 = {.id = 2}, w3 = {.id = 3};
  ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w1, 0);
  ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w2, 0);
  ev(&p, &lim2, PK_POOL_RELEASE, &a, NULL, 100);
  pk__pool_decision d = ev(&p, &lim2, PK_POOL_TIMEOUT, &a, NULL, 105);
  EXPECT_EQ(d.action, PK_POOL_REARM);
  EXPECT_EQ(d.at, 110);
  EXPECT(a.e.idle);
  d = ev(&p, &lim2, PK_POOL_TIMEOUT, &a, NULL, 110);
  EXPECT_EQ(d.action, PK_POOL_CLOSE_IT);
  EXPECT_EQ(conn_id(d), 1);
  EXPECT(!a.e.idle);
  EXPECT(!pk__pool_has_idle(&p));
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_TIMEOUT, &b, NULL, 200).action, PK_POOL_NOTHING); /* busy */
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_CLOSE, &a, NULL, 110).action, PK_POOL_NOTHING);
  EXPECT_EQ(p.conns, 1);
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w3, 111).action, PK_POOL_OPEN);
  /* Reused, then parked again: the expiry counts from the second park. */
  ev(&p, &lim2, PK_POOL_RELEASE, &b, NULL, 120);
  ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w1, 125);
  ev(&p, &lim2, PK_POOL_RELEASE, &b, NULL, 128);
  d = ev(&p, &lim2, PK_POOL_TIMEOUT, &b, NULL, 130);
  EXPECT_EQ(d.action, PK_POOL_REARM);
  EXPECT_EQ(d.at, 138);
}

/* The server closes an idle connection: it leaves the idle list at once
 * (the next request takes another), and is closed. */
static void test_server_close_while_idle(void) {
  pk__pool p;
  pk__pool_init(&p);
  conn a = {.id = 1}, b = {.id = 2};
  waiter w1 = {.id = 1}, w2 = {.id = 2}, w3 = {.id = 3};
  ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w1, 0);
  ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w2, 0);
  ev(&p, &lim2, PK_POOL_RELEASE, &a, NULL, 1);
  ev(&p, &lim2, PK_POOL_RELEASE, &b, NULL, 2); /* b first in LIFO order */
  pk__pool_decision d = ev(&p, &lim2, PK_POOL_SERVER_CLOSED, &b, NULL, 3);
  EXPECT_EQ(d.action, PK_POOL_CLOSE_IT);
  EXPECT_EQ(conn_id(d), 2);
  d = ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w3, 4);
  EXPECT_EQ(d.action, PK_POOL_REUSE);
  EXPECT_EQ(conn_id(d), 1);
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_SERVER_CLOSED, &a, NULL, 5).action, PK_POOL_NOTHING); /* busy: its request reads the close */
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_CLOSE, &b, NULL, 5).action, PK_POOL_NOTHING);
  EXPECT_EQ(p.conns, 1);
}

/* The retry-once rule sends a request again on a new connection (a reused
 * one was stale): ACQUIRE `fresh` never reuses; under the cap it opens, at
 * the cap the least recently used idle connection makes room. */
static void test_retry_fresh(void) {
  pk__pool p;
  pk__pool_init(&p);
  conn a = {.id = 1}, b = {.id = 2};
  waiter w1 = {.id = 1}, w2 = {.id = 2}, retry = {.id = 9};
  ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w1, 0);
  ev(&p, &lim2, PK_POOL_RELEASE, &a, NULL, 1);
  pk__pool_event fresh = {.kind = PK_POOL_ACQUIRE, .waiter = &retry.link, .fresh = true, .now = 2};
  pk__pool_decision d = pk__pool_decide(&p, &lim2, &fresh);
  EXPECT_EQ(d.action, PK_POOL_OPEN);
  EXPECT(a.e.idle);
  EXPECT_EQ(p.conns, 2);
  /* At the cap, with a and b idle (b newest): a, the oldest, is closed for it. */
  ev(&p, &lim2, PK_POOL_RELEASE, &b, NULL, 3);
  d = pk__pool_decide(&p, &lim2, &fresh);
  EXPECT_EQ(d.action, PK_POOL_CLOSE_IT);
  EXPECT_EQ(conn_id(d), 1);
  EXPECT(!a.e.idle && b.e.idle);
  d = ev(&p, &lim2, PK_POOL_CLOSE, &a, NULL, 4);
  EXPECT_EQ(d.action, PK_POOL_OPEN);
  EXPECT_EQ(waiter_id(d), 9);
  /* Not fresh: the idle one serves it. */
  d = ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w2, 5);
  EXPECT_EQ(d.action, PK_POOL_REUSE);
  EXPECT_EQ(conn_id(d), 2);
}

/* Out of descriptors: the waiter goes first in line, nothing more is
 * opened while short; a released connection serves the first waiter, and a
 * freed descriptor (a connection that held one closed, here or elsewhere)
 * gives the first waiter a slot. */
static void test_descriptor_limit(void) {
  pk__pool p;
  pk__pool_init(&p);
  conn a = {.id = 1}, b = {.id = 2};
  waiter w1 = {.id = 1}, w2 = {.id = 2}, w3 = {.id = 3}, w4 = {.id = 4};
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w1, 0).action, PK_POOL_OPEN); /* connection a */
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w2, 0).action, PK_POOL_OPEN);
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w3, 0).action, PK_POOL_WAIT);
  /* w2's socket() fails with EMFILE: first in line, ahead of w3. */
  pk__pool_decision d = ev(&p, &lim2, PK_POOL_NO_DESCRIPTOR, NULL, &w2, 1);
  EXPECT_EQ(d.action, PK_POOL_WAIT);
  EXPECT_EQ(p.conns, 1);
  EXPECT(p.fd_short);
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w4, 2).action, PK_POOL_WAIT); /* under the cap, but short */
  d = ev(&p, &lim2, PK_POOL_RELEASE, &a, NULL, 3);
  EXPECT_EQ(d.action, PK_POOL_HAND_OVER);
  EXPECT_EQ(waiter_id(d), 2);
  /* A descriptor freed elsewhere: w3 gets the slot (connection b). */
  d = ev(&p, &lim2, PK_POOL_DESCRIPTOR_FREED, NULL, NULL, 4);
  EXPECT_EQ(d.action, PK_POOL_OPEN);
  EXPECT_EQ(waiter_id(d), 3);
  EXPECT(!p.fd_short);
  EXPECT_EQ(p.conns, 2);
  /* b made its socket: w4 would get the next slot, but the cap is reached. */
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_OPENED, NULL, NULL, 4).action, PK_POOL_NOTHING);
  /* b's socket() fails too; then a closes without having held a
   * descriptor's worth for anyone (say it failed before its socket): still
   * short, nobody opens. */
  ev(&p, &lim2, PK_POOL_NO_DESCRIPTOR, NULL, &w3, 5);
  pk__pool_event closed = {.kind = PK_POOL_CLOSE, .entry = &a.e, .now = 6};
  EXPECT_EQ(pk__pool_decide(&p, &lim2, &closed).action, PK_POOL_NOTHING);
  EXPECT(p.fd_short);
  EXPECT_EQ(p.conns, 0);
  /* A descriptor freed: w3 at last gets connection b. Then w1's socket()
   * fails: short again. b, holding a descriptor, closes: w1 gets its slot. */
  d = ev(&p, &lim2, PK_POOL_DESCRIPTOR_FREED, NULL, NULL, 7);
  EXPECT_EQ(d.action, PK_POOL_OPEN);
  EXPECT_EQ(waiter_id(d), 3);
  EXPECT_EQ(ev(&p, &lim2, PK_POOL_ACQUIRE, NULL, &w1, 8).action, PK_POOL_OPEN);
  ev(&p, &lim2, PK_POOL_NO_DESCRIPTOR, NULL, &w1, 8);
  EXPECT(p.fd_short);
  closed = (pk__pool_event){.kind = PK_POOL_CLOSE, .entry = &b.e, .descriptor = true, .now = 9};
  d = pk__pool_decide(&p, &lim2, &closed);
  EXPECT_EQ(d.action, PK_POOL_OPEN);
  EXPECT_EQ(waiter_id(d), 1);
  EXPECT(!p.fd_short);
  EXPECT_EQ(p.conns, 1);
  /* w1's connection made its socket: the next waiter, w4, opens one too. */
  d = ev(&p, &lim2, PK_POOL_OPENED, NULL, NULL, 10);
  EXPECT_EQ(d.action, PK_POOL_OPEN);
  EXPECT_EQ(waiter_id(d), 4);
  EXPECT_EQ(p.conns, 2);
  EXPECT(pk__list_empty(&p.waiters));
}

int main(void) {
  test_lifo_reuse();
  test_cap_and_fifo();
  test_idle_timeout();
  test_server_close_while_idle();
  test_retry_fresh();
  test_descriptor_limit();
  if (pk_test_failures) {
    fprintf(stderr, "test_pool: %d failures\n", pk_test_failures);
    return 1;
  }
  printf("test_pool: ok\n");
  return 0;
}
