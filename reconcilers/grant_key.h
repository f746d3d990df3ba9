/*
 * grant_key — the life of the grant key, decided without I/O: what Secret fracgpu-grant-key holds next.
 *
 * The scheduler signs every placement with the key in the Secret's data.key and the device plugin
 * verifies with data.key and, during a rotation, data.previous (grant.h). The operator keeps the
 * Secret; fg_grant_key_plan looks at what it holds and the time and returns its next state, one step
 * at a time, so a reconciler writes it and asks again:
 *   no Secret, or one without data        → ISSUE: a fresh key (32 bytes from OpenSSL's RAND_bytes)
 *   data.key missing, not base64, too short or too long
 *                                         → REPAIR_KEY: a fresh key; data.previous dropped
 *   data.previous not a usable key        → REPAIR_PREVIOUS: dropped; data.key kept, so the grants
 *                                           signed with it still verify
 *   no believable rotation time (the annotation FG_ANN_GRANT_KEY_ROTATED_AT missing, malformed, or
 *   later than now + FG_GRANT_KEY_SKEW_MS: a key someone wrote by hand)
 *                                         → ADOPT: the time is recorded as now; the keys stay
 *   rotation_ms after the rotation time   → ROTATE: data.key moves to data.previous, a fresh data.key
 *   grace_ms after it, with a data.previous
 *                                         → RETIRE: data.previous dropped
 * Every step that changes data.key sets the rotation time to now. The annotation records when the
 * current key was written, so a restart of the operator, or a new leader, carries on the same
 * schedule; nothing lives only in memory. Any other member of data is not the operator's and goes at
 * the next write.
 *
 * The grace must outlast everything that may still present a grant signed with the previous key: the
 * device plugin's Allocate hold (seconds), and a pod bound just before the rotation that waits for its
 * kubelet to admit it (image pulls, a node under pressure: minutes). The rotation must be longer than
 * the grace, so a previous key is always dropped before the next rotation would replace it
 * (fg_grant_key_policy_check). A key that was broken, or dropped early, fails exactly the grants signed
 * with it: their pods are refused at admission and their workloads create new ones.
 *
 * Key material is never put in a message: `problem` says which member is wrong and how.
 */
#ifndef FG_RECONCILERS_GRANT_KEY_H
#define FG_RECONCILERS_GRANT_KEY_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

#define FG_ANN_GRANT_KEY_ROTATED_AT "fracgpu.io/grant-key-rotated-at"
#define FG_GRANT_KEY_FRESH_LEN 32
#define FG_GRANT_KEY_SKEW_MS (5 * 60000ll)

struct fg_grant_key_policy {
    int64_t rotation_ms;    /* how long a key signs before it is replaced */
    int64_t grace_ms;       /* how long a replaced key still verifies */
};

/* A new key every 30 days (720h), the previous one accepted for an hour. */
#define FG_GRANT_KEY_POLICY_DEFAULT { .rotation_ms = 720 * 3600000ll, .grace_ms = 3600000ll }

enum fg_grant_key_step {
    FG_GRANT_KEY_KEEP,              /* nothing to write */
    FG_GRANT_KEY_ISSUE,
    FG_GRANT_KEY_REPAIR_KEY,
    FG_GRANT_KEY_REPAIR_PREVIOUS,
    FG_GRANT_KEY_ADOPT,
    FG_GRANT_KEY_ROTATE,
    FG_GRANT_KEY_RETIRE,
};
#define FG_GRANT_KEY_STEPS (FG_GRANT_KEY_RETIRE + 1)

struct fg_grant_key_plan {
    enum fg_grant_key_step step;
    json_object *next;              /* owned: the Secret to write (a create when the plan was given
                                       none, else an update carrying its resourceVersion); NULL for KEEP */
    char problem[FG_ERRMSG_MAX];    /* REPAIR_*: what was wrong with the Secret; else "" */
    int64_t recheck_ms;             /* wall clock at which the next step falls due if nothing changes */
};

/* FG_E_INVAL, errmsg saying which, unless 0 < grace_ms < rotation_ms. */
enum fg_err fg_grant_key_policy_check(const struct fg_grant_key_policy *p, char *errmsg) FG_MUST_USE;

/* Plans from the Secret `cur` (borrowed; NULL when there is none — `ns` and `name` then name the one
 * to create) at now_ms. FG_E_INVAL for a policy that fails the check; FG_E_IO when OpenSSL has no
 * randomness to give. */
enum fg_err fg_grant_key_plan(json_object *cur, const char *ns, const char *name, const struct fg_grant_key_policy *p,
                              int64_t now_ms, struct fg_grant_key_plan *out, char *errmsg) FG_MUST_USE;
void fg_grant_key_plan_cleanup(struct fg_grant_key_plan *plan);

/* The Event reason of a step: "Unchanged", "KeyIssued", "KeyRepaired", "PreviousKeyRepaired",
 * "KeyAdopted", "KeyRotated", "PreviousKeyRetired". */
const char *fg_grant_key_step_reason(enum fg_grant_key_step s);
/* A short name for metric labels: "keep", "issue", "repair-key", "repair-previous", "adopt", "rotate",
 * "retire". */
const char *fg_grant_key_step_name(enum fg_grant_key_step s);
/* Whether the step mends a broken Secret (a Warning, not a Normal Event). */
bool fg_grant_key_step_is_repair(enum fg_grant_key_step s);

#endif
