/* The webhook's view of the cluster: the manager's informer caches (sources.h). */
#include "operator/webhook/sources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"
#include "operator/cache/kobj.h"
#include "operator/cache/store.h"
#include "operator/manager/informers.h"
#include "reconcilers/resources.h"

#define DEFAULT_CLASS "storageclass.kubernetes.io/is-default-class"
#define MEMO_MAX 8192 /* parsed objects kept; past it the memo starts over */

/* A cached object and its parsed tree, valid while the store still holds that very object. */
struct memo {
    struct fg_kobj *kobj;       /* a reference: the address cannot be reused while it is here */
    json_object *obj;
};

struct fg_webhook_caches {
    const struct fg_workload_kinds *kinds;
    struct fg_webhook_stores s;
    struct lh_table *memo;                  /* "<store address>/<key>" → struct memo */
    json_object **retired;                  /* trees replaced during the answer in progress */
    size_t n_retired, cap_retired;
    struct fg_storage_view view;
    const char *view_ns;                    /* the namespace `view` answers for */
};

static void memo_free(struct lh_entry *e)
{
    struct memo *m = (struct memo *)lh_entry_v(e);
    fg_kobj_unref(m->kobj);
    json_object_put(m->obj);
    free(m);
    free((char *)lh_entry_k(e));
}

/* The object under key in store s, parsed: the tree parsed last time while the store holds the same
 * object, else a new one. NULL when absent. Borrowed until the object changes in the store. */
static json_object *hold(struct fg_webhook_caches *c, struct fg_store *s, const char *key)
{
    struct fg_kobj *o = s ? fg_store_get(s, key) : NULL;
    if (!o)
        return NULL;
    char *mkey = fg_asprintf("%p/%s", (void *)s, key);
    struct memo *m = NULL;
    if (lh_table_lookup_ex(c->memo, mkey, (void **)&m) && m->kobj == o) {
        free(mkey);
        fg_kobj_unref(o);
        return m->obj;
    }
    json_object *obj = NULL;
    if (fg_kobj_parse(o, &obj, NULL) != FG_OK) {
        free(mkey);
        fg_kobj_unref(o);
        return NULL;
    }
    if (m) { /* an older object under that key: its tree may be in use until the answer is sent */
        if (c->n_retired == c->cap_retired) {
            c->cap_retired = c->cap_retired ? 2 * c->cap_retired : 8;
            c->retired = fg_realloc(c->retired, c->cap_retired * sizeof(*c->retired));
        }
        c->retired[c->n_retired++] = json_object_get(m->obj);
        lh_table_delete(c->memo, mkey);
    }
    m = fg_malloc(sizeof(*m));
    *m = (struct memo){ o, obj };
    lh_table_insert(c->memo, mkey, m);
    return obj;
}

static json_object *hold_in(struct fg_webhook_caches *c, struct fg_store *s, const char *ns, const char *name)
{
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    return hold(c, s, key);
}

static json_object *lookup(void *ctx, const char *ns, const char *group, const char *kind, const char *name)
{
    struct fg_webhook_caches *c = ctx;
    if (!strcmp(group, "apps") && !strcmp(kind, "ReplicaSet"))
        return hold_in(c, c->s.replicasets, ns, name);
    for (size_t i = 0; i < c->kinds->n; i++) {
        const struct fg_kube_resource *r = &c->kinds->v[i].resource;
        if (!strcmp(r->group, group) && !strcmp(r->kind, kind))
            return hold_in(c, c->s.owners[i], ns, name);
    }
    return NULL;
}

static json_object *name_space(void *ctx, const char *ns)
{
    struct fg_webhook_caches *c = ctx;
    return hold(c, c->s.namespaces, ns);
}

static json_object *gpuworkload(void *ctx, const char *ns, const char *name)
{
    struct fg_webhook_caches *c = ctx;
    return hold_in(c, c->s.gpuworkloads, ns, name);
}

static json_object *policy(void *ctx, const char *name)
{
    struct fg_webhook_caches *c = ctx;
    return hold(c, c->s.policies, name);
}

/* Whether StorageClass `name` (NULL: the default class) binds WaitForFirstConsumer. */
static bool class_waits(void *ctx, const char *name)
{
    struct fg_webhook_caches *c = ctx;
    json_object *cls = NULL;
    if (name) {
        cls = hold(c, c->s.classes, name);
    } else {
        struct fg_kobj_list all;
        fg_store_list(c->s.classes, &all);
        for (size_t i = 0; i < all.n && !cls; i++) {
            json_object *o = hold(c, c->s.classes, fg_kobj_key(all.items[i]));
            const char *is_default = fg_json_get_str(o, "metadata", "annotations", DEFAULT_CLASS, NULL);
            if (is_default && !strcmp(is_default, "true"))
                cls = o;
        }
        fg_kobj_list_cleanup(&all);
    }
    const char *mode = fg_json_get_str(cls, "volumeBindingMode", NULL);
    return mode && !strcmp(mode, "WaitForFirstConsumer");
}

static bool claim_waits(void *ctx, const char *claim)
{
    struct fg_webhook_caches *c = ctx;
    json_object *pvc = hold_in(c, c->s.claims, c->view_ns, claim);
    if (!pvc)
        return true; /* unknown: never place a pod its volume may not follow */
    json_object *cls = fg_json_get(pvc, "spec", "storageClassName", NULL);
    const char *name = json_object_is_type(cls, json_type_string) ? json_object_get_string(cls) : NULL;
    if (name && !*name)
        return false; /* "" asks for no class: a statically bound volume */
    return class_waits(ctx, name);
}

/* The answer is sent: trees replaced meanwhile go, and a full memo starts over. */
static void done(void *ctx)
{
    struct fg_webhook_caches *c = ctx;
    for (size_t i = 0; i < c->n_retired; i++)
        json_object_put(c->retired[i]);
    c->n_retired = 0;
    if (c->memo->count >= MEMO_MAX) {
        lh_table_free(c->memo);
        c->memo = lh_kchar_table_new(1024, memo_free);
    }
}

static const struct fg_storage_view *storage(void *ctx, const char *ns)
{
    struct fg_webhook_caches *c = ctx;
    c->view_ns = ns;
    c->view = (struct fg_storage_view){ claim_waits, class_waits, c };
    return &c->view;
}

void fg_webhook_caches_sources(struct fg_webhook_caches *c, struct fg_admit_sources *out)
{
    *out = (struct fg_admit_sources){ c->kinds, lookup, name_space, gpuworkload, policy, storage, done, c };
}

struct fg_webhook_caches *fg_webhook_caches_new(const struct fg_workload_kinds *kinds,
                                                const struct fg_webhook_stores *stores)
{
    struct fg_webhook_caches *c = fg_calloc(1, sizeof(*c));
    c->kinds = kinds;
    c->s = *stores;
    c->memo = lh_kchar_table_new(1024, memo_free);
    return c;
}

void fg_webhook_caches_free(struct fg_webhook_caches *c)
{
    if (!c)
        return;
    done(c);
    lh_table_free(c->memo);
    free(c->retired);
    free(c);
}

static void caches_free(void *ud)
{
    fg_webhook_caches_free(ud);
}

/* The informer for want, its store into *store. */
static enum fg_err want(struct fg_manager *m, const struct fg_kube_resource *r, const char *const *fields,
                       struct fg_store **store, char *errmsg)
{
    struct fg_informer *inf;
    char why[FG_ERRMSG_MAX] = "";
    enum fg_err err = fg_informer_factory_get(fg_manager_informers(m),
                                              &(struct fg_informer_want){ .resource = r, .fields = fields }, &inf, why);
    if (err != FG_OK)
        return fg_errmsg(errmsg, err, "webhook: cannot watch %s: %s", r->plural, why);
    *store = fg_informer_store(inf);
    return FG_OK;
}

enum fg_err fg_webhook_caches_setup(struct fg_manager *m, const struct fg_workload_kinds *kinds,
                                    struct fg_webhook_caches **out, char *errmsg)
{
    static const char *const owners_only[] = { "metadata.ownerReferences", NULL };
    static const char *const workload[] = { "metadata.labels", "metadata.annotations", "metadata.ownerReferences",
                                            "spec", NULL };
    static const char *const labels[] = { "metadata.labels", NULL };
    static const char *const gpuworkloads[] = { "spec", "status.policy", "status.detectedClass",
                                                "status.recommendation", NULL };
    static const char *const spec[] = { "spec", NULL };
    static const char *const claims[] = { "spec.storageClassName", NULL };
    static const char *const classes[] = { "metadata.annotations", "volumeBindingMode", NULL };
    if (kinds->n > FG_WEBHOOK_KINDS_MAX)
        return fg_errmsg(errmsg, FG_E_INVAL, "webhook: %zu workload kinds, at most %d", kinds->n,
                         FG_WEBHOOK_KINDS_MAX);
    struct fg_webhook_stores st = { 0 };
    enum fg_err err = want(m, &fg_kube_replicasets, owners_only, &st.replicasets, errmsg);
    for (size_t i = 0; !err && i < kinds->n; i++)
        err = want(m, &kinds->v[i].resource, workload, &st.owners[i], errmsg);
    if (!err)
        err = want(m, &fg_kube_namespaces, labels, &st.namespaces, errmsg);
    if (!err)
        err = want(m, &fg_crd_gpuworkloads, gpuworkloads, &st.gpuworkloads, errmsg);
    if (!err)
        err = want(m, &fg_crd_gpupolicies, spec, &st.policies, errmsg);
    if (!err)
        err = want(m, &fg_kube_persistentvolumeclaims, claims, &st.claims, errmsg);
    if (!err)
        err = want(m, &fg_kube_storageclasses, classes, &st.classes, errmsg);
    if (err != FG_OK)
        return err;
    *out = fg_webhook_caches_new(kinds, &st);
    fg_manager_on_free(m, caches_free, *out);
    return FG_OK;
}
