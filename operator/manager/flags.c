/* flags — the shared command-line options; see flags.h. */
#include "operator/manager/flags.h"

#include <string.h>

#include "base/duration.h"
#include "base/log.h"

static enum fg_err duration_flag(const char *name, const char *arg, uint64_t *ns, char *errmsg)
{
    int64_t ms;
    char why[FG_ERRMSG_MAX];
    if (fg_duration_parse(arg, &ms, why) != FG_OK)
        return fg_errmsg(errmsg, FG_E_INVAL, "--%s: %s", name, why);
    *ns = (uint64_t)ms * FG_NS_PER_MS;
    return FG_OK;
}

enum fg_err fg_manager_flag(struct fg_manager_opts *o, int c, const char *arg, char *errmsg)
{
    char host[256];
    unsigned port;
    enum fg_log_level level;
    switch (c) {
    case FG_FLAG_KUBECONFIG:
        o->kubeconfig = arg;
        return FG_OK;
    case FG_FLAG_LISTEN:
        if (fg_manager_parse_listen(arg, host, sizeof host, &port, errmsg) != FG_OK)
            return fg_errmsg(errmsg, FG_E_INVAL, "--listen wants HOST:PORT, got \"%s\"", arg);
        o->listen = arg;
        return FG_OK;
    case FG_FLAG_LOG_LEVEL:
        if (!fg_log_parse_level(arg, &level))
            return fg_errmsg(errmsg, FG_E_INVAL, "--log-level wants debug, info, warn, error or off, got \"%s\"", arg);
        fg_log_set_level(level);
        return FG_OK;
    case FG_FLAG_LEADER_ELECT:
        if (!arg) {
            o->leader.enabled = true;
            return FG_OK;
        }
        if (!fg_parse_bool(arg, &o->leader.enabled))
            return fg_errmsg(errmsg, FG_E_INVAL, "--leader-elect wants true or false, got \"%s\"", arg);
        return FG_OK;
    case FG_FLAG_LEASE_DURATION:
        return duration_flag("leader-elect-lease-duration", arg, &o->leader.lease_duration_ns, errmsg);
    case FG_FLAG_RENEW_DEADLINE:
        return duration_flag("leader-elect-renew-deadline", arg, &o->leader.renew_deadline_ns, errmsg);
    case FG_FLAG_RETRY_PERIOD:
        return duration_flag("leader-elect-retry-period", arg, &o->leader.retry_period_ns, errmsg);
    case FG_FLAG_LEASE_NAME:
        o->leader.lease_name = arg;
        return FG_OK;
    case FG_FLAG_LEASE_NAMESPACE:
        o->leader.lease_namespace = arg;
        return FG_OK;
    default:
        return FG_E_NOT_FOUND_LOCAL;
    }
}

enum fg_err fg_manager_flags_check(const struct fg_manager_opts *o, char *errmsg)
{
    if (!o->leader.enabled)
        return FG_OK;
    struct fg_leader_opts lo = o->leader;
    lo.lease_namespace = "-";   /* defaults are filled in later; only the durations are checked here */
    lo.lease_name = "-";
    return fg_leader_opts_check(&lo, errmsg);
}

void fg_manager_flags_usage(FILE *out, const char *default_listen, bool leader)
{
    fprintf(out,
            "  --kubeconfig FILE       kubeconfig to use (default: $KUBECONFIG, in-cluster, ~/.kube/config)\n"
            "  --listen HOST:PORT      address of /healthz, /readyz and /metrics (default %s; port 0 picks one)\n"
            "  --log-level LEVEL       debug, info, warn, error or off (default info)\n",
            default_listen);
    if (leader)
        fprintf(out,
                "  --leader-elect[=BOOL]   elect a leader among replicas on a Lease (default true)\n"
                "  --leader-elect-lease-duration D   how long a standby waits before taking over (default 15s)\n"
                "  --leader-elect-renew-deadline D   how long a leader retries renewing before it steps down (default 10s)\n"
                "  --leader-elect-retry-period D     time between attempts (default 2s)\n"
                "  --leader-elect-resource-name NAME        the Lease (default fracgpu-<role>)\n"
                "  --leader-elect-resource-namespace NS     its namespace (default $POD_NAMESPACE, else fracgpu-system)\n");
}
