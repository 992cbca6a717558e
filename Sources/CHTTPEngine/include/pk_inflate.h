/*
 * gzip/deflate decoding (pk_inflate.c), the only file that includes zlib.
 * A fuzz target (fuzz/fuzz_inflate.c); the engine uses it for
 * Content-Encoding when decode_content is on.
 */
#ifndef PK_INFLATE_H
#define PK_INFLATE_H

#include "pk_errors.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pk_coding { PK_CODING_GZIP = 1, PK_CODING_DEFLATE = 2 } pk_coding;

typedef struct pk_inflate pk_inflate;

typedef struct pk_inflate_limits {
  uint64_t max_ratio;   /* output/input past ratio_floor; default 200 */
  uint64_t ratio_floor; /* output below this is never a bomb; default 1 MiB */
  uint64_t max_output;  /* absolute cap; 0 = none (default) */
} pk_inflate_limits;

/* Fills the defaults above. `limits` must not be NULL. */
void pk_inflate_limits_init(pk_inflate_limits *limits);

/* A streaming gzip or deflate decoder (RFC 9110 §8.4.1). "deflate" accepts
 * the zlib wrapper (RFC 1950) and, as servers wrongly send it, raw deflate
 * (RFC 1951); gzip accepts concatenated members. Memory stays bounded (one
 * zlib stream and a stack buffer). `limits` may be NULL (the defaults).
 * Returns 0 and the decoder in *out (the caller owns it: pk_inflate_free),
 * or -PK_E_NOMEM / -PK_E_INVALID_ARGUMENT. One decoder is used by one
 * thread at a time. */
int pk_inflate_create(pk_coding coding, const pk_inflate_limits *limits, pk_inflate **out);

/* Decodes `len` bytes, handing output to sink(ctx, data, n) as it comes
 * (borrowed until sink returns; a non-zero return stops and is returned).
 * Returns 0 or -PK_E_BAD_ENCODING, -PK_E_DECOMPRESSION_BOMB, -PK_E_DECODED_TOO_LARGE. */
int pk_inflate_feed(pk_inflate *dec, const void *data, size_t len,
                    int (*sink)(void *ctx, const char *data, size_t n), void *ctx);

/* Optional hint, before the first feed: the encoded input is exactly
 * `total` bytes (a Content-Length). A small whole gzip body is then
 * collected and decoded in one call (faster); its output is delivered when
 * the last input byte arrives. Returns 0. */
int pk_inflate_expect(pk_inflate *dec, uint64_t total);

/* The input ended: 0 if the stream was complete, else -PK_E_TRUNCATED_ENCODING. */
int pk_inflate_finish(pk_inflate *dec);

void pk_inflate_free(pk_inflate *dec); /* NULL is fine */


#ifdef __cplusplus
}
#endif
#endif
