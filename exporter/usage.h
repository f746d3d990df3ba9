/*
 * usage — GPU usage per pod and container: a sample's processes attributed and summed.
 *
 * fg_usage_build maps every process of a sample to its pod (cgroup.c, then pods.c) and sums memory
 * and SM utilization per device and (namespace, pod, container). Processes in no pod (host daemons,
 * or pods this node's watch does not know yet) are summed into one row per device without pod
 * names. A process whose cgroup file cannot be read — it exited mid-sample, or /proc hides it — is
 * counted as unattributed and logged at debug level (exited) or warn level (anything else); it
 * never fails the build.
 *
 * A MIG instance has no per-process SM figures; when GPM gives the instance's own and one pod alone
 * runs on it, that pod's row gets the instance's figure.
 *
 * MPS (docs/exporter.md): an MPS GPU serves one workload through one server process, which the capacity
 * holder starts, so the server sits in the capacity pod's cgroup. Its memory is the server's, never
 * the capacity pod's usage: it is summed apart (`mps_server_mem`) and in no row. NVML files the
 * GPU's SM samples under the server, not its clients, so the clients' own figures mean nothing: when
 * the clients belong to one pod, that pod's row gets the device's utilization (the server's samples
 * where the device gives none); when they belong to several pods (replicas of the one workload), no
 * share per pod can be told and their rows' utilization is unknown — the workload's compute is the
 * GPU's. The server is recognised by its executable's name (argv[0] in /proc/<pid>/cmdline; `comm`
 * is cut to 15 characters), checked for every process that NVML does not list as an MPS client.
 *
 * Ownership: the usage borrows the sample's devices; free it (fg_usage_cleanup) before the sample.
 */
#ifndef FG_EXPORTER_USAGE_H
#define FG_EXPORTER_USAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exporter/pods.h"
#include "exporter/sample.h"

struct fg_pod_usage {
    bool in_pod;               /* false: the row of processes in no pod */
    struct fg_pod_ref ref;
    bool mem_known;
    uint64_t mem_used;         /* bytes, summed over the row's processes */
    int util;                  /* SM percent summed (capped at 100); -1 unknown */
    bool has_mps_client;       /* some of the row's processes are MPS clients */
};

struct fg_device_usage {
    const struct fg_device_sample *dev;   /* borrowed */
    struct fg_pod_usage *rows;
    size_t nrows;
    bool mps_server;                      /* an MPS server process runs on the device */
    bool mps_server_mem_known;
    uint64_t mps_server_mem;              /* bytes held by MPS server processes */
};

struct fg_usage {
    struct fg_device_usage *devs;         /* parallel to the sample's devs */
    size_t ndevs;
    size_t unattributed;                  /* processes whose cgroup could not be read or parsed */
};

/* pods may be NULL (no pod names: every process lands in its device's no-pod row). */
void fg_usage_build(const struct fg_sample *smp, const char *proc_root, struct fg_pods *pods, struct fg_usage *out);
void fg_usage_cleanup(struct fg_usage *u);

#endif
