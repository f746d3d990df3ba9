/*
 * fuzz_trace_csv — the traces' CSV: the reader itself, the GenTD26 usage trace `fracgpu simulate`
 * replays, and the Alibaba trace `fracgpu replay` places.
 *
 * The bytes are a CSV file. fg_csv reads it row by row with no column required; GenTD26 reads it in
 * its combined form, and in its two-file form with the text before the first blank line as the
 * utilization file and the rest as the memory file (the same text for both when there is no blank
 * line). A usage trace that loads is replayed as the simulator replays it: each series found by its
 * position and by a prefix of its hash, and sampled at the start, within, and far past its period.
 * The scheduler's trace reader reads the text as a pod list and as a node list, each pod then viewed
 * as a scheduling request; a list it refuses must append nothing, or the target aborts.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/csv.h"
#include "fuzz/fuzz.h"
#include "rightsizing/gentd26.h"
#include "scheduler/replay/trace.h"

static void csv(const char *text)
{
    static const char *const none[] = { NULL };
    struct fg_csv r;
    char msg[FG_ERRMSG_MAX], *cells[FG_CSV_MAX_CELLS];
    bool row = false;
    if (fg_csv_open(&r, text, "fuzz.csv", none, NULL, msg) == FG_OK) {
        (void)fg_csv_column(&r, "value");
        while (fg_csv_next(&r, cells, &row, msg) == FG_OK && row)
            ;
    }
    fg_csv_close(&r);
}

static void replay(struct fg_gentd26 *t)
{
    static const double offsets[] = { 0, 59.5, 3600, 86400.0 * 365, 1e300 };
    for (size_t i = 0; i < t->n; i++) {
        char name[FG_GENTD26_ID_LEN + 1], msg[FG_ERRMSG_MAX];
        snprintf(name, sizeof name, "%zu", i);
        const struct fg_gentd26_series *s = fg_gentd26_find(t, name, msg);
        snprintf(name, sizeof name, "%.8s", t->series[i].id);
        (void)fg_gentd26_find(t, name, msg);
        for (size_t k = 0; s && k < sizeof offsets / sizeof offsets[0]; k++) {
            double util, mem;
            fg_gentd26_at(s, offsets[k], &util, &mem);
        }
    }
}

static void gentd26(const char *text)
{
    struct fg_gentd26 t;
    char msg[FG_ERRMSG_MAX];
    if (fg_gentd26_parse_combined(&t, text, "usage.csv", msg) == FG_OK)
        replay(&t);
    fg_gentd26_cleanup(&t);

    char *util = fg_strdup(text);
    const char *mem = util;
    char *blank = strstr(util, "\n\n");
    if (blank) {
        blank[1] = '\0';
        mem = blank + 2;
    }
    if (fg_gentd26_parse(&t, util, FG_GENTD26_UTIL_FILE, mem, FG_GENTD26_MEMORY_FILE, msg) == FG_OK)
        replay(&t);
    fg_gentd26_cleanup(&t);
    free(util);
}

static void sched_trace(const char *text)
{
    struct fg_sched_trace t;
    char msg[FG_ERRMSG_MAX];
    fg_sched_trace_init(&t);
    if (fg_sched_trace_parse_pods(&t, text, "pods.csv", msg) == FG_OK)
        for (size_t i = 0; i < t.n_pods; i++) {
            struct fg_sched_pod p;
            fg_sched_trace_pod_request(&t.pods[i], &p);
        }
    if (fg_sched_trace_parse_nodes(&t, text, "nodes.csv", msg) != FG_OK && t.n_nodes)
        abort(); /* a node list refused, but rows of it appended */
    fg_sched_trace_cleanup(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    csv(text);
    gentd26(text);
    sched_trace(text);
    free(text);
    return 0;
}
