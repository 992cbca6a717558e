/*
 * libFuzzer harness for the request writer (pk__serialize_request).
 *
 * The input is cut into length-prefixed fields: method, target, host, up to
 * seven header name/value pairs, then option bits (scheme, port, body,
 * Expect), then optionally a PK_BODY_SEGMENTS body (multipart): up to three
 * segments of fuzzer-chosen kind, length and validity, chunked or not, with
 * a fuzzer-chosen declared total. The harness has its own reference of what is valid (RFC 9110
 * §5.6.2 tokens, field values without CTLs but HTAB, origin-form targets of
 * visible ASCII, the engine's host alphabet) and checks:
 *   - the writer accepts exactly the specs the reference calls valid, and a
 *     CR, LF or NUL in any field is always rejected;
 *   - write then parse is the identity: the request line is the method,
 *     target and version as given; the field lines, parsed by the engine's
 *     own strict field parser, are Host (unless given), the caller's fields
 *     in order (Content-Length dropped, the engine writes it; Expect dropped
 *     when the engine adds its own), with each value equal to the caller's
 *     minus leading and trailing SP/HTAB (which are not part of a field
 *     value, RFC 9110 §5.5), then the engine's framing and Expect fields.
 */
#include "pk_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                     \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      fprintf(stderr, "fuzz_h1_write: check failed at line %d: %s\n", __LINE__, #cond); \
      abort();                                                                          \
    }                                                                                   \
  } while (0)

#define MAX_HEADERS 7

typedef struct {
  const uint8_t *p;
  size_t n;
} reader;

static size_t take(reader *r, const char **out) {
  if (r->n == 0) {
    *out = "";
    return 0;
  }
  size_t len = r->p[0] % 48;
  r->p++;
  r->n--;
  if (len > r->n) len = r->n;
  *out = (const char *)r->p;
  r->p += len;
  r->n -= len;
  return len;
}

static int byte(reader *r) {
  if (r->n == 0) return 0;
  r->n--;
  return *r->p++;
}

/* ---------------------------------------------------- reference validity */

static int is_tchar(uint8_t c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int ref_token(const char *s, size_t n) {
  if (!n) return 0;
  for (size_t i = 0; i < n; i++)
    if (!is_tchar((uint8_t)s[i])) return 0;
  return 1;
}

static int ref_value(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint8_t c = (uint8_t)s[i];
    if (c == 0x7f || (c < 0x20 && c != '\t')) return 0;
  }
  return 1;
}

static int ref_target(const char *s, size_t n) {
  if (!n || !(s[0] == '/' || (n == 1 && s[0] == '*'))) return 0;
  for (size_t i = 0; i < n; i++)
    if ((uint8_t)s[i] <= 0x20 || (uint8_t)s[i] >= 0x7f) return 0;
  return 1;
}

static int ref_host(const char *s, size_t n) {
  if (!n || n > 255) return 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t c = (uint8_t)s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          (c && strchr("-._:%", c))))
      return 0;
  }
  return 1;
}

static int has_crlfnul(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] == '\r' || s[i] == '\n' || s[i] == '\0') return 1;
  return 0;
}

static int ieq(const char *a, size_t n, const char *b) {
  if (strlen(b) != n) return 0;
  for (size_t i = 0; i < n; i++) {
    char x = a[i];
    if (x >= 'A' && x <= 'Z') x = (char)(x + 32);
    if (x != b[i]) return 0;
  }
  return 1;
}

static void trim(const char **s, size_t *n) {
  while (*n && ((*s)[0] == ' ' || (*s)[0] == '\t')) (*s)++, (*n)--;
  while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t')) (*n)--;
}

/* ------------------------------------------------------------ the check */

typedef struct {
  const char *name, *value;
  size_t name_len, value_len;
  char own[32]; /* for fields the harness formats itself */
} want_field;

static void expect_field(want_field *w, size_t *nw, const char *name, const char *value, size_t vlen) {
  w[*nw].name = name;
  w[*nw].name_len = strlen(name);
  w[*nw].value = value;
  w[*nw].value_len = vlen;
  (*nw)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reader r = {data, size};
  pk_request_spec spec;
  memset(&spec, 0, sizeof spec);
  spec.method_len = take(&r, &spec.method);
  spec.target_len = take(&r, &spec.target);
  spec.host_len = take(&r, &spec.host);
  pk_header hs[MAX_HEADERS];
  size_t nh = (size_t)byte(&r) % (MAX_HEADERS + 1);
  for (size_t i = 0; i < nh; i++) {
    hs[i].name_len = take(&r, &hs[i].name);
    hs[i].value_len = take(&r, &hs[i].value);
  }
  spec.headers = hs;
  spec.num_headers = nh;
  int opt = byte(&r);
  spec.scheme = opt & 1 ? PK_SCHEME_HTTPS : PK_SCHEME_HTTP;
  static const uint16_t ports[] = {80, 443, 8080, 1};
  spec.port = ports[(opt >> 1) & 3];
  static const char body[] = "0123456789";
  spec.body = body;
  spec.body_len = (opt >> 3) & 1 ? (size_t)(opt >> 5) : 0;
  spec.has_body = (opt >> 4) & 1;
  spec.expect_continue_ms = byte(&r) & 1 ? 1000 : 0;
  spec.idempotent = -1;
  /* Segments: byte = 1 (use them) | count << 1 | chunked << 3. */
  pk_body_segment segs[3];
  int seg_opt = byte(&r);
  if (seg_opt & 1) {
    spec.body_kind = PK_BODY_SEGMENTS;
    spec.num_segments = (size_t)(seg_opt >> 1) & 3;
    spec.body_chunked = (seg_opt >> 3) & 1;
    spec.segments = (seg_opt >> 4) & 1 && spec.num_segments ? NULL : segs; /* NULL: invalid */
    spec.body_len = (size_t)byte(&r);
    for (size_t i = 0; i < spec.num_segments; i++) {
      int k = byte(&r), l = byte(&r);
      segs[i].kind = k % 4; /* 3: not a kind */
      segs[i].data = (k >> 2) & 1 ? NULL : body;
      segs[i].fd = (k >> 3) & 1 ? -1 : 0;
      segs[i].offset = 0;
      segs[i].len = l == 255 ? PK_SEG_UNKNOWN_LEN : (uint64_t)(l % 8);
    }
  }

  /* The reference's verdict. */
  int valid = ref_token(spec.method, spec.method_len) && ref_target(spec.target, spec.target_len) &&
              ref_host(spec.host, spec.host_len);
  int smuggle = has_crlfnul(spec.method, spec.method_len) ||
                has_crlfnul(spec.target, spec.target_len) || has_crlfnul(spec.host, spec.host_len);
  if (spec.body_kind == PK_BODY_SEGMENTS) {
    /* The contract (CHTTPEngine.h): well-formed segments; an unknown length
     * only for a stream segment of a chunked body; without chunked, the
     * lengths add up to body_len exactly. */
    int ok = spec.num_segments == 0 || spec.segments != NULL;
    uint64_t sum = 0;
    for (size_t i = 0; ok && i < spec.num_segments; i++) {
      const pk_body_segment *g = &segs[i];
      if (g->kind > PK_SEG_STREAM) ok = 0;
      if (g->kind == PK_SEG_MEMORY && g->len && !g->data) ok = 0;
      if (g->kind == PK_SEG_FILE && g->fd < 0) ok = 0;
      if (g->len == PK_SEG_UNKNOWN_LEN && (g->kind != PK_SEG_STREAM || !spec.body_chunked)) ok = 0;
      if (!spec.body_chunked && g->len != PK_SEG_UNKNOWN_LEN) sum += g->len;
    }
    if (!spec.body_chunked && sum != spec.body_len) ok = 0;
    valid = valid && ok;
  }
  int has_host = 0;
  for (size_t i = 0; i < nh; i++) {
    valid = valid && ref_token(hs[i].name, hs[i].name_len) &&
            !ieq(hs[i].name, hs[i].name_len, "transfer-encoding") &&
            ref_value(hs[i].value, hs[i].value_len);
    smuggle = smuggle || has_crlfnul(hs[i].name, hs[i].name_len) ||
              has_crlfnul(hs[i].value, hs[i].value_len);
    if (ieq(hs[i].name, hs[i].name_len, "host")) has_host = 1;
  }

  pk__req req;
  memset(&req, 0, sizeof req);
  int rc = pk__serialize_request(&spec, &req);
  if (smuggle) CHECK(rc < 0);
  if (!valid) {
    CHECK(rc < 0 && -rc < PK__ERROR_COUNT);
    pk__free(req.buf);
    return 0;
  }
  CHECK(rc == 0);
  const char *head = req.buf;
  size_t len = req.head_len;
  CHECK(len >= 4 && memcmp(head + len - 4, "\r\n\r\n", 4) == 0);
  CHECK(req.host_len == spec.host_len && memcmp(head + req.host_off, spec.host, spec.host_len) == 0);

  /* Request line: exactly what was asked for. */
  const char *eol = memmem(head, len, "\r\n", 2);
  CHECK(eol);
  size_t ll = (size_t)(eol - head);
  CHECK(ll == spec.method_len + 1 + spec.target_len + 9);
  CHECK(memcmp(head, spec.method, spec.method_len) == 0 && head[spec.method_len] == ' ');
  CHECK(memcmp(head + spec.method_len + 1, spec.target, spec.target_len) == 0);
  CHECK(memcmp(head + spec.method_len + 1 + spec.target_len, " HTTP/1.1", 9) == 0);

  /* Field lines: through the engine's strict field parser, behind a status line. */
  size_t flen = len - ll;
  char *resp = malloc(17 + flen);
  CHECK(resp);
  memcpy(resp, "HTTP/1.1 200 OK", 15);
  memcpy(resp + 15, eol, flen);
  pk_header got[MAX_HEADERS + 8];
  pk_response_head h;
  memset(&h, 0, sizeof h);
  h.headers = got;
  h.num_headers = MAX_HEADERS + 8;
  int pr = pk_parse_response_head(resp, 15 + flen, 0, &h, NULL);
  if (pr != (int)(15 + flen)) {
    fprintf(stderr, "written head does not parse back (%d):\n%.*s\n", pr, (int)len, head);
    abort();
  }

  want_field w[MAX_HEADERS + 8];
  size_t nw = 0;
  char hostv[300];
  if (!has_host) {
    int v6 = memchr(spec.host, ':', spec.host_len) != NULL;
    uint16_t def = spec.scheme == PK_SCHEME_HTTPS ? 443 : 80;
    int n = snprintf(hostv, sizeof hostv, "%s%.*s%s", v6 ? "[" : "", (int)spec.host_len,
                     spec.host, v6 ? "]" : "");
    if (spec.port != def) n += snprintf(hostv + n, sizeof hostv - (size_t)n, ":%u", spec.port);
    expect_field(w, &nw, "Host", hostv, (size_t)n);
  }
  int segmented = spec.body_kind == PK_BODY_SEGMENTS;
  int chunked = segmented && spec.body_chunked;
  int has_body = spec.has_body || spec.body_len || segmented;
  int expect = (spec.body_len || segmented) && spec.expect_continue_ms;
  for (size_t i = 0; i < nh; i++) {
    if (ieq(hs[i].name, hs[i].name_len, "content-length")) continue;
    if (expect && ieq(hs[i].name, hs[i].name_len, "expect")) continue;
    w[nw].name = hs[i].name;
    w[nw].name_len = hs[i].name_len;
    w[nw].value = hs[i].value;
    w[nw].value_len = hs[i].value_len;
    trim(&w[nw].value, &w[nw].value_len);
    nw++;
  }
  char clv[24];
  if (chunked) expect_field(w, &nw, "Transfer-Encoding", "chunked", 7);
  if (!chunked && has_body) {
    int n = snprintf(clv, sizeof clv, "%zu", spec.body_len);
    expect_field(w, &nw, "Content-Length", clv, (size_t)n);
  }
  if (expect) expect_field(w, &nw, "Expect", "100-continue", 12);

  CHECK(h.num_headers == nw);
  for (size_t i = 0; i < nw; i++) {
    CHECK(got[i].name_len == w[i].name_len && memcmp(got[i].name, w[i].name, w[i].name_len) == 0);
    if (got[i].value_len != w[i].value_len ||
        memcmp(got[i].value, w[i].value, w[i].value_len) != 0) {
      fprintf(stderr, "field %zu: wrote '%.*s', parsed '%.*s'\n", i, (int)w[i].value_len,
              w[i].value, (int)got[i].value_len, got[i].value);
      abort();
    }
  }
  free(resp);
  pk__free(req.buf);
  return 0;
}
