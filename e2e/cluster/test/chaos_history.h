/*
 * chaos_history — whether an automated workload's usage history survived what the fault run did.
 *
 * The operator's leader keeps each GPUWorkload's history (its recommender state) in a GPUCheckpoint
 * of the same name, replaced every --checkpoint-interval while samples arrive and read back by the
 * next leader (docs/rightsizing.md). A history that was lost and started afresh shows as a
 * checkpoint whose sample count went down, or whose first sample moved later: both only ever grow
 * and stay put while the history lives. The GPUWorkload's status.usage.samples, written by the same
 * leader, may lag its checkpoint by an interval but never falls below a count the checkpoint already
 * held.
 */
#ifndef FG_E2E_CHAOS_HISTORY_H
#define FG_E2E_CHAOS_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "e2e/tests/simcluster.h"

struct chaos_history {
    bool found;               /* the GPUCheckpoint exists and holds a state */
    int64_t samples;          /* its status.samples */
    int64_t first_ms;         /* its status.state.firstSample */
    int64_t usage_samples;    /* the GPUWorkload's status.usage.samples; -1 when absent */
};

/* The history of the GPUWorkload of Deployment deployment in ns, as the API holds it now. False when
 * the API could not answer (a refused request): out is then not to be judged. */
bool chaos_history_read(struct fg_simcluster *c, const char *ns, const char *deployment, struct chaos_history *out);

/* Whether after continues before; why (n bytes) says what went back when it does not. */
bool chaos_history_kept(const struct chaos_history *before, const struct chaos_history *after, char *why, size_t n);

#endif
