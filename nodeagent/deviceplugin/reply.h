/*
 * reply — what a container gets from Allocate: exactly its GPU, in the form the node uses.
 *
 * Kubernetes nodes expose GPUs to containers in one of three ways, and the device plugin must speak
 * the node's (the names are those of NVIDIA's own device plugin, DEVICE_LIST_STRATEGY):
 *   - "cdi-cri": a CDI device name, `nvidia.com/gpu=<UUID>`, in the reply's CDI field; the container
 *     runtime applies the node's CDI spec (GPU Operator 25.10+ enables CDI by default; Bottlerocket).
 *   - "volume-mounts": the NVIDIA runtime reads the device list from mounts under
 *     /var/run/nvidia-container-devices (hardened installs that refuse the env from unprivileged pods);
 *     the env then names that directory.
 *   - "envvar": NVIDIA_VISIBLE_DEVICES=<UUID>, the legacy form.
 * In every form the reply also sets NVIDIA_VISIBLE_DEVICES to the UUID (or the mount directory), so
 * the pod's own `NVIDIA_VISIBLE_DEVICES` cannot widen it: the runtime reads the plugin's value last.
 *
 * "auto" detects the form from the host: a CDI spec declaring kind nvidia.com/gpu in /etc/cdi or
 * /var/run/cdi → cdi-cri; else the NVIDIA runtime's config.toml with
 * accept-nvidia-visible-devices-as-volume-mounts = true → volume-mounts; else envvar.
 *
 * For an mps GPU the tenant also gets the MPS daemon of its GPU, as the capacity holder runs it: the
 * pipe directory mounted at FG_DP_MPS_PIPE (CUDA_MPS_PIPE_DIRECTORY names it), the shared memory
 * directory at /dev/shm, and its own limits (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE,
 * CUDA_MPS_PINNED_DEVICE_MEM_LIMIT), which can only lower the daemon's defaults — so nothing in the
 * pod's spec (no hostPath, which Pod Security baseline forbids) is needed.
 */
#ifndef FG_DEVICEPLUGIN_REPLY_H
#define FG_DEVICEPLUGIN_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

enum fg_dp_form { FG_DP_FORM_AUTO, FG_DP_FORM_ENVVAR, FG_DP_FORM_VOLUME_MOUNTS, FG_DP_FORM_CDI };

#define FG_DP_MOUNTS_DIR "/var/run/nvidia-container-devices"
#define FG_DP_MPS_PIPE "/tmp/nvidia-mps"
#define FG_DP_REPLY_ENVS 8
#define FG_DP_REPLY_MOUNTS 4
#define FG_DP_PATH_MAX 512

struct fg_dp_env {
    char name[64];
    char value[FG_DP_PATH_MAX];
};

struct fg_dp_mount {
    char container_path[FG_DP_PATH_MAX];
    char host_path[FG_DP_PATH_MAX];
    bool read_only;
};

struct fg_dp_reply {
    struct fg_dp_env envs[FG_DP_REPLY_ENVS];
    size_t nenvs;
    struct fg_dp_mount mounts[FG_DP_REPLY_MOUNTS];
    size_t nmounts;
    char cdi_device[160]; /* "" unless cdi-cri */
};

/* What the reply is about: the granted GPU, and for mps the tenant's share and its daemon. */
struct fg_dp_grant_view {
    const char *gpu_uuid;
    bool mps;
    int64_t compute_milli; /* for mps: the active thread percentage is milli / 10, at least 1 */
    int64_t memory_mib;    /* for mps: the pinned memory limit; 0 = whole GPU, no limit */
    const char *mps_root;  /* the capacity holders' --mps-root: <root>/<uuid>/{pipe,shm} (mps_paths.h) */
};

/* "envvar", "volume-mounts", "cdi-cri", "auto". */
const char *fg_dp_form_name(enum fg_dp_form f);
/* The form a name says; FG_E_INVAL for another name. */
enum fg_err fg_dp_form_parse(const char *name, enum fg_dp_form *out) FG_MUST_USE;
/* The form of the host whose root is host_root ("" or "/" for this machine); why (may be NULL,
 * FG_ERRMSG_MAX) says what decided it. */
enum fg_dp_form fg_dp_form_detect(const char *host_root, char *why);

/* The reply for one container in form f (not auto). FG_E_INVAL (errmsg) when the MPS directories of
 * an mps GPU cannot be named (nodeagent/holder/mps_paths.h). */
enum fg_err fg_dp_reply_build(enum fg_dp_form f, const struct fg_dp_grant_view *g, struct fg_dp_reply *out,
                              char *errmsg) FG_MUST_USE;

#endif
