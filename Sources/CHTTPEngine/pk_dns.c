/* Name resolution off the loop thread. getaddrinfo blocks, so a small pool of
 * resolver threads runs it, each started when a lookup finds no idle one (a
 * client that only reaches numeric hosts or Unix sockets starts none);
 * results come back through the loop's queue and land in a per-loop cache
 * that expires (getaddrinfo reports no TTL, so the lifetime is the
 * configured one). Numeric hosts never reach a thread, and
 * concurrent connections to one host share one lookup.
 *
 * A leaf: answers go back through the query's callback and the cache's wake
 * function (pk_dns.h); nothing here knows a connection or a loop. */
#include "pk_dns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { PK_DNS_PENDING = 1, PK_DNS_READY, PK_DNS_FAILED };

struct pk__dns_entry {
  pk__dns_entry *next;     /* hash chain */
  uint64_t hash;
  uint64_t expires;        /* UINT64_MAX for numeric hosts */
  uint64_t started;
  uint32_t refs;           /* the table, queries using the addresses, an outstanding job */
  uint8_t state;
  uint8_t in_table;
  pk__link waiters;        /* queries parked until the lookup finishes */
  pk__addrs addrs;
  size_t host_len;
  char host[];
};

struct pk__dns_job {
  struct pk__dns_job *next;
  pk__dns_cache *cache;
  pk__dns_entry *entry;
  pk__addrs addrs;
  char host[];
};

struct pk__resolver {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pk__dns_job *head, *tail;
  uint32_t refs;           /* the engine + each thread */
  uint32_t max_threads;    /* started on demand, up to this many */
  uint32_t threads;        /* started so far */
  uint32_t idle;           /* threads waiting for a job */
  uint32_t queued;         /* jobs no thread has taken yet */
  bool stop;
};

/* ------------------------------------------------------------- resolver */

static void resolve(pk__dns_job *job) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  struct addrinfo *res = NULL;
  int rc = getaddrinfo(job->host, NULL, &hints, &res);
  job->addrs.count = 0;
  job->addrs.gai_error = rc;
  if (rc != 0) return;
  for (struct addrinfo *ai = res; ai && job->addrs.count < PK_DNS_MAX_ADDRS; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
    if (ai->ai_addrlen > sizeof(struct sockaddr_storage)) continue;
    memcpy(&job->addrs.addr[job->addrs.count], ai->ai_addr, ai->ai_addrlen);
    job->addrs.len[job->addrs.count++] = ai->ai_addrlen;
  }
  freeaddrinfo(res);
  if (job->addrs.count == 0) job->addrs.gai_error = EAI_NONAME;
}

static void resolver_unref_locked(pk__resolver *r, bool *free_it) {
  *free_it = --r->refs == 0;
}

static void resolver_free(pk__resolver *r) {
  pthread_mutex_destroy(&r->lock);
  pthread_cond_destroy(&r->cond);
  pk__free(r);
}

static void *resolver_main(void *arg) {
  pk__resolver *r = arg;
  pthread_setname_np(pthread_self(), "pocket-dns");
  pthread_mutex_lock(&r->lock);
  for (;;) {
    while (!r->stop && !r->head) {
      r->idle++;
      pthread_cond_wait(&r->cond, &r->lock);
      r->idle--;
    }
    if (r->stop) break;
    pk__dns_job *job = r->head;
    r->head = job->next;
    if (!r->head) r->tail = NULL;
    r->queued--;
    pthread_mutex_unlock(&r->lock);
    resolve(job);
    pthread_mutex_lock(&r->lock);
    if (r->stop) {
      pk__free(job);
      break;
    }
    /* Still under the resolver lock, so pk__resolver_release (which sets
     * stop under it) knows no result reaches a cache after it returns. The
     * owner's wake takes its own lock: resolver, then owner; the owner never
     * takes the resolver lock. The push comes first, so an owner that checks
     * pk__dns_has_done before sleeping either sees it or is woken. */
    pk__dns_cache *c = job->cache;
    pk__dns_job *head = atomic_load_explicit(&c->done, memory_order_relaxed);
    do job->next = head;
    while (!atomic_compare_exchange_weak_explicit(&c->done, &head, job, memory_order_release, memory_order_relaxed));
    c->wake(c->wake_ctx);
  }
  bool free_it;
  resolver_unref_locked(r, &free_it);
  pthread_mutex_unlock(&r->lock);
  if (free_it) resolver_free(r);
  return NULL;
}

int pk__resolver_create(uint32_t threads, pk__resolver **out) {
  pk__resolver *r = pk__calloc(1, sizeof *r);
  if (!r) return -PK_E_NOMEM;
  pthread_mutex_init(&r->lock, NULL);
  pthread_cond_init(&r->cond, NULL);
  r->refs = 1;
  r->max_threads = threads ? threads : 1;
  *out = r;
  return 0;
}

/* One more detached thread, under the lock: 0, or -PK_E_THREAD with errno
 * set to pthread_create's answer. */
static int start_thread_locked(pk__resolver *r) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  pthread_t t;
  int rc = pthread_create(&t, &attr, resolver_main, r);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    errno = rc;
    return -PK_E_THREAD;
  }
  r->refs++;
  r->threads++;
  return 0;
}

/* Queues a job, starting a thread when every started one is busy (and the
 * cap allows). Fails only when no thread runs at all and none starts. */
static int enqueue(pk__resolver *r, pk__dns_job *job) {
  pthread_mutex_lock(&r->lock);
  if (r->queued + 1 > r->idle && r->threads < r->max_threads) {
    int err = start_thread_locked(r);
    if (err && r->threads == 0) {
      pthread_mutex_unlock(&r->lock);
      return err;
    }
  }
  job->next = NULL;
  if (r->tail) r->tail->next = job;
  else r->head = job;
  r->tail = job;
  r->queued++;
  pthread_cond_signal(&r->cond);
  pthread_mutex_unlock(&r->lock);
  return 0;
}

void pk__resolver_release(pk__resolver *r) {
  if (!r) return;
  pthread_mutex_lock(&r->lock);
  r->stop = true;
  while (r->head) {
    pk__dns_job *j = r->head;
    r->head = j->next;
    pk__free(j);
  }
  r->tail = NULL;
  r->queued = 0;
  pthread_cond_broadcast(&r->cond);
  bool free_it;
  resolver_unref_locked(r, &free_it);
  pthread_mutex_unlock(&r->lock);
  if (free_it) resolver_free(r);
}

/* ---------------------------------------------------------------- cache */

static uint64_t host_hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    h ^= (uint8_t)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

static void entry_unref(pk__dns_entry *e) {
  if (--e->refs == 0) pk__free(e);
}

static void entry_unlink(pk__dns_cache *c, pk__dns_entry *e) {
  if (!e->in_table) return;
  pk__dns_entry **pp = &c->buckets[e->hash % PK_DNS_BUCKETS];
  while (*pp && *pp != e) pp = &(*pp)->next;
  if (*pp) *pp = e->next;
  e->in_table = 0;
  entry_unref(e);
}

/* One numeric address into slot i. */
static bool numeric_one(const char *host, pk__addrs *a, uint32_t i) {
  struct sockaddr_in *v4 = (struct sockaddr_in *)&a->addr[i];
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&a->addr[i];
  memset(&a->addr[i], 0, sizeof a->addr[i]);
  if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    a->len[i] = sizeof *v4;
  } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    a->len[i] = sizeof *v6;
  } else {
    return false;
  }
  return true;
}

/* A numeric host, or a comma-separated list of them (the caller's own
 * addresses, curl's --resolve; a name never holds a comma): no lookup. */
static bool numeric(const char *host, pk__addrs *a) {
  char one[64];
  uint32_t n = 0;
  for (const char *p = host;;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == 0 || len >= sizeof one || n == PK_DNS_MAX_ADDRS) return false;
    memcpy(one, p, len);
    one[len] = 0;
    if (!numeric_one(one, a, n)) return false;
    n++;
    if (!end) break;
    p = end + 1;
  }
  a->count = n;
  a->gai_error = 0;
  return true;
}

void pk__dns_cache_init(pk__dns_cache *c, pk__resolver *r, uint32_t ttl_ms, void (*wake)(void *), void *wake_ctx) {
  memset(c, 0, sizeof *c);
  c->resolver = r;
  c->ttl_ms = ttl_ms;
  c->wake = wake;
  c->wake_ctx = wake_ctx;
  atomic_init(&c->done, NULL);
}

static const pk__addrs *use_entry(pk__dns_query *q, pk__dns_entry *e) {
  e->refs++;
  q->entry = e;
  return &e->addrs;
}

int pk__dns_resolve(pk__dns_cache *c, const char *host, size_t len, uint64_t now, pk__dns_query *q,
                    const pk__addrs **addrs) {
  uint64_t h = host_hash(host, len);
  q->took_ns = 0;
  pk__dns_entry *e = c->buckets[h % PK_DNS_BUCKETS];
  for (; e; e = e->next)
    if (e->hash == h && e->host_len == len && memcmp(e->host, host, len) == 0) break;
  if (e && e->state == PK_DNS_READY && e->expires <= now) {
    entry_unlink(c, e);
    e = NULL;
  }
  if (e && e->state == PK_DNS_READY) {
    *addrs = use_entry(q, e);
    return 0;
  }
  if (e && e->state == PK_DNS_PENDING) {
    pk__list_push_back(&e->waiters, &q->link);
    return PK__DNS_PENDING;
  }

  e = pk__calloc(1, sizeof *e + len + 1);
  if (!e) return -PK_E_NOMEM;
  e->hash = h;
  e->host_len = len;
  memcpy(e->host, host, len);
  pk__list_init(&e->waiters);
  e->refs = 1; /* the table */
  e->in_table = 1;
  e->next = c->buckets[h % PK_DNS_BUCKETS];
  c->buckets[h % PK_DNS_BUCKETS] = e;
  if (numeric(e->host, &e->addrs)) {
    e->state = PK_DNS_READY;
    e->expires = UINT64_MAX;
    *addrs = use_entry(q, e);
    return 0;
  }
  pk__dns_job *job = pk__malloc(sizeof *job + len + 1);
  if (!job) {
    entry_unlink(c, e);
    return -PK_E_NOMEM;
  }
  e->state = PK_DNS_PENDING;
  e->started = now;
  e->refs++; /* the job */
  job->cache = c;
  job->entry = e;
  memcpy(job->host, host, len);
  job->host[len] = 0;
  pk__list_push_back(&e->waiters, &q->link);

  int err = enqueue(c->resolver, job);
  if (err) {
    pk__list_remove(&q->link);
    pk__free(job);
    e->refs--;
    entry_unlink(c, e);
    return err;
  }
  return PK__DNS_PENDING;
}

void pk__dns_cancel(pk__dns_query *q) {
  if (pk__linked(&q->link)) pk__list_remove(&q->link);
}

void pk__dns_release(pk__dns_query *q) {
  if (!q->entry) return;
  entry_unref(q->entry);
  q->entry = NULL;
}

void pk__dns_process(pk__dns_cache *c, uint64_t now) {
  pk__dns_job *list = atomic_exchange_explicit(&c->done, NULL, memory_order_acquire);
  while (list) {
    pk__dns_job *job = list;
    list = job->next;
    pk__dns_entry *e = job->entry;
    e->addrs = job->addrs;
    pk__free(job);
    uint64_t took = now - e->started;
    bool ok = e->addrs.gai_error == 0;
    e->state = ok ? PK_DNS_READY : PK_DNS_FAILED;
    e->expires = now + (uint64_t)c->ttl_ms * 1000000u;
    /* Failures are not cached, and with a zero TTL neither are successes. */
    if (!ok || c->ttl_ms == 0) entry_unlink(c, e);
    e->refs++; /* hold it while waking waiters, who may drop other refs */
    while (!pk__list_empty(&e->waiters)) {
      pk__dns_query *q = PK_CONTAINER_OF(e->waiters.next, pk__dns_query, link);
      pk__list_remove(&q->link);
      q->took_ns = took;
      if (ok) q->cb(q, use_entry(q, e), 0);
      else q->cb(q, &e->addrs, -PK_E_DNS);
    }
    entry_unref(e); /* ours */
    entry_unref(e); /* the job's */
  }
}

void pk__dns_cache_free(pk__dns_cache *c) {
  /* Results that arrived after the owner stopped. */
  pk__dns_job *j = atomic_exchange(&c->done, NULL);
  while (j) {
    pk__dns_job *next = j->next;
    pk__free(j);
    j = next;
  }
  for (int b = 0; b < PK_DNS_BUCKETS; b++) {
    pk__dns_entry *e = c->buckets[b];
    while (e) {
      pk__dns_entry *next = e->next;
      pk__free(e); /* every query and job is gone: drop regardless of refs */
      e = next;
    }
    c->buckets[b] = NULL;
  }
}
