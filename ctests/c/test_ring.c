/* The io_uring backend (pk_loop.c, "the ring"): requests written through
 * the ring arrive whole and in order, concurrent ones share a submit, a
 * send the kernel takes only in part is finished with send(2) (plain bytes
 * and sealed TLS records alike), and where
 * the kernel refuses io_uring (a seccomp filter here) PK_IO_AUTO falls back
 * to epoll silently while PK_IO_URING fails at create. */
#include "CHTTPEngine.h"

#include "calls.h"
#include "check.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
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

/* A socketpair whose near end (returned) takes a few KiB per send, so a
 * 200 KiB head goes in many; the far end's descriptor in *far_fd. */
static int small_pair(int *far_fd) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) return -1;
  int small = 4096;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  *far_fd = sv[1];
  return sv[0];
}

static int open_small_pair(void *ctx, const void *addr, unsigned len) {
  (void)ctx, (void)addr, (void)len;
  int fd = small_pair(&far.fd);
  if (fd >= 0) pthread_create(&far_thread, NULL, serve_far_end, &far);
  return fd;
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

/* ------------------------------------------------ TLS through the ring */

/* A TLS server on the far end of a socketpair whose near end takes little
 * at a time: a self-signed certificate made here (the client does not
 * verify), then `requests` heads read and each answered `ok`. */
typedef struct {
  int fd;
  int requests;
  int answered;
  size_t head_bytes; /* all heads' bytes, decrypted */
} tls_far_end;

static SSL_CTX *server_ctx(void) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  EVP_PKEY *key = EVP_EC_gen("P-256");
  X509 *cert = X509_new();
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME *name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"127.0.0.1", -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509_sign(cert, key, EVP_sha256());
  EXPECT_EQ(SSL_CTX_use_certificate(ctx, cert), 1);
  EXPECT_EQ(SSL_CTX_use_PrivateKey(ctx, key), 1);
  X509_free(cert);
  EVP_PKEY_free(key);
  return ctx;
}

static void *serve_tls_far_end(void *p) {
  tls_far_end *f = p;
  SSL_CTX *ctx = server_ctx();
  SSL *ssl = SSL_new(ctx);
  SSL_set_fd(ssl, f->fd);
  if (SSL_accept(ssl) == 1) {
    char buf[4096], last[4] = {0};
    size_t since = 0; /* bytes of the current head */
    while (f->answered < f->requests) {
      int n = SSL_read(ssl, buf, sizeof buf);
      if (n <= 0) break;
      for (int i = 0; i < n; i++) {
        memmove(last, last + 1, 3);
        last[3] = buf[i];
        f->head_bytes++;
        if (++since > 8 && memcmp(last, "\r\n\r\n", 4) == 0) {
          since = 0;
          memset(last, 0, sizeof last);
          f->answered++;
          (void)SSL_write(ssl, ok, sizeof ok - 1);
        }
      }
    }
  }
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  ERR_clear_error();
  return NULL;
}

static tls_far_end tls_far;
static pthread_t tls_far_thread;

static int open_small_tls_pair(void *ctx, const void *addr, unsigned len) {
  (void)ctx, (void)addr, (void)len;
  int fd = small_pair(&tls_far.fd);
  if (fd >= 0) pthread_create(&tls_far_thread, NULL, serve_tls_far_end, &tls_far);
  return fd;
}

static int submit_tls(pk_engine *e, call *c, const pk_header *headers, size_t n) {
  pk_request_spec s;
  get_spec(&s, 1, c);
  s.scheme = PK_SCHEME_HTTPS;
  s.headers = headers;
  s.num_headers = n;
  pk_request_handle h;
  return pk_engine_submit(e, &s, &h);
}

/* Requests over TLS on the ring: each head's records are sealed and queued
 * like a plain head, one after another on one connection; then a 200 KiB
 * head, whose records the kernel takes only in part: the rest is sent with
 * send(2), before anything else, every byte once (the far end decrypts
 * each head whole). */
static void test_tls_records_through_the_ring(void) {
  pk_engine_config cfg;
  config(&cfg, PK_IO_URING);
  cfg.no_direct_submit = 1;
  cfg.open_socket = open_small_tls_pair;
  cfg.tls.insecure = 1;
  pk_engine *e = NULL;
  EXPECT_EQ(pk_engine_create(&cfg, &e), 0);
  enum { SMALL = 10 };
  tls_far.requests = SMALL + 2;
  for (int i = 0; i < SMALL; i++) {
    call c;
    init_call(&c);
    EXPECT_EQ(submit_tls(e, &c, NULL, 0), 0);
    EXPECT_EQ(finish_call(&c), 0);
    EXPECT_EQ(c.status, 200);
    EXPECT_EQ(c.body, 5);
  }
  pk_engine_stats st;
  pk_engine_get_stats(e, &st);
  EXPECT_EQ(st.connections_opened, 1);
  EXPECT_EQ(st.ring_sends, SMALL);
  static char pad[200 * 1024];
  memset(pad, 'a', sizeof pad);
  pad[sizeof pad - 1] = 'z';
  pk_header h = {"X-Pad", 5, pad, sizeof pad};
  for (int i = 0; i < 2; i++) { /* and the connection is fit for a next request after it */
    call c;
    init_call(&c);
    EXPECT_EQ(submit_tls(e, &c, i == 0 ? &h : NULL, i == 0 ? 1 : 0), 0);
    EXPECT_EQ(finish_call(&c), 0);
    EXPECT_EQ(c.status, 200);
  }
  pthread_join(tls_far_thread, NULL);
  close(tls_far.fd);
  EXPECT_EQ(tls_far.answered, SMALL + 2);
  size_t small_head = strlen("GET / HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n");
  EXPECT_EQ(tls_far.head_bytes, (SMALL + 2) * small_head + strlen("X-Pad: \r\n") + sizeof pad);
  pk_engine_get_stats(e, &st);
  EXPECT_EQ(st.connections_opened, 1);
  EXPECT_EQ(st.ring_sends, SMALL + 2);
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
    test_tls_records_through_the_ring();
  }
  if (pk_test_failures) {
    fprintf(stderr, "test_ring: %d failures\n", pk_test_failures);
    return 1;
  }
  printf("test_ring: ok\n");
  return 0;
}
