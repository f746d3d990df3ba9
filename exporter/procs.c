/*
 * procs — NVML's running-process lists, read so that a driver cannot make us misread them.
 *
 * The count protocol: ask with a NULL buffer to learn the count (NVML_ERROR_INSUFFICIENT_SIZE), then
 * ask again with room for more than that, since processes start between the two calls; when the
 * list grew past the room anyway, try again a few times with the larger count.
 *
 * The stride quirk: some driver/header combinations write entries of another size than the
 * nvmlProcessInfo_v2_t the caller declared — the 16-byte v1 entry through the v2/v3 call, or a
 * larger one. So the buffer is filled with a sentinel byte, sized for the largest layout, and after
 * the call the end of what the driver wrote tells the stride actually used: the last byte written
 * is the last byte of the last entry. Entries are then decoded at that stride. A list that fits no
 * known stride is refused rather than guessed.
 */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "exporter/sample.h"

#define FG_PROCS_MAX 16384        /* more processes on one GPU than any driver allows */
#define FG_PROCS_MAX_STRIDE 32    /* room per entry: the largest layout we accept */
#define FG_PROCS_SENTINEL 0xA5
#define FG_PROCS_ATTEMPTS 4

/* The stride the driver used for `n` entries: one whose n entries end exactly where writing ended. */
static size_t detect_stride(const unsigned char *buf, size_t size, size_t n)
{
    size_t hi = size;
    while (hi > 0 && buf[hi - 1] == FG_PROCS_SENTINEL)
        hi--;
    static const size_t strides[] = { sizeof(nvmlProcessInfo_v2_t), sizeof(nvmlProcessInfo_v1_t),
                                      FG_PROCS_MAX_STRIDE };
    for (size_t i = 0; i < sizeof strides / sizeof strides[0]; i++)
        if (hi == strides[i] * n)
            return strides[i];
    /* A last field that happens to hold the sentinel: accept the stride whose last entry holds hi. */
    for (size_t i = 0; i < sizeof strides / sizeof strides[0]; i++)
        if (hi > strides[i] * (n - 1) + sizeof(unsigned) && hi < strides[i] * n)
            return strides[i];
    return 0;
}

static void decode(const unsigned char *buf, size_t stride, size_t n, struct fg_proc_sample *out)
{
    for (size_t i = 0; i < n; i++) {
        const unsigned char *e = buf + i * stride;
        unsigned pid;
        unsigned long long mem;
        memcpy(&pid, e + offsetof(nvmlProcessInfo_v2_t, pid), sizeof pid);
        memcpy(&mem, e + offsetof(nvmlProcessInfo_v2_t, usedGpuMemory), sizeof mem);
        unsigned gi = FG_NO_GPU_INSTANCE;
        if (stride >= sizeof(nvmlProcessInfo_v2_t))
            memcpy(&gi, e + offsetof(nvmlProcessInfo_v2_t, gpuInstanceId), sizeof gi);
        out[i] = (struct fg_proc_sample){
            .pid = pid,
            .mem_known = mem != NVML_VALUE_NOT_AVAILABLE,
            .mem_used = mem != NVML_VALUE_NOT_AVAILABLE ? mem : 0,
            .sm_util = -1,
            .gpu_instance = gi,
        };
    }
}

nvmlReturn_t fg__procs_get(fg_nvml_proc_fn *fn, nvmlDevice_t dev, struct fg_proc_sample **out, size_t *n,
                           size_t *stride)
{
    *out = NULL;
    *n = 0;
    *stride = 0;
    unsigned count = 0;
    nvmlReturn_t r = fn(dev, &count, NULL);
    if (r == NVML_SUCCESS)
        return NVML_SUCCESS;   /* no processes */
    if (r != NVML_ERROR_INSUFFICIENT_SIZE)
        return r;
    for (int attempt = 0; attempt < FG_PROCS_ATTEMPTS; attempt++) {
        size_t room = (size_t)count + count / 2 + 8;
        if (room > FG_PROCS_MAX)
            room = FG_PROCS_MAX;
        size_t size = room * FG_PROCS_MAX_STRIDE;
        unsigned char *buf = fg_malloc(size);
        memset(buf, FG_PROCS_SENTINEL, size);
        unsigned got = (unsigned)room;
        r = fn(dev, &got, (nvmlProcessInfo_t *)(void *)buf);
        if (r == NVML_ERROR_INSUFFICIENT_SIZE && room < FG_PROCS_MAX) {
            free(buf);
            count = got > count ? got : count * 2 + 1;
            continue;
        }
        if (r != NVML_SUCCESS) {
            free(buf);
            return r;
        }
        if (got > room)
            got = (unsigned)room;   /* a count past the room we gave is not believed */
        if (got == 0) {
            free(buf);
            return NVML_SUCCESS;
        }
        size_t s = detect_stride(buf, size, got);
        if (!s) {
            free(buf);
            return NVML_ERROR_UNKNOWN;
        }
        *out = fg_calloc(got, sizeof **out);
        decode(buf, s, got, *out);
        *n = got;
        *stride = s;
        free(buf);
        return NVML_SUCCESS;
    }
    return NVML_ERROR_INSUFFICIENT_SIZE;
}
