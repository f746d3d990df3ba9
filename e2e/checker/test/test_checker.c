/*
 * Tests of the checker's pure state: synthetic pods in, the invariants judged out, time moved by hand.
 * Compute and memory sums on one GPU against 1000 milli and the capacity pod's MiB ("whole" counting
 * the GPU's whole memory), tenants that stop counting when they end or go, a tenant outliving its
 * capacity pod (gone or terminating) within and past the grace, or whose Node was deleted, a tenant
 * whose GPU or node changes, malformed annotations reported rather than skipped, look-alike capacity
 * pods elsewhere, and a relist judged only once it has been taken in whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/json.h"
#include "e2e/checker/state.h"
#include "reconcilers/allocation.h"
#include "reconcilers/podcontract.h"

#define CAP_NS "fracgpu-system"
#define NODE "node-1"
#define GPU "GPU-11111111-aaaa"
#define GRACE_NS (10 * FG_NS_PER_S)

static struct fg_checker_state *st;
static uint64_t now;

static int setup(void **state)
{
    (void)state;
    struct fg_checker_state_opts o = { .capacity_ns = CAP_NS, .grace_ns = GRACE_NS, .keep = 16 };
    st = fg_checker_state_new(&o);
    now = 1000 * FG_NS_PER_S;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fg_checker_state_free(st);
    return 0;
}

/* A pod of namespace ns named name (uid "uid-<name>"), on node (NULL: unbound), in phase (NULL: none),
 * with the annotations given as key, value, ..., NULL (a NULL value leaves that key out). */
static json_object *pod(const char *ns, const char *name, const char *node, const char *phase, ...)
{
    json_object *p = json_object_new_object();
    json_object *meta = fg_json_ensure_obj(p, "metadata");
    fg_json_set_str(meta, "namespace", ns);
    fg_json_set_str(meta, "name", name);
    char uid[96];
    snprintf(uid, sizeof uid, "uid-%s", name);
    fg_json_set_str(meta, "uid", uid);
    json_object *ann = fg_json_ensure_obj(meta, "annotations");
    va_list ap;
    va_start(ap, phase);
    for (const char *k; (k = va_arg(ap, const char *));) {
        const char *v = va_arg(ap, const char *);
        if (v)
            fg_json_set_str(ann, k, v);
    }
    va_end(ap);
    if (node)
        fg_json_set_str(fg_json_ensure_obj(p, "spec"), "nodeName", node);
    if (phase)
        fg_json_set_str(fg_json_ensure_obj(p, "status"), "phase", phase);
    return p;
}

static void upsert(json_object *p)
{
    fg_checker_state_upsert(st, p, now);
    json_object_put(p);
}

/* A capacity pod in ns (labelled as one) holding GPU uuid with mib MiB for tenants. */
static json_object *capacity_in(const char *ns, const char *name, const char *node, const char *uuid, const char *mib,
                                const char *phase)
{
    json_object *p = pod(ns, name, node, phase, FG_ANN_GPU_UUID, uuid, FG_ANN_GPU_MEMORY_MIB, mib, NULL);
    fg_json_set_str(fg_json_ensure_obj(fg_json_ensure_obj(p, "metadata"), "labels"), FG_LABEL_ROLE, FG_ROLE_CAPACITY);
    return p;
}

static void capacity(const char *name, const char *mib, const char *phase)
{
    upsert(capacity_in(CAP_NS, name, NODE, GPU, mib, phase));
}

static json_object *tenant_on(const char *name, const char *node, const char *uuid, const char *milli, const char *mib,
                              const char *phase)
{
    return pod("default", name, node, phase, FG_ANN_CAPACITY_POD, "cap-0", FG_ANN_GPU_UUID, uuid,
               FG_ANN_COMPUTE_MILLI, milli, FG_ANN_MEMORY_MIB, mib, NULL);
}

/* A tenant of cap-0's GPU. */
static void tenant(const char *name, const char *milli, const char *mib, const char *phase)
{
    upsert(tenant_on(name, NODE, GPU, milli, mib, phase));
}

static void gone(const char *ns, const char *name)
{
    json_object *p = pod(ns, name, NULL, NULL, NULL);
    fg_checker_state_delete(st, p, now);
    json_object_put(p);
}

static struct fg_checker_stats stats(void)
{
    struct fg_checker_stats s;
    fg_checker_state_stats(st, &s);
    return s;
}

static uint64_t violations(void)
{
    return stats().violations;
}

/* The i-th message holds every part given (NULL-terminated). */
static void expect_message(size_t i, ...)
{
    const char *m = fg_checker_state_message(st, i);
    if (!m)
        fail_msg("no violation message %zu", i);
    va_list ap;
    va_start(ap, i);
    for (const char *part; (part = va_arg(ap, const char *));)
        if (!strstr(m, part))
            fail_msg("message %zu lacks \"%s\": %s", i, part, m);
    va_end(ap);
}

static void three_tenants_fit(void **state)
{
    (void)state;
    capacity("cap-0", "40000", "Running");
    tenant("t1", "300", "10000", "Running");
    tenant("t2", "300", "10000", "Running");
    tenant("t3", "300", "10000", "Running");
    struct fg_checker_stats s = stats();
    assert_int_equal(s.violations, 0);
    assert_int_equal(s.events, 4);
    assert_int_equal(s.gpus, 1);
    assert_int_equal(s.max_compute_milli, 900);
    assert_int_equal(s.max_memory_mib, 30000);
    assert_int_equal(s.max_memory_limit_mib, 40000);
}

static void record_gpu(void *ud, const struct fg_checker_gpu *g)
{
    struct fg_checker_gpu *seen = ud;
    assert_int_equal(seen->tenants, 0);   /* one GPU only */
    assert_string_equal(g->node, NODE);    /* the strings are g's for the call only */
    assert_string_equal(g->uuid, GPU);
    *seen = (struct fg_checker_gpu){ NULL, NULL, g->tenants, g->compute_milli, g->memory_mib };
}

/* What the checker sees of each GPU: its counting tenants and their sums ("whole" counts the GPU's). */
static void gpus_listed(void **state)
{
    (void)state;
    capacity("cap-0", "40000", "Running");
    tenant("t1", "300", "10000", "Running");
    tenant("t2", "200", "whole", "Running");
    tenant("t3", "300", "10000", "Succeeded");   /* counts nothing */
    struct fg_checker_gpu g = { 0 };
    fg_checker_state_gpus(st, record_gpu, &g);
    assert_int_equal(g.tenants, 2);
    assert_int_equal(g.compute_milli, 500);
    assert_int_equal(g.memory_mib, 50000);
}

static void fourth_tenant_overcommits_compute(void **state)
{
    (void)state;
    capacity("cap-0", "40000", "Running");
    tenant("t1", "300", "1000", "Running");
    tenant("t2", "300", "1000", "Running");
    tenant("t3", "300", "1000", "Running");
    tenant("t4", "300", "1000", "Pending");
    assert_int_equal(violations(), 1);
    expect_message(0, GPU, NODE, "1200 milli > 1000 milli", "default/t1 300", "default/t4 300", NULL);
    tenant("t4", "300", "1000", "Running");         /* still over: the same violation */
    assert_int_equal(violations(), 1);
    gone("default", "t4");
    tenant("t5", "100", "1000", "Running");         /* 1000: fits again */
    assert_int_equal(violations(), 1);
    tenant("t6", "1", "1", "Running");              /* over once more: a new violation */
    assert_int_equal(violations(), 2);
    expect_message(1, "1001 milli", NULL);
    assert_int_equal(stats().max_compute_milli, 1200);
}

static void memory_over_capacity(void **state)
{
    (void)state;
    capacity("cap-0", "40000", "Running");
    tenant("t1", "100", "30000", "Running");
    assert_int_equal(violations(), 0);
    tenant("t2", "100", "20000", "Running");
    assert_int_equal(violations(), 1);
    expect_message(0, GPU, NODE, "50000 MiB > 40000 MiB", CAP_NS "/cap-0", "default/t2 20000", NULL);
}

static void whole_memory_counts_the_gpu(void **state)
{
    (void)state;
    capacity("cap-0", "40000", "Running");
    tenant("t1", "100", FG_ALLOC_WHOLE_MEMORY, "Running");
    assert_int_equal(violations(), 0);
    assert_int_equal(stats().max_memory_mib, 40000);
    tenant("t2", "100", "1", "Running");
    assert_int_equal(violations(), 1);
    expect_message(0, "40001 MiB > 40000 MiB", "default/t1 whole=40000", NULL);
}

/* Without a capacity pod announcing the GPU its memory is unknown: compute alone is checked. */
static void unannounced_gpu_checks_compute_only(void **state)
{
    (void)state;
    tenant("t1", "600", "90000", "Pending");
    tenant("t2", "300", "90000", "Pending");
    assert_int_equal(violations(), 0);
    assert_int_equal(stats().gpus, 1);
    tenant("t3", "200", "1", "Pending");
    assert_int_equal(violations(), 1);
    expect_message(0, "1100 milli", NULL);
}

static void ended_tenant_stops_counting(void **state)
{
    (void)state;
    capacity("cap-0", "40000", "Running");
    tenant("big", "800", "30000", "Running");
    tenant("big", "800", "30000", "Succeeded");
    tenant("next", "800", "30000", "Running");
    tenant("other", "100", "5000", "Failed");
    tenant("other", "100", "5000", "Failed");
    assert_int_equal(violations(), 0);
    assert_int_equal(stats().max_compute_milli, 800);
}

static void deleted_tenant_stops_counting(void **state)
{
    (void)state;
    capacity("cap-0", "40000", "Running");
    tenant("big", "800", "30000", "Running");
    gone("default", "big");
    tenant("next", "800", "30000", "Running");
    assert_int_equal(violations(), 0);
    gone("default", "never-seen");
    assert_int_equal(violations(), 0);
}

static void tenant_outlives_capacity_pod(void **state)
{
    (void)state;
    capacity("cap-0", "40000", "Running");
    tenant("t1", "300", "1000", "Running");
    gone(CAP_NS, "cap-0");
    now += GRACE_NS - FG_NS_PER_MS;
    fg_checker_state_tick(st, now);
    assert_int_equal(violations(), 0);
    now += 2 * FG_NS_PER_MS;
    fg_checker_state_tick(st, now);
    assert_int_equal(violations(), 1);
    expect_message(0, "default/t1", CAP_NS "/cap-0", NODE, GPU, "does not exist", NULL);
    now += GRACE_NS;
    fg_checker_state_tick(st, now);
    tenant("t1", "300", "1000", "Running");
    assert_int_equal(violations(), 1);              /* one violation however long it lasts */
}

/* A tenant of a Node deleted runs nowhere, however long its pod stays in the API (until the pod
 * garbage collector removes it); a Node of that name made again runs it again. */
static void tenant_of_deleted_node_runs_nowhere(void **state)
{
    (void)state;
    capacity("cap-0", "40000", "Running");
    tenant("t1", "300", "1000", "Running");
    now += GRACE_NS / 2;
    fg_checker_state_node(st, NODE, false, now);
    gone(CAP_NS, "cap-0");
    now += 3 * GRACE_NS;
    fg_checker_state_tick(st, now);
    tenant("t1", "300", "1000", "Running");
    assert_int_equal(violations(), 0);
    fg_checker_state_node(st, "another-node", true, now);   /* other nodes change nothing */
    fg_checker_state_node(st, NODE, true, now);
    now += GRACE_NS + 1;
    fg_checker_state_tick(st, now);
    assert_int_equal(violations(), 1);
    expect_message(0, "default/t1", CAP_NS "/cap-0", "does not exist", NULL);
}

/* Evicted in time: the tenant goes within the grace, and an event (not a tick) sees the time pass. */
static void tenant_evicted_within_grace(void **state)
{
    (void)state;
    capacity("cap-0", "40000", "Running");
    tenant("t1", "300", "1000", "Running");
    tenant("t2", "300", "1000", "Running");
    gone(CAP_NS, "cap-0");
    now += GRACE_NS / 2;
    gone("default", "t1");
    now += GRACE_NS;
    tenant("t2", "300", "1000", "Succeeded");
    assert_int_equal(violations(), 0);
    tenant("t3", "300", "1000", "Running");         /* a new tenant of the missing pod */
    now += GRACE_NS + 1;
    tenant("unrelated", "1", "1", NULL);
    assert_int_equal(violations(), 1);
    expect_message(0, "default/t3", NULL);
}

static void terminating_capacity_pod_is_not_live(void **state)
{
    (void)state;
    capacity("cap-0", "40000", "Running");
    tenant("t1", "300", "1000", "Running");
    json_object *p = capacity_in(CAP_NS, "cap-0", NODE, GPU, "40000", "Running");
    fg_json_set_str(fg_json_ensure_obj(p, "metadata"), "deletionTimestamp", "2025-01-01T00:00:00Z");
    upsert(p);
    now += GRACE_NS + 1;
    fg_checker_state_tick(st, now);
    assert_int_equal(violations(), 1);
    expect_message(0, "being deleted", NULL);
}

static void capacity_pod_elsewhere_does_not_back(void **state)
{
    (void)state;
    upsert(capacity_in(CAP_NS, "cap-0", "node-2", GPU, "40000", "Running"));
    tenant("t1", "300", "1000", "Running");
    now += GRACE_NS + 1;
    fg_checker_state_tick(st, now);
    assert_int_equal(violations(), 1);
    expect_message(0, "on another node", "node-2", NULL);
}

static void tenant_gpu_change_is_flagged(void **state)
{
    (void)state;
    capacity("cap-0", "40000", "Running");
    tenant("t1", "300", "1000", "Running");
    upsert(tenant_on("t1", NODE, "GPU-22222222-bbbb", "300", "1000", "Running"));
    assert_int_equal(violations(), 1);
    expect_message(0, "default/t1", "moved", GPU, "GPU-22222222-bbbb", NULL);
    upsert(tenant_on("t1", NODE, "GPU-22222222-bbbb", "300", "1000", "Running"));
    assert_int_equal(violations(), 1);
    upsert(tenant_on("t1", "node-2", GPU, "300", "1000", "Running"));
    assert_int_equal(violations(), 2);
    expect_message(1, "node-2", NULL);
}

/* The same name made again (a new uid) while the checker was not watching is a new tenant. */
static void recreated_tenant_is_new(void **state)
{
    (void)state;
    tenant("t1", "300", "1000", "Pending");
    json_object *p = tenant_on("t1", "node-2", "GPU-22222222-bbbb", "300", "1000", "Pending");
    fg_json_set_str(fg_json_ensure_obj(p, "metadata"), "uid", "uid-t1-again");
    upsert(p);
    assert_int_equal(violations(), 0);
    assert_int_equal(stats().gpus, 2);
}

static void malformed_annotations_are_violations(void **state)
{
    (void)state;
    capacity("cap-0", "40000", "Running");
    static const char *const bad_compute[] = { "abc", "-5", "1001" };
    for (size_t i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%zu", i);
        tenant(name, bad_compute[i], "1000", "Running");
        assert_int_equal(violations(), i + 1);
        expect_message(i, "default/", FG_ANN_COMPUTE_MILLI, bad_compute[i], NULL);
    }
    tenant("m", "300", "12x", "Running");
    assert_int_equal(violations(), 4);
    expect_message(3, "default/m", FG_ANN_MEMORY_MIB, "\"12x\"", NULL);
    tenant("m", "300", "12x", "Running");           /* the same problem again: not a new one */
    assert_int_equal(violations(), 4);
    assert_int_equal(stats().max_compute_milli, 0); /* they count nothing */

    upsert(pod("default", "nouuid", NODE, "Pending", FG_ANN_CAPACITY_POD, "cap-0", FG_ANN_COMPUTE_MILLI, "300",
               FG_ANN_MEMORY_MIB, "1000", NULL));
    assert_int_equal(violations(), 5);
    expect_message(4, "default/nouuid", FG_ANN_GPU_UUID, NULL);

    capacity("cap-1", "12x", "Running");
    assert_int_equal(violations(), 6);
    expect_message(5, CAP_NS "/cap-1", FG_ANN_GPU_MEMORY_MIB, NULL);
}

static void capacity_lookalikes_elsewhere_are_not_capacity_pods(void **state)
{
    (void)state;
    upsert(capacity_in("default", "cap-0", NODE, GPU, "1000", "Running"));
    tenant("t1", "300", "5000", "Running");          /* 5000 MiB > the look-alike's 1000: not a limit */
    assert_int_equal(violations(), 0);
    now += GRACE_NS + 1;
    fg_checker_state_tick(st, now);                   /* nor does it back the tenant */
    assert_int_equal(violations(), 1);
    expect_message(0, "does not exist", NULL);
}

/* A relist delivers its adds before the deletes of what it no longer holds: only the end is judged. */
static void relist_is_judged_whole(void **state)
{
    (void)state;
    fg_checker_state_relist_begin(st);
    capacity("cap-0", "40000", "Running");
    tenant("t1", "300", "1000", "Running");
    tenant("t2", "300", "1000", "Running");
    tenant("t3", "300", "1000", "Running");
    fg_checker_state_relist_end(st, now);
    assert_int_equal(stats().max_compute_milli, 900);

    fg_checker_state_relist_begin(st);             /* t3 went and t4 came while nobody watched */
    tenant("t4", "400", "1000", "Running");
    gone(CAP_NS, "cap-0");
    now += 2 * GRACE_NS;                            /* the grace does not run out mid-relist */
    fg_checker_state_tick(st, now);
    capacity("cap-0", "40000", "Running");
    gone("default", "t3");
    fg_checker_state_relist_end(st, now);
    assert_int_equal(violations(), 0);
    assert_int_equal(stats().max_compute_milli, 1000);

    fg_checker_state_relist_begin(st);             /* a real overcommit is found at the end */
    tenant("t5", "1", "1", "Running");
    assert_int_equal(violations(), 0);
    fg_checker_state_relist_end(st, now);
    assert_int_equal(violations(), 1);
    expect_message(0, "1001 milli", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(three_tenants_fit, setup, teardown),
        cmocka_unit_test_setup_teardown(gpus_listed, setup, teardown),
        cmocka_unit_test_setup_teardown(fourth_tenant_overcommits_compute, setup, teardown),
        cmocka_unit_test_setup_teardown(memory_over_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(whole_memory_counts_the_gpu, setup, teardown),
        cmocka_unit_test_setup_teardown(unannounced_gpu_checks_compute_only, setup, teardown),
        cmocka_unit_test_setup_teardown(ended_tenant_stops_counting, setup, teardown),
        cmocka_unit_test_setup_teardown(deleted_tenant_stops_counting, setup, teardown),
        cmocka_unit_test_setup_teardown(tenant_outlives_capacity_pod, setup, teardown),
        cmocka_unit_test_setup_teardown(tenant_evicted_within_grace, setup, teardown),
        cmocka_unit_test_setup_teardown(tenant_of_deleted_node_runs_nowhere, setup, teardown),
        cmocka_unit_test_setup_teardown(terminating_capacity_pod_is_not_live, setup, teardown),
        cmocka_unit_test_setup_teardown(capacity_pod_elsewhere_does_not_back, setup, teardown),
        cmocka_unit_test_setup_teardown(tenant_gpu_change_is_flagged, setup, teardown),
        cmocka_unit_test_setup_teardown(recreated_tenant_is_new, setup, teardown),
        cmocka_unit_test_setup_teardown(malformed_annotations_are_violations, setup, teardown),
        cmocka_unit_test_setup_teardown(capacity_lookalikes_elsewhere_are_not_capacity_pods, setup, teardown),
        cmocka_unit_test_setup_teardown(relist_is_judged_whole, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
