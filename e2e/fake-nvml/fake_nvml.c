/*
 * fake_nvml — a libnvidia-ml.so for machines without a GPU.
 *
 * It exports, under their real names and signatures (exporter/nvml.h), every NVML call the exporter
 * and the capacity holder make, and answers from a JSON state file named by $FG_FAKE_NVML_STATE,
 * re-read whenever the file changes, so a test can change the "hardware" under a running exporter:
 *
 *   { "init": "ok" | "<error>",            nvmlInit_v2's answer ("driver_not_loaded", ...)
 *     "count_error": "<error>",            nvmlDeviceGetCount_v2 fails
 *     "gpus": [ { "uuid", "name", "total", "used", "reserved",
 *                 "util": 0..100,           absent: utilization not supported
 *                 "error": "<error>",       every call on this device fails so ("gpu_is_lost")
 *                 "memory_v2": false,       nvmlDeviceGetMemoryInfo_v2 not supported here
 *                 "stride": 16 | 24 | 32,   bytes per process entry the "driver" writes (quirk)
 *                 "procs": [ { "pid", "used", "gi", "ci" } ], "mps_procs": [ ... ],
 *                 "procs_error": "<error>",
 *                 "count_hint": N,          the count a NULL-buffer call reports (processes that start
 *                                           between the count and the fetch)
 *                 "samples": [ { "pid", "ts", "sm", "mem" } ], "samples_error": "<error>",
 *                                           (ts 0: "now", a fresh sample at every call)
 *                 "gpm": true,              GPM supported (Hopper and later)
 *                 "minor": N,               /dev/nvidiaN (default: the GPU's position in "gpus")
 *                 "compute_mode": M,        the mode until someone sets another: 0 DEFAULT,
 *                                           2 PROHIBITED, 3 EXCLUSIVE_PROCESS (or those names in
 *                                           lower case); default 0
 *                 "compute_mode_error": "<error>",      nvmlDeviceGetComputeMode fails so
 *                 "set_compute_mode_error": "<error>",  nvmlDeviceSetComputeMode fails so
 *                                           ("no_permission": the caller is not root)
 *                 "mig": [ { "gi", "uuid", "total", "used", "sm": 0..100 } ] } ] }   sm: GPM SM activity
 *
 * Errors are named by their NVML suffix in lower case: "not_supported", "gpu_is_lost",
 * "driver_not_loaded", "no_permission", "uninitialized", "unknown". Device handles point into static
 * tables, so they stay valid across reloads (a GPU that went away answers "gpu_is_lost"). Only
 * json-c and libc are used, so the library loads into any process.
 *
 * Compute modes outlive the process that set them, as a real GPU's do, but the state file is not
 * theirs to write: it belongs to whoever drives the fake (a test, the simulated cluster), which
 * rewrites it whole. So a mode set through nvmlDeviceSetComputeMode goes to a file of its own beside
 * the state, "<state>.modes.json": one object, GPU UUID to mode number ({"GPU-1": 3}), replaced
 * atomically (written to a temporary name, then renamed) under an flock on "<state>.modes.lock", so
 * processes that set modes on different GPUs of one node never lose each other's writes. Every
 * nvmlDeviceGetComputeMode reads it afresh; a UUID it does not name has the state's "compute_mode".
 * Deleting the file resets every GPU.
 *
 * Device visibility: a container sees only the GPUs whose device nodes its runtime mounted, and NVML
 * inside it enumerates only those, numbered from 0. When $FG_FAKE_NVML_VISIBLE is set (read at
 * nvmlInit_v2, which always loads the state, and at each reload) it is that list — GPU UUIDs separated by commas, empty for none — and only the state's
 * GPUs it names are visible: the count, the handles by index and nvmlDeviceGetIndex are over them, in
 * the state's order; a UUID the state does not hold is simply not there. Unset, every GPU is
 * visible. nvmlDeviceGetMinorNumber keeps the host's number, as the real device node does.
 */
#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "e2e/fake-nvml/fake_nvml_int.h"

pthread_mutex_t fake_mu = PTHREAD_MUTEX_INITIALIZER;
struct nvmlDevice_st fake_gpus[FAKE_MAX_GPUS];
static struct nvmlDevice_st migs[FAKE_MAX_GPUS][FAKE_MAX_MIG];
unsigned fake_ngpus;
unsigned fake_visible[FAKE_MAX_GPUS];
unsigned fake_nvisible;
static nvmlReturn_t init_result, count_error;
bool fake_initialised;
static struct timespec loaded_mtime;
static off_t loaded_size = -1;
static ino_t loaded_ino;

static nvmlReturn_t err_named(const char *s)
{
    static const struct { const char *name; nvmlReturn_t r; } names[] = {
        { "ok", NVML_SUCCESS }, { "not_supported", NVML_ERROR_NOT_SUPPORTED },
        { "gpu_is_lost", NVML_ERROR_GPU_IS_LOST }, { "driver_not_loaded", NVML_ERROR_DRIVER_NOT_LOADED },
        { "no_permission", NVML_ERROR_NO_PERMISSION }, { "uninitialized", NVML_ERROR_UNINITIALIZED },
        { "unknown", NVML_ERROR_UNKNOWN }, { "lib_rm_version_mismatch", NVML_ERROR_LIB_RM_VERSION_MISMATCH },
    };
    if (!s)
        return NVML_SUCCESS;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].name) == 0)
            return names[i].r;
    return NVML_ERROR_UNKNOWN;
}

static json_object *member(json_object *o, const char *k)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static unsigned long long num(json_object *o, const char *k, unsigned long long dflt)
{
    json_object *v = member(o, k);
    return v ? (unsigned long long)json_object_get_uint64(v) : dflt;
}

static const char *str(json_object *o, const char *k)
{
    json_object *v = member(o, k);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static unsigned load_procs(json_object *arr, struct fake_proc **outp)
{
    size_t len = arr ? json_object_array_length(arr) : 0;
    struct fake_proc *out = *outp = calloc(len ? len : 1, sizeof *out);
    unsigned n = 0;
    if (!out)
        return 0;
    for (size_t i = 0; arr && i < json_object_array_length(arr) && n < FAKE_MAX_PROCS; i++) {
        json_object *p = json_object_array_get_idx(arr, i);
        out[n++] = (struct fake_proc){ (unsigned)num(p, "pid", 0), (unsigned)num(p, "gi", 0xFFFFFFFFu),
                                       (unsigned)num(p, "ci", 0xFFFFFFFFu), num(p, "used", 0) };
    }
    return n;
}

static void load_device(struct nvmlDevice_st *d, json_object *g, unsigned index)
{
    free(d->samples);
    free(d->procs);
    free(d->mps);
    memset(d, 0, sizeof *d);
    d->present = true;
    d->index = index;
    strncpy(d->uuid, str(g, "uuid") ? str(g, "uuid") : "GPU-00000000-0000-0000-0000-000000000000", sizeof d->uuid - 1);
    strncpy(d->name, str(g, "name") ? str(g, "name") : "NVIDIA Fake GPU", sizeof d->name - 1);
    d->total = num(g, "total", 0);
    d->used = num(g, "used", 0);
    d->reserved = num(g, "reserved", 0);
    d->util = member(g, "util") ? (int)num(g, "util", 0) : -1;
    d->memory_v2 = member(g, "memory_v2") ? json_object_get_boolean(member(g, "memory_v2")) : true;
    d->gpm = member(g, "gpm") ? json_object_get_boolean(member(g, "gpm")) : false;
    d->gpm_sm = (unsigned)num(g, "sm", 0);
    d->stride = (unsigned)num(g, "stride", sizeof(nvmlProcessInfo_v2_t));
    d->count_hint = member(g, "count_hint") ? (int)num(g, "count_hint", 0) : -1;
    d->error = err_named(str(g, "error"));
    d->procs_error = err_named(str(g, "procs_error"));
    d->samples_error = err_named(str(g, "samples_error"));
    d->minor = (unsigned)num(g, "minor", index);
    d->compute_mode = fake_mode_of(member(g, "compute_mode"));
    d->compute_mode_error = err_named(str(g, "compute_mode_error"));
    d->set_compute_mode_error = err_named(str(g, "set_compute_mode_error"));
    d->nprocs = load_procs(member(g, "procs"), &d->procs);
    d->nmps = load_procs(member(g, "mps_procs"), &d->mps);
    json_object *s = member(g, "samples");
    size_t ns = s ? json_object_array_length(s) : 0;
    d->samples = calloc(ns ? ns : 1, sizeof *d->samples);
    for (size_t i = 0; d->samples && i < ns; i++) {
        json_object *e = json_object_array_get_idx(s, i);
        d->samples[d->nsamples++] = (struct fake_sample){ (unsigned)num(e, "pid", 0), (unsigned)num(e, "sm", 0),
                                                          (unsigned)num(e, "mem", 0), num(e, "ts", 0) };
    }
}

/* Re-reads the state file when it changed. Called with fake_mu held. */
static void reload(void)
{
    const char *path = getenv("FG_FAKE_NVML_STATE");
    struct stat st;
    if (!path || stat(path, &st) != 0) {
        init_result = NVML_ERROR_DRIVER_NOT_LOADED;
        return;
    }
    if (st.st_ino == loaded_ino && st.st_size == loaded_size && st.st_mtim.tv_sec == loaded_mtime.tv_sec &&
        st.st_mtim.tv_nsec == loaded_mtime.tv_nsec)
        return;
    json_object *root = json_object_from_file(path);
    if (!root) {
        init_result = NVML_ERROR_UNKNOWN;
        return;
    }
    loaded_size = st.st_size;
    loaded_ino = st.st_ino;
    loaded_mtime = st.st_mtim;
    init_result = err_named(str(root, "init"));
    count_error = err_named(str(root, "count_error"));
    json_object *arr = member(root, "gpus");
    unsigned n = arr ? (unsigned)json_object_array_length(arr) : 0;
    if (n > FAKE_MAX_GPUS)
        n = FAKE_MAX_GPUS;
    for (unsigned i = 0; i < FAKE_MAX_GPUS; i++) {
        if (i >= n) {
            /* a GPU that went away: its old handle answers "lost" */
            fake_gpus[i].error = NVML_ERROR_GPU_IS_LOST;
            continue;
        }
        json_object *g = json_object_array_get_idx(arr, i);
        load_device(&fake_gpus[i], g, i);
        json_object *mig = member(g, "mig");
        unsigned nm = mig ? (unsigned)json_object_array_length(mig) : 0;
        fake_gpus[i].nmig = nm > FAKE_MAX_MIG ? FAKE_MAX_MIG : nm;
        for (unsigned k = 0; k < FAKE_MAX_MIG; k++) {
            migs[i][k].present = false;
            if (k >= fake_gpus[i].nmig)
                continue;
            json_object *m = json_object_array_get_idx(mig, k);
            load_device(&migs[i][k], m, i);
            migs[i][k].mig = true;
            migs[i][k].gi = (unsigned)num(m, "gi", k);
            migs[i][k].util = -1;
            strncpy(migs[i][k].name, fake_gpus[i].name, sizeof migs[i][k].name - 1);
        }
    }
    fake_ngpus = n;
    json_object_put(root);
    fake_select_visible();
}

nvmlReturn_t nvmlInit_v2(void)
{
    pthread_mutex_lock(&fake_mu);
    loaded_size = -1;
    reload();
    nvmlReturn_t r = init_result;
    fake_initialised = r == NVML_SUCCESS;
    pthread_mutex_unlock(&fake_mu);
    return r;
}

nvmlReturn_t nvmlShutdown(void)
{
    pthread_mutex_lock(&fake_mu);
    bool was = fake_initialised;
    fake_initialised = false;
    pthread_mutex_unlock(&fake_mu);
    return was ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
    pthread_mutex_lock(&fake_mu);
    reload();
    nvmlReturn_t r = !fake_initialised ? NVML_ERROR_UNINITIALIZED : count_error;
    if (r == NVML_SUCCESS && init_result != NVML_SUCCESS)
        r = init_result;   /* the driver went away under a running process */
    if (r == NVML_SUCCESS)
        *n = fake_nvisible;
    pthread_mutex_unlock(&fake_mu);
    return r;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *dev)
{
    if (!fake_initialised)
        return NVML_ERROR_UNINITIALIZED;
    pthread_mutex_lock(&fake_mu);
    nvmlReturn_t r = i < fake_nvisible ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
    if (r == NVML_SUCCESS)
        *dev = &fake_gpus[fake_visible[i]];
    pthread_mutex_unlock(&fake_mu);
    return r;
}

static nvmlReturn_t copy_str(nvmlDevice_t dev, const char *s, char *out, unsigned int len)
{
    DEVICE_ENTRY(dev);
    if (dev->error)
        return dev->error;
    if (strlen(s) + 1 > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned int len)
{
    pthread_mutex_lock(&fake_mu);
    nvmlReturn_t r = copy_str(dev, dev ? dev->uuid : "", uuid, len);
    pthread_mutex_unlock(&fake_mu);
    return r;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned int len)
{
    pthread_mutex_lock(&fake_mu);
    nvmlReturn_t r = copy_str(dev, dev ? dev->name : "", name, len);
    pthread_mutex_unlock(&fake_mu);
    return r;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m)
{
    DEVICE_ENTRY(dev);
    pthread_mutex_lock(&fake_mu);
    nvmlReturn_t r = dev->error;
    if (!r) {
        /* v1 counts the reservation as used */
        m->total = dev->total;
        m->used = dev->used + dev->reserved;
        m->free = dev->total > m->used ? dev->total - m->used : 0;
    }
    pthread_mutex_unlock(&fake_mu);
    return r;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *m)
{
    DEVICE_ENTRY(dev);
    if (m->version != nvmlMemory_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    pthread_mutex_lock(&fake_mu);
    nvmlReturn_t r = dev->error ? dev->error : !dev->memory_v2 ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
    if (!r) {
        m->total = dev->total;
        m->reserved = dev->reserved;
        m->used = dev->used;
        m->free = dev->total > dev->used + dev->reserved ? dev->total - dev->used - dev->reserved : 0;
    }
    pthread_mutex_unlock(&fake_mu);
    return r;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *u)
{
    DEVICE_ENTRY(dev);
    pthread_mutex_lock(&fake_mu);
    nvmlReturn_t r = dev->error ? dev->error : dev->util < 0 ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
    if (!r)
        *u = (nvmlUtilization_t){ (unsigned)dev->util, 0 };
    pthread_mutex_unlock(&fake_mu);
    return r;
}

/* The count protocol and the "driver" entry stride. */
static nvmlReturn_t procs(nvmlDevice_t dev, bool mps, unsigned int *count, nvmlProcessInfo_t *infos)
{
    DEVICE_ENTRY(dev);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&fake_mu);
    nvmlReturn_t r = dev->error ? dev->error : dev->procs_error;
    const struct fake_proc *src = mps ? dev->mps : dev->procs;
    unsigned n = mps ? dev->nmps : dev->nprocs;
    if (r) {
        /* nothing */
    } else if (!infos) {
        *count = dev->count_hint >= 0 ? (unsigned)dev->count_hint : n;
        r = n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    } else if (*count < n) {
        *count = n;
        r = NVML_ERROR_INSUFFICIENT_SIZE;
    } else {
        unsigned char *out = (unsigned char *)infos;
        for (unsigned i = 0; i < n; i++) {
            nvmlProcessInfo_v2_t e = { src[i].pid, src[i].used, src[i].gi, src[i].ci };
            unsigned char *slot = out + (size_t)i * dev->stride;
            memset(slot, 0, dev->stride);
            memcpy(slot, &e, dev->stride < sizeof e ? dev->stride : sizeof e);
        }
        *count = n;
    }
    pthread_mutex_unlock(&fake_mu);
    return r;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count, nvmlProcessInfo_t *infos)
{
    return procs(dev, false, count, infos);
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count,
                                                        nvmlProcessInfo_t *infos)
{
    return procs(dev, true, count, infos);
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t dev, nvmlProcessUtilizationSample_t *s, unsigned int *count,
                                             unsigned long long last_seen)
{
    DEVICE_ENTRY(dev);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&fake_mu);
    nvmlReturn_t r = dev->error ? dev->error : dev->mig ? NVML_ERROR_NOT_SUPPORTED : dev->samples_error;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    unsigned long long now_us = (unsigned long long)now.tv_sec * 1000000ull + (unsigned long long)now.tv_nsec / 1000;
    unsigned n = 0;
    for (unsigned i = 0; !r && i < dev->nsamples; i++)
        n += (dev->samples[i].ts ? dev->samples[i].ts : now_us) > last_seen;
    if (r) {
        /* nothing */
    } else if (n == 0) {
        r = NVML_ERROR_NOT_FOUND;
    } else if (!s || *count < n) {
        *count = n;
        r = NVML_ERROR_INSUFFICIENT_SIZE;
    } else {
        unsigned k = 0;
        for (unsigned i = 0; i < dev->nsamples; i++) {
            unsigned long long ts = dev->samples[i].ts ? dev->samples[i].ts : now_us;
            if (ts > last_seen)
                s[k++] = (nvmlProcessUtilizationSample_t){ dev->samples[i].pid, ts, dev->samples[i].sm,
                                                           dev->samples[i].mem, 0, 0 };
        }
        *count = k;
    }
    pthread_mutex_unlock(&fake_mu);
    return r;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned int *cur, unsigned int *pending)
{
    DEVICE_ENTRY(dev);
    if (dev->error)
        return dev->error;
    if (dev->mig)
        return NVML_ERROR_NOT_SUPPORTED;
    *cur = *pending = dev->nmig ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t dev, unsigned int *n)
{
    DEVICE_ENTRY(dev);
    *n = dev->mig ? 0 : FAKE_MAX_MIG;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t dev, unsigned int i, nvmlDevice_t *mig)
{
    DEVICE_ENTRY(dev);
    if (dev->mig || i >= FAKE_MAX_MIG || !migs[dev->index][i].present)
        return NVML_ERROR_NOT_FOUND;
    *mig = &migs[dev->index][i];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t dev, unsigned int *id)
{
    DEVICE_ENTRY(dev);
    if (!dev->mig)
        return NVML_ERROR_INVALID_ARGUMENT;
    *id = dev->gi;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t dev, nvmlGpmSupport_t *s)
{
    DEVICE_ENTRY(dev);
    if (s->version != NVML_GPM_SUPPORT_VERSION)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    s->isSupportedDevice = dev->gpm && !dev->mig;
    return NVML_SUCCESS;
}

/* A GPM sample remembers the instance's SM activity when it was taken. */
struct nvmlGpmSample_st {
    double sm;
};

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *s)
{
    if (!s)
        return NVML_ERROR_INVALID_ARGUMENT;
    *s = calloc(1, sizeof **s);
    return *s ? NVML_SUCCESS : NVML_ERROR_MEMORY;
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s)
{
    free(s);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t dev, unsigned int gi, nvmlGpmSample_t s)
{
    DEVICE_ENTRY(dev);
    if (!s || dev->mig)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->gpm)
        return NVML_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&fake_mu);
    nvmlReturn_t r = NVML_ERROR_NOT_FOUND;
    for (unsigned k = 0; k < dev->nmig; k++)
        if (migs[dev->index][k].present && migs[dev->index][k].gi == gi) {
            s->sm = migs[dev->index][k].gpm_sm;
            r = NVML_SUCCESS;
        }
    pthread_mutex_unlock(&fake_mu);
    return r;
}

nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *m)
{
    if (!m || !m->sample1 || !m->sample2)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (m->version != NVML_GPM_METRICS_GET_VERSION)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    for (unsigned i = 0; i < m->numMetrics && i < FG_NVML_GPM_METRICS; i++) {
        bool sm = m->metrics[i].metricId == NVML_GPM_METRIC_SM_UTIL;
        m->metrics[i].nvmlReturn = sm ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
        m->metrics[i].value = sm ? m->sample2->sm : 0;
    }
    return NVML_SUCCESS;
}

/* Unloading the library frees what the state file made. */
__attribute__((destructor)) static void fake_unload(void)
{
    for (unsigned i = 0; i < FAKE_MAX_GPUS; i++) {
        free(fake_gpus[i].samples);
        free(fake_gpus[i].procs);
        free(fake_gpus[i].mps);
        for (unsigned k = 0; k < FAKE_MAX_MIG; k++) {
            free(migs[i][k].samples);
            free(migs[i][k].procs);
            free(migs[i][k].mps);
        }
    }
}
