/*
 * store_delete — DELETE semantics as kube-apiserver's generic registry and pod strategy apply them.
 *
 * DeleteOptions: preconditions (409 when they do not hold), gracePeriodSeconds (a negative value
 * counts as 1, as kube's BeforeDelete does) and propagationPolicy (Orphan, Foreground, Background;
 * anything else is a 422 Invalid DeleteOptions).
 * Graceful deletion, pods only: a pod bound to a node and not Succeeded/Failed gets
 * deletionTimestamp = now + grace and deletionGracePeriodSeconds = grace (options, else
 * spec.terminationGracePeriodSeconds, 30 unless the pod set it) and stays; a later DELETE may only shorten the grace
 * period, and one that brings it to 0 removes the pod (the kubelet's final delete). Other pods, and
 * every other kind, go at once.
 * Propagation: Orphan sets the `orphan` finalizer, Foreground `foregroundDeletion`, Background
 * neither (each drops the other two); with no policy the object's own choice stays. Removing the
 * dependents and then the finalizer is the garbage collector's work, a client of this server.
 * Finalizers: an object that has some only gets deletionTimestamp (grace 0 unless graceful) and goes
 * when an update removes the last one (store_write.c). Deleting a namespace deletes everything in it
 * at once. Nothing about a pending deletion changes but its grace period: a DELETE of an object
 * already being deleted returns it unchanged. A dry run (st->dry_run) checks everything and returns
 * the object the deletion would leave or remove, writing nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "e2e/apiserver/patch.h"
#include "e2e/apiserver/status.h"
#include "e2e/apiserver/store.h"
#include "e2e/apiserver/store_int.h"

#define FINALIZER_ORPHAN "orphan"
#define FINALIZER_FOREGROUND "foregroundDeletion"

/* The DeleteOptions this server acts on. */
struct delete_opts {
    bool has_grace;
    int64_t grace;
    const char *policy; /* NULL when not given */
};

static enum fg_err delete_opts_invalid(json_object **out, const char *field, const char *detail)
{
    json_object *details = fg__status_details("", "meta.k8s.io", "DeleteOptions");
    fg__status_add_cause(details, "FieldValueNotSupported", detail, field);
    return fg__write_fail(out, FG_E_KUBE_INVALID, NULL, NULL, details,
                          "DeleteOptions.meta.k8s.io \"\" is invalid: %s: %s", field, detail);
}

static enum fg_err read_opts(json_object *options, struct delete_opts *o, json_object **out)
{
    *o = (struct delete_opts){ 0 };
    if (options && !json_object_is_type(options, json_type_object))
        return fg__write_fail(out, FG_E_KUBE_BAD_REQUEST, NULL, NULL, NULL, "DeleteOptions must be a JSON object");
    json_object *grace = fg_json_get(options, "gracePeriodSeconds", NULL);
    if (grace && !json_object_is_type(grace, json_type_int))
        return fg__write_fail(out, FG_E_KUBE_BAD_REQUEST, NULL, NULL, NULL,
                              "DeleteOptions.gracePeriodSeconds must be an integer");
    if (grace) {
        o->has_grace = true;
        o->grace = json_object_get_int64(grace);
        if (o->grace < 0)
            o->grace = 1; /* kube-apiserver: negative values are treated as 1s on the delete path */
    }
    json_object *policy = fg_json_get(options, "propagationPolicy", NULL);
    if (policy && !json_object_is_type(policy, json_type_string))
        return fg__write_fail(out, FG_E_KUBE_BAD_REQUEST, NULL, NULL, NULL,
                              "DeleteOptions.propagationPolicy must be a string");
    o->policy = policy ? json_object_get_string(policy) : NULL;
    if (o->policy && strcmp(o->policy, "Orphan") && strcmp(o->policy, "Foreground") &&
        strcmp(o->policy, "Background")) {
        char *detail = fg_asprintf("Unsupported value: \"%s\": supported values: \"Foreground\", \"Background\", "
                                   "\"Orphan\", \"nil\"", o->policy);
        enum fg_err err = delete_opts_invalid(out, "propagationPolicy", detail);
        free(detail);
        return err;
    }
    return FG_OK;
}

static bool is_pods(const struct fg__type *type)
{
    return !type->group[0] && !strcmp(type->plural, "pods");
}

/* The finalizers after the propagation policy: the garbage collector's two dropped, then the
 * policy's added; with no policy the object's own stay. A new array. */
static json_object *policy_finalizers(json_object *cur, const char *policy)
{
    json_object *old = fg_json_get(cur, "metadata", "finalizers", NULL);
    json_object *f = json_object_new_array();
    for (size_t i = 0; i < fg_json_array_len(old); i++) {
        json_object *v = json_object_array_get_idx(old, i);
        const char *name = json_object_get_string(v);
        if (policy && (fg_str_eq(name, FINALIZER_ORPHAN) || fg_str_eq(name, FINALIZER_FOREGROUND)))
            continue;
        json_object_array_add(f, json_object_get(v));
    }
    if (fg_str_eq(policy, "Orphan"))
        json_object_array_add(f, json_object_new_string(FINALIZER_ORPHAN));
    else if (fg_str_eq(policy, "Foreground"))
        json_object_array_add(f, json_object_new_string(FINALIZER_FOREGROUND));
    return f;
}

/* A pod's grace period for a first DELETE (kube's pod strategy, CheckGracefulDelete). */
static int64_t pod_grace(json_object *pod, const struct delete_opts *o)
{
    int64_t grace = 0; /* kube's: no terminationGracePeriodSeconds (it is defaulted to 30) is no grace */
    if (o->has_grace)
        grace = o->grace;
    else
        fg_json_get_int64(pod, &grace, "spec", "terminationGracePeriodSeconds", NULL);
    const char *node = fg_json_get_str(pod, "spec", "nodeName", NULL);
    const char *phase = fg_json_get_str(pod, "status", "phase", NULL);
    if (!node || !*node || fg_str_eq(phase, "Succeeded") || fg_str_eq(phase, "Failed"))
        return 0;
    return grace < 0 ? 1 : grace;
}

/* What a DELETE does to the stored object (kube's BeforeDelete). */
enum delete_step {
    STEP_UNCHANGED, /* a deletion is pending and stays as it is */
    STEP_GRACEFUL,  /* deletionTimestamp and deletionGracePeriodSeconds set from *grace */
    STEP_PLAIN,     /* not graceful: goes now unless finalizers hold it */
};

/* The step and, when graceful, the grace period and the deadline (*when_ms, since the epoch). A
 * deletionTimestamp that is not an RFC 3339 time (kube-apiserver cannot hold one; a state file can)
 * cannot be moved back: 500, nothing changed. */
static enum fg_err plan(const struct fg__type *type, json_object *cur, const struct delete_opts *o,
                        enum delete_step *step, int64_t *grace, int64_t *when_ms, json_object **out)
{
    json_object *meta = fg_json_get(cur, "metadata", NULL);
    *step = STEP_GRACEFUL;
    if (fg_json_get(meta, "deletionTimestamp", NULL)) {
        int64_t cur_grace, deadline_ms;
        if (!fg_json_get_int64(meta, &cur_grace, "deletionGracePeriodSeconds", NULL))
            *step = STEP_PLAIN;
        else if (!o->has_grace || o->grace >= cur_grace)
            *step = STEP_UNCHANGED; /* only a shorter grace period may be given */
        if (*step != STEP_GRACEFUL)
            return FG_OK;
        const char *ts = fg_json_get_str(meta, "deletionTimestamp", NULL);
        if (!fg_time_parse(ts, &deadline_ms)) {
            const char *name = fg_json_get_str(meta, "name", NULL);
            return fg__write_fail(out, FG_E_KUBE_INTERNAL, type, name, NULL,
                                  "%s \"%s\" has a deletionTimestamp that is not an RFC 3339 time: %s", type->plural,
                                  name ? name : "", ts ? ts : "(not a string)");
        }
        *grace = o->grace;
        *when_ms = deadline_ms + (o->grace - cur_grace) * 1000;
        return FG_OK;
    }
    if (!is_pods(type)) {
        *step = STEP_PLAIN;
        return FG_OK;
    }
    *grace = pod_grace(cur, o);
    *when_ms = fg_clock_wall_ms() + *grace * 1000;
    return FG_OK;
}

static void delete_namespace_contents(struct fg__store *st, const char *ns)
{
    char *prefix = fg_asprintf("%s/", ns);
    for (size_t t = 0; t < st->reg->n; t++) {
        const struct fg__type *type = st->reg->types[t];
        if (!type->namespaced)
            continue;
        struct fg__bucket *b = fg__store_bucket(st, type);
        size_t i;
        while ((i = fg__store_lower_bound(b, prefix)) < b->n && fg_str_has_prefix(b->v[i]->key, prefix)) {
            char *name = fg_strdup(b->v[i]->key + strlen(prefix));
            json_object_put(fg__store_remove(st, type, ns, name, NULL));
            free(name);
        }
    }
    free(prefix);
}

enum fg_err fg__store_delete(struct fg__store *st, const struct fg__type *type, const char *ns, const char *name,
                             json_object *options, json_object **out)
{
    struct delete_opts o;
    enum fg_err err = read_opts(options, &o, out);
    if (err)
        return err;
    const struct fg__entry *cur = fg__store_get(st, type, ns, name);
    if (!cur)
        return fg__write_not_found(out, type, name);
    static const char *const preconditions[] = { "resourceVersion", "uid" };
    for (size_t i = 0; i < sizeof(preconditions) / sizeof(*preconditions); i++) {
        const char *want = fg_json_get_str(options, "preconditions", preconditions[i], NULL);
        const char *have = fg_json_get_str(cur->obj, "metadata", preconditions[i], NULL);
        if (want && !fg_str_eq(want, have))
            return fg__write_fail(out, FG_E_KUBE_CONFLICT, type, name, NULL,
                                  "Precondition failed: %s in precondition: %s, %s in object meta: %s",
                                  preconditions[i], want, preconditions[i], have ? have : "");
    }
    int64_t grace = 0, when_ms = 0;
    enum delete_step step;
    if ((err = plan(type, cur->obj, &o, &step, &grace, &when_ms, out)) != FG_OK)
        return err;
    if (step == STEP_UNCHANGED) {
        *out = json_object_get(cur->obj);
        return FG_OK;
    }
    json_object *obj = fg__json_shallow_dup(cur->obj);
    json_object *meta = fg__json_shallow_dup(fg_json_get(cur->obj, "metadata", NULL));
    json_object_object_add(obj, "metadata", meta);
    json_object *finalizers = policy_finalizers(cur->obj, o.policy);
    bool held = json_object_array_length(finalizers) > 0;
    if (held || fg_json_get(meta, "finalizers", NULL))
        json_object_object_add(meta, "finalizers", finalizers);
    else
        json_object_put(finalizers);
    if (step == STEP_GRACEFUL) {
        fg__write_set_time(meta, "deletionTimestamp", when_ms);
        json_object_object_add(meta, "deletionGracePeriodSeconds", json_object_new_int64(grace));
    } else if (held && !fg_json_get(meta, "deletionTimestamp", NULL)) {
        fg__write_set_now(meta, "deletionTimestamp");
        json_object_object_add(meta, "deletionGracePeriodSeconds", json_object_new_int(0));
    }
    if (st->dry_run) {
        *out = obj; /* what the deletion would keep or remove; nothing is written */
        return FG_OK;
    }
    if (held || (step == STEP_GRACEFUL && grace > 0)) {
        *out = json_object_get(fg__store_put(st, type, obj)->obj);
        return FG_OK;
    }
    *out = fg__store_remove(st, type, ns, name, obj);
    if (type == fg__write_namespaces_type(st))
        delete_namespace_contents(st, name);
    return FG_OK;
}
