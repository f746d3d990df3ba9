/* policy — the registry that builds a placement policy by name (see policy.h). */
#include <string.h>

#include "scheduler/policies/policy_int.h"

const char *const fg_sched_policy_names[] = { "random",  "dotprod", "clustering",      "packing", "bestfit",
                                              "fgd",     "fracgpu", "fracgpu-offline", NULL };

enum fg_err fg_sched_policy_new(const char *name, const struct fg_sched_mix *mix, uint64_t seed,
                                struct fg_sched_policy **out, char *errmsg)
{
    *out = NULL;
    if (!name)
        return fg_errmsg(errmsg, FG_E_INVAL, "no placement policy named");
    if (!strcmp(name, "random"))
        *out = fg__sched_random_new(seed);
    else if (!strcmp(name, "dotprod"))
        *out = fg__sched_dotprod_new();
    else if (!strcmp(name, "clustering"))
        *out = fg__sched_clustering_new();
    else if (!strcmp(name, "packing"))
        *out = fg__sched_packing_new();
    else if (!strcmp(name, "bestfit"))
        *out = fg__sched_bestfit_new();
    else if (!strcmp(name, "fracgpu"))
        *out = fg__sched_fracgpu_new(NULL);
    else if (!strcmp(name, "fgd") || !strcmp(name, "fracgpu-offline")) {
        if (!mix)
            return fg_errmsg(errmsg, FG_E_INVAL, "placement policy %s needs the trace's reference mix", name);
        *out = name[1] == 'g' ? fg__sched_fgd_new(mix) : fg__sched_fracgpu_new(mix);
    } else {
        return fg_errmsg(errmsg, FG_E_INVAL, "unknown placement policy '%s'", name);
    }
    return FG_OK;
}

void fg_sched_policy_free(struct fg_sched_policy *pol)
{
    if (pol)
        pol->ops->free(pol);
}
