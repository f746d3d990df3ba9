/*
 * chaos_agents — node agents killed through their pid files, and their device plugins' counters
 * summed across restarts (chaos_agents.h).
 */
#include "e2e/cluster/test/chaos_agents.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/prom_parse.h"
#include "e2e/cluster/pidfile.h"
#include "e2e/cluster/test/share_fixture.h"
#include "e2e/tests/harness.h"

enum series { GRANTED, REFUSED, INVALID, EVICTIONS, NSERIES };

/* Each series: its metric, and the outcome label it has (NULL: none). */
static const struct { const char *metric, *outcome; } series[NSERIES] = {
    [GRANTED] = { "fracgpu_device_plugin_allocations_total", "granted" },
    [REFUSED] = { "fracgpu_device_plugin_allocations_total", "refused" },
    [INVALID] = { "fracgpu_device_plugin_allocations_total", "invalid" },
    [EVICTIONS] = { "fracgpu_device_plugin_evictions_total", NULL },
};

struct chaos_agents {
    json_object *last;              /* pod UID -> [value per series] at its last scrape */
    json_object *read_at;           /* node -> when its agent's last answered scrape began (mono ns) */
    double total[NSERIES];
};

struct chaos_agents *chaos_agents_new(void)
{
    struct chaos_agents *a = fg_calloc(1, sizeof *a);
    a->last = json_object_new_object();
    a->read_at = json_object_new_object();
    return a;
}

void chaos_agents_free(struct chaos_agents *a)
{
    if (!a)
        return;
    json_object_put(a->last);
    json_object_put(a->read_at);
    free(a);
}

/* Keeps a sample of one of the series into values[series]. */
static bool take_sample(void *ud, const struct fg_prom_parsed *p)
{
    double *values = ud;
    for (int s = 0; s < NSERIES; s++)
        if (fg_str_eq(p->name, series[s].metric) &&
            (!series[s].outcome || fg_str_eq(fg_prom_parsed_label(p, "outcome"), series[s].outcome)))
            values[s] = p->value;
    return true;
}

/* Adds what agent pod uid's series grew since its last scrape. */
static void account(struct chaos_agents *a, const char *uid, const char *text)
{
    double values[NSERIES] = { 0 };   /* 0 for a series absent (a counter with no sample yet) */
    struct fg_prom_parse_stats stats;
    char msg[FG_ERRMSG_MAX];
    enum fg_err err = fg_prom_parse(text, strlen(text), NULL, take_sample, values, &stats, msg);
    (void)err;   /* a malformed line costs only its own sample; what was read counts */
    json_object *prev = NULL, *now = json_object_new_array();
    json_object_object_get_ex(a->last, uid, &prev);
    for (int s = 0; s < NSERIES; s++) {
        double v = values[s];
        double before = prev ? json_object_get_double(fg_json_at(prev, (size_t)s)) : 0;
        a->total[s] += v >= before ? v - before : v;   /* below: a new process, counting from zero */
        json_object_array_add(now, json_object_new_double(v));
    }
    json_object_object_add(a->last, uid, now);
}

size_t chaos_agents_scrape(struct chaos_agents *a, struct fg_simcluster *c)
{
    json_object *l = share_list(c, &fg_kube_pods, SHARE_SYSTEM_NS, CHAOS_AGENT_SELECTOR);
    json_object *items = fg_json_get(l, "items", NULL);
    struct fg_buf body;
    fg_buf_init(&body, 0);
    size_t answered = 0;
    int64_t began = (int64_t)fg_clock_mono_ns();
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        json_object *p = fg_json_at(items, i);
        const char *ip = fg_json_get_str(p, "status", "podIP", NULL), *uid = fg_json_get_str(p, "metadata", "uid", NULL);
        if (!ip || !uid || !fg_json_get_str(p, "spec", "nodeName", NULL) || !share_live(p) ||
            fg_harness_http(ip, CHAOS_AGENT_PORT, "GET", "/metrics", &body) != 200)
            continue;
        account(a, uid, fg_buf_str(&body));
        json_object_object_add(a->read_at, fg_json_get_str(p, "spec", "nodeName", NULL), json_object_new_int64(began));
        answered++;
    }
    fg_buf_cleanup(&body);
    json_object_put(l);
    return answered;
}

bool chaos_agents_read_since(const struct chaos_agents *a, const char *node, uint64_t t_ns)
{
    int64_t at = 0;
    return fg_json_get_int64(a->read_at, &at, node, NULL) && (uint64_t)at >= t_ns;
}

void chaos_agents_totals(const struct chaos_agents *a, struct chaos_grants *out)
{
    *out = (struct chaos_grants){ a->total[GRANTED], a->total[REFUSED], a->total[INVALID], a->total[EVICTIONS] };
}

/* The live process of agent pod p, from the pid file its kubelet keeps; 0 when none runs. */
static pid_t agent_process(struct fg_simcluster *c, json_object *p)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/nodes/%s/pods/" SHARE_SYSTEM_NS "_%s_%s/node-agent.pid", c->work,
             fg_json_get_str(p, "spec", "nodeName", NULL), fg_json_get_str(p, "metadata", "name", NULL),
             fg_json_get_str(p, "metadata", "uid", NULL));
    pid_t pid = 0;
    return fg_sim_pidfile_alive(path, &pid) ? pid : 0;
}

bool chaos_agents_kill(struct fg_simcluster *c, unsigned *rng, chaos_spare_fn *spare, void *ud, char *node)
{
    json_object *l = share_list(c, &fg_kube_pods, SHARE_SYSTEM_NS, CHAOS_AGENT_SELECTOR);
    json_object *items = fg_json_get(l, "items", NULL), *candidates[16];
    size_t n = 0;
    for (size_t i = 0; i < fg_json_array_len(items) && n < 16; i++) {
        json_object *p = fg_json_at(items, i);
        const char *on = fg_json_get_str(p, "spec", "nodeName", NULL);
        if (share_live(p) && on && (!spare || !spare(ud, on)))
            candidates[n++] = p;
    }
    bool killed = false;
    if (n) {
        json_object *p = candidates[(size_t)rand_r(rng) % n];
        pid_t pid = agent_process(c, p);
        killed = pid > 0 && kill(pid, SIGKILL) == 0;
        if (killed)
            snprintf(node, CHAOS_NODE_MAX, "%s", fg_json_get_str(p, "spec", "nodeName", NULL));
    }
    json_object_put(l);
    return killed;
}

unsigned chaos_agents_restarts(struct fg_simcluster *c)
{
    json_object *l = share_list(c, &fg_kube_pods, SHARE_SYSTEM_NS, CHAOS_AGENT_SELECTOR);
    json_object *items = fg_json_get(l, "items", NULL);
    int64_t n = 0;
    for (size_t i = 0; i < fg_json_array_len(items); i++) {
        int64_t r = 0;
        json_object *cs = fg_json_get(fg_json_at(items, i), "status", "containerStatuses", NULL);
        if (fg_json_get_int64(fg_json_at(cs, 0), &r, "restartCount", NULL))
            n += r;
    }
    json_object_put(l);
    return (unsigned)n;
}
