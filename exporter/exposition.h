/*
 * exposition — a sample and its per-pod usage as Prometheus text (format 0.0.4, written by base/prom.h).
 *
 * Families, each with HELP and TYPE once and its series together:
 *   fracgpu_gpu_info, fracgpu_gpu_memory_{total,used,reserved}_bytes, fracgpu_gpu_utilization_ratio
 *     labelled node, gpu, uuid, model (and gpu_instance for a MIG instance);
 *   fracgpu_pod_gpu_utilization_ratio, fracgpu_pod_gpu_memory_used_bytes with namespace, pod and
 *     container added — rows of processes in no pod carry only the device labels;
 *   when aliases are on, DCGM_FI_DEV_GPU_UTIL (percent), DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_FB_FREE
 *     (MiB) as dcgm-exporter serves them: one series per GPU, idle ones included, labelled gpu, UUID,
 *     device, modelName, Hostname (and GPU_I_ID on a MIG instance, under its GPU's UUID; a GPU in MIG
 *     mode is reported through its instances alone), plus namespace, pod and container only when one
 *     pod alone has processes on the GPU (container only when they are all in one container). A GPU
 *     shared by several pods carries no pod labels: the per-pod figures are fracgpu's own families;
 *   fracgpu_exporter_* health.
 * Unknown values are left out, never written as 0.
 */
#ifndef FG_EXPORTER_EXPOSITION_H
#define FG_EXPORTER_EXPOSITION_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "exporter/usage.h"

struct fg_exporter_health {
    bool nvml_up;
    bool pods_synced;
    uint64_t samples;          /* samples taken */
    uint64_t sample_failures;  /* samples that could not read NVML at all */
    uint64_t reading_errors;   /* failed device readings, summed over samples */
    uint64_t unattributed;     /* processes whose pod could not be told in the last sample */
    double sample_seconds;     /* duration of the last sample */
    double last_success_unix;  /* wall time of the last good sample, 0 = never */
};

/* Appends the exposition to out, an unlimited buffer (smp and u may be NULL: health only). */
void fg_exposition_render(struct fg_buf *out, const char *node, const struct fg_sample *smp, const struct fg_usage *u,
                          bool dcgm_aliases, const struct fg_exporter_health *h);

#endif
