/*
 * kubelet_containers — a pod's containers on a simulated node, moved forward by each reconcile of
 * the pod (kubelet_pods.c): init containers one after another, then the others; a container of
 * fracgpu's image is a real process (kubelet_proc.c), any other is simulated, running for the pod's
 * sim.fracgpu.io/run-seconds annotation, else — in a pod whose restartPolicy is not Always — the
 * configured jobDuration, else until stopped, and exiting with sim.fracgpu.io/exit-code (default 0).
 * A container that ends is restarted as restartPolicy says, after CrashLoopBackOff (the configured
 * first delay, doubling to 5 minutes; it starts over after 10 minutes of running). Readiness and
 * liveness probes are listed for the reconcile to run without the lock, and their results applied
 * here; simulated containers pass theirs after initialDelaySeconds. The phase follows kube's rules.
 * Everything here runs with the kubelets' mu held (see kubelet.h), except the start of a real
 * process, which releases it while it reads ConfigMaps and Secrets.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "e2e/cluster/kubelet.h"

#define COMPONENT "kubelet"
#define BACKOFF_MAX_NS (300 * FG_NS_PER_S)
#define BACKOFF_RESET_NS (600 * FG_NS_PER_S)   /* twice the longest delay, as the kubelet's */

static int64_t annotation_int(json_object *pod, const char *name, int64_t dflt)
{
    const char *s = fg_json_get_str(pod, "metadata", "annotations", name, NULL);
    char *end = NULL;
    long long v = s ? strtoll(s, &end, 10) : 0;
    return s && *s && !*end ? v : dflt;
}

json_object *fg_sim_container_spec(const struct fg_sim_pod *p, json_object *pod, size_t i)
{
    return i < p->ninit ? json_object_array_get_idx(fg_json_get(pod, "spec", "initContainers", NULL), i)
                        : json_object_array_get_idx(fg_json_get(pod, "spec", "containers", NULL), i - p->ninit);
}

void fg_sim_containers_set_up(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod)
{
    json_object *lists[2] = { fg_json_get(pod, "spec", "initContainers", NULL), fg_json_get(pod, "spec", "containers", NULL) };
    for (int l = 0; l < 2; l++) {
        for (size_t i = 0; i < fg_json_array_len(lists[l]) && p->ncontainers < FG_SIM_MAX_CONTAINERS; i++) {
            json_object *spec = json_object_array_get_idx(lists[l], i);
            struct fg_sim_container *c = &p->containers[p->ncontainers++];
            snprintf(c->name, sizeof c->name, "%s", fg_json_get_str(spec, "name", NULL) ? fg_json_get_str(spec, "name", NULL) : "");
            c->init = l == 0;
            c->real = fg_sim_config_is_fracgpu_image(k->cfg, fg_json_get_str(spec, "image", NULL));
            c->state = CONTAINER_WAITING;
            c->waiting_reason = c->init ? "PodInitializing" : "ContainerCreating";
            c->backoff_ns = k->cfg->kubelet.crash_backoff_ns;
            p->has_real = p->has_real || c->real;
        }
        if (l == 0)
            p->ninit = p->ncontainers;
    }
}

static const char *restart_policy(json_object *pod)
{
    const char *r = fg_json_get_str(pod, "spec", "restartPolicy", NULL);
    return r ? r : "Always";
}

static void start_container(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod, size_t i, uint64_t now)
{
    struct fg_sim_container *c = &p->containers[i];
    json_object *spec = fg_sim_container_spec(p, pod, i);
    c->ready = false;
    c->ready_successes = c->ready_failures = c->live_failures = 0;
    c->exited = false;
    c->run_until_ns = 0;
    if (c->real) {
        char why[FG_ERRMSG_MAX] = "";
        struct fg_sim_node node = *p->node;   /* the ticker may retire the node meanwhile */
        pid_t pid = 0;
        pthread_mutex_unlock(&k->mu);   /* spawning reads ConfigMaps and Secrets from the API */
        enum fg_err err = fg_sim_proc_start(k, p, &node, pod, i, &pid, why);
        pthread_mutex_lock(&k->mu);
        if (!err) {
            c->pid = pid;
            c->child = true;
        }
        if (!err && !p->node)
            fg_sim_proc_signal(c, SIGKILL);   /* its node went while it started: it goes too */
        if (err) {
            c->state = CONTAINER_WAITING;
            c->waiting_reason = "CreateContainerError";
            c->restart_at_ns = now + c->backoff_ns;
            fg_log_obj(FG_LOG_WARN, COMPONENT, "Pod", fg_json_get_str(pod, "metadata", "namespace", NULL),
                       fg_json_get_str(pod, "metadata", "name", NULL), "container %s: %s", c->name, why);
            return;
        }
    } else {
        int64_t secs = annotation_int(pod, FG_SIM_ANN_RUN_SECONDS, -1);
        if (secs >= 0)
            c->run_until_ns = now + (uint64_t)secs * FG_NS_PER_S;
        else if (strcmp(restart_policy(pod), "Always") || c->init)
            c->run_until_ns = now + k->cfg->kubelet.job_run_ns;
        c->ready = !fg_json_get(spec, "readinessProbe", NULL);
    }
    c->state = CONTAINER_RUNNING;
    c->started_ms = fg_clock_wall_ms();
    int64_t delay = 0;
    fg_json_get_int64(spec, &delay, "readinessProbe", "initialDelaySeconds", NULL);
    c->next_readiness_ns = now + (uint64_t)delay * FG_NS_PER_S;
    delay = 0;
    fg_json_get_int64(spec, &delay, "livenessProbe", "initialDelaySeconds", NULL);
    c->next_liveness_ns = now + (uint64_t)delay * FG_NS_PER_S;
}

/* Records that c ended with exit_code; schedules its restart when the policy wants one: an init
 * container runs again only after a failure (unless restartPolicy is Never), any other as
 * restartPolicy says. */
static void container_ended(struct fg_sim_kubelets *k, json_object *pod, struct fg_sim_container *c, int exit_code,
                            uint64_t now)
{
    c->state = CONTAINER_TERMINATED;
    c->exit_code = exit_code;
    c->finished_ms = fg_clock_wall_ms();
    c->terminated_reason = exit_code ? "Error" : "Completed";
    if (exit_code && fg_str_eq(fg_json_get_str(pod, "metadata", "annotations", FG_SIM_ANN_EXIT_REASON, NULL), "OOMKilled"))
        c->terminated_reason = "OOMKilled";
    c->ready = false;
    c->pid = 0;
    const char *policy = restart_policy(pod);
    bool restart = c->init ? exit_code != 0 && strcmp(policy, "Never")
                           : !strcmp(policy, "Always") || (!strcmp(policy, "OnFailure") && exit_code != 0);
    if (!restart)
        return;
    c->had_last = true;
    c->last_exit_code = exit_code;
    c->last_started_ms = c->started_ms;
    c->last_finished_ms = c->finished_ms;
    c->last_reason = c->terminated_reason;
    c->restarts++;
    c->state = CONTAINER_WAITING;
    c->waiting_reason = "CrashLoopBackOff";
    if ((uint64_t)(c->finished_ms - c->started_ms) * FG_NS_PER_MS > BACKOFF_RESET_NS)
        c->backoff_ns = k->cfg->kubelet.crash_backoff_ns;   /* it ran long enough: the backoff starts over */
    c->restart_at_ns = now + c->backoff_ns;
    c->backoff_ns = c->backoff_ns * 2 < BACKOFF_MAX_NS ? c->backoff_ns * 2 : BACKOFF_MAX_NS;
}

void fg_sim_note_next(uint64_t *next, uint64_t at)
{
    if (at && (!*next || at < *next))
        *next = at;
}


/* Moves container i forward at now: started when it waits and its backoff is over, ended when its
 * process exited or its simulated run is over. */
static void step_container(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod, size_t i, uint64_t now,
                           uint64_t *next)
{
    struct fg_sim_container *c = &p->containers[i];
    if (c->state == CONTAINER_WAITING && now >= c->restart_at_ns)
        start_container(k, p, pod, i, now);
    if (c->state == CONTAINER_RUNNING && c->real && c->exited)
        container_ended(k, pod, c, c->exit_code, now);
    else if (c->state == CONTAINER_RUNNING && !c->real && c->run_until_ns && now >= c->run_until_ns)
        container_ended(k, pod, c, (int)annotation_int(pod, FG_SIM_ANN_EXIT_CODE, 0), now);
    fg_sim_note_next(next, c->state == CONTAINER_WAITING ? c->restart_at_ns
                    : c->state == CONTAINER_RUNNING ? c->run_until_ns
                                                    : 0);
}

static bool succeeded(const struct fg_sim_container *c)
{
    return c->state == CONTAINER_TERMINATED && c->exit_code == 0;
}

/* See kubelet.h. */
void fg_sim_containers_advance(struct fg_sim_kubelets *k, struct fg_sim_pod *p, json_object *pod, uint64_t now, uint64_t *next,
                    struct fg_sim_probe_job *jobs, size_t *njobs)
{
    if (now < p->start_at_ns) {
        fg_sim_note_next(next, p->start_at_ns);
        return;
    }
    p->started = true;
    for (size_t i = 0; i < p->ninit; i++) {
        if (!succeeded(&p->containers[i]))
            step_container(k, p, pod, i, now, next);
        if (!succeeded(&p->containers[i]))
            return;   /* the next one waits for this one */
    }
    for (size_t i = p->ninit; i < p->ncontainers; i++) {
        struct fg_sim_container *c = &p->containers[i];
        step_container(k, p, pod, i, now, next);
        if (c->state != CONTAINER_RUNNING)
            continue;
        json_object *spec = fg_sim_container_spec(p, pod, i);
        json_object *rp = fg_json_get(spec, "readinessProbe", NULL), *lp = fg_json_get(spec, "livenessProbe", NULL);
        if (!c->real) {   /* a simulated container passes its probes */
            if (rp && now >= c->next_readiness_ns)
                c->ready = true;
            else if (rp)
                fg_sim_note_next(next, c->next_readiness_ns);
            continue;
        }
        if (!rp)
            c->ready = true;
        if (rp && now >= c->next_readiness_ns)
            jobs[(*njobs)++] = (struct fg_sim_probe_job){ i, false, rp, spec };
        if (lp && now >= c->next_liveness_ns)
            jobs[(*njobs)++] = (struct fg_sim_probe_job){ i, true, lp, spec };
        fg_sim_note_next(next, rp ? c->next_readiness_ns : 0);
        fg_sim_note_next(next, lp ? c->next_liveness_ns : 0);
    }
}

static int64_t probe_field(json_object *probe, const char *field, int64_t dflt)
{
    int64_t v = dflt;
    fg_json_get_int64(probe, &v, field, NULL);
    return v > 0 ? v : dflt;
}

/* Applies a probe's outcome to container i. mu held. */
void fg_sim_containers_probed(struct fg_sim_pod *p, json_object *pod, const struct fg_sim_probe_job *j,
                   bool ok, uint64_t now)
{
    struct fg_sim_container *c = &p->containers[j->container];
    if (c->state != CONTAINER_RUNNING)
        return;
    uint64_t period = (uint64_t)probe_field(j->probe, "periodSeconds", 10) * FG_NS_PER_S;
    if (!j->liveness) {
        c->next_readiness_ns = now + period;
        if (ok) {
            c->ready_failures = 0;
            c->ready = c->ready || ++c->ready_successes >= (unsigned)probe_field(j->probe, "successThreshold", 1);
        } else {
            c->ready_successes = 0;
            c->ready = c->ready && ++c->ready_failures < (unsigned)probe_field(j->probe, "failureThreshold", 3);
        }
        return;
    }
    c->next_liveness_ns = now + period;
    c->live_failures = ok ? 0 : c->live_failures + 1;
    if (c->live_failures >= (unsigned)probe_field(j->probe, "failureThreshold", 3)) {
        fg_log_obj(FG_LOG_INFO, COMPONENT, "Pod", fg_json_get_str(pod, "metadata", "namespace", NULL),
                   fg_json_get_str(pod, "metadata", "name", NULL), "container %s failed liveness probe, will be restarted",
                   c->name);
        fg_sim_proc_signal(c, SIGKILL);
        c->live_failures = 0;
    }
}

/* See kubelet.h. */
const char *fg_sim_pod_phase(const struct fg_sim_pod *p, json_object *pod, bool *initialized, bool *ready)
{
    *initialized = true;
    for (size_t i = 0; i < p->ninit; i++)
        *initialized = *initialized && p->containers[i].state == CONTAINER_TERMINATED && !p->containers[i].exit_code;
    bool all_ready = p->ncontainers > p->ninit, any_running = false, all_done = p->ncontainers > p->ninit, failed = false;
    for (size_t i = p->ninit; i < p->ncontainers; i++) {
        const struct fg_sim_container *c = &p->containers[i];
        all_ready = all_ready && c->state == CONTAINER_RUNNING && c->ready;
        any_running = any_running || c->state == CONTAINER_RUNNING || (c->state == CONTAINER_WAITING && c->restarts);
        all_done = all_done && c->state == CONTAINER_TERMINATED;
        failed = failed || (c->state == CONTAINER_TERMINATED && c->exit_code);
    }
    for (size_t i = 0; i < p->ninit; i++)   /* an init container that failed for good fails the pod */
        if (p->containers[i].state == CONTAINER_TERMINATED && p->containers[i].exit_code)
            return *ready = false, "Failed";
    *ready = *initialized && all_ready;
    (void)pod;
    if (*initialized && all_done)
        return failed ? "Failed" : "Succeeded";
    return *initialized && any_running ? "Running" : "Pending";
}
