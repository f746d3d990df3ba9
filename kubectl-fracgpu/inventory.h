/*
 * inventory — the cluster's GPUs as fracgpu shares them, built from what the API server holds, for
 * `kubectl fracgpu gpus`.
 *
 * A GPU node is a node with allocatable nvidia.com/gpu. Each of its GPUs that fracgpu holds is one
 * capacity pod (a pod of fracgpu's namespace labelled fracgpu.io/role=capacity) on it: the GPU's UUID
 * and the memory tenants may use are the capacity pod's annotations, its sharing mode `mps` when the
 * capacity pod says so and `timeslice` otherwise (`exclusive` when its tenant asked for that). Its
 * tenants are the live pods bound to that node that name the capacity pod (fracgpu.io/capacity-pod),
 * each with the allocation its annotations grant; the GPU's index on the node is the one its tenants
 * carry (fracgpu.io/gpu-index). The node's other GPUs are listed as not held: the default scheduler's
 * or nobody's. Measured use is what fracgpu knows of each tenant's workload: the p95 compute and the
 * peak memory of its GPUWorkload's status.usage, summed over the GPU's tenants (absent until the
 * workload has samples).
 *
 * Pure: no I/O. Strings are borrowed from the lists given, which must outlive the inventory.
 */
#ifndef FG_KUBECTL_FRACGPU_INVENTORY_H
#define FG_KUBECTL_FRACGPU_INVENTORY_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fgk_tenant {
    const char *ns, *name, *workload, *phase;
    int64_t milli, mem_mib;         /* allocated; mem_mib 0: the whole GPU's memory */
    bool measured;                  /* its workload has usage */
    int64_t used_milli, used_mem_mib;   /* its workload's p95 compute and peak memory */
};

struct fgk_gpu {
    const char *node, *model, *uuid, *cap, *sharing;   /* cap, uuid NULL: not held by fracgpu */
    int index;                      /* on the node; -1 when no tenant says */
    int64_t mem_mib;                /* what tenants may use (the capacity pod's announcement), 0: unknown */
    struct fgk_tenant *tenants;
    size_t n_tenants;
    int64_t milli, mem_alloc_mib;   /* allocated to its tenants */
    size_t measured;                /* tenants whose use is known */
    int64_t used_milli, used_mem_mib;
};

struct fgk_inventory {
    struct fgk_gpu *gpus;
    size_t n;
};

/* Builds out from lists (json arrays of items) of nodes, pods of every namespace and GPUWorkloads
 * (NULL: none); cap_ns is fracgpu's namespace. GPUs come node by node (by name), held ones by index
 * then capacity pod name, then those not held. */
void fgk_inventory_build(json_object *nodes, json_object *pods, json_object *workloads, const char *cap_ns,
                         struct fgk_inventory *out);
void fgk_inventory_cleanup(struct fgk_inventory *inv);

/* The inventory as `-o json` prints it: a List of GPU objects (a new reference). */
json_object *fgk_inventory_json(const struct fgk_inventory *inv);

#endif
