/*
 * policy — the GPUPolicy reconciler; see policy.h for what it converges to.
 */
#include "reconcilers/policy.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "crds/builtin.h"
#include "crds/gpuworkload.h"
#include "operator/manager/controllers.h"
#include "reconcilers/policy_status.h"
#include "reconcilers/resources.h"

#define COMPONENT "policy-reconciler"

size_t fg_policy_index_workload(void *ud, json_object *obj, const char **values, size_t max)
{
    (void)ud;
    const char *p = fg_gpuworkload_policy_get(obj);
    if (!p || max == 0)
        return 0;
    values[0] = p;
    return 1;
}

static size_t count_workloads(struct fg_policy_reconciler *r, const char *name)
{
    struct fg_kobj_list l = { 0 };
    if (fg_store_by_index(r->workloads, FG_POLICY_INDEX, name, &l) != FG_OK)
        return 0;
    size_t n = l.n;
    fg_kobj_list_cleanup(&l);
    return n;
}

static enum fg_err log_failure(const char *what, const char *name, enum fg_err err, struct fg_kube_status *st)
{
    fg_log_obj(FG_LOG_WARN, COMPONENT, "GPUPolicy", NULL, name, "%s failed: %s: %s", what, fg_err_str(err),
               st->message ? st->message : "");
    fg_kube_status_cleanup(st);
    return err;
}

static enum fg_err create_builtin(struct fg_policy_reconciler *r, const struct fg_builtin_policy *b)
{
    json_object *obj = fg_builtin_policy_object(b);
    char *path = fg_kube_path(&fg_crd_gpupolicies, NULL, NULL, NULL, NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_create(r->client, path, obj, NULL, &st);
    free(path);
    json_object_put(obj);
    if (err == FG_E_KUBE_ALREADY_EXISTS) {
        fg_kube_status_cleanup(&st);
        return FG_OK;   /* our cache has not seen it yet; its add event brings it back here */
    }
    if (err)
        return log_failure("creating the built-in policy", b->name, err, &st);
    fg_counter_add(r->created, 1);
    fg_log_obj(FG_LOG_INFO, COMPONENT, "GPUPolicy", NULL, b->name, "created built-in policy");
    return FG_OK;
}

/* Replaces the spec and the defaults annotations of `existing` (modified) with b's current ones. */
static enum fg_err upgrade_builtin(struct fg_policy_reconciler *r, const struct fg_builtin_policy *b,
                                   json_object *existing)
{
    json_object *fresh = fg_builtin_policy_object(b);
    json_object *ann = fg_json_ensure_obj(fg_json_ensure_obj(existing, "metadata"), "annotations");
    fg_json_set_str(ann, FG_ANN_DEFAULTS_VERSION,
                    fg_json_get_str(fresh, "metadata", "annotations", FG_ANN_DEFAULTS_VERSION, NULL));
    fg_json_set_str(ann, FG_ANN_DEFAULTS_DIGEST,
                    fg_json_get_str(fresh, "metadata", "annotations", FG_ANN_DEFAULTS_DIGEST, NULL));
    json_object_object_add(existing, "spec", json_object_get(fg_json_get(fresh, "spec", NULL)));
    json_object_put(fresh);

    char *path = fg_kube_path(&fg_crd_gpupolicies, NULL, b->name, NULL, NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_update(r->client, path, existing, NULL, &st);
    free(path);
    if (err == FG_E_KUBE_NOT_FOUND) {
        fg_kube_status_cleanup(&st);
        return FG_OK;   /* deleted meanwhile: the delete event recreates it */
    }
    if (err)
        return log_failure("upgrading the built-in policy", b->name, err, &st);
    fg_counter_add(r->upgraded, 1);
    fg_log_obj(FG_LOG_INFO, COMPONENT, "GPUPolicy", NULL, b->name, "upgraded built-in policy to defaults version %d",
               FG_BUILTIN_DEFAULTS_VERSION);
    return FG_OK;
}

static enum fg_err write_status(struct fg_policy_reconciler *r, const char *name, json_object *policy,
                                size_t workloads)
{
    char now[FG_TIME_MAX];
    fg_time_format(fg_clock_wall_ms(), now);
    bool valid = false;
    json_object *status = fg_policy_status_build(policy, (int64_t)workloads, now, &valid);
    enum fg_err err = FG_OK;
    if (!fg_policy_status_changed(policy, status))
        goto out_put_status;

    json_object *patch = json_object_new_object();
    json_object_object_add(patch, "status", json_object_get(status));
    char *path = fg_kube_path(&fg_crd_gpupolicies, NULL, name, "status", NULL);
    struct fg_kube_status st = { 0 };
    err = fg_kube_patch(r->client, path, FG_KUBE_PATCH_MERGE, json_object_to_json_string(patch), NULL, &st);
    free(path);
    json_object_put(patch);
    if (err == FG_E_KUBE_NOT_FOUND) {
        fg_kube_status_cleanup(&st);
        err = FG_OK;
    } else if (err) {
        err = log_failure("writing the status", name, err, &st);
    } else {
        fg_counter_add(r->status_writes, 1);
        fg_log_obj(valid ? FG_LOG_INFO : FG_LOG_WARN, COMPONENT, "GPUPolicy", NULL, name,
                   "status written: %s, used by %zu workloads", valid ? "ready" : "invalid", workloads);
    }
out_put_status:
    json_object_put(status);
    return err;
}

struct fg_reconcile_result fg_policy_reconcile(void *ud, const char *key)
{
    struct fg_policy_reconciler *r = ud;
    const struct fg_builtin_policy *b = fg_builtin_policy_find(key);
    size_t workloads = count_workloads(r, key);

    struct fg_kobj *cached = fg_store_get(r->policies, key);
    if (!cached) {
        if (b && (b->always || workloads > 0))
            return fg_reconcile_error(create_builtin(r, b));
        return fg_reconcile_ok();
    }
    json_object *policy = NULL;
    char msg[FG_ERRMSG_MAX];
    enum fg_err err = fg_kobj_parse(cached, &policy, msg);
    fg_kobj_unref(cached);
    if (err)
        return fg_reconcile_error(err);

    if (b && fg_builtin_policy_check(policy) == FG_BUILTIN_UPGRADE)
        err = upgrade_builtin(r, b, policy);   /* its update event brings the status round */
    else
        err = write_status(r, key, policy, workloads);
    json_object_put(policy);
    return fg_reconcile_error(err);
}

/* ---- what the controller watches ---- */

/* The GPUWorkload fields this reconciler reads (fg_gpuworkload_policy_get). */
static const char *const workload_fields[] = { "spec.policy", "status.policy", "status.detectedClass", NULL };

/* A workload maps to the policy it uses. */
static void map_workload(void *ud, struct fg_kobj *obj, struct fg_keys *out)
{
    (void)ud;
    json_object *workload = NULL;
    if (fg_kobj_parse(obj, &workload, NULL) != FG_OK)
        return;
    const char *policy = fg_gpuworkload_policy_get(workload);
    if (policy)
        fg_keys_add(out, policy);
    json_object_put(workload);
}

/* The built-ins that must exist are reconciled at every start, cached or not. */
static void seed_builtins(void *ud, struct fg_keys *out)
{
    (void)ud;
    for (size_t i = 0; i < fg_builtin_policies_count; i++)
        if (fg_builtin_policies[i].always)
            fg_keys_add(out, fg_builtin_policies[i].name);
}

enum fg_err fg_policy_reconciler_setup(struct fg_manager *m, unsigned workers, char *errmsg)
{
    struct fg_informer_factory *f = fg_manager_informers(m);
    struct fg_informer *policies, *workloads;
    /* Policies are few and may be written back whole (upgrades): cache them whole. */
    enum fg_err err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_crd_gpupolicies },
                                              &policies, errmsg);
    if (!err)
        err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_crd_gpuworkloads,
                                                                     .fields = workload_fields },
                                      &workloads, errmsg);
    if (!err && (err = fg_informer_factory_index(f, workloads, FG_POLICY_INDEX, fg_policy_index_workload, NULL)))
        fg_errmsg(errmsg, err, "cannot index GPUWorkloads by policy");
    if (err)
        return err;

    struct fg_policy_reconciler *r = fg_calloc(1, sizeof *r);
    fg_manager_on_free(m, free, r);
    struct fg_metrics *reg = fg_manager_metrics(m);
    r->client = fg_manager_client(m);
    r->policies = fg_informer_store(policies);
    r->workloads = fg_informer_store(workloads);
    r->created = fg_metrics_counter(reg, "fracgpu_builtin_policies_created_total", "Built-in policies created.", NULL);
    r->upgraded = fg_metrics_counter(reg, "fracgpu_builtin_policies_upgraded_total",
                                     "Unedited built-in policies upgraded to new defaults.", NULL);
    r->status_writes = fg_metrics_counter(reg, "fracgpu_policy_status_writes_total", "GPUPolicy status updates written.",
                                          NULL);
    struct fg_manager_controller *c;
    struct fg_controller_spec spec = { .name = "gpupolicy", .kind = "GPUPolicy", .workers = workers,
                                       .reconcile = fg_policy_reconcile, .ud = r, .primary = policies,
                                       .seed = seed_builtins };
    err = fg_manager_controller(m, &spec, &c, errmsg);
    if (!err)
        err = fg_manager_watches(c, workloads, map_workload, NULL, NULL, errmsg);
    return err;
}
