/* gzip/deflate decoding — the only file of the engine that includes zlib
 * (and libdeflate). Streaming, bounded memory, and suspicious of its input: a
 * stream that expands past a ratio (after a floor) is a decompression bomb, a
 * corrupt or truncated one is an error, never a silently short body.
 *
 * Small whole gzip bodies (a Content-Length up to PK_WHOLE_MAX_IN, decoded
 * size up to PK_WHOLE_MAX_OUT) are collected and decoded in one call by
 * libdeflate, about twice zlib's speed with a faster CRC; anything it does
 * not decode cleanly goes through zlib after all, which gives the precise
 * error (truncated, corrupt, extra members). Larger or chunked bodies
 * stream through zlib. */
#include "pk_base.h"
#include "pk_inflate.h"

#include <libdeflate.h>
#include <string.h>
#include <zlib.h>

#define PK_WHOLE_MAX_IN (1u << 20)
#define PK_WHOLE_MAX_OUT (16u << 20)

#define PK_INFLATE_CHUNK 65536 /* output per delivery: fewer, larger hand-offs downstream */

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
  uint8_t *whole;    /* pk_inflate_expect: the body collected for one-call decoding */
  size_t whole_len, whole_cap;
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

int pk_inflate_expect(pk_inflate *d, uint64_t total) {
  if (d->coding != PK_CODING_GZIP || d->started || d->whole || total < 18 || total > PK_WHOLE_MAX_IN) return 0;
  d->whole = pk__malloc((size_t)total);
  d->whole_cap = d->whole ? (size_t)total : 0; /* no memory: stream instead */
  return 0;
}

/* The collected body in one libdeflate call when its trailer's ISIZE (RFC
 * 1952 §2.3.1) is within bounds and the limits; else, or when libdeflate
 * does not decode all of it cleanly, through zlib. */
static int decode_whole(pk_inflate *d, int (*sink)(void *, const char *, size_t), void *ctx) {
  uint8_t *in = d->whole;
  size_t n = d->whole_len;
  d->whole = NULL;
  int err = 1;
  uint32_t isize = n >= 4 ? (uint32_t)in[n - 4] | (uint32_t)in[n - 3] << 8 | (uint32_t)in[n - 2] << 16 | (uint32_t)in[n - 1] << 24 : 0;
  bool fits = n == d->whole_cap && isize <= PK_WHOLE_MAX_OUT &&
              (!d->limits.max_output || isize <= d->limits.max_output) &&
              !(d->limits.max_ratio && isize > d->limits.ratio_floor && isize / n > d->limits.max_ratio);
  char *out = fits ? pk__malloc(isize ? isize : 1) : NULL;
  struct libdeflate_decompressor *ld = out ? libdeflate_alloc_decompressor() : NULL;
  if (ld) {
    size_t used_in = 0, used_out = 0;
    enum libdeflate_result r = libdeflate_gzip_decompress_ex(ld, in, n, out, isize, &used_in, &used_out);
    libdeflate_free_decompressor(ld);
    if (r == LIBDEFLATE_SUCCESS && used_in == n && used_out == isize) {
      d->in_total = n;
      d->started = d->ended = 1;
      err = 0;
      for (size_t off = 0; !err && off < used_out; off += PK_INFLATE_CHUNK)
        err = emit(d, out + off, used_out - off < PK_INFLATE_CHUNK ? used_out - off : PK_INFLATE_CHUNK, sink, ctx);
    }
  }
  pk__free(out);
  if (err == 1) {
    err = start(d, false);
    if (!err) err = run(d, in, n, sink, ctx);
  }
  pk__free(in);
  return err;
}

int pk_inflate_feed(pk_inflate *d, const void *data, size_t len, int (*sink)(void *, const char *, size_t),
                    void *ctx) {
  if (d->failed) return -PK_E_BAD_ENCODING;
  const uint8_t *in = data;
  int err = 0;
  if (d->whole) {
    size_t take = len < d->whole_cap - d->whole_len ? len : d->whole_cap - d->whole_len;
    memcpy(d->whole + d->whole_len, in, take);
    d->whole_len += take;
    in += take;
    len -= take;
    if (d->whole_len < d->whole_cap) return 0;
    err = decode_whole(d, sink, ctx);
  }
  if (!err && !d->started) {
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

static int drop_output(void *ctx, const char *data, size_t n) {
  PK_UNUSED(ctx);
  PK_UNUSED(data);
  PK_UNUSED(n);
  return 0;
}

int pk_inflate_finish(pk_inflate *d) {
  if (d->failed) return -PK_E_BAD_ENCODING;
  /* Ended short of the expected length: the decoder's verdict on what came
   * (the caller reports the short body itself; nothing more is delivered). */
  if (d->whole) {
    int err = decode_whole(d, drop_output, NULL);
    if (err) return err;
  }
  if (!d->started && d->head_len == 0) return 0; /* an empty body is an empty body */
  return d->ended ? 0 : -PK_E_TRUNCATED_ENCODING;
}

void pk_inflate_free(pk_inflate *d) {
  if (!d) return;
  pk__free(d->whole);
  if (d->started) inflateEnd(&d->z);
  pk__free(d);
}

const char *pk_zlib_version(void) { return zlibVersion(); }

const char *pk_libdeflate_version(void) { return LIBDEFLATE_VERSION_STRING; }
