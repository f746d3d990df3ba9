/*
 * sample — one reading of every GPU and GPU process on the node, taken through NVML.
 *
 * fg_sample_take walks the devices NVML reports (and, where MIG is on, their MIG instances) and
 * fills a `struct fg_sample`: per device its identity, memory (total, used, and the driver's
 * reservation apart where the driver reports it), its utilization duty cycle, and the processes
 * using it with host PID, memory and SM utilization. Unknown values are kept unknown (-1 or a false
 * *_known flag), never turned into zero: a MIG instance has a compute figure only where GPM reports
 * one (Hopper and later, from the second sample on), and its processes never have one.
 *
 * A failing device does not fail the sample: it is kept with `error` set and what could be read.
 * Only a failure to count devices fails the call. Process lists use NVML's count protocol and
 * survive drivers that write entries of a different size than the header declares (see
 * procs.c). Process utilization is read incrementally: `struct fg_sampler` remembers, per device
 * UUID, the newest timestamp seen and passes it back to NVML the next time.
 *
 * Ownership: the caller owns the sample (fg_sample_cleanup) and the sampler (fg_sampler_cleanup);
 * the sampler borrows the NVML table.
 */
#ifndef FG_EXPORTER_SAMPLE_H
#define FG_EXPORTER_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "exporter/nvml.h"

#define FG_NO_GPU_INSTANCE 0xFFFFFFFFu

struct fg_proc_sample {
    unsigned pid;
    bool mem_known;
    uint64_t mem_used;          /* bytes */
    int sm_util;                /* percent 0..100 over the last interval; -1 = unknown */
    unsigned gpu_instance;      /* MIG GPU instance id, FG_NO_GPU_INSTANCE outside MIG */
    bool mps;                   /* listed as an MPS client */
};

struct fg_device_sample {
    unsigned index;                     /* NVML index; for a MIG instance, its parent's */
    bool mig;                           /* a MIG instance of device `index` */
    unsigned gpu_instance;              /* MIG GPU instance id, FG_NO_GPU_INSTANCE otherwise */
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    char model[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    bool mem_known;
    uint64_t mem_total, mem_used;       /* bytes; used excludes the reservation when reserved_known */
    bool reserved_known;
    uint64_t mem_reserved;
    int util;                           /* duty cycle percent 0..100; -1 = unknown */
    struct fg_proc_sample *procs;
    size_t nprocs;
    char error[128];                    /* "" when every reading succeeded */
};

struct fg_sample {
    struct fg_device_sample *devs;
    size_t ndevs;
    size_t nerrors;                     /* readings that failed (devices and their parts) */
};

/* Per-device memory between samples (the last process-utilization timestamp). */
struct fg_sampler {
    struct fg_nvml *nv;
    struct fg_sampler_seen *seen;
    size_t nseen;
};

void fg_sampler_init(struct fg_sampler *s, struct fg_nvml *nv);
void fg_sampler_cleanup(struct fg_sampler *s);

/* Reads everything into *out (overwritten). FG_E_IO when the devices cannot be counted (errmsg
 * says why; *out is then empty). */
enum fg_err fg_sample_take(struct fg_sampler *s, struct fg_sample *out, char *errmsg) FG_MUST_USE;
void fg_sample_cleanup(struct fg_sample *smp);

/* Internal to the module: one process list through the count protocol, stride-checked.
 * *out (caller frees) gets *n entries; *stride the entry size the driver wrote (0 when it wrote
 * none). NVML_ERROR_UNKNOWN when the entries fit no known layout. */
nvmlReturn_t fg__procs_get(fg_nvml_proc_fn *fn, nvmlDevice_t dev, struct fg_proc_sample **out, size_t *n,
                           size_t *stride);

#endif
