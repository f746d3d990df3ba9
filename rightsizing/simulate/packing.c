/*
 * packing — capacity-pod GPUs over the scheduler core; see packing.h.
 *
 * Pods ask for no CPU or memory of the node, so only the GPU filters decide; a node's CPU and pod
 * count are set high enough never to refuse one.
 */
#include "rightsizing/simulate/packing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

#include "scheduler/plugins/plugins.h"
#include "scheduler/policies/policy.h"

#define GPU_MODEL "gpu"

enum fg_err fg_sim_pool_init(struct fg_sim_pool *p, const char *placement, int64_t gpu_memory_mib, char *errmsg)
{
    memset(p, 0, sizeof *p);
    enum fg_err err = fg_sched_policy_new(placement, NULL, 1, &p->policy, errmsg);
    if (err)
        return err;
    fg_sched_cluster_init(&p->c);
    fg_sched_framework_init(&p->fw, &fg_sched_profile_default, p->policy);
    p->gpu_memory_mib = gpu_memory_mib;
    return FG_OK;
}

void fg_sim_pool_cleanup(struct fg_sim_pool *p)
{
    if (!p->policy)
        return;
    fg_sched_framework_cleanup(&p->fw);
    fg_sched_cluster_cleanup(&p->c);
    fg_sched_policy_free(p->policy);
    memset(p, 0, sizeof *p);
}

/* A GPU of the pool as the core's node: one GPU of the pool's size, CPU, memory and pods without limit. */
static struct fg_sched_node_spec gpu_spec(const struct fg_sim_pool *p, const char *name, bool cordoned)
{
    return (struct fg_sched_node_spec){ .name = name, .cpu_milli = 1000000, .mem_mib = 1000000, .max_pods = 1000,
                                        .model = GPU_MODEL, .n_gpus = 1, .gpu_mem_mib = p->gpu_memory_mib,
                                        .unschedulable = cordoned };
}

static enum fg_err add_gpu(struct fg_sim_pool *p, char *errmsg)
{
    char name[32];
    snprintf(name, sizeof name, "gpu-%llu", (unsigned long long)p->added++);
    struct fg_sched_node_spec s = gpu_spec(p, name, false);
    return fg_sched_cluster_add_node(&p->c, &s, NULL, errmsg);
}

enum fg_err fg_sim_pool_place(struct fg_sim_pool *p, const struct fg_sim_request *req, struct fg_sim_place *out,
                              char *errmsg)
{
    memset(out, 0, sizeof *out);
    if (req->mem_mib > p->gpu_memory_mib)
        return fg_errmsg(errmsg, FG_E_INVAL, "a pod asks for %lld MiB, more than a GPU's %lld MiB",
                         (long long)req->mem_mib, (long long)p->gpu_memory_mib);
    out->pod = (struct fg_sched_pod){ .name = req->owner, .n_gpus = 1, .gpu_milli = req->milli,
                                      .gpu_mem_mib = req->mem_mib, .sharing = req->sharing,
                                      .isolation = req->dedicated ? FG_SCHED_ISO_DEDICATED : FG_SCHED_ISO_SHARED,
                                      .owner = req->owner };
    for (int attempt = 0; attempt < 2; attempt++) {
        p->cycles++;
        enum fg_err err = fg_sched_schedule(&p->fw, &p->c, &out->pod, &out->pl, errmsg);
        if (err)
            return err;
        if (out->pl.code == FG_SCHED_SUCCESS) {
            out->placed = true;
            return FG_OK;
        }
        if (attempt == 0 && (err = add_gpu(p, errmsg)))
            return err;
    }
    return fg_errmsg(errmsg, FG_E_INVAL, "a pod asking %d milli and %lld MiB fits no new GPU: %s", req->milli,
                     (long long)req->mem_mib, out->pl.reason ? out->pl.reason : "unschedulable");
}

void fg_sim_pool_release(struct fg_sim_pool *p, struct fg_sim_place *pl)
{
    if (!pl->placed)
        return;
    fg_sched_framework_unreserve(&p->fw, &p->c, &pl->pod, &pl->pl);
    pl->placed = false;
}

void fg_sim_pool_release_idle(struct fg_sim_pool *p)
{
    for (size_t i = 0; i < p->c.n_slots; i++) {
        const struct fg_sched_node *n = &p->c.nodes[i];
        if (!n->removed && n->gpus[0].tenants == 0) {
            enum fg_err err = fg_sched_cluster_remove_node(&p->c, (int)i, NULL);
            (void)err;   /* a live slot: cannot fail */
        }
    }
}

/* Cordons or uncordons GPU node: a cordoned GPU takes no pod. */
static void cordon(struct fg_sim_pool *p, int node, bool on)
{
    struct fg_sched_node_spec s = gpu_spec(p, p->c.nodes[node].name, on);
    enum fg_err err = fg_sched_cluster_update_node(&p->c, node, &s, NULL);
    (void)err;   /* the same node with its cordon changed: cannot fail */
}

bool fg_sim_pool_move_off(struct fg_sim_pool *p, int node, struct fg_sim_place *const *places, size_t n)
{
    struct fg_sim_place *next = fg_calloc(n ? n : 1, sizeof *next);
    cordon(p, node, true);
    size_t k = 0;
    for (; k < n; k++) {
        next[k] = *places[k];
        p->cycles++;
        if (fg_sched_schedule(&p->fw, &p->c, &next[k].pod, &next[k].pl, NULL) != FG_OK ||
            next[k].pl.code != FG_SCHED_SUCCESS)
            break;
    }
    bool moved = k == n;
    for (size_t i = 0; i < k; i++) {
        if (moved) {
            fg_sim_pool_release(p, places[i]);
            *places[i] = next[i];
        } else {
            fg_sim_pool_release(p, &next[i]);
        }
    }
    cordon(p, node, false);
    free(next);
    return moved;
}

int fg_sim_pool_gpus(const struct fg_sim_pool *p)
{
    return (int)p->c.n_nodes;
}

size_t fg_sim_pool_slots(const struct fg_sim_pool *p)
{
    return p->c.n_slots;
}
