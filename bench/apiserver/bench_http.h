/*
 * bench_http — what the API server benchmarks share: a raw HTTP/1.1 client over keep-alive sockets
 * (nothing but the kernel between it and the server) and a realistic ~4 KiB pod. Failures exit.
 */
#ifndef FG_BENCH_APISERVER_BENCH_HTTP_H
#define FG_BENCH_APISERVER_BENCH_HTTP_H

#include <stdint.h>
#include <stddef.h>

#include "base/buf.h"

/* The server's port on 127.0.0.1, set before dialling. */
extern uint16_t bench_port;

double bench_now_s(void);
/* A TCP_NODELAY connection to the server. */
int bench_dial(void);
void bench_send_all(int fd, const char *data, size_t len);
/* Reads one Content-Length reply; returns the status code. `b` keeps bytes read past the reply. */
int bench_read_reply(int fd, struct fg_buf *b);
/* Sends one request (body NULL: none) and returns the reply's status code. */
int bench_request(int fd, struct fg_buf *b, const char *method, const char *path, const char *ct, const char *body);
/* A pod of about 4 KiB, managedFields included, as a real kubelet-managed pod looks (caller frees). */
char *bench_pod_json(const char *name);

#endif
