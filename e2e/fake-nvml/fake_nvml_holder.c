/*
 * fake_nvml_holder — what the fake NVML answers for the capacity holder (the essay atop fake_nvml.c
 * describes all of it): the container's view of the node's GPUs ($FG_FAKE_NVML_VISIBLE), compute
 * modes that outlive the process that set them (<state>.modes.json), and the devices' indices and
 * minor numbers.
 */
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "e2e/fake-nvml/fake_nvml_int.h"

/* A compute mode written as a number or as its name in lower case; DEFAULT when absent or unknown. */
nvmlComputeMode_t fake_mode_of(json_object *v)
{
    static const char *const names[] = { "default", "exclusive_thread", "prohibited", "exclusive_process" };
    if (v && json_object_is_type(v, json_type_int)) {
        int64_t m = json_object_get_int64(v);
        return m >= 0 && m < NVML_COMPUTEMODE_COUNT ? (nvmlComputeMode_t)m : NVML_COMPUTEMODE_DEFAULT;
    }
    for (int i = 0; v && i < NVML_COMPUTEMODE_COUNT; i++)
        if (json_object_is_type(v, json_type_string) && strcmp(json_object_get_string(v), names[i]) == 0)
            return (nvmlComputeMode_t)i;
    return NVML_COMPUTEMODE_DEFAULT;
}

/* Whether uuid is in $FG_FAKE_NVML_VISIBLE (always, when it is unset). */
static bool is_visible(const char *uuid)
{
    const char *list = getenv("FG_FAKE_NVML_VISIBLE");
    if (!list)
        return true;
    size_t len = strlen(uuid);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncmp(p, uuid, n) == 0)
            return true;
        p += n + (end ? 1 : 0);
    }
    return false;
}

/* Numbers the visible GPUs as NVML inside a container does: 0.., in the state's order. fake_mu held. */
void fake_select_visible(void)
{
    fake_nvisible = 0;
    for (unsigned i = 0; i < fake_ngpus; i++)
        if (is_visible(fake_gpus[i].uuid))
            fake_visible[fake_nvisible++] = i;
}

/* path of "<state><suffix>" into out; false without a state. */
static bool beside_state(const char *suffix, char *out, size_t size)
{
    const char *state = getenv("FG_FAKE_NVML_STATE");
    return state && (size_t)snprintf(out, size, "%s%s", state, suffix) < size;
}

/* The mode the modes file records for uuid, else dflt. */
static nvmlComputeMode_t recorded_mode(const char *uuid, nvmlComputeMode_t dflt)
{
    char path[4096];
    if (!beside_state(".modes.json", path, sizeof path) || access(path, F_OK) != 0)
        return dflt;
    json_object *modes = json_object_from_file(path);
    json_object *v = NULL;
    nvmlComputeMode_t m = modes && json_object_object_get_ex(modes, uuid, &v) ? fake_mode_of(v) : dflt;
    json_object_put(modes);
    return m;
}

/* Records uuid's mode: read, change, write to a temporary name and rename, all under the lock. */
static nvmlReturn_t record_mode(const char *uuid, nvmlComputeMode_t mode)
{
    char path[4096], lock[4096], tmp[4200];
    if (!beside_state(".modes.json", path, sizeof path) || !beside_state(".modes.lock", lock, sizeof lock))
        return NVML_ERROR_UNKNOWN;
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return NVML_ERROR_UNKNOWN;
    nvmlReturn_t r = NVML_ERROR_UNKNOWN;
    if (flock(fd, LOCK_EX) != 0)
        goto out_close;
    json_object *modes = access(path, F_OK) == 0 ? json_object_from_file(path) : NULL;
    if (!modes || !json_object_is_type(modes, json_type_object)) {
        json_object_put(modes);
        modes = json_object_new_object();
    }
    json_object_object_add(modes, uuid, json_object_new_int((int)mode));
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    if (json_object_to_file_ext(tmp, modes, JSON_C_TO_STRING_PLAIN) == 0 && rename(tmp, path) == 0)
        r = NVML_SUCCESS;
    else
        unlink(tmp);
    json_object_put(modes);
out_close:
    close(fd);   /* releases the lock */
    return r;
}

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t dev, nvmlComputeMode_t *mode)
{
    DEVICE_ENTRY(dev);
    if (!mode)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&fake_mu);
    nvmlReturn_t r = dev->error ? dev->error : dev->mig ? NVML_ERROR_NOT_SUPPORTED : dev->compute_mode_error;
    if (!r)
        *mode = recorded_mode(dev->uuid, dev->compute_mode);
    pthread_mutex_unlock(&fake_mu);
    return r;
}

nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t dev, nvmlComputeMode_t mode)
{
    DEVICE_ENTRY(dev);
    /* current drivers refuse the deprecated EXCLUSIVE_THREAD */
    if ((int)mode < 0 || mode >= NVML_COMPUTEMODE_COUNT || mode == NVML_COMPUTEMODE_EXCLUSIVE_THREAD)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&fake_mu);
    nvmlReturn_t r = dev->error ? dev->error : dev->mig ? NVML_ERROR_NOT_SUPPORTED : dev->set_compute_mode_error;
    if (!r)
        r = record_mode(dev->uuid, mode);
    pthread_mutex_unlock(&fake_mu);
    return r;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t dev, unsigned int *index)
{
    DEVICE_ENTRY(dev);
    if (!index)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&fake_mu);
    nvmlReturn_t r = dev->error ? dev->error : NVML_ERROR_NOT_FOUND;
    for (unsigned i = 0; !dev->error && i < fake_nvisible; i++)
        if (&fake_gpus[fake_visible[i]] == dev) {
            *index = i;
            r = NVML_SUCCESS;
        }
    pthread_mutex_unlock(&fake_mu);
    return r;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t dev, unsigned int *minor)
{
    DEVICE_ENTRY(dev);
    if (!minor)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&fake_mu);
    nvmlReturn_t r = dev->error ? dev->error : dev->mig ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
    if (!r)
        *minor = dev->minor;
    pthread_mutex_unlock(&fake_mu);
    return r;
}
