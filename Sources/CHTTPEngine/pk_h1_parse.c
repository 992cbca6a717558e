/*
 * pk_h1_parse.c — the pure HTTP/1.1 response parser.
 *
 * Three pieces, none of which allocates, does I/O or keeps state outside its
 * arguments (so they are thread-safe and easy to fuzz):
 *   - pk_parse_response_head: status line and header fields (RFC 9112 §4, §5),
 *     stateless with a resume hint;
 *   - pk_chunked_decode: a byte-resumable chunked decoder (RFC 9112 §7.1);
 *   - pk_response_body_info: message body framing (RFC 9112 §6.3).
 * The rules and limits are described in docs/PARSER.md.
 */
#include "pk_h1_parse.h"
#include "pk_base.h"

#include <limits.h>
#include <string.h>

#define PK_CR '\r'
#define PK_LF '\n'

/* -------------------------------------------------------- character classes */

const uint8_t pk__tchar[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1,
    ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1, ['~'] = 1,
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1,
    ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1,
    ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
    ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
    ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1,
    ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
    ['y'] = 1, ['z'] = 1,
};

static int pk__is_tchar(unsigned char c) { return pk__tchar[c]; }

static int pk__is_ows(unsigned char c) { return c == ' ' || c == '\t'; }

/* field-vchar / SP / HTAB (RFC 9110 §5.5), obs-text included: every byte but
 * the CTLs (0x00-0x1F, 0x7F) except HTAB. Also what a reason-phrase may hold
 * (RFC 9112 §4). */
static int pk__is_text(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7F); }

/* The index of the first byte of buf[i..end) that is not text (`end` when
 * all are). Eight bytes at a time while none of them is a CTL (below 0x20,
 * HTAB included, or 0x7F): a word with one stops the fast loop, and the
 * byte loop decides from there, so the result is the byte loop's. Field
 * values and reason phrases are where a head's bytes are. */
#define PK__ONES 0x0101010101010101ULL
#define PK__HIGHS 0x8080808080808080ULL
static size_t pk__text_end(const char *buf, size_t i, size_t end) {
  while (end > i && end - i >= 8) {
    uint64_t w;
    memcpy(&w, buf + i, 8);
    uint64_t below_space = (w - PK__ONES * 0x20) & ~w & PK__HIGHS; /* a byte < 0x20 (exact for existence) */
    uint64_t d = w ^ (PK__ONES * 0x7F);
    uint64_t del = (d - PK__ONES) & ~d & PK__HIGHS;                  /* a byte == 0x7F */
    if (below_space | del) break;
    i += 8;
  }
  while (i < end && pk__is_text((unsigned char)buf[i])) i++;
  return i;
}

static int pk__hexval(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The first n bytes of a equal those of the lower-case literal, ignoring
 * ASCII case (n <= strlen(lit)). */
static int pk__iprefix(const char *a, size_t n, const char *lit) {
  for (size_t i = 0; i < n; i++) {
    unsigned char x = (unsigned char)a[i];
    if (x >= 'A' && x <= 'Z') x = (unsigned char)(x + 32);
    if (x != (unsigned char)lit[i]) return 0;
  }
  return 1;
}

/* Case-insensitive equality with a lower-case literal (names, tokens):
 * PK_IEQ(a, n, "close"); the literal's length is known at compile time. */
static int pk__ieq(const char *a, size_t alen, const char *lit, size_t litlen) {
  return alen == litlen && pk__iprefix(a, alen, lit);
}
#define PK_IEQ(a, alen, lit) pk__ieq((a), (alen), lit, sizeof lit - 1)

/* ------------------------------------------------------------------ limits */

void pk_parse_limits_init(pk_parse_limits *limits) {
  limits->max_head_bytes = 65536;
  limits->max_header_fields = 128;
  limits->max_chunk_hex_digits = 16;
  limits->max_chunk_ext_bytes = 4096;
  limits->max_trailer_bytes = 16384;
}

static const pk_parse_limits *pk__limits(const pk_parse_limits *limits, pk_parse_limits *tmp) {
  if (limits) return limits;
  pk_parse_limits_init(tmp);
  return tmp;
}

/* ----------------------------------------------------------- response head */

/*
 * Status line (RFC 9112 §4): HTTP-version SP 3DIGIT [SP reason-phrase] CRLF.
 * A missing SP before an empty reason is tolerated (common in the wild).
 * `end` is the index of the head's final CRLFCRLF end, so CR LF exist.
 * Returns the index just past the line's LF, or -PK_E_xxx.
 */
static long pk__status_line(const char *buf, size_t end, pk_response_head *out) {
  size_t i = 0;
  if (end >= 9 && memcmp(buf, "HTTP/1.", 7) == 0 && (buf[7] == '0' || buf[7] == '1') &&
      buf[8] == ' ') {
    out->minor_version = buf[7] - '0';
    i = 9;
  } else {
    /* Tell "an HTTP version we do not speak" (HTTP/2, HTTP/1.2, http/1.1)
     * from "not HTTP at all": the version token (letters, digits, "/" and
     * ".") starts with HTTP/ in any case. "HTTP/1.1" followed by something
     * other than SP is a bad status line, not a bad version. */
    while (i < end && (pk__is_tchar((unsigned char)buf[i]) || buf[i] == '/')) i++;
    if (i >= 5 && pk__iprefix(buf, 5, "http/") && !(i == 8 && memcmp(buf, "HTTP/1.", 7) == 0 &&
                                               (buf[7] == '0' || buf[7] == '1')))
      return -PK_E_BAD_VERSION;
    return -PK_E_BAD_STATUS_LINE;
  }
  if (i + 3 >= end) return -PK_E_BAD_STATUS_LINE;
  int status = 0;
  for (int k = 0; k < 3; k++, i++) {
    unsigned char c = (unsigned char)buf[i];
    if (c < '0' || c > '9') return -PK_E_BAD_STATUS_LINE;
    status = status * 10 + (c - '0');
  }
  if (status < 100) return -PK_E_BAD_STATUS_LINE; /* the contract says 100..999 */
  out->status = status;
  if (buf[i] == ' ') i++;
  else if (buf[i] != PK_CR) return -PK_E_BAD_STATUS_LINE; /* "2000", "200X" */
  size_t r = i;
  i = pk__text_end(buf, i, end);
  if (i + 1 >= end || buf[i] != PK_CR || buf[i + 1] != PK_LF) return -PK_E_BAD_STATUS_LINE;
  out->reason = buf + r;
  out->reason_len = i - r;
  return (long)(i + 2);
}

/* Parses the complete head buf[0..end) (ending in CRLFCRLF, or in a bare CR/LF
 * the scan found). Returns `end` or -PK_E_xxx. */
static long pk__parse_head(char *buf, size_t end, pk_response_head *out, size_t max_fields) {
  long r = pk__status_line(buf, end, out);
  if (r < 0) return r;
  size_t i = (size_t)r, n = 0;
  pk_header *last = NULL; /* the field an obs-fold continues */

  for (;;) {
    if (i >= end) return -PK_E_BAD_HEADER; /* ran off a truncated (bare CR/LF) head */
    if (buf[i] == PK_CR) {
      if (i + 1 < end && buf[i + 1] == PK_LF) break; /* the empty line ends the head */
      return -PK_E_BAD_HEADER;
    }
    if (pk__is_ows((unsigned char)buf[i])) {
      /* obs-fold (RFC 9112 §5.2): a line starting with whitespace continues
       * the previous field's value. Replace the CRLF and the leading
       * whitespace with SP so the value is contiguous in the buffer. One
       * right after the status line has nothing to continue (§2.2). */
      if (!last) return -PK_E_BAD_HEADER;
      char *crlf = buf + i - 2;
      crlf[0] = crlf[1] = ' ';
      while (i < end && pk__is_ows((unsigned char)buf[i])) buf[i++] = ' ';
      size_t cs = i;
      i = pk__text_end(buf, i, end);
      if (i + 1 >= end || buf[i] != PK_CR || buf[i + 1] != PK_LF) return -PK_E_BAD_HEADER;
      size_t ce = i;
      while (ce > cs && pk__is_ows((unsigned char)buf[ce - 1])) ce--;
      /* An empty value so far starts here (leading OWS is not part of it,
       * and re-parsing the unfolded head must give the same pointers). */
      if (last->value_len == 0) last->value = buf + cs;
      if (ce > cs) last->value_len = (size_t)(buf + ce - last->value);
      i += 2;
      continue;
    }
    /* field-line = field-name ":" OWS field-value OWS (RFC 9112 §5). No
     * whitespace is allowed between the name and the colon (§5.1): such a
     * field is a classic request-smuggling vector, so it is rejected. */
    size_t ns = i;
    while (i < end && pk__is_tchar((unsigned char)buf[i])) i++;
    if (i == ns || i >= end || buf[i] != ':') return -PK_E_BAD_HEADER;
    size_t ne = i++;
    while (i < end && pk__is_ows((unsigned char)buf[i])) i++;
    size_t vs = i;
    i = pk__text_end(buf, i, end);
    if (i + 1 >= end || buf[i] != PK_CR || buf[i + 1] != PK_LF) return -PK_E_BAD_HEADER;
    size_t ve = i;
    while (ve > vs && pk__is_ows((unsigned char)buf[ve - 1])) ve--;
    if (n >= max_fields) return -PK_E_TOO_MANY_HEADERS;
    last = &out->headers[n++];
    last->name = buf + ns;
    last->name_len = ne - ns;
    last->value = buf + vs;
    last->value_len = ve - vs;
    i += 2;
  }
  out->num_headers = n;
  return (long)(i + 2);
}

int pk_parse_response_head(char *buf, size_t len, size_t last_len, pk_response_head *out,
                           const pk_parse_limits *limits) {
  pk_parse_limits tmp;
  limits = pk__limits(limits, &tmp);
  size_t max = limits->max_head_bytes < (size_t)INT_MAX ? limits->max_head_bytes : (size_t)INT_MAX;
  size_t max_fields = out->headers ? out->num_headers : 0;
  if (limits->max_header_fields < max_fields) max_fields = limits->max_header_fields;

  /* Fail fast on something that is not HTTP at all (a TLS alert, an HTML
   * page): only the first five bytes, so O(1) per call. */
  if (!pk__iprefix(buf, len < 5 ? len : 5, "http/")) return -PK_E_BAD_STATUS_LINE;

  /* Look for the end of the head only in bytes not scanned before. The last
   * three old bytes are scanned again since CRLFCRLF may straddle the seam
   * (and a CR at the old end could not be judged yet). Each byte is thus
   * scanned a bounded number of times: a trickling server costs O(n). */
  size_t limit = len < max ? len : max;
  if (last_len == 0) {
    /* The first look, usually at a whole head from one read: parse it
     * directly, which finds the empty line that ends it on the way (one
     * pass over the bytes instead of a scan, then a parse). A head that is
     * complete and valid ends at the same place the scan below would find.
     * Anything else (incomplete, bad, a bare CR or LF) is decided by the
     * scan below, as on a later look, so the result does not depend on how
     * the bytes arrived; re-parsing what this pass unfolded gives the same
     * fields (see pk__parse_head). */
    long r = pk__parse_head(buf, limit, out, max_fields);
    if (r > 0) return (int)r;
  }
  size_t i = last_len > 3 && last_len <= len ? last_len - 3 : 0;
  for (; i < limit; i++) {
    char c = buf[i];
    if (c == PK_LF) {
      if (i == 0 || buf[i - 1] != PK_CR) break; /* bare LF (RFC 9112 §2.2) */
      if (i >= 3 && buf[i - 2] == PK_LF && buf[i - 3] == PK_CR) {
        long r = pk__parse_head(buf, i + 1, out, max_fields);
        return (int)r;
      }
    } else if (c == PK_CR && i + 1 < limit && buf[i + 1] != PK_LF) {
      break; /* bare CR */
    }
  }
  if (i < limit) {
    /* A bare CR or LF: the head can never end well. Parse what is there so
     * the error is the same as if the head had been complete (the first bad
     * line decides), instead of waiting for a timeout. */
    long r = pk__parse_head(buf, i + 1, out, max_fields);
    return r < 0 ? (int)r : -PK_E_BAD_HEADER;
  }
  return len >= max ? -PK_E_HEAD_TOO_LARGE : PK_PARSE_INCOMPLETE;
}

/* -------------------------------------------------------- body framing */

/* Calls fn for each element of the comma-separated list (RFC 9110 §5.6.1)
 * that is field `hd`'s value, OWS-trimmed. Empty elements are passed too;
 * callers decide. Stops at the first non-zero return, and returns it. */
typedef int (*pk__elem_fn)(void *ctx, const char *s, size_t n);

static int pk__field_elems(const pk_header *hd, pk__elem_fn fn, void *ctx) {
  const char *p = hd->value, *e = hd->value + hd->value_len;
  for (;;) {
    const char *c = p;
    while (c < e && *c != ',') c++;
    const char *s = p, *t = c;
    while (s < t && pk__is_ows((unsigned char)*s)) s++;
    while (t > s && pk__is_ows((unsigned char)t[-1])) t--;
    int r = fn(ctx, s, (size_t)(t - s));
    if (r) return r;
    if (c == e) return 0;
    p = c + 1;
  }
}

typedef struct {
  int close, keep_alive;
} pk__conn_tokens;

static int pk__conn_elem(void *ctx, const char *s, size_t n) {
  pk__conn_tokens *t = ctx;
  if (PK_IEQ(s, n, "close")) t->close = 1;
  else if (PK_IEQ(s, n, "keep-alive")) t->keep_alive = 1;
  return 0;
}

typedef struct {
  int codings, chunked, last_chunked;
} pk__te_state;

static int pk__te_elem(void *ctx, const char *s, size_t n) {
  pk__te_state *t = ctx;
  if (n == 0) return 0; /* empty list elements are ignored (RFC 9110 §5.6.1) */
  t->codings++;
  t->last_chunked = PK_IEQ(s, n, "chunked");
  t->chunked += t->last_chunked;
  return 0;
}

typedef struct {
  int seen;
  uint64_t value;
} pk__cl_state;

/* Content-Length = 1*DIGIT (RFC 9110 §8.6): no sign, no hex, no inner space. */
static int pk__cl_elem(void *ctx, const char *s, size_t n) {
  pk__cl_state *t = ctx;
  if (n == 0) return -PK_E_BAD_CONTENT_LENGTH;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < '0' || c > '9') return -PK_E_BAD_CONTENT_LENGTH;
    if (v > ((uint64_t)INT64_MAX - (c - '0')) / 10) return -PK_E_BAD_CONTENT_LENGTH;
    v = v * 10 + (c - '0');
  }
  /* Repeats of the same value ("42, 42" or two fields) are one value (§8.6). */
  if (t->seen && t->value != v) return -PK_E_CONFLICTING_CONTENT_LENGTH;
  t->seen = 1;
  t->value = v;
  return 0;
}

int pk_response_body_info(const pk_response_head *head, int head_request, pk_body_info *out) {
  /* One pass over the fields: each framing field's list is read as it is
   * met (in order, so repeated fields combine as one list would). */
  pk__conn_tokens conn = {0, 0};
  pk__te_state te = {0, 0, 0};
  pk__cl_state cl = {0, 0};
  int has_te = 0, has_cl = 0, cl_error = 0;
  for (size_t f = 0; f < head->num_headers; f++) {
    const pk_header *h = &head->headers[f];
    switch (h->name_len) {
    case sizeof "connection" - 1:
      if (PK_IEQ(h->name, h->name_len, "connection")) pk__field_elems(h, pk__conn_elem, &conn);
      break;
    case sizeof "content-length" - 1:
      if (!PK_IEQ(h->name, h->name_len, "content-length")) break;
      has_cl = 1;
      if (!cl_error) cl_error = pk__field_elems(h, pk__cl_elem, &cl); /* the first error is the one reported */
      break;
    case sizeof "transfer-encoding" - 1:
      if (!PK_IEQ(h->name, h->name_len, "transfer-encoding")) break;
      has_te = 1;
      pk__field_elems(h, pk__te_elem, &te);
      break;
    default:
      break;
    }
  }
  /* RFC 9112 §9.3: 1.1 persists unless "close"; 1.0 only with "keep-alive". */
  int keep = head->minor_version >= 1 ? !conn.close : (conn.keep_alive && !conn.close);
  out->content_length = 0;

  /* §6.3 items 1-2: these responses never have content, whatever their
   * framing fields say (they describe the representation, not this message). */
  if (head_request || head->status < 200 || head->status == 204 || head->status == 304) {
    out->framing = PK_FRAMING_NONE;
    out->keep_alive = keep;
    return 0;
  }
  if (has_te) {
    /* §6.3 item 3 lets a recipient let Transfer-Encoding win, but both at
     * once is the shape of a smuggling attack (§11.2): reject. */
    if (has_cl) return -PK_E_TE_WITH_CONTENT_LENGTH;
    /* Only a single chunked, applied last, is supported: decoding other
     * transfer codings is not, and reading until close (§6.3 item 4) would
     * hand the caller still-encoded bytes. Chunked twice is forbidden (§7). */
    if (te.chunked != 1 || te.codings != 1 || !te.last_chunked)
      return -PK_E_UNSUPPORTED_TRANSFER_ENCODING;
    out->framing = PK_FRAMING_CHUNKED;
    /* §6.1: Transfer-Encoding in an HTTP/1.0 message means faulty framing;
     * decode it, but never reuse the connection. */
    out->keep_alive = head->minor_version >= 1 ? keep : 0;
    return 0;
  }
  if (has_cl) {
    if (cl_error) return cl_error;
    out->framing = PK_FRAMING_LENGTH;
    out->content_length = cl.value;
    out->keep_alive = keep;
    return 0;
  }
  /* §6.3 item 8: the body runs until the server closes the connection. */
  out->framing = PK_FRAMING_CLOSE;
  out->keep_alive = 0;
  return 0;
}

/* --------------------------------------------------------- chunked body */

/*
 * chunked-body = *chunk last-chunk trailer-section CRLF      (RFC 9112 §7.1)
 * chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
 * chunk-ext    = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] )
 * One state per position in that grammar, so any split of the input works.
 * State 0 must be the start (a zeroed pk_chunked is ready to use).
 */
enum {
  CK_SIZE = 0,    /* chunk-size hex digits; count = digits */
  CK_EXT,         /* BWS before ";" (or after an ext value); count = ext bytes */
  CK_EXT_NAME0,   /* after ";": BWS then ext-name */
  CK_EXT_NAME,    /* in ext-name */
  CK_EXT_NAME_WS, /* BWS after ext-name: "=", ";" or CR */
  CK_EXT_VAL0,    /* after "=": BWS then token or quoted-string */
  CK_EXT_TOKEN,   /* in a token ext-val */
  CK_EXT_QUOTED,  /* in a quoted-string (RFC 9110 §5.6.4) */
  CK_EXT_QESC,    /* after a backslash in a quoted-string */
  CK_SIZE_LF,     /* CR seen at the end of the chunk-size line */
  CK_DATA,        /* chunk-data; remaining = bytes left */
  CK_DATA_CR,     /* CRLF after the data */
  CK_DATA_LF,
  CK_TR_FIRST,    /* start of the first trailer line (or the final CRLF) */
  CK_TR_START,    /* start of a later trailer line: obs-fold possible */
  CK_TR_NAME,
  CK_TR_VALUE,
  CK_TR_LF,       /* CR seen at the end of a trailer field line */
  CK_END_LF,      /* CR of the final empty line seen */
  CK_DONE,
  CK_FAILED       /* an error was returned; it is returned again */
};

void pk_chunked_init(pk_chunked *dec) { memset(dec, 0, sizeof *dec); }

/* One byte of a chunk-size line after the digits. Returns the next state or
 * -PK_E_BAD_CHUNK. Every state but the quoted ones accepts CR to end the
 * line, and trailing BWS before it is tolerated. */
static int pk__ext_step(int st, unsigned char c) {
  int ows = pk__is_ows(c), tok = pk__is_tchar(c);
  switch (st) {
  case CK_EXT:
    if (c == ';') return CK_EXT_NAME0;
    if (ows) return CK_EXT;
    break;
  case CK_EXT_NAME0:
    if (tok) return CK_EXT_NAME;
    if (ows) return CK_EXT_NAME0;
    break;
  case CK_EXT_NAME:
  case CK_EXT_NAME_WS:
    if (tok && st == CK_EXT_NAME) return CK_EXT_NAME;
    if (ows) return CK_EXT_NAME_WS;
    if (c == '=') return CK_EXT_VAL0;
    if (c == ';') return CK_EXT_NAME0;
    break;
  case CK_EXT_VAL0:
    if (c == '"') return CK_EXT_QUOTED;
    if (tok) return CK_EXT_TOKEN;
    if (ows) return CK_EXT_VAL0;
    break;
  case CK_EXT_TOKEN:
    if (tok) return CK_EXT_TOKEN;
    if (ows) return CK_EXT;
    if (c == ';') return CK_EXT_NAME0;
    break;
  case CK_EXT_QUOTED:
    if (c == '"') return CK_EXT;
    if (c == '\\') return CK_EXT_QESC;
    if (pk__is_text(c)) return CK_EXT_QUOTED; /* qdtext */
    break;
  case CK_EXT_QESC:
    if (pk__is_text(c)) return CK_EXT_QUOTED; /* quoted-pair */
    break;
  }
  return -PK_E_BAD_CHUNK;
}

/* One byte of a trailer field line (CR at a line start is handled by the
 * caller). Returns the next state or -PK_E_BAD_CHUNK. */
static int pk__trailer_step(int st, unsigned char c) {
  switch (st) {
  case CK_TR_FIRST:
  case CK_TR_START:
    if (pk__is_tchar(c)) return CK_TR_NAME;
    if (pk__is_ows(c) && st == CK_TR_START) return CK_TR_VALUE; /* obs-fold */
    break;
  case CK_TR_NAME:
    if (pk__is_tchar(c)) return CK_TR_NAME;
    if (c == ':') return CK_TR_VALUE;
    break;
  case CK_TR_VALUE:
    if (c == PK_CR) return CK_TR_LF;
    if (pk__is_text(c)) return CK_TR_VALUE;
    break;
  case CK_TR_LF:
    if (c == PK_LF) return CK_TR_START;
    break;
  }
  return -PK_E_BAD_CHUNK;
}

ssize_t pk_chunked_decode(pk_chunked *dec, char *buf, size_t *len, const pk_parse_limits *limits) {
  pk_parse_limits tmp;
  limits = pk__limits(limits, &tmp);
  size_t in = *len, out = 0, i = 0;
  int st = dec->state;
  ssize_t err = 0;
  if (st == CK_FAILED) goto bad;

  while (i < in && st != CK_DONE) {
    unsigned char c = (unsigned char)buf[i];
    switch (st) {
    case CK_DATA: {
      /* The hot path: move the data down over the framing bytes already
       * consumed. `out` never passes `i`, so this stays inside buf. */
      size_t n = in - i;
      if (n > dec->remaining) n = (size_t)dec->remaining;
      if (out != i) memmove(buf + out, buf + i, n);
      out += n;
      i += n;
      dec->remaining -= n;
      if (dec->remaining == 0) st = CK_DATA_CR;
      continue;
    }
    case CK_SIZE: {
      int v = pk__hexval(c);
      if (v >= 0) {
        /* Leading zeros count too: the limit bounds the bytes we accept. */
        if (++dec->count > limits->max_chunk_hex_digits || (dec->remaining >> 60) != 0) {
          err = -PK_E_CHUNK_SIZE_TOO_LONG;
          goto fail;
        }
        dec->remaining = (dec->remaining << 4) | (uint64_t)v;
        break;
      }
      if (dec->count == 0) goto bad; /* chunk-size = 1*HEXDIG */
      dec->count = 0;
      st = CK_EXT;
      continue; /* the same byte is the start of the extension or the CR */
    }
    case CK_EXT:
    case CK_EXT_NAME0:
    case CK_EXT_NAME:
    case CK_EXT_NAME_WS:
    case CK_EXT_VAL0:
    case CK_EXT_TOKEN:
    case CK_EXT_QUOTED:
    case CK_EXT_QESC:
      if (c == PK_CR && st != CK_EXT_QUOTED && st != CK_EXT_QESC && st != CK_EXT_NAME0 &&
          st != CK_EXT_VAL0) {
        st = CK_SIZE_LF;
        break;
      }
      /* Extensions are skipped, but bounded: they are not body bytes, and
       * an endless one would otherwise keep the caller reading forever. */
      if (++dec->count > limits->max_chunk_ext_bytes) {
        err = -PK_E_CHUNK_EXT_TOO_LARGE;
        goto fail;
      }
      st = pk__ext_step(st, c);
      if (st < 0) goto bad;
      break;
    case CK_SIZE_LF:
      if (c != PK_LF) goto bad;
      dec->count = 0;
      st = dec->remaining ? CK_DATA : CK_TR_FIRST; /* size 0 is the last-chunk */
      break;
    case CK_DATA_CR:
      if (c != PK_CR) goto bad; /* chunk-data longer than its size said */
      st = CK_DATA_LF;
      break;
    case CK_DATA_LF:
      if (c != PK_LF) goto bad;
      st = CK_SIZE;
      break;
    case CK_TR_FIRST:
    case CK_TR_START:
    case CK_TR_NAME:
    case CK_TR_VALUE:
    case CK_TR_LF:
      /* trailer-section = *( field-line CRLF ) (§7.1.2): checked like header
       * lines, counted against their own limit, then dropped. */
      if ((st == CK_TR_FIRST || st == CK_TR_START) && c == PK_CR) {
        st = CK_END_LF; /* the empty line: not a trailer byte */
        break;
      }
      if (++dec->trailer_total > limits->max_trailer_bytes) {
        err = -PK_E_TRAILERS_TOO_LARGE;
        goto fail;
      }
      st = pk__trailer_step(st, c);
      if (st < 0) goto bad;
      break;
    case CK_END_LF:
      if (c != PK_LF) goto bad;
      st = CK_DONE;
      dec->done = 1;
      break;
    }
    i++;
  }
  dec->state = st;
  *len = out;
  return (ssize_t)i;

bad:
  err = -PK_E_BAD_CHUNK;
fail:
  dec->state = CK_FAILED;
  *len = 0;
  return err;
}
