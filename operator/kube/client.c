/*
 * client — the synchronous verbs over a pool of curl easy handles.
 *
 * A request takes a rate-limit token (blocking), borrows an easy handle from the pool (or makes one),
 * resets and prepares it (client_easy.c), performs the transfer into a size-capped buffer, maps the
 * result through status.c and returns the handle to the pool. A 401 to an exec credential drops
 * that credential and tries once more, with a fresh one. curl_easy_reset keeps a handle's live
 * connections, so a pooled handle reuses its keep-alive connection to the API server. The caller
 * owns every json-c object passed in or returned; `st` is always left in a state that
 * fg_kube_status_cleanup accepts.
 */
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"
#include "operator/kube/client_internal.h"

struct sink {
    struct fg_buf *buf;
    bool too_big;
};

static size_t on_write(char *data, size_t size, size_t n, void *ud)
{
    struct sink *s = ud;
    if (fg_buf_append(s->buf, data, size * n)) {
        s->too_big = true;
        return 0;
    }
    return size * n;
}

static CURL *pool_get(struct fg_kube_client *c)
{
    CURL *easy = NULL;
    pthread_mutex_lock(&c->pool_lock);
    if (c->npool > 0)
        easy = c->pool[--c->npool];
    pthread_mutex_unlock(&c->pool_lock);
    if (!easy && !(easy = curl_easy_init()))
        abort();
    curl_easy_reset(easy);
    return easy;
}

static void pool_put(struct fg_kube_client *c, CURL *easy)
{
    pthread_mutex_lock(&c->pool_lock);
    if (c->npool < FG__KUBE_POOL_MAX) {
        c->pool[c->npool++] = easy;
        easy = NULL;
    }
    pthread_mutex_unlock(&c->pool_lock);
    if (easy)
        curl_easy_cleanup(easy);
}

/* One try of a request; *gen is the generation of the exec credential it sent (0: none). */
static enum fg_err attempt(struct fg_kube_client *c, const char *method, const char *path, const char *content_type,
                           const char *body, size_t len, struct fg_buf *reply, struct fg_kube_status *st, uint64_t *gen)
{
    memset(st, 0, sizeof *st);
    fg_token_bucket_wait(&c->rl);
    CURL *easy = pool_get(c);
    struct curl_slist *headers = NULL;
    char errmsg[FG_ERRMSG_MAX];
    uint64_t ticket = 0;
    enum fg_err err = fg__kube_prepare_easy(c, easy, path, true, &ticket, gen, &headers, errmsg);
    if (err) {
        st->err = err;
        st->message = fg_strdup(errmsg);
        goto out_release;
    }
    if (content_type) {
        char *ct = fg_asprintf("Content-Type: %s", content_type);
        headers = curl_slist_append(headers, ct);
        free(ct);
    }
    fg_buf_reset(reply);
    size_t saved_limit = reply->limit;
    reply->limit = c->opts.max_body_bytes;
    struct sink sink = { .buf = reply };
    char curl_err[CURL_ERROR_SIZE] = "";
    fg__kube_easy_set_body(easy, method, body, len);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, curl_err);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long)c->opts.timeout_ms);
    CURLcode rc = curl_easy_perform(easy);
    reply->limit = saved_limit;
    if (rc != CURLE_OK) {
        err = fg__kube_transfer_error(rc, curl_err, sink.too_big, c->opts.max_body_bytes, method, path, st);
        goto out_release;
    }
    long code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    err = fg_kube_status_from_reply(code, reply->data, reply->len, fg__kube_retry_after(easy), st);
out_release:
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, NULL);
    curl_slist_free_all(headers);
    pool_put(c, easy);
    return err;
}

enum fg_err fg_kube_request(struct fg_kube_client *c, const char *method, const char *path,
                            const char *content_type, const char *body, size_t len, struct fg_buf *reply,
                            struct fg_kube_status *st)
{
    struct fg_kube_status local;
    if (!st)
        st = &local;
    uint64_t gen;
    enum fg_err err = attempt(c, method, path, content_type, body, len, reply, st, &gen);
    if (err == FG_E_KUBE_UNAUTHORIZED && gen) {   /* an exec credential the server refused: one retry */
        fg__kube_creds_invalidate(c->creds, gen);
        fg_kube_status_cleanup(st);
        err = attempt(c, method, path, content_type, body, len, reply, st, &gen);
    }
    if (st == &local)
        fg_kube_status_cleanup(&local);
    return err;
}

/* A request whose reply, on success, is parsed into *out when out is not NULL. */
static enum fg_err request_json(struct fg_kube_client *c, const char *method, const char *path,
                                const char *content_type, const char *body, size_t len, json_object **out,
                                struct fg_kube_status *st)
{
    if (out)
        *out = NULL;
    struct fg_buf reply = FG_BUF_INIT;
    enum fg_err err = fg_kube_request(c, method, path, content_type, body, len, &reply, st);
    if (!err && out) {
        char why[FG_ERRMSG_MAX];
        err = fg_json_parse(reply.data ? reply.data : "", reply.len, 0, out, why);
        if (err && st) {
            st->err = err;
            st->message = fg_asprintf("%s %s: reply is not JSON: %s", method, path, why);
        }
    }
    fg_buf_cleanup(&reply);
    return err;
}

static enum fg_err send_object(struct fg_kube_client *c, const char *method, const char *path, json_object *obj,
                               json_object **out, struct fg_kube_status *st)
{
    size_t len = 0;
    const char *text = obj ? fg_json_text(obj, &len) : NULL;
    return request_json(c, method, path, text ? "application/json" : NULL, text, len, out, st);
}

enum fg_err fg_kube_get(struct fg_kube_client *c, const char *path, json_object **out, struct fg_kube_status *st)
{
    return request_json(c, "GET", path, NULL, NULL, 0, out, st);
}

enum fg_err fg_kube_create(struct fg_kube_client *c, const char *path, json_object *obj, json_object **out,
                           struct fg_kube_status *st)
{
    return send_object(c, "POST", path, obj, out, st);
}

enum fg_err fg_kube_update(struct fg_kube_client *c, const char *path, json_object *obj, json_object **out,
                           struct fg_kube_status *st)
{
    return send_object(c, "PUT", path, obj, out, st);
}

enum fg_err fg_kube_patch(struct fg_kube_client *c, const char *path, enum fg_kube_patch_type type,
                          const char *patch, json_object **out, struct fg_kube_status *st)
{
    return request_json(c, "PATCH", path, fg_kube_patch_content_type(type), patch, strlen(patch), out, st);
}

enum fg_err fg_kube_delete(struct fg_kube_client *c, const char *path, json_object *options, json_object **out,
                           struct fg_kube_status *st)
{
    return send_object(c, "DELETE", path, options, out, st);
}

enum fg_err fg_kube_list(struct fg_kube_client *c, const struct fg_kube_resource *res, const char *ns,
                         const struct fg_kube_list_opts *opts, fg_kube_item_fn *on_item, void *ud,
                         char **resource_version, struct fg_kube_status *st)
{
    if (resource_version)
        *resource_version = NULL;
    if (st)
        memset(st, 0, sizeof *st);
    struct fg_buf reply = FG_BUF_INIT;
    char *cont = NULL, *rv = NULL;
    enum fg_err err;
    do {
        char *path = fg__kube_list_path(res, ns, opts, cont);
        if (st)
            fg_kube_status_cleanup(st);
        err = fg_kube_request(c, "GET", path, NULL, NULL, 0, &reply, st);
        if (!err) {
            char why[FG_ERRMSG_MAX];
            char *page_rv = NULL;
            free(cont);
            err = fg__kube_list_page(reply.data, reply.len, 0, on_item, ud, &page_rv, &cont, why);
            if (!rv)
                rv = page_rv; /* the first page's revision is the list's: see fg_kube_list */
            else
                free(page_rv);
            if (err && st) {
                st->err = err;
                st->message = fg_asprintf("GET %s: %s", path, why);
            }
        }
        free(path);
    } while (!err && cont);
    fg_buf_cleanup(&reply);
    free(cont);
    if (!err && resource_version)
        *resource_version = rv;
    else
        free(rv);
    return err;
}
