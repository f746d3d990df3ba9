/* What the sharing end-to-end tests read from the simulated cluster (share_fixture.h). */
#include "e2e/cluster/test/share_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "reconcilers/podcontract.h"

json_object *share_list(struct fg_simcluster *c, const struct fg_kube_resource *res, const char *ns, const char *selector)
{
    struct fg_buf q;
    fg_buf_init(&q, 0);
    if (selector && fg_kube_query_add(&q, "labelSelector", selector) != FG_OK)
        fail();
    char *path = fg_kube_path(res, ns, NULL, NULL, selector ? fg_buf_str(&q) : NULL);
    fg_buf_cleanup(&q);
    json_object *l = NULL;
    enum fg_err err = fg_kube_get(c->client, path, &l, NULL);
    free(path);
    return err ? NULL : l;
}

static const char *condition(json_object *pod, const char *type, const char *field)
{
    json_object *conds = fg_json_get(pod, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (fg_str_eq(fg_json_get_str(c, "type", NULL), type))
            return fg_json_get_str(c, field, NULL);
    }
    return NULL;
}

bool share_ready(json_object *pod)
{
    return fg_str_eq(condition(pod, "Ready", "status"), "True");
}

bool share_sched_reason(json_object *pod, const char *reason)
{
    return fg_str_eq(condition(pod, "PodScheduled", "reason"), reason);
}

bool share_live(json_object *pod)
{
    const char *phase = fg_json_get_str(pod, "status", "phase", NULL);
    return !fg_json_get(pod, "metadata", "deletionTimestamp", NULL) && !fg_str_eq(phase, "Failed") &&
           !fg_str_eq(phase, "Succeeded");
}

const char *share_ann(json_object *pod, const char *key)
{
    return fg_json_get_str(pod, "metadata", "annotations", key, NULL);
}

void share_app(struct fg_simcluster *c, const char *ns, const char *app, struct share_app *v)
{
    char sel[128];
    snprintf(sel, sizeof sel, "app=%s", app);
    memset(v, 0, sizeof(*v));
    v->l = share_list(c, &fg_kube_pods, ns, sel);
    json_object *items = fg_json_get(v->l, "items", NULL);
    for (size_t i = 0; i < fg_json_array_len(items) && v->n < SHARE_MAX_PODS; i++) {
        json_object *p = json_object_array_get_idx(items, i);
        if (!share_live(p))
            continue;
        v->pods[v->n++] = p;
        v->running += fg_str_eq(fg_json_get_str(p, "status", "phase", NULL), "Running") && share_ready(p);
    }
}

void share_app_cleanup(struct share_app *v)
{
    json_object_put(v->l);
}

bool share_app_running(struct fg_simcluster *c, const char *ns, const char *app, size_t n)
{
    struct share_app v;
    share_app(c, ns, app, &v);
    bool ok = v.n == n && v.running == n;
    share_app_cleanup(&v);
    return ok;
}

size_t share_distinct(const struct share_app *v, const char *key, const char *names[16])
{
    size_t k = 0;
    for (size_t i = 0; i < v->n; i++) {
        const char *s = share_ann(v->pods[i], key);
        bool seen = !s;
        for (size_t j = 0; j < k && !seen; j++)
            seen = !strcmp(names[j], s);
        if (!seen && k < 16)
            names[k++] = s;
    }
    return k;
}

size_t share_capacity_pods(struct fg_simcluster *c, const char *node)
{
    json_object *l = share_list(c, &fg_kube_pods, SHARE_SYSTEM_NS, FG_LABEL_ROLE "=" FG_ROLE_CAPACITY);
    json_object *items = fg_json_get(l, "items", NULL);
    size_t n = 0;
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        json_object *p = json_object_array_get_idx(items, i);
        n += share_live(p) && (!node || fg_str_eq(fg_json_get_str(p, "spec", "nodeName", NULL), node));
    }
    json_object_put(l);
    return n;
}

size_t share_nodes(struct fg_simcluster *c)
{
    json_object *l = share_list(c, &fg_kube_nodes, NULL, NULL);
    size_t n = fg_json_array_len(fg_json_get(l, "items", NULL));
    json_object_put(l);
    return n;
}

bool share_eventually(bool (*cond)(void *), void *ud, unsigned timeout_s)
{
    uint64_t deadline = fg_clock_mono_ns() + (uint64_t)timeout_s * FG_NS_PER_S;
    while (!cond(ud)) {
        if (fg_clock_mono_ns() > deadline)
            return false;
        nanosleep(&(struct timespec){ 0, 200 * 1000 * 1000 }, NULL);
    }
    return true;
}

void share_show_and_fail(struct fg_simcluster *c, const char *what)
{
    struct fg_buf out;
    fg_buf_init(&out, 0);
    fg_kubectl_run(&c->k, &out, NULL, "get", "pods,nodes", "-A", "-o", "wide", NULL);
    fprintf(stderr, "%s\n%s\n", what, fg_buf_str(&out));   /* whole: cmocka cuts long messages */
    fg_buf_cleanup(&out);
    fail_msg("%s", what);
}
