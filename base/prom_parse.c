/* prom_parse — a reader of Prometheus text 0.0.4, line by line; see prom_parse.h. */
#include "base/prom_parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

/* One line being read: the text (not terminated), and the arena where names and unescaped values
 * are copied, each NUL-terminated (at most twice the line's length). */
struct line {
    const char *p, *end;
    char *arena;
    size_t used;
    struct fg_prom_label *labels;
    size_t nlabels, max_labels;
};

static bool metric_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static bool metric_char(char c)
{
    return metric_start(c) || (c >= '0' && c <= '9');
}

static bool label_start(char c)
{
    return c != ':' && metric_start(c);
}

static bool label_char(char c)
{
    return c != ':' && metric_char(c);
}

static void skip_blank(struct line *l)
{
    while (l->p < l->end && (*l->p == ' ' || *l->p == '\t'))
        l->p++;
}

static const char *arena_put(struct line *l, const char *s, size_t n)
{
    char *out = l->arena + l->used;
    memcpy(out, s, n);
    out[n] = '\0';
    l->used += n + 1;
    return out;
}

/* A name at l->p into the arena, NULL when none starts there. */
static const char *take_name(struct line *l, bool (*start)(char), bool (*more)(char))
{
    const char *s = l->p;
    if (l->p == l->end || !start(*l->p))
        return NULL;
    while (l->p < l->end && more(*l->p))
        l->p++;
    return arena_put(l, s, (size_t)(l->p - s));
}

/* A quoted label value at l->p, unescaped into the arena; NULL with *why on error. */
static const char *take_value(struct line *l, const char **why)
{
    if (l->p == l->end || *l->p != '"')
        return *why = "label value does not start with a quote", NULL;
    l->p++;
    char *out = l->arena + l->used, *w = out;
    for (;;) {
        if (l->p == l->end)
            return *why = "unterminated label value", NULL;
        char c = *l->p++;
        if (c == '"')
            break;
        if (c == '\\') {
            if (l->p == l->end)
                return *why = "unterminated label value", NULL;
            char e = *l->p++;
            if (e == 'n')
                c = '\n';
            else if (e == '\\' || e == '"')
                c = e;
            else
                return *why = "bad escape in label value (only \\\\, \\\" and \\n)", NULL;
        }
        *w++ = c;
    }
    *w = '\0';
    l->used += (size_t)(w - out) + 1;
    return out;
}

static const char *parse_labels(struct line *l)
{
    const char *why = NULL;
    l->p++;   /* '{' */
    for (;;) {
        skip_blank(l);
        if (l->p < l->end && *l->p == '}') {
            l->p++;
            return NULL;
        }
        const char *name = take_name(l, label_start, label_char);
        if (!name)
            return "bad label name";
        skip_blank(l);
        if (l->p == l->end || *l->p != '=')
            return "label name without \"=\"";
        l->p++;
        skip_blank(l);
        const char *value = take_value(l, &why);
        if (!value)
            return why;
        for (size_t i = 0; i < l->nlabels; i++)
            if (!strcmp(l->labels[i].name, name))
                return "label named twice";
        if (l->nlabels == l->max_labels)
            return "too many labels";
        l->labels[l->nlabels++] = (struct fg_prom_label){ name, value };
        skip_blank(l);
        if (l->p < l->end && *l->p == ',')
            l->p++;
        else if (l->p == l->end || *l->p != '}')
            return "expected \",\" or \"}\" after a label";
    }
}

/* The next blank-separated token into the arena, NULL when there is none. */
static const char *take_token(struct line *l)
{
    skip_blank(l);
    const char *s = l->p;
    while (l->p < l->end && *l->p != ' ' && *l->p != '\t')
        l->p++;
    return l->p == s ? NULL : arena_put(l, s, (size_t)(l->p - s));
}

static const char *parse_sample(struct line *l, struct fg_prom_parsed *out)
{
    out->name = take_name(l, metric_start, metric_char);
    if (!out->name)
        return "bad metric name";
    skip_blank(l);
    if (l->p < l->end && *l->p == '{') {
        const char *why = parse_labels(l);
        if (why)
            return why;
    }
    const char *v = take_token(l), *ts = v ? take_token(l) : NULL;
    if (!v)
        return "missing value";
    char *end;
    errno = 0;
    out->value = strtod(v, &end);
    if (*end || (v[0] == '0' && (v[1] == 'x' || v[1] == 'X')))
        return "bad value";
    if (ts) {
        errno = 0;
        long long t = strtoll(ts, &end, 10);
        if (*end || errno)
            return "bad timestamp";
        out->has_timestamp = true;
        out->timestamp_ms = t;
    }
    skip_blank(l);
    if (l->p != l->end)
        return "text after the timestamp";
    out->labels = l->labels;
    out->nlabels = l->nlabels;
    return NULL;
}

/* "# HELP name ..." and "# TYPE name type" must name a metric; other comments are free text. */
static const char *parse_comment(struct line *l)
{
    l->p++;
    skip_blank(l);
    const char *word = take_token(l);
    bool help = word && !strcmp(word, "HELP"), type = word && !strcmp(word, "TYPE");
    if (!help && !type)
        return NULL;
    skip_blank(l);
    if (!take_name(l, metric_start, metric_char) || (l->p < l->end && *l->p != ' ' && *l->p != '\t'))
        return help ? "HELP without a metric name" : "TYPE without a metric name";
    if (help)
        return NULL;
    const char *t = take_token(l);
    static const char *const types[] = { "counter", "gauge", "histogram", "summary", "untyped" };
    for (size_t i = 0; t && i < sizeof(types) / sizeof(*types); i++)
        if (!strcmp(t, types[i]))
            return take_token(l) ? "text after the type" : NULL;
    return "unknown TYPE";
}

const char *fg_prom_parsed_label(const struct fg_prom_parsed *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (!strcmp(s->labels[i].name, name))
            return s->labels[i].value;
    return NULL;
}

/* One line, without its newline: NULL, or why it is refused. Counts comments and samples. */
static const char *parse_line(struct line *l, size_t lineno, fg_prom_sample_cb *cb, void *ud,
                              struct fg_prom_parse_stats *st)
{
    if (memchr(l->p, '\0', (size_t)(l->end - l->p)))
        return "NUL byte in line";
    skip_blank(l);
    if (l->p == l->end)
        return NULL;
    if (*l->p == '#') {
        st->comments++;
        return parse_comment(l);
    }
    struct fg_prom_parsed s = { .line = lineno };
    const char *why = parse_sample(l, &s);
    if (why)
        return why;
    st->samples++;
    if (!cb(ud, &s))
        st->stopped = true;
    return NULL;
}

enum fg_err fg_prom_parse(const char *body, size_t len, const struct fg_prom_parse_opts *opts, fg_prom_sample_cb *cb,
                          void *ud, struct fg_prom_parse_stats *stats, char *errmsg)
{
    static const struct fg_prom_parse_opts defaults = FG_PROM_PARSE_OPTS_DEFAULT;
    const struct fg_prom_parse_opts *o = opts ? opts : &defaults;
    memset(stats, 0, sizeof(*stats));
    if (!o->max_body || !o->max_line || !o->max_labels)
        return fg_errmsg(errmsg, FG_E_INVAL, "parse limits must not be 0");
    if (len > o->max_body)
        return fg_errmsg(errmsg, FG_E_TOO_BIG, "body of %zu bytes, at most %zu", len, o->max_body);
    struct line l = { .arena = fg_malloc(2 * o->max_line + 2), .labels = fg_calloc(o->max_labels, sizeof(*l.labels)),
                      .max_labels = o->max_labels };
    enum fg_err err = FG_OK;
    const char *p = body, *end = body + len;
    while (p < end && !stats->stopped) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        size_t n = (size_t)(eol - p);
        if (n && p[n - 1] == '\r')
            n--;
        stats->lines++;
        l.p = p;
        l.end = p + n;
        l.used = 0;
        l.nlabels = 0;
        const char *why = n > o->max_line ? "line too long" : parse_line(&l, stats->lines, cb, ud, stats);
        p = nl ? nl + 1 : end;
        if (!why)
            continue;
        if (!stats->errors++) {
            stats->first_error_line = stats->lines;
            fg_errmsg(errmsg, FG_E_PARSE, "line %zu: %s", stats->lines, why);
        }
        if (o->stop_on_error) {
            err = FG_E_PARSE;
            break;
        }
    }
    free(l.arena);
    free(l.labels);
    return err;
}
