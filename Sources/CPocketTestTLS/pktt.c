/* OpenSSL glue for the TLS side of the test server. See CPocketTestTLS.h. */
#include "CPocketTestTLS.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

struct pktt_ctx {
    SSL_CTX *ssl_ctx;
    unsigned char alpn_wire[256]; /* length-prefixed list */
    unsigned int alpn_wire_len;
    atomic_int renegotiations; /* ClientHellos on connections already established */
};

struct pktt_conn {
    SSL *ssl;
    int fd;
    int established; /* the first handshake completed */
    /* >= 0: the offset, in the bytes read from now on, of the one byte to
     * flip (pktt_corrupt_next_record); -1: none. Only the connection's
     * thread touches it. */
    long corrupt_at;
};

/* ---- errors ---- */

static void set_error(char *err, size_t err_len, const char *what) {
    if (!err || err_len == 0) return;
    char detail[256] = "";
    unsigned long code = ERR_get_error();
    if (code) ERR_error_string_n(code, detail, sizeof detail);
    ERR_clear_error();
    if (detail[0]) snprintf(err, err_len, "%s: %s", what, detail);
    else snprintf(err, err_len, "%s", what);
}

/* ---- time and polling ---- */

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, long long deadline) {
    for (;;) {
        long long left = deadline - now_ms();
        if (left < 0) left = 0;
        struct pollfd p = { .fd = fd, .events = events, .revents = 0 };
        int r = poll(&p, 1, (int)left);
        if (r > 0) return 1;
        if (r == 0) return 0;
        if (errno != EINTR) return -1;
    }
}

/* ---- a socket BIO that never raises SIGPIPE ---- */

static BIO_METHOD *nosigpipe_method;

static int bio_fd(BIO *bio) { return ((struct pktt_conn *)BIO_get_data(bio))->fd; }

static int bio_write(BIO *bio, const char *data, int length) {
    BIO_clear_retry_flags(bio);
    ssize_t n = send(bio_fd(bio), data, (size_t)length, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(bio);
    return (int)n;
}

static int bio_read(BIO *bio, char *data, int length) {
    BIO_clear_retry_flags(bio);
    struct pktt_conn *conn = BIO_get_data(bio);
    ssize_t n = recv(conn->fd, data, (size_t)length, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(bio);
    if (n > 0 && conn->corrupt_at >= 0) {
        if (conn->corrupt_at < n) {
            data[conn->corrupt_at] ^= 0x01;
            conn->corrupt_at = -1;
        } else {
            conn->corrupt_at -= n;
        }
    }
    return (int)n;
}

static long bio_ctrl(BIO *bio, int cmd, long num, void *ptr) {
    (void)bio; (void)num; (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *bio) {
    BIO_set_init(bio, 1);
    return 1;
}

static int bio_puts(BIO *bio, const char *text) { return bio_write(bio, text, (int)strlen(text)); }


static pthread_once_t method_once = PTHREAD_ONCE_INIT;

static void make_method(void) {
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "pocket-test-socket");
    if (!m) return;
    BIO_meth_set_write(m, bio_write);
    BIO_meth_set_read(m, bio_read);
    BIO_meth_set_puts(m, bio_puts);
    BIO_meth_set_ctrl(m, bio_ctrl);
    BIO_meth_set_create(m, bio_create);
    nosigpipe_method = m;
}

/* ---- context ---- */

/* Every ClientHello: one on a connection whose first handshake is done is a
 * renegotiation the client agreed to. */
static int count_hello(SSL *ssl, int *alert, void *arg) {
    (void)alert;
    struct pktt_ctx *ctx = arg;
    struct pktt_conn *conn = SSL_get_app_data(ssl);
    if (conn && conn->established) atomic_fetch_add(&ctx->renegotiations, 1);
    return SSL_CLIENT_HELLO_SUCCESS;
}

static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *out_len,
                       const unsigned char *in, unsigned int in_len, void *arg) {
    (void)ssl;
    struct pktt_ctx *ctx = arg;
    if (ctx->alpn_wire_len == 0) return SSL_TLSEXT_ERR_NOACK;
    unsigned char *selected = NULL;
    unsigned char selected_len = 0;
    /* Server preference order: first server protocol the client offered. */
    if (SSL_select_next_proto(&selected, &selected_len, ctx->alpn_wire, ctx->alpn_wire_len, in, in_len)
        == OPENSSL_NPN_NEGOTIATED) {
        *out = selected;
        *out_len = selected_len;
        return SSL_TLSEXT_ERR_OK;
    }
    /* No overlap: answer with our first protocol anyway (deliberate mismatch). */
    *out = ctx->alpn_wire + 1;
    *out_len = ctx->alpn_wire[0];
    return SSL_TLSEXT_ERR_OK;
}

static int encode_alpn(struct pktt_ctx *ctx, const char *list) {
    ctx->alpn_wire_len = 0;
    if (!list) return 1;
    const char *p = list;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len > 0) {
            if (len > 255 || ctx->alpn_wire_len + 1 + len > sizeof ctx->alpn_wire) return 0;
            ctx->alpn_wire[ctx->alpn_wire_len++] = (unsigned char)len;
            memcpy(ctx->alpn_wire + ctx->alpn_wire_len, p, len);
            ctx->alpn_wire_len += (unsigned int)len;
        }
        if (!comma) break;
        p = comma + 1;
    }
    return 1;
}

pktt_ctx *pktt_ctx_new(const pktt_ctx_options *o, char *err, size_t err_len) {
    ERR_clear_error();
    pthread_once(&method_once, make_method);
    if (!nosigpipe_method) { set_error(err, err_len, "cannot create the socket BIO method"); return NULL; }
    if (!o || !o->certificate_file || !o->key_file) { set_error(err, err_len, "certificate_file and key_file are required"); return NULL; }

    struct pktt_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) { set_error(err, err_len, "out of memory"); return NULL; }
    if (!encode_alpn(ctx, o->alpn)) { set_error(err, err_len, "ALPN list too long"); free(ctx); return NULL; }

    SSL_CTX *c = SSL_CTX_new(TLS_server_method());
    if (!c) { set_error(err, err_len, "SSL_CTX_new failed"); free(ctx); return NULL; }
    ctx->ssl_ctx = c;
    char what[1200];
    if (SSL_CTX_use_certificate_chain_file(c, o->certificate_file) != 1) {
        snprintf(what, sizeof what, "cannot load certificate %s", o->certificate_file);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(c, o->key_file, SSL_FILETYPE_PEM) != 1) {
        snprintf(what, sizeof what, "cannot load private key %s", o->key_file);
        goto fail;
    }
    if (SSL_CTX_check_private_key(c) != 1) {
        snprintf(what, sizeof what, "private key %s does not match certificate %s", o->key_file, o->certificate_file);
        goto fail;
    }
    if (o->min_version && SSL_CTX_set_min_proto_version(c, o->min_version) != 1) {
        snprintf(what, sizeof what, "unsupported min_version 0x%x", o->min_version);
        goto fail;
    }
    if (o->max_version && SSL_CTX_set_max_proto_version(c, o->max_version) != 1) {
        snprintf(what, sizeof what, "unsupported max_version 0x%x", o->max_version);
        goto fail;
    }
    /* OpenSSL 3 allows TLS 1.0 and 1.1 only at security level 0 (their
     * handshakes sign with SHA-1 and MD5): a server limited to them is one. */
    if (o->max_version && o->max_version < TLS1_2_VERSION) SSL_CTX_set_security_level(c, 0);
    if (o->client_ca_file && o->client_ca_file[0]) {
        if (SSL_CTX_load_verify_locations(c, o->client_ca_file, NULL) != 1) {
            snprintf(what, sizeof what, "cannot load client CA %s", o->client_ca_file);
            goto fail;
        }
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(o->client_ca_file);
        if (names) SSL_CTX_set_client_CA_list(c, names);
        SSL_CTX_set_verify(c, SSL_VERIFY_PEER | (o->require_client_certificate ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0), NULL);
    }
    /* Needed for resumption whenever peer verification is on; harmless otherwise. */
    static const unsigned char sid_ctx[] = "pocket-test-server";
    SSL_CTX_set_session_id_context(c, sid_ctx, sizeof sid_ctx - 1);
    SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_SERVER);
    if (!o->session_tickets) {
        SSL_CTX_set_options(c, SSL_OP_NO_TICKET);
        SSL_CTX_set_num_tickets(c, 0);
    }
    SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (ctx->alpn_wire_len) SSL_CTX_set_alpn_select_cb(c, select_alpn, ctx);
    SSL_CTX_set_client_hello_cb(c, count_hello, ctx);
    return ctx;

fail:
    set_error(err, err_len, what);
    SSL_CTX_free(c);
    free(ctx);
    return NULL;
}

int pktt_ctx_renegotiations(pktt_ctx *ctx) { return atomic_load(&ctx->renegotiations); }

void pktt_ctx_free(pktt_ctx *ctx) {
    if (!ctx) return;
    SSL_CTX_free(ctx->ssl_ctx);
    free(ctx);
}

/* ---- connections ---- */

pktt_conn *pktt_conn_new(pktt_ctx *ctx, int fd, char *err, size_t err_len) {
    ERR_clear_error();
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        snprintf(err, err_len, "fcntl(O_NONBLOCK): %s", strerror(errno));
        return NULL;
    }
    struct pktt_conn *conn = calloc(1, sizeof *conn);
    if (!conn) { set_error(err, err_len, "out of memory"); return NULL; }
    conn->fd = fd;
    conn->corrupt_at = -1;
    conn->ssl = SSL_new(ctx->ssl_ctx);
    BIO *bio = BIO_new(nosigpipe_method);
    if (!conn->ssl || !bio) {
        set_error(err, err_len, "SSL_new/BIO_new failed");
        BIO_free(bio);
        SSL_free(conn->ssl);
        free(conn);
        return NULL;
    }
    BIO_set_data(bio, conn);
    SSL_set_bio(conn->ssl, bio, bio);
    SSL_set_accept_state(conn->ssl);
    SSL_set_app_data(conn->ssl, conn);
    return conn;
}

void pktt_conn_free(pktt_conn *conn) {
    if (!conn) return;
    SSL_free(conn->ssl);
    free(conn);
}

/* Describes a failed SSL_* call (code from SSL_get_error). */
static void describe_failure(pktt_conn *conn, int code, const char *what, char *err, size_t err_len, int *sys_errno) {
    int saved = errno;
    if (sys_errno) *sys_errno = 0;
    char text[512];
    if (code == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
        if (sys_errno) *sys_errno = saved;
        snprintf(text, sizeof text, "%s: %s", what, saved ? strerror(saved) : "unexpected EOF");
        if (err && err_len) snprintf(err, err_len, "%s", text);
        return;
    }
    long verify = SSL_get_verify_result(conn->ssl);
    if (verify != X509_V_OK && SSL_get_verify_mode(conn->ssl) != SSL_VERIFY_NONE) {
        snprintf(text, sizeof text, "%s (client certificate: %s)", what, X509_verify_cert_error_string(verify));
    } else {
        snprintf(text, sizeof text, "%s (SSL error %d)", what, code);
    }
    set_error(err, err_len, text);
}

int pktt_handshake(pktt_conn *conn, int timeout_ms, char *err, size_t err_len) {
    long long deadline = now_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
    for (;;) {
        ERR_clear_error();
        int r = SSL_do_handshake(conn->ssl);
        if (r == 1) {
            conn->established = 1;
            return PKTT_OK;
        }
        int code = SSL_get_error(conn->ssl, r);
        short events;
        if (code == SSL_ERROR_WANT_READ) events = POLLIN;
        else if (code == SSL_ERROR_WANT_WRITE) events = POLLOUT;
        else {
            describe_failure(conn, code, "TLS handshake failed", err, err_len, NULL);
            return PKTT_ERROR;
        }
        int w = wait_fd(conn->fd, events, deadline);
        if (w == 0) return PKTT_TIMEOUT;
        if (w < 0) { snprintf(err, err_len, "poll: %s", strerror(errno)); return PKTT_ERROR; }
    }
}

int pktt_session_reused(pktt_conn *conn) { return SSL_session_reused(conn->ssl) ? 1 : 0; }

const char *pktt_version(pktt_conn *conn) { return SSL_get_version(conn->ssl); }

const char *pktt_server_name(pktt_conn *conn) { return SSL_get_servername(conn->ssl, TLSEXT_NAMETYPE_host_name); }

void pktt_selected_alpn(pktt_conn *conn, char *out, size_t out_len) {
    const unsigned char *data = NULL;
    unsigned int len = 0;
    SSL_get0_alpn_selected(conn->ssl, &data, &len);
    if (!out || out_len == 0) return;
    if (len >= out_len) len = (unsigned int)out_len - 1;
    if (len) memcpy(out, data, len);
    out[len] = 0;
}

int pktt_peer_certificate_verified(pktt_conn *conn) {
    X509 *peer = SSL_get0_peer_certificate(conn->ssl);
    return peer && SSL_get_verify_result(conn->ssl) == X509_V_OK;
}

long pktt_read(pktt_conn *conn, void *buffer, size_t length, int timeout_ms, int *sys_errno, char *err, size_t err_len) {
    if (sys_errno) *sys_errno = 0;
    long long deadline = now_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
    for (;;) {
        ERR_clear_error();
        size_t got = 0;
        errno = 0;
        int r = SSL_read_ex(conn->ssl, buffer, length, &got);
        if (r == 1) return (long)got;
        int code = SSL_get_error(conn->ssl, r);
        short events;
        if (code == SSL_ERROR_ZERO_RETURN) return PKTT_EOF;
        if (code == SSL_ERROR_WANT_READ) events = POLLIN;
        else if (code == SSL_ERROR_WANT_WRITE) events = POLLOUT;
        else if (code == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && errno == 0) return PKTT_EOF; /* TCP EOF without close_notify */
        else if (code == SSL_ERROR_SSL && ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
            ERR_clear_error();
            return PKTT_EOF;
        } else {
            describe_failure(conn, code, "TLS read failed", err, err_len, sys_errno);
            return PKTT_ERROR;
        }
        int w = wait_fd(conn->fd, events, deadline);
        if (w == 0) return PKTT_TIMEOUT;
        if (w < 0) { snprintf(err, err_len, "poll: %s", strerror(errno)); return PKTT_ERROR; }
    }
}

long pktt_write(pktt_conn *conn, const void *buffer, size_t length, int timeout_ms, char *err, size_t err_len) {
    if (length == 0) return 0;
    long long deadline = now_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
    for (;;) {
        ERR_clear_error();
        size_t written = 0;
        int r = SSL_write_ex(conn->ssl, buffer, length, &written);
        if (r == 1) return (long)written;
        int code = SSL_get_error(conn->ssl, r);
        short events;
        if (code == SSL_ERROR_WANT_WRITE) events = POLLOUT;
        else if (code == SSL_ERROR_WANT_READ) events = POLLIN;
        else {
            describe_failure(conn, code, "TLS write failed", err, err_len, NULL);
            return PKTT_ERROR;
        }
        int w = wait_fd(conn->fd, events, deadline);
        if (w == 0) return PKTT_TIMEOUT;
        if (w < 0) { snprintf(err, err_len, "poll: %s", strerror(errno)); return PKTT_ERROR; }
    }
}

int pktt_request_renegotiation(pktt_conn *conn, char *err, size_t err_len) {
    ERR_clear_error();
    if (!SSL_is_init_finished(conn->ssl) || SSL_version(conn->ssl) > TLS1_2_VERSION) {
        snprintf(err, err_len, "renegotiation needs an established TLS 1.2 (or older) connection");
        return PKTT_ERROR;
    }
    if (SSL_renegotiate(conn->ssl) != 1) {
        set_error(err, err_len, "SSL_renegotiate failed");
        return PKTT_ERROR;
    }
    /* Sends the HelloRequest; the handshake then waits for the client. */
    int r = SSL_do_handshake(conn->ssl);
    int code = r == 1 ? SSL_ERROR_NONE : SSL_get_error(conn->ssl, r);
    if (code == SSL_ERROR_NONE || code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) return PKTT_OK;
    describe_failure(conn, code, "HelloRequest failed", err, err_len, NULL);
    return PKTT_ERROR;
}

/* The byte after the next record's 5-byte header (RFC 8446 §5.1) is the
 * first of its ciphertext: flipped, the record fails its integrity check. */
int pktt_corrupt_next_record(pktt_conn *conn) {
    if (!SSL_is_init_finished(conn->ssl) || SSL_pending(conn->ssl) > 0 || SSL_has_pending(conn->ssl)) return PKTT_ERROR;
    conn->corrupt_at = 5;
    return PKTT_OK;
}

int pktt_pending(pktt_conn *conn) { return SSL_pending(conn->ssl); }

void pktt_send_close_notify(pktt_conn *conn) {
    ERR_clear_error();
    if (SSL_is_init_finished(conn->ssl)) (void)SSL_shutdown(conn->ssl);
    ERR_clear_error();
}

void pktt_thread_end(void) { OPENSSL_thread_stop(); }
