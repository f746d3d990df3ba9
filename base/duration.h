/*
 * duration — the one duration syntax of fracgpu: GPUPolicy fields ("168h", "1h30m") and command-line
 * flags ("--interval=10s", "--leader-elect-lease-duration=15s") alike.
 *
 * Kubernetes writes durations in Go's time.ParseDuration form; the CRD schema accepts the subset of
 * whole numbers with the units h, m, s and ms, one or more of them in a row, and this parser accepts
 * exactly the same subset, so a value the API server let through always decodes here and a flag
 * reads the way a policy does. Results are milliseconds, bounded so that sums and comparisons never
 * overflow.
 */
#ifndef FG_BASE_DURATION_H
#define FG_BASE_DURATION_H

#include <stdint.h>

#include "base/err.h"

/* The longest duration accepted: 10 years. */
#define FG_DURATION_MAX_MS (10ll * 366 * 24 * 3600 * 1000)

/* The regular expression the CRD schema uses for the same subset. */
#define FG_DURATION_PATTERN "^([0-9]+(h|m|s|ms))+$"

/* Parses s into *ms. FG_E_PARSE (errmsg says why) for an empty string, a missing or unknown unit,
 * or a value above FG_DURATION_MAX_MS; *ms is untouched then. */
enum fg_err fg_duration_parse(const char *s, int64_t *ms, char *errmsg) FG_MUST_USE;

/* Writes ms in the shortest form the parser reads back ("168h", "1h30m", "0s") into out
 * (at least 32 bytes). */
void fg_duration_format(int64_t ms, char *out, unsigned long size);

#endif
