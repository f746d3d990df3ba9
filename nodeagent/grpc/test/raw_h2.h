/*
 * raw_h2 — a hand-driven peer for the server's tests: one HTTP/2 request built byte by byte with
 * nghttp2's client session (any :path, content-type, extra header and body, so it can send what no
 * gRPC client would), or bytes that are not HTTP/2 at all. It runs blocking I/O on a thread of its
 * own while the test's thread runs the server's loop, and sets `done` when the exchange is over.
 */
#ifndef FG_GRPC_TEST_RAW_H2_H
#define FG_GRPC_TEST_RAW_H2_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct raw_exchange {
    /* What to send. */
    const char *socket_path;
    const char *path;                      /* :path */
    const char *content_type;
    const char *extra_name, *extra_value;  /* one more header, or NULL */
    const uint8_t *body;                   /* DATA, then the end of the stream */
    size_t body_len;
    const char *garbage;                   /* instead of HTTP/2: these bytes, then wait for a close */
    bool hang_up;                          /* close as soon as the request is written */
    /* What came back. */
    int http_status;                       /* 0 if none */
    int grpc_status;                       /* -1 if none */
    char grpc_message[512];                /* decoded */
    bool stream_closed;
    bool closed_by_server;                 /* the server closed the connection */
    char error[256];                       /* what went wrong on this side, "" if nothing */
    atomic_bool done;
    pthread_t thread;
};

void raw_start(struct raw_exchange *x);
void raw_join(struct raw_exchange *x);

#endif
