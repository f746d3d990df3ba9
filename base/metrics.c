/*
 * metrics — the registry; see metrics.h.
 *
 * A family is a name, a type, its help and an array of series; a series is its rendered label set
 * (`{k="v"}`, escaped once at registration) and its value. Counters are atomic integers; gauges keep
 * the bits of a double in an atomic integer and change by compare-and-swap; a histogram's buckets
 * are atomic counters, its sum a gauge-like double. A write reads each value once, so a histogram
 * scraped while being observed may show a count one ahead of its buckets — as in every Prometheus
 * client, and harmless.
 */
#include "base/metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/assert.h"
#include "base/mem.h"
#include "base/prom.h"

struct family;

struct series {
    const struct family *family;
    char *labels;               /* rendered: "" or {k="v",...} */
    char *key;                  /* the raw pairs joined with \x1f: what a lookup compares */
    atomic_uint_fast64_t value; /* counter: the count; gauge: the double's bits; histogram: the count */
    atomic_uint_fast64_t sum;   /* histogram: the double's bits of the sum */
    atomic_uint_fast64_t *buckets;  /* histogram: one per bound, not cumulative */
};

struct family {
    char *name;
    char *help;
    enum fg_prom_type type;
    double *bounds;
    size_t n_bounds;
    struct series **series;
    size_t n_series;
};

struct collector {
    fg_metrics_collect_fn *fn;
    void *ud;
};

struct fg_metrics {
    pthread_mutex_t lock;
    struct family **families;
    size_t n_families;
    struct collector *collectors;
    size_t n_collectors;
};

const double fg_metrics_latency_bounds[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                             0.5,   1,      2.5,   5,    10,    30,    60 };
const size_t fg_metrics_latency_bounds_n = sizeof fg_metrics_latency_bounds / sizeof fg_metrics_latency_bounds[0];

static uint64_t bits_of(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

static double double_of(uint64_t u)
{
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static void add_double(atomic_uint_fast64_t *cell, double delta)
{
    uint_fast64_t old = atomic_load(cell);
    while (!atomic_compare_exchange_weak(cell, &old, bits_of(double_of(old) + delta)))
        ;
}

struct fg_metrics *fg_metrics_new(void)
{
    struct fg_metrics *r = fg_calloc(1, sizeof *r);
    pthread_mutex_init(&r->lock, NULL);
    return r;
}

void fg_metrics_free(struct fg_metrics *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_families; i++) {
        struct family *f = r->families[i];
        for (size_t j = 0; j < f->n_series; j++) {
            free(f->series[j]->labels);
            free(f->series[j]->key);
            free(f->series[j]->buckets);
            free(f->series[j]);
        }
        free(f->series);
        free(f->bounds);
        free(f->help);
        free(f->name);
        free(f);
    }
    free(r->families);
    free(r->collectors);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static char *pairs_key(const char *const *labels)
{
    struct fg_buf b = FG_BUF_INIT;
    for (size_t i = 0; labels && labels[i]; i += 2) {
        fg_assert(fg_prom_label_name_valid(labels[i]));
        if (!labels[i + 1])
            continue;   /* left out, as base/prom.h leaves it out */
        enum fg_err err = fg_buf_printf(&b, "%s\x1f%s\x1f", labels[i], labels[i + 1]);
        (void)err;
    }
    return fg_buf_take(&b);
}

static struct family *family_get(struct fg_metrics *r, const char *name, const char *help, enum fg_prom_type type,
                                 const double *bounds, size_t n_bounds)
{
    for (size_t i = 0; i < r->n_families; i++) {
        struct family *f = r->families[i];
        if (strcmp(f->name, name))
            continue;
        fg_assert(f->type == type && f->n_bounds == n_bounds);
        fg_assert(!n_bounds || !memcmp(f->bounds, bounds, n_bounds * sizeof *bounds));
        return f;
    }
    fg_assert(fg_prom_metric_name_valid(name));
    for (size_t i = 1; i < n_bounds; i++)
        fg_assert(bounds[i - 1] < bounds[i]);
    struct family *f = fg_calloc(1, sizeof *f);
    f->name = fg_strdup(name);
    f->help = fg_strdup(help ? help : "");
    f->type = type;
    if (n_bounds) {
        f->bounds = fg_malloc(n_bounds * sizeof *bounds);
        memcpy(f->bounds, bounds, n_bounds * sizeof *bounds);
        f->n_bounds = n_bounds;
    }
    r->families = fg_realloc(r->families, (r->n_families + 1) * sizeof *r->families);
    r->families[r->n_families++] = f;
    return f;
}

static struct series *series_get(struct fg_metrics *r, const char *name, const char *help, enum fg_prom_type type,
                                 const char *const *labels, const double *bounds, size_t n_bounds)
{
    pthread_mutex_lock(&r->lock);
    struct family *f = family_get(r, name, help, type, bounds, n_bounds);
    char *key = pairs_key(labels);
    struct series *s = NULL;
    for (size_t i = 0; i < f->n_series && !s; i++)
        if (!strcmp(f->series[i]->key, key))
            s = f->series[i];
    if (s) {
        free(key);
        goto out_unlock;
    }
    s = fg_calloc(1, sizeof *s);
    s->family = f;
    s->key = key;
    struct fg_buf rendered = FG_BUF_INIT;
    fg_prom_labels(&rendered, labels);
    s->labels = fg_buf_take(&rendered);
    if (n_bounds)
        s->buckets = fg_calloc(n_bounds, sizeof *s->buckets);
    f->series = fg_realloc(f->series, (f->n_series + 1) * sizeof *f->series);
    f->series[f->n_series++] = s;
out_unlock:
    pthread_mutex_unlock(&r->lock);
    return s;
}

struct fg_counter *fg_metrics_counter(struct fg_metrics *r, const char *name, const char *help,
                                      const char *const *labels)
{
    return (struct fg_counter *)series_get(r, name, help, FG_PROM_COUNTER, labels, NULL, 0);
}

struct fg_gauge *fg_metrics_gauge(struct fg_metrics *r, const char *name, const char *help, const char *const *labels)
{
    return (struct fg_gauge *)series_get(r, name, help, FG_PROM_GAUGE, labels, NULL, 0);
}

struct fg_histogram *fg_metrics_histogram(struct fg_metrics *r, const char *name, const char *help,
                                          const char *const *labels, const double *bounds, size_t n)
{
    fg_assert(n > 0);
    return (struct fg_histogram *)series_get(r, name, help, FG_PROM_HISTOGRAM, labels, bounds, n);
}

void fg_counter_add(struct fg_counter *c, uint64_t n)
{
    atomic_fetch_add_explicit(&((struct series *)c)->value, n, memory_order_relaxed);
}

uint64_t fg_counter_value(const struct fg_counter *c)
{
    return atomic_load(&((struct series *)c)->value);
}

void fg_gauge_set(struct fg_gauge *g, double v)
{
    atomic_store(&((struct series *)g)->value, bits_of(v));
}

void fg_gauge_add(struct fg_gauge *g, double delta)
{
    add_double(&((struct series *)g)->value, delta);
}

double fg_gauge_value(const struct fg_gauge *g)
{
    return double_of(atomic_load(&((struct series *)g)->value));
}

void fg_histogram_observe(struct fg_histogram *h, double v)
{
    struct series *s = (struct series *)h;
    const struct family *f = s->family;
    size_t b = 0;
    while (b < f->n_bounds && !(v <= f->bounds[b]))   /* NaN falls through to +Inf, as in client_golang */
        b++;
    if (b < f->n_bounds)
        atomic_fetch_add_explicit(&s->buckets[b], 1, memory_order_relaxed);
    add_double(&s->sum, v);
    atomic_fetch_add_explicit(&s->value, 1, memory_order_relaxed);
}

uint64_t fg_histogram_count(const struct fg_histogram *h)
{
    return atomic_load(&((struct series *)h)->value);
}

void fg_metrics_add_collector(struct fg_metrics *r, fg_metrics_collect_fn *fn, void *ud)
{
    pthread_mutex_lock(&r->lock);
    r->collectors = fg_realloc(r->collectors, (r->n_collectors + 1) * sizeof *r->collectors);
    r->collectors[r->n_collectors++] = (struct collector){ fn, ud };
    pthread_mutex_unlock(&r->lock);
}

/* "name_suffix{labels}" with le added to the rendered labels of s. */
static void bucket_line(struct fg_buf *out, const struct family *f, const struct series *s, const char *le,
                        uint64_t count)
{
    enum fg_err err = fg_buf_printf(out, "%s_bucket", f->name);
    size_t n = strlen(s->labels);
    if (n)   /* {k="v"} -> {k="v",le="..."} */
        err = err ? err : fg_buf_printf(out, "%.*s,le=\"%s\"} %llu\n", (int)(n - 1), s->labels, le,
                                        (unsigned long long)count);
    else
        err = err ? err : fg_buf_printf(out, "{le=\"%s\"} %llu\n", le, (unsigned long long)count);
    (void)err;
}

static void write_histogram(struct fg_buf *out, const struct family *f, const struct series *s)
{
    uint64_t cumulative = 0;
    for (size_t b = 0; b < f->n_bounds; b++) {
        cumulative += atomic_load(&s->buckets[b]);
        struct fg_buf le = FG_BUF_INIT;
        fg_prom_value(&le, f->bounds[b]);
        bucket_line(out, f, s, fg_buf_str(&le), cumulative);
        fg_buf_cleanup(&le);
    }
    uint64_t count = atomic_load(&s->value);
    if (count < cumulative)
        count = cumulative;   /* an observation under way: its bucket came in before its count */
    bucket_line(out, f, s, "+Inf", count);
    enum fg_err err = fg_buf_printf(out, "%s_sum%s ", f->name, s->labels);
    (void)err;
    fg_prom_value(out, double_of(atomic_load(&s->sum)));
    err = fg_buf_printf(out, "\n%s_count%s %llu\n", f->name, s->labels, (unsigned long long)count);
    (void)err;
}

void fg_metrics_write(struct fg_metrics *r, struct fg_buf *out)
{
    pthread_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->n_families; i++) {
        const struct family *f = r->families[i];
        fg_prom_family(out, f->name, f->type, f->help);
        for (size_t j = 0; j < f->n_series; j++) {
            const struct series *s = f->series[j];
            enum fg_err err = FG_OK;
            if (f->type == FG_PROM_HISTOGRAM) {
                write_histogram(out, f, s);
            } else if (f->type == FG_PROM_COUNTER) {
                err = fg_buf_printf(out, "%s%s %llu\n", f->name, s->labels,
                                    (unsigned long long)atomic_load(&s->value));
            } else {
                err = fg_buf_printf(out, "%s%s ", f->name, s->labels);
                fg_prom_value(out, double_of(atomic_load(&s->value)));
                err = err ? err : fg_buf_puts(out, "\n");
            }
            (void)err;
        }
    }
    for (size_t i = 0; i < r->n_collectors; i++)
        r->collectors[i].fn(r->collectors[i].ud, out);
    pthread_mutex_unlock(&r->lock);
}
