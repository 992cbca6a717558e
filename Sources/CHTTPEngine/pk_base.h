/* What every engine file may use (prefix pk__): the allocation wrapper, the
 * clock and intrusive lists. Depends on nothing but the error table, so the
 * leaves (pk_dns.c, pk_tls.c, the parser, the inflater) can include it
 * without seeing a loop, a connection or a request. */
#ifndef PK_BASE_H
#define PK_BASE_H

#include "pk_errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PK_CONTAINER_OF(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#define PK_UNUSED(x) ((void)(x))

/* pk_error.c: every allocation goes through these, so tests count them (the
 * warm keep-alive path must make none) and inject failures. */
void *pk__malloc(size_t n);
void *pk__calloc(size_t count, size_t n);
void *pk__realloc(void *p, size_t n);
void pk__free(void *p);

uint64_t pk__now_ns(void); /* CLOCK_MONOTONIC */

/* pk_h1_parse.c: 1 for a tchar (RFC 9110 §5.6.2: "!#$%&'*+-.^_`|~", DIGIT,
 * ALPHA), else 0. The parser and the request writer both read it. */
extern const uint8_t pk__tchar[256];

/* ------------------------------------------------------- intrusive lists */

typedef struct pk__link {
  struct pk__link *prev, *next;
} pk__link;

static inline void pk__list_init(pk__link *head) { head->prev = head->next = head; }
static inline bool pk__list_empty(const pk__link *head) { return head->next == head; }
static inline bool pk__linked(const pk__link *l) { return l->next != NULL; }
static inline void pk__list_push_back(pk__link *head, pk__link *l) {
  l->prev = head->prev;
  l->next = head;
  head->prev->next = l;
  head->prev = l;
}
static inline void pk__list_push_front(pk__link *head, pk__link *l) {
  l->next = head->next;
  l->prev = head;
  head->next->prev = l;
  head->next = l;
}
static inline void pk__list_remove(pk__link *l) {
  l->prev->next = l->next;
  l->next->prev = l->prev;
  l->prev = l->next = NULL;
}

#endif
