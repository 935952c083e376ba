/* A line-echo server on a Unix socket: the limit of what a daemon answering one line with one
 * line can do on this machine (no parsing at all). One thread, epoll, level-triggered; each
 * complete line read is written back as it is.
 *
 *   cc -O2 -o echo bench/echo.c && ./echo /tmp/echo.sock
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

#define BUF 65536

struct conn {
    int fd;
    size_t used;
    char buf[BUF];
};

static void fail(const char *what) {
    perror(what);
    exit(1);
}

static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) { /* a closed-loop client always has room; wait briefly */
                usleep(50);
                continue;
            }
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s SOCKET_PATH\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listener < 0) fail("socket");
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(argv[1]) >= sizeof addr.sun_path) fail("path too long");
    strcpy(addr.sun_path, argv[1]);
    unlink(argv[1]);
    if (bind(listener, (struct sockaddr *)&addr, sizeof addr) < 0) fail("bind");
    if (listen(listener, 1024) < 0) fail("listen");
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
    printf("listening on %s\n", argv[1]);
    fflush(stdout);

    struct epoll_event events[256];
    for (;;) {
        int n = epoll_wait(ep, events, 256, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail("epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            struct conn *c = events[i].data.ptr;
            if (c == NULL) {
                int fd;
                while ((fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    struct conn *nc = malloc(sizeof *nc);
                    nc->fd = fd;
                    nc->used = 0;
                    struct epoll_event cev = {.events = EPOLLIN, .data.ptr = nc};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
                }
                continue;
            }
            ssize_t r = read(c->fd, c->buf + c->used, BUF - c->used);
            if (r <= 0) {
                if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
                close(c->fd);
                free(c);
                continue;
            }
            c->used += (size_t)r;
            char *end = memrchr(c->buf, '\n', c->used);
            if (end == NULL) {
                if (c->used == BUF) c->used = 0; /* a line longer than the buffer: dropped */
                continue;
            }
            size_t whole = (size_t)(end - c->buf) + 1;
            if (write_all(c->fd, c->buf, whole) < 0) {
                close(c->fd);
                free(c);
                continue;
            }
            memmove(c->buf, c->buf + whole, c->used - whole);
            c->used -= whole;
        }
    }
}
