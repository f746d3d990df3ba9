/* compute_mode — EXCLUSIVE_PROCESS and back, with the previous mode on disk; see compute_mode.h. */
#include "nodeagent/holder/compute_mode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool fg_holder_mode_recorded(const char *saved_path, nvmlComputeMode_t *mode)
{
    FILE *f = fopen(saved_path, "r");
    if (!f)
        return false;
    int m = -1;
    bool ok = fscanf(f, "%d", &m) == 1 && m >= 0 && m < NVML_COMPUTEMODE_COUNT;
    fclose(f);
    if (ok)
        *mode = (nvmlComputeMode_t)m;
    return ok;
}

/* Writes "<number> <name>\n" to a temporary name, then renames it over saved_path. */
static enum fg_err write_record(const char *saved_path, nvmlComputeMode_t mode, char *errmsg)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", saved_path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return fg_errmsg(errmsg, FG_E_IO, "cannot write %s: %s", tmp, strerror(errno));
    bool ok = fprintf(f, "%d %s\n", (int)mode, fg_nvml_compute_mode_name(mode)) > 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, saved_path) != 0) {
        int e = errno;
        unlink(tmp);
        return fg_errmsg(errmsg, FG_E_IO, "cannot write %s: %s", saved_path, strerror(e));
    }
    return FG_OK;
}

static enum fg_err set_mode(const struct fg_nvml *nv, nvmlDevice_t dev, nvmlComputeMode_t mode, char *errmsg)
{
    nvmlReturn_t r = nv->set_compute_mode(dev, mode);
    if (r == NVML_SUCCESS)
        return FG_OK;
    return fg_errmsg(errmsg, FG_E_IO, "nvmlDeviceSetComputeMode(%s): %s (NVML error %d)%s",
                     fg_nvml_compute_mode_name(mode), fg_nvml_strerror(nv, r), (int)r,
                     r == NVML_ERROR_NO_PERMISSION ? ": the holder must run privileged, as root" : "");
}

enum fg_err fg_holder_mode_take(const struct fg_nvml *nv, nvmlDevice_t dev, const char *saved_path,
                                nvmlComputeMode_t *previous, char *errmsg)
{
    if (!nv->get_compute_mode || !nv->set_compute_mode)
        return fg_errmsg(errmsg, FG_E_UNSUPPORTED, "this NVML has no nvmlDeviceGetComputeMode/SetComputeMode");
    nvmlComputeMode_t now;
    nvmlReturn_t r = nv->get_compute_mode(dev, &now);
    if (r != NVML_SUCCESS)
        return fg_errmsg(errmsg, FG_E_IO, "nvmlDeviceGetComputeMode: %s (NVML error %d)", fg_nvml_strerror(nv, r),
                         (int)r);
    bool recorded = fg_holder_mode_recorded(saved_path, previous);
    if (!recorded) {
        *previous = now;
        enum fg_err err = write_record(saved_path, now, errmsg);
        if (err)
            return err;
    }
    if (now == NVML_COMPUTEMODE_EXCLUSIVE_PROCESS)
        return FG_OK;
    enum fg_err err = set_mode(nv, dev, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS, errmsg);
    if (err && !recorded)
        unlink(saved_path);   /* nothing was changed: nothing to restore */
    return err;
}

enum fg_err fg_holder_mode_restore(const struct fg_nvml *nv, nvmlDevice_t dev, const char *saved_path,
                                   nvmlComputeMode_t previous, char *errmsg)
{
    if (!nv->set_compute_mode)
        return fg_errmsg(errmsg, FG_E_UNSUPPORTED, "this NVML has no nvmlDeviceSetComputeMode");
    enum fg_err err = set_mode(nv, dev, previous, errmsg);
    if (err)
        return err;
    if (unlink(saved_path) != 0 && errno != ENOENT)
        return fg_errmsg(errmsg, FG_E_IO, "cannot remove %s: %s", saved_path, strerror(errno));
    return FG_OK;
}
