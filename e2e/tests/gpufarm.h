/*
 * gpufarm — a test API server filled with GPU nodes whose every GPU is already held by a live
 * capacity pod, the cluster fracgpu's scheduler places tenants on without asking for new GPUs.
 *
 * No kubelet runs here, so the farm writes what kubelets would have: each node Ready with its
 * allocatable CPU, memory, pods and nvidia.com/gpu and the GPU feature discovery labels
 * nvidia.com/gpu.product and nvidia.com/gpu.memory; on it one capacity pod per GPU (namespace
 * fracgpu-system, label fracgpu.io/role=capacity, bound by spec.nodeName), asking the capacity
 * holder's own CPU and memory and `nvidia.com/gpu: 1`, and its status as the holder and kubelet
 * leave it — phase Running, the first container's resources equal to the spec's (the in-place resize
 * applied), the GPU's UUID and the memory left for tenants in fracgpu.io/gpu-uuid and
 * fracgpu.io/gpu-memory-mib. The scheduler reserves nothing beyond the holders' own requests, so a
 * tenant binds without a resize. Of the kubelets' work on tenants, only admission is played
 * (fg_gpufarm_admit_start: status.startTime written for every pod bound); nothing ever runs them.
 *
 * Nodes are gpu-node-NNNN (NNNN from 0000), capacity pods fracgpu-capacity-NNNN-G on GPU G of node
 * NNNN; the GPU UUIDs say both. Objects are created one after another through the client given.
 */
#ifndef FG_E2E_GPUFARM_H
#define FG_E2E_GPUFARM_H

#include <stdint.h>

#include <stdbool.h>

#include "base/err.h"
#include "operator/kube/client.h"
#include "operator/kube/loop.h"

#define FG_GPUFARM_NS "fracgpu-system"

struct fg_gpufarm_opts {
    unsigned nodes;
    unsigned gpus;                  /* per node, 1..16 */
    int64_t cpu_milli, mem_mib;     /* each node's allocatable */
    unsigned max_pods;
    const char *product;            /* nvidia.com/gpu.product */
    int64_t gpu_mem_mib;            /* each GPU's memory for tenants (and its nvidia.com/gpu.memory label) */
    const char *signature;          /* the capacity pods' fracgpu.io/constraints, NULL: none (never given back) */
};

/* What one node leaves to tenants once its capacity pods are charged (every capacity pod asks the
 * holder's own CPU and memory). */
int64_t fg_gpufarm_tenant_cpu(const struct fg_gpufarm_opts *o);
int64_t fg_gpufarm_tenant_mem(const struct fg_gpufarm_opts *o);

/* Node i's name ("gpu-node-0007"); out holds at least 32 bytes. */
void fg_gpufarm_node_name(unsigned i, char *out, size_t size);

/* Creates namespace fracgpu-system (an existing one is fine), the nodes and their capacity pods. */
enum fg_err fg_gpufarm_fill(struct fg_kube_client *c, const struct fg_gpufarm_opts *o, char *errmsg) FG_MUST_USE;

/* The farm's kubelets admitting every pod bound to a node (gpufarm_admit.c), on loop. */
struct fg_gpufarm_admitter {
    struct fg_kube_loop *loop;
    struct fg_kube_call *watch;
    bool stopping;
    unsigned admitted, failed;  /* status writes sent, and refused */
};
enum fg_err fg_gpufarm_admit_start(struct fg_gpufarm_admitter *ad, struct fg_kube_loop *loop, char *errmsg) FG_MUST_USE;
void fg_gpufarm_admit_stop(struct fg_gpufarm_admitter *ad);

#endif
