/*
 * http_list — LIST with selectors and paging.
 *
 * A list walks the type's sorted bucket (a namespace is a key range), keeps what the selectors
 * accept, and writes the <Kind>List around the stored texts without re-serializing any object. With
 * `limit`, the continue token is the hex of "<revision>:<last key sent>": the next page starts after
 * that key, and — as kube-apiserver does — every page reports the first page's revision, and a token
 * whose revision has left the watch history is refused with 410 Expired. Unlike kube-apiserver, which
 * serves all pages from a snapshot at that revision, later pages hold the objects as they are now;
 * a client that watches from the list's revision converges either way (fracgpu's informers do).
 */
#include "e2e/apiserver/server.h"

#include <ctype.h>
#include <event2/buffer.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"

#define MAX_KEY 600

/* The fields a field selector may name: those clients of this server use, and an Event's, as
 * kube-apiserver lets `kubectl get events --field-selector` select them. */
static const char *const selectable_fields[] = {
    "metadata.name", "metadata.namespace", "spec.nodeName", "spec.schedulerName", "status.phase",
    "involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
    "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
    "reportingComponent", "type", NULL,
};

bool fg__parse_selectors(struct evhttp_request *req, const struct evkeyvalq *query, struct fg_selector *labels,
                         struct fg_selector *fields)
{
    char msg[FG_ERRMSG_MAX];
    memset(fields, 0, sizeof(*fields));
    if (fg_selector_parse_labels(fg__query_get(query, "labelSelector"), labels, msg)) {
        fg__reply_error(req, FG_E_KUBE_BAD_REQUEST, "unable to parse labelSelector: %s", msg);
        return false;
    }
    if (fg_selector_parse_fields(fg__query_get(query, "fieldSelector"), selectable_fields, fields, msg)) {
        fg_selector_cleanup(labels);
        fg__reply_error(req, FG_E_KUBE_BAD_REQUEST, "unable to parse fieldSelector: %s", msg);
        return false;
    }
    return true;
}

static char *hex_encode(const char *s)
{
    size_t n = strlen(s);
    char *out = fg_malloc(2 * n + 1);
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", (unsigned char)s[i]);
    out[2 * n] = '\0';
    return out;
}

/* Decodes a continue token; false when malformed. */
static bool hex_decode(const char *s, char *out, size_t cap)
{
    size_t n = strlen(s);
    if (n % 2 || n / 2 >= cap)
        return false;
    for (size_t i = 0; i < n; i += 2) {
        if (!isxdigit((unsigned char)s[i]) || !isxdigit((unsigned char)s[i + 1]))
            return false;
        char pair[3] = { s[i], s[i + 1], 0 };
        out[i / 2] = (char)strtol(pair, NULL, 16);
        if (!out[i / 2])
            return false;
    }
    out[n / 2] = '\0';
    return true;
}

void fg__http_list(struct fg_apiserver *srv, struct evhttp_request *req, const struct fg__route *r,
                   const struct evkeyvalq *query, const struct fg__list_opts *opts)
{
    struct fg_selector labels, fields;
    long limit = opts->limit;
    char start_key[MAX_KEY];
    const char *cont = fg__query_get(query, "continue");
    uint64_t list_rv = srv->store.rv;
    const char *after_key = "";
    if (cont && *cont) {
        char *colon = NULL;
        if (!hex_decode(cont, start_key, sizeof(start_key)) || !(colon = strchr(start_key, ':')) ||
            !(list_rv = strtoull(start_key, NULL, 10)) || list_rv > srv->store.rv) {
            fg__reply_error(req, FG_E_KUBE_BAD_REQUEST, "continue key is not valid: malformed token");
            return;
        }
        if (list_rv < srv->store.floor) {
            fg__reply_error(req, FG_E_KUBE_GONE, "the provided continue parameter is too old to display a "
                            "consistent list result; start a new list without it");
            return;
        }
        after_key = colon + 1;
    }
    if (!fg__parse_selectors(req, query, &labels, &fields))
        return;
    struct fg__bucket *b = fg__store_bucket(&srv->store, r->type);
    char *prefix = r->ns ? fg_asprintf("%s/", r->ns) : NULL;
    size_t i = fg__store_lower_bound(b, prefix ? prefix : "");
    if (*after_key) {
        size_t after = fg__store_lower_bound(b, after_key);
        if (after < b->n && !strcmp(b->v[after]->key, after_key))
            after++;
        if (after > i)
            i = after;
    }

    struct evbuffer *out = evbuffer_new();
    evbuffer_add_printf(out, "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":\"%" PRIu64 "\"",
                        r->type->list_kind, r->type->api_version, list_rv);
    struct evbuffer *items = evbuffer_new();
    json_object *table = fg__table_wanted(req) ? fg__table_new(r->type) : NULL;
    long count = 0;
    const char *last = NULL;
    bool more = false;
    for (; i < b->n; i++) {
        const struct fg__entry *e = b->v[i];
        if (prefix && !fg_str_has_prefix(e->key, prefix))
            break;
        if (!fg_selector_match_labels(&labels, e->obj) || !fg_selector_match_fields(&fields, e->obj))
            continue;
        if (limit && count == limit) {
            more = true;
            break;
        }
        if (table)
            fg__table_add_row(table, r->type, e->obj);
        else if (count)
            evbuffer_add(items, ",", 1);
        if (!table)
            fg__text_add_to_evbuffer(e->text, items);
        count++;
        last = e->key;
    }
    char *token = NULL;
    if (more) {
        char *with_rv = fg_asprintf("%" PRIu64 ":%s", list_rv, last);
        token = hex_encode(with_rv);
        free(with_rv);
        evbuffer_add_printf(out, ",\"continue\":\"%s\"", token);
    }
    if (table) {
        json_object *meta = fg_json_get(table, "metadata", NULL);
        char rv[24];
        snprintf(rv, sizeof(rv), "%" PRIu64, list_rv);
        fg_json_set_str(meta, "resourceVersion", rv);
        fg_json_set_str(meta, "continue", token);
        fg__table_reply(req, table);
        json_object_put(table);
        goto out;
    }
    evbuffer_add_printf(out, "},\"items\":[");
    evbuffer_add_buffer(out, items);
    evbuffer_add(out, "]}", 2);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evhttp_send_reply(req, 200, "OK", out);
out:
    free(token);
    evbuffer_free(items);
    evbuffer_free(out);
    free(prefix);
    fg_selector_cleanup(&labels);
    fg_selector_cleanup(&fields);
}
