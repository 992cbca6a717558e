/* DNS and TLS as leaves: driven through their own interfaces (pk_dns.h,
 * pk_tls.h) and callbacks, linked with nothing of the connection, the
 * pool, the request or the loop (the Makefile links pk_dns.c, pk_tls.c and
 * pk_error.c only). ASan+UBSan, LeakSanitizer at exit.
 *
 * TLS: a handshake over a socketpair against a server made here with
 * OpenSSL directly and a throwaway self-signed certificate (made with the
 * OpenSSL API, no openssl CLI): success with the certificate trusted, then
 * an untrusted certificate and a host name mismatch; a fatal alert after
 * the handshake, sent by either side over a record with a flipped bit.
 * DNS: a numeric host (answered at once), "localhost" (a resolver thread,
 * then the cache), a reserved .invalid name (fails), and a cancelled query.
 * DNS records: pk_dns_parse_response on responses built here (A, AAAA,
 * a CNAME's shorter TTL, compression, RCODEs, truncation, bad lengths).
 * Digests: pk_digest (MD5, SHA-256) against published vectors. */
#include "pk_dns.h"
#include "pk_dns_records.h"
#include "pk_tls.h"

#include "check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

int pk_test_failures;

/* ------------------------------------------------------------------ DNS */

/* The cache's owner: the resolver thread's wake-up lands here. */
typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int woken;
} owner;

static void wake(void *ctx) {
  owner *o = ctx;
  pthread_mutex_lock(&o->lock);
  o->woken++;
  pthread_cond_signal(&o->cond);
  pthread_mutex_unlock(&o->lock);
}

typedef struct {
  pk__dns_query q; /* embedded, as a connection embeds it */
  int calls, err;
  uint32_t count;
  int family, gai_error;
} lookup;

static void answered(pk__dns_query *q, const pk__addrs *a, int err) {
  lookup *l = PK_CONTAINER_OF(q, lookup, q);
  l->calls++;
  l->err = err;
  l->count = a ? a->count : 0;
  l->family = a && a->count ? a->addr[0].ss_family : 0;
  l->gai_error = a ? a->gai_error : 0;
}

/* Runs pk__dns_process after each wake-up until `l` was answered (bounded). */
static void wait_answer(pk__dns_cache *c, owner *o, lookup *l) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 30;
  while (!l->calls) {
    pthread_mutex_lock(&o->lock);
    while (!pk__dns_has_done(c))
      if (pthread_cond_timedwait(&o->cond, &o->lock, &until) == ETIMEDOUT) break;
    pthread_mutex_unlock(&o->lock);
    if (!pk__dns_has_done(c)) break;
    pk__dns_process(c, pk__now_ns());
  }
  EXPECT(l->calls == 1);
}

static void test_dns(void) {
  owner o = {.woken = 0};
  pthread_mutex_init(&o.lock, NULL);
  pthread_cond_init(&o.cond, NULL);
  pk__resolver *r = NULL;
  EXPECT_EQ(pk__resolver_create(1, &r), 0);
  pk__dns_cache c;
  pk__dns_cache_init(&c, r, 30000, wake, &o);

  /* A numeric host never reaches a thread: answered by the return value. */
  lookup num = {.q = {.cb = answered}};
  const pk__addrs *a = NULL;
  EXPECT_EQ(pk__dns_resolve(&c, "127.0.0.1", 9, pk__now_ns(), &num.q, &a), 0);
  EXPECT(a && a->count == 1 && a->addr[0].ss_family == AF_INET);
  EXPECT_EQ(num.calls, 0);
  pk__dns_release(&num.q);

  /* A name goes to a resolver thread; the answer comes through the callback. */
  lookup lh = {.q = {.cb = answered}};
  a = NULL;
  EXPECT_EQ(pk__dns_resolve(&c, "localhost", 9, pk__now_ns(), &lh.q, &a), PK__DNS_PENDING);
  wait_answer(&c, &o, &lh);
  EXPECT_EQ(lh.err, 0);
  EXPECT(lh.count >= 1);
  EXPECT(lh.family == AF_INET || lh.family == AF_INET6);
  EXPECT(o.woken >= 1);

  /* ... and is then a cache hit, answered at once. */
  lookup again = {.q = {.cb = answered}};
  a = NULL;
  EXPECT_EQ(pk__dns_resolve(&c, "localhost", 9, pk__now_ns(), &again.q, &a), 0);
  EXPECT(a && a->count == lh.count);
  EXPECT_EQ(again.calls, 0);
  pk__dns_release(&again.q);
  pk__dns_release(&lh.q);

  /* A reserved name (RFC 6761 §6.4) fails, through the callback. */
  static const char bad[] = "no-such-host.invalid";
  lookup nx = {.q = {.cb = answered}};
  EXPECT_EQ(pk__dns_resolve(&c, bad, sizeof bad - 1, pk__now_ns(), &nx.q, &a), PK__DNS_PENDING);
  wait_answer(&c, &o, &nx);
  EXPECT_EQ(nx.err, -PK_E_DNS);
  EXPECT(nx.gai_error != 0);
  pk__dns_release(&nx.q);

  /* A cancelled query is never answered, though its lookup finishes. */
  static const char gone[] = "cancelled.invalid";
  lookup cx = {.q = {.cb = answered}}, witness = {.q = {.cb = answered}};
  EXPECT_EQ(pk__dns_resolve(&c, gone, sizeof gone - 1, pk__now_ns(), &cx.q, &a), PK__DNS_PENDING);
  EXPECT_EQ(pk__dns_resolve(&c, gone, sizeof gone - 1, pk__now_ns(), &witness.q, &a), PK__DNS_PENDING);
  pk__dns_cancel(&cx.q);
  wait_answer(&c, &o, &witness);
  EXPECT_EQ(cx.calls, 0);
  EXPECT_EQ(witness.err, -PK_E_DNS);

  pk__resolver_release(r);
  pk__dns_cache_free(&c);
  pthread_mutex_destroy(&o.lock);
  pthread_cond_destroy(&o.cond);
}

/* ------------------------------------------------------------------ TLS */

/* A throwaway self-signed certificate for "localhost" (P-256). */
static void make_cert(EVP_PKEY **key, X509 **cert) {
  *key = EVP_EC_gen("P-256");
  *cert = X509_new();
  X509_set_version(*cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(*cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(*cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(*cert), 3600);
  X509_set_pubkey(*cert, *key);
  X509_NAME *name = X509_get_subject_name(*cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1, -1, 0);
  X509_set_issuer_name(*cert, name);
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, *cert, *cert, NULL, NULL, 0);
  X509_EXTENSION *san = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "DNS:localhost");
  X509_add_ext(*cert, san, -1);
  X509_EXTENSION_free(san);
  X509_EXTENSION *bc = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints, "critical,CA:TRUE");
  X509_add_ext(*cert, bc, -1);
  X509_EXTENSION_free(bc);
  EXPECT(X509_sign(*cert, *key, EVP_sha256()) > 0);
}

typedef struct {
  int sessions;
} session_owner;

static void keep_session(void *owner_ptr, void *session) {
  ((session_owner *)owner_ptr)->sessions++;
  pk__tls_session_free(session); /* ours now */
}

/* Drives both ends of a socketpair until the client's handshake ends.
 * Returns its result (0 or -PK_E_xxx) and the verify code in *detail. */
static int handshake(pk__tls_ctx *cctx, SSL_CTX *sctx, const char *host, session_owner *so, int *detail,
                     pk__tls **client_out, SSL **server_out, int fds[2]) {
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
  SSL *s = SSL_new(sctx);
  SSL_set_fd(s, fds[1]);
  SSL_set_accept_state(s);
  pk__tls *t = NULL;
  int rc = pk__tls_new(cctx, fds[0], host, strlen(host), NULL, keep_session, so, &t);
  EXPECT_EQ(rc, 0);
  if (rc) return rc;
  *detail = 0;
  int r = PK__TLS_WANT_READ;
  for (int i = 0; i < 100 && (r == PK__TLS_WANT_READ || r == PK__TLS_WANT_WRITE); i++) {
    r = pk__tls_handshake(t, detail);
    SSL_do_handshake(s); /* the server's step; its own errors do not matter here */
  }
  *client_out = t;
  *server_out = s;
  return r;
}

static void finish(pk__tls *t, SSL *s, int fds[2], bool clean) {
  pk__tls_free(t, clean);
  SSL_free(s);
  close(fds[0]);
  close(fds[1]);
  ERR_clear_error();
}

/* Takes the records waiting to be read at `at` and puts them back through
 * `peer` (the other end of the pair) with the first record's first byte of
 * ciphertext (after its 5-byte header) flipped: it fails its integrity check. */
static void corrupt_waiting(int at, int peer) {
  char raw[4096];
  ssize_t n = recv(at, raw, sizeof raw, 0);
  EXPECT(n > 5);
  if (n <= 5) return;
  raw[5] ^= 0x01;
  EXPECT_EQ(send(peer, raw, (size_t)n, 0), n);
}

/* Reads on the client until it is not waiting any more. */
static int read_client(pk__tls *t, int *detail) {
  char buf[64];
  size_t n = 0;
  int st = PK__TLS_WANT_READ;
  for (int i = 0; i < 10 && st == PK__TLS_WANT_READ; i++) st = pk__tls_read(t, buf, sizeof buf, &n, detail);
  return st;
}

/* Past the handshake a fatal alert is PK_E_TLS_ALERT, never a handshake
 * failure: one the server sends because it cannot decrypt the client's
 * record, and one OpenSSL sends for a server record it cannot decrypt. */
static void test_tls_alerts(pk__tls_ctx *cctx, SSL_CTX *sctx) {
  EXPECT(strcmp(pk_error_name(-PK_E_TLS_ALERT), "tls_alert") == 0);
  for (int sent_by_server = 1; sent_by_server >= 0; sent_by_server--) {
    session_owner so = {0};
    int fds[2], detail = 0, received = -1;
    pk__tls *t;
    SSL *s;
    char buf[64];
    size_t n = 0;
    EXPECT_EQ(handshake(cctx, sctx, "localhost", &so, &detail, &t, &s, fds), 0);
    EXPECT_EQ(SSL_write(s, "hello", 5), 5); /* after the tickets: the client reads all the server sent */
    EXPECT_EQ(read_client(t, &detail), PK__TLS_OK);
    if (sent_by_server) {
      EXPECT_EQ(pk__tls_write(t, "GET", 3, &n, &detail), PK__TLS_OK);
      corrupt_waiting(fds[1], fds[0]);
      EXPECT(SSL_read(s, buf, sizeof buf) <= 0); /* the server fails and sends its alert */
      ERR_clear_error();
    } else {
      EXPECT_EQ(SSL_write(s, "data", 4), 4);
      corrupt_waiting(fds[0], fds[1]);
    }
    detail = 0;
    EXPECT_EQ(read_client(t, &detail), -PK_E_TLS_ALERT);
    const char *reason = pk_tls_alert_reason(detail, &received);
    EXPECT_EQ(received, sent_by_server);
    EXPECT_EQ(detail, sent_by_server ? SSL_R_SSLV3_ALERT_BAD_RECORD_MAC : SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC);
    EXPECT(strstr(reason, "bad record mac") != NULL);
    finish(t, s, fds, false);
  }
  /* TLS 1.3's certificate_required (a server refusing to go on without a
   * client certificate) is named though OpenSSL 3.0's alert table lacks it. */
  int received = -1;
  EXPECT(strstr(pk_tls_alert_reason(SSL_AD_REASON_OFFSET + 116, &received), "certificate required") != NULL);
  EXPECT_EQ(received, 1);
  EXPECT(strcmp(pk_tls_alert_reason(0, &received), "unknown") == 0);
  EXPECT_EQ(received, 0);
}

static void test_tls(void) {
  EVP_PKEY *key;
  X509 *cert;
  make_cert(&key, &cert);
  char path[] = "/tmp/pk-test-ca-XXXXXX";
  int fd = mkstemp(path);
  EXPECT(fd >= 0);
  FILE *f = fdopen(fd, "w");
  PEM_write_X509(f, cert);
  fclose(f);

  SSL_CTX *sctx = SSL_CTX_new(TLS_server_method());
  EXPECT_EQ(SSL_CTX_use_certificate(sctx, cert), 1);
  EXPECT_EQ(SSL_CTX_use_PrivateKey(sctx, key), 1);

  /* Trusted: the handshake completes, bytes flow both ways, and the
   * server's TLS 1.3 ticket comes back through the session callback. */
  pk_tls_config trusting = {.ca_file = path};
  pk__tls_ctx *cctx = NULL;
  EXPECT_EQ(pk__tls_ctx_create(&trusting, &cctx), 0);
  EXPECT(pk__tls_ctx_built(cctx)); /* a named CA file can fail: loaded now */
  session_owner so = {0};
  int fds[2], detail;
  pk__tls *t;
  SSL *s;
  EXPECT_EQ(handshake(cctx, sctx, "localhost", &so, &detail, &t, &s, fds), 0);
  EXPECT_EQ(SSL_write(s, "hello", 5), 5);
  char buf[64];
  size_t n = 0;
  int st = PK__TLS_WANT_READ;
  for (int i = 0; i < 10 && st == PK__TLS_WANT_READ; i++) st = pk__tls_read(t, buf, sizeof buf, &n, &detail);
  EXPECT_EQ(st, PK__TLS_OK);
  EXPECT(n == 5 && memcmp(buf, "hello", 5) == 0);
  EXPECT(so.sessions >= 1);
  EXPECT_EQ(pk__tls_write(t, "ping", 4, &n, &detail), PK__TLS_OK);
  EXPECT_EQ(n, 4);
  EXPECT_EQ(SSL_read(s, buf, sizeof buf), 4);
  EXPECT(pk__tls_wire_out(t) > 4 && pk__tls_wire_in(t) > 5);
  /* A clean close sends close_notify: the server reads a clean end. */
  pk__tls_free(t, true);
  EXPECT_EQ(SSL_read(s, buf, sizeof buf), 0);
  EXPECT_EQ(SSL_get_error(s, 0), SSL_ERROR_ZERO_RETURN);
  SSL_free(s);
  close(fds[0]);
  close(fds[1]);

  test_tls_alerts(cctx, sctx);

  /* The same trusted certificate for another name: a hostname mismatch. */
  EXPECT_EQ(handshake(cctx, sctx, "other.example", &so, &detail, &t, &s, fds), -PK_E_TLS_HOSTNAME);
  EXPECT_EQ(detail, X509_V_ERR_HOSTNAME_MISMATCH);
  finish(t, s, fds, false);
  pk__tls_ctx_free(cctx);

  /* Not trusted (the system store does not know it): a verification failure
   * with OpenSSL's verify code in detail. */
  EXPECT_EQ(pk__tls_ctx_create(NULL, &cctx), 0);
  /* Defaults cannot fail: no OpenSSL context before the first connection. */
  EXPECT(!pk__tls_ctx_built(cctx));
  EXPECT_EQ(handshake(cctx, sctx, "localhost", &so, &detail, &t, &s, fds), -PK_E_TLS_UNTRUSTED);
  EXPECT(pk__tls_ctx_built(cctx));
  EXPECT(detail == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT || detail == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
  EXPECT(strlen(pk_tls_verify_reason(detail)) > 0);
  finish(t, s, fds, false);
  pk__tls_ctx_free(cctx);

  /* A setting that does not load fails at context creation, not later. */
  pk_tls_config missing = {.ca_file = "/nonexistent/ca.pem"};
  cctx = NULL;
  EXPECT_EQ(pk__tls_ctx_create(&missing, &cctx), -PK_E_TLS_CONFIG);
  EXPECT(cctx == NULL);
  pk_tls_config bad_ciphers = {.ciphers = "NO-SUCH-CIPHER"};
  EXPECT_EQ(pk__tls_ctx_create(&bad_ciphers, &cctx), -PK_E_TLS_CONFIG);
  EXPECT(cctx == NULL);

  SSL_CTX_free(sctx);
  X509_free(cert);
  EVP_PKEY_free(key);
  unlink(path);
}

/* ------------------------------------------------------------------ digests */

/* pk_digest (Digest authentication's hashes) against RFC 1321's and FIPS
 * 180-2's published vectors. */
static void hex(const uint8_t *d, int n, char *out) {
  for (int i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void test_digest(void) {
  uint8_t out[32];
  char text[65];
  EXPECT_EQ(pk_digest(PK_DIGEST_MD5, "abc", 3, out), 16);
  hex(out, 16, text);
  EXPECT(strcmp(text, "900150983cd24fb0d6963f7d28e17f72") == 0);
  EXPECT_EQ(pk_digest(PK_DIGEST_MD5, "", 0, out), 16);
  hex(out, 16, text);
  EXPECT(strcmp(text, "d41d8cd98f00b204e9800998ecf8427e") == 0);
  EXPECT_EQ(pk_digest(PK_DIGEST_SHA256, "abc", 3, out), 32);
  hex(out, 32, text);
  EXPECT(strcmp(text, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0);
  EXPECT_EQ(pk_digest(7, "abc", 3, out), -1);
}

/* A DNS response under construction: header, then whatever is appended. */
typedef struct {
  uint8_t b[600];
  size_t n;
} dns_msg;

static void put(dns_msg *m, const void *p, size_t n) {
  memcpy(m->b + m->n, p, n);
  m->n += n;
}

static void put16(dns_msg *m, unsigned v) { put(m, (uint8_t[]){(uint8_t)(v >> 8), (uint8_t)v}, 2); }

static void put32(dns_msg *m, uint32_t v) {
  put16(m, v >> 16);
  put16(m, v & 0xFFFF);
}

/* flags, one question "svc.test" of type qtype, `answers` records to follow. */
static void dns_head(dns_msg *m, unsigned flags, unsigned answers, unsigned qtype) {
  m->n = 0;
  put16(m, 0x1234);
  put16(m, flags);
  put16(m, 1);
  put16(m, answers);
  put16(m, 0);
  put16(m, 0);
  put(m, "\3svc\4test\0", 10);
  put16(m, qtype);
  put16(m, 1);
}

/* A record owned by a pointer to the question's name (offset 12). */
static void dns_rr(dns_msg *m, unsigned type, uint32_t ttl, const void *rdata, unsigned rdlen) {
  put16(m, 0xC00C);
  put16(m, type);
  put16(m, 1);
  put32(m, ttl);
  put16(m, rdlen);
  put(m, rdata, rdlen);
}

static void test_dns_records(void) {
  static const uint8_t v4a[4] = {10, 0, 0, 7}, v4b[4] = {10, 0, 0, 8};
  static const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1};
  char text[64];
  dns_msg m;
  pk_dns_answer a;

  /* Two A records and a CNAME whose shorter TTL is the answer's. */
  dns_head(&m, 0x8180, 3, 1);
  dns_rr(&m, 5, 30, "\3api\xC0\x10", 6);
  dns_rr(&m, 1, 300, v4a, 4);
  dns_rr(&m, 1, 60, v4b, 4);
  pk_dns_answer_init(&a);
  EXPECT_EQ(pk_dns_parse_response(m.b, m.n, &a), PK_DNS_OK);
  EXPECT_EQ(a.count, 2);
  EXPECT_EQ(a.min_ttl, 30);
  EXPECT_EQ(a.rcode, 0);
  EXPECT_EQ(a.records[1].ttl, 60);
  EXPECT(pk_dns_record_text(&a, 0, text, sizeof text) == 0 && strcmp(text, "10.0.0.7") == 0);
  EXPECT(pk_dns_record_text(&a, 1, text, sizeof text) == 0 && strcmp(text, "10.0.0.8") == 0);
  EXPECT_EQ(pk_dns_record_text(&a, 2, text, sizeof text), -1);

  /* An AAAA answer appended to the same result; a TTL with the top bit set is 0. */
  dns_head(&m, 0x8180, 1, 28);
  dns_rr(&m, 28, 0x80000005u, v6, 16);
  EXPECT_EQ(pk_dns_parse_response(m.b, m.n, &a), PK_DNS_OK);
  EXPECT_EQ(a.count, 3);
  EXPECT_EQ(a.min_ttl, 0);
  EXPECT(pk_dns_record_text(&a, 2, text, sizeof text) == 0 && strcmp(text, "2001:db8::1") == 0);

  /* RCODEs, and NOERROR without an address. */
  static const struct { unsigned flags; pk_dns_status status; } codes[] = {
      {0x8183, PK_DNS_NO_SUCH_NAME}, {0x8182, PK_DNS_SERVER_FAILURE}, {0x8185, PK_DNS_REFUSED},
      {0x8181, PK_DNS_REFUSED},      {0x8180, PK_DNS_NO_ADDRESS},
  };
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    dns_head(&m, codes[i].flags, 0, 1);
    pk_dns_answer_init(&a);
    EXPECT_EQ(pk_dns_parse_response(m.b, m.n, &a), codes[i].status);
    EXPECT_EQ(a.rcode, (int)(codes[i].flags & 15));
    EXPECT_EQ(a.count, 0);
  }

  /* Not a response (QR clear), short header, an A of 5 bytes, a record past the end. */
  dns_head(&m, 0x0100, 0, 1);
  pk_dns_answer_init(&a);
  EXPECT_EQ(pk_dns_parse_response(m.b, m.n, &a), PK_DNS_MALFORMED);
  EXPECT_EQ(pk_dns_parse_response(m.b, 11, &a), PK_DNS_MALFORMED);
  dns_head(&m, 0x8180, 1, 1);
  dns_rr(&m, 1, 60, "\1\2\3\4\5", 5);
  EXPECT_EQ(pk_dns_parse_response(m.b, m.n, &a), PK_DNS_MALFORMED);
  dns_head(&m, 0x8180, 2, 1);
  dns_rr(&m, 1, 60, v4a, 4);
  dns_rr(&m, 1, 60, v4b, 4);
  EXPECT_EQ(pk_dns_parse_response(m.b, m.n - 2, &a), PK_DNS_MALFORMED);
  /* The same cut with TC set keeps the whole first record. */
  m.b[2] |= 0x02;
  pk_dns_answer_init(&a);
  EXPECT_EQ(pk_dns_parse_response(m.b, m.n - 2, &a), PK_DNS_OK);
  EXPECT_EQ(a.count, 1);

  /* A reserved label type (0x40) and a name longer than 255 bytes. */
  dns_head(&m, 0x8180, 1, 1);
  m.b[12] = 0x43;
  pk_dns_answer_init(&a);
  EXPECT_EQ(pk_dns_parse_response(m.b, m.n, &a), PK_DNS_MALFORMED);
  m.n = 0;
  put16(&m, 1);
  put16(&m, 0x8180);
  put16(&m, 1);
  put16(&m, 0);
  put32(&m, 0);
  for (int i = 0; i < 5; i++) {
    uint8_t label[64] = {63};
    memset(label + 1, 'a', 63);
    put(&m, label, 64);
  }
  put(&m, "\0\0\1\0\1", 5);
  EXPECT_EQ(pk_dns_parse_response(m.b, m.n, &a), PK_DNS_MALFORMED);

  /* More records than PK_DNS_MAX_RECORDS: the rest dropped, their TTLs still counted. */
  dns_head(&m, 0x8180, PK_DNS_MAX_RECORDS + 2, 1);
  for (int i = 0; i < PK_DNS_MAX_RECORDS + 2; i++) dns_rr(&m, 1, (uint32_t)(100 - i), v4a, 4);
  pk_dns_answer_init(&a);
  EXPECT_EQ(pk_dns_parse_response(m.b, m.n, &a), PK_DNS_OK);
  EXPECT_EQ(a.count, PK_DNS_MAX_RECORDS);
  EXPECT_EQ(a.min_ttl, 100 - (PK_DNS_MAX_RECORDS + 1));

  /* A name no query can hold, and an address that is not a nameserver's. */
  EXPECT_EQ(pk_dns_lookup("", NULL, 0, 1, &a), PK_DNS_BAD_NAME);
  EXPECT_EQ(pk_dns_lookup("svc.test", "not-an-address", 53, 1, &a), PK_DNS_NO_RESOLVER);
  EXPECT(strcmp(pk_dns_status_text(PK_DNS_NO_SUCH_NAME), "no such name (NXDOMAIN)") == 0);
}

int main(void) {
  test_dns();
  test_dns_records();
  test_tls();
  test_digest();
  if (pk_test_failures) {
    fprintf(stderr, "%d failure(s)\n", pk_test_failures);
    return 1;
  }
  puts("test_leaves: ok");
  return 0;
}
