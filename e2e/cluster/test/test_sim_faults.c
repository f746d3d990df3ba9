/*
 * e2e_sim_faults — the chaos run: GPU sharing that stays correct while everything around it fails.
 *
 * fracgpu's scheduler places tenants on GPUs held by capacity pods; whatever happens to the operator,
 * the node agents, the kubelets, the nodes or the API server, no GPU may be given more than it has,
 * no tenant may run on a GPU nobody holds, no capacity pod may be left holding nothing, no workload
 * may lose its usage history and no pod may keep a GPU with a grant fracgpu did not issue it. This
 * test makes all of those things happen at once while automated workloads churn hundreds of pods,
 * and lets an independent checker (e2e/checker), watching every pod through the same faulty API,
 * judge after every event:
 *
 *   1. a simulated cluster (testdata/faults-e2e.yaml: four nodes of eight GPUs, no autoscaler) with
 *      fracgpu installed by `kubectl apply -k manifests/`; the operator gives idle GPUs back after
 *      3 s and collects, decides and checkpoints every 2 s; eleven Deployments opted in with
 *      `fracgpu.io/automate=true` as a user does — eight with fixed fractions from 100 to 500 milli
 *      and 4 to 36 GiB, one more with a fixed fraction under a test policy of minute-scale windows in
 *      Auto mode, two rightsized under that policy — all using their GPUs (the usage driver's
 *      constant profiles), so that their GPUWorkloads keep a history;
 *   2. once every workload's GPUCheckpoint holds samples, their histories are noted;
 *   3. the chaos, FG_CHAOS_SECONDS long (120 s by default; longer for a soak): every 7 s each
 *      Deployment is scaled to a random size, at times beyond what the GPUs hold, and meanwhile
 *        - every 2 to 5 s the API server drops every watch, expires every watch (410), answers the
 *          next 10 to 40 requests, whoever sends them, with 429 or 500, or delays every reply by 100
 *          to 500 ms until the next fault;
 *        - every 18 to 26 s an operator replica's process is killed (SIGKILL, the leader more often
 *          than the standby) and its kubelet starts it again;
 *        - every 12 to 20 s a node agent's process is killed the same way;
 *        - the kubelets (the component that runs every node's kubelet) are killed 30 s in and then
 *          every 60 to 90 s, and the cluster's supervisor starts them again (while they are down no
 *          process is killed: the kubelet that sees a crash counts it);
 *        - at 45% of the run (or as soon after as the kubelets run) a GPU node disappears, its
 *          instance terminated in the simulated cloud: one drawn at the start among those that run no
 *          operator replica, whose node agent is never killed, so that every kill is counted on a pod
 *          that survives; its pods are collected and the workloads' replacements placed on the GPUs
 *          left;
 *        - every 35 s an impostor is created: a pod bound to a node from the start, asking for a GPU
 *          share with a granted tenant's annotations and a grant copied, edited or made up
 *          (chaos_impostors.h); its node's agent is spared until its outcome is known and read;
 *   4. the faults stop and the Deployments shrink to sizes the GPUs left hold with room to spare:
 *      the time until every pod runs Ready on the GPU of a live capacity pod is the convergence time;
 *   5. then every capacity pod left holds a tenant (the idle ones are waited for to go); every
 *      workload's history is still there and never went back (chaos_history.h), and the pods of the
 *      workload whose fraction is fixed were never rolled towards its recommendation; every impostor
 *      was refused by its node's device plugin or removed by its agent, and the agents' counters say
 *      so; every tenant running holds a grant that verifies with fracgpu's key, and was given the GPU
 *      that grant names (what the device plugin answered for it, its devices.json); no tenant was
 *      ever removed by an agent for holding another pod's reply (the agents' GrantViolation Events in
 *      the workloads' namespace: however the kubelets and agents restart, the scheduler never leaves
 *      two tenants of different replies awaiting admission on one node);
 *   6. one line of figures: pods created, faults by kind, restarts by kind, the device plugins'
 *      decisions, tenants refused at admission, violations, and the convergence time.
 * The dice are seeded: the seed is printed first, and FG_FAULTS_SEED=<seed> draws the same sizes and
 * faults again (their timing against the cluster's stays the machine's own).
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/timefmt.h"
#include "e2e/cluster/cloud.h"
#include "e2e/cluster/pidfile.h"
#include "e2e/cluster/test/chaos_agents.h"
#include "e2e/cluster/test/chaos_history.h"
#include "e2e/cluster/test/chaos_impostors.h"
#include "e2e/cluster/test/chaos_watch.h"
#include "e2e/cluster/test/share_fixture.h"
#include "e2e/tests/harness.h"
#include "reconcilers/grant.h"
#include "reconcilers/podcontract.h"

#define NS "churn"
#define IMPOSTOR_NS "impostors"
#define SYSTEM_NS SHARE_SYSTEM_NS
#define OPERATOR_SELECTOR "app.kubernetes.io/component=operator"
#define GPU_NODES 4
#define TEST_POLICY "chaos-auto"

#define CHAOS_S_DEFAULT 120   /* FG_CHAOS_SECONDS: how long the faults go on */
#define CHAOS_S_MIN 60
#define CHAOS_S_MAX 86400
#define WAVE_S 7              /* between two rescalings */
#define IMPOSTOR_S 35         /* between two impostors */
#define KUBELETS_FIRST_S 30   /* the kubelets' first kill, then every 60 to 90 s */
#define NODE_LOSS_PERCENT 45  /* when the node goes, in % of the chaos */
#define WARMUP_S 120          /* for every workload's history to start */
#define CONVERGE_S 120        /* for the cluster to converge once the faults stop */
#define LEAK_S 60             /* for idle capacity pods to go */
#define HISTORY_S 60          /* for every history to grow past its note */
#define IMPOSTOR_WAIT_S 60    /* for the last impostor's outcome */
#define MAX_IMPOSTORS 4096

/* Floors that show the run did what it says: well below what the runs of 120 s measured (531 to 649
 * pods created; the tally's counts are lower bounds, see chaos_watch.h). */
#define MIN_PODS_PER_MIN 150  /* pods created */
#define EVENTS_PER_POD 3      /* pod events the checker judged, per pod created */

struct workload {
    const char *name;
    unsigned milli;           /* a fixed fraction; 0: rightsized */
    const char *memory;       /* the fixed fraction's memory */
    int max;                  /* replicas at most; a third of it at most once the faults stop */
    const char *sm, *used;    /* what each pod uses of its GPU: compute %, memory */
    const char *policy;       /* fracgpu.io/policy; NULL: the built-in for its class */
};

/* Together at their largest about 40 GPUs of compute: more than the 32 there are. wfix has a fixed
 * fraction under a policy in Auto mode: its history is kept and recommended from, and its pods, which
 * always get the fixed fraction, must never be rolled towards the recommendation. */
static const struct workload workloads[] = {
    { "w100", 100, "4Gi", 40, "6", "2Gi", NULL },    { "w150", 150, "6Gi", 30, "9", "3Gi", NULL },
    { "w200", 200, "8Gi", 24, "12", "4Gi", NULL },   { "w250", 250, "10Gi", 24, "15", "5Gi", NULL },
    { "w300", 300, "16Gi", 20, "18", "8Gi", NULL },  { "w400", 400, "12Gi", 16, "24", "6Gi", NULL },
    { "w500", 500, "20Gi", 12, "30", "10Gi", NULL }, { "wmem", 100, "36Gi", 10, "5", "20Gi", NULL },
    { "wfix", 200, "8Gi", 9, "12", "4Gi", TEST_POLICY }, { "rsa", 0, NULL, 6, "10", "2Gi", TEST_POLICY },
    { "rsb", 0, NULL, 6, "15", "3Gi", TEST_POLICY },
};
#define NWORKLOADS (sizeof workloads / sizeof *workloads)
#define PINNED "wfix"

enum fault {
    DROP_WATCHES, EXPIRE_WATCHES, BURST_429, BURST_500, DELAY, KILL_LEADER, KILL_STANDBY, KILL_AGENT,
    KILL_KUBELETS, NODE_LOST, NFAULTS
};
#define API_FAULTS 5   /* the first five kinds are the API server's */
static const char *const fault_names[NFAULTS] = { "watch drops", "410 expiries", "429 bursts", "500 bursts",
                                                  "delays", "leader kills", "standby kills", "node-agent kills",
                                                  "kubelets kills", "nodes lost" };

static struct share_env e;

static struct {
    unsigned seed, rng, chaos_s;
    struct chaos_watch *watch;
    struct chaos_agents *agents;
    size_t peak_running, waves;
    unsigned faults[NFAULTS];
    unsigned refused_429, refused_500;   /* requests the bursts were armed to refuse */
    unsigned delay_ms_max;
    pid_t last_killed;                   /* the operator process killed last */
    pid_t kubelets_killed;               /* the kubelets' process killed and not yet seen again */
    unsigned kubelets_restarts;
    json_object *restarts[2];            /* operator, node agent: pod UID -> the most restarts seen */
    char doomed[CHAOS_NODE_MAX];         /* the GPU node that disappears */
    bool node_lost, node_gone;           /* its instance terminated; its Node deleted */
    size_t displaced;                    /* pods of NS on it when it went */
    struct chaos_impostor impostors[MAX_IMPOSTORS];
    size_t nimpostors;
    struct chaos_history before[NWORKLOADS];
    int replicas[NWORKLOADS];
    uint64_t chaos_end_ns;
    double converge_s;
    size_t running_end, capacity_end;
    unsigned histories_kept;
    double install_s, warmup_s;
} f;

static unsigned dice(unsigned n)
{
    return (unsigned)rand_r(&f.rng) % n;
}

static void pause_ms(unsigned ms)
{
    nanosleep(&(struct timespec){ ms / 1000, (long)(ms % 1000) * 1000000L }, NULL);
}

static double since_s(uint64_t t0)
{
    return (double)(fg_clock_mono_ns() - t0) / 1e9;
}

/* ---- setup ---- */

/* A whole number from lo to hi in environment variable name, else dflt; false (with the reason on
 * stderr) when it is set to anything else. */
static bool env_number(const char *name, unsigned long lo, unsigned long hi, unsigned long dflt, unsigned long *out)
{
    const char *s = getenv(name);
    *out = dflt;
    if (!s || !*s)
        return true;
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (*s < '0' || *s > '9' || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "%s: \"%s\" is not a whole number from %lu to %lu\n", name, s, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

static int setup(void **state)
{
    (void)state;
    unsigned long seed = 0, chaos_s = 0;
    if (!env_number("FG_FAULTS_SEED", 0, UINT_MAX, (unsigned)fg_clock_wall_ms(), &seed) ||
        !env_number("FG_CHAOS_SECONDS", CHAOS_S_MIN, CHAOS_S_MAX, CHAOS_S_DEFAULT, &chaos_s))
        return -1;
    f.seed = f.rng = (unsigned)seed;
    f.chaos_s = (unsigned)chaos_s;
    printf("e2e_sim_faults: seed %u (FG_FAULTS_SEED=%u draws the same again); chaos %u s (FG_CHAOS_SECONDS)\n",
           f.seed, f.seed, f.chaos_s);
    fflush(stdout);
    for (int k = 0; k < 2; k++)
        f.restarts[k] = json_object_new_object();
    f.agents = chaos_agents_new();
    /* A node is lost here: its pods, tenants and capacity pods alike, stay in the API until pod GC
     * sees the Node gone (kube-controller-manager's looks every 20 s; the simulated one on the
     * Node's deletion, which a dropped watch delays), and the tenants there run nowhere meanwhile.
     * One run's tenant outlived its capacity pod there by 10.07 s: the grace covers kube's period. */
    e.grace_ms = 30000;
    int rc = share_setup(&e, "faults-e2e.yaml", "e2e_sim_faults");
    fg_log_set_level(FG_LOG_ERROR);   /* watches end by the hundred here; violations stay errors */
    char msg[FG_ERRMSG_MAX] = "";
    if (rc == 0 && chaos_watch_start(e.sim.kubeconfig, NS, IMPOSTOR_NS, 30000, &f.watch, msg) != FG_OK) {
        fprintf(stderr, "cannot watch the cluster's pods: %s\n", msg);
        rc = -1;
    }
    return rc;
}

static int teardown(void **state)
{
    (void)state;
    chaos_watch_free(f.watch);
    chaos_agents_free(f.agents);
    for (int k = 0; k < 2; k++)
        json_object_put(f.restarts[k]);
    return e.sim.client ? share_teardown(&e) : -1;   /* no client: no cluster was started */
}

/* ---- 1. install, and the workloads ---- */

#define OK(out, stdin_text, ...) SHARE_OK(&e, out, stdin_text, __VA_ARGS__)

/* The operator's flags for this run, in one rollout. */
static void operator_flags(struct fg_buf *out)
{
    static const char *const args[] = { "--capacity-idle-grace=3s", "--collect-interval=2s",
                                        "--rightsizing-interval=2s", "--checkpoint-interval=2s" };
    struct fg_buf patch;
    fg_buf_init(&patch, 0);
    for (size_t i = 0; i < sizeof args / sizeof *args; i++)
        if (fg_buf_printf(&patch, "%s{\"op\":\"add\",\"path\":\"/spec/template/spec/containers/0/args/-\","
                          "\"value\":\"%s\"}", i ? "," : "[", args[i]) != FG_OK)
            fail();
    if (fg_buf_printf(&patch, "]") != FG_OK)
        fail();
    OK(out, NULL, "patch", "deployment/fracgpu-operator", "-n", SYSTEM_NS, "--type=json", "-p", fg_buf_str(&patch));
    OK(out, NULL, "rollout", "status", "deployment/fracgpu-operator", "-n", SYSTEM_NS, "--timeout=150s");
    fg_buf_cleanup(&patch);
}

static void append_workload(struct fg_buf *yaml, const struct workload *w, int replicas)
{
    char ann[200] = "", fixed[120] = "";
    if (w->milli)
        snprintf(fixed, sizeof fixed, "fracgpu.io/gpu-compute: \"%u\", fracgpu.io/gpu-memory: %s", w->milli,
                 w->memory);
    snprintf(ann, sizeof ann, "%s%s%s%s", fixed, w->milli && w->policy ? ", " : "",
             w->policy ? "fracgpu.io/policy: " : "", w->policy ? w->policy : "");
    if (fg_buf_printf(yaml,
                      "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n  namespace: " NS "\n"
                      "  annotations: {fracgpu.io/automate: \"true\", %s}\n"
                      "spec:\n  replicas: %d\n  selector:\n    matchLabels: {app: %s}\n  template:\n"
                      "    metadata:\n      labels: {app: %s, fracgpu.io/automate: \"true\"}\n"
                      "      annotations: {sim.fracgpu.io/gpu-sm: \"%s\", sim.fracgpu.io/gpu-memory: %s}\n"
                      "    spec:\n      containers:\n        - name: main\n          image: registry.example.com/vllm:1\n"
                      "          resources: {requests: {cpu: 50m, memory: 128Mi}, limits: {nvidia.com/gpu: \"1\"}}\n",
                      w->name, ann, replicas, w->name, w->name, w->sm, w->used) != FG_OK)
        fail();
}

/* Whether an operator replica runs on node, among the operator pods l. */
static bool runs_operator(json_object *l, const char *node)
{
    for (size_t i = 0; i < fg_json_array_len(fg_json_get(l, "items", NULL)); i++)
        if (fg_str_eq(fg_json_get_str(fg_json_at(fg_json_get(l, "items", NULL), i), "spec", "nodeName", NULL), node))
            return true;
    return false;
}

/* The GPU node that will disappear, drawn among those that run no operator replica: the replicas'
 * kills are faults of their own, which a node that must be spared until it goes would hold back. */
static void choose_doomed(void)
{
    json_object *l = share_list(&e.sim, &fg_kube_nodes, NULL, NULL), *items = fg_json_get(l, "items", NULL);
    json_object *ops = share_list(&e.sim, &fg_kube_pods, SYSTEM_NS, OPERATOR_SELECTOR);
    assert_non_null(ops);
    assert_int_equal(fg_json_array_len(items), GPU_NODES);
    const char *free_nodes[GPU_NODES];
    size_t n = 0;
    for (size_t i = 0; i < GPU_NODES; i++) {
        const char *name = fg_json_get_str(fg_json_at(items, i), "metadata", "name", NULL);
        if (name && !runs_operator(ops, name))
            free_nodes[n++] = name;
    }
    assert_true(n > 0);
    snprintf(f.doomed, sizeof f.doomed, "%s", free_nodes[dice((unsigned)n)]);
    json_object_put(ops);
    json_object_put(l);
}

static void test_install(void **state)
{
    (void)state;
    uint64_t t0 = fg_clock_mono_ns();
    share_install(&e, NULL, GPU_NODES, NS);
    struct fg_buf yaml, out;
    fg_buf_init(&yaml, 0);
    fg_buf_init(&out, 0);
    operator_flags(&out);
    OK(&out, NULL, "create", "namespace", IMPOSTOR_NS);
    OK(&out,
       "apiVersion: fracgpu.io/v1alpha1\nkind: GPUPolicy\nmetadata:\n  name: " TEST_POLICY "\n"
       "  labels: {fracgpu.io/test-policy: \"true\"}\n"
       "  annotations: {fracgpu.io/description: \"minute-scale windows, for end-to-end tests only\"}\n"
       "spec:\n  workloadClass: inference\n  sharing: timeslice\n  historyWindow: 3m\n  minHistory: 20s\n"
       "  compute: {percentile: 90, headroomPercent: 20, minMilli: 50, maxMilli: 1000}\n"
       "  memory: {percentile: 100, headroomPercent: 25, minMiB: 256, maxMiB: 81920}\n"
       "  updateMode: Auto\n  cooldown: 20s\n  changeThresholdPercent: 10\n",
       "apply", "-f", "-");
    /* every workload runs from the start, so that each keeps a history before the faults */
    for (size_t i = 0; i < NWORKLOADS; i++) {
        f.replicas[i] = 1 + (int)dice((unsigned)workloads[i].max / 3);
        append_workload(&yaml, &workloads[i], f.replicas[i]);
    }
    OK(&out, fg_buf_str(&yaml), "apply", "-f", "-");
    choose_doomed();
    fg_buf_cleanup(&yaml);
    fg_buf_cleanup(&out);
    f.install_s = since_s(t0);
}

/* ---- 2. the histories before the faults ---- */

static bool histories_started(void *ud)
{
    (void)ud;
    for (size_t i = 0; i < NWORKLOADS; i++)
        if (!chaos_history_read(&e.sim, NS, workloads[i].name, &f.before[i]) || !f.before[i].found ||
            f.before[i].samples <= 0)
            return false;
    return true;
}

static void test_warm_up(void **state)
{
    (void)state;
    uint64_t t0 = fg_clock_mono_ns();
    if (!share_eventually(histories_started, NULL, WARMUP_S)) {
        size_t i = 0;
        while (i + 1 < NWORKLOADS && f.before[i].found && f.before[i].samples > 0)
            i++;
        char what[256];
        snprintf(what, sizeof what, "no GPUCheckpoint with samples for %s within %d s", workloads[i].name, WARMUP_S);
        share_show_and_fail(&e.sim, what);
    }
    f.warmup_s = since_s(t0);
}

/* ---- 3. the chaos ---- */

/* Sets workload i's replicas through the API, retrying while a burst refuses. */
static void scale(size_t i, int replicas)
{
    char *path = fg_kube_path(&fg_kube_deployments, NS, workloads[i].name, NULL, NULL);
    char patch[64];
    snprintf(patch, sizeof patch, "{\"spec\":{\"replicas\":%d}}", replicas);
    enum fg_err err = FG_E_INTERNAL;
    for (int attempt = 0; err && attempt < 100; attempt++) {
        err = fg_kube_patch(e.sim.client, path, FG_KUBE_PATCH_MERGE, patch, NULL, NULL);
        if (err)
            pause_ms(100);
    }
    free(path);
    if (err)
        fail_msg("cannot scale %s to %d: %s", workloads[i].name, replicas, fg_err_str(err));
    f.replicas[i] = replicas;
}

/* Every workload to a random size: up to its largest, or for the last wave from two pods up to a third
 * of it (every workload keeps pods, whose history must go on, and enough for Auto mode to roll). */
static void wave(bool last)
{
    for (size_t i = 0; i < NWORKLOADS; i++)
        scale(i, last ? 2 + (int)dice((unsigned)workloads[i].max / 3 - 1) : (int)dice((unsigned)workloads[i].max + 1));
    f.waves++;
}

/* The most pods of NS running Ready at once, as listed now and then; a list refused is skipped. */
static void sample_running(void)
{
    json_object *l = share_list(&e.sim, &fg_kube_pods, NS, NULL), *items = fg_json_get(l, "items", NULL);
    size_t running = 0;
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        json_object *p = fg_json_at(items, i);
        running += fg_str_eq(fg_json_get_str(p, "status", "phase", NULL), "Running") && share_ready(p);
    }
    if (running > f.peak_running)
        f.peak_running = running;
    json_object_put(l);
}

/* Notes the restarts of the containers of the pods of selector in SYSTEM_NS, per pod, the most seen:
 * a pod that goes with its node keeps what was seen of it. */
static void note_restarts(json_object *seen, const char *selector)
{
    json_object *l = share_list(&e.sim, &fg_kube_pods, SYSTEM_NS, selector), *items = fg_json_get(l, "items", NULL);
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        json_object *p = fg_json_at(items, i);
        const char *uid = fg_json_get_str(p, "metadata", "uid", NULL);
        int64_t r = 0, before = 0;
        if (uid && fg_json_get_int64(fg_json_at(fg_json_get(p, "status", "containerStatuses", NULL), 0), &r,
                                     "restartCount", NULL) &&
            (!fg_json_get_int64(seen, &before, uid, NULL) || r > before))
            json_object_object_add(seen, uid, json_object_new_int64(r));
    }
    json_object_put(l);
}

static unsigned restarts_seen(json_object *seen)
{
    int64_t n = 0;
    json_object_object_foreach(seen, uid, v)
    {
        (void)uid;
        n += json_object_get_int64(v);
    }
    return (unsigned)n;
}

/* Whether the node agent on node must be left alone now: on the doomed node (what a kill there did
 * would go with it), and on the node of an impostor until its outcome is known and the agent's
 * counters were read after it. */
static bool spare(void *ud, const char *node)
{
    (void)ud;
    if (fg_str_eq(node, f.doomed))
        return true;
    for (size_t i = 0; i < f.nimpostors; i++) {
        const struct chaos_impostor *imp = &f.impostors[i];
        if (fg_str_eq(imp->node, node) &&
            (imp->outcome == CHAOS_UNRESOLVED || !chaos_agents_read_since(f.agents, node, imp->resolved_ns)))
            return true;
    }
    return false;
}

/* The live process of operator replica p (its one container), from the pid file the kubelet keeps
 * on its node; 0 when none runs (it is between crash and restart). */
static pid_t operator_process(json_object *p)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/nodes/%s/pods/" SYSTEM_NS "_%s_%s/operator.pid", e.sim.work,
             fg_json_get_str(p, "spec", "nodeName", NULL), fg_json_get_str(p, "metadata", "name", NULL),
             fg_json_get_str(p, "metadata", "uid", NULL));
    pid_t pid = 0;
    return fg_sim_pidfile_alive(path, &pid) ? pid : 0;
}

/* The Lease's holder while it renews (every 2 s), or NULL: a holder killed since is no leader. */
static const char *leader_identity(json_object *lease)
{
    int64_t renewed = 0;
    const char *renew = fg_json_get_str(lease, "spec", "renewTime", NULL);
    if (!renew || !fg_time_parse(renew, &renewed) || fg_clock_wall_ms() - renewed > 5000)
        return NULL;
    return fg_json_get_str(lease, "spec", "holderIdentity", NULL);
}

/* Whether operator replica p holds the Lease: its identity is the pod's name and a random suffix. */
static bool holds_lease(json_object *p, const char *holder)
{
    const char *name = fg_json_get_str(p, "metadata", "name", NULL);
    size_t n = strlen(name);
    return holder && !strncmp(holder, name, n) && holder[n] == '_';
}

/* SIGKILLs the process of the replica that leads (holds the Lease and renews it) or of one that does
 * not; false when there is no such replica with a process running now, or the API could not say, or
 * the kubelets are down (a crash is counted by the kubelet that sees it). */
static bool kill_operator(bool leader)
{
    if (f.kubelets_killed)
        return false;
    char *path = fg_kube_path(&fg_kube_leases, SYSTEM_NS, "fracgpu-operator", NULL, NULL);
    json_object *lease = NULL;
    enum fg_err err = fg_kube_get(e.sim.client, path, &lease, NULL);
    free(path);
    json_object *l = err ? NULL : share_list(&e.sim, &fg_kube_pods, SYSTEM_NS, OPERATOR_SELECTOR);
    const char *holder = leader_identity(lease);
    pid_t victim = 0;
    for (size_t i = 0; i < fg_json_array_len(fg_json_get(l, "items", NULL)) && !victim; i++) {
        json_object *p = json_object_array_get_idx(fg_json_get(l, "items", NULL), i);
        const char *node = fg_json_get_str(p, "spec", "nodeName", NULL);
        if (share_live(p) && node && !fg_str_eq(node, f.doomed) && holds_lease(p, holder) == leader)
            victim = operator_process(p);
    }
    json_object_put(l);
    json_object_put(lease);
    if (!victim || victim == f.last_killed || kill(victim, SIGKILL) != 0)
        return false;
    f.last_killed = victim;
    f.faults[leader ? KILL_LEADER : KILL_STANDBY]++;
    return true;
}

/* One fault of the API server's; the first five rounds go through every kind. A delay lasts until
 * the next fault. */
static void api_fault(unsigned round)
{
    enum fault k = round < API_FAULTS ? (enum fault)round : (enum fault)dice(API_FAULTS);
    unsigned count = 10 + dice(31), ms = 100 + dice(401);
    char control[96];
    if (fg_e2e_fault(e.sim.client, "latency?ms=0") != FG_OK)
        fail_msg("the API server refused to end a delay");
    if (k == DROP_WATCHES || k == EXPIRE_WATCHES)
        snprintf(control, sizeof control, "%s", k == DROP_WATCHES ? "drop-watches" : "expire-watches");
    else if (k == DELAY)
        snprintf(control, sizeof control, "latency?ms=%u", ms);
    else
        snprintf(control, sizeof control, "fail?count=%u&code=%d&retryAfter=1", count, k == BURST_429 ? 429 : 500);
    if (fg_e2e_fault(e.sim.client, control) != FG_OK)
        fail_msg("the API server refused the fault %s", control);
    f.faults[k]++;
    f.refused_429 += k == BURST_429 ? count : 0;
    f.refused_500 += k == BURST_500 ? count : 0;
    if (k == DELAY && ms > f.delay_ms_max)
        f.delay_ms_max = ms;
}

/* Kills a node agent's process; false when none could be. */
static bool kill_agent(void)
{
    char node[CHAOS_NODE_MAX];
    if (f.kubelets_killed || !chaos_agents_kill(&e.sim, &f.rng, spare, NULL, node))
        return false;
    f.faults[KILL_AGENT]++;
    return true;
}

/* Kills the kubelets' process, once the last one killed was started again and the node that was
 * terminated is gone (its kubelet retires it: the simulated kubelets do not retire a node whose
 * instance went while they were down). */
static bool kill_kubelets(void)
{
    if (f.kubelets_killed || (f.node_lost && !f.node_gone))
        return false;
    pid_t pid = fg_simcluster_component_pid(&e.sim, "kubelets");
    if (pid <= 0 || kill(pid, SIGKILL) != 0)
        return false;
    f.kubelets_killed = pid;
    f.faults[KILL_KUBELETS]++;
    return true;
}

/* Notes when the terminated node's Node is gone. */
static void watch_node(void)
{
    if (!f.node_lost || f.node_gone)
        return;
    char *path = fg_kube_path(&fg_kube_nodes, NULL, f.doomed, NULL, NULL);
    struct fg_kube_status st = { 0 };
    json_object *node = NULL;
    if (fg_kube_get(e.sim.client, path, &node, &st) != FG_OK) {
        f.node_gone = st.http_code == 404;
        fg_kube_status_cleanup(&st);
    }
    json_object_put(node);
    free(path);
}

/* Counts the kubelets started again since their kill. */
static void watch_kubelets(void)
{
    pid_t pid = f.kubelets_killed ? fg_simcluster_component_pid(&e.sim, "kubelets") : 0;
    if (pid > 0 && pid != f.kubelets_killed && kill(pid, 0) == 0) {
        f.kubelets_restarts++;
        f.kubelets_killed = 0;
    }
}

/* Live pods of NS bound to node (asked again while a burst refuses). */
static size_t pods_on(const char *node)
{
    json_object *l = NULL;
    for (int attempt = 0; !l && attempt < 50; attempt++)
        if (!(l = share_list(&e.sim, &fg_kube_pods, NS, NULL)))
            pause_ms(100);
    json_object *items = fg_json_get(l, "items", NULL);
    size_t n = 0;
    for (size_t i = 0; i < fg_json_array_len(items); i++)
        n += share_live(fg_json_at(items, i)) &&
             fg_str_eq(fg_json_get_str(fg_json_at(items, i), "spec", "nodeName", NULL), node);
    json_object_put(l);
    return n;
}

/* The doomed node's instance terminated in the simulated cloud: its kubelet retires it and deletes
 * its Node, and the pods bound to it are collected. */
static bool lose_node(void)
{
    char msg[FG_ERRMSG_MAX] = "";
    if (f.kubelets_killed)
        return false;   /* while the kubelets are down, the node would stay for good (kill_kubelets) */
    size_t on = pods_on(f.doomed);
    if (fg_sim_cloud_terminate(e.sim.client, f.doomed, msg) != FG_OK)
        return false;
    f.displaced = on;
    f.node_lost = true;
    f.faults[NODE_LOST]++;
    printf("# node %s terminated %d%% into the chaos, %zu pods of " NS " on it\n", f.doomed, NODE_LOSS_PERCENT, on);
    return true;
}

/* Plants the next impostor; false when none could be now. */
static bool plant_impostor(void)
{
    if (f.nimpostors >= MAX_IMPOSTORS)
        return true;
    struct chaos_impostor *imp = &f.impostors[f.nimpostors];
    char why[128];
    enum chaos_forgery kind = (enum chaos_forgery)(f.nimpostors % CHAOS_FORGERIES);
    if (!chaos_impostor_plant(&e.sim, NS, IMPOSTOR_NS, (unsigned)f.nimpostors, kind, &f.rng, spare, NULL, imp, why,
                              sizeof why))
        return false;
    f.nimpostors++;
    return true;
}

static void resolve_impostors(void)
{
    for (size_t i = 0; i < f.nimpostors; i++)
        chaos_impostor_resolve(&e.sim, IMPOSTOR_NS, &f.impostors[i]);
}

/* What the chaos loop does when, in ns of fg_clock_mono_ns. */
struct schedule {
    uint64_t start, wave, api, kill_op, kill_agent, kill_kubelets, node_loss, impostor, sample, scrape, progress;
};

/* One turn of the chaos loop at now: whatever is due. */
static void chaos_turn(struct schedule *s, uint64_t now, unsigned *rounds)
{
    if (now >= s->wave) {
        wave(false);
        s->wave += WAVE_S * FG_NS_PER_S;
    }
    if (now >= s->api) {
        api_fault((*rounds)++);
        s->api = now + (2000 + dice(3000)) * FG_NS_PER_MS;
    }
    if (now >= s->kill_op) {
        /* the first kill takes the leader, the second the standby; then the leader two times in three */
        unsigned kills = f.faults[KILL_LEADER] + f.faults[KILL_STANDBY];
        bool leader = kills == 0 || (kills > 1 && dice(3) != 0);
        s->kill_op = now + (kill_operator(leader) ? (18 + dice(9)) * FG_NS_PER_S : FG_NS_PER_S);
    }
    if (now >= s->kill_agent)
        s->kill_agent = now + (kill_agent() ? (12 + dice(9)) * FG_NS_PER_S : FG_NS_PER_S);
    if (now >= s->kill_kubelets)
        s->kill_kubelets = now + (kill_kubelets() ? (60 + dice(31)) * FG_NS_PER_S : FG_NS_PER_S);
    if (!f.node_lost && now >= s->node_loss)
        s->node_loss = lose_node() ? UINT64_MAX : now + FG_NS_PER_S;
    if (now >= s->impostor)
        s->impostor = now + (plant_impostor() ? IMPOSTOR_S * FG_NS_PER_S : 2 * FG_NS_PER_S);
    if (now >= s->sample) {
        sample_running();
        resolve_impostors();
        watch_kubelets();
        watch_node();
        s->sample = now + FG_NS_PER_S;
    }
    if (now >= s->progress) {
        printf("# chaos %3.0f s: %zu pods created, %zu bound, %zu running at most\n",
               (double)(now - s->start) / 1e9, chaos_watch_created(f.watch), chaos_watch_bound(f.watch),
               f.peak_running);
        fflush(stdout);
        s->progress = now + 30 * FG_NS_PER_S;
    }
    if (now >= s->scrape) {
        chaos_agents_scrape(f.agents, &e.sim);
        note_restarts(f.restarts[0], OPERATOR_SELECTOR);
        note_restarts(f.restarts[1], CHAOS_AGENT_SELECTOR);
        s->scrape = now + 2 * FG_NS_PER_S;
    }
}

static void test_chaos(void **state)
{
    (void)state;
    uint64_t now = fg_clock_mono_ns(), end = now + (uint64_t)f.chaos_s * FG_NS_PER_S;
    struct schedule s = {
        .start = now, .progress = now + 30 * FG_NS_PER_S, .wave = now, .api = now + 2 * FG_NS_PER_S,
        .kill_op = now + (10 + dice(10)) * FG_NS_PER_S,
        .kill_agent = now + (8 + dice(6)) * FG_NS_PER_S, .kill_kubelets = now + KUBELETS_FIRST_S * FG_NS_PER_S,
        .node_loss = now + (uint64_t)f.chaos_s * NODE_LOSS_PERCENT / 100 * FG_NS_PER_S,
        .impostor = now + 15 * FG_NS_PER_S, .sample = now, .scrape = now,
    };
    unsigned rounds = 0;
    for (; now < end; now = fg_clock_mono_ns()) {
        chaos_turn(&s, now, &rounds);
        pause_ms(100);
    }
    if (fg_e2e_fault(e.sim.client, "fail?count=0") != FG_OK || fg_e2e_fault(e.sim.client, "latency?ms=0") != FG_OK)
        fail_msg("cannot disarm the last fault");
    f.chaos_end_ns = fg_clock_mono_ns();
    for (int k = 0; k < NFAULTS; k++)
        if (!f.faults[k])
            fail_msg("no fault of kind \"%s\" was injected", fault_names[k]);
    if (f.nimpostors < CHAOS_FORGERIES)
        fail_msg("only %zu impostors were planted", f.nimpostors);
}

/* ---- 4. converged ---- */

struct settle {
    size_t running, pending;
    char why[512];            /* what the first pod that is not running looks like */
};

/* The live capacity pod called name on node holding GPU uuid, among the capacity pods l. */
static bool held(json_object *l, const char *name, const char *node, const char *uuid)
{
    json_object *items = fg_json_get(l, "items", NULL);
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        json_object *c = json_object_array_get_idx(items, i);
        if (fg_str_eq(fg_json_get_str(c, "metadata", "name", NULL), name))
            return share_live(c) && fg_str_eq(fg_json_get_str(c, "status", "phase", NULL), "Running") &&
                   fg_str_eq(fg_json_get_str(c, "spec", "nodeName", NULL), node) &&
                   fg_str_eq(share_ann(c, FG_ANN_GPU_UUID), uuid);
    }
    return false;
}

/* Judges one live pod of NS against the capacity pods caps; false (why filled) when it neither runs
 * on a held GPU nor waits unbound with a reason. */
static bool judge_pod(json_object *p, json_object *caps, struct settle *s)
{
    const char *node = fg_json_get_str(p, "spec", "nodeName", NULL);
    const char *reason = share_condition(p, "PodScheduled", "reason");
    bool waiting = fg_str_eq(share_condition(p, "PodScheduled", "status"), "False") && reason && *reason;
    if (node && !fg_str_eq(node, f.doomed) && fg_str_eq(fg_json_get_str(p, "status", "phase", NULL), "Running") &&
        share_ready(p) && held(caps, share_ann(p, FG_ANN_CAPACITY_POD), node, share_ann(p, FG_ANN_GPU_UUID))) {
        s->running++;
        return true;
    }
    if (!node && waiting && fg_str_eq(fg_json_get_str(p, "spec", "schedulerName", NULL), FG_SCHEDULER_NAME)) {
        s->pending++;
        if (!s->why[0])
            snprintf(s->why, sizeof s->why, "pod %s waits: %s", fg_json_get_str(p, "metadata", "name", NULL), reason);
        return true;
    }
    snprintf(s->why, sizeof s->why, "pod %s: scheduler %s, node %s, phase %s, PodScheduled reason %s, capacity pod %s",
             fg_json_get_str(p, "metadata", "name", NULL), fg_json_get_str(p, "spec", "schedulerName", NULL),
             node ? node : "none", fg_json_get_str(p, "status", "phase", NULL), reason ? reason : "none",
             share_ann(p, FG_ANN_CAPACITY_POD) ? share_ann(p, FG_ANN_CAPACITY_POD) : "none");
    return false;
}

/* Every live pod of NS runs Ready on a held GPU (none is left waiting: the last sizes fit the GPUs
 * left with room to spare), none is on the node that went, and each workload has the pods it asks
 * for. */
static bool converged(void *ud)
{
    struct settle *s = ud;
    memset(s, 0, sizeof *s);
    json_object *pods = share_list(&e.sim, &fg_kube_pods, NS, NULL);
    json_object *caps = share_list(&e.sim, &fg_kube_pods, SYSTEM_NS, FG_LABEL_ROLE "=" FG_ROLE_CAPACITY);
    json_object *items = fg_json_get(pods, "items", NULL);
    size_t live[NWORKLOADS] = { 0 };
    bool ok = pods && caps;
    for (size_t i = 0; ok && i < fg_json_array_len(items); i++) {
        json_object *p = fg_json_at(items, i);
        if (!share_live(p))
            continue;
        for (size_t w = 0; w < NWORKLOADS; w++)
            live[w] += fg_str_eq(fg_json_get_str(p, "metadata", "labels", "app", NULL), workloads[w].name);
        ok = judge_pod(p, caps, s);
    }
    for (size_t w = 0; ok && w < NWORKLOADS; w++)
        if (live[w] != (size_t)f.replicas[w]) {
            snprintf(s->why, sizeof s->why, "%s has %zu live pods, not %d", workloads[w].name, live[w], f.replicas[w]);
            ok = false;
        }
    json_object_put(pods);
    json_object_put(caps);
    return ok && s->pending == 0;
}

/* converged, saying every 15 s what it waits for. */
static bool converged_said(void *ud)
{
    static uint64_t said;
    struct settle *s = ud;
    bool ok = converged(ud);
    if (!ok && fg_clock_mono_ns() - said >= 15 * FG_NS_PER_S) {
        said = fg_clock_mono_ns();
        printf("# converging %.0f s: %zu running, %zu waiting; %s\n", since_s(f.chaos_end_ns), s->running, s->pending,
               s->why);
        fflush(stdout);
    }
    return ok;
}

static void test_converge(void **state)
{
    (void)state;
    wave(true);
    struct settle s;
    bool ok = share_eventually(converged_said, &s, CONVERGE_S);
    f.converge_s = since_s(f.chaos_end_ns);
    f.running_end = s.running;
    if (!ok) {
        char what[640];
        snprintf(what, sizeof what, "the cluster did not converge within %d s once the faults stopped (%zu running, "
                 "%zu waiting): %s", CONVERGE_S, s.running, s.pending, s.why);
        share_show_and_fail(&e.sim, what);
    }
    printf("# converged %.1f s after the last fault: %zu pods running\n", f.converge_s, s.running);
    assert_true(share_nodes(&e.sim) == GPU_NODES - 1);
}

/* ---- 5. what must hold afterwards ---- */

/* Live pods among pods naming capacity pod name. */
static size_t tenants_of(json_object *pods, const char *name)
{
    json_object *items = fg_json_get(pods, "items", NULL);
    size_t n = 0;
    for (size_t j = 0; j < fg_json_array_len(items); j++)
        n += share_live(fg_json_at(items, j)) && fg_str_eq(share_ann(fg_json_at(items, j), FG_ANN_CAPACITY_POD), name);
    return n;
}

/* Every capacity pod is Running and holds at least one live tenant of NS; why says which does not. */
static bool no_idle_capacity(void *ud)
{
    char *why = ud;
    json_object *caps = share_list(&e.sim, &fg_kube_pods, SYSTEM_NS, FG_LABEL_ROLE "=" FG_ROLE_CAPACITY);
    json_object *pods = share_list(&e.sim, &fg_kube_pods, NS, NULL), *citems = fg_json_get(caps, "items", NULL);
    bool ok = caps && pods;
    f.capacity_end = 0;
    for (size_t i = 0; ok && i < fg_json_array_len(citems); i++) {
        json_object *c = fg_json_at(citems, i);
        const char *name = fg_json_get_str(c, "metadata", "name", NULL);
        size_t tenants = tenants_of(pods, name);
        ok = share_live(c) && fg_str_eq(fg_json_get_str(c, "status", "phase", NULL), "Running") && tenants > 0;
        if (!ok)
            snprintf(why, 256, "capacity pod %s: phase %s, %s, %zu tenants", name,
                     fg_json_get_str(c, "status", "phase", NULL),
                     fg_json_get(c, "metadata", "deletionTimestamp", NULL) ? "being deleted" : "not being deleted",
                     tenants);
        f.capacity_end++;
    }
    json_object_put(caps);
    json_object_put(pods);
    return ok;
}

static void test_no_capacity_leaked(void **state)
{
    (void)state;
    char why[256] = "the API did not answer";
    if (!share_eventually(no_idle_capacity, why, LEAK_S)) {
        char what[400];
        snprintf(what, sizeof what, "a capacity pod is left holding no tenant %d s after convergence: %s", LEAK_S, why);
        share_show_and_fail(&e.sim, what);
    }
}

/* Events in NS of reason (and about object `about`, when not NULL): how many, and the first's object
 * and message into first (n bytes); -1 when the API did not answer. */
static long churn_events(const char *reason, const char *about, char *first, size_t n)
{
    char sel[300];
    struct fg_buf query;
    fg_buf_init(&query, 0);
    snprintf(sel, sizeof sel, "reason=%s%s%s", reason, about ? ",involvedObject.name=" : "", about ? about : "");
    if (fg_kube_query_add(&query, "fieldSelector", sel) != FG_OK)
        fail();
    char *path = fg_kube_path(&fg_kube_events, NS, NULL, NULL, fg_buf_str(&query));
    fg_buf_cleanup(&query);
    json_object *l = NULL;
    long count = -1;
    for (int attempt = 0; count < 0 && attempt < 50; attempt++) {
        if (fg_kube_get(e.sim.client, path, &l, NULL) == FG_OK) {
            json_object *ev = fg_json_at(fg_json_get(l, "items", NULL), 0);
            count = (long)fg_json_array_len(fg_json_get(l, "items", NULL));
            snprintf(first, n, "%s: %s", ev ? fg_json_get_str(ev, "involvedObject", "name", NULL) : "",
                     ev ? fg_json_get_str(ev, "message", NULL) : "");
        } else {
            pause_ms(100);
        }
        json_object_put(l);
        l = NULL;
    }
    free(path);
    return count;
}

/* Every history is kept, and those of workloads with pods grew past their note. */
struct history_wait {
    char why[320];
};

static bool histories_kept(void *ud)
{
    struct history_wait *w = ud;
    f.histories_kept = 0;
    for (size_t i = 0; i < NWORKLOADS; i++) {
        struct chaos_history now;
        char why[256];
        if (!chaos_history_read(&e.sim, NS, workloads[i].name, &now)) {
            snprintf(w->why, sizeof w->why, "the API did not answer");
            return false;
        }
        if (!chaos_history_kept(&f.before[i], &now, why, sizeof why)) {
            snprintf(w->why, sizeof w->why, "GPUWorkload deployment-%s lost its history: %s", workloads[i].name, why);
            return false;
        }
        f.histories_kept++;
        if (f.replicas[i] > 0 && now.samples <= f.before[i].samples) {
            snprintf(w->why, sizeof w->why, "the history of deployment-%s does not grow (%lld samples, as before the "
                     "faults)", workloads[i].name, (long long)now.samples);
            return false;
        }
    }
    return true;
}

static long pinned_rolls;

static void test_histories(void **state)
{
    (void)state;
    struct history_wait w = { "" };
    if (!share_eventually(histories_kept, &w, HISTORY_S))
        fail_msg("%s", w.why);
    /* the pinned workload has a recommendation by now, and its pods another allocation: none may be
     * evicted to take it, since the replacement gets the fixed fraction again */
    char first[512];
    pinned_rolls = churn_events("RollingToNewAllocation", "deployment-" PINNED, first, sizeof first);
    assert_true(pinned_rolls >= 0);
    if (pinned_rolls > 0)
        fail_msg("the pods of " PINNED ", whose fraction is fixed, were rolled %ld times towards the "
                 "recommendation (%s)", pinned_rolls, first);
}

static bool impostors_resolved(void *ud)
{
    (void)ud;
    bool all = true;
    for (size_t i = 0; i < f.nimpostors; i++)
        all = chaos_impostor_resolve(&e.sim, IMPOSTOR_NS, &f.impostors[i]) && all;
    return all;
}

/* The keys that verify grants now, from the operator's Secret. */
static void grant_keys(struct fg_grant_keys *keys)
{
    char *path = fg_kube_path(&fg_kube_secrets, SYSTEM_NS, FG_SECRET_GRANT_KEY, NULL, NULL);
    json_object *secret = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_kube_get(e.sim.client, path, &secret, NULL) != FG_OK || fg_grant_keys_from_secret(secret, keys, msg) != FG_OK)
        fail_msg("cannot read the grant key: %s", msg);
    json_object_put(secret);
    free(path);
}

/* The GPU the kubelet gave pod p's containers for its share, from what the device plugin answered
 * (devices.json in the pod's directory on its node; NVIDIA_VISIBLE_DEVICES, the nodes' envvar form),
 * into gpu (n bytes); false when there is none. */
static bool given_gpu(json_object *p, char *gpu, size_t n)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/nodes/%s/pods/" NS "_%s_%s/devices.json", e.sim.work,
             fg_json_get_str(p, "spec", "nodeName", NULL), fg_json_get_str(p, "metadata", "name", NULL),
             fg_json_get_str(p, "metadata", "uid", NULL));
    json_object *d = json_object_from_file(path);
    bool found = false;
    for (size_t i = 0; i < fg_json_array_len(d) && !found; i++) {
        json_object *r = fg_json_at(d, i), *env = fg_json_get(r, "env", NULL);
        if (!fg_str_eq(fg_json_get_str(r, "resource", NULL), FG_RES_GPU_SHARE))
            continue;
        for (size_t j = 0; j < fg_json_array_len(env) && !found; j++) {
            const char *v = json_object_get_string(fg_json_at(env, j));
            if (v && fg_str_has_prefix(v, "NVIDIA_VISIBLE_DEVICES=")) {
                snprintf(gpu, n, "%s", v + strlen("NVIDIA_VISIBLE_DEVICES="));
                found = true;
            }
        }
    }
    json_object_put(d);
    return found;
}

/* Whether running tenant p holds a grant that verifies under keys and was given the GPU it names; why
 * (n bytes) says otherwise. */
static bool tenant_granted(json_object *p, const struct fg_grant_keys *keys, char *why, size_t n)
{
    struct fg_grant g;
    char msg[FG_ERRMSG_MAX] = "", gpu[128] = "";
    const char *value = fg_grant_of_pod(p, &g, msg);
    enum fg_grant_verdict v = value ? fg_grant_verify(&g, value, keys) : FG_GRANT_MISSING;
    if (v != FG_GRANT_VALID && v != FG_GRANT_VALID_PREVIOUS)
        snprintf(why, n, "pod %s runs with a grant that is %s %s", fg_json_get_str(p, "metadata", "name", NULL),
                 fg_grant_verdict_name(v), msg);
    else if (!given_gpu(p, gpu, sizeof gpu) || !fg_str_eq(gpu, g.gpu_uuid))
        snprintf(why, n, "pod %s, granted %s, runs with %s from the device plugin",
                 fg_json_get_str(p, "metadata", "name", NULL), g.gpu_uuid, gpu[0] ? gpu : "no GPU");
    else
        return true;
    return false;
}

/* Every tenant of NS running now holds a grant that verifies with fracgpu's key, and was given the
 * GPU its grant names; returns how many. */
static size_t tenants_verified(void)
{
    struct fg_grant_keys keys;
    grant_keys(&keys);
    json_object *l = share_list(&e.sim, &fg_kube_pods, NS, NULL), *items = fg_json_get(l, "items", NULL);
    size_t n = 0;
    char why[512] = "";
    for (size_t i = 0; l && i < fg_json_array_len(items) && !why[0]; i++) {
        json_object *p = fg_json_at(items, i);
        if (share_live(p) && fg_str_eq(fg_json_get_str(p, "status", "phase", NULL), "Running"))
            n += tenant_granted(p, &keys, why, sizeof why);
    }
    json_object_put(l);
    memset(&keys, 0, sizeof keys);
    if (!l)
        fail_msg("the tenants could not be listed");
    if (why[0])
        fail_msg("%s", why);
    return n;
}

/* Impostors by outcome, into by[]. */
static void impostor_outcomes(size_t by[CHAOS_VANISHED + 1])
{
    memset(by, 0, sizeof(size_t) * (CHAOS_VANISHED + 1));
    for (size_t i = 0; i < f.nimpostors; i++) {
        const struct chaos_impostor *imp = &f.impostors[i];
        struct chaos_impostor_seen seen;
        chaos_watch_impostor(f.watch, imp->uid, &seen);
        printf("# impostor %s (%s grant of %s, on %s): %s%s%s%s\n", imp->name, chaos_forgery_name(imp->kind),
               imp->victim, imp->node, chaos_outcome_name(imp->outcome), seen.ran ? ", after running" : "",
               imp->detail[0] ? " — " : "", imp->detail);
        by[imp->outcome]++;
        if (imp->outcome == CHAOS_VANISHED || imp->outcome == CHAOS_UNRESOLVED)
            fail_msg("impostor %s was neither refused nor removed by its node agent: %s", imp->name,
                     chaos_outcome_name(imp->outcome));
        if (seen.ran && imp->outcome != CHAOS_REMOVED)
            fail_msg("impostor %s ran, and was not removed", imp->name);
    }
}

static size_t impostors_by[CHAOS_VANISHED + 1];
static size_t tenants_checked;
static long tenants_refused, tenants_swapped;

static void test_no_forged_grant(void **state)
{
    (void)state;
    share_eventually(impostors_resolved, NULL, IMPOSTOR_WAIT_S);
    chaos_agents_scrape(f.agents, &e.sim);
    impostor_outcomes(impostors_by);
    struct chaos_grants g;
    chaos_agents_totals(f.agents, &g);
    /* the agents of the impostors' nodes were spared until read after each outcome */
    if (g.refused < (double)impostors_by[CHAOS_REFUSED_GRANT] || g.evictions < (double)impostors_by[CHAOS_REMOVED])
        fail_msg("the node agents counted %.0f refusals and %.0f removals, for %zu impostors refused and %zu removed",
                 g.refused, g.evictions, impostors_by[CHAOS_REFUSED_GRANT], impostors_by[CHAOS_REMOVED]);
    tenants_checked = tenants_verified();
    assert_true(tenants_checked > 0);   /* every workload kept pods: the check above judged some */
    /* no tenant got another pod's reply: the scheduler binds a node's tenants of different replies
     * one admission apart, so the kubelets' admission order, restarts and all, cannot mix them up */
    char first[512];
    tenants_swapped = churn_events("GrantViolation", NULL, first, sizeof first);
    if (tenants_swapped)
        fail_msg("%ld tenants were removed by their node agent, the first %s", tenants_swapped, first);
    tenants_refused = churn_events("UnexpectedAdmissionError", NULL, first, sizeof first);
    assert_true(tenants_refused >= 0);
}

/* ---- 6. the figures ---- */

static void test_figures(void **state)
{
    (void)state;
    note_restarts(f.restarts[0], OPERATOR_SELECTOR);
    note_restarts(f.restarts[1], CHAOS_AGENT_SELECTOR);
    watch_kubelets();
    unsigned op_restarts = restarts_seen(f.restarts[0]), agent_restarts = restarts_seen(f.restarts[1]);
    size_t created = chaos_watch_created(f.watch), bound = chaos_watch_bound(f.watch);
    struct fg_checker_stats cs;
    fg_checker_stats(e.checker, &cs);
    struct chaos_grants g;
    chaos_agents_totals(f.agents, &g);
    printf("e2e_sim_faults: seed %u, chaos %u s: %zu pods created (%zu bound by fracgpu, at most %zu running at "
           "once, %zu waves); faults:", f.seed, f.chaos_s, created, bound, f.peak_running, f.waves);
    for (int k = 0; k < NFAULTS; k++)
        printf(" %u %s%s", f.faults[k], fault_names[k], k + 1 < NFAULTS ? "," : "");
    printf(" (%u requests answered 429, %u answered 500, delays up to %u ms; %zu pods displaced), %zu impostors "
           "(%zu refused, %zu removed); restarts: operator %u, node agent %u, kubelets %u; grants %.0f granted, "
           "%.0f refused, %.0f removed; %ld tenants failed at admission, %ld removed holding another's reply; "
           "violations %llu (checker %llu events); converged %.1f s after the last fault (%zu running, %zu "
           "capacity pods, histories kept %u/%zu, %zu running grants verified); phases install %.0f s, "
           "warm-up %.0f s\n",
           f.refused_429, f.refused_500, f.delay_ms_max, f.displaced, f.nimpostors, impostors_by[CHAOS_REFUSED_GRANT] +
           impostors_by[CHAOS_REFUSED_OTHER], impostors_by[CHAOS_REMOVED], op_restarts, agent_restarts,
           f.kubelets_restarts, g.granted, g.refused, g.evictions, tenants_refused, tenants_swapped,
           (unsigned long long)cs.violations, (unsigned long long)cs.events, f.converge_s, f.running_end,
           f.capacity_end, f.histories_kept, NWORKLOADS, tenants_checked, f.install_s, f.warmup_s);
    fflush(stdout);
    assert_true(created >= (size_t)MIN_PODS_PER_MIN * f.chaos_s / 60);
    assert_true(op_restarts >= f.faults[KILL_LEADER] + f.faults[KILL_STANDBY]);   /* every kill a crash seen */
    assert_true(agent_restarts >= f.faults[KILL_AGENT]);
    assert_int_equal(f.kubelets_restarts, f.faults[KILL_KUBELETS]);
    assert_true(cs.events >= EVENTS_PER_POD * created);
    assert_int_equal(cs.violations, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_install),
        cmocka_unit_test(test_warm_up),
        cmocka_unit_test(test_chaos),
        cmocka_unit_test(test_converge),
        cmocka_unit_test(test_no_capacity_leaked),
        cmocka_unit_test(test_histories),
        cmocka_unit_test(test_no_forged_grant),
        cmocka_unit_test(test_figures),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
