/*
 * log — structured logs, one JSON object per line on stderr.
 *
 * Every line carries ts (RFC 3339, UTC, milliseconds), level, component and msg, and — through
 * fg_log_obj — the Kubernetes object it is about (kind, namespace, name). The level test happens in
 * the macro, before any argument is evaluated, so a disabled debug line costs one comparison. Lines
 * are written with a single write(2), so lines from different threads never interleave. Tests may
 * redirect output with fg_log_set_sink. Never log tokens, keys or certificates.
 */
#ifndef FG_BASE_LOG_H
#define FG_BASE_LOG_H

#include <stdbool.h>

enum fg_log_level { FG_LOG_DEBUG, FG_LOG_INFO, FG_LOG_WARN, FG_LOG_ERROR, FG_LOG_OFF };

extern volatile int fg__log_level;

#define FG_LOG_ENABLED(lvl) ((int)(lvl) >= fg__log_level)

#define fg_log(lvl, component, ...)                                                   \
    do {                                                                              \
        if (FG_LOG_ENABLED(lvl))                                                      \
            fg__log_write((lvl), (component), NULL, NULL, NULL, __VA_ARGS__);         \
    } while (0)

#define fg_log_obj(lvl, component, kind, ns, name, ...)                               \
    do {                                                                              \
        if (FG_LOG_ENABLED(lvl))                                                      \
            fg__log_write((lvl), (component), (kind), (ns), (name), __VA_ARGS__);     \
    } while (0)

void fg_log_set_level(enum fg_log_level lvl);
/* Parses "debug", "info", "warn", "error", "off"; returns false (and changes nothing) otherwise. */
bool fg_log_parse_level(const char *s, enum fg_log_level *out);
/* Receives each finished line (with its trailing newline); NULL restores stderr. */
typedef void fg_log_sink_fn(void *ud, const char *line, unsigned long len);
void fg_log_set_sink(fg_log_sink_fn *fn, void *ud);

void fg__log_write(enum fg_log_level lvl, const char *component, const char *kind, const char *ns,
                   const char *name, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

#endif
