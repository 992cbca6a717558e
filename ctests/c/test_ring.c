/* The io_uring backend (pk_loop.c, "the ring"): requests written through
 * the ring arrive whole and in order, concurrent ones share a submit, a
 * send the kernel takes only in part is finished with send(2), and where
 * the kernel refuses io_uring (a seccomp filter here) PK_IO_AUTO falls back
 * to epoll silently while PK_IO_URING fails at create. */
#include "CHTTPEngine.h"

#include "calls.h"
#include "check.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int pk_test_failures;

static void config(pk_engine_config *cfg, int backend) {
  pk_engine_config_init(cfg);
  cfg->callbacks.on_head = on_head;
  cfg->callbacks.on_body = on_body;
  cfg->callbacks.on_done = on_done;
  cfg->io_backend = backend;
}

static int submit(pk_engine *e, unsigned short port, call *c, const pk_header *headers, size_t n) {
  pk_request_spec s;
  get_spec(&s, port, c);
  s.headers = headers;
  s.num_headers = n;
  pk_request_handle h;
  return pk_engine_submit(e, &s, &h);
}

/* wait_call, and the call's lock and condition freed. */
static int finish_call(call *c) {
  int err = wait_call(c);
  destroy_call(c);
  return err;
}

static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

/* Whether this kernel lets us have a ring at all (else the ring tests say so and pass). */
static int ring_allowed(void) {
  pk_engine_config cfg;
  config(&cfg, PK_IO_URING);
  pk_engine *e = NULL;
  int rc = pk_engine_create(&cfg, &e);
  pk_engine_destroy(e);
  if (rc == -PK_E_IO_URING) fprintf(stderr, "test_ring: this kernel refuses io_uring; ring tests skipped\n");
  return rc == 0;
}

/* Concurrent requests on the ring: every one answered, written by the ring,
 * in fewer submits than requests (a pass's writes go together). */
static void test_concurrent_requests_share_submits(void) {
  test_server *srv = test_server_start((test_reply){ok, sizeof ok - 1, 0, 0, 0});
  pk_engine_config cfg;
  config(&cfg, PK_IO_URING);
  cfg.no_direct_submit = 1; /* every write from the loop's pass */
  pk_engine *e = NULL;
  EXPECT_EQ(pk_engine_create(&cfg, &e), 0);
  enum { N = 32, ROUNDS = 20 };
  for (int round = 0; round < ROUNDS; round++) {
    call calls[N];
    for (int i = 0; i < N; i++) {
      init_call(&calls[i]);
      EXPECT_EQ(submit(e, test_server_port(srv), &calls[i], NULL, 0), 0);
    }
    for (int i = 0; i < N; i++) {
      EXPECT_EQ(finish_call(&calls[i]), 0);
      EXPECT_EQ(calls[i].status, 200);
      EXPECT_EQ(calls[i].body, 5);
    }
  }
  pk_engine_stats st;
  pk_engine_get_stats(e, &st);
  EXPECT_EQ(st.io_backend, PK_IO_URING);
  EXPECT_EQ(st.ring_sends, N * ROUNDS);
  EXPECT(st.ring_submits < st.ring_sends);
  EXPECT(st.connections_opened <= N);
  pk_engine_destroy(e);
  test_server_stop(srv);
}

/* The far end of a socketpair whose near end takes little at a time: reads
 * one request head of any size, counts its bytes and answers `ok`. */
typedef struct {
  int fd;
  size_t head_bytes;
  int whole; /* the head ended with the padding's last byte, then CRLF CRLF */
} far_end;

static void *serve_far_end(void *p) {
  far_end *f = p;
  char buf[4096], last[4] = {0};
  for (;;) {
    ssize_t n = recv(f->fd, buf, sizeof buf, 0);
    if (n <= 0) return NULL;
    for (ssize_t i = 0; i < n; i++) {
      memmove(last, last + 1, 3);
      last[3] = buf[i];
      f->head_bytes++;
      if (f->head_bytes > 8 && memcmp(last, "\r\n\r\n", 4) == 0) {
        f->whole = 1;
        (void)send(f->fd, ok, sizeof ok - 1, MSG_NOSIGNAL);
        return NULL;
      }
    }
  }
}

static far_end far;
static pthread_t far_thread;

static int open_small_pair(void *ctx, const void *addr, unsigned len) {
  (void)ctx, (void)addr, (void)len;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) return -1;
  int small = 4096; /* the kernel takes a few KiB per send: a 200 KiB head goes in many */
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  far.fd = sv[1];
  pthread_create(&far_thread, NULL, serve_far_end, &far);
  return sv[0];
}

/* A head the kernel takes only in part: the ring's short send is finished
 * with send(2) and EPOLLOUT, in order, every byte once. */
static void test_short_ring_send_is_finished(void) {
  pk_engine_config cfg;
  config(&cfg, PK_IO_URING);
  cfg.no_direct_submit = 1;
  cfg.open_socket = open_small_pair;
  pk_engine *e = NULL;
  EXPECT_EQ(pk_engine_create(&cfg, &e), 0);
  static char pad[200 * 1024];
  memset(pad, 'a', sizeof pad);
  pad[sizeof pad - 1] = 'z';
  pk_header h = {"X-Pad", 5, pad, sizeof pad};
  call c;
  init_call(&c);
  EXPECT_EQ(submit(e, 1, &c, &h, 1), 0);
  EXPECT_EQ(finish_call(&c), 0);
  EXPECT_EQ(c.status, 200);
  pthread_join(far_thread, NULL);
  close(far.fd);
  EXPECT(far.whole);
  /* GET / HTTP/1.1, Host: 127.0.0.1:1, X-Pad: ..., each line with CRLF, and the blank line. */
  EXPECT_EQ(far.head_bytes, strlen("GET / HTTP/1.1\r\nHost: 127.0.0.1:1\r\nX-Pad: \r\n\r\n") + sizeof pad);
  pk_engine_stats st;
  pk_engine_get_stats(e, &st);
  EXPECT_EQ(st.ring_sends, 1);
  pk_engine_destroy(e);
}

/* A seccomp filter that refuses io_uring_setup(2) with EPERM, as Docker's
 * default profile does; every other call is allowed. */
static int refuse_io_uring(void) {
  struct sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* In a child under that filter: PK_IO_AUTO runs on epoll (and works),
 * PK_IO_URING is -PK_E_IO_URING at create. The child's failures are its
 * exit status. */
static void test_refused_io_uring(void) {
  test_server *srv = test_server_start((test_reply){ok, sizeof ok - 1, 0, 0, 0});
  pid_t pid = fork();
  if (pid == 0) {
    if (refuse_io_uring() != 0) _exit(3);
    pk_engine_config cfg;
    config(&cfg, PK_IO_AUTO);
    pk_engine *e = NULL;
    EXPECT_EQ(pk_engine_create(&cfg, &e), 0);
    call c;
    init_call(&c);
    EXPECT_EQ(submit(e, test_server_port(srv), &c, NULL, 0), 0);
    EXPECT_EQ(finish_call(&c), 0);
    EXPECT_EQ(c.status, 200);
    pk_engine_stats st;
    pk_engine_get_stats(e, &st);
    EXPECT_EQ(st.io_backend, PK_IO_EPOLL);
    EXPECT_EQ(st.ring_sends, 0);
    pk_engine_destroy(e);
    config(&cfg, PK_IO_URING);
    e = NULL;
    EXPECT_EQ(pk_engine_create(&cfg, &e), -PK_E_IO_URING);
    EXPECT(e == NULL);
    _exit(pk_test_failures ? 1 : 0);
  }
  int status = -1;
  EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid);
  EXPECT(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  test_server_stop(srv);
}

/* An io_backend that names no backend is refused. */
static void test_unknown_backend(void) {
  pk_engine_config cfg;
  config(&cfg, 7);
  pk_engine *e = NULL;
  EXPECT_EQ(pk_engine_create(&cfg, &e), -PK_E_INVALID_ARGUMENT);
}

int main(void) {
  test_unknown_backend();
  test_refused_io_uring();
  if (ring_allowed()) {
    test_concurrent_requests_share_submits();
    test_short_ring_send_is_finished();
  }
  if (pk_test_failures) {
    fprintf(stderr, "test_ring: %d failures\n", pk_test_failures);
    return 1;
  }
  printf("test_ring: ok\n");
  return 0;
}
