/*
 * manager — lifecycle, registrations and the supervisor thread; see manager.h.
 *
 * The supervisor wakes every SUPERVISE_NS (or at once when stopping) and compares what should run
 * with what runs: leader-only runnables run while fg_manager_is_leader and every informer has
 * synced. Its latency bounds how long a replica that stopped leading keeps its leader-only threads
 * alive; the work itself is fenced tighter, since controllers ask fg_manager_is_leader before every
 * reconcile.
 */
#include "operator/manager/manager_int.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/prom.h"
#include "operator/manager/process.h"

#define SUPERVISE_NS (50 * FG_NS_PER_MS)
#define DEFAULT_LEASE_NAMESPACE "fracgpu-system"

/* ---- construction ---- */

static void leader_collect(void *ud, struct fg_buf *out)
{
    struct fg_manager *m = ud;
    if (!m->leader)
        return;
    const char *labels[] = { "lease", fg_leader_lease(m->leader), "identity", fg_leader_identity(m->leader), NULL };
    fg_prom_family(out, "fracgpu_leader", FG_PROM_GAUGE, "1 while this replica leads, else 0.");
    fg_prom_sample_u64(out, "fracgpu_leader", labels, fg_leader_is_leading(m->leader));
    fg_prom_family(out, "fracgpu_leader_terms_total", FG_PROM_COUNTER, "Times this replica became leader.");
    fg_prom_sample_u64(out, "fracgpu_leader_terms_total", labels, fg_leader_terms(m->leader));
}

/* Leadership came: the supervisor starts the leader-only work now rather than at its next tick. */
static void wake_supervisor(void *ud)
{
    struct fg_manager *m = ud;
    pthread_mutex_lock(&m->mu);
    pthread_cond_signal(&m->wake);
    pthread_mutex_unlock(&m->mu);
}

static enum fg_err leader_new(struct fg_manager *m, const struct fg_manager_opts *opts, char *errmsg)
{
    struct fg_leader_opts lo = opts->leader;
    const char *pod_ns = getenv("POD_NAMESPACE");
    char *name = NULL;
    if (!lo.lease_namespace || !*lo.lease_namespace)
        lo.lease_namespace = pod_ns && *pod_ns ? pod_ns : DEFAULT_LEASE_NAMESPACE;
    if (!lo.lease_name || !*lo.lease_name)
        lo.lease_name = name = fg_asprintf("fracgpu-%s", m->component);
    enum fg_err err = fg_leader_new(&m->config, &lo, &m->leader, errmsg);
    free(name);
    if (!err)
        fg_leader_on_lead(m->leader, wake_supervisor, m);
    return err;
}

enum fg_err fg_manager_new(const struct fg_manager_opts *opts, struct fg_manager **out, char *errmsg)
{
    struct fg_manager *m = fg_calloc(1, sizeof *m);
    m->component = fg_strdup(opts->component ? opts->component : "fracgpu");
    m->listen = opts->listen ? fg_strdup(opts->listen) : NULL;
    pthread_mutex_init(&m->mu, NULL);
    fg_cond_init_monotonic(&m->wake);
    m->metrics = fg_metrics_new();

    enum fg_err err = fg_kube_config_load_default(opts->kubeconfig, NULL, &m->config, errmsg);
    if (err)
        goto out_free;
    err = fg_kube_client_new(&m->config, &opts->client, &m->client, errmsg);
    if (err)
        goto out_free;
    err = fg_kube_loop_new(m->client, &m->loop, errmsg);
    if (err)
        goto out_free;
    if (opts->leader.enabled && (err = leader_new(m, opts, errmsg)))
        goto out_free;
    m->informers = fg_informer_factory_new(m->loop, opts->resync_ns);
    fg_metrics_add_collector(m->metrics, fg_process_collect, NULL);
    fg_metrics_add_collector(m->metrics, leader_collect, m);
    fg_metrics_add_collector(m->metrics, fg_informer_factory_collect, m->informers);
    fg_metrics_add_collector(m->metrics, fg__controllers_collect, m);
    *out = m;
    return FG_OK;

out_free:
    fg_manager_free(m);
    return err;
}

void fg_manager_free(struct fg_manager *m)
{
    if (!m)
        return;
    fg_manager_stop(m);
    for (size_t i = m->n_on_free; i-- > 0;)
        m->on_free[i].fn(m->on_free[i].ud);
    free(m->on_free);
    free(m->controllers);
    fg_informer_factory_free(m->informers);   /* the loop is stopped: safe on this thread */
    fg_leader_free(m->leader);
    fg_kube_loop_free(m->loop);
    fg_kube_client_free(m->client);
    fg_kube_config_cleanup(&m->config);
    fg_metrics_free(m->metrics);
    for (size_t i = 0; i < m->n_runnables; i++)
        free((char *)m->runnables[i].r.name);
    free(m->runnables);
    for (size_t i = 0; i < m->n_readyz; i++)
        free(m->readyz[i].name);
    for (size_t i = 0; i < m->n_healthz; i++)
        free(m->healthz[i].name);
    free(m->readyz);
    free(m->healthz);
    pthread_cond_destroy(&m->wake);
    pthread_mutex_destroy(&m->mu);
    free(m->listen);
    free(m->component);
    free(m);
}

/* ---- registrations ---- */

enum fg_err fg_manager_add_runnable(struct fg_manager *m, const struct fg_runnable *r)
{
    if (m->spent)
        return FG_E_BUSY;
    if (!r || !r->name || !r->start || !r->stop)
        return FG_E_INVAL;
    m->runnables = fg_realloc(m->runnables, (m->n_runnables + 1) * sizeof *m->runnables);
    m->runnables[m->n_runnables] = (struct fg__runnable){ .r = *r };
    m->runnables[m->n_runnables++].r.name = fg_strdup(r->name);
    return FG_OK;
}

static enum fg_err add_check(struct fg_manager *m, struct fg__check **list, size_t *n, const char *name,
                             fg_check_fn *fn, void *ud)
{
    if (m->spent)
        return FG_E_BUSY;
    if (!name || !*name || !fn)
        return FG_E_INVAL;
    *list = fg_realloc(*list, (*n + 1) * sizeof **list);
    (*list)[(*n)++] = (struct fg__check){ fg_strdup(name), fn, ud };
    return FG_OK;
}

enum fg_err fg_manager_add_readyz(struct fg_manager *m, const char *name, fg_check_fn *fn, void *ud)
{
    return add_check(m, &m->readyz, &m->n_readyz, name, fn, ud);
}

enum fg_err fg_manager_add_healthz(struct fg_manager *m, const char *name, fg_check_fn *fn, void *ud)
{
    return add_check(m, &m->healthz, &m->n_healthz, name, fn, ud);
}

void fg_manager_on_free(struct fg_manager *m, void (*fn)(void *ud), void *ud)
{
    m->on_free = fg_realloc(m->on_free, (m->n_on_free + 1) * sizeof *m->on_free);
    m->on_free[m->n_on_free++] = (struct fg__on_free){ fn, ud };
}

/* ---- runnables ---- */

/* Starts the runnables of one kind in order; on a failure stops those it started (reverse order). */
static enum fg_err start_runnables(struct fg_manager *m, bool leader_only, char *errmsg)
{
    for (size_t i = 0; i < m->n_runnables; i++) {
        struct fg__runnable *r = &m->runnables[i];
        if (r->r.leader_only != leader_only)
            continue;
        char why[FG_ERRMSG_MAX] = "";
        enum fg_err err = r->r.start(r->r.ud, why);
        if (err) {
            fg_errmsg(errmsg, err, "%s: %s", r->r.name, why[0] ? why : fg_err_str(err));
            for (size_t j = i; j-- > 0;)
                if (m->runnables[j].running && m->runnables[j].r.leader_only == leader_only) {
                    m->runnables[j].r.stop(m->runnables[j].r.ud);
                    m->runnables[j].running = false;
                }
            return err;
        }
        r->running = true;
    }
    return FG_OK;
}

static void stop_runnables(struct fg_manager *m, bool leader_only)
{
    for (size_t i = m->n_runnables; i-- > 0;) {
        struct fg__runnable *r = &m->runnables[i];
        if (r->running && r->r.leader_only == leader_only) {
            r->r.stop(r->r.ud);
            r->running = false;
        }
    }
}

/* ---- the supervisor: leader-only work follows leadership ---- */

static void lead(struct fg_manager *m)
{
    char why[FG_ERRMSG_MAX] = "";
    fg_log(FG_LOG_INFO, m->component, "leading: starting the leader-only runnables");
    if (start_runnables(m, true, why) != FG_OK) {
        fg_log(FG_LOG_ERROR, m->component, "cannot start leader-only work, giving up: %s", why);
        atomic_store(&m->failed, true);
        return;
    }
    m->leading = true;
}

static void stand_by(struct fg_manager *m, const char *why)
{
    fg_log(FG_LOG_INFO, m->component, "stopping the leader-only runnables: %s", why);
    stop_runnables(m, true);
    m->leading = false;
}

static void *supervisor_main(void *arg)
{
    struct fg_manager *m = arg;
    pthread_mutex_lock(&m->mu);
    while (!m->stopping) {
        pthread_mutex_unlock(&m->mu);
        bool want = fg_manager_is_leader(m) && fg_informer_factory_synced(m->informers);
        if (want && !m->leading && !atomic_load(&m->failed))
            lead(m);
        else if (!want && m->leading)
            stand_by(m, "no longer leading");
        pthread_mutex_lock(&m->mu);
        if (!m->stopping)
            fg_cond_wait_ns(&m->wake, &m->mu, SUPERVISE_NS);
    }
    pthread_mutex_unlock(&m->mu);
    if (m->leading)
        stand_by(m, "shutting down");
    return NULL;
}

/* ---- start and stop ---- */

struct loop_step {
    struct fg_manager *m;
    enum fg_err err;
    char *errmsg;
};

static void start_on_loop(void *ud)
{
    struct loop_step *s = ud;
    if (s->m->listen && (s->err = fg__manager_http_start(s->m, s->errmsg)))
        return;
    s->err = fg_informer_factory_start(s->m->informers);
    if (s->err)
        fg_errmsg(s->errmsg, s->err, "cannot start the informers");
}

static void stop_on_loop(void *ud)
{
    struct fg_manager *m = ud;
    fg_informer_factory_stop(m->informers);
    fg__manager_http_stop(m);
}

static void stop_loop_side(struct fg_manager *m)
{
    if (fg_kube_loop_call_wait(m->loop, stop_on_loop, m, 10000) != FG_OK)
        fg_log(FG_LOG_ERROR, m->component, "the kube loop did not stop the informers in time");
    fg_kube_loop_stop(m->loop);
}

enum fg_err fg_manager_start(struct fg_manager *m, char *errmsg)
{
    if (m->started || m->spent)
        return fg_errmsg(errmsg, FG_E_BUSY, "a manager starts once");
    m->spent = true;
    enum fg_err err = fg_kube_loop_start(m->loop);
    if (err)
        return fg_errmsg(errmsg, err, "cannot start the kube loop");
    struct loop_step s = { .m = m, .errmsg = errmsg };
    err = fg_kube_loop_call_wait(m->loop, start_on_loop, &s, 10000);
    if (!err)
        err = s.err;
    if (err)
        goto out_loop;
    err = start_runnables(m, false, errmsg);
    if (err)
        goto out_loop;
    if (m->leader && (err = fg_leader_start(m->leader))) {
        fg_errmsg(errmsg, err, "cannot start leader election");
        goto out_runnables;
    }
    m->stopping = false;
    atomic_store(&m->failed, false);
    if (pthread_create(&m->supervisor, NULL, supervisor_main, m) != 0) {
        err = fg_errmsg(errmsg, FG_E_INTERNAL, "cannot start the supervisor thread");
        goto out_leader;
    }
    m->started = true;
    fg_log(FG_LOG_INFO, m->component, "started against %s%s%s", m->config.server, m->leader ? " as " : "",
           m->leader ? fg_leader_identity(m->leader) : "");
    return FG_OK;

out_leader:
    if (m->leader)
        fg_leader_stop(m->leader);
out_runnables:
    stop_runnables(m, false);
out_loop:
    stop_loop_side(m);
    return err;
}

void fg_manager_stop(struct fg_manager *m)
{
    if (!m->started)
        return;
    pthread_mutex_lock(&m->mu);
    m->stopping = true;
    pthread_cond_signal(&m->wake);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->supervisor, NULL);   /* it stops the leader-only runnables on its way out */
    if (m->leader)
        fg_leader_stop(m->leader);      /* releases the Lease: a standby takes over at once */
    stop_runnables(m, false);
    stop_loop_side(m);
    m->started = false;
    fg_log(FG_LOG_INFO, m->component, "stopped");
}

int fg_manager_run(struct fg_manager *m)
{
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    char errmsg[FG_ERRMSG_MAX] = "";
    if (fg_manager_start(m, errmsg) != FG_OK) {
        fg_log(FG_LOG_ERROR, m->component, "cannot start: %s", errmsg);
        return 1;
    }
    const struct timespec tick = { 0, 100 * 1000 * 1000 };
    int sig;
    while ((sig = sigtimedwait(&sigs, NULL, &tick)) < 0 && !atomic_load(&m->failed))
        ;
    if (sig >= 0)
        fg_log(FG_LOG_INFO, m->component, "stopping on %s", strsignal(sig));
    fg_manager_stop(m);
    return sig >= 0 ? 0 : 1;
}

/* ---- accessors ---- */

struct fg_kube_client *fg_manager_client(struct fg_manager *m) { return m->client; }
struct fg_kube_loop *fg_manager_loop(struct fg_manager *m) { return m->loop; }
const struct fg_kube_config *fg_manager_config(const struct fg_manager *m) { return &m->config; }
struct fg_informer_factory *fg_manager_informers(struct fg_manager *m) { return m->informers; }
struct fg_metrics *fg_manager_metrics(struct fg_manager *m) { return m->metrics; }
const char *fg_manager_component(const struct fg_manager *m) { return m->component; }
unsigned fg_manager_http_port(const struct fg_manager *m) { return m->http_port; }
const char *fg_manager_identity(const struct fg_manager *m) { return m->leader ? fg_leader_identity(m->leader) : NULL; }

bool fg_manager_is_leader(const struct fg_manager *m)
{
    return !m->leader || fg_leader_is_leading(m->leader);
}
