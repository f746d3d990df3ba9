/*
 * nvmlstate — what a simulated node's GPUs show, and the fake NVML's state file (e2e/fake-nvml)
 * that shows it to a process on the node.
 *
 * A snapshot is the node's GPUs (model, memory, UUIDs) and the GPU processes running on them at
 * one moment: each with its PID, the GPUs it uses, its compute (SM %) and memory on each, and the
 * pod and container it belongs to (for its cgroup file, runtime.h). A GPU's utilization is the sum
 * of its processes' compute, at most 100 (NVML's utilization is a duty cycle: the share of time a
 * kernel ran, which processes sharing the GPU fill together); its memory used is the sum of theirs,
 * with 512 MiB reserved by the driver beside it, as NVML reports. Every process appears in the
 * GPU's process list (memory) and in its utilization samples (timestamp 0: a fresh sample at every
 * query), so an exporter sees per-process compute and memory.
 *
 * The state text is the same for the same snapshot (processes in PID order), so the kubelets can
 * tell a change by comparing texts and write the file only then.
 */
#ifndef FG_SIM_NVMLSTATE_H
#define FG_SIM_NVMLSTATE_H

#include <stddef.h>
#include <stdint.h>

#include "e2e/cluster/config.h"
#include "e2e/cluster/simids.h"

#define FG_SIM_GPU_RESERVED_BYTES (512ll << 20)

struct fg_sim_gpu_process {
    unsigned pid;
    uint32_t gpus;                 /* bit i: the node's GPU i */
    double sm, mem;                /* on each of its GPUs: percent, bytes */
    char pod_uid[64];
    char container_id[FG_SIM_CONTAINER_ID_LEN + 1];
    const char *qos;               /* the pod's QoS class (a static string) */
};

struct fg_sim_gpu_snapshot {
    unsigned ngpus;
    char model[FG_SIM_GPU_MODEL_MAX];
    int64_t memory_bytes;
    char uuids[FG_SIM_MAX_GPUS][FG_SIM_GPU_UUID_LEN + 1];
    struct fg_sim_gpu_process *procs;   /* owned, in PID order */
    size_t nprocs;
};

/* GPU g's utilization (percent) and memory used (bytes) in s. */
void fg_sim_gpu_totals(const struct fg_sim_gpu_snapshot *s, unsigned g, unsigned *util, int64_t *used);
/* The fake NVML's state file showing s; a new string (free it). */
char *fg_sim_nvml_state(const struct fg_sim_gpu_snapshot *s);
void fg_sim_gpu_snapshot_cleanup(struct fg_sim_gpu_snapshot *s);

#endif
