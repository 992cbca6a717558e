/* gzip/deflate decoding — the only file of the engine that includes zlib.
 * Streaming, bounded memory, and suspicious of its input: a stream that
 * expands past a ratio (after a floor) is a decompression bomb, a corrupt or
 * truncated one is an error, never a silently short body. */
#include "pk_internal.h"

#include <string.h>
#include <zlib.h>

#define PK_INFLATE_CHUNK 16384

struct pk_inflate {
  z_stream z;
  pk_coding coding;
  pk_inflate_limits limits;
  uint64_t in_total, out_total;
  uint8_t started;   /* zlib stream initialised */
  uint8_t ended;     /* the last member reached its end marker */
  uint8_t failed;
  uint8_t head[2];   /* deflate: the first bytes, to tell zlib-wrapped from raw */
  uint8_t head_len;
};

static voidpf zalloc(voidpf opaque, uInt items, uInt size) {
  PK_UNUSED(opaque);
  return pk__calloc(items, size);
}

static void zfree(voidpf opaque, voidpf p) {
  PK_UNUSED(opaque);
  pk__free(p);
}

void pk_inflate_limits_init(pk_inflate_limits *l) {
  l->max_ratio = 200;
  l->ratio_floor = 1u << 20;
  l->max_output = 0;
}

int pk_inflate_create(pk_coding coding, const pk_inflate_limits *limits, pk_inflate **out) {
  if (coding != PK_CODING_GZIP && coding != PK_CODING_DEFLATE) return -PK_E_INVALID_ARGUMENT;
  pk_inflate *d = pk__calloc(1, sizeof *d);
  if (!d) return -PK_E_NOMEM;
  d->coding = coding;
  if (limits) d->limits = *limits;
  else pk_inflate_limits_init(&d->limits);
  d->z.zalloc = zalloc;
  d->z.zfree = zfree;
  *out = d;
  return 0;
}

/* RFC 1950 §2.2: CM = 8, window <= 32K, and the header checksum. */
static bool zlib_header(const uint8_t *h) {
  return (h[0] & 0x0f) == 8 && (h[0] >> 4) <= 7 && ((h[0] << 8) | h[1]) % 31 == 0;
}

static int start(pk_inflate *d, bool raw) {
  int bits = d->coding == PK_CODING_GZIP ? 16 + MAX_WBITS : raw ? -MAX_WBITS : MAX_WBITS;
  if (inflateInit2(&d->z, bits) != Z_OK) return -PK_E_NOMEM;
  d->started = 1;
  return 0;
}

/* Hands decoded bytes on, after the limits: a bomb is stopped right past
 * the floor, not after it has filled memory. */
static int emit(pk_inflate *d, const char *out, size_t n, int (*sink)(void *, const char *, size_t), void *ctx) {
  d->out_total += n;
  if (d->limits.max_output && d->out_total > d->limits.max_output) return -PK_E_DECODED_TOO_LARGE;
  if (d->limits.max_ratio && d->out_total > d->limits.ratio_floor &&
      d->out_total / (d->in_total ? d->in_total : 1) > d->limits.max_ratio)
    return -PK_E_DECOMPRESSION_BOMB;
  return sink(ctx, out, n);
}

static int run(pk_inflate *d, const uint8_t *in, size_t len, int (*sink)(void *, const char *, size_t), void *ctx) {
  char out[PK_INFLATE_CHUNK];
  d->z.next_in = (Bytef *)in;
  d->z.avail_in = (uInt)len;
  for (;;) {
    if (d->ended) {
      if (d->z.avail_in == 0) return 0;
      /* Bytes after the end: another gzip member (RFC 1952 §2.2), or junk. */
      if (d->coding != PK_CODING_GZIP || inflateReset(&d->z) != Z_OK) return -PK_E_BAD_ENCODING;
      d->ended = 0;
    }
    d->z.next_out = (Bytef *)out;
    d->z.avail_out = sizeof out;
    uInt before = d->z.avail_in;
    int r = inflate(&d->z, Z_NO_FLUSH);
    d->in_total += before - d->z.avail_in;
    size_t produced = sizeof out - d->z.avail_out;
    if (r == Z_STREAM_END) d->ended = 1;
    else if (r != Z_OK && r != Z_BUF_ERROR) return -PK_E_BAD_ENCODING;
    else if (!produced && before == d->z.avail_in) return d->z.avail_in ? -PK_E_BAD_ENCODING : 0;
    if (produced) {
      int err = emit(d, out, produced, sink, ctx);
      if (err) return err;
    }
    /* A full output buffer may mean more is held back: go round again. */
    if (!d->ended && d->z.avail_out != 0 && d->z.avail_in == 0) return 0;
  }
}

int pk_inflate_feed(pk_inflate *d, const void *data, size_t len, int (*sink)(void *, const char *, size_t),
                    void *ctx) {
  if (d->failed) return -PK_E_BAD_ENCODING;
  const uint8_t *in = data;
  int err = 0;
  if (!d->started) {
    if (d->coding == PK_CODING_DEFLATE) {
      /* Decide zlib-wrapped or raw from the first two bytes, which may
       * arrive one at a time. */
      while (d->head_len < 2 && len) {
        d->head[d->head_len++] = *in++;
        len--;
      }
      if (d->head_len < 2) return 0;
      err = start(d, !zlib_header(d->head));
      if (!err) err = run(d, d->head, 2, sink, ctx);
    } else {
      err = start(d, false);
    }
  }
  while (!err && len) {
    size_t n = len > (1u << 30) ? (1u << 30) : len;
    err = run(d, in, n, sink, ctx);
    in += n;
    len -= n;
  }
  if (err) d->failed = 1;
  return err;
}

int pk_inflate_finish(pk_inflate *d) {
  if (d->failed) return -PK_E_BAD_ENCODING;
  if (!d->started && d->head_len == 0) return 0; /* an empty body is an empty body */
  return d->ended ? 0 : -PK_E_TRUNCATED_ENCODING;
}

void pk_inflate_free(pk_inflate *d) {
  if (!d) return;
  if (d->started) inflateEnd(&d->z);
  pk__free(d);
}
