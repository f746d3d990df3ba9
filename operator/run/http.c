/*
 * http — the operator's health and metrics endpoints; see http.h.
 */
#include "operator/run/http.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "base/log.h"

static void reply(struct evhttp_request *req, int code, const char *reason, const char *ctype, const char *body,
                  size_t len)
{
    struct evbuffer *buf = evbuffer_new();
    if (!buf) {
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
        return;
    }
    evbuffer_add(buf, body, len);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", ctype);
    evhttp_send_reply(req, code, reason, buf);
    evbuffer_free(buf);
}

static void on_healthz(struct evhttp_request *req, void *ud)
{
    (void)ud;
    reply(req, HTTP_OK, "OK", "text/plain", "ok\n", strlen("ok\n"));
}

static void on_readyz(struct evhttp_request *req, void *ud)
{
    static const char not_ready[] = "informers not synced\n";
    if (fg_operator_ready(ud))
        reply(req, HTTP_OK, "OK", "text/plain", "ok\n", strlen("ok\n"));
    else
        reply(req, 503, "Service Unavailable", "text/plain", not_ready, strlen(not_ready));
}

static void on_metrics(struct evhttp_request *req, void *ud)
{
    struct fg_buf body = FG_BUF_INIT;
    if (fg_operator_metrics_write(ud, &body) != FG_OK)
        evhttp_send_error(req, HTTP_INTERNAL, NULL);
    else
        reply(req, HTTP_OK, "OK", "text/plain; version=0.0.4", fg_buf_str(&body), body.len);
    fg_buf_cleanup(&body);
}

#define METRIC(b, name, type, help)                                                                       \
    fg_buf_printf(b, "# HELP fracgpu_operator_" name " " help "\n# TYPE fracgpu_operator_" name " " type "\n")

static enum fg_err write_informer(struct fg_buf *b, const char *resource, struct fg_informer *inf)
{
    const struct fg_reflector_stats *st = fg_reflector_stats(fg_informer_reflector(inf));
    enum fg_err err = FG_OK;
    err = err ? err : fg_buf_printf(b, "fracgpu_operator_lists_total{resource=\"%s\"} %llu\n", resource,
                                    (unsigned long long)st->lists);
    err = err ? err : fg_buf_printf(b, "fracgpu_operator_watch_restarts_total{resource=\"%s\"} %llu\n", resource,
                                    (unsigned long long)st->failures);
    err = err ? err : fg_buf_printf(b, "fracgpu_operator_watch_events_total{resource=\"%s\"} %llu\n", resource,
                                    (unsigned long long)st->events);
    err = err ? err : fg_buf_printf(b, "fracgpu_operator_cached_objects{resource=\"%s\"} %zu\n", resource,
                                    fg_store_len(fg_informer_store(inf)));
    err = err ? err : fg_buf_printf(b, "fracgpu_operator_informer_synced{resource=\"%s\"} %d\n", resource,
                                    fg_informer_has_synced(inf) ? 1 : 0);
    return err;
}

enum fg_err fg_operator_metrics_write(struct fg_operator *op, struct fg_buf *b)
{
    struct fg_controller_metrics m;
    fg_controller_metrics_get(op->controller, &m);
    const char *c = "controller=\"gpupolicy\"";
    enum fg_err err = FG_OK;
    err = err ? err : METRIC(b, "reconciles_total", "counter", "Reconcile calls that returned.");
    err = err ? err : fg_buf_printf(b, "fracgpu_operator_reconciles_total{%s} %llu\n", c,
                                    (unsigned long long)m.reconciles_total);
    err = err ? err : METRIC(b, "reconcile_errors_total", "counter", "Reconcile calls that failed and were retried.");
    err = err ? err : fg_buf_printf(b, "fracgpu_operator_reconcile_errors_total{%s} %llu\n", c,
                                    (unsigned long long)m.errors_total);
    err = err ? err : METRIC(b, "queue_depth", "gauge", "Keys waiting for a worker.");
    err = err ? err : fg_buf_printf(b, "fracgpu_operator_queue_depth{%s} %zu\n", c, m.queue_depth);
    err = err ? err : METRIC(b, "queue_waiting", "gauge", "Keys parked for a retry or a later look.");
    err = err ? err : fg_buf_printf(b, "fracgpu_operator_queue_waiting{%s} %zu\n", c, m.waiting);
    err = err ? err : METRIC(b, "lists_total", "counter", "Lists started by the informer (the first and relists).");
    err = err ? err : METRIC(b, "watch_restarts_total", "counter", "Lists and watches that failed and were retried.");
    err = err ? err : METRIC(b, "watch_events_total", "counter", "Watch events and list items received.");
    err = err ? err : METRIC(b, "cached_objects", "gauge", "Objects in the informer's cache.");
    err = err ? err : METRIC(b, "informer_synced", "gauge", "1 once the informer's first list completed.");
    err = err ? err : write_informer(b, "gpupolicies", op->policies);
    err = err ? err : write_informer(b, "gpuworkloads", op->workloads);
    err = err ? err : METRIC(b, "builtin_policies_created_total", "counter", "Built-in policies created.");
    err = err ? err : fg_buf_printf(b, "fracgpu_operator_builtin_policies_created_total %llu\n",
                                    (unsigned long long)atomic_load(&op->reconciler.created));
    err = err ? err : METRIC(b, "builtin_policies_upgraded_total", "counter",
                             "Unedited built-in policies upgraded to new defaults.");
    err = err ? err : fg_buf_printf(b, "fracgpu_operator_builtin_policies_upgraded_total %llu\n",
                                    (unsigned long long)atomic_load(&op->reconciler.upgraded));
    err = err ? err : METRIC(b, "policy_status_writes_total", "counter", "GPUPolicy status updates written.");
    err = err ? err : fg_buf_printf(b, "fracgpu_operator_policy_status_writes_total %llu\n",
                                    (unsigned long long)atomic_load(&op->reconciler.status_writes));
    return err;
}

enum fg_err fg_operator_http_start(struct fg_operator *op, const char *host, unsigned port, char *errmsg)
{
    struct evhttp *http = evhttp_new(fg_kube_loop_base(op->loop));
    if (!http)
        return fg_errmsg(errmsg, FG_E_IO, "cannot create the HTTP server");
    evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    evhttp_set_cb(http, "/healthz", on_healthz, op);
    evhttp_set_cb(http, "/readyz", on_readyz, op);
    evhttp_set_cb(http, "/metrics", on_metrics, op);
    struct evhttp_bound_socket *sock = evhttp_bind_socket_with_handle(http, host, (ev_uint16_t)port);
    if (!sock) {
        evhttp_free(http);
        return fg_errmsg(errmsg, FG_E_IO, "cannot listen on %s:%u for health and metrics", host, port);
    }
    struct sockaddr_storage ss;
    ev_socklen_t len = sizeof ss;
    op->http_port = port;
    if (!getsockname(evhttp_bound_socket_get_fd(sock), (struct sockaddr *)&ss, &len)) {
        if (ss.ss_family == AF_INET)
            op->http_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
            op->http_port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    op->http = http;
    fg_log(FG_LOG_INFO, "operator", "serving /healthz, /readyz and /metrics on %s:%u", host, op->http_port);
    return FG_OK;
}

void fg_operator_http_stop(struct fg_operator *op)
{
    if (op->http)
        evhttp_free(op->http);
    op->http = NULL;
}
