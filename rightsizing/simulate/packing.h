/*
 * packing — the GPUs of `fracgpu simulate`, as fracgpu's scheduler holds them on a cluster: each GPU
 * is one capacity pod's, modelled as a node of one GPU of the simulation's size, and pods are placed
 * on them by the scheduler core (the default profile and a placement policy by name, as the
 * operator's scheduler does).
 *
 * fg_sim_pool_place runs one scheduling cycle; when no GPU fits the pod it adds a GPU (a capacity pod
 * asked for and granted at once) and runs the cycle again, which then cannot fail for a valid
 * request. fg_sim_pool_release gives a pod's place back; fg_sim_pool_release_idle removes the GPUs
 * left without a tenant. fg_sim_pool_move_off empties one GPU, as the operator's consolidation does
 * (scheduler/adapter/consolidate.c): its tenants are placed again on the other GPUs, all or none. A GPU's node id is its slot in the cluster: the caller may index its own
 * per-GPU tallies by it (below fg_sim_pool_slots).
 */
#ifndef FG_RIGHTSIZING_SIMULATE_PACKING_H
#define FG_RIGHTSIZING_SIMULATE_PACKING_H

#include <stdint.h>

#include "scheduler/core/framework.h"

struct fg_sim_pool {
    struct fg_sched_cluster c;
    struct fg_sched_framework fw;
    struct fg_sched_policy *policy;
    int64_t gpu_memory_mib;
    uint64_t added;                 /* GPUs ever added: names them */
    uint64_t cycles;
};

/* What a pod asks for: compute in milli (1..1000), memory in MiB; dedicated: no other workload on its
 * GPU (owner names the pod's workload). */
struct fg_sim_request {
    int milli;
    int64_t mem_mib;
    enum fg_sched_sharing sharing;
    bool dedicated;
    const char *owner;
};

/* A pod's place; placed false when it holds none. */
struct fg_sim_place {
    bool placed;
    struct fg_sched_pod pod;
    struct fg_sched_placement pl;
};

enum fg_err fg_sim_pool_init(struct fg_sim_pool *p, const char *placement, int64_t gpu_memory_mib,
                             char *errmsg) FG_MUST_USE;
void fg_sim_pool_cleanup(struct fg_sim_pool *p);

/* Places a pod asking req (its strings must outlive the place) into *out. FG_E_INVAL (errmsg) for a
 * request no GPU of the pool's size can take. */
enum fg_err fg_sim_pool_place(struct fg_sim_pool *p, const struct fg_sim_request *req, struct fg_sim_place *out,
                              char *errmsg) FG_MUST_USE;
void fg_sim_pool_release(struct fg_sim_pool *p, struct fg_sim_place *pl);
void fg_sim_pool_release_idle(struct fg_sim_pool *p);
/* Places again, on other GPUs and without adding one, the n tenants of GPU node (every place in
 * places[] is on it), in the order given; true and each place moved when all fit, false and nothing
 * changed otherwise. */
bool fg_sim_pool_move_off(struct fg_sim_pool *p, int node, struct fg_sim_place *const *places, size_t n);
/* GPUs held now; node ids are below fg_sim_pool_slots. */
int fg_sim_pool_gpus(const struct fg_sim_pool *p);
size_t fg_sim_pool_slots(const struct fg_sim_pool *p);

#endif
