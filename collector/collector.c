/* collector — rounds of scrapes, attribution and delivery on an event_base; see collector.h. */
#include "collector/collector.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "collector/fetch.h"
#include "collector/targets.h"
#include "collector/uidclock.h"
#include "collector/scraped.h"

#define COMPONENT "collector"
#define FORGET_ROUNDS 10   /* a uid unseen for this many rounds is forgotten */

struct scrape {
    struct fg_collector *c;
    const struct fg_target *t;
    struct fg_fetch_get *get;
    uint64_t t0_ns;
};

struct fg_collector {
    struct event_base *base;
    struct fg_attrib_source src;
    struct fg_collector_opts o;
    struct { fg_collector_sink *fn; void *ud; } sinks[FG_COLLECTOR_MAX_SINKS];
    size_t nsinks;
    bool running;
    struct fg_fetch *fetch;
    struct event *timer;
    struct fg_uid_clock *clock;
    uint64_t round, round_t0_ns;
    struct fg_target *targets;
    struct scrape *scrapes;
    size_t ntargets, next, inflight;
    /* metrics */
    struct fg_counter *rounds, *scrape_results[FG_SCRAPE__COUNT], *samples, *unattributed[FG_UNATTR__COUNT];
    struct fg_counter *nonfinite, *bad_lines;
    struct fg_gauge *ntargets_g;
    struct fg_histogram *duration;
};

static const char *result_name(enum fg_scrape_result r)
{
    return r == FG_SCRAPE_PARSE_ERROR ? "parse_error" : fg_fetch_result_name((enum fg_fetch_result)r);
}

static void register_metrics(struct fg_collector *c, struct fg_metrics *reg)
{
    c->rounds = fg_metrics_counter(reg, "fracgpu_collector_rounds_total", "Rounds of scrapes of every node agent.",
                                   NULL);
    for (int r = 0; r < FG_SCRAPE__COUNT; r++)
        c->scrape_results[r] = fg_metrics_counter(reg, "fracgpu_collector_scrapes_total",
                                                  "Scrapes of node agents, by result.",
                                                  (const char *[]){ "result", result_name(r), NULL });
    c->samples = fg_metrics_counter(reg, "fracgpu_collector_samples_total",
                                    "Per-pod GPU samples attributed to a GPUWorkload and delivered.", NULL);
    for (int r = 0; r < FG_UNATTR__COUNT; r++)
        c->unattributed[r] = fg_metrics_counter(reg, "fracgpu_collector_unattributed_total",
                                                "Per-pod samples not attributed to any GPUWorkload, by reason.",
                                                (const char *[]){ "reason", fg_unattributed_name(r), NULL });
    c->nonfinite = fg_metrics_counter(reg, "fracgpu_collector_nonfinite_values_total",
                                      "Per-pod series read with a NaN or infinite value.", NULL);
    c->bad_lines = fg_metrics_counter(reg, "fracgpu_collector_malformed_lines_total",
                                      "Lines of node agents' bodies refused as malformed.", NULL);
    c->ntargets_g = fg_metrics_gauge(reg, "fracgpu_collector_targets", "Node agents scraped in the last round.", NULL);
    c->duration = fg_metrics_histogram(reg, "fracgpu_collector_scrape_duration_seconds",
                                       "Time of one scrape of a node agent, failed ones included.", NULL,
                                       fg_metrics_latency_bounds, fg_metrics_latency_bounds_n);
}

enum fg_err fg_collector_new(struct event_base *base, const struct fg_attrib_source *src,
                             const struct fg_collector_opts *opts, struct fg_metrics *reg, struct fg_collector **out,
                             char *errmsg)
{
    *out = NULL;
    if (!opts->interval_ms || !opts->timeout_ms || opts->timeout_ms > 600000 || !opts->concurrency ||
        opts->concurrency > 1024 || !opts->port || opts->port > 65535 || !opts->max_body)
        return fg_errmsg(errmsg, FG_E_INVAL, "collector: interval, timeout (at most 10m), concurrency (1-1024), "
                                             "port and body cap must be set");
    struct fg_collector *c = fg_calloc(1, sizeof(*c));
    c->base = base;
    c->src = *src;
    c->o = *opts;
    c->o.selector = NULL;   /* the index's business (targets.h), not kept */
    register_metrics(c, reg);
    *out = c;
    return FG_OK;
}

enum fg_err fg_collector_subscribe(struct fg_collector *c, fg_collector_sink *fn, void *ud)
{
    if (c->running)
        return FG_E_BUSY;
    if (c->nsinks == FG_COLLECTOR_MAX_SINKS)
        return FG_E_INVAL;
    c->sinks[c->nsinks].fn = fn;
    c->sinks[c->nsinks++].ud = ud;
    return FG_OK;
}

/* ---- one scrape's answer ---- */

static void deliver_pod(struct fg_collector *c, const struct fg_target *t, const struct fg_scraped_pod *p, int64_t t_ms)
{
    struct fg_attribution a;
    enum fg_unattributed why;
    if (!fg_attribute(&c->src, p->ns, p->name, t->node, &a, &why)) {
        fg_counter_add(c->unattributed[why], 1);
        return;
    }
    if (!fg_uid_clock_accept(c->clock, a.uid, t_ms, c->round)) {
        fg_counter_add(c->unattributed[FG_UNATTR_TIME_BACKWARDS], 1);
        return;
    }
    const char *uuids[FG_SCRAPED_MAX_GPUS];
    struct fg_collector_sample s = { .ns = p->ns, .gpuworkload = a.gpuworkload, .kind = a.kind,
                                     .kind_index = a.kind_index, .workload = a.workload, .pod = p->name,
                                     .pod_uid = a.uid, .node = t->node, .gpu_uuids = uuids, .ngpus = p->ngpus,
                                     .t_ms = t_ms };
    for (size_t i = 0; i < p->ngpus; i++) {
        const struct fg_scraped_gpu *g = &p->gpus[i];
        uuids[i] = g->uuid;
        s.has_compute |= g->has_compute;
        s.has_memory |= g->has_memory;
        s.compute_milli += g->has_compute ? g->compute_ratio * 1000.0 : 0;
        s.memory_mib += g->has_memory ? g->memory_bytes / (1024.0 * 1024.0) : 0;
    }
    fg_counter_add(c->samples, 1);
    for (size_t i = 0; i < c->nsinks; i++)
        c->sinks[i].fn(c->sinks[i].ud, &s);
}

static enum fg_scrape_result read_body(struct fg_collector *c, const struct fg_target *t, const struct fg_buf *body)
{
    struct fg_scraped u;
    char why[FG_ERRMSG_MAX] = "";
    enum fg_err err = fg_scraped_read(body->data ? body->data : "", body->len, c->o.max_body, &u, why);
    fg_counter_add(c->bad_lines, u.parse.errors);
    fg_counter_add(c->nonfinite, u.nonfinite);
    if (err) {
        fg_log(FG_LOG_WARN, COMPONENT, "%s (%s): %s", t->key, t->url, why);
        fg_scraped_cleanup(&u);
        return FG_SCRAPE_PARSE_ERROR;
    }
    if (u.parse.errors)
        fg_log(FG_LOG_WARN, COMPONENT, "%s (%s): %zu malformed lines, the first %s", t->key, t->url, u.parse.errors, why);
    int64_t t_ms = fg_clock_wall_ms();
    for (size_t i = 0; i < u.npods; i++)
        deliver_pod(c, t, &u.pods[i], t_ms);
    enum fg_scrape_result r = u.parse.errors ? FG_SCRAPE_PARSE_ERROR : FG_SCRAPE_OK;
    fg_scraped_cleanup(&u);
    return r;
}

/* ---- rounds ---- */

static void pump(struct fg_collector *c);

static void round_end(struct fg_collector *c)
{
    if (c->round > FORGET_ROUNDS)
        fg_uid_clock_forget(c->clock, c->round - FORGET_ROUNDS);
    uint64_t elapsed_ms = (fg_clock_mono_ns() - c->round_t0_ns) / 1000000u;
    uint64_t wait_ms = elapsed_ms < c->o.interval_ms ? c->o.interval_ms - elapsed_ms : 0;
    struct timeval tv = { .tv_sec = (time_t)(wait_ms / 1000), .tv_usec = (suseconds_t)(wait_ms % 1000) * 1000 };
    evtimer_add(c->timer, &tv);
}

static void scraped(void *ud, enum fg_fetch_result r, long http_code, const struct fg_buf *body, const char *why)
{
    (void)http_code;
    struct scrape *s = ud;
    struct fg_collector *c = s->c;
    s->get = NULL;
    c->inflight--;
    enum fg_scrape_result res = (enum fg_scrape_result)r;
    if (r == FG_FETCH_OK)
        res = read_body(c, s->t, body);
    else
        fg_log(FG_LOG_DEBUG, COMPONENT, "%s (%s): %s: %s", s->t->key, s->t->url, fg_fetch_result_name(r), why);
    fg_counter_add(c->scrape_results[res], 1);
    fg_histogram_observe(c->duration, (double)(fg_clock_mono_ns() - s->t0_ns) / 1e9);
    pump(c);
}

static void pump(struct fg_collector *c)
{
    while (c->running && c->inflight < c->o.concurrency && c->next < c->ntargets) {
        struct scrape *s = &c->scrapes[c->next];
        *s = (struct scrape){ .c = c, .t = &c->targets[c->next], .t0_ns = fg_clock_mono_ns() };
        c->next++;
        c->inflight++;
        s->get = fg_fetch_start(c->fetch, s->t->url, (unsigned)c->o.timeout_ms, c->o.max_body, scraped, s);
    }
    if (c->running && !c->inflight && c->next == c->ntargets)
        round_end(c);
}

static void round_start(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    struct fg_collector *c = ud;
    c->round++;
    c->round_t0_ns = fg_clock_mono_ns();
    free(c->targets);
    free(c->scrapes);
    c->ntargets = fg_targets_list(c->src.pods, c->o.port, &c->targets);
    c->scrapes = fg_calloc(c->ntargets ? c->ntargets : 1, sizeof(*c->scrapes));
    c->next = 0;
    c->inflight = 0;
    fg_counter_add(c->rounds, 1);
    fg_gauge_set(c->ntargets_g, (double)c->ntargets);
    pump(c);
}

void fg_collector_start(struct fg_collector *c)
{
    if (c->running)
        return;
    c->fetch = fg_fetch_new(c->base);
    c->clock = fg_uid_clock_new();
    c->timer = evtimer_new(c->base, round_start, c);
    if (!c->timer)
        abort();
    c->running = true;
    c->round = 0;
    struct timeval now = { 0, 0 };
    evtimer_add(c->timer, &now);
    fg_log(FG_LOG_INFO, COMPONENT, "scraping the node agents every %llu ms (timeout %llu ms, %u at once)",
           (unsigned long long)c->o.interval_ms, (unsigned long long)c->o.timeout_ms, c->o.concurrency);
}

void fg_collector_stop(struct fg_collector *c)
{
    if (!c->running)
        return;
    c->running = false;
    event_free(c->timer);
    c->timer = NULL;
    fg_fetch_free(c->fetch);   /* cancels every scrape: no callback from here on */
    c->fetch = NULL;
    fg_uid_clock_free(c->clock);
    c->clock = NULL;
    free(c->targets);
    free(c->scrapes);
    c->targets = NULL;
    c->scrapes = NULL;
    c->ntargets = c->next = c->inflight = 0;
}

void fg_collector_free(struct fg_collector *c)
{
    if (!c)
        return;
    fg_collector_stop(c);
    free(c);
}

void fg_collector_stats(const struct fg_collector *c, struct fg_collector_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->rounds = fg_counter_value(c->rounds);
    for (int r = 0; r < FG_SCRAPE__COUNT; r++)
        out->scrapes[r] = fg_counter_value(c->scrape_results[r]);
    out->samples = fg_counter_value(c->samples);
    for (int r = 0; r < FG_UNATTR__COUNT; r++)
        out->unattributed[r] = fg_counter_value(c->unattributed[r]);
    out->nonfinite = fg_counter_value(c->nonfinite);
    out->bad_lines = fg_counter_value(c->bad_lines);
    out->targets = (size_t)fg_gauge_value(c->ntargets_g);
}
