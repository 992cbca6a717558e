/*
 * CHTTPEngine — the C core of Pocket: an HTTP/1.1 client engine on epoll.
 *
 * Threading: every socket belongs to one loop thread. Only pk_engine_submit,
 * pk_engine_cancel and pk_engine_shutdown may be called from other threads.
 * Callbacks run on a loop thread and must not block.
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

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ errors */

/* X(enum, name, message). Codes are stable; new ones are appended. */
#define PK_ERROR_TABLE(X)                                                                 \
  X(PK_OK, "ok", "no error")                                                              \
  X(PK_E_NOMEM, "out_of_memory", "out of memory")                                         \
  X(PK_E_INVALID_ARGUMENT, "invalid_argument", "invalid argument")                        \
  X(PK_E_INVALID_METHOD, "invalid_method", "request method is empty or not a token")      \
  X(PK_E_INVALID_TARGET, "invalid_target",                                                \
    "request target is empty or contains CR, LF, NUL, space or a control byte")           \
  X(PK_E_INVALID_HEADER_NAME, "invalid_header_name",                                      \
    "request header name is empty or not a token")                                        \
  X(PK_E_INVALID_HEADER_VALUE, "invalid_header_value",                                    \
    "request header value contains CR, LF, NUL or another control byte")                                        \
  X(PK_E_INVALID_HOST, "invalid_host", "host is empty, too long or contains invalid bytes") \
  X(PK_E_REQUEST_TOO_LARGE, "request_head_too_large", "request head exceeds the limit")   \
  X(PK_E_SHUTDOWN, "shutdown", "the client was shut down")                                \
  X(PK_E_CANCELLED, "cancelled", "the request was cancelled")                             \
  X(PK_E_DNS, "dns_failure", "host name could not be resolved")                           \
  X(PK_E_CONNECT_REFUSED, "connection_refused", "connection refused")                     \
  X(PK_E_NETWORK_UNREACHABLE, "network_unreachable", "network unreachable")               \
  X(PK_E_HOST_UNREACHABLE, "host_unreachable", "host unreachable")                        \
  X(PK_E_CONNECT, "connect_failed", "connect failed")                                     \
  X(PK_E_CONNECT_TIMEOUT, "connect_timeout", "connect timed out")                         \
  X(PK_E_READ_TIMEOUT, "read_timeout", "no data received within the idle-read timeout")   \
  X(PK_E_TOTAL_TIMEOUT, "deadline_exceeded", "request did not finish before its deadline") \
  X(PK_E_CONN_RESET, "connection_reset", "connection reset by peer")                      \
  X(PK_E_CLOSED_BEFORE_RESPONSE, "closed_before_response",                                \
    "server closed the connection before sending a response")                             \
  X(PK_E_WRITE, "write_failed", "writing the request failed")                             \
  X(PK_E_READ, "read_failed", "reading the response failed")                              \
  X(PK_E_SOCKET, "socket_failed", "could not create a socket")                            \
  X(PK_E_HEAD_TOO_LARGE, "response_head_too_large", "response head exceeds the limit")    \
  X(PK_E_TOO_MANY_HEADERS, "too_many_headers", "response has too many header fields")     \
  X(PK_E_BAD_STATUS_LINE, "bad_status_line", "malformed response status line")            \
  X(PK_E_BAD_VERSION, "unsupported_version", "response is not HTTP/1.0 or HTTP/1.1")      \
  X(PK_E_BAD_HEADER, "bad_header", "malformed response header field")                     \
  X(PK_E_BAD_CONTENT_LENGTH, "bad_content_length",                                        \
    "Content-Length is not a plain decimal number or overflows")                          \
  X(PK_E_CONFLICTING_CONTENT_LENGTH, "conflicting_content_length",                        \
    "response has conflicting Content-Length values")                                     \
  X(PK_E_TE_WITH_CONTENT_LENGTH, "transfer_encoding_with_content_length",                 \
    "response has both Transfer-Encoding and Content-Length (RFC 9112 6.3)")              \
  X(PK_E_UNSUPPORTED_TRANSFER_ENCODING, "unsupported_transfer_encoding",                  \
    "response Transfer-Encoding is not chunked")                                          \
  X(PK_E_BAD_CHUNK, "bad_chunk", "malformed chunked encoding")                            \
  X(PK_E_CHUNK_SIZE_TOO_LONG, "chunk_size_too_long", "chunk size has too many hex digits") \
  X(PK_E_CHUNK_EXT_TOO_LARGE, "chunk_extension_too_large", "chunk extension exceeds the limit") \
  X(PK_E_TRAILERS_TOO_LARGE, "trailers_too_large", "chunked trailers exceed the limit")   \
  X(PK_E_TOO_MANY_INTERIM, "too_many_interim_responses", "too many 1xx interim responses") \
  X(PK_E_UNEXPECTED_UPGRADE, "unexpected_upgrade", "server switched protocols (101) unasked") \
  X(PK_E_TRUNCATED_BODY, "truncated_body",                                                \
    "connection closed before the response body was complete")                            \
  X(PK_E_TRUNCATED_HEAD, "truncated_head",                                                \
    "connection closed in the middle of the response head")                               \
  X(PK_E_BODY_TOO_LARGE, "body_too_large", "response body exceeds the limit")              \
  X(PK_E_TLS_CONFIG, "tls_configuration", "TLS configuration could not be loaded (CA, certificate, key or ciphers)") \
  X(PK_E_TLS_HANDSHAKE, "tls_handshake_failed", "TLS handshake failed")                   \
  X(PK_E_TLS_UNTRUSTED, "tls_untrusted_certificate", "server certificate is not trusted")  \
  X(PK_E_TLS_HOSTNAME, "tls_hostname_mismatch", "server certificate does not match the host") \
  X(PK_E_TLS_EXPIRED, "tls_certificate_expired", "server certificate has expired")        \
  X(PK_E_TLS_NOT_YET_VALID, "tls_certificate_not_yet_valid", "server certificate is not yet valid") \
  X(PK_E_TLS_PIN, "tls_pin_mismatch", "server public key matches none of the pins")       \
  X(PK_E_TLS_VERSION, "tls_protocol_version", "no TLS protocol version in common with the server") \
  X(PK_E_TLS_ALPN, "tls_alpn_mismatch", "server selected an application protocol other than http/1.1") \
  X(PK_E_BAD_ENCODING, "bad_content_encoding", "compressed body is corrupt")               \
  X(PK_E_TRUNCATED_ENCODING, "truncated_content_encoding", "compressed body ended before its end marker") \
  X(PK_E_DECOMPRESSION_BOMB, "decompression_bomb", "compressed body expands past the ratio limit") \
  X(PK_E_DECODED_TOO_LARGE, "decoded_body_too_large", "decompressed body exceeds the size limit") \
  X(PK_E_TOO_MANY_ENCODINGS, "too_many_content_encodings", "response stacks more than two content codings") \
  X(PK_E_FILE_WRITE, "file_write_failed", "writing the response body to its file failed")  \
  X(PK_E_FILE_READ, "file_read_failed", "reading the request body file failed or it ended early") \
  X(PK_E_BODY_LENGTH, "request_body_length_mismatch",                                     \
    "the request body stream did not match its declared length")

typedef enum pk_error {
#define PK__ENUM(e, name, msg) e,
  PK_ERROR_TABLE(PK__ENUM)
#undef PK__ENUM
  PK__ERROR_COUNT
} pk_error;

/* Stable snake_case name of an error code ("connect_timeout"); "unknown" if out of range. */
const char *pk_error_name(int code);
/* One-line English message for an error code. Never NULL. */
const char *pk_error_message(int code);

/* --------------------------------------------------------- allocation hook */

/* Every engine allocation goes through one wrapper so tests can count them.
 * Returns the number of allocations (malloc/calloc/realloc of a new block)
 * made by the engine since the process started. Thread-safe. */
uint64_t pk_alloc_count(void);
/* Test hook: the next `n`-th allocation and every later one fail (0 disables). */
void pk_alloc_fail_after(uint64_t n);

/* ------------------------------------------------------------ pure parser */

typedef struct pk_header {
  const char *name;
  size_t name_len;
  const char *value;
  size_t value_len;
} pk_header;

typedef struct pk_parse_limits {
  size_t max_head_bytes;      /* default 65536 */
  size_t max_header_fields;   /* default 128 */
  size_t max_chunk_hex_digits; /* default 16 */
  size_t max_chunk_ext_bytes; /* default 4096 */
  size_t max_trailer_bytes;   /* default 16384 */
} pk_parse_limits;

/* Fills defaults. */
void pk_parse_limits_init(pk_parse_limits *limits);

typedef struct pk_response_head {
  int minor_version;  /* 0 or 1 */
  int status;         /* 100..999 */
  const char *reason; /* points into the buffer; may be empty */
  size_t reason_len;
  pk_header *headers; /* caller-provided array */
  size_t num_headers; /* in: capacity of `headers`; out: fields parsed */
} pk_response_head;

#define PK_PARSE_INCOMPLETE (-1000000)

/*
 * Parses a response head (status line and header fields up to the empty
 * line) in buf[0..len). Stateless: call again with more bytes; `last_len`
 * is how many bytes the previous call saw (0 at first), so only the new
 * bytes are scanned for the end of the head — a trickling server costs O(n).
 * Obsolete line folding is unfolded in place (the fold becomes spaces),
 * which is why `buf` is writable. No allocation, no I/O.
 * Returns the head length (> 0) when complete; PK_PARSE_INCOMPLETE when more
 * bytes are needed (and len < max_head_bytes); otherwise -PK_E_xxx
 * (HEAD_TOO_LARGE, TOO_MANY_HEADERS, BAD_STATUS_LINE, BAD_VERSION, BAD_HEADER).
 * If out->num_headers capacity is smaller than max_header_fields, the smaller
 * bound applies.
 */
int pk_parse_response_head(char *buf, size_t len, size_t last_len, pk_response_head *out,
                           const pk_parse_limits *limits);

/* Resumable chunked-body decoder (RFC 9112 §7.1). Zero-initialise or call _init. */
typedef struct pk_chunked {
  uint64_t remaining; /* bytes left in the current chunk's data */
  size_t count;       /* digits / extension bytes / trailer bytes seen, per state */
  size_t trailer_total;
  int state;          /* private */
  int done;           /* 1 once the last chunk and trailers were consumed */
} pk_chunked;

void pk_chunked_init(pk_chunked *dec);

/*
 * Decodes chunked data in place. On entry buf[0..*len) holds raw bytes; on
 * return the decoded body bytes are compacted to buf[0..*len) (in order).
 * Returns the number of raw bytes consumed (equal to the input length unless
 * the body ended inside the buffer; then dec->done is 1 and the bytes after
 * it are left untouched at buf[consumed..input_len)), or -PK_E_xxx
 * (BAD_CHUNK, CHUNK_SIZE_TOO_LONG, CHUNK_EXT_TOO_LARGE, TRAILERS_TOO_LARGE).
 * Note: when the body ends inside the buffer, the leftover bytes are NOT moved;
 * the caller finds them at original offset `consumed`.
 */
ssize_t pk_chunked_decode(pk_chunked *dec, char *buf, size_t *len, const pk_parse_limits *limits);

/* Framing of a response body, derived from a parsed head (RFC 9112 §6.3). */
typedef enum pk_framing {
  PK_FRAMING_NONE = 0,      /* HEAD, 1xx, 204, 304: no body */
  PK_FRAMING_LENGTH = 1,    /* Content-Length */
  PK_FRAMING_CHUNKED = 2,   /* Transfer-Encoding: chunked */
  PK_FRAMING_CLOSE = 3,     /* read until the server closes */
} pk_framing;

typedef struct pk_body_info {
  pk_framing framing;
  uint64_t content_length; /* valid for PK_FRAMING_LENGTH */
  int keep_alive;          /* 1 if the connection may be reused after this response */
} pk_body_info;

/*
 * Applies RFC 9112 §6.3 to a parsed head. `head_request` is 1 for a HEAD
 * request. Returns 0 or -PK_E_xxx (BAD_CONTENT_LENGTH,
 * CONFLICTING_CONTENT_LENGTH, TE_WITH_CONTENT_LENGTH,
 * UNSUPPORTED_TRANSFER_ENCODING). Pure.
 */
int pk_response_body_info(const pk_response_head *head, int head_request, pk_body_info *out);

/* ------------------------------------------------------ content decoding */

typedef enum pk_coding { PK_CODING_GZIP = 1, PK_CODING_DEFLATE = 2 } pk_coding;

typedef struct pk_inflate pk_inflate;

typedef struct pk_inflate_limits {
  uint64_t max_ratio;   /* output/input past ratio_floor; default 200 */
  uint64_t ratio_floor; /* output below this is never a bomb; default 1 MiB */
  uint64_t max_output;  /* absolute cap; 0 = none (default) */
} pk_inflate_limits;

void pk_inflate_limits_init(pk_inflate_limits *limits);

/* A streaming gzip or deflate decoder (RFC 9110 §8.4.1). "deflate" accepts
 * the zlib wrapper (RFC 1950) and, as servers wrongly send it, raw deflate
 * (RFC 1951); gzip accepts concatenated members. Memory stays bounded (one
 * zlib stream and a stack buffer). Returns 0 or -PK_E_NOMEM / -PK_E_INVALID_ARGUMENT. */
int pk_inflate_create(pk_coding coding, const pk_inflate_limits *limits, pk_inflate **out);

/* Decodes `len` bytes, handing output to sink(ctx, data, n) as it comes
 * (borrowed until sink returns; a non-zero return stops and is returned).
 * Returns 0 or -PK_E_BAD_ENCODING, -PK_E_DECOMPRESSION_BOMB, -PK_E_DECODED_TOO_LARGE. */
int pk_inflate_feed(pk_inflate *dec, const void *data, size_t len,
                    int (*sink)(void *ctx, const char *data, size_t n), void *ctx);

/* Optional hint, before the first feed: the encoded input is exactly
 * `total` bytes (a Content-Length). A small whole gzip body is then
 * collected and decoded in one call (faster); its output is delivered when
 * the last input byte arrives. Returns 0. */
int pk_inflate_expect(pk_inflate *dec, uint64_t total);

/* The input ended: 0 if the stream was complete, else -PK_E_TRUNCATED_ENCODING. */
int pk_inflate_finish(pk_inflate *dec);

void pk_inflate_free(pk_inflate *dec);

/* --------------------------------------------------------------- engine */

typedef struct pk_engine pk_engine;

/* Per-request timings in nanoseconds; 0 when the phase did not happen
 * (e.g. dns and connect on a reused connection). */
typedef struct pk_timings {
  uint64_t dns_ns;        /* name resolution (0 for numeric hosts and cache hits) */
  uint64_t connect_ns;    /* TCP connect */
  uint64_t tls_ns;        /* TLS handshake (later issue) */
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

/* Callbacks, set once per engine. `ctx` is the per-request context pointer. */
typedef struct pk_callbacks {
  /* The final response head (interim 1xx are skipped). Borrowed until return.
   * `raw`/`raw_len` is the head as received (after unfolding). `content_length`
   * is -1 when unknown. Returns PK_HEAD_CONTINUE or PK_HEAD_DIVERT. A request
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
  /* Exactly once per accepted submission. `error` is PK_OK or a pk_error;
   * `sys_errno` keeps errno (or the getaddrinfo code for PK_E_DNS) when relevant.
   * After it returns the engine never touches `ctx` again. */
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
 * PK_E_TLS_UNTRUSTED/HOSTNAME/EXPIRED/NOT_YET_VALID errors). */
const char *pk_tls_verify_reason(int code);

typedef struct pk_engine_config {
  uint32_t loops;                /* event-loop threads, default 1 */
  uint32_t max_conns_per_origin; /* default 64 */
  uint32_t idle_timeout_ms;      /* idle pooled connection lifetime, default 60000 */
  uint32_t dns_threads;          /* resolver threads, default 2 */
  uint32_t dns_cache_ttl_ms;     /* default 30000; 0 disables the cache */
  uint32_t max_interim;          /* 1xx responses skipped at most, default 8 */
  uint64_t max_body_bytes;       /* 0 = unlimited (default) */
  pk_parse_limits limits;
  pk_callbacks callbacks;
  pk_tls_config tls;             /* for https origins */
  int decode_content;            /* 1 (default): gzip/deflate bodies are decoded before on_body */
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
} pk_engine_config;

void pk_engine_config_init(pk_engine_config *cfg);

/* Starts the loop and resolver threads. Returns 0 or -PK_E_xxx (errno kept in *sys_errno). */
int pk_engine_create(const pk_engine_config *cfg, pk_engine **out);

/* Fails every queued and in-flight request with PK_E_SHUTDOWN (their on_done
 * runs on the loop threads), closes every connection and joins the threads.
 * Idempotent. Any thread except a loop thread may call it; called from a loop
 * thread (inside a callback) it only starts the shutdown. */
void pk_engine_shutdown(pk_engine *eng);

/* Shuts down (if not yet) and frees the engine. Called from a loop thread
 * the memory is released when that thread exits. */
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
} pk_request_spec;


/* Validates the spec (CR, LF or NUL anywhere is rejected, nothing is sent),
 * serialises the request head and queues it. Thread-safe.
 * Returns 0 and fills *handle, or -PK_E_xxx (no callback will run). */
int pk_engine_submit(pk_engine *eng, const pk_request_spec *spec, pk_request_handle *handle);

/* Cancels a request from any thread. A no-op if it already finished. The
 * request ends with PK_E_CANCELLED (unless it completed first) and its
 * connection is closed, never pooled. */
void pk_engine_cancel(pk_engine *eng, pk_request_handle handle);

/* Runs fn(ctx, arg) on loop `loop_index % loops` at its next pass, in FIFO
 * order with other posts. Thread-safe; from the loop thread itself it is a
 * queue push (no syscall). `ctx` is the engine config's post_ctx. Returns 0,
 * or -PK_E_SHUTDOWN once the loop has exited (fn will not run; the caller
 * must run the work elsewhere) or -PK_E_NOMEM. Work posted before the loop
 * exits always runs, even during shutdown. This is what lets the Swift layer
 * offer the loop as a TaskExecutor: tasks resumed by a callback continue on
 * the loop thread without a thread hop. */
int pk_engine_post(pk_engine *eng, uint32_t loop_index, void (*fn)(void *ctx, void *arg), void *arg);

/* Loop-thread calls for one request: run them from work posted to the
 * request's loop (pk_engine_post(eng, handle.loop, ...)) or from its
 * callbacks. A handle whose request already finished is ignored
 * (-PK_E_CANCELLED); no callback runs synchronously inside them except
 * on_body/on_head/on_done of the request itself. */

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

/* Registers additional TLS settings (per-request TLS); thread-safe. Pooled
 * connections are keyed by the id, so a request never reuses a connection
 * made under other settings. Returns 0 and the id (>= 1), or -PK_E_TLS_CONFIG
 * when the settings do not load or PK_MAX_TLS_CONFIGS are registered. */
#define PK_MAX_TLS_CONFIGS 64
int pk_engine_add_tls(pk_engine *eng, const pk_tls_config *cfg, uint32_t *id);

/* 1 when called on one of this engine's loop threads (inside a callback or posted work). */
int pk_engine_on_loop_thread(pk_engine *eng);

/* Pool statistics for tests and metrics; approximate when read off-loop. */
typedef struct pk_engine_stats {
  uint64_t connections_opened;
  uint64_t connections_closed;
  uint64_t connections_idle;
  uint64_t requests_completed;
  uint64_t requests_retried;
  uint64_t wakeups;          /* eventfd writes: submits/posts that found the loop asleep */
  uint64_t requests_pending; /* submitted and not yet finished */
} pk_engine_stats;

void pk_engine_get_stats(pk_engine *eng, pk_engine_stats *out);

#ifdef __cplusplus
}
#endif
#endif
