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
#include "base/log.h"
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

const char *share_condition(json_object *pod, const char *type, const char *field)
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
    return fg_str_eq(share_condition(pod, "Ready", "status"), "True");
}

bool share_sched_reason(json_object *pod, const char *reason)
{
    return fg_str_eq(share_condition(pod, "PodScheduled", "reason"), reason);
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

bool share_all_running(void *want_running)
{
    const struct share_want_running *w = want_running;
    return share_app_running(w->c, w->ns, w->app, w->n);
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

int share_setup(struct share_env *e, const char *config, const char *name)
{
    fg_log_set_level(FG_LOG_WARN);
    e->start_ns = fg_clock_mono_ns();
    e->name = name;
    char path[512], msg[FG_ERRMSG_MAX] = "";
    snprintf(path, sizeof path, "%s/e2e/cluster/testdata/%s", getenv("FG_SOURCE_DIR"), config);
    if (fg_simcluster_start(&e->sim, path, NULL, 90, msg) != FG_OK) {
        fprintf(stderr, "cannot start the simulated cluster: %s\n", msg);
        return -1;
    }
    e->sim.k.timeout_s = 180;
    struct fg_checker_opts o = FG_CHECKER_OPTS_DEFAULT;
    o.grace_ms = e->grace_ms ? e->grace_ms : 10000;
    if (fg_checker_start(e->sim.kubeconfig, &o, &e->checker, msg) != FG_OK ||
        !fg_checker_wait_synced(e->checker, 30000)) {
        fprintf(stderr, "cannot start the sharing checker: %s\n", msg);
        return -1;
    }
    return 0;
}

int share_teardown(struct share_env *e)
{
    int rc = 0;
    if (e->checker) {
        fg_checker_stop(e->checker);
        char *summary = fg_checker_summary(e->checker);
        printf("%s\n", summary);
        free(summary);
        struct fg_checker_stats s;
        fg_checker_stats(e->checker, &s);
        for (size_t i = 0; i < 8; i++) {
            char *m = fg_checker_message(e->checker, i);
            if (!m)
                break;
            fprintf(stderr, "checker: %s\n", m);
            free(m);
        }
        rc = s.violations ? -1 : 0;
        fg_checker_free(e->checker);
    }
    size_t reports = fg_simcluster_log_problems(&e->sim);
    fg_simcluster_stop(&e->sim, reports > 0 || rc);
    printf("%s: %.1f s in all\n", e->name, (double)(fg_clock_mono_ns() - e->start_ns) / 1e9);
    return reports || rc ? -1 : 0;
}

struct agents {
    struct fg_simcluster *c;
    size_t n;
};

static bool agents_ready(void *ud)
{
    const struct agents *a = ud;
    size_t ready = 0;
    json_object *l = share_list(a->c, &fg_kube_pods, SHARE_SYSTEM_NS, "app.kubernetes.io/component=node-agent");
    json_object *items = fg_json_get(l, "items", NULL);
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        json_object *p = json_object_array_get_idx(items, i);
        ready += share_live(p) && share_ready(p);
    }
    json_object_put(l);
    return ready == a->n;
}

void share_install(struct share_env *e, const char *const *operator_args, size_t agents, const char *ns)
{
    struct fg_buf out;
    fg_buf_init(&out, 0);
    char manifests[512];
    snprintf(manifests, sizeof manifests, "%s/manifests", getenv("FG_SOURCE_DIR"));
    SHARE_OK(e, &out, NULL, "apply", "-k", manifests);
    for (size_t i = 0; operator_args && operator_args[i]; i++)
        if (fg_simcluster_operator_arg(&e->sim, operator_args[i], &out) != 0)
            fail_msg("cannot set %s: %s", operator_args[i], fg_buf_str(&out));
    struct agents want = { &e->sim, agents };
    if (!share_eventually(agents_ready, &want, 60))
        share_show_and_fail(&e->sim, "the node agents are not Ready");
    SHARE_OK(e, &out, NULL, "create", "namespace", ns);
    fg_buf_cleanup(&out);
}
