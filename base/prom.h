/*
 * prom — the one writer of the Prometheus text exposition format (version 0.0.4) in fracgpu.
 *
 * Every /metrics body, the manager's registry and the exporter's per-pod GPU families alike, is
 * written through these calls, so escaping and number formatting are decided once. A family is
 * announced with fg_prom_family (its HELP and TYPE lines, HELP escaped), then its samples follow,
 * each one line: the sample name (the family's, or the family's with _bucket, _sum or _count for a
 * histogram), the labels as `{k="v",...}` with values escaped (backslash, double quote, newline),
 * and the value. No sample carries a timestamp.
 *
 * Values: fg_prom_sample_u64 prints an integer exactly; fg_prom_sample prints a double in the
 * shortest form that reads back to the same double ("0.35", not "0.34999999999999998"), integral
 * values below 2^53 without a decimal point, and NaN and the infinities as "NaN", "+Inf", "-Inf".
 *
 * The output buffer must be unlimited (base/buf.h): appends then cannot fail, so these functions
 * return nothing.
 */
#ifndef FG_BASE_PROM_H
#define FG_BASE_PROM_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"

enum fg_prom_type { FG_PROM_COUNTER, FG_PROM_GAUGE, FG_PROM_HISTOGRAM };

/* "counter", "gauge", "histogram". */
const char *fg_prom_type_name(enum fg_prom_type t);

/* Writes the "# HELP" and "# TYPE" lines of family name. */
void fg_prom_family(struct fg_buf *out, const char *name, enum fg_prom_type type, const char *help);

/* One sample line. labels is NULL or a NULL-terminated list of key, value pairs; a pair whose value
 * is NULL is left out. */
void fg_prom_sample(struct fg_buf *out, const char *name, const char *const *labels, double value);
void fg_prom_sample_u64(struct fg_buf *out, const char *name, const char *const *labels, uint64_t value);

/* Appends the label pairs as `{k="v",...}` (nothing when there are none). */
void fg_prom_labels(struct fg_buf *out, const char *const *labels);
/* Appends s with label-value escaping. */
void fg_prom_escape(struct fg_buf *out, const char *s);
/* Appends v as fg_prom_sample prints it. */
void fg_prom_value(struct fg_buf *out, double v);

/* Metric names: [a-zA-Z_:][a-zA-Z0-9_:]*; label names: [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__". */
bool fg_prom_metric_name_valid(const char *name);
bool fg_prom_label_name_valid(const char *name);

#endif
