/* flags — the shared command-line options; see flags.h. */
#include "operator/manager/flags.h"

#include <stdlib.h>
#include <string.h>

#include "base/duration.h"
#include "base/log.h"
#include "base/mem.h"

static enum fg_err duration_flag(const char *name, const char *arg, uint64_t *ns, char *errmsg)
{
    int64_t ms;
    char why[FG_ERRMSG_MAX];
    if (fg_duration_parse(arg, &ms, why) != FG_OK)
        return fg_errmsg(errmsg, FG_E_INVAL, "--%s: %s", name, why);
    *ns = (uint64_t)ms * FG_NS_PER_MS;
    return FG_OK;
}

/* Applies shared option c: FG_OK; FG_E_NOT_FOUND_LOCAL when c is not one; FG_E_INVAL for a bad value. */
static enum fg_err shared_flag(struct fg_manager_opts *o, int c, const char *arg, char *errmsg)
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
    case FG_FLAG_KUBE_API_QPS: {
        char *end = NULL;
        double qps = strtod(arg, &end);
        if (!*arg || *end || !(qps > 0 && qps <= 100000))
            return fg_errmsg(errmsg, FG_E_INVAL, "--kube-api-qps wants a number of requests per second above 0, got \"%s\"",
                             arg);
        o->client.qps = qps;
        return FG_OK;
    }
    case FG_FLAG_KUBE_API_BURST: {
        char *end = NULL;
        unsigned long n = strtoul(arg, &end, 10);
        if (!*arg || *end || *arg == '-' || n < 1 || n > 1000000)
            return fg_errmsg(errmsg, FG_E_INVAL, "--kube-api-burst wants 1 to 1000000, got \"%s\"", arg);
        o->client.burst = (unsigned)n;
        return FG_OK;
    }
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

static enum fg_err check_leader(const struct fg_manager_opts *o, char *errmsg)
{
    if (!o->leader.enabled)
        return FG_OK;
    struct fg_leader_opts lo = o->leader;
    lo.lease_namespace = "-";   /* defaults are filled in later; only the durations are checked here */
    lo.lease_name = "-";
    return fg_leader_opts_check(&lo, errmsg);
}

static const struct option shared_options[] = {
    { "kubeconfig", required_argument, NULL, FG_FLAG_KUBECONFIG },
    { "listen", required_argument, NULL, FG_FLAG_LISTEN },
    { "log-level", required_argument, NULL, FG_FLAG_LOG_LEVEL },
    { "kube-api-qps", required_argument, NULL, FG_FLAG_KUBE_API_QPS },
    { "kube-api-burst", required_argument, NULL, FG_FLAG_KUBE_API_BURST },
    { "help", no_argument, NULL, 'h' },
};

static const struct option leader_options[] = {
    { "leader-elect", optional_argument, NULL, FG_FLAG_LEADER_ELECT },
    { "leader-elect-lease-duration", required_argument, NULL, FG_FLAG_LEASE_DURATION },
    { "leader-elect-renew-deadline", required_argument, NULL, FG_FLAG_RENEW_DEADLINE },
    { "leader-elect-retry-period", required_argument, NULL, FG_FLAG_RETRY_PERIOD },
    { "leader-elect-resource-name", required_argument, NULL, FG_FLAG_LEASE_NAME },
    { "leader-elect-resource-namespace", required_argument, NULL, FG_FLAG_LEASE_NAMESPACE },
};

/* The role's options, the shared ones and the terminator in one table (caller frees). */
static struct option *all_options(const struct fg_role_cli *cli)
{
    size_t n_role = 0;
    while (cli->options && cli->options[n_role].name)
        n_role++;
    size_t n_shared = sizeof shared_options / sizeof shared_options[0];
    size_t n_leader = cli->leader ? sizeof leader_options / sizeof leader_options[0] : 0;
    struct option *all = fg_calloc(n_role + n_shared + n_leader + 1, sizeof *all);
    memcpy(all, cli->options, n_role * sizeof *all);
    memcpy(all + n_role, shared_options, sizeof shared_options);
    memcpy(all + n_role + n_shared, leader_options, n_leader * sizeof *all);
    return all;
}

/* Prints a usage error and the usage; returns 2. */
static int usage_error(const struct fg_role_cli *cli, const char *msg)
{
    if (msg)
        fprintf(stderr, "fracgpu %s: %s\n", cli->name, msg);
    cli->usage(stderr);
    return 2;
}

int fg_manager_flags_parse(const struct fg_role_cli *cli, struct fg_manager_opts *opts, int argc, char **argv)
{
    struct option *all = all_options(cli);
    char errmsg[FG_ERRMSG_MAX] = "";
    int status = 0;
    optind = 1;
    for (int c; !status && (c = getopt_long(argc, argv, "h", all, NULL)) != -1;) {
        enum fg_err err;
        if (c == 'h') {
            cli->usage(stdout);
            status = -1;
        } else if (c == '?') {
            status = usage_error(cli, NULL);   /* getopt_long named the option */
        } else if ((err = shared_flag(opts, c, optarg, errmsg)) == FG_E_NOT_FOUND_LOCAL) {
            if (cli->option(cli->ud, c, optarg, errmsg) != FG_OK)
                status = usage_error(cli, errmsg);
        } else if (err) {
            status = usage_error(cli, errmsg);
        }
    }
    free(all);
    if (status)
        return status;
    if (optind < argc) {
        snprintf(errmsg, sizeof errmsg, "unexpected argument \"%s\"", argv[optind]);
        return usage_error(cli, errmsg);
    }
    if (cli->leader && check_leader(opts, errmsg) != FG_OK)
        return usage_error(cli, errmsg);
    return 0;
}

void fg_manager_flags_usage(FILE *out, const char *default_listen, bool leader)
{
    fprintf(out,
            "  --kubeconfig FILE       kubeconfig to use (default: $KUBECONFIG, in-cluster, ~/.kube/config)\n"
            "  --listen HOST:PORT      address of /healthz, /readyz and /metrics (default %s; port 0 picks one)\n"
            "  --log-level LEVEL       debug, info, warn, error or off (default info)\n"
            "  --kube-api-qps N, --kube-api-burst N\n"
            "                          requests per second to the API server and the burst above it (default 50, 100)\n",
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
