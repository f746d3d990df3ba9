/* exposition — Prometheus text from a sample, through base/prom.h; see exposition.h. */
#include "exporter/exposition.h"

#include <stdio.h>
#include <string.h>

#include "base/prom.h"

/* The label set of one series: the device's, then a pod's when the row is in one. */
struct labels {
    char gpu[16], gpu_instance[16];
    const char *kv[17];
};

static void device_labels(struct labels *l, const char *node, const struct fg_device_sample *d)
{
    snprintf(l->gpu, sizeof l->gpu, "%u", d->index);
    snprintf(l->gpu_instance, sizeof l->gpu_instance, "%u", d->gpu_instance);
    const char *kv[] = { "node", node, "gpu", l->gpu, "uuid", d->uuid, "model", d->model, "gpu_instance",
                         d->mig ? l->gpu_instance : NULL, NULL };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        l->kv[i] = kv[i];
}

static void row_labels(struct labels *l, const char *node, const struct fg_device_sample *d,
                       const struct fg_pod_usage *r)
{
    device_labels(l, node, d);
    const char *pod[] = { "namespace", r->ref.ns, "pod", r->ref.name, "container", r->ref.container, NULL };
    for (size_t i = 0; i < sizeof pod / sizeof pod[0]; i++)
        l->kv[10 + i] = r->in_pod ? pod[i] : NULL;
}

enum dev_field { DEV_INFO, DEV_TOTAL, DEV_USED, DEV_RESERVED, DEV_UTIL };

static void dev_family(struct fg_buf *b, const char *node, const struct fg_sample *smp, enum dev_field f)
{
    static const char *const names[] = { "fracgpu_gpu_info", "fracgpu_gpu_memory_total_bytes",
                                         "fracgpu_gpu_memory_used_bytes", "fracgpu_gpu_memory_reserved_bytes",
                                         "fracgpu_gpu_utilization_ratio" };
    for (size_t i = 0; i < smp->ndevs; i++) {
        const struct fg_device_sample *d = &smp->devs[i];
        if ((f != DEV_INFO && !d->uuid[0]) || ((f == DEV_TOTAL || f == DEV_USED) && !d->mem_known) ||
            (f == DEV_RESERVED && !d->reserved_known) || (f == DEV_UTIL && d->util < 0))
            continue;
        struct labels l;
        device_labels(&l, node, d);
        switch (f) {
        case DEV_INFO: fg_prom_sample_u64(b, names[f], l.kv, 1); break;
        case DEV_TOTAL: fg_prom_sample_u64(b, names[f], l.kv, d->mem_total); break;
        case DEV_USED: fg_prom_sample_u64(b, names[f], l.kv, d->mem_used); break;
        case DEV_RESERVED: fg_prom_sample_u64(b, names[f], l.kv, d->mem_reserved); break;
        case DEV_UTIL: fg_prom_sample(b, names[f], l.kv, d->util / 100.0); break;
        }
    }
}

enum row_field { ROW_UTIL, ROW_MEM };

static void row_family(struct fg_buf *b, const char *node, const struct fg_usage *u, enum row_field f)
{
    static const char *const names[] = { "fracgpu_pod_gpu_utilization_ratio", "fracgpu_pod_gpu_memory_used_bytes" };
    for (size_t i = 0; i < u->ndevs; i++) {
        const struct fg_device_usage *du = &u->devs[i];
        for (size_t k = 0; k < du->nrows; k++) {
            const struct fg_pod_usage *r = &du->rows[k];
            if ((f == ROW_UTIL && r->util < 0) || (f == ROW_MEM && !r->mem_known))
                continue;
            struct labels l;
            row_labels(&l, node, du->dev, r);
            if (f == ROW_UTIL)
                fg_prom_sample(b, names[f], l.kv, r->util / 100.0);
            else
                fg_prom_sample_u64(b, names[f], l.kv, r->mem_used);
        }
    }
}

/* The DCGM aliases (--dcgm-aliases) are device-level, as dcgm-exporter serves them: one series per
 * GPU, idle ones included, under its label names, with the pod labels of its Kubernetes mapping only
 * where one pod alone runs on the GPU (a GPU shared by several pods belongs to none of them, so sums
 * and averages over the aliases count each GPU once). A GPU in MIG mode is reported through its
 * instances alone, each under its parent's UUID with GPU_I_ID, and without DCGM_FI_DEV_GPU_UTIL,
 * which DCGM does not have for an instance. */
enum dcgm_field { DCGM_UTIL, DCGM_FB_USED, DCGM_FB_FREE };

/* The device whose UUID labels d's series: d, or the GPU of a MIG instance. NULL when unknown. */
static const struct fg_device_sample *dcgm_gpu(const struct fg_sample *smp, const struct fg_device_sample *d)
{
    for (size_t i = 0; d->mig && i < smp->ndevs; i++)
        if (!smp->devs[i].mig && smp->devs[i].index == d->index)
            return smp->devs[i].uuid[0] ? &smp->devs[i] : NULL;
    return d->mig || !d->uuid[0] ? NULL : d;
}

static bool has_mig_instances(const struct fg_sample *smp, const struct fg_device_sample *d)
{
    for (size_t i = 0; !d->mig && i < smp->ndevs; i++)
        if (smp->devs[i].mig && smp->devs[i].index == d->index)
            return true;
    return false;
}

/* The one pod whose processes run on the device, NULL when none or several; *one_container tells
 * whether they are all in one of its containers. Processes in no pod do not count. */
static const struct fg_pod_usage *sole_pod(const struct fg_device_usage *du, bool *one_container)
{
    const struct fg_pod_usage *pod = NULL;
    size_t containers = 0;   /* a row per container */
    for (size_t k = 0; k < du->nrows; k++) {
        const struct fg_pod_usage *r = &du->rows[k];
        if (!r->in_pod)
            continue;
        if (pod && (strcmp(pod->ref.ns, r->ref.ns) || strcmp(pod->ref.name, r->ref.name)))
            return NULL;
        pod = pod ? pod : r;
        containers++;
    }
    *one_container = containers == 1;
    return pod;
}

static void dcgm_family(struct fg_buf *b, const char *node, const struct fg_sample *smp, const struct fg_usage *u,
                        enum dcgm_field f)
{
    static const char *const names[] = { "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE" };
    for (size_t i = 0; i < u->ndevs; i++) {
        const struct fg_device_sample *d = u->devs[i].dev;
        const struct fg_device_sample *gpu = dcgm_gpu(smp, d);
        if (!gpu || has_mig_instances(smp, d) || (f == DCGM_UTIL && (d->mig || d->util < 0)) ||
            (f != DCGM_UTIL && !d->mem_known))
            continue;
        char index[16], device[24], gpu_instance[16];
        snprintf(index, sizeof index, "%u", d->index);
        snprintf(device, sizeof device, "nvidia%u", d->index);
        snprintf(gpu_instance, sizeof gpu_instance, "%u", d->gpu_instance);
        bool one_container;
        const struct fg_pod_usage *pod = sole_pod(&u->devs[i], &one_container);
        const char *labels[] = { "gpu", index, "UUID", gpu->uuid, "device", device, "modelName", d->model,
                                 "GPU_I_ID", d->mig ? gpu_instance : NULL, "Hostname", node,
                                 "namespace", pod ? pod->ref.ns : NULL, "pod", pod ? pod->ref.name : NULL,
                                 "container", pod && one_container ? pod->ref.container : NULL, NULL };
        /* used as fracgpu_gpu_memory_used_bytes (without the driver's reservation where the driver
         * reports it apart); free as NVML counts it: what neither processes nor the driver hold */
        uint64_t taken = d->mem_used + (d->reserved_known ? d->mem_reserved : 0);
        uint64_t v = f == DCGM_UTIL ? (uint64_t)d->util
                   : f == DCGM_FB_USED ? d->mem_used >> 20
                   : taken < d->mem_total ? (d->mem_total - taken) >> 20 : 0;
        fg_prom_sample_u64(b, names[f], labels, v);
    }
}

/* The MPS servers' memory per device, a family only where some device runs one. */
static void mps_server_family(struct fg_buf *b, const char *node, const struct fg_usage *u)
{
    static const char name[] = "fracgpu_gpu_mps_server_memory_bytes";
    bool any = false;
    for (size_t i = 0; i < u->ndevs; i++) {
        const struct fg_device_usage *du = &u->devs[i];
        if (!du->mps_server || !du->mps_server_mem_known)
            continue;
        if (!any)
            fg_prom_family(b, name, FG_PROM_GAUGE,
                           "GPU memory held by the device's MPS server process in bytes; counted in no pod's usage.");
        any = true;
        struct labels l;
        device_labels(&l, node, du->dev);
        fg_prom_sample_u64(b, name, l.kv, du->mps_server_mem);
    }
}

static void health(struct fg_buf *b, const char *node, const struct fg_exporter_health *h, size_t ngpus)
{
    struct {
        const char *name;
        enum fg_prom_type type;
        const char *help;
        double v;
    } const rows[] = {
        { "fracgpu_exporter_nvml_up", FG_PROM_GAUGE, "1 when NVML is loaded and answered the last sample.",
          h->nvml_up },
        { "fracgpu_exporter_pods_synced", FG_PROM_GAUGE, "1 once the watch of this node's pods has listed them.",
          h->pods_synced },
        { "fracgpu_exporter_gpus", FG_PROM_GAUGE, "Devices (GPUs and MIG instances) in the last sample.",
          (double)ngpus },
        { "fracgpu_exporter_samples_total", FG_PROM_COUNTER, "Samples taken.", (double)h->samples },
        { "fracgpu_exporter_sample_failures_total", FG_PROM_COUNTER, "Samples that could not read NVML at all.",
          (double)h->sample_failures },
        { "fracgpu_exporter_nvml_errors_total", FG_PROM_COUNTER, "Failed NVML readings of single devices.",
          (double)h->reading_errors },
        { "fracgpu_exporter_unattributed_processes", FG_PROM_GAUGE,
          "GPU processes in the last sample whose cgroup could not be read or parsed.", (double)h->unattributed },
        { "fracgpu_exporter_sample_duration_seconds", FG_PROM_GAUGE, "How long the last sample took.",
          h->sample_seconds },
        { "fracgpu_exporter_last_success_timestamp_seconds", FG_PROM_GAUGE,
          "Unix time of the last sample that read NVML (0: never).", h->last_success_unix },
    };
    const char *labels[] = { "node", node, NULL };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        fg_prom_family(b, rows[i].name, rows[i].type, rows[i].help);
        fg_prom_sample(b, rows[i].name, labels, rows[i].v);
    }
}

void fg_exposition_render(struct fg_buf *out, const char *node, const struct fg_sample *smp, const struct fg_usage *u,
                          bool dcgm_aliases, const struct fg_exporter_health *h)
{
    if (smp && smp->ndevs) {
        fg_prom_family(out, "fracgpu_gpu_info", FG_PROM_GAUGE, "GPU (or MIG instance) present; labels name it.");
        dev_family(out, node, smp, DEV_INFO);
        fg_prom_family(out, "fracgpu_gpu_memory_total_bytes", FG_PROM_GAUGE, "Device memory size in bytes.");
        dev_family(out, node, smp, DEV_TOTAL);
        fg_prom_family(out, "fracgpu_gpu_memory_used_bytes", FG_PROM_GAUGE,
                       "Device memory in use in bytes, without the driver's reservation where the driver reports it.");
        dev_family(out, node, smp, DEV_USED);
        fg_prom_family(out, "fracgpu_gpu_memory_reserved_bytes", FG_PROM_GAUGE,
                       "Device memory reserved by the driver in bytes.");
        dev_family(out, node, smp, DEV_RESERVED);
        fg_prom_family(out, "fracgpu_gpu_utilization_ratio", FG_PROM_GAUGE,
                       "Share of the last sample period during which a kernel ran on the GPU (NVML duty cycle, not a "
                       "share of SMs); on a MIG instance the GPM SM activity. Absent where unknown (MIG without GPM).");
        dev_family(out, node, smp, DEV_UTIL);
    }
    if (u && u->ndevs) {
        fg_prom_family(out, "fracgpu_pod_gpu_utilization_ratio", FG_PROM_GAUGE,
                       "SM activity of the container's processes on the GPU over the last interval, from NVML process "
                       "samples (a duty cycle, not a share of SMs); on an MPS GPU the device's, for the one pod of its "
                       "clients. Rows without pod labels are processes in no pod.");
        row_family(out, node, u, ROW_UTIL);
        fg_prom_family(out, "fracgpu_pod_gpu_memory_used_bytes", FG_PROM_GAUGE,
                       "GPU memory used by the container's processes in bytes. Rows without pod labels are processes "
                       "in no pod.");
        row_family(out, node, u, ROW_MEM);
        mps_server_family(out, node, u);
    }
    if (dcgm_aliases && smp && u && u->ndevs) {
        fg_prom_family(out, "DCGM_FI_DEV_GPU_UTIL", FG_PROM_GAUGE,
                       "GPU utilization (in %): the NVML duty cycle of the whole GPU (fracgpu's DCGM alias).");
        dcgm_family(out, node, smp, u, DCGM_UTIL);
        fg_prom_family(out, "DCGM_FI_DEV_FB_USED", FG_PROM_GAUGE,
                       "Framebuffer memory used (in MiB) on the GPU (fracgpu's DCGM alias).");
        dcgm_family(out, node, smp, u, DCGM_FB_USED);
        fg_prom_family(out, "DCGM_FI_DEV_FB_FREE", FG_PROM_GAUGE,
                       "Framebuffer memory free (in MiB) on the GPU (fracgpu's DCGM alias).");
        dcgm_family(out, node, smp, u, DCGM_FB_FREE);
    }
    health(out, node, h, smp ? smp->ndevs : 0);
}
