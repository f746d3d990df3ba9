/*
 * prom_parse — the reader of the Prometheus text exposition format (version 0.0.4), the other half
 * of prom.h: the operator's collector reads the node agents' /metrics bodies with it.
 *
 * It reads the subset real exporters write: `# HELP name text` and `# TYPE name type` lines (the type
 * one of counter, gauge, histogram, summary, untyped), other `#` comments, blank lines, and samples
 * `name{k="v",...} value [timestamp]`, with spaces or tabs between the parts, an optional comma after
 * the last label, label values escaped as prom.h writes them (`\\`, `\"`, `\n`; any other escape is
 * refused), values as C's strtod reads them (so also `NaN`, `+Inf`, `-Inf`) and an optional integer
 * timestamp in milliseconds. Lines end in "\n" (a "\r" before it is tolerated); the last line needs
 * no newline.
 *
 * Samples stream to a callback, one call per sample line, with the labels in the order written and
 * their values unescaped; everything handed over is borrowed for the call only. A malformed line —
 * a bad name, an unterminated or badly escaped value, a label named twice, more labels than allowed,
 * a missing or unreadable value or timestamp, a NUL byte, a line longer than allowed, a HELP or TYPE
 * line without a valid name — is refused: counted, its line number and reason kept for the first
 * one, and then, as the caller chose, the next line is read (the default: one bad line does not cost
 * the rest of the body) or parsing stops. A body longer than allowed is refused whole, unread.
 *
 * Bounds: the body size, the line length and the labels per sample are capped (options); memory is
 * two buffers of about the line cap, whatever the body.
 */
#ifndef FG_BASE_PROM_PARSE_H
#define FG_BASE_PROM_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct fg_prom_label {
    const char *name;
    const char *value;   /* unescaped */
};

struct fg_prom_parsed {
    const char *name;
    const struct fg_prom_label *labels;
    size_t nlabels;
    double value;
    bool has_timestamp;
    int64_t timestamp_ms;
    size_t line;         /* 1-based */
};

/* The value of label `name` in s, NULL when s has none. */
const char *fg_prom_parsed_label(const struct fg_prom_parsed *s, const char *name);

/* One sample; returning false stops the parse (fg_prom_parse then returns FG_OK, stats->stopped). */
typedef bool fg_prom_sample_cb(void *ud, const struct fg_prom_parsed *s);

struct fg_prom_parse_opts {
    size_t max_body;      /* bytes; longer bodies are refused unread (FG_E_TOO_BIG) */
    size_t max_line;      /* bytes without the newline */
    size_t max_labels;    /* per sample */
    bool stop_on_error;   /* false: skip a malformed line and go on; true: stop with FG_E_PARSE */
};

#define FG_PROM_PARSE_OPTS_DEFAULT { .max_body = 16u << 20, .max_line = 64u << 10, .max_labels = 64, .stop_on_error = false }

struct fg_prom_parse_stats {
    size_t lines;         /* lines read, blank ones included */
    size_t samples;       /* sample lines handed to the callback */
    size_t comments;      /* HELP, TYPE and other comment lines */
    size_t errors;        /* lines refused */
    size_t first_error_line;   /* 0: none */
    bool stopped;         /* the callback asked to stop */
};

/* Parses body[0..len) (it need not be NUL-terminated). opts NULL: the defaults. stats (required) is
 * overwritten. Returns FG_OK once the body is read, refused lines or not (stats->errors counts them,
 * errmsg says "line N: why" of the first); FG_E_PARSE at the first refused line when stop_on_error;
 * FG_E_TOO_BIG for a body over max_body; FG_E_INVAL for options of 0. */
enum fg_err fg_prom_parse(const char *body, size_t len, const struct fg_prom_parse_opts *opts, fg_prom_sample_cb *cb,
                          void *ud, struct fg_prom_parse_stats *stats, char *errmsg) FG_MUST_USE;

#endif
