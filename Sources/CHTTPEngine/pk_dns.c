/* Name resolution off the loop thread. getaddrinfo blocks, so a small pool of
 * resolver threads runs it; results come back through the loop's queue and
 * land in a per-loop cache that expires (getaddrinfo reports no TTL, so the
 * lifetime is the configured one). Numeric hosts never reach a thread, and
 * concurrent connections to one host share one lookup. */
#include "pk_internal.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

enum { PK_DNS_PENDING = 1, PK_DNS_READY, PK_DNS_FAILED };

struct pk__dns_entry {
  pk__dns_entry *next;     /* hash chain */
  uint64_t hash;
  uint64_t expires;        /* UINT64_MAX for numeric hosts */
  uint64_t started;
  uint32_t refs;           /* the table, connecting conns, an outstanding job */
  uint8_t state;
  uint8_t in_table;
  pk__link waiters;        /* conns parked until the lookup finishes */
  pk__addrs addrs;
  size_t host_len;
  char host[];
};

typedef struct pk__dns_job {
  struct pk__dns_job *next;
  pk__loop *loop;
  pk__dns_entry *entry;
  pk__addrs addrs;
  char host[];
} pk__dns_job;

struct pk__resolver {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pk__dns_job *head, *tail;
  uint32_t refs;           /* the engine + each thread */
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
    while (!r->stop && !r->head) pthread_cond_wait(&r->cond, &r->lock);
    if (r->stop) break;
    pk__dns_job *job = r->head;
    r->head = job->next;
    if (!r->head) r->tail = NULL;
    pthread_mutex_unlock(&r->lock);
    resolve(job);
    pthread_mutex_lock(&r->lock);
    if (r->stop) {
      pk__free(job);
      break;
    }
    /* Lock order: resolver, then loop. The loop never takes the resolver lock. */
    pk__loop *loop = job->loop;
    bool wake = false;
    pthread_mutex_lock(&loop->lock);
    job->next = loop->dns_done;
    loop->dns_done = job;
    if (loop->sleeping && !loop->wake_pending) {
      loop->wake_pending = true;
      wake = true;
    }
    pthread_mutex_unlock(&loop->lock);
    if (wake) pk__loop_wake(loop);
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
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  for (uint32_t i = 0; i < threads; i++) {
    pthread_t t;
    pthread_mutex_lock(&r->lock);
    r->refs++;
    pthread_mutex_unlock(&r->lock);
    if (pthread_create(&t, &attr, resolver_main, r) != 0) {
      pthread_mutex_lock(&r->lock);
      r->refs--;
      pthread_mutex_unlock(&r->lock);
      if (i == 0) {
        pthread_attr_destroy(&attr);
        resolver_free(r);
        return -PK_E_NOMEM;
      }
      break;
    }
  }
  pthread_attr_destroy(&attr);
  *out = r;
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

static void entry_unlink(pk__loop *loop, pk__dns_entry *e) {
  if (!e->in_table) return;
  pk__dns_entry **pp = &loop->dns[e->hash % PK_DNS_BUCKETS];
  while (*pp && *pp != e) pp = &(*pp)->next;
  if (*pp) *pp = e->next;
  e->in_table = 0;
  entry_unref(e);
}

static bool numeric(const char *host, pk__addrs *a) {
  struct sockaddr_in *v4 = (struct sockaddr_in *)&a->addr[0];
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&a->addr[0];
  memset(&a->addr[0], 0, sizeof a->addr[0]);
  if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    a->len[0] = sizeof *v4;
  } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    a->len[0] = sizeof *v6;
  } else {
    return false;
  }
  a->count = 1;
  a->gai_error = 0;
  return true;
}

static void use_entry(pk__loop *loop, pk__conn *conn, pk__dns_entry *e) {
  e->refs++;
  conn->dns = e;
  pk__conn_connect_addrs(loop, conn, &e->addrs, 0);
}

void pk__dns_resolve(pk__loop *loop, pk__conn *conn) {
  pk__origin *o = conn->origin;
  uint64_t h = host_hash(o->host, o->host_len);
  pk__dns_entry *e = loop->dns[h % PK_DNS_BUCKETS];
  for (; e; e = e->next)
    if (e->hash == h && e->host_len == o->host_len && memcmp(e->host, o->host, o->host_len) == 0) break;
  if (e && e->state == PK_DNS_READY && e->expires <= loop->now) {
    entry_unlink(loop, e);
    e = NULL;
  }
  if (e && e->state == PK_DNS_READY) {
    use_entry(loop, conn, e);
    return;
  }
  if (e && e->state == PK_DNS_PENDING) {
    pk__list_push_back(&e->waiters, &conn->link);
    return;
  }

  e = pk__calloc(1, sizeof *e + o->host_len + 1);
  if (!e) {
    pk__conn_fail(loop, conn, PK_E_NOMEM, 0);
    return;
  }
  e->hash = h;
  e->host_len = o->host_len;
  memcpy(e->host, o->host, o->host_len);
  pk__list_init(&e->waiters);
  e->refs = 1; /* the table */
  e->in_table = 1;
  e->next = loop->dns[h % PK_DNS_BUCKETS];
  loop->dns[h % PK_DNS_BUCKETS] = e;
  if (numeric(e->host, &e->addrs)) {
    e->state = PK_DNS_READY;
    e->expires = UINT64_MAX;
    use_entry(loop, conn, e);
    return;
  }
  pk__dns_job *job = pk__malloc(sizeof *job + o->host_len + 1);
  if (!job) {
    entry_unlink(loop, e);
    pk__conn_fail(loop, conn, PK_E_NOMEM, 0);
    return;
  }
  e->state = PK_DNS_PENDING;
  e->started = loop->now;
  e->refs++; /* the job */
  job->next = NULL;
  job->loop = loop;
  job->entry = e;
  memcpy(job->host, o->host, o->host_len + 1);
  pk__list_push_back(&e->waiters, &conn->link);

  pk__resolver *r = loop->eng->resolver;
  pthread_mutex_lock(&r->lock);
  if (r->tail) r->tail->next = job;
  else r->head = job;
  r->tail = job;
  pthread_cond_signal(&r->cond);
  pthread_mutex_unlock(&r->lock);
}

void pk__dns_cancel(pk__loop *loop, pk__conn *conn) {
  PK_UNUSED(loop);
  if (pk__linked(&conn->link)) pk__list_remove(&conn->link);
}

void pk__dns_release(pk__conn *conn) {
  if (!conn->dns) return;
  entry_unref(conn->dns);
  conn->dns = NULL;
  conn->addrs = NULL;
}

void pk__dns_process_done(pk__loop *loop, pk__dns_job *list) {
  uint32_t ttl = loop->eng->cfg.dns_cache_ttl_ms;
  while (list) {
    pk__dns_job *job = list;
    list = job->next;
    pk__dns_entry *e = job->entry;
    e->addrs = job->addrs;
    pk__free(job);
    uint64_t took = loop->now - e->started;
    bool ok = e->addrs.gai_error == 0;
    e->state = ok ? PK_DNS_READY : PK_DNS_FAILED;
    e->expires = loop->now + (uint64_t)ttl * 1000000u;
    /* Failures are not cached, and with a zero TTL neither are successes. */
    if (!ok || ttl == 0) entry_unlink(loop, e);
    e->refs++; /* hold it while waking waiters, who may drop other refs */
    while (!pk__list_empty(&e->waiters)) {
      pk__conn *conn = PK_CONTAINER_OF(e->waiters.next, pk__conn, link);
      pk__list_remove(&conn->link);
      if (conn->req) conn->req->timings.dns_ns = took;
      if (ok) use_entry(loop, conn, e);
      else pk__conn_connect_addrs(loop, conn, &e->addrs, PK_E_DNS);
    }
    entry_unref(e); /* ours */
    entry_unref(e); /* the job's */
  }
}

void pk__dns_free_all(pk__loop *loop) {
  /* Results that arrived after the loop stopped. */
  while (loop->dns_done) {
    pk__dns_job *j = loop->dns_done;
    loop->dns_done = j->next;
    pk__free(j);
  }
  for (int b = 0; b < PK_DNS_BUCKETS; b++) {
    pk__dns_entry *e = loop->dns[b];
    while (e) {
      pk__dns_entry *next = e->next;
      pk__free(e); /* every conn and job is gone: drop regardless of refs */
      e = next;
    }
    loop->dns[b] = NULL;
  }
}
