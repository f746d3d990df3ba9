/*
 * cmd_operator — `fracgpu operator`, the control plane: the command line, then the list of what runs
 * on its manager. Replicas elect a leader on the Lease fracgpu-operator; every replica keeps its
 * caches warm, answers /healthz, /readyz and /metrics and serves the admission webhook, and the leader
 * alone reconciles (GPUPolicies, workloads' automation, the webhook's certificates, the grant key) and
 * schedules (fracgpu-scheduler: placements, capacity pods) and collects per-pod GPU use from the node
 * agents (collector/), which the rightsizer turns into allocations (reconcilers/rightsizer.h).
 */
#include "operator/cmd_operator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/duration.h"
#include "base/log.h"
#include "collector/collector.h"
#include "collector/setup.h"
#include "operator/manager/flags.h"
#include "operator/manager/manager.h"
#include "operator/manager/probe.h"
#include "operator/webhook/setup.h"
#include "reconcilers/grant.h"
#include "reconcilers/grant_key_reconciler.h"
#include "reconcilers/policy.h"
#include "reconcilers/rightsizer.h"
#include "reconcilers/workload_reconciler.h"
#include "scheduler/adapter/adapter.h"
#include "scheduler/policies/policy.h"

#define DEFAULT_LISTEN ":8080"

enum {
    OPT_WORKERS = 1,
    OPT_PROBE,
    OPT_NO_WEBHOOK,
    OPT_WEBHOOK_LISTEN,
    OPT_WEBHOOK_SECRET,
    OPT_WEBHOOK_CONFIG,
    OPT_WEBHOOK_SERVICE,
    OPT_WEBHOOK_CA_LIFETIME,
    OPT_WEBHOOK_CERT_LIFETIME,
    OPT_WEBHOOK_SWITCH_DELAY,
    OPT_WORKLOAD_KIND,
    OPT_GRANT_KEY_ROTATION,
    OPT_GRANT_KEY_GRACE,
    OPT_NO_SCHEDULER,
    OPT_PLACEMENT_POLICY,
    OPT_CAPACITY_IMAGE,
    OPT_CAPACITY_IDLE_GRACE,
    OPT_POD_GROUP_TIMEOUT,
    OPT_PREEMPTION_DELAY,
    OPT_CONSOLIDATION_INTERVAL,
    OPT_NO_COLLECTOR,
    OPT_COLLECT_INTERVAL,
    OPT_COLLECT_TIMEOUT,
    OPT_COLLECT_CONCURRENCY,
    OPT_NO_RIGHTSIZING,
    OPT_RIGHTSIZING_INTERVAL,
    OPT_CHECKPOINT_INTERVAL,
    OPT_CHECKPOINT_TTL,
    OPT_RIGHTSIZING_MIN_REPLICAS,
};

#define MAX_KINDS 32

static void usage(FILE *out)
{
    fprintf(out, "usage: fracgpu operator [options]\n\n");
    fg_manager_flags_usage(out, DEFAULT_LISTEN, true);
    fprintf(out, "  --workers N             reconcile workers per controller, 1-64 (default 2)\n"
                 "  --leader-probe FILE     diagnostic: while leading, append \"<identity> <monotonic ns>\" to FILE\n"
                 "                          every 10 ms (shows, across replicas on one machine, who led when)\n"
                 "  --no-webhook            do not serve the pod admission webhook\n"
                 "  --webhook-listen ADDR   where the webhook serves HTTPS (default :9443)\n"
                 "  --webhook-secret NAME   the Secret of its CA and certificate, in $POD_NAMESPACE\n"
                 "                          (default fracgpu-webhook-tls)\n"
                 "  --webhook-config NAME   the MutatingWebhookConfiguration whose caBundle it keeps (default fracgpu)\n"
                 "  --webhook-service NAME  the Service kube-apiserver reaches it by (default fracgpu-webhook)\n"
                 "  --webhook-ca-lifetime D, --webhook-cert-lifetime D, --webhook-switch-delay D\n"
                 "                          certificate lifetimes and the CA switch delay (default 43800h, 2160h, 5m)\n"
                 "  --workload-kind GROUP/VERSION/KIND/PLURAL[=CLASS]\n"
                 "                          a custom workload kind to automate besides Deployments, StatefulSets,\n"
                 "                          Jobs and CronJobs (repeatable; CLASS fixes its class, e.g.\n"
                 "                          kubeflow.org/v1/PyTorchJob/pytorchjobs=training); the operator's role\n"
                 "                          must be allowed to get, list, watch and patch it\n"
                 "  --grant-key-rotation D  how long a grant key signs before the leader replaces it in Secret\n"
                 "                          $POD_NAMESPACE/fracgpu-grant-key (default 720h)\n"
                 "  --grant-key-grace D     how long the replaced key still verifies; shorter than the rotation,\n"
                 "                          longer than a bound pod may wait for its kubelet's admission (default 1h)\n"
                 "  --no-scheduler          do not run fracgpu-scheduler (placements and capacity pods)\n"
                 "  --placement-policy NAME the scheduler's placement policy (default fracgpu; see fracgpu replay)\n"
                 "  --capacity-image IMAGE  the image capacity pods run (default: this operator's own image)\n"
                 "  --capacity-idle-grace D how long a capacity pod without tenants is kept (default 5m)\n"
                 "  --pod-group-timeout D   how long a pod group's placed members wait for the rest (default 60s)\n"
                 "  --preemption-delay D    how long a pod waits for new capacity before it evicts pods of lower\n"
                 "                          priority from a GPU (default 30s)\n"
                 "  --consolidation-interval D  how often one GPU whose tenants fit on the others is emptied,\n"
                 "                          moving pods of updateMode Auto (default 1m; 0: never)\n"
                 "  --no-collector          do not scrape the node agents for per-pod GPU use\n"
                 "  --collect-interval D    how often the collector scrapes every node agent (default 30s)\n"
                 "  --collect-timeout D     how long one scrape may take (default 5s)\n"
                 "  --collect-concurrency N node agents scraped at once, 1-1024 (default 8)\n"
                 "  --no-rightsizing        collect nothing into recommendations (docs/rightsizing.md)\n"
                 "  --rightsizing-interval D how often recommendations are decided, written and applied (default 30s)\n"
                 "  --checkpoint-interval D how often a workload's changed history is saved in its GPUCheckpoint and\n"
                 "                          its status.usage refreshed (default 5m)\n"
                 "  --checkpoint-ttl D      how long a GPUCheckpoint outlives its workload (default 168h)\n"
                 "  --rightsizing-min-replicas N  Auto mode rolls workloads of at least N pods (default 2)\n");
}

struct args {
    unsigned workers;
    const char *probe;
    bool webhook;
    struct fg_webhook_opts hook;
    struct fg_workload_kind kinds[MAX_KINDS];   /* the built-in ones, then those of --workload-kind */
    size_t n_kinds;
    struct fg_workload_kinds table;
    struct fg_grant_key_opts grant_key;
    bool scheduler;
    struct fg_sa_opts sched;
    bool collector;
    struct fg_collector_opts collect;
    bool rightsizing;
    struct fg_rightsizer_opts rightsize;
};

static enum fg_err duration(const char *flag, const char *arg, int64_t *ms, char *errmsg)
{
    char why[FG_ERRMSG_MAX] = "";
    if (fg_duration_parse(arg, ms, why) != FG_OK || *ms <= 0)
        return fg_errmsg(errmsg, FG_E_INVAL, "%s wants a positive duration such as 90m or 2160h, got \"%s\"%s%s", flag,
                         arg, why[0] ? ": " : "", why);
    return FG_OK;
}

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
    case OPT_NO_WEBHOOK:
        a->webhook = false;
        return FG_OK;
    case OPT_WEBHOOK_LISTEN:
        a->hook.listen = arg;
        return FG_OK;
    case OPT_WEBHOOK_SECRET:
        a->hook.secret = arg;
        return FG_OK;
    case OPT_WEBHOOK_CONFIG:
        a->hook.config = arg;
        return FG_OK;
    case OPT_WEBHOOK_SERVICE:
        a->hook.service = arg;
        return FG_OK;
    case OPT_WEBHOOK_CA_LIFETIME:
        return duration("--webhook-ca-lifetime", arg, &a->hook.ca_lifetime_ms, errmsg);
    case OPT_WEBHOOK_CERT_LIFETIME:
        return duration("--webhook-cert-lifetime", arg, &a->hook.serving_lifetime_ms, errmsg);
    case OPT_WEBHOOK_SWITCH_DELAY:
        return duration("--webhook-switch-delay", arg, &a->hook.switch_delay_ms, errmsg);
    case OPT_GRANT_KEY_ROTATION:
        return duration("--grant-key-rotation", arg, &a->grant_key.policy.rotation_ms, errmsg);
    case OPT_GRANT_KEY_GRACE:
        return duration("--grant-key-grace", arg, &a->grant_key.policy.grace_ms, errmsg);
    case OPT_NO_SCHEDULER:
        a->scheduler = false;
        return FG_OK;
    case OPT_PLACEMENT_POLICY:
        for (size_t i = 0; fg_sched_policy_names[i]; i++)
            if (!strcmp(fg_sched_policy_names[i], arg)) {
                a->sched.policy = arg;
                return FG_OK;
            }
        return fg_errmsg(errmsg, FG_E_INVAL, "--placement-policy: no placement policy \"%s\"", arg);
    case OPT_CAPACITY_IMAGE:
        a->sched.image = arg;
        return FG_OK;
    case OPT_CAPACITY_IDLE_GRACE:
    case OPT_POD_GROUP_TIMEOUT:
    case OPT_PREEMPTION_DELAY: {
        static const char *const names[] = { "--capacity-idle-grace", "--pod-group-timeout", "--preemption-delay" };
        uint64_t *const to[] = { &a->sched.idle_grace_ms, &a->sched.group_timeout_ms, &a->sched.preemption_delay_ms };
        int i = c - OPT_CAPACITY_IDLE_GRACE;
        int64_t ms;
        enum fg_err err = duration(names[i], arg, &ms, errmsg);
        if (!err)
            *to[i] = (uint64_t)ms;
        return err;
    }
    case OPT_CONSOLIDATION_INTERVAL: {
        int64_t ms = 0;
        enum fg_err err = strcmp(arg, "0") ? duration("--consolidation-interval", arg, &ms, errmsg) : FG_OK;
        if (!err)
            a->sched.consolidation_interval_ms = (uint64_t)ms;
        return err;
    }
    case OPT_NO_COLLECTOR:
        a->collector = false;
        return FG_OK;
    case OPT_COLLECT_INTERVAL:
    case OPT_COLLECT_TIMEOUT: {
        int64_t ms;
        bool interval = c == OPT_COLLECT_INTERVAL;
        enum fg_err err = duration(interval ? "--collect-interval" : "--collect-timeout", arg, &ms, errmsg);
        if (!err && !interval && ms > 600000)
            err = fg_errmsg(errmsg, FG_E_INVAL, "--collect-timeout: at most 10m, got \"%s\"", arg);
        if (!err)
            *(interval ? &a->collect.interval_ms : &a->collect.timeout_ms) = (uint64_t)ms;
        return err;
    }
    case OPT_COLLECT_CONCURRENCY:
        n = strtoull(arg, &end, 10);
        a->collect.concurrency = n <= 1024 ? (unsigned)n : 0;
        if (!*arg || *end || *arg == '-' || a->collect.concurrency < 1)
            return fg_errmsg(errmsg, FG_E_INVAL, "--collect-concurrency wants 1 to 1024, got \"%s\"", arg);
        return FG_OK;
    case OPT_NO_RIGHTSIZING:
        a->rightsizing = false;
        return FG_OK;
    case OPT_RIGHTSIZING_INTERVAL:
    case OPT_CHECKPOINT_INTERVAL:
    case OPT_CHECKPOINT_TTL: {
        static const char *const names[] = { "--rightsizing-interval", "--checkpoint-interval", "--checkpoint-ttl" };
        int64_t *const to[] = { &a->rightsize.interval_ms, &a->rightsize.checkpoint_interval_ms,
                                &a->rightsize.checkpoint_ttl_ms };
        int i = c - OPT_RIGHTSIZING_INTERVAL;
        return duration(names[i], arg, to[i], errmsg);
    }
    case OPT_RIGHTSIZING_MIN_REPLICAS:
        n = strtoull(arg, &end, 10);
        if (!*arg || *end || *arg == '-' || n < 1 || n > 1000)
            return fg_errmsg(errmsg, FG_E_INVAL, "--rightsizing-min-replicas wants 1 to 1000, got \"%s\"", arg);
        a->rightsize.min_replicas = (unsigned)n;
        return FG_OK;
    case OPT_WORKLOAD_KIND: {
        struct fg_workload_kind k;
        if (a->n_kinds == MAX_KINDS)
            return fg_errmsg(errmsg, FG_E_INVAL, "--workload-kind: at most %d kinds in all", MAX_KINDS);
        if (fg_workload_kind_parse(arg, &k, errmsg) != FG_OK)
            return FG_E_INVAL;
        for (size_t i = 0; i < a->n_kinds; i++) {
            if (!strcmp(k.resource.group, a->kinds[i].resource.group) && !strcmp(k.resource.kind, a->kinds[i].resource.kind)) {
                fg_workload_kind_cleanup(&k);
                return fg_errmsg(errmsg, FG_E_INVAL, "--workload-kind %s: given twice", arg);
            }
        }
        a->kinds[a->n_kinds++] = k;
        return FG_OK;
    }
    }
    return fg_errmsg(errmsg, FG_E_INVAL, "unknown option");
}

/* The collector's samples, handed to the rightsizer (both on the kube loop). */
static void to_rightsizer(void *ud, const struct fg_collector_sample *s)
{
    struct fg_rightsizer_sample x = { s->ns, s->gpuworkload, s->pod_uid, s->t_ms,
                                      s->has_compute, s->has_memory, s->compute_milli, s->memory_mib };
    fg_rightsizer_sample(ud, &x);
}

/* Builds the manager with everything the operator runs, and runs it. */
static int run(struct args *a, const struct fg_manager_opts *opts)
{
    char errmsg[FG_ERRMSG_MAX] = "";
    struct fg_manager *m;
    if (fg_manager_new(opts, &m, errmsg) != FG_OK) {
        fg_log(FG_LOG_ERROR, "operator", "cannot start: %s", errmsg);
        return 1;
    }
    enum fg_err err = fg_policy_reconciler_setup(m, a->workers, errmsg);
    if (!err)
        err = fg_workload_reconciler_setup(m, &a->table, a->workers, errmsg);
    if (!err)
        err = fg_grant_key_reconciler_setup(m, &a->grant_key, errmsg);
    if (!err && a->webhook)
        err = fg_webhook_setup(m, &a->hook, errmsg);
    if (!err && a->scheduler)
        err = fg_sa_setup(m, &a->sched, errmsg);
    struct fg_collector *collector = NULL;
    struct fg_rightsizer *rightsizer = NULL;
    if (!err && a->collector)
        err = fg_collector_setup(m, &a->table, &a->collect, &collector, errmsg);
    if (!err && a->collector && a->rightsizing && (err = fg_rightsizer_setup(m, &a->rightsize, &rightsizer, errmsg)) == FG_OK &&
        (err = fg_collector_subscribe(collector, to_rightsizer, rightsizer)) != FG_OK)
        fg_errmsg(errmsg, err, "cannot hand the collector's samples to the rightsizer");
    if (!err && a->probe)
        err = fg_leader_probe_setup(m, a->probe, errmsg);
    if (err) {
        fg_log(FG_LOG_ERROR, "operator", "cannot set up: %s", errmsg);
        fg_manager_free(m);
        return 1;
    }
    int status = fg_manager_run(m);
    fg_manager_free(m);
    return status;
}

int fg_cmd_operator(int argc, char **argv)
{
    static const struct option options[] = {
        { "workers", required_argument, NULL, OPT_WORKERS },
        { "leader-probe", required_argument, NULL, OPT_PROBE },
        { "no-webhook", no_argument, NULL, OPT_NO_WEBHOOK },
        { "webhook-listen", required_argument, NULL, OPT_WEBHOOK_LISTEN },
        { "webhook-secret", required_argument, NULL, OPT_WEBHOOK_SECRET },
        { "webhook-config", required_argument, NULL, OPT_WEBHOOK_CONFIG },
        { "webhook-service", required_argument, NULL, OPT_WEBHOOK_SERVICE },
        { "webhook-ca-lifetime", required_argument, NULL, OPT_WEBHOOK_CA_LIFETIME },
        { "webhook-cert-lifetime", required_argument, NULL, OPT_WEBHOOK_CERT_LIFETIME },
        { "webhook-switch-delay", required_argument, NULL, OPT_WEBHOOK_SWITCH_DELAY },
        { "workload-kind", required_argument, NULL, OPT_WORKLOAD_KIND },
        { "grant-key-rotation", required_argument, NULL, OPT_GRANT_KEY_ROTATION },
        { "grant-key-grace", required_argument, NULL, OPT_GRANT_KEY_GRACE },
        { "no-scheduler", no_argument, NULL, OPT_NO_SCHEDULER },
        { "placement-policy", required_argument, NULL, OPT_PLACEMENT_POLICY },
        { "capacity-image", required_argument, NULL, OPT_CAPACITY_IMAGE },
        { "capacity-idle-grace", required_argument, NULL, OPT_CAPACITY_IDLE_GRACE },
        { "pod-group-timeout", required_argument, NULL, OPT_POD_GROUP_TIMEOUT },
        { "preemption-delay", required_argument, NULL, OPT_PREEMPTION_DELAY },
        { "consolidation-interval", required_argument, NULL, OPT_CONSOLIDATION_INTERVAL },
        { "no-collector", no_argument, NULL, OPT_NO_COLLECTOR },
        { "collect-interval", required_argument, NULL, OPT_COLLECT_INTERVAL },
        { "collect-timeout", required_argument, NULL, OPT_COLLECT_TIMEOUT },
        { "collect-concurrency", required_argument, NULL, OPT_COLLECT_CONCURRENCY },
        { "no-rightsizing", no_argument, NULL, OPT_NO_RIGHTSIZING },
        { "rightsizing-interval", required_argument, NULL, OPT_RIGHTSIZING_INTERVAL },
        { "checkpoint-interval", required_argument, NULL, OPT_CHECKPOINT_INTERVAL },
        { "checkpoint-ttl", required_argument, NULL, OPT_CHECKPOINT_TTL },
        { "rightsizing-min-replicas", required_argument, NULL, OPT_RIGHTSIZING_MIN_REPLICAS },
        { NULL, 0, NULL, 0 },
    };
    const char *pod_ns = getenv("POD_NAMESPACE");
    struct args a = { .workers = 2, .webhook = true, .hook = FG_WEBHOOK_OPTS_DEFAULT,
                      .grant_key = { .secret = FG_SECRET_GRANT_KEY, .policy = FG_GRANT_KEY_POLICY_DEFAULT },
                      .scheduler = true, .sched = FG_SA_OPTS_DEFAULT, .collector = true,
                      .collect = FG_COLLECTOR_OPTS_DEFAULT, .rightsizing = true,
                      .rightsize = FG_RIGHTSIZER_OPTS_DEFAULT };
    a.hook.ns = pod_ns && *pod_ns ? pod_ns : "fracgpu-system";
    a.grant_key.ns = a.hook.ns;
    a.sched.ns = a.hook.ns;
    a.rightsize.capacity_ns = a.hook.ns;
    size_t builtins = fg_workload_builtin_kinds.n;
    memcpy(a.kinds, fg_workload_builtin_kinds.v, builtins * sizeof(*a.kinds));
    a.n_kinds = builtins;
    const struct fg_role_cli cli = { "operator", options, true, usage, option, &a };
    struct fg_manager_opts opts = FG_MANAGER_OPTS_DEFAULT;
    opts.component = "operator";
    opts.listen = DEFAULT_LISTEN;
    int status = fg_manager_flags_parse(&cli, &opts, argc, argv);
    a.table = (struct fg_workload_kinds){ a.kinds, a.n_kinds };
    a.hook.kinds = &a.table;
    char why[FG_ERRMSG_MAX] = "";
    if (!status && fg_grant_key_policy_check(&a.grant_key.policy, why) != FG_OK) {
        fprintf(stderr, "fracgpu operator: --grant-key-grace must be shorter than --grant-key-rotation, so a previous "
                        "key is dropped before the next rotation\n");
        usage(stderr);
        status = 2;
    }
    if (!status)
        status = run(&a, &opts);
    for (size_t i = builtins; i < a.n_kinds; i++)
        fg_workload_kind_cleanup(&a.kinds[i]);
    return status < 0 ? 0 : status;
}
