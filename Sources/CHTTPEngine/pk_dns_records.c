/* A host's A and AAAA records with their TTLs, asked of the stub resolver.
 *
 * getaddrinfo answers from /etc/hosts, nsswitch and DNS alike but drops the
 * TTL, so a caller that wants to re-resolve when the records expire asks
 * DNS itself: res_nmkquery builds the question, res_nsend sends it to the
 * nameservers of /etc/resolv.conf (retries, UDP then TCP on truncation) and
 * returns the response whatever its RCODE, and the answer section is read
 * here (RFC 1035 §4.1), which keeps one small parser under our own checks
 * and fuzzing instead of ns_initparse's.
 *
 * A leaf: the resolver state lives on the caller's stack for one lookup
 * (res_ninit/res_nclose), so any thread may call; nothing here knows a
 * connection or the engine. */
#include "pk_dns_records.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <resolv.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

enum { HEADER_LEN = 12, TYPE_A = 1, TYPE_AAAA = 28, CLASS_IN = 1, NAME_MAX_LEN = 255 };

void pk_dns_answer_init(pk_dns_answer *a) {
  a->count = 0;
  a->min_ttl = UINT32_MAX;
  a->rcode = -1;
}

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Skips the (possibly compressed) name at msg[*at]. A pointer ends a name
 * (RFC 1035 §4.1.4), so nothing is followed and no loop can form; only the
 * length is bounded. 0, or -1 when the name runs past len, uses a reserved
 * label type, or is longer than 255 bytes. */
static int skip_name(const uint8_t *msg, size_t len, size_t *at) {
  size_t p = *at, total = 0;
  for (;;) {
    if (p >= len) return -1;
    uint8_t b = msg[p];
    if (b == 0) {
      *at = p + 1;
      return 0;
    }
    if ((b & 0xC0) == 0xC0) {
      if (p + 2 > len) return -1;
      *at = p + 2;
      return 0;
    }
    if (b & 0xC0) return -1; /* 0x40 and 0x80: extended or reserved label types */
    total += (size_t)b + 1;
    if (total > NAME_MAX_LEN) return -1;
    p += (size_t)b + 1;
  }
}

static pk_dns_status rcode_status(int rcode) {
  switch (rcode) {
  case 0: return PK_DNS_OK;
  case 2: return PK_DNS_SERVER_FAILURE;
  case 3: return PK_DNS_NO_SUCH_NAME;
  default: return PK_DNS_REFUSED;
  }
}

pk_dns_status pk_dns_parse_response(const uint8_t *msg, size_t len, pk_dns_answer *a) {
  if (len < HEADER_LEN) return PK_DNS_MALFORMED;
  uint16_t flags = get16(msg + 2);
  if (!(flags & 0x8000)) return PK_DNS_MALFORMED; /* QR: a query, not a response */
  bool truncated = flags & 0x0200;
  a->rcode = flags & 0x000F;
  pk_dns_status status = rcode_status(a->rcode);
  if (status != PK_DNS_OK) return status;
  uint16_t questions = get16(msg + 4), answers = get16(msg + 6);
  size_t at = HEADER_LEN;
  for (uint16_t i = 0; i < questions; i++) {
    if (skip_name(msg, len, &at) != 0 || at + 4 > len) return truncated ? PK_DNS_NO_ADDRESS : PK_DNS_MALFORMED;
    at += 4;
  }
  bool found = false;
  for (uint16_t i = 0; i < answers; i++) {
    /* A record cut by truncation ends the answer; before it all is kept. */
    if (skip_name(msg, len, &at) != 0 || at + 10 > len) {
      if (truncated) break;
      return PK_DNS_MALFORMED;
    }
    uint16_t type = get16(msg + at), class = get16(msg + at + 2), rdlen = get16(msg + at + 8);
    uint32_t ttl = get32(msg + at + 4);
    if (ttl & 0x80000000u) ttl = 0;
    at += 10;
    if (rdlen > len - at) {
      if (truncated) break;
      return PK_DNS_MALFORMED;
    }
    const uint8_t *rdata = msg + at;
    at += rdlen;
    if (class != CLASS_IN) continue;
    if (ttl < a->min_ttl) a->min_ttl = ttl;
    int family;
    if (type == TYPE_A) {
      if (rdlen != 4) return PK_DNS_MALFORMED;
      family = AF_INET;
    } else if (type == TYPE_AAAA) {
      if (rdlen != 16) return PK_DNS_MALFORMED;
      family = AF_INET6;
    } else {
      continue;
    }
    found = true;
    if (a->count == PK_DNS_MAX_RECORDS) continue;
    pk_dns_record *r = &a->records[a->count++];
    r->family = family;
    r->ttl = ttl;
    memset(r->addr, 0, sizeof r->addr);
    memcpy(r->addr, rdata, rdlen);
  }
  return found ? PK_DNS_OK : PK_DNS_NO_ADDRESS;
}

/* One query of `type` through `state`: the response's status, read into a. */
static pk_dns_status query(res_state state, const char *host, int type, pk_dns_answer *a) {
  uint8_t question[NS_PACKETSZ], response[PK_DNS_MAX_RESPONSE];
  int qlen = res_nmkquery(state, ns_o_query, host, ns_c_in, type, NULL, 0, NULL, question, sizeof question);
  if (qlen < 0) return PK_DNS_BAD_NAME;
  int rlen = res_nsend(state, question, qlen, response, sizeof response);
  if (rlen < 0) return PK_DNS_NO_RESPONSE;
  /* res_nsend reports the whole length of a longer answer it cut. */
  return pk_dns_parse_response(response, (size_t)rlen < sizeof response ? (size_t)rlen : sizeof response, a);
}

/* An IPv6 nameserver does not fit nsaddr_list (struct sockaddr_in). glibc
 * keeps such servers in _u._ext.nsaddrs, allocated, and res_nsend takes
 * slot n from there when nsaddr_list[n] has no family (its get_nsaddr);
 * res_nclose frees the slot. Whatever res_ninit put there (resolv.conf's
 * own IPv6 server) is freed first. False without glibc, or out of memory. */
static bool use_ipv6_server(struct __res_state *state, const struct in6_addr *addr, uint16_t port) {
#ifdef __GLIBC__
  struct sockaddr_in6 *sin6 = malloc(sizeof *sin6);
  if (!sin6) return false;
  *sin6 = (struct sockaddr_in6){.sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = *addr};
  free(state->_u._ext.nsaddrs[0]);
  state->_u._ext.nsaddrs[0] = sin6;
  state->nsaddr_list[0].sin_family = 0;
  return true;
#else
  (void)state, (void)addr, (void)port;
  return false;
#endif
}

/* Slot 0 alone: resolv.conf's other IPv6 servers, allocated by res_ninit
 * in _u._ext.nsaddrs, are freed here, since res_nclose frees only the
 * slots below nscount. */
static void keep_first_server(struct __res_state *state) {
#ifdef __GLIBC__
  for (int i = 1; i < MAXNS; i++) {
    free(state->_u._ext.nsaddrs[i]);
    state->_u._ext.nsaddrs[i] = NULL;
  }
#endif
  state->nscount = 1;
}

pk_dns_status pk_dns_lookup(const char *host, const char *nameserver, uint16_t port, uint32_t timeout_s,
                            pk_dns_answer *a) {
  pk_dns_answer_init(a);
  if (host == NULL || host[0] == '\0' || strlen(host) > NAME_MAX_LEN - 2) return PK_DNS_BAD_NAME;
  struct __res_state state;
  memset(&state, 0, sizeof state);
  if (res_ninit(&state) != 0) return PK_DNS_NO_RESOLVER;
  pk_dns_status result;
  if (nameserver) {
    /* The one server asked: res_nsend takes a changed nsaddr_list as the
     * list to use (resolv.h's documented way to choose servers). */
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
    struct in6_addr v6;
    if (inet_pton(AF_INET, nameserver, &sin.sin_addr) == 1) {
      state.nsaddr_list[0] = sin;
    } else if (inet_pton(AF_INET6, nameserver, &v6) != 1 || !use_ipv6_server(&state, &v6, port)) {
      result = PK_DNS_NO_RESOLVER;
      goto done;
    }
    keep_first_server(&state);
    /* res_nsend hides a SERVFAIL, NOTIMP or REFUSED answer to try the next
     * server, and with none left reports only that none answered; a print
     * flag set makes it hand such an answer back (as it does for dig), so
     * the one server's RCODE is what the caller hears. With resolv.conf's
     * servers the failover is worth more, and the flag stays off. */
    state.pfcode = RES_PRF_REPLY;
  }
  if (timeout_s > 0) state.retrans = (int)(timeout_s < 30 ? timeout_s : 30);
  pk_dns_status v4 = query(&state, host, ns_t_a, a);
  pk_dns_status v6 = query(&state, host, ns_t_aaaa, a);
  if (v4 == PK_DNS_OK || v6 == PK_DNS_OK)
    result = PK_DNS_OK;
  else
    result = v4 == PK_DNS_NO_ADDRESS ? v6 : v4;
done:
  res_nclose(&state);
  return result;
}

int pk_dns_record_text(const pk_dns_answer *a, uint32_t i, char *buf, size_t cap) {
  if (i >= a->count || i >= PK_DNS_MAX_RECORDS) return -1;
  const pk_dns_record *r = &a->records[i];
  return inet_ntop(r->family, r->addr, buf, (socklen_t)cap) ? 0 : -1;
}

const char *pk_dns_status_text(pk_dns_status status) {
  switch (status) {
  case PK_DNS_OK: return "ok";
  case PK_DNS_NO_SUCH_NAME: return "no such name (NXDOMAIN)";
  case PK_DNS_NO_ADDRESS: return "the name has no A or AAAA record";
  case PK_DNS_SERVER_FAILURE: return "the nameserver failed (SERVFAIL)";
  case PK_DNS_REFUSED: return "the nameserver refused the query";
  case PK_DNS_NO_RESPONSE: return "no nameserver answered (each timed out, failed or refused the query)";
  case PK_DNS_MALFORMED: return "the nameserver's response does not parse";
  case PK_DNS_BAD_NAME: return "the host is not a valid DNS name";
  case PK_DNS_NO_RESOLVER: return "the resolver could not start (resolv.conf or the nameserver given)";
  }
  return "unknown";
}
