/* Name resolution, a leaf (pk_dns.c): getaddrinfo on a small pool of
 * resolver threads and a per-loop cache with expiry. It knows hosts and
 * addresses, never a connection, the pool or the loop: a caller embeds a
 * pk__dns_query and gets the answer back through its callback (h2o's
 * hostinfo has this shape). */
#ifndef PK_DNS_H
#define PK_DNS_H

#include "pk_base.h"

#include <stdatomic.h>
#include <sys/socket.h>

#define PK_DNS_MAX_ADDRS 8
#define PK_DNS_BUCKETS 256

typedef struct pk__addrs {
  uint32_t count;
  int gai_error; /* 0 or getaddrinfo's code */
  struct sockaddr_storage addr[PK_DNS_MAX_ADDRS];
  socklen_t len[PK_DNS_MAX_ADDRS];
} pk__addrs;

typedef struct pk__dns_entry pk__dns_entry;
typedef struct pk__dns_job pk__dns_job;
typedef struct pk__resolver pk__resolver;
typedef struct pk__dns_query pk__dns_query;

/* A lookup that finished later: err is 0 (addrs usable until
 * pk__dns_release(q)) or -PK_E_DNS (addrs->gai_error says why). Runs on the
 * cache's thread, inside pk__dns_process. */
typedef void (*pk__dns_cb)(pk__dns_query *q, const pk__addrs *addrs, int err);

/* Embedded in the caller's object; zero it before the first use. */
struct pk__dns_query {
  pk__link link;         /* the entry's waiters while the lookup runs */
  pk__dns_entry *entry;  /* held while the caller uses the addresses */
  pk__dns_cb cb;
  uint64_t took_ns;      /* how long a thread lookup took (0: numeric or cached) */
};

/* One cache per loop thread. Results of thread lookups come back on a
 * lock-free list; the resolver thread then calls wake(wake_ctx) so the
 * owner (a loop asleep in epoll_wait) runs pk__dns_process. */
typedef struct pk__dns_cache {
  pk__resolver *resolver;
  uint32_t ttl_ms;       /* 0: successes are not cached either */
  void (*wake)(void *wake_ctx);
  void *wake_ctx;
  _Atomic(pk__dns_job *) done;
  pk__dns_entry *buckets[PK_DNS_BUCKETS];
} pk__dns_cache;

/* A resolver of up to `threads` detached threads (0 means 1), none started
 * yet: a lookup starts one when every started thread is busy. 0 or
 * -PK_E_NOMEM. A lookup that finds no thread running and cannot start one
 * fails with -PK_E_THREAD (errno: pthread_create's answer). */
int pk__resolver_create(uint32_t threads, pk__resolver **out);
/* Drops the owner's reference: no result reaches a cache after it returns;
 * threads still inside getaddrinfo finish on their own. NULL is fine. */
void pk__resolver_release(pk__resolver *r);

void pk__dns_cache_init(pk__dns_cache *c, pk__resolver *r, uint32_t ttl_ms, void (*wake)(void *), void *wake_ctx);
/* Frees every entry and undelivered result (no query may be pending). */
void pk__dns_cache_free(pk__dns_cache *c);

#define PK__DNS_PENDING 1
/* Resolves host[0..len) (NUL-terminated) at time `now`: a name, a numeric
 * address, or a comma-separated list of up to PK_DNS_MAX_ADDRS numeric
 * addresses (the caller's own, curl's --resolve). Returns 0 with
 * *addrs set (numeric or a cache hit; the callback will not run),
 * PK__DNS_PENDING (q->cb runs later, from pk__dns_process), or -PK_E_NOMEM.
 * Either way q must later get pk__dns_release (or pk__dns_cancel while
 * pending). Cache's thread only. */
int pk__dns_resolve(pk__dns_cache *c, const char *host, size_t len, uint64_t now, pk__dns_query *q,
                    const pk__addrs **addrs);
/* A pending query gives up: its callback will not run. */
void pk__dns_cancel(pk__dns_query *q);
/* The caller is done with the addresses (no-op if it holds none). */
void pk__dns_release(pk__dns_query *q);
/* Delivers finished lookups: caches them and runs the waiters' callbacks.
 * Cheap when none finished (one atomic exchange). Cache's thread only. */
void pk__dns_process(pk__dns_cache *c, uint64_t now);
/* True when finished lookups wait for pk__dns_process (any thread). */
static inline bool pk__dns_has_done(pk__dns_cache *c) {
  return atomic_load_explicit(&c->done, memory_order_acquire) != NULL;
}

#endif
