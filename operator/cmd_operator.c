/*
 * cmd_operator — `fracgpu operator`, the control plane: the command line, then the list of what runs
 * on its manager. Replicas elect a leader on the Lease fracgpu-operator; every replica keeps its
 * caches warm and answers /healthz, /readyz and /metrics, and the leader alone reconciles.
 */
#include "operator/cmd_operator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "operator/manager/flags.h"
#include "operator/manager/manager.h"
#include "operator/manager/probe.h"
#include "reconcilers/policy.h"

#define DEFAULT_LISTEN ":8080"

enum { OPT_WORKERS = 1, OPT_PROBE, OPT_HELP };

static void usage(FILE *out)
{
    fprintf(out, "usage: fracgpu operator [options]\n\n");
    fg_manager_flags_usage(out, DEFAULT_LISTEN, true);
    fprintf(out, "  --workers N             reconcile workers per controller, 1-64 (default 2)\n"
                 "  --leader-probe FILE     diagnostic: while leading, append \"<identity> <monotonic ns>\" to FILE\n"
                 "                          every 10 ms (shows, across replicas on one machine, who led when)\n");
}

struct args {
    struct fg_manager_opts manager;
    unsigned workers;
    const char *probe;
};

/* 0 to go on, otherwise the exit status (-1: --help, exit 0). */
static int parse_args(int argc, char **argv, struct args *a)
{
    static const struct option longopts[] = {
        FG_MANAGER_LONGOPTS,
        FG_MANAGER_LEADER_LONGOPTS,
        { "workers", required_argument, NULL, OPT_WORKERS },
        { "leader-probe", required_argument, NULL, OPT_PROBE },
        { "help", no_argument, NULL, OPT_HELP },
        { NULL, 0, NULL, 0 },
    };
    char errmsg[FG_ERRMSG_MAX] = "";
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1;) {
        char *end = NULL;
        switch (c) {
        case OPT_WORKERS:
            a->workers = (unsigned)strtoul(optarg, &end, 10);
            if (!*optarg || *end || *optarg == '-' || a->workers < 1 || a->workers > 64) {
                fprintf(stderr, "fracgpu operator: --workers wants 1 to 64, got \"%s\"\n", optarg);
                return 2;
            }
            break;
        case OPT_PROBE:
            a->probe = optarg;
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
                fprintf(stderr, "fracgpu operator: %s\n", errmsg);
                return 2;
            }
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fracgpu operator: unexpected argument \"%s\"\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (fg_manager_flags_check(&a->manager, errmsg) != FG_OK) {
        fprintf(stderr, "fracgpu operator: %s\n", errmsg);
        return 2;
    }
    return 0;
}

int fg_cmd_operator(int argc, char **argv)
{
    struct args a = { .manager = FG_MANAGER_OPTS_DEFAULT, .workers = 2 };
    a.manager.component = "operator";
    a.manager.listen = DEFAULT_LISTEN;
    int status = parse_args(argc, argv, &a);
    if (status)
        return status < 0 ? 0 : status;

    char errmsg[FG_ERRMSG_MAX] = "";
    struct fg_manager *m;
    if (fg_manager_new(&a.manager, &m, errmsg) != FG_OK) {
        fg_log(FG_LOG_ERROR, "operator", "cannot start: %s", errmsg);
        return 1;
    }
    enum fg_err err = fg_policy_reconciler_setup(m, a.workers, errmsg);
    if (!err && a.probe)
        err = fg_leader_probe_setup(m, a.probe, errmsg);
    if (err) {
        fg_log(FG_LOG_ERROR, "operator", "cannot set up: %s", errmsg);
        fg_manager_free(m);
        return 1;
    }
    status = fg_manager_run(m);
    fg_manager_free(m);
    return status;
}
