/*
 * gc — the garbage collector: objects whose owners are gone go too, and owners deleted in the
 * foreground or orphaning way get their dependents handled before they go.
 *
 * Every cache of the controller manager (cm.h) takes part; one controller serves them all, its keys
 * naming the kind ("pods|ns/name"). For an object with ownerReferences (a dependent): an owner counts as present when the
 * cache holds an object of that name and uid, or — because a cache may lag — when a live GET finds
 * it; when no owner is present the dependent is deleted (background, or foreground when an owner
 * waits in foreground deletion), and when some are, the references to the others are removed. For
 * an object being deleted (an owner) with the finalizer `orphan`, every dependent (custom
 * resources too) loses its reference to it and then the finalizer goes; with `foregroundDeletion`
 * every dependent goes by the rule above (deleted in the foreground, unless another owner keeps
 * it) and the finalizer goes once none with blockOwnerDeletion is left. Events
 * of any cache re-check the object, its owners and its dependents, as kube's dependency graph does.
 *
 * Dependents among custom resources (a GPUWorkload owned by a Deployment) are not cached: a scan
 * lists every CustomResourceDefinition's objects every SCAN_PERIOD and applies the dependent rule
 * to them, so they go within that period of their owner.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/cluster/cm.h"
#include "operator/manager/periodic.h"

#define COMPONENT "garbage-collector"
#define SCAN_PERIOD (10 * FG_NS_PER_S)
#define FINALIZER_ORPHAN "orphan"
#define FINALIZER_FOREGROUND "foregroundDeletion"
#define MAX_KINDS 16

struct gc;

struct gc_kind {
    struct gc *gc;
    const struct fg_sim_cache *cache;
};

struct gc {
    struct fg_sim_cm *cm;
    struct gc_kind kinds[MAX_KINDS];
    size_t nkinds;
};

/* ---- where owners live ---- */

struct resolved {
    const struct fg_sim_cache *cache;   /* NULL: not cached */
    struct fg_kube_resource res;        /* for a live GET */
    char group[128], version[32], plural[128], kind[128];
};

static bool group_version_of(const char *api_version, char *group, size_t gsize, char *version, size_t vsize)
{
    const char *slash = api_version ? strchr(api_version, '/') : NULL;
    if (!api_version)
        return false;
    snprintf(group, gsize, "%.*s", slash ? (int)(slash - api_version) : 0, api_version);
    snprintf(version, vsize, "%s", slash ? slash + 1 : api_version);
    return true;
}

/* The resource an ownerReference names, from the caches, the built-in kinds or the CRDs. */
static bool resolve(struct gc *gc, json_object *ref, struct resolved *out)
{
    static const struct fg_kube_resource *const builtin[] = {
        &fg_kube_namespaces, &fg_kube_nodes, &fg_kube_pods, &fg_kube_configmaps, &fg_kube_secrets,
        &fg_kube_services, &fg_kube_deployments, &fg_kube_statefulsets, &fg_kube_jobs, &fg_kube_cronjobs,
        &fg_kube_replicasets, &fg_kube_daemonsets, &fg_kube_serviceaccounts, &fg_kube_endpointslices,
        &fg_kube_leases, &fg_kube_poddisruptionbudgets,
    };
    memset(out, 0, sizeof *out);
    const char *kind = fg_json_get_str(ref, "kind", NULL);
    if (!kind || !group_version_of(fg_json_get_str(ref, "apiVersion", NULL), out->group, sizeof out->group,
                                   out->version, sizeof out->version))
        return false;
    for (size_t i = 0; i < gc->nkinds; i++) {
        const struct fg_kube_resource *r = gc->kinds[i].cache->res;
        if (!strcmp(r->kind, kind) && !strcmp(r->group, out->group)) {
            out->cache = gc->kinds[i].cache;
            out->res = *r;
            return true;
        }
    }
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++) {
        if (!strcmp(builtin[i]->kind, kind) && !strcmp(builtin[i]->group, out->group)) {
            out->res = *builtin[i];
            return true;
        }
    }
    /* a custom resource: find its CRD by group and kind */
    char *path = fg_kube_path(&(struct fg_kube_resource){ "apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                                          "CustomResourceDefinition", false },
                              NULL, NULL, NULL, NULL);
    json_object *list = NULL;
    bool found = false;
    if (fg_kube_get(gc->cm->client, path, &list, NULL) == FG_OK) {
        json_object *items = fg_json_get(list, "items", NULL);
        for (size_t i = 0; i < fg_json_array_len(items) && !found; i++) {
            json_object *crd = json_object_array_get_idx(items, i);
            if (!fg_str_eq(fg_json_get_str(crd, "spec", "group", NULL), out->group) ||
                !fg_str_eq(fg_json_get_str(crd, "spec", "names", "kind", NULL), kind))
                continue;
            snprintf(out->plural, sizeof out->plural, "%s", fg_json_get_str(crd, "spec", "names", "plural", NULL));
            snprintf(out->kind, sizeof out->kind, "%s", kind);
            out->res = (struct fg_kube_resource){ out->group, out->version, out->plural, out->kind,
                                                  fg_str_eq(fg_json_get_str(crd, "spec", "scope", NULL), "Namespaced") };
            found = true;
        }
    }
    json_object_put(list);
    free(path);
    return found;
}

enum presence { ABSENT, PRESENT, FOREGROUND, UNKNOWN };

/* Whether the owner `ref` of a dependent in namespace ns exists (with that uid). */
static enum presence owner_presence(struct gc *gc, json_object *ref, const char *ns)
{
    struct resolved r;
    if (!resolve(gc, ref, &r))
        return UNKNOWN;   /* a kind nobody serves: leave the reference alone */
    const char *name = fg_json_get_str(ref, "name", NULL), *uid = fg_json_get_str(ref, "uid", NULL);
    const char *owner_ns = r.res.namespaced ? ns : NULL;
    json_object *owner = NULL;
    if (r.cache) {
        char *key = fg_kobj_make_key(owner_ns, name);
        owner = fg_sim_cm_get(r.cache, key);
        free(key);
    }
    if (!owner || !fg_str_eq(fg_json_get_str(owner, "metadata", "uid", NULL), uid)) {
        json_object_put(owner);
        owner = NULL;
        char *path = fg_kube_path(&r.res, owner_ns, name, NULL, NULL);
        struct fg_kube_status st = { 0 };
        enum fg_err err = fg_kube_get(gc->cm->client, path, &owner, &st);
        free(path);
        fg_kube_status_cleanup(&st);
        if (err && err != FG_E_KUBE_NOT_FOUND)
            return UNKNOWN;
    }
    enum presence p = ABSENT;
    if (owner && fg_str_eq(fg_json_get_str(owner, "metadata", "uid", NULL), uid)) {
        p = PRESENT;
        json_object *fins = fg_json_get(owner, "metadata", "finalizers", NULL);
        for (size_t i = 0; i < fg_json_array_len(fins); i++)
            if (fg_sim_pod_terminating(owner) &&
                fg_str_eq(json_object_get_string(json_object_array_get_idx(fins, i)), FINALIZER_FOREGROUND))
                p = FOREGROUND;
    }
    json_object_put(owner);
    return p;
}

/* ---- writes ---- */

static char *object_path(const struct fg_kube_resource *res, json_object *obj)
{
    return fg_kube_path(res, fg_json_get_str(obj, "metadata", "namespace", NULL),
                        fg_json_get_str(obj, "metadata", "name", NULL), NULL, NULL);
}

/* Sets (or, value NULL, removes) the member at path of obj with a JSON patch that first tests obj's
 * resourceVersion, so a change made meanwhile by anyone else fails it (409 or 422) instead of being
 * overwritten. value is borrowed. */
static enum fg_err guarded_patch(struct gc *gc, const struct fg_kube_resource *res, json_object *obj, const char *at,
                                 json_object *value)
{
    json_object *patch = json_object_new_array(), *op = json_object_new_object();
    fg_json_set_str(op, "op", "test");
    fg_json_set_str(op, "path", "/metadata/resourceVersion");
    fg_json_set_str(op, "value", fg_json_get_str(obj, "metadata", "resourceVersion", NULL));
    json_object_array_add(patch, op);
    op = json_object_new_object();
    fg_json_set_str(op, "op", value ? "replace" : "remove");
    fg_json_set_str(op, "path", at);
    if (value)
        json_object_object_add(op, "value", json_object_get(value));
    json_object_array_add(patch, op);
    char *path = object_path(res, obj);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_patch(gc->cm->client, path, FG_KUBE_PATCH_JSON, json_object_to_json_string(patch), NULL, &st);
    fg_kube_status_cleanup(&st);
    free(path);
    json_object_put(patch);
    return err == FG_E_KUBE_NOT_FOUND ? FG_OK : err;
}

/* Replaces obj's ownerReferences with `keep` (none: removes them). */
static enum fg_err set_owner_refs(struct gc *gc, const struct fg_kube_resource *res, json_object *obj, json_object *keep)
{
    return guarded_patch(gc, res, obj, "/metadata/ownerReferences", json_object_array_length(keep) ? keep : NULL);
}

/* Removes `finalizer` from obj. */
static enum fg_err drop_finalizer(struct gc *gc, const struct fg_kube_resource *res, json_object *obj,
                                  const char *finalizer)
{
    json_object *fins = fg_json_get(obj, "metadata", "finalizers", NULL), *keep = json_object_new_array();
    for (size_t i = 0; i < fg_json_array_len(fins); i++) {
        json_object *f = json_object_array_get_idx(fins, i);
        if (!fg_str_eq(json_object_get_string(f), finalizer))
            json_object_array_add(keep, json_object_get(f));
    }
    enum fg_err err = guarded_patch(gc, res, obj, "/metadata/finalizers", keep);
    json_object_put(keep);
    return err;
}

/* ---- the two roles ---- */

/* obj is a dependent. With no owner left but some waiting in foreground deletion, it is deleted in
 * the foreground; with none at all, in the background; with some owners solid (present, not being
 * deleted in the foreground), the references to the others are removed and it stays (kube's
 * attemptToDeleteItem). */
static enum fg_err collect_dependent(struct gc *gc, const struct fg_kube_resource *res, json_object *obj)
{
    json_object *refs = fg_json_get(obj, "metadata", "ownerReferences", NULL);
    if (!fg_json_array_len(refs) || fg_sim_pod_terminating(obj))
        return FG_OK;
    const char *ns = fg_json_get_str(obj, "metadata", "namespace", NULL);
    json_object *solid = json_object_new_array();
    bool waiting = false;
    for (size_t i = 0; i < json_object_array_length(refs); i++) {
        json_object *ref = json_object_array_get_idx(refs, i);
        enum presence p = owner_presence(gc, ref, ns);
        if (p == PRESENT || p == UNKNOWN)
            json_object_array_add(solid, json_object_get(ref));
        waiting = waiting || p == FOREGROUND;
    }
    size_t left = json_object_array_length(solid);
    enum fg_err err = FG_OK;
    if (left == 0) {
        fg_log_obj(FG_LOG_INFO, COMPONENT, res->kind, ns, fg_json_get_str(obj, "metadata", "name", NULL),
                   "deleting: %s", waiting ? "its owner is being deleted in the foreground" : "every owner is gone");
        err = fg_sim_delete(gc->cm->client, res, obj, waiting ? "Foreground" : "Background");
    } else if (left < json_object_array_length(refs)) {
        err = set_owner_refs(gc, res, obj, solid);
    }
    json_object_put(solid);
    return err;
}

/* What an owner (uid) being deleted asks of one of its dependents, dep of kind res: with orphan, to
 * lose its reference; in the foreground, the dependent rule above (which sees that owner waiting).
 * *blocks: the reference holds the owner back (blockOwnerDeletion, foreground). */
static enum fg_err settle_dependent(struct gc *gc, const struct fg_kube_resource *res, json_object *dep,
                                    const char *uid, bool orphan, bool *blocks)
{
    json_object *refs = fg_json_get(dep, "metadata", "ownerReferences", NULL), *keep = json_object_new_array();
    bool mine = false;
    *blocks = false;
    for (size_t j = 0; j < fg_json_array_len(refs); j++) {
        json_object *ref = json_object_array_get_idx(refs, j);
        if (!fg_str_eq(fg_json_get_str(ref, "uid", NULL), uid)) {
            json_object_array_add(keep, json_object_get(ref));
            continue;
        }
        mine = true;
        *blocks = !orphan && json_object_get_boolean(fg_json_get(ref, "blockOwnerDeletion", NULL));
    }
    enum fg_err err = FG_OK;
    if (mine && orphan)
        err = set_owner_refs(gc, res, dep, keep);
    else if (mine)
        err = collect_dependent(gc, res, dep);
    json_object_put(keep);
    return err;
}

/* Calls fn with every custom resource kind that the CRDs define and the list of its objects. */
static void each_custom_kind(struct gc *gc,
                             void (*fn)(struct gc *gc, const struct fg_kube_resource *res, json_object *items, void *ud),
                             void *ud)
{
    static const struct fg_kube_resource crds = { "apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                                  "CustomResourceDefinition", false };
    char *path = fg_kube_path(&crds, NULL, NULL, NULL, NULL);
    json_object *list = NULL;
    enum fg_err err = fg_kube_get(gc->cm->client, path, &list, NULL);
    free(path);
    if (err)
        return;
    json_object *items = fg_json_get(list, "items", NULL);
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        json_object *crd = json_object_array_get_idx(items, i);
        json_object *versions = fg_json_get(crd, "spec", "versions", NULL);
        const char *version = NULL;
        for (size_t v = 0; v < fg_json_array_len(versions) && !version; v++)
            if (json_object_get_boolean(fg_json_get(json_object_array_get_idx(versions, v), "storage", NULL)))
                version = fg_json_get_str(json_object_array_get_idx(versions, v), "name", NULL);
        struct fg_kube_resource res = { fg_json_get_str(crd, "spec", "group", NULL), version,
                                        fg_json_get_str(crd, "spec", "names", "plural", NULL),
                                        fg_json_get_str(crd, "spec", "names", "kind", NULL),
                                        fg_str_eq(fg_json_get_str(crd, "spec", "scope", NULL), "Namespaced") };
        if (!res.group || !res.version || !res.plural || !res.kind)
            continue;
        char *objs_path = fg_kube_path(&res, NULL, NULL, NULL, NULL);
        json_object *objs = NULL;
        if (fg_kube_get(gc->cm->client, objs_path, &objs, NULL) == FG_OK)
            fn(gc, &res, fg_json_get(objs, "items", NULL), ud);
        json_object_put(objs);
        free(objs_path);
    }
    json_object_put(list);
}

struct owner_job {
    const char *uid;
    bool orphan;
    size_t blocking;
    enum fg_err err;
};

static void settle_custom(struct gc *gc, const struct fg_kube_resource *res, json_object *items, void *ud)
{
    struct owner_job *j = ud;
    for (size_t i = 0; i < fg_json_array_len(items) && !j->err; i++) {
        bool blocks;
        j->err = settle_dependent(gc, res, json_object_array_get_idx(items, i), j->uid, j->orphan, &blocks);
        j->blocking += blocks;
    }
}

/* obj is being deleted: carry out its orphan or foreground finalizer for every dependent, cached
 * kinds and custom resources alike. */
static enum fg_err finish_owner(struct gc *gc, const struct fg_kube_resource *res, json_object *obj, bool *requeue)
{
    json_object *fins = fg_json_get(obj, "metadata", "finalizers", NULL);
    bool orphan = false, foreground = false;
    for (size_t i = 0; i < fg_json_array_len(fins); i++) {
        const char *f = json_object_get_string(json_object_array_get_idx(fins, i));
        orphan = orphan || fg_str_eq(f, FINALIZER_ORPHAN);
        foreground = foreground || fg_str_eq(f, FINALIZER_FOREGROUND);
    }
    if (!orphan && !foreground)
        return FG_OK;
    struct owner_job j = { fg_json_get_str(obj, "metadata", "uid", NULL), orphan, 0, FG_OK };
    for (size_t k = 0; k < gc->nkinds && !j.err; k++) {
        json_object *deps = fg_sim_cm_by_owner(gc->kinds[k].cache, FG_SIM_INDEX_OWNERS, j.uid);
        for (size_t i = 0; i < json_object_array_length(deps) && !j.err; i++) {
            bool blocks;
            j.err = settle_dependent(gc, gc->kinds[k].cache->res, json_object_array_get_idx(deps, i), j.uid, orphan,
                                     &blocks);
            j.blocking += blocks;
        }
        json_object_put(deps);
    }
    if (!j.err)
        each_custom_kind(gc, settle_custom, &j);
    if (!j.err && orphan)
        j.err = drop_finalizer(gc, res, obj, FINALIZER_ORPHAN);
    else if (!j.err && foreground && j.blocking == 0)
        j.err = drop_finalizer(gc, res, obj, FINALIZER_FOREGROUND);
    else if (!j.err)
        *requeue = true;   /* dependents still on their way out: their events bring us back too */
    return j.err;
}

/* Keys are "<plural>|<namespace>/<name>": one controller serves every kind. */
static void add_key(struct fg_keys *out, const struct fg_sim_cache *c, const char *ns, const char *name)
{
    char key[700];
    snprintf(key, sizeof key, "%s|%s%s%s", c->res->plural, ns && *ns ? ns : "", ns && *ns ? "/" : "", name);
    fg_keys_add(out, key);
}

static struct fg_reconcile_result reconcile(void *ud, const char *key)
{
    struct gc *gc = ud;
    const char *bar = strchr(key, '|');
    const struct fg_sim_cache *cache = NULL;
    for (size_t i = 0; bar && i < gc->nkinds && !cache; i++)
        if (strlen(gc->kinds[i].cache->res->plural) == (size_t)(bar - key) &&
            !strncmp(gc->kinds[i].cache->res->plural, key, (size_t)(bar - key)))
            cache = gc->kinds[i].cache;
    json_object *obj = cache ? fg_sim_cm_get(cache, bar + 1) : NULL;
    if (!obj)
        return fg_reconcile_ok();
    bool requeue = false;
    enum fg_err err = fg_sim_pod_terminating(obj) ? finish_owner(gc, cache->res, obj, &requeue)
                                                   : collect_dependent(gc, cache->res, obj);
    json_object_put(obj);
    if (err)
        return fg_reconcile_error(err);
    return requeue ? fg_reconcile_requeue_after(FG_NS_PER_S) : fg_reconcile_ok();
}

/* ---- the graph: an event about any object re-checks it, its owners and its dependents ---- */

/* Only a change of the owner references, of being deleted or of the finalizers matters. */
static bool relevant(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    (void)ud;
    const struct fg_sim_meta *a = fg_sim_meta(old), *b = fg_sim_meta(obj);
    return a->owners_digest != b->owners_digest || a->terminating != b->terminating || a->gc_finalizer != b->gc_finalizer;
}

static void map_related(void *ud, struct fg_kobj *obj, struct fg_keys *out)
{
    struct gc_kind *k = ud;
    struct gc *gc = k->gc;
    const struct fg_sim_meta *m = fg_sim_meta(obj);
    if (m->owners || (m->terminating && m->gc_finalizer))
        add_key(out, k->cache, fg_kobj_namespace(obj), fg_kobj_name(obj));
    for (size_t i = 0; i < gc->nkinds; i++) {   /* its dependents, in every cache */
        struct fg_kobj_list deps = { 0 };
        if (fg_store_by_index(fg_informer_store(gc->kinds[i].cache->inf), FG_SIM_INDEX_OWNERS, fg_kobj_uid(obj),
                              &deps) == FG_OK)
            for (size_t j = 0; j < deps.n; j++)
                add_key(out, gc->kinds[i].cache, fg_kobj_namespace(deps.items[j]), fg_kobj_name(deps.items[j]));
        fg_kobj_list_cleanup(&deps);
    }
    json_object *o = NULL;
    if (!m->owners || fg_kobj_parse(obj, &o, NULL) != FG_OK)
        return;
    json_object *refs = fg_json_get(o, "metadata", "ownerReferences", NULL);
    for (size_t i = 0; i < fg_json_array_len(refs); i++) {   /* its owners, when cached */
        json_object *ref = json_object_array_get_idx(refs, i);
        for (size_t j = 0; j < gc->nkinds; j++) {
            const struct fg_kube_resource *r = gc->kinds[j].cache->res;
            if (fg_str_eq(fg_json_get_str(ref, "kind", NULL), r->kind))
                add_key(out, gc->kinds[j].cache, r->namespaced ? fg_kobj_namespace(obj) : NULL,
                        fg_json_get_str(ref, "name", NULL));
        }
    }
    json_object_put(o);
}

/* ---- custom resources: the periodic scan ---- */

static void collect_custom(struct gc *gc, const struct fg_kube_resource *res, json_object *items, void *ud)
{
    (void)ud;
    for (size_t i = 0; i < fg_json_array_len(items); i++)
        (void)collect_dependent(gc, res, json_object_array_get_idx(items, i));   /* the next scan retries */
}

static void scan_custom_resources(void *ud)
{
    each_custom_kind(ud, collect_custom, NULL);
}

enum fg_err fg_sim_gc_setup(struct fg_sim_cm *cm, char *errmsg)
{
    struct gc *gc = fg_calloc(1, sizeof *gc);
    gc->cm = cm;
    fg_manager_on_free(cm->m, free, gc);
    const struct fg_sim_cache *caches[] = { &cm->pods, &cm->replicasets, &cm->deployments, &cm->statefulsets,
                                            &cm->daemonsets, &cm->jobs, &cm->services, &cm->slices };
    for (size_t i = 0; i < sizeof caches / sizeof caches[0]; i++)
        gc->kinds[gc->nkinds++] = (struct gc_kind){ gc, caches[i] };
    struct fg_controller_spec spec = { .name = "garbage-collector", .kind = "object", .workers = cm->workers,
                                       .reconcile = reconcile, .ud = gc };
    struct fg_manager_controller *c;
    enum fg_err err = fg_manager_controller(cm->m, &spec, &c, errmsg);
    for (size_t i = 0; i < gc->nkinds && !err; i++)
        err = fg_manager_watches(c, gc->kinds[i].cache->inf, map_related, &gc->kinds[i], relevant, errmsg);
    if (!err)
        err = fg_manager_add_periodic(cm->m, &(struct fg_periodic){ .name = "gc-custom-resources", .leader_only = true,
                                                                     .period_ns = SCAN_PERIOD, .run = scan_custom_resources,
                                                                     .ud = gc },
                                      errmsg);
    return err;
}
