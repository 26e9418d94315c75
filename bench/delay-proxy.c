/*
 * A TCP proxy that delays every byte by DELAY_US microseconds in each
 * direction: bench/compare.sh's stand-in for `tc qdisc ... netem delay` on
 * kernels built without netem. Bytes keep their order and are never held
 * back by other bytes: each read is queued with its due time and written
 * when due (one FIFO: with a constant delay, due times are in order), so a
 * pipelined connection stays pipelined, as through a slow link.
 *
 *   delay-proxy LISTEN_ADDR LISTEN_PORT UPSTREAM_ADDR UPSTREAM_PORT DELAY_US
 *
 * IPv4 only, one thread, epoll; a timerfd (timer slack 1 ns) wakes it when
 * the oldest chunk is due. Built and run by bench/compare.sh.
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
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

enum { LISTENER, TIMER, CONN };

struct conn {
    int kind;             /* first member: epoll data points here */
    int fd;
    int dead;             /* closed: queued chunks for it are dropped */
    struct conn *peer;
    char *out;            /* due bytes the socket did not take yet */
    size_t out_len, out_cap;
};

struct chunk {
    struct chunk *next;
    struct conn *dst;
    uint64_t due_ns;
    size_t len;
    char data[];
};

static int ep, tfd;
static uint64_t delay_ns;
static struct chunk *head, *tail;
static struct sockaddr_in upstream;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static void arm(void) {
    struct itimerspec its = {0};
    if (head != NULL) {
        its.it_value.tv_sec = head->due_ns / 1000000000u;
        its.it_value.tv_nsec = head->due_ns % 1000000000u;
    }
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void kill_conn(struct conn *c) {
    if (c->dead) return;
    c->dead = 1;
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->out);
    c->out = NULL;
    c->out_len = 0;
    /* the struct stays: queued chunks may still point at it */
    if (c->peer != NULL) kill_conn(c->peer);
}

static void watch(struct conn *c, int want_out) {
    struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0),
                             .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void flush(struct conn *c) {
    size_t off = 0;
    while (off < c->out_len) {
        ssize_t n = write(c->fd, c->out + off, c->out_len - off);
        if (n > 0) {
            off += n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            break;
        } else {
            kill_conn(c);
            return;
        }
    }
    memmove(c->out, c->out + off, c->out_len - off);
    int had = c->out_len > 0;
    c->out_len -= off;
    if (c->out_len > 0 || had) watch(c, c->out_len > 0);
}

static void deliver(struct chunk *k) {
    struct conn *c = k->dst;
    if (c->dead) return;
    if (c->out_len + k->len > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 65536;
        while (cap < c->out_len + k->len) cap *= 2;
        char *p = realloc(c->out, cap);
        if (p == NULL) {
            kill_conn(c);
            return;
        }
        c->out = p;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, k->data, k->len);
    c->out_len += k->len;
}

static void on_timer(void) {
    uint64_t expirations;
    if (read(tfd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN) {
        perror("timerfd read");
    }
    uint64_t now = now_ns();
    struct conn *touched[256];
    int ntouched = 0;
    while (head != NULL && head->due_ns <= now) {
        struct chunk *k = head;
        head = k->next;
        if (head == NULL) tail = NULL;
        struct conn *c = k->dst;
        int queued = c->out_len > 0;
        deliver(k);
        free(k);
        if (!queued && !c->dead) {
            if (ntouched == 256) {
                for (int i = 0; i < ntouched; i++) flush(touched[i]);
                ntouched = 0;
            }
            touched[ntouched++] = c;
        }
    }
    /* one write per connection for all of its due chunks */
    for (int i = 0; i < ntouched; i++) {
        if (!touched[i]->dead) flush(touched[i]);
    }
    arm();
}

static void on_read(struct conn *c) {
    char buf[65536];
    for (;;) {
        ssize_t n = read(c->fd, buf, sizeof(buf));
        if (n > 0) {
            struct chunk *k = malloc(sizeof(*k) + n);
            if (k == NULL) {
                kill_conn(c);
                return;
            }
            k->next = NULL;
            k->dst = c->peer;
            k->due_ns = now_ns() + delay_ns;
            k->len = n;
            memcpy(k->data, buf, n);
            if (tail != NULL) {
                tail->next = k;
            } else {
                head = k;
                arm();
            }
            tail = k;
            if ((size_t) n < sizeof(buf)) return;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            return;
        } else {
            /* EOF or error: both sides go (Redis clients do not half-close) */
            kill_conn(c);
            return;
        }
    }
}

static struct conn *new_conn(int fd) {
    struct conn *c = calloc(1, sizeof(*c));
    if (c == NULL) return NULL;
    c->kind = CONN;
    c->fd = fd;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    return c;
}

static void on_accept(int lfd) {
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        /* a blocking connect: the upstream is a local Redis */
        int ufd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (ufd < 0 || connect(ufd, (struct sockaddr *) &upstream,
                               sizeof(upstream)) != 0) {
            perror("connect upstream");
            if (ufd >= 0) close(ufd);
            close(fd);
            continue;
        }
        if (fcntl(ufd, F_SETFL, fcntl(ufd, F_GETFL) | O_NONBLOCK) != 0) {
            close(ufd);
            close(fd);
            continue;
        }
        struct conn *a = new_conn(fd), *b = new_conn(ufd);
        if (a == NULL || b == NULL) exit(1);
        a->peer = b;
        b->peer = a;
    }
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s LISTEN_ADDR LISTEN_PORT UPSTREAM_ADDR "
                        "UPSTREAM_PORT DELAY_US\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_TIMERSLACK, 1UL);
    delay_ns = strtoull(argv[5], NULL, 10) * 1000u;

    struct sockaddr_in listen_addr = {.sin_family = AF_INET,
                                      .sin_port = htons(atoi(argv[2]))};
    upstream.sin_family = AF_INET;
    upstream.sin_port = htons(atoi(argv[4]));
    if (inet_pton(AF_INET, argv[1], &listen_addr.sin_addr) != 1 ||
        inet_pton(AF_INET, argv[3], &upstream.sin_addr) != 1) {
        fprintf(stderr, "bad address\n");
        return 2;
    }

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(lfd, (struct sockaddr *) &listen_addr, sizeof(listen_addr)) != 0 ||
        listen(lfd, 512) != 0) {
        perror("listen");
        return 1;
    }

    ep = epoll_create1(EPOLL_CLOEXEC);
    tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    static int listener_kind = LISTENER, timer_kind = TIMER;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &listener_kind};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    ev.data.ptr = &timer_kind;
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);

    struct epoll_event events[256];
    for (;;) {
        int n = epoll_wait(ep, events, 256, -1);
        if (n < 0 && errno != EINTR) {
            perror("epoll_wait");
            return 1;
        }
        for (int i = 0; i < n; i++) {
            int kind = *(int *) events[i].data.ptr;
            if (kind == LISTENER) {
                on_accept(lfd);
            } else if (kind == TIMER) {
                on_timer();
            } else {
                struct conn *c = events[i].data.ptr;
                if (c->dead) continue;
                if (events[i].events & EPOLLOUT) flush(c);
                if (!c->dead && (events[i].events & (EPOLLIN | EPOLLHUP |
                                                     EPOLLERR))) {
                    on_read(c);
                }
            }
        }
    }
}
