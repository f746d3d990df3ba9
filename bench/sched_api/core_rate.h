/*
 * core_rate — the placement core alone on the cluster and pods of sched_api_bench: how many decisions
 * a second fracgpu's online placement policy makes when nothing but the core runs (no API, no
 * informers, no writes), the ceiling the scheduler through the API is measured against.
 */
#ifndef FG_BENCH_SCHED_API_CORE_RATE_H
#define FG_BENCH_SCHED_API_CORE_RATE_H

#include <stdint.h>

#define BENCH_SHAPES 4
#define BENCH_POD_CPU_MILLI 1000
#define BENCH_POD_MEM_MIB 4096

/* The workloads' fractions, pod i being of shape i % BENCH_SHAPES: compute milli (0: whole GPUs) and
 * GPU memory MiB. */
struct bench_shape {
    const char *name;
    int milli;
    int64_t mem_mib;
};
extern const struct bench_shape bench_shapes[BENCH_SHAPES];

/* Schedules pods pods one after another (each placed, as the live scheduler places them) on nodes
 * nodes of gpus GPUs with cpu_milli, mem_mib and gpu_mem_mib for tenants; returns decisions/s, 0 on
 * an error (printed). */
double bench_core_rate(unsigned nodes, unsigned gpus, int64_t cpu_milli, int64_t mem_mib, int64_t gpu_mem_mib,
                       unsigned pods);

#endif
