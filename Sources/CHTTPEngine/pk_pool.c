/* The keep-alive pool of one origin, as a pure state machine: LIFO idle
 * list, a cap on connections with a FIFO wait queue, idle expiry, and the
 * descriptor limit. pk__pool_decide takes an event and returns a decision;
 * the connection code (pk_conn.c) acts on it. It opens, closes, arms and
 * writes nothing but its own lists and counters (h2o's socket pool hands a
 * socket to its caller and takes it back; AsyncHTTPClient's pool is a
 * state machine that returns actions). */
#include "pk_pool.h"

void pk__pool_init(pk__pool *p) {
  pk__list_init(&p->idle);
  pk__list_init(&p->waiters);
  p->conns = 0;
  p->fd_short = 0;
}

static pk__pool_decision decision(pk__pool_action action, pk__pool_entry *entry, pk__link *waiter, uint64_t at) {
  return (pk__pool_decision){.action = action, .entry = entry, .waiter = waiter, .at = at};
}

static pk__link *pop_waiter(pk__pool *p) {
  if (pk__list_empty(&p->waiters)) return NULL;
  pk__link *w = p->waiters.next;
  pk__list_remove(w);
  return w;
}

static void unpark(pk__pool_entry *e) {
  pk__list_remove(&e->link);
  e->idle = 0;
}

/* A slot became free (a connection closed, a descriptor was released): the
 * first waiter gets it, unless the engine stops or descriptors are short. */
static pk__pool_decision give_slot(pk__pool *p, const pk__pool_limits *lim) {
  if (lim->stopping || p->fd_short || p->conns >= lim->cap) return decision(PK_POOL_NOTHING, NULL, NULL, 0);
  pk__link *w = pop_waiter(p);
  if (!w) return decision(PK_POOL_NOTHING, NULL, NULL, 0);
  p->conns++;
  return decision(PK_POOL_OPEN, NULL, w, 0);
}

/* `waiter` is queued and a new connection is wanted (a retry at the cap,
 * or a descriptor): the least recently used idle connection, if any, is
 * closed to make room (its close gives the slot to the first waiter). */
static pk__pool_decision room_for(pk__pool *p, pk__link *waiter) {
  if (pk__list_empty(&p->idle)) return decision(PK_POOL_WAIT, NULL, waiter, 0);
  pk__pool_entry *e = PK_CONTAINER_OF(p->idle.prev, pk__pool_entry, link);
  unpark(e);
  return decision(PK_POOL_CLOSE_IT, e, waiter, 0);
}

static pk__pool_decision acquire(pk__pool *p, const pk__pool_limits *lim, const pk__pool_event *ev) {
  if (!ev->fresh && !pk__list_empty(&p->idle)) {
    /* Most recently used first: the one least likely to have been closed
     * by the server's own idle timer. */
    pk__pool_entry *e = PK_CONTAINER_OF(p->idle.next, pk__pool_entry, link);
    unpark(e);
    return decision(PK_POOL_REUSE, e, ev->waiter, 0);
  }
  if (p->conns < lim->cap && !p->fd_short) {
    p->conns++;
    return decision(PK_POOL_OPEN, NULL, ev->waiter, 0);
  }
  pk__list_push_back(&p->waiters, ev->waiter);
  return room_for(p, ev->waiter);
}

static pk__pool_decision release(pk__pool *p, const pk__pool_limits *lim, const pk__pool_event *ev) {
  pk__link *w = pop_waiter(p);
  if (w) return decision(PK_POOL_HAND_OVER, ev->entry, w, 0);
  ev->entry->idle = 1;
  ev->entry->idle_since = ev->now;
  pk__list_push_front(&p->idle, &ev->entry->link);
  return decision(PK_POOL_PARK, ev->entry, NULL, ev->now + lim->idle_timeout_ns);
}

/* An idle connection that expired, or that the server closed, leaves the
 * idle list now (nobody can reuse it before it is closed). */
static pk__pool_decision idle_event(const pk__pool_limits *lim, const pk__pool_event *ev) {
  pk__pool_entry *e = ev->entry;
  if (!e->idle) return decision(PK_POOL_NOTHING, NULL, NULL, 0);
  uint64_t expiry = e->idle_since + lim->idle_timeout_ns;
  if (ev->kind == PK_POOL_TIMEOUT && expiry > ev->now) return decision(PK_POOL_REARM, e, NULL, expiry);
  unpark(e);
  return decision(PK_POOL_CLOSE_IT, e, NULL, 0);
}

pk__pool_decision pk__pool_decide(pk__pool *p, const pk__pool_limits *lim, const pk__pool_event *ev) {
  switch (ev->kind) {
  case PK_POOL_ACQUIRE: return acquire(p, lim, ev);
  case PK_POOL_RELEASE: return release(p, lim, ev);
  case PK_POOL_TIMEOUT:
  case PK_POOL_SERVER_CLOSED: return idle_event(lim, ev);
  case PK_POOL_CLOSE:
    if (ev->entry && ev->entry->idle) unpark(ev->entry);
    if (p->conns) p->conns--;
    if (ev->descriptor) p->fd_short = 0;
    return give_slot(p, lim);
  case PK_POOL_NO_DESCRIPTOR:
    /* The slot reserved for the waiter goes back, and the waiter goes
     * first in line: it waits for a descriptor, not behind later ones. */
    if (p->conns) p->conns--;
    p->fd_short = 1;
    pk__list_push_front(&p->waiters, ev->waiter);
    return room_for(p, ev->waiter);
  case PK_POOL_DESCRIPTOR_FREED:
    p->fd_short = 0;
    return give_slot(p, lim);
  case PK_POOL_OPENED:
    /* After a shortage, one freed descriptor opened one connection; while
     * they succeed, the next waiter gets the next free slot. */
    return give_slot(p, lim);
  }
  return decision(PK_POOL_NOTHING, NULL, NULL, 0);
}
