/*
 * apiserver — the public face of fracgpu's test API server.
 *
 * A single-threaded libevent/evhttp server that behaves like kube-apiserver for what fracgpu and
 * kubectl use: a data-driven resource registry, an in-memory store with one global resourceVersion,
 * CRUD with the three patch types, label/field selectors, paging, watches fed from a bounded history
 * ring, and fault injection that tests drive over HTTP under /fracgpu-test/. The server owns its
 * event loop; the loop runs either on the caller's thread (fg_apiserver_run, the executable) or on a
 * thread of its own (fg_apiserver_start/stop, in-process tests and benchmarks). Apart from
 * fg_apiserver_stop, no function may be called from another thread while the loop runs.
 * Starting the server ignores SIGPIPE for the whole process (peers of watches vanish mid-write).
 */
#ifndef FG_E2E_APISERVER_H
#define FG_E2E_APISERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct fg_apiserver;

struct fg_apiserver_opts {
    const char *host;            /* listen address; NULL = 127.0.0.1 */
    uint16_t port;               /* 0 picks a free port */
    size_t history;              /* watch history ring size; 0 = 10000 */
    const char *state_file;      /* NULL = none; loaded by _new, written on restart and _save_state */
    uint32_t bookmark_ms;        /* interval of BOOKMARK events when asked for; 0 = 1000 */
    size_t max_body;             /* request body limit; 0 = 3 MiB */
    bool tls;                    /* HTTPS with a generated certificate (SAN IP:host), written into the kubeconfig */
    const char *token;           /* NULL = none; else every request needs Authorization: Bearer TOKEN (401) */
    const char *audit_log;       /* NULL = none; else a line per resource request is appended there (audit.c) */
};

/* Creates the server, loads the state file when one is set and exists, and binds the listener (so
 * fg_apiserver_port is known at once). FG_E_IO with a reason when binding or loading fails. */
enum fg_err fg_apiserver_new(const struct fg_apiserver_opts *opts, struct fg_apiserver **out,
                             char *errmsg) FG_MUST_USE;
/* Stops a running loop thread if any, closes every connection and frees everything. NULL is fine. */
void fg_apiserver_free(struct fg_apiserver *srv);

/* The server's certificate in PEM (NULL without TLS), borrowed. */
const char *fg_apiserver_ca_pem(const struct fg_apiserver *srv);

/* The bound port. */
uint16_t fg_apiserver_port(const struct fg_apiserver *srv);

/* Runs the loop on the calling thread until SIGINT/SIGTERM (when handle_signals) or fg_apiserver_stop;
 * writes the state file on the way out when one is set. */
enum fg_err fg_apiserver_run(struct fg_apiserver *srv, int handle_signals, char *errmsg) FG_MUST_USE;
/* Runs the loop on a new thread. */
enum fg_err fg_apiserver_start(struct fg_apiserver *srv, char *errmsg) FG_MUST_USE;
/* Asks the loop to end (safe from any thread) and joins the thread fg_apiserver_start made. */
void fg_apiserver_stop(struct fg_apiserver *srv);

/* Writes the store to the state file (atomically, through a temporary file). Loop not running. */
enum fg_err fg_apiserver_save_state(struct fg_apiserver *srv, char *errmsg) FG_MUST_USE;

/* Writes a kubeconfig (JSON, which kubectl reads as YAML) whose context fracgpu-test points here: with
 * TLS an https URL and the certificate as certificate-authority-data, with a token the token. */
enum fg_err fg_apiserver_write_kubeconfig(const struct fg_apiserver *srv, const char *path,
                                          char *errmsg) FG_MUST_USE;

#endif
