/*
 * operator — starting and stopping the operator's parts in order; see operator.h.
 */
#include "operator/run/operator.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/mem.h"
#include "crds/builtin.h"
#include "crds/gpuworkload.h"
#include "operator/cache/kube_listwatch.h"
#include "operator/cache/transform.h"
#include "operator/run/http.h"

#define COMPONENT "operator"

/* ---- running code on the loop thread ---- */

enum fg_err fg_operator_on_loop(struct fg_operator *op, void (*fn)(void *ud), void *ud)
{
    return fg_kube_loop_call_wait(op->loop, fn, ud, 10000);
}

/* ---- informer handlers: they only enqueue policy names ---- */

static void enqueue(struct fg_operator *op, const char *name)
{
    if (name && fg_controller_enqueue(op->controller, name) != FG_OK)
        fg_log_obj(FG_LOG_DEBUG, COMPONENT, "GPUPolicy", NULL, name, "not enqueued: shutting down");
}

static void on_policy_add(void *ud, struct fg_kobj *obj) { enqueue(ud, fg_kobj_name(obj)); }
static void on_policy_update(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    (void)old;
    enqueue(ud, fg_kobj_name(obj));
}

static const struct fg_resource_handler policy_handler = {
    .on_add = on_policy_add, .on_update = on_policy_update, .on_delete = on_policy_add,
};

/* Enqueues the policy a workload uses. */
static void enqueue_policy_of(struct fg_operator *op, struct fg_kobj *workload)
{
    json_object *obj = NULL;
    if (fg_kobj_parse(workload, &obj, NULL) != FG_OK)
        return;
    enqueue(op, fg_gpuworkload_policy_get(obj));
    json_object_put(obj);
}

static void on_workload_add(void *ud, struct fg_kobj *obj) { enqueue_policy_of(ud, obj); }
static void on_workload_update(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    enqueue_policy_of(ud, old);
    enqueue_policy_of(ud, obj);
}

static const struct fg_resource_handler workload_handler = {
    .on_add = on_workload_add, .on_update = on_workload_update, .on_delete = on_workload_add,
};

/* ---- starting and stopping on the loop thread ---- */

struct loop_start {
    struct fg_operator *op;
    const struct fg_operator_opts *opts;
    enum fg_err err;
    char *errmsg;
};

static struct fg_informer *informer_new(struct fg_operator *op, const struct fg_kube_resource *res, bool strip)
{
    struct fg_kube_listwatch_opts lwo = FG_KUBE_LISTWATCH_OPTS_DEFAULT;
    lwo.cut_managed_fields = strip;
    struct fg_informer_opts io = FG_INFORMER_OPTS_DEFAULT;
    io.resync_ns = 10 * 60 * FG_NS_PER_S;
    if (strip)
        io.reflector.transform = fg_transform_strip;
    return fg_informer_new(fg_kube_listwatch_new(op->loop, res, NULL, &lwo), &io);
}

static void start_on_loop(void *ud)
{
    struct loop_start *s = ud;
    struct fg_operator *op = s->op;
    /* Policies are few and may be written back whole (upgrades): cache them as they are. */
    op->policies = informer_new(op, &fg_crd_gpupolicies, false);
    op->workloads = informer_new(op, &fg_crd_gpuworkloads, true);
    s->err = fg_store_add_indexer(fg_informer_store(op->workloads), FG_POLICY_INDEX, fg_policy_index_workload, NULL);
    if (!s->err)
        s->err = fg_informer_add_handler(op->policies, &policy_handler, op);
    if (!s->err)
        s->err = fg_informer_add_handler(op->workloads, &workload_handler, op);
    if (!s->err)
        s->err = fg_operator_http_start(op, s->opts->listen_host, s->opts->listen_port, s->errmsg);
    if (!s->err)
        s->err = fg_informer_start(op->policies);
    if (!s->err)
        s->err = fg_informer_start(op->workloads);
    if (s->err && !s->errmsg[0])
        fg_errmsg(s->errmsg, s->err, "cannot start the informers");
}

static void stop_on_loop(void *ud)
{
    struct fg_operator *op = ud;
    fg_operator_http_stop(op);
    fg_informer_free(op->policies);
    fg_informer_free(op->workloads);
    op->policies = op->workloads = NULL;
}

enum fg_err fg_operator_start(struct fg_operator *op, const struct fg_operator_opts *opts, char *errmsg)
{
    *op = (struct fg_operator){ 0 };
    enum fg_err err = fg_kube_config_load_default(opts->kubeconfig, &op->config, errmsg);
    if (err)
        return err;
    err = fg_kube_client_new(&op->config, NULL, &op->client, errmsg);
    if (err)
        goto out_config;
    err = fg_kube_loop_new(op->client, &op->loop, errmsg);
    if (err)
        goto out_client;
    err = fg_kube_loop_start(op->loop);
    if (err) {
        fg_errmsg(errmsg, err, "cannot start the kube loop");
        goto out_loop;
    }
    op->reconciler.client = op->client;
    struct fg_controller_opts co = {
        .name = "gpupolicy-controller", .kind = "GPUPolicy", .workers = opts->workers,
        .reconcile = fg_policy_reconcile, .ud = &op->reconciler,
    };
    err = fg_controller_new(&co, &op->controller, errmsg);
    if (err)
        goto out_loop;

    struct loop_start s = { .op = op, .opts = opts, .errmsg = errmsg };
    errmsg[0] = '\0';
    err = fg_operator_on_loop(op, start_on_loop, &s);
    if (!err)
        err = s.err;
    if (err)
        goto out_informers;
    op->reconciler.policies = fg_informer_store(op->policies);
    op->reconciler.workloads = fg_informer_store(op->workloads);
    err = fg_controller_start(op->controller);
    if (err) {
        fg_errmsg(errmsg, err, "cannot start the policy workers");
        goto out_informers;
    }
    fg_log(FG_LOG_INFO, COMPONENT, "operator started against %s", op->config.server);
    return FG_OK;

out_informers:
    if (fg_operator_on_loop(op, stop_on_loop, op) != FG_OK)
        fg_log(FG_LOG_ERROR, COMPONENT, "the kube loop did not stop the informers in time");
    fg_controller_free(op->controller);
out_loop:
    fg_kube_loop_stop(op->loop);
    fg_kube_loop_free(op->loop);
out_client:
    fg_kube_client_free(op->client);
out_config:
    fg_kube_config_cleanup(&op->config);
    return err;
}

bool fg_operator_ready(const struct fg_operator *op)
{
    return op->policies && op->workloads && fg_informer_has_synced(op->policies) &&
           fg_informer_has_synced(op->workloads);
}

void fg_operator_tick(struct fg_operator *op)
{
    if (op->builtins_enqueued || !fg_operator_ready(op))
        return;
    for (size_t i = 0; i < fg_builtin_policies_count; i++)
        if (fg_builtin_policies[i].always)
            enqueue(op, fg_builtin_policies[i].name);
    op->builtins_enqueued = true;
}

void fg_operator_stop(struct fg_operator *op)
{
    /* Workers first: they read the stores the informers own. */
    fg_controller_stop(op->controller);
    if (fg_operator_on_loop(op, stop_on_loop, op) != FG_OK)
        fg_log(FG_LOG_ERROR, COMPONENT, "the kube loop did not stop the informers in time");
    fg_controller_free(op->controller);
    fg_kube_loop_stop(op->loop);
    fg_kube_loop_free(op->loop);
    fg_kube_client_free(op->client);
    fg_kube_config_cleanup(&op->config);
    *op = (struct fg_operator){ 0 };
}
