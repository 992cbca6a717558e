/* The counters of CPocketBenchCount.h. */
#include "CPocketBenchCount.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define PKBC_VALGRIND 1
#endif
#endif

int pkbc_on_valgrind(void) {
#ifdef PKBC_VALGRIND
    return RUNNING_ON_VALGRIND ? 1 : 0;
#else
    return 0;
#endif
}

void pkbc_callgrind_start(void) {
#ifdef PKBC_VALGRIND
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_ZERO_STATS;
#endif
}

void pkbc_callgrind_stop(const char *label) {
#ifdef PKBC_VALGRIND
    CALLGRIND_DUMP_STATS_AT(label);
    CALLGRIND_STOP_INSTRUMENTATION;
#else
    (void)label;
#endif
}

static void close_all(pkbc_perf *p) {
    for (int i = 0; i < p->count; i++) close(p->fds[i]);
    p->count = 0;
}

/* Thread `tid`'s name is `comm` (its /proc comm file, without the newline). */
static int thread_named(long tid, const char *comm) {
    char path[64], name[32] = {0};
    snprintf(path, sizeof path, "/proc/self/task/%ld/comm", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, name, sizeof name - 1);
    close(fd);
    if (n <= 0) return 0;
    if (name[n - 1] == '\n') name[n - 1] = 0;
    return strcmp(name, comm) == 0;
}

int pkbc_perf_start(pkbc_perf *p, const char *skip_comm) {
    p->count = 0;
    DIR *dir = opendir("/proc/self/task");
    if (!dir) return -errno;
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_HARDWARE;
    attr.config = PERF_COUNT_HW_INSTRUCTIONS;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    attr.inherit = 1; /* threads the counted ones start later are counted too */
    attr.disabled = 1;
    int err = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        long tid = strtol(e->d_name, NULL, 10);
        if (skip_comm && thread_named(tid, skip_comm)) continue;
        if (p->count == (int)(sizeof p->fds / sizeof p->fds[0])) { err = -EMFILE; break; }
        int fd = (int)syscall(SYS_perf_event_open, &attr, (pid_t)tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            if (errno == ESRCH) continue; /* the thread ended meanwhile */
            err = -errno;
            break;
        }
        p->fds[p->count++] = fd;
    }
    closedir(dir);
    if (err == 0 && p->count == 0) err = -ESRCH;
    if (err) {
        close_all(p);
        return err;
    }
    for (int i = 0; i < p->count; i++) ioctl(p->fds[i], PERF_EVENT_IOC_ENABLE, 0);
    return 0;
}

int pkbc_perf_stop(pkbc_perf *p, uint64_t *out) {
    uint64_t sum = 0;
    int err = 0;
    for (int i = 0; i < p->count; i++) ioctl(p->fds[i], PERF_EVENT_IOC_DISABLE, 0);
    for (int i = 0; i < p->count; i++) {
        uint64_t v = 0;
        if (read(p->fds[i], &v, sizeof v) != (ssize_t)sizeof v) {
            if (!err) err = errno ? -errno : -EIO;
            continue;
        }
        sum += v;
    }
    close_all(p);
    *out = sum;
    return err;
}
