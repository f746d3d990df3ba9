/*
 * holder_int — the holder's state, shared by its thread (holder.c) and its registration on the
 * manager (setup.c); nothing outside nodeagent/holder includes it.
 *
 * Ownership: setup fills the options (strings copied), NVML and the GPU before the thread starts;
 * the thread alone touches want, mps (the daemon) and the compute-mode fields; the flags and `status`
 * are read by the readiness check on the loop thread, so they change under stop.mu.
 */
#ifndef FG_NODEAGENT_HOLDER_HOLDER_INT_H
#define FG_NODEAGENT_HOLDER_HOLDER_INT_H

#include <pthread.h>
#include <stdbool.h>

#include "exporter/nvml.h"
#include "nodeagent/holder/gpu.h"
#include "nodeagent/holder/holder.h"
#include "nodeagent/holder/mps.h"
#include "nodeagent/holder/pod.h"
#include "nodeagent/holder/stop.h"
#include "operator/kube/loop.h"

#define FG_HOLDER_COMPONENT "capacity-holder"

struct fg_holder {
    struct fg_holder_opts opts;      /* strings owned */
    struct fg_nvml nvml;
    struct fg_holder_gpu gpu;
    struct fg_kube_loop *loop;       /* the manager's */
    struct fg_holder_stop stop;
    pthread_t thread;
    bool running;

    /* under stop.mu */
    bool mps_wanted;                 /* the pod asks for MPS */
    bool reported, mps_up, failed;
    char status[256];                /* what it waits for, for /readyz */

    /* the thread's */
    struct fg_holder_want want;
    struct fg_holder_mps mps;
    bool mps_ready;                  /* mps initialised (directories made) */
    bool mode_taken;
    nvmlComputeMode_t previous_mode;
    char mode_path[4096];
    unsigned restarts;
};

/* The thread's body (holder.c). */
void *fg__holder_main(void *arg);

#endif
