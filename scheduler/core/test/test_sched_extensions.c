/* The framework's extension points are called at the right moments: PostFilter only when a pod is
 * unschedulable, the placement policy's Reserve before Permit, Bind after both and only for a
 * permitted pod, a failed Bind unreserving; and pods found bound are charged through the same
 * Reserve, bad input refused with nothing changed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "scheduler/test/fixture.h"

/* A placement policy that counts its hooks and prefers low node ids. */
struct counting_policy {
    struct fg_sched_policy base;
    int observed, reserved, unreserved;
};

static int64_t counting_score(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy,
                              const struct fg_sched_node *n, int *gpu)
{
    (void)pol;
    (void)gpu;
    return 100 - (n - cy->cluster->nodes);
}

static void counting_observe(struct fg_sched_policy *pol, const struct fg_sched_cycle *cy)
{
    (void)cy;
    ((struct counting_policy *)pol)->observed++;
}

static void counting_reserve(struct fg_sched_policy *pol, const struct fg_sched_cluster *c,
                             const struct fg_sched_pod *pod, const struct fg_sched_placement *p)
{
    (void)pod;
    assert_true(c->nodes[p->node].pods > 0);  /* the cluster is charged first */
    ((struct counting_policy *)pol)->reserved++;
}

static void counting_unreserve(struct fg_sched_policy *pol, const struct fg_sched_cluster *c,
                               const struct fg_sched_pod *pod, const struct fg_sched_placement *p)
{
    (void)c;
    (void)pod;
    (void)p;
    ((struct counting_policy *)pol)->unreserved++;
}

static void counting_free(struct fg_sched_policy *pol)
{
    (void)pol;
}

static const struct fg_sched_policy_ops counting_ops = {
    "counting", counting_score, NULL, counting_observe, counting_reserve, counting_unreserve, counting_free,
};

/* What the recording plugins saw and what they answer. */
struct log {
    const struct fg_sched_framework *fw;
    const struct counting_policy *pol;
    int post_filters, binds;
    enum fg_sched_code post_filter_answer, bind_answer;
};

static enum fg_sched_code record_post_filter(const struct fg_sched_post_filter_plugin *pl, struct fg_sched_cycle *cy)
{
    struct log *log = pl->ctx;
    log->post_filters++;
    cy->reason = "would need a bigger node";
    return log->post_filter_answer;
}

static enum fg_sched_code record_bind(const struct fg_sched_bind_plugin *pl, const struct fg_sched_cluster *c,
                                      const struct fg_sched_pod *pod, const struct fg_sched_placement *p)
{
    struct log *log = pl->ctx;
    log->binds++;
    assert_true(c->nodes[p->node].pods > 0);                   /* after Reserve */
    assert_true(log->pol->reserved > log->pol->unreserved);    /* the placement policy's too */
    assert_true(!pod->group || fg_sched_group_permitted(log->fw, pod->group));  /* after Permit */
    return log->bind_answer;
}

struct env {
    struct fg_sched_cluster c;
    struct counting_policy pol;
    struct fg_sched_post_filter_plugin post_filter;
    struct fg_sched_bind_plugin bind;
    struct fg_sched_profile profile;
    struct fg_sched_framework fw;
    struct log log;
};

static void env_open(struct env *e)
{
    memset(e, 0, sizeof *e);
    fg_sched_cluster_init(&e->c);
    fx_node(&e->c, "a", 8, 32, 2, "T4");
    fx_node(&e->c, "b", 8, 32, 2, "T4");
    e->pol.base.ops = &counting_ops;
    e->log = (struct log){ &e->fw, &e->pol, 0, 0, FG_SCHED_UNSCHEDULABLE, FG_SCHED_SUCCESS };
    e->post_filter = (struct fg_sched_post_filter_plugin){ "record", record_post_filter, &e->log };
    e->bind = (struct fg_sched_bind_plugin){ "record", record_bind, &e->log };
    e->profile = fg_sched_profile_default;
    e->profile.post_filter = &e->post_filter;
    e->profile.bind = &e->bind;
    fg_sched_framework_init(&e->fw, &e->profile, &e->pol.base);
}

static void env_close(struct env *e)
{
    fg_sched_framework_cleanup(&e->fw);
    fg_sched_cluster_cleanup(&e->c);
}

static struct fg_sched_placement schedule(struct env *e, const struct fg_sched_pod *p)
{
    struct fg_sched_placement pl;
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_schedule(&e->fw, &e->c, p, &pl, errmsg), FG_OK);
    return pl;
}

static void post_filter_runs_only_when_nothing_fits(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
    struct fg_sched_pod ok = fx_pod("ok", 1, 1, 500), h100 = fx_pod("h100", 1, 1, 500), big = fx_pod("big", 64, 0, 0);
    static const char *const h100_only[] = { "H100" };
    h100.models = h100_only;
    h100.n_models = 1;
    struct fg_sched_pod member = fx_pod("member", 1, 1, 500), bad = fx_pod("bad", 1, 1, 2000);
    member.group = "g";
    member.group_min = 2;
    assert_int_equal(schedule(&e, &ok).code, FG_SCHED_SUCCESS);
    assert_int_equal(schedule(&e, &h100).code, FG_SCHED_UNRESOLVABLE);
    assert_int_equal(schedule(&e, &member).code, FG_SCHED_WAIT);
    struct fg_sched_placement pl;
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_schedule(&e.fw, &e.c, &bad, &pl, errmsg), FG_E_INVAL);
    assert_int_equal(e.log.post_filters, 0);
    pl = schedule(&e, &big);
    assert_int_equal(e.log.post_filters, 1);
    assert_int_equal(pl.code, FG_SCHED_UNSCHEDULABLE);
    assert_string_equal(pl.reason, "would need a bigger node");
    assert_int_equal(pl.node, -1);
    e.log.post_filter_answer = FG_SCHED_UNRESOLVABLE;  /* it may know better */
    assert_int_equal(schedule(&e, &big).code, FG_SCHED_UNRESOLVABLE);
    assert_int_equal(e.log.post_filters, 2);
    assert_int_equal(e.pol.observed, 5);  /* every valid pod, placed or not */
    env_close(&e);

    /* The default PostFilter leaves the outcome as the filters left it. */
    struct fg_sched_cluster c;
    fg_sched_cluster_init(&c);
    fx_node(&c, "a", 8, 32, 2, "T4");
    struct counting_policy pol = { { &counting_ops }, 0, 0, 0 };
    struct fg_sched_framework fw;
    fg_sched_framework_init(&fw, &fg_sched_profile_default, &pol.base);
    assert_int_equal(fg_sched_schedule(&fw, &c, &big, &pl, errmsg), FG_OK);
    assert_int_equal(pl.code, FG_SCHED_UNSCHEDULABLE);
    assert_string_equal(pl.reason, "no node fits");
    assert_int_equal(fg_sched_schedule(&fw, &c, &ok, &pl, errmsg), FG_OK);
    assert_int_equal(pl.code, FG_SCHED_SUCCESS);  /* and the default Bind succeeds */
    fg_sched_framework_cleanup(&fw);
    fg_sched_cluster_cleanup(&c);
}

static void bind_follows_reserve_and_permit(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
    struct fg_sched_pod ok = fx_pod("ok", 1, 1, 500);
    struct fg_sched_placement pl = schedule(&e, &ok);
    assert_int_equal(pl.code, FG_SCHED_SUCCESS);
    assert_int_equal(e.log.binds, 1);
    assert_int_equal(e.pol.reserved, 1);

    /* A pod group: the first member waits unbound; binding it before the group is permitted is
     * refused; the member that completes the group is bound in its cycle, the waiting one after. */
    struct fg_sched_pod m = fx_pod("m", 1, 1, 500);
    m.group = "job";
    m.group_min = 2;
    struct fg_sched_placement first = schedule(&e, &m);
    assert_int_equal(first.code, FG_SCHED_WAIT);
    assert_int_equal(e.log.binds, 1);
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_framework_bind(&e.fw, &e.c, &m, &first, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, "not permitted"));
    assert_int_equal(first.code, FG_SCHED_WAIT);
    struct fg_sched_placement second = schedule(&e, &m);
    assert_int_equal(second.code, FG_SCHED_SUCCESS);
    assert_int_equal(e.log.binds, 2);
    assert_int_equal(fg_sched_framework_bind(&e.fw, &e.c, &m, &first, errmsg), FG_OK);
    assert_int_equal(first.code, FG_SCHED_SUCCESS);
    assert_int_equal(e.log.binds, 3);
    /* Only a waiting placement is bound later. */
    assert_int_equal(fg_sched_framework_bind(&e.fw, &e.c, &m, &first, errmsg), FG_E_INVAL);
    assert_int_equal(fg_sched_framework_bind(&e.fw, &e.c, &ok, &pl, errmsg), FG_E_INVAL);
    assert_int_equal(e.log.binds, 3);
    assert_int_equal(e.c.gpu_milli_used, 1500);
    env_close(&e);
}

static void failed_bind_unreserves(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
    e.log.bind_answer = FG_SCHED_ERROR;
    struct fg_sched_pod p = fx_pod("p", 2, 1, 500);
    p.group = "solo";
    p.group_min = 1;
    struct fg_sched_placement pl = schedule(&e, &p);
    assert_int_equal(pl.code, FG_SCHED_ERROR);
    assert_string_equal(pl.reason, "bind failed");
    assert_int_equal(pl.node, -1);
    assert_int_equal(e.log.binds, 1);
    assert_int_equal(e.pol.reserved, 1);
    assert_int_equal(e.pol.unreserved, 1);
    assert_int_equal(e.c.gpu_milli_used, 0);
    assert_int_equal(e.c.nodes[0].pods + e.c.nodes[1].pods, 0);
    assert_int_equal(e.c.nodes[0].free_cpu + e.c.nodes[1].free_cpu, 16000);
    assert_false(fg_sched_group_permitted(&e.fw, "solo"));  /* the member is no longer counted */
    fx_check_counts(&e.c);
    fg_sched_framework_unreserve(&e.fw, &e.c, &p, &pl);  /* nothing left to undo */
    assert_int_equal(e.pol.unreserved, 1);

    /* A waiting member bound later: a failure unreserves it as well; one whose node was removed
     * meanwhile is unschedulable, and its group loses the member. */
    struct fg_sched_pod m = fx_pod("m", 1, 1, 500);
    m.group = "job";
    m.group_min = 3;
    struct fg_sched_placement w[3];
    for (int i = 0; i < 2; i++) {
        w[i] = schedule(&e, &m);
        assert_int_equal(w[i].code, FG_SCHED_WAIT);
    }
    assert_int_equal(w[0].node, 0);  /* the counting placement policy prefers node 0 */
    e.log.bind_answer = FG_SCHED_SUCCESS;
    char errmsg[FG_ERRMSG_MAX];
    struct fg_sched_node_spec moved = { .name = "a2", .cpu_milli = 8000, .mem_mib = 32768, .max_pods = 110,
                                        .model = "T4", .n_gpus = 2 };
    assert_int_equal(fg_sched_cluster_remove_node(&e.c, 0, errmsg), FG_OK);
    assert_int_equal(fg_sched_cluster_add_node(&e.c, &moved, NULL, errmsg), FG_OK);  /* reuses slot 0 */
    w[2] = schedule(&e, &m);
    assert_int_equal(w[2].code, FG_SCHED_SUCCESS);
    assert_int_equal(fg_sched_framework_bind(&e.fw, &e.c, &m, &w[0], errmsg), FG_OK);
    assert_int_equal(w[0].code, FG_SCHED_UNSCHEDULABLE);
    assert_string_equal(w[0].reason, "node removed");
    assert_false(fg_sched_group_permitted(&e.fw, "job"));
    e.log.bind_answer = FG_SCHED_ERROR;
    int unreserved = e.pol.unreserved;
    assert_int_equal(fg_sched_framework_bind(&e.fw, &e.c, &m, &w[1], errmsg), FG_E_INVAL);  /* not permitted */
    m.group_min = 2;  /* the group's minimum is the first member's: still 3 */
    assert_int_equal(fg_sched_framework_bind(&e.fw, &e.c, &m, &w[1], errmsg), FG_E_INVAL);
    struct fg_sched_placement extra = schedule(&e, &m);   /* completes the group, its bind fails */
    assert_int_equal(extra.code, FG_SCHED_ERROR);
    assert_int_equal(e.pol.unreserved, unreserved + 1);
    fx_check_counts(&e.c);
    env_close(&e);
}

static void refused_bound(struct env *e, const struct fg_sched_pod *p, int node, const int *gpus, int n_gpus,
                          const char *why)
{
    struct fg_sched_placement pl;
    char errmsg[FG_ERRMSG_MAX] = "";
    uint64_t version = e->c.version;
    assert_int_equal(fg_sched_framework_add_bound(&e->fw, &e->c, p, node, gpus, n_gpus, &pl, errmsg), FG_E_INVAL);
    assert_non_null(strstr(errmsg, why));
    assert_int_equal(e->c.version, version);
    assert_int_equal(e->c.gpu_milli_used, 0);
    assert_int_equal(e->pol.reserved, 0);
}

static void pods_found_bound_are_charged(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
    char errmsg[FG_ERRMSG_MAX];
    assert_int_equal(fg_sched_cluster_remove_node(&e.c, 1, errmsg), FG_OK);
    struct fg_sched_pod p = fx_pod("p", 64, 2, 1000), bad = fx_pod("bad", 1, 1, 0);
    int both[2] = { 0, 1 }, twice[2] = { 1, 1 }, beyond[2] = { 0, 2 }, negative[2] = { -1, 0 };
    refused_bound(&e, &bad, 0, both, 1, "outside 1..1000");
    refused_bound(&e, &p, 1, both, 2, "not a node");   /* removed */
    refused_bound(&e, &p, 5, both, 2, "not a node");
    refused_bound(&e, &p, -1, both, 2, "not a node");
    refused_bound(&e, &p, 0, both, 1, "1 GPUs given for a pod of 2");
    refused_bound(&e, &p, 0, twice, 2, "given twice");
    refused_bound(&e, &p, 0, beyond, 2, "GPU 2 of node a");
    refused_bound(&e, &p, 0, negative, 2, "GPU -1");

    /* A bound pod is a fact: charged even past the node's capacity, counted in its group. */
    p.group = "job";
    p.group_min = 1;
    struct fg_sched_placement pl;
    assert_int_equal(fg_sched_framework_add_bound(&e.fw, &e.c, &p, 0, both, 2, &pl, errmsg), FG_OK);
    assert_int_equal(pl.code, FG_SCHED_SUCCESS);
    assert_int_equal(pl.node, 0);
    assert_int_equal(pl.node_uid, e.c.nodes[0].uid);
    assert_int_equal(e.c.nodes[0].free_cpu, 8000 - 64000);
    assert_int_equal(e.c.gpu_milli_used, 2000);
    assert_int_equal(e.pol.reserved, 1);
    assert_int_equal(e.log.binds, 0);  /* already bound: no Bind */
    assert_true(fg_sched_group_permitted(&e.fw, "job"));
    fx_check_counts(&e.c);
    struct fg_sched_pod cpu = fx_pod("cpu", 0, 0, 0);
    assert_int_equal(schedule(&e, &cpu).code, FG_SCHED_UNSCHEDULABLE);  /* overcommitted: fits nothing */
    fg_sched_framework_unreserve(&e.fw, &e.c, &p, &pl);
    assert_int_equal(e.pol.unreserved, 1);
    assert_int_equal(e.c.nodes[0].free_cpu, 8000);
    assert_int_equal(e.c.gpu_milli_used, 0);
    assert_false(fg_sched_group_permitted(&e.fw, "job"));
    assert_int_equal(schedule(&e, &cpu).code, FG_SCHED_SUCCESS);
    env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(post_filter_runs_only_when_nothing_fits),
        cmocka_unit_test(bind_follows_reserve_and_permit),
        cmocka_unit_test(failed_bind_unreserves),
        cmocka_unit_test(pods_found_bound_are_charged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
