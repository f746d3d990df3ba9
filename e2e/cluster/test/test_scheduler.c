/*
 * The default scheduler against the test API server: its component on a manager of its own, nodes
 * and pods made through the client, and what kube-scheduler would write seen through the API —
 * bindings and Scheduled events; the Unschedulable condition, whose lastTransitionTime holds while
 * its message changes, and FailedScheduling events; a high-priority pod preempting a low-priority
 * one (the victim marked, deleted gracefully and, once the test stands in for its kubelet and
 * finishes the deletion, its room taken by the preemptor).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/cluster/sim.h"
#include "e2e/tests/harness.h"
#include "operator/kube/resource.h"

#define NS "sched"
#define WAIT_MS 10000

struct cluster {
    struct fg_harness h;
    struct fg_sim_config cfg;
    struct fg_manager *m;
};

static struct cluster cl;

static json_object *parse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_object *parse(const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    for (char *p = text; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_object *o = NULL;
    assert_int_equal(fg_json_parse(text, strlen(text), 0, &o, NULL), FG_OK);
    return o;
}

static void create(const struct fg_kube_resource *res, json_object *obj)
{
    char *path = fg_kube_path(res, res->namespaced ? NS : NULL, NULL, NULL, NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_create(cl.h.client, path, obj, NULL, &st);
    if (err)
        fail_msg("create: %s", st.message ? st.message : fg_err_str(err));
    fg_kube_status_cleanup(&st);
    free(path);
    json_object_put(obj);
}

static void node(const char *name, const char *cpu)
{
    create(&fg_kube_nodes,
           parse("{'apiVersion':'v1','kind':'Node','metadata':{'name':'%s','labels':{'kubernetes.io/hostname':'%s'}},"
                 "'status':{'allocatable':{'cpu':'%s','memory':'4Gi','pods':'110'},'capacity':{'cpu':'%s',"
                 "'memory':'4Gi','pods':'110'},'conditions':[{'type':'Ready','status':'True'}]}}",
                 name, name, cpu, cpu));
}

/* A pod of the given priority: from a PriorityClass "priority-N" (made on first use), as the API
 * server's Priority admission refuses a pod that sets spec.priority itself. */
static void pod(const char *name, const char *cpu, int priority)
{
    if (priority) {
        char *path = fg_kube_path(&fg_kube_priorityclasses, NULL, NULL, NULL, NULL);
        json_object *pc = parse("{'apiVersion':'scheduling.k8s.io/v1','kind':'PriorityClass','metadata':"
                                "{'name':'priority-%d'},'value':%d}", priority, priority);
        enum fg_err err = fg_kube_create(cl.h.client, path, pc, NULL, NULL);
        if (err && err != FG_E_KUBE_ALREADY_EXISTS)
            fail_msg("PriorityClass priority-%d: %s", priority, fg_err_str(err));
        json_object_put(pc);
        free(path);
    }
    create(&fg_kube_pods,
           parse("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'%s','namespace':'" NS "'},'spec':{%s%d%s"
                 "'containers':[{'name':'c','image':'busybox','resources':{'requests':{'cpu':'%s'}}}]}}",
                 name, priority ? "'priorityClassName':'priority-" : "'priority':", priority, priority ? "'," : ",",
                 cpu));
}

/* The pod as the server has it (caller puts), or NULL when gone. */
static json_object *get_pod(const char *name)
{
    char *path = fg_kube_path(&fg_kube_pods, NS, name, NULL, NULL);
    json_object *obj = NULL;
    if (fg_kube_get(cl.h.client, path, &obj, NULL) != FG_OK)
        obj = NULL;
    free(path);
    return obj;
}

static json_object *condition(json_object *pod, const char *type)
{
    json_object *conds = fg_json_get(pod, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++)
        if (fg_str_eq(fg_json_get_str(json_object_array_get_idx(conds, i), "type", NULL), type))
            return json_object_array_get_idx(conds, i);
    return NULL;
}

/* ---- conditions to wait for ---- */

struct want {
    const char *pod;
    const char *text;       /* a message, a node, an event reason */
    const char *text2;
    char got[512];
};

/* The pod's string field at section.name into w->got ("" when absent). */
static void read_field(struct want *w, const char *section, const char *name)
{
    json_object *p = get_pod(w->pod);
    const char *v = fg_json_get_str(p, section, name, NULL);
    snprintf(w->got, sizeof w->got, "%s", v ? v : "");
    json_object_put(p);
}

/* Bound (to w->text, when set). */
static bool bound(void *ud)
{
    struct want *w = ud;
    read_field(w, "spec", "nodeName");
    return w->got[0] && (!w->text || !strcmp(w->got, w->text));
}

static bool unschedulable_with(void *ud)
{
    struct want *w = ud;
    json_object *p = get_pod(w->pod);
    json_object *c = condition(p, "PodScheduled");
    const char *msg = fg_json_get_str(c, "message", NULL);
    snprintf(w->got, sizeof w->got, "%s", msg ? msg : "");
    bool ok = fg_str_eq(fg_json_get_str(c, "status", NULL), "False") &&
              fg_str_eq(fg_json_get_str(c, "reason", NULL), "Unschedulable") && fg_str_eq(msg, w->text);
    json_object_put(p);
    return ok;
}

/* An event with reason text about pod, whose message contains text2. */
static bool event_seen(void *ud)
{
    struct want *w = ud;
    char *path = fg_kube_path(&fg_kube_events, NS, NULL, NULL, NULL);
    json_object *list = NULL;
    bool found = false;
    if (fg_kube_get(cl.h.client, path, &list, NULL) == FG_OK) {
        json_object *items = fg_json_get(list, "items", NULL);
        for (size_t i = 0; i < fg_json_array_len(items) && !found; i++) {
            json_object *e = json_object_array_get_idx(items, i);
            const char *msg = fg_json_get_str(e, "message", NULL);
            found = fg_str_eq(fg_json_get_str(e, "involvedObject", "name", NULL), w->pod) &&
                    fg_str_eq(fg_json_get_str(e, "reason", NULL), w->text) && msg && strstr(msg, w->text2) &&
                    fg_str_eq(fg_json_get_str(e, "reportingComponent", NULL), "default-scheduler");
        }
    }
    json_object_put(list);
    free(path);
    return found;
}

static void wait_for(bool (*cond)(void *), struct want *w, const char *what)
{
    if (!fg_harness_wait(cond, w, WAIT_MS))
        fail_msg("%s: pod %s: last seen \"%s\"", what, w->pod, w->got);
}

/* ---- the cluster ---- */

static int start(void **state)
{
    (void)state;
    char errmsg[FG_ERRMSG_MAX] = "";
    fg_log_set_level(FG_LOG_WARN);
    if (fg_harness_start(&cl.h, NULL, errmsg) || fg_harness_namespace(&cl.h, NS))
        fail_msg("harness: %s", errmsg);
    fg_sim_config_default(&cl.cfg);
    struct fg_manager_opts mo = FG_MANAGER_OPTS_DEFAULT;
    mo.component = "sim-scheduler";
    mo.kubeconfig = cl.h.kubeconfig;
    mo.leader.enabled = false;
    mo.client.qps = 0;
    if (fg_manager_new(&mo, &cl.m, errmsg) || fg_sim_scheduler_setup(cl.m, &cl.cfg, errmsg) ||
        fg_manager_start(cl.m, errmsg))
        fail_msg("scheduler: %s", errmsg);
    node("n1", "2");
    node("n2", "2");
    return 0;
}

static int stop(void **state)
{
    (void)state;
    fg_manager_free(cl.m);
    fg_sim_config_cleanup(&cl.cfg);
    fg_harness_stop(&cl.h);
    return 0;
}

/* Four pods of 500m spread two and two, each with its Scheduled event. */
static void test_binds(void **state)
{
    (void)state;
    const char *names[] = { "low0", "low1", "low2", "low3" };
    for (int i = 0; i < 4; i++)
        pod(names[i], "500m", 0);
    int on_n1 = 0;
    for (int i = 0; i < 4; i++) {
        struct want w = { .pod = names[i] };
        wait_for(bound, &w, "binding");
        on_n1 += !strcmp(w.got, "n1");
        char msg[700];
        snprintf(msg, sizeof msg, "Successfully assigned " NS "/%s to %s", names[i], w.got);
        struct want ev = { .pod = names[i], .text = "Scheduled", .text2 = msg };
        wait_for(event_seen, &ev, "Scheduled event");
        json_object *p = get_pod(names[i]);
        assert_string_equal(fg_json_get_str(condition(p, "PodScheduled"), "status", NULL), "True");
        json_object_put(p);
    }
    assert_int_equal(on_n1, 2);   /* LeastAllocated spreads them */
}

/* A pod too big for any node: the condition and event, and a lastTransitionTime that holds while the
 * message changes with the cluster. */
static void test_unschedulable(void **state)
{
    (void)state;
    pod("huge", "3", 0);
    struct want w = { .pod = "huge",
                      .text = "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 "
                              "Preemption is not helpful for scheduling." };
    wait_for(unschedulable_with, &w, "unschedulable");
    struct want ev = { .pod = "huge", .text = "FailedScheduling", .text2 = w.text };
    wait_for(event_seen, &ev, "FailedScheduling event");
    json_object *p = get_pod("huge");
    char *since = fg_strdup(fg_json_get_str(condition(p, "PodScheduled"), "lastTransitionTime", NULL));
    json_object_put(p);
    usleep(1100 * 1000);   /* a condition written again would carry a later second */
    node("n3", "1");
    w.text = "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 Preemption is "
             "not helpful for scheduling.";
    wait_for(unschedulable_with, &w, "unschedulable on three nodes");
    p = get_pod("huge");
    assert_string_equal(fg_json_get_str(condition(p, "PodScheduled"), "lastTransitionTime", NULL), since);
    json_object_put(p);
    free(since);
}

/* The pod on node that preemption marked and deleted, or NULL. */
static char *victim_on(const char *node)
{
    char *path = fg_kube_path(&fg_kube_pods, NS, NULL, NULL, NULL);
    json_object *list = NULL;
    char *name = NULL;
    assert_int_equal(fg_kube_get(cl.h.client, path, &list, NULL), FG_OK);
    json_object *items = fg_json_get(list, "items", NULL);
    for (size_t i = 0; i < fg_json_array_len(items) && !name; i++) {
        json_object *p = json_object_array_get_idx(items, i);
        if (fg_str_eq(fg_json_get_str(p, "spec", "nodeName", NULL), node) &&
            fg_json_get(p, "metadata", "deletionTimestamp", NULL) &&
            fg_str_eq(fg_json_get_str(condition(p, "DisruptionTarget"), "reason", NULL), "PreemptionByScheduler"))
            name = fg_strdup(fg_json_get_str(p, "metadata", "name", NULL));
    }
    json_object_put(list);
    free(path);
    return name;
}

static bool nominated(void *ud)
{
    struct want *w = ud;
    read_field(w, "status", "nominatedNodeName");
    return w->got[0] != '\0';
}

/* Every node is full of priority-0 pods: a priority-1000 pod takes the room of one of them. */
static void test_preemption(void **state)
{
    (void)state;
    pod("vip", "1500m", 1000);
    struct want w = { .pod = "vip" };
    wait_for(nominated, &w, "nomination");
    char node[sizeof w.got];
    memcpy(node, w.got, sizeof node);
    w.text = "0/3 nodes are available: 3 Insufficient cpu.";
    wait_for(unschedulable_with, &w, "unschedulable while preempting");
    char *victim = NULL;
    for (int i = 0; i < WAIT_MS / 50 && !(victim = victim_on(node)); i++) /* bounded as every wait here */
        usleep(50 * 1000);
    assert_non_null(victim);
    json_object *vip = get_pod("vip");
    char msg[800];
    snprintf(msg, sizeof msg, "Preempted by pod %s on node %s", fg_json_get_str(vip, "metadata", "uid", NULL), node);
    json_object_put(vip);
    struct want ev = { .pod = victim, .text = "Preempted", .text2 = msg };
    wait_for(event_seen, &ev, "Preempted event");
    /* the room stays the preemptor's while the victim terminates; then the kubelet's final delete */
    usleep(300 * 1000);
    struct want still = { .pod = "vip" };
    assert_false(bound(&still));
    char *path = fg_kube_path(&fg_kube_pods, NS, victim, NULL, NULL);
    json_object *opts = parse("{'apiVersion':'v1','kind':'DeleteOptions','gracePeriodSeconds':0}");
    assert_int_equal(fg_kube_delete(cl.h.client, path, opts, NULL, NULL), FG_OK);
    json_object_put(opts);
    free(path);
    struct want b = { .pod = "vip", .text = node };
    wait_for(bound, &b, "binding after preemption");
    free(victim);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binds),
        cmocka_unit_test(test_unschedulable),
        cmocka_unit_test(test_preemption),
    };
    return cmocka_run_group_tests(tests, start, stop);
}
