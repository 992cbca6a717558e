/* The loopback server of the C tests: blocking sockets, a thread per connection. */
#include "check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CONNS 1024

struct test_server {
  int lfd;
  unsigned short port;
  test_reply reply;
  pthread_t acceptor;
  pthread_mutex_t lock;
  pthread_t threads[MAX_CONNS];
  int fds[MAX_CONNS];
  int n;
  _Atomic int stopping;
  _Atomic unsigned accepted;
};

typedef struct {
  test_server *s;
  int fd, slot;
} conn_arg;

/* Every connection thread closes its own socket; stop only shuts live ones down. */
static void *finish(test_server *s, int slot, int fd) {
  pthread_mutex_lock(&s->lock);
  s->fds[slot] = -1;
  close(fd);
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

static void *serve(void *p) {
  conn_arg a = *(conn_arg *)p;
  free(p);
  test_server *s = a.s;
  char buf[8192];
  size_t have = 0;
  for (;;) {
    ssize_t n = recv(a.fd, buf + have, sizeof buf - have, 0);
    if (n <= 0) break;
    have += (size_t)n;
    char *end;
    while ((end = memmem(buf, have, "\r\n\r\n", 4))) {
      size_t used = (size_t)(end + 4 - buf);
      memmove(buf, buf + used, have - used);
      have -= used;
      if (s->reply.silent) continue;
      if (s->reply.reset) {
        struct linger l = {1, 0};
        setsockopt(a.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        return finish(s, a.slot, a.fd); /* close with linger 0: RST */
      }
      if (send(a.fd, s->reply.reply, s->reply.reply_len, MSG_NOSIGNAL) < 0)
        return finish(s, a.slot, a.fd);
      if (s->reply.close_after) return finish(s, a.slot, a.fd);
    }
    if (have == sizeof buf) have = 0;
  }
  return finish(s, a.slot, a.fd);
}

int test_server_adopt(test_server *s, int fd) {
  atomic_fetch_add(&s->accepted, 1);
  pthread_mutex_lock(&s->lock);
  if (s->n == MAX_CONNS) {
    pthread_mutex_unlock(&s->lock);
    close(fd);
    return -1;
  }
  conn_arg *a = malloc(sizeof *a);
  a->s = s;
  a->fd = fd;
  a->slot = s->n;
  s->fds[s->n] = fd;
  int rc = pthread_create(&s->threads[s->n], NULL, serve, a);
  if (rc == 0) {
    s->n++;
  } else {
    free(a);
    close(fd);
  }
  pthread_mutex_unlock(&s->lock);
  return rc == 0 ? 0 : -1;
}

static void *accept_loop(void *p) {
  test_server *s = p;
  for (;;) {
    int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (atomic_load(&s->stopping)) {
      if (fd >= 0) close(fd);
      return NULL;
    }
    if (fd >= 0) test_server_adopt(s, fd);
    else if (errno == EMFILE || errno == ENFILE) usleep(1000); /* at the descriptor limit: not a spin */
  }
}

test_server *test_server_start(test_reply reply) {
  test_server *s = calloc(1, sizeof *s);
  s->reply = reply;
  pthread_mutex_init(&s->lock, NULL);
  s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (bind(s->lfd, (struct sockaddr *)&a, sizeof a) || listen(s->lfd, 512)) {
    perror("test server");
    exit(1);
  }
  socklen_t al = sizeof a;
  getsockname(s->lfd, (struct sockaddr *)&a, &al);
  s->port = ntohs(a.sin_port);
  pthread_create(&s->acceptor, NULL, accept_loop, s);
  return s;
}

unsigned short test_server_port(test_server *s) { return s->port; }
unsigned test_server_accepted(test_server *s) { return atomic_load(&s->accepted); }

void test_server_stop(test_server *s) {
  atomic_store(&s->stopping, 1);
  /* Wake the acceptor with one last connection. */
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(s->port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  connect(fd, (struct sockaddr *)&a, sizeof a);
  pthread_join(s->acceptor, NULL);
  close(fd);
  pthread_mutex_lock(&s->lock);
  for (int i = 0; i < s->n; i++)
    if (s->fds[i] >= 0) shutdown(s->fds[i], SHUT_RDWR);
  int n = s->n;
  pthread_mutex_unlock(&s->lock);
  for (int i = 0; i < n; i++) pthread_join(s->threads[i], NULL);
  close(s->lfd);
  pthread_mutex_destroy(&s->lock);
  free(s);
}
