/* metrics — Prometheus text from a sample; see metrics.h. */
#include "exporter/metrics.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* Appends never fail here: the buffer is unlimited and allocation failure aborts (base/mem.h). */
#define PUT(b, s) do { enum fg_err e_ = fg_buf_puts((b), (s)); (void)e_; } while (0)
#define PRINTF(b, ...) do { enum fg_err e_ = fg_buf_printf((b), __VA_ARGS__); (void)e_; } while (0)

void fg_metrics_escape(struct fg_buf *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '\\': PUT(out, "\\\\"); break;
        case '"': PUT(out, "\\\""); break;
        case '\n': PUT(out, "\\n"); break;
        default: { enum fg_err e_ = fg_buf_append(out, s, 1); (void)e_; }
        }
    }
}

static void family(struct fg_buf *b, const char *name, const char *type, const char *help)
{
    PRINTF(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void label(struct fg_buf *b, const char *sep, const char *k, const char *v)
{
    PRINTF(b, "%s%s=\"", sep, k);
    fg_metrics_escape(b, v);
    PUT(b, "\"");
}

/* The device labels, without the closing brace. */
static void dev_labels(struct fg_buf *b, const char *name, const char *node, const struct fg_device_sample *d,
                       bool dcgm)
{
    char idx[16];
    snprintf(idx, sizeof idx, "%u", d->index);
    PUT(b, name);
    label(b, "{", dcgm ? "Hostname" : "node", node);
    label(b, ",", "gpu", idx);
    label(b, ",", dcgm ? "UUID" : "uuid", d->uuid);
    label(b, ",", dcgm ? "modelName" : "model", d->model);
    if (d->mig) {
        char gi[16];
        snprintf(gi, sizeof gi, "%u", d->gpu_instance);
        label(b, ",", dcgm ? "GPU_I_ID" : "gpu_instance", gi);
    }
}

static void row_labels(struct fg_buf *b, const char *name, const char *node, const struct fg_device_sample *d,
                       const struct fg_pod_usage *r, bool dcgm)
{
    dev_labels(b, name, node, d, dcgm);
    if (r->in_pod) {
        label(b, ",", "namespace", r->ref.ns);
        label(b, ",", "pod", r->ref.name);
        label(b, ",", "container", r->ref.container);
    }
    PUT(b, "}");
}

enum dev_field { DEV_INFO, DEV_TOTAL, DEV_USED, DEV_RESERVED, DEV_UTIL };

static void dev_family(struct fg_buf *b, const char *node, const struct fg_sample *smp, enum dev_field f)
{
    for (size_t i = 0; i < smp->ndevs; i++) {
        const struct fg_device_sample *d = &smp->devs[i];
        if ((f != DEV_INFO && !d->uuid[0]) || ((f == DEV_TOTAL || f == DEV_USED) && !d->mem_known) ||
            (f == DEV_RESERVED && !d->reserved_known) || (f == DEV_UTIL && d->util < 0))
            continue;
        static const char *const names[] = { "fracgpu_gpu_info", "fracgpu_gpu_memory_total_bytes",
                                             "fracgpu_gpu_memory_used_bytes", "fracgpu_gpu_memory_reserved_bytes",
                                             "fracgpu_gpu_utilization_ratio" };
        dev_labels(b, names[f], node, d, false);
        switch (f) {
        case DEV_INFO: PUT(b, "} 1\n"); break;
        case DEV_TOTAL: PRINTF(b, "} %" PRIu64 "\n", d->mem_total); break;
        case DEV_USED: PRINTF(b, "} %" PRIu64 "\n", d->mem_used); break;
        case DEV_RESERVED: PRINTF(b, "} %" PRIu64 "\n", d->mem_reserved); break;
        case DEV_UTIL: PRINTF(b, "} %.2f\n", d->util / 100.0); break;
        }
    }
}

enum row_field { ROW_UTIL, ROW_MEM, ROW_DCGM_UTIL, ROW_DCGM_FB };

static void row_family(struct fg_buf *b, const char *node, const struct fg_usage *u, enum row_field f)
{
    bool dcgm = f == ROW_DCGM_UTIL || f == ROW_DCGM_FB;
    static const char *const names[] = { "fracgpu_pod_gpu_utilization_ratio", "fracgpu_pod_gpu_memory_used_bytes",
                                         "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED" };
    for (size_t i = 0; i < u->ndevs; i++) {
        const struct fg_device_usage *du = &u->devs[i];
        for (size_t k = 0; k < du->nrows; k++) {
            const struct fg_pod_usage *r = &du->rows[k];
            bool util = f == ROW_UTIL || f == ROW_DCGM_UTIL;
            if ((util && r->util < 0) || (!util && !r->mem_known) || (dcgm && !r->in_pod))
                continue;
            row_labels(b, names[f], node, du->dev, r, dcgm);
            switch (f) {
            case ROW_UTIL: PRINTF(b, " %.2f\n", r->util / 100.0); break;
            case ROW_MEM: PRINTF(b, " %" PRIu64 "\n", r->mem_used); break;
            case ROW_DCGM_UTIL: PRINTF(b, " %d\n", r->util); break;
            case ROW_DCGM_FB: PRINTF(b, " %" PRIu64 "\n", r->mem_used >> 20); break;
            }
        }
    }
}

/* The MPS servers' memory per device, a family only where some device runs one. */
static void mps_server_family(struct fg_buf *b, const char *node, const struct fg_usage *u)
{
    bool any = false;
    for (size_t i = 0; i < u->ndevs; i++) {
        const struct fg_device_usage *du = &u->devs[i];
        if (!du->mps_server || !du->mps_server_mem_known)
            continue;
        if (!any)
            family(b, "fracgpu_gpu_mps_server_memory_bytes", "gauge",
                   "GPU memory held by the device's MPS server process in bytes; counted in no pod's usage.");
        any = true;
        dev_labels(b, "fracgpu_gpu_mps_server_memory_bytes", node, du->dev, false);
        PRINTF(b, "} %" PRIu64 "\n", du->mps_server_mem);
    }
}

static void health(struct fg_buf *b, const char *node, const struct fg_exporter_health *h, size_t ngpus)
{
    struct {
        const char *name, *type, *help;
        double v;
    } const rows[] = {
        { "fracgpu_exporter_nvml_up", "gauge", "1 when NVML is loaded and answered the last sample.", h->nvml_up },
        { "fracgpu_exporter_pods_synced", "gauge", "1 once the watch of this node's pods has listed them.",
          h->pods_synced },
        { "fracgpu_exporter_gpus", "gauge", "Devices (GPUs and MIG instances) in the last sample.", (double)ngpus },
        { "fracgpu_exporter_samples_total", "counter", "Samples taken.", (double)h->samples },
        { "fracgpu_exporter_sample_failures_total", "counter", "Samples that could not read NVML at all.",
          (double)h->sample_failures },
        { "fracgpu_exporter_nvml_errors_total", "counter", "Failed NVML readings of single devices.",
          (double)h->reading_errors },
        { "fracgpu_exporter_unattributed_processes", "gauge",
          "GPU processes in the last sample whose cgroup could not be read or parsed.", (double)h->unattributed },
        { "fracgpu_exporter_sample_duration_seconds", "gauge", "How long the last sample took.", h->sample_seconds },
        { "fracgpu_exporter_last_success_timestamp_seconds", "gauge",
          "Unix time of the last sample that read NVML (0: never).", h->last_success_unix },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        family(b, rows[i].name, rows[i].type, rows[i].help);
        PRINTF(b, "%s", rows[i].name);
        label(b, "{", "node", node);
        PRINTF(b, "} %.17g\n", rows[i].v);
    }
}

void fg_metrics_render(struct fg_buf *out, const char *node, const struct fg_sample *smp, const struct fg_usage *u,
                       bool dcgm_aliases, const struct fg_exporter_health *h)
{
    if (smp && smp->ndevs) {
        family(out, "fracgpu_gpu_info", "gauge", "GPU (or MIG instance) present; labels name it.");
        dev_family(out, node, smp, DEV_INFO);
        family(out, "fracgpu_gpu_memory_total_bytes", "gauge", "Device memory size in bytes.");
        dev_family(out, node, smp, DEV_TOTAL);
        family(out, "fracgpu_gpu_memory_used_bytes", "gauge",
               "Device memory in use in bytes, without the driver's reservation where the driver reports it.");
        dev_family(out, node, smp, DEV_USED);
        family(out, "fracgpu_gpu_memory_reserved_bytes", "gauge", "Device memory reserved by the driver in bytes.");
        dev_family(out, node, smp, DEV_RESERVED);
        family(out, "fracgpu_gpu_utilization_ratio", "gauge",
               "Share of the last sample period during which a kernel ran on the GPU (NVML duty cycle, not a "
               "share of SMs); on a MIG instance the GPM SM activity. Absent where unknown (MIG without GPM).");
        dev_family(out, node, smp, DEV_UTIL);
    }
    if (u && u->ndevs) {
        family(out, "fracgpu_pod_gpu_utilization_ratio", "gauge",
               "SM activity of the container's processes on the GPU over the last interval, from NVML process "
               "samples (a duty cycle, not a share of SMs); on an MPS GPU the device's, for the one pod of its "
               "clients. Rows without pod labels are processes in no pod.");
        row_family(out, node, u, ROW_UTIL);
        family(out, "fracgpu_pod_gpu_memory_used_bytes", "gauge",
               "GPU memory used by the container's processes in bytes. Rows without pod labels are processes "
               "in no pod.");
        row_family(out, node, u, ROW_MEM);
        mps_server_family(out, node, u);
        if (dcgm_aliases) {
            family(out, "DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %), per pod (fracgpu alias).");
            row_family(out, node, u, ROW_DCGM_UTIL);
            family(out, "DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB), per pod (fracgpu alias).");
            row_family(out, node, u, ROW_DCGM_FB);
        }
    }
    health(out, node, h, smp ? smp->ndevs : 0);
}
