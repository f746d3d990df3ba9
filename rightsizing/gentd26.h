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
 * Files may be plain or compressed: fg_gentd26_load takes each of the two names as it is, or with
 * ".xz" (liblzma) or ".gz" (zlib) after it, and tells a compressed file by its first bytes, not its
 * name. A third form holds both kinds in one file (fg_gentd26_load_combined, what a person writes
 * by hand or exports from their own metrics): columns `timestamp_anon`, `container_ip`,
 * `duty_cycle` (%) and `memory_bytes`, in any order, either value left empty when it was not
 * measured at that moment.
 *
 * `fracgpu simulate` (rightsizing/simulate/) replays it through the recommender, and the simulated
 * kubelets' usage driver (e2e/cluster/gpuusage.h) replays it as GPU processes' use. Library
 * fg_gentd26: fg_base, liblzma and zlib only.
 * Ownership: a trace owns all its series and samples; fg_gentd26_cleanup frees them.
 */
#ifndef FG_RIGHTSIZING_GENTD26_H
#define FG_RIGHTSIZING_GENTD26_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
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
/* Reads dir/FG_GENTD26_UTIL_FILE and dir/FG_GENTD26_MEMORY_FILE, each plain or as NAME.xz or NAME.gz
 * (the first of the three that exists). FG_E_IO naming a file that cannot be read or decompressed;
 * otherwise as fg_gentd26_parse. */
enum fg_err fg_gentd26_load(struct fg_gentd26 *t, const char *dir, char *errmsg) FG_MUST_USE;
/* The combined form (above) from text, origin naming it in errors; a row with neither value, or with
 * a malformed one, is FG_E_PARSE. */
enum fg_err fg_gentd26_parse_combined(struct fg_gentd26 *t, const char *csv, const char *origin,
                                      char *errmsg) FG_MUST_USE;
/* The combined form from a file, plain or compressed. */
enum fg_err fg_gentd26_load_combined(struct fg_gentd26 *t, const char *path, char *errmsg) FG_MUST_USE;
/* A whole file into b, decompressing it when it starts as an xz or gzip stream does (b->limit bounds
 * the decompressed size). FG_E_IO naming path for a file that cannot be read or decompressed,
 * FG_E_TOO_BIG past the limit. */
enum fg_err fg_gentd26_read_text(struct fg_buf *b, const char *path, char *errmsg) FG_MUST_USE;
void fg_gentd26_cleanup(struct fg_gentd26 *t);

/* The series that name gives (borrowed from t): its hash, a prefix of at least FG_GENTD26_PREFIX_MIN
 * hex digits that only it starts with, or a position "0" to "n-1" in hash order. NULL, with why in
 * errmsg, when name gives none or more than one. */
const struct fg_gentd26_series *fg_gentd26_find(const struct fg_gentd26 *t, const char *name, char *errmsg);

/* The series' utilization (%) and memory (bytes) at offset seconds after its start (looping over
 * its period). */
void fg_gentd26_at(const struct fg_gentd26_series *s, double offset, double *util, double *mem);

#endif
