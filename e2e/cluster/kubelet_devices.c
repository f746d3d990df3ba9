/*
 * kubelet_devices — the device manager of the simulated kubelets; see kubelet_devices.h for the
 * steps, the records and the locking.
 *
 * Devices are chosen in the order the plugin listed them, the first free and healthy ones, as
 * kube's device manager does without a preferred-allocation call; a plugin that chooses keeps its
 * devices itself, and the grant takes the IDs it answers. A container's amount of a
 * resource is its limit, else its request (extended resources cannot be overcommitted: kube-apiserver
 * requires the two to be equal when both are set).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/cluster/kubelet.h"
#include "operator/kube/quantity.h"

#define COMPONENT "kubelet"
#define CHECKPOINT "devices.json"

/* ---- the registry ---- */

struct fg_sim_device_resource *fg_sim_devices_find(struct fg_sim_devices *d, const char *name)
{
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(d->res[i].name, name))
            return &d->res[i];
    return NULL;
}

static struct fg_sim_device *device_find(struct fg_sim_device_resource *r, const char *id)
{
    for (size_t i = 0; r && i < r->n; i++)
        if (!strcmp(r->v[i].id, id))
            return &r->v[i];
    return NULL;
}

/* The resource called name, added (no plugin, no devices) when d has none. */
static struct fg_sim_device_resource *resource_get(struct fg_sim_devices *d, const char *name)
{
    struct fg_sim_device_resource *r = fg_sim_devices_find(d, name);
    if (r)
        return r;
    d->res = fg_realloc(d->res, (d->n + 1) * sizeof *d->res);
    r = &d->res[d->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    return r;
}

void fg_sim_devices_register(struct fg_sim_devices *d, const char *resource, const struct fg_sim_device_plugin *plugin,
                             void *ud, const char *const *ids, size_t nids)
{
    struct fg_sim_device_resource *r = resource_get(d, resource);
    struct fg_sim_device *v = fg_calloc(nids ? nids : 1, sizeof *v);
    for (size_t i = 0; i < nids; i++) {
        const struct fg_sim_device *old = device_find(r, ids[i]);
        snprintf(v[i].id, sizeof v[i].id, "%s", ids[i]);
        v[i].healthy = true;
        if (old)
            memcpy(v[i].holder, old->holder, sizeof v[i].holder);
    }
    free(r->v);
    r->v = v;
    r->n = nids;
    r->plugin = plugin;
    r->ud = ud;
}

bool fg_sim_devices_set_health(struct fg_sim_devices *d, const char *resource, const char *id, bool healthy)
{
    struct fg_sim_device *dev = device_find(fg_sim_devices_find(d, resource), id);
    if (dev)
        dev->healthy = healthy;
    return dev != NULL;
}

void fg_sim_devices_cleanup(struct fg_sim_devices *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->res[i].v);
    free(d->res);
    memset(d, 0, sizeof *d);
}

/* ---- grants ---- */

static struct fg_sim_grant *grant_add(struct fg_sim_pod *p, size_t container, const char *resource)
{
    p->grants = fg_realloc(p->grants, (p->ngrants + 1) * sizeof *p->grants);
    struct fg_sim_grant *g = &p->grants[p->ngrants++];
    memset(g, 0, sizeof *g);
    g->container = container;
    snprintf(g->resource, sizeof g->resource, "%s", resource);
    return g;
}

static void grant_add_id(struct fg_sim_grant *g, const char *id)
{
    g->ids = fg_realloc(g->ids, (g->nids + 1) * sizeof *g->ids);
    g->ids[g->nids++] = fg_strdup(id);
}

void fg_sim_device_plugin_release_none(void *ud, const char *pod_uid)
{
    (void)ud;
    (void)pod_uid;
}

void fg_sim_device_plugin_restore_none(void *ud, const struct fg_sim_alloc_request *req)
{
    (void)ud;
    (void)req;
}

static void answer_free(struct fg_sim_alloc_response *a)
{
    for (size_t i = 0; i < a->nenv; i++)
        free(a->env[i]);
    free(a->env);
    for (size_t i = 0; i < a->nmounts; i++) {
        free(a->mounts[i].container_path);
        free(a->mounts[i].host_path);
    }
    free(a->mounts);
    for (size_t i = 0; i < a->ncdi; i++)
        free(a->cdi[i]);
    free(a->cdi);
    for (size_t i = 0; i < a->nids; i++)
        free(a->ids[i]);
    free(a->ids);
    memset(a, 0, sizeof *a);
}

void fg_sim_grants_free(struct fg_sim_pod *p)
{
    for (size_t i = 0; i < p->ngrants; i++) {
        for (size_t j = 0; j < p->grants[i].nids; j++)
            free(p->grants[i].ids[j]);
        free(p->grants[i].ids);
        answer_free(&p->grants[i].answer);
    }
    free(p->grants);
    p->grants = NULL;
    p->ngrants = 0;
}

/* Does p hold devices of resource r (a grant with IDs)? */
static bool holds(const struct fg_sim_pod *p, const struct fg_sim_device_resource *r)
{
    for (size_t i = 0; i < p->ngrants; i++)
        if (p->grants[i].nids && !strcmp(p->grants[i].resource, r->name))
            return true;
    return false;
}

void fg_sim_devices_release(struct fg_sim_node *node, struct fg_sim_pod *p)
{
    for (size_t i = 0; i < node->devices.n; i++) {
        struct fg_sim_device_resource *r = &node->devices.res[i];
        for (size_t j = 0; j < r->n; j++)
            if (!strcmp(r->v[j].holder, p->uid))
                r->v[j].holder[0] = '\0';
        if (r->plugin && r->plugin->chooses && holds(p, r))
            r->plugin->release(r->ud, p->uid);
    }
}

/* ---- step 2: reserve ---- */

int64_t fg_sim_container_wants(json_object *spec, const char *resource)
{
    json_object *q = fg_json_get(spec, "resources", "limits", resource, NULL);
    if (!q)
        q = fg_json_get(spec, "resources", "requests", resource, NULL);
    int64_t milli = 0;
    if (!q || fg_quantity_json(q, &milli, NULL) != FG_OK || milli <= 0)
        return 0;
    return fg_quantity_units(milli);
}

/* A device an init container held, which the containers after it may use again. */
struct reusable {
    const char *resource, *id;    /* borrowed from the registry */
    bool taken;                   /* by an app container, which keeps it */
};

bool fg_sim_devices_reserve(struct fg_sim_node *node, struct fg_sim_pod *p, json_object *pod)
{
    struct reusable *reuse = NULL;
    size_t nreuse = 0;
    for (size_t i = 0; i < p->ncontainers; i++) {
        json_object *spec = fg_sim_container_spec(p, pod, i);
        bool init = p->containers[i].init;
        for (size_t r = 0; r < node->devices.n; r++) {
            struct fg_sim_device_resource *res = &node->devices.res[r];
            int64_t want = fg_sim_container_wants(spec, res->name);
            if (want <= 0)
                continue;
            struct fg_sim_grant *g = grant_add(p, i, res->name);
            g->want = (size_t)want;
            if (res->plugin && res->plugin->chooses)
                continue;   /* it picks them when asked */
            for (size_t u = 0; u < nreuse && (int64_t)g->nids < want; u++) {
                if (reuse[u].taken || strcmp(reuse[u].resource, res->name))
                    continue;
                grant_add_id(g, reuse[u].id);
                reuse[u].taken = !init;
            }
            size_t available = 0;
            for (size_t d = 0; d < res->n; d++)
                available += !res->v[d].holder[0] && res->v[d].healthy;
            for (size_t d = 0; d < res->n && (int64_t)g->nids < want; d++) {
                struct fg_sim_device *dev = &res->v[d];
                if (dev->holder[0] || !dev->healthy)
                    continue;
                snprintf(dev->holder, sizeof dev->holder, "%s", p->uid);
                grant_add_id(g, dev->id);
                if (init) {
                    reuse = fg_realloc(reuse, (nreuse + 1) * sizeof *reuse);
                    reuse[nreuse++] = (struct reusable){ res->name, dev->id, false };
                }
            }
            if ((int64_t)g->nids < want) {
                snprintf(p->reject_reason, sizeof p->reject_reason, "UnexpectedAdmissionError");
                snprintf(p->reject_message, sizeof p->reject_message,
                         "Allocate failed due to requested number of devices unavailable for %s. Requested: %lld, "
                         "Available: %zu, which is unexpected", res->name, (long long)want, available);
                free(reuse);
                fg_sim_devices_release(node, p);
                fg_sim_grants_free(p);
                return false;
            }
        }
    }
    free(reuse);
    return true;
}

/* ---- step 3: allocate ---- */

/* One grant's question, asked without the lock. */
struct question {
    size_t grant;
    const struct fg_sim_device_plugin *plugin;
    void *ud;
    struct fg_sim_alloc_request req;
    struct fg_sim_alloc_response answer;
    bool given;                   /* the plugin allocated (its devices are the pod's until released) */
    enum fg_err err;
    char why[FG_ERRMSG_MAX];
};

static json_object *strings(char *const *v, size_t n)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        json_object_array_add(a, json_object_new_string(v[i]));
    return a;
}

/* The plugins' answers for p's grants (devices.json, see the header). */
static void write_checkpoint(const struct fg_sim_pod *p, const struct question *q, size_t nq)
{
    json_object *list = json_object_new_array();
    for (size_t i = 0; i < nq; i++) {
        const struct fg_sim_grant *g = &p->grants[q[i].grant];
        const struct fg_sim_alloc_response *a = &q[i].answer;
        json_object *e = json_object_new_object(), *mounts = json_object_new_array();
        fg_json_set_str(e, "container", p->containers[g->container].name);
        fg_json_set_str(e, "resource", g->resource);
        json_object_object_add(e, "devices", a->nids ? strings(a->ids, a->nids) : strings(g->ids, g->nids));
        json_object_object_add(e, "env", strings(a->env, a->nenv));
        for (size_t j = 0; j < a->nmounts; j++) {
            json_object *m = json_object_new_object();
            fg_json_set_str(m, "containerPath", a->mounts[j].container_path);
            fg_json_set_str(m, "hostPath", a->mounts[j].host_path);
            json_object_object_add(m, "readOnly", json_object_new_boolean(a->mounts[j].read_only));
            json_object_array_add(mounts, m);
        }
        json_object_object_add(e, "mounts", mounts);
        json_object_object_add(e, "cdiDevices", strings(a->cdi, a->ncdi));
        json_object_array_add(list, e);
    }
    char path[PATH_MAX + 32];
    fg_mkdir_p(p->dir);
    snprintf(path, sizeof path, "%s/" CHECKPOINT, p->dir);
    const char *text = json_object_to_json_string_ext(list, JSON_C_TO_STRING_PLAIN);
    if (fg_write_file_atomic(path, text, strlen(text)))
        fg_log(FG_LOG_WARN, COMPONENT, "pod %s: cannot write %s", p->key, path);
    json_object_put(list);
}

bool fg_sim_devices_allocate(struct fg_sim_kubelets *k, struct fg_sim_pod *p)
{
    if (!p->node)
        return true;   /* its node went: the pod goes too */
    struct question *q = fg_calloc(p->ngrants ? p->ngrants : 1, sizeof *q);
    size_t nq = 0;
    char node[FG_SIM_NODE_NAME_MAX], ns[64];
    snprintf(node, sizeof node, "%s", p->node->name);
    const char *slash = strchr(p->key, '/');
    snprintf(ns, sizeof ns, "%.*s", slash ? (int)(slash - p->key) : 0, p->key);
    for (size_t i = 0; i < p->ngrants; i++) {
        struct fg_sim_grant *g = &p->grants[i];
        struct fg_sim_device_resource *r = fg_sim_devices_find(&p->node->devices, g->resource);
        if (g->answered || !r || !r->plugin)
            continue;
        q[nq++] = (struct question){ .grant = i, .plugin = r->plugin, .ud = r->ud,
                                     .req = { node, NULL, ns, slash ? slash + 1 : p->key, p->uid,
                                              p->containers[g->container].name, g->want,
                                              (const char *const *)g->ids, g->nids } };
    }
    bool has_real = p->has_real;
    pthread_mutex_unlock(&k->mu);   /* the grants stay: only this pod's reconcile changes them */
    bool ok = true;
    for (size_t i = 0; i < nq && ok; i++) {
        q[i].req.resource = p->grants[q[i].grant].resource;   /* not the registry's: it may change meanwhile */
        q[i].err = q[i].plugin->allocate(q[i].ud, &q[i].req, &q[i].answer, q[i].why);
        q[i].given = !q[i].err;
        if (!q[i].err && q[i].plugin->chooses && q[i].answer.nids != q[i].req.n)
            q[i].err = fg_errmsg(q[i].why, FG_E_INTERNAL, "%zu devices given for %zu", q[i].answer.nids, q[i].req.n);
        ok = !q[i].err;
    }
    if (ok && nq && (has_real || k->cfg->kubelet.gpu_state == FG_SIM_GPU_STATE_FILES))
        write_checkpoint(p, q, nq);   /* nothing per pod is written for thousands of nodes in memory */
    pthread_mutex_lock(&k->mu);
    for (size_t i = 0; i < nq; i++) {
        struct fg_sim_grant *g = &p->grants[q[i].grant];
        if (q[i].given && q[i].plugin->chooses) {   /* the IDs it gave are the grant's (released if the pod fails) */
            g->ids = q[i].answer.ids;
            g->nids = q[i].answer.nids;
            q[i].answer.ids = NULL;
            q[i].answer.nids = 0;
        }
        if (!ok || q[i].err) {
            if (q[i].err) {
                snprintf(p->reject_reason, sizeof p->reject_reason, "UnexpectedAdmissionError");
                snprintf(p->reject_message, sizeof p->reject_message, "Allocate failed due to %s (%s), which is "
                         "unexpected", q[i].why[0] ? q[i].why : fg_err_str(q[i].err), q[i].plugin->name);
            }
            answer_free(&q[i].answer);
            continue;
        }
        g->answer = q[i].answer;
        g->answered = true;
    }
    free(q);
    return ok;
}

/* ---- adoption, status, PodResources ---- */

/* Marks device id of resource held by uid; a device no plugin lists (yet) is kept as held and
 * unhealthy until one does, so it is not given to another pod meanwhile. */
static void hold(struct fg_sim_devices *d, const char *resource, const char *id, const char *uid)
{
    struct fg_sim_device_resource *r = resource_get(d, resource);
    struct fg_sim_device *dev = device_find(r, id);
    if (!dev) {
        r->v = fg_realloc(r->v, (r->n + 1) * sizeof *r->v);
        dev = &r->v[r->n++];
        memset(dev, 0, sizeof *dev);
        snprintf(dev->id, sizeof dev->id, "%s", id);
    }
    if (!dev->holder[0])
        snprintf(dev->holder, sizeof dev->holder, "%s", uid);
}

static ssize_t container_named(const struct fg_sim_pod *p, bool init, const char *name)
{
    for (size_t i = 0; name && i < p->ncontainers; i++)
        if (p->containers[i].init == init && !strcmp(p->containers[i].name, name))
            return (ssize_t)i;
    return -1;
}

/* The answers devices.json holds for p's grants. */
static void read_checkpoint(struct fg_sim_pod *p)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/" CHECKPOINT, p->dir);
    json_object *list = json_object_from_file(path);
    for (size_t i = 0; i < fg_json_array_len(list); i++) {
        json_object *e = json_object_array_get_idx(list, i), *env = fg_json_get(e, "env", NULL);
        const char *container = fg_json_get_str(e, "container", NULL), *resource = fg_json_get_str(e, "resource", NULL);
        for (size_t j = 0; j < p->ngrants; j++) {
            struct fg_sim_grant *g = &p->grants[j];
            if (g->answered || !fg_str_eq(g->resource, resource) ||
                !fg_str_eq(p->containers[g->container].name, container))
                continue;
            for (size_t v = 0; v < fg_json_array_len(env); v++) {
                g->answer.env = fg_realloc(g->answer.env, (g->answer.nenv + 1) * sizeof *g->answer.env);
                g->answer.env[g->answer.nenv++] = fg_strdup(json_object_get_string(json_object_array_get_idx(env, v)));
            }
            json_object *mounts = fg_json_get(e, "mounts", NULL), *cdi = fg_json_get(e, "cdiDevices", NULL);
            for (size_t v = 0; v < fg_json_array_len(mounts); v++) {
                json_object *m = json_object_array_get_idx(mounts, v);
                const char *cp = fg_json_get_str(m, "containerPath", NULL), *hp = fg_json_get_str(m, "hostPath", NULL);
                if (!cp || !hp)
                    continue;
                g->answer.mounts = fg_realloc(g->answer.mounts, (g->answer.nmounts + 1) * sizeof *g->answer.mounts);
                g->answer.mounts[g->answer.nmounts++] = (struct fg_sim_plugin_mount){
                    fg_strdup(cp), fg_strdup(hp), json_object_get_boolean(fg_json_get(m, "readOnly", NULL)) };
            }
            for (size_t v = 0; v < fg_json_array_len(cdi); v++) {
                g->answer.cdi = fg_realloc(g->answer.cdi, (g->answer.ncdi + 1) * sizeof *g->answer.cdi);
                g->answer.cdi[g->answer.ncdi++] = fg_strdup(json_object_get_string(json_object_array_get_idx(cdi, v)));
            }
            g->answered = true;
        }
    }
    json_object_put(list);
}

void fg_sim_devices_adopt(struct fg_sim_node *node, struct fg_sim_pod *p, json_object *pod)
{
    static const char *const lists[] = { "initContainerStatuses", "containerStatuses" };
    for (int l = 0; l < 2; l++) {
        json_object *statuses = fg_json_get(pod, "status", lists[l], NULL);
        for (size_t i = 0; i < fg_json_array_len(statuses); i++) {
            json_object *st = json_object_array_get_idx(statuses, i);
            ssize_t c = container_named(p, l == 0, fg_json_get_str(st, "name", NULL));
            json_object *alloc = fg_json_get(st, "allocatedResourcesStatus", NULL);
            for (size_t a = 0; c >= 0 && a < fg_json_array_len(alloc); a++) {
                json_object *entry = json_object_array_get_idx(alloc, a);
                const char *resource = fg_json_get_str(entry, "name", NULL);
                json_object *devs = fg_json_get(entry, "resources", NULL);
                if (!resource || !fg_json_array_len(devs))
                    continue;
                struct fg_sim_grant *g = grant_add(p, (size_t)c, resource);
                struct fg_sim_device_resource *r = fg_sim_devices_find(&node->devices, resource);
                bool chooses = r && r->plugin && r->plugin->chooses;
                for (size_t d = 0; d < fg_json_array_len(devs); d++) {
                    const char *id = fg_json_get_str(json_object_array_get_idx(devs, d), "resourceID", NULL);
                    if (!id || strlen(id) >= FG_SIM_DEVICE_ID_MAX)
                        continue;
                    grant_add_id(g, id);
                    if (!chooses)
                        hold(&node->devices, resource, id, p->uid);
                }
                g->want = g->nids;
                if (chooses && g->nids) {
                    const char *slash = strchr(p->key, '/');
                    char ns[64];
                    snprintf(ns, sizeof ns, "%.*s", slash ? (int)(slash - p->key) : 0, p->key);
                    r->plugin->restore(r->ud, &(struct fg_sim_alloc_request){
                        node->name, resource, ns, slash ? slash + 1 : p->key, p->uid, p->containers[c].name,
                        g->nids, (const char *const *)g->ids, g->nids });
                }
            }
        }
    }
    if (p->ngrants)
        read_checkpoint(p);
}

json_object *fg_sim_devices_status(const struct fg_sim_pod *p, size_t container)
{
    json_object *out = NULL;
    for (size_t i = 0; i < p->ngrants; i++) {
        const struct fg_sim_grant *g = &p->grants[i];
        if (g->container != container)
            continue;
        struct fg_sim_device_resource *r = p->node ? fg_sim_devices_find(&p->node->devices, g->resource) : NULL;
        json_object *entry = json_object_new_object(), *devs = json_object_new_array();
        fg_json_set_str(entry, "name", g->resource);
        for (size_t d = 0; d < g->nids; d++) {
            const struct fg_sim_device *dev = device_find(r, g->ids[d]);
            json_object *o = json_object_new_object();
            fg_json_set_str(o, "resourceID", g->ids[d]);
            const char *health = !r || !r->plugin ? "Unknown"
                                 : r->plugin->chooses || (dev && dev->healthy) ? "Healthy"   /* it gave only healthy ones */
                                                                               : "Unhealthy";
            fg_json_set_str(o, "health", health);
            json_object_array_add(devs, o);
        }
        json_object_object_add(entry, "resources", devs);
        if (!out)
            out = json_object_new_array();
        json_object_array_add(out, entry);
    }
    return out;
}

void fg_sim_pod_resources_list(struct fg_sim_kubelets *k, const char *node, struct fg_sim_pod_resources **out,
                               size_t *n)
{
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&k->mu);
    for (size_t i = 0; i < k->npods; i++) {
        const struct fg_sim_pod *p = k->pods_v[i];
        if (!p->node || strcmp(p->node->name, node) || !p->admitted || p->rejected || p->released)
            continue;
        const char *slash = strchr(p->key, '/');
        for (size_t j = 0; slash && j < p->ngrants; j++) {
            const struct fg_sim_grant *g = &p->grants[j];
            *out = fg_realloc(*out, (*n + 1) * sizeof **out);
            struct fg_sim_pod_resources *e = &(*out)[(*n)++];
            memset(e, 0, sizeof *e);
            snprintf(e->namespace, sizeof e->namespace, "%.*s", (int)(slash - p->key), p->key);
            snprintf(e->pod, sizeof e->pod, "%s", slash + 1);
            snprintf(e->container, sizeof e->container, "%s", p->containers[g->container].name);
            snprintf(e->resource, sizeof e->resource, "%s", g->resource);
            e->ids = fg_calloc(g->nids ? g->nids : 1, sizeof *e->ids);
            for (size_t d = 0; d < g->nids; d++)
                e->ids[e->nids++] = fg_strdup(g->ids[d]);
        }
    }
    pthread_mutex_unlock(&k->mu);
}

void fg_sim_pod_resources_free(struct fg_sim_pod_resources *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t d = 0; d < v[i].nids; d++)
            free(v[i].ids[d]);
        free(v[i].ids);
    }
    free(v);
}
