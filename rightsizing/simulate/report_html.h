/*
 * report_html — `fracgpu simulate --out FILE`: the run as one self-contained HTML page, readable
 * offline and safe to pass around.
 *
 * The page holds the measures as a table, then inline SVG charts drawn here (no script, no style
 * sheet or font fetched from anywhere): the GPUs held minute by minute against the one-per-pod
 * count and the hindsight anchor, and for each shown pod (simulate.h) its memory and its
 * utilization against the allocation it held. Every text that comes from outside (the policy's
 * name, the trace's path, pod hashes) is escaped for HTML, so a file name cannot inject markup.
 */
#ifndef FG_RIGHTSIZING_SIMULATE_REPORT_HTML_H
#define FG_RIGHTSIZING_SIMULATE_REPORT_HTML_H

#include "base/buf.h"
#include "rightsizing/simulate/simulate.h"

/* What the page says about the run besides the result. */
struct fg_sim_report_info {
    const char *policy;
    const char *usage;              /* the trace's path */
    const char *selection;          /* "all", "even half", a pod list */
    int64_t gpu_memory_mib;
};

/* Appends the page to out (a buffer without a limit). */
void fg_sim_report_html(struct fg_buf *out, const struct fg_sim_report_info *info, const struct fg_sim_result *r);

/* Appends s with &, <, >, " and ' escaped. */
void fg_sim_html_escape(struct fg_buf *out, const char *s);

#endif
