/*
 * echo: the limit for daemon.ping. A C epoll server on a Unix socket that writes back every
 * complete line it reads, unparsed: what any line-framed server costs with no work at all.
 *
 *   echo SOCKET_PATH
 *
 * Prints "ready" on stdout once it listens. Single-threaded, non-blocking, level-
 * triggered epoll; a connection's unsent bytes wait in its own buffer (EPOLLOUT), and bytes
 * after the last newline wait for the rest of their line. Runs until SIGTERM/SIGINT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

enum { MAX_EVENTS = 256, READ_CHUNK = 65536 };

typedef struct {
    int fd;
    char *in;       /* bytes read, not yet a complete line */
    size_t in_len, in_cap;
    char *out;      /* complete lines not yet written */
    size_t out_len, out_off, out_cap;
    int want_out;   /* EPOLLOUT armed */
} conn_t;

static volatile sig_atomic_t stopping = 0;
static void on_signal(int sig) { (void)sig; stopping = 1; }

static void die(const char *what) { perror(what); exit(1); }

static void reserve(char **buf, size_t *cap, size_t need) {
    if (need <= *cap) return;
    size_t cap2 = *cap ? *cap : 4096;
    while (cap2 < need) cap2 *= 2;
    char *p = realloc(*buf, cap2);
    if (!p) die("realloc");
    *buf = p;
    *cap = cap2;
}

static void close_conn(int ep, conn_t *c) {
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->in);
    free(c->out);
    free(c);
}

/* Writes what is queued; returns -1 when the connection is dead. Arms EPOLLOUT while bytes wait. */
static int flush_out(int ep, conn_t *c) {
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            return -1;
        }
        c->out_off += (size_t)n;
    }
    int want_out = c->out_off < c->out_len;
    if (!want_out) c->out_off = c->out_len = 0;
    if (want_out != c->want_out) {  /* epoll_ctl only when the interest changes */
        struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0), .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->want_out = want_out;
    }
    return 0;
}

static int on_readable(int ep, conn_t *c, char *chunk) {
    for (;;) {
        ssize_t n = recv(c->fd, chunk, READ_CHUNK, 0);
        if (n == 0) return -1;
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            return -1;
        }
        /* Everything up to the last newline (with what was held back) goes out; the rest waits. */
        char *last = memrchr(chunk, '\n', (size_t)n);
        if (!last) {
            reserve(&c->in, &c->in_cap, c->in_len + (size_t)n);
            memcpy(c->in + c->in_len, chunk, (size_t)n);
            c->in_len += (size_t)n;
            continue;
        }
        size_t head = (size_t)(last - chunk) + 1;
        reserve(&c->out, &c->out_cap, c->out_len + c->in_len + head);
        memcpy(c->out + c->out_len, c->in, c->in_len);
        c->out_len += c->in_len;
        c->in_len = 0;
        memcpy(c->out + c->out_len, chunk, head);
        c->out_len += head;
        size_t tail = (size_t)n - head;
        if (tail) {
            reserve(&c->in, &c->in_cap, tail);
            memcpy(c->in, chunk + head, tail);
            c->in_len = tail;
        }
        if ((size_t)n < READ_CHUNK) break;
    }
    return flush_out(ep, c);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s SOCKET_PATH\n", argv[0]);
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (lfd < 0) die("socket");
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(argv[1]) >= sizeof addr.sun_path) {
        fprintf(stderr, "socket path too long\n");
        return 2;
    }
    strcpy(addr.sun_path, argv[1]);
    unlink(argv[1]);
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0) die("bind");
    if (listen(lfd, 1024) < 0) die("listen");

    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("epoll_create1");
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) < 0) die("epoll_ctl");
    printf("ready\n");
    fflush(stdout);

    char *chunk = malloc(READ_CHUNK);
    if (!chunk) die("malloc");
    struct epoll_event events[MAX_EVENTS];
    while (!stopping) {
        int n = epoll_wait(ep, events, MAX_EVENTS, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            conn_t *c = events[i].data.ptr;
            if (!c) {
                for (;;) {
                    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (fd < 0) break;
                    conn_t *nc = calloc(1, sizeof *nc);
                    if (!nc) die("calloc");
                    nc->fd = fd;
                    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = nc};
                    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
                        close(fd);
                        free(nc);
                    }
                }
                continue;
            }
            int dead = 0;
            if (events[i].events & (EPOLLERR | EPOLLHUP)) dead = !(events[i].events & EPOLLIN);
            if (!dead && (events[i].events & EPOLLOUT)) dead = flush_out(ep, c) < 0;
            if (!dead && (events[i].events & EPOLLIN)) dead = on_readable(ep, c, chunk) < 0;
            if (dead) close_conn(ep, c);
        }
    }
    unlink(argv[1]);
    return 0;
}
