/*
 * CPocketBenchServer: a small epoll HTTP/1.1 server for pocket-bench's
 * embedded mode, and the upload sink of scripts/bench-bodies.sh (through
 * Benchmarks/bench-server). Every request gets the same answer:
 *
 *   HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nHello, World!
 *
 * whatever its method (GET, PUT, POST...), unless pkbs_set_answer gave
 * another answer (or pkbs_set_status a failing replica its status).
 * Keep-alive, pipelining (answers
 * to all complete requests in one read go out in one send). A request body
 * is read to its end and discarded before the request is answered, never
 * buffered: a Content-Length body of any size, or a chunked body
 * (Transfer-Encoding ending in "chunked"; chunk extensions and trailers are
 * skipped; a chunk size of more than 16 hex digits, malformed framing, or
 * Transfer-Encoding together with Content-Length close the connection).
 * `Expect: 100-continue` on a request with a body still to come is answered
 * with "HTTP/1.1 100 Continue" before the body is read. `Connection: close`
 * (or HTTP/1.0 without keep-alive) closes after the answer.
 *
 * With pkbs_set_tls, the same server speaks TLS (1.2 or 1.3, OpenSSL) with
 * a certificate it makes itself, so plain and TLS figures come from the same
 * server.
 *
 * One server per process: start, stop, start again is fine.
 */
#ifndef CPOCKETBENCHSERVER_H
#define CPOCKETBENCHSERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Pins the server's threads to CPUs, thread i to (cpu + i) mod ncpus.
 * Must be called before pkbs_start; a negative cpu means no pinning (the
 * default). Returns 0, or -1 if cpu is out of range. */
int pkbs_set_cpu(int cpu);

/* Replaces the answer of servers started from now on with `len` bytes
 * (copied): one complete response, head and body, e.g. a 1 MiB body or a
 * gzip-coded one. NULL or 0 restores the default 13-byte answer. Returns 0,
 * or -1 with errno EBUSY while a server runs, ENOMEM. */
int pkbs_set_answer(const char *bytes, size_t len);

/* With enable, servers started from now on speak TLS only, with a fresh
 * ECDSA P-256 key and a self-signed certificate for localhost (subjectAltName
 * DNS:localhost, IP:127.0.0.1, IP:::1), made now in this process (no files
 * read, no openssl command). The certificate's PEM is written to
 * cert_pem_path (unless NULL): a client's CA file to verify the server with.
 * Without enable, servers are plain again. Returns 0, or -1 with errno EBUSY
 * while a server runs, EIO if OpenSSL fails, or fopen's errno. */
int pkbs_set_tls(bool enable, const char *cert_pem_path);

/* Compresses [in, in+n) into a gzip stream (RFC 1952, zlib level 6) at
 * out, at most cap bytes. Returns the stream's length, or 0 if it does not
 * fit or zlib fails. (pkbs_gzip.c; links zlib.) */
size_t pkbs_gzip(const void *in, size_t n, void *out, size_t cap);

/* Starts listening on host:port (host is a numeric IPv4 or IPv6 address, or
 * NULL for 127.0.0.1; port 0 picks a free one) with `threads` event-loop
 * threads (values < 1 mean 1) sharing the listening socket. On success
 * returns 0 and stores the bound port in *bound_port (if not NULL); the
 * server then runs until pkbs_stop. On failure returns -1 with errno set
 * (EBUSY if a server is already running). */
int pkbs_start(const char *host, uint16_t port, int threads, uint16_t *bound_port);

/* Servers started from now on listen on `count` ports (1 to 64; 1 by
 * default), the replicas 0..count-1 of one set, served by the same threads:
 * replica r on pkbs_start's port + r, or each on a free port when that port
 * is 0 (pkbs_replica_port says which). Returns 0, or -1 with errno EBUSY while a server
 * runs, EINVAL out of range. */
int pkbs_set_replicas(int count);

/* Replica `replica` (from 0) of servers started from now on answers a
 * `share` (0 to 1) of its requests `delay_ns` late; 0 restores prompt
 * answers. A late answer holds its connection: the requests behind it on
 * that connection are answered after it, in order. Returns 0, or -1 with
 * errno EBUSY while a server runs, EINVAL out of range. */
int pkbs_set_slow(int replica, double share, uint64_t delay_ns);

/* Replica `replica` (from 0) of servers started from now on answers every
 * request with `status` (400 to 599) and an empty body instead of the
 * answer, as an overloaded or broken replica does; 0 restores the answer.
 * Returns 0, or -1 with errno EBUSY while a server runs, EINVAL out of range. */
int pkbs_set_status(int replica, int status);

/* Replica `replica` (from 0) of the running server stops as a killed
 * process does, until the server stops: its listening socket stops
 * listening now (connections are refused from now on), and its open
 * connections are reset (closed with SO_LINGER 0: the peer reads
 * ECONNRESET) by their threads at their next wake-up, which this call
 * makes happen. Killing a killed replica does nothing. Returns 0, or -1
 * with errno EINVAL (no server running, or no such replica). */
int pkbs_kill_replica(int replica);

/* The running server's port for replica `replica`, or 0. */
uint16_t pkbs_replica_port(int replica);

/* Requests the running server's replica `replica` has answered or is
 * holding (a moment stale while running), or 0. */
uint64_t pkbs_replica_requests(int replica);

/* Stops the server: wakes and joins its threads, closes every connection and
 * the listening socket. A no-op if none is running. */
void pkbs_stop(void);

/* Requests answered by this process's servers so far (summed over threads;
 * a moment stale while running). */
uint64_t pkbs_requests_served(void);

/* CPU time (user + system, nanoseconds) used so far by the running server's
 * threads, or 0 if none is running. Lets an in-process benchmark subtract
 * the embedded server's share from the process's CPU time. */
uint64_t pkbs_cpu_time_ns(void);

#ifdef __cplusplus
}
#endif

#endif
