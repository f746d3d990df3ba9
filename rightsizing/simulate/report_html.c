/*
 * report_html — the HTML page of `fracgpu simulate --out`; see report_html.h.
 *
 * A chart is a fixed-size SVG: hours of the trace along x, one polyline per series (a gap where a
 * value is NaN), dashed horizontal lines for constants, a legend above. Long series are thinned to
 * at most one point per pixel column, so a day of minutes stays a small page.
 */
#include "rightsizing/simulate/report_html.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#define W 900
#define H 260
#define ML 60   /* margins: left, right, top, bottom */
#define MR 20
#define MT 30
#define MB 36

struct series {
    const char *name, *color;
    const double *v;                /* NULL for a constant */
    const int *iv;                  /* or ints */
    double constant;
};

void fg_sim_html_escape(struct fg_buf *out, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fg_buf_put_str(out, "&amp;"); break;
        case '<': fg_buf_put_str(out, "&lt;"); break;
        case '>': fg_buf_put_str(out, "&gt;"); break;
        case '"': fg_buf_put_str(out, "&quot;"); break;
        case '\'': fg_buf_put_str(out, "&#39;"); break;
        default: fg_buf_put(out, s, 1);
        }
    }
}

static void putf(struct fg_buf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct fg_buf *out, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fg_buf_put_str(out, text);
}

static double value(const struct series *s, size_t i)
{
    return s->v ? s->v[i] : s->iv ? (double)s->iv[i] : s->constant;
}

/* A "nice" top for the y axis at or above hi. */
static double nice_top(double hi)
{
    if (!(hi > 0))
        return 1;
    double p = pow(10, floor(log10(hi)));
    for (int k = 1; k <= 10; k++)
        if (k * p >= hi)
            return k * p;
    return 10 * p;
}

static void chart(struct fg_buf *out, const char *title, const char *unit, const struct series *ss, size_t ns,
                  size_t minutes)
{
    double hi = 0;
    for (size_t k = 0; k < ns; k++)
        for (size_t i = 0; i < (ss[k].v || ss[k].iv ? minutes : 1); i++) {
            double v = value(&ss[k], i);
            hi = isfinite(v) && v > hi ? v : hi;
        }
    double top = nice_top(hi * 1.05);
    double pw = W - ML - MR, ph = H - MT - MB;
    double span = minutes > 1 ? (double)(minutes - 1) : 1;
    fg_buf_put_str(out, "<figure><figcaption>");
    fg_sim_html_escape(out, title);
    putf(out, "</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
              "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">\n", W, H, W, H);
    putf(out, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"#fafafa\" stroke=\"#999\"/>\n", ML, MT, pw,
         ph);
    for (int k = 0; k <= 4; k++) {   /* y grid and labels */
        double y = MT + ph - ph * k / 4.0;
        putf(out, "<line x1=\"%d\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                  "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
             ML, ML + pw, y, y, ML - 4, y + 4, top * k / 4.0);
    }
    double hours = (double)minutes / 60.0;
    int step_h = hours > 48 ? 12 : hours > 12 ? 3 : 1;
    for (int h = 0; h <= (int)hours; h += step_h) {
        double x = ML + pw * (h * 60.0) / span;
        putf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%dh</text>\n", x, H - MB + 14, h);
    }
    putf(out, "<text x=\"%d\" y=\"%d\">", ML, MT - 8);
    fg_sim_html_escape(out, unit);
    fg_buf_put_str(out, "</text>\n");
    size_t every = minutes > (size_t)pw ? minutes / (size_t)pw : 1;
    double lx = ML + 120;
    for (size_t k = 0; k < ns; k++) {
        const struct series *s = &ss[k];
        if (!s->v && !s->iv) {
            double y = MT + ph - ph * s->constant / top;
            putf(out, "<line x1=\"%d\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"6 4\"/>\n", ML,
                 ML + pw, y, y, s->color);
        } else {
            bool open = false;
            for (size_t i = 0; i < minutes; i += every) {
                double v = value(s, i);
                if (!isfinite(v)) {
                    if (open)
                        fg_buf_put_str(out, "\"/>\n");
                    open = false;
                    continue;
                }
                if (!open)
                    putf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", s->color);
                open = true;
                putf(out, "%.1f,%.1f ", ML + pw * (double)i / span, MT + ph - ph * v / top);
            }
            if (open)
                fg_buf_put_str(out, "\"/>\n");
        }
        putf(out, "<rect x=\"%.0f\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%.0f\" y=\"%d\">", lx,
             MT - 17, s->color, lx + 14, MT - 8);
        fg_sim_html_escape(out, s->name);
        fg_buf_put_str(out, "</text>\n");
        lx += 190;
    }
    fg_buf_put_str(out, "</svg></figure>\n");
}

static void row(struct fg_buf *out, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void row(struct fg_buf *out, const char *name, const char *fmt, ...)
{
    char text[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fg_buf_put_str(out, "<tr><th>");
    fg_sim_html_escape(out, name);
    fg_buf_put_str(out, "</th><td>");
    fg_sim_html_escape(out, text);
    fg_buf_put_str(out, "</td></tr>\n");
}

void fg_sim_report_html(struct fg_buf *out, const struct fg_sim_report_info *info, const struct fg_sim_result *r)
{
    fg_buf_put_str(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>fracgpu simulate: ");
    fg_sim_html_escape(out, info->policy);
    fg_buf_put_str(out, "</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:960px}"
                        "table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}"
                        "figure{margin:1.5em 0}figcaption{font-weight:bold;margin-bottom:4px}</style>\n"
                        "</head><body>\n<h1>Rightsizing simulation: policy ");
    fg_sim_html_escape(out, info->policy);
    fg_buf_put_str(out, "</h1>\n<p>Usage trace <code>");
    fg_sim_html_escape(out, info->usage);
    fg_buf_put_str(out, "</code>, pods: ");
    fg_sim_html_escape(out, info->selection);
    putf(out, ", GPUs of %.1f GiB. Replayed minute by minute with every allocation decided from the past only "
              "(docs/rightsizing.md).</p>\n<table>\n",
         (double)info->gpu_memory_mib / 1024.0);
    row(out, "pods", "%zu over %.1f h", r->pods, (double)r->minutes / 60.0);
    row(out, "GPUs at the peak", "%d", r->gpus_peak);
    row(out, "GPUs, time-averaged", "%.1f", r->gpus_mean);
    row(out, "one GPU per pod (pods alive at the peak)", "%d", r->one_per_pod);
    row(out, "hindsight packing / sum of memory peaks", "%d / %d", r->hindsight, r->sum_of_peaks);
    row(out, "memory overflow", "%llu GPU-minutes", (unsigned long long)r->memory_overflow_gpu_minutes);
    row(out, "contended", "%llu GPU-minutes, %.2f%% of %llu", (unsigned long long)r->contended_gpu_minutes,
        r->contended_gpu_minutes_pct, (unsigned long long)r->gpu_minutes);
    row(out, "overrun (samples above the pod's own allocation)", "%.2f%% (compute %.2f%%, memory %.2f%%) of %llu",
        r->overrun_pct, r->overrun_compute_pct, r->overrun_memory_pct, (unsigned long long)r->samples);
    row(out, "allocation changes", "%llu, %.2f per pod-day", (unsigned long long)r->changes, r->changes_per_pod_day);
    fg_buf_put_str(out, "</table>\n");

    struct series gpus[] = {
        { "GPUs held", "#1f77b4", NULL, r->gpus, 0 },
        { "pods alive (one GPU each)", "#d62728", NULL, r->alive, 0 },
        { "hindsight packing", "#2ca02c", NULL, NULL, (double)r->hindsight },
    };
    chart(out, "GPUs over time", "GPUs", gpus, 3, r->minutes);
    for (size_t k = 0; k < r->n_shown; k++) {
        const struct fg_sim_shown *sh = &r->shown[k];
        char title[128];
        snprintf(title, sizeof title, "pod %.12s…: memory", sh->id);
        struct series mem[] = {
            { "memory used", "#1f77b4", sh->mem_used, NULL, 0 },
            { "memory allocated", "#ff7f0e", sh->mem_alloc, NULL, 0 },
        };
        chart(out, title, "MiB", mem, 2, r->minutes);
        snprintf(title, sizeof title, "pod %.12s…: compute", sh->id);
        struct series cpu[] = {
            { "utilization", "#1f77b4", sh->util_used, NULL, 0 },
            { "compute allocated", "#ff7f0e", sh->compute_alloc, NULL, 0 },
        };
        chart(out, title, "% of a GPU", cpu, 2, r->minutes);
    }
    fg_buf_put_str(out, "</body></html>\n");
}
