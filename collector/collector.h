/*
 * collector — the operator's collector: every interval it scrapes each node agent's /metrics,
 * attributes the per-pod GPU use it reads to the pods' GPUWorkloads, and hands one sample per pod per
 * scrape to its subscribers (the recommender, once wired). A leader-only part of `fracgpu operator`
 * (setup.h); docs/collector.md describes it for operators of a cluster.
 *
 * A round: the targets are listed from the pod cache (targets.h); up to `concurrency` of them are
 * scraped at once, each GET with the scrape timeout and a cap on the body (fetch.h); each answer is
 * read into per-pod use (scraped.h), every pod in it attributed (attribute.h) and checked against its
 * uid's last sample time (uidclock.h), and the pods that pass go to every sink. The next round starts
 * `interval` after this one started, or as soon as this one ends when it took longer.
 *
 * Failures are counted, never fatal and never guessed around: a scrape ends as one of the results of
 * fracgpu_collector_scrapes_total (a body with malformed lines is a parse_error, its good lines still
 * used); a pod that cannot be attributed is counted by reason in fracgpu_collector_unattributed_total
 * and delivered to nobody.
 *
 * Threads: everything runs on the event_base's thread (the kube loop's in the operator): start, stop,
 * the rounds and the sinks. A sink must not block; it must not stop or free the collector.
 */
#ifndef FG_COLLECTOR_COLLECTOR_H
#define FG_COLLECTOR_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/metrics.h"
#include "collector/attribute.h"

struct event_base;

struct fg_collector_opts {
    uint64_t interval_ms;    /* from the start of one round to the start of the next */
    uint64_t timeout_ms;     /* per scrape, connecting included */
    unsigned concurrency;    /* scrapes at once */
    unsigned port;           /* the agents' metrics port when their pod names none "metrics" */
    const char *selector;    /* label selector of the node agents' pods */
    size_t max_body;         /* bytes of one /metrics body */
};

#define FG_COLLECTOR_SELECTOR_DEFAULT "app.kubernetes.io/name=fracgpu,app.kubernetes.io/component=node-agent"
#define FG_COLLECTOR_OPTS_DEFAULT                                                                          \
    { .interval_ms = 30000, .timeout_ms = 5000, .concurrency = 8, .port = 9402,                         \
      .selector = FG_COLLECTOR_SELECTOR_DEFAULT, .max_body = 16u << 20 }

/* One pod's GPU use from one scrape. Every pointer is borrowed for the sink's call only. */
struct fg_collector_sample {
    const char *ns;
    const char *gpuworkload;                  /* the GPUWorkload's name, fg_workload_name's */
    const struct fg_workload_kind *kind;      /* the workload's kind, in the operator's table */
    size_t kind_index;                        /* its place in that table */
    const char *workload;                     /* the workload object's name */
    const char *pod, *pod_uid, *node;
    const char *const *gpu_uuids;             /* the GPUs the pod used, as the agent named them */
    size_t ngpus;
    int64_t t_ms;                             /* wall clock when the scrape's answer arrived */
    bool has_compute;                         /* the agent reported compute for some GPU of the pod */
    double compute_milli;                     /* its utilization ratios × 1000, summed over GPUs and containers */
    bool has_memory;
    double memory_mib;                        /* its used bytes / 2^20, summed likewise */
};

typedef void fg_collector_sink(void *ud, const struct fg_collector_sample *s);

#define FG_COLLECTOR_MAX_SINKS 8

/* The results of a scrape: fetch.h's, then parse_error. */
enum fg_scrape_result {
    FG_SCRAPE_OK, FG_SCRAPE_TIMEOUT, FG_SCRAPE_REFUSED, FG_SCRAPE_HTTP_ERROR, FG_SCRAPE_TOO_BIG, FG_SCRAPE_TRANSPORT,
    FG_SCRAPE_PARSE_ERROR, FG_SCRAPE__COUNT,
};

/* What the collector counted since it was made (the same figures as its metrics). */
struct fg_collector_stats {
    uint64_t rounds;
    uint64_t scrapes[FG_SCRAPE__COUNT];
    uint64_t samples;                          /* delivered to the sinks */
    uint64_t unattributed[FG_UNATTR__COUNT];
    uint64_t nonfinite;                        /* values read that were NaN or infinite */
    uint64_t bad_lines;                        /* malformed lines in the bodies */
    size_t targets;                            /* in the last round */
};

struct fg_collector;

/* A collector on base, reading src's stores (borrowed; src->pods must carry the agent index, see
 * targets.h), its metrics registered in reg. FG_E_INVAL with errmsg for options out of range. */
enum fg_err fg_collector_new(struct event_base *base, const struct fg_attrib_source *src,
                             const struct fg_collector_opts *opts, struct fg_metrics *reg, struct fg_collector **out,
                             char *errmsg) FG_MUST_USE;
/* Stops it if needed (on the base's thread, or with the base not running) and frees. NULL is ignored. */
void fg_collector_free(struct fg_collector *c);

/* Adds a sink; every sample goes to every sink, in subscription order. FG_E_BUSY once started,
 * FG_E_INVAL past FG_COLLECTOR_MAX_SINKS. */
enum fg_err fg_collector_subscribe(struct fg_collector *c, fg_collector_sink *fn, void *ud) FG_MUST_USE;

/* Starts the rounds, the first at once; stop ends them, cancelling scrapes under way (no sink runs
 * afterwards). Both on the base's thread; a stopped collector may start again. */
void fg_collector_start(struct fg_collector *c);
void fg_collector_stop(struct fg_collector *c);

void fg_collector_stats(const struct fg_collector *c, struct fg_collector_stats *out);

#endif
