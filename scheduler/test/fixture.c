/* fixture — see fixture.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "scheduler/test/fixture.h"

int fx_node(struct fg_sched_cluster *c, const char *name, int cores, int mem_gib, int n_gpus, const char *model)
{
    struct fg_sched_node_spec s = { .name = name, .cpu_milli = cores * 1000LL, .mem_mib = mem_gib * 1024LL,
                                    .max_pods = 110, .model = model, .n_gpus = n_gpus, .gpu_mem_mib = 16384 };
    int id = -1;
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_cluster_add_node(c, &s, &id, errmsg), FG_OK);
    return id;
}

struct fg_sched_pod fx_pod(const char *name, int cores, int n_gpus, int milli)
{
    struct fg_sched_pod p;
    memset(&p, 0, sizeof p);
    p.name = name;
    p.cpu_milli = cores * 1000LL;
    p.mem_mib = 1024;
    p.n_gpus = n_gpus;
    p.gpu_milli = milli;
    p.sharing = FG_SCHED_SHARE_TIMESLICE;
    return p;
}

enum fg_sched_code fx_filter(const struct fg_sched_filter_plugin *pl, const struct fg_sched_cluster *c,
                             const struct fg_sched_pod *pod, int i)
{
    struct fg_sched_cycle cy = { c, pod, fg_sched_pod_model_mask(c, pod), NULL };
    int out = -1;
    size_t kept = pl->filter(&cy, &i, 1, &out);
    assert_true(kept <= 1 && out == i);
    return kept ? FG_SCHED_SUCCESS : FG_SCHED_UNSCHEDULABLE;
}

bool fx_fits(const struct fg_sched_cluster *c, const struct fg_sched_pod *pod, int i)
{
    const struct fg_sched_filter_plugin *all[] = { &fg_sched_plugin_node_fit, &fg_sched_plugin_taints,
                                                   &fg_sched_plugin_node_affinity, &fg_sched_plugin_gpu_model,
                                                   &fg_sched_plugin_sharing, &fg_sched_plugin_gpu_fit };
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        if (fx_filter(all[k], c, pod, i) != FG_SCHED_SUCCESS)
            return false;
    return true;
}
