/*
 * floor_client: the gateway's probe of what any client with its own I/O
 * thread must cost a Hummingbird handler (docs/BENCHMARKS.md, "The
 * gateway's floor"). Not Pocket, and not an HTTP client: it sends a fixed
 * `GET / HTTP/1.1` on keep-alive connections to one IPv4 address and hands
 * back the answer's status and body, found by its Content-Length. No
 * timeouts, no redirects, no chunked bodies, no errors beyond "failed".
 * It has the structure of Pocket's engine and nothing else: submissions from
 * any thread onto a lock-free stack, an eventfd that wakes the loop only when
 * it sleeps, one epoll loop thread, level-triggered EPOLLIN registered once
 * per connection, recv(2) and send(2) per answer.
 */
#ifndef FLOOR_CLIENT_H
#define FLOOR_CLIENT_H

#include <stddef.h>
#include <stdint.h>

typedef struct floor_client floor_client;

/* Called on the loop thread, once per submission: `status` is the answer's
 * status code, or -1 when the connection failed (then `body` is NULL).
 * `body` is borrowed until return. */
typedef void (*floor_done_fn)(void *ctx, int status, const uint8_t *body, size_t len);

/* Starts the loop thread for `ip`:`port` (IPv4, dotted), with at most
 * `max_connections` connections (opened on demand); with `sched_batch` the
 * loop thread runs under SCHED_BATCH, as the Pocket gateway's loop does
 * (PocketLoopScheduling.batch). NULL on failure (errno). */
floor_client *floor_open(const char *ip, int port, int max_connections, int sched_batch);

/* Queues one request; `done(ctx, …)` is called on the loop thread. Any thread. */
void floor_submit(floor_client *client, void *ctx, floor_done_fn done);

#endif
