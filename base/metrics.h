/*
 * metrics — a registry of counters, gauges and histograms, written as one Prometheus text body.
 *
 * Every fracgpu process has one registry (its manager's), served at /metrics. A component asks the
 * registry for a series — a family name, its help text, and the series' label pairs — once, at
 * setup, and keeps the pointer; updating it afterwards is one atomic operation from any thread, with
 * no lock and no allocation. Asking again for the same name and labels returns the same series, so
 * two components may share one. Values that live elsewhere (cache sizes, queue depths, a
 * pre-rendered exposition) are written by collectors: functions the registry calls at every scrape,
 * after its own families.
 *
 * Families are written in the order they were first registered, each with its HELP and TYPE once
 * and its series in registration order (base/prom.h writes the text). Histograms have fixed upper
 * bounds, cumulative buckets and the implicit +Inf bucket, as Prometheus client libraries do.
 *
 * Misuse — an invalid metric or label name, one family registered with two types or two bucket
 * layouts — is a bug in fracgpu and fails an fg_assert. Registration and writing take the
 * registry's lock; collectors run under it and must not register.
 *
 * Ownership: series and families belong to the registry and live until fg_metrics_free; label
 * strings are copied. Collectors' ud is borrowed and must outlive the registry's last write.
 */
#ifndef FG_BASE_METRICS_H
#define FG_BASE_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

struct fg_metrics;
struct fg_counter;
struct fg_gauge;
struct fg_histogram;

struct fg_metrics *fg_metrics_new(void);
/* NULL is ignored. */
void fg_metrics_free(struct fg_metrics *r);

/* labels: NULL or NULL-terminated key, value pairs (copied); a pair whose value is NULL is left out. */
struct fg_counter *fg_metrics_counter(struct fg_metrics *r, const char *name, const char *help,
                                      const char *const *labels);
struct fg_gauge *fg_metrics_gauge(struct fg_metrics *r, const char *name, const char *help,
                                  const char *const *labels);
/* bounds: n ascending finite upper bounds (copied); the +Inf bucket is implicit. */
struct fg_histogram *fg_metrics_histogram(struct fg_metrics *r, const char *name, const char *help,
                                          const char *const *labels, const double *bounds, size_t n);

void fg_counter_add(struct fg_counter *c, uint64_t n);
uint64_t fg_counter_value(const struct fg_counter *c);
void fg_gauge_set(struct fg_gauge *g, double v);
void fg_gauge_add(struct fg_gauge *g, double delta);
double fg_gauge_value(const struct fg_gauge *g);
void fg_histogram_observe(struct fg_histogram *h, double v);
/* Observations so far (the _count sample). */
uint64_t fg_histogram_count(const struct fg_histogram *h);

/* Called at every write, in registration order after the registry's own families; appends whole
 * families with base/prom.h. */
typedef void fg_metrics_collect_fn(void *ud, struct fg_buf *out);
void fg_metrics_add_collector(struct fg_metrics *r, fg_metrics_collect_fn *fn, void *ud);

/* Appends the whole exposition to out (an unlimited buffer). */
void fg_metrics_write(struct fg_metrics *r, struct fg_buf *out);

/* Upper bounds for latencies in seconds: 1 ms to 60 s, roughly ×2.5 apart (client-go's reconcile
 * histogram uses the same span). */
extern const double fg_metrics_latency_bounds[];
extern const size_t fg_metrics_latency_bounds_n;

#endif
