/* runtime — a simulated node's container runtime and cgroup layout; see runtime.h. */
#include "e2e/cluster/runtime.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum fg_sim_runtime fg_sim_runtime_of(const char *node)
{
    uint32_t h = 2166136261u;   /* FNV-1a: stable across runs and processes */
    for (const unsigned char *p = (const unsigned char *)node; *p; p++)
        h = (h ^ *p) * 16777619u;
    return (enum fg_sim_runtime)(h % FG_SIM_RUNTIME_COUNT);
}

const char *fg_sim_runtime_scheme(enum fg_sim_runtime rt)
{
    return rt == FG_SIM_RUNTIME_CRIO_SYSTEMD ? "cri-o" : "containerd";
}

const char *fg_sim_runtime_version(enum fg_sim_runtime rt)
{
    return rt == FG_SIM_RUNTIME_CRIO_SYSTEMD ? "cri-o://1.31.3" : "containerd://1.7.24";
}

/* "burstable", "besteffort", or "" for Guaranteed pods (which sit directly under kubepods). */
static const char *qos_dir(const char *qos)
{
    return !strcmp(qos, "Burstable") ? "burstable" : !strcmp(qos, "BestEffort") ? "besteffort" : "";
}

/* The systemd slice path of a pod: kubepods.slice[/kubepods-<qos>.slice]/kubepods[-<qos>]-pod<uid_>.slice */
static void systemd_pod(const char *qos, const char *uid, char *out, size_t size)
{
    char u[64];
    size_t i = 0;
    for (; uid[i] && i < sizeof u - 1; i++)
        u[i] = uid[i] == '-' ? '_' : uid[i];
    u[i] = '\0';
    const char *q = qos_dir(qos);
    if (*q)
        snprintf(out, size, "/kubepods.slice/kubepods-%s.slice/kubepods-%s-pod%s.slice", q, q, u);
    else
        snprintf(out, size, "/kubepods.slice/kubepods-pod%s.slice", u);
}

size_t fg_sim_runtime_cgroup(enum fg_sim_runtime rt, const char *qos, const char *uid, const char *id, char *out,
                             size_t size)
{
    char pod[256];
    int n = 0;
    switch (rt) {
    case FG_SIM_RUNTIME_CONTAINERD_SYSTEMD:
        systemd_pod(qos, uid, pod, sizeof pod);
        n = snprintf(out, size, "0::%s/cri-containerd-%s.scope\n", pod, id);
        break;
    case FG_SIM_RUNTIME_CRIO_SYSTEMD:
        systemd_pod(qos, uid, pod, sizeof pod);
        n = snprintf(out, size, "0::%s/crio-%s.scope\n", pod, id);
        break;
    default: {
        const char *q = qos_dir(qos);
        snprintf(pod, sizeof pod, "/kubepods%s%s/pod%s/%s", *q ? "/" : "", q, uid, id);
        static const char *const controllers[] = { "12:hugetlb", "11:cpuset", "10:memory", "9:devices", "8:pids",
                                                   "7:cpu,cpuacct", "6:blkio", "5:freezer", "4:net_cls,net_prio",
                                                   "3:perf_event", "2:rdma", "1:name=systemd" };
        for (size_t i = 0; i < sizeof controllers / sizeof controllers[0] && n >= 0 && (size_t)n < size; i++)
            n += snprintf(out + n, size - (size_t)n, "%s:%s\n", controllers[i], pod);
        if (n >= 0 && (size_t)n < size)
            n += snprintf(out + n, size - (size_t)n, "0::/\n");   /* hybrid mode: the unified hierarchy unused */
        break;
    }
    }
    return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}
