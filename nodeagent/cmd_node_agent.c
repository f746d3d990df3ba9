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

enum { OPT_NODE = 1, OPT_NVML, OPT_PROC, OPT_INTERVAL, OPT_DCGM, OPT_HELP };

static void usage(FILE *out)
{
    fprintf(out, "usage: fracgpu node-agent --node-name NODE [options]\n\n"
                 "  --node-name NODE        the node this agent runs on (default $NODE_NAME)\n"
                 "  --nvml-lib PATH         NVML library (default libnvidia-ml.so.1)\n"
                 "  --proc-root DIR         the host's /proc (default /proc)\n"
                 "  --interval D            sampling period, e.g. 500ms, 10s (default 10s)\n"
                 "  --dcgm-aliases          also serve DCGM_FI_DEV_GPU_UTIL and DCGM_FI_DEV_FB_USED per pod\n");
    fg_manager_flags_usage(out, DEFAULT_LISTEN, false);
}

struct args {
    struct fg_manager_opts manager;
    struct fg_exporter_opts exporter;
};

/* 0 to go on, otherwise the exit status (-1: --help, exit 0). */
static int parse_args(int argc, char **argv, struct args *a)
{
    static const struct option longopts[] = {
        FG_MANAGER_LONGOPTS,
        { "node-name", required_argument, NULL, OPT_NODE },
        { "nvml-lib", required_argument, NULL, OPT_NVML },
        { "proc-root", required_argument, NULL, OPT_PROC },
        { "interval", required_argument, NULL, OPT_INTERVAL },
        { "dcgm-aliases", no_argument, NULL, OPT_DCGM },
        { "help", no_argument, NULL, OPT_HELP },
        { NULL, 0, NULL, 0 },
    };
    char errmsg[FG_ERRMSG_MAX] = "";
    int64_t ms;
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1;) {
        switch (c) {
        case OPT_NODE: a->exporter.node = optarg; break;
        case OPT_NVML: a->exporter.nvml_lib = optarg; break;
        case OPT_PROC: a->exporter.proc_root = optarg; break;
        case OPT_DCGM: a->exporter.dcgm_aliases = true; break;
        case OPT_INTERVAL:
            if (fg_duration_parse(optarg, &ms, errmsg) != FG_OK || ms == 0) {
                fprintf(stderr, "fracgpu node-agent: --interval: %s\n", errmsg[0] ? errmsg : "must be positive");
                return 2;
            }
            a->exporter.interval_ns = (uint64_t)ms * FG_NS_PER_MS;
            break;
        case 'h':
        case OPT_HELP:
            usage(stdout);
            return -1;
        case '?':
            usage(stderr);
            return 2;
        default:
            if (fg_manager_flag(&a->manager, c, optarg, errmsg) != FG_OK) {
                fprintf(stderr, "fracgpu node-agent: %s\n", errmsg);
                return 2;
            }
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fracgpu node-agent: unexpected argument \"%s\"\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (!a->exporter.node || !a->exporter.node[0]) {
        fprintf(stderr, "fracgpu node-agent: --node-name (or $NODE_NAME) is required\n");
        usage(stderr);
        return 2;
    }
    return 0;
}

int fg_cmd_node_agent(int argc, char **argv)
{
    struct args a = { .manager = FG_MANAGER_OPTS_DEFAULT };
    a.manager.component = "node-agent";
    a.manager.listen = DEFAULT_LISTEN;
    a.manager.leader.enabled = false;
    a.exporter.node = getenv("NODE_NAME");
    int status = parse_args(argc, argv, &a);
    if (status)
        return status < 0 ? 0 : status;

    /* a few threads that seldom allocate at once: one malloc arena saves about 1.5 MiB of RSS */
    mallopt(M_ARENA_MAX, 1);
    char errmsg[FG_ERRMSG_MAX] = "";
    struct fg_manager *m;
    if (fg_manager_new(&a.manager, &m, errmsg) != FG_OK) {
        fg_log(FG_LOG_ERROR, "node-agent", "cannot start: %s", errmsg);
        return 1;
    }
    if (fg_exporter_setup(m, &a.exporter, errmsg) != FG_OK) {
        fg_log(FG_LOG_ERROR, "node-agent", "cannot set up the exporter: %s", errmsg);
        fg_manager_free(m);
        return 1;
    }
    status = fg_manager_run(m);
    fg_manager_free(m);
    return status;
}
