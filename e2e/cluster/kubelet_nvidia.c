/*
 * kubelet_nvidia — what NVIDIA's software does on a simulated GPU node: the GPUs themselves (their
 * UUIDs, simids.h), the NVIDIA device plugin's behaviour for nvidia.com/gpu, and the NVIDIA
 * container runtime's choice of which GPUs a container sees.
 *
 * The device plugin registers the node's GPUs as nvidia.com/gpu devices, their IDs the UUIDs
 * (its default deviceIDStrategy), and answers Allocate with its default envvar strategy:
 * NVIDIA_VISIBLE_DEVICES=<uuid>,<uuid>. The kubelet puts that before the container's own
 * environment, so a pod that sets NVIDIA_VISIBLE_DEVICES itself overrides it — the hole
 * DESIGN.md's device access section describes, simulated as it is.
 *
 * The container runtime then reads the container's final NVIDIA_VISIBLE_DEVICES (UUIDs or
 * indices, all, none or void) and, for any GPU, injects the driver's library. Here (with
 * gpuState files) that is the fake NVML linked into the node's usr/lib/nvidia, found through
 * LD_LIBRARY_PATH, its state file in FG_FAKE_NVML_STATE, and FG_FAKE_NVML_VISIBLE naming the GPUs
 * the fake shows — the stand-in for the runtime mounting only those GPUs' device nodes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/cluster/kubelet.h"
#include "e2e/cluster/selfpath.h"

#define COMPONENT "kubelet"

static enum fg_err nvidia_allocate(void *ud, const struct fg_sim_alloc_request *req, struct fg_sim_alloc_response *resp,
                                   char *errmsg)
{
    (void)ud;
    (void)errmsg;
    size_t len = sizeof "NVIDIA_VISIBLE_DEVICES=";
    for (size_t i = 0; i < req->nids; i++)
        len += strlen(req->ids[i]) + 1;
    char *env = fg_malloc(len);
    size_t n = (size_t)snprintf(env, len, "NVIDIA_VISIBLE_DEVICES=");
    for (size_t i = 0; i < req->nids; i++)
        n += (size_t)snprintf(env + n, len - n, "%s%s", i ? "," : "", req->ids[i]);
    resp->env = fg_calloc(1, sizeof *resp->env);
    resp->env[0] = env;
    resp->nenv = 1;
    return FG_OK;
}

static const struct fg_sim_device_plugin nvidia_plugin = { "nvidia-device-plugin", false, nvidia_allocate,
                                                           fg_sim_device_plugin_release_none,
                                                           fg_sim_device_plugin_restore_none };

void fg_sim_nvidia_boot(struct fg_sim_kubelets *k, struct fg_sim_node *n)
{
    (void)k;
    n->ngpus = n->group->gpus;
    const char *ids[FG_SIM_MAX_GPUS];
    for (unsigned i = 0; i < n->ngpus; i++) {
        fg_sim_gpu_uuid(n->name, i, n->gpu_uuid[i]);
        ids[i] = n->gpu_uuid[i];
    }
    if (n->ngpus)
        fg_sim_devices_register(&n->devices, FG_RES_NVIDIA_GPU, &nvidia_plugin, NULL, ids, n->ngpus);
}

/* What tells a device plugin (fracgpu's auto-detection, NVIDIA's own) how the node's runtime takes a
 * container's GPUs: a CDI spec for nvidia.com/gpu, or the runtime's volume-mount setting. */
static void write_runtime_config(const struct fg_sim_node *n)
{
    char dir[PATH_MAX + 64], path[PATH_MAX + 96];
    snprintf(dir, sizeof dir, "%s/etc/cdi", n->root);
    fg_remove_tree(dir);
    snprintf(dir, sizeof dir, "%s/etc/nvidia-container-runtime", n->root);
    fg_remove_tree(dir);
    const char *text = NULL;
    if (n->group->device_list == FG_SIM_DEVICE_LIST_CDI) {
        snprintf(dir, sizeof dir, "%s/etc/cdi", n->root);
        snprintf(path, sizeof path, "%s/nvidia.yaml", dir);
        text = "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []   # (simulated: the runtime resolves the names)\n";
    } else if (n->group->device_list == FG_SIM_DEVICE_LIST_VOLUME_MOUNTS) {
        snprintf(path, sizeof path, "%s/config.toml", dir);
        text = "accept-nvidia-visible-devices-envvar-when-unprivileged = false\n"
               "accept-nvidia-visible-devices-as-volume-mounts = true\n";
    }
    if (!text)
        return;
    fg_mkdir_p(dir);
    if (fg_write_file_atomic(path, text, strlen(text)))
        fg_log(FG_LOG_WARN, COMPONENT, "node %s: cannot write %s", n->name, path);
}

void fg_sim_nvidia_install(struct fg_sim_kubelets *k, struct fg_sim_node *n)
{
    if (!n->ngpus || k->cfg->kubelet.gpu_state != FG_SIM_GPU_STATE_FILES)
        return;
    char path[PATH_MAX + 64], target[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/usr/lib/nvidia", n->root);
    fg_mkdir_p(path);
    snprintf(path, sizeof path, "%s/usr/lib/nvidia/libnvidia-ml.so.1", n->root);
    snprintf(target, sizeof target, "%s/libfg_fake_nvml.so", k->lib_dir);
    unlink(path);
    if (symlink(target, path))
        fg_log(FG_LOG_WARN, COMPONENT, "node %s: cannot link the NVML library: %s", n->name, strerror(errno));
    /* the MPS binaries the NVIDIA runtime injects with the compute capability (kubelet_env.c puts the
     * node's usr/bin first in a GPU container's PATH) */
    snprintf(path, sizeof path, "%s/usr/bin", n->root);
    fg_mkdir_p(path);
    snprintf(path, sizeof path, "%s/usr/bin/nvidia-cuda-mps-control", n->root);
    fg_sim_self_path(target, sizeof target, "fracgpu-sim-mps-control");
    unlink(path);
    if (symlink(target, path))
        fg_log(FG_LOG_WARN, COMPONENT, "node %s: cannot link the MPS control: %s", n->name, strerror(errno));
    write_runtime_config(n);
    snprintf(path, sizeof path, "%s/nvml", n->root);
    fg_mkdir_p(path);
    snprintf(path, sizeof path, "%s/proc", n->root);   /* processes of an earlier boot are gone */
    fg_remove_tree(path);
    fg_mkdir_p(path);
    fg_sim_gpus_write_node(k, n);
}

int fg_sim_nvidia_gpu_index(const struct fg_sim_node *n, const char *uuid)
{
    for (unsigned i = 0; uuid && i < n->ngpus; i++)
        if (!strcasecmp(n->gpu_uuid[i], uuid))
            return (int)i;
    return -1;
}

bool fg_sim_nvidia_visible(const struct fg_sim_node *n, const char *devices, char *out, size_t size)
{
    out[0] = '\0';
    if (!devices || !*devices || !strcmp(devices, "none") || !strcmp(devices, "void") || !n->ngpus)
        return false;
    bool all = !strcmp(devices, "all");
    uint32_t seen = 0;
    size_t len = 0;
    for (const char *s = devices; *s;) {
        size_t tok = strcspn(s, ",");
        char item[FG_SIM_DEVICE_ID_MAX];
        snprintf(item, sizeof item, "%.*s", (int)(tok < sizeof item ? tok : sizeof item - 1), s);
        s += tok + (s[tok] == ',');
        char *end;
        long index = strtol(item, &end, 10);
        int g = *item && !*end ? (index >= 0 && index < (long)n->ngpus ? (int)index : -1)
                               : fg_sim_nvidia_gpu_index(n, item);
        if (g >= 0)
            seen |= 1u << g;
    }
    for (unsigned g = 0; g < n->ngpus; g++)
        if ((all || seen >> g & 1u) && len + FG_SIM_GPU_UUID_LEN + 2 <= size)
            len += (size_t)snprintf(out + len, size - len, "%s%s", len ? "," : "", n->gpu_uuid[g]);
    return len > 0;
}
