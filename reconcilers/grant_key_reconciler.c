/* Keeps Secret fracgpu-grant-key (grant_key_reconciler.h). */
#include "reconcilers/grant_key_reconciler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "operator/cache/store.h"
#include "operator/kube/event.h"
#include "operator/kube/resource.h"
#include "operator/manager/controllers.h"
#include "operator/manager/informers.h"

#define COMPONENT "grant-key"
#define MAX_REQUEUE_MS 3600000ll /* look again at least hourly, whatever the wall clock did */

/* Writes plan->next: a create when there was no Secret, else an update with its resourceVersion. */
static enum fg_err write_secret(struct fg_kube_client *c, const struct fg_grant_key_opts *o, bool create,
                                json_object *next, json_object **written, char *errmsg)
{
    struct fg_kube_status st = { 0 };
    char *path = fg_kube_path(&fg_kube_secrets, o->ns, create ? NULL : o->secret, NULL, NULL);
    enum fg_err err = create ? fg_kube_create(c, path, next, written, &st)
                             : fg_kube_update(c, path, next, written, &st);
    if (err != FG_OK)
        fg_errmsg(errmsg, err, "cannot %s Secret %s/%s: %s", create ? "create" : "update", o->ns, o->secret,
                  st.message ? st.message : fg_err_str(err));
    fg_kube_status_cleanup(&st);
    free(path);
    return err;
}

/* The Secret as the API has it now; *out NULL when there is none. */
static enum fg_err read_secret(struct fg_kube_client *c, const struct fg_grant_key_opts *o, json_object **out,
                               char *errmsg)
{
    struct fg_kube_status st = { 0 };
    char *path = fg_kube_path(&fg_kube_secrets, o->ns, o->secret, NULL, NULL);
    *out = NULL;
    enum fg_err err = fg_kube_get(c, path, out, &st);
    if (err == FG_E_KUBE_NOT_FOUND)
        err = FG_OK;
    else if (err != FG_OK)
        fg_errmsg(errmsg, err, "cannot read Secret %s/%s: %s", o->ns, o->secret,
                  st.message ? st.message : fg_err_str(err));
    fg_kube_status_cleanup(&st);
    free(path);
    return err;
}

/* Whether a failed write means another writer got there first. */
static bool lost_race(enum fg_err err, bool create)
{
    return err == FG_E_KUBE_CONFLICT || (create && err == FG_E_KUBE_ALREADY_EXISTS) ||
           (!create && err == FG_E_KUBE_NOT_FOUND);
}

/* The Event and the log line of a step written; never any key material. */
static void report(struct fg_kube_client *c, const struct fg_grant_key_opts *o, json_object *written,
                   const struct fg_grant_key_plan *plan)
{
    static const char *const said[FG_GRANT_KEY_STEPS] = {
        [FG_GRANT_KEY_ISSUE] = "there was no grant key: a new one was written",
        [FG_GRANT_KEY_REPAIR_KEY] = "the grant key was unusable and was replaced; grants signed before are refused",
        [FG_GRANT_KEY_REPAIR_PREVIOUS] = "the previous grant key was unusable and was dropped; the key stays",
        [FG_GRANT_KEY_ADOPT] = "the grant key had no rotation time; now recorded, its rotation counts from now",
        [FG_GRANT_KEY_ROTATE] = "the grant key was rotated; the previous one verifies through the grace period",
        [FG_GRANT_KEY_RETIRE] = "the grace period ended; the previous grant key was dropped",
    };
    bool repair = fg_grant_key_step_is_repair(plan->step);
    char msg[FG_ERRMSG_MAX + 160];
    snprintf(msg, sizeof(msg), "%s%s%s", said[plan->step] ? said[plan->step] : "", repair ? ": " : "",
             repair ? plan->problem : "");
    fg_log_obj(repair ? FG_LOG_WARN : FG_LOG_INFO, COMPONENT, "Secret", o->ns, o->secret, "%s", msg);
    struct fg_kube_event ev = { repair ? "Warning" : "Normal", fg_grant_key_step_reason(plan->step), msg,
                                "fracgpu-operator", o->reporter };
    if (fg_kube_event_emit(c, written, &ev) != FG_OK)
        fg_log_obj(FG_LOG_DEBUG, COMPONENT, "Secret", o->ns, o->secret, "cannot record the %s event", ev.reason);
}

enum fg_err fg_grant_key_converge(struct fg_kube_client *c, const struct fg_grant_key_opts *o, json_object *believed,
                                  int64_t now_ms, struct fg_grant_key_outcome *out, char *errmsg)
{
    memset(out, 0, sizeof(*out));
    json_object *cur = believed ? json_object_get(believed) : NULL;
    enum fg_err err;
    for (;;) {
        struct fg_grant_key_plan plan;
        err = fg_grant_key_plan(cur, o->ns, o->secret, &o->policy, now_ms, &plan, errmsg);
        if (err != FG_OK)
            break;
        out->recheck_ms = plan.recheck_ms;
        if (plan.step == FG_GRANT_KEY_KEEP) {
            fg_grant_key_plan_cleanup(&plan);
            break;
        }
        json_object *written = NULL;
        bool create = cur == NULL;
        err = write_secret(c, o, create, plan.next, &written, errmsg);
        if (err == FG_OK) {
            out->step = plan.step;
            report(c, o, written, &plan);
        }
        json_object_put(written);
        fg_grant_key_plan_cleanup(&plan);
        if (err == FG_OK || !lost_race(err, create) || out->conflicts == FG_GRANT_KEY_MAX_CONFLICTS)
            break;
        out->conflicts++;
        fg_log_obj(FG_LOG_INFO, COMPONENT, "Secret", o->ns, o->secret,
                   "the Secret changed since it was read (%s: another writer, or a cache behind); reading it again",
                   fg_err_str(err));
        json_object_put(cur);
        if ((err = read_secret(c, o, &cur, errmsg)) != FG_OK)
            break;
    }
    json_object_put(cur);
    return err;
}

struct reconciler {
    struct fg_kube_client *client;
    struct fg_store *secrets;
    struct fg_grant_key_opts o;
    char key[320];                          /* "<ns>/<secret>" */
    struct fg_counter *writes[FG_GRANT_KEY_STEPS];
};

static struct fg_reconcile_result reconcile(void *ud, const char *key)
{
    struct reconciler *r = ud;
    (void)key;
    json_object *secret = fg_store_get_json(r->secrets, r->key);
    struct fg_grant_key_outcome out;
    char errmsg[FG_ERRMSG_MAX] = "";
    int64_t now = fg_clock_wall_ms();
    enum fg_err err = fg_grant_key_converge(r->client, &r->o, secret, now, &out, errmsg);
    json_object_put(secret);
    if (err != FG_OK) {
        fg_log_obj(FG_LOG_WARN, COMPONENT, "Secret", r->o.ns, r->o.secret, "%s", errmsg);
        return fg_reconcile_error(err);
    }
    if (out.step != FG_GRANT_KEY_KEEP)
        fg_counter_add(r->writes[out.step], 1);
    int64_t after_ms = out.recheck_ms - now;
    if (after_ms < 1000)
        after_ms = 1000;
    if (after_ms > MAX_REQUEUE_MS)
        after_ms = MAX_REQUEUE_MS;
    return fg_reconcile_requeue_after((uint64_t)after_ms * FG_NS_PER_MS);
}

static void seed(void *ud, struct fg_keys *out)
{
    struct reconciler *r = ud;
    fg_keys_add(out, r->key);
}

enum fg_err fg_grant_key_reconciler_setup(struct fg_manager *m, const struct fg_grant_key_opts *o, char *errmsg)
{
    enum fg_err err = fg_grant_key_policy_check(&o->policy, errmsg);
    if (err != FG_OK)
        return err;
    struct fg_informer *secrets;
    err = fg_informer_factory_get_named(fg_manager_informers(m), &fg_kube_secrets, o->ns, o->secret, &secrets, errmsg);
    if (err != FG_OK)
        return err;
    struct reconciler *r = fg_calloc(1, sizeof(*r));
    fg_manager_on_free(m, free, r);
    r->client = fg_manager_client(m);
    r->secrets = fg_informer_store(secrets);
    r->o = *o;
    if (!r->o.reporter)
        r->o.reporter = fg_manager_identity(m);
    snprintf(r->key, sizeof(r->key), "%s/%s", o->ns, o->secret);
    for (int s = FG_GRANT_KEY_ISSUE; s < FG_GRANT_KEY_STEPS; s++) {
        const char *labels[] = { "step", fg_grant_key_step_name((enum fg_grant_key_step)s), NULL };
        r->writes[s] = fg_metrics_counter(fg_manager_metrics(m), "fracgpu_grant_key_writes_total",
                                          "Writes of the grant key Secret, by step (issue, rotate, retire, ...).",
                                          labels);
    }
    struct fg_manager_controller *c;
    struct fg_controller_spec spec = { .name = "grant-key", .kind = "Secret", .workers = 1, .reconcile = reconcile,
                                       .ud = r, .primary = secrets, .seed = seed, .seed_ud = r };
    return fg_manager_controller(m, &spec, &c, errmsg);
}
