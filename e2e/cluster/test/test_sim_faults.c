/*
 * e2e_sim_faults — GPU sharing that stays correct while the things around it fail.
 *
 * fracgpu's scheduler places tenants on GPUs held by capacity pods; whatever happens to the operator
 * or to the API server, no GPU may be given more than it has and no tenant may run on a GPU nobody
 * holds. This test makes things happen to both while pods come and go by the hundred, and lets an
 * independent checker (e2e/checker), watching every pod through the same faulty API, judge after
 * every event:
 *
 *   1. a simulated cluster (testdata/faults-e2e.yaml: four nodes of eight GPUs) with fracgpu
 *      installed, its capacity idle grace 3 s, so that idle GPUs are given back and held again;
 *   2. eight Deployments with fixed fractions from 100 to 500 milli and 4 to 36 GiB are scaled to
 *      random sizes every 10 s for two and a half minutes, at times beyond what the GPUs hold;
 *      meanwhile an operator replica's process is killed (SIGKILL, the leader more often than the
 *      standby) every 18 to 26 s and the kubelet restarts it, and every 2 to 5 s the API server
 *      drops every watch, expires every watch (410), or answers the next 10 to 40 requests,
 *      whoever sends them, with 429 or 500;
 *   3. the faults stop and the Deployments shrink to a size the GPUs hold with room to spare:
 *      every pod left must run Ready on the GPU of a live capacity pod, or wait unbound with a
 *      reason, and the checker must have found nothing in thousands of events.
 * The dice are seeded: the seed is printed first, and FG_FAULTS_SEED=<seed> draws the same sizes
 * and faults again (their timing against the cluster's stays the machine's own).
 */
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
#include "e2e/cluster/pidfile.h"
#include "e2e/cluster/test/share_fixture.h"
#include "e2e/tests/harness.h"
#include "reconcilers/podcontract.h"

#define NS "churn"
#define SYSTEM_NS SHARE_SYSTEM_NS
#define OPERATOR_SELECTOR "app.kubernetes.io/component=operator"
#define GPU_NODES 4

#define CHURN_S 150           /* how long pods churn under faults */
#define WAVE_S 10             /* between two rescalings */
#define SETTLE_S 120          /* for the cluster to settle once the faults stop */

/* Floors that show the run did what it says, below what nine runs measured (created 164–640, bound
 * 68–554): the draws and the leader kills decide. Each leader killed is a lease's 15 s without a
 * scheduler, and a run may kill three leaders or six in its 150 s (one seed bound 186 pods with three
 * and 68 with six); a killed replica's webhook endpoint is gone until the Service moves. */
#define MIN_PODS 120          /* pods created */
#define MIN_BOUND 50          /* pods fracgpu's scheduler bound */
#define MIN_KILLS 4           /* operator processes killed */
#define EVENTS_PER_POD 3      /* pod events the checker judged, per pod created */

struct workload {
    const char *name;
    unsigned milli;
    const char *memory;
    int max;                  /* replicas at most; a third of it at most once the faults stop */
};

/* Together at their largest about 40 GPUs of compute: more than the 32 there are. */
static const struct workload workloads[] = {
    { "w100", 100, "4Gi", 40 },  { "w150", 150, "6Gi", 30 },  { "w200", 200, "8Gi", 30 },
    { "w250", 250, "10Gi", 24 }, { "w300", 300, "16Gi", 20 }, { "w400", 400, "12Gi", 16 },
    { "w500", 500, "20Gi", 12 }, { "wmem", 100, "36Gi", 10 },
};
#define NWORKLOADS (sizeof workloads / sizeof *workloads)

enum fault { KILL_LEADER, KILL_STANDBY, DROP_WATCHES, EXPIRE_WATCHES, BURST_429, BURST_500, NFAULTS };
static const char *const fault_names[NFAULTS] = { "leader killed", "standby killed", "watches dropped",
                                                  "watches expired", "429 bursts", "500 bursts" };

static struct share_env e;

static struct {
    unsigned seed, rng;
    json_object *seen;        /* UID -> true: every pod of NS seen */
    json_object *bound;       /* UID -> true: those seen bound by fracgpu's scheduler */
    size_t peak_running, waves;
    unsigned faults[NFAULTS];
    unsigned refused;         /* requests the bursts were armed to refuse */
    unsigned kills;           /* both kinds */
    pid_t last_killed;
    int replicas[NWORKLOADS];
} f;

static unsigned dice(unsigned n)
{
    return (unsigned)rand_r(&f.rng) % n;
}

static void pause_ms(unsigned ms)
{
    nanosleep(&(struct timespec){ ms / 1000, (long)(ms % 1000) * 1000000L }, NULL);
}

/* ---- setup ---- */

static int setup(void **state)
{
    (void)state;
    const char *s = getenv("FG_FAULTS_SEED");
    f.seed = s && *s ? (unsigned)strtoul(s, NULL, 10) : (unsigned)fg_clock_wall_ms();
    f.rng = f.seed;
    printf("e2e_sim_faults: seed %u (FG_FAULTS_SEED=%u draws the same again)\n", f.seed, f.seed);
    fflush(stdout);
    f.seen = json_object_new_object();
    f.bound = json_object_new_object();
    int rc = share_setup(&e, "faults-e2e.yaml", "e2e_sim_faults");
    fg_log_set_level(FG_LOG_ERROR);   /* the checker's watches end by the hundred here; violations stay errors */
    return rc;
}

static int teardown(void **state)
{
    (void)state;
    json_object_put(f.seen);
    json_object_put(f.bound);
    return share_teardown(&e);
}

/* ---- 1. install, and the workloads at zero ---- */

static void test_install(void **state)
{
    (void)state;
    static const char *const args[] = { "--capacity-idle-grace=3s", NULL };
    share_install(&e, args, GPU_NODES, NS);
    struct fg_buf yaml, out;
    fg_buf_init(&yaml, 0);
    fg_buf_init(&out, 0);
    for (size_t i = 0; i < NWORKLOADS; i++) {
        const struct workload *w = &workloads[i];
        if (fg_buf_printf(&yaml,
                          "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n  namespace: " NS "\n"
                          "  annotations: {fracgpu.io/automate: \"true\", fracgpu.io/gpu-compute: \"%u\", "
                          "fracgpu.io/gpu-memory: %s}\n"
                          "spec:\n  replicas: 0\n  selector:\n    matchLabels: {app: %s}\n  template:\n"
                          "    metadata:\n      labels: {app: %s, fracgpu.io/automate: \"true\"}\n    spec:\n"
                          "      containers:\n        - name: main\n          image: registry.example.com/vllm:1\n"
                          "          resources: {requests: {cpu: 50m, memory: 128Mi}, "
                          "limits: {nvidia.com/gpu: \"1\"}}\n",
                          w->name, w->milli, w->memory, w->name, w->name) != FG_OK)
            fail();
    }
    int rc = fg_kubectl_run(&e.sim.k, &out, fg_buf_str(&yaml), "apply", "-f", "-", NULL);
    if (rc != 0)
        fail_msg("kubectl apply of the workloads: exit %d\n%s", rc, fg_buf_str(&out));
    fg_buf_cleanup(&yaml);
    fg_buf_cleanup(&out);
}

/* ---- 2. churn under faults ---- */

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

/* Every workload to a random size: up to its largest, or up to a third of it for the last wave. */
static void wave(bool last)
{
    for (size_t i = 0; i < NWORKLOADS; i++)
        scale(i, (int)dice((unsigned)(last ? workloads[i].max / 3 : workloads[i].max) + 1));
    f.waves++;
}

/* Notes every pod of NS that the API shows now; a list refused by a burst is skipped. */
static void sample(void)
{
    json_object *l = share_list(&e.sim, &fg_kube_pods, NS, NULL), *items = fg_json_get(l, "items", NULL);
    size_t running = 0;
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        json_object *p = json_object_array_get_idx(items, i);
        const char *uid = fg_json_get_str(p, "metadata", "uid", NULL);
        if (!uid)
            continue;
        json_object_object_add(f.seen, uid, json_object_new_boolean(1));
        if (fg_json_get_str(p, "spec", "nodeName", NULL) && share_ann(p, FG_ANN_CAPACITY_POD))
            json_object_object_add(f.bound, uid, json_object_new_boolean(1));
        running += fg_str_eq(fg_json_get_str(p, "status", "phase", NULL), "Running") && share_ready(p);
    }
    if (running > f.peak_running)
        f.peak_running = running;
    json_object_put(l);
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
 * not; false when there is no such replica with a process running now, or the API could not say. */
static bool kill_operator(bool leader)
{
    char *path = fg_kube_path(&fg_kube_leases, SYSTEM_NS, "fracgpu-operator", NULL, NULL);
    json_object *lease = NULL;
    enum fg_err err = fg_kube_get(e.sim.client, path, &lease, NULL);
    free(path);
    json_object *l = err ? NULL : share_list(&e.sim, &fg_kube_pods, SYSTEM_NS, OPERATOR_SELECTOR);
    const char *holder = leader_identity(lease);
    pid_t victim = 0;
    for (size_t i = 0; i < fg_json_array_len(fg_json_get(l, "items", NULL)) && !victim; i++) {
        json_object *p = json_object_array_get_idx(fg_json_get(l, "items", NULL), i);
        if (share_live(p) && fg_json_get_str(p, "spec", "nodeName", NULL) && holds_lease(p, holder) == leader)
            victim = operator_process(p);
    }
    json_object_put(l);
    json_object_put(lease);
    if (!victim || victim == f.last_killed || kill(victim, SIGKILL) != 0)
        return false;
    f.last_killed = victim;
    f.kills++;
    f.faults[leader ? KILL_LEADER : KILL_STANDBY]++;
    return true;
}

/* One fault of the API server's; the first four rounds go through every kind. */
static void api_fault(unsigned round)
{
    enum fault k = round < 4 ? (enum fault)(DROP_WATCHES + round) : (enum fault)(DROP_WATCHES + dice(4));
    unsigned count = 10 + dice(31);
    char control[96];
    if (k == DROP_WATCHES || k == EXPIRE_WATCHES)
        snprintf(control, sizeof control, "%s", k == DROP_WATCHES ? "drop-watches" : "expire-watches");
    else
        snprintf(control, sizeof control, "fail?count=%u&code=%d&retryAfter=1", count, k == BURST_429 ? 429 : 500);
    if (fg_e2e_fault(e.sim.client, control) != FG_OK)
        fail_msg("the API server refused the fault %s", control);
    f.faults[k]++;
    f.refused += k == BURST_429 || k == BURST_500 ? count : 0;
}

static void test_churn(void **state)
{
    (void)state;
    uint64_t now = fg_clock_mono_ns(), end = now + CHURN_S * FG_NS_PER_S;
    uint64_t next_wave = now, next_sample = now, next_fault = now + 2 * FG_NS_PER_S;
    uint64_t next_kill = now + (10 + dice(10)) * FG_NS_PER_S;
    unsigned rounds = 0;
    for (; now < end; now = fg_clock_mono_ns()) {
        if (now >= next_wave) {
            wave(false);
            next_wave += WAVE_S * FG_NS_PER_S;
        }
        if (now >= next_fault) {
            api_fault(rounds++);
            next_fault = now + (2000 + dice(3000)) * FG_NS_PER_MS;
        }
        if (now >= next_kill) {
            /* the first kill takes the leader, the second the standby; then the leader two times in three */
            bool leader = f.kills == 0 || (f.kills > 1 && dice(3) != 0);
            next_kill = now + (kill_operator(leader) ? (18 + dice(9)) * FG_NS_PER_S : FG_NS_PER_S);
        }
        if (now >= next_sample) {
            sample();
            next_sample = now + FG_NS_PER_S;
        }
        pause_ms(100);
    }
    if (fg_e2e_fault(e.sim.client, "fail?count=0") != FG_OK)
        fail_msg("cannot disarm the last burst");
    for (int k = 0; k < NFAULTS; k++)
        if (!f.faults[k])
            fail_msg("no fault of kind \"%s\" was injected", fault_names[k]);
    assert_true(f.kills >= MIN_KILLS);
}

/* ---- 3. settled ---- */

struct settle {
    size_t running, pending;
    char why[512];            /* what the first pod that is neither looks like */
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

/* Every live pod of NS runs Ready on a held GPU or waits unbound with a reason, and each workload
 * has the pods it asks for. */
static bool settled(void *ud)
{
    struct settle *s = ud;
    memset(s, 0, sizeof *s);
    json_object *pods = share_list(&e.sim, &fg_kube_pods, NS, NULL);
    json_object *caps = share_list(&e.sim, &fg_kube_pods, SYSTEM_NS, FG_LABEL_ROLE "=" FG_ROLE_CAPACITY);
    json_object *items = fg_json_get(pods, "items", NULL);
    size_t live[NWORKLOADS] = { 0 };
    bool ok = pods && caps;
    for (size_t i = 0; ok && i < fg_json_array_len(items); i++) {
        json_object *p = json_object_array_get_idx(items, i);
        if (!share_live(p))
            continue;
        for (size_t w = 0; w < NWORKLOADS; w++)
            live[w] += fg_str_eq(fg_json_get_str(p, "metadata", "labels", "app", NULL), workloads[w].name);
        const char *node = fg_json_get_str(p, "spec", "nodeName", NULL);
        const char *reason = share_condition(p, "PodScheduled", "reason");
        bool waiting = fg_str_eq(share_condition(p, "PodScheduled", "status"), "False") && reason && *reason;
        if (node && fg_str_eq(fg_json_get_str(p, "status", "phase", NULL), "Running") && share_ready(p) &&
            held(caps, share_ann(p, FG_ANN_CAPACITY_POD), node, share_ann(p, FG_ANN_GPU_UUID)))
            s->running++;
        else if (!node && waiting &&
                 fg_str_eq(fg_json_get_str(p, "spec", "schedulerName", NULL), FG_SCHEDULER_NAME))
            s->pending++;
        else {
            snprintf(s->why, sizeof s->why, "pod %s: scheduler %s, node %s, phase %s, PodScheduled reason %s, "
                     "capacity pod %s", fg_json_get_str(p, "metadata", "name", NULL),
                     fg_json_get_str(p, "spec", "schedulerName", NULL), node ? node : "none",
                     fg_json_get_str(p, "status", "phase", NULL), reason ? reason : "none",
                     share_ann(p, FG_ANN_CAPACITY_POD) ? share_ann(p, FG_ANN_CAPACITY_POD) : "none");
            ok = false;
        }
    }
    for (size_t w = 0; ok && w < NWORKLOADS; w++)
        if (live[w] != (size_t)f.replicas[w]) {
            snprintf(s->why, sizeof s->why, "%s has %zu live pods, not %d", workloads[w].name, live[w], f.replicas[w]);
            ok = false;
        }
    json_object_put(pods);
    json_object_put(caps);
    return ok;
}

/* Restarts of the operator's containers, as their pods' statuses count them. */
static unsigned operator_restarts(void)
{
    json_object *l = share_list(&e.sim, &fg_kube_pods, SYSTEM_NS, OPERATOR_SELECTOR);
    json_object *items = fg_json_get(l, "items", NULL);
    int64_t n = 0;
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        int64_t r = 0;
        json_object *cs = fg_json_get(json_object_array_get_idx(items, i), "status", "containerStatuses", NULL);
        if (fg_json_get_int64(fg_json_at(cs, 0), &r, "restartCount", NULL))
            n += r;
    }
    json_object_put(l);
    return (unsigned)n;
}

static void test_settle(void **state)
{
    (void)state;
    wave(true);
    struct settle s;
    bool ok = share_eventually(settled, &s, SETTLE_S);
    sample();
    unsigned restarts = operator_restarts();
    size_t seen = (size_t)json_object_object_length(f.seen), bound = (size_t)json_object_object_length(f.bound);
    struct fg_checker_stats cs;
    fg_checker_stats(e.checker, &cs);
    printf("e2e_sim_faults: seed %u; %zu waves; %zu pods created, %zu bound, at most %zu running at once; "
           "faults:", f.seed, f.waves, seen, bound, f.peak_running);
    for (int k = 0; k < NFAULTS; k++)
        printf(" %u %s%s", f.faults[k], fault_names[k], k + 1 < NFAULTS ? "," : "");
    printf(" (%u requests refused); operator restarts %u; at the end %zu running, %zu waiting; "
           "checker %llu events, %llu violations\n", f.refused, restarts, s.running, s.pending,
           (unsigned long long)cs.events, (unsigned long long)cs.violations);
    fflush(stdout);
    if (!ok) {
        char what[640];
        snprintf(what, sizeof what, "the cluster did not settle within %d s once the faults stopped: %s", SETTLE_S,
                 s.why);
        share_show_and_fail(&e.sim, what);
    }
    assert_true(seen >= MIN_PODS);
    assert_true(bound >= MIN_BOUND);
    assert_true(restarts >= f.kills);   /* every kill was a crash the kubelet saw */
    assert_true(cs.events >= EVENTS_PER_POD * seen);
    assert_int_equal(cs.violations, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_install),
        cmocka_unit_test(test_churn),
        cmocka_unit_test(test_settle),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
