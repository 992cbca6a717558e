/* A tiny assertion kit for the engine's C tests (ctests/c, `make check`). */
#ifndef PK_TEST_CHECK_H
#define PK_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

extern int pk_test_failures;

#define EXPECT(cond)                                                          \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);    \
      pk_test_failures++;                                                     \
    }                                                                         \
  } while (0)

#define EXPECT_EQ(a, b)                                                                     \
  do {                                                                                      \
    long long x_ = (long long)(a), y_ = (long long)(b);                                     \
    if (x_ != y_) {                                                                         \
      fprintf(stderr, "%s:%d: %s is %lld, expected %lld\n", __FILE__, __LINE__, #a, x_, y_); \
      pk_test_failures++;                                                                   \
    }                                                                                       \
  } while (0)

/* A loopback server: every connection gets `reply` (a thread per
 * connection; after each request head the reply is written; close_after
 * closes the connection after it). */
typedef struct test_server test_server;
typedef struct {
  const char *reply;
  size_t reply_len;
  int close_after;  /* close after the reply instead of keeping the connection */
  int reset;        /* send an RST instead of any reply */
  int silent;       /* read requests, answer nothing (until stopped) */
} test_reply;

test_server *test_server_start(test_reply reply);
unsigned short test_server_port(test_server *s);
/* Serves an already connected socket (e.g. a socketpair end) as if accepted;
 * the server owns it. 0, or -1 (closed) when it cannot take more. */
int test_server_adopt(test_server *s, int fd);
unsigned test_server_accepted(test_server *s);
void test_server_stop(test_server *s);

#endif
