/*
 * pod — checking a pod request and resolving its allowed GPU models against the cluster's table.
 *
 * A request is a view the caller fills (sched.h); these checks are the whole of what the core
 * refuses as bad input, so every entry point that takes a pod calls fg_sched_pod_validate first.
 */
#include "scheduler/core/sched.h"

enum fg_err fg_sched_pod_validate(const struct fg_sched_pod *p, char *errmsg)
{
    const char *name = p->name ? p->name : "(unnamed)";
    if (p->cpu_milli < 0 || p->mem_mib < 0 || p->gpu_mem_mib < 0)
        return fg_errmsg(errmsg, FG_E_INVAL, "pod %s: negative request", name);
    if (p->n_gpus < 0 || p->n_gpus > FG_SCHED_MAX_GPUS)
        return fg_errmsg(errmsg, FG_E_INVAL, "pod %s: %d GPUs (0..%d allowed)", name, p->n_gpus,
                         FG_SCHED_MAX_GPUS);
    if (p->n_gpus == 0 && p->gpu_milli != 0)
        return fg_errmsg(errmsg, FG_E_INVAL, "pod %s: gpu milli %d without GPUs", name, p->gpu_milli);
    if (p->n_gpus > 0 && (p->gpu_milli < 1 || p->gpu_milli > FG_SCHED_MILLI))
        return fg_errmsg(errmsg, FG_E_INVAL, "pod %s: gpu milli %d outside 1..1000", name, p->gpu_milli);
    if (p->n_gpus > 1 && p->gpu_milli != FG_SCHED_MILLI)
        return fg_errmsg(errmsg, FG_E_INVAL, "pod %s: %d GPUs must be whole (milli %d)", name, p->n_gpus,
                         p->gpu_milli);
    if (p->isolation == FG_SCHED_ISO_DEDICATED && (!p->owner || !*p->owner))
        return fg_errmsg(errmsg, FG_E_INVAL, "pod %s: dedicated isolation without an owner", name);
    if (p->group && p->group_min < 1)
        return fg_errmsg(errmsg, FG_E_INVAL, "pod %s: pod group %s with min %d", name, p->group, p->group_min);
    for (size_t i = 0; i < p->n_models; i++)
        if (!p->models[i] || !*p->models[i])
            return fg_errmsg(errmsg, FG_E_INVAL, "pod %s: empty GPU model name", name);
    return FG_OK;
}

uint32_t fg_sched_pod_model_mask(const struct fg_sched_cluster *c, const struct fg_sched_pod *p)
{
    if (p->n_models == 0)
        return FG_SCHED_MODELS_ANY;
    uint32_t mask = 0;
    for (size_t i = 0; i < p->n_models; i++) {
        int m = fg_sched_cluster_model(c, p->models[i]);
        if (m >= 0)
            mask |= 1u << m;
    }
    return mask;
}
