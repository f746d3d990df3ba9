/*
 * node_fixture — what e2e_sim_node (test_sim_node.c) does to a simulated cluster, as fracgpu's
 * scheduler and a cluster's users would do it, with the checks it makes on the nodes' files.
 *
 *   - the cluster: fracgpu-sim-cluster with testdata/node-e2e.yaml (three GPU nodes, one per
 *     node group), each node found by its group;
 *   - pods: created from JSON text, read, deleted, bound through the pods/binding subresource with
 *     the annotations fracgpu's scheduler writes (the GPU, its index, the capacity pod and the grant,
 *     signed with the key the operator keeps in Secret fracgpu-system/fracgpu-grant-key);
 *   - the nodes' records: a pod's devices.json (what the kubelet got from the device plugins), the
 *     fake NVML's state, the node agent's log;
 *   - waits: every one bounded; a wait that runs out fails the test with what the pod, its Events,
 *     the node agent and the kubelets said (nodetest_fail).
 *
 * Everything lives in one static cluster (the test binary runs one); strings returned are the
 * caller's to free unless a comment says otherwise.
 */
#ifndef FG_SIM_NODE_FIXTURE_H
#define FG_SIM_NODE_FIXTURE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "e2e/tests/simcluster.h"

#define NODETEST_NS "team-a"                 /* where the tenants and the users' pods live */
#define NODETEST_SYSTEM_NS "fracgpu-system"
#define NODETEST_UUID_MAX 48
#define NODETEST_WAIT_MS 20000               /* the longest most waits take; a few seconds when all is well */

/* The three nodes, by the device-list form their group declares. */
enum nodetest_form { NODETEST_CDI, NODETEST_MOUNTS, NODETEST_ENV, NODETEST_FORMS };

struct nodetest {
    struct fg_simcluster sim;
    char work[160];              /* the cluster's working directory (logs/, nodes/): simcluster's, short enough for MPS sockets */
    char node[NODETEST_FORMS][96];
};

extern struct nodetest nt;

/* The group of each form in testdata/node-e2e.yaml, and the form's name in docs/device-plugin.md. */
const char *nodetest_group(enum nodetest_form f);
const char *nodetest_form_name(enum nodetest_form f);

/* Starts the cluster and finds its nodes; -1 (having said why on stderr) when it cannot. */
int nodetest_start(void);
/* Stops it; keeps its directories when keep (or $FG_KEEP_SIM). */
void nodetest_stop(bool keep);
/* The log of a cluster component ("kubelets", ...) into a new string ("" when none). */
char *nodetest_component_log(const char *component);

/* ---- the API ---- */

/* The object at path, or NULL (404 or any failure). */
json_object *nodetest_get(const char *path);
json_object *nodetest_pod(const char *ns, const char *name);
/* Creates the object (JSON text) in the collection at path; fails the test when refused. Returns
 * the created object. */
json_object *nodetest_create(const char *collection, const char *json);
/* Creates the pod (JSON text) in ns; returns the created pod (the caller drops it). */
json_object *nodetest_create_pod(const char *ns, const char *json);
/* Deletes a pod (the API's default grace period); one already gone is fine. */
void nodetest_delete_pod(const char *ns, const char *name);

/* The key in Secret fracgpu-system/fracgpu-grant-key: whether the operator wrote one yet. */
bool nodetest_grant_key_ready(void);
/* The grant fracgpu's scheduler signs for placing pod uid on node's GPU with compute milli and
 * memory MiB (out: FG_GRANT_MAX bytes), under the key in the Secret now. */
void nodetest_sign(const char *uid, const char *node, const char *gpu, int64_t milli, int64_t mib, char *out);
/* Binds pod (ns, name) to node as fracgpu's scheduler does: one POST to pods/binding carrying
 * fracgpu.io/gpu-uuid, fracgpu.io/gpu-index, fracgpu.io/capacity-pod and fracgpu.io/grant (signed
 * for the pod's UID and its allocation annotations). Fails the test unless the API answers 201. */
void nodetest_bind(const char *ns, const char *name, const char *node, const char *gpu, const char *capacity_pod);

/* Pods' Events with reason for the object called name in ns: how many, and the last message
 * (borrowed until the next call). */
size_t nodetest_events(const char *ns, const char *name, const char *reason, const char **message);

/* ---- the nodes' files ---- */

/* The directory of pod (ns, name, uid) on node: <nt.work>/nodes/<node>/pods/<ns>_<name>_<uid>. */
char *nodetest_pod_dir(const char *node, const char *ns, const char *name, const char *uid);
/* The pod's devices.json (NULL when the kubelet wrote none). */
json_object *nodetest_devices(const char *node, const char *ns, const char *name, const char *uid);
/* The fake NVML state of node. */
json_object *nodetest_nvml_state(const char *node);
/* The GPU of node with this UUID in its state (borrowed from state), or NULL. */
json_object *nodetest_nvml_gpu(json_object *state, const char *uuid);
/* The index of uuid among node's GPUs, or -1. */
int nodetest_gpu_index(const char *node, const char *uuid);

/* The node agent pod running on node (Running, not terminating), or NULL. */
json_object *nodetest_agent_pod(const char *node);
/* The log of the node agent pod (ns/name/uid) on node, into a new string ("" when none). */
char *nodetest_agent_log(const char *node, json_object *agent_pod);
/* What the cluster's logs hold that they must not (fg_simcluster_log_problems). */
size_t nodetest_log_problems(void);
/* How many times text occurs in s. */
size_t nodetest_count(const char *s, const char *text);
/* The fracgpu.io/gpu-share slots node's kubelet last said it has from the device plugin (the kubelets'
 * log), -1 when it said none; *reports gets how many times it said so. The Node's status is not
 * enough after a kubelet restart: it keeps the slots from before until the plugin is back. */
long nodetest_kubelet_slots(const char *node, size_t *reports);
/* The pid of the running kubelets component (from the supervisor's log), 0 when unknown. */
pid_t nodetest_kubelets_pid(void);

/* ---- waits ---- */

/* Polls cond(ud) every 10 ms for up to timeout_ms. */
bool nodetest_wait(bool (*cond)(void *ud), void *ud, unsigned timeout_ms);
/* Waits for pod (ns, name) to reach phase (and, for Running, Ready); fails with nodetest_fail. */
void nodetest_wait_phase(const char *ns, const char *name, const char *node, const char *phase, unsigned timeout_ms);
/* Waits for pod (ns, name) to carry annotation key; fails with nodetest_fail. */
void nodetest_wait_annotation(const char *ns, const char *name, const char *node, const char *key,
                              unsigned timeout_ms);

/* Fails the test with the message, then what pod (ns, name; may be NULL) looks like, its Events,
 * the tail of node's agent log (node may be NULL) and the kubelets' lines about the pod. */
void nodetest_fail(const char *ns, const char *name, const char *node, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), noreturn));

#endif
