/* The pure parts of the engine under ASan+UBSan: response head parser,
 * framing, chunked decoder, request writer, inflate limits. */
#include "pk_request.h"

#include "check.h"

#include <string.h>
#include <zlib.h>

int pk_test_failures;

static int parse(const char *text, pk_response_head *h, pk_header *fields, size_t cap) {
  static char buf[1 << 16];
  size_t n = strlen(text);
  memcpy(buf, text, n);
  memset(h, 0, sizeof *h);
  h->headers = fields;
  h->num_headers = cap;
  return pk_parse_response_head(buf, n, 0, h, NULL);
}

static void test_head(void) {
  pk_header f[8];
  pk_response_head h;
  const char *ok = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX: a\r\n b\r\n\r\n";
  EXPECT_EQ(parse(ok, &h, f, 8), (long long)strlen(ok));
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.num_headers, 2);
  EXPECT_EQ(f[1].value_len, 5); /* "a   b": the fold became spaces */
  EXPECT_EQ(parse("HTTP/1.1 200 OK\r\nA: b\r\n", &h, f, 8), PK_PARSE_INCOMPLETE);
  EXPECT_EQ(parse("HTTP/1.1 200 OK\nA: b\n\n", &h, f, 8), -PK_E_BAD_STATUS_LINE);
  EXPECT_EQ(parse("HTTP/1.1 200 OK\r\nA : b\r\n\r\n", &h, f, 8), -PK_E_BAD_HEADER);
  EXPECT_EQ(parse("HTTP/2 200 OK\r\n\r\n", &h, f, 8), -PK_E_BAD_VERSION);
  EXPECT_EQ(parse("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", &h, f, 2), -PK_E_TOO_MANY_HEADERS);
  EXPECT_EQ(parse("<html>", &h, f, 8), -PK_E_BAD_STATUS_LINE);

  /* A 10 MB header line fails at the head limit, not after reading it all. */
  size_t big = 10u << 20;
  char *line = malloc(big + 64);
  strcpy(line, "HTTP/1.1 200 OK\r\nX: ");
  size_t p = strlen(line);
  memset(line + p, 'a', big - p);
  pk_response_head hb = {.headers = f, .num_headers = 8};
  EXPECT_EQ(pk_parse_response_head(line, big, 0, &hb, NULL), -PK_E_HEAD_TOO_LARGE);
  free(line);

  pk_body_info bi;
  parse("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", &h, f, 8);
  EXPECT_EQ(pk_response_body_info(&h, 0, &bi), -PK_E_CONFLICTING_CONTENT_LENGTH);
  parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n", &h, f, 8);
  EXPECT_EQ(pk_response_body_info(&h, 0, &bi), -PK_E_TE_WITH_CONTENT_LENGTH);
  parse("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", &h, f, 8);
  EXPECT_EQ(pk_response_body_info(&h, 0, &bi), -PK_E_BAD_CONTENT_LENGTH);
  parse("HTTP/1.0 200 OK\r\n\r\n", &h, f, 8);
  EXPECT_EQ(pk_response_body_info(&h, 0, &bi), 0);
  EXPECT_EQ(bi.framing, PK_FRAMING_CLOSE);
  EXPECT_EQ(bi.keep_alive, 0);
}

/* Field values and reason phrases are scanned eight bytes at a time: each
 * byte value at each place of a long value (and of a long reason) gets the
 * answer a byte-by-byte reading gives: text (HTAB, SP..0x7E, obs-text) is
 * kept whole, any other control byte fails the head. */
static void test_long_values(void) {
  pk_header f[8];
  pk_response_head h;
  static char text[256];
  const char *values = "0123456789abcdefghijklmnopqrstuvwxyz0123456789"; /* 46 bytes */
  size_t vlen = strlen(values);
  for (int c = 0; c < 256; c++) {
    if (c == '\r' || c == '\n') continue; /* end the line: another test */
    int is_text = c == '\t' || (c >= 0x20 && c != 0x7F);
    for (size_t at = 0; at < vlen; at++) {
      /* In a field value. */
      int n = snprintf(text, sizeof text, "HTTP/1.1 200 OK\r\nX-Long: %s\r\n\r\n", values);
      size_t start = strlen("HTTP/1.1 200 OK\r\nX-Long: ");
      text[start + at] = (char)c;
      long r = pk_parse_response_head(memcpy((char[256]){0}, text, (size_t)n), (size_t)n, 0,
                                      &(pk_response_head){.headers = f, .num_headers = 8}, NULL);
      EXPECT_EQ(r, is_text ? (long)n : (long)-PK_E_BAD_HEADER);
      /* In the reason phrase. */
      n = snprintf(text, sizeof text, "HTTP/1.1 200 %s\r\nA: b\r\n\r\n", values);
      start = strlen("HTTP/1.1 200 ");
      text[start + at] = (char)c;
      r = pk_parse_response_head(memcpy((char[256]){0}, text, (size_t)n), (size_t)n, 0,
                                 &(pk_response_head){.headers = f, .num_headers = 8}, NULL);
      EXPECT_EQ(r, is_text ? (long)n : (long)-PK_E_BAD_STATUS_LINE);
    }
  }
  /* The value read whole, its bytes where they were (one obs-text byte). */
  const char *ok = "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1 (Debian) \xe9t\xe9\r\n\r\n";
  EXPECT_EQ(parse(ok, &h, f, 8), (long long)strlen(ok));
  EXPECT_EQ(f[0].value_len, strlen("nginx/1.22.1 (Debian) \xe9t\xe9"));
}

static ssize_t chunked(const char *text, char *out, size_t *len) {
  pk_chunked d;
  pk_chunked_init(&d);
  *len = strlen(text);
  memcpy(out, text, *len);
  return pk_chunked_decode(&d, out, len, NULL);
}

static void test_chunked(void) {
  char buf[256];
  size_t len;
  EXPECT_EQ(chunked("5\r\nhello\r\n0\r\n\r\nNEXT", buf, &len), 15);
  EXPECT_EQ(len, 5);
  EXPECT(memcmp(buf, "hello", 5) == 0);
  EXPECT_EQ(chunked("fffffffffffffffff\r\n", buf, &len), -PK_E_CHUNK_SIZE_TOO_LONG);
  EXPECT_EQ(chunked("3\r\nabcd\r\n", buf, &len), -PK_E_BAD_CHUNK);
  EXPECT_EQ(chunked("\r\n", buf, &len), -PK_E_BAD_CHUNK);
  /* A body that never ends is just more input: the decoder keeps no more state. */
  pk_chunked d;
  pk_chunked_init(&d);
  for (int i = 0; i < 100000; i++) {
    memcpy(buf, "4\r\nabcd\r\n", 9);
    len = 9;
    EXPECT_EQ(pk_chunked_decode(&d, buf, &len, NULL), 9);
  }
  EXPECT_EQ(d.done, 0);
}

static int write_req(const char *method, const char *target, const char *name, const char *value) {
  pk_header hd = {name, strlen(name), value, strlen(value)};
  pk_request_spec s;
  memset(&s, 0, sizeof s);
  s.method = method;
  s.method_len = strlen(method);
  s.target = target;
  s.target_len = strlen(target);
  s.host = "example.com";
  s.host_len = 11;
  s.port = 80;
  s.headers = &hd;
  s.num_headers = 1;
  pk__req r;
  memset(&r, 0, sizeof r);
  int rc = pk__serialize_request(&s, &r);
  pk__free(r.buf);
  return rc;
}

static void test_writer(void) {
  EXPECT_EQ(write_req("GET", "/", "A", "b"), 0);
  EXPECT_EQ(write_req("GET", "/", "A", "b\r\nX: y"), -PK_E_INVALID_HEADER_VALUE);
  EXPECT_EQ(write_req("GET", "/", "A\n", "b"), -PK_E_INVALID_HEADER_NAME);
  EXPECT_EQ(write_req("GET", "/a\r\n", "A", "b"), -PK_E_INVALID_TARGET);
  EXPECT_EQ(write_req("G T", "/", "A", "b"), -PK_E_INVALID_METHOD);
  EXPECT_EQ(write_req("GET", "/", "Transfer-Encoding", "chunked"), -PK_E_INVALID_HEADER_NAME);
}

static int count_sink(void *ctx, const char *d, size_t n) {
  (void)d;
  *(size_t *)ctx += n;
  return 0;
}

static void test_inflate_bomb(void) {
  /* 64 MiB of zeros as gzip: the ratio guard stops it near its floor. */
  size_t n = 64u << 20;
  char *zeros = calloc(1, n);
  z_stream z = {0};
  deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY);
  size_t cap = deflateBound(&z, n);
  unsigned char *gz = malloc(cap);
  z.next_in = (unsigned char *)zeros;
  z.avail_in = (uInt)n;
  z.next_out = gz;
  z.avail_out = (uInt)cap;
  deflate(&z, Z_FINISH);
  size_t glen = z.total_out;
  deflateEnd(&z);
  free(zeros);
  pk_inflate_limits l;
  pk_inflate_limits_init(&l);
  pk_inflate *d;
  EXPECT_EQ(pk_inflate_create(PK_CODING_GZIP, &l, &d), 0);
  size_t out = 0;
  EXPECT_EQ(pk_inflate_feed(d, gz, glen, count_sink, &out), -PK_E_DECOMPRESSION_BOMB);
  EXPECT(out < (64u << 20));
  pk_inflate_free(d);
  free(gz);
}

int main(void) {
  test_long_values();
  test_head();
  test_chunked();
  test_writer();
  test_inflate_bomb();
  if (pk_test_failures) {
    fprintf(stderr, "test_parse: %d failures\n", pk_test_failures);
    return 1;
  }
  printf("test_parse: ok\n");
  return 0;
}
