/*
 * gpuusage — what a simulated pod does with its GPU: a usage profile read from its annotations, and
 * its GPU compute (SM %, NVML's per-process utilization) and memory at a moment of its life.
 *
 *   sim.fracgpu.io/gpu-sm: "35"                  compute, percent of the GPU (0 to 100), constant
 *   sim.fracgpu.io/gpu-memory: "20Gi"            memory in use, a quantity, constant
 *   sim.fracgpu.io/usage-trace: "gentd26/<pod>"  both replayed from the GenTD26 trace (gentd26.h): a
 *                                                pod of the trace by hash, hash prefix or position,
 *                                                from the start of the container, time_scale trace
 *                                                seconds per second, looping
 * A constant annotation overrides its dimension of a trace. A pod without any uses nothing (a
 * process that holds a GPU context and idles). An annotation that cannot be read is left out and
 * named in the problem the caller reports (an Event on the pod); the rest of the profile stands and
 * the pod runs as usual.
 *
 * The trace is read once, on first use, by whichever thread needs it first (fg_sim_trace_source);
 * series pointers stay valid until the source is cleaned up.
 */
#ifndef FG_SIM_GPUUSAGE_H
#define FG_SIM_GPUUSAGE_H

#include <json-c/json.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rightsizing/gentd26.h"

#define FG_SIM_ANN_GPU_SM "sim.fracgpu.io/gpu-sm"
#define FG_SIM_ANN_GPU_MEMORY "sim.fracgpu.io/gpu-memory"
#define FG_SIM_ANN_USAGE_TRACE "sim.fracgpu.io/usage-trace"
#define FG_SIM_TRACE_GENTD26 "gentd26/"

/* The GenTD26 trace, read from dir on first use. */
struct fg_sim_trace_source {
    pthread_mutex_t mu;
    char dir[PATH_MAX];
    bool tried;
    char failure[256];          /* why it could not be read, once tried */
    struct fg_gentd26 trace;
};

struct fg_sim_usage {
    bool given;                 /* some annotation gave a profile */
    double sm;                  /* percent; < 0: none given */
    double mem;                 /* bytes; < 0: none given */
    const struct fg_gentd26_series *trace;   /* NULL: none */
};

void fg_sim_trace_source_init(struct fg_sim_trace_source *s, const char *dir);
void fg_sim_trace_source_cleanup(struct fg_sim_trace_source *s);

/* pod's profile into u. False when an annotation was refused: problem (size bytes) names each one
 * and why, and u holds the others. */
bool fg_sim_usage_parse(json_object *pod, struct fg_sim_trace_source *traces, struct fg_sim_usage *u, char *problem,
                        size_t size);
/* What the profile uses `seconds` after its container started: compute in percent (0 to 100) and
 * memory in bytes. */
void fg_sim_usage_at(const struct fg_sim_usage *u, double seconds, double time_scale, double *sm, double *mem);

#endif
