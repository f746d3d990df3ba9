/*
 * trace — the Alibaba GPU-sharing trace's CSV files (node list and pod list), read into plain rows.
 *
 * This is the scheduler's only I/O apart from the replay command: the core never reads files. Both
 * readers take the column layout from the header (pod lists have either all eleven columns or only
 * the first five; only name, cpu_milli, memory_mib, num_gpu, gpu_milli and gpu_spec are used) and
 * reject a malformed row with FG_E_PARSE and "PATH:LINE: what is wrong" in errmsg. As the experiment
 * prescribes, gpu_milli is capped at 1000 for GPU pods and zeroed for CPU-only pods, and gpu_spec is
 * read only for GPU pods. A trace owns all its rows and strings.
 *
 * GPU memory. The Alibaba files say nothing of it; a file of fracgpu's own may add the column
 * gpu_memory_mib: on a pod list the MiB each of its GPUs must have free (read for GPU pods only, 0:
 * none asked), on a node list the MiB each GPU of the node offers (0: none, so only pods asking for
 * no memory fit there). Traces without the column replay as the published experiment does.
 */
#ifndef FG_SCHEDULER_REPLAY_TRACE_H
#define FG_SCHEDULER_REPLAY_TRACE_H

#include "scheduler/core/sched.h"

struct fg_sched_trace_pod {
    char *name;
    int64_t cpu_milli, mem_mib;
    int n_gpus, gpu_milli;
    int64_t gpu_mem_mib;            /* per GPU, 0 = not counted */
    char *spec;                     /* allowed models as written, "" = any */
    char **models;                  /* spec split on '|' */
    size_t n_models;
};

struct fg_sched_trace_node {
    char *name;
    int64_t cpu_milli, mem_mib;
    int n_gpus;
    char *model;
    int64_t gpu_mem_mib;            /* per GPU, 0 = not counted */
};

struct fg_sched_trace {
    struct fg_sched_trace_pod *pods;
    size_t n_pods;
    struct fg_sched_trace_node *nodes;
    size_t n_nodes;
};

void fg_sched_trace_init(struct fg_sched_trace *t);
void fg_sched_trace_cleanup(struct fg_sched_trace *t);

/* Parse CSV text (origin names it in errors) and append its rows. On error nothing is appended. */
enum fg_err fg_sched_trace_parse_pods(struct fg_sched_trace *t, const char *text, const char *origin,
                                      char *errmsg) FG_MUST_USE;
enum fg_err fg_sched_trace_parse_nodes(struct fg_sched_trace *t, const char *text, const char *origin,
                                       char *errmsg) FG_MUST_USE;
/* Read a file and parse it as above; FG_E_IO when it cannot be read. */
enum fg_err fg_sched_trace_load_pods(struct fg_sched_trace *t, const char *path, char *errmsg) FG_MUST_USE;
enum fg_err fg_sched_trace_load_nodes(struct fg_sched_trace *t, const char *path, char *errmsg) FG_MUST_USE;

/* The view of trace pod tp as a scheduler request (borrows tp's strings). */
void fg_sched_trace_pod_request(const struct fg_sched_trace_pod *tp, struct fg_sched_pod *out);

#endif
