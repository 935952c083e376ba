/*
 * tap: a TCP relay on 127.0.0.1 that notes when each HTTP request for a Stripe Source passes.
 * The poll benchmark puts it between stpd and stripe-test-server (stpd's --stripe-api-base
 * names the tap), so each poll's request times are known without any change to either.
 *
 *   tap UPSTREAM_PORT LOG_PATH
 *
 * Listens on an ephemeral port of 127.0.0.1 and prints "listening on PORT" once it accepts.
 * Every byte is relayed unchanged both ways. In the client-to-upstream direction each line that
 * holds "GET /v1/sources/ID" (a request line; a body without a final newline may precede it)
 * appends "MONOTONIC_NS ID\n" to LOG_PATH, with CLOCK_MONOTONIC at the read that completed the
 * line (the same clock as Python's time.monotonic_ns()). The log is flushed after each batch
 * of events, so a reader sees it while the tap runs. Runs until SIGTERM/SIGINT.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { MAX_EVENTS = 256, CHUNK = 65536, LINE_MAX_KEEP = 8192 };

static const char NEEDLE[] = "GET /v1/sources/";

/* One direction of a relayed connection: bytes read from `from` are written to `to`. */
typedef struct side side_t;
struct side {
    int fd;
    side_t *peer;
    char *pending; /* read from this side's peer, not yet written to this side */
    size_t pending_len, pending_off;
    int scan;      /* this side's incoming bytes are client requests */
    char line[LINE_MAX_KEEP];
    size_t line_len;
    int closed;
};

static volatile sig_atomic_t stopping = 0;
static void on_signal(int sig) { (void)sig; stopping = 1; }
static FILE *logf;
static int ep;

static void die(const char *what) {
    perror(what);
    exit(1);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) die("fcntl");
}

static void note_line(const char *line, size_t len, uint64_t t) {
    const char *hit = memmem(line, len, NEEDLE, sizeof NEEDLE - 1);
    if (!hit) return;
    const char *id = hit + sizeof NEEDLE - 1, *end = line + len, *p = id;
    while (p < end && *p != '?' && *p != ' ' && *p != '/' && *p != '\r') p++;
    if (p > id) fprintf(logf, "%llu %.*s\n", (unsigned long long)t, (int)(p - id), id);
}

/* Splits the client's bytes into lines (keeping a line's head if it is very long). */
static void scan(side_t *s, const char *data, size_t len, uint64_t t) {
    while (len) {
        const char *nl = memchr(data, '\n', len);
        size_t piece = nl ? (size_t)(nl - data) : len;
        size_t room = LINE_MAX_KEEP - s->line_len;
        size_t copy = piece < room ? piece : room;
        memcpy(s->line + s->line_len, data, copy);
        s->line_len += copy;
        if (!nl) return;
        note_line(s->line, s->line_len, t);
        s->line_len = 0;
        data = nl + 1;
        len -= piece + 1;
    }
}

static void update_interest(side_t *s) {
    /* Read from a side only while its peer has nothing waiting; write while bytes wait. */
    if (s->closed) return;
    struct epoll_event ev = {.data.ptr = s};
    if (s->peer->pending_len == 0) ev.events |= EPOLLIN;
    if (s->pending_len) ev.events |= EPOLLOUT;
    epoll_ctl(ep, EPOLL_CTL_MOD, s->fd, &ev);
}

/* Closed pairs, freed after the batch of events: one may still name the other side. */
static side_t **graveyard;
static size_t graves, graveyard_cap;

static void close_pair(side_t *s) {
    if (s->closed) return;
    close(s->fd);
    close(s->peer->fd);
    s->closed = s->peer->closed = 1;
    if (graves == graveyard_cap) {
        graveyard_cap = graveyard_cap ? graveyard_cap * 2 : 64;
        graveyard = realloc(graveyard, graveyard_cap * sizeof *graveyard);
        if (!graveyard) die("realloc");
    }
    graveyard[graves++] = s;
}

static void bury(void) {
    for (size_t i = 0; i < graves; i++) {
        free(graveyard[i]->peer->pending);
        free(graveyard[i]->peer);
        free(graveyard[i]->pending);
        free(graveyard[i]);
    }
    graves = 0;
}

static int flush_pending(side_t *s) {
    while (s->pending_off < s->pending_len) {
        ssize_t n = send(s->fd, s->pending + s->pending_off, s->pending_len - s->pending_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
            return -1;
        }
        s->pending_off += (size_t)n;
    }
    s->pending_len = s->pending_off = 0;
    return 0;
}

static void on_readable(side_t *s, char *chunk) {
    side_t *to = s->peer;
    for (;;) {
        ssize_t n = recv(s->fd, chunk, CHUNK, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n <= 0) {
            close_pair(s);
            return;
        }
        if (s->scan) scan(s, chunk, (size_t)n, now_ns());
        size_t off = 0;
        while (off < (size_t)n) {
            ssize_t w = send(to->fd, chunk + off, (size_t)n - off, MSG_NOSIGNAL);
            if (w < 0 && errno == EINTR) continue;
            if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            if (w < 0) {
                close_pair(s);
                return;
            }
            off += (size_t)w;
        }
        if (off < (size_t)n) {
            to->pending = realloc(to->pending, (size_t)n - off);
            if (!to->pending) die("realloc");
            memcpy(to->pending, chunk + off, (size_t)n - off);
            to->pending_len = (size_t)n - off;
            to->pending_off = 0;
            break;
        }
        if ((size_t)n < CHUNK) break;
    }
    update_interest(s);
    update_interest(to);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s UPSTREAM_PORT LOG_PATH\n", argv[0]);
        return 2;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    logf = fopen(argv[2], "w");
    if (!logf) die("fopen");

    struct sockaddr_in up = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    inet_pton(AF_INET, "127.0.0.1", &up.sin_addr);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0) die("socket");
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0) die("bind");
    if (listen(lfd, 1024) < 0) die("listen");
    socklen_t alen = sizeof addr;
    getsockname(lfd, (struct sockaddr *)&addr, &alen);
    set_nonblocking(lfd);

    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("epoll_create1");
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
    printf("listening on %d\n", ntohs(addr.sin_port));
    fflush(stdout);

    char *chunk = malloc(CHUNK);
    if (!chunk) die("malloc");
    struct epoll_event events[MAX_EVENTS];
    while (!stopping) {
        int n = epoll_wait(ep, events, MAX_EVENTS, 1000);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            side_t *s = events[i].data.ptr;
            if (!s) {
                for (;;) {
                    int cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (cfd < 0) break;
                    int ufd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                    if (ufd < 0 || connect(ufd, (struct sockaddr *)&up, sizeof up) < 0) {
                        close(cfd);
                        if (ufd >= 0) close(ufd);
                        continue;
                    }
                    set_nonblocking(ufd);
                    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    setsockopt(ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    side_t *client = calloc(1, sizeof *client), *server = calloc(1, sizeof *server);
                    if (!client || !server) die("calloc");
                    client->fd = cfd;
                    client->scan = 1;
                    server->fd = ufd;
                    client->peer = server;
                    server->peer = client;
                    struct epoll_event ce = {.events = EPOLLIN, .data.ptr = client};
                    struct epoll_event se = {.events = EPOLLIN, .data.ptr = server};
                    epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &ce);
                    epoll_ctl(ep, EPOLL_CTL_ADD, ufd, &se);
                }
                continue;
            }
            if (s->closed) continue;
            if (events[i].events & EPOLLOUT) {
                if (flush_pending(s) < 0) {
                    close_pair(s);
                    continue;
                }
                update_interest(s);
                update_interest(s->peer);
            }
            if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(s, chunk);
        }
        bury();
        fflush(logf);
    }
    fclose(logf);
    return 0;
}
