/*
 * libFuzzer harness for the chunked decoder (pk_chunked_decode, RFC 9112 §7.1).
 *
 * Input layout: byte 0 picks the limits (bit 0: tiny limits from bytes 1-4),
 * byte 5 is the number of split points k (0..31), the next 2k bytes are the
 * split offsets (little-endian, taken modulo the body length), and the rest
 * is the raw chunked body. The body is decoded twice, whole and in the
 * pieces between the fuzzer's split points, and both runs must agree on the
 * result (error code or bytes consumed), `done`, and the decoded bytes. Also:
 * the decoder never reports more output than input, leaves the bytes after
 * the body untouched, consumes nothing once done, and after an error keeps
 * answering BAD_CHUNK.
 */
#include "fuzz_common.h"

#define MAX_SPLITS 31

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 6) return 0;
  pk_parse_limits lim;
  pk_parse_limits_init(&lim);
  if (data[0] & 1) {
    lim.max_chunk_hex_digits = 1 + data[1] % 20; /* > 16: overflow still caught */
    lim.max_chunk_ext_bytes = data[2] % 32;
    lim.max_trailer_bytes = data[3] % 64;
  }
  size_t k = data[5] % (MAX_SPLITS + 1);
  size_t hdr = 6 + 2 * k;
  if (size < hdr) return 0;
  const uint8_t *raw = data + hdr;
  size_t n = size - hdr;

  size_t cuts[MAX_SPLITS + 2];
  size_t ncuts = 0;
  cuts[ncuts++] = 0;
  for (size_t i = 0; i < k; i++) {
    size_t off = (size_t)data[6 + 2 * i] | (size_t)data[7 + 2 * i] << 8;
    cuts[ncuts++] = n ? off % (n + 1) : 0;
  }
  cuts[ncuts++] = n;
  qsort(cuts, ncuts, sizeof cuts[0], fuzz_cmp_size);

  char *scratch = malloc(n + 1), *o1 = malloc(n + 1), *o2 = malloc(n + 1);
  CHECK(scratch && o1 && o2);
  size_t whole[2] = {0, n};
  fuzz_chunk_outcome a, b;
  fuzz_decode_chunked(raw, n, whole, 2, &lim, scratch, o1, &a);
  fuzz_decode_chunked(raw, n, cuts, ncuts, &lim, scratch, o2, &b);
  if (a.result != b.result || a.done != b.done) {
    fprintf(stderr, "whole %zd (%s) done %d, pieces %zd (%s) done %d\n", a.result,
            a.result < 0 ? pk_error_name((int)-a.result) : "ok", a.done, b.result,
            b.result < 0 ? pk_error_name((int)-b.result) : "ok", b.done);
    abort();
  }
  if (a.result >= 0) {
    CHECK(a.out_len == b.out_len && memcmp(o1, o2, a.out_len) == 0);
    CHECK(a.out_len <= (size_t)a.result);
  }
  free(scratch);
  free(o1);
  free(o2);
  return 0;
}
