/* core_rate — the placement core alone on sched_api_bench's cluster and pods (core_rate.h). */
#include "bench/sched_api/core_rate.h"

#include <stdio.h>

#include "base/clock.h"
#include "scheduler/plugins/plugins.h"
#include "scheduler/policies/policy.h"

const struct bench_shape bench_shapes[BENCH_SHAPES] = {
    { "small", 100, 8192 }, { "quarter", 250, 20480 }, { "half", 500, 40960 }, { "whole", 0, 0 },
};

double bench_core_rate(unsigned nodes, unsigned gpus, int64_t cpu_milli, int64_t mem_mib, int64_t gpu_mem_mib,
                       unsigned pods)
{
    char errmsg[FG_ERRMSG_MAX] = "";
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    struct fg_sched_policy *pol = NULL;
    enum fg_err err = fg_sched_policy_new("fracgpu", NULL, 1, &pol, errmsg);
    for (unsigned i = 0; i < nodes && !err; i++) {
        char name[32];
        snprintf(name, sizeof name, "gpu-node-%04u", i);
        struct fg_sched_node_spec s = { .name = name, .cpu_milli = cpu_milli, .mem_mib = mem_mib, .max_pods = 102,
                                        .model = "gpu", .n_gpus = (int)gpus, .gpu_mem_mib = gpu_mem_mib };
        err = fg_sched_cluster_add_node(&c, &s, NULL, errmsg);
    }
    double rate = 0;
    if (!err) {
        struct fg_sched_framework fw;
        fg_sched_framework_init(&fw, &fg_sched_profile_default, pol);
        uint64_t t0 = fg_clock_mono_ns();
        for (unsigned i = 0; i < pods && !err; i++) {
            const struct bench_shape *sh = &bench_shapes[i % BENCH_SHAPES];
            char name[32];
            snprintf(name, sizeof name, "bench/pod-%06u", i);
            struct fg_sched_pod p = { .name = name, .cpu_milli = BENCH_POD_CPU_MILLI, .mem_mib = BENCH_POD_MEM_MIB,
                                      .n_gpus = 1, .gpu_milli = sh->milli ? sh->milli : 1000,
                                      .gpu_mem_mib = sh->milli ? sh->mem_mib : gpu_mem_mib,
                                      .sharing = FG_SCHED_SHARE_TIMESLICE };
            struct fg_sched_placement pl;
            err = fg_sched_schedule(&fw, &c, &p, &pl, errmsg);
        }
        rate = err ? 0 : pods / ((double)(fg_clock_mono_ns() - t0) / 1e9);
        fg_sched_framework_cleanup(&fw);
    }
    if (err)
        fprintf(stderr, "placement core: %s\n", errmsg);
    fg_sched_policy_free(pol);
    fg_sched_cluster_cleanup(&c);
    return rate;
}
