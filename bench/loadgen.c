/* A closed-loop load generator for newline-framed request/reply servers on a Unix socket.
 * Each connection keeps exactly one request in flight: it sends a line, waits for one reply
 * line, records the latency, and sends the next. One thread, epoll.
 *
 *   cc -O2 -o loadgen bench/loadgen.c
 *   ./loadgen -s /run/user/0/stpd.sock -c 16 -d 5 [-w 1] [-r '{"jsonrpc":"2.0","id":1,"method":"daemon.ping"}']
 *
 * Prints one JSON object: connections, requests, errors (replies holding "error"), rps, and
 * latency percentiles in microseconds (1 us resolution up to 1 s).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define BUF 65536
#define HIST 1000000 /* 1 us buckets up to 1 s; slower replies land in the last one */

struct conn {
    int fd;
    uint64_t sent_at;
    size_t used;
    char buf[BUF];
};

static uint32_t hist[HIST + 1];

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fail(const char *what) {
    perror(what);
    exit(1);
}

static double percentile(uint64_t total, double p) {
    uint64_t want = (uint64_t)(p * (double)total);
    if (want >= total) want = total - 1;
    uint64_t seen = 0;
    for (int i = 0; i <= HIST; i++) {
        seen += hist[i];
        if (seen > want) return (double)i;
    }
    return (double)HIST;
}

int main(int argc, char **argv) {
    const char *path = NULL, *request = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.ping\"}";
    int connections = 1;
    double duration = 5, warmup = 1;
    int opt;
    while ((opt = getopt(argc, argv, "s:c:d:w:r:")) != -1) {
        switch (opt) {
        case 's': path = optarg; break;
        case 'c': connections = atoi(optarg); break;
        case 'd': duration = atof(optarg); break;
        case 'w': warmup = atof(optarg); break;
        case 'r': request = optarg; break;
        default:
            fprintf(stderr, "usage: %s -s SOCKET [-c CONNECTIONS] [-d SECONDS] [-w WARMUP] [-r LINE]\n", argv[0]);
            return 2;
        }
    }
    if (path == NULL || connections < 1) {
        fprintf(stderr, "usage: %s -s SOCKET [-c CONNECTIONS] [-d SECONDS] [-w WARMUP] [-r LINE]\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    size_t line_len = strlen(request) + 1;
    char *line = malloc(line_len);
    memcpy(line, request, line_len - 1);
    line[line_len - 1] = '\n';

    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct conn *conns = calloc((size_t)connections, sizeof *conns);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
    for (int i = 0; i < connections; i++) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) fail("socket");
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) fail("connect");
        conns[i].fd = fd;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &conns[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
    uint64_t start = now_ns();
    uint64_t measure_from = start + (uint64_t)(warmup * 1e9);
    uint64_t end = measure_from + (uint64_t)(duration * 1e9);
    for (int i = 0; i < connections; i++) {
        conns[i].sent_at = now_ns();
        if (write(conns[i].fd, line, line_len) != (ssize_t)line_len) fail("write");
    }
    uint64_t requests = 0, errors = 0;
    struct epoll_event events[256];
    int running = 1;
    while (running) {
        int n = epoll_wait(ep, events, 256, 1000);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail("epoll_wait");
        }
        uint64_t t = now_ns();
        if (t >= end) running = 0;
        for (int i = 0; i < n && running; i++) {
            struct conn *c = events[i].data.ptr;
            ssize_t r = read(c->fd, c->buf + c->used, BUF - 1 - c->used);
            if (r <= 0) {
                if (r < 0 && errno == EINTR) continue;
                fprintf(stderr, "connection closed by the server\n");
                return 1;
            }
            c->used += (size_t)r;
            char *nl = memchr(c->buf, '\n', c->used);
            if (nl == NULL) continue;
            t = now_ns();
            if (c->sent_at >= measure_from) {
                uint64_t us = (t - c->sent_at) / 1000;
                hist[us > HIST ? HIST : us]++;
                requests++;
                *nl = 0;
                if (strstr(c->buf, "\"error\"") != NULL) errors++;
            }
            size_t rest = c->used - (size_t)(nl + 1 - c->buf);
            memmove(c->buf, nl + 1, rest);
            c->used = rest;
            c->sent_at = now_ns();
            if (write(c->fd, line, line_len) != (ssize_t)line_len) fail("write");
        }
    }
    double seconds = (double)(now_ns() - measure_from) / 1e9;
    if (requests == 0) {
        printf("{\"connections\":%d,\"requests\":0}\n", connections);
        return 1;
    }
    printf("{\"connections\":%d,\"requests\":%llu,\"errors\":%llu,\"seconds\":%.3f,\"rps\":%.0f,"
           "\"p50_us\":%.0f,\"p90_us\":%.0f,\"p99_us\":%.0f,\"p999_us\":%.0f,\"max_us\":%.0f}\n",
           connections, (unsigned long long)requests, (unsigned long long)errors, seconds,
           (double)requests / seconds, percentile(requests, 0.50), percentile(requests, 0.90),
           percentile(requests, 0.99), percentile(requests, 0.999), percentile(requests, 1.0));
    return 0;
}
