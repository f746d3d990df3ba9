/*
 * fetch — plain HTTP GETs of absolute URLs on an event_base: how the collector scrapes the node
 * agents without blocking the thread that runs the base (the operator's kube loop).
 *
 * A libcurl multi handle of its own, driven from the base as the kube loop drives its own
 * (CURLMOPT_SOCKETFUNCTION / TIMERFUNCTION on libevent events). It is apart from the kube loop's on
 * purpose: these requests carry none of the API server's credentials or TLS settings, take none of
 * the API client's rate-limit tokens, and follow no redirects and no proxy (pod IPs are reached
 * directly). Each GET has an overall timeout (connecting included) and a cap on the body: a body
 * that grows past it ends the transfer at once as FG_FETCH_TOO_BIG. Only http:// URLs are fetched.
 *
 * Threads: everything, callbacks included, runs on the base's thread. `done` runs once per GET,
 * outside libcurl (so it may start or cancel other GETs), unless the GET was cancelled or the fetcher
 * freed first. fg_fetch_free must not be called from a `done` callback.
 */
#ifndef FG_COLLECTOR_FETCH_H
#define FG_COLLECTOR_FETCH_H

#include <stddef.h>

#include "base/buf.h"

struct event_base;
struct fg_fetch;
struct fg_fetch_get;

enum fg_fetch_result {
    FG_FETCH_OK,           /* a 2xx answer, whole */
    FG_FETCH_TIMEOUT,      /* no whole answer within the timeout */
    FG_FETCH_REFUSED,      /* could not connect (refused, unreachable) */
    FG_FETCH_HTTP_ERROR,   /* an answer with a status other than 2xx */
    FG_FETCH_TOO_BIG,      /* the body passed the cap */
    FG_FETCH_TRANSPORT,    /* anything else: the connection closed early, a malformed answer */
};

/* "ok", "timeout", "refused", "http_error", "too_big", "transport". */
const char *fg_fetch_result_name(enum fg_fetch_result r);

/* body: what arrived (borrowed for the call; empty on most failures); why: libcurl's words or "HTTP 500". */
typedef void fg_fetch_done_fn(void *ud, enum fg_fetch_result r, long http_code, const struct fg_buf *body,
                              const char *why);

struct fg_fetch *fg_fetch_new(struct event_base *base);
/* Cancels every GET (no callback runs) and frees. NULL is ignored. */
void fg_fetch_free(struct fg_fetch *f);

/* Starts a GET of url; the handle is valid until `done` has run or fg_fetch_cancel. */
struct fg_fetch_get *fg_fetch_start(struct fg_fetch *f, const char *url, unsigned timeout_ms, size_t max_body,
                                    fg_fetch_done_fn *done, void *ud);
/* Ends a GET; its `done` never runs. */
void fg_fetch_cancel(struct fg_fetch_get *g);
/* GETs under way. */
size_t fg_fetch_active(const struct fg_fetch *f);

#endif
