/*
 * kubelet_status — the pod status a kubelet reports, built from its state of the pod: phase,
 * conditions, IPs, start time, QoS class and a status per container (state, last state, restarts,
 * ready, started, its ID as the node's runtime writes it — "containerd://<64 hex>", which the
 * container's cgroup path names too — allocatedResourcesStatus, the devices it was given, and the
 * resources it applied: the spec's, an in-place resize included once it fits). The kubelet owns the
 * conditions PodReadyToStartContainers, Initialized, ContainersReady and Ready; every other condition of the pod (PodScheduled, DisruptionTarget, a
 * readiness gate) is carried over as it is. A condition keeps its lastTransitionTime while its
 * status stays the same, so a status that did not change is written the same, and not written.
 */
#include <stdio.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/timefmt.h"
#include "e2e/cluster/kubelet.h"
#include "operator/kube/quantity.h"
#include "e2e/cluster/objects.h"

static const char *const kubelet_conditions[] = { "PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready" };

static bool kubelet_owns(const char *type)
{
    for (size_t i = 0; i < sizeof kubelet_conditions / sizeof kubelet_conditions[0]; i++)
        if (fg_str_eq(type, kubelet_conditions[i]))
            return true;
    return false;
}

static void add_condition(json_object *conds, json_object *pod, const char *type, bool ok, const char *reason,
                          const char *now)
{
    json_object *c = fg_sim_condition_new(pod, type, ok ? "True" : "False", reason, NULL, now);
    json_object_object_add(c, "lastProbeTime", NULL);
    json_object_array_add(conds, c);
}

static json_object *state_json(enum fg_sim_container_state state, const char *reason, int exit_code, int64_t started,
                               int64_t finished, const char *container_id)
{
    json_object *s = json_object_new_object(), *inner = json_object_new_object();
    char t[FG_TIME_MAX];
    switch (state) {
    case CONTAINER_WAITING:
        fg_json_set_str(inner, "reason", reason ? reason : "ContainerCreating");
        json_object_object_add(s, "waiting", inner);
        break;
    case CONTAINER_RUNNING:
        fg_time_format(started, t);
        fg_json_set_str(inner, "startedAt", t);
        json_object_object_add(s, "running", inner);
        break;
    case CONTAINER_TERMINATED:
        json_object_object_add(inner, "exitCode", json_object_new_int(exit_code));
        fg_json_set_str(inner, "reason", reason ? reason : (exit_code ? "Error" : "Completed"));
        fg_time_format(started, t);
        fg_json_set_str(inner, "startedAt", t);
        fg_time_format(finished, t);
        fg_json_set_str(inner, "finishedAt", t);
        fg_json_set_str(inner, "containerID", container_id);
        json_object_object_add(s, "terminated", inner);
        break;
    }
    return s;
}

static json_object *container_status(const struct fg_sim_pod *p, size_t i, json_object *spec)
{
    const struct fg_sim_container *c = &p->containers[i];
    json_object *s = json_object_new_object();
    char hex[FG_SIM_CONTAINER_ID_LEN + 1], id[FG_SIM_CONTAINER_ID_LEN + 32];
    fg_sim_container_id(p->uid, c->name, c->restarts, hex);
    snprintf(id, sizeof id, "%s://%s", fg_sim_runtime_scheme(p->runtime), hex);
    fg_json_set_str(s, "name", c->name);
    const char *image = fg_json_get_str(spec, "image", NULL);
    fg_json_set_str(s, "image", image ? image : "");
    char image_id[320];
    snprintf(image_id, sizeof image_id, "sim://%s", image ? image : "");
    fg_json_set_str(s, "imageID", image_id);
    if (c->state != CONTAINER_WAITING || c->restarts)
        fg_json_set_str(s, "containerID", id);
    json_object_object_add(s, "ready", json_object_new_boolean(c->state == CONTAINER_RUNNING && c->ready));
    json_object_object_add(s, "started", json_object_new_boolean(c->state == CONTAINER_RUNNING));
    json_object_object_add(s, "restartCount", json_object_new_int((int)c->restarts));
    json_object_object_add(s, "state", state_json(c->state, c->state == CONTAINER_TERMINATED ? c->terminated_reason
                                                                                          : c->waiting_reason,
                                                  c->exit_code, c->started_ms, c->finished_ms, id));
    json_object *last = c->had_last ? state_json(CONTAINER_TERMINATED, c->last_reason, c->last_exit_code,
                                                 c->last_started_ms, c->last_finished_ms, id)
                                    : json_object_new_object();
    json_object_object_add(s, "lastState", last);
    json_object *devices = fg_sim_devices_status(p, i);
    if (devices)
        json_object_object_add(s, "allocatedResourcesStatus", devices);
    return s;
}

/* kube's GetPodQOS: only cpu and memory count, in every container, init containers included;
 * Guaranteed when every container limits both and requests what it limits. */
const char *fg_sim_pod_qos(json_object *pod)
{
    bool any = false, guaranteed = true;
    json_object *lists[2] = { fg_json_get(pod, "spec", "initContainers", NULL), fg_json_get(pod, "spec", "containers", NULL) };
    for (int l = 0; l < 2; l++) {
        for (size_t i = 0; i < fg_json_array_len(lists[l]); i++) {
            json_object *res = fg_json_get(json_object_array_get_idx(lists[l], i), "resources", NULL);
            static const char *const names[] = { "cpu", "memory" };
            for (size_t j = 0; j < 2; j++) {
                int64_t req = 0, lim = 0;
                json_object *r = fg_json_get(res, "requests", names[j], NULL), *q = fg_json_get(res, "limits", names[j], NULL);
                bool has_req = r && fg_quantity_json(r, &req, NULL) == FG_OK && req != 0;
                bool has_lim = q && fg_quantity_json(q, &lim, NULL) == FG_OK && lim != 0;
                any = any || has_req || has_lim;
                guaranteed = guaranteed && has_lim && (!has_req || req == lim);
            }
        }
    }
    return !any ? "BestEffort" : guaranteed ? "Guaranteed" : "Burstable";
}

json_object *fg_sim_pod_status(const struct fg_sim_pod *p, json_object *pod, const char *phase, bool initialized,
                               bool ready)
{
    json_object *st = json_object_new_object();
    char now[FG_TIME_MAX], start[FG_TIME_MAX];
    fg_time_format(fg_clock_wall_ms(), now);
    fg_json_set_str(st, "phase", phase);
    json_object *conds = json_object_new_array(), *old = fg_json_get(pod, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(old); i++) {
        json_object *c = json_object_array_get_idx(old, i);
        if (!kubelet_owns(fg_json_get_str(c, "type", NULL)))
            json_object_array_add(conds, json_object_get(c));
    }
    bool finished = fg_str_eq(phase, "Succeeded") || fg_str_eq(phase, "Failed");
    add_condition(conds, pod, "PodReadyToStartContainers", p->started, NULL, now);
    add_condition(conds, pod, "Initialized", initialized, initialized ? NULL : "ContainersNotInitialized", now);
    add_condition(conds, pod, "ContainersReady", ready, finished ? "PodCompleted" : ready ? NULL : "ContainersNotReady", now);
    add_condition(conds, pod, "Ready", ready, finished ? "PodCompleted" : ready ? NULL : "ContainersNotReady", now);
    json_object_object_add(st, "conditions", conds);
    if (p->node) {
        fg_json_set_str(st, "hostIP", p->node->ip);
        json_object *ips = json_object_new_array(), *ip = json_object_new_object();
        fg_json_set_str(ip, "ip", p->node->ip);
        json_object_array_add(ips, ip);
        json_object_object_add(st, "hostIPs", ips);
    }
    if (p->ip[0] && p->started) {
        fg_json_set_str(st, "podIP", p->ip);
        json_object *ips = json_object_new_array(), *ip = json_object_new_object();
        fg_json_set_str(ip, "ip", p->ip);
        json_object_array_add(ips, ip);
        json_object_object_add(st, "podIPs", ips);
    }
    fg_time_format(p->start_ms, start);
    fg_json_set_str(st, "startTime", start);
    fg_json_set_str(st, "qosClass", p->qos ? p->qos : fg_sim_pod_qos(pod));
    json_object *inits = fg_json_get(pod, "spec", "initContainers", NULL), *apps = fg_json_get(pod, "spec", "containers", NULL);
    json_object *init_st = json_object_new_array(), *app_st = json_object_new_array();
    for (size_t i = 0; i < p->ncontainers; i++) {
        const struct fg_sim_container *c = &p->containers[i];
        json_object *spec = c->init ? json_object_array_get_idx(inits, i) : json_object_array_get_idx(apps, i - p->ninit);
        json_object *cs = container_status(p, i, spec);
        json_object *res = fg_json_get(spec, "resources", NULL);
        if (!c->init && res && !p->resize_pending)   /* what the kubelet applied: the spec's, resizes included */
            json_object_object_add(cs, "resources", json_object_get(res));
        json_object_array_add(c->init ? init_st : app_st, cs);
    }
    if (p->ninit)
        json_object_object_add(st, "initContainerStatuses", init_st);
    else
        json_object_put(init_st);
    json_object_object_add(st, "containerStatuses", app_st);
    return st;
}
