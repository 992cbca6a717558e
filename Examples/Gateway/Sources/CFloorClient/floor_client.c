/* The gateway's floor probe: see include/floor_client.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "floor_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define WAKE_TAG UINT32_MAX

typedef struct job {
  struct job *next;
  void *ctx;
  floor_done_fn done;
} job;

typedef struct {
  int fd;
  job *job;     /* the request this connection answers, NULL when idle */
  size_t len;   /* bytes in buf */
  char buf[8192];
} conn;

struct floor_client {
  struct sockaddr_in addr;
  int ep, wake_fd, max, nconns, nidle;
  conn *conns;
  int *idle;                     /* stack of idle connections' indices */
  job *head, *tail;              /* waiting for a connection (loop thread only) */
  _Atomic(job *) incoming;       /* submissions, a lock-free stack */
  atomic_int sleeping;           /* the loop is in (or entering) epoll_wait */
  char req[96];
  size_t req_len;
  int sched_batch;
};

void floor_submit(floor_client *c, void *ctx, floor_done_fn done) {
  job *j = malloc(sizeof *j);
  if (!j) { done(ctx, -1, NULL, 0); return; }
  j->ctx = ctx;
  j->done = done;
  job *top = atomic_load(&c->incoming);
  do { j->next = top; } while (!atomic_compare_exchange_weak(&c->incoming, &top, j));
  if (atomic_exchange(&c->sleeping, 0)) {
    uint64_t one = 1;
    ssize_t w = write(c->wake_fd, &one, sizeof one);
    (void)w;
  }
}

/* Opens connection slot i (a new one, or one whose connection closed). */
static int open_conn(floor_client *c, int i) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  /* A blocking connect on loopback, then nonblocking. */
  if (connect(fd, (struct sockaddr *)&c->addr, sizeof c->addr) != 0) { close(fd); return -1; }
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
  if (epoll_ctl(c->ep, EPOLL_CTL_ADD, fd, &ev) != 0) { close(fd); return -1; }
  c->conns[i].fd = fd;
  c->conns[i].job = NULL;
  c->conns[i].len = 0;
  return i;
}

static void fail(job *j) {
  j->done(j->ctx, -1, NULL, 0);
  free(j);
}

/* Hands waiting jobs to idle (or new) connections. */
static void dispatch(floor_client *c) {
  while (c->head) {
    int i;
    if (c->nidle > 0) i = c->idle[--c->nidle];
    else if (c->nconns < c->max) i = open_conn(c, c->nconns++);
    else return;
    job *j = c->head;
    c->head = j->next;
    if (!c->head) c->tail = NULL;
    if (i < 0) { fail(j); continue; }
    conn *k = &c->conns[i];
    if (send(k->fd, c->req, c->req_len, MSG_NOSIGNAL) != (ssize_t)c->req_len) { fail(j); continue; }
    k->job = j;
    k->len = 0;
  }
}

/* Moves the submissions (newest first on the stack) to the FIFO in order. */
static void take_incoming(floor_client *c) {
  job *s = atomic_exchange(&c->incoming, NULL), *rev = NULL;
  while (s) { job *n = s->next; s->next = rev; rev = s; s = n; }
  if (!rev) return;
  if (c->tail) c->tail->next = rev; else c->head = rev;
  while (rev->next) rev = rev->next;
  c->tail = rev;
}

/* The answer in k's buffer, if whole: its status, body and length. */
static int whole_answer(conn *k, int *status, const char **body, size_t *len) {
  char *end = memmem(k->buf, k->len, "\r\n\r\n", 4);
  if (!end || k->len < 12) return 0;
  size_t head = (size_t)(end - k->buf) + 4, cl = 0;
  for (char *p = k->buf; p < end; p++) {
    if (*p == '\n' && end - p > 16 && !strncasecmp(p + 1, "Content-Length:", 15)) {
      cl = strtoul(p + 16, NULL, 10);
      break;
    }
  }
  if (k->len < head + cl) return 0;
  *status = atoi(k->buf + 9);
  *body = k->buf + head;
  *len = cl;
  return 1;
}

static void readable(floor_client *c, int i) {
  conn *k = &c->conns[i];
  ssize_t r = recv(k->fd, k->buf + k->len, sizeof k->buf - k->len, 0);
  if (r < 0 && (errno == EAGAIN || errno == EINTR)) return;
  int status;
  const char *body;
  size_t len;
  if (r > 0) k->len += (size_t)r;
  if (r > 0 && k->job && whole_answer(k, &status, &body, &len)) {
    job *j = k->job;
    k->job = NULL;
    j->done(j->ctx, status, (const uint8_t *)body, len);
    free(j);
    k->len = 0;
    c->idle[c->nidle++] = i;
    return;
  }
  if (r > 0 && k->len < sizeof k->buf) return;
  /* Closed, failed or an answer too large: a new connection in its place. */
  epoll_ctl(c->ep, EPOLL_CTL_DEL, k->fd, NULL);
  close(k->fd);
  job *j = k->job;
  k->job = NULL;
  /* An idle connection is on the idle stack already; a busy one goes back. */
  if (open_conn(c, i) == i && j) c->idle[c->nidle++] = i;
  if (j) fail(j);
}

static void *loop(void *arg) {
  floor_client *c = arg;
  if (c->sched_batch) {
    struct sched_param p = {.sched_priority = 0};
    sched_setscheduler(0, SCHED_BATCH, &p);
  }
  struct epoll_event evs[256];
  for (;;) {
    take_incoming(c);
    dispatch(c);
    atomic_store(&c->sleeping, 1);
    int n = epoll_wait(c->ep, evs, 256, atomic_load(&c->incoming) ? 0 : -1);
    atomic_store(&c->sleeping, 0);
    for (int e = 0; e < n; e++) {
      if (evs[e].data.u32 == WAKE_TAG) {
        uint64_t v;
        ssize_t r = read(c->wake_fd, &v, sizeof v);
        (void)r;
      } else {
        readable(c, (int)evs[e].data.u32);
      }
    }
  }
  return NULL;
}

floor_client *floor_open(const char *ip, int port, int max_connections, int sched_batch) {
  floor_client *c = calloc(1, sizeof *c);
  if (!c || max_connections < 1) { free(c); errno = EINVAL; return NULL; }
  c->addr.sin_family = AF_INET;
  c->addr.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, ip, &c->addr.sin_addr) != 1) { free(c); errno = EINVAL; return NULL; }
  c->max = max_connections;
  c->sched_batch = sched_batch;
  c->conns = calloc((size_t)max_connections, sizeof *c->conns);
  c->idle = calloc((size_t)max_connections, sizeof *c->idle);
  c->req_len = (size_t)snprintf(c->req, sizeof c->req, "GET / HTTP/1.1\r\nHost: %s:%d\r\n\r\n", ip, port);
  c->ep = epoll_create1(EPOLL_CLOEXEC);
  c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = WAKE_TAG};
  pthread_t t;
  if (!c->conns || !c->idle || c->ep < 0 || c->wake_fd < 0 || epoll_ctl(c->ep, EPOLL_CTL_ADD, c->wake_fd, &ev) != 0
      || pthread_create(&t, NULL, loop, c) != 0) {
    return NULL; /* a probe: what it opened stays open */
  }
  pthread_setname_np(t, "floor-loop");
  pthread_detach(t);
  return c;
}
