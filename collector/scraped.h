/*
 * scraped — one node agent's /metrics body, read into per-pod GPU use: the collector's first step.
 *
 * Of the body only two families count: fracgpu_pod_gpu_utilization_ratio (a duty cycle, 0..1) and
 * fracgpu_pod_gpu_memory_used_bytes, one series per container and GPU (exporter/exposition.c). Per
 * (namespace, pod) and GPU uuid the containers' values are summed; a pod row keeps which of the two
 * it saw, so a pod with memory and no compute figure (MIG without GPM) says so instead of reading 0.
 * Series without namespace and pod labels (processes in no pod) are skipped; series without a uuid
 * are counted and skipped. Values are not judged (NaN, negative, huge all pass through to the
 * recommender, which refuses them), but non-finite ones are counted. Every other family is ignored.
 *
 * Bounds: at most FG_SCRAPED_MAX_PODS pods and FG_SCRAPED_MAX_GPUS GPUs per pod; series past either are
 * counted and dropped. Parsing follows base/prom_parse.h with its default limits except the body cap,
 * which is the caller's.
 */
#ifndef FG_COLLECTOR_SCRAPED_H
#define FG_COLLECTOR_SCRAPED_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/prom_parse.h"

#define FG_SCRAPED_MAX_PODS 4096
#define FG_SCRAPED_MAX_GPUS 8

struct fg_scraped_gpu {
    char *uuid;
    bool has_compute, has_memory;
    double compute_ratio;    /* summed over the pod's containers */
    double memory_bytes;
};

struct fg_scraped_pod {
    char *ns, *name;
    struct fg_scraped_gpu gpus[FG_SCRAPED_MAX_GPUS];
    size_t ngpus;
};

struct fg_scraped {
    struct fg_scraped_pod *pods;
    size_t npods;
    size_t series;       /* series of the two families read */
    size_t nonfinite;    /* of them, with a NaN or infinite value */
    size_t no_uuid;      /* of them, without a uuid label (skipped) */
    size_t dropped;      /* of them, past the pod or GPU bound (skipped) */
    struct fg_prom_parse_stats parse;
    struct lh_table *index;   /* "ns/name" → pod */
};

/* Reads body into u (overwritten; fg_scraped_cleanup frees it). The parse's result as fg_prom_parse
 * (malformed lines are skipped and counted in u->parse, errmsg names the first); u is usable after
 * FG_OK only. */
enum fg_err fg_scraped_read(const char *body, size_t len, size_t max_body, struct fg_scraped *u, char *errmsg) FG_MUST_USE;
void fg_scraped_cleanup(struct fg_scraped *u);

#endif
