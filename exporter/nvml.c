/* nvml — dlopen and symbol table for NVML; see nvml.h. */
#include "exporter/nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define FG_NVML_DEFAULT_LIB "libnvidia-ml.so.1"

/* Resolves the first of up to two names; NULL when neither exists. */
static void *sym2(void *dl, const char *name, const char *fallback)
{
    void *p = dlsym(dl, name);
    if (!p && fallback)
        p = dlsym(dl, fallback);
    return p;
}

/* Function pointers from dlsym: POSIX guarantees the object/function pointer round trip. */
#define FG_NVML_SYM(field, name, fallback) \
    do { *(void **)(&nv->field) = sym2(nv->dl, (name), (fallback)); } while (0)

enum fg_err fg_nvml_open(const char *path, struct fg_nvml *nv, char *errmsg)
{
    memset(nv, 0, sizeof *nv);
    const char *lib = path ? path : FG_NVML_DEFAULT_LIB;
    nv->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!nv->dl)
        return fg_errmsg(errmsg, FG_E_IO, "cannot load NVML from %s: %s", lib, dlerror());

    FG_NVML_SYM(init, "nvmlInit_v2", "nvmlInit");
    FG_NVML_SYM(shutdown, "nvmlShutdown", NULL);
    FG_NVML_SYM(error_string, "nvmlErrorString", NULL);
    FG_NVML_SYM(get_count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    FG_NVML_SYM(get_handle, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    FG_NVML_SYM(get_uuid, "nvmlDeviceGetUUID", NULL);
    FG_NVML_SYM(get_name, "nvmlDeviceGetName", NULL);
    FG_NVML_SYM(get_memory, "nvmlDeviceGetMemoryInfo", NULL);
    FG_NVML_SYM(get_memory_v2, "nvmlDeviceGetMemoryInfo_v2", NULL);
    FG_NVML_SYM(get_utilization, "nvmlDeviceGetUtilizationRates", NULL);
    FG_NVML_SYM(get_compute_procs, "nvmlDeviceGetComputeRunningProcesses_v3",
                "nvmlDeviceGetComputeRunningProcesses_v2");
    FG_NVML_SYM(get_mps_procs, "nvmlDeviceGetMPSComputeRunningProcesses_v3",
                "nvmlDeviceGetMPSComputeRunningProcesses_v2");
    FG_NVML_SYM(get_process_utilization, "nvmlDeviceGetProcessUtilization", NULL);
    FG_NVML_SYM(get_mig_mode, "nvmlDeviceGetMigMode", NULL);
    FG_NVML_SYM(get_max_mig_count, "nvmlDeviceGetMaxMigDeviceCount", NULL);
    FG_NVML_SYM(get_mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex", NULL);
    FG_NVML_SYM(get_gpu_instance_id, "nvmlDeviceGetGpuInstanceId", NULL);
    FG_NVML_SYM(gpm_query_support, "nvmlGpmQueryDeviceSupport", NULL);
    FG_NVML_SYM(gpm_sample_alloc, "nvmlGpmSampleAlloc", NULL);
    FG_NVML_SYM(gpm_sample_free, "nvmlGpmSampleFree", NULL);
    FG_NVML_SYM(gpm_mig_sample_get, "nvmlGpmMigSampleGet", NULL);
    FG_NVML_SYM(gpm_metrics_get, "nvmlGpmMetricsGet", NULL);
    FG_NVML_SYM(get_compute_mode, "nvmlDeviceGetComputeMode", NULL);
    FG_NVML_SYM(set_compute_mode, "nvmlDeviceSetComputeMode", NULL);
    FG_NVML_SYM(get_index, "nvmlDeviceGetIndex", NULL);
    FG_NVML_SYM(get_minor_number, "nvmlDeviceGetMinorNumber", NULL);
    if (!nv->gpm_query_support || !nv->gpm_sample_alloc || !nv->gpm_sample_free || !nv->gpm_mig_sample_get ||
        !nv->gpm_metrics_get)
        nv->gpm_query_support = NULL;   /* all or nothing */

    const char *missing = !nv->init ? "nvmlInit_v2"
                        : !nv->shutdown ? "nvmlShutdown"
                        : !nv->error_string ? "nvmlErrorString"
                        : !nv->get_count ? "nvmlDeviceGetCount_v2"
                        : !nv->get_handle ? "nvmlDeviceGetHandleByIndex_v2"
                        : !nv->get_uuid ? "nvmlDeviceGetUUID"
                        : !nv->get_name ? "nvmlDeviceGetName"
                        : !nv->get_memory ? "nvmlDeviceGetMemoryInfo"
                        : !nv->get_utilization ? "nvmlDeviceGetUtilizationRates"
                        : !nv->get_compute_procs ? "nvmlDeviceGetComputeRunningProcesses_v3"
                        : !nv->get_process_utilization ? "nvmlDeviceGetProcessUtilization"
                        : NULL;
    enum fg_err err;
    if (missing) {
        err = fg_errmsg(errmsg, FG_E_UNSUPPORTED, "%s lacks %s (driver too old?)", lib, missing);
        goto out_close;
    }
    nvmlReturn_t r = nv->init();
    if (r != NVML_SUCCESS) {
        err = fg_errmsg(errmsg, FG_E_CONNECT, "nvmlInit_v2: %s (%d)", nv->error_string(r), (int)r);
        goto out_close;
    }
    nv->initialised = true;
    return FG_OK;

out_close:
    dlclose(nv->dl);
    memset(nv, 0, sizeof *nv);
    return err;
}

void fg_nvml_close(struct fg_nvml *nv)
{
    if (nv->initialised)
        (void)nv->shutdown();
    if (nv->dl)
        dlclose(nv->dl);
    memset(nv, 0, sizeof *nv);
}

const char *fg_nvml_strerror(const struct fg_nvml *nv, nvmlReturn_t r)
{
    if (nv->error_string)
        return nv->error_string(r);
    return r == NVML_SUCCESS ? "success" : "NVML error";
}

const char *fg_nvml_compute_mode_name(nvmlComputeMode_t mode)
{
    switch (mode) {
    case NVML_COMPUTEMODE_DEFAULT: return "DEFAULT";
    case NVML_COMPUTEMODE_EXCLUSIVE_THREAD: return "EXCLUSIVE_THREAD";
    case NVML_COMPUTEMODE_PROHIBITED: return "PROHIBITED";
    case NVML_COMPUTEMODE_EXCLUSIVE_PROCESS: return "EXCLUSIVE_PROCESS";
    default: return "UNKNOWN";
    }
}
