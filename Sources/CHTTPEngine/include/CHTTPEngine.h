/*
 * CHTTPEngine — the C core of Pocket: an HTTP/1.1 client engine on epoll.
 * This header holds what the Swift layer calls; the parser (pk_h1_parse.h)
 * and the inflater (pk_inflate.h) have their own, included here for the
 * types the configuration embeds.
 *
 * Errors: one sign rule for the whole engine (pk_errors.h): a function
 * returns 0 (or a count) on success and -PK_E_xxx on failure, and on_done
 * receives 0 or -PK_E_xxx.
 *
 * Threading: every socket belongs to one loop thread. pk_engine_submit,
 * pk_engine_cancel, pk_engine_post, pk_engine_add_tls, pk_engine_shutdown and
 * pk_engine_destroy may be called from any thread; pk_request_* only on the
 * request's loop thread. Callbacks run on a loop thread and must not block.
 *
 * Ownership: pointers handed to a callback are borrowed until it returns.
 * The engine never owns the caller's context pointer; it says exactly once,
 * in on_done, when the caller may release it. A function that returns an
 * error never calls a callback; otherwise on_done fires exactly once.
 *
 * The contract in prose lives in docs/ENGINE.md.
 */
#ifndef CHTTPENGINE_H
#define CHTTPENGINE_H

#include "pk_dns_records.h"
#include "pk_errors.h"
#include "pk_h1_parse.h"
#include "pk_inflate.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pk_engine pk_engine;

/* Per-request timings in nanoseconds; 0 when the phase did not happen
 * (e.g. dns and connect on a reused connection). */
typedef struct pk_timings {
  uint64_t dns_ns;        /* name resolution (0 for numeric hosts and cache hits) */
  uint64_t connect_ns;    /* TCP connect: the whole race, first attempt to the winner */
  uint64_t tls_ns;        /* TLS handshake (0 for plain HTTP and reused connections) */
  uint64_t first_byte_ns; /* submit -> first response byte */
  uint64_t total_ns;      /* submit -> done */
  uint64_t bytes_sent;     /* request bytes written (before TLS) */
  uint64_t bytes_received; /* response bytes read (after TLS) */
  uint64_t wire_bytes_sent;     /* on the socket, TLS records included (handshake too) */
  uint64_t wire_bytes_received;
  int reused;             /* 1 if the request ran on a pooled connection */
  int tls_resumed;        /* 1 if its new TLS connection resumed a session */
  int retried;            /* 1 if it was retried once on a new connection */
  int retry_refused;      /* 1 if it failed where the retry-once rule would have sent it
                             again, but its body is one-shot (a stream, or segments with one) */
  /* The connection it ran on (curl's remote_ip, remote_port, local_port):
   * the address that won the connection race (the proxy's when proxied),
   * recorded once per connection and copied into each of its requests;
   * family 0 when it never had one, and over a Unix socket. */
  uint8_t remote_addr[16];  /* IPv4 in the first 4 bytes, or IPv6; network order */
  uint16_t remote_port;     /* host order */
  uint16_t local_port;
  uint8_t remote_family;    /* 4, 6 or 0 */
  uint8_t connect_attempts; /* connection attempts the race opened (0 on a reused connection) */
  uint64_t tunnel_ns;       /* CONNECT sent -> 2xx read (0 without a new tunnel) */
} pk_timings;

/* Names a submitted request (pk_engine_submit fills it). */
typedef struct pk_request_handle {
  void *req;
  uint64_t id;
  uint32_t loop; /* the loop running it: pass to pk_engine_post for the pk_request_ calls */
} pk_request_handle;

/* Progress of one request's bodies (see pk_request_spec.progress_interval_ms). */
typedef struct pk_progress {
  uint64_t body_sent;          /* request body bytes written (payload, not chunk framing) */
  int64_t body_send_total;     /* the request body's length; -1 when unknown (chunked) */
  uint64_t body_received;      /* response body bytes as framed (before content decoding) */
  int64_t body_receive_total;  /* the response's Content-Length; -1 when unknown */
  uint64_t body_decoded;       /* response body bytes after content decoding */
  int decoding;                /* 1 when the response is being content-decoded */
  int final;                   /* 1 on the last report, right before a successful on_done */
  size_t segment;              /* PK_BODY_SEGMENTS: index of the segment being written
                                  (num_segments once all are out); 0 otherwise */
  uint64_t segment_sent;       /* PK_BODY_SEGMENTS: payload bytes of that segment written */
} pk_progress;

/* on_head's answer: where the body goes. */
enum {
  PK_HEAD_CONTINUE = 0, /* as the spec says: to the sink file if it has one, else on_body */
  PK_HEAD_DIVERT = 1,   /* to on_body even though the spec has a sink file (e.g. an error body) */
  PK_HEAD_ABORT = 2,    /* the caller wants none of it: the request ends with PK_E_CANCELLED */
};

/* on_body's answer: PK_BODY_CONTINUE, or a combination of the flags. */
enum {
  PK_BODY_CONTINUE = 0,
  PK_BODY_PAUSE = 1,  /* stop reading this socket until pk_request_resume_read */
  PK_BODY_NOTIFY = 2, /* run on_pass_end at the end of this pass (the caller wakes
                         its readers there, once per pass instead of per delivery) */
};

/* Callbacks, set once per engine (copied by pk_engine_create). `ctx` is the
 * per-request context pointer of pk_request_spec. Every callback runs on the
 * request's loop thread and must not block; it may call pk_engine_submit,
 * pk_engine_cancel, pk_engine_post and the pk_request_ calls. Only on_done is
 * required; every other one may be NULL (then: PK_HEAD_CONTINUE, bodies
 * dropped, no progress, no pass-end call). on_send_more is required only
 * by requests with a stream body or stream segment. */
typedef struct pk_callbacks {
  /* The final response head (interim 1xx are skipped). Borrowed until return.
   * `raw`/`raw_len` is the head as received (after unfolding). `content_length`
   * is -1 when unknown. Returns PK_HEAD_CONTINUE, PK_HEAD_DIVERT or
   * PK_HEAD_ABORT (the request then ends with -PK_E_CANCELLED). A request
   * with a sink file may move that file's offset here (e.g. truncate it when a
   * resumed download gets 200 instead of 206): the engine writes at the
   * file's current offset. */
  int (*on_head)(void *ctx, const pk_response_head *head, const char *raw, size_t raw_len,
                 int64_t content_length);
  /* Decoded body bytes, in order (not called for bytes that go to a sink
   * file). Borrowed until return. Returning PK_BODY_PAUSE stops reading the
   * socket after this delivery (backpressure: the server's sends then fill
   * the TCP window and stop); pk_request_resume_read starts again. While
   * paused the idle-read timeout does not run; the total timeout does. */
  int (*on_body)(void *ctx, const char *data, size_t len);
  /* Required. Exactly once per accepted submission. `error` is 0 or
   * -PK_E_xxx (the one sign rule, pk_errors.h); `sys_errno` keeps errno (the
   * getaddrinfo code for PK_E_DNS, OpenSSL's verify code for the certificate
   * errors) when relevant, else 0. `timings` is borrowed until return. After
   * it returns the engine never touches `ctx` again: the caller may free it. */
  void (*on_done)(void *ctx, int error, int sys_errno, const pk_timings *timings);
  /* Optional. Called on the loop thread at the end of a pass (after its
   * events and timers, before it may sleep) if on_head or on_done ran during the pass
   * (or on_body answered PK_BODY_NOTIFY),
   * with the config's post_ctx. Lets a caller batch its own wake-ups: the
   * Swift layer resumes the pass's continuations together here, so waking
   * waiting threads does not interleave with reading sockets. */
  void (*on_pass_end)(void *post_ctx);
  /* Streamed request bodies (PK_BODY_STREAM): the engine is ready for the
   * next piece; answer (now or later, on the loop thread) with exactly one
   * pk_request_send_body. Called after the head is written (after 100
   * Continue, or its timeout, with expect_continue_ms) and after each piece
   * is written. Not called again once the response ended the upload early.
   * `handle` is the request's, for pk_request_send_body. */
  void (*on_send_more)(void *ctx, pk_request_handle handle);
  /* Optional. Body progress, at most once per progress_interval_ms of the
   * request, and a last time (final = 1) just before a successful on_done,
   * so the figures end exactly at the totals. */
  void (*on_progress)(void *ctx, const pk_progress *progress);
} pk_callbacks;

enum { PK_TLS_1_2 = 12, PK_TLS_1_3 = 13 };

/* TLS settings of an engine. Paths are read at pk_engine_create. */
typedef struct pk_tls_config {
  const char *ca_file;   /* PEM bundle; with ca_dir NULL too: the system store */
  const char *ca_dir;    /* hashed directory (c_rehash) */
  const char *cert_file; /* client certificate chain (mutual TLS), PEM */
  const char *key_file;  /* its key; NULL: in cert_file */
  const char *ciphers;   /* TLS 1.2 cipher list; NULL: OpenSSL's default */
  const uint8_t *pins;   /* pin_count SHA-256 digests of the server's SubjectPublicKeyInfo */
  size_t pin_count;
  int min_version;       /* PK_TLS_1_2 (default) or PK_TLS_1_3 */
  int insecure;          /* 1: no verification at all (development only) */
} pk_tls_config;

/* OpenSSL's text for a certificate verification code (sys_errno of the
 * PK_E_TLS_UNTRUSTED/HOSTNAME/EXPIRED/NOT_YET_VALID errors). Never NULL; a
 * static string. Any thread, with or without an engine. */
const char *pk_tls_verify_reason(int code);

/* OpenSSL's text for the sys_errno of PK_E_TLS_ALERT (its reason code):
 * "bad record mac". *received (if not NULL) is 1 when the server sent the
 * alert, 0 when OpenSSL sent one for a record of the server's it refused.
 * Never NULL ("unknown"); a static string. Any thread, with or without an
 * engine. */
const char *pk_tls_alert_reason(int detail, int *received);

/* Message digests for HTTP Digest authentication (RFC 7616 §3.4.2). */
#define PK_DIGEST_MD5 0    /* 16 bytes */
#define PK_DIGEST_SHA256 1 /* 32 bytes */

/* Writes the `algorithm` digest of the `len` bytes at `data` to `out`, which
 * holds at least 32 bytes. Returns the digest's length, or -1 for an unknown
 * algorithm or an OpenSSL failure (then `out` is unspecified). Any thread,
 * with or without an engine; allocates nothing that outlives the call. */
int pk_digest(int algorithm, const void *data, size_t len, uint8_t *out);

/* The linked libraries' versions, for `pocket --version`: "OpenSSL 3.0.x
 * ..." (pk_tls.c), zlib's and libdeflate's version strings (pk_inflate.c).
 * Never NULL; static strings. Any thread, with or without an engine. */
const char *pk_tls_library_version(void);
const char *pk_zlib_version(void);
const char *pk_libdeflate_version(void);

/* How the loop threads write to sockets (docs/ENGINE.md, "I/O backends").
 * Both wait for readiness with epoll and read with recv(2); they differ in
 * how a pass's writes reach the kernel. */
typedef enum pk_io_backend {
  PK_IO_EPOLL = 0, /* each write is its own send(2) */
  PK_IO_AUTO = 1,  /* io_uring when the kernel allows it, else epoll (silently) */
  PK_IO_URING = 2, /* io_uring; pk_engine_create fails with -PK_E_IO_URING without it */
} pk_io_backend;

typedef struct pk_engine_config {
  uint32_t loops;                /* event-loop threads, default 1 */
  uint32_t max_conns_per_origin; /* default 64 */
  uint32_t idle_timeout_ms;      /* idle pooled connection lifetime, default 60000 */
  uint32_t dns_threads;          /* resolver threads at most, default 2; each starts when a lookup needs it */
  uint32_t dns_cache_ttl_ms;     /* default 30000; 0 disables the cache */
  /* Happy eyeballs (RFC 8305): a host's addresses are tried with the two
   * families interleaved (the first address's family first), a new attempt
   * every connection_attempt_delay_ms while earlier ones are still pending,
   * at once when one fails. The first to connect wins; the others are
   * closed. The request's connect timeout covers the whole race. Default
   * 250 (RFC 8305 §8); 0: one address at a time, the next only after a
   * failure. */
  uint32_t connection_attempt_delay_ms;
  uint32_t max_interim;          /* 1xx responses skipped at most, default 8 */
  uint64_t max_body_bytes;       /* 0 = unlimited (default) */
  pk_parse_limits limits;        /* max_head_bytes 0: all the defaults */
  pk_callbacks callbacks;        /* on_done is required */
  pk_tls_config tls;             /* for https origins; strings borrowed during pk_engine_create */
  int decode_content;            /* 1 (default): gzip/deflate bodies are decoded before on_body */
  /* 0 (default): pk_engine_submit from another thread to a loop that is
   * asleep in epoll_wait runs the submission on the calling thread (the
   * request is written there; callbacks of the pass, on_pass_end included,
   * may run there too, serialised with the loop thread) instead of waking
   * the loop. 1: every submission is left to the loop thread. */
  int no_direct_submit;
  /* After such a direct pass, the submitting thread waits up to this many
   * microseconds for the response on the socket itself and handles it
   * there (callbacks and on_pass_end run on it), so a one-at-a-time caller
   * costs one thread switch per request, not two; past the wait, or when
   * the loop gets other work, the loop takes the request over. 0 (the
   * default) or negative: never wait; the waiting thread does nothing else
   * meanwhile, so only for callers with no other work on it. */
  int32_t inline_wait_us;
  /* ...and only when no request on the loop has had another in flight
   * beside it for this many milliseconds (a one-at-a-time caller: callers
   * sending concurrently keep their threads). 10 by default. */
  uint32_t inline_wait_quiet_ms;
  /* ...and only when the submission comes within this many microseconds of
   * the loop's last finished request (a caller in a tight request loop; one
   * that does other work between requests, such as a server answering its
   * own client, keeps its thread). 50 by default; 0: no such condition. */
  uint32_t inline_wait_gap_us;
  /* Of that wait, the first this many microseconds poll the socket without
   * sleeping (busy-polling, like the kernel's SO_BUSY_POLL: ppoll with a
   * zero timeout, again and again) before the thread sleeps in ppoll for
   * the rest. On a fast network an answer that comes within it costs no
   * sleep and no wake-up: neither the thread's context switch nor, on a
   * virtual machine, the halted CPU's exit. A spin that ends with nothing
   * makes the loop's next 16 waits sleep at once (32, 64, ... up to 1024
   * after further misses in a row; an answer found spinning resets it), so
   * a server slower than the spin costs at most one spin in 17 waits.
   * 0 (the default here; Pocket's Swift layer sets 50): never spin. */
  uint32_t inline_spin_us;
  pk_inflate_limits inflate_limits;
  void *post_ctx;                /* first argument of functions run by pk_engine_post */
  /* Optional: called once with post_ctx after the loop threads are gone and
   * the engine is freed (from pk_engine_destroy, or from the reaper thread
   * when destroyed on a loop thread), so the owner can release it. */
  void (*post_ctx_release)(void *post_ctx);
  /* Optional (NULL by default): makes each connection's socket instead of
   * socket(2) and connect(2), as curl's CURLOPT_OPENSOCKETFUNCTION does; e.g.
   * one end of a socketpair for a test or fuzzing server. Called on a loop
   * thread with open_socket_ctx and the resolved address (a struct sockaddr
   * of addr_len bytes, port set). Returns a connected stream socket, which
   * the engine makes nonblocking and owns, or -1 with errno set (then
   * PK_E_SOCKET). TLS, the pool and timeouts work as usual on it. */
  int (*open_socket)(void *open_socket_ctx, const void *addr, unsigned addr_len);
  void *open_socket_ctx;
  /* pk_io_backend; PK_IO_AUTO by default. With io_uring each loop has a
   * ring on which a pass's request writes on plain connections (a request
   * whose head is all there is to send) are queued and submitted together,
   * with one io_uring_enter(2) before the loop waits, instead of one
   * send(2) each. Everything else (TLS, bodies, reads, waiting) is the same
   * code on both. */
  int io_backend;
} pk_engine_config;

/* Fills the defaults (1 loop, 64 connections per origin, ...; no callbacks).
 * `cfg` must not be NULL. Any thread. */
void pk_engine_config_init(pk_engine_config *cfg);

/* Makes an engine: copies `cfg` (NULL: the defaults, which lack on_done and
 * so fail), builds the TLS context of cfg->tls (OpenSSL is linked: a
 * setting that does not load is -PK_E_TLS_CONFIG here, never at the first
 * https request) and starts the loop threads; a resolver thread starts
 * at the first lookup of a name, not here. Any thread.
 * Returns 0 and the engine in *out (owned by the caller: pk_engine_destroy),
 * or -PK_E_INVALID_ARGUMENT (out NULL, on_done NULL), -PK_E_NOMEM,
 * -PK_E_TLS_CONFIG, -PK_E_SOCKET (epoll or eventfd), -PK_E_IO_URING (io_backend
 * PK_IO_URING and no ring could be made), -PK_E_THREAD (a thread
 * could not start; errno is left as pthread_create's answer). Nothing is
 * left running after an error. */
int pk_engine_create(const pk_engine_config *cfg, pk_engine **out);

/* Fails every queued and in-flight request with -PK_E_SHUTDOWN (their
 * on_done runs on the loop threads), closes every connection and joins the
 * threads. Idempotent; NULL is a no-op. Any thread; called from a loop
 * thread (inside a callback) it only starts the shutdown. */
void pk_engine_shutdown(pk_engine *eng);

/* Shuts down (if not yet) and frees the engine; NULL is a no-op. Any thread;
 * called from a loop thread the memory is released when the loops are gone
 * (a short-lived reaper thread), and post_ctx_release runs then. The engine
 * must not be used after this call. */
void pk_engine_destroy(pk_engine *eng);

typedef enum pk_scheme { PK_SCHEME_HTTP = 0, PK_SCHEME_HTTPS = 1 } pk_scheme;

/* Where a request body comes from. */
typedef enum pk_body_kind {
  PK_BODY_MEMORY = 0, /* body/body_len, borrowed until on_done */
  PK_BODY_FILE = 1,   /* body_len bytes of body_fd from body_offset: sendfile(2) on plain
                         connections, pread + TLS write on TLS ones. The fd is borrowed
                         until on_done; the engine never moves its offset. */
  PK_BODY_STREAM = 2, /* pieces handed over with pk_request_send_body after each
                         on_send_more; body_len bytes in all, or chunked when
                         body_chunked. One-shot: never re-sent (no retry). */
  PK_BODY_SEGMENTS = 3, /* segments[0..num_segments) in order (pk_body_segment): memory,
                           file ranges (sendfile(2) on plain connections, as PK_BODY_FILE)
                           and stream pieces (as PK_BODY_STREAM, one segment at a time).
                           body_len is the sum of the segment lengths, sent as
                           Content-Length; with body_chunked every segment's bytes go out
                           as chunks instead. Replayable unless a segment is a stream. */
} pk_body_kind;

/* One segment of a PK_BODY_SEGMENTS body. Borrowed (array, data, fd) until on_done. */
typedef enum pk_segment_kind {
  PK_SEG_MEMORY = 0, /* data[0..len) */
  PK_SEG_FILE = 1,   /* len bytes of fd from offset; the fd's own offset is never moved */
  PK_SEG_STREAM = 2, /* pieces from pk_request_send_body after each on_send_more; the
                        piece with last = 1 ends the segment (not the body) */
} pk_segment_kind;

#define PK_SEG_UNKNOWN_LEN UINT64_MAX /* a stream segment's len when unknown (body_chunked only) */

typedef struct pk_body_segment {
  int kind;          /* pk_segment_kind */
  const void *data;  /* PK_SEG_MEMORY */
  int fd;            /* PK_SEG_FILE */
  uint64_t offset;   /* PK_SEG_FILE */
  uint64_t len;      /* bytes; a stream segment must send exactly len (PK_E_BODY_LENGTH)
                        unless it is PK_SEG_UNKNOWN_LEN */
} pk_body_segment;

typedef struct pk_request_spec {
  const char *method;   size_t method_len;
  int scheme;           /* pk_scheme */
  const char *host;     size_t host_len; /* name, IPv4, or IPv6 without brackets */
  uint16_t port;
  const char *target;   size_t target_len; /* origin-form: "/path?query" */
  const pk_header *headers; size_t num_headers; /* Host is added unless present */
  const void *body;     size_t body_len; /* borrowed until on_done */
  int has_body;         /* 1: send Content-Length (even 0) unless headers carry framing */
  int body_kind;        /* pk_body_kind; PK_BODY_MEMORY (0) by default */
  int body_fd;          /* PK_BODY_FILE */
  uint64_t body_offset; /* PK_BODY_FILE: where the body starts in the file */
  int body_chunked;     /* PK_BODY_STREAM, PK_BODY_SEGMENTS: Transfer-Encoding: chunked */
  uint32_t expect_continue_ms; /* > 0: send Expect: 100-continue and wait this long for
                                  100 Continue (or a final response) before the body */
  int use_sink;         /* 1: response body bytes are written to sink_fd by the engine
                           (no on_body), unless on_head answers PK_HEAD_DIVERT */
  int sink_fd;          /* borrowed until on_done; written at its current offset */
  uint64_t max_body_bytes; /* 0: the engine's max_body_bytes; UINT64_MAX: no limit */
  uint32_t progress_interval_ms; /* 0: no on_progress for this request */
  uint32_t connect_timeout_ms; /* 0 = none */
  uint32_t read_timeout_ms;    /* idle-read; 0 = none */
  uint32_t total_timeout_ms;   /* whole request; 0 = none */
  int idempotent;       /* -1: from the method; 0/1 override */
  uint32_t tls_id;      /* https: 0 = the engine's TLS settings, else an id from pk_engine_add_tls */
  void *ctx;
  const pk_body_segment *segments; size_t num_segments; /* PK_BODY_SEGMENTS, borrowed until on_done */
  /* A Unix domain socket to connect to instead of host:port (curl's
   * --unix-socket); NULL (the default) for TCP. host and port still name the
   * origin: the Host field and, for https, SNI and certificate verification.
   * At most PK_UNIX_PATH_MAX bytes, no NUL (abstract sockets are not
   * supported). Connections are pooled per path: a request for a path never
   * reuses a TCP connection, nor one to another path. Errors of its own:
   * PK_E_UNIX_SOCKET_NOT_FOUND, _REFUSED, _PERMISSION (errno kept) and, from
   * submit, _PATH_TOO_LONG. Copied by submit. */
  const char *unix_path; size_t unix_path_len;
  /* Numeric addresses to connect to instead of resolving host, comma-
   * separated ("127.0.0.1,::1", IPv6 without brackets; at most 8): curl's
   * --resolve. Raced as resolved addresses are. Ignored with unix_path.
   * Pooled per list. Copied by submit; an entry that is not a numeric
   * address fails the request with PK_E_DNS. */
  const char *addresses; size_t addresses_len;
  /* An HTTP proxy (name or numeric, IPv6 without brackets) to connect to
   * instead of the origin; NULL: none. Its address is resolved and raced as
   * an origin's. With proxy_tunnel 0 the request itself goes to the proxy
   * (the caller writes an absolute-form target and any Proxy-Authorization
   * field: forwarding, for http). With proxy_tunnel 1 the engine first sends
   * CONNECT host:port (with proxy_authorization as Proxy-Authorization when
   * given) and, on a 2xx, runs TLS to the origin (SNI and verification
   * against host) and the request inside the tunnel. The connect timeout
   * covers the CONNECT exchange. Errors of the tunnel: PK_E_PROXY_AUTH (407, or
   * 401, which tinyproxy sends for wrong credentials; sys_errno the status),
   * PK_E_PROXY_CONNECT (other non-2xx; sys_errno is the status),
   * PK_E_PROXY_CLOSED (EOF before the answer), PK_E_PROXY_PROTOCOL (an answer
   * that does not parse, or bytes after it). Pooled per proxy (and
   * credentials): a tunnel never serves a direct request. Ignored with
   * unix_path; replaces addresses. Copied by submit. */
  const char *proxy_host; size_t proxy_host_len;
  uint16_t proxy_port;
  int proxy_tunnel;
  const char *proxy_authorization; size_t proxy_authorization_len;
} pk_request_spec;

#define PK_UNIX_PATH_MAX 107 /* sizeof(sun_path) - 1 on Linux */

/* The challenge of a proxy that refused a CONNECT: inside on_done of a
 * request that failed with PK_E_PROXY_AUTH (and only there, on that loop
 * thread), the values of the answer's Proxy-Authenticate fields
 * (WWW-Authenticate for a 401), combined with ", " (RFC 9110 §5.3), and their
 * length in *len (len may be NULL). NULL (and 0) anywhere else, or when the
 * answer carried none. The bytes are valid until on_done returns. With it the
 * caller can answer the challenge (Basic, Digest with method CONNECT and the
 * authority as uri) and submit again with proxy_authorization. */
const char *pk_proxy_challenge(size_t *len);


/* Validates the spec (CR, LF or NUL anywhere is rejected, nothing is sent),
 * copies what it needs (method, target, headers, host: the spec's strings
 * may be freed on return; bodies, fds and segments are borrowed until
 * on_done), serialises the request head and queues it. Any thread.
 * `handle` may be NULL (then the request cannot be cancelled).
 * Returns 0 (on_done will run exactly once), or -PK_E_xxx and no callback
 * runs: INVALID_ARGUMENT (eng or spec NULL, bad segments, unknown tls_id),
 * INVALID_METHOD/TARGET/HOST/HEADER_NAME/HEADER_VALUE, REQUEST_TOO_LARGE,
 * UNIX_SOCKET_PATH_TOO_LONG, SHUTDOWN, NOMEM. */
int pk_engine_submit(pk_engine *eng, const pk_request_spec *spec, pk_request_handle *handle);

/* Cancels a request. Any thread; eng NULL or a stale handle (the request
 * already finished, even long ago) is a no-op. The request ends with
 * -PK_E_CANCELLED in on_done (unless it completed first) and its connection
 * is closed, never pooled. on_done does not run inside this call. */
void pk_engine_cancel(pk_engine *eng, pk_request_handle handle);

/* Runs fn(ctx, arg) on loop `loop_index % loops` at its next pass, in FIFO
 * order with other posts. Any thread; from the loop thread itself it is a
 * queue push (no syscall). `ctx` is the engine config's post_ctx; `arg` is
 * the caller's, never touched. Returns 0, -PK_E_INVALID_ARGUMENT (eng or fn
 * NULL), -PK_E_SHUTDOWN once the loop has exited (fn will not run; the caller
 * must run the work elsewhere) or -PK_E_NOMEM. Work posted before the loop
 * exits always runs, even during shutdown. This is what lets the Swift layer
 * offer the loop as a TaskExecutor: tasks resumed by a callback continue on
 * the loop thread without a thread hop. */
int pk_engine_post(pk_engine *eng, uint32_t loop_index, void (*fn)(void *ctx, void *arg), void *arg);

/* Loop-thread calls for one request: run them from work posted to the
 * request's loop (pk_engine_post(eng, handle.loop, ...)) or from its
 * callbacks. A handle whose request already finished is ignored
 * (-PK_E_CANCELLED); no callback runs synchronously inside them except
 * on_head/on_body/on_send_more/on_progress/on_done of the request itself. */

/* Starts reading again after on_body answered PK_BODY_PAUSE. Returns 0,
 * -PK_E_CANCELLED (finished) or -PK_E_INVALID_ARGUMENT (not on its loop). */
int pk_request_resume_read(pk_engine *eng, pk_request_handle handle);

/* The next piece of a PK_BODY_STREAM body (or of the current PK_SEG_STREAM
 * segment), answering on_send_more. `data` is borrowed until the next
 * on_send_more or on_done. `last` = 1 ends the body (the segment), with or
 * without data. Pieces past the declared length, or a last piece short of it,
 * fail the request with PK_E_BODY_LENGTH. Returns 0,
 * -PK_E_CANCELLED (finished) or -PK_E_INVALID_ARGUMENT (not asked for). */
int pk_request_send_body(pk_engine *eng, pk_request_handle handle, const void *data, size_t len, int last);

/* Registers additional TLS settings (per-request TLS). Any thread. `cfg`'s
 * strings are read during the call (files loaded now). Pooled connections
 * are keyed by the id, so a request never reuses a connection made under
 * other settings. Returns 0 and the id (>= 1) in *id, or
 * -PK_E_INVALID_ARGUMENT (a NULL argument), -PK_E_NOMEM, -PK_E_TLS_CONFIG
 * when the settings do not load or PK_MAX_TLS_CONFIGS are registered. */
#define PK_MAX_TLS_CONFIGS 64
int pk_engine_add_tls(pk_engine *eng, const pk_tls_config *cfg, uint32_t *id);

/* 1 when called on one of this engine's loop threads (inside a callback or
 * posted work), else 0 (also for eng NULL). Any thread. */
int pk_engine_on_loop_thread(pk_engine *eng);

/* Pool statistics for tests and metrics; approximate when read off-loop. Any
 * thread; eng and out must not be NULL. */
typedef struct pk_engine_stats {
  uint64_t connections_opened;
  uint64_t connections_closed;
  uint64_t connections_idle;
  uint64_t requests_completed;
  uint64_t requests_retried;
  uint64_t wakeups;          /* eventfd writes: submits/posts that found the loop asleep */
  uint64_t requests_pending; /* submitted and not yet finished */
  uint64_t requests_answered_inline; /* answered on the submitting thread (inline_wait_us) */
  uint64_t inline_spins_answered; /* waits whose answer came while spinning (inline_spin_us) */
  uint64_t inline_spins_missed;   /* spins that ended with nothing (the wait then slept) */
  uint32_t io_backend;       /* in use: PK_IO_EPOLL or PK_IO_URING (every loop has the same) */
  uint64_t ring_sends;       /* writes that went through a ring */
  uint64_t ring_submits;     /* io_uring_enter calls that submitted them */
} pk_engine_stats;

void pk_engine_get_stats(pk_engine *eng, pk_engine_stats *out);

/* Every engine allocation goes through one wrapper: the number of
 * allocations (malloc/calloc/realloc) it made since the process started.
 * Any thread. A warm keep-alive request adds none. */
uint64_t pk_alloc_count(void);

#ifdef __cplusplus
}
#endif
#endif
