/* A connection (pk_conn*.c) and the origin it belongs to: the structures,
 * and the functions the engine and the connection's own files call. Not
 * installed. */
#ifndef PK_CONN_H
#define PK_CONN_H

#include "pk_internal.h"
#include "pk_pool.h"
#include "pk_request.h"

#include <sys/epoll.h>

/* A happy-eyeballs attempt beyond the connection's own socket (RFC 8305):
 * a socket of its own, registered with its own handler, until the race is
 * decided. */
typedef struct pk__attempt {
  pk__io io;
  int fd;                     /* -1: unused or closed */
  uint8_t addr;               /* index into the connection's addresses */
  struct pk__conn *conn;
} pk__attempt;

/* ----------------------------------------------------------- connections */

enum pk__conn_state {
  PK_CONN_RESOLVING = 1,
  PK_CONN_CONNECTING,
  PK_CONN_TUNNEL,             /* CONNECT sent to a proxy, its answer awaited */
  PK_CONN_HANDSHAKE,          /* TLS */
  PK_CONN_ACTIVE,
  PK_CONN_IDLE,
  PK_CONN_CLOSED,
};

struct pk__conn {
  pk__io io;                  /* the loop's handle: its handler is pk_conn.c's event function */
  const struct pk__conn_up *up; /* what its steps report to pk_conn.c */
  pk__send send;              /* a request head queued on the loop's ring (io_uring backend) */
  int fd;
  uint8_t state;
  uint8_t want_write;
  uint8_t reusable;           /* cleared when anything makes the connection unfit for reuse */
  uint8_t addr_index;
  uint8_t read_full;          /* the last read filled the buffer */
  uint8_t clean;              /* its last exchange completed (a close keeps the TLS session) */
  uint8_t writing;            /* inside conn_write */
  uint8_t hup_seen;           /* the peer hung up: read to the end, no later edge will come */
  uint8_t read_again;         /* stopped reading at PK_IO_BUDGET: read on at the next event */
  uint8_t peer_family;        /* 4, 6, or 0 before it connected (timings' remote_family) */
  uint8_t disarmed;           /* out of the epoll set for a submitter's wait (pk__conn_wait_inline) */
  uint16_t peer_port, local_port;
  uint8_t peer_addr[16];      /* copied into each request's timings */
  uint32_t requests;          /* responses completed on this connection */
  struct pk__loop *loop;
  pk__origin *origin;
  pk__req *req;
  pk__pool_entry pool;        /* the pool's record of it (its idle list, since when); only pk_pool.c writes it */
  pk__timer idle_timer;
  const pk__addrs *addrs;     /* borrowed from the DNS cache while connecting */
  /* the race (pk_conn.c): addresses in the order tried, families interleaved */
  uint8_t order[PK_DNS_MAX_ADDRS];
  uint8_t fd_addr;            /* the address of `fd` while connecting */
  uint8_t in_flight;          /* attempts connecting: `fd` and the extra ones */
  uint8_t attempts;           /* attempts opened */
  int last_errno;             /* the latest failed attempt's */
  pk__timer race_timer;       /* the next attempt's start */
  pk__attempt *extra;         /* PK_DNS_MAX_ADDRS slots, allocated at the first overlap, kept with the struct */
  pk__dns_query dnsq;         /* the lookup (pk_dns.c reports through it) */
  pk__tls *tls;               /* NULL for plain HTTP */
  uint64_t wire_out_mark, wire_in_mark; /* BIO counters already charged to a request */
  uint64_t t_tls_start;
  uint64_t t_tunnel_start;
  char *rbuf;
  size_t rcap, rlen;
  size_t woff;
  struct pk__conn *next_free;
};

struct pk__origin {
  struct pk__origin *next;   /* hash chain */
  uint64_t hash;
  uint8_t scheme;
  uint16_t port;
  uint32_t tls_id;           /* TLS settings the connections were made with */
  uint8_t route;             /* pk__route */
  uint16_t connect_port;     /* the origin's port, or the proxy's */
  void *tls_session;         /* last resumable TLS session (https origins) */
  pk__pool pool;             /* its connections and waiters (pk_pool.c decides) */
  pk__link short_link;       /* in the loop's list while pool.fd_short: waiting for a descriptor */
  size_t host_len;
  size_t route_len;          /* the route's bytes follow the host's NUL in host[] */
  size_t auth_len;           /* tunnel: Proxy-Authorization, after the route's NUL */
  char host[];
};

/* The route's bytes of an origin (NUL-terminated): a Unix socket's path. */
static inline const char *pk__origin_route(const pk__origin *o) { return o->host + o->host_len + 1; }
static inline const char *pk__origin_auth(const pk__origin *o) { return pk__origin_route(o) + o->route_len + 1; }


/* ------------------------------------------------------------ functions
 * A connection's files, from the top down: pk_conn.c acts on the pool's
 * decisions and routes a socket's events to the step the connection is in;
 * the steps are pk_conn_connect.c (resolve, the happy-eyeballs race, Unix
 * sockets, the TLS handshake), pk_conn_tunnel.c (CONNECT through a proxy),
 * pk_conn_read.c (reading and framing the response) and pk_conn_write.c
 * (writing the request); pk_conn_wait.c runs a submitter's wait. A step
 * calls the steps below it by name and reports up through conn->up, the
 * table pk_conn.c gives each connection (the loop's pk__io handler has the
 * same shape): the files stay a DAG. */

/* What a step reports up (pk_conn.c's functions). */
typedef struct pk__conn_up {
  /* The connection failed: close it, then retry its request once or finish it. */
  void (*fail)(pk__loop *loop, pk__conn *conn, pk_error err, int sys_errno);
  /* The step in conn->state finished (connected, tunnelled, handshaken): the next one. */
  void (*advance)(pk__loop *loop, pk__conn *conn);
  /* The response ended: finish the request, then pool or close the connection. */
  void (*complete)(pk__loop *loop, pk__conn *conn);
  /* A write failed: read what the server sent before it closed (pk__conn_read). */
  void (*read)(pk__loop *loop, pk__conn *conn, uint32_t events);
} pk__conn_up;

static inline void pk__conn_up_fail(pk__loop *loop, pk__conn *conn, pk_error err, int sys_errno) {
  conn->up->fail(loop, conn, err, sys_errno);
}

/* A connection's registration, made once (and renewed by pk__conn_rearm). */
#define PK_CONN_EVENTS (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)

/* A connection that used its PK_IO_BUDGET with more to do: re-arming the
 * edge-triggered registration (EPOLL_CTL_MOD) queues a new event for a
 * socket that is ready, so the loop comes back to it after the others, its
 * timers and its queues (and a fast upload sees an early response). False if
 * that failed: go on now instead. */
static inline bool pk__conn_rearm(pk__loop *loop, pk__conn *conn) {
  return pk__io_rearm(loop, conn->fd, &conn->io, PK_CONN_EVENTS) == 0;
}

/* pk_conn_write.c: the request's head and body onto the socket */
void pk__conn_write(pk__loop *loop, pk__conn *conn); /* write what the request has ready */
void pk__conn_write_begin(pk__conn *conn);           /* a new exchange: the ring's send is fresh */
void pk__conn_expect_expired(pk__loop *loop, pk__conn *conn); /* no 100 Continue in time: send the body */

/* pk_conn_read.c: the response off the socket, framed into the request */
void pk__conn_read(pk__loop *loop, pk__conn *conn, uint32_t events); /* read what the socket holds */

/* pk_conn_tunnel.c: CONNECT through an HTTP proxy */
void pk__conn_tunnel_start(pk__loop *loop, pk__conn *conn);
void pk__conn_tunnel_event(pk__loop *loop, pk__conn *conn, uint32_t events);

/* pk_conn_connect.c: from a name to a connected socket, and TLS on it */
void pk__conn_connect(pk__loop *loop, pk__conn *conn);       /* resolve (or the route's address), then connect */
void pk__conn_connect_event(pk__loop *loop, pk__conn *conn); /* the socket of a connect in progress reported */
void pk__conn_secure(pk__loop *loop, pk__conn *conn);        /* https: TLS on the socket; else advance */
void pk__conn_handshake(pk__loop *loop, pk__conn *conn);     /* the TLS handshake's next step */

/* pk_origin.c: the loop's table of origins, keyed by what a connection
 * must share to be reused (scheme, host, port, TLS settings, route) */
pk__origin *pk__origin_get(pk__loop *loop, pk__req *req); /* finds or makes req's; NULL: out of memory */
bool pk__origin_has_idle(pk__loop *loop, pk__req *req);   /* and notes the origin in req */
pk__conn *pk__origin_any_idle(pk__loop *loop);            /* for shutdown, and to free a descriptor */
pk__origin *pk__origin_short(pk__loop *loop);             /* the first waiting for a descriptor, or NULL */
void pk__origins_free(pk__loop *loop);

/* pk_conn.c: acts on the pool's decisions */
void pk__conn_dispatch(pk__loop *loop, pk__req *req, bool fresh); /* pool decision, then act */
void pk__conn_fail(pk__loop *loop, pk__conn *conn, pk_error err, int sys_errno);
void pk__conn_close(pk__loop *loop, pk__conn *conn);
void pk__conn_deadline(pk__loop *loop, pk__timer *t); /* a request's timer fired */
void pk__conn_recycle_dead(pk__loop *loop);
void pk__conn_free_all(pk__loop *loop);

/* pk_conn_wait.c: the direct pass's wait: the submitting thread, holding the
 * sleeping loop's pass_lock, waits up to wait_ns for `req`'s answer on its
 * socket and handles it there. */
int pk__conn_wait_inline(pk__loop *loop, pk__req *req, uint64_t id, uint64_t wait_ns);
#define PK__WAIT_SKIPPED (-1)  /* not a request it waits for (a body to send, a blocked write) */
#define PK__WAIT_ANSWERED 0    /* handled here, or handed back early (the loop has work) */
#define PK__WAIT_TIMED_OUT 1   /* nothing came in time: the loop has it now */
/* Only the first half of pk__conn_rearm_disarmed (pk_conn.c): the
 * connection a wait left out of epoll goes back in. */
void pk__conn_arm_disarmed(pk__loop *loop);
/* pk_conn.c. Loop thread, awake: the connection a wait left out of epoll
 * goes back in, and the connections a direct pass needed are opened. */
void pk__conn_rearm_disarmed(pk__loop *loop);

#endif
