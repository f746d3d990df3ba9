/* gpu — the holder's GPU and its usable memory; see gpu.h. */
#include "nodeagent/holder/gpu.h"

#include <stdio.h>
#include <string.h>

#define MIB (1024ull * 1024ull)

/* A failed NVML call as FG_E_IO with its name and NVML's reason. */
static enum fg_err nvml_fail(const struct fg_nvml *nv, const char *call, nvmlReturn_t r, char *errmsg)
{
    return fg_errmsg(errmsg, FG_E_IO, "%s: %s (NVML error %d)", call, fg_nvml_strerror(nv, r), (int)r);
}

/* "GPU-a, GPU-b, ..." for the message about too many devices. */
static void list_uuids(const struct fg_nvml *nv, unsigned n, char *out, size_t size)
{
    size_t at = 0;
    out[0] = '\0';
    for (unsigned i = 0; i < n && at + 1 < size; i++) {
        nvmlDevice_t dev;
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "?";
        if (nv->get_handle(i, &dev) != NVML_SUCCESS || nv->get_uuid(dev, uuid, sizeof uuid) != NVML_SUCCESS)
            snprintf(uuid, sizeof uuid, "#%u (unreadable)", i);
        int w = snprintf(out + at, size - at, "%s%s", i ? ", " : "", uuid);
        if (w < 0)
            break;
        at += (size_t)w;
    }
}

/* Fills total and reserved from v2, else v1. */
static enum fg_err memory(const struct fg_nvml *nv, struct fg_holder_gpu *gpu, char *errmsg)
{
    if (nv->get_memory_v2) {
        nvmlMemory_v2_t m = { .version = nvmlMemory_v2 };
        nvmlReturn_t r = nv->get_memory_v2(gpu->dev, &m);
        if (r == NVML_SUCCESS) {
            gpu->total_mib = m.total / MIB;
            gpu->reserved_mib = (m.reserved + MIB - 1) / MIB;
            gpu->reserved_from_v2 = true;
            return FG_OK;
        }
        if (r != NVML_ERROR_NOT_SUPPORTED && r != NVML_ERROR_FUNCTION_NOT_FOUND &&
            r != NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
            return nvml_fail(nv, "nvmlDeviceGetMemoryInfo_v2", r, errmsg);
    }
    nvmlMemory_t m;
    nvmlReturn_t r = nv->get_memory(gpu->dev, &m);
    if (r != NVML_SUCCESS)
        return nvml_fail(nv, "nvmlDeviceGetMemoryInfo", r, errmsg);
    gpu->total_mib = m.total / MIB;
    uint64_t not_free = m.total > m.free ? m.total - m.free : 0;
    gpu->reserved_mib = (not_free + MIB - 1) / MIB;
    gpu->reserved_from_v2 = false;
    return FG_OK;
}

enum fg_err fg_holder_gpu_discover(const struct fg_nvml *nv, uint64_t overhead_mib, struct fg_holder_gpu *gpu,
                                   char *errmsg)
{
    memset(gpu, 0, sizeof *gpu);
    unsigned n = 0;
    nvmlReturn_t r = nv->get_count(&n);
    if (r != NVML_SUCCESS)
        return nvml_fail(nv, "nvmlDeviceGetCount_v2", r, errmsg);
    if (n == 0)
        return fg_errmsg(errmsg, FG_E_NOT_FOUND_LOCAL,
                         "NVML shows no GPU in this container (a capacity pod must be granted exactly one "
                         "nvidia.com/gpu)");
    if (n > 1) {
        char uuids[FG_ERRMSG_MAX / 2];
        list_uuids(nv, n, uuids, sizeof uuids);
        return fg_errmsg(errmsg, FG_E_INVAL,
                         "NVML shows %u GPUs in this container (%s); a capacity pod holds exactly one", n, uuids);
    }
    if ((r = nv->get_handle(0, &gpu->dev)) != NVML_SUCCESS)
        return nvml_fail(nv, "nvmlDeviceGetHandleByIndex_v2", r, errmsg);
    if ((r = nv->get_uuid(gpu->dev, gpu->uuid, sizeof gpu->uuid)) != NVML_SUCCESS)
        return nvml_fail(nv, "nvmlDeviceGetUUID", r, errmsg);
    if ((r = nv->get_name(gpu->dev, gpu->name, sizeof gpu->name)) != NVML_SUCCESS)
        return nvml_fail(nv, "nvmlDeviceGetName", r, errmsg);
    enum fg_err err = memory(nv, gpu, errmsg);
    if (err)
        return err;
    gpu->has_minor = nv->get_minor_number && nv->get_minor_number(gpu->dev, &gpu->minor) == NVML_SUCCESS;
    uint64_t kept = gpu->reserved_mib + overhead_mib;
    gpu->usable_mib = gpu->total_mib > kept ? gpu->total_mib - kept : 0;
    if (!gpu->usable_mib)
        return fg_errmsg(errmsg, FG_E_INVAL, "%s (%s) has %llu MiB, of which the driver keeps %llu and a context "
                         "%llu: nothing is left for tenants", gpu->uuid, gpu->name, (unsigned long long)gpu->total_mib,
                         (unsigned long long)gpu->reserved_mib, (unsigned long long)overhead_mib);
    return FG_OK;
}
