/* config — the simulated cluster's configuration; see config.h. */
#include "e2e/cluster/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/duration.h"
#include "base/json.h"
#include "base/yaml.h"
#include "operator/kube/quantity.h"

#define DEFAULT_GPU_MODEL "NVIDIA A100-SXM4-80GB"
#define DEFAULT_GPU_MEMORY_MIB 81920
#define GPU_PRESENT_LABEL "nvidia.com/gpu.present"

static void set_group_defaults(struct fg_sim_group *g, const char *name)
{
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    g->min_size = 0;
    g->max_size = 10;
    g->initial_size = 1;
    g->labels = json_object_new_object();
    g->taints = json_object_new_array();
}

void fg_sim_config_default(struct fg_sim_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    struct fg_sim_group *g = &cfg->groups[cfg->ngroups++];
    set_group_defaults(g, "gpu");
    char msg[FG_ERRMSG_MAX];
    json_object *cap = json_object_new_object();
    json_object_object_add(cap, "cpu", json_object_new_string("16"));
    json_object_object_add(cap, "memory", json_object_new_string("64Gi"));
    json_object_object_add(cap, "pods", json_object_new_string("110"));
    json_object_object_add(cap, "nvidia.com/gpu", json_object_new_string("4"));
    if (fg_resources_from_json(cap, &g->capacity, msg) != FG_OK)
        g->capacity.n = 0;
    json_object_put(cap);
    json_object_object_add(g->labels, GPU_PRESENT_LABEL, json_object_new_string("true"));
    g->gpus = 4;
    snprintf(g->gpu_model, sizeof g->gpu_model, DEFAULT_GPU_MODEL);
    g->gpu_memory_mib = DEFAULT_GPU_MEMORY_MIB;
    cfg->controllers = cfg->scheduler = cfg->kubelets = cfg->autoscaler = true;
    cfg->autoscale.scan_ns = 1 * FG_NS_PER_S;
    cfg->autoscale.scale_up_delay_ns = 2 * FG_NS_PER_S;
    cfg->autoscale.provision_ns = 1 * FG_NS_PER_S;
    cfg->autoscale.scale_down_unneeded_ns = 10 * FG_NS_PER_S;
    cfg->autoscale.scale_down_delay_after_add_ns = 10 * FG_NS_PER_S;
    cfg->kubelet.lease_ns = 10 * FG_NS_PER_S;
    cfg->kubelet.status_ns = 60 * FG_NS_PER_S;
    cfg->kubelet.pod_start_ns = 0;
    cfg->kubelet.job_run_ns = 5 * FG_NS_PER_S;
    cfg->kubelet.crash_backoff_ns = 10 * FG_NS_PER_S;
    cfg->kubelet.gpu_state = FG_SIM_GPU_STATE_FILES;
    cfg->usage.interval_ns = 1 * FG_NS_PER_S;
    cfg->usage.time_scale = 60;
    snprintf(cfg->fracgpu_images[cfg->nimages++], sizeof cfg->fracgpu_images[0], "ghcr.io/fracgpu/fracgpu");
}

void fg_sim_config_cleanup(struct fg_sim_config *cfg)
{
    for (size_t i = 0; i < cfg->ngroups; i++) {
        json_object_put(cfg->groups[i].labels);
        json_object_put(cfg->groups[i].taints);
    }
    cfg->ngroups = 0;
}

/* ---- reading ---- */

/* FG_E_PARSE naming path.key for any key of o not in allowed (NULL-terminated). */
static enum fg_err known_fields(json_object *o, const char *path, const char *const *allowed, char *errmsg)
{
    if (!json_object_is_type(o, json_type_object))
        return fg_errmsg(errmsg, FG_E_PARSE, "%s: must be a mapping", path);
    json_object_object_foreach(o, key, value) {
        (void)value;
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = !strcmp(*a, key);
        if (!ok)
            return fg_errmsg(errmsg, FG_E_PARSE, "%s.%s: unknown field", path, key);
    }
    return FG_OK;
}

static enum fg_err read_duration(json_object *o, const char *key, const char *path, uint64_t *out, char *errmsg)
{
    json_object *v = fg_json_get(o, key, NULL);
    if (!v)
        return FG_OK;
    int64_t ms;
    char why[FG_ERRMSG_MAX] = "";
    if (!json_object_is_type(v, json_type_string) || fg_duration_parse(json_object_get_string(v), &ms, why))
        return fg_errmsg(errmsg, FG_E_PARSE, "%s.%s: a duration such as 500ms, 10s or 5m is expected%s%s", path,
                         key, why[0] ? ": " : "", why);
    *out = (uint64_t)ms * FG_NS_PER_MS;
    return FG_OK;
}

static enum fg_err read_bool(json_object *o, const char *key, const char *path, bool *out, char *errmsg)
{
    json_object *v = fg_json_get(o, key, NULL);
    if (!v)
        return FG_OK;
    if (!json_object_is_type(v, json_type_boolean))
        return fg_errmsg(errmsg, FG_E_PARSE, "%s.%s: true or false is expected", path, key);
    *out = json_object_get_boolean(v);
    return FG_OK;
}

static enum fg_err read_count(json_object *o, const char *key, const char *path, unsigned *out, char *errmsg)
{
    json_object *v = fg_json_get(o, key, NULL);
    if (!v)
        return FG_OK;
    int64_t n = -1;
    if (!json_object_is_type(v, json_type_int) || (n = json_object_get_int64(v)) < 0 || n > 100000)
        return fg_errmsg(errmsg, FG_E_PARSE, "%s.%s: a whole number from 0 to 100000 is expected", path, key);
    *out = (unsigned)n;
    return FG_OK;
}

static enum fg_err read_string(json_object *o, const char *key, const char *path, char *out, size_t size,
                               char *errmsg)
{
    json_object *v = fg_json_get(o, key, NULL);
    if (!v)
        return FG_OK;
    const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    if (!s || strlen(s) >= size)
        return fg_errmsg(errmsg, FG_E_PARSE, "%s.%s: a string of at most %zu characters is expected", path, key,
                         size - 1);
    snprintf(out, size, "%s", s);
    return FG_OK;
}

/* A mapping of string to string (labels), kept. */
static enum fg_err read_labels(json_object *o, const char *path, json_object **out, char *errmsg)
{
    json_object *v = fg_json_get(o, "labels", NULL);
    if (!v)
        return FG_OK;
    if (!json_object_is_type(v, json_type_object))
        return fg_errmsg(errmsg, FG_E_PARSE, "%s.labels: must be a mapping", path);
    json_object *labels = json_object_new_object();
    json_object_object_foreach(v, key, value) {
        if (!json_object_is_type(value, json_type_string)) {
            json_object_put(labels);
            return fg_errmsg(errmsg, FG_E_PARSE, "%s.labels.%s: label values are strings (quote them)", path, key);
        }
        json_object_object_add(labels, key, json_object_get(value));
    }
    json_object_put(*out);
    *out = labels;
    return FG_OK;
}

static enum fg_err read_taints(json_object *o, const char *path, json_object **out, char *errmsg)
{
    static const char *const fields[] = { "key", "value", "effect", NULL };
    json_object *v = fg_json_get(o, "taints", NULL);
    if (!v)
        return FG_OK;
    if (!json_object_is_type(v, json_type_array))
        return fg_errmsg(errmsg, FG_E_PARSE, "%s.taints: must be a list", path);
    for (size_t i = 0; i < json_object_array_length(v); i++) {
        json_object *t = json_object_array_get_idx(v, i);
        char at[128];
        snprintf(at, sizeof at, "%s.taints[%zu]", path, i);
        enum fg_err err = known_fields(t, at, fields, errmsg);
        if (err)
            return err;
        const char *key = fg_json_get_str(t, "key", NULL), *effect = fg_json_get_str(t, "effect", NULL);
        if (!key || !*key || !effect ||
            (strcmp(effect, "NoSchedule") && strcmp(effect, "PreferNoSchedule") && strcmp(effect, "NoExecute")))
            return fg_errmsg(errmsg, FG_E_PARSE, "%s: a key and an effect NoSchedule, PreferNoSchedule or NoExecute "
                             "are expected", at);
    }
    json_object_put(*out);
    *out = json_object_get(v);
    return FG_OK;
}

/* gpu.deviceListStrategy's names, by enum fg_sim_device_list. */
static const char *const device_lists[] = { [FG_SIM_DEVICE_LIST_ENVVAR] = "envvar",
                                            [FG_SIM_DEVICE_LIST_VOLUME_MOUNTS] = "volume-mounts",
                                            [FG_SIM_DEVICE_LIST_CDI] = "cdi-cri" };

static enum fg_err read_group(json_object *o, size_t i, struct fg_sim_group *g, char *errmsg)
{
    static const char *const fields[] = { "name", "minSize", "maxSize", "initialSize", "capacity", "labels",
                                          "taints", "gpu", NULL };
    static const char *const gpu_fields[] = { "model", "memory", "deviceListStrategy", NULL };
    char path[64];
    snprintf(path, sizeof path, "nodeGroups[%zu]", i);
    enum fg_err err = known_fields(o, path, fields, errmsg);
    const char *name = fg_json_get_str(o, "name", NULL);
    if (!err && (!name || !*name || strlen(name) >= sizeof g->name || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(name)))
        return fg_errmsg(errmsg, FG_E_PARSE, "%s.name: a lower-case name (letters, digits, '-') is required", path);
    if (err)
        return err;
    set_group_defaults(g, name);
    g->initial_size = 0;
    if ((err = read_count(o, "minSize", path, &g->min_size, errmsg)) ||
        (err = read_count(o, "maxSize", path, &g->max_size, errmsg)) ||
        (err = read_count(o, "initialSize", path, &g->initial_size, errmsg)) ||
        (err = read_labels(o, path, &g->labels, errmsg)) || (err = read_taints(o, path, &g->taints, errmsg)))
        return err;
    if (!fg_json_get(o, "initialSize", NULL))
        g->initial_size = g->min_size;
    if (g->min_size > g->max_size || g->initial_size > g->max_size || g->initial_size < g->min_size)
        return fg_errmsg(errmsg, FG_E_PARSE, "%s: minSize <= initialSize <= maxSize is required", path);
    char why[FG_ERRMSG_MAX];
    json_object *cap = fg_json_get(o, "capacity", NULL);
    if (!cap || fg_resources_from_json(cap, &g->capacity, why) != FG_OK)
        return fg_errmsg(errmsg, FG_E_PARSE, "%s.capacity: %s", path,
                         cap ? why : "a resource list (cpu, memory, pods, ...) is required");
    if (fg_resources_get(&g->capacity, "cpu") <= 0 || fg_resources_get(&g->capacity, "memory") <= 0 ||
        fg_resources_get(&g->capacity, "pods") <= 0)
        return fg_errmsg(errmsg, FG_E_PARSE, "%s.capacity: cpu, memory and pods must be positive", path);
    int64_t gpus = fg_resources_get(&g->capacity, "nvidia.com/gpu");
    if (gpus < 0 || gpus % 1000 || gpus / 1000 > FG_SIM_MAX_GPUS)
        return fg_errmsg(errmsg, FG_E_PARSE, "%s.capacity.nvidia.com/gpu: a whole number of GPUs from 0 to %d is "
                         "expected", path, FG_SIM_MAX_GPUS);
    g->gpus = (unsigned)(gpus / 1000);
    json_object *gpu = fg_json_get(o, "gpu", NULL);
    if (gpu) {
        char at[80];
        snprintf(at, sizeof at, "%s.gpu", path);
        int64_t mem = 0;
        if ((err = known_fields(gpu, at, gpu_fields, errmsg)) ||
            (err = read_string(gpu, "model", at, g->gpu_model, sizeof g->gpu_model, errmsg)))
            return err;
        if (fg_json_get(gpu, "memory", NULL) &&
            (fg_quantity_json(fg_json_get(gpu, "memory", NULL), &mem, why) != FG_OK || mem <= 0))
            return fg_errmsg(errmsg, FG_E_PARSE, "%s.memory: a positive quantity such as 80Gi is expected", at);
        g->gpu_memory_mib = mem / 1000 / (1024 * 1024);
        const char *list = fg_json_get_str(gpu, "deviceListStrategy", NULL);
        bool known = !list;
        for (int l = 0; list && l < 3 && !known; l++)
            if (!strcmp(list, device_lists[l])) {
                g->device_list = (enum fg_sim_device_list)l;
                known = true;
            }
        if (!known || (fg_json_get(gpu, "deviceListStrategy", NULL) && !list))
            return fg_errmsg(errmsg, FG_E_PARSE, "%s.deviceListStrategy: envvar, volume-mounts or cdi-cri is expected",
                             at);
    }
    if (g->gpus && !g->gpu_model[0])
        snprintf(g->gpu_model, sizeof g->gpu_model, DEFAULT_GPU_MODEL);
    if (g->gpus && g->gpu_memory_mib <= 0)
        g->gpu_memory_mib = DEFAULT_GPU_MEMORY_MIB;
    return FG_OK;
}

static const char *const gpu_states[] = { [FG_SIM_GPU_STATE_FILES] = "files", [FG_SIM_GPU_STATE_MEMORY] = "memory" };

static bool parse_gpu_state(const char *s, enum fg_sim_gpu_state *out)
{
    for (size_t i = 0; s && i < sizeof gpu_states / sizeof gpu_states[0]; i++) {
        if (!strcmp(s, gpu_states[i])) {
            *out = (enum fg_sim_gpu_state)i;
            return true;
        }
    }
    return false;
}

static enum fg_err read_gpu_state(json_object *kubelet, struct fg_sim_config *cfg, char *errmsg)
{
    json_object *v = fg_json_get(kubelet, "gpuState", NULL);
    if (v && (!json_object_is_type(v, json_type_string) ||
              !parse_gpu_state(json_object_get_string(v), &cfg->kubelet.gpu_state)))
        return fg_errmsg(errmsg, FG_E_PARSE, "kubelet.gpuState: files or memory is expected");
    return FG_OK;
}

static enum fg_err read_usage(json_object *o, struct fg_sim_config *cfg, char *errmsg)
{
    static const char *const fields[] = { "interval", "timeScale", "traceDir", NULL };
    enum fg_err err;
    if ((err = known_fields(o, "usage", fields, errmsg)) ||
        (err = read_duration(o, "interval", "usage", &cfg->usage.interval_ns, errmsg)) ||
        (err = read_string(o, "traceDir", "usage", cfg->usage.trace_dir, sizeof cfg->usage.trace_dir, errmsg)))
        return err;
    if (cfg->usage.interval_ns == 0)
        return fg_errmsg(errmsg, FG_E_PARSE, "usage.interval: must be positive");
    json_object *v = fg_json_get(o, "timeScale", NULL);
    if (v) {
        double scale = json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)
                           ? json_object_get_double(v) : -1;
        if (!(scale > 0 && scale <= 1e6))
            return fg_errmsg(errmsg, FG_E_PARSE, "usage.timeScale: a number above 0 and at most 1000000 is expected "
                             "(trace seconds per second)");
        cfg->usage.time_scale = scale;
    }
    return FG_OK;
}

static enum fg_err read_groups(struct fg_sim_config *cfg, json_object *v, char *errmsg)
{
    if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) == 0 ||
        json_object_array_length(v) > FG_SIM_MAX_GROUPS)
        return fg_errmsg(errmsg, FG_E_PARSE, "nodeGroups: a list of 1 to %d groups is expected", FG_SIM_MAX_GROUPS);
    struct fg_sim_config fresh = { .ngroups = 0 };
    enum fg_err err = FG_OK;
    for (size_t i = 0; !err && i < json_object_array_length(v); i++) {
        struct fg_sim_group *g = &fresh.groups[fresh.ngroups];
        err = read_group(json_object_array_get_idx(v, i), i, g, errmsg);
        if (g->labels)
            fresh.ngroups++;   /* allocated, whether or not it was read whole */
        for (size_t j = 0; !err && j + 1 < fresh.ngroups; j++)
            if (!strcmp(fresh.groups[j].name, g->name))
                err = fg_errmsg(errmsg, FG_E_PARSE, "nodeGroups[%zu].name: \"%s\" is used twice", i, g->name);
    }
    if (err) {
        fg_sim_config_cleanup(&fresh);
        return err;
    }
    fg_sim_config_cleanup(cfg);
    memcpy(cfg->groups, fresh.groups, sizeof cfg->groups);
    cfg->ngroups = fresh.ngroups;
    return FG_OK;
}

static enum fg_err read_images(struct fg_sim_config *cfg, json_object *v, char *errmsg)
{
    if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) > FG_SIM_MAX_IMAGES)
        return fg_errmsg(errmsg, FG_E_PARSE, "fracgpuImages: a list of at most %d image repositories is expected",
                         FG_SIM_MAX_IMAGES);
    cfg->nimages = 0;
    for (size_t i = 0; i < json_object_array_length(v); i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(v, i));
        if (!json_object_is_type(json_object_array_get_idx(v, i), json_type_string) || !*s ||
            strlen(s) >= sizeof cfg->fracgpu_images[0])
            return fg_errmsg(errmsg, FG_E_PARSE, "fracgpuImages[%zu]: an image repository is expected", i);
        snprintf(cfg->fracgpu_images[cfg->nimages++], sizeof cfg->fracgpu_images[0], "%s", s);
    }
    return FG_OK;
}

/* Reads every section into cfg; on failure cfg may be half-changed (the caller works on a copy). */
static enum fg_err apply(struct fg_sim_config *cfg, json_object *doc, char *errmsg)
{
    static const char *const top[] = { "nodeGroups", "controllers", "scheduler", "kubelet", "autoscaler", "usage",
                                       "fracgpuImages", "fracgpuBinary", "clientQPS", NULL };
    static const char *const on_off[] = { "enabled", NULL };
    static const char *const kubelet[] = { "enabled", "leaseInterval", "statusInterval", "podStartDelay",
                                           "jobDuration", "crashLoopBackoff", "gpuState", NULL };
    static const char *const autoscaler[] = { "enabled", "scanInterval", "scaleUpDelay", "provisionDelay",
                                              "scaleDownUnneeded", "scaleDownDelayAfterAdd", NULL };
    enum fg_err err = known_fields(doc, "config", top, errmsg);
    if (err)
        return err;
    json_object *v;
    if ((v = fg_json_get(doc, "controllers", NULL)) &&
        ((err = known_fields(v, "controllers", on_off, errmsg)) ||
         (err = read_bool(v, "enabled", "controllers", &cfg->controllers, errmsg))))
        return err;
    if ((v = fg_json_get(doc, "scheduler", NULL)) &&
        ((err = known_fields(v, "scheduler", on_off, errmsg)) ||
         (err = read_bool(v, "enabled", "scheduler", &cfg->scheduler, errmsg))))
        return err;
    if ((v = fg_json_get(doc, "kubelet", NULL)) &&
        ((err = known_fields(v, "kubelet", kubelet, errmsg)) ||
         (err = read_bool(v, "enabled", "kubelet", &cfg->kubelets, errmsg)) ||
         (err = read_duration(v, "leaseInterval", "kubelet", &cfg->kubelet.lease_ns, errmsg)) ||
         (err = read_duration(v, "statusInterval", "kubelet", &cfg->kubelet.status_ns, errmsg)) ||
         (err = read_duration(v, "podStartDelay", "kubelet", &cfg->kubelet.pod_start_ns, errmsg)) ||
         (err = read_duration(v, "jobDuration", "kubelet", &cfg->kubelet.job_run_ns, errmsg)) ||
         (err = read_duration(v, "crashLoopBackoff", "kubelet", &cfg->kubelet.crash_backoff_ns, errmsg)) ||
         (err = read_gpu_state(v, cfg, errmsg))))
        return err;
    if ((v = fg_json_get(doc, "usage", NULL)) && (err = read_usage(v, cfg, errmsg)))
        return err;
    if ((v = fg_json_get(doc, "autoscaler", NULL)) &&
        ((err = known_fields(v, "autoscaler", autoscaler, errmsg)) ||
         (err = read_bool(v, "enabled", "autoscaler", &cfg->autoscaler, errmsg)) ||
         (err = read_duration(v, "scanInterval", "autoscaler", &cfg->autoscale.scan_ns, errmsg)) ||
         (err = read_duration(v, "scaleUpDelay", "autoscaler", &cfg->autoscale.scale_up_delay_ns, errmsg)) ||
         (err = read_duration(v, "provisionDelay", "autoscaler", &cfg->autoscale.provision_ns, errmsg)) ||
         (err = read_duration(v, "scaleDownUnneeded", "autoscaler", &cfg->autoscale.scale_down_unneeded_ns, errmsg)) ||
         (err = read_duration(v, "scaleDownDelayAfterAdd", "autoscaler",
                              &cfg->autoscale.scale_down_delay_after_add_ns, errmsg))))
        return err;
    if (cfg->kubelet.lease_ns == 0 || cfg->kubelet.status_ns == 0 || cfg->kubelet.crash_backoff_ns == 0 ||
        cfg->autoscale.scan_ns == 0)
        return fg_errmsg(errmsg, FG_E_PARSE, "kubelet.leaseInterval, kubelet.statusInterval, "
                                             "kubelet.crashLoopBackoff and autoscaler.scanInterval must be positive");
    if ((v = fg_json_get(doc, "fracgpuImages", NULL)) && (err = read_images(cfg, v, errmsg)))
        return err;
    if ((err = read_string(doc, "fracgpuBinary", "config", cfg->fracgpu_binary, sizeof cfg->fracgpu_binary, errmsg)))
        return err;
    if ((v = fg_json_get(doc, "clientQPS", NULL))) {
        if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
            return fg_errmsg(errmsg, FG_E_PARSE, "config.clientQPS: a number is expected (0: no limit)");
        cfg->qps = json_object_get_double(v);
        if (cfg->qps < 0)
            return fg_errmsg(errmsg, FG_E_PARSE, "config.clientQPS: must not be negative");
    }
    if ((v = fg_json_get(doc, "nodeGroups", NULL)) && (err = read_groups(cfg, v, errmsg)))
        return err;
    return FG_OK;
}

/* A copy of cfg: its groups' labels its own (the command line changes them in place), their
 * taints taken by reference (only ever replaced whole). */
static void copy_config(struct fg_sim_config *dst, const struct fg_sim_config *src)
{
    *dst = *src;
    for (size_t i = 0; i < src->ngroups; i++) {
        dst->groups[i].labels = NULL;
        if (json_object_deep_copy(src->groups[i].labels, &dst->groups[i].labels, NULL) != 0)
            dst->groups[i].labels = json_object_new_object();
        json_object_get(dst->groups[i].taints);
    }
}

/* Makes change on a copy of cfg, which replaces cfg only when it succeeds. */
static enum fg_err on_copy(struct fg_sim_config *cfg, enum fg_err (*change)(struct fg_sim_config *, const void *, char *),
                           const void *arg, char *errmsg)
{
    struct fg_sim_config work;
    copy_config(&work, cfg);
    enum fg_err err = change(&work, arg, errmsg);
    if (err) {
        fg_sim_config_cleanup(&work);
        return err;
    }
    fg_sim_config_cleanup(cfg);
    *cfg = work;
    return FG_OK;
}

static enum fg_err apply_doc(struct fg_sim_config *cfg, const void *doc, char *errmsg)
{
    return apply(cfg, (json_object *)doc, errmsg);
}

enum fg_err fg_sim_config_apply(struct fg_sim_config *cfg, json_object *doc, char *errmsg)
{
    return on_copy(cfg, apply_doc, doc, errmsg);
}

enum fg_err fg_sim_config_load(struct fg_sim_config *cfg, const char *path, char *errmsg)
{
    fg_sim_config_default(cfg);
    json_object *doc = NULL;
    enum fg_err err = fg_yaml_load_file(path, &doc, errmsg);
    if (err)
        return err;
    char why[FG_ERRMSG_MAX] = "";
    err = fg_sim_config_apply(cfg, doc, why);
    json_object_put(doc);
    if (err)
        return fg_errmsg(errmsg, err, "%s: %s", path, why);
    return FG_OK;
}

/* ---- writing ---- */

static void put_duration(json_object *o, const char *key, uint64_t ns)
{
    char s[32];
    fg_duration_format((int64_t)(ns / FG_NS_PER_MS), s, sizeof s);
    json_object_object_add(o, key, json_object_new_string(s));
}

static json_object *on_off(bool enabled)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "enabled", json_object_new_boolean(enabled));
    return o;
}

json_object *fg_sim_config_to_json(const struct fg_sim_config *cfg)
{
    json_object *doc = json_object_new_object();
    json_object *groups = json_object_new_array();
    for (size_t i = 0; i < cfg->ngroups; i++) {
        const struct fg_sim_group *g = &cfg->groups[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(g->name));
        json_object_object_add(o, "minSize", json_object_new_int64(g->min_size));
        json_object_object_add(o, "maxSize", json_object_new_int64(g->max_size));
        json_object_object_add(o, "initialSize", json_object_new_int64(g->initial_size));
        json_object_object_add(o, "capacity", fg_resources_to_json(&g->capacity));
        json_object_object_add(o, "labels", json_object_get(g->labels));
        json_object_object_add(o, "taints", json_object_get(g->taints));
        if (g->gpu_model[0]) {
            json_object *gpu = json_object_new_object();
            json_object_object_add(gpu, "model", json_object_new_string(g->gpu_model));
            char mem[40];
            snprintf(mem, sizeof mem, "%lldMi", (long long)g->gpu_memory_mib);
            json_object_object_add(gpu, "memory", json_object_new_string(mem));
            json_object_object_add(gpu, "deviceListStrategy", json_object_new_string(device_lists[g->device_list]));
            json_object_object_add(o, "gpu", gpu);
        }
        json_object_array_add(groups, o);
    }
    json_object_object_add(doc, "nodeGroups", groups);
    json_object_object_add(doc, "controllers", on_off(cfg->controllers));
    json_object_object_add(doc, "scheduler", on_off(cfg->scheduler));
    json_object *k = on_off(cfg->kubelets);
    put_duration(k, "leaseInterval", cfg->kubelet.lease_ns);
    put_duration(k, "statusInterval", cfg->kubelet.status_ns);
    put_duration(k, "podStartDelay", cfg->kubelet.pod_start_ns);
    put_duration(k, "jobDuration", cfg->kubelet.job_run_ns);
    put_duration(k, "crashLoopBackoff", cfg->kubelet.crash_backoff_ns);
    json_object_object_add(k, "gpuState", json_object_new_string(gpu_states[cfg->kubelet.gpu_state]));
    json_object_object_add(doc, "kubelet", k);
    json_object *u = json_object_new_object();
    put_duration(u, "interval", cfg->usage.interval_ns);
    json_object_object_add(u, "timeScale", json_object_new_double(cfg->usage.time_scale));
    if (cfg->usage.trace_dir[0])
        json_object_object_add(u, "traceDir", json_object_new_string(cfg->usage.trace_dir));
    json_object_object_add(doc, "usage", u);
    json_object *a = on_off(cfg->autoscaler);
    put_duration(a, "scanInterval", cfg->autoscale.scan_ns);
    put_duration(a, "scaleUpDelay", cfg->autoscale.scale_up_delay_ns);
    put_duration(a, "provisionDelay", cfg->autoscale.provision_ns);
    put_duration(a, "scaleDownUnneeded", cfg->autoscale.scale_down_unneeded_ns);
    put_duration(a, "scaleDownDelayAfterAdd", cfg->autoscale.scale_down_delay_after_add_ns);
    json_object_object_add(doc, "autoscaler", a);
    json_object *images = json_object_new_array();
    for (size_t i = 0; i < cfg->nimages; i++)
        json_object_array_add(images, json_object_new_string(cfg->fracgpu_images[i]));
    json_object_object_add(doc, "fracgpuImages", images);
    if (cfg->fracgpu_binary[0])
        json_object_object_add(doc, "fracgpuBinary", json_object_new_string(cfg->fracgpu_binary));
    json_object_object_add(doc, "clientQPS", json_object_new_double(cfg->qps));
    return doc;
}

/* ---- the command line ---- */

/* A whole number in [min, max] from s; false for anything else. */
static bool parse_count(const char *s, long min, long max, long *out)
{
    char *end;
    long v = *s ? strtol(s, &end, 10) : 0;
    if (!*s || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

/* Gives every node of g n GPUs: the nvidia.com/gpu capacity and the label GPU feature discovery sets. */
static enum fg_err set_gpus(struct fg_sim_group *g, unsigned n)
{
    g->gpus = n;
    json_object_object_del(g->labels, GPU_PRESENT_LABEL);
    if (n)
        json_object_object_add(g->labels, GPU_PRESENT_LABEL, json_object_new_string("true"));
    if (n && !g->gpu_model[0])
        snprintf(g->gpu_model, sizeof g->gpu_model, DEFAULT_GPU_MODEL);
    if (n && g->gpu_memory_mib <= 0)
        g->gpu_memory_mib = DEFAULT_GPU_MEMORY_MIB;
    return fg_resources_set(&g->capacity, "nvidia.com/gpu", (int64_t)n * 1000);
}

static enum fg_err override(struct fg_sim_config *cfg, const struct fg_sim_flags *f, char *errmsg)
{
    struct fg_sim_group *g = &cfg->groups[0];
    long n;
    if (f->nodes) {
        if (!parse_count(f->nodes, 0, 100000, &n))
            return fg_errmsg(errmsg, FG_E_PARSE, "--nodes wants 0 to 100000, got \"%s\"", f->nodes);
        g->initial_size = (unsigned)n;
        g->min_size = g->min_size < (unsigned)n ? g->min_size : (unsigned)n;
        g->max_size = g->max_size > (unsigned)n ? g->max_size : (unsigned)n;
    }
    if (f->gpu_model) {
        if (!*f->gpu_model || strlen(f->gpu_model) >= sizeof g->gpu_model)
            return fg_errmsg(errmsg, FG_E_PARSE, "--gpu-model wants a name of 1 to %zu characters, got \"%s\"",
                             sizeof g->gpu_model - 1, f->gpu_model);
        snprintf(g->gpu_model, sizeof g->gpu_model, "%s", f->gpu_model);
    }
    if (f->gpu_memory_gib) {
        if (!parse_count(f->gpu_memory_gib, 1, 4096, &n))
            return fg_errmsg(errmsg, FG_E_PARSE, "--gpu-memory-gib wants a whole number of GiB from 1 to 4096, got \"%s\"",
                             f->gpu_memory_gib);
        g->gpu_memory_mib = n * 1024;
    }
    if (f->gpus_per_node) {
        if (!parse_count(f->gpus_per_node, 0, FG_SIM_MAX_GPUS, &n))
            return fg_errmsg(errmsg, FG_E_PARSE, "--gpus-per-node wants 0 to %d, got \"%s\"", FG_SIM_MAX_GPUS,
                             f->gpus_per_node);
        if (set_gpus(g, (unsigned)n) != FG_OK)
            return fg_errmsg(errmsg, FG_E_PARSE, "--gpus-per-node: the group %s has too many resources", g->name);
    }
    if ((f->gpu_model || f->gpu_memory_gib) && !g->gpus)
        return fg_errmsg(errmsg, FG_E_PARSE, "--gpu-model and --gpu-memory-gib describe the GPUs of the node group "
                         "\"%s\", which has none (give it some with --gpus-per-node)", g->name);
    if (f->gpu_state && !parse_gpu_state(f->gpu_state, &cfg->kubelet.gpu_state))
        return fg_errmsg(errmsg, FG_E_PARSE, "--gpu-state wants files or memory, got \"%s\"", f->gpu_state);
    return FG_OK;
}

static enum fg_err override_flags(struct fg_sim_config *cfg, const void *flags, char *errmsg)
{
    return override(cfg, flags, errmsg);
}

enum fg_err fg_sim_config_override(struct fg_sim_config *cfg, const struct fg_sim_flags *f, char *errmsg)
{
    return on_copy(cfg, override_flags, f, errmsg);
}

const struct fg_sim_group *fg_sim_config_group(const struct fg_sim_config *cfg, const char *name)
{
    for (size_t i = 0; name && i < cfg->ngroups; i++)
        if (!strcmp(cfg->groups[i].name, name))
            return &cfg->groups[i];
    return NULL;
}

bool fg_sim_config_is_fracgpu_image(const struct fg_sim_config *cfg, const char *image)
{
    if (!image)
        return false;
    size_t repo_len = strcspn(image, "@");   /* without its digest */
    const char *colon = memrchr(image, ':', repo_len);
    if (colon && !memchr(colon, '/', repo_len - (size_t)(colon - image)))
        repo_len = (size_t)(colon - image);   /* a tag, not a registry port */
    for (size_t i = 0; i < cfg->nimages; i++)
        if (strlen(cfg->fracgpu_images[i]) == repo_len && !strncmp(cfg->fracgpu_images[i], image, repo_len))
            return true;
    return false;
}
