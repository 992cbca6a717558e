/*
 * A host's A and AAAA records with their TTLs (pk_dns_records.c), for a
 * replica set that re-resolves its name when the records expire. getaddrinfo
 * reports no TTL, so this asks the stub resolver (res_nsend) and reads the
 * answer itself. A leaf: no allocation of its own, no state outside the
 * arguments, any thread. The parser is a fuzz target (fuzz/fuzz_dns.c).
 */
#ifndef PK_DNS_RECORDS_H
#define PK_DNS_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Records kept from one lookup (A and AAAA together); more are dropped. */
#define PK_DNS_MAX_RECORDS 16
/* Bytes of one response read: a UDP answer without EDNS is at most 512;
 * a longer one (over TCP) is cut here and read as truncated. */
#define PK_DNS_MAX_RESPONSE 4096

typedef enum pk_dns_status {
  PK_DNS_OK = 0,
  PK_DNS_NO_SUCH_NAME,   /* NXDOMAIN (RCODE 3) */
  PK_DNS_NO_ADDRESS,     /* the name has no A or AAAA record */
  PK_DNS_SERVER_FAILURE, /* SERVFAIL (RCODE 2) */
  PK_DNS_REFUSED,        /* another error RCODE: REFUSED, NOTIMP, FORMERR */
  PK_DNS_NO_RESPONSE,    /* no nameserver answered within the timeout; with
                          * resolv.conf's servers also when each answered
                          * SERVFAIL, NOTIMP or REFUSED (res_nsend tries the
                          * next instead and reports none) */
  PK_DNS_MALFORMED,      /* a response that does not parse */
  PK_DNS_BAD_NAME,       /* a host that cannot be put in a query */
  PK_DNS_NO_RESOLVER,    /* the resolver did not initialise, or a bad nameserver */
} pk_dns_status;

typedef struct pk_dns_record {
  int family;       /* AF_INET or AF_INET6 */
  uint32_t ttl;     /* seconds */
  uint8_t addr[16]; /* network order; the first 4 bytes for AF_INET */
} pk_dns_record;

typedef struct pk_dns_answer {
  uint32_t count;
  /* The shortest TTL of every record of the answer sections read (CNAMEs
   * included: the chain expires with its shortest link); UINT32_MAX when
   * none was read. */
  uint32_t min_ttl;
  int rcode;        /* the last response's RCODE; -1 before one came */
  pk_dns_record records[PK_DNS_MAX_RECORDS];
} pk_dns_answer;

/* Empties `a` (count 0, min_ttl UINT32_MAX, rcode -1). */
void pk_dns_answer_init(pk_dns_answer *a);

/* Reads `msg`, a DNS response (RFC 1035 §4.1): appends the A and AAAA
 * records of class IN of its answer section to `a` (up to
 * PK_DNS_MAX_RECORDS in all) and lowers a->min_ttl. TTLs with the top bit
 * set count as 0 (RFC 2181 §8). A response with TC set may end inside a
 * record: what came whole is kept. Returns PK_DNS_OK when the response
 * carried an address, else why not (the RCODE's status, NO_ADDRESS, or
 * MALFORMED, in which case `a` keeps what was read before the fault). */
pk_dns_status pk_dns_parse_response(const uint8_t *msg, size_t len, pk_dns_answer *a);

/* Asks for `host`'s A, then AAAA records through the stub resolver: the
 * nameservers, timeout and attempts of /etc/resolv.conf, or, when
 * `nameserver` is not NULL, only the nameserver at `nameserver` (a
 * numeric IPv4 or IPv6 address) port `port`, whose error RCODE is
 * reported as such.
 * `timeout_s` (0: resolv.conf's) bounds each attempt.
 * Blocks. `a` is emptied first. PK_DNS_OK when either query gave an address
 * (a->records); otherwise the A query's status, or the AAAA query's when
 * the A query found only that the name has no A record. */
pk_dns_status pk_dns_lookup(const char *host, const char *nameserver, uint16_t port, uint32_t timeout_s,
                            pk_dns_answer *a);

/* Writes record i of `a` as numeric text (inet_ntop) to buf[cap] (46 bytes
 * hold any); 0, or -1 for an index out of range or a short buffer. */
int pk_dns_record_text(const pk_dns_answer *a, uint32_t i, char *buf, size_t cap);

/* A short phrase for `status` ("no such name (NXDOMAIN)"). */
const char *pk_dns_status_text(pk_dns_status status);

#ifdef __cplusplus
}
#endif

#endif
