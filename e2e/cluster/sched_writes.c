/* sched_writes — the default scheduler's API writes on worker threads; see sched_writes.h. */
#include "e2e/cluster/sched_writes.h"

#include <pthread.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "e2e/cluster/objects.h"
#include "operator/kube/event.h"
#include "operator/kube/resource.h"

#define COMPONENT "default-scheduler"
#define MAX_WORKERS 32

enum job_kind { JOB_BIND, JOB_UNSCHEDULABLE, JOB_FAILED_EVENT, JOB_PREEMPT };

struct job {
    struct job *next;
    enum job_kind kind;
    char *key, *ns, *name, *uid, *rv;
    char *node;                     /* bind target; preemption's node; the nomination to write */
    char *message;
    char *preemptor_uid;
    bool condition, event, nominate;
    int64_t transition_ms;
};

struct worker {
    struct fg_sim_sched_writer *w;
    pthread_t thread;
    struct job *head, *tail;
};

struct fg_sim_sched_writer {
    struct fg_kube_client *client;
    fg_sim_sched_bind_failed_fn *bind_failed;
    void *ud;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool stop, running;
    unsigned nworkers;
    struct worker workers[MAX_WORKERS];
};

static void job_free(struct job *j)
{
    free(j->key);
    free(j->ns);
    free(j->name);
    free(j->uid);
    free(j->rv);
    free(j->node);
    free(j->message);
    free(j->preemptor_uid);
    free(j);
}

static char *dup_or_null(const char *s)
{
    return s ? fg_strdup(s) : NULL;
}

static struct job *job_new(enum job_kind kind, const struct fg_sim_sched_pod *pod)
{
    struct job *j = fg_calloc(1, sizeof *j);
    j->kind = kind;
    j->key = fg_strdup(pod->key);
    j->ns = fg_strdup(pod->ns);
    j->name = fg_strdup(pod->name);
    j->uid = dup_or_null(pod->uid);
    j->rv = dup_or_null(fg_json_get_str(pod->obj, "metadata", "resourceVersion", NULL));
    return j;
}

static void submit(struct fg_sim_sched_writer *w, struct job *j)
{
    uint64_t h = 14695981039346656037ull;
    for (const char *s = j->key; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    struct worker *wk = &w->workers[h % w->nworkers];
    pthread_mutex_lock(&w->mu);
    if (wk->tail)
        wk->tail->next = j;
    else
        wk->head = j;
    wk->tail = j;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
}

/* ---- the writes ---- */

/* {apiVersion: v1, kind, metadata} naming the job's pod: the Event's involved object (with the
 * pod's resourceVersion) or a Binding (without, as kube's binder sends it). */
static json_object *about(const struct job *j, const char *kind, bool with_rv)
{
    json_object *o = json_object_new_object();
    fg_json_set_str(o, "apiVersion", "v1");
    fg_json_set_str(o, "kind", kind);
    json_object *meta = fg_json_ensure_obj(o, "metadata");
    fg_json_set_str(meta, "namespace", j->ns);
    fg_json_set_str(meta, "name", j->name);
    if (j->uid)
        fg_json_set_str(meta, "uid", j->uid);
    if (with_rv && j->rv)
        fg_json_set_str(meta, "resourceVersion", j->rv);
    return o;
}

static void event(struct fg_sim_sched_writer *w, const struct job *j, const char *type, const char *reason,
                  const char *message)
{
    json_object *obj = about(j, "Pod", true);
    struct fg_kube_event ev = { type, reason, message, COMPONENT, NULL };
    enum fg_err err = fg_kube_event_emit(w->client, obj, &ev);
    if (err)
        fg_log_obj(FG_LOG_DEBUG, COMPONENT, "Pod", j->ns, j->name, "event %s not written: %s", reason, fg_err_str(err));
    json_object_put(obj);
}

static enum fg_err patch_status(struct fg_sim_sched_writer *w, const struct job *j, json_object *status,
                                struct fg_kube_status *st)
{
    json_object *patch = json_object_new_object();
    json_object_object_add(patch, "status", status);
    char *path = fg_kube_path(&fg_kube_pods, j->ns, j->name, "status", NULL);
    enum fg_err err = fg_kube_patch(w->client, path, FG_KUBE_PATCH_STRATEGIC,
                                    json_object_to_json_string_ext(patch, JSON_C_TO_STRING_PLAIN), NULL, st);
    free(path);
    json_object_put(patch);
    return err;
}

static json_object *condition(const char *type, const char *status, const char *reason, const char *message,
                              int64_t transition_ms)
{
    char when[FG_TIME_MAX];
    fg_time_format(transition_ms, when);
    json_object *c = fg_sim_condition_new(NULL, type, status, reason, message, when);
    json_object_object_add(c, "lastProbeTime", NULL);
    return c;
}

static json_object *conditions(json_object *c)
{
    json_object *a = json_object_new_array();
    json_object_array_add(a, c);
    return a;
}

static void log_failure(const struct job *j, const char *what, enum fg_err err, const struct fg_kube_status *st)
{
    fg_log_obj(FG_LOG_WARN, COMPONENT, "Pod", j->ns, j->name, "%s failed: %s", what,
               st->message ? st->message : fg_err_str(err));
}

static void do_bind(struct fg_sim_sched_writer *w, const struct job *j)
{
    json_object *b = about(j, "Binding", false);
    json_object *target = fg_json_ensure_obj(b, "target");
    fg_json_set_str(target, "apiVersion", "v1");
    fg_json_set_str(target, "kind", "Node");
    fg_json_set_str(target, "name", j->node);
    char *path = fg_kube_path(&fg_kube_pods, j->ns, j->name, "binding", NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_create(w->client, path, b, NULL, &st);
    free(path);
    json_object_put(b);
    if (err) {
        log_failure(j, "binding", err, &st);
        w->bind_failed(w->ud, j->key, j->uid, st.message ? st.message : fg_err_str(err));
    } else {
        fg_log_obj(FG_LOG_DEBUG, COMPONENT, "Pod", j->ns, j->name, "bound to %s", j->node);
        char *msg = fg_asprintf("Successfully assigned %s/%s to %s", j->ns, j->name, j->node);
        event(w, j, "Normal", "Scheduled", msg);
        free(msg);
    }
    fg_kube_status_cleanup(&st);
}

static void do_unschedulable(struct fg_sim_sched_writer *w, const struct job *j)
{
    if (j->condition || j->nominate) {
        json_object *status = json_object_new_object();
        if (j->condition)
            json_object_object_add(status, "conditions",
                                   conditions(condition("PodScheduled", "False", "Unschedulable", j->message,
                                                        j->transition_ms)));
        if (j->nominate)
            json_object_object_add(status, "nominatedNodeName", *j->node ? json_object_new_string(j->node) : NULL);
        struct fg_kube_status st = { 0 };
        enum fg_err err = patch_status(w, j, status, &st);
        if (err && err != FG_E_KUBE_NOT_FOUND)
            log_failure(j, "the status update", err, &st);
        fg_kube_status_cleanup(&st);
    }
    if (j->event)
        event(w, j, "Warning", "FailedScheduling", j->message);
}

static void do_preempt(struct fg_sim_sched_writer *w, const struct job *j)
{
    struct fg_kube_status st = { 0 };
    json_object *status = json_object_new_object();
    json_object_object_add(status, "conditions",
                           conditions(condition("DisruptionTarget", "True", "PreemptionByScheduler",
                                                COMPONENT ": preempting to accommodate a higher priority pod",
                                                fg_clock_wall_ms())));
    enum fg_err err = patch_status(w, j, status, &st);
    fg_kube_status_cleanup(&st);
    if (!err) {
        json_object *opts = json_object_new_object();
        fg_json_set_str(opts, "apiVersion", "v1");
        fg_json_set_str(opts, "kind", "DeleteOptions");
        if (j->uid)
            fg_json_set_str(fg_json_ensure_obj(opts, "preconditions"), "uid", j->uid);
        char *path = fg_kube_path(&fg_kube_pods, j->ns, j->name, NULL, NULL);
        err = fg_kube_delete(w->client, path, opts, NULL, &st);
        free(path);
        json_object_put(opts);
    }
    if (err == FG_E_KUBE_NOT_FOUND || err == FG_E_KUBE_CONFLICT)
        err = FG_OK;   /* gone already */
    if (err) {
        log_failure(j, "preemption", err, &st);
    } else {
        char *msg = fg_asprintf("Preempted by pod %s on node %s", j->preemptor_uid ? j->preemptor_uid : "", j->node);
        event(w, j, "Normal", "Preempted", msg);
        free(msg);
    }
    fg_kube_status_cleanup(&st);
}

static void run(struct fg_sim_sched_writer *w, const struct job *j)
{
    switch (j->kind) {
    case JOB_BIND: do_bind(w, j); break;
    case JOB_UNSCHEDULABLE: do_unschedulable(w, j); break;
    case JOB_FAILED_EVENT: event(w, j, "Warning", "FailedScheduling", j->message); break;
    case JOB_PREEMPT: do_preempt(w, j); break;
    }
}

static void *worker_main(void *ud)
{
    struct worker *wk = ud;
    struct fg_sim_sched_writer *w = wk->w;
    pthread_setname_np(pthread_self(), "fg-sched-write");
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        struct job *j = wk->head;
        if (!j) {
            pthread_cond_wait(&w->cond, &w->mu);
            continue;
        }
        wk->head = j->next;
        if (!wk->head)
            wk->tail = NULL;
        pthread_mutex_unlock(&w->mu);
        run(w, j);
        job_free(j);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* ---- life ---- */

struct fg_sim_sched_writer *fg_sim_sched_writer_new(struct fg_kube_client *client, unsigned workers,
                                                    fg_sim_sched_bind_failed_fn *bind_failed, void *ud)
{
    struct fg_sim_sched_writer *w = fg_calloc(1, sizeof *w);
    w->client = client;
    w->bind_failed = bind_failed;
    w->ud = ud;
    w->nworkers = workers < 1 ? 1 : workers > MAX_WORKERS ? MAX_WORKERS : workers;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cond, NULL);
    for (unsigned i = 0; i < w->nworkers; i++)
        w->workers[i].w = w;
    return w;
}

enum fg_err fg_sim_sched_writer_start(struct fg_sim_sched_writer *w, char *errmsg)
{
    w->stop = false;
    for (unsigned i = 0; i < w->nworkers; i++) {
        if (pthread_create(&w->workers[i].thread, NULL, worker_main, &w->workers[i])) {
            w->nworkers = i;
            fg_sim_sched_writer_stop(w);
            return fg_errmsg(errmsg, FG_E_INTERNAL, "cannot start the scheduler's writers");
        }
    }
    w->running = true;
    return FG_OK;
}

void fg_sim_sched_writer_stop(struct fg_sim_sched_writer *w)
{
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
    for (unsigned i = 0; i < w->nworkers && w->running; i++)
        pthread_join(w->workers[i].thread, NULL);
    w->running = false;
    for (unsigned i = 0; i < w->nworkers; i++) {
        struct job *j;
        while ((j = w->workers[i].head)) {
            w->workers[i].head = j->next;
            if (j->kind == JOB_BIND)
                w->bind_failed(w->ud, j->key, j->uid, "the scheduler stopped");
            job_free(j);
        }
        w->workers[i].tail = NULL;
    }
}

void fg_sim_sched_writer_free(struct fg_sim_sched_writer *w)
{
    if (!w)
        return;
    fg_sim_sched_writer_stop(w);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cond);
    free(w);
}

/* ---- what callers ask for ---- */

void fg_sim_sched_write_bind(struct fg_sim_sched_writer *w, const struct fg_sim_sched_pod *pod, const char *node)
{
    struct job *j = job_new(JOB_BIND, pod);
    j->node = fg_strdup(node);
    submit(w, j);
}

void fg_sim_sched_write_unschedulable(struct fg_sim_sched_writer *w, const struct fg_sim_sched_pod *pod,
                                      const struct fg_sim_sched_unschedulable *u)
{
    if (!u->condition && !u->event && !u->nomination)
        return;
    struct job *j = job_new(JOB_UNSCHEDULABLE, pod);
    j->message = fg_strdup(u->message);
    j->condition = u->condition;
    j->transition_ms = u->transition_ms;
    j->event = u->event;
    j->nominate = u->nomination != NULL;
    j->node = fg_strdup(u->nomination ? u->nomination : "");
    submit(w, j);
}

void fg_sim_sched_write_failed_event(struct fg_sim_sched_writer *w, const struct fg_sim_sched_pod *pod,
                                     const char *message)
{
    struct job *j = job_new(JOB_FAILED_EVENT, pod);
    j->message = fg_strdup(message);
    submit(w, j);
}

void fg_sim_sched_write_preempt(struct fg_sim_sched_writer *w, const struct fg_sim_sched_pod *victim,
                                const struct fg_sim_sched_pod *preemptor, const char *node)
{
    struct job *j = job_new(JOB_PREEMPT, victim);
    j->node = fg_strdup(node);
    j->preemptor_uid = dup_or_null(preemptor->uid);
    submit(w, j);
}

void fg_sim_sched_write_clear_nomination(struct fg_sim_sched_writer *w, const struct fg_sim_sched_pod *pod)
{
    struct job *j = job_new(JOB_UNSCHEDULABLE, pod);
    j->nominate = true;
    j->node = fg_strdup("");
    submit(w, j);
}
