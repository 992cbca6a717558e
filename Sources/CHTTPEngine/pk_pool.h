/* The keep-alive pool of one origin, as a pure state machine (this header
 * and pk_pool.c): it is given an event and returns a decision; the
 * connection code acts on it. It owns its lists and the entries linked in
 * them (a pk__pool_entry embedded in each connection, a pk__link in each
 * request) and nothing else: no socket, timer, buffer or connection field.
 * Its test (ctests/c/test_pool.c) and fuzz harness (fuzz/fuzz_pool.c) link
 * it with nothing but pk_error.c. */
#ifndef PK_POOL_H
#define PK_POOL_H

#include "pk_base.h"

/* A connection as the pool sees it. */
typedef struct pk__pool_entry {
  pk__link link;      /* the idle list */
  uint64_t idle_since; /* when it was parked (ns) */
  uint8_t idle;       /* parked in the idle list */
} pk__pool_entry;

/* One origin's pool. */
typedef struct pk__pool {
  pk__link idle;      /* LIFO: most recently used first */
  pk__link waiters;   /* requests waiting for a connection (FIFO), by their pk__link */
  uint32_t conns;     /* slots taken: open connections and those being opened */
  uint8_t fd_short;   /* a socket() found the descriptor limit: open nothing until one is released */
} pk__pool;

/* What the pool is told. */
typedef enum pk__pool_event_kind {
  PK_POOL_ACQUIRE,       /* `waiter` wants a connection; `fresh`: not an idle one (a retry) */
  PK_POOL_RELEASE,       /* `entry` finished an exchange cleanly and can serve another */
  PK_POOL_CLOSE,         /* `entry` (NULL: a slot never used) is closing, from any state: its slot is free;
                            `descriptor`: it held one, so the descriptor limit is no longer reached */
  PK_POOL_TIMEOUT,       /* `entry`'s idle timer fired */
  PK_POOL_SERVER_CLOSED, /* the server closed (or wrote to) `entry` while it was idle */
  PK_POOL_NO_DESCRIPTOR, /* opening for `waiter` found the descriptor limit (EMFILE/ENFILE) */
  PK_POOL_DESCRIPTOR_FREED, /* a descriptor of the engine was released (any origin) */
  PK_POOL_OPENED,        /* a connection opened for a slot went on (no descriptor shortage seen): more may */
} pk__pool_event_kind;

typedef struct pk__pool_event {
  pk__pool_event_kind kind;
  pk__pool_entry *entry;
  pk__link *waiter;
  bool fresh;
  bool descriptor;
  uint64_t now; /* ns */
} pk__pool_event;

/* The limits the pool decides by (the engine's configuration). */
typedef struct pk__pool_limits {
  uint32_t cap;             /* connections per origin */
  uint64_t idle_timeout_ns; /* an idle connection's lifetime */
  bool stopping;            /* shutting down: no new connection for a waiter */
} pk__pool_limits;

/* What the connection code does next. */
typedef enum pk__pool_action {
  PK_POOL_NOTHING,  /* nothing to do */
  PK_POOL_REUSE,    /* run `waiter` on `entry`, taken off the idle list */
  PK_POOL_OPEN,     /* a slot is reserved for `waiter`: open a connection (a failure gives it back: CLOSE) */
  PK_POOL_WAIT,     /* `waiter` is queued (FIFO) */
  PK_POOL_PARK,     /* `entry` is in the idle list: arm its idle timer for `at` */
  PK_POOL_HAND_OVER, /* run `waiter` (taken off the queue) on `entry`, which stays busy */
  PK_POOL_CLOSE_IT, /* close `entry` (then tell the pool PK_POOL_CLOSE) */
  PK_POOL_REARM,    /* `entry` is idle but not expired: its idle timer again, for `at` */
} pk__pool_action;

typedef struct pk__pool_decision {
  pk__pool_action action;
  pk__pool_entry *entry;
  pk__link *waiter;
  uint64_t at;
} pk__pool_decision;

void pk__pool_init(pk__pool *p);
static inline bool pk__pool_has_idle(const pk__pool *p) { return !pk__list_empty(&p->idle); }
static inline pk__pool_entry *pk__pool_first_idle(const pk__pool *p) {
  return pk__list_empty(&p->idle) ? NULL : PK_CONTAINER_OF(p->idle.next, pk__pool_entry, link);
}

/* The one function that changes a pool: pk__pool_decide, at the end. It is
 * defined here, inline, so that the compiler may fold it into the
 * connection code's calls, whose event kind is known. */
static inline pk__pool_decision pk__pool_decision_of(pk__pool_action action, pk__pool_entry *entry, pk__link *waiter, uint64_t at) {
  return (pk__pool_decision){.action = action, .entry = entry, .waiter = waiter, .at = at};
}

static inline pk__link *pk__pool_pop_waiter(pk__pool *p) {
  if (pk__list_empty(&p->waiters)) return NULL;
  pk__link *w = p->waiters.next;
  pk__list_remove(w);
  return w;
}

static inline void pk__pool_unpark(pk__pool_entry *e) {
  pk__list_remove(&e->link);
  e->idle = 0;
}

/* A slot became free (a connection closed, a descriptor was released): the
 * first waiter gets it, unless the engine stops or descriptors are short. */
static inline pk__pool_decision pk__pool_give_slot(pk__pool *p, const pk__pool_limits *lim) {
  if (lim->stopping || p->fd_short || p->conns >= lim->cap) return pk__pool_decision_of(PK_POOL_NOTHING, NULL, NULL, 0);
  pk__link *w = pk__pool_pop_waiter(p);
  if (!w) return pk__pool_decision_of(PK_POOL_NOTHING, NULL, NULL, 0);
  p->conns++;
  return pk__pool_decision_of(PK_POOL_OPEN, NULL, w, 0);
}

/* `waiter` is queued and a new connection is wanted (a retry at the cap,
 * or a descriptor): the least recently used idle connection, if any, is
 * closed to make room (its close gives the slot to the first waiter). */
static inline pk__pool_decision pk__pool_room_for(pk__pool *p, pk__link *waiter) {
  if (pk__list_empty(&p->idle)) return pk__pool_decision_of(PK_POOL_WAIT, NULL, waiter, 0);
  pk__pool_entry *e = PK_CONTAINER_OF(p->idle.prev, pk__pool_entry, link);
  pk__pool_unpark(e);
  return pk__pool_decision_of(PK_POOL_CLOSE_IT, e, waiter, 0);
}

static inline pk__pool_decision pk__pool_acquire(pk__pool *p, const pk__pool_limits *lim, const pk__pool_event *ev) {
  if (!ev->fresh && !pk__list_empty(&p->idle)) {
    /* Most recently used first: the one least likely to have been closed
     * by the server's own idle timer. */
    pk__pool_entry *e = PK_CONTAINER_OF(p->idle.next, pk__pool_entry, link);
    pk__pool_unpark(e);
    return pk__pool_decision_of(PK_POOL_REUSE, e, ev->waiter, 0);
  }
  if (p->conns < lim->cap && !p->fd_short) {
    p->conns++;
    return pk__pool_decision_of(PK_POOL_OPEN, NULL, ev->waiter, 0);
  }
  pk__list_push_back(&p->waiters, ev->waiter);
  return pk__pool_room_for(p, ev->waiter);
}

static inline pk__pool_decision pk__pool_release(pk__pool *p, const pk__pool_limits *lim, const pk__pool_event *ev) {
  pk__link *w = pk__pool_pop_waiter(p);
  if (w) return pk__pool_decision_of(PK_POOL_HAND_OVER, ev->entry, w, 0);
  ev->entry->idle = 1;
  ev->entry->idle_since = ev->now;
  pk__list_push_front(&p->idle, &ev->entry->link);
  return pk__pool_decision_of(PK_POOL_PARK, ev->entry, NULL, ev->now + lim->idle_timeout_ns);
}

/* An idle connection that expired, or that the server closed, leaves the
 * idle list now (nobody can reuse it before it is closed). */
static inline pk__pool_decision pk__pool_idle_event(const pk__pool_limits *lim, const pk__pool_event *ev) {
  pk__pool_entry *e = ev->entry;
  if (!e->idle) return pk__pool_decision_of(PK_POOL_NOTHING, NULL, NULL, 0);
  uint64_t expiry = e->idle_since + lim->idle_timeout_ns;
  if (ev->kind == PK_POOL_TIMEOUT && expiry > ev->now) return pk__pool_decision_of(PK_POOL_REARM, e, NULL, expiry);
  pk__pool_unpark(e);
  return pk__pool_decision_of(PK_POOL_CLOSE_IT, e, NULL, 0);
}

static inline pk__pool_decision pk__pool_decide(pk__pool *p, const pk__pool_limits *lim, const pk__pool_event *ev) {
  switch (ev->kind) {
  case PK_POOL_ACQUIRE: return pk__pool_acquire(p, lim, ev);
  case PK_POOL_RELEASE: return pk__pool_release(p, lim, ev);
  case PK_POOL_TIMEOUT:
  case PK_POOL_SERVER_CLOSED: return pk__pool_idle_event(lim, ev);
  case PK_POOL_CLOSE:
    if (ev->entry && ev->entry->idle) pk__pool_unpark(ev->entry);
    if (p->conns) p->conns--;
    if (ev->descriptor) p->fd_short = 0;
    return pk__pool_give_slot(p, lim);
  case PK_POOL_NO_DESCRIPTOR:
    /* The slot reserved for the waiter goes back, and the waiter goes
     * first in line: it waits for a descriptor, not behind later ones. */
    if (p->conns) p->conns--;
    p->fd_short = 1;
    pk__list_push_front(&p->waiters, ev->waiter);
    return pk__pool_room_for(p, ev->waiter);
  case PK_POOL_DESCRIPTOR_FREED:
    p->fd_short = 0;
    return pk__pool_give_slot(p, lim);
  case PK_POOL_OPENED:
    /* After a shortage, one freed descriptor opened one connection; while
     * they succeed, the next waiter gets the next free slot. */
    return pk__pool_give_slot(p, lim);
  }
  return pk__pool_decision_of(PK_POOL_NOTHING, NULL, NULL, 0);
}

#endif
