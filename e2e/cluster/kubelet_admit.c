/*
 * kubelet_admit — how a simulated kubelet takes a pod on: admission, or adoption of one a previous
 * run of the kubelets admitted.
 *
 * Admission (once per pod UID): the pod's requests (resources.h), one pod counted against
 * allocatable "pods", must fit the node's allocatable next to what the pods admitted there request,
 * its node selector and required node affinity must match the node's labels and its tolerations
 * cover the node's NoExecute taints; otherwise kube's reason (OutOfcpu, OutOfmemory, OutOfpods,
 * Out<resource>, NodeAffinity, Taint, UnexpectedAdmissionError) and message. Adoption takes the
 * pod's address, start time and containers from its status; a real process found through its pid
 * file keeps running, one gone is a container that ended (exit code 137).
 */
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "base/json.h"
#include "base/timefmt.h"
#include "e2e/cluster/kubelet.h"
#include "e2e/cluster/pidfile.h"
#include "operator/kube/nodematch.h"
#include "operator/kube/quantity.h"

/* NULL when pod fits node next to the pods admitted there; else the reason (in reason when it is
 * made for the resource short), and why in message. */
static const char *admit(struct fg_sim_node *node, json_object *node_json, json_object *pod,
                         struct fg_resources *requests, char *reason, size_t reason_size, char *message, size_t size)
{
    char why[FG_ERRMSG_MAX];
    if (fg_pod_requests(pod, requests, why) != FG_OK) {
        snprintf(message, size, "Pod was rejected: %.400s", why);
        return "UnexpectedAdmissionError";
    }
    if (fg_resources_add(requests, "pods", 1000) != FG_OK) {
        snprintf(message, size, "Pod was rejected: too many resources");
        return "UnexpectedAdmissionError";
    }
    if (!fg_node_matches_pod(pod, node_json)) {
        snprintf(message, size, "Pod was rejected: Predicate NodeAffinity failed");
        return "NodeAffinity";
    }
    if (fg_untolerated_taint(fg_json_get(node_json, "spec", "taints", NULL), fg_json_get(pod, "spec", "tolerations", NULL),
                             true)) {
        snprintf(message, size, "Pod was rejected: Predicate TaintToleration failed");
        return "Taint";
    }
    const struct fg_resources *used = &node->used;
    for (size_t i = 0; i < requests->n; i++) {
        const struct fg_resource_amount *r = &requests->v[i];
        int64_t have = fg_resources_get(used, r->name), cap = fg_resources_get(&node->capacity, r->name);
        if (r->milli <= 0 || have + r->milli <= cap)
            continue;
        snprintf(reason, reason_size, "OutOf%s", r->name);
        bool milli = !strcmp(r->name, "cpu");
        snprintf(message, size, "Pod was rejected: Node didn't have enough resource: %s, requested: %lld, used: %lld, "
                 "capacity: %lld", r->name, (long long)(milli ? r->milli : fg_quantity_units(r->milli)),
                 (long long)(milli ? have : fg_quantity_units(have)), (long long)(milli ? cap : fg_quantity_units(cap)));
        return reason;
    }
    return NULL;
}

bool fg_sim_pod_admit(struct fg_sim_node *node, json_object *pod, struct fg_sim_pod *p)
{
    json_object *node_json = fg_sim_cloud_node_shape(node->group, node->name);
    const char *reason = admit(node, node_json, pod, &p->requests, p->reject_reason, sizeof p->reject_reason,
                               p->reject_message, sizeof p->reject_message);
    json_object_put(node_json);
    if (reason && reason != p->reject_reason)
        snprintf(p->reject_reason, sizeof p->reject_reason, "%s", reason);
    return !reason;
}

/* Takes over a pod a previous run of this kubelet admitted: its address, start time and containers
 * (a real process found through its pid file keeps running; one gone is a container that ended). */
void fg_sim_pod_adopt(struct fg_sim_pod *p, json_object *pod)
{
    const char *ip = fg_json_get_str(pod, "status", "podIP", NULL);
    unsigned a, b, c3, d;
    if (ip && sscanf(ip, "%u.%u.%u.%u", &a, &b, &c3, &d) == 4 && d < 256) {
        snprintf(p->ip, sizeof p->ip, "%s", ip);
        p->node->ip_used[d] = true;
    }
    p->admitted = p->started = true;
    p->start_ms = fg_clock_wall_ms();
    fg_time_parse(fg_json_get_str(pod, "status", "startTime", NULL), &p->start_ms);
    if (fg_pod_requests(pod, &p->requests, NULL) == FG_OK && fg_resources_add(&p->requests, "pods", 1000) == FG_OK)
        fg_resources_sum(&p->node->used, &p->requests);
    json_object *lists[2] = { fg_json_get(pod, "status", "initContainerStatuses", NULL),
                              fg_json_get(pod, "status", "containerStatuses", NULL) };
    for (size_t i = 0; i < p->ncontainers; i++) {
        struct fg_sim_container *c = &p->containers[i];
        json_object *statuses = lists[c->init ? 0 : 1], *st = NULL;
        for (size_t j = 0; j < fg_json_array_len(statuses) && !st; j++)
            if (fg_str_eq(fg_json_get_str(json_object_array_get_idx(statuses, j), "name", NULL), c->name))
                st = json_object_array_get_idx(statuses, j);
        int64_t restarts = 0;
        fg_json_get_int64(st, &restarts, "restartCount", NULL);
        c->restarts = (unsigned)restarts;
        if (fg_json_get(st, "state", "terminated", NULL)) {
            int64_t code = 0;
            fg_json_get_int64(st, &code, "state", "terminated", "exitCode", NULL);
            c->state = CONTAINER_TERMINATED;
            c->exit_code = (int)code;
            c->terminated_reason = code ? "Error" : "Completed";
            continue;
        }
        if (!fg_json_get(st, "state", "running", NULL))
            continue;
        c->state = CONTAINER_RUNNING;
        c->ready = json_object_get_boolean(fg_json_get(st, "ready", NULL));
        fg_time_parse(fg_json_get_str(st, "state", "running", "startedAt", NULL), &c->started_ms);
        if (!c->real)
            continue;
        char pidfile[PATH_MAX];
        fg_sim_proc_pidfile(p, c, pidfile);
        pid_t pid;
        if (fg_sim_pidfile_alive(pidfile, &pid)) {
            c->pid = pid;
            c->child = false;
            c->starttime = fg_sim_proc_starttime(pid);
        } else {
            c->exited = true;   /* it died while nobody watched */
            c->exit_code = 137;
        }
    }
}

bool fg_sim_pod_resize(struct fg_sim_pod *p, json_object *pod)
{
    struct fg_resources now = { 0 };
    if (!p->admitted || p->released || !p->node || fg_pod_requests(pod, &now, NULL) != FG_OK ||
        fg_resources_add(&now, "pods", 1000) != FG_OK)
        return false;
    static const char *const names[] = { "cpu", "memory" };
    bool changed = false, fits = true;
    for (size_t i = 0; i < 2; i++) {
        int64_t was = fg_resources_get(&p->requests, names[i]), want = fg_resources_get(&now, names[i]);
        changed = changed || want != was;
        fits = fits && (want <= was || fg_resources_get(&p->node->used, names[i]) + want - was <=
                                           fg_resources_get(&p->node->capacity, names[i]));
    }
    p->resize_pending = changed && !fits;
    if (!changed || !fits)
        return false;
    fg_resources_sub(&p->node->used, &p->requests);
    p->requests = now;
    fg_resources_sum(&p->node->used, &p->requests);
    return true;
}
