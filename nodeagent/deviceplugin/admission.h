/*
 * admission — which pod an Allocate serves, and which pods hold devices they were not granted.
 *
 * The kubelet's Allocate names devices, never a pod. It admits one pod at a time, though, so the pod
 * being admitted is one of this node's pods that is bound here, asks for fracgpu.io/gpu-share, is not
 * terminating, has not started (phase Pending) and has not been allocated yet. Among those, the pod
 * served is the oldest (creationTimestamp, then namespace/name, as the kubelet admits them) whose
 * grant verifies for a healthy GPU of this node; pods whose grant does not verify are never served.
 *
 * That guess can be wrong only when a pod without a valid grant (created by a user with spec.nodeName
 * and copied annotations) is admitted at the same moment as a granted one: the kubelet may hand the
 * granted pod's reply to the impostor. So the plugin keeps a ledger (which devices it allocated for
 * which pod) and compares it with what the kubelet says each pod holds (the PodResources API):
 * fg_dp_ledger_audit names every pod that holds a device the ledger gave to another pod, or that
 * holds fracgpu devices the ledger does not know and whose own grant does not verify; the plugin
 * evicts those at once. The granted pod loses its ledger entry, so its own Allocate, when it comes,
 * is served. Pods the ledger does not know but whose grant verifies (the agent restarted) are adopted:
 * a restart loses nothing.
 *
 * Pure: the caller passes this node's pods (informer cache), the keys and the GPUs.
 */
#ifndef FG_DEVICEPLUGIN_ADMISSION_H
#define FG_DEVICEPLUGIN_ADMISSION_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "nodeagent/deviceplugin/slots.h"
#include "reconcilers/grant.h"

/* One pod the plugin allocated for. */
struct fg_dp_entry {
    char uid[64];
    char ns[64];
    char name[254];
    char gpu_uuid[FG_DP_UUID_MAX];
    char **device_ids;
    size_t ndevices;
};

struct fg_dp_ledger {
    struct fg_dp_entry *v;
    size_t n, cap;
};

void fg_dp_ledger_cleanup(struct fg_dp_ledger *l);
/* Records that device_ids went to pod (uid, ns, name) on gpu_uuid (replacing any entry of that uid). */
void fg_dp_ledger_put(struct fg_dp_ledger *l, const char *uid, const char *ns, const char *name, const char *gpu_uuid,
                      const char *const *device_ids, size_t n);
/* The entry of the pod with this UID, or NULL. */
const struct fg_dp_entry *fg_dp_ledger_get(const struct fg_dp_ledger *l, const char *uid);
/* Forgets a pod (deleted, or found to have lost its devices to an impostor). */
void fg_dp_ledger_drop(struct fg_dp_ledger *l, const char *uid);

/* What the node looks like to the plugin. */
struct fg_dp_node_view {
    const char *node;
    json_object **pods; /* this node's pods */
    size_t npods;
    const struct fg_grant_keys *keys;
    const struct fg_dp_gpu *gpus;
    size_t ngpus;
};

enum fg_dp_pick_outcome {
    FG_DP_PICK_GRANTED, /* pod is the one: serve its grant */
    FG_DP_PICK_REFUSED, /* pods wait, none with a valid grant: refuse (after the caller's grace) */
    FG_DP_PICK_NONE,    /* no pod waits for admission (the cache may lag): wait */
};

#define FG_DP_PICK_REFUSED_MAX 8

struct fg_dp_pick {
    enum fg_dp_pick_outcome outcome;
    json_object *pod; /* GRANTED: borrowed from the view */
    struct fg_grant grant;
    bool mps;
    json_object *refused[FG_DP_PICK_REFUSED_MAX]; /* waiting pods whose grant failed, for Events */
    char refused_why[FG_DP_PICK_REFUSED_MAX][160];
    size_t nrefused;
};

/* Whether pod asks for fracgpu.io/gpu-share in any container. */
bool fg_dp_pod_wants_share(json_object *pod);
/* Chooses the pod an Allocate serves (see above). */
void fg_dp_pick_pod(const struct fg_dp_node_view *v, const struct fg_dp_ledger *l, struct fg_dp_pick *out);

/* What the kubelet says one pod holds of fracgpu.io/gpu-share (PodResources List). */
struct fg_dp_holding {
    const char *ns, *name;
    const char *const *device_ids;
    size_t n;
};

#define FG_DP_AUDIT_MAX 16

struct fg_dp_audit {
    size_t impostors[FG_DP_AUDIT_MAX]; /* indexes into the holdings */
    char why[FG_DP_AUDIT_MAX][600];
    size_t nimpostors;
    size_t adopted; /* pods taken into the ledger (verified grants the ledger did not know) */
    size_t robbed;  /* ledger entries dropped because an impostor holds their devices */
};

/* Compares the ledger with the kubelet's holdings, adopting and dropping entries (see above). */
void fg_dp_ledger_audit(struct fg_dp_ledger *l, const struct fg_dp_node_view *v, const struct fg_dp_holding *h,
                        size_t nh, struct fg_dp_audit *out);

#endif
