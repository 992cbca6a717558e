/*
 * bench-server: Benchmarks/CPocketBenchServer as a standalone process, the
 * upload sink of scripts/bench-bodies.sh (nginx's `return` answers before
 * reading a request body; this server reads every body to its end first).
 *
 *   bench-server [--host ADDR] [--port P] [--cpu K] [--threads T] [--tls CERT.pem]
 *                [--replicas N] [--slow-replica K:P:DELAY]...
 *
 * Defaults: 127.0.0.1, port 18081, not pinned, one thread, plain HTTP.
 * With --tls it speaks TLS with a certificate it makes at start, written to
 * CERT.pem (the client's CA file). With --replicas N it listens on ports P
 * to P+N-1, the replicas 1 to N of one set; --slow-replica K:P:DELAY makes
 * replica K answer a share P (0.05) of its requests DELAY (50ms, 800us, 1s)
 * late. Runs until SIGTERM or SIGINT, then prints the number of requests
 * answered to stderr.
 *
 * Build (from the repository root):
 *   cc -D_GNU_SOURCE -O2 -pthread -IBenchmarks/CPocketBenchServer/include \
 *      Benchmarks/CPocketBenchServer/pkbs_server.c Benchmarks/CPocketBenchServer/pkbs_tls.c \
 *      Benchmarks/bench-server/main.c -o bench-server -lssl -lcrypto
 */
#include "CPocketBenchServer.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fputs("usage: bench-server [--host ADDR] [--port P] [--cpu K] [--threads T] [--tls CERT.pem]\n"
          "                    [--replicas N] [--slow-replica K:P:DELAY]...\n", f);
}

static long parse_num(const char *flag, const char *v, long lo, long hi) {
    char *end = NULL;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "bench-server: %s needs a number in [%ld, %ld]\n", flag, lo, hi);
        exit(2);
    }
    return x;
}

/* K:P:DELAY (replica K from 1, share P in (0, 1], DELAY with ns/us/ms/s). */
static void parse_slow(const char *v, long replicas_max) {
    char *end = NULL;
    long k = strtol(v, &end, 10);
    double share = 0, delay = 0;
    bool ok = end != v && *end == ':' && k >= 1 && k <= replicas_max;
    if (ok) {
        const char *p = end + 1;
        share = strtod(p, &end);
        ok = end != p && *end == ':' && share > 0 && share <= 1;
    }
    if (ok) {
        const char *p = end + 1;
        delay = strtod(p, &end);
        double scale = strcmp(end, "ns") == 0 ? 1 : strcmp(end, "us") == 0 ? 1e3 : strcmp(end, "ms") == 0 ? 1e6
                     : strcmp(end, "s") == 0 ? 1e9 : 0;
        delay *= scale;
        ok = end != p && delay > 0 && delay <= 60e9;
    }
    if (!ok || pkbs_set_slow((int)k - 1, share, (uint64_t)delay) != 0) {
        fprintf(stderr, "bench-server: --slow-replica K:P:DELAY: replica K from 1 to %ld, share P in (0, 1], "
                "DELAY up to 60s with its unit (50ms); got '%s'\n", replicas_max, v);
        exit(2);
    }
}

int main(int argc, char **argv) {
    const char *host = "127.0.0.1", *tls_cert = NULL;
    const char *slow[64];
    int nslow = 0;
    long port = 18081, cpu = -1, threads = 1, replicas = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--host") == 0 && v) {
            host = v;
        } else if (strcmp(a, "--tls") == 0 && v) {
            tls_cert = v;
        } else if (strcmp(a, "--port") == 0) {
            port = parse_num(a, v, 0, 65535);
        } else if (strcmp(a, "--cpu") == 0) {
            cpu = parse_num(a, v, -1, 4095);
        } else if (strcmp(a, "--threads") == 0) {
            threads = parse_num(a, v, 1, 64);
        } else if (strcmp(a, "--replicas") == 0) {
            replicas = parse_num(a, v, 1, 64);
        } else if (strcmp(a, "--slow-replica") == 0 && v && nslow < 64) {
            slow[nslow++] = v;
        } else {
            usage(stderr);
            return 2;
        }
        i++;
    }

    /* Block the stop signals in every thread (the server's threads inherit
     * the mask) and wait for them here. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);

    if (pkbs_set_cpu((int)cpu) != 0) {
        fprintf(stderr, "bench-server: no CPU %ld\n", cpu);
        return 1;
    }
    if (tls_cert && pkbs_set_tls(true, tls_cert) != 0) {
        fprintf(stderr, "bench-server: cannot set up TLS (%s): %s\n", tls_cert, strerror(errno));
        return 1;
    }
    if (pkbs_set_replicas((int)replicas) != 0) {
        fprintf(stderr, "bench-server: --replicas %ld: %s\n", replicas, strerror(errno));
        return 2;
    }
    for (int i = 0; i < nslow; i++) parse_slow(slow[i], replicas);
    uint16_t bound = 0;
    if (pkbs_start(host, (uint16_t)port, (int)threads, &bound) != 0) {
        fprintf(stderr, "bench-server: cannot listen on %s:%ld: %s\n", host, port, strerror(errno));
        return 1;
    }
    fprintf(stderr, "bench-server: listening on %s:%u%s (threads %ld, cpu %ld%s)\n", host, bound,
            replicas > 1 ? " and the next ports, one per replica" : "", threads, cpu, tls_cert ? ", TLS" : "");

    int sig = 0;
    while (sigwait(&stop, &sig) != 0) {}
    pkbs_stop();
    fprintf(stderr, "bench-server: %s, %" PRIu64 " requests answered\n", strsignal(sig), pkbs_requests_served());
    return 0;
}
