/* objects — ownership, templates, pod state and assumed writes for the simulated controllers; see objects.h. */
#include "e2e/cluster/objects.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/timefmt.h"

/* ---- ownership ---- */

size_t fg_sim_index_controller(void *ud, json_object *obj, const char **values, size_t max)
{
    (void)ud;
    const char *uid = fg_json_get_str(fg_sim_controller_ref(obj), "uid", NULL);
    if (!uid || max == 0)
        return 0;
    values[0] = uid;
    return 1;
}

size_t fg_sim_index_owners(void *ud, json_object *obj, const char **values, size_t max)
{
    (void)ud;
    json_object *refs = fg_json_get(obj, "metadata", "ownerReferences", NULL);
    size_t n = 0;
    for (size_t i = 0; i < fg_json_array_len(refs) && n < max; i++) {
        const char *uid = fg_json_get_str(json_object_array_get_idx(refs, i), "uid", NULL);
        if (uid)
            values[n++] = uid;
    }
    return n;
}

/* FNV-1a, 32 bits, of len bytes. */
static uint32_t fnv32(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 16777619u;
    }
    return h;
}

void fg_sim_meta_decode(void *ud, json_object *obj, void *value)
{
    (void)ud;
    struct fg_sim_meta *m = value;
    json_object *ref = fg_sim_controller_ref(obj);
    snprintf(m->controller_kind, sizeof m->controller_kind, "%s", ref ? fg_json_get_str(ref, "kind", NULL) : "");
    snprintf(m->controller_name, sizeof m->controller_name, "%s", ref ? fg_json_get_str(ref, "name", NULL) : "");
    json_object *refs = fg_json_get(obj, "metadata", "ownerReferences", NULL);
    m->owners = (unsigned)fg_json_array_len(refs);
    size_t len = 0;
    const char *text = refs ? json_object_to_json_string_length(refs, JSON_C_TO_STRING_PLAIN, &len) : NULL;
    m->owners_digest = text ? fnv32(text, len) : 0;
    m->terminating = fg_sim_pod_terminating(obj);
    json_object *fins = fg_json_get(obj, "metadata", "finalizers", NULL);
    for (size_t i = 0; i < fg_json_array_len(fins); i++) {
        const char *f = json_object_get_string(json_object_array_get_idx(fins, i));
        m->gc_finalizer = m->gc_finalizer || fg_str_eq(f, "orphan") || fg_str_eq(f, "foregroundDeletion");
    }
    const char *node = fg_json_get_str(obj, "spec", "nodeName", NULL);
    snprintf(m->node, sizeof m->node, "%s", node ? node : "");
}

const struct fg_sim_meta *fg_sim_meta(const struct fg_kobj *o)
{
    static const struct fg_sim_meta none;
    const struct fg_sim_meta *m = fg_kobj_value(o);
    return m ? m : &none;
}

json_object *fg_sim_controller_ref(json_object *obj)
{
    json_object *refs = fg_json_get(obj, "metadata", "ownerReferences", NULL);
    for (size_t i = 0; i < fg_json_array_len(refs); i++) {
        json_object *ref = json_object_array_get_idx(refs, i);
        json_object *controller = fg_json_get(ref, "controller", NULL);
        if (controller && json_object_get_boolean(controller))
            return ref;
    }
    return NULL;
}

json_object *fg_sim_owner_ref(json_object *owner)
{
    json_object *ref = json_object_new_object();
    fg_json_set_str(ref, "apiVersion", fg_json_get_str(owner, "apiVersion", NULL));
    fg_json_set_str(ref, "kind", fg_json_get_str(owner, "kind", NULL));
    fg_json_set_str(ref, "name", fg_json_get_str(owner, "metadata", "name", NULL));
    fg_json_set_str(ref, "uid", fg_json_get_str(owner, "metadata", "uid", NULL));
    json_object_object_add(ref, "controller", json_object_new_boolean(1));
    json_object_object_add(ref, "blockOwnerDeletion", json_object_new_boolean(1));
    return ref;
}

/* ---- templates ---- */

static json_object *deep_copy(json_object *o)
{
    json_object *copy = NULL;
    if (o && json_object_deep_copy(o, &copy, NULL) != 0)
        abort();   /* fails only on allocation failure */
    return copy;
}

json_object *fg_sim_pod_from_template(json_object *tmpl, const char *ns, const char *name, const char *generate_name,
                                      json_object *owner, json_object *extra_labels)
{
    json_object *pod = json_object_new_object();
    json_object_object_add(pod, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(pod, "kind", json_object_new_string("Pod"));
    json_object *meta = json_object_new_object();
    if (name)
        fg_json_set_str(meta, "name", name);
    else
        fg_json_set_str(meta, "generateName", generate_name);
    fg_json_set_str(meta, "namespace", ns);
    json_object *labels = deep_copy(fg_json_get(tmpl, "metadata", "labels", NULL));
    if (!labels)
        labels = json_object_new_object();
    if (json_object_is_type(extra_labels, json_type_object)) {
        json_object_object_foreach(extra_labels, k, v) json_object_object_add(labels, k, json_object_get(v));
    }
    json_object_object_add(meta, "labels", labels);
    json_object *ann = fg_json_get(tmpl, "metadata", "annotations", NULL);
    if (ann)
        json_object_object_add(meta, "annotations", deep_copy(ann));
    if (owner) {
        json_object *refs = json_object_new_array();
        json_object_array_add(refs, fg_sim_owner_ref(owner));
        json_object_object_add(meta, "ownerReferences", refs);
    }
    json_object_object_add(pod, "metadata", meta);
    json_object *spec = deep_copy(fg_json_get(tmpl, "spec", NULL));
    json_object_object_add(pod, "spec", spec ? spec : json_object_new_object());
    return pod;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Writes o as compact JSON with every object's keys in sorted order. */
static void canonical(json_object *o, struct fg_buf *b)
{
    if (json_object_is_type(o, json_type_object)) {
        size_t n = fg_json_object_len(o), i = 0;
        const char **keys = fg_calloc(n ? n : 1, sizeof *keys);
        json_object_object_foreach(o, k, v) {
            (void)v;
            keys[i++] = k;
        }
        qsort(keys, n, sizeof *keys, cmp_str);
        fg_buf_put_str(b, "{");
        for (i = 0; i < n; i++) {
            json_object *key = json_object_new_string(keys[i]);
            if (i)
                fg_buf_put_str(b, ",");
            fg_buf_put_str(b, json_object_to_json_string_ext(key, JSON_C_TO_STRING_PLAIN));
            fg_buf_put_str(b, ":");
            json_object_put(key);
            canonical(json_object_object_get(o, keys[i]), b);
        }
        fg_buf_put_str(b, "}");
        free(keys);
    } else if (json_object_is_type(o, json_type_array)) {
        fg_buf_put_str(b, "[");
        for (size_t i = 0; i < json_object_array_length(o); i++) {
            if (i)
                fg_buf_put_str(b, ",");
            canonical(json_object_array_get_idx(o, i), b);
        }
        fg_buf_put_str(b, "]");
    } else {
        fg_buf_put_str(b, o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : "null");
    }
}

void fg_sim_template_hash(json_object *tmpl, uint32_t collision_count, char out[16])
{
    struct fg_buf b;
    fg_buf_init(&b, 0);
    canonical(tmpl, &b);
    if (collision_count) {
        char salt[16];
        snprintf(salt, sizeof salt, "#%u", collision_count);
        fg_buf_put_str(&b, salt);
    }
    uint32_t h = fnv32(b.data, b.len);
    fg_buf_cleanup(&b);
    /* rand.SafeEncodeString over the decimal digits, as kube names its revisions */
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    char digits[16];
    int n = snprintf(digits, sizeof digits, "%u", h);
    for (int i = 0; i < n; i++)
        out[i] = alphabet[(unsigned char)digits[i] % (sizeof alphabet - 1)];
    out[n] = '\0';
}

/* ---- pod state ---- */

bool fg_sim_pod_terminating(json_object *pod)
{
    return fg_json_get_str(pod, "metadata", "deletionTimestamp", NULL) != NULL;
}

bool fg_sim_pod_finished(json_object *pod)
{
    const char *phase = fg_json_get_str(pod, "status", "phase", NULL);
    return fg_str_eq(phase, "Succeeded") || fg_str_eq(phase, "Failed");
}

bool fg_sim_pod_active(json_object *pod)
{
    return !fg_sim_pod_terminating(pod) && !fg_sim_pod_finished(pod);
}

int64_t fg_sim_int_at(json_object *obj, const char *a, const char *b, int64_t dflt)
{
    int64_t v = dflt;
    fg_json_get_int64(obj, &v, a, b, NULL);
    return v;
}

json_object *fg_sim_condition(json_object *obj, const char *type)
{
    json_object *conds = fg_json_get(obj, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (fg_str_eq(fg_json_get_str(c, "type", NULL), type))
            return c;
    }
    return NULL;
}

json_object *fg_sim_condition_new(json_object *obj, const char *type, const char *status, const char *reason,
                                  const char *message, const char *now)
{
    json_object *c = json_object_new_object(), *old = fg_sim_condition(obj, type);
    const char *since = fg_json_get_str(old, "lastTransitionTime", NULL);
    fg_json_set_str(c, "type", type);
    fg_json_set_str(c, "status", status);
    fg_json_set_str(c, "lastTransitionTime",
                    since && fg_str_eq(fg_json_get_str(old, "status", NULL), status) ? since : now);
    if (reason)
        fg_json_set_str(c, "reason", reason);
    if (message)
        fg_json_set_str(c, "message", message);
    return c;
}

bool fg_sim_status_holds(json_object *obj, json_object *status)
{
    json_object *old = fg_json_get(obj, "status", NULL);
    json_object_object_foreach(status, k, v) {
        json_object *was = fg_json_get(old, k, NULL);
        int64_t have;
        switch (json_object_get_type(v)) {
        case json_type_null:
            if (was)
                return false;
            break;
        case json_type_int:
            if (!fg_json_get_int64(old, &have, k, NULL) || have != json_object_get_int64(v))
                return false;
            break;
        case json_type_string:
            if (!json_object_is_type(was, json_type_string) || strcmp(json_object_get_string(was), json_object_get_string(v)))
                return false;
            break;
        case json_type_array:
            if (strcmp(k, "conditions"))
                return false;
            for (size_t i = 0; i < json_object_array_length(v); i++) {
                json_object *c = json_object_array_get_idx(v, i);
                json_object *prev = fg_sim_condition(obj, fg_json_get_str(c, "type", NULL));
                if (!prev || !fg_str_eq(fg_json_get_str(prev, "status", NULL), fg_json_get_str(c, "status", NULL)) ||
                    !fg_str_eq(fg_json_get_str(prev, "reason", NULL), fg_json_get_str(c, "reason", NULL)) ||
                    !fg_str_eq(fg_json_get_str(prev, "message", NULL), fg_json_get_str(c, "message", NULL)))
                    return false;
            }
            break;
        default:
            return false;
        }
    }
    return true;
}

void fg_sim_condition_put(json_object *conds, json_object *c)
{
    const char *type = fg_json_get_str(c, "type", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++) {
        if (fg_str_eq(fg_json_get_str(json_object_array_get_idx(conds, i), "type", NULL), type)) {
            json_object_array_put_idx(conds, i, c);
            return;
        }
    }
    json_object_array_add(conds, c);
}

bool fg_sim_pod_ready(json_object *pod)
{
    return fg_str_eq(fg_json_get_str(fg_sim_condition(pod, "Ready"), "status", NULL), "True");
}

bool fg_sim_pod_available(json_object *pod, int64_t min_ready_s, int64_t now_ms)
{
    if (!fg_sim_pod_ready(pod))
        return false;
    if (min_ready_s <= 0)
        return true;
    int64_t since = 0;
    if (!fg_time_parse(fg_json_get_str(fg_sim_condition(pod, "Ready"), "lastTransitionTime", NULL), &since))
        return false;
    return since + min_ready_s * 1000 <= now_ms;
}

int64_t fg_sim_created_ms(json_object *obj)
{
    int64_t ms = 0;
    return fg_time_parse(fg_json_get_str(obj, "metadata", "creationTimestamp", NULL), &ms) ? ms : 0;
}

enum fg_err fg_sim_int_or_percent(json_object *v, int64_t total, bool round_up, int64_t dflt, int64_t *out)
{
    if (!v) {
        *out = dflt;
        return FG_OK;
    }
    if (json_object_is_type(v, json_type_int)) {
        *out = json_object_get_int64(v);
        return *out < 0 ? FG_E_PARSE : FG_OK;
    }
    const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    char *end = NULL;
    long long pct = s ? strtoll(s, &end, 10) : -1;
    if (!s || end == s || strcmp(end, "%") || pct < 0)
        return FG_E_PARSE;
    long long scaled = pct * total;
    *out = round_up ? (scaled + 99) / 100 : scaled / 100;
    return FG_OK;
}

/* ---- writes ---- */

enum fg_err fg_sim_patch_status(struct fg_kube_client *c, const struct fg_kube_resource *res, json_object *obj,
                                json_object *status)
{
    json_object *patch = json_object_new_object();
    json_object_object_add(patch, "status", json_object_get(status));
    char *path = fg_kube_path(res, fg_json_get_str(obj, "metadata", "namespace", NULL),
                              fg_json_get_str(obj, "metadata", "name", NULL), "status", NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_patch(c, path, FG_KUBE_PATCH_MERGE, json_object_to_json_string(patch), NULL, &st);
    free(path);
    json_object_put(patch);
    fg_kube_status_cleanup(&st);
    return err == FG_E_KUBE_NOT_FOUND ? FG_OK : err;
}

/* grace < 0: the object's own grace period. */
static enum fg_err delete_obj(struct fg_kube_client *c, const struct fg_kube_resource *res, json_object *obj,
                              const char *propagation, int grace)
{
    json_object *opts = json_object_new_object();
    json_object_object_add(opts, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(opts, "kind", json_object_new_string("DeleteOptions"));
    const char *uid = fg_json_get_str(obj, "metadata", "uid", NULL);
    if (uid) {
        json_object *pre = json_object_new_object();
        fg_json_set_str(pre, "uid", uid);
        json_object_object_add(opts, "preconditions", pre);
    }
    if (propagation)
        fg_json_set_str(opts, "propagationPolicy", propagation);
    if (grace >= 0)
        json_object_object_add(opts, "gracePeriodSeconds", json_object_new_int(grace));
    char *path = fg_kube_path(res, fg_json_get_str(obj, "metadata", "namespace", NULL),
                              fg_json_get_str(obj, "metadata", "name", NULL), NULL, NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_delete(c, path, opts, NULL, &st);
    free(path);
    json_object_put(opts);
    fg_kube_status_cleanup(&st);
    return err == FG_E_KUBE_NOT_FOUND || err == FG_E_KUBE_CONFLICT ? FG_OK : err;
}

enum fg_err fg_sim_delete(struct fg_kube_client *c, const struct fg_kube_resource *res, json_object *obj,
                          const char *propagation)
{
    return delete_obj(c, res, obj, propagation, -1);
}

enum fg_err fg_sim_delete_now(struct fg_kube_client *c, const struct fg_kube_resource *res, json_object *obj)
{
    return delete_obj(c, res, obj, NULL, 0);
}

/* ---- assumed writes ---- */

struct assumed_entry {
    char *owner, *uid;
    bool deleted;
    uint64_t deadline_ns;
};

struct fg_sim_assumed {
    pthread_mutex_t lock;
    struct assumed_entry *v;
    size_t n, cap;
    uint64_t ttl_ns;
};

struct fg_sim_assumed *fg_sim_assumed_new(uint64_t ttl_ns)
{
    struct fg_sim_assumed *a = fg_calloc(1, sizeof *a);
    pthread_mutex_init(&a->lock, NULL);
    a->ttl_ns = ttl_ns;
    return a;
}

static void drop(struct fg_sim_assumed *a, size_t i)
{
    free(a->v[i].owner);
    free(a->v[i].uid);
    a->v[i] = a->v[--a->n];
}

void fg_sim_assumed_free(struct fg_sim_assumed *a)
{
    if (!a)
        return;
    while (a->n)
        drop(a, 0);
    free(a->v);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

void fg_sim_assumed_add(struct fg_sim_assumed *a, const char *owner_key, const char *uid, bool deleted)
{
    if (!uid)
        return;
    pthread_mutex_lock(&a->lock);
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 16;
        a->v = fg_realloc(a->v, a->cap * sizeof *a->v);
    }
    a->v[a->n++] = (struct assumed_entry){ fg_strdup(owner_key), fg_strdup(uid), deleted,
                                           fg_clock_mono_ns() + a->ttl_ns };
    pthread_mutex_unlock(&a->lock);
}

/* The object of uid in seen, or NULL. */
static json_object *find_uid(json_object *seen, const char *uid)
{
    for (size_t i = 0; i < fg_json_array_len(seen); i++) {
        json_object *o = json_object_array_get_idx(seen, i);
        if (fg_str_eq(fg_json_get_str(o, "metadata", "uid", NULL), uid))
            return o;
    }
    return NULL;
}

void fg_sim_assumed_settle(struct fg_sim_assumed *a, const char *owner_key, json_object *seen)
{
    uint64_t now = fg_clock_mono_ns();
    pthread_mutex_lock(&a->lock);
    for (size_t i = a->n; i-- > 0;) {
        struct assumed_entry *e = &a->v[i];
        if (e->deadline_ns <= now) {
            drop(a, i);
            continue;
        }
        if (strcmp(e->owner, owner_key))
            continue;
        json_object *o = find_uid(seen, e->uid);
        if (e->deleted ? (!o || fg_sim_pod_terminating(o)) : o != NULL)
            drop(a, i);
    }
    pthread_mutex_unlock(&a->lock);
}

static size_t count(struct fg_sim_assumed *a, const char *owner_key, const char *uid, bool deleted)
{
    size_t n = 0;
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i].deleted == deleted && !strcmp(a->v[i].owner, owner_key) && (!uid || !strcmp(a->v[i].uid, uid)))
            n++;
    pthread_mutex_unlock(&a->lock);
    return n;
}

size_t fg_sim_assumed_pending_creates(struct fg_sim_assumed *a, const char *owner_key)
{
    return count(a, owner_key, NULL, false);
}

bool fg_sim_assumed_deleted(struct fg_sim_assumed *a, const char *owner_key, const char *uid)
{
    return count(a, owner_key, uid, true) > 0;
}
