/* The engine at the descriptor limit. A child process lowers RLIMIT_NOFILE
 * to 64 and sends 1,000 concurrent GETs to the loopback server, which runs
 * in the parent (its own descriptor table): requests whose socket() finds
 * EMFILE wait in their origin's queue for a connection or a descriptor, so
 * every one completes (or fails with PK_E_TOO_MANY_OPEN_FILES), and no
 * descriptor is left open after the engine is destroyed. Then, with the
 * limit at the descriptors already open (no socket possible, no connection
 * open), requests fail at once with that code and EMFILE; with the limit
 * back, the same engine works. ASan+UBSan, LeakSanitizer in the child. */
#include "CHTTPEngine.h"

#include "calls.h"
#include "check.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int pk_test_failures;

#define NREQ 1000

static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

typedef struct {
  call c;
  int sys_errno;
} outcome;

static void done_with_errno(void *ctx, int error, int sys_errno, const pk_timings *t) {
  ((outcome *)ctx)->sys_errno = sys_errno;
  on_done(ctx, error, sys_errno, t);
}

static int open_fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n - 1; /* the directory's own */
}

/* The lowest free descriptor: a limit at it leaves no room for another. */
static int lowest_free(void) {
  int fd = dup(0);
  if (fd >= 0) close(fd);
  return fd;
}

static void set_limit(rlim_t n) {
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = n;
  EXPECT_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

static pk_engine *engine(uint32_t loops) {
  pk_engine_config cfg;
  pk_engine_config_init(&cfg);
  cfg.io_backend = test_io_backend();
  cfg.loops = loops;
  cfg.callbacks.on_head = on_head;
  cfg.callbacks.on_body = on_body;
  cfg.callbacks.on_done = done_with_errno;
  pk_engine *e = NULL;
  EXPECT_EQ(pk_engine_create(&cfg, &e), 0);
  return e;
}

static int submit(pk_engine *e, unsigned short port, outcome *o) {
  init_call(&o->c);
  o->sys_errno = 0;
  pk_request_spec s;
  get_spec(&s, port, &o->c);
  s.total_timeout_ms = 0; /* only the limit decides how long a request waits */
  s.read_timeout_ms = 30000;
  pk_request_handle h;
  return pk_engine_submit(e, &s, &h);
}

/* 1,000 concurrent GETs under a limit of 64. */
static void many_under_the_limit(unsigned short port, uint32_t loops) {
  int before = open_fds();
  set_limit(64);
  pk_engine *e = engine(loops);
  outcome *o = calloc(NREQ, sizeof *o);
  for (int i = 0; i < NREQ; i++) EXPECT_EQ(submit(e, port, &o[i]), 0);
  int completed = 0, refused = 0;
  for (int i = 0; i < NREQ; i++) {
    int err = wait_call(&o[i].c);
    if (err == 0 && o[i].c.status == 200 && o[i].c.body == 5) {
      completed++;
    } else if (err == -PK_E_TOO_MANY_OPEN_FILES) {
      refused++;
    } else {
      fprintf(stderr, "request %d: error %d (%s), errno %d\n", i, err, pk_error_name(err), o[i].sys_errno);
      pk_test_failures++;
    }
    destroy_call(&o[i].c);
  }
  pk_engine_stats st;
  pk_engine_get_stats(e, &st);
  printf("test_fdlimit: %u loop(s), limit 64: %d of %d completed, %d too_many_open_files; %llu connections opened\n",
         loops, completed, NREQ, refused, (unsigned long long)st.connections_opened);
  EXPECT_EQ(completed + refused, NREQ);
  EXPECT(completed > NREQ / 2); /* connections stay open: the limit is never the answer for most */
  pk_engine_destroy(e);
  free(o);
  set_limit(1024);
  EXPECT_EQ(open_fds(), before);
}

/* No room for any socket and no connection open: the code of its own. */
static void no_room_at_all(unsigned short port) {
  pk_engine *e = engine(1);
  set_limit((rlim_t)lowest_free());
  outcome o[4];
  for (int i = 0; i < 4; i++) EXPECT_EQ(submit(e, port, &o[i]), 0);
  for (int i = 0; i < 4; i++) {
    EXPECT_EQ(wait_call(&o[i].c), -PK_E_TOO_MANY_OPEN_FILES);
    EXPECT_EQ(o[i].sys_errno, EMFILE);
    destroy_call(&o[i].c);
  }
  set_limit(1024);
  EXPECT_EQ(submit(e, port, &o[0]), 0);
  EXPECT_EQ(wait_call(&o[0].c), 0);
  EXPECT_EQ(o[0].c.status, 200);
  destroy_call(&o[0].c);
  pk_engine_destroy(e);
}

static int child(int port_pipe) {
  unsigned short port = 0;
  EXPECT_EQ(read(port_pipe, &port, sizeof port), (ssize_t)sizeof port);
  close(port_pipe);
  many_under_the_limit(port, 1);
  many_under_the_limit(port, 2);
  no_room_at_all(port);
  return pk_test_failures ? 1 : 0;
}

int main(void) {
  int p[2];
  if (pipe(p) != 0) return 1;
  pid_t pid = fork();
  if (pid == 0) {
    close(p[1]);
    exit(child(p[0]));
  }
  close(p[0]);
  test_server *s = test_server_start((test_reply){ok, sizeof ok - 1, 0, 0, 0});
  unsigned short port = test_server_port(s);
  EXPECT_EQ(write(p[1], &port, sizeof port), (ssize_t)sizeof port);
  close(p[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  test_server_stop(s);
  if (pk_test_failures) {
    fprintf(stderr, "test_fdlimit: %d failures\n", pk_test_failures);
    return 1;
  }
  printf("test_fdlimit: ok\n");
  return 0;
}
