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

static void check_summary(const struct fg_sched_node *n)
{
    uint32_t modes = 0;
    int owned = 0, idle = 0, max_free = 0;
    for (int g = 0; g < n->n_gpus; g++) {
        const struct fg_sched_gpu *u = &n->gpus[g];
        modes |= u->tenants ? 1u << u->sharing : 0;
        modes |= u->free_mem_mib < 0 ? FG_SCHED_MEM_SHORT : 0;
        owned += u->owner != NULL;
        idle += u->free_milli == FG_SCHED_MILLI;
        max_free = u->free_milli > max_free ? u->free_milli : max_free;
    }
    assert_int_equal(n->tenant_modes, modes);
    assert_int_equal(n->owned_gpus, owned);
    assert_int_equal(n->idle_gpus, idle);
    assert_int_equal(n->max_free_milli, max_free);
}

void fx_check_counts(const struct fg_sched_cluster *c)
{
    int64_t total = 0, used = 0, model_free[FG_SCHED_MAX_MODELS] = { 0 };
    size_t by_gpus[FG_SCHED_MAX_GPUS + 1] = { 0 }, hard = 0, live = 0;
    for (size_t i = 0; i < c->n_slots; i++) {
        const struct fg_sched_node *n = &c->nodes[i];
        if (n->removed)
            continue;
        live++;
        by_gpus[n->n_gpus]++;
        bool tainted = false;
        for (size_t t = 0; t < n->n_taints; t++)
            tainted |= n->taints[t].effect != FG_SCHED_PREFER_NO_SCHEDULE;
        hard += tainted;
        total += (int64_t)n->n_gpus * FG_SCHED_MILLI;
        for (int g = 0; g < n->n_gpus; g++) {
            used += FG_SCHED_MILLI - n->gpus[g].free_milli;
            model_free[n->model] += n->gpus[g].free_milli;
        }
        assert_int_equal(n->model < 0, n->n_gpus == 0);
        check_summary(n);
    }
    assert_int_equal(c->n_nodes, live);
    assert_int_equal(c->gpu_milli_total, total);
    assert_int_equal(c->gpu_milli_used, used);
    for (int m = 0; m < FG_SCHED_MAX_MODELS; m++)
        assert_int_equal(c->model_free_milli[m], model_free[m]);
    int most = 0;
    for (int k = 0; k <= FG_SCHED_MAX_GPUS; k++) {
        assert_int_equal(c->nodes_by_gpus[k], by_gpus[k]);
        most = by_gpus[k] ? k : most;
    }
    assert_int_equal(c->max_node_gpus, most);
    assert_int_equal(c->hard_tainted_nodes, hard);
}
