/* libFuzzer harness for pk_inflate: arbitrary bytes as gzip or deflate,
 * fed in pieces, must end in output or a clean error (never a crash, never
 * unbounded output); gzip decoded whole (libdeflate, pk_inflate_expect) must
 * agree with gzip streamed (zlib) byte for byte and error for error; and
 * round trips: the input compressed by zlib (zlib and gzip wrappers) must
 * decode to itself, whatever the piece size and path. */
#include "pk_inflate.h"

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

static int decode(pk_coding coding, const uint8_t *in, size_t len, size_t piece, sink_t *out, int whole) {
  pk_inflate_limits l;
  pk_inflate_limits_init(&l);
  l.ratio_floor = 1 << 16;
  l.max_output = out->cap;
  pk_inflate *d;
  if (pk_inflate_create(coding, &l, &d)) abort();
  if (whole) pk_inflate_expect(d, len);
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
  static uint8_t big[1 << 20], big2[1 << 20];
  sink_t s = {big, 0, sizeof big};
  int streamed = decode(coding, data, size, piece, &s, 0);
  if (coding == PK_CODING_GZIP) {
    sink_t w = {big2, 0, sizeof big2};
    int whole = decode(coding, data, size, piece, &w, 1);
    /* Both fail or both succeed with the same bytes. Which error a hostile
     * stream hits first may differ (the ratio is judged on all the input at
     * once in one, piece by piece in the other), and only the ratio guard
     * may tell success from failure apart. */
    int bomb = whole == -PK_E_DECOMPRESSION_BOMB || streamed == -PK_E_DECOMPRESSION_BOMB;
    /* libdeflate also accepts a few Huffman tables zlib calls invalid
     * (incomplete codes); its output still matched the trailer's CRC-32
     * and length, so it is the bytes the sender compressed. */
    int lenient = whole == 0 && streamed == -PK_E_BAD_ENCODING;
    if ((whole == 0) != (streamed == 0) && !bomb && !lenient) abort();
    if (whole == 0 && streamed == 0 && (w.len != s.len || memcmp(big, big2, s.len) != 0)) abort();
  }

  /* Round trip through zlib. */
  uLongf clen = compressBound(size) + 32;
  uint8_t *c = malloc(clen);
  if (compress2(c, &clen, data, size, 6) != Z_OK) abort();
  sink_t r = {big, 0, sizeof big};
  if (size <= sizeof big) {
    int err = decode(PK_CODING_DEFLATE, c, clen, piece, &r, 0);
    if (err != 0 && err != -PK_E_DECOMPRESSION_BOMB) abort();
    if (err == 0 && (r.len != size || memcmp(big, data, size) != 0)) abort();
  }
  free(c);

  /* Round trip through gzip, decoded whole. */
  z_stream z = {0};
  if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
  uLong glen = deflateBound(&z, size) + 32;
  uint8_t *g = malloc(glen);
  z.next_in = (Bytef *)data;
  z.avail_in = (uInt)size;
  z.next_out = g;
  z.avail_out = (uInt)glen;
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) abort();
  glen = z.total_out;
  deflateEnd(&z);
  if (size <= sizeof big) {
    sink_t gr = {big, 0, sizeof big};
    int err = decode(PK_CODING_GZIP, g, glen, piece, &gr, 1);
    if (err != 0 && err != -PK_E_DECOMPRESSION_BOMB) abort();
    if (err == 0 && (gr.len != size || memcmp(big, data, size) != 0)) abort();
  }
  free(g);
  return 0;
}
