/* TLS with OpenSSL — the only file of the engine that includes it, and a
 * leaf: it calls nothing of the connection, the pool or the loop (pk_tls.h).
 *
 * One SSL_CTX per TLS setting, with the trust store loaded once. Each
 * connection gets an SSL on a custom BIO that calls send(MSG_NOSIGNAL)/recv,
 * so the library never raises SIGPIPE, never touches signal handlers, and
 * counts the bytes on the wire. Everything is nonblocking: callers get "want
 * read" or "want write" and return to their loop. A caller that sends
 * records itself (the io_uring backend) seals a head instead: the BIO
 * captures its records, and is told later how many of them went.
 *
 * libssl and libcrypto are linked like any library (ldd, dpkg-shlibdeps and
 * SBOM scanners see them); a missing one stops the program at load. */
#include "pk_tls.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct pk__tls_ctx {
  SSL_CTX *ctx;
  BIO_METHOD *method;
  uint8_t *pins; /* count * 32 bytes of SHA-256(SPKI) */
  size_t pin_count;
  int insecure;
  int min_version;
  bool default_store;          /* the system store, loaded at the first connection */
  _Atomic bool ready;          /* ctx built and its store loaded (lock taken until then) */
  pthread_mutex_t lock;
};

struct pk__tls {
  SSL *ssl;
  pk__tls_ctx *ctx;
  pk__tls_session_cb on_session;
  void *owner;
  BIO *bio;
  int fd;
  uint8_t last_read_short; /* the BIO's last recv got less than asked: socket drained */
  uint8_t shut;
  uint8_t first_len;       /* bytes of `first` received */
  char first[5];           /* the connection's first bytes: "HTTP/" is a plain HTTP answer */
  uint8_t sealing;         /* inside pk__tls_seal: the BIO appends to `out` */
  uint8_t out_held;        /* `out` is the caller's to send, until pk__tls_sealed_sent */
  uint64_t wire_in, wire_out;
  /* Records sealed and not yet on the wire: out[out_off..out_len). Freed
   * once sent, so an idle connection holds none. */
  char *out;
  size_t out_off, out_len, out_cap;
};

/* ------------------------------------------------------------------ BIO */

static void out_reset(pk__tls *t) {
  pk__free(t->out);
  t->out = NULL;
  t->out_off = t->out_len = t->out_cap = 0;
}

/* The sealed records left in `out`, with send(2): 0 when all went (or none
 * waited), 1 when the socket is full, -1 with errno on a failure. */
static int out_flush(pk__tls *t) {
  while (t->out_off < t->out_len) {
    ssize_t n = send(t->fd, t->out + t->out_off, t->out_len - t->out_off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : -1;
    }
    t->out_off += (size_t)n;
    t->wire_out += (uint64_t)n;
  }
  out_reset(t);
  return 0;
}

static int bio_write(BIO *b, const char *data, int len) {
  pk__tls *t = BIO_get_data(b);
  BIO_clear_retry_flags(b);
  if (t->sealing) {
    if (t->out_len + (size_t)len > t->out_cap) {
      size_t cap = t->out_cap ? t->out_cap : 512;
      while (cap < t->out_len + (size_t)len) cap *= 2;
      char *out = pk__realloc(t->out, cap);
      if (!out) {
        errno = ENOMEM;
        return -1;
      }
      t->out = out;
      t->out_cap = cap;
    }
    memcpy(t->out + t->out_len, data, (size_t)len);
    t->out_len += (size_t)len;
    return len;
  }
  /* Nothing overtakes sealed records: held ones wait for their send's
   * answer, left ones go first. */
  int left = t->out_held ? 1 : t->out_len ? out_flush(t) : 0;
  if (left) {
    if (left > 0) BIO_set_retry_write(b);
    return -1;
  }
  ssize_t n = send(t->fd, data, (size_t)len, MSG_NOSIGNAL);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) BIO_set_retry_write(b);
    return -1;
  }
  t->wire_out += (uint64_t)n;
  return (int)n;
}

static int bio_read(BIO *b, char *data, int len) {
  pk__tls *t = BIO_get_data(b);
  BIO_clear_retry_flags(b);
  ssize_t n = recv(t->fd, data, (size_t)len, 0);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      t->last_read_short = 1;
      BIO_set_retry_read(b);
    }
    return -1;
  }
  t->last_read_short = n < len;
  for (ssize_t i = 0; i < n && t->first_len < sizeof t->first; i++) t->first[t->first_len++] = data[i];
  t->wire_in += (uint64_t)n;
  return (int)n;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr) {
  PK_UNUSED(b);
  PK_UNUSED(num);
  PK_UNUSED(ptr);
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *b) {
  BIO_set_init(b, 1);
  return 1;
}

/* -------------------------------------------------------------- context */

/* OpenSSL hands over each new session here (TLS 1.3 tickets arrive after the
 * handshake); the owner keeps it (the connection's origin keeps the newest).
 * Returning 1 gives the reference to the owner. */
static int new_session(SSL *ssl, SSL_SESSION *session) {
  pk__tls *t = SSL_get_app_data(ssl);
  if (!t || !t->on_session || !SSL_SESSION_is_resumable(session)) return 0;
  t->on_session(t->owner, session);
  return 1;
}

/* The SSL_CTX of `cfg` (and the BIO method) into c->ctx, c->method; on
 * failure none is kept. */
static int build(pk__tls_ctx *c, const pk_tls_config *cfg) {
  c->ctx = SSL_CTX_new(TLS_client_method());
  if (!c->ctx) goto fail;
  c->method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "pocket-socket");
  if (!c->method) goto fail;
  BIO_meth_set_write(c->method, bio_write);
  BIO_meth_set_read(c->method, bio_read);
  BIO_meth_set_ctrl(c->method, bio_ctrl);
  BIO_meth_set_create(c->method, bio_create);

  if (!SSL_CTX_set_min_proto_version(c->ctx, c->min_version == PK_TLS_1_3 ? TLS1_3_VERSION : TLS1_2_VERSION))
    goto fail;
  /* A server's HelloRequest is answered with a no_renegotiation alert: the
   * peer cannot change keys, certificate or cipher under a request already
   * checked (TLS 1.2 and older; TLS 1.3 has no renegotiation). */
  SSL_CTX_set_options(c->ctx, SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_mode(c->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                               SSL_MODE_RELEASE_BUFFERS);
  /* One recv(2) takes what the socket has (not a record's 5-byte header,
   * then its body): one read per answer, and a short read says the socket
   * is dry (pk__tls_drained). */
  SSL_CTX_set_read_ahead(c->ctx, 1);
  if (cfg->ciphers && !SSL_CTX_set_cipher_list(c->ctx, cfg->ciphers)) goto fail;
  if (!c->insecure) {
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
    /* The trust store is loaded once per context, never per connection. A
     * named one here, so a bad path fails the engine's creation; the system
     * default at the first connection (ready, load_default_store): it is not
     * paid by a client that never speaks https, and loading it does not fail
     * (OpenSSL skips a missing default file or directory). */
    if (cfg->ca_file || cfg->ca_dir) {
      if (!SSL_CTX_load_verify_locations(c->ctx, cfg->ca_file, cfg->ca_dir)) goto fail;
    } else {
      c->default_store = true;
    }
  } else {
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_NONE, NULL);
  }
  if (cfg->cert_file) {
    if (SSL_CTX_use_certificate_chain_file(c->ctx, cfg->cert_file) != 1) goto fail;
    if (SSL_CTX_use_PrivateKey_file(c->ctx, cfg->key_file ? cfg->key_file : cfg->cert_file, SSL_FILETYPE_PEM) != 1)
      goto fail;
    if (SSL_CTX_check_private_key(c->ctx) != 1) goto fail;
  }
  /* Sessions are kept by the pool per origin, not in OpenSSL's cache. */
  SSL_CTX_set_session_cache_mode(c->ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(c->ctx, new_session);
  return 0;
fail:
  ERR_clear_error();
  if (c->ctx) SSL_CTX_free(c->ctx);
  if (c->method) BIO_meth_free(c->method);
  c->ctx = NULL;
  c->method = NULL;
  return -PK_E_TLS_CONFIG;
}

int pk__tls_ctx_create(const pk_tls_config *cfg, pk__tls_ctx **out) {
  pk__tls_ctx *c = pk__calloc(1, sizeof *c);
  if (!c) return -PK_E_NOMEM;
  pthread_mutex_init(&c->lock, NULL);
  c->insecure = cfg && cfg->insecure;
  c->min_version = cfg && cfg->min_version ? cfg->min_version : PK_TLS_1_2;
  if (cfg && cfg->pin_count) {
    c->pins = pk__malloc(cfg->pin_count * 32);
    if (!c->pins) {
      pk__tls_ctx_free(c);
      return -PK_E_NOMEM;
    }
    memcpy(c->pins, cfg->pins, cfg->pin_count * 32);
    c->pin_count = cfg->pin_count;
  }
  /* A setting that names a file or a cipher list can fail: it is built now.
   * Only a version and the verify flag cannot (short of memory), and such a
   * context waits for its first connection (ready): OpenSSL's start, its
   * method tables and providers, about 2 MB of libcrypto's and libssl's pages, are
   * not paid by a client that only speaks http://. */
  if (cfg && (cfg->ciphers || cfg->ca_file || cfg->ca_dir || cfg->cert_file || cfg->key_file)) {
    int err = build(c, cfg);
    if (err) {
      pk__tls_ctx_free(c);
      return err;
    }
  }
  *out = c;
  return 0;
}

void pk__tls_ctx_free(pk__tls_ctx *c) {
  if (!c) return;
  if (c->ctx) SSL_CTX_free(c->ctx);
  if (c->method) BIO_meth_free(c->method);
  pthread_mutex_destroy(&c->lock);
  pk__free(c->pins);
  pk__free(c);
}

bool pk__tls_ctx_built(pk__tls_ctx *c) {
  pthread_mutex_lock(&c->lock);
  bool built = c->ctx != NULL;
  pthread_mutex_unlock(&c->lock);
  return built;
}

/* ------------------------------------------------------------ connection */

/* True if `dir` holds a hash link ("5ad8a5d6.0": 8 hex digits, ".0"), the
 * names OpenSSL's directory lookup opens. */
static bool has_hash_links(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return false;
  bool found = false;
  struct dirent *e;
  while (!found && (e = readdir(d))) {
    const char *n = e->d_name;
    if (strlen(n) != 10 || strcmp(n + 8, ".0") != 0) continue;
    found = true;
    for (int i = 0; i < 8; i++)
      if (!strchr("0123456789abcdef", n[i])) found = false;
  }
  closedir(d);
  return found;
}

/* The system trust store into `ctx`. OpenSSL's default paths read the whole
 * bundle file (SSL_CERT_FILE, else the default file: 1.4 MB of heap for
 * Debian's 139 certificates) and search a directory (SSL_CERT_DIR, else the
 * default directory) by subject hash. When no SSL_CERT_FILE is set and the
 * default directory has hash links (update-ca-certificates writes them for
 * the same certificates as the bundle), the bundle is skipped: the
 * directories alone (SSL_CERT_DIR's, then the default one) are searched, and
 * a certificate is read only when a chain needs it. */
static bool load_default_store(SSL_CTX *ctx) {
  const char *dir = X509_get_default_cert_dir();
  if (secure_getenv(X509_get_default_cert_file_env()) || !has_hash_links(dir))
    return SSL_CTX_set_default_verify_paths(ctx) == 1;
  X509_LOOKUP *lookup = X509_STORE_add_lookup(SSL_CTX_get_cert_store(ctx), X509_LOOKUP_hash_dir());
  if (!lookup) return false;
  const char *env_dir = secure_getenv(X509_get_default_cert_dir_env());
  if (env_dir && X509_LOOKUP_add_dir(lookup, env_dir, X509_FILETYPE_PEM) != 1) return false;
  return X509_LOOKUP_add_dir(lookup, dir, X509_FILETYPE_PEM) == 1;
}

/* What waits for the first connection, once per context, by whichever loop
 * gets here first: a default context's SSL_CTX, and the system trust store. */
static int ready(pk__tls_ctx *c) {
  if (atomic_load_explicit(&c->ready, memory_order_acquire)) return 0;
  pthread_mutex_lock(&c->lock);
  int err = 0;
  if (!atomic_load_explicit(&c->ready, memory_order_relaxed)) {
    if (!c->ctx) err = build(c, &(pk_tls_config){0});
    if (!err && c->default_store && !load_default_store(c->ctx)) err = -PK_E_TLS_CONFIG;
    if (!err) atomic_store_explicit(&c->ready, true, memory_order_release);
  }
  pthread_mutex_unlock(&c->lock);
  ERR_clear_error();
  return err;
}

int pk__tls_new(pk__tls_ctx *c, int fd, const char *host, size_t host_len, void *session,
                pk__tls_session_cb on_session, void *owner, pk__tls **out) {
  int err = ready(c);
  if (err) return err;
  pk__tls *t = pk__calloc(1, sizeof *t);
  if (!t) return -PK_E_NOMEM;
  t->fd = fd;
  t->ctx = c;
  t->on_session = on_session;
  t->owner = owner;
  t->ssl = SSL_new(c->ctx);
  t->bio = t->ssl ? BIO_new(c->method) : NULL;
  if (!t->bio) goto fail;
  BIO_set_data(t->bio, t);
  SSL_set_bio(t->ssl, t->bio, t->bio);
  SSL_set_connect_state(t->ssl);
  SSL_set_app_data(t->ssl, t);

  char name[256];
  if (host_len >= sizeof name) goto fail;
  memcpy(name, host, host_len);
  name[host_len] = 0;
  unsigned char ip[16];
  bool is_ip = inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
  if (!c->insecure) {
    X509_VERIFY_PARAM *p = SSL_get0_param(t->ssl);
    /* "*.example.com" matches one whole label, never "w*.example.com". */
    X509_VERIFY_PARAM_set_hostflags(p, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (is_ip ? !X509_VERIFY_PARAM_set1_ip_asc(p, name) : !X509_VERIFY_PARAM_set1_host(p, name, host_len))
      goto fail;
  }
  /* SNI carries DNS names only (RFC 6066 §3): never an IP literal. */
  if (!is_ip && !SSL_set_tlsext_host_name(t->ssl, name)) goto fail;
  static const unsigned char alpn[] = "\x08http/1.1";
  if (SSL_set_alpn_protos(t->ssl, alpn, sizeof alpn - 1) != 0) goto fail;
  if (session) SSL_set_session(t->ssl, session);
  *out = t;
  return 0;
fail:
  ERR_clear_error();
  if (t->ssl) SSL_free(t->ssl);
  else if (t->bio) BIO_free(t->bio);
  pk__free(t);
  return -PK_E_TLS_HANDSHAKE;
}

static int verify_error(long v) {
  switch (v) {
  case X509_V_ERR_CERT_HAS_EXPIRED: return PK_E_TLS_EXPIRED;
  case X509_V_ERR_CERT_NOT_YET_VALID: return PK_E_TLS_NOT_YET_VALID;
  case X509_V_ERR_HOSTNAME_MISMATCH:
  case X509_V_ERR_IP_ADDRESS_MISMATCH: return PK_E_TLS_HOSTNAME;
  default: return PK_E_TLS_UNTRUSTED;
  }
}

static int pin_matches(pk__tls_ctx *c, SSL *ssl) {
  X509 *cert = SSL_get1_peer_certificate(ssl);
  if (!cert) return 0;
  unsigned char *der = NULL;
  int len = i2d_PUBKEY(X509_get0_pubkey(cert), &der);
  X509_free(cert);
  if (len <= 0) return 0;
  unsigned char digest[32];
  unsigned int dlen = 0;
  int ok = EVP_Digest(der, (size_t)len, digest, &dlen, EVP_sha256(), NULL);
  OPENSSL_free(der);
  if (!ok || dlen != 32) return 0;
  for (size_t i = 0; i < c->pin_count; i++)
    if (memcmp(c->pins + 32 * i, digest, 32) == 0) return 1;
  return 0;
}

int pk__tls_handshake(pk__tls *t, int *detail) {
  pk__tls_ctx *c = t->ctx;
  ERR_clear_error();
  int r = SSL_do_handshake(t->ssl);
  if (r == 1) {
    const unsigned char *proto = NULL;
    unsigned int plen = 0;
    SSL_get0_alpn_selected(t->ssl, &proto, &plen);
    /* No ALPN answer is HTTP/1.1 by default; any other protocol is not ours. */
    if (plen && !(plen == 8 && memcmp(proto, "http/1.1", 8) == 0)) return -PK_E_TLS_ALPN;
    if (c->pin_count && !pin_matches(c, t->ssl)) return -PK_E_TLS_PIN;
    return PK__TLS_OK;
  }
  int e = SSL_get_error(t->ssl, r);
  if (e == SSL_ERROR_WANT_READ) return PK__TLS_WANT_READ;
  if (e == SSL_ERROR_WANT_WRITE) return PK__TLS_WANT_WRITE;
  long v = SSL_get_verify_result(t->ssl);
  if (v != X509_V_OK) {
    *detail = (int)v;
    ERR_clear_error();
    return -verify_error(v);
  }
  unsigned long le = ERR_peek_error();
  int reason = ERR_GET_REASON(le);
  ERR_clear_error();
  *detail = reason;
  /* A server that speaks plain HTTP on the port answers the ClientHello
   * with an HTTP status line (usually 400); OpenSSL sees a bad record. */
  if (t->first_len == sizeof t->first && memcmp(t->first, "HTTP/", sizeof t->first) == 0)
    return -PK_E_TLS_PLAIN_HTTP;
  if (e == SSL_ERROR_SYSCALL) {
    *detail = errno;
    return errno == ECONNRESET ? -PK_E_CONN_RESET : -PK_E_TLS_HANDSHAKE;
  }
  if (reason == SSL_R_UNSUPPORTED_PROTOCOL || reason == SSL_R_TLSV1_ALERT_PROTOCOL_VERSION ||
      reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_NO_PROTOCOLS_AVAILABLE)
    return -PK_E_TLS_VERSION;
  if (reason == SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL) return -PK_E_TLS_ALPN;
  return -PK_E_TLS_HANDSHAKE;
}

int pk__tls_read(pk__tls *t, char *buf, size_t len, size_t *n, int *detail) {
  ERR_clear_error();
  int r = SSL_read(t->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
  if (r > 0) {
    *n = (size_t)r;
    return PK__TLS_OK;
  }
  *n = 0;
  int e = SSL_get_error(t->ssl, r);
  switch (e) {
  case SSL_ERROR_WANT_READ: return PK__TLS_WANT_READ;
  case SSL_ERROR_WANT_WRITE: return PK__TLS_WANT_WRITE;
  case SSL_ERROR_ZERO_RETURN: return PK__TLS_CLOSED; /* close_notify: a clean end */
  case SSL_ERROR_SYSCALL:
    *detail = errno;
    if (errno == 0 || errno == EPIPE) return PK__TLS_EOF_UNCLEAN;
    return errno == ECONNRESET ? -PK_E_CONN_RESET : -PK_E_READ;
  default: {
    unsigned long le = ERR_peek_error();
    ERR_clear_error();
    /* OpenSSL 3 reports a bare TCP FIN as this error. */
    if (ERR_GET_REASON(le) == SSL_R_UNEXPECTED_EOF_WHILE_READING) return PK__TLS_EOF_UNCLEAN;
    *detail = ERR_GET_REASON(le);
    /* Reads follow the handshake, so a fatal error here ends the
     * connection with an alert: one the server sent (it could not decrypt
     * a record, or gave up), or one OpenSSL sent for a record of the
     * server's it could not accept. Not a handshake failure: the request's
     * retry rule decides. (SSL_is_init_finished cannot tell: a fatal error
     * puts the state machine back in init.) */
    return -PK_E_TLS_ALERT;
  }
  }
}

int pk__tls_write(pk__tls *t, const char *buf, size_t len, size_t *n, int *detail) {
  ERR_clear_error();
  int r = SSL_write(t->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
  if (r > 0) {
    *n = (size_t)r;
    return PK__TLS_OK;
  }
  *n = 0;
  int e = SSL_get_error(t->ssl, r);
  if (e == SSL_ERROR_WANT_WRITE) return PK__TLS_WANT_WRITE;
  if (e == SSL_ERROR_WANT_READ) return PK__TLS_WANT_READ;
  *detail = errno;
  ERR_clear_error();
  return errno == ECONNRESET ? -PK_E_CONN_RESET : -PK_E_WRITE;
}

int pk__tls_seal(pk__tls *t, const char *buf, size_t len, const void **records, size_t *records_len,
                 size_t *n, int *detail) {
  /* All of it: a write takes one record at a time (partial writes are on),
   * and nothing is sealed again while these are held. */
  *n = 0;
  if (t->out_held) return PK__TLS_WANT_WRITE; /* the kernel may be reading them: no realloc */
  int st = PK__TLS_OK;
  size_t done = 0, part = 0;
  t->sealing = 1;
  while (done < len && (st = pk__tls_write(t, buf + done, len - done, &part, detail)) == PK__TLS_OK) done += part;
  t->sealing = 0;
  *n = done;
  if (done) st = PK__TLS_OK; /* a failure after some records: the next write meets it */
  if (st != PK__TLS_OK || t->out_len == t->out_off) return st; /* anything sealed waits for pk__tls_flush */
  t->out_held = 1;
  *records = t->out + t->out_off;
  *records_len = t->out_len - t->out_off;
  return PK__TLS_OK;
}

void pk__tls_sealed_sent(pk__tls *t, size_t sent) {
  t->out_held = 0;
  if (sent > t->out_len - t->out_off) sent = t->out_len - t->out_off;
  t->out_off += sent;
  t->wire_out += (uint64_t)sent;
  if (t->out_off == t->out_len) out_reset(t);
}

bool pk__tls_pending(pk__tls *t) { return t->out_off < t->out_len && !t->out_held; }

int pk__tls_flush(pk__tls *t, int *detail) {
  if (t->out_held) return PK__TLS_WANT_WRITE;
  int r = out_flush(t);
  if (r >= 0) return r ? PK__TLS_WANT_WRITE : PK__TLS_OK;
  *detail = errno;
  return errno == ECONNRESET ? -PK_E_CONN_RESET : -PK_E_WRITE;
}

bool pk__tls_drained(pk__tls *t) { return t->last_read_short && !SSL_has_pending(t->ssl); }

bool pk__tls_buffered(pk__tls *t) { return SSL_has_pending(t->ssl); }

bool pk__tls_read_short(pk__tls *t) { return t->last_read_short; }

int pk__tls_resumed(pk__tls *t) { return SSL_session_reused(t->ssl); }

void pk__tls_session_free(void *session) {
  if (session) SSL_SESSION_free(session);
}

bool pk__tls_session_resumable(void *session) {
  return session && SSL_SESSION_is_resumable(session);
}

uint64_t pk__tls_wire_out(pk__tls *t) { return t->wire_out; }

uint64_t pk__tls_wire_in(pk__tls *t) { return t->wire_in; }

void pk__tls_free(pk__tls *t, bool clean) {
  if (!t) return;
  /* After a clean exchange: close_notify once, without waiting for the
   * peer's (RFC 8446 §6.1), and the session stays resumable. After a failure
   * OpenSSL drops the session, as it should. */
  if (clean && !t->shut && SSL_is_init_finished(t->ssl)) {
    t->shut = 1;
    ERR_clear_error();
    if (SSL_shutdown(t->ssl) < 0) SSL_set_shutdown(t->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  }
  ERR_clear_error();
  SSL_free(t->ssl); /* frees the BIO */
  pk__free(t->out);
  pk__free(t);
}

/* Public, and callable before any context exists. */
const char *pk_tls_verify_reason(int code) { return X509_verify_cert_error_string(code); }

/* OpenSSL numbers the reason of a received alert SSL_AD_REASON_OFFSET plus
 * the alert's description (RFC 8446 §6); its other reasons are its own. */
const char *pk_tls_alert_reason(int detail, int *received) {
  bool from_peer = detail >= SSL_AD_REASON_OFFSET && detail < SSL_AD_REASON_OFFSET + 256;
  if (received) *received = from_peer;
  const char *text = from_peer ? SSL_alert_desc_string_long(detail - SSL_AD_REASON_OFFSET) : NULL;
  /* Names OpenSSL 3.0's alert table lacks (TLS 1.3's certificate_required)
   * are in its reason strings: "tlsv13 alert certificate required". */
  if (text && strcmp(text, "unknown") != 0) return text;
  text = detail > 0 ? ERR_reason_error_string(ERR_PACK(ERR_LIB_SSL, 0, detail)) : NULL;
  return text ? text : "unknown";
}

/* Here because this is the one file that includes OpenSSL; Digest
 * authentication needs MD5 and SHA-256 (RFC 7616 §3.4.2). */
int pk_digest(int algorithm, const void *data, size_t len, uint8_t *out) {
  const EVP_MD *md = algorithm == PK_DIGEST_MD5 ? EVP_md5() : algorithm == PK_DIGEST_SHA256 ? EVP_sha256() : NULL;
  unsigned int n = 0;
  if (md == NULL || EVP_Digest(data, len, out, &n, md, NULL) != 1) return -1;
  return (int)n;
}

const char *pk_tls_library_version(void) { return OpenSSL_version(OPENSSL_VERSION); }

void pk__tls_thread_end(void) { OPENSSL_thread_stop(); }
