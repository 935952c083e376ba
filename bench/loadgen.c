/*
 * loadgen: the load generator of the benchmark suite (bench/run.py drives it). Talks to a
 * newline-framed server on a Unix socket and prints one JSON object of figures on stdout.
 *
 *   loadgen ping SOCKET [-c CONNECTIONS] [-d SECONDS] [-w WARMUP_SECONDS]
 *                       [-r REQUEST_LINE] [-e EXPECTED_SUBSTRING]
 *       Closed loop: each connection has exactly one request in flight; a reply (the next
 *       line) sends the next request at once. Replies during the warmup are not counted.
 *       Reports requests per second and the latency percentiles over the measured window.
 *       A reply without EXPECTED_SUBSTRING (default "\"result\"") counts as an error.
 *
 *   loadgen fanout SOCKET [-n SUBSCRIBERS] [-k EVENTS] [-R ROUNDS] [-t EVENT_TYPE]
 *       N connections each call events.subscribe {filter: {types: [EVENT_TYPE]}}; then, per
 *       round, one more connection calls debug.emit {count: EVENTS}. A sample is the time from
 *       just before the emit request is written to the moment a subscriber has read its
 *       EVENTS-th event line of that round (one sample per subscriber per round).
 *
 * Single-threaded epoll: on a 2-core machine the server gets the other core. Latencies are
 * kept whole (8 bytes each) and sorted at the end, so percentiles are exact.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

enum { MAX_EVENTS = 512, READ_CHUNK = 65536 };

static void die(const char *what) {
    fprintf(stderr, "loadgen: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void fail(const char *message) {
    fprintf(stderr, "loadgen: %s\n", message);
    exit(1);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- samples ------------------------------------------------------------------------------ */

typedef struct {
    uint64_t *v;
    size_t n, cap;
} samples_t;

static void add_sample(samples_t *s, uint64_t ns) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 65536;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v) die("realloc");
    }
    s->v[s->n++] = ns;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted samples, in microseconds. */
static double pct_us(const samples_t *s, double p) {
    if (!s->n) return 0;
    size_t rank = (size_t)(p / 100.0 * (double)s->n + 0.999999);
    if (rank < 1) rank = 1;
    if (rank > s->n) rank = s->n;
    return (double)s->v[rank - 1] / 1000.0;
}

static void print_latency(const char *name, samples_t *s) {
    qsort(s->v, s->n, sizeof *s->v, cmp_u64);
    double sum = 0;
    for (size_t i = 0; i < s->n; i++) sum += (double)s->v[i];
    printf("\"%s\":{\"count\":%zu,\"mean\":%.1f,\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,\"p999\":%.1f,\"max\":%.1f}",
           name, s->n, s->n ? sum / (double)s->n / 1000.0 : 0.0, pct_us(s, 50), pct_us(s, 90), pct_us(s, 99),
           pct_us(s, 99.9), s->n ? (double)s->v[s->n - 1] / 1000.0 : 0.0);
}

/* ---- connections -------------------------------------------------------------------------- */

typedef struct {
    int fd;
    int index;
    uint64_t sent_at;
    char *buf; /* bytes after the last complete line */
    size_t len, cap;
    int lines; /* complete lines read in the current phase */
    int done;
} conn_t;

static void raise_nofile(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static int connect_unix(const char *path) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) fail("socket path too long");
    strcpy(addr.sun_path, path);
    /* Blocking connect: with a full accept backlog it waits instead of failing. */
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) die("connect");
    return fd;
}

static void send_all(int fd, const char *data, size_t len) {
    while (len) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                /* A request is tiny; a full socket buffer means the peer stopped reading. */
                struct timespec pause = {0, 100000};
                nanosleep(&pause, NULL);
                continue;
            }
            die("send");
        }
        data += n;
        len -= (size_t)n;
    }
}

/* Reads one line on a blocking fd (for replies during setup). Returns a malloc'd string. */
static char *read_line_blocking(int fd) {
    size_t cap = 4096, len = 0;
    char *line = malloc(cap);
    if (!line) die("malloc");
    for (;;) {
        char ch;
        ssize_t n = recv(fd, &ch, 1, 0);
        if (n == 0) fail("connection closed during setup");
        if (n < 0) {
            if (errno == EINTR) continue;
            die("recv");
        }
        if (ch == '\n') break;
        if (len + 1 == cap) {
            cap *= 2;
            line = realloc(line, cap);
            if (!line) die("realloc");
        }
        line[len++] = ch;
    }
    line[len] = 0;
    return line;
}

static void set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) die("fcntl");
}

/* ---- ping --------------------------------------------------------------------------------- */

static int run_ping(const char *path, int nconn, double duration, double warmup, const char *request,
                    const char *expect) {
    size_t reqlen = strlen(request);
    char *line = malloc(reqlen + 2);
    if (!line) die("malloc");
    memcpy(line, request, reqlen);
    line[reqlen++] = '\n';

    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("epoll_create1");
    conn_t *conns = calloc((size_t)nconn, sizeof *conns);
    if (!conns) die("calloc");
    for (int i = 0; i < nconn; i++) {
        conns[i].fd = connect_unix(path);
        conns[i].index = i;
        set_nonblocking(conns[i].fd);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &conns[i]};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev) < 0) die("epoll_ctl");
    }

    samples_t lat = {0};
    uint64_t errors = 0, closed = 0, counted = 0;
    char *chunk = malloc(READ_CHUNK);
    if (!chunk) die("malloc");
    uint64_t start = now_ns();
    uint64_t measure_from = start + (uint64_t)(warmup * 1e9);
    uint64_t stop_at = measure_from + (uint64_t)(duration * 1e9);
    for (int i = 0; i < nconn; i++) {
        conns[i].sent_at = now_ns();
        send_all(conns[i].fd, line, reqlen);
    }
    struct epoll_event events[MAX_EVENTS];
    int open_conns = nconn;
    while (open_conns > 0) {
        uint64_t t = now_ns();
        if (t >= stop_at) break;
        int timeout_ms = (int)((stop_at - t) / 1000000u) + 1;
        int n = epoll_wait(ep, events, MAX_EVENTS, timeout_ms);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            conn_t *c = events[i].data.ptr;
            ssize_t got = recv(c->fd, chunk, READ_CHUNK, 0);
            if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (got <= 0) {
                closed++;
                open_conns--;
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                continue;
            }
            uint64_t arrived = now_ns();
            char *p = chunk, *end = chunk + got;
            char *nl;
            while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
                /* The reply is the held-back bytes plus this piece. */
                int ok;
                if (c->len) {
                    size_t piece = (size_t)(nl - p);
                    if (c->len + piece + 1 > c->cap) {
                        c->cap = (c->len + piece + 1) * 2;
                        c->buf = realloc(c->buf, c->cap);
                        if (!c->buf) die("realloc");
                    }
                    memcpy(c->buf + c->len, p, piece);
                    c->buf[c->len + piece] = 0;
                    ok = strstr(c->buf, expect) != NULL;
                    c->len = 0;
                } else {
                    char saved = *nl;
                    *nl = 0;
                    ok = strstr(p, expect) != NULL;
                    *nl = saved;
                }
                if (!ok) errors++;
                if (c->sent_at >= measure_from && arrived <= stop_at) {
                    add_sample(&lat, arrived - c->sent_at);
                    counted++;
                }
                p = nl + 1;
                c->sent_at = now_ns();
                send_all(c->fd, line, reqlen);
            }
            if (p < end) {
                size_t rest = (size_t)(end - p);
                if (c->len + rest + 1 > c->cap) {
                    c->cap = (c->len + rest + 1) * 2;
                    c->buf = realloc(c->buf, c->cap);
                    if (!c->buf) die("realloc");
                }
                memcpy(c->buf + c->len, p, rest);
                c->len += rest;
            }
        }
    }
    uint64_t end_t = now_ns();
    double window = (double)((end_t < stop_at ? end_t : stop_at) - measure_from) / 1e9;
    printf("{\"mode\":\"ping\",\"connections\":%d,\"duration_s\":%.3f,\"requests\":%llu,\"rps\":%.1f,"
           "\"errors\":%llu,\"closed\":%llu,",
           nconn, window, (unsigned long long)counted, window > 0 ? (double)counted / window : 0.0,
           (unsigned long long)errors, (unsigned long long)closed);
    print_latency("latency_us", &lat);
    printf("}\n");
    for (int i = 0; i < nconn; i++) close(conns[i].fd);
    return closed ? 1 : 0;
}

/* ---- fanout ------------------------------------------------------------------------------- */

/* Collects the debug.emit reply (the control connection's only line) and checks it. */
static void on_emit_reply(conn_t *c, const char *data, size_t len, samples_t *emit_reply, uint64_t elapsed) {
    if (c->len + len + 1 > c->cap) {
        c->cap = (c->len + len + 1) * 2;
        c->buf = realloc(c->buf, c->cap);
        if (!c->buf) die("realloc");
    }
    memcpy(c->buf + c->len, data, len);
    c->len += len;
    c->buf[c->len] = 0;
    if (!memchr(c->buf, '\n', c->len)) return;
    if (!strstr(c->buf, "\"firstSeq\"")) {
        fprintf(stderr, "loadgen: debug.emit failed (is stpd running with --debug-methods?): %s\n", c->buf);
        exit(1);
    }
    add_sample(emit_reply, elapsed);
    c->done = 1;
    c->len = 0;
}

static int run_fanout(const char *path, int nsubs, int nevents, int rounds, const char *type) {
    char subscribe[512];
    int sublen = snprintf(subscribe, sizeof subscribe,
                          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"events.subscribe\","
                          "\"params\":{\"filter\":{\"types\":[\"%s\"]}}}\n",
                          type);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("epoll_create1");
    conn_t *subs = calloc((size_t)nsubs, sizeof *subs);
    if (!subs) die("calloc");
    /* Connect and subscribe every subscriber; the subscribe reply comes before any event. */
    for (int i = 0; i < nsubs; i++) {
        subs[i].fd = connect_unix(path);
        subs[i].index = i;
        send_all(subs[i].fd, subscribe, (size_t)sublen);
    }
    for (int i = 0; i < nsubs; i++) {
        char *reply = read_line_blocking(subs[i].fd);
        if (!strstr(reply, "\"subscription\"")) {
            fprintf(stderr, "loadgen: subscribe failed: %s\n", reply);
            exit(1);
        }
        free(reply);
        set_nonblocking(subs[i].fd);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &subs[i]};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, subs[i].fd, &ev) < 0) die("epoll_ctl");
    }
    /* The emit goes out on its own connection, read in the same loop as the events. */
    conn_t control = {.fd = connect_unix(path), .index = -1};
    set_nonblocking(control.fd);
    struct epoll_event cev = {.events = EPOLLIN, .data.ptr = &control};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, control.fd, &cev) < 0) die("epoll_ctl");

    samples_t last = {0}, first = {0}, emit_reply = {0}, round_all = {0};
    char *chunk = malloc(READ_CHUNK);
    if (!chunk) die("malloc");
    struct epoll_event events[MAX_EVENTS];
    int incomplete = 0;
    for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < nsubs; i++) {
            subs[i].lines = 0;
            subs[i].done = 0;
        }
        char emit[256];
        int emitlen = snprintf(emit, sizeof emit,
                               "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"debug.emit\",\"params\":{\"count\":%d}}\n",
                               round + 2, nevents);
        control.len = 0;
        control.done = 0;
        uint64_t t0 = now_ns();
        send_all(control.fd, emit, (size_t)emitlen);
        int remaining = nsubs;
        uint64_t deadline = t0 + 60ull * 1000000000u;
        while (remaining > 0 || !control.done) {
            uint64_t t = now_ns();
            if (t >= deadline) break;
            int n = epoll_wait(ep, events, MAX_EVENTS, (int)((deadline - t) / 1000000u) + 1);
            if (n < 0) {
                if (errno == EINTR) continue;
                die("epoll_wait");
            }
            for (int i = 0; i < n; i++) {
                conn_t *c = events[i].data.ptr;
                ssize_t got = recv(c->fd, chunk, READ_CHUNK, 0);
                if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
                if (got <= 0) fail("a connection closed during the round");
                uint64_t arrived = now_ns();
                if (c == &control) {
                    on_emit_reply(c, chunk, (size_t)got, &emit_reply, arrived - t0);
                    continue;
                }
                int before = c->lines;
                for (char *p = chunk; (p = memchr(p, '\n', (size_t)(chunk + got - p))); p++) c->lines++;
                if (before == 0 && c->lines > 0) add_sample(&first, arrived - t0);
                if (!c->done && c->lines >= nevents) {
                    c->done = 1;
                    remaining--;
                    add_sample(&last, arrived - t0);
                }
            }
        }
        add_sample(&round_all, now_ns() - t0);
        incomplete += remaining;
        /* Let the daemon settle before the next round. */
        struct timespec pause = {0, 200000000};
        nanosleep(&pause, NULL);
    }
    printf("{\"mode\":\"fanout\",\"subscribers\":%d,\"events\":%d,\"rounds\":%d,\"incomplete\":%d,", nsubs,
           nevents, rounds, incomplete);
    print_latency("last_event_us", &last);
    printf(",");
    print_latency("first_event_us", &first);
    printf(",");
    print_latency("emit_reply_us", &emit_reply);
    printf(",");
    print_latency("round_us", &round_all);
    printf("}\n");
    return incomplete ? 1 : 0;
}

/* ---- main --------------------------------------------------------------------------------- */

static void usage(void) {
    fprintf(stderr,
            "usage: loadgen ping SOCKET [-c CONNECTIONS] [-d SECONDS] [-w WARMUP] [-r REQUEST] [-e EXPECT]\n"
            "       loadgen fanout SOCKET [-n SUBSCRIBERS] [-k EVENTS] [-R ROUNDS] [-t TYPE]\n");
    exit(2);
}

int main(int argc, char **argv) {
    if (argc < 3) usage();
    raise_nofile();
    const char *mode = argv[1], *path = argv[2];
    int connections = 1, subscribers = 100, nevents = 10, rounds = 5;
    double duration = 5, warmup = 1;
    const char *request = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.ping\"}";
    const char *expect = "\"result\"";
    const char *type = "debug.test";
    for (int i = 3; i < argc; i++) {
        if (i + 1 >= argc) usage();
        const char *flag = argv[i], *value = argv[++i];
        if (!strcmp(flag, "-c")) connections = atoi(value);
        else if (!strcmp(flag, "-d")) duration = atof(value);
        else if (!strcmp(flag, "-w")) warmup = atof(value);
        else if (!strcmp(flag, "-r")) request = value;
        else if (!strcmp(flag, "-e")) expect = value;
        else if (!strcmp(flag, "-n")) subscribers = atoi(value);
        else if (!strcmp(flag, "-k")) nevents = atoi(value);
        else if (!strcmp(flag, "-R")) rounds = atoi(value);
        else if (!strcmp(flag, "-t")) type = value;
        else usage();
    }
    if (!strcmp(mode, "ping")) {
        if (connections < 1 || duration <= 0 || warmup < 0) usage();
        return run_ping(path, connections, duration, warmup, request, expect);
    }
    if (!strcmp(mode, "fanout")) {
        if (subscribers < 1 || nevents < 1 || rounds < 1) usage();
        return run_fanout(path, subscribers, nevents, rounds, type);
    }
    usage();
    return 2;
}
