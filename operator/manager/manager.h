/*
 * manager — the composition root every fracgpu role is built on (controller-runtime's Manager).
 *
 * A role is a list of setup calls on one manager. The manager owns what every role needs once: the
 * configuration (a kubeconfig, with exec credentials, or the in-cluster service account), the kube
 * client and its loop thread, the shared informer factory (informers.h), the controllers
 * (controllers.h), the runnables, leader election (leader.h), the process's metrics registry
 * (base/metrics.h) and one HTTP server for /healthz, /readyz and /metrics. Components declare what
 * they need from setup functions that live beside their code, and never start threads, servers or
 * watches of their own outside a runnable.
 *
 * Runnables are started by the manager (periodic.h builds one that works on a timer): those for
 * every replica (a webhook server, the exporter's sampler) with the manager, those for the leader only (reconcilers, the scheduler) once this
 * replica leads and every informer has synced; the latter are stopped the moment leadership is no
 * longer certain, and started again, fresh, if it comes back. Without leader election (the node
 * agent: one per node) the replica always leads.
 *
 * Start order: the loop thread; on it the HTTP server, then every informer; the every-replica
 * runnables, in registration order; leader election and the supervisor thread, which starts and
 * stops the leader-only runnables. Stop order is the reverse: leader-only runnables, the Lease
 * released (so a standby takes over within one retry period), every-replica runnables in reverse
 * order, informers and HTTP on the loop, the loop. fg_manager_run is start, wait for SIGTERM or
 * SIGINT (or a leader-only runnable that could not start), stop.
 *
 * /healthz answers while the loop turns, plus the registered liveness checks; /readyz adds the
 * readiness checks, the first being "informers" (every informer has synced). Both answer "ok" or,
 * with 503, one line per failing check as kube-apiserver does ("[-]informers failed: ..."); add
 * ?verbose to list every check.
 *
 * Threads: setup calls, start, run, stop and free belong to one owner thread. Checks and metrics
 * collectors run on the loop thread. Accessors are callable from any thread once start returned.
 */
#ifndef FG_MANAGER_MANAGER_H
#define FG_MANAGER_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "base/metrics.h"
#include "operator/kube/client.h"
#include "operator/kube/loop.h"
#include "operator/manager/informers.h"
#include "operator/manager/leader.h"

struct fg_manager_opts {
    const char *component;          /* "operator", "node-agent": logs; the Lease is fracgpu-<component> */
    const char *kubeconfig;         /* NULL: $KUBECONFIG, in-cluster, then ~/.kube/config */
    const char *listen;             /* HOST:PORT of /healthz, /readyz, /metrics; port 0 picks one; NULL: none */
    uint64_t resync_ns;             /* informers' periodic resync; 0: none */
    struct fg_kube_client_opts client;
    struct fg_leader_opts leader;   /* namespace and name may be left NULL: see fg_manager_new */
};

#define FG_MANAGER_OPTS_DEFAULT                                                                    \
    { .component = "fracgpu", .resync_ns = 10 * 60 * FG_NS_PER_S, .client = FG_KUBE_CLIENT_OPTS_DEFAULT, \
      .leader = FG_LEADER_OPTS_DEFAULT }

struct fg_manager;

/* Loads the configuration and builds the client and the (not yet running) loop. A leader election
 * without a lease namespace uses $POD_NAMESPACE (the manifests set it from the pod's own namespace),
 * else fracgpu-system; without a name, fracgpu-<component>. errmsg says what failed. */
enum fg_err fg_manager_new(const struct fg_manager_opts *opts, struct fg_manager **out, char *errmsg) FG_MUST_USE;
/* Stops if needed, then frees everything, setup registrations included. NULL is ignored. */
void fg_manager_free(struct fg_manager *m);

/* A unit of work the manager starts and stops. start returns once the work is under way (it may
 * start threads); stop returns once it has ended. A leader-only runnable may be started again
 * after a stop. */
struct fg_runnable {
    const char *name;
    bool leader_only;
    enum fg_err (*start)(void *ud, char *errmsg);
    void (*stop)(void *ud);
    void *ud;
};

/* Registers r (copied; name copied). FG_E_BUSY once started. */
enum fg_err fg_manager_add_runnable(struct fg_manager *m, const struct fg_runnable *r) FG_MUST_USE;

/* A health check: FG_OK, or an error with a reason in errmsg. Runs on the loop thread per request. */
typedef enum fg_err fg_check_fn(void *ud, char *errmsg);
/* Readiness (/readyz) and liveness (/healthz) checks; name is copied. FG_E_BUSY once started. */
enum fg_err fg_manager_add_readyz(struct fg_manager *m, const char *name, fg_check_fn *fn, void *ud) FG_MUST_USE;
enum fg_err fg_manager_add_healthz(struct fg_manager *m, const char *name, fg_check_fn *fn, void *ud) FG_MUST_USE;

/* fn(ud) runs at fg_manager_free, after everything has stopped, in reverse registration order: how
 * a setup function hands the component it allocated to the manager. */
void fg_manager_on_free(struct fg_manager *m, void (*fn)(void *ud), void *ud);

/* Starts everything (see the essay); on failure everything started is stopped and errmsg says what
 * failed. A manager starts once: FG_E_BUSY the second time. */
enum fg_err fg_manager_start(struct fg_manager *m, char *errmsg) FG_MUST_USE;
/* Stops everything in reverse order; idempotent. */
void fg_manager_stop(struct fg_manager *m);
/* Start, wait for SIGTERM or SIGINT, stop: the whole life of a role's process. Blocks those signals
 * in every thread first. Returns the exit status: 0 after a signal, 1 when something could not start
 * or a leader-only runnable failed. */
int fg_manager_run(struct fg_manager *m);

struct fg_kube_client *fg_manager_client(struct fg_manager *m);
struct fg_kube_loop *fg_manager_loop(struct fg_manager *m);
const struct fg_kube_config *fg_manager_config(const struct fg_manager *m);
struct fg_informer_factory *fg_manager_informers(struct fg_manager *m);
struct fg_metrics *fg_manager_metrics(struct fg_manager *m);
const char *fg_manager_component(const struct fg_manager *m);
/* The port /healthz, /readyz and /metrics are served on (0 without a server or before start). */
unsigned fg_manager_http_port(const struct fg_manager *m);
/* Whether this replica leads now: always true without leader election, else fg_leader_is_leading.
 * Leader-only work asks before it acts. Any thread. */
bool fg_manager_is_leader(const struct fg_manager *m);
/* This replica's identity in the Lease (NULL without leader election). */
const char *fg_manager_identity(const struct fg_manager *m);

/* Splits "HOST:PORT", "[V6]:PORT" or ":PORT" (every IPv4 address) into host and port. FG_E_INVAL
 * with errmsg for anything else. */
enum fg_err fg_manager_parse_listen(const char *listen, char *host, size_t host_size, unsigned *port,
                                    char *errmsg) FG_MUST_USE;

struct evhttp;
/* Binds http to `listen` (fg_manager_parse_listen's forms; ":PORT" is dual-stack where the node has
 * IPv6), with TCP_NODELAY on accepted sockets. *port gets the bound port (for port 0) and shown, of
 * shown_size, the address for a log line. FG_E_INVAL / FG_E_IO with errmsg. */
enum fg_err fg_manager_http_bind(struct evhttp *http, const char *listen, char *shown, size_t shown_size,
                                 unsigned *port, char *errmsg) FG_MUST_USE;

#endif
