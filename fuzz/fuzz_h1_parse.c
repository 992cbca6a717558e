/*
 * libFuzzer harness for the pure response parser (pk_h1_parse.c).
 *
 * The input is raw bytes off the wire. Besides letting the sanitizers watch
 * every access, it checks the parser's central promise differentially:
 *   - the head parsed in one call and the head fed byte by byte (with the
 *     resume hint) give the same result, field for field;
 *   - the chunked decoder fed the whole body and fed in pieces of
 *     input-derived sizes gives the same bytes, consumed count and error.
 * If the head parses, body_info runs on it and the bytes after the head go
 * to the chunked decoder; otherwise the whole input does (so corpus files
 * may be bare chunked bodies). Some inputs run with tiny limits so that
 * every limit error is reachable with short inputs.
 */
#include "fuzz_common.h"

#define MAX_FIELDS 160

static uint32_t hash(const uint8_t *d, size_t n) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ d[i]) * 16777619u;
  return h;
}

/* ------------------------------------------------------------------ head */

static int parse_whole(char *buf, size_t len, pk_response_head *h, pk_header *hdrs,
                       const pk_parse_limits *lim) {
  memset(h, 0, sizeof *h);
  h->headers = hdrs;
  h->num_headers = MAX_FIELDS;
  return pk_parse_response_head(buf, len, 0, h, lim);
}

static int parse_trickle(char *buf, size_t len, pk_response_head *h, pk_header *hdrs,
                         const pk_parse_limits *lim) {
  int r = PK_PARSE_INCOMPLETE;
  size_t last = 0;
  for (size_t n = 1; n <= len; n++) {
    memset(h, 0, sizeof *h);
    h->headers = hdrs;
    h->num_headers = MAX_FIELDS;
    r = pk_parse_response_head(buf, n, last, h, lim);
    if (r != PK_PARSE_INCOMPLETE) break;
    last = n;
  }
  return r;
}

static void same_head(const char *a, const pk_response_head *ha, const char *b,
                      const pk_response_head *hb, int r) {
  CHECK(memcmp(a, b, (size_t)r) == 0); /* identical unfolding */
  CHECK(ha->status == hb->status && ha->minor_version == hb->minor_version);
  CHECK(ha->reason - a == hb->reason - b && ha->reason_len == hb->reason_len);
  CHECK(ha->num_headers == hb->num_headers);
  for (size_t i = 0; i < ha->num_headers; i++) {
    const pk_header *x = &ha->headers[i], *y = &hb->headers[i];
    CHECK(x->name - a == y->name - b && x->name_len == y->name_len);
    CHECK(x->value - a == y->value - b && x->value_len == y->value_len);
    /* Everything handed out lies inside the head. */
    CHECK(x->name >= a && x->name + x->name_len <= a + r);
    CHECK(x->value >= a && x->value + x->value_len <= a + r);
    CHECK(x->name_len > 0);
  }
  CHECK(ha->status >= 100 && ha->status <= 999);
  CHECK(ha->minor_version == 0 || ha->minor_version == 1);
}

/* --------------------------------------------------------------- chunked */

/* The body whole, and in pieces of 1 to 9 bytes drawn from the seed. */
static void check_chunked(const uint8_t *raw, size_t n, uint32_t seed, const pk_parse_limits *lim) {
  char *scratch = malloc(n + 1), *o1 = malloc(n + 1), *o2 = malloc(n + 1);
  size_t *cuts = malloc((n + 2) * sizeof *cuts);
  CHECK(scratch && o1 && o2 && cuts);
  size_t ncuts = 0;
  for (size_t pos = 0; pos < n;) {
    cuts[ncuts++] = pos;
    seed = seed * 1103515245u + 12345u;
    pos += 1 + (seed >> 16) % 9;
  }
  cuts[ncuts++] = n;
  size_t whole[2] = {0, n};
  fuzz_chunk_outcome a, b;
  fuzz_decode_chunked(raw, n, whole, 2, lim, scratch, o1, &a);
  fuzz_decode_chunked(raw, n, cuts, ncuts, lim, scratch, o2, &b);
  if (a.result != b.result || a.done != b.done) {
    fprintf(stderr, "whole %zd (%s) done %d, pieces %zd (%s) done %d\n", a.result,
            a.result < 0 ? pk_error_name((int)-a.result) : "ok", a.done, b.result,
            b.result < 0 ? pk_error_name((int)-b.result) : "ok", b.done);
    abort();
  }
  if (a.result >= 0) CHECK(a.out_len == b.out_len && memcmp(o1, o2, a.out_len) == 0);
  free(scratch);
  free(o1);
  free(o2);
  free(cuts);
}

/* ------------------------------------------------------------------ entry */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint32_t seed = hash(data, size);
  pk_parse_limits lim;
  pk_parse_limits_init(&lim);
  if ((seed & 3) == 0) { /* tiny limits: reach every limit error cheaply */
    lim.max_head_bytes = 64 + (seed >> 8) % 256;
    lim.max_header_fields = (seed >> 4) % 6;
    lim.max_chunk_hex_digits = 1 + (seed >> 12) % 20; /* > 16 reaches overflow */
    lim.max_chunk_ext_bytes = (seed >> 16) % 16;
    lim.max_trailer_bytes = (seed >> 20) % 32;
  }

  char *a = malloc(size + 1), *b = malloc(size + 1);
  CHECK(a && b);
  memcpy(a, data, size);
  memcpy(b, data, size);
  pk_header ha_h[MAX_FIELDS], hb_h[MAX_FIELDS];
  pk_response_head ha, hb;
  int r1 = parse_whole(a, size, &ha, ha_h, &lim);
  int r2 = parse_trickle(b, size, &hb, hb_h, &lim);
  if (r1 != r2) {
    fprintf(stderr, "whole %d (%s), trickle %d (%s)\n", r1, pk_error_name(r1), r2,
            pk_error_name(r2));
    abort();
  }
  CHECK(r1 > 0 || r1 == PK_PARSE_INCOMPLETE || (r1 < 0 && -r1 < PK__ERROR_COUNT));
  size_t body = 0;
  if (r1 > 0) {
    CHECK((size_t)r1 <= size && (size_t)r1 <= lim.max_head_bytes);
    same_head(a, &ha, b, &hb, r1);
    /* Re-parsing an unfolded head gives the same head. */
    pk_header hc_h[MAX_FIELDS];
    pk_response_head hc;
    CHECK(parse_whole(a, (size_t)r1, &hc, hc_h, &lim) == r1);
    same_head(a, &ha, a, &hc, r1);
    pk_body_info bi;
    int e = pk_response_body_info(&ha, (int)(seed >> 30) & 1, &bi);
    CHECK(e <= 0 && -e < PK__ERROR_COUNT);
    if (e == 0) {
      CHECK(bi.framing <= PK_FRAMING_CLOSE && (bi.keep_alive == 0 || bi.keep_alive == 1));
      if (bi.framing == PK_FRAMING_CLOSE) CHECK(bi.keep_alive == 0);
      if (bi.framing == PK_FRAMING_LENGTH) CHECK(bi.content_length <= (uint64_t)INT64_MAX);
    }
    body = (size_t)r1;
  }
  check_chunked(data + body, size - body, seed, &lim);
  free(a);
  free(b);
  return 0;
}
