/* The loop's read buffers (pk_loop.c) driven directly, without sockets:
 * each size has its own free list, given back buffers are handed out again
 * last-in first-out without an allocation, the PK_RBUF_SIZE list keeps at
 * most PK_RBUF_KEEP, one PK_BIGBUF_SIZE buffer is kept, other sizes are
 * freed, and a failed allocation is NULL, never a crash.
 * ASan+UBSan, LeakSanitizer at exit (every buffer is freed exactly once). */
#include "pk_internal.h"
#include "pk_test_hooks.h"

#include "check.h"

#include <string.h>

int pk_test_failures;

enum { MANY = 200 };

static void small_buffers_come_back(void) {
  pk__loop loop;
  memset(&loop, 0, sizeof loop);
  char *b[MANY];
  for (int i = 0; i < MANY; i++) {
    b[i] = pk__rbuf_get(&loop, PK_RBUF_SMALL);
    EXPECT(b[i] != NULL);
    memset(b[i], 'x', PK_RBUF_SMALL); /* ASan: the whole size is there */
  }
  for (int i = 0; i < MANY; i++) pk__rbuf_put(&loop, b[i], PK_RBUF_SMALL);
  EXPECT_EQ(loop.small_bufs.len, MANY); /* all kept: the loop's working set */
  EXPECT_EQ(loop.rbufs.len, 0);
  uint64_t allocs = pk_alloc_count();
  for (int i = MANY - 1; i >= 0; i--) EXPECT(pk__rbuf_get(&loop, PK_RBUF_SMALL) == b[i]); /* last in, first out */
  EXPECT_EQ(pk_alloc_count() - allocs, 0);
  EXPECT_EQ(loop.small_bufs.len, 0);
  for (int i = 0; i < MANY; i++) pk__rbuf_put(&loop, b[i], PK_RBUF_SMALL);
  pk__rbufs_free(&loop);
  EXPECT_EQ(loop.small_bufs.len, 0);
  EXPECT(loop.small_bufs.items == NULL);
}

static void sizes_do_not_mix(void) {
  pk__loop loop;
  memset(&loop, 0, sizeof loop);
  char *s = pk__rbuf_get(&loop, PK_RBUF_SMALL);
  char *m = pk__rbuf_get(&loop, PK_RBUF_SIZE);
  pk__rbuf_put(&loop, s, PK_RBUF_SMALL);
  pk__rbuf_put(&loop, m, PK_RBUF_SIZE);
  EXPECT_EQ(loop.small_bufs.len, 1);
  EXPECT_EQ(loop.rbufs.len, 1);
  char *m2 = pk__rbuf_get(&loop, PK_RBUF_SIZE);
  EXPECT(m2 == m);
  memset(m2, 'x', PK_RBUF_SIZE);
  char *s2 = pk__rbuf_get(&loop, PK_RBUF_SMALL);
  EXPECT(s2 == s);
  pk__rbuf_put(&loop, s2, PK_RBUF_SMALL);
  pk__rbuf_put(&loop, m2, PK_RBUF_SIZE);
  pk__rbufs_free(&loop);
}

static void full_size_list_is_bounded(void) {
  pk__loop loop;
  memset(&loop, 0, sizeof loop);
  char *b[PK_RBUF_KEEP + 10];
  for (int i = 0; i < PK_RBUF_KEEP + 10; i++) b[i] = pk__rbuf_get(&loop, PK_RBUF_SIZE);
  for (int i = 0; i < PK_RBUF_KEEP + 10; i++) pk__rbuf_put(&loop, b[i], PK_RBUF_SIZE); /* 10 freed */
  EXPECT_EQ(loop.rbufs.len, PK_RBUF_KEEP);
  pk__rbufs_free(&loop);
  EXPECT_EQ(loop.rbufs.len, 0);
}

static void one_big_buffer_is_kept(void) {
  pk__loop loop;
  memset(&loop, 0, sizeof loop);
  char *a = pk__rbuf_get(&loop, PK_BIGBUF_SIZE);
  char *b = pk__rbuf_get(&loop, PK_BIGBUF_SIZE);
  EXPECT(a && b && a != b);
  pk__rbuf_put(&loop, a, PK_BIGBUF_SIZE);
  pk__rbuf_put(&loop, b, PK_BIGBUF_SIZE); /* freed: one is kept */
  EXPECT(loop.bigbuf == a);
  EXPECT(pk__rbuf_get(&loop, PK_BIGBUF_SIZE) == a);
  EXPECT(loop.bigbuf == NULL);
  pk__rbuf_put(&loop, a, PK_BIGBUF_SIZE);
  /* A head grown past PK_RBUF_SIZE: its size has no list, it is freed. */
  char *odd = pk__rbuf_get(&loop, 2 * PK_RBUF_SIZE);
  memset(odd, 'x', 2 * PK_RBUF_SIZE);
  pk__rbuf_put(&loop, odd, 2 * PK_RBUF_SIZE);
  EXPECT_EQ(loop.small_bufs.len + loop.rbufs.len, 0);
  pk__rbuf_put(&loop, NULL, PK_RBUF_SMALL); /* allowed, nothing kept */
  EXPECT_EQ(loop.small_bufs.len, 0);
  pk__rbufs_free(&loop);
  EXPECT(loop.bigbuf == NULL);
}

static void out_of_memory(void) {
  pk__loop loop;
  memset(&loop, 0, sizeof loop);
  pk_alloc_fail_after(1); /* the next allocation fails */
  EXPECT(pk__rbuf_get(&loop, PK_RBUF_SMALL) == NULL);
  pk_alloc_fail_after(0);
  /* The list cannot grow: the buffer given back is freed, not lost. */
  char *b = pk__rbuf_get(&loop, PK_RBUF_SMALL);
  EXPECT(b != NULL);
  pk_alloc_fail_after(1);
  pk__rbuf_put(&loop, b, PK_RBUF_SMALL);
  pk_alloc_fail_after(0);
  EXPECT_EQ(loop.small_bufs.len, 0);
  pk__rbufs_free(&loop);
}

int main(void) {
  small_buffers_come_back();
  sizes_do_not_mix();
  full_size_list_is_bounded();
  one_big_buffer_is_kept();
  out_of_memory();
  if (pk_test_failures) {
    fprintf(stderr, "test_rbufs: %d failures\n", pk_test_failures);
    return 1;
  }
  printf("test_rbufs: ok\n");
  return 0;
}
