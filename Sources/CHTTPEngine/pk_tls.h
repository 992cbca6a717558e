/* TLS, a leaf (pk_tls.c): it knows sockets and OpenSSL, never a connection,
 * the pool or the loop. What a connection needs back (a new session to keep
 * for its origin) comes through the callback given to pk__tls_new.
 *
 * Results follow the engine's one sign rule: >= 0 is a status (below),
 * < 0 is -PK_E_xxx. */
#ifndef PK_TLS_H
#define PK_TLS_H

#include "pk_base.h"
#include "CHTTPEngine.h" /* pk_tls_config */

#include <sys/types.h>

typedef struct pk__tls_ctx pk__tls_ctx;
typedef struct pk__tls pk__tls;

enum pk__tls_status {
  PK__TLS_OK = 0,          /* done (handshake), or *n bytes moved (read/write) */
  PK__TLS_WANT_READ = 1,   /* call again after the socket is readable */
  PK__TLS_WANT_WRITE = 2,  /* call again after the socket is writable */
  PK__TLS_CLOSED = 3,      /* read: close_notify, a clean end */
  PK__TLS_EOF_UNCLEAN = 4, /* read: TCP FIN without close_notify */
};

/* A new resumable session for the owner to keep (it takes ownership; free it
 * with pk__tls_session_free). Runs inside pk__tls_handshake/pk__tls_read. */
typedef void (*pk__tls_session_cb)(void *owner, void *session);

/* Every setting that can fail is checked here (ciphers, CA paths, client
 * certificate and key: the OpenSSL context is built now), so a bad setting
 * is one error at engine creation. A context of a version and the verify
 * flag alone, which cannot fail, is built at the first pk__tls_new, and the
 * default system trust store (about 4 MB of certificates; loading it cannot
 * fail) is read then too: a client that never speaks https starts no
 * OpenSSL. Thread-safe. 0 or -PK_E_TLS_CONFIG / -PK_E_NOMEM. */
int pk__tls_ctx_create(const pk_tls_config *cfg, pk__tls_ctx **out);
void pk__tls_ctx_free(pk__tls_ctx *c); /* NULL is fine */
bool pk__tls_ctx_built(pk__tls_ctx *c); /* its OpenSSL context exists (tests) */

/* A client SSL on the connected socket `fd` for `host` (SNI and name check),
 * resuming `session` (borrowed; may be NULL). `on_session` may be NULL.
 * Thread: any, one pk__tls per thread at a time. 0 or -PK_E_TLS_HANDSHAKE /
 * -PK_E_TLS_CONFIG / -PK_E_NOMEM. */
int pk__tls_new(pk__tls_ctx *c, int fd, const char *host, size_t host_len, void *session,
                pk__tls_session_cb on_session, void *owner, pk__tls **out);
/* OK, WANT_READ, WANT_WRITE, or -PK_E_TLS_xxx / -PK_E_CONN_RESET with the
 * OpenSSL verify code or errno in *detail. */
int pk__tls_handshake(pk__tls *t, int *detail);
/* After the handshake: OK with *n > 0 bytes, WANT_*, CLOSED, EOF_UNCLEAN,
 * or -PK_E_CONN_RESET / -PK_E_READ (*detail: errno) / -PK_E_TLS_ALERT
 * (*detail: OpenSSL's reason, pk_tls_alert_reason). */
int pk__tls_read(pk__tls *t, char *buf, size_t len, size_t *n, int *detail);
/* OK with *n > 0 bytes, WANT_*, or -PK_E_CONN_RESET / -PK_E_WRITE (*detail: errno). */
int pk__tls_write(pk__tls *t, const char *buf, size_t len, size_t *n, int *detail);
/* Sealing, for a caller that sends the records itself (the io_uring
 * backend queues them on its ring): pk__tls_write, but the records stay in
 * the pk__tls, *records..*records_len, held for the caller until
 * pk__tls_sealed_sent says how many of their bytes went. While they are
 * held nothing else is written (a write inside pk__tls_read reports
 * WANT_WRITE, and so does a second seal); bytes that did not go are
 * pending, and pk__tls_flush (or the next write) sends them with send(2)
 * before anything else (a seal holds them with its own records). All of
 * `buf` is sealed (fewer bytes only when a write fails partway, and the
 * next write meets the failure): OK with *n > 0 and records held, else as
 * pk__tls_write (whatever was sealed is then pending, not held). */
int pk__tls_seal(pk__tls *t, const char *buf, size_t len, const void **records, size_t *records_len,
                 size_t *n, int *detail);
void pk__tls_sealed_sent(pk__tls *t, size_t sent);
bool pk__tls_pending(pk__tls *t); /* sealed bytes wait for pk__tls_flush */
/* Sends the pending bytes: OK (none left), WANT_WRITE (the socket is full,
 * or records are still held), or -PK_E_CONN_RESET / -PK_E_WRITE (*detail: errno). */
int pk__tls_flush(pk__tls *t, int *detail);
bool pk__tls_drained(pk__tls *t); /* nothing decrypted waits and the socket was read dry */
bool pk__tls_buffered(pk__tls *t);  /* OpenSSL holds bytes read from the socket (a record, or part of one) */
bool pk__tls_read_short(pk__tls *t); /* the BIO's last recv got less than asked */
int pk__tls_resumed(pk__tls *t);
void pk__tls_session_free(void *session); /* NULL is fine */
bool pk__tls_session_resumable(void *session);
/* Frees the SSL (not the fd). `clean`: after a complete exchange, send
 * close_notify once and keep the session resumable. NULL is fine. */
void pk__tls_free(pk__tls *t, bool clean);
uint64_t pk__tls_wire_out(pk__tls *t); /* bytes the BIO sent / received so far */
uint64_t pk__tls_wire_in(pk__tls *t);

/* Called by a thread that may have run TLS, as it ends: frees OpenSSL's
 * state of the thread (its error queue) there, rather than in a thread-exit
 * destructor that a process exit may overtake. */
void pk__tls_thread_end(void);

#endif
