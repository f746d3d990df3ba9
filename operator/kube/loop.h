/*
 * loop — the one thread that owns every long-lived connection to the API server.
 *
 * A `struct fg_kube_loop` runs a libevent event_base on its own thread and drives a libcurl multi
 * handle from it (CURLMOPT_SOCKETFUNCTION / TIMERFUNCTION on libevent events), so any number of
 * watch streams and asynchronous lists share one thread and never block it. Everything registered
 * here is called back on the loop thread, and the fg_kube_loop_* request functions must themselves be
 * called on the loop thread; other threads hand work over with fg_kube_loop_call (a locked queue plus
 * a wake-up event). Requests take client-side rate-limit tokens without blocking: when none is free
 * the transfer starts later on a timer. Nor do they wait for an exec credential plugin: a call whose
 * credential must first be fetched (client.h) is parked and starts when the plugin's run ends, and
 * one whose exec credential the server refuses (401) is started once more with a fresh one.
 *
 * Lifecycle: new → start (spawns the thread) → stop (cancels every call: their callbacks are not
 * invoked after stop returns, and every call handle is freed, so none may be cancelled afterwards) →
 * free. A call handle is valid until its final callback (on_done / on_end) has run or until
 * fg_kube_call_cancel; cancel suppresses every later callback. Starting or cancelling a call from
 * another thread while the loop runs is a bug the loop stops the process for.
 */
#ifndef FG_KUBE_LOOP_H
#define FG_KUBE_LOOP_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"
#include "operator/kube/client.h"
#include "operator/kube/status.h"
#include "operator/kube/watch.h"

struct event_base;
struct fg_kube_loop;
struct fg_kube_call;

enum fg_err fg_kube_loop_new(struct fg_kube_client *client, struct fg_kube_loop **out, char *errmsg) FG_MUST_USE;
enum fg_err fg_kube_loop_start(struct fg_kube_loop *loop) FG_MUST_USE;
/* Stops the thread and cancels all calls; safe to call twice, from any thread but the loop's. */
void fg_kube_loop_stop(struct fg_kube_loop *loop);
void fg_kube_loop_free(struct fg_kube_loop *loop);

struct event_base *fg_kube_loop_base(struct fg_kube_loop *loop);
struct fg_kube_client *fg_kube_loop_client(struct fg_kube_loop *loop);
bool fg_kube_loop_on_loop_thread(const struct fg_kube_loop *loop);

/* Runs fn(ud) on the loop thread soon, in call order; callable from any thread (also the loop's).
 * Work still queued when the loop stops is dropped without running, so ud must not depend on it
 * to be freed. */
void fg_kube_loop_call(struct fg_kube_loop *loop, void (*fn)(void *ud), void *ud);
/* Runs fn(ud) on the loop thread and waits until it has returned, at most timeout_ms
 * (FG_E_TIMEOUT). Not from the loop thread itself. */
enum fg_err fg_kube_loop_call_wait(struct fg_kube_loop *loop, void (*fn)(void *ud), void *ud,
                                   unsigned timeout_ms) FG_MUST_USE;

/* A one-shot request. `done` gets the body (borrowed) and the decoded status (err != FG_OK on
 * non-2xx or transport failure). */
typedef void fg_kube_done_fn(void *ud, enum fg_err err, const struct fg_buf *body, const struct fg_kube_status *st);
struct fg_kube_call *fg_kube_loop_request(struct fg_kube_loop *loop, const char *method, const char *path,
                                          const char *content_type, const char *body, size_t len,
                                          fg_kube_done_fn *done, void *ud);

/* A paged list that streams items: on_item per item (borrowed), then on_done once with the list's
 * resourceVersion (borrowed; NULL on error) — the first page's, as fg_kube_list explains. Pages are parsed one at a time, so memory stays bounded
 * by one page whatever the collection's size. */
typedef void fg_kube_list_done_fn(void *ud, enum fg_err err, const char *resource_version,
                                  const struct fg_kube_status *st, const char *errmsg);
struct fg_kube_call *fg_kube_loop_list(struct fg_kube_loop *loop, const struct fg_kube_resource *res,
                                       const char *ns, const struct fg_kube_list_opts *opts,
                                       fg_kube_item_fn *on_item, fg_kube_list_done_fn *on_done, void *ud);

/* A watch stream on `path` (which carries watch=true, resourceVersion, allowWatchBookmarks,
 * timeoutSeconds, selectors). Each event goes to on_event (see watch.h; returning false ends the
 * stream); on_end runs once when the stream ends for any reason: FG_OK for a clean close by the
 * server, the HTTP error (st filled) for a refused watch, FG_E_PARSE / FG_E_TOO_BIG for a bad line,
 * FG_E_CLOSED / FG_E_CONNECT / FG_E_TIMEOUT / FG_E_TLS for transport failures. FG_E_CLOSED is also
 * the end of a stream cut in the middle of a line ("truncated" in errmsg) and of one whose on_event
 * returned false. Watches take a rate-limit token like every request but have no overall timeout
 * (put timeoutSeconds in the path). */
typedef void fg_kube_watch_end_fn(void *ud, enum fg_err err, const struct fg_kube_status *st, const char *errmsg);
struct fg_kube_call *fg_kube_loop_watch(struct fg_kube_loop *loop, const char *path, size_t max_line,
                                        fg_watch_event_fn *on_event, fg_kube_watch_end_fn *on_end, void *ud);

/* For a watch: cut the member at `path` (borrowed, e.g. fg_watch_managed_fields) from every event
 * before it is parsed (see fg_watch_decoder_cut). Call it right after fg_kube_loop_watch. */
void fg_kube_call_cut_member(struct fg_kube_call *call, const char *const *path);

/* Aborts a call; no callback of it runs afterwards. Loop thread only. */
void fg_kube_call_cancel(struct fg_kube_call *call);

#endif
