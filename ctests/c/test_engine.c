/* The engine end to end under ASan+UBSan (and LeakSanitizer at exit):
 * keep-alive, hostile peers, shutdown with requests in flight, and every
 * allocation failing in turn. */
#include "CHTTPEngine.h"
#include "pk_test_hooks.h"

#include "calls.h"
#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int pk_test_failures;

static pk_engine *engine_with(void (*done)(void *, int, int, const pk_timings *)) {
  pk_engine_config cfg;
  pk_engine_config_init(&cfg);
  cfg.io_backend = test_io_backend();
  cfg.callbacks.on_head = on_head;
  cfg.callbacks.on_body = on_body;
  cfg.callbacks.on_done = done;
  pk_engine *e = NULL;
  if (pk_engine_create(&cfg, &e) != 0) return NULL;
  return e;
}

static pk_engine *engine(void) { return engine_with(on_done); }


static int submit(pk_engine *e, unsigned short port, call *c, uint32_t read_ms) {
  pk_request_spec s;
  get_spec(&s, port, c);
  s.read_timeout_ms = read_ms;
  pk_request_handle h;
  return pk_engine_submit(e, &s, &h);
}

static int get(pk_engine *e, unsigned short port, uint32_t read_ms, call *c) {
  init_call(c);
  int rc = submit(e, port, c, read_ms);
  if (rc) return rc;
  int err = wait_call(c);
  destroy_call(c);
  return err;
}

static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

static void test_keep_alive_and_hostile(void) {
  test_server *good = test_server_start((test_reply){ok, sizeof ok - 1, 0, 0, 0});
  test_server *reset = test_server_start((test_reply){.reset = 1});
  test_server *silent = test_server_start((test_reply){.silent = 1});
  test_server *trunc = test_server_start(
      (test_reply){"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort", 44, 1, 0, 0});
  pk_engine *e = engine();
  EXPECT(e);
  call c;
  for (int i = 0; i < 200; i++) {
    EXPECT_EQ(get(e, test_server_port(good), 10000, &c), 0);
    EXPECT_EQ(c.status, 200);
    EXPECT_EQ(c.body, 5);
  }
  EXPECT_EQ(test_server_accepted(good), 1);
  EXPECT_EQ(get(e, test_server_port(reset), 10000, &c), -PK_E_CONN_RESET);
  EXPECT_EQ(get(e, test_server_port(good), 10000, &c), 0);
  EXPECT_EQ(get(e, test_server_port(silent), 200, &c), -PK_E_READ_TIMEOUT);
  EXPECT_EQ(get(e, test_server_port(good), 10000, &c), 0);
  EXPECT_EQ(get(e, test_server_port(trunc), 10000, &c), -PK_E_TRUNCATED_BODY);
  EXPECT_EQ(get(e, test_server_port(good), 10000, &c), 0);
  EXPECT_EQ(test_server_accepted(good), 1);

  /* Shutdown with requests in flight: each ends with PK_E_SHUTDOWN, once. */
  call pending[16];
  for (int i = 0; i < 16; i++) {
    init_call(&pending[i]);
    EXPECT_EQ(submit(e, test_server_port(silent), &pending[i], 0), 0);
  }
  pk_engine_shutdown(e);
  for (int i = 0; i < 16; i++) {
    EXPECT_EQ(wait_call(&pending[i]), -PK_E_SHUTDOWN);
    destroy_call(&pending[i]);
  }
  pk_engine_destroy(e);
  test_server_stop(good);
  test_server_stop(reset);
  test_server_stop(silent);
  test_server_stop(trunc);
}

/* Every engine allocation fails in turn, from the first on: the engine
 * either reports PK_E_NOMEM (or an error caused by it) or succeeds; it never
 * crashes, hangs or leaks (LeakSanitizer checks at exit). */
static void test_allocation_failures(void) {
  test_server *good = test_server_start((test_reply){ok, sizeof ok - 1, 0, 0, 0});
  int succeeded = 0;
  for (uint64_t n = 1; n <= 120; n++) {
    pk_alloc_fail_after(n);
    pk_engine *e = engine();
    if (!e) {
      pk_alloc_fail_after(0);
      continue;
    }
    call c;
    int err = get(e, test_server_port(good), 10000, &c);
    /* submit's own -PK_E_NOMEM, or the request's error */
    EXPECT((err < 0 && -err < PK__ERROR_COUNT) || (err >= 0 && err < PK__ERROR_COUNT));
    if (err == 0) succeeded++;
    pk_alloc_fail_after(0);
    /* The same engine works again once memory is back. */
    EXPECT_EQ(get(e, test_server_port(good), 10000, &c), 0);
    pk_engine_destroy(e);
  }
  EXPECT(succeeded > 0);
  test_server_stop(good);
}

/* A file body goes out with sendfile(2), which has no MSG_NOSIGNAL: a
 * server that answers 413 and closes while 64 MiB are still to send used to
 * raise SIGPIPE on the loop thread and kill the process (found by
 * fuzz_engine). Now the request ends with the 413 or a write error, and the
 * process lives (SIGPIPE keeps its default action here, as in an app). */
static void test_file_body_to_a_closed_peer(void) {
  static const char too_large[] = "HTTP/1.1 413 Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
  test_server *refuse = test_server_start((test_reply){too_large, sizeof too_large - 1, 1, 0, 0});
  int fd = memfd_create("pk_test_body", MFD_CLOEXEC);
  EXPECT(fd >= 0 && ftruncate(fd, 64 << 20) == 0);
  pk_engine *e = engine();
  EXPECT(e);
  for (int i = 0; i < 20; i++) {
    call c;
    init_call(&c);
    pk_request_spec s;
    memset(&s, 0, sizeof s);
    s.method = "PUT";
    s.method_len = 3;
    s.host = "127.0.0.1";
    s.host_len = 9;
    s.port = test_server_port(refuse);
    s.target = "/upload";
    s.target_len = 7;
    s.body_kind = PK_BODY_FILE;
    s.body_fd = fd;
    s.body_len = 64 << 20;
    s.total_timeout_ms = 20000;
    s.idempotent = 0;
    s.ctx = &c;
    pk_request_handle h;
    EXPECT_EQ(pk_engine_submit(e, &s, &h), 0);
    int err = wait_call(&c);
    EXPECT(err == 0 || err == -PK_E_WRITE || err == -PK_E_CONN_RESET);
    if (err == 0) EXPECT_EQ(c.status, 413);
    destroy_call(&c);
  }
  pk_engine_destroy(e);
  close(fd);
  test_server_stop(refuse);
}

/* open_socket: the engine uses the hook's socket instead of connecting. */
static test_server *pair_server;
static int pair_refuse;

static int open_pair(void *ctx, const void *addr, unsigned len) {
  (void)ctx, (void)addr, (void)len;
  if (pair_refuse) {
    errno = EACCES;
    return -1;
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) return -1;
  if (test_server_adopt(pair_server, sv[1]) < 0) {
    close(sv[0]);
    return -1;
  }
  return sv[0];
}

static void test_open_socket(void) {
  pk_engine_config cfg;
  pk_engine_config_init(&cfg);
  cfg.io_backend = test_io_backend();
  cfg.callbacks.on_head = on_head;
  cfg.callbacks.on_body = on_body;
  cfg.callbacks.on_done = on_done;
  cfg.open_socket = open_pair;
  pair_server = test_server_start((test_reply){ok, sizeof ok - 1, 0, 0, 0});
  pk_engine *e = NULL;
  EXPECT_EQ(pk_engine_create(&cfg, &e), 0);
  call c;
  /* Port 1: nothing listens there; only the hook's socket can answer. */
  for (int i = 0; i < 3; i++) {
    EXPECT_EQ(get(e, 1, 10000, &c), 0);
    EXPECT_EQ(c.status, 200);
    EXPECT_EQ(c.body, 5);
  }
  EXPECT_EQ(test_server_accepted(pair_server), 1); /* one connection, kept alive */
  pk_engine_destroy(e);

  pair_refuse = 1;
  EXPECT_EQ(pk_engine_create(&cfg, &e), 0);
  EXPECT_EQ(get(e, 1, 10000, &c), -PK_E_SOCKET);
  pk_engine_destroy(e);
  test_server_stop(pair_server);
}

/* Threads of this process named `name` (/proc/self/task/N/comm). */
static int threads_named(const char *name) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    char path[64], comm[32] = {0};
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    if (fgets(comm, sizeof comm, f)) {
      comm[strcspn(comm, "\n")] = 0;
      if (strcmp(comm, name) == 0) n++;
    }
    fclose(f);
  }
  closedir(d);
  return n;
}

/* A resolver thread starts at the first lookup of a name, never at create
 * nor for a numeric host: one GET to an address runs on the loop thread
 * alone. */
static void test_resolver_threads_start_on_demand(void) {
  test_server *good = test_server_start((test_reply){ok, sizeof ok - 1, 0, 0, 0});
  pk_engine *e = engine();
  EXPECT_EQ(threads_named("pocket-dns"), 0);
  call c;
  EXPECT_EQ(get(e, test_server_port(good), 10000, &c), 0);
  EXPECT_EQ(c.status, 200);
  EXPECT_EQ(threads_named("pocket-dns"), 0);

  pk_request_spec s;
  init_call(&c);
  get_spec(&s, test_server_port(good), &c);
  s.host = "localhost";
  s.host_len = 9;
  pk_request_handle h;
  EXPECT_EQ(pk_engine_submit(e, &s, &h), 0);
  int err = wait_call(&c);
  destroy_call(&c);
  /* localhost may resolve to ::1 first, where nothing listens: the race
   * moves on to 127.0.0.1. Either way a lookup ran on one thread. */
  EXPECT_EQ(err, 0);
  EXPECT_EQ(threads_named("pocket-dns"), 1);
  pk_engine_destroy(e);
  test_server_stop(good);
}

/* OpenSSL is linked and the engine's TLS context is made at create: a TLS
 * setting that does not load is one clear error there, with nothing left
 * running, never a surprise at the first https request. */
static void test_tls_setup_fails_at_create(void) {
  pk_engine_config cfg;
  pk_engine_config_init(&cfg);
  cfg.io_backend = test_io_backend();
  cfg.callbacks.on_done = on_done;
  cfg.tls.ca_file = "/nonexistent/ca.pem";
  pk_engine *e = NULL;
  EXPECT_EQ(pk_engine_create(&cfg, &e), -PK_E_TLS_CONFIG);
  EXPECT(e == NULL);
  cfg.tls.ca_file = NULL;
  cfg.tls.ciphers = "NO-SUCH-CIPHER";
  EXPECT_EQ(pk_engine_create(&cfg, &e), -PK_E_TLS_CONFIG);
  cfg.tls.ciphers = NULL;
  EXPECT_EQ(pk_engine_create(&cfg, &e), 0);
  pk_engine_destroy(e);
  /* No out pointer, no on_done: refused before anything starts. */
  EXPECT_EQ(pk_engine_create(&cfg, NULL), -PK_E_INVALID_ARGUMENT);
  cfg.callbacks.on_done = NULL;
  EXPECT_EQ(pk_engine_create(&cfg, &e), -PK_E_INVALID_ARGUMENT);
}

/* A CONNECT refused with 407: on_done reads the proxy's challenge (every
 * Proxy-Authenticate field, combined) through pk_proxy_challenge, and only
 * there. */
static char seen_challenge[256];
static size_t seen_len;
static int seen_status;

static void on_done_challenge(void *ctx, int error, int sys_errno, const pk_timings *t) {
  size_t len = 0;
  const char *value = pk_proxy_challenge(&len);
  seen_len = value && len < sizeof seen_challenge ? len : 0;
  if (seen_len) memcpy(seen_challenge, value, len);
  seen_status = sys_errno;
  on_done(ctx, error, sys_errno, t);
}

static void test_connect_challenge(void) {
  static const char refused[] = "HTTP/1.1 407 Proxy Authentication Required\r\n"
                                "Proxy-Authenticate: Basic realm=\"p\"\r\n"
                                "Content-Length: 3\r\n"
                                "proxy-authenticate: Digest realm=\"p\", nonce=\"n\"\r\n\r\nno!";
  test_server *proxy = test_server_start((test_reply){refused, sizeof refused - 1, 0, 0, 0});
  pk_engine *e = engine_with(on_done_challenge);
  EXPECT(e);
  call c;
  init_call(&c);
  pk_request_spec s;
  memset(&s, 0, sizeof s);
  s.method = "GET";
  s.method_len = 3;
  s.scheme = PK_SCHEME_HTTPS;
  s.host = "origin.example";
  s.host_len = 14;
  s.port = 443;
  s.target = "/";
  s.target_len = 1;
  s.total_timeout_ms = 20000;
  s.idempotent = -1;
  s.proxy_host = "127.0.0.1";
  s.proxy_host_len = 9;
  s.proxy_port = test_server_port(proxy);
  s.proxy_tunnel = 1;
  s.ctx = &c;
  pk_request_handle h;
  EXPECT_EQ(pk_engine_submit(e, &s, &h), 0);
  EXPECT_EQ(wait_call(&c), -PK_E_PROXY_AUTH);
  destroy_call(&c);
  EXPECT_EQ(seen_status, 407);
  static const char combined[] = "Basic realm=\"p\", Digest realm=\"p\", nonce=\"n\"";
  EXPECT_EQ(seen_len, sizeof combined - 1);
  EXPECT(memcmp(seen_challenge, combined, sizeof combined - 1) == 0);
  size_t len = 7;
  EXPECT(pk_proxy_challenge(&len) == NULL); /* outside on_done: nothing */
  EXPECT_EQ(len, 0);
  pk_engine_destroy(e);
  test_server_stop(proxy);
}

int main(void) {
  test_resolver_threads_start_on_demand();
  test_connect_challenge();
  test_tls_setup_fails_at_create();
  test_open_socket();
  test_file_body_to_a_closed_peer();
  test_keep_alive_and_hostile();
  test_allocation_failures();
  if (pk_test_failures) {
    fprintf(stderr, "test_engine: %d failures\n", pk_test_failures);
    return 1;
  }
  printf("test_engine: ok\n");
  return 0;
}
