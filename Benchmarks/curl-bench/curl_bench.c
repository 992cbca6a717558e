/*
 * curl-bench: the libcurl side of scripts/bench-bodies.sh. A libcurl multi
 * interface client: C easy handles on one multi handle (one thread), each
 * running requests back to back on its kept-alive connection until N
 * requests are done in all.
 *
 *   curl-bench --url URL --requests N --connections C [--warmup W]
 *              [--sink discard|file:PATH] [--compressed]
 *              [--upload-file PATH] [--max-seconds T] [--buffer-size BYTES]
 *              [--cacert FILE] [--rate R]
 *
 * --url URL          given several times: the replicas of one set, each
 *                    request to the next in turn (round-robin)
 * --rate R           open loop: request i of the measured phase is due at
 *                    i / R seconds, whatever the earlier answers did, and
 *                    goes out then on a free slot (at most C in flight);
 *                    its latency runs from its due time, not from when it
 *                    went out (the correction for coordinated omission, as
 *                    wrk2 makes it). --requests is then the requests offered;
 *                    one not started within 10 ms of the last due time is
 *                    offered, not sent. A pacer thread wakes the multi
 *                    handle at each due time (curl_multi_wakeup).
 * --sink discard     the write callback only counts the bytes (default)
 * --sink file:PATH   the write callback fwrite()s them to PATH, truncated at
 *                    the start of each request (with C > 1, connection i > 0
 *                    writes to PATH.i)
 * --compressed       Accept-Encoding "gzip, deflate"; libcurl decodes, the
 *                    decoded bytes are counted
 * --upload-file PATH PUT the file (Content-Length, CURLOPT_UPLOAD); the bytes
 *                    uploaded are counted instead of the response's
 * --warmup W         W requests first, unmeasured (default 0)
 * --max-seconds T    start no new measured request after T seconds
 * --buffer-size B    CURLOPT_BUFFERSIZE (default: libcurl's, 16 KiB)
 * --proxy URL        CURLOPT_PROXY (default: none, whatever the environment says)
 * --unix-socket PATH CURLOPT_UNIX_SOCKET_PATH
 * --cacert FILE      CURLOPT_CAINFO
 * --close            CURLOPT_FORBID_REUSE: a new connection per request
 *
 * Prints one JSON line:
 *   {"requests":N,"errors":E,"elapsed_s":S,"rps":R,"bytes":B,"mb_per_s":M,
 *    "p50_us":…,"p90_us":…,"p99_us":…,"p999_us":…,"p9999_us":…,"offered":O|null,"sent":S,
 *    "latency_percentiles":[[50,…],…],"peak_rss_kib":K}
 * requests = measured requests finished, errors = those that failed (curl
 * error or status outside 2xx; the first is printed to stderr), rps =
 * successful requests / elapsed, bytes = body bytes of the successful ones
 * (decoded response bytes, or uploaded bytes), mb_per_s = bytes / 1e6 /
 * elapsed. Latencies are libcurl's CURLINFO_TOTAL_TIME_T of each successful
 * measured request (with --rate: from its due time to its end), the last 16M
 * of them, the percentiles nearest-rank;
 * peak_rss_kib is getrusage's ru_maxrss (the charts' scaling run).
 * Exits 1 when every measured request failed, 2 on bad usage.
 *
 * Build: cc -O2 Benchmarks/curl-bench/curl_bench.c -o curl-bench -lcurl
 */
#define _GNU_SOURCE
#include <curl/curl.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#define MAX_URLS 64

struct options {
    const char *urls[MAX_URLS];
    int nurls;
    double rate;         /* 0: closed loop */
    long requests, connections, warmup, buffer_size;
    double max_seconds;  /* 0: no limit */
    const char *sink_path; /* NULL: discard */
    const char *upload_path; /* NULL: GET */
    const char *proxy, *unix_socket, *cacert; /* NULL: none */
    bool compressed, close_each;
};

/* One easy handle and what its current request uses. */
struct slot {
    CURL *easy;
    FILE *sink;     /* --sink file: */
    FILE *upload;   /* --upload-file */
    curl_off_t body; /* body bytes of the current request (received or sent) */
    double due;     /* --rate: the current request's due time (now_s clock) */
    char error[CURL_ERROR_SIZE];
};

/* What one phase (warmup or measured) counted. */
struct tally {
    long started, finished, errors;
    curl_off_t bytes;
};

/* Latencies of the measured phase (µs), a ring of the most recent ones;
 * capacity 0 during the warmup. */
struct latencies {
    curl_off_t *us;
    long capacity, count;
};

static int cmp_off(const void *a, const void *b) {
    curl_off_t x = *(const curl_off_t *)a, y = *(const curl_off_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of the sorted samples. */
static double percentile(const struct latencies *l, long n, double p) {
    if (n == 0) return 0;
    long rank = (long)(p / 100.0 * (double)n + 0.999999);
    if (rank < 1) rank = 1;
    if (rank > n) rank = n;
    return (double)l->us[rank - 1];
}

static bool g_error_printed;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die_usage(const char *msg) {
    if (msg) fprintf(stderr, "curl-bench: %s\n", msg);
    fputs("usage: curl-bench --url URL --requests N --connections C [--warmup W]\n"
          "                  [--sink discard|file:PATH] [--compressed] [--upload-file PATH]\n"
          "                  [--max-seconds T] [--buffer-size BYTES] [--proxy URL]\n"
          "                  [--unix-socket PATH] [--cacert FILE] [--close]\n",
          stderr);
    exit(2);
}

static long parse_long(const char *flag, const char *v, long lo) {
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo) {
        fprintf(stderr, "curl-bench: %s needs an integer >= %ld\n", flag, lo);
        exit(2);
    }
    return x;
}

static void parse_options(int argc, char **argv, struct options *o) {
    memset(o, 0, sizeof(*o));
    o->requests = -1;
    o->connections = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) die_usage(NULL);
        if (strcmp(a, "--compressed") == 0) {
            o->compressed = true;
            continue;
        }
        if (strcmp(a, "--close") == 0) {
            o->close_each = true;
            continue;
        }
        if (i + 1 >= argc) die_usage("missing value");
        const char *v = argv[++i];
        if (strcmp(a, "--url") == 0) {
            if (o->nurls == MAX_URLS) die_usage("at most 64 --url");
            o->urls[o->nurls++] = v;
        } else if (strcmp(a, "--rate") == 0) {
            char *end = NULL;
            o->rate = strtod(v, &end);
            if (end == v || *end || !(o->rate > 0)) die_usage("--rate needs requests per second > 0");
        }
        else if (strcmp(a, "--requests") == 0) o->requests = parse_long(a, v, 1);
        else if (strcmp(a, "--connections") == 0) o->connections = parse_long(a, v, 1);
        else if (strcmp(a, "--warmup") == 0) o->warmup = parse_long(a, v, 0);
        else if (strcmp(a, "--buffer-size") == 0) o->buffer_size = parse_long(a, v, 1024);
        else if (strcmp(a, "--upload-file") == 0) o->upload_path = v;
        else if (strcmp(a, "--proxy") == 0) o->proxy = v;
        else if (strcmp(a, "--unix-socket") == 0) o->unix_socket = v;
        else if (strcmp(a, "--cacert") == 0) o->cacert = v;
        else if (strcmp(a, "--max-seconds") == 0) {
            char *end = NULL;
            o->max_seconds = strtod(v, &end);
            if (end == v || *end || o->max_seconds <= 0) die_usage("--max-seconds needs a positive number");
        } else if (strcmp(a, "--sink") == 0) {
            if (strcmp(v, "discard") == 0) o->sink_path = NULL;
            else if (strncmp(v, "file:", 5) == 0 && v[5]) o->sink_path = v + 5;
            else die_usage("--sink is discard or file:PATH");
        } else {
            die_usage("unknown option");
        }
    }
    if (!o->nurls) die_usage("--url is required");
    if (o->requests < 0) die_usage("--requests is required");
    if (o->cacert && access(o->cacert, R_OK) != 0) {
        fprintf(stderr, "curl-bench: --cacert %s: %s\n", o->cacert, strerror(errno));
        exit(2);
    }
}

static size_t on_body(char *data, size_t size, size_t n, void *arg) {
    struct slot *s = arg;
    size_t len = size * n;
    if (s->sink && fwrite(data, 1, len, s->sink) != len) return 0; /* fails the transfer */
    if (!s->upload) s->body += (curl_off_t)len;
    return len;
}

static size_t on_read(char *buf, size_t size, size_t n, void *arg) {
    struct slot *s = arg;
    size_t got = fread(buf, 1, size * n, s->upload);
    if (got == 0 && ferror(s->upload)) return CURL_READFUNC_ABORT;
    s->body += (curl_off_t)got;
    return got;
}

static FILE *open_or_die(const char *path, const char *mode) {
    FILE *f = fopen(path, mode);
    if (!f) {
        fprintf(stderr, "curl-bench: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    return f;
}

static void setup_slot(struct slot *s, long index, const struct options *o, curl_off_t upload_size) {
    memset(s, 0, sizeof(*s));
    s->easy = curl_easy_init();
    if (!s->easy) {
        fputs("curl-bench: curl_easy_init failed\n", stderr);
        exit(1);
    }
    if (o->sink_path) {
        char path[4096];
        if (index == 0) snprintf(path, sizeof(path), "%s", o->sink_path);
        else snprintf(path, sizeof(path), "%s.%ld", o->sink_path, index);
        s->sink = open_or_die(path, "wb");
    }
    CURL *e = s->easy;
    curl_easy_setopt(e, CURLOPT_URL, o->urls[0]);
    curl_easy_setopt(e, CURLOPT_PROXY, o->proxy ? o->proxy : ""); /* never a proxy from the environment */
    if (o->unix_socket) curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, o->unix_socket);
    if (o->cacert) curl_easy_setopt(e, CURLOPT_CAINFO, o->cacert);
    if (o->close_each) curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, s->error);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
    if (o->buffer_size) curl_easy_setopt(e, CURLOPT_BUFFERSIZE, o->buffer_size);
    if (o->compressed) curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "gzip, deflate");
    if (o->upload_path) {
        s->upload = open_or_die(o->upload_path, "rb");
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(e, CURLOPT_READDATA, s);
        curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, upload_size);
    }
}

static const struct options *g_options;
static unsigned long g_turn; /* the next replica (--url given several times) */

/* Resets the slot for its next request and hands it to the multi handle. */
static void start_request(CURLM *multi, struct slot *s) {
    if (g_options->nurls > 1) curl_easy_setopt(s->easy, CURLOPT_URL, g_options->urls[g_turn++ % (unsigned long)g_options->nurls]);
    s->body = 0;
    s->error[0] = 0;
    if (s->sink) {
        fflush(s->sink);
        if (ftruncate(fileno(s->sink), 0) != 0) perror("curl-bench: ftruncate");
        rewind(s->sink);
    }
    if (s->upload) rewind(s->upload);
    curl_multi_add_handle(multi, s->easy);
}

static void first_error(const char *what) {
    if (g_error_printed) return;
    g_error_printed = true;
    fprintf(stderr, "curl-bench: first error: %s\n", what);
}

/* Counts the transfer that `msg` says has ended, takes its handle off the
 * multi handle and returns its slot. A success's latency goes into `lat`:
 * with `open_loop` from the slot's due time, else libcurl's total time. */
static struct slot *finish_transfer(CURLM *multi, CURLMsg *msg, struct tally *t, struct latencies *lat,
                                    bool open_loop) {
    CURL *e = msg->easy_handle;
    CURLcode rc = msg->data.result;
    struct slot *s = NULL;
    curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&s);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_multi_remove_handle(multi, e);
    double done = now_s();
    t->finished++;
    if (rc != CURLE_OK) {
        t->errors++;
        first_error(s->error[0] ? s->error : curl_easy_strerror(rc));
    } else if (status < 200 || status > 299) {
        t->errors++;
        char what[48];
        snprintf(what, sizeof(what), "HTTP status %ld", status);
        first_error(what);
    } else {
        t->bytes += s->body;
        curl_off_t us = 0;
        if (open_loop) us = (curl_off_t)((done - s->due) * 1e6);
        else if (curl_easy_getinfo(e, CURLINFO_TOTAL_TIME_T, &us) != CURLE_OK) return s;
        if (lat->capacity > 0) lat->us[lat->count++ % lat->capacity] = us > 1 ? us : 1;
    }
    return s;
}

/* curl_multi_perform, or exit on its failure; returns the transfers running. */
static int perform(CURLM *multi) {
    int running = 0;
    CURLMcode mc = curl_multi_perform(multi, &running);
    if (mc != CURLM_OK) {
        fprintf(stderr, "curl-bench: curl_multi_perform: %s\n", curl_multi_strerror(mc));
        exit(1);
    }
    return running;
}

/* Runs `count` requests (fewer if the deadline passes) on the slots, each
 * slot starting its next request as soon as its last one finished. */
static struct tally run_phase(CURLM *multi, struct slot *slots, long nslots, long count, double deadline,
                              struct latencies *lat) {
    struct tally t = {0};
    long active = 0;
    for (long i = 0; i < nslots && t.started < count; i++, t.started++, active++)
        start_request(multi, &slots[i]);
    while (active > 0) {
        int running = perform(multi);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(multi, &left))) {
            if (msg->msg != CURLMSG_DONE) continue;
            struct slot *s = finish_transfer(multi, msg, &t, lat, false);
            active--;
            if (t.started < count && (deadline == 0 || now_s() < deadline)) {
                start_request(multi, s);
                t.started++;
                active++;
            }
        }
        if (active > 0 && running > 0) curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    return t;
}

/* --rate: wakes the multi handle at each due time until the phase ends. */
struct pacer {
    CURLM *multi;
    double start, interval;
    long offered;
    atomic_bool done;
};

static void *pace(void *arg) {
    struct pacer *p = arg;
    for (long i = 0; i < p->offered && !atomic_load(&p->done); i++) {
        double due = p->start + (double)i * p->interval;
        struct timespec ts = { .tv_sec = (time_t)due, .tv_nsec = (long)((due - (double)(time_t)due) * 1e9) };
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
        curl_multi_wakeup(p->multi);
    }
    return NULL;
}

/* The open loop: request i is due at t0 + i / rate and starts then on a
 * free slot, or as soon as one is free; its latency runs from its due time.
 * Requests not started by 10 ms after the last due time are not sent. */
static struct tally run_open_phase(CURLM *multi, struct slot *slots, long nslots, long offered, double rate,
                                   struct latencies *lat, long *sent) {
    struct tally t = {0};
    struct slot **free_slots = malloc((size_t)nslots * sizeof(*free_slots));
    if (!free_slots) exit(1);
    long nfree = nslots, active = 0;
    for (long i = 0; i < nslots; i++) free_slots[i] = &slots[nslots - 1 - i];
    struct pacer p = { .multi = multi, .start = now_s(), .interval = 1.0 / rate, .offered = offered };
    atomic_init(&p.done, false);
    double closes = p.start + (double)(offered - 1) * p.interval + 0.010;
    pthread_t pacer;
    if (pthread_create(&pacer, NULL, pace, &p) != 0) exit(1);
    bool sending = true;
    for (;;) {
        double now = now_s();
        if (sending && now > closes) sending = false;
        while (sending && t.started < offered && nfree > 0 && p.start + (double)t.started * p.interval <= now) {
            struct slot *s = free_slots[--nfree];
            s->due = p.start + (double)t.started * p.interval;
            start_request(multi, s);
            t.started++;
            active++;
        }
        if (t.started == offered) sending = false;
        if (!sending && active == 0) break;
        (void)perform(multi);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(multi, &left))) {
            if (msg->msg != CURLMSG_DONE) continue;
            free_slots[nfree++] = finish_transfer(multi, msg, &t, lat, true);
            active--;
        }
        /* Due requests with a free slot go out at once; else the pacer or a socket wakes us. */
        bool due_now = sending && nfree > 0 && t.started < offered && p.start + (double)t.started * p.interval <= now_s();
        if (!due_now) curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    atomic_store(&p.done, true);
    curl_multi_wakeup(multi);
    pthread_join(pacer, NULL);
    free(free_slots);
    *sent = t.started;
    return t;
}

int main(int argc, char **argv) {
    struct options o;
    parse_options(argc, argv, &o);
    g_options = &o;

    curl_off_t upload_size = 0;
    if (o.upload_path) {
        struct stat st;
        if (stat(o.upload_path, &st) != 0) {
            fprintf(stderr, "curl-bench: %s: %s\n", o.upload_path, strerror(errno));
            return 1;
        }
        upload_size = (curl_off_t)st.st_size;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fputs("curl-bench: curl_global_init failed\n", stderr);
        return 1;
    }
    CURLM *multi = curl_multi_init();
    if (!multi) {
        fputs("curl-bench: curl_multi_init failed\n", stderr);
        return 1;
    }
    /* At most C connections, each kept alive between its slot's requests. */
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, o.connections);
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, o.connections);

    struct slot *slots = calloc((size_t)o.connections, sizeof(*slots));
    if (!slots) return 1;
    for (long i = 0; i < o.connections; i++) {
        setup_slot(&slots[i], i, &o, upload_size);
        curl_easy_setopt(slots[i].easy, CURLOPT_PRIVATE, (char *)&slots[i]);
    }

    struct latencies none = {0}, lat = {0};
    lat.capacity = o.requests < (1L << 24) ? o.requests : (1L << 24);
    lat.us = malloc((size_t)lat.capacity * sizeof(*lat.us)); /* untouched pages cost no RSS */
    if (!lat.us) return 1;
    if (o.warmup > 0) (void)run_phase(multi, slots, o.connections, o.warmup, 0, &none);
    double t0 = now_s();
    long sent = 0;
    struct tally t = o.rate > 0 ? run_open_phase(multi, slots, o.connections, o.requests, o.rate, &lat, &sent)
                                : run_phase(multi, slots, o.connections, o.requests,
                                            o.max_seconds > 0 ? t0 + o.max_seconds : 0, &lat);
    if (o.rate == 0) sent = t.started;
    for (long i = 0; i < o.connections; i++)
        if (slots[i].sink) fflush(slots[i].sink); /* the last body is on its way to the file */
    double elapsed = now_s() - t0;

    long ok = t.finished - t.errors;
    long n = lat.count < lat.capacity ? lat.count : lat.capacity;
    qsort(lat.us, (size_t)n, sizeof(*lat.us), cmp_off);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"requests\":%ld,\"errors\":%ld,\"elapsed_s\":%.6f,\"rps\":%.1f,\"bytes\":%lld,\"mb_per_s\":%.1f,"
           "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,\"p9999_us\":%.1f,",
           t.finished, t.errors, elapsed, elapsed > 0 ? (double)ok / elapsed : 0.0, (long long)t.bytes,
           elapsed > 0 ? (double)t.bytes / 1e6 / elapsed : 0.0, percentile(&lat, n, 50), percentile(&lat, n, 90),
           percentile(&lat, n, 99), percentile(&lat, n, 99.9), percentile(&lat, n, 99.99));
    if (o.rate > 0) printf("\"rate\":%.1f,\"offered\":%ld,", o.rate, o.requests);
    else printf("\"offered\":null,");
    printf("\"sent\":%ld,\"replicas\":%d,\"latency_percentiles\":[", sent, o.nurls);
    /* The percentiles pocket-bench's report draws, each once the samples can tell it from the maximum. */
    static const double curve[] = {0, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.995, 99.999};
    for (size_t i = 0, first = 1; n > 0 && i < sizeof(curve) / sizeof(curve[0]); i++) {
        if (curve[i] > 50 && (double)n < 1.0 / (1.0 - curve[i] / 100.0) - 0.5) break;
        printf("%s[%.3f,%.1f]", first ? "" : ",", curve[i], curve[i] == 0 ? (double)lat.us[0] : percentile(&lat, n, curve[i]));
        first = 0;
    }
    printf("],\"peak_rss_kib\":%ld}\n", ru.ru_maxrss);
    fflush(stdout);

    for (long i = 0; i < o.connections; i++) {
        curl_easy_cleanup(slots[i].easy);
        if (slots[i].sink) fclose(slots[i].sink);
        if (slots[i].upload) fclose(slots[i].upload);
    }
    free(slots);
    free(lat.us);
    curl_multi_cleanup(multi);
    curl_global_cleanup();
    return t.finished > 0 && ok == 0 ? 1 : 0;
}
