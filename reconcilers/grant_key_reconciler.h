/*
 * grant_key_reconciler — keeps Secret <operator namespace>/fracgpu-grant-key; leader-only.
 *
 * One key, the Secret's "<namespace>/<name>". Reconciling it reads the Secret from the cache, plans
 * the next step (grant_key.h) and writes it: a create when there is no Secret, else an update that
 * carries the resourceVersion it was planned from. So when two replicas both believe they lead for a
 * moment, or the cache lags behind a write, only one write of a version lands; the other gets 409,
 * reads the Secret afresh from the API and plans again from what is there — a key someone else just
 * wrote is never overwritten, so none is lost. The key is requeued for when the next step falls due
 * (a rotation, the end of a grace); a change to the Secret (an edit, a delete) reconciles it at once.
 *
 * Every write is an Event on the Secret (Normal KeyIssued, KeyAdopted, KeyRotated,
 * PreviousKeyRetired; Warning KeyRepaired, PreviousKeyRepaired, saying what was wrong) and a log line;
 * neither ever carries key material. Metric: fracgpu_grant_key_writes_total{step}.
 * RBAC: create on secrets in the namespace (a missing Secret has no name to grant on); get, list,
 * watch and update on this Secret alone.
 */
#ifndef FG_RECONCILERS_GRANT_KEY_RECONCILER_H
#define FG_RECONCILERS_GRANT_KEY_RECONCILER_H

#include <json-c/json.h>
#include <stdint.h>

#include "base/err.h"
#include "operator/kube/client.h"
#include "operator/manager/manager.h"
#include "reconcilers/grant_key.h"

struct fg_grant_key_opts {
    const char *ns;                 /* the operator's namespace */
    const char *secret;             /* FG_SECRET_GRANT_KEY */
    struct fg_grant_key_policy policy;
    const char *reporter;           /* who writes, for Events (the replica's identity); may be NULL */
};

/* What one convergence did. */
struct fg_grant_key_outcome {
    enum fg_grant_key_step step;    /* the step written (KEEP: nothing was) */
    int64_t recheck_ms;             /* wall clock at which the next step falls due */
    unsigned conflicts;             /* writes another writer beat, each followed by a fresh read */
};

#define FG_GRANT_KEY_MAX_CONFLICTS 3

/* Brings the Secret one step on from `believed` (borrowed: the Secret as the caller last saw it; NULL
 * when it saw none) at now_ms, through c: plans, writes with a precondition and, when another writer
 * got there first (409, or 404 for an update of a Secret deleted since), reads it afresh and plans
 * again, at most FG_GRANT_KEY_MAX_CONFLICTS times. Emits the Event and the log line of the step
 * written. Returns the API's error (errmsg says what failed) when a write or read fails otherwise. */
enum fg_err fg_grant_key_converge(struct fg_kube_client *c, const struct fg_grant_key_opts *o, json_object *believed,
                                  int64_t now_ms, struct fg_grant_key_outcome *out, char *errmsg) FG_MUST_USE;

/* Registers the leader-only controller on m, with the informer of the one Secret. FG_E_INVAL for a
 * policy that fails fg_grant_key_policy_check. Strings in o must outlive m. */
enum fg_err fg_grant_key_reconciler_setup(struct fg_manager *m, const struct fg_grant_key_opts *o,
                                          char *errmsg) FG_MUST_USE;

#endif
