/*
 * config — what the simulated cluster is made of: node groups (the instance shapes a cloud offers,
 * with their labels, taints, GPUs and autoscaling bounds), the timings of the simulated kubelets and
 * autoscaler, which components run, and which container images are fracgpu's own (run as real
 * processes of the built binary).
 *
 * People write it in YAML (`fracgpu-sim-cluster --config FILE`; every field has a default, and no
 * file at all is one CPU-and-GPU node group). The supervisor reads it once, applies its command-line
 * overrides (--nodes, --gpus-per-node, --gpu-model, --gpu-memory-gib, --gpu-state: fg_sim_config_override,
 * so that a bad flag is refused as a bad field is), and hands each component the result as JSON, so
 * every process sees the same cluster. A GPU node group has at most FG_SIM_MAX_GPUS whole GPUs
 * (nvidia.com/gpu), of one model and memory (an A100 80GB unless it says). Durations use fracgpu's duration syntax (base/duration.h), resources Kubernetes
 * quantities. Unknown fields are refused, naming the field, so a typo never silently becomes a
 * default.
 *
 * Ownership: fg_sim_config_* fill a caller-owned struct; fg_sim_config_cleanup frees what they
 * allocated (the groups' labels and taints).
 */
#ifndef FG_SIM_CONFIG_H
#define FG_SIM_CONFIG_H

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "operator/kube/resources.h"

#define FG_SIM_MAX_GROUPS 16
#define FG_SIM_MAX_IMAGES 8
#define FG_SIM_MAX_GPUS 16     /* GPUs per node: as many as the largest real nodes, and the fake NVML, hold */
#define FG_SIM_GPU_MODEL_MAX 96   /* NVML's name buffer, its terminator included */

/* Where the kubelets keep what the GPUs of their nodes do. */
/* How a GPU node's NVIDIA container runtime learns a container's GPUs (NVIDIA's device-plugin
 * DEVICE_LIST_STRATEGY): the env variable, a list of mounts, or CDI device names. */
enum fg_sim_device_list { FG_SIM_DEVICE_LIST_ENVVAR, FG_SIM_DEVICE_LIST_VOLUME_MOUNTS, FG_SIM_DEVICE_LIST_CDI };

enum fg_sim_gpu_state {
    FG_SIM_GPU_STATE_FILES,    /* each GPU node's fake NVML state, proc tree and NVML library in its directory */
    FG_SIM_GPU_STATE_MEMORY,   /* in the kubelets' memory only: nothing per node on disk, for thousands of nodes */
};

struct fg_sim_group {
    char name[64];
    unsigned min_size, max_size, initial_size;
    struct fg_resources capacity;   /* cpu, memory, pods, ephemeral-storage, nvidia.com/gpu, ... */
    json_object *labels;            /* owned; the group and instance-type labels included */
    json_object *taints;            /* owned array */
    unsigned gpus;                  /* whole GPUs per node: its nvidia.com/gpu capacity */
    char gpu_model[FG_SIM_GPU_MODEL_MAX];   /* what NVML reports on these nodes ("" without GPUs) */
    int64_t gpu_memory_mib;
    enum fg_sim_device_list device_list;    /* how the nodes' container runtime takes a container's GPUs */
};

struct fg_sim_config {
    struct fg_sim_group groups[FG_SIM_MAX_GROUPS];
    size_t ngroups;
    bool controllers, scheduler, kubelets, autoscaler;  /* which components run */
    struct {
        uint64_t scan_ns;               /* how often the autoscaler looks */
        uint64_t scale_up_delay_ns;     /* a pod unschedulable this long asks for a node */
        uint64_t provision_ns;          /* an instance boots this long before its kubelet registers */
        uint64_t scale_down_unneeded_ns;    /* an empty node this long is removed */
        uint64_t scale_down_delay_after_add_ns;
    } autoscale;
    struct {
        uint64_t lease_ns;              /* node Lease renewal */
        uint64_t status_ns;             /* node status heartbeat */
        uint64_t pod_start_ns;          /* a simulated container starts this long after admission */
        uint64_t job_run_ns;            /* a simulated container of a run-to-completion pod runs this long */
        uint64_t crash_backoff_ns;      /* first restart delay of a crashed container, doubling to 5 min */
        enum fg_sim_gpu_state gpu_state;
    } kubelet;
    struct {                            /* the usage driver: what pods do with their GPUs */
        uint64_t interval_ns;           /* how often their use is sampled from their profiles */
        double time_scale;              /* trace seconds replayed per second */
        char trace_dir[PATH_MAX];       /* the GenTD26 files ("": the build's data/, beside the binary) */
    } usage;
    char fracgpu_images[FG_SIM_MAX_IMAGES][160];    /* image repositories run as real processes */
    size_t nimages;
    char fracgpu_binary[PATH_MAX];      /* the binary those processes run */
    double qps;                         /* client rate limit of every component; 0: none */
};

/* The default configuration: one group "gpu" (16 CPU, 64 GiB, 110 pods, 4 GPUs; labelled
 * nvidia.com/gpu.present=true; 1 node, at most 10), every component on. */
void fg_sim_config_default(struct fg_sim_config *cfg);
/* Replaces the defaults with what the document (parsed YAML or JSON) says. FG_E_PARSE with the
 * field's path in errmsg for an unknown field or a bad value; cfg keeps the defaults then. */
enum fg_err fg_sim_config_apply(struct fg_sim_config *cfg, json_object *doc, char *errmsg) FG_MUST_USE;
/* fg_sim_config_default, then the YAML file at path. */
enum fg_err fg_sim_config_load(struct fg_sim_config *cfg, const char *path, char *errmsg) FG_MUST_USE;
/* The configuration as a document fg_sim_config_apply reads back to the same configuration. */
json_object *fg_sim_config_to_json(const struct fg_sim_config *cfg);
void fg_sim_config_cleanup(struct fg_sim_config *cfg);

/* What the command line says (each NULL when not given): --nodes, the first group's initial size
 * (its bounds widened to hold it); --gpus-per-node, --gpu-model and --gpu-memory-gib, the first
 * group's GPUs; --gpu-state, files or memory. */
struct fg_sim_flags {
    const char *nodes, *gpus_per_node, *gpu_model, *gpu_memory_gib, *gpu_state;
};
/* Applies the flags to cfg. FG_E_PARSE naming the flag, its bounds and the value given for a bad
 * one; cfg is unchanged then. */
enum fg_err fg_sim_config_override(struct fg_sim_config *cfg, const struct fg_sim_flags *f, char *errmsg) FG_MUST_USE;

/* The group called name, or NULL. */
const struct fg_sim_group *fg_sim_config_group(const struct fg_sim_config *cfg, const char *name);
/* Is image (a container's image reference) one of fracgpu's, run as a real process? */
bool fg_sim_config_is_fracgpu_image(const struct fg_sim_config *cfg, const char *image);

#endif
