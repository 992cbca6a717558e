/* libFuzzer harness for the DNS response reader (pk_dns_parse_response,
 * pk_dns_records.c): the input is a response as a nameserver sends it.
 * Beyond the sanitizers, it checks:
 *   - a response (QR set) with an error RCODE gives that RCODE's status and
 *     no record;
 *   - PK_DNS_OK means at least one record; never more than
 *     PK_DNS_MAX_RECORDS; each record is AF_INET or AF_INET6, prints with
 *     inet_ntop, and its address bytes occur in the input; min_ttl is at
 *     most every record's TTL and below 2^31 (RFC 2181 §8);
 *   - a second read of the same bytes gives the same status and records;
 *   - with TC set, any prefix of the input yields a prefix of the records
 *     the whole yields (a cut ends the answer, never changes a record).
 * Linked with pk_dns_records.c (and -lresolv) only. */
#include "fuzz_common.h"
#include "pk_dns_records.h"

#include <string.h>
#include <sys/socket.h>

static void check_answer(const pk_dns_answer *a, const uint8_t *data, size_t size) {
  CHECK(a->count <= PK_DNS_MAX_RECORDS);
  for (uint32_t i = 0; i < a->count; i++) {
    const pk_dns_record *r = &a->records[i];
    CHECK(r->family == AF_INET || r->family == AF_INET6);
    CHECK(r->ttl <= 0x7FFFFFFFu);
    CHECK(a->min_ttl <= r->ttl);
    char text[64];
    CHECK(pk_dns_record_text(a, i, text, sizeof text) == 0);
    CHECK(memmem(data, size, r->addr, r->family == AF_INET ? 4 : 16) != NULL);
  }
  CHECK(a->min_ttl == UINT32_MAX || a->min_ttl <= 0x7FFFFFFFu);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pk_dns_answer a, b;
  pk_dns_answer_init(&a);
  pk_dns_status s = pk_dns_parse_response(data, size, &a);
  check_answer(&a, data, size);
  if (s == PK_DNS_OK) CHECK(a.count > 0);
  if (size >= 12 && (data[2] & 0x80) && (data[3] & 15) != 0) {
    int rcode = data[3] & 15;
    CHECK(a.rcode == rcode);
    CHECK(a.count == 0);
    CHECK(s == (rcode == 3 ? PK_DNS_NO_SUCH_NAME : rcode == 2 ? PK_DNS_SERVER_FAILURE : PK_DNS_REFUSED));
  }

  pk_dns_answer_init(&b);
  CHECK(pk_dns_parse_response(data, size, &b) == s);
  CHECK(b.count == a.count && b.min_ttl == a.min_ttl);
  CHECK(memcmp(a.records, b.records, a.count * sizeof a.records[0]) == 0);

  /* TC set: the whole, then a prefix whose length the input's last byte picks. */
  if (size < 12 || size > 4096) return 0;
  static uint8_t copy[4096];
  memcpy(copy, data, size);
  copy[2] |= 0x02;
  pk_dns_answer_init(&a);
  (void)pk_dns_parse_response(copy, size, &a);
  size_t cut = size - 1 - (data[size - 1] % (size - 11));
  pk_dns_answer_init(&b);
  (void)pk_dns_parse_response(copy, cut, &b);
  check_answer(&b, copy, cut);
  CHECK(b.count <= a.count);
  CHECK(memcmp(a.records, b.records, b.count * sizeof b.records[0]) == 0);
  return 0;
}
