/*
 * gentd26 — the GenTD26 trace (data/alibaba-genai-2026-gpu-util/, see its PROVENANCE.md): for each pod
 * of a production Stable Diffusion serving system, its GPU utilization (a duty cycle, %) and the GPU
 * memory it used (bytes), about once a minute for 22.8 hours. A pod is known only by a hash of its
 * IP (container_ip, 32 hex digits), which joins the two files.
 *
 * The reader takes both CSV files (their columns in different orders, so by header name) into one
 * series per pod, its utilization and memory samples each in time order, times in seconds after the
 * trace's first sample. Any malformed row is an error naming file and line. A series is found by
 * its hash, a prefix of it naming one series alone, or its position among the series in hash order.
 * fg_gentd26_at replays a series as a step function: the last sample at or before the time asked,
 * nothing (0) before a kind's first sample, and the whole series looping once it has run out, so a
 * pod that lives longer than its trace goes on with a day like it.
 *
 * The simulated kubelets' usage driver replays it (usage.h); the rightsizing experiment
 * (docs/benchmarks.md) reads the same files and may link this library (fg_gentd26, fg_base only).
 * Ownership: a trace owns all its series and samples; fg_gentd26_cleanup frees them.
 */
#ifndef FG_SIM_GENTD26_H
#define FG_SIM_GENTD26_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define FG_GENTD26_UTIL_FILE "pod_gpu_duty_cycle_anon.csv"
#define FG_GENTD26_MEMORY_FILE "pod_gpu_memory_used_bytes_anon.csv"
#define FG_GENTD26_ID_LEN 32
#define FG_GENTD26_PREFIX_MIN 6   /* the shortest hash prefix that names a series */

struct fg_gentd26_point {
    int64_t t;      /* seconds after the trace's first sample */
    double v;       /* utilization %, or bytes */
};

struct fg_gentd26_series {
    char id[FG_GENTD26_ID_LEN + 1];
    struct fg_gentd26_point *util, *mem;
    size_t nutil, nmem;
    int64_t start;    /* its first sample of either kind */
    int64_t period;   /* from start to one sampling step after its last sample: how long one loop lasts */
};

struct fg_gentd26 {
    struct fg_gentd26_series *series;   /* in id order */
    size_t n;
    size_t util_rows, mem_rows;
};

/* Reads the two files' text (util_origin and mem_origin name them in errors) into t (initialised
 * here). FG_E_PARSE with "ORIGIN:LINE: ..." for a malformed row; t is empty then. */
enum fg_err fg_gentd26_parse(struct fg_gentd26 *t, const char *util_csv, const char *util_origin, const char *mem_csv,
                             const char *mem_origin, char *errmsg) FG_MUST_USE;
/* Reads dir/FG_GENTD26_UTIL_FILE and dir/FG_GENTD26_MEMORY_FILE. FG_E_IO naming a file that cannot be
 * read; otherwise as fg_gentd26_parse. */
enum fg_err fg_gentd26_load(struct fg_gentd26 *t, const char *dir, char *errmsg) FG_MUST_USE;
void fg_gentd26_cleanup(struct fg_gentd26 *t);

/* The series that name gives (borrowed from t): its hash, a prefix of at least FG_GENTD26_PREFIX_MIN
 * hex digits that only it starts with, or a position "0" to "n-1" in hash order. NULL, with why in
 * errmsg, when name gives none or more than one. */
const struct fg_gentd26_series *fg_gentd26_find(const struct fg_gentd26 *t, const char *name, char *errmsg);

/* The series' utilization (%) and memory (bytes) at offset seconds after its start (looping over
 * its period). */
void fg_gentd26_at(const struct fg_gentd26_series *s, double offset, double *util, double *mem);

#endif
