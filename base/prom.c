/* prom — Prometheus text exposition; see prom.h. */
#include "base/prom.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fg_prom_type_name(enum fg_prom_type t)
{
    switch (t) {
    case FG_PROM_COUNTER: return "counter";
    case FG_PROM_GAUGE: return "gauge";
    case FG_PROM_HISTOGRAM: return "histogram";
    }
    return "untyped";
}

/* HELP text escapes only backslash and newline. */
static void escape_help(struct fg_buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            fg_buf_put_str(b, "\\\\");
        else if (*s == '\n')
            fg_buf_put_str(b, "\\n");
        else
            fg_buf_put(b, s, 1);
    }
}

void fg_prom_family(struct fg_buf *out, const char *name, enum fg_prom_type type, const char *help)
{
    fg_buf_put_str(out, "# HELP ");
    fg_buf_put_str(out, name);
    fg_buf_put(out, " ", 1);
    escape_help(out, help ? help : "");
    fg_buf_put_str(out, "\n# TYPE ");
    fg_buf_put_str(out, name);
    fg_buf_put(out, " ", 1);
    fg_buf_put_str(out, fg_prom_type_name(type));
    fg_buf_put(out, "\n", 1);
}

void fg_prom_escape(struct fg_buf *out, const char *s)
{
    const char *run = s;
    for (; *s; s++) {
        const char *esc = *s == '\\' ? "\\\\" : *s == '"' ? "\\\"" : *s == '\n' ? "\\n" : NULL;
        if (!esc)
            continue;
        fg_buf_put(out, run, (size_t)(s - run));
        fg_buf_put_str(out, esc);
        run = s + 1;
    }
    fg_buf_put(out, run, (size_t)(s - run));
}

void fg_prom_labels(struct fg_buf *out, const char *const *labels)
{
    bool open = false;
    for (size_t i = 0; labels && labels[i]; i += 2) {
        if (!labels[i + 1])
            continue;
        fg_buf_put(out, open ? "," : "{", 1);
        open = true;
        fg_buf_put_str(out, labels[i]);
        fg_buf_put(out, "=\"", 2);
        fg_prom_escape(out, labels[i + 1]);
        fg_buf_put(out, "\"", 1);
    }
    if (open)
        fg_buf_put(out, "}", 1);
}

void fg_prom_value(struct fg_buf *out, double v)
{
    char text[40];
    if (isnan(v)) {
        fg_buf_put_str(out, "NaN");
        return;
    }
    if (isinf(v)) {
        fg_buf_put_str(out, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(text, sizeof text, "%.0f", v);
    } else {
        for (int precision = 15; precision <= 17; precision++) {
            snprintf(text, sizeof text, "%.*g", precision, v);
            if (strtod(text, NULL) == v)
                break;
        }
    }
    fg_buf_put_str(out, text);
}

void fg_prom_sample(struct fg_buf *out, const char *name, const char *const *labels, double value)
{
    fg_buf_put_str(out, name);
    fg_prom_labels(out, labels);
    fg_buf_put(out, " ", 1);
    fg_prom_value(out, value);
    fg_buf_put(out, "\n", 1);
}

void fg_prom_sample_u64(struct fg_buf *out, const char *name, const char *const *labels, uint64_t value)
{
    char text[24];
    snprintf(text, sizeof text, "%" PRIu64, value);
    fg_buf_put_str(out, name);
    fg_prom_labels(out, labels);
    fg_buf_put(out, " ", 1);
    fg_buf_put_str(out, text);
    fg_buf_put(out, "\n", 1);
}

static bool name_char(char c, bool first, bool colon)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':'))
        return true;
    return !first && c >= '0' && c <= '9';
}

bool fg_prom_metric_name_valid(const char *name)
{
    if (!name || !*name)
        return false;
    for (const char *p = name; *p; p++)
        if (!name_char(*p, p == name, true))
            return false;
    return true;
}

bool fg_prom_label_name_valid(const char *name)
{
    if (!name || !*name || !strncmp(name, "__", 2))
        return false;
    for (const char *p = name; *p; p++)
        if (!name_char(*p, p == name, false))
            return false;
    return true;
}
