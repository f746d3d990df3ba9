/* prom — Prometheus text exposition; see prom.h. */
#include "base/prom.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The buffer is unlimited (prom.h), so an append cannot fail. */
static void put(struct fg_buf *b, const char *s, size_t n)
{
    enum fg_err err = fg_buf_append(b, s, n);
    (void)err;
}

static void puts_(struct fg_buf *b, const char *s)
{
    put(b, s, strlen(s));
}

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
            puts_(b, "\\\\");
        else if (*s == '\n')
            puts_(b, "\\n");
        else
            put(b, s, 1);
    }
}

void fg_prom_family(struct fg_buf *out, const char *name, enum fg_prom_type type, const char *help)
{
    puts_(out, "# HELP ");
    puts_(out, name);
    put(out, " ", 1);
    escape_help(out, help ? help : "");
    puts_(out, "\n# TYPE ");
    puts_(out, name);
    put(out, " ", 1);
    puts_(out, fg_prom_type_name(type));
    put(out, "\n", 1);
}

void fg_prom_escape(struct fg_buf *out, const char *s)
{
    const char *run = s;
    for (; *s; s++) {
        const char *esc = *s == '\\' ? "\\\\" : *s == '"' ? "\\\"" : *s == '\n' ? "\\n" : NULL;
        if (!esc)
            continue;
        put(out, run, (size_t)(s - run));
        puts_(out, esc);
        run = s + 1;
    }
    put(out, run, (size_t)(s - run));
}

void fg_prom_labels(struct fg_buf *out, const char *const *labels)
{
    bool open = false;
    for (size_t i = 0; labels && labels[i]; i += 2) {
        if (!labels[i + 1])
            continue;
        put(out, open ? "," : "{", 1);
        open = true;
        puts_(out, labels[i]);
        put(out, "=\"", 2);
        fg_prom_escape(out, labels[i + 1]);
        put(out, "\"", 1);
    }
    if (open)
        put(out, "}", 1);
}

void fg_prom_value(struct fg_buf *out, double v)
{
    char text[40];
    if (isnan(v)) {
        puts_(out, "NaN");
        return;
    }
    if (isinf(v)) {
        puts_(out, v > 0 ? "+Inf" : "-Inf");
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
    puts_(out, text);
}

void fg_prom_sample(struct fg_buf *out, const char *name, const char *const *labels, double value)
{
    puts_(out, name);
    fg_prom_labels(out, labels);
    put(out, " ", 1);
    fg_prom_value(out, value);
    put(out, "\n", 1);
}

void fg_prom_sample_u64(struct fg_buf *out, const char *name, const char *const *labels, uint64_t value)
{
    char text[24];
    snprintf(text, sizeof text, "%" PRIu64, value);
    puts_(out, name);
    fg_prom_labels(out, labels);
    put(out, " ", 1);
    puts_(out, text);
    put(out, "\n", 1);
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
