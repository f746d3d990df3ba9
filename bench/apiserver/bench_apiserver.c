/*
 * bench_apiserver — how fast the test API server serves reads and fans out watch events.
 *
 * The server runs in-process on its own thread; clients are raw keep-alive sockets on threads of
 * their own, so nothing but the server and the kernel sits in the measured path.
 *   1. GET: C connections each GET one ~4 KiB pod (with managedFields) back to back for a fixed
 *      time; prints requests/s.
 *   2. Watch: W watch streams (read by one epoll thread) follow the pods of one namespace while
 *      WRITERS connections PATCH pods concurrently (each awaiting its own replies, so the server —
 *      not one client's round trip — sets the pace); prints the events delivered per second in total
 *      over all streams, from the first write until every stream has seen every event.
 * Usage: fg_bench_apiserver [seconds-for-GET] [watch-events]
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "bench/args.h"
#include "e2e/apiserver/apiserver.h"
#include "bench/apiserver/bench_http.h"

#define GET_CLIENTS 4
#define WATCHERS 10
#define PODS 100

struct get_worker {
    pthread_t th;
    double until;
    long done;
};

static void *get_loop(void *arg)
{
    struct get_worker *g = arg;
    int fd = bench_dial();
    struct fg_buf b = FG_BUF_INIT;
    static const char req[] = "GET /api/v1/namespaces/bench/pods/pod-0 HTTP/1.1\r\nHost: bench\r\n\r\n";
    while (bench_now_s() < g->until) {
        bench_send_all(fd, req, sizeof(req) - 1);
        if (bench_read_reply(fd, &b) != 200) {
            fprintf(stderr, "GET failed\n");
            exit(1);
        }
        g->done++;
    }
    fg_buf_cleanup(&b);
    close(fd);
    return NULL;
}

struct watcher {
    int fd;
    long seen;
    char prev;
};

struct watch_reader {
    pthread_t th;
    struct watcher *w;
    int n;
    long want;
    double finished;
};

/* One thread follows every watch stream through epoll, as an informer multiplexer would, so the
 * client side costs one wake-up per batch rather than one per stream per event. */
static void *watch_loop(void *arg)
{
    struct watch_reader *r = arg;
    int ep = epoll_create1(0);
    for (int i = 0; i < r->n; i++) {
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &r->w[i] };
        epoll_ctl(ep, EPOLL_CTL_ADD, r->w[i].fd, &ev);
    }
    char buf[1 << 16];
    int complete = 0;
    while (complete < r->n) {
        struct epoll_event evs[16];
        int n = epoll_wait(ep, evs, 16, 10000);
        if (n <= 0) {
            fprintf(stderr, "watch streams stalled\n");
            exit(1);
        }
        for (int k = 0; k < n; k++) {
            struct watcher *w = evs[k].data.ptr;
            ssize_t got = read(w->fd, buf, sizeof(buf));
            if (got <= 0) {
                fprintf(stderr, "watch stream ended after %ld events\n", w->seen);
                exit(1);
            }
            bool was_done = w->seen >= r->want;
            for (ssize_t i = 0; i < got; i++) {
                if (buf[i] == '\n' && w->prev == '}')
                    w->seen++;
                w->prev = buf[i];
            }
            if (!was_done && w->seen >= r->want)
                complete++;
        }
    }
    r->finished = bench_now_s();
    close(ep);
    return NULL;
}

#define WRITERS 4

struct writer {
    pthread_t th;
    int index;
    long events;        /* this writer's share */
    bool failed;
};

/* PATCHes the pods whose number is congruent to the writer's index, on a connection of its own. */
static void *write_loop(void *arg)
{
    struct writer *wr = arg;
    int fd = bench_dial();
    struct fg_buf b = FG_BUF_INIT;
    for (long e = 0; e < wr->events && !wr->failed; e++) {
        char path[96], body[96];
        snprintf(path, sizeof(path), "/api/v1/namespaces/bench/pods/pod-%ld", (e * WRITERS + wr->index) % PODS);
        snprintf(body, sizeof(body), "{\"metadata\":{\"labels\":{\"seq\":\"%ld\"}}}", e);
        wr->failed = bench_request(fd, &b, "PATCH", path, "application/merge-patch+json", body) != 200;
    }
    fg_buf_cleanup(&b);
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    static const char usage[] = "[GET_SECONDS (0.1..600, default 3) [WATCH_EVENTS (1..10000000, default 20000)]]";
    bench_args_check(argc, argv, 2, usage);
    double get_seconds = bench_arg_double(argc, argv, 1, 3.0, 0.1, 600, usage);
    long events = bench_arg_long(argc, argv, 2, 20000, 1, 10000000, usage);
    fg_log_set_level(FG_LOG_WARN);
    struct fg_apiserver_opts opts = { 0 };
    struct fg_apiserver *srv = NULL;
    char msg[FG_ERRMSG_MAX];
    if (fg_apiserver_new(&opts, &srv, msg) != FG_OK || fg_apiserver_start(srv, msg) != FG_OK) {
        fprintf(stderr, "server: %s\n", msg);
        return 1;
    }
    bench_port = fg_apiserver_port(srv);
    int fd = bench_dial();
    struct fg_buf b = FG_BUF_INIT;
    bench_request(fd, &b, "POST", "/api/v1/namespaces", "application/json", "{\"metadata\":{\"name\":\"bench\"}}");
    size_t pod_size = 0;
    for (int i = 0; i < PODS; i++) {
        char name[32];
        snprintf(name, sizeof(name), "pod-%d", i);
        char *pod = bench_pod_json(name);
        pod_size = strlen(pod);
        if (bench_request(fd, &b, "POST", "/api/v1/namespaces/bench/pods", "application/json", pod) != 201) {
            fprintf(stderr, "create failed\n");
            return 1;
        }
        free(pod);
    }

    struct get_worker g[GET_CLIENTS];
    double t0 = bench_now_s();
    for (int i = 0; i < GET_CLIENTS; i++) {
        g[i] = (struct get_worker){ .until = t0 + get_seconds };
        pthread_create(&g[i].th, NULL, get_loop, &g[i]);
    }
    long gets = 0;
    for (int i = 0; i < GET_CLIENTS; i++) {
        pthread_join(g[i].th, NULL);
        gets += g[i].done;
    }
    double get_elapsed = bench_now_s() - t0;
    printf("GET  pod (%zu bytes as created, keep-alive, %d connections): %ld requests in %.2f s = %.0f requests/s\n",
           pod_size, GET_CLIENTS, gets, get_elapsed, (double)gets / get_elapsed);

    struct watcher w[WATCHERS];
    for (int i = 0; i < WATCHERS; i++) {
        w[i] = (struct watcher){ .fd = bench_dial() };
        static const char req[] = "GET /api/v1/namespaces/bench/pods?watch=true&resourceVersion=999999999 HTTP/1.1\r\n"
                                  "Host: bench\r\n\r\n";
        bench_send_all(w[i].fd, req, sizeof(req) - 1);
    }
    struct watch_reader reader = { .w = w, .n = WATCHERS, .want = events };
    pthread_create(&reader.th, NULL, watch_loop, &reader);
    usleep(200000); /* let every watch register */
    double w0 = bench_now_s();
    struct writer writers[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        writers[i] = (struct writer){ .index = i, .events = events / WRITERS + (i < events % WRITERS) };
        pthread_create(&writers[i].th, NULL, write_loop, &writers[i]);
    }
    for (int i = 0; i < WRITERS; i++) {
        pthread_join(writers[i].th, NULL);
        if (writers[i].failed) {
            fprintf(stderr, "patch failed\n");
            return 1;
        }
    }
    double writes_done = bench_now_s();
    pthread_join(reader.th, NULL);
    for (int i = 0; i < WATCHERS; i++)
        close(w[i].fd);
    double elapsed = reader.finished - w0;
    printf("WATCH %d watchers x %ld events: %d writers %.0f writes/s; %.0f events/s delivered in total (%.2f s)\n",
           WATCHERS, events, WRITERS, (double)events / (writes_done - w0), (double)events * WATCHERS / elapsed, elapsed);
    fg_buf_cleanup(&b);
    close(fd);
    fg_apiserver_free(srv);
    return 0;
}
