/*
 * leader — leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics.
 *
 * Replicas of a role compete for one Lease. A candidate reads it; when nobody holds it, or the
 * holder has not renewed it for leaseDurationSeconds as measured on the candidate's own monotonic
 * clock from the moment it last saw the record change (never by comparing wall clocks across
 * machines), the candidate writes itself in as holder, guarded by the Lease's resourceVersion so that
 * of two candidates only one wins. The leader renews every retry period. Each write carries the
 * transitions count, the acquire time and the renew time as kube-controller-manager writes them, so
 * `kubectl get lease` reads the same for fracgpu as for any Kubernetes controller.
 *
 * Safety: fg_leader_is_leading is computed from the clock, not from a flag the election thread sets:
 * it is true only until renew_deadline has passed since the last renewal that succeeded was *sent*.
 * Another replica can take over only lease_duration after it *saw* that renewal, and renew_deadline
 * < lease_duration, so on one machine (or machines whose clocks run at the same rate) no instant has
 * two replicas leading — even when a leader is frozen (SIGSTOP) or cut off while its election
 * thread is blocked in a request. Leader-only work asks fg_leader_is_leading before it acts.
 * Handover: on a clean stop the leader releases the Lease (holder emptied, duration 1 s), and a
 * standby takes it on its next attempt, within one retry period. A candidate also tries again
 * exactly when the lease it watches expires, so after a leader dies the standby leads within
 * lease_duration + retry_period of the leader's last renewal.
 *
 * Threads: the election runs on its own thread with a kube client of its own whose request timeout
 * is renew_deadline, so a hung request can never hold the thread past the point where leadership
 * would be lost anyway. Everything else is callable from any thread.
 */
#ifndef FG_MANAGER_LEADER_H
#define FG_MANAGER_LEADER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/err.h"
#include "operator/kube/config.h"

struct fg_leader_opts {
    bool enabled;                   /* false: no election, every replica leads (the manager's switch) */
    const char *lease_namespace;    /* required */
    const char *lease_name;         /* required */
    const char *identity;           /* NULL: $POD_NAME or the host name, then '_' and a random suffix */
    uint64_t lease_duration_ns;     /* whole seconds, 1 s at least (the Lease stores seconds) */
    uint64_t renew_deadline_ns;     /* < lease_duration */
    uint64_t retry_period_ns;       /* ≤ renew_deadline / 1.2, as client-go requires */
};

#define FG_LEADER_OPTS_DEFAULT                                                                     \
    { .enabled = true, .lease_duration_ns = 15 * FG_NS_PER_S, .renew_deadline_ns = 10 * FG_NS_PER_S, \
      .retry_period_ns = 2 * FG_NS_PER_S }

struct fg_leader;

/* Checks the durations (FG_E_INVAL, errmsg says which rule failed). */
enum fg_err fg_leader_opts_check(const struct fg_leader_opts *opts, char *errmsg) FG_MUST_USE;

/* Copies opts and builds the election's own client from cfg. Nothing runs yet. */
enum fg_err fg_leader_new(const struct fg_kube_config *cfg, const struct fg_leader_opts *opts, struct fg_leader **out,
                          char *errmsg) FG_MUST_USE;
/* fn(ud) runs on the election thread each time this replica becomes leader (before start). */
void fg_leader_on_lead(struct fg_leader *le, void (*fn)(void *ud), void *ud);
/* Starts the election thread (once: a stopped election is not started again). */
enum fg_err fg_leader_start(struct fg_leader *le) FG_MUST_USE;
/* Stops the election thread (interrupting its wait, not a request in flight) and, when this replica
 * holds the Lease, releases it. The caller has stopped its leader-only work first. Idempotent. */
void fg_leader_stop(struct fg_leader *le);
/* Stops if needed; NULL is ignored. */
void fg_leader_free(struct fg_leader *le);

/* Whether this replica leads now (see the essay). Any thread. */
bool fg_leader_is_leading(const struct fg_leader *le);
const char *fg_leader_identity(const struct fg_leader *le);
/* "namespace/name" of the Lease. */
const char *fg_leader_lease(const struct fg_leader *le);
/* Times this replica became leader since it started. */
uint64_t fg_leader_terms(const struct fg_leader *le);

#endif
