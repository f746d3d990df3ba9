/* The recommender's decaying histogram (histogram.h). */
#include "rightsizing/histogram.h"

#include <math.h>
#include <string.h>

/* Past this many half-lives from the reference, weights are rescaled to a new one (2^20 keeps a
 * double's 52 bits of mantissa far from losing the oldest samples' weight in the sum). */
#define MAX_HALF_LIVES 20.0

double fg_hist_bucket_start(const struct fg_hist *h, int i)
{
    return h->o.first * (pow(h->o.ratio, i) - 1) / (h->o.ratio - 1);
}

bool fg_hist_init(struct fg_hist *h, const struct fg_hist_opts *o)
{
    if (!(o->first > 0) || !(o->ratio > 1) || !(o->max > 0) || o->half_life_ms <= 0 || !isfinite(o->max))
        return false;
    struct fg_hist t = { .o = *o, .empty = true };
    while (t.n < FG_HIST_MAX_BUCKETS && fg_hist_bucket_start(&t, t.n) <= o->max)
        t.n++;
    if (fg_hist_bucket_start(&t, t.n) <= o->max)
        return false;   /* more buckets than there is room for */
    *h = t;
    return true;
}

int fg_hist_bucket(const struct fg_hist *h, double value)
{
    int i = (int)floor(log1p(value * (h->o.ratio - 1) / h->o.first) / log(h->o.ratio));
    if (i >= 1 && value < fg_hist_bucket_start(h, i))
        i--;   /* rounding at a bucket's edge */
    else if (i + 1 < h->n && value >= fg_hist_bucket_start(h, i + 1))
        i++;
    return i < 0 ? 0 : i >= h->n ? h->n - 1 : i;
}

/* Moves the reference to t_ms, scaling every weight to it. */
static void shift_reference(struct fg_hist *h, int64_t t_ms)
{
    double f = exp2((double)(h->reference_ms - t_ms) / (double)h->o.half_life_ms);
    h->total = 0;
    for (int i = 0; i < h->n; i++) {
        h->weight[i] *= f;
        h->total += h->weight[i];
    }
    h->reference_ms = t_ms;
}

enum fg_hist_refusal fg_hist_add(struct fg_hist *h, double value, double weight, int64_t t_ms)
{
    if (!isfinite(value) || value < 0 || value > h->o.max)
        return FG_HIST_BAD_VALUE;
    if (!isfinite(weight) || weight <= 0)
        return FG_HIST_BAD_WEIGHT;
    if (h->empty) {
        h->reference_ms = h->last_ms = t_ms;
        h->empty = false;
    } else if (t_ms < h->last_ms - h->o.half_life_ms) {
        return FG_HIST_TIME_BACKWARDS;
    }
    double lives = (double)(t_ms - h->reference_ms) / (double)h->o.half_life_ms;
    if (lives > MAX_HALF_LIVES) {
        shift_reference(h, t_ms);
        lives = 0;
    }
    double w = weight * exp2(lives);
    h->weight[fg_hist_bucket(h, value)] += w;
    h->total += w;
    if (t_ms > h->last_ms)
        h->last_ms = t_ms;
    return FG_HIST_OK;
}

double fg_hist_percentile(const struct fg_hist *h, double p)
{
    if (h->empty || !(h->total > 0))
        return 0;
    double want = p * h->total, cum = 0;
    int i = 0;
    for (; i < h->n - 1; i++) {
        cum += h->weight[i];
        if (cum >= want * (1 - 1e-12))
            break;
    }
    double end = fg_hist_bucket_start(h, i + 1);
    return end < h->o.max ? end : h->o.max;
}

double fg_hist_weight_at(const struct fg_hist *h, int64_t t_ms)
{
    return h->empty ? 0 : h->total * exp2((double)(h->reference_ms - t_ms) / (double)h->o.half_life_ms);
}
