/*
 * hook_client — asynchronous HTTPS POSTs of admission reviews, driven by the server's event loop.
 *
 * One libcurl multi handle per server, its sockets and its timer watched by libevent events on the
 * server's event_base, so a webhook that answers slowly never holds up other requests; connections
 * stay open in the multi handle's cache for the next calls, and easy handles are reset and kept
 * rather than freed. A call verifies the peer against the CA given (the webhook's caBundle) and the
 * URL's host name, even when it connects elsewhere (a Service's endpoint), ends after timeout_s at
 * the latest, and reports once, through its done function, with the parsed JSON reply or a reason.
 * The client owns its calls: a call is freed right before its done function runs, and
 * fg__hook_call_cancel frees one without reporting. Everything runs on the loop thread.
 */
#ifndef FG_E2E_APISERVER_HOOK_CLIENT_H
#define FG_E2E_APISERVER_HOOK_CLIENT_H

#include <event2/event.h>
#include <json-c/json.h>
#include <stddef.h>

#include "base/err.h"

struct fg__hook_client;
struct fg__hook_call;

/* err FG_OK with reply (taken) the response document, else reply NULL and errmsg the reason. */
typedef void fg__hook_done_fn(void *ud, enum fg_err err, json_object *reply, const char *errmsg);

enum fg_err fg__hook_client_new(struct event_base *base, struct fg__hook_client **out) FG_MUST_USE;
/* Cancels the calls still in flight (without reporting them) and frees the client. */
void fg__hook_client_free(struct fg__hook_client *c);

/* Where a call goes: url; connect_to (curl's CONNECT_TO, "HOST:PORT:ADDRESS:PORT") to reach another
 * address while TLS still checks url's host name, or NULL; ca (PEM, ca_len bytes) or NULL for the
 * system's roots; the call ends after timeout_s at the latest. All copied. */
struct fg__hook_target {
    const char *url;
    const char *connect_to;
    const void *ca;
    size_t ca_len;
    long timeout_s;
};

/* Starts POSTing body (JSON text, copied) to the target. FG_OK with *out the call, whose done runs
 * later from the loop, never from here. */
enum fg_err fg__hook_client_post(struct fg__hook_client *c, const struct fg__hook_target *target, const char *body,
                                 fg__hook_done_fn *done, void *ud, struct fg__hook_call **out,
                                 char *errmsg) FG_MUST_USE;
/* Stops a call in flight and frees it; its done function does not run. */
void fg__hook_call_cancel(struct fg__hook_call *call);

#endif
