/*
 * watch — the watch-stream line decoder.
 *
 * Bytes are appended to `line` until a newline arrives; each complete line is parsed on its own
 * (bounded by max_line), checked for a known "type" and an object "object", and handed to the
 * callback. The decoder owns its line buffer; event objects live only for the callback. Any
 * failure latches `failed`, so a broken stream cannot produce events after the bad line.
 */
#include "operator/kube/watch.h"

#include <string.h>

#include "base/json.h"

static const char *const type_names[] = {
    [FG_WATCH_ADDED] = "ADDED",       [FG_WATCH_MODIFIED] = "MODIFIED", [FG_WATCH_DELETED] = "DELETED",
    [FG_WATCH_BOOKMARK] = "BOOKMARK", [FG_WATCH_ERROR] = "ERROR",
};

const char *fg_watch_type_str(enum fg_watch_type t)
{
    if ((unsigned)t >= sizeof type_names / sizeof type_names[0])
        return "UNKNOWN";
    return type_names[t];
}

static bool parse_type(const char *s, enum fg_watch_type *out)
{
    for (size_t i = 0; s && i < sizeof type_names / sizeof type_names[0]; i++) {
        if (strcmp(s, type_names[i]) == 0) {
            *out = (enum fg_watch_type)i;
            return true;
        }
    }
    return false;
}

void fg_watch_decoder_init(struct fg_watch_decoder *d, size_t max_line, fg_watch_event_fn *on_event, void *ud)
{
    fg_buf_init(&d->line, 0);
    d->max_line = max_line;
    d->on_event = on_event;
    d->ud = ud;
    d->parser = (struct fg_json_parser)FG_JSON_PARSER_INIT;
    d->cut = NULL;
    d->failed = false;
    d->error = FG_OK;
    d->events = 0;
}

const char *const fg_watch_managed_fields[] = { "object", "metadata", "managedFields", NULL };

void fg_watch_decoder_cut(struct fg_watch_decoder *d, const char *const *path)
{
    d->cut = path;
}

/* Decodes one complete line (without its newline); blank lines are ignored. */
static enum fg_err decode_line(struct fg_watch_decoder *d, char *p, size_t n, char *errmsg)
{
    while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    if (n == 0)
        return FG_OK;
    if (d->cut)
        n = fg_json_cut_member(p, n, d->cut);
    char why[FG_ERRMSG_MAX];
    json_object *ev = NULL;
    enum fg_err err = fg_json_parser_parse(&d->parser, p, n, d->max_line, &ev, why);
    if (err)
        return fg_errmsg(errmsg, err, "watch event %llu: %s", d->events + 1, why);
    enum fg_watch_type type;
    const char *tname = fg_json_get_str(ev, "type", NULL);
    json_object *obj = fg_json_get(ev, "object", NULL);
    if (!tname) {
        err = fg_errmsg(errmsg, FG_E_PARSE, "watch event %llu has no \"type\"", d->events + 1);
    } else if (!parse_type(tname, &type)) {
        err = fg_errmsg(errmsg, FG_E_PARSE, "watch event %llu has unknown type \"%.40s\"", d->events + 1, tname);
    } else if (!json_object_is_type(obj, json_type_object)) {
        err = fg_errmsg(errmsg, FG_E_PARSE, "watch event %llu (%s) has no \"object\"", d->events + 1, tname);
    } else {
        d->events++;
        if (!d->on_event(d->ud, type, obj))
            err = fg_errmsg(errmsg, FG_E_CLOSED, "watch stopped by its consumer");
    }
    json_object_put(ev);
    return err;
}

enum fg_err fg_watch_decoder_feed(struct fg_watch_decoder *d, const char *data, size_t len, char *errmsg)
{
    if (d->failed)
        return fg_errmsg(errmsg, d->error, "watch decoder already stopped by an earlier error");
    enum fg_err err = FG_OK;
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        if (d->max_line && (take > d->max_line || d->line.len > d->max_line - take)) {
            err = fg_errmsg(errmsg, FG_E_TOO_BIG, "watch event %llu exceeds the %zu-byte line limit",
                            d->events + 1, d->max_line);
            goto out_fail;
        }
        err = fg_buf_append(&d->line, data, take);
        if (err)
            goto out_fail;
        if (!nl)
            break;
        err = decode_line(d, d->line.data, d->line.len, errmsg);
        fg_buf_reset(&d->line);
        if (err)
            goto out_fail;
        data += take + 1;
        len -= take + 1;
    }
    return FG_OK;
out_fail:
    d->failed = true;
    d->error = err;
    return err;
}

enum fg_err fg_watch_decoder_finish(struct fg_watch_decoder *d, char *errmsg)
{
    if (d->failed)
        return fg_errmsg(errmsg, d->error, "watch decoder already stopped by an earlier error");
    size_t n = d->line.len;
    while (n > 0 && strchr(" \t\r", d->line.data[n - 1]))
        n--;
    if (n == 0)
        return FG_OK;
    d->failed = true;
    d->error = FG_E_CLOSED;
    return fg_errmsg(errmsg, FG_E_CLOSED, "watch stream truncated: %zu bytes of an unfinished event", d->line.len);
}

void fg_watch_decoder_cleanup(struct fg_watch_decoder *d)
{
    fg_buf_cleanup(&d->line);
    fg_json_parser_cleanup(&d->parser);
}
