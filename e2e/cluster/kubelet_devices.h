/*
 * kubelet_devices — the simulated kubelet's device manager: which devices of each extended resource
 * a node has, which pod holds each, and the device plugins that answer for them. It is where a
 * device plugin plugs into the kubelet, as in kube's pkg/kubelet/cm/devicemanager:
 *
 *   1. A plugin registers a resource on a node with its devices (kube: Register, then each
 *      ListAndWatch answer): fg_sim_devices_register. The NVIDIA device plugin does so for
 *      nvidia.com/gpu at boot (kubelet_nvidia.c); fracgpu's, over gRPC, will for
 *      fracgpu.io/gpu-share.
 *   2. At admission, once the pod fits the node, the kubelet picks free healthy devices for each
 *      container and each registered resource it requests — init containers' devices reusable by
 *      the containers after them, as kube's — and reserves them for the pod: fg_sim_devices_reserve
 *      (under the kubelets' lock, so two admissions never take one device). For a plugin that
 *      chooses (below) only the count is noted.
 *   3. Then it asks each plugin, per container, what the container gets for those devices (kube:
 *      Allocate): fg_sim_devices_allocate, which releases the lock while the plugins answer, since
 *      a plugin's answer may take a network round trip. A refusal fails the pod with kube's
 *      UnexpectedAdmissionError. The answer's environment reaches the container (kubelet_env.c).
 *   4. The devices are freed when the pod ends (Succeeded or Failed) or goes.
 * To serve fracgpu.io/gpu-share over gRPC, a node's kubelet registers, at its boot, the resource with
 * a plugin that chooses and forwards to e2e/devicemanager's fg_dm (through its loop).
 * A resource no plugin registered on the node (fracgpu.io/gpu-share until fracgpu's plugin does)
 * is admitted on its capacity alone, as kube admits it.
 *
 * Where a grant is recorded: in the container's status, allocatedResourcesStatus (kube's field for
 * a container's devices and their health), from which a restarted kubelets process takes its pods'
 * devices back; and the plugins' answers in <pod dir>/devices.json (kube keeps them in its
 * checkpoint): [{container, resource, devices, env, mounts: [{containerPath, hostPath, readOnly}],
 * cdiDevices}], so a container started again gets the same answer, and what each container got can be
 * read back.
 * fg_sim_pod_resources_list answers what kube's PodResources API List answers: per pod and
 * container, each resource and its device IDs.
 *
 * Locking: everything here runs under the kubelets' mu (kubelet.h) except what a plugin's
 * allocate does.
 */
#ifndef FG_SIM_KUBELET_DEVICES_H
#define FG_SIM_KUBELET_DEVICES_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "operator/kube/resources.h"

struct fg_sim_kubelets;
struct fg_sim_node;
struct fg_sim_pod;

#define FG_SIM_DEVICE_ID_MAX 128

/* What a plugin is asked for one container: n devices of resource, the ones the kubelet chose
 * (kube's ContainerAllocateRequest; none when the plugin chooses, below), and which pod and
 * container they are for — the kubelet knows, the gRPC Allocate does not tell the plugin. */
struct fg_sim_alloc_request {
    const char *node;
    const char *resource;
    const char *pod_namespace, *pod_name, *pod_uid, *container;
    size_t n;
    const char *const *ids;
    size_t nids;
};

/* A mount a plugin asks for: host_path (on this machine) at container_path. */
struct fg_sim_plugin_mount {
    char *container_path, *host_path;
    bool read_only;
};

/* What the plugin answers: environment variables as "NAME=value", mounts, CDI device names
 * ("nvidia.com/gpu=GPU-..."), and the devices it chose when it chooses; owned (malloc'ed), the caller
 * frees. Device nodes and annotations are not simulated. */
struct fg_sim_alloc_response {
    char **env;
    size_t nenv;
    struct fg_sim_plugin_mount *mounts;
    size_t nmounts;
    char **cdi;
    size_t ncdi;
    char **ids;
    size_t nids;
};

/* A device plugin, as the kubelets' device manager sees it. Two kinds:
 *   - one whose devices the kubelet keeps (the NVIDIA device plugin): they are registered with
 *     fg_sim_devices_register, the kubelet picks free ones and asks allocate for those;
 *   - one that `chooses`: another device manager keeps the resource's devices and picks them —
 *     e2e/devicemanager's fg_dm, which speaks the real device-plugin gRPC to fracgpu's node agent
 *     (Registration, ListAndWatch, GetPreferredAllocation, Allocate, PodResources). The resource is
 *     registered with no devices; allocate is asked for n and answers the IDs it gave; release tells
 *     it a pod's devices are free (fg_dm_pod_gone), restore that a kubelet started again took a
 *     pod's grant back from its status (fg_dm_record).
 * release and restore run under the kubelets' lock: they must not wait long. */
struct fg_sim_device_plugin {
    const char *name;   /* for logs and messages */
    bool chooses;
    /* kube's Allocate for one container. May block (a gRPC call): runs without the kubelets' lock.
     * FG_OK with resp filled (it starts empty), or an error with the reason in errmsg. */
    enum fg_err (*allocate)(void *ud, const struct fg_sim_alloc_request *req, struct fg_sim_alloc_response *resp,
                            char *errmsg);
    void (*release)(void *ud, const char *pod_uid);
    void (*restore)(void *ud, const struct fg_sim_alloc_request *req);
};
/* release and restore for a plugin whose devices the kubelet keeps: nothing to do. */
void fg_sim_device_plugin_release_none(void *ud, const char *pod_uid);
void fg_sim_device_plugin_restore_none(void *ud, const struct fg_sim_alloc_request *req);

struct fg_sim_device {
    char id[FG_SIM_DEVICE_ID_MAX];
    bool healthy;
    char holder[64];              /* UID of the pod holding it; "" when free */
};

struct fg_sim_device_resource {
    char name[FG_RESOURCE_NAME_MAX];
    const struct fg_sim_device_plugin *plugin;
    void *ud;
    struct fg_sim_device *v;
    size_t n;
};

/* A node's device manager. */
struct fg_sim_devices {
    struct fg_sim_device_resource *res;
    size_t n;
};

/* Devices of one resource given to one container, and the plugin's answer for them. */
struct fg_sim_grant {
    size_t container;             /* index in the pod's containers */
    char resource[FG_RESOURCE_NAME_MAX];
    size_t want;                  /* how many */
    char **ids;                   /* for a plugin that chooses: none until it answered */
    size_t nids;
    struct fg_sim_alloc_response answer;
    bool answered;
};

/* Registers plugin (borrowed, with ud; it and ud must outlive the node's devices) for resource on
 * d with devices ids (all healthy) — or, for a resource registered already, replaces its plugin and
 * device list; a device still listed keeps its holder. mu held. */
void fg_sim_devices_register(struct fg_sim_devices *d, const char *resource, const struct fg_sim_device_plugin *plugin,
                             void *ud, const char *const *ids, size_t nids);
/* Marks device id of resource healthy or not (kube: a ListAndWatch update); false when d has no
 * such device. mu held. */
bool fg_sim_devices_set_health(struct fg_sim_devices *d, const char *resource, const char *id, bool healthy);
/* The registered resource called name, or NULL. */
struct fg_sim_device_resource *fg_sim_devices_find(struct fg_sim_devices *d, const char *name);
void fg_sim_devices_cleanup(struct fg_sim_devices *d);

/* Whole units of resource that container spec asks for: its limit, else its request (0: none). */
int64_t fg_sim_container_wants(json_object *spec, const char *resource);

/* Step 2 for p, admitted on node: its grants (p->grants) with their devices reserved. False when
 * some resource lacks free healthy devices: p->reject_reason and p->reject_message say so in kube's
 * words, and nothing stays reserved. mu held. */
bool fg_sim_devices_reserve(struct fg_sim_node *node, struct fg_sim_pod *p, json_object *pod);
/* Step 3: asks the plugins for p's grants not answered yet. mu held on entry and on return, released
 * meanwhile. False when a plugin refused (p->reject_reason and p->reject_message set); the caller
 * then undoes the admission. The pod of p must stay known: only the reconcile of its key forgets it. */
bool fg_sim_devices_allocate(struct fg_sim_kubelets *k, struct fg_sim_pod *p);
/* Frees the devices p holds on node (its grants stay, for its status). mu held. */
void fg_sim_devices_release(struct fg_sim_node *node, struct fg_sim_pod *p);
/* Frees p's grants. */
void fg_sim_grants_free(struct fg_sim_pod *p);

/* Takes back the devices a previous run of the kubelets gave p (from pod's container statuses,
 * answers from its devices.json), reserving them again on node — a device of a resource no plugin
 * has registered again yet is kept held (and unhealthy) until one lists it. mu held. */
void fg_sim_devices_adopt(struct fg_sim_node *node, struct fg_sim_pod *p, json_object *pod);
/* allocatedResourcesStatus for container i of p (a new array), or NULL when it holds no device. */
json_object *fg_sim_devices_status(const struct fg_sim_pod *p, size_t container);

/* One container's devices of one resource, as PodResources List answers. */
struct fg_sim_pod_resources {
    char namespace[64], pod[254], container[128];
    char resource[FG_RESOURCE_NAME_MAX];
    char **ids;                   /* owned */
    size_t nids;
};
/* Every device grant of the pods running on the node called node, into *out (*n entries; free
 * with fg_sim_pod_resources_free). Takes mu. */
void fg_sim_pod_resources_list(struct fg_sim_kubelets *k, const char *node, struct fg_sim_pod_resources **out,
                               size_t *n);
void fg_sim_pod_resources_free(struct fg_sim_pod_resources *v, size_t n);

#endif
