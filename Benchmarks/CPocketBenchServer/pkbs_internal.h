/*
 * Between pkbs_server.c and pkbs_tls.c (the only file that includes
 * OpenSSL): TLS as opaque pointers, with recv/send-like results.
 */
#ifndef PKBS_INTERNAL_H
#define PKBS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A server context with a fresh key and self-signed certificate for
 * localhost (see pkbs_tls.c); its PEM written to cert_pem_path unless NULL.
 * NULL with errno EIO if OpenSSL fails (or fopen's errno). */
void *pkbs__tls_context(const char *cert_pem_path);
void pkbs__tls_context_free(void *ctx);

/* A server-side TLS connection on the nonblocking socket fd (not owned: the
 * caller closes it after pkbs__tls_free), or NULL. */
void *pkbs__tls_new(void *ctx, int fd);
void pkbs__tls_free(void *ssl);

/* As recv(2): bytes read, 0 at the end, or -1 with errno (EAGAIN when it
 * would block). The handshake runs inside the first reads. *wants_write is
 * set when it would block on writing (a handshake message that the socket
 * did not take): read again once the socket is writable. */
ssize_t pkbs__tls_recv(void *ssl, void *buf, size_t n, bool *wants_write);

/* As send(2): bytes written (a record's worth or less), or -1 with errno
 * (EAGAIN when it would block). SIGPIPE is the calling thread's business:
 * the server's loop threads block it. */
ssize_t pkbs__tls_send(void *ssl, const void *buf, size_t n);

/* Sends close_notify if the socket takes it now (an orderly end that TLS
 * clients expect before the FIN); never waits for the peer's. */
void pkbs__tls_close_notify(void *ssl);

/* Decrypted bytes buffered inside OpenSSL (no epoll event will say so). */
size_t pkbs__tls_pending(void *ssl);

#endif
