/* A bare OpenSSL client loop, the reference for Pocket's handshake cost:
 * N times, a new TCP connection, a TLS handshake (resuming the previous
 * session, as Pocket does), one GET with Connection: close, read to the end,
 * close_notify, close. Prints CPU microseconds per connection (getrusage). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s HOST PORT CAFILE N\n", argv[0]);
    return 2;
  }
  const char *host = argv[1];
  int port = atoi(argv[2]), n = atoi(argv[4]);
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  if (!SSL_CTX_load_verify_locations(ctx, argv[3], NULL)) return 1;
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  char req[256];
  snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n", host, port);
  SSL_SESSION *session = NULL;
  int resumed = 0;
  char buf[16384];
  struct timespec t0, t1;
  double c0 = cpu_seconds();
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < n; i++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) { perror("connect"); return 1; }
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    SSL_set_tlsext_host_name(ssl, host);
    SSL_set1_host(ssl, host);
    SSL_set_alpn_protos(ssl, (const unsigned char *)"\x08http/1.1", 9);
    if (session) SSL_set_session(ssl, session);
    if (SSL_connect(ssl) != 1) { ERR_print_errors_fp(stderr); return 1; }
    resumed += SSL_session_reused(ssl);
    SSL_write(ssl, req, (int)strlen(req));
    while (SSL_read(ssl, buf, sizeof buf) > 0) {}
    if (session) SSL_SESSION_free(session);
    session = SSL_get1_session(ssl);
    SSL_shutdown(ssl);
    SSL_free(ssl);
    close(fd);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double cpu = cpu_seconds() - c0;
  double el = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  printf("{\"connections\": %d, \"resumed\": %d, \"elapsed_s\": %.3f, \"cpu_us_per_conn\": %.2f}\n", n, resumed, el,
         cpu / n * 1e6);
  return 0;
}
