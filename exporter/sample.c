/* sample — reading every device and its processes through NVML; see sample.h. */
#include "exporter/sample.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"

#define FG_SAMPLE_MAX_DEVICES 64
#define FG_SAMPLE_MAX_UTIL_ROWS 16384

struct fg_sampler_seen {
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    unsigned long long last_ts;
    size_t quirk_stride;    /* the odd stride last logged for this device, 0 = none */
    nvmlGpmSample_t gpm_prev;   /* a MIG instance's previous GPM sample, NULL until the first */
};

void fg_sampler_init(struct fg_sampler *s, struct fg_nvml *nv)
{
    memset(s, 0, sizeof *s);
    s->nv = nv;
}

void fg_sampler_cleanup(struct fg_sampler *s)
{
    for (size_t i = 0; i < s->nseen; i++)
        if (s->seen[i].gpm_prev)
            (void)s->nv->gpm_sample_free(s->seen[i].gpm_prev);
    free(s->seen);
    memset(s, 0, sizeof *s);
}

static struct fg_sampler_seen *seen_get(struct fg_sampler *s, const char *uuid)
{
    for (size_t i = 0; i < s->nseen; i++)
        if (strcmp(s->seen[i].uuid, uuid) == 0)
            return &s->seen[i];
    s->seen = fg_realloc(s->seen, (s->nseen + 1) * sizeof *s->seen);
    struct fg_sampler_seen *e = &s->seen[s->nseen++];
    memset(e, 0, sizeof *e);
    snprintf(e->uuid, sizeof e->uuid, "%s", uuid);
    return e;
}

/* Notes a failed reading on the device (the first one names the error) and counts it. */
static void dev_fail(struct fg_sampler *s, struct fg_sample *smp, struct fg_device_sample *d, const char *what,
                     nvmlReturn_t r)
{
    smp->nerrors++;
    if (!d->error[0])
        snprintf(d->error, sizeof d->error, "%s: %s", what, fg_nvml_strerror(s->nv, r));
}

static struct fg_proc_sample *proc_find(struct fg_device_sample *d, unsigned pid)
{
    for (size_t i = 0; i < d->nprocs; i++)
        if (d->procs[i].pid == pid)
            return &d->procs[i];
    return NULL;
}

/* Appends a process list. A driver may list an MPS client in both lists: it is kept once, marked. */
static void append_procs(struct fg_device_sample *d, struct fg_proc_sample *p, size_t n, bool mps)
{
    if (!n)
        return;
    d->procs = fg_realloc(d->procs, (d->nprocs + n) * sizeof *d->procs);
    for (size_t i = 0; i < n; i++) {
        struct fg_proc_sample *known = mps ? proc_find(d, p[i].pid) : NULL;
        if (known) {
            known->mps = true;
            continue;
        }
        p[i].mps = mps;
        d->procs[d->nprocs++] = p[i];
    }
}

static void read_procs(struct fg_sampler *s, struct fg_sample *smp, struct fg_device_sample *d, nvmlDevice_t dev,
                       struct fg_sampler_seen *seen)
{
    fg_nvml_proc_fn *fns[2] = { s->nv->get_compute_procs, s->nv->get_mps_procs };
    for (int k = 0; k < 2; k++) {
        if (!fns[k])
            continue;
        struct fg_proc_sample *p;
        size_t n, stride;
        nvmlReturn_t r = fg__procs_get(fns[k], dev, &p, &n, &stride);
        if (r == NVML_ERROR_NOT_SUPPORTED && k == 1)
            continue;   /* no MPS on this device */
        if (r != NVML_SUCCESS) {
            dev_fail(s, smp, d, k ? "MPS processes" : "compute processes", r);
            continue;
        }
        if (stride && stride != sizeof(nvmlProcessInfo_v2_t) && seen->quirk_stride != stride) {
            seen->quirk_stride = stride;
            fg_log(FG_LOG_WARN, "exporter", "GPU %s: driver writes %zu-byte process entries (header: %zu); "
                   "decoding at the driver's stride", d->uuid, stride, sizeof(nvmlProcessInfo_v2_t));
        }
        append_procs(d, p, n, k == 1);
        free(p);
    }
}

/* SM utilization per process since the last sample. Rows for PIDs not in the process list or with
 * values above 100 are dropped; a process with several rows gets their mean. */
static void read_proc_util(struct fg_sampler *s, struct fg_sample *smp, struct fg_device_sample *d,
                           nvmlDevice_t dev, struct fg_sampler_seen *seen)
{
    unsigned count = 0;
    nvmlReturn_t r = s->nv->get_process_utilization(dev, NULL, &count, seen->last_ts);
    if (r == NVML_ERROR_NOT_FOUND || (r == NVML_SUCCESS && count == 0)) {
        for (size_t i = 0; i < d->nprocs; i++)
            d->procs[i].sm_util = 0;   /* no samples since the last look: nothing ran */
        return;
    }
    if (r == NVML_ERROR_NOT_SUPPORTED)
        return;   /* stays unknown */
    if (r != NVML_ERROR_INSUFFICIENT_SIZE && r != NVML_SUCCESS) {
        dev_fail(s, smp, d, "process utilization", r);
        return;
    }
    if (count > FG_SAMPLE_MAX_UTIL_ROWS)
        count = FG_SAMPLE_MAX_UTIL_ROWS;
    unsigned room = count + count / 2 + 8;
    nvmlProcessUtilizationSample_t *rows = fg_calloc(room, sizeof *rows);
    unsigned got = room;
    r = s->nv->get_process_utilization(dev, rows, &got, seen->last_ts);
    if (r == NVML_ERROR_NOT_FOUND) {
        got = 0;
    } else if (r != NVML_SUCCESS) {
        dev_fail(s, smp, d, "process utilization", r);
        goto out_free_rows;
    }
    if (got > room)
        got = room;
    unsigned *sum = fg_calloc(d->nprocs ? d->nprocs : 1, sizeof *sum);
    unsigned *nrows = fg_calloc(d->nprocs ? d->nprocs : 1, sizeof *nrows);
    for (unsigned i = 0; i < got; i++) {
        if (rows[i].timeStamp > seen->last_ts)
            seen->last_ts = rows[i].timeStamp;
        struct fg_proc_sample *p = proc_find(d, rows[i].pid);
        if (!p || rows[i].smUtil > 100)
            continue;
        sum[p - d->procs] += rows[i].smUtil;
        nrows[p - d->procs]++;
    }
    for (size_t i = 0; i < d->nprocs; i++)
        d->procs[i].sm_util = nrows[i] ? (int)(sum[i] / nrows[i]) : 0;
    free(sum);
    free(nrows);
out_free_rows:
    free(rows);
}

/* Returns the UUID call's result, which tells a lost GPU. */
static nvmlReturn_t read_identity(struct fg_sampler *s, struct fg_sample *smp, struct fg_device_sample *d,
                                  nvmlDevice_t dev)
{
    nvmlReturn_t ru = s->nv->get_uuid(dev, d->uuid, sizeof d->uuid);
    if (ru != NVML_SUCCESS) {
        d->uuid[0] = '\0';
        dev_fail(s, smp, d, "UUID", ru);
    }
    d->uuid[sizeof d->uuid - 1] = '\0';
    nvmlReturn_t r = s->nv->get_name(dev, d->model, sizeof d->model);
    if (r != NVML_SUCCESS) {
        d->model[0] = '\0';
        if (ru == NVML_SUCCESS)
            dev_fail(s, smp, d, "name", r);
    }
    d->model[sizeof d->model - 1] = '\0';
    return ru;
}

static void read_memory(struct fg_sampler *s, struct fg_sample *smp, struct fg_device_sample *d, nvmlDevice_t dev)
{
    if (s->nv->get_memory_v2) {
        nvmlMemory_v2_t m = { .version = nvmlMemory_v2 };
        nvmlReturn_t r = s->nv->get_memory_v2(dev, &m);
        if (r == NVML_SUCCESS) {
            d->mem_known = d->reserved_known = true;
            d->mem_total = m.total;
            d->mem_used = m.used;
            d->mem_reserved = m.reserved;
            return;
        }
        if (r != NVML_ERROR_NOT_SUPPORTED && r != NVML_ERROR_FUNCTION_NOT_FOUND &&
            r != NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
            dev_fail(s, smp, d, "memory", r);
            return;
        }
    }
    nvmlMemory_t m;
    nvmlReturn_t r = s->nv->get_memory(dev, &m);
    if (r != NVML_SUCCESS) {
        dev_fail(s, smp, d, "memory", r);
        return;
    }
    d->mem_known = true;
    d->mem_total = m.total;
    d->mem_used = m.used;
}

static struct fg_device_sample *dev_add(struct fg_sample *smp, unsigned index)
{
    smp->devs = fg_realloc(smp->devs, (smp->ndevs + 1) * sizeof *smp->devs);
    struct fg_device_sample *d = &smp->devs[smp->ndevs++];
    memset(d, 0, sizeof *d);
    d->index = index;
    d->gpu_instance = FG_NO_GPU_INSTANCE;
    d->util = -1;
    return d;
}

static bool gpm_supported(struct fg_sampler *s, nvmlDevice_t dev)
{
    nvmlGpmSupport_t sup = { .version = NVML_GPM_SUPPORT_VERSION };
    return s->nv->gpm_query_support && s->nv->gpm_query_support(dev, &sup) == NVML_SUCCESS && sup.isSupportedDevice;
}

/* A MIG instance's SM utilization from GPM: the metric between the previous sample and this one (so
 * the first sample of an instance leaves it unknown). */
static void read_gpm(struct fg_sampler *s, struct fg_sample *smp, struct fg_device_sample *m, nvmlDevice_t parent)
{
    struct fg_sampler_seen *seen = seen_get(s, m->uuid);
    nvmlGpmSample_t cur;
    nvmlReturn_t r = s->nv->gpm_sample_alloc(&cur);
    if (r != NVML_SUCCESS) {
        dev_fail(s, smp, m, "GPM sample", r);
        return;
    }
    r = s->nv->gpm_mig_sample_get(parent, m->gpu_instance, cur);
    if (r != NVML_SUCCESS) {
        (void)s->nv->gpm_sample_free(cur);
        dev_fail(s, smp, m, "GPM sample", r);
        return;
    }
    if (seen->gpm_prev) {
        nvmlGpmMetricsGet_t mg;
        memset(&mg, 0, sizeof mg);
        mg.version = NVML_GPM_METRICS_GET_VERSION;
        mg.numMetrics = 1;
        mg.sample1 = seen->gpm_prev;
        mg.sample2 = cur;
        mg.metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
        r = s->nv->gpm_metrics_get(&mg);
        if (r == NVML_SUCCESS && mg.metrics[0].nvmlReturn == NVML_SUCCESS && mg.metrics[0].value >= 0 &&
            mg.metrics[0].value <= 100)
            m->util = (int)(mg.metrics[0].value + 0.5);
        else if (r != NVML_SUCCESS)
            dev_fail(s, smp, m, "GPM metrics", r);
        (void)s->nv->gpm_sample_free(seen->gpm_prev);
    }
    seen->gpm_prev = cur;
}

/* MIG instances of device `di` (an index into smp->devs): memory per instance, processes moved from
 * the parent by GPU instance id; compute from GPM where the device has it (Hopper and later), else
 * unknown. */
static void read_mig(struct fg_sampler *s, struct fg_sample *smp, size_t di, nvmlDevice_t dev)
{
    unsigned cur = 0, pending = 0, max = 0;
    if (!s->nv->get_mig_mode || !s->nv->get_max_mig_count || !s->nv->get_mig_handle || !s->nv->get_gpu_instance_id)
        return;
    if (s->nv->get_mig_mode(dev, &cur, &pending) != NVML_SUCCESS || cur != NVML_DEVICE_MIG_ENABLE)
        return;
    smp->devs[di].util = -1;   /* a MIG parent's duty cycle is not reported by NVML */
    if (s->nv->get_max_mig_count(dev, &max) != NVML_SUCCESS)
        return;
    bool gpm = gpm_supported(s, dev);
    for (unsigned i = 0; i < max; i++) {
        nvmlDevice_t mig;
        if (s->nv->get_mig_handle(dev, i, &mig) != NVML_SUCCESS)
            continue;   /* an empty slot */
        struct fg_device_sample *m = dev_add(smp, smp->devs[di].index);
        m->mig = true;
        nvmlReturn_t r = s->nv->get_gpu_instance_id(mig, &m->gpu_instance);
        if (r != NVML_SUCCESS) {
            m->gpu_instance = FG_NO_GPU_INSTANCE;
            dev_fail(s, smp, m, "GPU instance id", r);
        }
        (void)read_identity(s, smp, m, mig);
        snprintf(m->model, sizeof m->model, "%s", smp->devs[di].model);
        read_memory(s, smp, m, mig);
        if (gpm && m->gpu_instance != FG_NO_GPU_INSTANCE && m->uuid[0])
            read_gpm(s, smp, m, dev);
        struct fg_device_sample *parent = &smp->devs[di];
        for (size_t k = 0; k < parent->nprocs;) {
            if (parent->procs[k].gpu_instance == m->gpu_instance && m->gpu_instance != FG_NO_GPU_INSTANCE) {
                parent->procs[k].sm_util = -1;   /* per-process SM samples do not cover MIG */
                append_procs(m, &parent->procs[k], 1, parent->procs[k].mps);
                parent->procs[k] = parent->procs[--parent->nprocs];
            } else {
                k++;
            }
        }
    }
}

enum fg_err fg_sample_take(struct fg_sampler *s, struct fg_sample *out, char *errmsg)
{
    memset(out, 0, sizeof *out);
    unsigned n = 0;
    nvmlReturn_t r = s->nv->get_count(&n);
    if (r != NVML_SUCCESS)
        return fg_errmsg(errmsg, FG_E_IO, "nvmlDeviceGetCount_v2: %s (%d)", fg_nvml_strerror(s->nv, r), (int)r);
    if (n > FG_SAMPLE_MAX_DEVICES)
        n = FG_SAMPLE_MAX_DEVICES;
    for (unsigned i = 0; i < n; i++) {
        struct fg_device_sample *d = dev_add(out, i);
        size_t di = out->ndevs - 1;
        nvmlDevice_t dev;
        r = s->nv->get_handle(i, &dev);
        if (r != NVML_SUCCESS) {
            dev_fail(s, out, d, "handle", r);
            continue;
        }
        if (read_identity(s, out, d, dev) == NVML_ERROR_GPU_IS_LOST)
            continue;   /* nothing else will answer either */
        read_memory(s, out, d, dev);
        nvmlUtilization_t u;
        r = s->nv->get_utilization(dev, &u);
        if (r == NVML_SUCCESS && u.gpu <= 100)
            d->util = (int)u.gpu;
        else if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_SUPPORTED)
            dev_fail(s, out, d, "utilization", r);
        struct fg_sampler_seen *seen = seen_get(s, d->uuid);
        read_procs(s, out, d, dev, seen);
        read_proc_util(s, out, d, dev, seen);
        read_mig(s, out, di, dev);
    }
    return FG_OK;
}

void fg_sample_cleanup(struct fg_sample *smp)
{
    for (size_t i = 0; i < smp->ndevs; i++)
        free(smp->devs[i].procs);
    free(smp->devs);
    memset(smp, 0, sizeof *smp);
}
