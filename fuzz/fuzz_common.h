/* What the harnesses share: CHECK, and the chunked decoder run over a
 * body cut into given pieces (fuzz_chunked.c cuts where the fuzzer says,
 * fuzz_h1_parse.c where its input hash says). */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include "pk_h1_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                    \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "fuzz: check failed at line %d: %s\n", __LINE__, #cond); \
      abort();                                                                         \
    }                                                                                  \
  } while (0)

typedef struct {
  ssize_t result; /* -PK_E_xxx, or raw bytes consumed in all */
  int done;
  size_t out_len;
} fuzz_chunk_outcome;

static inline int fuzz_cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? -1 : x > y;
}

/* Decodes raw[0..n) fed as the pieces [cuts[i], cuts[i+1]). */
static inline void fuzz_decode_chunked(const uint8_t *raw, size_t n, const size_t *cuts, size_t ncuts,
                   const pk_parse_limits *lim, char *scratch, char *out, fuzz_chunk_outcome *o) {
  pk_chunked dec;
  pk_chunked_init(&dec);
  o->result = 0;
  o->done = 0;
  o->out_len = 0;
  for (size_t i = 0; i + 1 < ncuts; i++) {
    size_t pos = cuts[i], k = cuts[i + 1] - cuts[i];
    if (k == 0) continue;
    memcpy(scratch, raw + pos, k);
    size_t len = k;
    ssize_t used = pk_chunked_decode(&dec, scratch, &len, lim);
    if (used < 0) {
      CHECK(-used < PK__ERROR_COUNT);
      o->result = used;
      /* A failed decoder stays failed. */
      size_t again = k;
      memcpy(scratch, raw + pos, k);
      CHECK(pk_chunked_decode(&dec, scratch, &again, lim) == -PK_E_BAD_CHUNK);
      return;
    }
    CHECK((size_t)used <= k && len <= (size_t)used);
    memcpy(out + o->out_len, scratch, len);
    o->out_len += len;
    if (dec.done) {
      CHECK(memcmp(scratch + used, raw + pos + (size_t)used, k - (size_t)used) == 0);
      o->done = 1;
      o->result = (ssize_t)(pos + (size_t)used);
      size_t rest = k - (size_t)used;
      if (rest) CHECK(pk_chunked_decode(&dec, scratch + used, &rest, lim) == 0 && rest == 0);
      return;
    }
    CHECK((size_t)used == k);
  }
  o->result = (ssize_t)n;
}

#endif
