/*
 * node_pods — the pods e2e_sim_node makes, as fracgpu's webhook and scheduler and a cluster's users
 * would write them, and the checks on what the kubelet and the capacity holder made of them:
 *   - a tenant: what fracgpu's webhook leaves for fracgpu's scheduler (schedulerName
 *     fracgpu-scheduler, fracgpu.io/gpu-share: 1, the allocation annotations), unbound;
 *   - a forged pod: what a user can write, spec.nodeName set and a granted pod's annotations copied;
 *   - a capacity pod: nvidia.com/gpu: 1 in fracgpu-system, labelled fracgpu.io/role=capacity, run by
 *     the real `fracgpu capacity-holder` with the MPS root on a hostPath, as docs/capacity-holder.md
 *     says fracgpu's scheduler will create it, placed by the default scheduler;
 *   - devices.json checked for exactly one GPU in a node's device-list form (docs/device-plugin.md),
 *     and a capacity pod's report checked against its grant and the fake NVML.
 * Checks fail the test through nodetest_fail, with the pod's state and the logs around it.
 */
#ifndef FG_SIM_NODE_PODS_H
#define FG_SIM_NODE_PODS_H

#include <stdint.h>

#include "e2e/cluster/test/node_fixture.h"

#define NODETEST_CONTEXT_OVERHEAD_MIB 500   /* the capacity holder's default --context-overhead-mib */
#define NODETEST_MOUNTS_DIR "/var/run/nvidia-container-devices"

/* An mps tenant's limits, as its allocation annotations say them. */
struct nodetest_mps {
    int milli, mib;
};

/* Creates tenant name in NODETEST_NS with the allocation (compute milli, memory MiB, sharing) and
 * `extra` annotations (JSON members, may be ""). Returns its UID. */
char *nodetest_tenant(const char *name, int milli, int mib, const char *sharing, const char *extra);
/* Creates pod name in NODETEST_NS on node with every annotation of pod `from` copied. Returns its UID;
 * *created_ns (may be NULL) gets the monotonic clock just before the create was sent. */
char *nodetest_forged(const char *name, const char *from, const char *node, uint64_t *created_ns);
/* Creates capacity pod name in fracgpu-system for node, with annotations (JSON members, may be ""). */
void nodetest_capacity(const char *name, const char *node, const char *annotations);
/* The UID of pod (ns, name); "" when it is gone. */
char *nodetest_uid(const char *ns, const char *name);

/* What the kubelet recorded for tenant name on the node of form f: one record, for container main
 * and fracgpu.io/gpu-share, one slot of gpu, and gpu alone in f's form — with mps (may be NULL), the
 * GPU's MPS pipe and shm and the tenant's limits too. */
void nodetest_check_devices(enum nodetest_form f, const char *name, const char *gpu, const struct nodetest_mps *mps);
/* Waits for capacity pod name on the node of form f to run, Ready, with its report, and checks it: the
 * GPU the kubelet granted, and the fake NVML's memory less its reservation and a context's overhead.
 * The GPU into gpu (NODETEST_UUID_MAX bytes). */
void nodetest_check_capacity(enum nodetest_form f, const char *name, char *gpu);

#endif
