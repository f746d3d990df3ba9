/*
 * sched_writes — what the default scheduler writes to the API, made by worker threads so that the
 * scheduling cycle never waits on a round trip (kube binds in a goroutine of its own for the same
 * reason).
 *
 * The writes, each as kube-scheduler makes it:
 *   bind           POST pods/NAME/binding (target: the Node), then the Normal event Scheduled
 *                  "Successfully assigned NS/NAME to NODE";
 *   unschedulable  a strategic merge patch of the pod's status with condition PodScheduled False,
 *                  reason Unschedulable, the FitError message and the lastTransitionTime given, and
 *                  or instead status.nominatedNodeName (set, or cleared with ""); and the Warning
 *                  event FailedScheduling with the message;
 *   preempt        the victim's condition DisruptionTarget (reason PreemptionByScheduler), a graceful
 *                  delete preconditioned on its uid, and the Normal event Preempted "Preempted by pod
 *                  UID on node NODE" (kube names the preemptor by uid);
 *   clear          status.nominatedNodeName removed from a pod whose node another pod took.
 * Events come from reportingComponent default-scheduler. Jobs of one pod go to one worker (by a hash
 * of its key), so they are written in the order they were asked for.
 *
 * A bind that fails (or is dropped because the writer stops) is reported to the bind_failed callback,
 * from a worker thread with no lock held, so the scheduler can forget the pod it assumed. Every other
 * failure is logged and dropped: the next cycle writes again what still holds.
 *
 * Ownership: jobs copy what they need from the pod; the writer owns its threads and queues.
 */
#ifndef FG_SIM_SCHED_WRITES_H
#define FG_SIM_SCHED_WRITES_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "e2e/cluster/sched.h"
#include "operator/kube/client.h"

struct fg_sim_sched_writer;

typedef void fg_sim_sched_bind_failed_fn(void *ud, const char *key, const char *uid, const char *why);

struct fg_sim_sched_writer *fg_sim_sched_writer_new(struct fg_kube_client *client, unsigned workers,
                                                    fg_sim_sched_bind_failed_fn *bind_failed, void *ud);
/* Stops first. NULL is ignored. */
void fg_sim_sched_writer_free(struct fg_sim_sched_writer *w);
enum fg_err fg_sim_sched_writer_start(struct fg_sim_sched_writer *w, char *errmsg) FG_MUST_USE;
/* Ends the workers once their current write returns; jobs not started are dropped (binds reported). */
void fg_sim_sched_writer_stop(struct fg_sim_sched_writer *w);

void fg_sim_sched_write_bind(struct fg_sim_sched_writer *w, const struct fg_sim_sched_pod *pod, const char *node);

/* What to write about a pod that did not fit. */
struct fg_sim_sched_unschedulable {
    const char *message;
    bool condition;                 /* write PodScheduled False with message */
    int64_t transition_ms;          /* its lastTransitionTime */
    bool event;                     /* emit FailedScheduling */
    const char *nomination;         /* NULL: leave status.nominatedNodeName; "": clear it; else set it */
};

void fg_sim_sched_write_unschedulable(struct fg_sim_sched_writer *w, const struct fg_sim_sched_pod *pod,
                                      const struct fg_sim_sched_unschedulable *u);
/* A FailedScheduling event alone (a bind the API refused). */
void fg_sim_sched_write_failed_event(struct fg_sim_sched_writer *w, const struct fg_sim_sched_pod *pod,
                                     const char *message);
void fg_sim_sched_write_preempt(struct fg_sim_sched_writer *w, const struct fg_sim_sched_pod *victim,
                                const struct fg_sim_sched_pod *preemptor, const char *node);
void fg_sim_sched_write_clear_nomination(struct fg_sim_sched_writer *w, const struct fg_sim_sched_pod *pod);

#endif
