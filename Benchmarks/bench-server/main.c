/*
 * bench-server: Benchmarks/CPocketBenchServer as a standalone process, the
 * upload sink of scripts/bench-bodies.sh (nginx's `return` answers before
 * reading a request body; this server reads every body to its end first).
 *
 *   bench-server [--host ADDR] [--port P] [--cpu K] [--threads T] [--tls CERT.pem]
 *
 * Defaults: 127.0.0.1, port 18081, not pinned, one thread, plain HTTP.
 * With --tls it speaks TLS with a certificate it makes at start, written to
 * CERT.pem (the client's CA file). Runs until SIGTERM or SIGINT, then prints
 * the number of requests answered to stderr.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fputs("usage: bench-server [--host ADDR] [--port P] [--cpu K] [--threads T] [--tls CERT.pem]\n", f);
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

int main(int argc, char **argv) {
    const char *host = "127.0.0.1", *tls_cert = NULL;
    long port = 18081, cpu = -1, threads = 1;
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
    uint16_t bound = 0;
    if (pkbs_start(host, (uint16_t)port, (int)threads, &bound) != 0) {
        fprintf(stderr, "bench-server: cannot listen on %s:%ld: %s\n", host, port, strerror(errno));
        return 1;
    }
    fprintf(stderr, "bench-server: listening on %s:%u (threads %ld, cpu %ld%s)\n", host, bound, threads, cpu,
            tls_cert ? ", TLS" : "");

    int sig = 0;
    while (sigwait(&stop, &sig) != 0) {}
    pkbs_stop();
    fprintf(stderr, "bench-server: %s, %" PRIu64 " requests answered\n", strsignal(sig), pkbs_requests_served());
    return 0;
}
