/*
 * job — the Job controller: pods from the template until enough succeed, or too many fail.
 *
 * It runs min(parallelism, completions − succeeded) pods at once (parallelism alone, when
 * completions is unset: then the first success starts no more pods, and the job completes once
 * the others have ended).
 * Succeeded and failed pods are counted from the pods themselves. More than backoffLimit failures
 * (default 6), or running longer than activeDeadlineSeconds, fails the job (reason
 * BackoffLimitExceeded or DeadlineExceeded) and deletes what still runs; after a failure the next
 * pod waits kube's backoff, 10 s doubling per failure up to 6 minutes. Success writes the conditions
 * SuccessCriteriaMet and Complete and completionTime, as kube ≥ 1.31 does (`kubectl wait
 * --for=condition=complete` reads the latter). suspend: true deletes the active pods, starts none,
 * clears startTime (the deadline counts again from the resume) and says so in the condition
 * Suspended (JobSuspended, then JobResumed), with an Event.
 * ttlSecondsAfterFinished deletes a finished job (and, through the garbage collector, its pods)
 * that long after it finished. Status also carries active, ready and startTime. Indexed
 * completion mode and pod failure policies are not simulated.
 */
#include <stdlib.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "e2e/cluster/cm.h"

#define COMPONENT "job-controller"
#define BACKOFF_BASE_MS 10000
#define BACKOFF_MAX_MS 360000

static bool condition_true(json_object *job, const char *type)
{
    return fg_str_eq(fg_json_get_str(fg_sim_condition(job, type), "status", NULL), "True");
}

static json_object *condition(json_object *job, const char *type, bool ok, const char *reason, const char *message,
                              const char *now)
{
    json_object *c = fg_sim_condition_new(job, type, ok ? "True" : "False", reason, message, now);
    fg_json_set_str(c, "lastProbeTime", now);
    return c;
}

/* When the pod finished: its containers' latest finishedAt (0 when unknown). */
static int64_t finished_ms(json_object *pod)
{
    int64_t latest = 0, t;
    json_object *statuses = fg_json_get(pod, "status", "containerStatuses", NULL);
    for (size_t i = 0; i < fg_json_array_len(statuses); i++)
        if (fg_time_parse(fg_json_get_str(json_object_array_get_idx(statuses, i), "state", "terminated", "finishedAt",
                                          NULL),
                          &t) &&
            t > latest)
            latest = t;
    return latest;
}

static enum fg_err delete_active(struct fg_sim_pod_owner *jc, json_object *job, const char *key, json_object **active,
                                 size_t n)
{
    enum fg_err err = FG_OK;
    for (size_t i = 0; i < n && !err; i++)
        err = fg_sim_cm_delete_pod(jc->cm, COMPONENT, job, active[i], "Background", jc->assumed, key);
    return err;
}

static struct fg_reconcile_result finished(struct fg_sim_pod_owner *jc, json_object *job)
{
    int64_t ttl = -1, done_ms = 0;
    if (!fg_json_get_int64(job, &ttl, "spec", "ttlSecondsAfterFinished", NULL) || ttl < 0)
        return fg_reconcile_ok();
    const char *type = condition_true(job, "Complete") ? "Complete" : "Failed";
    if (!fg_time_parse(fg_json_get_str(fg_sim_condition(job, type), "lastTransitionTime", NULL), &done_ms))
        return fg_reconcile_ok();
    int64_t left = done_ms + ttl * 1000 - fg_clock_wall_ms();
    if (left > 0)
        return fg_reconcile_requeue_after((uint64_t)left * FG_NS_PER_MS);
    return fg_reconcile_error(fg_sim_delete(jc->cm->client, &fg_kube_jobs, job, "Background"));
}

static struct fg_reconcile_result reconcile(void *ud, const char *key)
{
    struct fg_sim_pod_owner *jc = ud;
    json_object *job = fg_sim_cm_get(&jc->cm->jobs, key);
    if (!job || fg_sim_pod_terminating(job)) {
        json_object_put(job);
        return fg_reconcile_ok();
    }
    if (condition_true(job, "Complete") || condition_true(job, "Failed")) {
        struct fg_reconcile_result r = finished(jc, job);
        json_object_put(job);
        return r;
    }
    json_object *pods = fg_sim_cm_by_owner(&jc->cm->pods, FG_SIM_INDEX_CONTROLLER, fg_json_get_str(job, "metadata", "uid", NULL));
    fg_sim_assumed_settle(jc->assumed, key, pods);
    size_t npods = json_object_array_length(pods), nactive = 0;
    json_object **active = fg_calloc(npods ? npods : 1, sizeof *active);
    int64_t succeeded = 0, failed = 0, ready = 0, last_failure = 0, now = fg_clock_wall_ms();
    for (size_t i = 0; i < npods; i++) {
        json_object *p = json_object_array_get_idx(pods, i);
        const char *phase = fg_json_get_str(p, "status", "phase", NULL);
        if (fg_str_eq(phase, "Succeeded")) {
            succeeded++;
        } else if (fg_str_eq(phase, "Failed")) {
            failed++;
            int64_t t = finished_ms(p);
            last_failure = t > last_failure ? t : last_failure;
        } else if (!fg_sim_pod_terminating(p) &&
                   !fg_sim_assumed_deleted(jc->assumed, key, fg_json_get_str(p, "metadata", "uid", NULL))) {
            active[nactive++] = p;
            ready += fg_sim_pod_ready(p);
        }
    }
    int64_t parallelism = 1, completions = -1, backoff_limit = 6, deadline = -1, start_ms = 0;
    fg_json_get_int64(job, &parallelism, "spec", "parallelism", NULL);
    fg_json_get_int64(job, &completions, "spec", "completions", NULL);
    fg_json_get_int64(job, &backoff_limit, "spec", "backoffLimit", NULL);
    fg_json_get_int64(job, &deadline, "spec", "activeDeadlineSeconds", NULL);
    bool suspended = json_object_get_boolean(fg_json_get(job, "spec", "suspend", NULL));
    int64_t pending = (int64_t)fg_sim_assumed_pending_creates(jc->assumed, key);
    int64_t running = (int64_t)nactive + pending;

    char now_s[FG_TIME_MAX];
    fg_time_format(now, now_s);
    const char *start = fg_json_get_str(job, "status", "startTime", NULL);
    if (suspended || !start || !fg_time_parse(start, &start_ms))
        start_ms = now;   /* suspended, the deadline waits; resumed, it counts from now */
    json_object *status = json_object_new_object();
    json_object *conds = json_object_new_array();
    json_object *had = fg_json_get(job, "status", "conditions", NULL);
    for (size_t i = 0; i < fg_json_array_len(had); i++)
        json_object_array_add(conds, json_object_get(json_object_array_get_idx(had, i)));
    bool conds_changed = false;
    enum fg_err err = FG_OK;
    uint64_t requeue_ns = 0;
    const char *fail_reason = NULL, *fail_message = NULL;
    if (failed > backoff_limit)
        fail_reason = "BackoffLimitExceeded", fail_message = "Job has reached the specified backoff limit";
    else if (deadline >= 0 && !suspended && now - start_ms >= deadline * 1000)
        fail_reason = "DeadlineExceeded", fail_message = "Job was active longer than specified deadline";
    bool complete = completions >= 0 ? succeeded >= completions : succeeded > 0 && running == 0;
    if (suspended != condition_true(job, "Suspended") && !fail_reason && !complete) {
        fg_sim_condition_put(conds, condition(job, "Suspended", suspended, suspended ? "JobSuspended" : "JobResumed",
                                              suspended ? "Job suspended" : "Job resumed", now_s));
        fg_sim_cm_event(jc->cm, COMPONENT, job, "Normal", suspended ? "Suspended" : "Resumed",
                        suspended ? "Job suspended" : "Job resumed");
        conds_changed = true;
    }

    if (fail_reason) {
        err = delete_active(jc, job, key, active, nactive);
        fg_sim_condition_put(conds, condition(job, "FailureTarget", true, fail_reason, fail_message, now_s));
        fg_sim_condition_put(conds, condition(job, "Failed", true, fail_reason, fail_message, now_s));
        fg_sim_cm_event(jc->cm, COMPONENT, job, "Warning", fail_reason, "%s", fail_message);
        conds_changed = true;
        running = 0;
    } else if (complete) {
        err = delete_active(jc, job, key, active, nactive);
        fg_sim_condition_put(conds, condition(job, "SuccessCriteriaMet", true, "CompletionsReached",
                                              "Reached expected number of succeeded pods", now_s));
        fg_sim_condition_put(conds, condition(job, "Complete", true, "CompletionsReached",
                                              "Reached expected number of succeeded pods", now_s));
        fg_json_set_str(status, "completionTime", now_s);
        fg_sim_cm_event(jc->cm, COMPONENT, job, "Normal", "Completed", "Job completed");
        conds_changed = true;
        running = 0;
    } else {
        /* without completions, the first success starts no more pods and leaves the others running */
        int64_t want = suspended ? 0 : completions >= 0 ? completions - succeeded : succeeded > 0 ? running : parallelism;
        want = want < parallelism ? want : parallelism;
        if (running > want) {
            size_t extra = (size_t)(running - want);
            err = delete_active(jc, job, key, active + (nactive > extra ? nactive - extra : 0),
                                extra < nactive ? extra : nactive);
        } else if (running < want) {
            int64_t backoff = 0;
            if (failed > 0) {
                backoff = BACKOFF_BASE_MS;
                for (int64_t i = 1; i < failed && backoff < BACKOFF_MAX_MS; i++)
                    backoff *= 2;
                backoff = backoff < BACKOFF_MAX_MS ? backoff : BACKOFF_MAX_MS;
            }
            int64_t wait = last_failure + backoff - now;
            if (failed > 0 && wait > 0)
                requeue_ns = (uint64_t)wait * FG_NS_PER_MS;
            else
                err = fg_sim_cm_create_pods(jc, COMPONENT, job, key, want - running);
        }
        if (deadline >= 0 && !suspended && !requeue_ns)
            requeue_ns = (uint64_t)(start_ms + deadline * 1000 - now > 0 ? start_ms + deadline * 1000 - now : 1) *
                         FG_NS_PER_MS;
    }
    if (suspended)
        json_object_object_add(status, "startTime", NULL);   /* kube clears it while suspended */
    else
        fg_json_set_str(status, "startTime", start ? start : now_s);
    json_object_object_add(status, "active", json_object_new_int64(running));
    json_object_object_add(status, "ready", json_object_new_int64(ready));
    json_object_object_add(status, "succeeded", json_object_new_int64(succeeded));
    json_object_object_add(status, "failed", json_object_new_int64(failed));
    if (conds_changed)
        json_object_object_add(status, "conditions", json_object_get(conds));
    json_object_put(conds);
    if (!err && !fg_sim_status_holds(job, status))
        err = fg_sim_patch_status(jc->cm->client, &fg_kube_jobs, job, status);
    json_object_put(status);
    free(active);
    json_object_put(pods);
    json_object_put(job);
    if (err)
        return fg_reconcile_error(err);
    return requeue_ns ? fg_reconcile_requeue_after(requeue_ns) : fg_reconcile_ok();
}

enum fg_err fg_sim_job_setup(struct fg_sim_cm *cm, char *errmsg)
{
    struct fg_manager_controller *c;
    enum fg_err err = fg_sim_cm_pod_owner_controller(cm, "job", reconcile, &cm->jobs, &c, errmsg);
    return err;
}
