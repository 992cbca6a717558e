/* A connection's CONNECT tunnel through an HTTP proxy (RFC 9110 §9.3.6):
 * the CONNECT head, the proxy's answer (2xx opens the tunnel; 407 and 401
 * fail with the challenge for pk_proxy_challenge), then the connection
 * advances to TLS or to the request as if connected to the origin. */
#include "pk_conn.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* The request line names the origin as authority-form host:port, then the
 * proxy's 2xx turns the connection into a byte pipe to the origin. The exchange uses the
 * connection's read buffer: the CONNECT head is written from it (a proxy
 * reads it before it answers), then the answer is read into it. */
static void tunnel_write(pk__loop *loop, pk__conn *conn) {
  while (conn->woff < conn->rlen) {
    ssize_t w = send(conn->fd, conn->rbuf + conn->woff, conn->rlen - conn->woff, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return; /* EPOLLOUT resumes */
    if (w < 0) {
      pk__conn_up_fail(loop, conn, errno == ECONNRESET || errno == EPIPE ? PK_E_PROXY_CLOSED : PK_E_WRITE, errno);
      return;
    }
    conn->woff += (size_t)w;
  }
  if (conn->woff == conn->rlen && conn->woff) {
    conn->rlen = conn->woff = 0; /* written: the buffer now takes the answer */
    conn->want_write = 0;
  }
}

void pk__conn_tunnel_start(pk__loop *loop, pk__conn *conn) {
  pk__origin *o = conn->origin;
  if (!conn->rbuf) {
    if (!(conn->rbuf = pk__rbuf_get(loop, PK_RBUF_SIZE))) {
      pk__conn_up_fail(loop, conn, PK_E_NOMEM, 0);
      return;
    }
    conn->rcap = PK_RBUF_SIZE;
  }
  bool v6 = memchr(o->host, ':', o->host_len) != NULL;
  int n = snprintf(conn->rbuf, conn->rcap, "CONNECT %s%.*s%s:%u HTTP/1.1\r\nHost: %s%.*s%s:%u\r\n", v6 ? "[" : "",
                   (int)o->host_len, o->host, v6 ? "]" : "", o->port, v6 ? "[" : "", (int)o->host_len, o->host,
                   v6 ? "]" : "", o->port);
  if (n > 0 && o->auth_len)
    n += snprintf(conn->rbuf + n, conn->rcap - (size_t)n, "Proxy-Authorization: %.*s\r\n", (int)o->auth_len,
                  pk__origin_auth(o));
  if (n > 0) n += snprintf(conn->rbuf + n, conn->rcap - (size_t)n, "\r\n");
  if (n <= 0 || (size_t)n >= conn->rcap) {
    pk__conn_up_fail(loop, conn, PK_E_REQUEST_TOO_LARGE, 0);
    return;
  }
  conn->rlen = (size_t)n;
  conn->woff = 0;
  conn->want_write = 1;
  conn->state = PK_CONN_TUNNEL;
  conn->t_tunnel_start = pk__now_ns();
  tunnel_write(loop, conn);
}

/* The challenge of the CONNECT answer that is failing a request with
 * PK_E_PROXY_AUTH, for pk_proxy_challenge: set just around that request's
 * on_done (which runs inside pk__conn_fail, on this thread), NULL otherwise. */
static _Thread_local const char *tl_challenge;
static _Thread_local size_t tl_challenge_len;

const char *pk_proxy_challenge(size_t *len) {
  if (len) *len = tl_challenge ? tl_challenge_len : 0;
  return tl_challenge;
}

/* Fails the request of `conn` with PK_E_PROXY_AUTH, its on_done able to read
 * the values of the answer's Proxy-Authenticate fields (WWW-Authenticate for
 * a 401), combined into one list with ", " (RFC 9110 §5.3), so that the
 * caller can answer the challenge and submit again. */
static void tunnel_auth_failed(pk__loop *loop, pk__conn *conn, const pk_response_head *head) {
  const char *name = head->status == 407 ? "proxy-authenticate" : "www-authenticate";
  size_t nlen = strlen(name), total = 0;
  for (size_t i = 0; i < head->num_headers; i++)
    if (head->headers[i].name_len == nlen && !strncasecmp(head->headers[i].name, name, nlen))
      total += head->headers[i].value_len + 2;
  char *copy = total ? pk__malloc(total) : NULL; /* the head's bytes go with the connection */
  size_t n = 0;
  for (size_t i = 0; copy && i < head->num_headers; i++) {
    const pk_header *h = &head->headers[i];
    if (h->name_len != nlen || strncasecmp(h->name, name, nlen)) continue;
    if (n) {
      memcpy(copy + n, ", ", 2);
      n += 2;
    }
    memcpy(copy + n, h->value, h->value_len);
    n += h->value_len;
  }
  tl_challenge = copy;
  tl_challenge_len = n;
  pk__conn_up_fail(loop, conn, PK_E_PROXY_AUTH, head->status);
  tl_challenge = NULL;
  tl_challenge_len = 0;
  pk__free(copy);
}

/* The proxy's answer: 2xx and nothing after it opens the tunnel. */
static void tunnel_read(pk__loop *loop, pk__conn *conn) {
  for (;;) {
    if (conn->rlen == conn->rcap) {
      pk__conn_up_fail(loop, conn, PK_E_PROXY_PROTOCOL, 0); /* an answer larger than the buffer */
      return;
    }
    ssize_t r = recv(conn->fd, conn->rbuf + conn->rlen, conn->rcap - conn->rlen, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (r <= 0) {
      pk__conn_up_fail(loop, conn, PK_E_PROXY_CLOSED, r < 0 ? errno : 0);
      return;
    }
    conn->rlen += (size_t)r;
    pk_header hdrs[64];
    pk_response_head head = {.headers = hdrs, .num_headers = 64};
    pk_parse_limits lim = loop->eng->cfg.limits;
    int used = pk_parse_response_head(conn->rbuf, conn->rlen, 0, &head, &lim);
    if (used == PK_PARSE_INCOMPLETE) continue;
    if (used < 0) {
      pk__conn_up_fail(loop, conn, PK_E_PROXY_PROTOCOL, 0);
      return;
    }
    /* 407, or 401: nothing but the proxy answers CONNECT, and some proxies
     * (tinyproxy) answer wrong credentials with 401. */
    if (head.status == 407 || head.status == 401) {
      tunnel_auth_failed(loop, conn, &head);
      return;
    }
    if (head.status < 200 || head.status > 299) {
      pk__conn_up_fail(loop, conn, PK_E_PROXY_CONNECT, head.status);
      return;
    }
    if ((size_t)used != conn->rlen) {
      /* The origin speaks only after we do (TLS's ClientHello, or the
       * request): bytes here are the proxy's, and not a tunnel's. */
      pk__conn_up_fail(loop, conn, PK_E_PROXY_PROTOCOL, 0);
      return;
    }
    conn->rlen = 0;
    conn->req->timings.tunnel_ns = pk__now_ns() - conn->t_tunnel_start;
    conn->up->advance(loop, conn);
    return;
  }
}

void pk__conn_tunnel_event(pk__loop *loop, pk__conn *conn, uint32_t events) {
  if (conn->want_write) {
    tunnel_write(loop, conn);
    if (conn->state != PK_CONN_TUNNEL || conn->want_write) return;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) tunnel_read(loop, conn);
}
