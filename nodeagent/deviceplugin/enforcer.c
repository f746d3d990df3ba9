/* What the device plugin tells the cluster, off the loop thread (enforcer.h). */
#include "nodeagent/deviceplugin/enforcer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "operator/kube/event.h"
#include "operator/kube/resource.h"
#include "operator/manager/controllers.h"

#define COMPONENT "device-plugin"
#define MAX_PENDING 256

struct action {
    char *key;
    json_object *pod; /* what the Event names */
    char *why;
};

struct fg_dp_enforcer {
    struct fg_manager_controller *ctl;
    struct fg_kube_client *client;
    char host[254];
    pthread_mutex_t mu; /* guards pending */
    struct action pending[MAX_PENDING];
    size_t npending;
    struct fg_counter *evictions;
};

static void queue(struct fg_dp_enforcer *e, const char *action, json_object *pod, const char *why)
{
    const char *ns = fg_json_get_str(pod, "metadata", "namespace", NULL);
    const char *name = fg_json_get_str(pod, "metadata", "name", NULL);
    const char *uid = fg_json_get_str(pod, "metadata", "uid", NULL);
    if (!ns || !name || !uid)
        return;
    char *key = fg_asprintf("%s/%s/%s/%s", action, ns, name, uid);
    pthread_mutex_lock(&e->mu);
    bool known = false;
    for (size_t i = 0; i < e->npending && !known; i++)
        known = strcmp(e->pending[i].key, key) == 0;
    bool room = e->npending < MAX_PENDING;
    if (!known && room) {
        json_object *involved = json_object_new_object();
        json_object *meta = json_object_new_object();
        json_object_object_add(involved, "apiVersion", json_object_new_string("v1"));
        json_object_object_add(involved, "kind", json_object_new_string("Pod"));
        json_object_object_add(involved, "metadata", meta);
        json_object_object_add(meta, "namespace", json_object_new_string(ns));
        json_object_object_add(meta, "name", json_object_new_string(name));
        json_object_object_add(meta, "uid", json_object_new_string(uid));
        e->pending[e->npending++] = (struct action){ fg_strdup(key), involved, fg_strdup(why) };
    }
    pthread_mutex_unlock(&e->mu);
    if (!known && room)
        fg_manager_controller_enqueue(e->ctl, key);
    else if (!room)
        fg_log(FG_LOG_WARN, COMPONENT, "too many pending actions, dropped %s: %s", key, why);
    free(key);
}

void fg_dp_enforcer_refused(struct fg_dp_enforcer *e, json_object *pod, const char *why)
{
    queue(e, "refuse", pod, why);
}

void fg_dp_enforcer_evict(struct fg_dp_enforcer *e, json_object *pod, const char *why)
{
    queue(e, "evict", pod, why);
}

/* Takes the action of key out of pending (the caller frees it); false when there is none. */
static bool take(struct fg_dp_enforcer *e, const char *key, struct action *out)
{
    pthread_mutex_lock(&e->mu);
    bool found = false;
    for (size_t i = 0; i < e->npending && !found; i++)
        if (strcmp(e->pending[i].key, key) == 0) {
            *out = e->pending[i];
            e->pending[i] = e->pending[--e->npending];
            found = true;
        }
    pthread_mutex_unlock(&e->mu);
    return found;
}

/* Returns a failed action for its retry; false (the caller frees it) when the queue filled meanwhile
 * or the same action was queued again. */
static bool put_back(struct fg_dp_enforcer *e, struct action *a)
{
    pthread_mutex_lock(&e->mu);
    bool known = false;
    for (size_t i = 0; i < e->npending && !known; i++)
        known = strcmp(e->pending[i].key, a->key) == 0;
    bool room = !known && e->npending < MAX_PENDING;
    if (room)
        e->pending[e->npending++] = *a;
    pthread_mutex_unlock(&e->mu);
    return room;
}

static void action_free(struct action *a)
{
    free(a->key);
    free(a->why);
    json_object_put(a->pod);
}

static enum fg_err delete_pod(struct fg_dp_enforcer *e, json_object *pod)
{
    const char *ns = fg_json_get_str(pod, "metadata", "namespace", NULL);
    const char *name = fg_json_get_str(pod, "metadata", "name", NULL);
    json_object *opts = json_object_new_object();
    json_object *pre = json_object_new_object();
    json_object_object_add(opts, "kind", json_object_new_string("DeleteOptions"));
    json_object_object_add(opts, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(opts, "gracePeriodSeconds", json_object_new_int(0));
    json_object_object_add(opts, "preconditions", pre);
    json_object_object_add(pre, "uid", json_object_new_string(fg_json_get_str(pod, "metadata", "uid", NULL)));
    char *path = fg_kube_path(&fg_kube_pods, ns, name, NULL, NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_delete(e->client, path, opts, NULL, &st);
    free(path);
    json_object_put(opts);
    /* gone already, or a new pod of that name (the UID precondition failed): nothing left to remove */
    if (err == FG_E_KUBE_NOT_FOUND || err == FG_E_KUBE_CONFLICT)
        err = FG_OK;
    return err;
}

static struct fg_reconcile_result reconcile(void *ud, const char *key)
{
    struct fg_dp_enforcer *e = ud;
    struct action a;
    if (!take(e, key, &a))
        return fg_reconcile_ok();
    bool evict = strncmp(key, "evict/", 6) == 0;
    if (evict) {
        enum fg_err err = delete_pod(e, a.pod);
        if (err != FG_OK) {
            fg_log(FG_LOG_WARN, COMPONENT, "cannot remove pod %s: %s (retrying)", key + 6, fg_err_str(err));
            if (!put_back(e, &a))
                action_free(&a);
            return fg_reconcile_error(err);
        }
        fg_counter_add(e->evictions, 1);
        fg_log(FG_LOG_WARN, COMPONENT, "removed pod %s: %s", key + 6, a.why);
    }
    struct fg_kube_event ev = { "Warning", evict ? "GrantViolation" : "GrantRefused", a.why, "fracgpu-device-plugin",
                                e->host };
    if (fg_kube_event_emit(e->client, a.pod, &ev) != FG_OK)
        fg_log(FG_LOG_DEBUG, COMPONENT, "cannot record an event for %s", key);
    action_free(&a);
    return fg_reconcile_ok();
}

static void enforcer_free(void *ud)
{
    struct fg_dp_enforcer *e = ud;
    for (size_t i = 0; i < e->npending; i++)
        action_free(&e->pending[i]);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

enum fg_err fg_dp_enforcer_setup(struct fg_manager *m, const char *host, struct fg_dp_enforcer **out, char *errmsg)
{
    struct fg_dp_enforcer *e = fg_calloc(1, sizeof(*e));
    pthread_mutex_init(&e->mu, NULL);
    e->client = fg_manager_client(m);
    snprintf(e->host, sizeof(e->host), "%s", host);
    fg_manager_on_free(m, enforcer_free, e);
    e->evictions = fg_metrics_counter(fg_manager_metrics(m), "fracgpu_device_plugin_evictions_total",
                                      "Pods removed for holding fracgpu.io/gpu-share devices they were not granted.",
                                      NULL);
    struct fg_controller_spec spec = { .name = "device-plugin", .kind = "Pod", .workers = 1, .reconcile = reconcile,
                                       .ud = e };
    enum fg_err err = fg_manager_controller(m, &spec, &e->ctl, errmsg);
    if (err)
        return err;
    *out = e;
    return FG_OK;
}
