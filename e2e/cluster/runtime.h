/*
 * runtime — the container runtime of a simulated node, and what of it shows from outside: the
 * scheme of its containers' IDs in pod statuses ("containerd://<id>", "cri-o://<id>"), its version
 * in the Node's nodeInfo, and the cgroup file (/proc/<pid>/cgroup) of a container's process, which
 * is how a node agent finds the pod of a GPU process (exporter/cgroup.c reads it back).
 *
 * Nodes differ as fleets do, so each node takes one of three setups by its name (the same in every
 * run): cgroup v2 with the systemd driver and containerd (the common case today), cgroup v1 with
 * the cgroupfs driver and containerd (older distributions, the hybrid "0::/" line included), and
 * cgroup v2 with systemd and CRI-O (OpenShift). The paths are the kubelet's: a pod's cgroup under
 * its QoS class (Guaranteed pods directly under kubepods), systemd's slices with the UID's dashes
 * as underscores, the runtime's scope or directory per container.
 */
#ifndef FG_SIM_RUNTIME_H
#define FG_SIM_RUNTIME_H

#include <stddef.h>

enum fg_sim_runtime {
    FG_SIM_RUNTIME_CONTAINERD_SYSTEMD,   /* cgroup v2, systemd driver */
    FG_SIM_RUNTIME_CONTAINERD_CGROUPFS,  /* cgroup v1, cgroupfs driver */
    FG_SIM_RUNTIME_CRIO_SYSTEMD,         /* cgroup v2, systemd driver */
    FG_SIM_RUNTIME_COUNT
};

/* The setup of the node called node. */
enum fg_sim_runtime fg_sim_runtime_of(const char *node);
/* "containerd" or "cri-o": the scheme of its container IDs ("<scheme>://<id>"). */
const char *fg_sim_runtime_scheme(enum fg_sim_runtime rt);
/* What nodeInfo.containerRuntimeVersion says ("containerd://1.7.24"). */
const char *fg_sim_runtime_version(enum fg_sim_runtime rt);
/* The cgroup file of a process of container id (bare, 64 hex digits) of the pod with uid (dashed)
 * and QoS class qos (Guaranteed, Burstable, BestEffort) into out (size bytes, NUL-terminated,
 * lines ending in '\n'); its length. */
size_t fg_sim_runtime_cgroup(enum fg_sim_runtime rt, const char *qos, const char *uid, const char *id, char *out,
                             size_t size);

#endif
