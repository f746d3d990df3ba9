/* chaos_impostors — impostor pods made from a granted tenant, and what became of them (chaos_impostors.h). */
#include "e2e/cluster/test/chaos_impostors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/test/share_fixture.h"
#include "reconcilers/allocation.h"
#include "reconcilers/podcontract.h"

static const char *const forgery_names[CHAOS_FORGERIES] = { "copied", "edited", "forged" };
static const char *const outcome_names[] = { "unresolved", "refused (grant)", "refused (other)", "removed",
                                             "vanished" };

const char *chaos_forgery_name(enum chaos_forgery k)
{
    return k < CHAOS_FORGERIES ? forgery_names[k] : "?";
}

const char *chaos_outcome_name(enum chaos_outcome o)
{
    return o <= CHAOS_VANISHED ? outcome_names[o] : "?";
}

/* A Running tenant of ns holding a grant, on a node not spared: drawn with *rng; NULL when none. */
static json_object *victim_of(json_object *l, unsigned *rng, chaos_spare_fn *spare, void *ud)
{
    json_object *items = fg_json_get(l, "items", NULL), *candidates[64];
    size_t n = 0;
    for (size_t i = 0; i < fg_json_array_len(items) && n < 64; i++) {
        json_object *p = fg_json_at(items, i);
        const char *node = fg_json_get_str(p, "spec", "nodeName", NULL);
        if (share_live(p) && node && share_ann(p, FG_ANN_GRANT) && share_ann(p, FG_ANN_GPU_UUID) &&
            fg_str_eq(fg_json_get_str(p, "status", "phase", NULL), "Running") && (!spare || !spare(ud, node)))
            candidates[n++] = p;
    }
    return n ? candidates[(size_t)rand_r(rng) % n] : NULL;
}

/* A grant of the v1 form ("v1." and 43 base64url characters) that nobody signed. */
static void made_up_grant(unsigned *rng, char out[48])
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    memcpy(out, "v1.", 3);
    for (int i = 0; i < 43; i++)
        out[3 + i] = alphabet[(unsigned)rand_r(rng) % 64];
    out[46] = '\0';
}

/* The victim's annotations as the impostor carries them (a new object). */
static json_object *forged_annotations(json_object *victim, enum chaos_forgery kind, unsigned *rng)
{
    json_object *ann = NULL;
    if (json_object_deep_copy(fg_json_get(victim, "metadata", "annotations", NULL), &ann, NULL) != 0)
        return NULL;
    json_object_object_del(ann, FG_ANN_CAPACITY_POD);
    if (kind == CHAOS_EDITED) {
        bool whole = fg_str_eq(share_ann(victim, FG_ANN_COMPUTE_MILLI), "1000");
        json_object_object_add(ann, FG_ANN_COMPUTE_MILLI, json_object_new_string(whole ? "500" : "1000"));
        json_object_object_add(ann, FG_ANN_MEMORY_MIB, json_object_new_string(whole ? "1024" : FG_ALLOC_WHOLE_MEMORY));
    } else if (kind == CHAOS_FORGED) {
        char grant[48];
        made_up_grant(rng, grant);
        json_object_object_add(ann, FG_ANN_GRANT, json_object_new_string(grant));
    }
    return ann;
}

static json_object *impostor_pod(const char *name, const char *node, json_object *ann)
{
    char *json = fg_asprintf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"annotations\":%s},"
        "\"spec\":{\"nodeName\":\"%s\",\"terminationGracePeriodSeconds\":0,\"containers\":[{\"name\":\"main\","
        "\"image\":\"registry.example.com/vllm:1\",\"resources\":{\"requests\":{\"cpu\":\"10m\"},"
        "\"limits\":{\"" FG_RES_GPU_SHARE "\":\"1\"}}}]}}",
        name, json_object_to_json_string(ann), node);
    json_object *pod = json_tokener_parse(json);
    free(json);
    return pod;
}

/* Creates pod in ns, asking again while a burst refuses; the stored pod, or NULL. */
static json_object *create(struct fg_simcluster *c, const char *ns, json_object *pod)
{
    char *path = fg_kube_path(&fg_kube_pods, ns, NULL, NULL, NULL);
    json_object *made = NULL;
    for (int attempt = 0; attempt < 50 && !made; attempt++) {
        struct fg_kube_status st = { 0 };
        if (fg_kube_create(c->client, path, pod, &made, &st) != FG_OK) {
            bool taken = st.http_code == 409;
            fg_kube_status_cleanup(&st);
            made = NULL;
            if (taken)
                break;
            nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
        }
    }
    free(path);
    return made;
}

bool chaos_impostor_plant(struct fg_simcluster *c, const char *ns, const char *impostor_ns, unsigned i,
                          enum chaos_forgery kind, unsigned *rng, chaos_spare_fn *spare, void *ud,
                          struct chaos_impostor *out, char *why, size_t why_size)
{
    memset(out, 0, sizeof *out);
    json_object *l = share_list(c, &fg_kube_pods, ns, NULL), *victim = victim_of(l, rng, spare, ud);
    json_object *ann = victim ? forged_annotations(victim, kind, rng) : NULL, *made = NULL;
    if (ann) {
        snprintf(out->name, sizeof out->name, "impostor-%u-%s", i, chaos_forgery_name(kind));
        snprintf(out->node, sizeof out->node, "%s", fg_json_get_str(victim, "spec", "nodeName", NULL));
        snprintf(out->victim, sizeof out->victim, "%s", fg_json_get_str(victim, "metadata", "name", NULL));
        out->kind = kind;
        json_object *pod = impostor_pod(out->name, out->node, ann);
        out->created_ns = fg_clock_mono_ns();
        made = pod ? create(c, impostor_ns, pod) : NULL;
        json_object_put(pod);
    }
    if (made)
        snprintf(out->uid, sizeof out->uid, "%s", fg_json_get_str(made, "metadata", "uid", NULL));
    else
        snprintf(why, why_size, "%s", !l ? "the pods could not be listed" : !victim ? "no granted tenant runs"
                                                                                     : "the create was refused");
    json_object_put(made);
    json_object_put(ann);
    json_object_put(l);
    return made != NULL;
}

/* Whether the node agent said it removed the impostor: -1 when the API could not say. */
static int removal_event(struct fg_simcluster *c, const char *ns, const char *name)
{
    char sel[400];
    snprintf(sel, sizeof sel, "involvedObject.name=%s,reason=GrantViolation", name);
    struct fg_buf q;
    fg_buf_init(&q, 0);
    int found = -1;
    if (fg_kube_query_add(&q, "fieldSelector", sel) == FG_OK) {
        char *path = fg_kube_path(&fg_kube_events, ns, NULL, NULL, fg_buf_str(&q));
        json_object *l = NULL;
        if (fg_kube_get(c->client, path, &l, NULL) == FG_OK)
            found = fg_json_array_len(fg_json_get(l, "items", NULL)) > 0;
        json_object_put(l);
        free(path);
    }
    fg_buf_cleanup(&q);
    return found;
}

/* The outcome of a Failed impostor, from its status. */
static enum chaos_outcome failed_outcome(json_object *pod, struct chaos_impostor *imp)
{
    const char *reason = fg_json_get_str(pod, "status", "reason", NULL);
    const char *msg = fg_json_get_str(pod, "status", "message", NULL);
    snprintf(imp->detail, sizeof imp->detail, "%s: %s", reason ? reason : "no reason", msg ? msg : "no message");
    return fg_str_eq(reason, "UnexpectedAdmissionError") && msg && strstr(msg, FG_ANN_GRANT) ? CHAOS_REFUSED_GRANT
                                                                                            : CHAOS_REFUSED_OTHER;
}

bool chaos_impostor_resolve(struct fg_simcluster *c, const char *impostor_ns, struct chaos_impostor *imp)
{
    if (imp->outcome != CHAOS_UNRESOLVED)
        return true;
    char *path = fg_kube_path(&fg_kube_pods, impostor_ns, imp->name, NULL, NULL);
    json_object *pod = NULL;
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_get(c->client, path, &pod, &st);
    bool gone = (err && st.http_code == 404) ||
                (!err && !fg_str_eq(fg_json_get_str(pod, "metadata", "uid", NULL), imp->uid));
    if (err)
        fg_kube_status_cleanup(&st);
    free(path);
    if (!err && !gone && fg_str_eq(fg_json_get_str(pod, "status", "phase", NULL), "Failed"))
        imp->outcome = failed_outcome(pod, imp);
    json_object_put(pod);
    if (gone) {
        /* the agent writes its Event and the delete apart: a removal without its Event yet is
         * given a while before it counts as vanished */
        uint64_t now = fg_clock_mono_ns();
        imp->gone_ns = imp->gone_ns ? imp->gone_ns : now;
        int said = removal_event(c, impostor_ns, imp->name);
        if (said > 0)
            imp->outcome = CHAOS_REMOVED;
        else if (said == 0 && now - imp->gone_ns > CHAOS_EVENT_WAIT_S * FG_NS_PER_S)
            imp->outcome = CHAOS_VANISHED;
    }
    if (imp->outcome != CHAOS_UNRESOLVED)
        imp->resolved_ns = fg_clock_mono_ns();
    return imp->outcome != CHAOS_UNRESOLVED;
}
