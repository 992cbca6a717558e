/* A request's state table and its retry-once rule (pk_request.c), without
 * sockets. Every pair of states: the table says legal or not as the
 * request's life below has it, and pk__req_set_state (built with
 * PK_STATE_CHECKS) accepts each legal change and aborts on each illegal one
 * (in a child process). Then pk__req_retry on a stale pooled connection:
 * once, only when nothing of the response came, only for a request that
 * may be sent twice. ASan+UBSan. */
#include "pk_request.h"

#include "check.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int pk_test_failures;

/* The request's life, as docs/ENGINE.md tells it: submitted (queued), then
 * waiting in an origin's queue, connecting or active on a pooled
 * connection; done; recycled (free). A connection that finds the
 * descriptor limit sends its request back to the queue. A retry goes from active back to
 * queued; a keep-alive connection's next exchange is active again; a
 * submission that raced a shutdown is freed from queued. */
static bool expected(int from, int to) {
  switch (from) {
  case PK_REQ_FREE: return to == PK_REQ_QUEUED || to == PK_REQ_FREE;
  case PK_REQ_QUEUED: return to != PK_REQ_QUEUED;
  case PK_REQ_WAITING: return to == PK_REQ_CONNECTING || to == PK_REQ_ACTIVE || to == PK_REQ_DONE;
  case PK_REQ_CONNECTING: return to == PK_REQ_ACTIVE || to == PK_REQ_WAITING || to == PK_REQ_DONE;
  case PK_REQ_ACTIVE: return to == PK_REQ_ACTIVE || to == PK_REQ_QUEUED || to == PK_REQ_DONE;
  case PK_REQ_DONE: return to == PK_REQ_FREE;
  }
  return false;
}

/* pk__req_set_state in a child: 0 when it returned, else the signal. */
static int change_in_child(int from, int to) {
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGABRT, SIG_DFL);
    int null = open("/dev/null", O_WRONLY); /* the abort's message is expected */
    if (null >= 0) dup2(null, 2);
    static pk__req req;
    req.state = (uint8_t)from;
    pk__req_set_state(&req, (enum pk__req_state)to);
    _exit(req.state == to ? 0 : 3);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_state_table(void) {
  int legal = 0, illegal = 0;
  for (int from = 0; from < PK__REQ_STATES; from++)
    for (int to = 0; to < PK__REQ_STATES; to++) {
      bool want = expected(from, to);
      if (pk__req_state_legal((unsigned)from, (unsigned)to) != want)
        fprintf(stderr, "table: %s -> %s should be %s\n", pk__req_state_names[from], pk__req_state_names[to],
                want ? "legal" : "illegal");
      EXPECT_EQ(pk__req_state_legal((unsigned)from, (unsigned)to), want);
      int r = change_in_child(from, to);
      if (want) {
        EXPECT_EQ(r, 0);
        legal++;
      } else {
        EXPECT_EQ(r, SIGABRT);
        illegal++;
      }
    }
  EXPECT_EQ(legal, 17);
  EXPECT_EQ(illegal, 19);
  EXPECT(!pk__req_state_legal(PK__REQ_STATES, PK_REQ_FREE));
  EXPECT(!pk__req_state_legal(PK_REQ_FREE, PK__REQ_STATES));
}

/* A request that ran on a reused connection which the server had closed. */
static void stale(pk__req *req) {
  memset(req, 0, sizeof *req);
  req->state = PK_REQ_ACTIVE;
  req->conn_reused = 1;
  req->timings.reused = 1;
  req->idempotent = 1;
  req->timings.bytes_sent = 80;
}

static bool retry(pk__loop *loop, pk__req *req, pk_error err) {
  int sys = 0;
  return pk__req_retry(loop, req, &err, &sys);
}

static void test_retry_once(void) {
  static pk__loop loop; /* only its statistics are touched */
  pk__req req;
  stale(&req);
  EXPECT(retry(&loop, &req, PK_E_CLOSED_BEFORE_RESPONSE));
  EXPECT_EQ(req.state, PK_REQ_QUEUED);
  EXPECT_EQ(req.retried, 1);
  EXPECT_EQ(req.conn_reused, 0);
  EXPECT_EQ(req.timings.reused, 0);
  EXPECT_EQ(req.timings.bytes_sent, 0);
  EXPECT_EQ(loop.st_retried, 1);
  /* Once: the retry's own connection was reused and failed the same way. */
  req.state = PK_REQ_ACTIVE;
  req.conn_reused = 1;
  EXPECT(!retry(&loop, &req, PK_E_CLOSED_BEFORE_RESPONSE));
  /* Each retryable error, and the ones that are not. */
  pk_error yes[] = {PK_E_CONN_RESET, PK_E_CLOSED_BEFORE_RESPONSE, PK_E_WRITE, PK_E_READ};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
    stale(&req);
    EXPECT(retry(&loop, &req, yes[i]));
  }
  pk_error no[] = {PK_E_READ_TIMEOUT, PK_E_TRUNCATED_BODY, PK_E_CANCELLED, PK_E_CONNECT_REFUSED};
  for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
    stale(&req);
    EXPECT(!retry(&loop, &req, no[i]));
  }
  /* A new connection, bytes of the response, a request not to send twice. */
  stale(&req);
  req.conn_reused = 0;
  EXPECT(!retry(&loop, &req, PK_E_CONN_RESET));
  stale(&req);
  req.timings.bytes_received = 1;
  EXPECT(!retry(&loop, &req, PK_E_CONN_RESET));
  stale(&req);
  req.idempotent = 0;
  EXPECT(!retry(&loop, &req, PK_E_CONN_RESET));
  EXPECT_EQ(req.state, PK_REQ_ACTIVE);
  /* A one-shot body: not sent again, and the timings say why. */
  stale(&req);
  req.one_shot = 1;
  EXPECT(!retry(&loop, &req, PK_E_CONN_RESET));
  EXPECT_EQ(req.timings.retry_refused, 1);
  /* A body write failed, then no response came: the write is the story. */
  stale(&req);
  req.idempotent = 0;
  req.write_error = PK_E_WRITE;
  req.write_errno = 32;
  pk_error err = PK_E_CLOSED_BEFORE_RESPONSE;
  int sys = 0;
  EXPECT(!pk__req_retry(&loop, &req, &err, &sys));
  EXPECT_EQ(err, PK_E_WRITE);
  EXPECT_EQ(sys, 32);
}

int main(void) {
  test_state_table();
  test_retry_once();
  if (pk_test_failures) {
    fprintf(stderr, "test_request: %d failures\n", pk_test_failures);
    return 1;
  }
  printf("test_request: ok\n");
  return 0;
}
