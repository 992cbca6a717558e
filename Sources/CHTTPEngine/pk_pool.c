/* The keep-alive pool of one origin, as a pure state machine: LIFO idle
 * list, a cap on connections with a FIFO wait queue, idle expiry, and the
 * descriptor limit. pk__pool_decide (inline, in pk_pool.h) takes an event
 * and returns a decision; the connection code (pk_conn.c) acts on it. It
 * opens, closes, arms and writes nothing but its own lists and counters
 * (h2o's socket pool hands a socket to its caller and takes it back;
 * AsyncHTTPClient's pool is a state machine that returns actions). */
#include "pk_pool.h"

void pk__pool_init(pk__pool *p) {
  pk__list_init(&p->idle);
  pk__list_init(&p->waiters);
  p->conns = 0;
  p->fd_short = 0;
}
