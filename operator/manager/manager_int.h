/*
 * manager_int — the manager's state, shared by manager.c (lifecycle, supervisor), http.c (the
 * health and metrics server) and controllers.c. Internal to operator/manager.
 */
#ifndef FG_MANAGER_MANAGER_INT_H
#define FG_MANAGER_MANAGER_INT_H

#include <pthread.h>
#include <stdbool.h>

#include "operator/manager/manager.h"

struct evhttp;

struct fg__runnable {
    struct fg_runnable r;           /* name owned */
    bool running;
};

struct fg__check {
    char *name;
    fg_check_fn *fn;
    void *ud;
};

struct fg__on_free {
    void (*fn)(void *ud);
    void *ud;
};

struct fg_manager {
    char *component;
    char *listen;
    struct fg_kube_config config;
    struct fg_kube_client *client;
    struct fg_kube_loop *loop;
    struct fg_informer_factory *informers;
    struct fg_metrics *metrics;
    struct fg_leader *leader;       /* NULL without leader election */

    struct fg__runnable *runnables;
    size_t n_runnables;
    struct fg__check *readyz, *healthz;
    size_t n_readyz, n_healthz;
    struct fg__on_free *on_free;
    size_t n_on_free;
    struct fg_manager_controller **controllers;   /* registered, for their queue metrics */
    size_t n_controllers;

    struct evhttp *http;
    unsigned http_port;

    bool started;
    bool spent;                     /* started once already: a manager is not restarted */
    pthread_t supervisor;
    pthread_mutex_t mu;             /* guards stopping; wakes the supervisor */
    pthread_cond_t wake;
    bool stopping;
    bool leading;                   /* the leader-only runnables run (supervisor thread only) */
    _Atomic bool failed;            /* a leader-only runnable could not start */
};

/* controllers.c: the queue families of every controller, a metrics collector (ud: the manager). */
void fg__controllers_collect(void *ud, struct fg_buf *out);

/* http.c, on the loop thread: serve m->listen; and stop serving. */
enum fg_err fg__manager_http_start(struct fg_manager *m, char *errmsg) FG_MUST_USE;
void fg__manager_http_stop(struct fg_manager *m);

#endif
