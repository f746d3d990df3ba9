/*
 * chaos_watch — what the fault run needs to know of every pod it caused, not only of those it happens
 * to list: the pods of its churn namespace counted as they are created, those that fracgpu's scheduler
 * bound, and what became of each impostor the run planted.
 *
 * Listing once a second misses a pod that lived for less than a second, and the run's figures would
 * then depend on when it looked; so a manager of its own (operator/manager, its own client and loop
 * thread, as e2e/checker has) watches every pod of the cluster through the same faulty API server and
 * notes each UID on the event that shows it. Dropped watches are renewed from their last revision
 * and lose nothing; a 410 relists, and a pod that was created and gone between the watch's end and
 * the relist is not seen, so the counts are lower bounds.
 *
 * Threads: start and free belong to the test's thread; the handlers run on the watch's loop thread,
 * and the queries may be called from any thread between start and free (one lock).
 */
#ifndef FG_E2E_CHAOS_WATCH_H
#define FG_E2E_CHAOS_WATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

struct chaos_watch;

/* Starts watching every pod of the cluster of kubeconfig: ns is the churn namespace, impostor_ns the
 * impostors'. Returns once the first list has been taken in, within timeout_ms; errmsg says why not. */
enum fg_err chaos_watch_start(const char *kubeconfig, const char *ns, const char *impostor_ns, unsigned timeout_ms,
                              struct chaos_watch **out, char *errmsg) FG_MUST_USE;
/* Stops and frees; NULL is ignored. */
void chaos_watch_free(struct chaos_watch *w);

/* Distinct pods of the churn namespace seen so far, and those of them seen bound by fracgpu's
 * scheduler (spec.nodeName and the capacity pod's annotation). */
size_t chaos_watch_created(struct chaos_watch *w);
size_t chaos_watch_bound(struct chaos_watch *w);

/* What was seen of the impostor with this UID: whether it ever was Running, and whether it is gone. */
struct chaos_impostor_seen {
    bool ran, gone;
};
void chaos_watch_impostor(struct chaos_watch *w, const char *uid, struct chaos_impostor_seen *out);

#endif
