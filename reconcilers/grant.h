/*
 * grant — the scheduler's signature on a placement, so that an allocation cannot be forged.
 *
 * Anyone may write annotations on their own pods, and may even create a pod with spec.nodeName set.
 * What makes a placement fracgpu's is FG_ANN_GRANT, which only the scheduler can compute: an
 * HMAC-SHA256 over the pod's UID, its node, the GPU's UUID and the compute and memory granted, keyed by
 * the Secret fracgpu-system/fracgpu-grant-key that only the operator and the node agent may read. The
 * scheduler writes it in the Binding (one write, with the other placement annotations); the device
 * plugin's Allocate verifies it and hands out the GPU only when it holds. Binding the UID means a
 * grant copied onto another pod does not verify; binding the node, the GPU and the amounts means none
 * of them can be edited afterwards.
 *
 * The value is "v1." followed by the MAC in unpadded base64url (RFC 4648 §5): 46 characters. The MAC
 * covers a versioned text, one field per line, so no two placements share an input:
 *     fracgpu.io/grant/v1 \n <pod uid> \n <node> \n <gpu uuid> \n <compute milli> \n <memory MiB>
 *
 * Keys: the Secret's data holds `key` (the current key, at least FG_GRANT_KEY_MIN bytes) and, during
 * a rotation, `previous`: grants signed with either verify, so pods bound just before a rotation are
 * still admitted; the operator drops `previous` after a grace period. Comparison is constant-time.
 * Pure: no I/O; the caller fetches the Secret.
 */
#ifndef FG_RECONCILERS_GRANT_H
#define FG_RECONCILERS_GRANT_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define FG_SECRET_GRANT_KEY "fracgpu-grant-key"
#define FG_GRANT_KEY_MIN 32
#define FG_GRANT_KEY_MAX 128
#define FG_GRANT_MAX 64 /* room for a grant value and its NUL */

/* What a grant binds. */
struct fg_grant {
    const char *pod_uid;
    const char *node;
    const char *gpu_uuid;
    int64_t compute_milli;
    int64_t memory_mib;
};

struct fg_grant_keys {
    unsigned char current[FG_GRANT_KEY_MAX];
    size_t current_len; /* 0: no key loaded */
    unsigned char previous[FG_GRANT_KEY_MAX];
    size_t previous_len; /* 0: no rotation under way */
};

enum fg_grant_verdict {
    FG_GRANT_VALID,          /* signed with the current key */
    FG_GRANT_VALID_PREVIOUS, /* signed with the previous key, still accepted during a rotation */
    FG_GRANT_MISSING,        /* no grant at all */
    FG_GRANT_MALFORMED,      /* not a v1 grant */
    FG_GRANT_MISMATCH,       /* does not verify: forged, copied from another pod, or edited since */
    FG_GRANT_NO_KEY,         /* nothing can verify: no key loaded */
};

/* The grant for g under key (key_len >= FG_GRANT_KEY_MIN) into out. FG_E_INVAL for a missing field,
 * a negative amount or a short key. */
enum fg_err fg_grant_sign(const struct fg_grant *g, const unsigned char *key, size_t key_len,
                          char out[FG_GRANT_MAX]) FG_MUST_USE;
/* Whether `value` (may be NULL) is the grant for g under keys. */
enum fg_grant_verdict fg_grant_verify(const struct fg_grant *g, const char *value, const struct fg_grant_keys *keys);
/* A short phrase for a verdict, for Events, logs and metric labels ("valid", "forged or altered", ...). */
const char *fg_grant_verdict_name(enum fg_grant_verdict v);

/* Reads the keys from a Secret object (data.key, data.previous; base64 as the API carries them).
 * FG_E_INVAL, saying which, for a missing or short key or bad base64; keys is zeroed then. */
enum fg_err fg_grant_keys_from_secret(json_object *secret, struct fg_grant_keys *keys, char *errmsg) FG_MUST_USE;

/* The grant fields of a bound pod, strings borrowed from it: metadata.uid, spec.nodeName,
 * FG_ANN_GPU_UUID and the allocation annotations (allocation.h; memory "whole" is 0). Returns the pod's
 * FG_ANN_GRANT value, or NULL when it has none or a field is missing or malformed (errmsg says which). */
const char *fg_grant_of_pod(json_object *pod, struct fg_grant *g, char *errmsg);

#endif
