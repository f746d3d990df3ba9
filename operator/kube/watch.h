/*
 * watch — decoding a Kubernetes watch stream.
 *
 * A watch reply is a sequence of JSON objects {"type": ..., "object": {...}}, one per line, delivered
 * in chunks that split lines (and UTF-8 sequences) at any byte. The decoder buffers the partial line,
 * parses each complete one and hands the event to a callback. A line that is not a valid event
 * (garbage, unknown type, no object) or longer than `max_line` stops the decoder with FG_E_PARSE or
 * FG_E_TOO_BIG and a message; the owner then drops the stream and re-watches from the last good
 * resourceVersion. ERROR events are delivered as events (their object is a Status; see status.h).
 * A stream that ends in the middle of a line is reported by fg_watch_decoder_finish as truncated.
 * Pure code, no I/O: the loop (loop.h) feeds it bytes.
 */
#ifndef FG_KUBE_WATCH_H
#define FG_KUBE_WATCH_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/json.h"

enum fg_watch_type { FG_WATCH_ADDED, FG_WATCH_MODIFIED, FG_WATCH_DELETED, FG_WATCH_BOOKMARK, FG_WATCH_ERROR };

const char *fg_watch_type_str(enum fg_watch_type t);

/* `object` is borrowed for the duration of the call (json_object_get it to keep it). Returning false
 * stops decoding (fg_watch_decoder_feed then returns FG_E_CLOSED). */
typedef bool fg_watch_event_fn(void *ud, enum fg_watch_type type, json_object *object);

struct fg_watch_decoder {
    struct fg_buf line;
    size_t max_line;
    fg_watch_event_fn *on_event;
    void *ud;
    struct fg_json_parser parser;   /* one tokener for the whole stream */
    const char *const *cut;         /* member cut from each event before parsing, or NULL */
    bool failed;
    enum fg_err error;   /* the error that stopped the decoder, once failed */
    unsigned long long events;
};

void fg_watch_decoder_init(struct fg_watch_decoder *d, size_t max_line, fg_watch_event_fn *on_event, void *ud);
/* From now on, cut the member at `path` (borrowed; e.g. fg_watch_managed_fields) out of every event's
 * text before parsing it (fg_json_cut_member): consumers that drop a member anyway never pay for
 * building it. */
void fg_watch_decoder_cut(struct fg_watch_decoder *d, const char *const *path);
/* {"object", "metadata", "managedFields", NULL}: what most consumers never read. */
extern const char *const fg_watch_managed_fields[];
/* Feeds bytes; after an error every later call returns that error class again. */
enum fg_err fg_watch_decoder_feed(struct fg_watch_decoder *d, const char *data, size_t len,
                                  char *errmsg) FG_MUST_USE;
/* End of stream: FG_OK when no partial line is pending. */
enum fg_err fg_watch_decoder_finish(struct fg_watch_decoder *d, char *errmsg) FG_MUST_USE;
void fg_watch_decoder_cleanup(struct fg_watch_decoder *d);

#endif
