/* The loop's timer heap (pk_loop.c) driven directly: thousands of timers
 * armed, re-armed earlier and later, cancelled from the middle, then run.
 * Every timer still armed fires exactly once, in deadline order, and none
 * that was cancelled fires. ASan+UBSan, LeakSanitizer at exit. */
#include "pk_internal.h"

#include "check.h"

#include <stdlib.h>
#include <string.h>

int pk_test_failures;

enum { N = 5000 };

static pk__timer timers[N];
static int fired[N];
static uint64_t last_fired;
static int out_of_order;

static void on_fire(pk__loop *loop, pk__timer *t) {
  if (t->deadline < last_fired) out_of_order++;
  last_fired = t->deadline;
  fired[t - timers]++;
  EXPECT(t->heap_index == PK_TIMER_IDLE); /* disarmed before it fires */
  PK_UNUSED(loop);
}

/* xorshift: the same sequence on every run */
static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void) {
  rnd_state ^= rnd_state << 13;
  rnd_state ^= rnd_state >> 7;
  rnd_state ^= rnd_state << 17;
  return rnd_state;
}

static void check_heap(const pk__heap *h) {
  for (uint32_t i = 0; i < h->len; i++) {
    EXPECT(h->items[i].timer->heap_index == i);
    EXPECT(h->items[i].deadline == h->items[i].timer->deadline);
    if (i > 0) EXPECT(h->items[(i - 1) / 2].deadline <= h->items[i].deadline);
  }
}

int main(void) {
  pk__loop *loop = calloc(1, sizeof *loop);
  int armed[N] = {0};
  for (int i = 0; i < N; i++) {
    timers[i].heap_index = PK_TIMER_IDLE;
    timers[i].fire = on_fire;
    pk__timer_arm(loop, &timers[i], 1000 + rnd() % 100000);
    armed[i] = 1;
  }
  check_heap(&loop->timers);
  EXPECT_EQ(loop->timers.len, N);
  for (int round = 0; round < 4 * N; round++) {
    int i = (int)(rnd() % N);
    switch (rnd() % 3) {
    case 0: /* cancel (a no-op when not armed) */
      pk__timer_cancel(loop, &timers[i]);
      armed[i] = 0;
      break;
    case 1: /* earlier or later, armed or not */
      pk__timer_arm(loop, &timers[i], 1000 + rnd() % 100000);
      armed[i] = 1;
      break;
    default: /* a deadline equal to another's */
      pk__timer_arm(loop, &timers[i], timers[(i + 1) % N].deadline);
      armed[i] = 1;
      break;
    }
  }
  check_heap(&loop->timers);
  int expected = 0;
  for (int i = 0; i < N; i++) expected += armed[i];
  EXPECT_EQ(loop->timers.len, expected);
  EXPECT_EQ(pk__loop_next_deadline(loop), loop->timers.items[0].deadline);

  /* Half the time span first: only the timers due by then fire. */
  loop->now = 1000 + 50000;
  pk__loop_run_timers(loop);
  for (int i = 0; i < N; i++)
    if (fired[i]) EXPECT(timers[i].deadline <= loop->now);
  check_heap(&loop->timers);
  loop->now = UINT64_MAX - 1;
  pk__loop_run_timers(loop);
  EXPECT_EQ(loop->timers.len, 0);
  EXPECT_EQ(out_of_order, 0);
  for (int i = 0; i < N; i++) EXPECT_EQ(fired[i], armed[i]);
  EXPECT_EQ(pk__loop_next_deadline(loop), UINT64_MAX);

  pk__free(loop->timers.items);
  free(loop);
  if (pk_test_failures) {
    fprintf(stderr, "%d failure(s)\n", pk_test_failures);
    return 1;
  }
  puts("test_timers: ok");
  return 0;
}
