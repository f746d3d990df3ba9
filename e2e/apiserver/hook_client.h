/*
 * hook_client — asynchronous HTTPS POSTs of admission reviews, driven by the server's event loop.
 *
 * Calls go out on libevent's HTTP client (an evhttp_connection over an OpenSSL bufferevent) on the
 * server's event_base, so a webhook that answers slowly never holds up other requests. A connection
 * carries one call at a time and is kept alive for the next call to the same address, server name
 * and CA (libevent notices a kept-alive connection the peer closed); one that libevent closed is
 * freed, never reconnected, and a call whose kept-alive connection turns out to be gone before any
 * reply is sent once more on a fresh one. A call verifies the peer against the CA given (the
 * webhook's caBundle) and the URL's host name, even when it dials another address (a Service's
 * endpoint); it ends after timeout_s at the latest and reports once, through its done function,
 * with the parsed JSON reply or a reason in the words of kube-apiserver's Go client (`context
 * deadline exceeded`, `dial tcp ...: connect: connection refused`, `tls: failed to verify
 * certificate: x509: ...`, `EOF`). Host names that are not addresses are resolved asynchronously
 * (evdns). The client owns its calls: a call is freed right before its done function runs, and
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

/* Where a call goes: url (https only); dial, "ADDRESS:PORT" to connect to instead of the URL's host
 * while TLS still checks that host, or NULL; ca (PEM, ca_len bytes) or NULL for the system's roots;
 * the call ends after timeout_s at the latest. All copied. */
struct fg__hook_target {
    const char *url;
    const char *dial;
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
