/* The keep-alive pool (pk_pool.c): it decides, the connection acts. Not
 * installed. */
#ifndef PK_POOL_H
#define PK_POOL_H

#include "pk_internal.h"

/* pk_pool.c: decides; the connection acts */
typedef enum pk__pool_action {
  PK_POOL_REUSE, /* conn: an idle connection taken off its list, now the request's */
  PK_POOL_OPEN,  /* a slot of the origin is reserved: open a connection (or pk__pool_unreserve) */
  PK_POOL_WAIT,  /* the request waits in the origin's queue */
} pk__pool_action;
/* Finds (or makes) req's origin and decides. 0 or -PK_E_NOMEM. */
int pk__pool_acquire(pk__loop *loop, pk__req *req, bool fresh, pk__pool_action *action, pk__conn **conn);
/* Whether `req`'s origin has an idle connection (finds or makes the origin
 * and notes it in the request, as acquire would). */
bool pk__pool_has_idle(pk__loop *loop, pk__req *req);
void pk__pool_unreserve(pk__loop *loop, pk__origin *o);
/* After a clean response: the waiter that takes the connection now, or NULL
 * (the connection was parked idle). */
pk__req *pk__pool_release(pk__loop *loop, pk__conn *conn);
/* A connection is closing: out of the idle list and its slot freed. Returns
 * the first waiter with that slot reserved for it (open a connection), or NULL. */
pk__req *pk__pool_forget(pk__loop *loop, pk__conn *conn);
pk__conn *pk__pool_any_idle(pk__loop *loop); /* for shutdown */
void pk__pool_free(pk__loop *loop);

#endif
