/*
 * sched_pod — a pod as the default scheduler reads it, decoded once when its JSON arrives: its key,
 * priority, times, what it requests (fg_pod_requests, and the non-zero variant scoring uses), host
 * ports, inter-pod affinity terms, and the flags the queue and the filters test (gated,
 * terminating, finished, preemptionPolicy Never, terminating because this scheduler preempted it).
 * The JSON stays, for what the filters read from it (labels, affinity, tolerations). See sched.h
 * for ownership.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "e2e/cluster/sched.h"

static int64_t parse_time(json_object *o)
{
    int64_t ms = 0;
    return o && fg_time_parse(json_object_get_string(o), &ms) ? ms : 0;
}

static void read_ports(struct fg_sim_sched_pod *p)
{
    json_object *containers = fg_json_get(p->obj, "spec", "containers", NULL);
    for (size_t i = 0; i < fg_json_array_len(containers); i++) {
        json_object *ports = fg_json_get(json_object_array_get_idx(containers, i), "ports", NULL);
        for (size_t j = 0; j < fg_json_array_len(ports); j++) {
            json_object *port = json_object_array_get_idx(ports, j);
            int64_t host_port = 0;
            if (!fg_json_get_int64(port, &host_port, "hostPort", NULL) || host_port <= 0)
                continue;
            p->ports = fg_realloc(p->ports, (p->nports + 1) * sizeof *p->ports);
            struct fg_sim_sched_port *hp = &p->ports[p->nports++];
            const char *proto = fg_json_get_str(port, "protocol", NULL);
            const char *ip = fg_json_get_str(port, "hostIP", NULL);
            snprintf(hp->protocol, sizeof hp->protocol, "%s", proto && *proto ? proto : "TCP");
            snprintf(hp->ip, sizeof hp->ip, "%s", ip && *ip ? ip : "0.0.0.0");
            hp->port = host_port;
        }
    }
}

static bool preempted_by_scheduler(json_object *pod)
{
    json_object *conds = fg_json_get(pod, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        if (fg_str_eq(fg_json_get_str(c, "type", NULL), "DisruptionTarget") &&
            fg_str_eq(fg_json_get_str(c, "reason", NULL), "PreemptionByScheduler"))
            return true;
    }
    return false;
}

static enum fg_err decode_pod(struct fg_sim_sched_pod *p, char *errmsg)
{
    json_object *o = p->obj;
    p->ns = fg_json_get_str(o, "metadata", "namespace", NULL);
    p->name = fg_json_get_str(o, "metadata", "name", NULL);
    if (!p->name)
        return fg_errmsg(errmsg, FG_E_PARSE, "a pod without metadata.name");
    if (!p->ns)
        p->ns = "";
    p->key = fg_asprintf("%s/%s", p->ns, p->name);
    p->uid = fg_json_get_str(o, "metadata", "uid", NULL);
    p->scheduler_name = fg_json_get_str(o, "spec", "schedulerName", NULL);
    p->node_name = fg_json_get_str(o, "spec", "nodeName", NULL);
    p->nominated = fg_json_get_str(o, "status", "nominatedNodeName", NULL);
    if (p->nominated && !*p->nominated)
        p->nominated = NULL;
    fg_json_get_int64(o, &p->priority, "spec", "priority", NULL);
    p->created_ms = parse_time(fg_json_get(o, "metadata", "creationTimestamp", NULL));
    p->started_ms = parse_time(fg_json_get(o, "status", "startTime", NULL));
    const char *phase = fg_json_get_str(o, "status", "phase", NULL);
    p->finished = fg_str_eq(phase, "Succeeded") || fg_str_eq(phase, "Failed");
    p->terminating = fg_json_get(o, "metadata", "deletionTimestamp", NULL) != NULL;
    p->terminating_by_preemption = p->terminating && preempted_by_scheduler(o);
    p->gated = fg_json_array_len(fg_json_get(o, "spec", "schedulingGates", NULL)) > 0;
    p->preempt_never = fg_str_eq(fg_json_get_str(o, "spec", "preemptionPolicy", NULL), "Never");
    struct fg_resources nonzero;
    char why[FG_ERRMSG_MAX];
    if (fg_pod_requests(o, &p->requests, why) || fg_pod_requests_nonzero(o, &nonzero, why))
        return fg_errmsg(errmsg, FG_E_PARSE, "pod %s: %s", p->key, why);
    p->cpu = fg_resources_get(&p->requests, "cpu");
    p->memory = fg_sim_sched_bytes(fg_resources_get(&p->requests, "memory"));
    p->storage = fg_resources_get(&p->requests, "ephemeral-storage");
    for (size_t i = 0; i < p->requests.n; i++)
        if (p->requests.v[i].milli > 0 && strcmp(p->requests.v[i].name, "cpu") &&
            strcmp(p->requests.v[i].name, "memory") && strcmp(p->requests.v[i].name, "ephemeral-storage") &&
            strcmp(p->requests.v[i].name, "pods"))
            p->extended = true;
    p->tolerations = fg_json_get(o, "spec", "tolerations", NULL);
    json_object *selector = fg_json_get(o, "spec", "nodeSelector", NULL);
    p->node_constraints = (json_object_is_type(selector, json_type_object) && json_object_object_length(selector)) ||
                          fg_json_get(o, "spec", "affinity", "nodeAffinity",
                                      "requiredDuringSchedulingIgnoredDuringExecution", NULL);
    p->nonzero_cpu = fg_resources_get(&nonzero, "cpu");
    p->nonzero_memory = fg_sim_sched_bytes(fg_resources_get(&nonzero, "memory"));
    read_ports(p);
    return fg_sim_sched_terms_parse(p, errmsg);
}

enum fg_err fg_sim_sched_pod_new(json_object *obj, struct fg_sim_sched_pod **out, char *errmsg)
{
    struct fg_sim_sched_pod *p = fg_calloc(1, sizeof *p);
    p->refs = 1;
    p->obj = obj;
    enum fg_err err = decode_pod(p, errmsg);
    if (err) {
        fg_sim_sched_pod_unref(p);
        return err;
    }
    *out = p;
    return FG_OK;
}

struct fg_sim_sched_pod *fg_sim_sched_pod_ref(struct fg_sim_sched_pod *p)
{
    p->refs++;
    return p;
}

void fg_sim_sched_pod_unref(struct fg_sim_sched_pod *p)
{
    if (!p || --p->refs > 0)
        return;
    fg_sim_sched_terms_cleanup(p);
    free(p->ports);
    free(p->key);
    json_object_put(p->obj);
    free(p);
}

uint64_t fg_sim_sched_pod_spec_hash(struct fg_sim_sched_pod *p)
{
    if (!p->spec_hash)
        p->spec_hash = fg_sim_sched_hash_json(fg_sim_sched_hash_json(FG_SIM_SCHED_HASH_SEED, fg_json_get(p->obj, "spec", NULL)),
                                fg_json_get(p->obj, "metadata", "labels", NULL)) | 1;
    return p->spec_hash;
}

bool fg_sim_sched_pod_wanted(const struct fg_sim_sched_pod *p)
{
    bool ours = !p->scheduler_name || !*p->scheduler_name || !strcmp(p->scheduler_name, FG_SIM_SCHED_NAME);
    return ours && (!p->node_name || !*p->node_name) && !p->terminating && !p->finished && !p->gated;
}

bool fg_sim_sched_pod_has_affinity(const struct fg_sim_sched_pod *p)
{
    return p->affinity.n || p->anti_affinity.n || p->preferred_affinity.n || p->preferred_anti_affinity.n;
}
