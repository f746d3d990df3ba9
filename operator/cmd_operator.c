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

enum { OPT_WORKERS = 1, OPT_PROBE };

static void usage(FILE *out)
{
    fprintf(out, "usage: fracgpu operator [options]\n\n");
    fg_manager_flags_usage(out, DEFAULT_LISTEN, true);
    fprintf(out, "  --workers N             reconcile workers per controller, 1-64 (default 2)\n"
                 "  --leader-probe FILE     diagnostic: while leading, append \"<identity> <monotonic ns>\" to FILE\n"
                 "                          every 10 ms (shows, across replicas on one machine, who led when)\n");
}

struct args {
    unsigned workers;
    const char *probe;
};

static enum fg_err option(void *ud, int c, const char *arg, char *errmsg)
{
    struct args *a = ud;
    char *end = NULL;
    unsigned long long n;
    switch (c) {
    case OPT_WORKERS:
        n = strtoull(arg, &end, 10);
        a->workers = n <= 64 ? (unsigned)n : 0;
        if (!*arg || *end || *arg == '-' || a->workers < 1)
            return fg_errmsg(errmsg, FG_E_INVAL, "--workers wants 1 to 64, got \"%s\"", arg);
        return FG_OK;
    case OPT_PROBE:
        a->probe = arg;
        return FG_OK;
    }
    return fg_errmsg(errmsg, FG_E_INVAL, "unknown option");
}

int fg_cmd_operator(int argc, char **argv)
{
    static const struct option options[] = {
        { "workers", required_argument, NULL, OPT_WORKERS },
        { "leader-probe", required_argument, NULL, OPT_PROBE },
        { NULL, 0, NULL, 0 },
    };
    struct args a = { .workers = 2 };
    const struct fg_role_cli cli = { "operator", options, true, usage, option, &a };
    struct fg_manager_opts opts = FG_MANAGER_OPTS_DEFAULT;
    opts.component = "operator";
    opts.listen = DEFAULT_LISTEN;
    int status = fg_manager_flags_parse(&cli, &opts, argc, argv);
    if (status)
        return status < 0 ? 0 : status;

    char errmsg[FG_ERRMSG_MAX] = "";
    struct fg_manager *m;
    if (fg_manager_new(&opts, &m, errmsg) != FG_OK) {
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
