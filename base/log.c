/* log — JSON-lines logger; see log.h. */
#include "log.h"

#include <json-c/json.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"

volatile int fg__log_level = FG_LOG_INFO;

static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static fg_log_sink_fn *sink_fn;
static void *sink_ud;

static const char *const level_names[] = { "debug", "info", "warn", "error", "off" };

void fg_log_set_level(enum fg_log_level lvl)
{
    fg__log_level = (int)lvl;
}

bool fg_log_parse_level(const char *s, enum fg_log_level *out)
{
    for (int i = 0; i <= FG_LOG_OFF; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum fg_log_level)i;
            return true;
        }
    }
    return false;
}

void fg_log_set_sink(fg_log_sink_fn *fn, void *ud)
{
    pthread_mutex_lock(&sink_lock);
    sink_fn = fn;
    sink_ud = ud;
    pthread_mutex_unlock(&sink_lock);
}

static void add_field(json_object *line, const char *key, const char *value)
{
    if (value)
        json_object_object_add(line, key, json_object_new_string(value));
}

void fg__log_write(enum fg_log_level lvl, const char *component, const char *kind, const char *ns,
                   const char *name, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char ts[40];
    size_t n = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + n, sizeof ts - n, ".%03ldZ", (long)(tv.tv_usec / 1000));

    json_object *line = json_object_new_object();
    add_field(line, "ts", ts);
    add_field(line, "level", level_names[lvl <= FG_LOG_ERROR ? lvl : FG_LOG_ERROR]);
    add_field(line, "component", component ? component : "fracgpu");
    add_field(line, "msg", msg);
    add_field(line, "kind", kind);
    add_field(line, "namespace", ns);
    add_field(line, "name", name);
    size_t len;
    const char *text = json_object_to_json_string_length(
        line, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    struct fg_buf out = FG_BUF_INIT;
    if (fg_buf_append(&out, text, len) == FG_OK && fg_buf_append(&out, "\n", 1) == FG_OK) {
        pthread_mutex_lock(&sink_lock);
        if (sink_fn) {
            sink_fn(sink_ud, out.data, out.len);
        } else {
            ssize_t w = write(STDERR_FILENO, out.data, out.len);
            (void)w;
        }
        pthread_mutex_unlock(&sink_lock);
    }
    fg_buf_cleanup(&out);
    json_object_put(line);
}
