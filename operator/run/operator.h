/*
 * operator — the `fracgpu operator` role, wired: kube client and loop, the GPUPolicy and GPUWorkload
 * informers, the policy controller, and the HTTP endpoints about the process itself.
 *
 * Threads: the kube loop thread owns every watch, the informers and the HTTP listener (an evhttp on
 * the loop's event_base, so /metrics reads the reflectors' counters on the thread that writes them);
 * the controller's workers reconcile policies; the caller's thread only starts, ticks and stops.
 * Informer handlers never touch the API: they enqueue policy names. fg_operator_tick, called now and
 * then by the caller, enqueues the always-present built-ins once the caches have synced.
 *
 * Lifecycle: start (fills a caller-owned struct; undoes everything on failure) → tick* → stop.
 */
#ifndef FG_OPERATOR_RUN_OPERATOR_H
#define FG_OPERATOR_RUN_OPERATOR_H

#include <stdbool.h>

#include "base/err.h"
#include "operator/cache/informer.h"
#include "operator/controller/controller.h"
#include "operator/kube/config.h"
#include "operator/kube/loop.h"
#include "reconcilers/policy.h"

struct evhttp;

struct fg_operator_opts {
    const char *kubeconfig;     /* NULL: $KUBECONFIG, in-cluster, then ~/.kube/config */
    const char *listen_host;    /* health and metrics address; "0.0.0.0" */
    unsigned listen_port;       /* 0 picks a free port (tests) */
    unsigned workers;           /* policy reconcile workers */
};

struct fg_operator {
    struct fg_kube_config config;
    struct fg_kube_client *client;
    struct fg_kube_loop *loop;
    struct fg_informer *policies, *workloads;
    struct fg_policy_reconciler reconciler;
    struct fg_controller *controller;
    struct evhttp *http;
    unsigned http_port;         /* the bound port */
    bool builtins_enqueued;
};

/* Loads the kubeconfig, starts everything and returns once the HTTP listener is bound. errmsg
 * (FG_ERRMSG_MAX bytes, required) says what failed: kubeconfig, client, listener. */
enum fg_err fg_operator_start(struct fg_operator *op, const struct fg_operator_opts *opts, char *errmsg) FG_MUST_USE;
/* Enqueues the always-present built-ins once both caches have synced; cheap, call it often. */
void fg_operator_tick(struct fg_operator *op);
/* True once both informers have synced (what /readyz reports). Any thread. */
bool fg_operator_ready(const struct fg_operator *op);
void fg_operator_stop(struct fg_operator *op);

/* Runs fn(ud) on the loop thread and waits, at most 10 s (FG_E_TIMEOUT). */
enum fg_err fg_operator_on_loop(struct fg_operator *op, void (*fn)(void *ud), void *ud) FG_MUST_USE;

#endif
