/*
 * fuzz_prom_parse — the Prometheus text-format reader, and the collector's use of it.
 *
 * The bytes are a node agent's /metrics body. The collector reads it with fg_scraped_read (per-pod GPU
 * use out of the two families it wants); fg_prom_parse reads it again with small limits (short lines,
 * few labels, stop at the first bad line), so the limits' edges are reached too. Every sample the
 * default reader accepts is written back with the one writer (prom.h) and read again: the reader and
 * the writer must agree on the name, the labels and the value. The results must be the documented
 * ones too (without stop_on_error only a body's size refuses it; with it, one bad line is counted).
 * Anything else aborts.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/prom.h"
#include "base/prom_parse.h"
#include "collector/scraped.h"
#include "fuzz/fuzz.h"

static bool same_value(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

struct expect {
    const struct fg_prom_parsed *want;
    size_t seen;
};

static bool compare(void *ud, const struct fg_prom_parsed *s)
{
    struct expect *e = ud;
    const struct fg_prom_parsed *w = e->want;
    e->seen++;
    if (strcmp(s->name, w->name) != 0 || s->nlabels != w->nlabels || !same_value(s->value, w->value))
        abort();
    for (size_t i = 0; i < s->nlabels; i++)
        if (strcmp(s->labels[i].name, w->labels[i].name) != 0 || strcmp(s->labels[i].value, w->labels[i].value) != 0)
            abort();
    return true;
}

/* Writes s as the exporter would and reads it back. */
static bool round_trip(void *ud, const struct fg_prom_parsed *s)
{
    (void)ud;
    (void)fg_prom_parsed_label(s, "uuid");
    const char **labels = fg_calloc(2 * s->nlabels + 1, sizeof *labels);
    for (size_t i = 0; i < s->nlabels; i++) {
        labels[2 * i] = s->labels[i].name;
        labels[2 * i + 1] = s->labels[i].value;
    }
    struct fg_buf out;
    fg_buf_init(&out, 0);
    fg_prom_sample(&out, s->name, labels, s->value);
    struct expect e = { s, 0 };
    struct fg_prom_parse_stats stats;
    if (fg_prom_parse(out.data, out.len, NULL, compare, &e, &stats, NULL) != FG_OK || e.seen != 1 || stats.errors)
        abort(); /* the writer wrote what the reader refuses */
    fg_buf_cleanup(&out);
    free(labels);
    return true;
}

static bool labels_of(void *ud, const struct fg_prom_parsed *s)
{
    (void)ud;
    (void)fg_prom_parsed_label(s, "pod");
    return s->line < 1000; /* a callback that stops the parse part of the way */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    char msg[FG_ERRMSG_MAX];

    /* Without stop_on_error a body is read whole, bad lines or not: only its size can refuse it. */
    struct fg_scraped u;
    enum fg_err err = fg_scraped_read(body, size, 1u << 20, &u, msg);
    fg_scraped_cleanup(&u); /* on an error too, as the collector does */
    if (err != FG_OK && err != FG_E_TOO_BIG)
        abort();

    struct fg_prom_parse_stats stats;
    err = fg_prom_parse(body, size, NULL, round_trip, NULL, &stats, msg);
    if (err != FG_OK && err != FG_E_TOO_BIG)
        abort();

    /* With it, the first bad line ends the parse. */
    struct fg_prom_parse_opts small = { .max_body = 1u << 16, .max_line = 200, .max_labels = 3, .stop_on_error = true };
    err = fg_prom_parse(body, size, &small, labels_of, NULL, &stats, msg);
    if (err == FG_E_PARSE && stats.errors != 1)
        abort();
    return 0;
}
