/* Request head serialization (RFC 9112 §3, §5, §6.2). Everything is
 * validated before a byte is queued: a CR, LF or NUL smuggled into a method,
 * target, header name or value would let a caller's input split the request,
 * so such a request is refused, never sent. */
#include "pk_request.h"

#include <string.h>

static bool is_token(const char *s, size_t n) {
  if (n == 0) return false;
  for (size_t i = 0; i < n; i++)
    if (!pk__tchar[(uint8_t)s[i]]) return false;
  return true;
}

/* field-value: no CTL but HTAB (this rejects CR, LF and NUL). */
static bool is_field_value(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint8_t c = (uint8_t)s[i];
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

/* origin-form or "*": visible ASCII only; the caller percent-encodes. */
/* Origin form ("/path?q"), "*", or, for a request forwarded by a proxy,
 * absolute form ("http://host/path", RFC 9112 §3.2.2). */
static bool is_target(const char *s, size_t n, bool absolute) {
  if (n == 0) return false;
  bool abs_form = absolute && n > 7 && memcmp(s, "http://", 7) == 0;
  if (!(s[0] == '/' || (n == 1 && s[0] == '*') || abs_form)) return false;
  for (size_t i = 0; i < n; i++) {
    uint8_t c = (uint8_t)s[i];
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}

static bool is_host(const char *s, size_t n) {
  if (n == 0 || n > 255) return false;
  for (size_t i = 0; i < n; i++) {
    uint8_t c = (uint8_t)s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_' || c == ':' || c == '%';
    if (!ok) return false;
  }
  return true;
}

/* Case-insensitive equality with a lower-case literal: IEQ(a, n, "host"). */
static bool ieq(const char *a, size_t an, const char *b, size_t bn) {
  if (an != bn) return false;
  for (size_t i = 0; i < an; i++) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = (char)(x + 32);
    if (x != y) return false;
  }
  return true;
}
#define IEQ(a, an, lit) ieq((a), (an), lit, sizeof lit - 1)

int pk__method_idempotent(const char *m, size_t n) {
  /* RFC 9110 §9.2.2 */
  static const char *const idem[] = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"};
  for (size_t i = 0; i < sizeof idem / sizeof idem[0]; i++)
    if (strlen(idem[i]) == n && memcmp(idem[i], m, n) == 0) return 1;
  return 0;
}

static char *put(char *p, const char *s, size_t n) {
  memcpy(p, s, n);
  return p + n;
}

static char *put_u64(char *p, uint64_t v) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  while (n) *p++ = tmp[--n];
  return p;
}

/* Segments: each well-formed, and (with Content-Length) body_len their exact
 * sum, so the length sent is the length written. */
static bool segments_valid(const pk_request_spec *spec) {
  if (spec->num_segments && !spec->segments) return false;
  uint64_t sum = 0;
  for (size_t i = 0; i < spec->num_segments; i++) {
    const pk_body_segment *s = &spec->segments[i];
    if (s->kind == PK_SEG_MEMORY && s->len && !s->data) return false;
    if (s->kind == PK_SEG_FILE && s->fd < 0) return false;
    if (s->kind < PK_SEG_MEMORY || s->kind > PK_SEG_STREAM) return false;
    if (s->len == PK_SEG_UNKNOWN_LEN && (s->kind != PK_SEG_STREAM || !spec->body_chunked)) return false;
    if (!spec->body_chunked && (sum += s->len) < s->len) return false;
  }
  return spec->body_chunked || sum == spec->body_len;
}

int pk__serialize_request(const pk_request_spec *spec, pk__req *req) {
  if (!spec->method || !is_token(spec->method, spec->method_len)) return -PK_E_INVALID_METHOD;
  bool forwarded = spec->proxy_host && !spec->unix_path && !spec->proxy_tunnel;
  if (!spec->target || !is_target(spec->target, spec->target_len, forwarded)) return -PK_E_INVALID_TARGET;
  if (!spec->host || !is_host(spec->host, spec->host_len)) return -PK_E_INVALID_HOST;
  if (spec->scheme != PK_SCHEME_HTTP && spec->scheme != PK_SCHEME_HTTPS) return -PK_E_INVALID_ARGUMENT;
  if (spec->port == 0) return -PK_E_INVALID_ARGUMENT;
  if (spec->num_headers && !spec->headers) return -PK_E_INVALID_ARGUMENT;
  if (spec->body_kind == PK_BODY_MEMORY && spec->body_len && !spec->body) return -PK_E_INVALID_ARGUMENT;
  if (spec->body_kind == PK_BODY_FILE && spec->body_fd < 0) return -PK_E_INVALID_ARGUMENT;
  if (spec->body_kind < PK_BODY_MEMORY || spec->body_kind > PK_BODY_SEGMENTS) return -PK_E_INVALID_ARGUMENT;
  if (spec->body_kind == PK_BODY_SEGMENTS && !segments_valid(spec)) return -PK_E_INVALID_ARGUMENT;
  if (spec->use_sink && spec->sink_fd < 0) return -PK_E_INVALID_ARGUMENT;
  if (spec->unix_path) {
    if (spec->unix_path_len == 0 || memchr(spec->unix_path, 0, spec->unix_path_len)) return -PK_E_INVALID_ARGUMENT;
    if (spec->unix_path_len > PK_UNIX_PATH_MAX) return -PK_E_UNIX_SOCKET_PATH_TOO_LONG;
  }
  if (spec->addresses && !spec->unix_path && (spec->addresses_len == 0 || memchr(spec->addresses, 0, spec->addresses_len)))
    return -PK_E_INVALID_ARGUMENT;
  bool proxied = spec->proxy_host && !spec->unix_path;
  if (proxied && (!is_host(spec->proxy_host, spec->proxy_host_len) || spec->proxy_port == 0)) return -PK_E_INVALID_HOST;
  if (proxied && spec->proxy_authorization &&
      !is_field_value(spec->proxy_authorization, spec->proxy_authorization_len))
    return -PK_E_INVALID_HEADER_VALUE;
  const char *route = spec->unix_path ? spec->unix_path : proxied ? spec->proxy_host : spec->addresses;
  size_t route_len = spec->unix_path ? spec->unix_path_len : proxied ? spec->proxy_host_len
                     : spec->addresses ? spec->addresses_len : 0;
  size_t auth_len = proxied && spec->proxy_tunnel && spec->proxy_authorization ? spec->proxy_authorization_len : 0;
  bool chunked = (spec->body_kind == PK_BODY_STREAM || spec->body_kind == PK_BODY_SEGMENTS) && spec->body_chunked;
  bool has_body = spec->has_body || spec->body_len || spec->body_kind != PK_BODY_MEMORY;
  bool expect = (spec->body_len || spec->body_kind != PK_BODY_MEMORY) && spec->expect_continue_ms > 0;

  bool has_host = false;
  /* upper bound of the head: fixed parts + every header line */
  size_t need = spec->method_len + 1 + spec->target_len + 11 /* " HTTP/1.1\r\n" */
                + 6 + spec->host_len + 2 + 6 + 2          /* Host: [h]:ppppp\r\n */
                + 28 + 22                                 /* Transfer-Encoding: chunked, Expect */
                + 16 + 20 + 2                             /* Content-Length */
                + 2                                       /* final CRLF */
                + spec->host_len + route_len + 1 + auth_len; /* host, route and auth copies for the pool key */
  for (size_t i = 0; i < spec->num_headers; i++) {
    const pk_header *h = &spec->headers[i];
    if (!h->name || !is_token(h->name, h->name_len)) return -PK_E_INVALID_HEADER_NAME;
    if (h->value_len && !h->value) return -PK_E_INVALID_HEADER_VALUE;
    if (!is_field_value(h->value, h->value_len)) return -PK_E_INVALID_HEADER_VALUE;
    if (IEQ(h->name, h->name_len, "host")) has_host = true;
    /* Framing is the engine's: a caller's Transfer-Encoding would contradict the
     * Content-Length we send for a fixed body (RFC 9112 §6.1). */
    if (IEQ(h->name, h->name_len, "transfer-encoding")) return -PK_E_INVALID_HEADER_NAME;
    need += h->name_len + 2 + h->value_len + 2;
  }
  if (need > (size_t)1 << 24) return -PK_E_REQUEST_TOO_LARGE;
  if (need > req->buf_cap) {
    size_t cap = req->buf_cap ? req->buf_cap : 512;
    while (cap < need) cap *= 2;
    char *nb = pk__realloc(req->buf, cap);
    if (!nb) return -PK_E_NOMEM;
    req->buf = nb;
    req->buf_cap = cap;
  }

  char *p = req->buf;
  p = put(p, spec->method, spec->method_len);
  *p++ = ' ';
  p = put(p, spec->target, spec->target_len);
  p = put(p, " HTTP/1.1\r\n", 11);
  if (!has_host) {
    bool v6 = memchr(spec->host, ':', spec->host_len) != NULL;
    uint16_t def = spec->scheme == PK_SCHEME_HTTPS ? 443 : 80;
    p = put(p, "Host: ", 6);
    if (v6) *p++ = '[';
    p = put(p, spec->host, spec->host_len);
    if (v6) *p++ = ']';
    if (spec->port != def) {
      *p++ = ':';
      p = put_u64(p, spec->port);
    }
    p = put(p, "\r\n", 2);
  }
  for (size_t i = 0; i < spec->num_headers; i++) {
    const pk_header *h = &spec->headers[i];
    /* The body's length is known here, so the engine writes Content-Length
     * itself; a caller's copy could disagree with the bytes sent. */
    if (IEQ(h->name, h->name_len, "content-length")) continue;
    if (expect && IEQ(h->name, h->name_len, "expect")) continue; /* ours follows */
    p = put(p, h->name, h->name_len);
    p = put(p, ": ", 2);
    if (h->value_len) p = put(p, h->value, h->value_len);
    p = put(p, "\r\n", 2);
  }
  if (chunked) {
    p = put(p, "Transfer-Encoding: chunked\r\n", 28);
  } else if (has_body) {
    p = put(p, "Content-Length: ", 16);
    p = put_u64(p, spec->body_len);
    p = put(p, "\r\n", 2);
  }
  /* RFC 9110 §10.1.1: the server may refuse (e.g. 413) before we send the body. */
  if (expect) p = put(p, "Expect: 100-continue\r\n", 22);
  p = put(p, "\r\n", 2);
  req->head_len = (size_t)(p - req->buf);
  req->host_off = req->head_len;
  req->host_len = spec->host_len;
  memcpy(p, spec->host, spec->host_len);
  req->route = spec->unix_path ? PK_ROUTE_UNIX
               : proxied        ? (spec->proxy_tunnel ? PK_ROUTE_TUNNEL : PK_ROUTE_PROXY)
               : spec->addresses ? PK_ROUTE_ADDRS
                                 : PK_ROUTE_TCP;
  req->route_len = route_len;
  req->auth_len = auth_len;
  req->proxy_port = proxied ? spec->proxy_port : 0;
  if (route_len) memcpy(p + spec->host_len, route, route_len);
  if (auth_len) memcpy(p + spec->host_len + route_len, spec->proxy_authorization, auth_len);
  return 0;
}

/* --------------------------------------------------------- body pieces */

/* Stream body: the current piece with its chunk framing (RFC 9112 §7.1),
 * from seg_off on. Returns the number of iovecs. */
int pk__body_stream_iov(pk__req *req, struct iovec *iov) {
  static char crlf[] = "\r\n", last_chunk[] = "0\r\n\r\n";
  struct iovec all[4];
  int n = 0;
  if (req->chunk_len) {
    if (req->body_chunked) all[n++] = (struct iovec){req->chunk_hdr, req->chunk_hdr_len};
    all[n++] = (struct iovec){(void *)req->chunk, req->chunk_len};
    if (req->body_chunked) all[n++] = (struct iovec){crlf, 2};
  }
  /* The last chunk ends a stream body, or segments once all are out. */
  if (req->chunk_last && req->body_chunked && (req->body_kind == PK_BODY_STREAM || req->seg_i == req->nsegs))
    all[n++] = (struct iovec){last_chunk, 5};
  size_t off = req->seg_off;
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (off >= all[i].iov_len) {
      off -= all[i].iov_len;
      continue;
    }
    iov[m].iov_base = (char *)all[i].iov_base + off;
    iov[m++].iov_len = all[i].iov_len - off;
    off = 0;
  }
  return m;
}

/* The current piece: data[0..len), the last of its stream (or segment) when
 * `last`; with chunked framing its chunk header is made here. */
void pk__body_set_piece(pk__req *req, const void *data, size_t len, bool last) {
  req->chunk = data ? data : "";
  req->chunk_len = len;
  req->chunk_last = last;
  req->seg_off = 0;
  if (len && req->body_chunked) {
    static const char hex[] = "0123456789abcdef";
    char tmp[16];
    int n = 0;
    size_t v = len;
    while (v) {
      tmp[n++] = hex[v & 15];
      v >>= 4;
    }
    int k = 0;
    while (n) req->chunk_hdr[k++] = tmp[--n];
    req->chunk_hdr[k++] = '\r';
    req->chunk_hdr[k++] = '\n';
    req->chunk_hdr_len = (uint8_t)k;
  }
}

/* Segments: makes segments[seg_i] (or the next one that is not empty: a
 * zero-size chunk would end the body) the current one. A memory segment is
 * one piece, already there; a stream waits for on_send_more's answers; a
 * file is written by put_file_segment. Past the last one, chunked framing
 * still owes the last chunk: an empty last piece. */
void pk__body_load_segment(pk__req *req) {
  req->chunk = NULL;
  req->chunk_len = req->seg_off = 0;
  req->chunk_last = req->chunk_asked = 0;
  req->body_provided = 0;
  req->seg_base = req->body_sent;
  while (req->seg_i < req->nsegs && req->segs[req->seg_i].kind != PK_SEG_STREAM && req->segs[req->seg_i].len == 0)
    req->seg_i++;
  if (req->seg_i == req->nsegs) {
    if (req->body_chunked) pk__body_set_piece(req, NULL, 0, true);
    return;
  }
  const pk_body_segment *s = &req->segs[req->seg_i];
  if (s->kind == PK_SEG_MEMORY) pk__body_set_piece(req, s->data, (size_t)s->len, true);
  if (s->kind == PK_SEG_FILE) {
    req->seg_phase = req->body_chunked ? 0 : 1;
    if (req->body_chunked) pk__body_set_piece(req, NULL, (size_t)s->len, false); /* for its chunk header */
    req->chunk = NULL;
    req->chunk_len = 0;
  }
}

