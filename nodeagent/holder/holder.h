/*
 * holder — `fracgpu capacity-holder`, the process of a capacity pod, as a component of a manager.
 *
 * A capacity pod is granted one whole GPU (nvidia.com/gpu: 1) that fracgpu's scheduler then shares out
 * to tenants. Its holder:
 *   1. finds that GPU through NVML (gpu.h) — at setup, so that a container that sees no GPU or
 *      several exits at once with status 1 and a line saying what NVML showed;
 *   2. reads its own pod (name and namespace from the downward API) to learn what is asked (pod.h);
 *   3. for an mps GPU, takes the GPU into EXCLUSIVE_PROCESS (compute_mode.h) and starts the MPS
 *      control daemon with the workload's per-pod limits (mps.h), before anything says the GPU is
 *      usable, so that no tenant ever reaches it without MPS;
 *   4. writes FG_ANN_GPU_UUID and FG_ANN_GPU_MEMORY_MIB onto its pod, which is what makes the pod a bin
 *      the scheduler places tenants into; then it is ready (/readyz);
 *   5. for an mps GPU, checks every health interval that the daemon still answers, and starts it
 *      again (with the limits, which a daemon forgets when it ends) when it does not;
 *   6. on stop (SIGTERM, SIGINT), quits the daemon and gives the GPU its previous compute mode back.
 *
 * API failures (steps 2 and 4) are retried with exponential backoff (from backoff_initial_ns,
 * doubling, at most backoff_max_ns) and logged each time with the server's reason: a pod not there
 * yet, a refused patch, a server restarting. Failures no retry can mend — NVML refusing the compute
 * mode, a daemon that cannot be started, an mps pod without valid limits — stop the work with an
 * error line and mark the holder failed: the command then exits 1 and the kubelet restarts it with
 * its own backoff, which is how a pod says "broken" where people look. Restarted, a holder does the
 * same steps again and changes nothing that is already right (the report is compared first, a
 * daemon that answers is adopted, the recorded compute mode is kept).
 *
 * All of it runs on the holder's own thread; a stop interrupts every wait (stop.h, apicall.h), so the
 * holder ends within the few hundred milliseconds the daemon's quit takes.
 */
#ifndef FG_NODEAGENT_HOLDER_HOLDER_H
#define FG_NODEAGENT_HOLDER_HOLDER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/err.h"
#include "nodeagent/holder/gpu.h"
#include "nodeagent/holder/mps_paths.h"
#include "operator/manager/manager.h"

struct fg_holder_opts {
    const char *pod_name;
    const char *pod_namespace;
    const char *nvml_lib;             /* NULL: libnvidia-ml.so.1 */
    uint64_t overhead_mib;            /* per-context overhead kept from tenants (gpu.h) */
    const char *mps_root;             /* mps_paths.h */
    const char *mps_control;          /* the control daemon's binary: a path or a name in PATH */
    uint64_t health_interval_ns;      /* between checks of the MPS daemon */
    uint64_t backoff_initial_ns;      /* API retries */
    uint64_t backoff_max_ns;
};

#define FG_HOLDER_OPTS_DEFAULT                                                                            \
    { .overhead_mib = FG_HOLDER_OVERHEAD_MIB_DEFAULT, .mps_root = FG_MPS_ROOT_DEFAULT,                   \
      .mps_control = "nvidia-cuda-mps-control",                                                            \
      .health_interval_ns = 5 * FG_NS_PER_S, .backoff_initial_ns = 500 * FG_NS_PER_MS,                    \
      .backoff_max_ns = 30 * FG_NS_PER_S }

struct fg_holder;

/* Opens NVML, finds the GPU and registers the holder on m: a runnable, and the readiness check
 * "capacity-holder" (reported, and for mps the daemon answering). The manager frees the holder.
 * FG_E_INVAL for missing options; the errors of fg_nvml_open and fg_holder_gpu_discover, with
 * errmsg saying what NVML showed. */
enum fg_err fg_holder_setup(struct fg_manager *m, const struct fg_holder_opts *opts, struct fg_holder **out,
                            char *errmsg) FG_MUST_USE;

/* Whether the holder gave up on a failure no retry mends (the command then exits 1). Any thread. */
bool fg_holder_failed(struct fg_holder *h);

#endif
