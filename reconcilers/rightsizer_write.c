/* The rightsizer's writes: GPUWorkload status, Events, GPUCheckpoints and their collection (rightsizer_int.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "crds/gpuworkload.h"
#include "operator/kube/event.h"
#include "reconcilers/resources.h"
#include "reconcilers/rightsizer_int.h"
#include "reconcilers/workload.h"
#include "rightsizing/checkpoint.h"

struct write_call {
    struct fg_rightsizer *r;
    char what[96], key[512];
    struct fg_counter *ok;
};

static void written(void *ud, enum fg_err err, const struct fg_buf *body, const struct fg_kube_status *st)
{
    (void)body;
    struct write_call *wc = ud;
    if (err) {
        fg_log(err == FG_E_KUBE_CONFLICT ? FG_LOG_INFO : FG_LOG_WARN, RS_COMPONENT, "%s %s: %s (will retry)", wc->what,
               wc->key, st && st->message ? st->message : fg_err_str(err));
        if (wc->ok == wc->r->checkpoint_writes)
            fg_counter_add(wc->r->checkpoint_errors, 1);
    } else if (wc->ok) {
        fg_counter_add(wc->ok, 1);
    }
    free(wc);
}

static void request(struct fg_rightsizer *r, const char *method, char *path, const char *type, json_object *body,
                    const char *what, const char *key, struct fg_counter *ok)
{
    struct write_call *wc = fg_calloc(1, sizeof *wc);
    wc->r = r;
    wc->ok = ok;
    snprintf(wc->what, sizeof wc->what, "%s", what);
    snprintf(wc->key, sizeof wc->key, "%s", key);
    size_t len = 0;
    const char *text = body ? fg_json_text(body, &len) : NULL;
    fg_kube_loop_request(r->loop, method, path, type, text, len, written, wc);
    free(path);
}

void rs_emit(struct fg_rightsizer *r, json_object *gw, const char *type, const char *reason, const char *message)
{
    struct fg_kube_event ev = { type, reason, message, "fracgpu-operator", NULL };
    json_object *e = fg_kube_event_build(gw, &ev, fg_clock_wall_ms());
    char *path = fg_kube_path(&fg_kube_events, fg_json_get_str(gw, "metadata", "namespace", NULL), NULL, NULL, NULL);
    request(r, "POST", path, "application/json", e, "cannot record an event about", fg_json_get_str(gw, "metadata", "name", NULL),
            NULL);
    json_object_put(e);
}

void rs_write_status(struct fg_rightsizer *r, struct rs_workload *w, json_object *gw, int64_t now_ms)
{
    json_object *usage = fg_rs_usage_json(&w->st, &w->o, now_ms);
    json_object *rec = fg_rs_recommendation_json(&w->st, &w->o, now_ms, w->reason);
    json_object *cur_rec = fg_json_get(gw, "status", "recommendation", NULL);
    /* the members written as null (to remove them) are absent from the stored object */
    json_object *want_rec = json_object_new_object();
    json_object_object_foreach(rec, k, v) if (v) json_object_object_add(want_rec, k, json_object_get(v));
    /* the recommendation as soon as it changes; usage, which moves with every sample, once per
     * checkpoint interval: a write per workload per interval would crowd the client's rate limit */
    json_object *cur_usage = fg_json_get(gw, "status", "usage", NULL);
    bool rec_changed = !json_object_equal(want_rec, cur_rec);
    bool usage_due = !cur_usage || (!json_object_equal(usage, cur_usage) &&
                                    now_ms - w->usage_written_ms >= r->o.checkpoint_interval_ms);
    json_object_put(want_rec);
    if (rec_changed || usage_due) {
        w->usage_written_ms = now_ms;
        json_object *patch = json_object_new_object(), *st = fg_json_ensure_obj(patch, "status");
        json_object_object_add(st, "usage", json_object_get(usage));
        json_object_object_add(st, "recommendation", json_object_get(rec));
        char *path = fg_kube_path(&fg_crd_gpuworkloads, w->ns, w->name, "status", NULL);
        request(r, "PATCH", path, "application/merge-patch+json", patch, "cannot write the recommendation of", w->key,
                r->status_writes);
        json_object_put(patch);
    }
    json_object_put(usage);
    json_object_put(rec);
}

void rs_checkpoint_save(struct fg_rightsizer *r, struct rs_workload *w, json_object *gw, int64_t now_ms)
{
    char now[FG_TIME_MAX], target[600], group[254];
    fg_time_format(now_ms, now);
    const char *kind = fg_json_get_str(gw, "spec", "targetRef", "kind", NULL);
    const char *name = fg_json_get_str(gw, "spec", "targetRef", "name", NULL);
    fg_workload_api_group(fg_json_get_str(gw, "spec", "targetRef", "apiVersion", NULL), group, sizeof group);
    snprintf(target, sizeof target, "%s/%s", kind ? kind : "", name ? name : "");
    json_object *status = json_object_new_object();
    fg_json_set_str(status, "target", target);
    json_object_object_add(status, "samples", json_object_new_int64((int64_t)w->st.samples));
    fg_json_set_str(status, "lastUpdateTime", now);
    const char *policy = fg_gpuworkload_policy_get(gw);
    if (policy)
        fg_json_set_str(status, "policy", policy);
    json_object_object_add(status, "state", fg_checkpoint_encode(&w->st));
    json_object *cached = fg_store_get_json(fg_informer_store(r->checkpoints_inf), w->key);
    if (cached) {
        /* the whole status replaced (a merge patch would keep buckets the state no longer has) */
        json_object *ops = json_object_new_array(), *op = json_object_new_object();
        fg_json_set_str(op, "op", "add");
        fg_json_set_str(op, "path", "/status");
        json_object_object_add(op, "value", status);
        json_object_array_add(ops, op);
        request(r, "PATCH", fg_kube_path(&fg_crd_gpucheckpoints, w->ns, w->name, NULL, NULL),
                "application/json-patch+json", ops, "cannot save the history of", w->key, r->checkpoint_writes);
        json_object_put(ops);
    } else {
        json_object *obj = json_object_new_object();
        fg_json_set_str(obj, "apiVersion", FG_API_VERSION);
        fg_json_set_str(obj, "kind", FG_GPUCHECKPOINT_KIND);
        json_object *meta = fg_json_ensure_obj(obj, "metadata");
        fg_json_set_str(meta, "name", w->name);
        fg_json_set_str(meta, "namespace", w->ns);
        fg_json_set_str(fg_json_ensure_obj(meta, "labels"), "app.kubernetes.io/name", "fracgpu");
        json_object *ref = fg_json_ensure_obj(fg_json_ensure_obj(obj, "spec"), "targetRef");
        fg_json_set_str(ref, "group", group);
        fg_json_set_str(ref, "kind", kind ? kind : "");
        fg_json_set_str(ref, "name", name ? name : "");
        json_object_object_add(obj, "status", status);
        request(r, "POST", fg_kube_path(&fg_crd_gpucheckpoints, w->ns, NULL, NULL, NULL), "application/json", obj,
                "cannot create the checkpoint of", w->key, r->checkpoint_writes);
        json_object_put(obj);
    }
    json_object_put(cached);
    w->dirty = false;
    w->saved_ms = now_ms;
}

void rs_checkpoint_restore(struct fg_rightsizer *r, struct rs_workload *w)
{
    json_object *cached = fg_store_get_json(fg_informer_store(r->checkpoints_inf), w->key);
    json_object *state = fg_json_get(cached, "status", "state", NULL);
    if (state) {
        char err[256] = "";
        if (fg_checkpoint_decode(state, &w->st, err) == FG_OK) {
            fg_counter_add(r->checkpoints_restored, 1);
            w->saved_ms = fg_clock_wall_ms();
            fg_log(FG_LOG_INFO, RS_COMPONENT, "GPUWorkload %s: history restored from its GPUCheckpoint (%llu samples)",
                   w->key, (unsigned long long)w->st.samples);
        } else {
            fg_counter_add(r->checkpoint_errors, 1);
            fg_log(FG_LOG_WARN, RS_COMPONENT, "GPUWorkload %s: its GPUCheckpoint cannot be read, history starts afresh: %s",
                   w->key, err);
        }
    }
    json_object_put(cached);
}

void rs_checkpoints_collect(struct fg_rightsizer *r, int64_t now_ms)
{
    struct fg_kobj_list l = { 0 };
    fg_store_list(fg_informer_store(r->checkpoints_inf), &l);
    for (size_t i = 0; i < l.n; i++) {
        const char *key = fg_kobj_key(l.items[i]);
        json_object *gw = fg_store_get_json(fg_informer_store(r->gpuworkloads_inf), key);
        if (gw) {
            json_object_put(gw);
            continue;
        }
        json_object *ck = NULL;
        if (fg_kobj_parse(l.items[i], &ck, NULL) != FG_OK)
            continue;
        if (fg_rs_checkpoint_expired(fg_json_get_str(ck, "status", "lastUpdateTime", NULL), now_ms,
                                     r->o.checkpoint_ttl_ms)) {
            char *body = fg_asprintf("{\"preconditions\":{\"uid\":\"%s\"}}", fg_kobj_uid(l.items[i]));
            json_object *opts = json_tokener_parse(body);
            request(r, "DELETE",
                    fg_kube_path(&fg_crd_gpucheckpoints, fg_kobj_namespace(l.items[i]), fg_kobj_name(l.items[i]), NULL,
                                 NULL),
                    "application/json", opts, "cannot collect the checkpoint", key, r->checkpoints_collected);
            json_object_put(opts);
            free(body);
        }
        json_object_put(ck);
    }
    fg_kobj_list_cleanup(&l);
}
