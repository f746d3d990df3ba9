/*
 * The collector against stand-in node agents on 127.0.0.1 and hand-filled caches: a pod of a
 * Deployment (pod → ReplicaSet → Deployment) is attributed to deployment-<name> with its containers'
 * use summed; pods not in the cache, on another node or of no workload are counted, not attributed;
 * agents that are slow, down, closing, answering 500, garbage, too much or partly malformed bodies
 * are counted by result; a pod recreated under its name is attributed under its new uid; an agent
 * that comes back on another port is found at the next round.
 */
#include <event2/event.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent_server.h"
#include "base/clock.h"
#include "base/mem.h"
#include "base/prom.h"
#include "collector/collector.h"
#include "collector/targets.h"
#include "operator/kube/selector.h"

#define MAX_KINDS 8

struct world {
    struct event_base *base;
    struct event *tick;
    struct fg_selector sel;
    struct fg_store *pods, *replicasets, *owners[MAX_KINDS];
    struct fg_metrics *reg;
    struct fg_collector *c;
    struct agent_server *agents[16];
    size_t nagents;
    char got_text[16][512];   /* each sample as text: its pointers are borrowed for the call */
    size_t ngot;
    uint64_t rv;
};

static void put(struct world *w, struct fg_store *s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(struct world *w, struct fg_store *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    assert_true(vasprintf(&text, fmt, ap) > 0);
    va_end(ap);
    json_object *j = json_tokener_parse(text);
    assert_non_null(j);
    char rv[24];
    snprintf(rv, sizeof(rv), "%llu", (unsigned long long)++w->rv);
    json_object_object_add(json_object_object_get(j, "metadata"), "resourceVersion", json_object_new_string(rv));
    struct fg_kobj *o = NULL, *old = NULL;
    assert_int_equal(fg_kobj_new(j, 0, &o, NULL), FG_OK);
    (void)fg_store_upsert(s, o, j, &old);
    fg_kobj_unref(old);
    fg_kobj_unref(o);
    json_object_put(j);
    free(text);
}

static void agent_pod(struct world *w, const char *name, const char *node, unsigned port, const char *phase)
{
    put(w, w->pods,
        "{\"metadata\":{\"namespace\":\"fracgpu-system\",\"name\":\"%s\",\"uid\":\"agent-%s\",\"labels\":"
        "{\"app.kubernetes.io/name\":\"fracgpu\",\"app.kubernetes.io/component\":\"node-agent\"}},"
        "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"node-agent\",\"ports\":[{\"name\":\"metrics\","
        "\"containerPort\":%u}]}]},\"status\":{\"phase\":\"%s\",\"podIP\":\"127.0.0.1\"}}",
        name, name, node, port, phase);
}

static void tenant_pod(struct world *w, const char *name, const char *uid, const char *node, bool owned)
{
    put(w, w->pods,
        "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"%s\",\"ownerReferences\":[%s]},"
        "\"spec\":{\"nodeName\":\"%s\"},\"status\":{\"phase\":\"Running\",\"podIP\":\"10.1.0.9\"}}",
        name, uid,
        owned ? "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"llm-abc\",\"uid\":\"rs1\",\"controller\":true}"
              : "",
        node);
}

static void sink(void *ud, const struct fg_collector_sample *s)
{
    struct world *w = ud;
    assert_true(w->ngot < 16);
    snprintf(w->got_text[w->ngot], sizeof(w->got_text[0]), "%s/%s %s/%s %s %s %s %s gpus=%zu:%s %s%.3f %s%.3f",
             s->ns, s->gpuworkload, s->kind->resource.kind, s->workload, s->pod, s->pod_uid, s->node,
             fg_workload_builtin_kinds.v[s->kind_index].resource.kind, s->ngpus, s->ngpus ? s->gpu_uuids[0] : "",
             s->has_compute ? "compute=" : "no-compute=", s->compute_milli, s->has_memory ? "mib=" : "no-mib=",
             s->memory_mib);
    w->ngot++;
    assert_true(s->t_ms > 1600000000000);
}

static void on_tick(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    (void)ud;
}

static int setup(void **state)
{
    struct world *w = fg_calloc(1, sizeof(*w));
    w->base = event_base_new();
    w->tick = event_new(w->base, -1, EV_PERSIST, on_tick, w);
    struct timeval tv = { 0, 20000 };
    event_add(w->tick, &tv);
    assert_int_equal(fg_selector_parse_labels(FG_COLLECTOR_SELECTOR_DEFAULT, &w->sel, NULL), FG_OK);
    w->pods = fg_store_new();
    assert_int_equal(fg_store_add_indexer(w->pods, FG_COLLECTOR_AGENT_INDEX, fg_collector_agent_index, &w->sel), FG_OK);
    w->replicasets = fg_store_new();
    assert_true(fg_workload_builtin_kinds.n <= MAX_KINDS);
    for (size_t i = 0; i < fg_workload_builtin_kinds.n; i++)
        w->owners[i] = fg_store_new();
    w->reg = fg_metrics_new();
    /* Deployment llm → ReplicaSet llm-abc → pods */
    for (size_t i = 0; i < fg_workload_builtin_kinds.n; i++)
        if (!strcmp(fg_workload_builtin_kinds.v[i].resource.kind, "Deployment"))
            put(w, w->owners[i], "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"namespace\":\"ml\","
                                 "\"name\":\"llm\",\"uid\":\"d1\"}}");
    put(w, w->replicasets,
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"namespace\":\"ml\",\"name\":\"llm-abc\","
        "\"uid\":\"rs1\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"llm\","
        "\"uid\":\"d1\",\"controller\":true}]}}");
    tenant_pod(w, "llm-abc-1", "p1", "node-a", true);
    tenant_pod(w, "llm-abc-2", "p2", "node-b", true);    /* reported by node-a's agent: on another node */
    tenant_pod(w, "orphan", "p3", "node-a", false);      /* no workload */
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    struct world *w = *state;
    fg_collector_free(w->c);
    for (size_t i = 0; i < w->nagents; i++)
        agent_server_free(w->agents[i]);
    fg_store_free(w->pods);
    fg_store_free(w->replicasets);
    for (size_t i = 0; i < fg_workload_builtin_kinds.n; i++)
        fg_store_free(w->owners[i]);
    fg_selector_cleanup(&w->sel);
    fg_metrics_free(w->reg);
    event_free(w->tick);
    event_base_free(w->base);
    free(w);
    return 0;
}

static struct agent_server *agent(struct world *w, enum agent_mode mode, const char *body, unsigned delay_ms)
{
    struct agent_server *a = agent_server_new(w->base, mode, body, delay_ms);
    w->agents[w->nagents++] = a;
    return a;
}

static void start(struct world *w, struct fg_collector_opts o)
{
    struct fg_attrib_source src = { &fg_workload_builtin_kinds, w->pods, w->replicasets, w->owners };
    assert_int_equal(fg_collector_new(w->base, &src, &o, w->reg, &w->c, NULL), FG_OK);
    assert_int_equal(fg_collector_subscribe(w->c, sink, w), FG_OK);
    fg_collector_start(w->c);
    assert_int_equal(fg_collector_subscribe(w->c, sink, w), FG_E_BUSY);
}

static uint64_t scrapes(const struct fg_collector_stats *s)
{
    uint64_t n = 0;
    for (int i = 0; i < FG_SCRAPE__COUNT; i++)
        n += s->scrapes[i];
    return n;
}

/* Runs the loop until `want` scrapes have ended (10 s at most). */
static void run_scrapes(struct world *w, uint64_t want, struct fg_collector_stats *st)
{
    uint64_t end = fg_clock_real_ns() + 10 * FG_NS_PER_S;
    do {
        event_base_loop(w->base, EVLOOP_ONCE);
        fg_collector_stats(w->c, st);
    } while (scrapes(st) < want && fg_clock_real_ns() < end);
    assert_int_equal(scrapes(st), want);
}

static char *good_body(void)
{
    struct fg_buf b = FG_BUF_INIT;
    fg_prom_family(&b, "fracgpu_pod_gpu_utilization_ratio", FG_PROM_GAUGE, "pod");
    const char *c1[] = { "node", "node-a", "gpu", "0", "uuid", "GPU-1", "model", "H100", "namespace", "ml", "pod",
                         "llm-abc-1", "container", "c1", NULL };
    const char *c2[] = { "node", "node-a", "gpu", "0", "uuid", "GPU-1", "model", "H100", "namespace", "ml", "pod",
                         "llm-abc-1", "container", "c2", NULL };
    fg_prom_sample(&b, "fracgpu_pod_gpu_utilization_ratio", c1, 0.25);
    fg_prom_sample(&b, "fracgpu_pod_gpu_utilization_ratio", c2, 0.1);
    const char *other[] = { "uuid", "GPU-1", "namespace", "ml", "pod", "llm-abc-2", "container", "c", NULL };
    const char *ghost[] = { "uuid", "GPU-1", "namespace", "ml", "pod", "ghost", "container", "c", NULL };
    const char *orphan[] = { "uuid", "GPU-1", "namespace", "ml", "pod", "orphan", "container", "c", NULL };
    fg_prom_sample(&b, "fracgpu_pod_gpu_utilization_ratio", other, 0.5);
    fg_prom_sample(&b, "fracgpu_pod_gpu_utilization_ratio", ghost, NAN);
    fg_prom_sample(&b, "fracgpu_pod_gpu_utilization_ratio", orphan, 0.1);
    fg_prom_sample(&b, "fracgpu_pod_gpu_utilization_ratio", (const char *[]){ "uuid", "GPU-1", NULL }, 0.2);
    fg_prom_family(&b, "fracgpu_pod_gpu_memory_used_bytes", FG_PROM_GAUGE, "pod");
    fg_prom_sample_u64(&b, "fracgpu_pod_gpu_memory_used_bytes", c1, 1ull << 30);
    fg_prom_sample_u64(&b, "fracgpu_pod_gpu_memory_used_bytes", c2, 512ull << 20);
    fg_prom_family(&b, "fracgpu_exporter_nvml_up", FG_PROM_GAUGE, "up");
    fg_prom_sample(&b, "fracgpu_exporter_nvml_up", NULL, 1);
    return fg_buf_take(&b);
}

static const char want_a[] =
    "ml/deployment-llm Deployment/llm llm-abc-1 p1 node-a Deployment gpus=1:GPU-1 compute=350.000 mib=1536.000";

static void test_attribution(void **state)
{
    struct world *w = *state;
    char *body = good_body();
    agent_pod(w, "agent-a", "node-a", agent_server_port(agent(w, AGENT_BODY, body, 0)), "Running");
    free(body);
    agent_pod(w, "agent-pending", "node-z", 1, "Pending");   /* not a target */
    put(w, w->pods, "{\"metadata\":{\"namespace\":\"x\",\"name\":\"lookalike\",\"labels\":{\"app.kubernetes.io/name\":"
                    "\"fracgpu\"}},\"spec\":{\"nodeName\":\"n\"},\"status\":{\"phase\":\"Running\",\"podIP\":\"127.0.0.1\"}}");
    start(w, (struct fg_collector_opts)FG_COLLECTOR_OPTS_DEFAULT);
    struct fg_collector_stats st;
    run_scrapes(w, 1, &st);
    assert_int_equal(st.targets, 1);
    assert_int_equal(st.scrapes[FG_SCRAPE_OK], 1);
    assert_int_equal(st.samples, 1);
    assert_int_equal(w->ngot, 1);
    assert_string_equal(w->got_text[0], want_a);
    assert_int_equal(st.unattributed[FG_UNATTR_OTHER_NODE], 1);
    assert_int_equal(st.unattributed[FG_UNATTR_POD_UNKNOWN], 1);
    assert_int_equal(st.unattributed[FG_UNATTR_NO_WORKLOAD], 1);
    assert_int_equal(st.unattributed[FG_UNATTR_TIME_BACKWARDS], 0);
    assert_int_equal(st.nonfinite, 1);
    assert_int_equal(st.bad_lines, 0);
    /* the metrics say the same */
    struct fg_buf out = FG_BUF_INIT;
    fg_metrics_write(w->reg, &out);
    assert_non_null(strstr(fg_buf_str(&out), "fracgpu_collector_scrapes_total{result=\"ok\"} 1\n"));
    assert_non_null(strstr(fg_buf_str(&out), "fracgpu_collector_unattributed_total{reason=\"other_node\"} 1\n"));
    assert_non_null(strstr(fg_buf_str(&out), "fracgpu_collector_samples_total 1\n"));
    assert_non_null(strstr(fg_buf_str(&out), "fracgpu_collector_scrape_duration_seconds_count 1\n"));
    fg_buf_cleanup(&out);
}

static void test_failures(void **state)
{
    struct world *w = *state;
    char *body = good_body();
    struct fg_buf junk = FG_BUF_INIT, big = FG_BUF_INIT, partial = FG_BUF_INIT;
    for (unsigned i = 0, x = 12345; i < 4096; i++) {
        x = x * 1103515245u + 12345u;
        char ch = (char)(x >> 16);
        fg_buf_put(&junk, &ch, 1);
    }
    for (unsigned i = 0; i < 4096; i++)
        fg_buf_put_str(&big, "fracgpu_exporter_nvml_up 1\n");
    fg_buf_put_str(&partial, "garbage line {{{\n");
    fg_buf_put_str(&partial, body);
    const char *junk_str = fg_buf_str(&junk);   /* agent_server serves up to the first NUL: fine for junk */
    agent_pod(w, "agent-garbage", "node-g", agent_server_port(agent(w, AGENT_BODY, junk_str, 0)), "Running");
    agent_pod(w, "agent-slow", "node-s", agent_server_port(agent(w, AGENT_SLOW, body, 3000)), "Running");
    agent_pod(w, "agent-500", "node-e", agent_server_port(agent(w, AGENT_500, NULL, 0)), "Running");
    agent_pod(w, "agent-close", "node-c", agent_server_port(agent(w, AGENT_CLOSE, NULL, 0)), "Running");
    agent_pod(w, "agent-down", "node-d", agent_server_port(agent(w, AGENT_REFUSED, NULL, 0)), "Running");
    agent_pod(w, "agent-big", "node-b", agent_server_port(agent(w, AGENT_BODY, fg_buf_str(&big), 0)), "Running");
    agent_pod(w, "agent-partial", "node-a", agent_server_port(agent(w, AGENT_BODY, fg_buf_str(&partial), 0)), "Running");
    struct fg_collector_opts o = FG_COLLECTOR_OPTS_DEFAULT;
    o.timeout_ms = 300;
    o.concurrency = 2;
    o.max_body = 64 << 10;
    start(w, o);
    struct fg_collector_stats st;
    run_scrapes(w, 7, &st);
    assert_int_equal(st.targets, 7);
    assert_int_equal(st.scrapes[FG_SCRAPE_OK], 0);
    assert_int_equal(st.scrapes[FG_SCRAPE_PARSE_ERROR], 2);   /* garbage, and the partly malformed body */
    assert_int_equal(st.scrapes[FG_SCRAPE_TIMEOUT], 1);
    assert_int_equal(st.scrapes[FG_SCRAPE_HTTP_ERROR], 1);
    assert_int_equal(st.scrapes[FG_SCRAPE_TRANSPORT], 1);
    assert_int_equal(st.scrapes[FG_SCRAPE_REFUSED], 1);
    assert_int_equal(st.scrapes[FG_SCRAPE_TOO_BIG], 1);
    assert_true(st.bad_lines >= 2);
    /* the good lines of the partly malformed body still count, and nothing else was attributed */
    assert_int_equal(w->ngot, 1);
    assert_string_equal(w->got_text[0], want_a);
    fg_buf_cleanup(&junk);
    fg_buf_cleanup(&big);
    fg_buf_cleanup(&partial);
    free(body);
}

static void test_rounds(void **state)
{
    struct world *w = *state;
    char *body = good_body();
    struct agent_server *first = agent(w, AGENT_BODY, body, 0), *second = agent(w, AGENT_BODY, body, 0);
    free(body);
    agent_pod(w, "agent-a", "node-a", agent_server_port(first), "Running");
    struct fg_collector_opts o = FG_COLLECTOR_OPTS_DEFAULT;
    o.interval_ms = 100;
    start(w, o);
    struct fg_collector_stats st;
    run_scrapes(w, 1, &st);
    assert_int_equal(w->ngot, 1);
    assert_string_equal(w->got_text[0], want_a);
    /* the pod is recreated under its name: the new uid is attributed at once */
    tenant_pod(w, "llm-abc-1", "p1-new", "node-a", true);
    run_scrapes(w, 2, &st);
    assert_int_equal(w->ngot, 2);
    assert_non_null(strstr(w->got_text[1], " p1-new node-a "));
    /* the agent restarts on another port (as with another IP): the next round finds it */
    agent_pod(w, "agent-a", "node-a", agent_server_port(second), "Running");
    run_scrapes(w, 3, &st);
    assert_int_equal(agent_server_hits(first), 2);
    assert_int_equal(agent_server_hits(second), 1);
    assert_int_equal(st.samples, 3);
    assert_int_equal(st.unattributed[FG_UNATTR_TIME_BACKWARDS], 0);
    assert_true(st.rounds >= 3);
    /* stopped: no round, no scrape, no sample afterwards */
    fg_collector_stop(w->c);
    uint64_t end = fg_clock_real_ns() + 300 * FG_NS_PER_MS;
    while (fg_clock_real_ns() < end)
        event_base_loop(w->base, EVLOOP_ONCE);
    fg_collector_stats(w->c, &st);
    assert_int_equal(scrapes(&st), 3);
    assert_int_equal(w->ngot, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_attribution, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rounds, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
