/*
 * The engine's error codes: one table, shared by the engine (CHTTPEngine.h),
 * the parser (pk_h1_parse.h) and the inflater (pk_inflate.h).
 *
 * One sign rule. A pk_error is a positive number (PK_OK is 0). Wherever an
 * int carries one, a function's result or on_done's `error`, it is negated:
 * 0 (or a length or count >= 0) is success, -PK_E_xxx is failure. Results
 * that are not failures are never negative (PK_PARSE_INCOMPLETE is 0).
 * pk_error_name and pk_error_message accept either sign.
 */
#ifndef PK_ERRORS_H
#define PK_ERRORS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

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
  X(PK_E_TOTAL_TIMEOUT, "total_timeout", "request did not finish within its total timeout") \
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
  X(PK_E_TLS_PLAIN_HTTP, "tls_answered_by_plain_http",                                   \
    "the server answered the TLS handshake in plain HTTP (is this an http:// port?)")     \
  X(PK_E_BAD_ENCODING, "bad_content_encoding", "compressed body is corrupt")               \
  X(PK_E_TRUNCATED_ENCODING, "truncated_content_encoding", "compressed body ended before its end marker") \
  X(PK_E_DECOMPRESSION_BOMB, "decompression_bomb", "compressed body expands past the ratio limit") \
  X(PK_E_DECODED_TOO_LARGE, "decoded_body_too_large", "decompressed body exceeds the size limit") \
  X(PK_E_TOO_MANY_ENCODINGS, "too_many_content_encodings", "response stacks more than two content codings") \
  X(PK_E_FILE_WRITE, "file_write_failed", "writing the response body to its file failed")  \
  X(PK_E_FILE_READ, "file_read_failed", "reading the request body file failed or it ended early") \
  X(PK_E_BODY_LENGTH, "request_body_length_mismatch",                                     \
    "the request body stream did not match its declared length")                          \
  X(PK_E_THREAD, "thread_failed", "an engine thread could not be started")                \
  X(PK_E_UNIX_SOCKET_NOT_FOUND, "unix_socket_not_found",                                  \
    "the Unix domain socket file does not exist")                                         \
  X(PK_E_UNIX_SOCKET_REFUSED, "unix_socket_refused",                                      \
    "nothing accepts connections on the Unix domain socket (or the file is not a socket)") \
  X(PK_E_UNIX_SOCKET_PERMISSION, "unix_socket_permission_denied",                         \
    "permission denied connecting to the Unix domain socket")                             \
  X(PK_E_UNIX_SOCKET_PATH_TOO_LONG, "unix_socket_path_too_long",                          \
    "the Unix domain socket path is longer than sun_path holds (107 bytes)")              \
  X(PK_E_PROXY_AUTH, "proxy_authentication_required",                                    \
    "the proxy answered 407: credentials missing or not accepted")                        \
  X(PK_E_PROXY_CONNECT, "proxy_connect_failed",                                           \
    "the proxy refused the CONNECT tunnel (non-2xx answer)")                              \
  X(PK_E_PROXY_CLOSED, "proxy_tunnel_closed",                                             \
    "the proxy closed the connection before the tunnel was up")                          \
  X(PK_E_PROXY_PROTOCOL, "proxy_bad_response", "the proxy's answer to CONNECT is not valid HTTP") \
  X(PK_E_IO_URING, "io_uring_unavailable",                                                \
    "io_uring was asked for but the kernel refuses it (kernel.io_uring_disabled, a seccomp filter, or too old)") \
  X(PK_E_TOO_MANY_OPEN_FILES, "too_many_open_files",                                      \
    "no descriptor for a socket: the process's open-file limit (RLIMIT_NOFILE, ulimit -n; EMFILE) or the system's (fs.file-max; ENFILE) is reached, and no connection of this client is open to free one") \
  X(PK_E_TLS_ALERT, "tls_alert",                                                          \
    "the TLS connection ended with a fatal alert after its handshake")

typedef enum pk_error {
#define PK__ENUM(e, name, msg) e,
  PK_ERROR_TABLE(PK__ENUM)
#undef PK__ENUM
  PK__ERROR_COUNT
} pk_error;

/* Stable snake_case name of an error code ("connect_timeout"), either sign;
 * "unknown" if out of range. Never NULL; a static string. Any thread. */
const char *pk_error_name(int code);
/* One-line English message for an error code, either sign; "unknown error"
 * if out of range. Never NULL; a static string. Any thread. */
const char *pk_error_message(int code);


#ifdef __cplusplus
}
#endif
#endif
