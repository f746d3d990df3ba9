/*
 * admission — which pod an Allocate serves, and which pods hold devices they were not granted.
 *
 * The kubelet's Allocate names devices, never a pod. It admits one pod at a time, though, so the pod
 * being admitted is one of this node's pods that is bound here, asks for fracgpu.io/gpu-share, is not
 * terminating, has not started (phase Pending, no status.startTime) and has not been allocated yet.
 * Among those, the pod served is the first whose grant verifies for a healthy GPU of this node, first
 * in the order the node's watch showed them bound (the kubelet admits pods in the order its own watch
 * brings them; the view's seq, else creationTimestamp then namespace/name); pods whose grant does not
 * verify are never served, nor is a pod asking for a share in an init container (fracgpu never grants
 * one there, and the kubelet's PodResources does not list init containers' devices, so no audit could
 * see it).
 *
 * That guess can be wrong — after a restart of the kubelet or of the agent, or when the kubelet fails
 * a pod before asking — but among granted pods it does not matter: fracgpu's scheduler binds a tenant
 * only when every tenant of the node awaiting admission gets the very same reply
 * (scheduler/adapter/bind.c). A pod without a valid grant (created by a user with spec.nodeName and
 * copied annotations) admitted at the same moment as a granted one may still take the granted one's
 * reply, and a scheduler of another version may not keep that promise. So the plugin keeps
 * a ledger (which devices it allocated for which pod, on which GPU, with what) and compares it with what
 * the kubelet says each pod holds (the PodResources API). fg_dp_ledger_audit acts only on positive
 * evidence:
 *   - a pod holding a device the ledger gave to another pod got that pod's reply. If the holder's own
 *     grant verifies and names the same GPU, amounts and sharing, nothing is wrong but the bookkeeping:
 *     the entry moves to the holder — for any permutation among such pods (a got b's, b got c's, c
 *     got a's), every holder whose devices were all recorded with its own reply is settled first. Otherwise the holder is named (evicted at once) and the robbed
 *     pod loses its entry, so its own Allocate, when it comes, is served;
 *   - a pod holding fracgpu devices the ledger does not know is adopted (the agent restarted: a
 *     restart loses nothing), unless it was named before, carries no grant at all, or holds a slot of
 *     another GPU than its grant names (the kubelet takes the slots GetPreferredAllocation offers,
 *     those of the GPU of the reply: such a pod got the reply computed for another pod). Its grant is
 *     not verified again: a key rotated since, keys not loaded yet or a GPU gone unhealthy are no
 *     evidence of theft, and while the agent is down no pod can get a device;
 *   - a pod the ledger has an entry for that holds devices the entry does not record got another
 *     pod's reply, whose own entry a later grant replaced (a robbed pod served again, and the pod it
 *     was served to robbed in turn): it is named.
 * Entries leave the ledger when their pod ends or goes (the kubelet frees its devices); a device given
 * to a new pod leaves any older entry.
 *
 * Pure: the caller passes this node's pods (informer cache), the keys and the GPUs.
 */
#ifndef FG_DEVICEPLUGIN_ADMISSION_H
#define FG_DEVICEPLUGIN_ADMISSION_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "nodeagent/deviceplugin/slots.h"
#include "reconcilers/grant.h"

/* One pod the plugin allocated for, and the grant its reply carried. */
struct fg_dp_entry {
    char uid[64];
    char ns[64];
    char name[254];
    char gpu_uuid[FG_DP_UUID_MAX];
    int64_t compute_milli, memory_mib;
    bool mps;
    char **device_ids;
    size_t ndevices;
};

#define FG_DP_CONDEMNED_MAX 64

struct fg_dp_ledger {
    struct fg_dp_entry *v;
    size_t n, cap;
    char condemned[FG_DP_CONDEMNED_MAX][64]; /* UIDs of pods named by an audit (a ring) */
    size_t ncondemned;
};

void fg_dp_ledger_cleanup(struct fg_dp_ledger *l);
/* Records that device_ids went to pod (ns, name) with grant g (its pod_uid the key), replacing any
 * entry of that uid and taking those devices from any other entry (an entry left with none goes). */
void fg_dp_ledger_put(struct fg_dp_ledger *l, const char *ns, const char *name, const struct fg_grant *g, bool mps,
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
    /* the order in which the node's watch showed each pod bound (NULL: creationTimestamp order) */
    uint64_t (*seq)(void *ud, json_object *pod);
    void *seq_ud;
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

/* Whether pod asks for fracgpu.io/gpu-share in any container (init containers included). */
bool fg_dp_pod_wants_share(json_object *pod);
/* Chooses the pod an Allocate serves (see above). */
void fg_dp_pick_pod(const struct fg_dp_node_view *v, const struct fg_dp_ledger *l, struct fg_dp_pick *out);

/* What the kubelet says one pod holds of fracgpu.io/gpu-share (PodResources List). */
struct fg_dp_holding {
    const char *ns, *name;
    const char *const *device_ids;
    size_t n;
};

/* The fracgpu.io/gpu-share devices each pod of a PodResources List reply holds, all its containers
 * together; pods holding none are left out. Returns how many, the array in *out (free it with
 * fg_dp_holdings_free); the names and device IDs point into r, which must outlive them. */
struct V1__ListPodResourcesResponse;
size_t fg_dp_holdings_of(const struct V1__ListPodResourcesResponse *r, struct fg_dp_holding **out);
void fg_dp_holdings_free(struct fg_dp_holding *h, size_t n);

#define FG_DP_AUDIT_MAX 16

struct fg_dp_audit {
    size_t impostors[FG_DP_AUDIT_MAX]; /* indexes into the holdings */
    json_object *impostor_pods[FG_DP_AUDIT_MAX]; /* their pods, borrowed from the view (NULL: not cached) */
    char why[FG_DP_AUDIT_MAX][600];
    size_t nimpostors;
    size_t adopted; /* pods taken into the ledger (holders it did not know, with grants) */
    size_t robbed;  /* ledger entries dropped because an impostor holds their devices */
    size_t rekeyed; /* entries moved to the granted pod that holds their devices with the same reply */
};

/* Compares the ledger with the kubelet's holdings, adopting and dropping entries (see above). */
void fg_dp_ledger_audit(struct fg_dp_ledger *l, const struct fg_dp_node_view *v, const struct fg_dp_holding *h,
                        size_t nh, struct fg_dp_audit *out);

#endif
