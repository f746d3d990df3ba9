/*
 * cmd_capacity_holder — `fracgpu capacity-holder`, the process of a capacity pod (nodeagent/holder):
 * the command line, the holder on a manager without leader election or informers, and a life that
 * ends on SIGTERM or SIGINT (exit 0, the GPU given back) or when the holder gives up (exit 1, so the
 * kubelet restarts the container and the pod shows it).
 */
#include "nodeagent/cmd_capacity_holder.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/duration.h"
#include "base/log.h"
#include "nodeagent/holder/holder.h"
#include "operator/manager/flags.h"
#include "operator/manager/manager.h"

#define DEFAULT_LISTEN ":9403"

enum { OPT_POD = 1, OPT_NAMESPACE, OPT_NVML, OPT_OVERHEAD, OPT_MPS_ROOT, OPT_MPS_CONTROL, OPT_HEALTH };

static void usage(FILE *out)
{
    fprintf(out, "usage: fracgpu capacity-holder [options]\n\n"
                 "Holds the one GPU of a capacity pod: writes its UUID and the memory left for tenants onto\n"
                 "the pod, and for an mps pod runs the GPU's MPS control daemon with the workload's limits.\n\n"
                 "  --pod-name NAME              its own pod (default $POD_NAME)\n"
                 "  --pod-namespace NS           its pod's namespace (default $POD_NAMESPACE)\n"
                 "  --nvml-lib PATH              NVML library (default libnvidia-ml.so.1)\n"
                 "  --context-overhead-mib N     memory kept back for one CUDA context (default %d)\n"
                 "  --mps-root DIR               MPS directories, DIR/<GPU-UUID>/{pipe,log,shm} (default %s)\n"
                 "  --mps-control PATH           the MPS control daemon (default nvidia-cuda-mps-control)\n"
                 "  --mps-health-interval D      between checks of the daemon, e.g. 500ms, 5s (default 5s)\n",
            FG_HOLDER_OVERHEAD_MIB_DEFAULT, FG_MPS_ROOT_DEFAULT);
    fg_manager_flags_usage(out, DEFAULT_LISTEN, false);
}

static enum fg_err option(void *ud, int c, const char *arg, char *errmsg)
{
    struct fg_holder_opts *o = ud;
    char why[FG_ERRMSG_MAX] = "";
    int64_t ms;
    char *end;
    switch (c) {
    case OPT_POD: o->pod_name = arg; return FG_OK;
    case OPT_NAMESPACE: o->pod_namespace = arg; return FG_OK;
    case OPT_NVML: o->nvml_lib = arg; return FG_OK;
    case OPT_MPS_ROOT:
        if (!arg[0])
            return fg_errmsg(errmsg, FG_E_INVAL, "--mps-root wants a directory");
        o->mps_root = arg;
        return FG_OK;
    case OPT_MPS_CONTROL:
        if (!arg[0])
            return fg_errmsg(errmsg, FG_E_INVAL, "--mps-control wants a program");
        o->mps_control = arg;
        return FG_OK;
    case OPT_OVERHEAD: {
        unsigned long long v = strtoull(arg, &end, 10);
        if (!arg[0] || *end || arg[0] == '-' || v > 1024 * 1024)
            return fg_errmsg(errmsg, FG_E_INVAL, "--context-overhead-mib wants MiB from 0 to 1048576, got \"%s\"", arg);
        o->overhead_mib = v;
        return FG_OK;
    }
    case OPT_HEALTH:
        if (fg_duration_parse(arg, &ms, why) != FG_OK || ms == 0)
            return fg_errmsg(errmsg, FG_E_INVAL, "--mps-health-interval: %s", why[0] ? why : "must be positive");
        o->health_interval_ns = (uint64_t)ms * FG_NS_PER_MS;
        return FG_OK;
    }
    return fg_errmsg(errmsg, FG_E_INVAL, "unknown option");
}

/* Start, wait for SIGTERM/SIGINT or the holder giving up, stop. */
static int run(struct fg_manager *m, struct fg_holder *h)
{
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);   /* before any thread starts: every one inherits it */
    char errmsg[FG_ERRMSG_MAX] = "";
    if (fg_manager_start(m, errmsg) != FG_OK) {
        fg_log(FG_LOG_ERROR, "capacity-holder", "cannot start: %s", errmsg);
        return 1;
    }
    const struct timespec tick = { 0, 50 * 1000 * 1000 };
    int sig;
    while ((sig = sigtimedwait(&sigs, NULL, &tick)) < 0 && !fg_holder_failed(h))
        ;
    if (sig >= 0)
        fg_log(FG_LOG_INFO, "capacity-holder", "stopping on %s", strsignal(sig));
    fg_manager_stop(m);
    return sig >= 0 ? 0 : 1;
}

int fg_cmd_capacity_holder(int argc, char **argv)
{
    static const struct option options[] = {
        { "pod-name", required_argument, NULL, OPT_POD },
        { "pod-namespace", required_argument, NULL, OPT_NAMESPACE },
        { "nvml-lib", required_argument, NULL, OPT_NVML },
        { "context-overhead-mib", required_argument, NULL, OPT_OVERHEAD },
        { "mps-root", required_argument, NULL, OPT_MPS_ROOT },
        { "mps-control", required_argument, NULL, OPT_MPS_CONTROL },
        { "mps-health-interval", required_argument, NULL, OPT_HEALTH },
        { NULL, 0, NULL, 0 },
    };
    struct fg_holder_opts holder = FG_HOLDER_OPTS_DEFAULT;
    holder.pod_name = getenv("POD_NAME");
    holder.pod_namespace = getenv("POD_NAMESPACE");
    const struct fg_role_cli cli = { "capacity-holder", options, false, usage, option, &holder };
    struct fg_manager_opts opts = FG_MANAGER_OPTS_DEFAULT;
    opts.component = "capacity-holder";
    opts.listen = DEFAULT_LISTEN;
    opts.leader.enabled = false;
    opts.resync_ns = 0;
    int status = fg_manager_flags_parse(&cli, &opts, argc, argv);
    if (status)
        return status < 0 ? 0 : status;
    if (!holder.pod_name || !holder.pod_name[0] || !holder.pod_namespace || !holder.pod_namespace[0]) {
        fprintf(stderr, "fracgpu capacity-holder: --pod-name and --pod-namespace (or $POD_NAME and $POD_NAMESPACE) "
                        "are required\n");
        usage(stderr);
        return 2;
    }

    char errmsg[FG_ERRMSG_MAX] = "";
    struct fg_manager *m;
    if (fg_manager_new(&opts, &m, errmsg) != FG_OK) {
        fg_log(FG_LOG_ERROR, "capacity-holder", "cannot start: %s", errmsg);
        return 1;
    }
    struct fg_holder *h;
    if (fg_holder_setup(m, &holder, &h, errmsg) != FG_OK) {
        fg_log_obj(FG_LOG_ERROR, "capacity-holder", "Pod", holder.pod_namespace, holder.pod_name, "cannot hold a GPU: %s",
                   errmsg);
        fg_manager_free(m);
        return 1;
    }
    status = run(m, h);
    fg_manager_free(m);
    return status;
}
