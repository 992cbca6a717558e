/*
 * kernel_floor: what any HTTP/1.1 client must spend per request in this
 * kernel, measured with a client that does nothing but the I/O (see
 * docs/BENCHMARKS.md, "The kernel's floor under a client"). Not Pocket: a probe. C
 * keep-alive connections to HOST:PORT, each sending a fixed GET and
 * counting the answer's bytes: it learns the answer's length from the first
 * one (nginx's hello answer has a fixed length: its Date field is fixed
 * width), and sends the next request as soon as that many bytes came. No
 * parsing, no timers, no allocation, no per-request bookkeeping.
 *
 *   kernel_floor --port P [--connections C] [--seconds T] [--mode uring|epoll]
 *
 * 127.0.0.1 only. --url http://127.0.0.1:P/ gives the port, --max-seconds
 * is --seconds, and --requests N and --json are ignored, so the command
 * lines written for pocket-bench (a paired-rounds script, say) run
 * it too. The path is always /.
 * uring: one io_uring (single issuer, deferred task work), the sockets
 *   registered (fixed files), one multishot recv per connection into a
 *   provided-buffer ring, sends queued on the ring; one io_uring_enter per
 *   loop pass submits and waits. No epoll, no recv(2), no send(2).
 * epoll: level-triggered EPOLLIN on every socket (registered once),
 *   epoll_wait, then recv(2) and send(2) per answer: wrk's loop without its
 *   two epoll_ctl calls per request.
 *
 * Prints: {"mode":…,"requests":N,"rps":R,"cpu_us_per_req":U,"min_us":…,"p50_us":…,
 *          "p99_us":…,"answer_bytes":B,"requests_total":M}
 * Round trips (send to the answer's last byte, whole microseconds) are
 * timed in epoll mode at one connection only (else 0: the floor's CPU per
 * request stays free of clock reads): `min_us` is the least a request's
 * round trip took, a lower bound for any client's (scripts/bench-gateway.sh).
 * over T seconds after 0.5 s of warmup (getrusage, the whole process);
 * requests_total counts the warmup's too (for system calls per request).
 *
 * Build: cc -O2 Benchmarks/engine-bench/kernel_floor.c -luring -o kernel_floor
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include "bench_clock.h"
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXC 1024
#define NBUF 1024
#define BUFSZ 4096
#define BGID 7

static char req[128];
static size_t req_len, answer_len;
static long got[MAXC];
static double sent_at[MAXC];
#define HIST_US 100000
static unsigned hist[HIST_US + 1]; /* round trips in µs, the last bucket for longer ones */
static long timed;

static void time_answer(int i, double t) {
  double us = (t - sent_at[i]) * 1e6;
  hist[us >= HIST_US ? HIST_US : (int)us]++;
  timed++;
}

/* The round trip at quantile q (0: the least), in µs. */
static int quantile_us(double q) {
  long want = (long)(q * (double)(timed - 1)), seen = 0;
  for (int b = 0; b <= HIST_US; b++) {
    seen += hist[b];
    if (hist[b] && seen > want) return b;
  }
  return 0;
}
static int fds[MAXC];

static void die(const char *what) { perror(what); exit(1); }

static int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) die("socket");
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) die("connect");
  return fd;
}

/* One blocking exchange: the answer's length (head + Content-Length body). */
static size_t learn_answer_len(int fd) {
  char buf[BUFSZ];
  size_t n = 0;
  if (send(fd, req, req_len, 0) != (ssize_t)req_len) die("send");
  for (;;) {
    ssize_t r = recv(fd, buf + n, sizeof buf - 1 - n, 0);
    if (r <= 0) die("recv");
    n += (size_t)r;
    buf[n] = 0;
    char *end = strstr(buf, "\r\n\r\n");
    char *cl = strcasestr(buf, "\r\ncontent-length:");
    if (end && cl) {
      size_t want = (size_t)(end + 4 - buf) + strtoul(cl + 17, NULL, 10);
      if (n >= want) return want;
    }
  }
}

/* Counts r bytes for connection i: the number of answers they finish. */
static int answers(int i, long r) {
  got[i] += r;
  int k = 0;
  while (got[i] >= (long)answer_len) { got[i] -= (long)answer_len; k++; }
  return k;
}

int main(int argc, char **argv) {
  int port = 0, conns = 64;
  double seconds = 3;
  const char *mode = "uring";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--json")) continue; /* accepted, like engine-bench: paired.sh runs it */
    if (!v) { port = 0; break; }
    if (!strcmp(a, "--port")) port = atoi(v);
    else if (!strcmp(a, "--url")) { const char *c = strrchr(v, ':'); port = c ? atoi(c + 1) : 0; }
    else if (!strcmp(a, "--connections")) conns = atoi(v);
    else if (!strcmp(a, "--seconds") || !strcmp(a, "--max-seconds")) seconds = atof(v);
    else if (!strcmp(a, "--mode")) mode = v;
    else if (strcmp(a, "--requests")) { port = 0; break; }
    i++;
  }
  if (port <= 0 || port > 65535 || conns < 1 || conns > MAXC || seconds <= 0 || (strcmp(mode, "uring") && strcmp(mode, "epoll"))) {
    fprintf(stderr, "usage: kernel_floor --port P | --url http://127.0.0.1:P/ [--connections C] [--seconds T]\n"
                    "                    [--mode uring|epoll]\n");
    return 2;
  }
  req_len = (size_t)snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", port);
  for (int i = 0; i < conns; i++) fds[i] = connect_to(port);
  answer_len = learn_answer_len(fds[0]);
  for (int i = 1; i < conns; i++) (void)learn_answer_len(fds[i]);

  long done = 0, d0 = -1;
  double start = now_s(), t0 = 0, c0 = 0, t1 = 0, c1 = 0;
  int uring = !strcmp(mode, "uring"), timing = conns == 1;
  if (uring) {
    struct io_uring ring;
    struct io_uring_params p = {.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
                                .cq_entries = 4096};
    p.flags |= IORING_SETUP_CQSIZE;
    if (io_uring_queue_init_params(1024, &ring, &p) != 0) die("io_uring_queue_init_params");
    if (io_uring_register_files(&ring, fds, (unsigned)conns) != 0) die("io_uring_register_files");
    struct io_uring_buf_ring *br = mmap(NULL, NBUF * sizeof(struct io_uring_buf), PROT_READ | PROT_WRITE,
                                        MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (br == MAP_FAILED) die("mmap");
    struct io_uring_buf_reg reg = {.ring_addr = (unsigned long)br, .ring_entries = NBUF, .bgid = BGID};
    if (io_uring_register_buf_ring(&ring, &reg, 0) != 0) die("io_uring_register_buf_ring");
    char *bufs = malloc((size_t)NBUF * BUFSZ);
    if (!bufs) die("malloc");
    io_uring_buf_ring_init(br);
    for (int b = 0; b < NBUF; b++)
      io_uring_buf_ring_add(br, bufs + (size_t)b * BUFSZ, BUFSZ, (unsigned short)b, io_uring_buf_ring_mask(NBUF), b);
    io_uring_buf_ring_advance(br, NBUF);
    /* user_data: connection index; bit 32 set for sends */
    for (int i = 0; i < conns; i++) {
      struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
      io_uring_prep_recv_multishot(sqe, i, NULL, 0, 0);
      sqe->flags |= IOSQE_FIXED_FILE | IOSQE_BUFFER_SELECT;
      sqe->buf_group = BGID;
      io_uring_sqe_set_data64(sqe, (uint64_t)i);
      sqe = io_uring_get_sqe(&ring);
      io_uring_prep_send(sqe, i, req, req_len, 0);
      sqe->flags |= IOSQE_FIXED_FILE;
      io_uring_sqe_set_data64(sqe, (1ull << 32) | (uint64_t)i);
    }
    for (;;) {
      if (io_uring_submit_and_wait(&ring, 1) < 0) die("io_uring_submit_and_wait");
      struct io_uring_cqe *cqe;
      unsigned head, seen = 0, recycled = 0;
      io_uring_for_each_cqe(&ring, head, cqe) {
        seen++;
        uint64_t ud = cqe->user_data;
        int i = (int)(ud & 0xffffffffu);
        if (ud >> 32) {
          if (cqe->res != (int)req_len) { fprintf(stderr, "send: %d\n", cqe->res); exit(1); }
          continue;
        }
        if (cqe->res <= 0) { fprintf(stderr, "recv: %d\n", cqe->res); exit(1); }
        if (cqe->flags & IORING_CQE_F_BUFFER) {
          unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
          io_uring_buf_ring_add(br, bufs + (size_t)bid * BUFSZ, BUFSZ, (unsigned short)bid,
                                io_uring_buf_ring_mask(NBUF), (int)recycled++);
        }
        int k = answers(i, cqe->res);
        done += k;
        for (int j = 0; j < k; j++) {
          struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
          if (!sqe) { io_uring_submit(&ring); sqe = io_uring_get_sqe(&ring); }
          io_uring_prep_send(sqe, i, req, req_len, 0);
          sqe->flags |= IOSQE_FIXED_FILE;
          io_uring_sqe_set_data64(sqe, (1ull << 32) | (uint64_t)i);
        }
        if (!(cqe->flags & IORING_CQE_F_MORE)) { fprintf(stderr, "multishot recv ended\n"); exit(1); }
      }
      io_uring_cq_advance(&ring, seen);
      if (recycled) io_uring_buf_ring_advance(br, (int)recycled);
      double t = now_s();
      if (d0 < 0 && t - start >= 0.5) { d0 = done; t0 = t; c0 = cpu_s(); }
      if (d0 >= 0 && t - t0 >= seconds) { t1 = t; c1 = cpu_s(); break; }
    }
    io_uring_queue_exit(&ring);
    munmap(br, NBUF * sizeof(struct io_uring_buf));
    free(bufs);
  } else {
    int ep = epoll_create1(0);
    for (int i = 0; i < conns; i++) {
      struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
      if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) != 0) die("epoll_ctl");
      if (send(fds[i], req, req_len, 0) != (ssize_t)req_len) die("send");
      sent_at[i] = now_s();
    }
    char buf[BUFSZ];
    struct epoll_event evs[MAXC];
    for (;;) {
      int n = epoll_wait(ep, evs, MAXC, -1);
      for (int e = 0; e < n; e++) {
        int i = (int)evs[e].data.u32;
        ssize_t r = recv(fds[i], buf, sizeof buf, 0);
        if (r <= 0) die("recv");
        int k = answers(i, r);
        done += k;
        if (k == 0) continue;
        double t = timing ? now_s() : 0;
        if (timing && d0 >= 0) time_answer(i, t);
        for (int j = 0; j < k; j++)
          if (send(fds[i], req, req_len, 0) != (ssize_t)req_len) die("send");
        sent_at[i] = t;
      }
      double t = now_s();
      if (d0 < 0 && t - start >= 0.5) { d0 = done; t0 = t; c0 = cpu_s(); }
      if (d0 >= 0 && t - t0 >= seconds) { t1 = t; c1 = cpu_s(); break; }
    }
    close(ep);
  }
  for (int i = 0; i < conns; i++) close(fds[i]);
  long n = done - d0;
  int lo = timed ? quantile_us(0) : 0, p50 = timed ? quantile_us(0.5) : 0, p99 = timed ? quantile_us(0.99) : 0;
  printf("{\"mode\":\"%s\",\"requests\":%ld,\"rps\":%.1f,\"cpu_us_per_req\":%.3f,\"min_us\":%d,\"p50_us\":%d,"
         "\"p99_us\":%d,\"answer_bytes\":%zu,\"requests_total\":%ld}\n",
         mode, n, n / (t1 - t0), (c1 - c0) * 1e6 / n, lo, p50, p99, answer_len, done);
  return 0;
}
