/* Integration tests of the synchronous client against the canned-response server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json.h"
#include "base/mem.h"
#include "fake_server.h"
#include "operator/kube/client.h"
#include "test_tls.h"

static void handler(struct fake_server *s, struct evhttp_request *req, const char *uri, void *ud)
{
    (void)s;
    (void)ud;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    char body[4096] = "";
    ev_ssize_t got = evbuffer_copyout(in, body, sizeof body - 1);
    size_t n = got > 0 ? (size_t)got : 0;
    body[n] = 0;
    if (strcmp(uri, "/api/v1/namespaces/ns/pods/p") == 0 && cmd == EVHTTP_REQ_GET) {
        fake_reply(req, 200, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"7\"}}", NULL, NULL);
    } else if (strncmp(uri, "/api/v1/namespaces/ns/pods", 26) == 0 && cmd != EVHTTP_REQ_GET) {
        fake_reply(req, cmd == EVHTTP_REQ_POST ? 201 : 200, n ? body : "{\"kind\":\"Status\",\"status\":\"Success\"}",
                   NULL, NULL);
    } else if (strncmp(uri, "/api/v1/pods?", 13) == 0) {
        if (strstr(uri, "continue=tok%2B%2F1"))
            fake_reply(req, 200, "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"101\",\"continue\":\"t2\"},"
                                 "\"items\":[{\"metadata\":{\"name\":\"c\"}},{\"metadata\":{\"name\":\"d\"}}]}", NULL, NULL);
        else if (strstr(uri, "continue=t2"))
            fake_reply(req, 200, "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"102\"},"
                                 "\"items\":[{\"metadata\":{\"name\":\"e\"}}]}", NULL, NULL);
        else
            fake_reply(req, 200, "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"100\",\"continue\":\"tok+/1\"},"
                                 "\"items\":[{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"name\":\"b\"}}]}", NULL, NULL);
    } else if (strncmp(uri, "/api/v1/namespaces/gone/pods", 28) == 0) {
        fake_reply(req, 410, "{\"kind\":\"Status\",\"reason\":\"Expired\",\"message\":\"continue token expired\"}", NULL, NULL);
    } else if (strcmp(uri, "/err/404") == 0) {
        fake_reply(req, 404, "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"message\":\"pods \\\"x\\\" not found\"}", NULL, NULL);
    } else if (strcmp(uri, "/err/409") == 0) {
        fake_reply(req, 409, "{\"kind\":\"Status\",\"reason\":\"AlreadyExists\",\"message\":\"exists\"}", NULL, NULL);
    } else if (strcmp(uri, "/err/422") == 0) {
        fake_reply(req, 422, "{\"kind\":\"Status\",\"reason\":\"Invalid\",\"message\":\"bad\",\"details\":{\"causes\":"
                             "[{\"reason\":\"FieldValueInvalid\",\"field\":\"spec.x\",\"message\":\"no\"}]}}", NULL, NULL);
    } else if (strcmp(uri, "/err/429") == 0) {
        fake_reply(req, 429, "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\"}", "Retry-After", "5");
    } else if (strcmp(uri, "/err/500") == 0) {
        fake_reply(req, 500, "<html>upstream exploded</html>", NULL, NULL);
    } else if (strcmp(uri, "/big") == 0) {
        char big[4096];
        memset(big, 'x', sizeof big);
        big[0] = '"';
        big[sizeof big - 2] = '"';
        big[sizeof big - 1] = '\0';
        fake_reply(req, 200, big, NULL, NULL);
    } else if (strcmp(uri, "/notjson") == 0) {
        fake_reply(req, 200, "hello", NULL, NULL);
    } else if (strcmp(uri, "/hang") == 0) {
        /* never answered; freed when the server stops */
    } else {
        fake_reply(req, 200, "{}", NULL, NULL);
    }
}

static struct fake_server *srv;

static int start_plain(void **state)
{
    (void)state;
    srv = fake_server_start(handler, NULL, NULL);
    return 0;
}

static int stop_server(void **state)
{
    (void)state;
    fake_server_stop(srv);
    return 0;
}

static struct fg_kube_client *client_for(const char *url, const struct fg_kube_client_opts *opts, const char *token,
                                         const char *token_file)
{
    struct fg_kube_config cfg = { .server = (char *)url, .token = (char *)token, .token_file = (char *)token_file };
    struct fg_kube_client *c;
    char err[FG_ERRMSG_MAX];
    assert_int_equal(fg_kube_client_new(&cfg, opts, &c, err), FG_OK);
    return c;
}

static void last_request(struct fake_request *r)
{
    size_t n = fake_server_nrequests(srv);
    assert_true(n > 0);
    fake_server_request(srv, n - 1, r);
}

static void verbs_send_what_they_should(void **state)
{
    (void)state;
    struct fg_kube_client *c = client_for(fake_server_url(srv), NULL, "tok-1", NULL);
    struct fg_kube_status st;
    json_object *out = NULL;
    struct fake_request r;

    assert_int_equal(fg_kube_get(c, "/api/v1/namespaces/ns/pods/p", &out, &st), FG_OK);
    assert_int_equal(st.http_code, 200);
    assert_string_equal(fg_json_get_str(out, "metadata", "resourceVersion", NULL), "7");
    json_object_put(out);
    last_request(&r);
    assert_string_equal(r.method, "GET");
    assert_string_equal(r.accept, "application/json");
    assert_string_equal(r.authorization, "Bearer tok-1");
    assert_true(fg_str_has_prefix(r.user_agent, "fracgpu/"));
    fake_request_cleanup(&r);

    json_object *pod = json_tokener_parse("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"n\"}}");
    assert_int_equal(fg_kube_create(c, "/api/v1/namespaces/ns/pods", pod, &out, &st), FG_OK);
    assert_int_equal(st.http_code, 201);
    assert_string_equal(fg_json_get_str(out, "metadata", "name", NULL), "n");
    json_object_put(out);
    last_request(&r);
    assert_string_equal(r.method, "POST");
    assert_string_equal(r.content_type, "application/json");
    assert_string_equal(r.body, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"n\"}}");
    fake_request_cleanup(&r);

    assert_int_equal(fg_kube_update(c, "/api/v1/namespaces/ns/pods/n", pod, NULL, NULL), FG_OK);
    last_request(&r);
    assert_string_equal(r.method, "PUT");
    assert_string_equal(r.content_type, "application/json");
    assert_non_null(strstr(r.body, "\"name\":\"n\""));
    fake_request_cleanup(&r);
    json_object_put(pod);

    static const struct { enum fg_kube_patch_type t; const char *ct; const char *body; } patches[] = {
        { FG_KUBE_PATCH_MERGE, "application/merge-patch+json", "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}" },
        { FG_KUBE_PATCH_STRATEGIC, "application/strategic-merge-patch+json", "{\"spec\":{}}" },
        { FG_KUBE_PATCH_JSON, "application/json-patch+json", "[{\"op\":\"remove\",\"path\":\"/x\"}]" },
    };
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(fg_kube_patch(c, "/api/v1/namespaces/ns/pods/n", patches[i].t, patches[i].body, &out, NULL),
                         FG_OK);
        json_object_put(out);
        last_request(&r);
        assert_string_equal(r.method, "PATCH");
        assert_string_equal(r.content_type, patches[i].ct);
        assert_string_equal(r.body, patches[i].body);
        fake_request_cleanup(&r);
    }

    json_object *opts = json_tokener_parse("{\"kind\":\"DeleteOptions\",\"propagationPolicy\":\"Foreground\"}");
    assert_int_equal(fg_kube_delete(c, "/api/v1/namespaces/ns/pods/n", opts, NULL, &st), FG_OK);
    last_request(&r);
    assert_string_equal(r.method, "DELETE");
    assert_non_null(strstr(r.body, "Foreground"));
    fake_request_cleanup(&r);
    json_object_put(opts);
    assert_int_equal(fg_kube_delete(c, "/api/v1/namespaces/ns/pods/n", NULL, NULL, NULL), FG_OK);
    last_request(&r);
    assert_string_equal(r.method, "DELETE");
    assert_int_equal(r.body_len, 0);
    fake_request_cleanup(&r);

    /* A 2xx whose body is not JSON is a parse error, when the caller asked for the object. */
    assert_int_equal(fg_kube_get(c, "/notjson", &out, &st), FG_E_PARSE);
    assert_null(out);
    assert_non_null(strstr(st.message, "/notjson"));
    fg_kube_status_cleanup(&st);
    fg_kube_client_free(c);
}

struct names {
    char all[256];
};

static void collect_name(void *ud, json_object *item)
{
    struct names *n = ud;
    strcat(n->all, fg_json_get_str(item, "metadata", "name", NULL));
}

static void list_follows_continue(void **state)
{
    (void)state;
    struct fg_kube_client *c = client_for(fake_server_url(srv), NULL, NULL, NULL);
    struct names names = { "" };
    char *rv = NULL;
    struct fg_kube_list_opts lo = { .label_selector = "app=x", .resource_version = "0", .limit = 2 };
    size_t before = fake_server_nrequests(srv);
    assert_int_equal(fg_kube_list(c, &fg_kube_pods, NULL, &lo, collect_name, &names, &rv, NULL), FG_OK);
    assert_string_equal(names.all, "abcde");
    assert_string_equal(rv, "100"); /* the first page's revision, though later pages report newer ones */
    free(rv);
    assert_int_equal(fake_server_nrequests(srv) - before, 3);
    struct fake_request r;
    fake_server_request(srv, before, &r);
    assert_string_equal(r.uri, "/api/v1/pods?labelSelector=app%3Dx&resourceVersion=0&limit=2");
    assert_null(r.authorization);
    fake_request_cleanup(&r);
    fake_server_request(srv, before + 1, &r);
    assert_string_equal(r.uri, "/api/v1/pods?labelSelector=app%3Dx&limit=2&continue=tok%2B%2F1");
    fake_request_cleanup(&r);

    struct fg_kube_status st;
    assert_int_equal(fg_kube_list(c, &fg_kube_pods, "gone", &lo, collect_name, &names, &rv, &st), FG_E_KUBE_GONE);
    assert_null(rv);
    assert_string_equal(st.reason, "Expired");
    fg_kube_status_cleanup(&st);
    fg_kube_client_free(c);
}

static void error_replies_map(void **state)
{
    (void)state;
    struct fg_kube_client *c = client_for(fake_server_url(srv), NULL, NULL, NULL);
    struct fg_kube_status st;
    json_object *out = (json_object *)1;
    assert_int_equal(fg_kube_get(c, "/err/404", &out, &st), FG_E_KUBE_NOT_FOUND);
    assert_null(out);
    assert_int_equal(st.http_code, 404);
    assert_string_equal(st.message, "pods \"x\" not found");
    fg_kube_status_cleanup(&st);
    assert_int_equal(fg_kube_create(c, "/err/409", NULL, NULL, &st), FG_E_KUBE_ALREADY_EXISTS);
    fg_kube_status_cleanup(&st);
    assert_int_equal(fg_kube_get(c, "/err/422", NULL, &st), FG_E_KUBE_INVALID);
    assert_int_equal(st.ncauses, 1);
    assert_string_equal(st.causes[0].field, "spec.x");
    fg_kube_status_cleanup(&st);
    assert_int_equal(fg_kube_get(c, "/err/429", NULL, &st), FG_E_KUBE_TOO_MANY_REQUESTS);
    assert_int_equal(st.retry_after_s, 5);
    fg_kube_status_cleanup(&st);
    assert_int_equal(fg_kube_get(c, "/err/500", NULL, &st), FG_E_KUBE_INTERNAL);
    assert_non_null(strstr(st.message, "upstream exploded"));
    fg_kube_status_cleanup(&st);
    /* Without st the error code alone comes back, and nothing leaks. */
    assert_int_equal(fg_kube_get(c, "/err/422", NULL, NULL), FG_E_KUBE_INVALID);
    fg_kube_client_free(c);
}

static void reply_over_limit_is_too_big(void **state)
{
    (void)state;
    struct fg_kube_client_opts o = FG_KUBE_CLIENT_OPTS_DEFAULT;
    o.max_body_bytes = 1024;
    struct fg_kube_client *c = client_for(fake_server_url(srv), &o, NULL, NULL);
    struct fg_kube_status st;
    assert_int_equal(fg_kube_get(c, "/big", NULL, &st), FG_E_TOO_BIG);
    assert_int_equal(st.http_code, 0);
    assert_non_null(strstr(st.message, "1024"));
    fg_kube_status_cleanup(&st);
    /* The pooled handle is fine afterwards. */
    assert_int_equal(fg_kube_get(c, "/ok", NULL, NULL), FG_OK);
    fg_kube_client_free(c);
}

static void unreachable_and_timeouts(void **state)
{
    (void)state;
    /* A port that was just free: nothing listens there. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof sin;
    assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof sin), 0);
    getsockname(fd, (struct sockaddr *)&sin, &len);
    close(fd);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(sin.sin_port));
    struct fg_kube_client *c = client_for(url, NULL, NULL, NULL);
    struct fg_kube_status st;
    assert_int_equal(fg_kube_get(c, "/api/v1/nodes", NULL, &st), FG_E_CONNECT);
    assert_int_equal(st.http_code, 0);
    assert_non_null(strstr(st.message, "GET /api/v1/nodes"));
    assert_non_null(strstr(st.message, "127.0.0.1"));
    fg_kube_status_cleanup(&st);
    fg_kube_client_free(c);

    struct fg_kube_client_opts o = FG_KUBE_CLIENT_OPTS_DEFAULT;
    o.timeout_ms = 200;
    c = client_for(fake_server_url(srv), &o, NULL, NULL);
    assert_int_equal(fg_kube_get(c, "/hang", NULL, &st), FG_E_TIMEOUT);
    fg_kube_status_cleanup(&st);
    fg_kube_client_free(c);

    struct fg_kube_config bad = { .server = "ftp://x" };
    char err[FG_ERRMSG_MAX];
    assert_int_equal(fg_kube_client_new(&bad, NULL, &c, err), FG_E_INVAL);
    assert_non_null(strstr(err, "ftp://x"));
    struct fg_kube_config none = { 0 };
    assert_int_equal(fg_kube_client_new(&none, NULL, &c, err), FG_E_INVAL);
}

static void write_token(const char *path, const char *tok, time_t mtime)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(tok, f);
    fclose(f);
    struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };
    utimensat(AT_FDCWD, path, ts, 0);
}

static void token_file_is_reread_when_it_changes(void **state)
{
    (void)state;
    char path[] = "/tmp/fg_kube_token_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_token(path, "first\n", 1000000);
    struct fg_kube_client *c = client_for(fake_server_url(srv), NULL, "static", path);
    struct fake_request r;
    assert_int_equal(fg_kube_get(c, "/ok", NULL, NULL), FG_OK);
    last_request(&r);
    assert_string_equal(r.authorization, "Bearer first");
    fake_request_cleanup(&r);
    write_token(path, "second", 2000000);
    assert_int_equal(fg_kube_get(c, "/ok", NULL, NULL), FG_OK);
    last_request(&r);
    assert_string_equal(r.authorization, "Bearer second");
    fake_request_cleanup(&r);
    /* A token file that disappears keeps the last good token. */
    unlink(path);
    assert_int_equal(fg_kube_get(c, "/ok", NULL, NULL), FG_OK);
    last_request(&r);
    assert_string_equal(r.authorization, "Bearer second");
    fake_request_cleanup(&r);
    fg_kube_client_free(c);
    /* ... but one that never existed is an error naming the file. */
    c = client_for(fake_server_url(srv), NULL, NULL, path);
    struct fg_kube_status st;
    assert_int_equal(fg_kube_get(c, "/ok", NULL, &st), FG_E_IO);
    assert_non_null(strstr(st.message, path));
    fg_kube_status_cleanup(&st);
    fg_kube_client_free(c);
}

struct hammer {
    struct fg_kube_client *c;
    int ok;
};

static void *hammer_run(void *ud)
{
    struct hammer *h = ud;
    for (int i = 0; i < 25; i++) {
        json_object *out = NULL;
        if (fg_kube_get(h->c, "/api/v1/namespaces/ns/pods/p", &out, NULL) == FG_OK &&
            fg_str_eq(fg_json_get_str(out, "metadata", "name", NULL), "p"))
            h->ok++;
        json_object_put(out);
    }
    return NULL;
}

static void concurrent_calls_share_one_client(void **state)
{
    (void)state;
    struct fg_kube_client_opts o = FG_KUBE_CLIENT_OPTS_DEFAULT;
    o.qps = 1000;
    o.burst = 10;
    struct fg_kube_client *c = client_for(fake_server_url(srv), &o, NULL, NULL);
    pthread_t t[4];
    struct hammer h[4];
    for (int i = 0; i < 4; i++) {
        h[i] = (struct hammer){ .c = c };
        pthread_create(&t[i], NULL, hammer_run, &h[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(h[i].ok, 25);
    }
    fg_kube_client_free(c);
}

static void tls_verification(void **state)
{
    (void)state;
    struct test_tls tls;
    test_tls_init(&tls);
    struct fake_server *https = fake_server_start(handler, NULL, tls.server_ctx);
    struct fg_kube_config cfg = { .server = (char *)fake_server_url(https), .ca_pem = tls.cert_pem };
    struct fg_kube_client *c;
    struct fg_kube_status st;
    char err[FG_ERRMSG_MAX];
    json_object *out = NULL;

    assert_int_equal(fg_kube_client_new(&cfg, NULL, &c, err), FG_OK);
    assert_int_equal(fg_kube_get(c, "/api/v1/namespaces/ns/pods/p", &out, &st), FG_OK);
    assert_string_equal(fg_json_get_str(out, "metadata", "name", NULL), "p");
    json_object_put(out);
    assert_int_equal(fg_kube_get(c, "/ok", NULL, NULL), FG_OK);
    fg_kube_client_free(c);

    cfg.ca_pem = NULL;
    assert_int_equal(fg_kube_client_new(&cfg, NULL, &c, err), FG_OK);
    assert_int_equal(fg_kube_get(c, "/ok", NULL, &st), FG_E_TLS);
    assert_int_equal(st.http_code, 0);
    assert_non_null(strstr(st.message, "/ok"));
    fg_kube_status_cleanup(&st);
    fg_kube_client_free(c);

    cfg.insecure_skip_tls_verify = true;
    assert_int_equal(fg_kube_client_new(&cfg, NULL, &c, err), FG_OK);
    assert_int_equal(fg_kube_get(c, "/ok", NULL, NULL), FG_OK);
    fg_kube_client_free(c);

    /* The server name override: connect to 127.0.0.1, verify the certificate as api.fracgpu.test. */
    char *by_name = fg_asprintf("https://localhost:%d", fake_server_port(https));
    struct fg_kube_config named = { .server = by_name, .ca_pem = tls.cert_pem, .tls_server_name = "api.fracgpu.test" };
    assert_int_equal(fg_kube_client_new(&named, NULL, &c, err), FG_OK);
    assert_int_equal(fg_kube_get(c, "/ok", NULL, NULL), FG_OK);
    fg_kube_client_free(c);
    named.tls_server_name = "wrong.fracgpu.test";
    assert_int_equal(fg_kube_client_new(&named, NULL, &c, err), FG_OK);
    assert_int_equal(fg_kube_get(c, "/ok", NULL, NULL), FG_E_TLS);
    fg_kube_client_free(c);
    free(by_name);

    fake_server_stop(https);

    /* Client certificate authentication: the PEM blobs reach the TLS handshake. */
    struct fake_server *mtls = fake_server_start(handler, NULL, tls.mtls_ctx);
    struct fg_kube_config with_cert = { .server = (char *)fake_server_url(mtls), .ca_pem = tls.cert_pem,
                                        .cert_pem = tls.cert_pem, .key_pem = tls.key_pem };
    assert_int_equal(fg_kube_client_new(&with_cert, NULL, &c, err), FG_OK);
    assert_int_equal(fg_kube_get(c, "/ok", NULL, NULL), FG_OK);
    fg_kube_client_free(c);
    with_cert.cert_pem = with_cert.key_pem = NULL;
    assert_int_equal(fg_kube_client_new(&with_cert, NULL, &c, err), FG_OK);
    assert_int_not_equal(fg_kube_get(c, "/ok", NULL, NULL), FG_OK);
    fg_kube_client_free(c);
    with_cert.cert_pem = tls.cert_pem;
    assert_int_equal(fg_kube_client_new(&with_cert, NULL, &c, err), FG_E_INVAL);   /* certificate without key */
    fake_server_stop(mtls);

    test_tls_cleanup(&tls);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(verbs_send_what_they_should),
        cmocka_unit_test(list_follows_continue),
        cmocka_unit_test(error_replies_map),
        cmocka_unit_test(reply_over_limit_is_too_big),
        cmocka_unit_test(unreachable_and_timeouts),
        cmocka_unit_test(token_file_is_reread_when_it_changes),
        cmocka_unit_test(concurrent_calls_share_one_client),
        cmocka_unit_test(tls_verification),
    };
    return cmocka_run_group_tests(tests, start_plain, stop_server);
}
