/*
 * A small, fast epoll HTTP/1.1 server for the benchmark's embedded mode (and
 * the upload sink of scripts/bench-bodies.sh, through Benchmarks/bench-server).
 * See include/CPocketBenchServer.h for the contract.
 *
 * Design:
 *  - One listening socket shared by N loop threads, each with its own epoll
 *    set; the listener is registered with EPOLLEXCLUSIVE so one accept wakes
 *    one thread. A connection stays on the thread that accepted it.
 *  - Level-triggered EPOLLIN. One read buffer per connection (allocated with
 *    the connection, once); requests are framed by "\r\n\r\n" plus an
 *    optional body (Content-Length, or chunked), read and discarded before
 *    the request is answered.
 *  - Bodies are never buffered: Content-Length bytes are counted down, a
 *    chunked body goes through a small state machine (size line, data, CRLF,
 *    trailers) that keeps only the current chunk's size. While body bytes are
 *    due and the read buffer is empty, recv goes straight into one scratch
 *    buffer per thread (PKBS_SCRATCH bytes at a time), so a 1 GiB upload
 *    costs 1 GiB / PKBS_SCRATCH copies out of the kernel and no memory.
 *  - `Expect: 100-continue` with a body still to come gets "HTTP/1.1 100
 *    Continue" first (after the answers already queued on the connection).
 *  - Every final answer is the same bytes, so the output of a connection is a
 *    position in an endless repetition of the answer: the pending output is
 *    two integers (stream offset and bytes left), written from a block of
 *    copies of the answer (about 64 KiB, made once by pkbs_start; the answer
 *    is the 13-byte default or pkbs_set_answer's), plus at most one 100 Continue and the answers queued
 *    behind it. No allocation per request, one send per read however many
 *    requests were pipelined in it.
 *  - When the socket's send buffer is full the connection stops reading
 *    (EPOLLOUT instead of EPOLLIN) until the backlog is written.
 *  - TLS (pkbs_set_tls) changes only the calls that move bytes: conn_recv
 *    and conn_send go through pkbs_tls.c, which reports "would block" as
 *    EAGAIN like recv/send. Two things differ: a handshake read may need to
 *    write (the connection then waits for EPOLLOUT and reads again), and
 *    OpenSSL may hold decrypted bytes no epoll event announces (read on
 *    while it does). The loop threads block SIGPIPE, since OpenSSL writes
 *    with write(2), not send(MSG_NOSIGNAL).
 *  - Replicas (pkbs_set_replicas) are listening sockets, one port each,
 *    served by the same threads; a connection remembers its replica. A slow
 *    replica (pkbs_set_slow) holds the connection of a request it draws
 *    (a per-thread xorshift): the answers before it go out, the request's
 *    own waits for its release time, and the connection is not read
 *    meanwhile (its epoll interest is empty), so later requests on it are
 *    answered in order after it. The loop's epoll_wait timeout is the
 *    earliest release (millisecond resolution, rounded up).
 *  - A failing replica (pkbs_set_status) is a replica whose answer is
 *    another: each connection points at its replica's block of copies
 *    (struct pkbs_answer), so a status answer costs the others nothing.
 *  - A killed replica (pkbs_kill_replica): its listener is shut down at
 *    once (Linux then stops listening: a SYN gets a RST), and each loop
 *    thread, woken through its eventfd, drops the listener from its epoll
 *    set and resets its connections of that replica. The thread does it
 *    after the events of its batch, which may name those connections.
 */
#include "CPocketBenchServer.h"
#include "pkbs_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define PKBS_READ_BUF (32 * 1024) /* a request head must fit in this */
#define PKBS_COPIES 256           /* answers in the static output block */
#define PKBS_MAX_EVENTS 256
#define PKBS_MAX_THREADS 64
#define PKBS_SCRATCH (256 * 1024) /* per thread: request body bytes read and dropped */
#define PKBS_MAX_REPLICAS 64

static const char k_answer[] =
    "HTTP/1.1 200 OK\r\n"
    "Content-Length: 13\r\n"
    "Content-Type: text/plain\r\n"
    "\r\n"
    "Hello, World!";
#define DEFAULT_ANSWER_LEN (sizeof(k_answer) - 1)
#define PKBS_BLOCK_TARGET (64 * 1024) /* bytes of answers in the output block (at least one answer) */

static const char k_continue[] = "HTTP/1.1 100 Continue\r\n\r\n";
#define CONTINUE_LEN ((uint32_t)(sizeof(k_continue) - 1))

/* The answer (k_answer unless pkbs_set_answer replaced it) and copies of it
 * back to back (at most PKBS_COPIES, about PKBS_BLOCK_TARGET bytes, at least
 * one), written by pkbs_start before the threads start. */
static char *g_answer;      /* NULL: k_answer */
static size_t g_answer_len = DEFAULT_ANSWER_LEN;

/* What a connection's answers are cut from: `len`-byte answers back to back
 * (at most PKBS_COPIES, about PKBS_BLOCK_TARGET bytes, at least one),
 * written by pkbs_start before the threads start. */
struct pkbs_answer {
    char *block;
    size_t block_len;
    size_t len; /* one answer */
};
static struct pkbs_answer g_main;                              /* the answer's */
static struct pkbs_answer g_status_answers[PKBS_MAX_REPLICAS]; /* failing replicas' */

/* The body of the request being read (answered once it is all in). */
enum { BODY_NONE, BODY_LENGTH, BODY_CHUNKED };

/* Chunked request body: where the framing parser is. */
enum {
    CH_SIZE,         /* hex digits of a chunk size */
    CH_EXT,          /* rest of a size line (extensions, CR) up to LF */
    CH_DATA_END,     /* the CRLF after a chunk's data */
    CH_DATA_LF,      /* the LF of that CRLF */
    CH_TRAILER,      /* start of a trailer line, or the final CRLF */
    CH_TRAILER_LINE, /* rest of a trailer line up to LF */
    CH_LAST_LF,      /* the LF of the final CRLF */
};

struct pkbs_conn {
    int fd;
    void *tls;       /* pkbs_tls.c's connection, or NULL (plain) */
    bool tls_read_wants_write; /* a TLS read blocked on writing: read again on EPOLLOUT */
    bool want_out;   /* registered for EPOLLOUT (and not EPOLLIN) */
    bool held;       /* a slow replica's answer waits for release_at (not reading) */
    bool held_close; /* the held request asked to close after its answer */
    uint8_t replica; /* which listener accepted it */
    uint32_t events; /* the epoll interest registered */
    uint64_t release_at; /* CLOCK_MONOTONIC ns, while held */
    struct pkbs_conn *hold_next; /* the thread's held connections */
    bool close_after; /* close once the output is written */
    bool req_close;  /* the request being read asked to close after its answer */
    uint8_t body;    /* BODY_* of the request being read */
    uint8_t chunk_state; /* CH_* while body == BODY_CHUNKED */
    uint8_t chunk_digits; /* hex digits read of the current chunk size */
    uint32_t len;    /* bytes in buf */
    uint32_t scan;   /* where the search for the end of the head resumes */
    uint32_t cont_left; /* bytes of k_continue still to send (after out_left) */
    uint64_t skip;   /* request body (or chunk data) bytes still to discard */
    uint64_t chunk_size; /* the chunk size being read */
    const struct pkbs_answer *ans; /* its replica's answers */
    uint64_t out_off; /* offset in the answer stream (mod ans->len matters) */
    uint64_t out_left; /* answer bytes still to send */
    uint64_t post_left; /* answer bytes queued behind the 100 Continue */
    struct pkbs_conn *prev, *next;
    char buf[PKBS_READ_BUF];
};

struct pkbs_thread {
    pthread_t tid;
    int index;
    int epfd;
    int evfd;
    struct pkbs_conn *conns; /* every open connection, for stop */
    char *scratch;           /* PKBS_SCRATCH bytes, or NULL (bodies then go through buf) */
    struct pkbs_conn *held;  /* connections of slow answers, unordered */
    uint64_t rng;            /* xorshift64 state: which requests a slow replica delays */
    uint64_t served;
    uint64_t served_by[PKBS_MAX_REPLICAS];
    uint64_t killed_seen; /* the g_killed bits this thread has applied */
};

/* A replica that answers a share of its requests late. */
struct pkbs_slow {
    double share;      /* 0: never */
    uint64_t delay_ns;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static void *g_tls_ctx; /* pkbs_set_tls's context, or NULL: plain */
static bool g_running;
static atomic_bool g_stopping;
static int g_replicas = 1;
static int g_listen_fds[PKBS_MAX_REPLICAS];
static uint16_t g_ports[PKBS_MAX_REPLICAS];
static struct pkbs_slow g_slow[PKBS_MAX_REPLICAS];
static int g_status[PKBS_MAX_REPLICAS]; /* pkbs_set_status's; 0: the answer */
static const struct pkbs_answer *g_replica_answers[PKBS_MAX_REPLICAS];
static _Atomic uint64_t g_killed; /* bit r: replica r was killed (since pkbs_start) */
static int g_nthreads;
static int g_cpu = -1;
static uint64_t g_served_before; /* by servers already stopped */
static struct pkbs_thread g_threads[PKBS_MAX_THREADS];

/* Tags for epoll data that are not connections (a listener's is its replica's). */
static char g_listen_tags[PKBS_MAX_REPLICAS], g_wake_tag;

int pkbs_set_cpu(int cpu) {
    long n = sysconf(_SC_NPROCESSORS_CONF);
    if (cpu >= 0 && n > 0 && cpu >= n) return -1;
    pthread_mutex_lock(&g_lock);
    g_cpu = cpu < 0 ? -1 : cpu;
    pthread_mutex_unlock(&g_lock);
    return 0;
}

int pkbs_set_answer(const char *bytes, size_t len) {
    pthread_mutex_lock(&g_lock);
    if (g_running) {
        pthread_mutex_unlock(&g_lock);
        errno = EBUSY;
        return -1;
    }
    char *copy = NULL;
    if (bytes && len) {
        copy = malloc(len);
        if (!copy) {
            pthread_mutex_unlock(&g_lock);
            errno = ENOMEM;
            return -1;
        }
        memcpy(copy, bytes, len);
    }
    free(g_answer);
    g_answer = copy;
    g_answer_len = copy ? len : DEFAULT_ANSWER_LEN;
    pthread_mutex_unlock(&g_lock);
    return 0;
}

int pkbs_set_tls(bool enable, const char *cert_pem_path) {
    pthread_mutex_lock(&g_lock);
    if (g_running) {
        pthread_mutex_unlock(&g_lock);
        errno = EBUSY;
        return -1;
    }
    void *ctx = NULL;
    if (enable && !(ctx = pkbs__tls_context(cert_pem_path))) {
        int e = errno;
        pthread_mutex_unlock(&g_lock);
        errno = e;
        return -1;
    }
    pkbs__tls_context_free(g_tls_ctx);
    g_tls_ctx = ctx;
    pthread_mutex_unlock(&g_lock);
    return 0;
}

uint64_t pkbs_requests_served(void) {
    pthread_mutex_lock(&g_lock);
    uint64_t total = g_served_before;
    for (int i = 0; i < g_nthreads; i++)
        total += __atomic_load_n(&g_threads[i].served, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_lock);
    return total;
}

int pkbs_set_replicas(int count) {
    pthread_mutex_lock(&g_lock);
    int rc = 0;
    if (g_running) { errno = EBUSY; rc = -1; }
    else if (count < 1 || count > PKBS_MAX_REPLICAS) { errno = EINVAL; rc = -1; }
    else g_replicas = count;
    pthread_mutex_unlock(&g_lock);
    return rc;
}

int pkbs_set_slow(int replica, double share, uint64_t delay_ns) {
    pthread_mutex_lock(&g_lock);
    int rc = 0;
    if (g_running) { errno = EBUSY; rc = -1; }
    else if (replica < 0 || replica >= PKBS_MAX_REPLICAS || !(share >= 0 && share <= 1)) { errno = EINVAL; rc = -1; }
    else g_slow[replica] = (struct pkbs_slow){ .share = delay_ns ? share : 0, .delay_ns = delay_ns };
    pthread_mutex_unlock(&g_lock);
    return rc;
}

int pkbs_set_status(int replica, int status) {
    pthread_mutex_lock(&g_lock);
    int rc = 0;
    if (g_running) { errno = EBUSY; rc = -1; }
    else if (replica < 0 || replica >= PKBS_MAX_REPLICAS || !(status == 0 || (status >= 400 && status <= 599))) {
        errno = EINVAL;
        rc = -1;
    }
    else g_status[replica] = status;
    pthread_mutex_unlock(&g_lock);
    return rc;
}

int pkbs_kill_replica(int replica) {
    pthread_mutex_lock(&g_lock);
    if (!g_running || replica < 0 || replica >= g_replicas) {
        pthread_mutex_unlock(&g_lock);
        errno = EINVAL;
        return -1;
    }
    uint64_t bit = 1ull << replica;
    if (!(atomic_load(&g_killed) & bit)) {
        /* The fd stays open (no number to reuse under the threads) until pkbs_stop. */
        shutdown(g_listen_fds[replica], SHUT_RDWR);
        atomic_fetch_or_explicit(&g_killed, bit, memory_order_release);
        for (int i = 0; i < g_nthreads; i++) {
            uint64_t one = 1;
            (void)!write(g_threads[i].evfd, &one, sizeof(one));
        }
    }
    pthread_mutex_unlock(&g_lock);
    return 0;
}

uint16_t pkbs_replica_port(int replica) {
    pthread_mutex_lock(&g_lock);
    uint16_t port = g_running && replica >= 0 && replica < g_replicas ? g_ports[replica] : 0;
    pthread_mutex_unlock(&g_lock);
    return port;
}

uint64_t pkbs_replica_requests(int replica) {
    uint64_t total = 0;
    pthread_mutex_lock(&g_lock);
    if (g_running && replica >= 0 && replica < g_replicas)
        for (int i = 0; i < g_nthreads; i++)
            total += __atomic_load_n(&g_threads[i].served_by[replica], __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_lock);
    return total;
}

uint64_t pkbs_cpu_time_ns(void) {
    uint64_t total = 0;
    pthread_mutex_lock(&g_lock);
    if (g_running) {
        for (int i = 0; i < g_nthreads; i++) {
            clockid_t cid;
            struct timespec ts;
            if (pthread_getcpuclockid(g_threads[i].tid, &cid) == 0 && clock_gettime(cid, &ts) == 0)
                total += (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        }
    }
    pthread_mutex_unlock(&g_lock);
    return total;
}

/* ---------------------------------------------------------------- helpers */

static inline char lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c; }

/* Case-insensitive: does [p, p+n) start with the lower-case literal s? */
static bool has_prefix_ci(const char *p, size_t n, const char *s, size_t sn) {
    if (n < sn) return false;
    for (size_t i = 0; i < sn; i++)
        if (lower(p[i]) != s[i]) return false;
    return true;
}

/* Case-insensitive search for the lower-case token t in [p, p+n). */
static bool contains_ci(const char *p, size_t n, const char *t, size_t tn) {
    if (n < tn) return false;
    for (size_t i = 0; i + tn <= n; i++)
        if (has_prefix_ci(p + i, n - i, t, tn)) return true;
    return false;
}

enum { HEAD_OK = 0, HEAD_BAD = -1 };

/* What a request head says about its body and connection. */
struct head_info {
    uint64_t length;      /* Content-Length (0 without one) */
    bool chunked;         /* Transfer-Encoding ends in chunked */
    bool expect_continue; /* Expect: 100-continue */
    bool close_after;     /* close once answered */
};

/* Reads what matters from one request head [h, h+n) (without the final
 * CRLFCRLF). Transfer-Encoding must end in "chunked" and may not come with
 * a Content-Length. */
static int parse_head(const char *h, size_t n, struct head_info *info) {
    const char *end = h + n;
    const char *eol = memchr(h, '\n', n);
    if (!eol) eol = end;
    /* Request line: "... HTTP/1.x". HTTP/1.0 closes unless keep-alive. */
    size_t ll = (size_t)(eol - h);
    if (ll && h[ll - 1] == '\r') ll--;
    bool http10 = ll >= 8 && memcmp(h + ll - 8, "HTTP/1.0", 8) == 0;
    bool keep_alive = false, close = false, has_length = false, has_te = false;
    memset(info, 0, sizeof(*info));
    const char *p = eol < end ? eol + 1 : end;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        size_t len = (size_t)(le - p);
        if (len && p[len - 1] == '\r') len--;
        if (has_prefix_ci(p, len, "content-length:", 15)) {
            const char *v = p + 15, *ve = p + len;
            while (v < ve && (*v == ' ' || *v == '\t')) v++;
            if (v == ve) return HEAD_BAD;
            uint64_t x = 0;
            for (; v < ve && *v >= '0' && *v <= '9'; v++) {
                if (x > (UINT64_MAX - 9) / 10) return HEAD_BAD;
                x = x * 10 + (uint64_t)(*v - '0');
            }
            while (v < ve && (*v == ' ' || *v == '\t')) v++;
            if (v != ve) return HEAD_BAD;
            info->length = x;
            has_length = true;
        } else if (has_prefix_ci(p, len, "transfer-encoding:", 18)) {
            const char *v = p + 18, *ve = p + len;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
            has_te = true;
            info->chunked = ve - v >= 7 && has_prefix_ci(ve - 7, 7, "chunked", 7);
        } else if (has_prefix_ci(p, len, "expect:", 7)) {
            if (contains_ci(p + 7, len - 7, "100-continue", 12)) info->expect_continue = true;
        } else if (has_prefix_ci(p, len, "connection:", 11)) {
            if (contains_ci(p + 11, len - 11, "close", 5)) close = true;
            if (contains_ci(p + 11, len - 11, "keep-alive", 10)) keep_alive = true;
        }
        p = nl ? nl + 1 : end;
    }
    if (has_te && (!info->chunked || has_length)) return HEAD_BAD;
    info->close_after = close || (http10 && !keep_alive);
    return HEAD_OK;
}

enum { CHUNK_MORE, CHUNK_DATA, CHUNK_DONE, CHUNK_BAD };

static int hex_value(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    ch = lower(ch);
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
}

/* Reads chunked framing (not chunk data) from [p, p+n), storing the bytes
 * used in *used: CHUNK_DATA when a chunk's data starts (c->skip is its
 * size), CHUNK_DONE after the last chunk and trailers, CHUNK_MORE when all
 * of [p, p+n) was framing, CHUNK_BAD on malformed framing. */
static int chunk_framing(struct pkbs_conn *c, const char *p, uint32_t n, uint32_t *used) {
    uint32_t i = 0;
    int result = CHUNK_MORE;
    while (i < n && result == CHUNK_MORE) {
        char ch = p[i++];
        bool line_end = false;
        switch (c->chunk_state) {
        case CH_SIZE: {
            int v = hex_value(ch);
            if (v >= 0) {
                if (c->chunk_digits == 16) return CHUNK_BAD;
                c->chunk_digits++;
                c->chunk_size = c->chunk_size << 4 | (uint64_t)v;
            } else if (c->chunk_digits == 0) {
                return CHUNK_BAD;
            } else if (ch == '\n') {
                line_end = true;
            } else if (ch == ';' || ch == ' ' || ch == '\t' || ch == '\r') {
                c->chunk_state = CH_EXT;
            } else {
                return CHUNK_BAD;
            }
            break;
        }
        case CH_EXT:
            line_end = ch == '\n';
            break;
        case CH_DATA_END:
            if (ch == '\r') c->chunk_state = CH_DATA_LF;
            else if (ch == '\n') c->chunk_state = CH_SIZE;
            else return CHUNK_BAD;
            break;
        case CH_DATA_LF:
            if (ch != '\n') return CHUNK_BAD;
            c->chunk_state = CH_SIZE;
            break;
        case CH_TRAILER:
            if (ch == '\r') c->chunk_state = CH_LAST_LF;
            else if (ch == '\n') result = CHUNK_DONE;
            else c->chunk_state = CH_TRAILER_LINE;
            break;
        case CH_TRAILER_LINE:
            if (ch == '\n') c->chunk_state = CH_TRAILER;
            break;
        case CH_LAST_LF:
            if (ch != '\n') return CHUNK_BAD;
            result = CHUNK_DONE;
            break;
        }
        if (line_end) { /* end of a size line */
            if (c->chunk_size == 0) {
                c->chunk_state = CH_TRAILER;
            } else {
                c->skip = c->chunk_size;
                c->chunk_state = CH_DATA_END;
                result = CHUNK_DATA;
            }
            c->chunk_size = 0;
            c->chunk_digits = 0;
        }
    }
    *used = i;
    return result;
}

static void conn_close(struct pkbs_thread *t, struct pkbs_conn *c) {
    if (c->held) {
        struct pkbs_conn **p = &t->held;
        while (*p != c) p = &(*p)->hold_next;
        *p = c->hold_next;
    }
    epoll_ctl(t->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    if (c->tls) pkbs__tls_free(c->tls);
    close(c->fd);
    if (c->prev) c->prev->next = c->next; else t->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    free(c);
}

static ssize_t conn_send(struct pkbs_conn *c, const char *src, size_t n) {
    return c->tls ? pkbs__tls_send(c->tls, src, n) : send(c->fd, src, n, MSG_NOSIGNAL);
}

static ssize_t conn_recv(struct pkbs_conn *c, char *dst, size_t n) {
    return c->tls ? pkbs__tls_recv(c->tls, dst, n, &c->tls_read_wants_write) : recv(c->fd, dst, n, 0);
}

/* Writable (out), else readable unless held (then nothing: errors only). */
static void set_interest(struct pkbs_thread *t, struct pkbs_conn *c, bool out) {
    uint32_t events = out ? EPOLLOUT : c->held ? 0 : EPOLLIN;
    c->want_out = out;
    if (c->events == events) return;
    struct epoll_event ev = { .events = events, .data.ptr = c };
    epoll_ctl(t->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->events = events;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A uniform draw in [0, 1) (xorshift64). */
static double next_unit(struct pkbs_thread *t) {
    uint64_t x = t->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    t->rng = x;
    return (double)(x >> 11) * 0x1p-53;
}

/* Queues one answer (behind a 100 Continue if one is queued). */
static void queue_answer(struct pkbs_conn *c, bool close_after) {
    if (c->cont_left) c->post_left += c->ans->len;
    else c->out_left += c->ans->len;
    if (close_after) c->close_after = true;
}

/* Writes as much pending output as the socket takes: the answers, then a
 * 100 Continue, then the answers queued behind it. Returns false if the
 * connection was closed (error, or done with close_after). */
static bool flush_out(struct pkbs_thread *t, struct pkbs_conn *c) {
    for (;;) {
        const char *src;
        size_t n;
        bool answers = c->out_left != 0;
        if (answers) {
            const struct pkbs_answer *a = c->ans;
            size_t start = (size_t)(c->out_off % a->len);
            size_t avail = a->block_len - start;
            src = a->block + start;
            n = c->out_left < avail ? (size_t)c->out_left : avail;
        } else if (c->cont_left) {
            src = k_continue + (CONTINUE_LEN - c->cont_left);
            n = c->cont_left;
        } else if (c->post_left) {
            c->out_left = c->post_left;
            c->post_left = 0;
            continue;
        } else {
            break;
        }
        ssize_t w = conn_send(c, src, n);
        if (w > 0) {
            if (answers) {
                c->out_off += (uint64_t)w;
                c->out_left -= (uint64_t)w;
            } else {
                c->cont_left -= (uint32_t)w;
            }
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            set_interest(t, c, true);
            return true;
        }
        conn_close(t, c);
        return false;
    }
    if (c->close_after) {
        if (c->tls) pkbs__tls_close_notify(c->tls);
        shutdown(c->fd, SHUT_WR);
        conn_close(t, c);
        return false;
    }
    set_interest(t, c, false);
    return true;
}

/* The request being read is complete (head and body): queue its answer.
 * Returns false if the connection closes after it (stop framing). */
static bool finish_request(struct pkbs_thread *t, struct pkbs_conn *c, uint64_t *answers) {
    (*answers)++;
    c->body = BODY_NONE;
    /* One writer (this thread); pkbs_replica_requests reads it from another,
     * so both sides are atomic (relaxed: a count, no ordering). */
    __atomic_store_n(&t->served_by[c->replica], t->served_by[c->replica] + 1, __ATOMIC_RELAXED);
    const struct pkbs_slow *slow = &g_slow[c->replica];
    if (slow->share > 0 && next_unit(t) < slow->share) {
        c->held = true;
        c->held_close = c->req_close;
        c->release_at = now_ns() + slow->delay_ns;
        c->hold_next = t->held;
        t->held = c;
        return false;
    }
    queue_answer(c, c->req_close);
    return !c->close_after;
}

/* Frames every complete request in buf (a body is read to its end before
 * its request is answered), queues the answers and compacts the buffer.
 * Returns false if the connection was closed. */
static bool process(struct pkbs_thread *t, struct pkbs_conn *c) {
    uint32_t pos = 0;
    uint64_t answers = 0;
    bool bad = false;
    for (;;) {
        if (c->skip) { /* Content-Length body or chunk data */
            if (pos == c->len) break;
            uint32_t avail = c->len - pos;
            uint32_t take = c->skip < avail ? (uint32_t)c->skip : avail;
            pos += take;
            c->skip -= take;
            c->scan = pos;
            continue;
        }
        if (c->body == BODY_LENGTH) { /* its last byte is in */
            if (!finish_request(t, c, &answers)) break;
            continue;
        }
        if (pos == c->len) break;
        if (c->body == BODY_CHUNKED) {
            uint32_t used = 0;
            int r = chunk_framing(c, c->buf + pos, c->len - pos, &used);
            pos += used;
            c->scan = pos;
            if (r == CHUNK_BAD) {
                bad = true;
                break;
            }
            if (r == CHUNK_DONE && !finish_request(t, c, &answers)) break;
            continue;
        }
        uint32_t from = c->scan > pos + 3 ? c->scan - 3 : pos;
        const char *e = memmem(c->buf + from, c->len - from, "\r\n\r\n", 4);
        if (!e) {
            c->scan = c->len;
            break;
        }
        uint32_t head_end = (uint32_t)(e - c->buf);
        struct head_info info;
        if (parse_head(c->buf + pos, head_end - pos, &info) != HEAD_OK) {
            bad = true;
            break;
        }
        pos = head_end + 4;
        c->scan = pos;
        c->req_close = info.close_after;
        if (info.chunked) {
            c->body = BODY_CHUNKED;
            c->chunk_state = CH_SIZE;
            c->chunk_size = 0;
            c->chunk_digits = 0;
        } else if (info.length) {
            c->body = BODY_LENGTH;
            c->skip = info.length;
        } else {
            if (!finish_request(t, c, &answers)) break;
            continue;
        }
        /* The client waits for a go-ahead, unless it sent body bytes already
         * (or a 100 Continue is still queued: then it did not wait either). */
        if (info.expect_continue && pos == c->len && !c->cont_left) c->cont_left = CONTINUE_LEN;
    }
    if (bad) {
        conn_close(t, c);
        return false;
    }
    /* Drop consumed bytes. */
    if (pos) {
        if (c->close_after) {
            c->len = 0;
        } else {
            memmove(c->buf, c->buf + pos, c->len - pos);
            c->len -= pos;
        }
        c->scan = c->scan >= pos ? c->scan - pos : 0;
    }
    if (answers) __atomic_store_n(&t->served, t->served + answers, __ATOMIC_RELAXED); /* one writer */
    if (c->out_left || c->cont_left || c->post_left) return flush_out(t, c);
    if (c->held) set_interest(t, c, false); /* stop reading until the release */
    return true;
}

/* Milliseconds until the thread's earliest release, rounded up; -1: none held. */
static int hold_timeout(struct pkbs_thread *t) {
    if (!t->held) return -1;
    uint64_t first = UINT64_MAX;
    for (struct pkbs_conn *c = t->held; c; c = c->hold_next)
        if (c->release_at < first) first = c->release_at;
    uint64_t now = now_ns();
    return first <= now ? 0 : (int)((first - now + 999999) / 1000000);
}

static void on_readable(struct pkbs_thread *t, struct pkbs_conn *c);

/* Answers the held requests whose time has come, then the requests that
 * arrived behind them on the same connection. */
static void release_held(struct pkbs_thread *t) {
    uint64_t now = now_ns();
    struct pkbs_conn **p = &t->held;
    while (*p) {
        struct pkbs_conn *c = *p;
        if (c->release_at > now) {
            p = &c->hold_next;
            continue;
        }
        *p = c->hold_next;
        c->held = false;
        queue_answer(c, c->held_close);
        if (!flush_out(t, c)) continue;
        if (c->want_out) continue; /* backlogged: reads resume once it is written */
        if (c->len && !process(t, c)) continue;
        if (!c->held && !c->want_out && c->tls && pkbs__tls_pending(c->tls)) on_readable(t, c);
    }
}

static void on_readable(struct pkbs_thread *t, struct pkbs_conn *c) {
    for (;;) {
        /* Body bytes with nothing buffered before them: read them into the
         * thread's scratch buffer and drop them (never past the body). */
        bool discard = c->skip && c->len == 0 && t->scratch;
        char *dst = discard ? t->scratch : c->buf + c->len;
        size_t space = discard ? (c->skip < PKBS_SCRATCH ? (size_t)c->skip : PKBS_SCRATCH)
                               : sizeof(c->buf) - c->len;
        if (space == 0) { /* a head larger than the buffer */
            conn_close(t, c);
            return;
        }
        ssize_t r = conn_recv(c, dst, space);
        if (r > 0) {
            if (discard) c->skip -= (uint64_t)r;
            else c->len += (uint32_t)r;
            if (!process(t, c)) return;
            /* Stop reading while output is backed up or closing. */
            if (c->want_out || c->close_after || c->held) return;
            /* Drained (level-triggered), unless OpenSSL holds more. */
            if ((size_t)r < space && !(c->tls && pkbs__tls_pending(c->tls))) return;
            continue;
        }
        if (r == 0) {
            conn_close(t, c);
            return;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (c->tls_read_wants_write) set_interest(t, c, true);
            return;
        }
        conn_close(t, c);
        return;
    }
}

static void on_accept(struct pkbs_thread *t, int replica) {
    for (;;) {
        int fd = accept4(g_listen_fds[replica], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return; /* EAGAIN, or EMFILE and friends: try again next wake-up */
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct pkbs_conn *c = malloc(sizeof(*c));
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->tls = NULL;
        c->tls_read_wants_write = false;
        if (g_tls_ctx && !(c->tls = pkbs__tls_new(g_tls_ctx, fd))) {
            close(fd);
            free(c);
            continue;
        }
        c->want_out = c->close_after = c->req_close = c->held = c->held_close = false;
        c->replica = (uint8_t)replica;
        c->ans = g_replica_answers[replica];
        c->events = EPOLLIN;
        c->release_at = 0;
        c->hold_next = NULL;
        c->body = BODY_NONE;
        c->chunk_state = CH_SIZE;
        c->chunk_digits = 0;
        c->len = c->scan = c->cont_left = 0;
        c->skip = c->chunk_size = c->out_off = c->out_left = c->post_left = 0;
        c->prev = NULL;
        c->next = t->conns;
        if (t->conns) t->conns->prev = c;
        t->conns = c;
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
        if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            t->conns = c->next;
            if (t->conns) t->conns->prev = NULL;
            if (c->tls) pkbs__tls_free(c->tls);
            close(fd);
            free(c);
        }
    }
}

/* Applies the kills this thread has not seen: drops the killed listeners
 * from its epoll set and resets its connections of those replicas. */
static void apply_kills(struct pkbs_thread *t) {
    uint64_t killed = atomic_load_explicit(&g_killed, memory_order_acquire);
    uint64_t fresh = killed & ~t->killed_seen;
    if (!fresh) return;
    t->killed_seen = killed;
    for (int r = 0; r < g_replicas; r++)
        if (fresh & (1ull << r)) epoll_ctl(t->epfd, EPOLL_CTL_DEL, g_listen_fds[r], NULL);
    struct pkbs_conn *next;
    for (struct pkbs_conn *c = t->conns; c; c = next) {
        next = c->next;
        if (!(fresh & (1ull << c->replica))) continue;
        struct linger reset = { .l_onoff = 1, .l_linger = 0 }; /* close sends a RST */
        setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
        conn_close(t, c);
    }
}

static void *loop_main(void *arg) {
    struct pkbs_thread *t = arg;
    if (g_cpu >= 0) {
        long n = sysconf(_SC_NPROCESSORS_CONF);
        if (n < 1) n = 1;
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((int)((g_cpu + t->index) % n), &set);
        pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    }
    pthread_setname_np(pthread_self(), "pkbs-loop");
    sigset_t pipe_set; /* see the top: OpenSSL's writes may raise SIGPIPE */
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, NULL);
    t->scratch = malloc(PKBS_SCRATCH);
    t->rng = 0x9E3779B97F4A7C15ull * (uint64_t)(t->index + 1) ^ now_ns();
    if (!t->rng) t->rng = 1;
    struct epoll_event evs[PKBS_MAX_EVENTS];
    while (!atomic_load_explicit(&g_stopping, memory_order_acquire)) {
        int n = epoll_wait(t->epfd, evs, PKBS_MAX_EVENTS, hold_timeout(t));
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        bool woken = false;
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if ((char *)p >= g_listen_tags && (char *)p < g_listen_tags + PKBS_MAX_REPLICAS) {
                on_accept(t, (int)((char *)p - g_listen_tags));
            } else if (p == &g_wake_tag) {
                uint64_t v;
                (void)!read(t->evfd, &v, sizeof(v));
                woken = true;
            } else {
                struct pkbs_conn *c = p;
                uint32_t e = evs[i].events;
                if (c->held) {
                    /* Not reading until the release: only a dead peer ends it early. */
                    if (e & (EPOLLERR | EPOLLHUP)) conn_close(t, c);
                } else if (c->want_out) {
                    if (e & (EPOLLOUT | EPOLLERR | EPOLLHUP)) {
                        /* Once the backlog is written, EPOLLIN is back and
                         * level-triggered reports unread requests. */
                        bool read_again = c->tls_read_wants_write;
                        c->tls_read_wants_write = false;
                        if (flush_out(t, c) && read_again) on_readable(t, c);
                    }
                } else if (e & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
                    on_readable(t, c);
                }
            }
        }
        if (t->held) release_held(t);
        if (woken) apply_kills(t);
    }
    free(t->scratch);
    t->scratch = NULL;
    return NULL;
}

/* ---------------------------------------------------------- start / stop */

static int make_listener(const char *host, uint16_t port, uint16_t *bound) {
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof(ss));
    if (!host) host = "127.0.0.1";
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons(port);
        sl = sizeof(*a4);
    } else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons(port);
        sl = sizeof(*a6);
    } else {
        errno = EINVAL;
        return -1;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, 4096) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (bound)
        *bound = ntohs(ss.ss_family == AF_INET ? a4->sin_port : a6->sin6_port);
    return fd;
}

static void close_listeners(int count) {
    for (int r = 0; r < count; r++) {
        close(g_listen_fds[r]);
        g_listen_fds[r] = -1;
        g_ports[r] = 0;
    }
}

static void destroy_threads(int count) {
    for (int i = 0; i < count; i++) {
        struct pkbs_thread *t = &g_threads[i];
        while (t->conns) conn_close(t, t->conns);
        if (t->epfd >= 0) close(t->epfd);
        if (t->evfd >= 0) close(t->evfd);
        t->epfd = t->evfd = -1;
    }
}

static void stop_threads(int started) {
    atomic_store_explicit(&g_stopping, true, memory_order_release);
    for (int i = 0; i < started; i++) {
        uint64_t one = 1;
        (void)!write(g_threads[i].evfd, &one, sizeof(one));
    }
    for (int i = 0; i < started; i++) pthread_join(g_threads[i].tid, NULL);
}

/* Fills a's block with copies of the len-byte answer; false if out of memory. */
static bool make_block(struct pkbs_answer *a, const char *answer, size_t len) {
    size_t copies = PKBS_BLOCK_TARGET / len;
    if (copies < 1) copies = 1;
    if (copies > PKBS_COPIES) copies = PKBS_COPIES;
    char *block = realloc(a->block, copies * len);
    if (!block) return false;
    a->block = block;
    a->block_len = copies * len;
    a->len = len;
    for (size_t i = 0; i < copies; i++) memcpy(block + i * len, answer, len);
    return true;
}

int pkbs_start(const char *host, uint16_t port, int threads, uint16_t *bound_port) {
    pthread_mutex_lock(&g_lock);
    if (g_running) {
        pthread_mutex_unlock(&g_lock);
        errno = EBUSY;
        return -1;
    }
    if (threads < 1) threads = 1;
    if (threads > PKBS_MAX_THREADS) threads = PKBS_MAX_THREADS;
    bool blocks = make_block(&g_main, g_answer ? g_answer : k_answer, g_answer_len);
    for (int r = 0; r < g_replicas && blocks; r++) {
        g_replica_answers[r] = &g_main;
        if (!g_status[r]) continue;
        char head[96];
        int n = snprintf(head, sizeof(head), "HTTP/1.1 %d Replica Failing\r\nContent-Length: 0\r\n\r\n", g_status[r]);
        blocks = make_block(&g_status_answers[r], head, (size_t)n);
        g_replica_answers[r] = &g_status_answers[r];
    }
    if (!blocks) {
        pthread_mutex_unlock(&g_lock);
        errno = ENOMEM;
        return -1;
    }

    /* Replica r on port + r, or each on a free port when port is 0. */
    if (port && (int)port + g_replicas - 1 > 65535) {
        pthread_mutex_unlock(&g_lock);
        errno = EINVAL;
        return -1;
    }
    for (int r = 0; r < g_replicas; r++) {
        g_listen_fds[r] = make_listener(host, port ? (uint16_t)(port + r) : 0, &g_ports[r]);
        if (g_listen_fds[r] < 0) {
            int e = errno;
            close_listeners(r);
            pthread_mutex_unlock(&g_lock);
            errno = e;
            return -1;
        }
    }
    atomic_store(&g_stopping, false);
    atomic_store(&g_killed, 0);
    int err = 0, made = 0, started = 0;
    for (int i = 0; i < threads; i++) {
        struct pkbs_thread *t = &g_threads[i];
        memset(t, 0, sizeof(*t));
        t->index = i;
        t->epfd = epoll_create1(EPOLL_CLOEXEC);
        t->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        made++;
        if (t->epfd < 0 || t->evfd < 0) { err = errno; break; }
        struct epoll_event wev = { .events = EPOLLIN, .data.ptr = &g_wake_tag };
        if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->evfd, &wev) != 0) { err = errno; break; }
        for (int r = 0; r < g_replicas && !err; r++) {
            struct epoll_event lev = { .events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = &g_listen_tags[r] };
            if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, g_listen_fds[r], &lev) != 0) err = errno;
        }
        if (err) break;
    }
    if (!err) {
        for (int i = 0; i < threads; i++) {
            int rc = pthread_create(&g_threads[i].tid, NULL, loop_main, &g_threads[i]);
            if (rc != 0) { err = rc; break; }
            started++;
        }
    }
    if (err) {
        stop_threads(started);
        destroy_threads(made);
        close_listeners(g_replicas);
        pthread_mutex_unlock(&g_lock);
        errno = err;
        return -1;
    }
    g_nthreads = threads;
    g_running = true;
    pthread_mutex_unlock(&g_lock);
    if (bound_port) *bound_port = g_ports[0];
    return 0;
}

void pkbs_stop(void) {
    pthread_mutex_lock(&g_lock);
    if (!g_running) {
        pthread_mutex_unlock(&g_lock);
        return;
    }
    stop_threads(g_nthreads);
    for (int i = 0; i < g_nthreads; i++) g_served_before += g_threads[i].served;
    destroy_threads(g_nthreads);
    close_listeners(g_replicas);
    g_running = false;
    g_nthreads = 0;
    pthread_mutex_unlock(&g_lock);
}
