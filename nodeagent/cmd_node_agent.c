/*
 * cmd_node_agent — `fracgpu node-agent`, one per GPU node (a DaemonSet): the command line, then the
 * list of what runs on its manager — the exporter (per-pod GPU compute and memory as Prometheus
 * metrics) and fracgpu's device plugin (fracgpu.io/gpu-share for the kubelet), on the same manager
 * and the same cache of this node's pods; the plugin learns the node's GPUs from the exporter's
 * samples. Every node runs its own agent, so there is no leader election.
 */
#include "nodeagent/cmd_node_agent.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/duration.h"
#include "base/log.h"
#include "exporter/exporter.h"
#include "nodeagent/deviceplugin/plugin.h"
#include "nodeagent/deviceplugin/slots.h"
#include "operator/manager/flags.h"
#include "operator/manager/manager.h"

#define DEFAULT_LISTEN ":9402"

enum {
    OPT_NODE = 1, OPT_NVML, OPT_PROC, OPT_INTERVAL, OPT_DCGM, OPT_DP_DIR, OPT_DP_PODRES, OPT_DP_FORM, OPT_DP_HOST,
    OPT_DP_MPS, OPT_DP_KEYNS, OPT_DP_SLOTS, OPT_DP_OFF
};

struct node_agent_opts {
    struct fg_exporter_opts exporter;
    struct fg_dp_opts plugin;
    bool no_plugin;
};

static void usage(FILE *out)
{
    fprintf(out, "usage: fracgpu node-agent --node-name NODE [options]\n\n"
                 "  --node-name NODE        the node this agent runs on (default $NODE_NAME)\n"
                 "  --nvml-lib PATH         NVML library (default libnvidia-ml.so.1)\n"
                 "  --proc-root DIR         the host's /proc (default /proc)\n"
                 "  --interval D            sampling period, e.g. 500ms, 10s (default 10s)\n"
                 "  --dcgm-aliases          also serve DCGM_FI_DEV_GPU_UTIL, _FB_USED and _FB_FREE per GPU, as\n"
                 "                          dcgm-exporter does\n"
                 "device plugin (fracgpu.io/gpu-share):\n"
                 "  --device-plugin-dir DIR the kubelet's device-plugin sockets (default /var/lib/kubelet/device-plugins)\n"
                 "  --pod-resources-socket PATH  the kubelet's PodResources API\n"
                 "                          (default /var/lib/kubelet/pod-resources/kubelet.sock)\n"
                 "  --device-list-strategy S  how a container gets its GPU: cdi-cri, volume-mounts, envvar or\n"
                 "                          auto (default: detected from the host's CDI specs and NVIDIA runtime)\n"
                 "  --host-root DIR         where the host's /etc and /var/run are seen, for auto (default /)\n"
                 "  --mps-root DIR          the capacity holders' MPS directories (default /run/fracgpu/mps)\n"
                 "  --grant-key-namespace NS  where Secret fracgpu-grant-key lives (default $POD_NAMESPACE,\n"
                 "                          else fracgpu-system)\n"
                 "  --slots-per-gpu N       pods one GPU may hold (default 48)\n"
                 "  --no-device-plugin      run the exporter only\n");
    fg_manager_flags_usage(out, DEFAULT_LISTEN, false);
}

static enum fg_err option(void *ud, int c, const char *arg, char *errmsg)
{
    struct node_agent_opts *a = ud;
    struct fg_exporter_opts *o = &a->exporter;
    char why[FG_ERRMSG_MAX] = "";
    int64_t ms;
    char *end;
    unsigned long n;
    switch (c) {
    case OPT_DP_DIR: a->plugin.dir = arg; return FG_OK;
    case OPT_DP_PODRES: a->plugin.pod_resources_socket = arg; return FG_OK;
    case OPT_DP_HOST: a->plugin.host_root = arg; return FG_OK;
    case OPT_DP_MPS: a->plugin.mps_root = arg; return FG_OK;
    case OPT_DP_KEYNS: a->plugin.key_namespace = arg; return FG_OK;
    case OPT_DP_OFF: a->no_plugin = true; return FG_OK;
    case OPT_DP_FORM:
        if (fg_dp_form_parse(arg, &a->plugin.form) != FG_OK)
            return fg_errmsg(errmsg, FG_E_INVAL, "--device-list-strategy: \"%s\" is not cdi-cri, volume-mounts, envvar or auto",
                             arg);
        return FG_OK;
    case OPT_DP_SLOTS:
        n = strtoul(arg, &end, 10);
        if (*arg < '1' || *arg > '9' || *end || n > FG_DP_SLOTS_MAX)
            return fg_errmsg(errmsg, FG_E_INVAL, "--slots-per-gpu: \"%s\" is not a number from 1 to %d", arg,
                             FG_DP_SLOTS_MAX);
        a->plugin.slots = (unsigned)n;
        return FG_OK;
    case OPT_NODE: o->node = arg; return FG_OK;
    case OPT_NVML: o->nvml_lib = arg; return FG_OK;
    case OPT_PROC: o->proc_root = arg; return FG_OK;
    case OPT_DCGM: o->dcgm_aliases = true; return FG_OK;
    case OPT_INTERVAL:
        if (fg_duration_parse(arg, &ms, why) != FG_OK || ms == 0)
            return fg_errmsg(errmsg, FG_E_INVAL, "--interval: %s", why[0] ? why : "must be positive");
        o->interval_ns = (uint64_t)ms * FG_NS_PER_MS;
        return FG_OK;
    }
    return fg_errmsg(errmsg, FG_E_INVAL, "unknown option");
}

int fg_cmd_node_agent(int argc, char **argv)
{
    static const struct option options[] = {
        { "node-name", required_argument, NULL, OPT_NODE },
        { "nvml-lib", required_argument, NULL, OPT_NVML },
        { "proc-root", required_argument, NULL, OPT_PROC },
        { "interval", required_argument, NULL, OPT_INTERVAL },
        { "dcgm-aliases", no_argument, NULL, OPT_DCGM },
        { "device-plugin-dir", required_argument, NULL, OPT_DP_DIR },
        { "pod-resources-socket", required_argument, NULL, OPT_DP_PODRES },
        { "device-list-strategy", required_argument, NULL, OPT_DP_FORM },
        { "host-root", required_argument, NULL, OPT_DP_HOST },
        { "mps-root", required_argument, NULL, OPT_DP_MPS },
        { "grant-key-namespace", required_argument, NULL, OPT_DP_KEYNS },
        { "slots-per-gpu", required_argument, NULL, OPT_DP_SLOTS },
        { "no-device-plugin", no_argument, NULL, OPT_DP_OFF },
        { NULL, 0, NULL, 0 },
    };
    struct node_agent_opts a = { .exporter = { .node = getenv("NODE_NAME") },
                                 .plugin = { .key_namespace = getenv("POD_NAMESPACE") } };
    struct fg_exporter_opts *exporter = &a.exporter;
    const struct fg_role_cli cli = { "node-agent", options, false, usage, option, &a };
    struct fg_manager_opts opts = FG_MANAGER_OPTS_DEFAULT;
    opts.component = "node-agent";
    opts.listen = DEFAULT_LISTEN;
    opts.leader.enabled = false;
    int status = fg_manager_flags_parse(&cli, &opts, argc, argv);
    if (status)
        return status < 0 ? 0 : status;
    if (!exporter->node || !exporter->node[0]) {
        fprintf(stderr, "fracgpu node-agent: --node-name (or $NODE_NAME) is required\n");
        usage(stderr);
        return 2;
    }

    /* a few threads that seldom allocate at once: one malloc arena saves about 1.5 MiB of RSS */
    mallopt(M_ARENA_MAX, 1);
    char errmsg[FG_ERRMSG_MAX] = "";
    struct fg_manager *m;
    if (fg_manager_new(&opts, &m, errmsg) != FG_OK) {
        fg_log(FG_LOG_ERROR, "node-agent", "cannot start: %s", errmsg);
        return 1;
    }
    struct fg_exporter *e;
    if (fg_exporter_setup(m, exporter, &e, errmsg) != FG_OK) {
        fg_log(FG_LOG_ERROR, "node-agent", "cannot set up the exporter: %s", errmsg);
        fg_manager_free(m);
        return 1;
    }
    a.plugin.node = exporter->node;
    if (a.plugin.key_namespace && !a.plugin.key_namespace[0])
        a.plugin.key_namespace = NULL;
    if (!a.no_plugin && fg_dp_setup(m, &a.plugin, e, errmsg) != FG_OK) {
        fg_log(FG_LOG_ERROR, "node-agent", "cannot set up the device plugin: %s", errmsg);
        fg_manager_free(m);
        return 1;
    }
    status = fg_manager_run(m);
    fg_manager_free(m);
    return status;
}
