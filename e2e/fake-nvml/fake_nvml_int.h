/*
 * fake_nvml_int — what the fake NVML's two files share: the device table, its lock and the visible
 * subset (fake_nvml.c loads them from the state file; fake_nvml_holder.c answers the capacity
 * holder's calls from them). Nothing outside e2e/fake-nvml includes it, and its symbols stay out of
 * the library's exports.
 */
#ifndef FG_E2E_FAKE_NVML_INT_H
#define FG_E2E_FAKE_NVML_INT_H

#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>

#include "exporter/nvml.h"

#define FAKE_HIDDEN __attribute__((visibility("hidden")))

#define FAKE_MAX_GPUS 16
#define FAKE_MAX_MIG 8
#define FAKE_MAX_PROCS 1024

struct fake_proc {
    unsigned pid, gi, ci;
    unsigned long long used;
};

struct fake_sample {
    unsigned pid, sm, mem;
    unsigned long long ts;
};

struct nvmlDevice_st {
    bool present, mig;
    unsigned index, gi;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE], name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    unsigned long long total, used, reserved;
    int util;
    bool memory_v2, gpm;
    unsigned gpm_sm;
    unsigned stride;
    int count_hint;   /* -1: the true count */
    nvmlReturn_t error, procs_error, samples_error;
    struct fake_proc *procs, *mps;
    unsigned nprocs, nmps;
    struct fake_sample *samples;
    unsigned nsamples;
    unsigned nmig;
    unsigned minor;
    nvmlComputeMode_t compute_mode;   /* the state's; the modes file overrides it */
    nvmlReturn_t compute_mode_error, set_compute_mode_error;
};

extern FAKE_HIDDEN pthread_mutex_t fake_mu;
extern FAKE_HIDDEN struct nvmlDevice_st fake_gpus[FAKE_MAX_GPUS];   /* slots, in the state's order */
extern FAKE_HIDDEN unsigned fake_ngpus;
extern FAKE_HIDDEN unsigned fake_visible[FAKE_MAX_GPUS];   /* index as NVML numbers it -> slot */
extern FAKE_HIDDEN unsigned fake_nvisible;
extern FAKE_HIDDEN bool fake_initialised;

/* A compute mode written as a number or as its name in lower case; DEFAULT when absent or unknown. */
FAKE_HIDDEN nvmlComputeMode_t fake_mode_of(json_object *v);
/* Numbers the visible GPUs as NVML inside a container does: 0.., in the state's order. fake_mu held. */
FAKE_HIDDEN void fake_select_visible(void);

/* Every device call starts here: the device's forced error, or success. */
#define DEVICE_ENTRY(dev)                                                          \
    do {                                                                           \
        if (!fake_initialised)                                                     \
            return NVML_ERROR_UNINITIALIZED;                                       \
        if (!(dev))                                                                \
            return NVML_ERROR_INVALID_ARGUMENT;                                    \
    } while (0)

#endif
