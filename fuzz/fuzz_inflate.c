/* libFuzzer harness for pk_inflate: arbitrary bytes as gzip or deflate,
 * fed in pieces, must end in output or a clean error (never a crash, never
 * unbounded output); and a round trip: the input compressed by zlib must
 * decode to itself, whatever the piece size. */
#include "CHTTPEngine.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct {
  uint8_t *buf;
  size_t len, cap;
} sink_t;

static int sink(void *ctx, const char *data, size_t n) {
  sink_t *s = ctx;
  if (s->len + n > s->cap) {
    if (!s->buf) return 0; /* counting only */
    abort();               /* the limits below bound the output */
  }
  memcpy(s->buf + s->len, data, n);
  s->len += n;
  return 0;
}

static int decode(pk_coding coding, const uint8_t *in, size_t len, size_t piece, sink_t *out) {
  pk_inflate_limits l;
  pk_inflate_limits_init(&l);
  l.ratio_floor = 1 << 16;
  l.max_output = out->cap;
  pk_inflate *d;
  if (pk_inflate_create(coding, &l, &d)) abort();
  int err = 0;
  for (size_t off = 0; off < len && !err; off += piece) {
    size_t n = len - off < piece ? len - off : piece;
    err = pk_inflate_feed(d, in + off, n, sink, out);
  }
  if (!err) err = pk_inflate_finish(d);
  pk_inflate_free(d);
  return err;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  pk_coding coding = (data[0] & 1) ? PK_CODING_GZIP : PK_CODING_DEFLATE;
  size_t piece = 1 + (data[0] >> 1);
  data++;
  size--;

  /* Hostile input: bounded output, a clean result. */
  static uint8_t big[1 << 20];
  sink_t s = {big, 0, sizeof big};
  decode(coding, data, size, piece, &s);

  /* Round trip through zlib. */
  uLongf clen = compressBound(size) + 32;
  uint8_t *c = malloc(clen);
  if (compress2(c, &clen, data, size, 6) != Z_OK) abort();
  sink_t r = {big, 0, sizeof big};
  if (size <= sizeof big) {
    int err = decode(PK_CODING_DEFLATE, c, clen, piece, &r);
    if (err != 0 && err != -PK_E_DECOMPRESSION_BOMB) abort();
    if (err == 0 && (r.len != size || memcmp(big, data, size) != 0)) abort();
  }
  free(c);
  return 0;
}
