/*
 * TLS for the bench server: the only file of CPocketBenchServer that
 * includes OpenSSL (linked, libssl and libcrypto).
 *
 * The certificate is made in this process when TLS is turned on: an ECDSA
 * P-256 key and a self-signed X.509 v3 certificate for "localhost" (subject
 * CN and subjectAltName DNS:localhost, IP:127.0.0.1, IP:::1), valid from an
 * hour ago for two days. It is its own trust anchor (CA:TRUE, as `openssl req
 * -x509` makes one), so a client verifies the server with the certificate's
 * PEM as its CA file: the handshake costs what a real one does, verification
 * included. Nothing is read from disk and no openssl command runs.
 *
 * Connections use OpenSSL's socket BIO on the nonblocking fd: a read or
 * write that would block is reported as EAGAIN, the way recv/send are, and
 * pkbs_server.c keeps one code path for both kinds of server.
 */
#include "pkbs_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

/* Adds one extension (OpenSSL's config syntax) to a self-signed cert. */
static int add_ext(X509 *cert, int nid, const char *value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext) return -1;
    int ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    return ok ? 0 : -1;
}

static X509 *make_cert(EVP_PKEY *key) {
    X509 *cert = X509_new();
    if (!cert) return NULL;
    unsigned char serial[8];
    BIGNUM *bn = NULL;
    X509_NAME *name = NULL;
    int ok = X509_set_version(cert, 2) /* v3 */
        && RAND_bytes(serial, sizeof(serial)) == 1
        && (serial[0] &= 0x7f, (bn = BN_bin2bn(serial, sizeof(serial), NULL)) != NULL)
        && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != NULL
        && X509_gmtime_adj(X509_getm_notBefore(cert), -3600)
        && X509_gmtime_adj(X509_getm_notAfter(cert), 2L * 24 * 3600)
        && X509_set_pubkey(cert, key)
        && (name = X509_get_subject_name(cert)) != NULL
        && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1, -1, 0)
        && X509_set_issuer_name(cert, name)
        && add_ext(cert, NID_basic_constraints, "critical,CA:TRUE") == 0
        && add_ext(cert, NID_key_usage, "critical,digitalSignature,keyCertSign") == 0
        && add_ext(cert, NID_ext_key_usage, "serverAuth") == 0
        && add_ext(cert, NID_subject_key_identifier, "hash") == 0
        && add_ext(cert, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1") == 0
        && X509_sign(cert, key, EVP_sha256()) > 0;
    BN_free(bn);
    if (!ok) {
        X509_free(cert);
        return NULL;
    }
    return cert;
}

void *pkbs__tls_context(const char *cert_pem_path) {
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *cert = key ? make_cert(key) : NULL;
    SSL_CTX *ctx = cert ? SSL_CTX_new(TLS_server_method()) : NULL;
    int ok = ctx != NULL
        && SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)
        && SSL_CTX_use_certificate(ctx, cert) == 1
        && SSL_CTX_use_PrivateKey(ctx, key) == 1
        && SSL_CTX_check_private_key(ctx) == 1;
    if (ok && cert_pem_path) {
        FILE *f = fopen(cert_pem_path, "w");
        ok = f != NULL && PEM_write_X509(f, cert) == 1;
        if (f && fclose(f) != 0) ok = 0;
    }
    if (ok) {
        /* Partial writes: the output is written from a block of answers at
         * whatever offset the connection is, as with send(). */
        SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    }
    X509_free(cert);
    EVP_PKEY_free(key);
    if (!ok) {
        SSL_CTX_free(ctx);
        ERR_clear_error();
        errno = EIO;
        return NULL;
    }
    return ctx;
}

void pkbs__tls_context_free(void *ctx) { SSL_CTX_free(ctx); }

void *pkbs__tls_new(void *ctx, int fd) {
    SSL *ssl = SSL_new(ctx);
    if (!ssl) return NULL;
    if (SSL_set_fd(ssl, fd) != 1) {
        SSL_free(ssl);
        return NULL;
    }
    SSL_set_accept_state(ssl); /* the first SSL_read runs the handshake */
    return ssl;
}

void pkbs__tls_free(void *ssl) {
    /* No close_notify: the peer may be gone, and a bench does not need it. */
    SSL_free(ssl);
}

/* What an SSL_read/SSL_write failure means as a recv/send result. */
static ssize_t io_result(SSL *ssl, int r, bool *wants_write) {
    int e = SSL_get_error(ssl, r);
    if (wants_write) *wants_write = e == SSL_ERROR_WANT_WRITE;
    switch (e) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN: /* close_notify: an orderly end */
        return 0;
    case SSL_ERROR_SYSCALL:
        ERR_clear_error();
        if (errno == 0 || errno == EAGAIN) errno = ECONNRESET;
        return -1;
    default:
        ERR_clear_error();
        errno = EPROTO;
        return -1;
    }
}

ssize_t pkbs__tls_recv(void *ssl, void *buf, size_t n, bool *wants_write) {
    *wants_write = false;
    int want = n > INT32_MAX ? INT32_MAX : (int)n;
    errno = 0;
    int r = SSL_read(ssl, buf, want);
    if (r > 0) return r;
    return io_result(ssl, r, wants_write);
}

ssize_t pkbs__tls_send(void *ssl, const void *buf, size_t n) {
    int want = n > INT32_MAX ? INT32_MAX : (int)n;
    errno = 0;
    int r = SSL_write(ssl, buf, want);
    if (r > 0) return r;
    ssize_t res = io_result(ssl, r, NULL);
    return res == 0 ? (errno = EPIPE, -1) : res;
}

void pkbs__tls_close_notify(void *ssl) {
    if (SSL_is_init_finished(ssl) && SSL_shutdown(ssl) < 0) ERR_clear_error();
}

size_t pkbs__tls_pending(void *ssl) { return (size_t)SSL_pending(ssl); }
