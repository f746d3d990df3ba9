/*
 * plugin — fracgpu's kubelet device plugin for fracgpu.io/gpu-share, a part of the node agent.
 *
 * It serves the kubelet's device-plugin API v1beta1 (gRPC on a unix socket, nodeagent/grpc) from
 * the node agent's loop thread, beside the informers it reads, so nothing it holds needs a lock:
 *   - Registration: it listens on <dir>/fracgpu.sock and registers with <dir>/kubelet.sock. A
 *     kubelet that restarts deletes every socket in the directory and re-creates its own; the plugin
 *     notices either (it checks both files several times a second), listens again and registers
 *     again. A refused or failed registration is retried every two seconds.
 *   - ListAndWatch: the slots of every GPU the exporter's last sample showed (slots.h), re-sent to
 *     each watching kubelet when a GPU appears, vanishes or changes health.
 *   - Allocate: finds the pod being admitted and checks its grant (admission.h), then answers with
 *     exactly its GPU in the node's form (reply.h). When no waiting pod has a valid grant yet, the
 *     call is held for a moment (the binding may not have reached this node's cache) and re-decided
 *     on every pod event; then refused, which the kubelet turns into UnexpectedAdmissionError, with
 *     a GrantRefused Event on each waiting pod whose grant failed (enforcer.h).
 *   - Before every decision and shortly after every grant, it audits what the kubelet says each pod
 *     holds (PodResources List) against its ledger; a pod holding devices it was not granted is
 *     deleted at once (enforcer.h). After a restart the audit adopts pods with valid grants.
 *   - GetPreferredAllocation: slots of the granted GPU first, so the kubelet's records (and
 *     PodResources) name the GPU each pod really uses.
 *
 * Metrics: fracgpu_device_plugin_allocations_total{outcome=granted|refused|invalid},
 * fracgpu_device_plugin_allocate_seconds, fracgpu_device_plugin_registrations_total{result}.
 */
#ifndef FG_DEVICEPLUGIN_PLUGIN_H
#define FG_DEVICEPLUGIN_PLUGIN_H

#include <stdint.h>

#include "base/err.h"
#include "exporter/exporter.h"
#include "nodeagent/deviceplugin/reply.h"
#include "operator/manager/manager.h"

#define FG_DP_RESOURCE_SOCKET "fracgpu.sock"

struct fg_dp_opts {
    const char *node;                 /* required */
    const char *dir;                  /* NULL: /var/lib/kubelet/device-plugins */
    const char *pod_resources_socket; /* NULL: /var/lib/kubelet/pod-resources/kubelet.sock */
    enum fg_dp_form form;             /* FG_DP_FORM_AUTO: detected under host_root */
    const char *host_root;            /* NULL: / */
    const char *mps_root;             /* NULL: /run/fracgpu/mps */
    const char *key_namespace;        /* NULL: fracgpu-system */
    unsigned slots;                   /* 0: FG_DP_SLOTS_DEFAULT */
    unsigned hold_ms;                 /* 0: 3000 — how long Allocate waits for a granted pod */
};

/* Declares the plugin on m, fed with GPUs by exporter (which must be set up on m too). opts' strings
 * must outlive m. errmsg says what failed. */
enum fg_err fg_dp_setup(struct fg_manager *m, const struct fg_dp_opts *opts, struct fg_exporter *exporter,
                        char *errmsg) FG_MUST_USE;

#endif
