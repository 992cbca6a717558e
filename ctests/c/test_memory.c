/* Memory only while busy: connections idle in the pool hold no read or
 * write buffer; the buffers are back on the loop's free list, and the next
 * requests take them from there (no allocation per connection). Checked on the loop
 * thread (pk_engine_post) against the engine's own structures. ASan+UBSan,
 * LeakSanitizer at exit. */
#include "pk_conn.h"

#include "calls.h"
#include "check.h"

#include <unistd.h>

int pk_test_failures;

#define N 32

static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

typedef struct {
  pk_engine *eng;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int done;
  uint32_t idle, holding, served, free_bufs;
} probe;

/* On the loop thread: every idle connection, and the free list. */
static void inspect(void *ctx, void *arg) {
  (void)ctx;
  probe *p = arg;
  pk__loop *loop = &p->eng->loops[0];
  p->idle = p->holding = p->served = 0;
  for (int b = 0; b < PK_ORIGIN_BUCKETS; b++)
    for (pk__origin *o = loop->origins[b]; o; o = o->next)
      for (pk__link *l = o->pool.idle.next; l != &o->pool.idle; l = l->next) {
        pk__conn *c = PK_CONTAINER_OF(l, pk__conn, pool.link);
        p->idle++;
        if (c->rbuf || c->rcap || c->state != PK_CONN_IDLE) p->holding++;
        if (c->requests) p->served++;
      }
  /* Both sizes an exchange's read buffer can have (it moves to the larger
   * one when a read fills the small one). */
  p->free_bufs = loop->small_bufs.len + loop->rbufs.len;
  pthread_mutex_lock(&p->lock);
  p->done = 1;
  pthread_cond_signal(&p->cond);
  pthread_mutex_unlock(&p->lock);
}

static void look(probe *p) {
  p->done = 0;
  EXPECT_EQ(pk_engine_post(p->eng, 0, inspect, p), 0);
  pthread_mutex_lock(&p->lock);
  while (!p->done) pthread_cond_wait(&p->cond, &p->lock);
  pthread_mutex_unlock(&p->lock);
}

/* N requests at once: N connections, each with a buffer while busy. */
static void burst(pk_engine *e, unsigned short port) {
  call c[N];
  for (int i = 0; i < N; i++) {
    init_call(&c[i]);
    pk_request_spec s;
    get_spec(&s, port, &c[i]);
    pk_request_handle h;
    EXPECT_EQ(pk_engine_submit(e, &s, &h), 0);
  }
  for (int i = 0; i < N; i++) {
    EXPECT_EQ(wait_call(&c[i]), 0);
    destroy_call(&c[i]);
  }
}

int main(void) {
  test_server *srv = test_server_start((test_reply){ok, sizeof ok - 1, 0, 0, 0});
  pk_engine_config cfg;
  pk_engine_config_init(&cfg);
  cfg.io_backend = test_io_backend();
  cfg.callbacks.on_head = on_head;
  cfg.callbacks.on_body = on_body;
  cfg.callbacks.on_done = on_done;
  probe p = {0};
  pthread_mutex_init(&p.lock, NULL);
  pthread_cond_init(&p.cond, NULL);
  EXPECT_EQ(pk_engine_create(&cfg, &p.eng), 0);

  burst(p.eng, test_server_port(srv));
  pk_engine_stats st;
  pk_engine_get_stats(p.eng, &st);
  EXPECT(st.connections_opened > 1);
  look(&p);
  printf("test_memory: %u connections idle (%u served a request), %u holding a buffer, %u buffers on the free list\n",
         p.idle, p.served, p.holding, p.free_bufs);
  EXPECT_EQ(p.idle, st.connections_opened);
  EXPECT_EQ(p.holding, 0);
  /* The buffers are back on the free list. There can be fewer than the
   * connections that served a request: on a loaded machine a connection
   * that finished connecting after another went idle took the buffer that
   * one gave back, so two connections served with one buffer. That the
   * list holds every buffer the burst made is the second burst's check
   * (it takes them from there), and LeakSanitizer's at exit. */
  EXPECT(p.served > 0);
  EXPECT(p.free_bufs > 0);

  /* The same burst again: its buffers come from the free list. */
  uint64_t allocs = pk_alloc_count();
  burst(p.eng, test_server_port(srv));
  look(&p);
  EXPECT_EQ(p.holding, 0);
  pk_engine_get_stats(p.eng, &st);
  EXPECT_EQ(st.connections_opened, p.idle); /* all reused */
  allocs = pk_alloc_count() - allocs;
  printf("test_memory: the second burst made %llu allocations\n", (unsigned long long)allocs);
  EXPECT(allocs < N);

  pk_engine_destroy(p.eng);
  test_server_stop(srv);
  pthread_mutex_destroy(&p.lock);
  pthread_cond_destroy(&p.cond);
  if (pk_test_failures) {
    fprintf(stderr, "test_memory: %d failures\n", pk_test_failures);
    return 1;
  }
  printf("test_memory: ok\n");
  return 0;
}
