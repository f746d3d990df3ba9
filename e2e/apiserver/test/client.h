/*
 * client — the tests' minimal HTTP client over libcurl easy, plus an in-process server harness.
 *
 * tc_request does one request and decodes a JSON body when there is one. A tc_watch runs one
 * streaming GET on its own thread and hands back complete lines as JSON events; every wait is
 * bounded by a timeout so a broken server fails a test instead of hanging it.
 */
#ifndef FG_E2E_APISERVER_TEST_CLIENT_H
#define FG_E2E_APISERVER_TEST_CLIENT_H

#include <curl/curl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>

#include "base/buf.h"
#include "e2e/apiserver/apiserver.h"
#include "e2e/apiserver/registry.h"

struct tc_reply {
    long code;
    char *body;
    size_t len;
    json_object *json; /* NULL when the body is not JSON */
    char retry_after[16];
    char cache_control[64];
    char content_type[128];
};

/* Performs the request; body may be NULL. Returns the curl result (CURLE_OK when a reply came). */
CURLcode tc_request(const char *base, const char *method, const char *path, const char *content_type,
                    const char *body, struct tc_reply *out);
/* tc_request with one more request header ("Accept: ...", "Authorization: ..."), or none when NULL. */
CURLcode tc_request_with(const char *base, const char *method, const char *path, const char *content_type,
                         const char *header, const char *body, struct tc_reply *out);
/* tc_request_with for a body of len bytes that may hold NULs (protobuf); none when body is NULL. */
CURLcode tc_request_bytes(const char *base, const char *method, const char *path, const char *content_type,
                          const char *header, const void *body, size_t len, struct tc_reply *out);
void tc_reply_cleanup(struct tc_reply *r);
/* Reason field of a Status reply, or "". */
const char *tc_reason(const struct tc_reply *r);

struct tc_watch {
    pthread_t thread;
    char *url;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct fg_buf data;
    size_t consumed;
    bool done;
    bool abort;
    long code;
};

/* Starts a streaming GET of base+path; the transfer is cut after max_ms in any case. */
void tc_watch_start(struct tc_watch *w, const char *base, const char *path, long max_ms);
/* The next event within wait_ms (caller puts it), or NULL on timeout or end of stream. */
json_object *tc_watch_next(struct tc_watch *w, long wait_ms);
/* Whether the stream ended within wait_ms. */
bool tc_watch_wait_done(struct tc_watch *w, long wait_ms);
void tc_watch_stop(struct tc_watch *w);

/* An in-process server on a thread, port 0, and its base URL. */
struct tc_server {
    struct fg_apiserver *srv;
    char base[64];
};
void tc_server_start(struct tc_server *s, const struct fg_apiserver_opts *opts);
void tc_server_stop(struct tc_server *s);

/* The server of a test file whose tests share one, default-configured: cmocka group setup and
 * teardown that start and stop tc_srv. */
extern struct tc_server tc_srv;
int tc_setup(void **state);
int tc_teardown(void **state);
/* Polls /fracgpu-test/stats until `watchers` equals n (true) or 5 s pass (false). */
bool tc_wait_watchers(const char *base, long n);
/* Creates an object: POST body to path and asserts 201. Returns the stored resourceVersion. */
long tc_create(const char *base, const char *path, const char *body);
void tc_sleep_ms(long ms);
/* Milliseconds on the monotonic clock. */
long tc_now_ms(void);
/* Performs the request and asserts a Failure Status with this code and reason whose message holds
 * msg_part (when not NULL). */
void tc_expect_status(const char *base, const char *method, const char *path, const char *ct, const char *body,
                      long code, const char *reason, const char *msg_part);
/* Performs the request, asserts the reply's code and returns the decoded body (caller puts). */
json_object *tc_expect_json(const char *base, const char *method, const char *path, const char *ct,
                            const char *body, long code);
/* GETs path, asserts 200 and returns the decoded body (caller puts). */
json_object *tc_get_json(const char *base, const char *path);
/* The JSON text decoded (caller puts); fails the test when it is not JSON. */
json_object *tc_parse(const char *text);

/* The built-in type registry, for tests that use the server's modules without a server: cmocka
 * group setup and teardown that load and free tc_reg. */
extern struct fg__registry tc_reg;
int tc_registry_setup(void **state);
int tc_registry_teardown(void **state);

#endif
