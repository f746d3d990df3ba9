/*
 * slots — what the device plugin advertises: `fracgpu.io/gpu-share` slots, so many per GPU.
 *
 * The kubelet counts extended resources in devices, so each GPU of the node is advertised as
 * FG_DP_SLOTS_DEFAULT interchangeable slots named "<GPU UUID>::<n>" (the form NVIDIA's plugin uses
 * for time-sliced replicas). A fractional pod asks for one slot; the slots bound how many tenants a
 * node admits, not how much of a GPU they get — that is the scheduler's grant, which Allocate
 * enforces whatever slot the kubelet picked. Slots of a GPU that NVML reports failing are
 * advertised Unhealthy (the kubelet then admits nothing more on them and lowers allocatable); a GPU
 * that vanishes takes its slots with it.
 */
#ifndef FG_DEVICEPLUGIN_SLOTS_H
#define FG_DEVICEPLUGIN_SLOTS_H

#include <stdbool.h>
#include <stddef.h>

#define FG_DP_SLOTS_DEFAULT 48 /* about as many contexts as a GPU holds, and MPS's client cap */
#define FG_DP_SLOTS_MAX 256
#define FG_DP_UUID_MAX 96
#define FG_DP_SLOT_ID_MAX (FG_DP_UUID_MAX + 8)

/* One GPU as the exporter last read it. */
struct fg_dp_gpu {
    char uuid[FG_DP_UUID_MAX];
    unsigned index;
    bool healthy;
};

/* The ID of slot n of gpu_uuid into out. */
void fg_dp_slot_id(const char *gpu_uuid, unsigned n, char out[FG_DP_SLOT_ID_MAX]);
/* The GPU UUID a slot ID names, into uuid; false when id is not "<uuid>::<n>" with n < slots. */
bool fg_dp_slot_gpu(const char *id, unsigned slots, char uuid[FG_DP_UUID_MAX]);

/* Whether two GPU lists advertise the same slots (same UUIDs, same health; order ignored). */
bool fg_dp_gpus_equal(const struct fg_dp_gpu *a, size_t na, const struct fg_dp_gpu *b, size_t nb);
/* The GPU with this UUID in gpus, or NULL. */
const struct fg_dp_gpu *fg_dp_gpus_find(const struct fg_dp_gpu *gpus, size_t n, const char *uuid);

#endif
