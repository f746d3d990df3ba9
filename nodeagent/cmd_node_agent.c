/*
 * cmd_node_agent — `fracgpu node-agent`, one per GPU node (a DaemonSet): the command line, then the
 * list of what runs on its manager — today the exporter (per-pod GPU compute and memory as
 * Prometheus metrics); fracgpu's device plugin joins it on the same manager and the same cache of
 * this node's pods. Every node runs its own agent, so there is no leader election.
 */
#include "nodeagent/cmd_node_agent.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/duration.h"
#include "base/log.h"
#include "exporter/exporter.h"
#include "operator/manager/flags.h"
#include "operator/manager/manager.h"

#define DEFAULT_LISTEN ":9402"

enum { OPT_NODE = 1, OPT_NVML, OPT_PROC, OPT_INTERVAL, OPT_DCGM };

static void usage(FILE *out)
{
    fprintf(out, "usage: fracgpu node-agent --node-name NODE [options]\n\n"
                 "  --node-name NODE        the node this agent runs on (default $NODE_NAME)\n"
                 "  --nvml-lib PATH         NVML library (default libnvidia-ml.so.1)\n"
                 "  --proc-root DIR         the host's /proc (default /proc)\n"
                 "  --interval D            sampling period, e.g. 500ms, 10s (default 10s)\n"
                 "  --dcgm-aliases          also serve DCGM_FI_DEV_GPU_UTIL, _FB_USED and _FB_FREE per GPU, as\n"
                 "                          dcgm-exporter does\n");
    fg_manager_flags_usage(out, DEFAULT_LISTEN, false);
}

static enum fg_err option(void *ud, int c, const char *arg, char *errmsg)
{
    struct fg_exporter_opts *o = ud;
    char why[FG_ERRMSG_MAX] = "";
    int64_t ms;
    switch (c) {
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
        { NULL, 0, NULL, 0 },
    };
    struct fg_exporter_opts exporter = { .node = getenv("NODE_NAME") };
    const struct fg_role_cli cli = { "node-agent", options, false, usage, option, &exporter };
    struct fg_manager_opts opts = FG_MANAGER_OPTS_DEFAULT;
    opts.component = "node-agent";
    opts.listen = DEFAULT_LISTEN;
    opts.leader.enabled = false;
    int status = fg_manager_flags_parse(&cli, &opts, argc, argv);
    if (status)
        return status < 0 ? 0 : status;
    if (!exporter.node || !exporter.node[0]) {
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
    if (fg_exporter_setup(m, &exporter, NULL, errmsg) != FG_OK) {
        fg_log(FG_LOG_ERROR, "node-agent", "cannot set up the exporter: %s", errmsg);
        fg_manager_free(m);
        return 1;
    }
    status = fg_manager_run(m);
    fg_manager_free(m);
    return status;
}
