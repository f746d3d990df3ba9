/*
 * state_pods — pods into the checker's records: which pods are capacity pods and which are tenants,
 * what each says of its node, GPU, phase and allocation, and which invariants an event touches.
 *
 * An event re-judges only what it can change: the GPUs a tenant left and joined, the GPUs a capacity
 * pod announced before and after, the tenants naming that capacity pod, and the tenant itself. The
 * rest was judged when it last changed, except the grace of tenants left without a capacity pod,
 * which time alone runs out; every event looks at those too, as fg_checker_state_tick does.
 */
#include <json-c/linkhash.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/checker/state_int.h"
#include "reconcilers/podcontract.h"

static const char *annotation(json_object *pod, const char *key)
{
    return fg_json_get_str(pod, "metadata", "annotations", key, NULL);
}

static bool is_capacity(const struct fg_checker_state *s, json_object *pod)
{
    return fg_str_eq(fg_json_get_str(pod, "metadata", "namespace", NULL), s->capacity_ns) &&
           fg_str_eq(fg_json_get_str(pod, "metadata", "labels", FG_LABEL_ROLE, NULL), FG_ROLE_CAPACITY);
}

static bool is_tenant(const struct fg_checker_state *s, json_object *pod)
{
    return !is_capacity(s, pod) && annotation(pod, FG_ANN_CAPACITY_POD);
}

static char *pod_key(json_object *pod)
{
    const char *ns = fg_json_get_str(pod, "metadata", "namespace", NULL);
    const char *name = fg_json_get_str(pod, "metadata", "name", NULL);
    return name ? fg_asprintf("%s/%s", ns ? ns : "", name) : NULL;
}

static struct fg__chk_tenant *tenant_find(struct fg_checker_state *s, const char *key)
{
    struct fg__chk_tenant *t = NULL;
    return key && lh_table_lookup_ex(s->tenants, key, (void **)&t) ? t : NULL;
}

static struct fg__chk_capacity *capacity_find(struct fg_checker_state *s, const char *name)
{
    struct fg__chk_capacity *c = NULL;
    return name && lh_table_lookup_ex(s->capacity, name, (void **)&c) ? c : NULL;
}

/* Moves t from the GPU it counts against to g (either may be NULL) and judges both. */
static void tenant_move(struct fg_checker_state *s, struct fg__chk_tenant *t, struct fg__chk_gpu *g)
{
    struct fg__chk_gpu *old = t->gpu;
    if (old != g) {
        if (old)
            fg__chk_gpu_leave(old, t);
        if (g)
            fg__chk_gpu_join(g, t);
        t->gpu = g;
    }
    if (old && old != g)
        fg__chk_check_gpu(s, old);
    if (g)
        fg__chk_check_gpu(s, g);
}

static void tenant_remove(struct fg_checker_state *s, struct fg__chk_tenant *t)
{
    tenant_move(s, t, NULL);
    if (t->unbacked)
        s->waiting--;
    lh_table_delete(s->tenants, t->key);
    fg__chk_tenant_free(t);
}

static void tenant_update(struct fg_checker_state *s, struct fg__chk_tenant *t, json_object *pod, uint64_t now_ns)
{
    const char *phase = fg_json_get_str(pod, "status", "phase", NULL);
    fg__chk_set_str(&t->node, fg_json_get_str(pod, "spec", "nodeName", NULL));
    fg__chk_set_str(&t->uuid, annotation(pod, FG_ANN_GPU_UUID));
    fg__chk_set_str(&t->capacity, annotation(pod, FG_ANN_CAPACITY_POD));
    t->running = fg_str_eq(phase, "Running");
    t->counts = t->node && !fg_str_eq(phase, "Succeeded") && !fg_str_eq(phase, "Failed");

    char why[FG_ERRMSG_MAX] = "";
    t->alloc_ok = fg_allocation_from_pod(pod, &t->alloc, why) == FG_OK;
    struct fg__chk_msg problem = { .len = 0 };
    if (t->counts && !t->alloc_ok)
        fg__chk_msg_add(&problem, "tenant %s on node %s: %s; it counts nothing against its GPU", t->key, t->node, why);
    else if (t->counts && !t->uuid)
        fg__chk_msg_add(&problem, "tenant %s is bound to node %s and names capacity pod %s/%s but has no "
                        FG_ANN_GPU_UUID " annotation", t->key, t->node, s->capacity_ns, t->capacity);
    fg__chk_check_problem(s, &t->problem, problem.len ? problem.text : NULL);

    if (t->node && t->uuid && !t->first_node) {
        t->first_node = fg_strdup(t->node);
        t->first_uuid = fg_strdup(t->uuid);
    }
    fg__chk_check_identity(s, t);
    tenant_move(s, t, t->counts && t->alloc_ok && t->uuid ? fg__chk_gpu_get(s, t->node, t->uuid) : NULL);
    fg__chk_check_backing(s, t, now_ns);
}

static void upsert_tenant(struct fg_checker_state *s, const char *key, json_object *pod, uint64_t now_ns)
{
    const char *uid = fg_json_get_str(pod, "metadata", "uid", NULL);
    struct fg__chk_tenant *t = tenant_find(s, key);
    if (t && !fg_str_eq(t->uid, uid)) {   /* deleted and made again while we were not watching */
        tenant_remove(s, t);
        t = NULL;
    }
    if (!t) {
        t = fg_calloc(1, sizeof *t);
        t->key = fg_strdup(key);
        t->uid = uid ? fg_strdup(uid) : NULL;
        lh_table_insert(s->tenants, t->key, t);
    }
    tenant_update(s, t, pod, now_ns);
}

/* The GPUs a capacity pod announces, judged again (their memory limit may have changed). */
static void check_announced(struct fg_checker_state *s, const char *node, const char *uuid)
{
    struct fg__chk_gpu *g = fg__chk_gpu_find(s, node, uuid);
    if (g)
        fg__chk_check_gpu(s, g);
}

static void capacity_remove(struct fg_checker_state *s, struct fg__chk_capacity *c, uint64_t now_ns)
{
    lh_table_delete(s->capacity, c->name);
    check_announced(s, c->node, c->uuid);
    fg__chk_check_backing_of(s, c->name, now_ns);
    fg__chk_capacity_free(c);
}

/* FG_ANN_GPU_MEMORY_MIB: a decimal number of MiB, 0 or more. */
static bool parse_mib(const char *v, int64_t *out)
{
    if (!v || *v < '0' || *v > '9')
        return false;
    char *end = NULL;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || *end)
        return false;
    *out = n;
    return true;
}

static void upsert_capacity(struct fg_checker_state *s, json_object *pod, uint64_t now_ns)
{
    const char *name = fg_json_get_str(pod, "metadata", "name", NULL);
    struct fg__chk_capacity *c = capacity_find(s, name);
    if (!c) {
        c = fg_calloc(1, sizeof *c);
        c->name = fg_strdup(name);
        lh_table_insert(s->capacity, c->name, c);
    }
    char *old_node = c->node ? fg_strdup(c->node) : NULL, *old_uuid = c->uuid ? fg_strdup(c->uuid) : NULL;
    fg__chk_set_str(&c->node, fg_json_get_str(pod, "spec", "nodeName", NULL));
    fg__chk_set_str(&c->uuid, annotation(pod, FG_ANN_GPU_UUID));
    c->running = fg_str_eq(fg_json_get_str(pod, "status", "phase", NULL), "Running");
    c->terminating = fg_json_get(pod, "metadata", "deletionTimestamp", NULL) != NULL;
    c->live = c->node && c->running && !c->terminating;

    const char *mib = annotation(pod, FG_ANN_GPU_MEMORY_MIB);
    struct fg__chk_msg problem = { .len = 0 };
    if (!parse_mib(mib, &c->memory_mib)) {
        c->memory_mib = -1;
        if (mib)
            fg__chk_msg_add(&problem, "capacity pod %s/%s: annotation " FG_ANN_GPU_MEMORY_MIB " \"%s\" is not a "
                            "decimal number of MiB; the memory of its GPU is not checked", s->capacity_ns, c->name, mib);
    }
    fg__chk_check_problem(s, &c->problem, problem.len ? problem.text : NULL);

    if (c->node && c->uuid)
        fg__chk_gpu_get(s, c->node, c->uuid);   /* a GPU seen, tenants or not */
    if (!fg_str_eq(old_node, c->node) || !fg_str_eq(old_uuid, c->uuid))
        check_announced(s, old_node, old_uuid);
    check_announced(s, c->node, c->uuid);
    fg__chk_check_backing_of(s, c->name, now_ns);
    free(old_node);
    free(old_uuid);
}

void fg_checker_state_upsert(struct fg_checker_state *s, json_object *pod, uint64_t now_ns)
{
    s->stats.events++;
    char *key = pod_key(pod);
    if (key) {
        struct fg__chk_tenant *t = tenant_find(s, key);
        if (t && !is_tenant(s, pod))
            tenant_remove(s, t);
        const char *name = fg_json_get_str(pod, "metadata", "name", NULL);
        struct fg__chk_capacity *c = fg_str_eq(fg_json_get_str(pod, "metadata", "namespace", NULL), s->capacity_ns)
                                         ? capacity_find(s, name) : NULL;
        if (c && !is_capacity(s, pod))
            capacity_remove(s, c, now_ns);
        if (is_tenant(s, pod))
            upsert_tenant(s, key, pod, now_ns);
        else if (is_capacity(s, pod))
            upsert_capacity(s, pod, now_ns);
        free(key);
    }
    fg_checker_state_tick(s, now_ns);
}

void fg_checker_state_delete(struct fg_checker_state *s, json_object *pod, uint64_t now_ns)
{
    s->stats.events++;
    char *key = pod_key(pod);
    struct fg__chk_tenant *t = tenant_find(s, key);
    if (t)
        tenant_remove(s, t);
    if (fg_str_eq(fg_json_get_str(pod, "metadata", "namespace", NULL), s->capacity_ns)) {
        struct fg__chk_capacity *c = capacity_find(s, fg_json_get_str(pod, "metadata", "name", NULL));
        if (c)
            capacity_remove(s, c, now_ns);
    }
    free(key);
    fg_checker_state_tick(s, now_ns);
}
