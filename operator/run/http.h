/*
 * http — /healthz, /readyz and Prometheus /metrics for the operator, served by libevent's evhttp on
 * the kube loop's event_base (loop thread only).
 *
 * /healthz answers 200 while the loop turns (a wedged loop cannot answer). /readyz answers 200 once
 * the informers have synced, 503 before. /metrics is Prometheus text format 0.0.4: reconciles,
 * errors, queue depth and waiting keys of the policy controller, list and watch restarts and cache
 * sizes per informer, and the built-in policy actions.
 */
#ifndef FG_OPERATOR_RUN_HTTP_H
#define FG_OPERATOR_RUN_HTTP_H

#include "base/buf.h"
#include "base/err.h"
#include "operator/run/operator.h"

/* Binds host:port on the loop's base and serves op. Loop thread. FG_E_IO with errmsg when binding fails. */
enum fg_err fg_operator_http_start(struct fg_operator *op, const char *host, unsigned port, char *errmsg) FG_MUST_USE;
/* Loop thread; NULL-safe. */
void fg_operator_http_stop(struct fg_operator *op);

/* The /metrics body. Loop thread (reads the reflectors' counters). */
enum fg_err fg_operator_metrics_write(struct fg_operator *op, struct fg_buf *out) FG_MUST_USE;

#endif
