/*
 * harness — a cluster of one for integration tests: the test API server running in-process on its
 * own thread, a kubeconfig pointing at it, and a started manager (operator/manager) built from that
 * kubeconfig exactly as every fracgpu role builds its own — without health server or leader
 * election — whose client and loop the tests use, plus small helpers to pull the server's
 * fault-injection levers (/fracgpu-test/...). Code that must run on the loop thread goes through
 * fg_kube_loop_call_wait(h.loop, ...).
 *
 * Ownership: fg_harness_start fills a caller-owned struct; fg_harness_stop undoes everything in
 * reverse order. Every wait is bounded.
 */
#ifndef FG_E2E_HARNESS_H
#define FG_E2E_HARNESS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "e2e/apiserver/apiserver.h"
#include "operator/kube/client.h"
#include "operator/kube/loop.h"
#include "operator/manager/manager.h"

struct fg_harness {
    struct fg_apiserver *server;
    char dir[64];                 /* temporary directory holding the kubeconfig */
    char kubeconfig[128];
    struct fg_manager *manager;
    struct fg_kube_client *client;   /* the manager's */
    struct fg_kube_loop *loop;       /* the manager's, running */
};

struct fg_harness_opts {
    size_t history;               /* server watch history; 0 = server default */
    double client_qps;            /* 0 = client limiter off */
    bool tls;                     /* HTTPS with a bearer token, as a real cluster serves (the client trusts its CA) */
};

/* Starts server, client and loop; on failure everything started is undone and errmsg says why. */
enum fg_err fg_harness_start(struct fg_harness *h, const struct fg_harness_opts *opts, char *errmsg) FG_MUST_USE;
void fg_harness_stop(struct fg_harness *h);

/* POSTs /fracgpu-test/<control> (e.g. "fail?count=3&code=500"). */
enum fg_err fg_harness_fault(struct fg_harness *h, const char *control) FG_MUST_USE;
/* The same through any client of a test API server (a simulated cluster's, say). */
enum fg_err fg_e2e_fault(struct fg_kube_client *client, const char *control) FG_MUST_USE;

/* Creates namespace `name` (AlreadyExists is fine). */
enum fg_err fg_harness_namespace(struct fg_harness *h, const char *name) FG_MUST_USE;

/* `method path` against http://host:port (a process's /healthz, /readyz, /metrics; host NULL:
 * 127.0.0.1); the reply's body replaces body's content. Returns the HTTP code, 0 when no reply came
 * within 5 s. */
long fg_harness_http(const char *host, unsigned port, const char *method, const char *path, struct fg_buf *body);

/* Installs fracgpu's CRDs (GPUPolicy, GPUWorkload) from $FG_SOURCE_DIR/crds; installed ones are fine. */
enum fg_err fg_harness_crds(struct fg_harness *h, char *errmsg) FG_MUST_USE;
/* Polls cond(ud) every 10 ms until it holds or timeout_ms passes. */
bool fg_harness_wait(bool (*cond)(void *ud), void *ud, unsigned timeout_ms);

#endif
