/*
 * The pure HTTP/1.1 response parser (pk_h1_parse.c): the head, the chunked
 * decoder and body framing. No allocation, no I/O, no state outside the
 * arguments: any thread, and a fuzz target (fuzz/fuzz_h1_parse.c,
 * fuzz/fuzz_chunked.c). Rules and limits: docs/PARSER.md.
 */
#ifndef PK_H1_PARSE_H
#define PK_H1_PARSE_H

#include "pk_errors.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pk_header {
  const char *name;
  size_t name_len;
  const char *value;
  size_t value_len;
} pk_header;

typedef struct pk_parse_limits {
  size_t max_head_bytes;      /* default 65536 */
  size_t max_header_fields;   /* default 128 */
  size_t max_chunk_hex_digits; /* default 16 */
  size_t max_chunk_ext_bytes; /* default 4096 */
  size_t max_trailer_bytes;   /* default 16384 */
} pk_parse_limits;

/* Fills the defaults above. `limits` must not be NULL. */
void pk_parse_limits_init(pk_parse_limits *limits);

typedef struct pk_response_head {
  int minor_version;  /* 0 or 1 */
  int status;         /* 100..999 */
  const char *reason; /* points into the buffer; may be empty */
  size_t reason_len;
  pk_header *headers; /* caller-provided array */
  size_t num_headers; /* in: capacity of `headers`; out: fields parsed */
} pk_response_head;

/* pk_parse_response_head's answer when the head is not complete yet: not a
 * failure, so not negative (pk_errors.h). */
#define PK_PARSE_INCOMPLETE 0

/*
 * Parses a response head (status line and header fields up to the empty
 * line) in buf[0..len). Stateless: call again with more bytes; `last_len`
 * is how many bytes the previous call saw (0 at first), so only the new
 * bytes are scanned for the end of the head — a trickling server costs O(n).
 * Obsolete line folding is unfolded in place (the fold becomes spaces),
 * which is why `buf` is writable. No allocation, no I/O.
 * Returns the head length (> 0) when complete; PK_PARSE_INCOMPLETE (0) when
 * more bytes are needed (and len < max_head_bytes); otherwise -PK_E_xxx
 * (HEAD_TOO_LARGE, TOO_MANY_HEADERS, BAD_STATUS_LINE, BAD_VERSION, BAD_HEADER).
 * If out->num_headers capacity is smaller than max_header_fields, the smaller
 * bound applies. `limits` may be NULL (the defaults); buf, out and
 * out->headers must not be. Pointers in `out` point into `buf`.
 */
int pk_parse_response_head(char *buf, size_t len, size_t last_len, pk_response_head *out,
                           const pk_parse_limits *limits);

/* Resumable chunked-body decoder (RFC 9112 §7.1). Zero-initialise or call _init. */
typedef struct pk_chunked {
  uint64_t remaining; /* bytes left in the current chunk's data */
  size_t count;       /* digits / extension bytes / trailer bytes seen, per state */
  size_t trailer_total;
  int state;          /* private */
  int done;           /* 1 once the last chunk and trailers were consumed */
} pk_chunked;

void pk_chunked_init(pk_chunked *dec); /* dec must not be NULL */

/*
 * Decodes chunked data in place. On entry buf[0..*len) holds raw bytes; on
 * return the decoded body bytes are compacted to buf[0..*len) (in order).
 * Returns the number of raw bytes consumed (equal to the input length unless
 * the body ended inside the buffer; then dec->done is 1 and the bytes after
 * it are left untouched at buf[consumed..input_len)), or -PK_E_xxx
 * (BAD_CHUNK, CHUNK_SIZE_TOO_LONG, CHUNK_EXT_TOO_LARGE, TRAILERS_TOO_LARGE).
 * Note: when the body ends inside the buffer, the leftover bytes are NOT moved;
 * the caller finds them at original offset `consumed`.
 */
ssize_t pk_chunked_decode(pk_chunked *dec, char *buf, size_t *len, const pk_parse_limits *limits);

/* Framing of a response body, derived from a parsed head (RFC 9112 §6.3). */
typedef enum pk_framing {
  PK_FRAMING_NONE = 0,      /* HEAD, 1xx, 204, 304: no body */
  PK_FRAMING_LENGTH = 1,    /* Content-Length */
  PK_FRAMING_CHUNKED = 2,   /* Transfer-Encoding: chunked */
  PK_FRAMING_CLOSE = 3,     /* read until the server closes */
} pk_framing;

typedef struct pk_body_info {
  pk_framing framing;
  uint64_t content_length; /* valid for PK_FRAMING_LENGTH */
  int keep_alive;          /* 1 if the connection may be reused after this response */
} pk_body_info;

/*
 * Applies RFC 9112 §6.3 to a parsed head. `head_request` is 1 for a HEAD
 * request. Returns 0 or -PK_E_xxx (BAD_CONTENT_LENGTH,
 * CONFLICTING_CONTENT_LENGTH, TE_WITH_CONTENT_LENGTH,
 * UNSUPPORTED_TRANSFER_ENCODING). Pure.
 */
int pk_response_body_info(const pk_response_head *head, int head_request, pk_body_info *out);


#ifdef __cplusplus
}
#endif
#endif
