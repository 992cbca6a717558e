/*
 * libFuzzer harness for the whole engine: pk_engine_submit against a server
 * on the other end of a socketpair that answers with the fuzzer's bytes, the
 * way curl's fuzzer drives libcurl (the engine's open_socket hook stands in
 * for socket + connect, as CURLOPT_OPENSOCKETFUNCTION does there). Everything
 * else runs for real: epoll loop, request write, reads in the pieces the
 * server's writes make, framing,
 * chunked decoding, content decoding, interim responses, the pool, the
 * retry-once rule, backpressure and cancellation.
 *
 * Input: byte 0 = options, byte 1 = seed for the sizes of the server's
 * writes, byte 2 = limits, the rest = the bytes the server sends back.
 *   options bit 0-1  method: GET, HEAD, POST (10-byte body), POST with
 *                    Expect: 100-continue
 *           bit 2    engine: content decoding on (default limits) or off
 *                    (small parser limits)
 *           bit 3    the server keeps the connection open after its bytes
 *                    (keep-alive; the request then ends by its framing or
 *                    its idle-read timeout) instead of closing it
 *           bit 4    on_body answers PK_BODY_PAUSE; a posted task resumes
 *           bit 5    cancel the request from its first on_body
 *           bit 6    a second GET follows on the same client (a pooled or
 *                    new connection; the server answers it correctly)
 *           bit 7    fault: the first socket the engine asks for fails with
 *                    EMFILE (the descriptor limit): the request waits for a
 *                    connection or a descriptor (the engine tries again), or,
 *                    with no connection of the client open, fails with
 *                    PK_E_TOO_MANY_OPEN_FILES
 *   byte 2 bit 0     max_body_bytes 16 for this request
 *          bit 1     the body goes to a sink file (a memfd) ...
 *          bit 2     ... unless on_head diverts it to on_body
 *          bit 3     on_head answers PK_HEAD_ABORT (the request is cancelled)
 *          bit 4     progress reports every millisecond (checked monotonic)
 *          bit 5     a POST body is streamed (on_send_more), in two pieces ...
 *          bit 6     ... chunked (length unknown) instead of with its length
 *          bit 7     a POST body is segments (PK_BODY_SEGMENTS, as multipart
 *                    sends): memory, a file and a stream segment (chunked with
 *                    bit 6, the stream's length then unknown)
 * Checks: every request ends (on_done exactly once, within a bound), with
 * an error code from the table; on_head at most once, before any body byte;
 * no body byte after a response to HEAD; bodies within max_body_bytes; an
 * aborted head ends in PK_E_CANCELLED; progress never goes backwards and
 * its final report comes once, last; and ASan/UBSan/LSan watch the rest.
 */
#include "CHTTPEngine.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHECK(cond)                                                                    \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "fuzz_engine: check failed at line %d: %s\n", __LINE__, #cond);  \
      abort();                                                                         \
    }                                                                                  \
  } while (0)

/* ----------------------------------------------------------- the server */

#define MAX_CONNS 64

static pthread_mutex_t srv_lock = PTHREAD_MUTEX_INITIALIZER;
static const uint8_t *script;  /* this input's response bytes */
static size_t script_len;
static int script_pending;     /* the next request head gets the script */
static int script_close;       /* close after writing it */
static uint32_t piece_seed;
static int conn_fds[MAX_CONNS];
static int nconns;

static void forget(int fd) {
  pthread_mutex_lock(&srv_lock);
  for (int i = 0; i < nconns; i++)
    if (conn_fds[i] == fd) conn_fds[i] = conn_fds[--nconns];
  pthread_mutex_unlock(&srv_lock);
  close(fd);
}

static int write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

static void *serve(void *arg) {
  int fd = (int)(intptr_t)arg;
  char buf[4096];
  size_t have = 0;
  for (;;) {
    ssize_t n = recv(fd, buf + have, sizeof buf - have, 0);
    if (n <= 0) break;
    have += (size_t)n;
    char *end;
    while ((end = memmem(buf, have, "\r\n\r\n", 4))) {
      size_t used = (size_t)(end + 4 - buf);
      memmove(buf, buf + used, have - used);
      have -= used;
      pthread_mutex_lock(&srv_lock);
      int mine = script_pending;
      script_pending = 0;
      size_t len = mine ? script_len : 0;
      uint8_t *s = len ? malloc(len) : NULL; /* the input may end while we write */
      if (len) memcpy(s, script, len);
      int close_after = script_close;
      uint32_t seed = piece_seed;
      pthread_mutex_unlock(&srv_lock);
      if (!mine) {
        static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        if (write_all(fd, ok, sizeof ok - 1)) goto out;
        continue;
      }
      /* The script, in writes of seed-derived sizes (1 to 64 bytes, or all). */
      int failed = 0;
      for (size_t off = 0; off < len && !failed;) {
        seed = seed * 1103515245u + 12345u;
        size_t k = (seed >> 16) & 1 ? len - off : 1 + (seed >> 17) % 64;
        if (k > len - off) k = len - off;
        failed = write_all(fd, s + off, k);
        off += k;
      }
      free(s);
      if (failed || close_after) goto out;
    }
    if (have == sizeof buf) have = 0; /* a body without a head: drop it */
  }
out:
  forget(fd);
  return NULL;
}

/* The engine's open_socket hook: a socketpair whose other end a new server
 * thread serves. Runs on the loop thread. */
static _Atomic int emfile_once; /* the next open_pair fails with EMFILE */

static int open_pair(void *ctx, const void *addr, unsigned addr_len) {
  (void)ctx;
  (void)addr;
  (void)addr_len;
  if (atomic_exchange(&emfile_once, 0)) {
    errno = EMFILE;
    return -1;
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) return -1;
  pthread_mutex_lock(&srv_lock);
  if (nconns == MAX_CONNS) {
    pthread_mutex_unlock(&srv_lock);
    close(sv[0]);
    close(sv[1]);
    errno = EMFILE;
    return -1;
  }
  conn_fds[nconns++] = sv[1];
  pthread_mutex_unlock(&srv_lock);
  pthread_t t;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&a, 64 * 1024);
  if (pthread_create(&t, &a, serve, (void *)(intptr_t)sv[1])) forget(sv[1]);
  pthread_attr_destroy(&a);
  return sv[0];
}

/* Ends every open server connection (the engine sees EOF on idle ones). */
static void drop_connections(void) {
  pthread_mutex_lock(&srv_lock);
  for (int i = 0; i < nconns; i++) shutdown(conn_fds[i], SHUT_RDWR);
  pthread_mutex_unlock(&srv_lock);
}

/* ----------------------------------------------------------- the client */

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pk_engine *eng;
  pk_request_handle handle;
  int have_handle;
  int done, error, heads, head_request, pause, cancel, cancelled;
  int status, divert, abort_head, finals, pieces_sent, segmented;
  uint64_t body, max_body, progress_received, progress_decoded;
} call;

typedef struct {
  pk_engine *eng;
  pk_request_handle handle;
} resume_job;

/* Posted work may run after the request (and its `call`) is gone: it owns a copy. */
static void resume(void *post_ctx, void *arg) {
  (void)post_ctx;
  resume_job *j = arg;
  int rc = pk_request_resume_read(j->eng, j->handle);
  CHECK(rc == 0 || rc == -PK_E_CANCELLED);
  free(j);
}

static int on_head(void *ctx, const pk_response_head *h, const char *raw, size_t n, int64_t cl) {
  call *c = ctx;
  (void)raw;
  (void)n;
  (void)cl;
  CHECK(c->heads == 0 && c->body == 0 && !c->done);
  CHECK(h->status >= 200 && h->status <= 999);
  c->heads++;
  c->status = h->status;
  if (c->abort_head) return PK_HEAD_ABORT;
  return c->divert ? PK_HEAD_DIVERT : PK_HEAD_CONTINUE;
}

static void on_send_more(void *ctx, pk_request_handle h) {
  call *c = ctx;
  static const char body[] = "0123456789", seg[] = "XYZ12";
  int first = c->pieces_sent++ == 0;
  int rc = c->segmented ? pk_request_send_body(c->eng, h, first ? seg : seg + 2, first ? 2 : 3, !first)
                        : pk_request_send_body(c->eng, h, first ? body : body + 5, 5, !first);
  CHECK(rc == 0 || rc == -PK_E_CANCELLED);
}

static void on_progress(void *ctx, const pk_progress *p) {
  call *c = ctx;
  CHECK(!c->finals && !c->done);
  CHECK(p->body_received >= c->progress_received && p->body_decoded >= c->progress_decoded);
  c->progress_received = p->body_received;
  c->progress_decoded = p->body_decoded;
  if (p->final) c->finals++;
}

static int on_body(void *ctx, const char *data, size_t n) {
  call *c = ctx;
  (void)data;
  CHECK(c->heads == 1 && !c->done && n > 0);
  CHECK(!c->head_request);
  c->body += n;
  pthread_mutex_lock(&c->lock);
  int have = c->have_handle;
  pthread_mutex_unlock(&c->lock);
  if (!have) return PK_BODY_CONTINUE;
  if (c->cancel && !c->cancelled) {
    c->cancelled = 1;
    pk_engine_cancel(c->eng, c->handle);
  }
  if (c->pause) {
    resume_job *j = malloc(sizeof *j);
    CHECK(j);
    j->eng = c->eng;
    j->handle = c->handle;
    if (pk_engine_post(c->eng, c->handle.loop, resume, j) == 0) return PK_BODY_PAUSE;
    free(j);
  }
  return PK_BODY_CONTINUE;
}

static void on_done(void *ctx, int error, int sys_errno, const pk_timings *t) {
  call *c = ctx;
  (void)sys_errno;
  (void)t;
  CHECK(error <= 0 && -error < PK__ERROR_COUNT); /* 0 or -PK_E_xxx (pk_errors.h) */
  if (error == 0) CHECK(c->heads == 1);
  if (c->abort_head && c->heads) CHECK(error == -PK_E_CANCELLED);
  if (c->max_body && error == 0) CHECK(c->body <= c->max_body);
#ifdef PK_FUZZ_TUNNEL
  /* A request goes through only after a 2xx answer to its CONNECT. */
  if (error == 0) {
    pthread_mutex_lock(&srv_lock);
    CHECK(script_len >= 12 && memcmp(script, "HTTP/1.", 7) == 0 && script[9] == '2');
    pthread_mutex_unlock(&srv_lock);
  }
#endif
  pthread_mutex_lock(&c->lock);
  CHECK(!c->done);
  c->done = 1;
  c->error = error;
  pthread_cond_signal(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

static pk_engine *engines[2];

static void start(void) {
  for (int i = 0; i < 2; i++) {
    pk_engine_config cfg;
    pk_engine_config_init(&cfg);
    cfg.open_socket = open_pair;
    cfg.callbacks.on_head = on_head;
    cfg.callbacks.on_body = on_body;
    cfg.callbacks.on_done = on_done;
    cfg.callbacks.on_send_more = on_send_more;
    cfg.callbacks.on_progress = on_progress;
    cfg.max_conns_per_origin = 4;
    cfg.decode_content = i == 0;
    /* Both I/O backends: engine 0 writes through the io_uring ring where
     * the kernel allows it, engine 1 on epoll alone (an input picks one). */
    cfg.io_backend = i == 0 ? PK_IO_AUTO : PK_IO_EPOLL;
    if (i == 1) {
      cfg.limits.max_head_bytes = 512;
      cfg.limits.max_header_fields = 8;
      cfg.limits.max_chunk_ext_bytes = 16;
      cfg.limits.max_trailer_bytes = 64;
      cfg.max_interim = 2;
    }
    CHECK(pk_engine_create(&cfg, &engines[i]) == 0);
  }
}

static int sink_fd = -1, segment_fd = -1;

static void run(pk_engine *eng, const char *method, int post, int expect, int pause, int cancel,
                int extra) {
  uint64_t max_body = extra & 1 ? 16 : 0;
  call c;
  memset(&c, 0, sizeof c);
  pthread_mutex_init(&c.lock, NULL);
  pthread_cond_init(&c.cond, NULL);
  c.eng = eng;
  c.head_request = strcmp(method, "HEAD") == 0;
  c.pause = pause;
  c.cancel = cancel;
  c.max_body = max_body;
  c.divert = (extra >> 2) & 1;
  c.abort_head = (extra >> 3) & 1;
  pk_request_spec s;
  memset(&s, 0, sizeof s);
  s.method = method;
  s.method_len = strlen(method);
  s.host = "127.0.0.1";
  s.host_len = 9;
  s.port = 80; /* any: open_pair connects to the harness's server */
  s.target = "/fuzz";
  s.target_len = 5;
#ifdef PK_FUZZ_TUNNEL
  /* fuzz_connect.c: the server plays a proxy; its bytes answer CONNECT. */
  s.proxy_host = "127.0.0.1";
  s.proxy_host_len = 9;
  s.proxy_port = 3128;
  s.proxy_tunnel = 1;
  if (extra & 1) {
    s.proxy_authorization = "Basic dTpw";
    s.proxy_authorization_len = 10;
  }
#endif
  if (post) {
    s.body = "0123456789";
    s.body_len = 10;
    s.expect_continue_ms = expect ? 50 : 0;
    if ((extra >> 5) & 1) {
      s.body_kind = PK_BODY_STREAM;
      s.body = NULL;
      s.body_chunked = (extra >> 6) & 1;
      if (s.body_chunked) s.body_len = 0;
    }
  }
  pk_body_segment segs[3];
  if (post && (extra >> 7) & 1) {
    if (segment_fd < 0) {
      segment_fd = memfd_create("fuzz_engine_segment", MFD_CLOEXEC);
      CHECK(segment_fd >= 0 && write(segment_fd, "abcde", 5) == 5);
    }
    c.segmented = 1;
    s.body_kind = PK_BODY_SEGMENTS;
    s.body_chunked = (extra >> 6) & 1;
    segs[0] = (pk_body_segment){.kind = PK_SEG_MEMORY, .data = "01234", .len = 5};
    segs[1] = (pk_body_segment){.kind = PK_SEG_FILE, .fd = segment_fd, .offset = 0, .len = 5};
    segs[2] = (pk_body_segment){.kind = PK_SEG_STREAM, .len = s.body_chunked ? PK_SEG_UNKNOWN_LEN : 5};
    s.segments = segs;
    s.num_segments = 3;
    s.body = NULL;
    s.body_len = s.body_chunked ? 0 : 15;
  }
  if ((extra >> 1) & 1) {
    if (sink_fd < 0) sink_fd = memfd_create("fuzz_engine_sink", MFD_CLOEXEC);
    CHECK(sink_fd >= 0);
    CHECK(ftruncate(sink_fd, 0) == 0 && lseek(sink_fd, 0, SEEK_SET) == 0);
    s.use_sink = 1;
    s.sink_fd = sink_fd;
  }
  if ((extra >> 4) & 1) s.progress_interval_ms = 1;
  s.max_body_bytes = max_body;
  s.connect_timeout_ms = 2000;
  s.read_timeout_ms = 100;
  s.total_timeout_ms = 3000;
  s.idempotent = -1;
  s.ctx = &c;
  pk_request_handle h;
  int rc = pk_engine_submit(eng, &s, &h);
  CHECK(rc == 0);
  pthread_mutex_lock(&c.lock);
  c.handle = h;
  c.have_handle = 1;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 30; /* far past the total timeout: only a hang gets here */
  while (!c.done) {
    if (pthread_cond_timedwait(&c.cond, &c.lock, &until) == ETIMEDOUT) {
      fprintf(stderr, "fuzz_engine: request did not end\n");
      abort();
    }
  }
  pthread_mutex_unlock(&c.lock);
  if (c.error == 0 && s.progress_interval_ms) CHECK(c.finals == 1);
  pthread_mutex_destroy(&c.lock);
  pthread_cond_destroy(&c.cond);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int started;
  if (!started) {
    start();
    started = 1;
  }
  if (size < 3) return 0;
  int opt = data[0];
  pthread_mutex_lock(&srv_lock);
  piece_seed = data[1];
  script = data + 3;
  script_len = size - 3;
  script_pending = 1;
  script_close = !(opt & 8);
  pthread_mutex_unlock(&srv_lock);

  static const char *const methods[] = {"GET", "HEAD", "POST", "POST"};
  int m = opt & 3;
  pk_engine *eng = engines[(opt >> 2) & 1];
  atomic_store(&emfile_once, (opt & 128) != 0);
  run(eng, methods[m], m >= 2, m == 3, (opt >> 4) & 1, (opt >> 5) & 1, data[2]);
#ifndef PK_FUZZ_TUNNEL /* its server answers a later request with a response, not a CONNECT reply */
  if (opt & 64) run(eng, "GET", 0, 0, 0, 0, 0);
#endif
  atomic_store(&emfile_once, 0);

  /* The input's bytes are gone after return: no server thread may use them. */
  pthread_mutex_lock(&srv_lock);
  script_pending = 0;
  script = NULL;
  script_len = 0;
  pthread_mutex_unlock(&srv_lock);
  drop_connections();
  return 0;
}
