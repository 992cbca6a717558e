/* OpenSSL glue for the TLS side of Pocket's in-process TestServer (test support only).
 *
 * One `pktt_ctx` per server (an SSL_CTX built from `pktt_ctx_options`), one
 * `pktt_conn` per accepted socket. The socket is switched to non-blocking and
 * every call below waits at most its `timeout_ms` (via poll), so a connection
 * thread never blocks unboundedly. Writes use send(MSG_NOSIGNAL) (no SIGPIPE).
 *
 * Threading: a pktt_conn is used by one thread at a time; a pktt_ctx may be
 * shared by all connections (OpenSSL's SSL_CTX is thread-safe for that).
 */
#ifndef CPOCKETTESTTLS_H
#define CPOCKETTESTTLS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes of pktt_handshake / pktt_read / pktt_write. */
#define PKTT_OK 1
#define PKTT_TIMEOUT (-2)
#define PKTT_ERROR (-1)
#define PKTT_EOF 0

typedef struct pktt_ctx pktt_ctx;
typedef struct pktt_conn pktt_conn;

typedef struct {
    const char *certificate_file;   /* PEM chain, required */
    const char *key_file;           /* PEM private key, required */
    const char *client_ca_file;     /* PEM CA(s) to verify client certs; NULL: no client certs requested */
    int require_client_certificate; /* with client_ca_file: fail handshakes without a client cert */
    /* ALPN: comma-separated protocols the server may select, in preference order
     * (e.g. "http/1.1" or "h2"); NULL or "": no ALPN extension in answers.
     * The server picks its first protocol the client offered; if the client
     * offered ALPN but none of these, it still answers with its FIRST protocol
     * (a deliberate mismatch, for testing how clients react). */
    const char *alpn;
    int min_version;                /* e.g. 0x0303 (TLS 1.2), 0x0304 (TLS 1.3); 0: library default */
    int max_version;                /* 0: library default (highest); below 0x0303: security level 0 (OpenSSL 3 needs it for TLS 1.0 and 1.1) */
    int session_tickets;            /* nonzero: issue session tickets (resumption) */
} pktt_ctx_options;

/* Builds a server context; NULL on failure with a message in err. */
pktt_ctx *pktt_ctx_new(const pktt_ctx_options *options, char *err, size_t err_len);
void pktt_ctx_free(pktt_ctx *ctx);
/* ClientHellos received on connections whose first handshake had completed:
 * renegotiations clients agreed to. */
int pktt_ctx_renegotiations(pktt_ctx *ctx);

/* Wraps an accepted socket (sets O_NONBLOCK; does not take ownership of fd). */
pktt_conn *pktt_conn_new(pktt_ctx *ctx, int fd, char *err, size_t err_len);
/* Frees the TLS state without sending anything; never closes fd. */
void pktt_conn_free(pktt_conn *conn);

/* Drives the server handshake for up to timeout_ms: PKTT_OK when complete,
 * PKTT_TIMEOUT if still in progress (call again), PKTT_ERROR with a message. */
int pktt_handshake(pktt_conn *conn, int timeout_ms, char *err, size_t err_len);
/* After a completed handshake: 1 if the session was resumed. */
int pktt_session_reused(pktt_conn *conn);
/* After a completed handshake: negotiated version ("TLSv1.3") and ALPN ("" if none). */
const char *pktt_version(pktt_conn *conn);
/* The SNI host name the client sent, or NULL if none. */
const char *pktt_server_name(pktt_conn *conn);
void pktt_selected_alpn(pktt_conn *conn, char *out, size_t out_len);
/* 1 if the client presented a certificate that verified. */
int pktt_peer_certificate_verified(pktt_conn *conn);

/* Reads decrypted bytes: >0 count, PKTT_EOF (close_notify or TCP EOF),
 * PKTT_TIMEOUT, PKTT_ERROR (message in err; *sys_errno set if a socket error). */
long pktt_read(pktt_conn *conn, void *buffer, size_t length, int timeout_ms, int *sys_errno, char *err, size_t err_len);
/* Writes (partial writes allowed): >0 count, PKTT_TIMEOUT, PKTT_ERROR. Retry a
 * timed-out write with the same (or longer) bytes. */
long pktt_write(pktt_conn *conn, const void *buffer, size_t length, int timeout_ms, char *err, size_t err_len);
/* On an established TLS 1.2 (or older) connection: sends a HelloRequest
 * (server-initiated renegotiation) and returns PKTT_OK without waiting; the
 * client's answer is read by the next pktt_read/pktt_write. */
int pktt_request_renegotiation(pktt_conn *conn, char *err, size_t err_len);
/* On an established connection whose bytes read so far were all taken by
 * OpenSSL (so the next byte read starts a record): flips one bit of the
 * next record's ciphertext as it is read, so that OpenSSL fails to decrypt
 * it, sends a fatal bad_record_mac alert and pktt_read fails. PKTT_OK, or
 * PKTT_ERROR when not established or OpenSSL holds unread bytes. */
int pktt_corrupt_next_record(pktt_conn *conn);
/* Decrypted bytes buffered inside OpenSSL, not returned by pktt_read yet. */
int pktt_pending(pktt_conn *conn);
/* Sends close_notify (best effort, never waits). */
void pktt_send_close_notify(pktt_conn *conn);

/* ---- SHA-256 and the test byte pattern (pktt_digest.c) ---- */

/* An incremental SHA-256 (OpenSSL EVP). NULL if OpenSSL fails. */
typedef struct pktt_sha256 pktt_sha256;
pktt_sha256 *pktt_sha256_new(void);
void pktt_sha256_update(pktt_sha256 *hasher, const void *bytes, size_t length);
/* Writes the lowercase hex digest and a NUL to out, then restarts the hasher
 * (empty input). Returns 1, or 0 on an OpenSSL failure. */
int pktt_sha256_final_hex(pktt_sha256 *hasher, char out[65]);
void pktt_sha256_free(pktt_sha256 *hasher);

/* Writes bytes [offset, offset + length) of the pattern stream of `seed`:
 * byte i is byte (i % 8) (little-endian) of SplitMix64 output number i / 8,
 * output n being mix64(seed + (n + 1) * 0x9E3779B97F4A7C15). */
void pktt_pattern_fill(unsigned long long seed, unsigned long long offset, void *out, size_t length);

/* Frees OpenSSL's state of the calling thread (its error queue): called by
 * every test-server thread as it ends, so that no such state is left to a
 * thread-exit destructor that the test process's exit may overtake (it was
 * then reported as leaked). */
void pktt_thread_end(void);

#ifdef __cplusplus
}
#endif

#endif
