/*
 * histogram — the recommender's memory of one resource of one workload: a decaying histogram of
 * samples, as Kubernetes' Vertical Pod Autoscaler keeps one (pure: no I/O, no clock of its own).
 *
 * Buckets grow exponentially: bucket i starts at first·(r^i − 1)/(r − 1) (0, first, first·(1 + r),
 * ...), each r times as wide as the one before, so that small values get fine buckets and the whole
 * range (compute in milli of a GPU, memory in MiB) fits a few dozen. A sample adds its
 * weight to its bucket, scaled by 2^((t − reference)/half-life): newer samples weigh more, and older
 * ones fade by half every half-life, without ever being visited. When the scale would grow too large
 * the reference moves forward and every bucket is scaled down once (VPA's shiftReferenceTimestamp).
 *
 * A percentile is the start of the next bucket after the one where the cumulative weight reaches it
 * (VPA's: the upper end of that bucket, so a recommendation never falls short within a bucket).
 *
 * Bad samples are refused, never stored: a value that is NaN, infinite, negative or above the
 * histogram's range, a weight that is not positive and finite, and a time before the latest sample
 * by more than the half-life (a clock gone backwards); the caller counts refusals. A histogram is
 * a plain struct (fixed size, no allocation), so it is copied and checkpointed as it is.
 */
#ifndef FG_RIGHTSIZING_HISTOGRAM_H
#define FG_RIGHTSIZING_HISTOGRAM_H

#include <stdbool.h>
#include <stdint.h>

#define FG_HIST_MAX_BUCKETS 64

struct fg_hist_opts {
    double first;               /* the first bucket's width, > 0 */
    double ratio;               /* each bucket's width over the one before, > 1 */
    double max;                 /* the largest value accepted; the buckets cover it */
    int64_t half_life_ms;       /* > 0 */
};

struct fg_hist {
    struct fg_hist_opts o;
    int n;                      /* buckets in use */
    double weight[FG_HIST_MAX_BUCKETS];
    double total;               /* sum of weight[] */
    int64_t reference_ms;       /* the time at which a sample weighs its own weight */
    int64_t last_ms;            /* the latest sample's time */
    bool empty;
};

enum fg_hist_refusal {
    FG_HIST_OK = 0,
    FG_HIST_BAD_VALUE,          /* NaN, infinite, negative, or above max */
    FG_HIST_BAD_WEIGHT,         /* not positive and finite */
    FG_HIST_TIME_BACKWARDS,     /* before the latest sample by more than a half-life */
};

/* false (and h untouched) when the options are invalid or need more than FG_HIST_MAX_BUCKETS buckets. */
bool fg_hist_init(struct fg_hist *h, const struct fg_hist_opts *o);
/* Adds value with weight at time t_ms; FG_HIST_OK, or why it was refused (h unchanged). */
enum fg_hist_refusal fg_hist_add(struct fg_hist *h, double value, double weight, int64_t t_ms);
/* The bucket value falls in (value within [0, max]). */
int fg_hist_bucket(const struct fg_hist *h, double value);
/* Where bucket i starts (i may be n: where the last one ends). */
double fg_hist_bucket_start(const struct fg_hist *h, int i);
/* The p-th percentile (0 < p ≤ 1): the end of the bucket where the cumulative weight reaches p of the
 * total; 0 for an empty histogram. */
double fg_hist_percentile(const struct fg_hist *h, double p);
/* The total weight, decayed to time t_ms (≥ the latest sample's): how much history backs it. */
double fg_hist_weight_at(const struct fg_hist *h, int64_t t_ms);

#endif
