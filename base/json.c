/* json — bounded parsing and path lookups over json-c; see json.h. */
#include "json.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum fg_err fg_json_parser_parse(struct fg_json_parser *p, const char *data, size_t len, size_t max_bytes,
                                 json_object **out, char *errmsg)
{
    *out = NULL;
    if (max_bytes && len > max_bytes)
        return fg_errmsg(errmsg, FG_E_TOO_BIG, "JSON document of %zu bytes exceeds the %zu-byte limit",
                         len, max_bytes);
    if (len > (size_t)INT32_MAX)
        return fg_errmsg(errmsg, FG_E_TOO_BIG, "JSON document of %zu bytes is too large", len);
    if (!p->tok) {
        p->tok = json_tokener_new_ex(FG_JSON_MAX_DEPTH);
        if (!p->tok)
            return fg_errmsg(errmsg, FG_E_NOMEM, "cannot allocate JSON tokener");
        json_tokener_set_flags(p->tok, JSON_TOKENER_STRICT);
    }
    json_tokener *tok = p->tok;
    json_tokener_reset(tok);
    while (len > 0 && strchr(" \t\r\n", data[len - 1]))
        len--; /* strict mode refuses trailing whitespace; a newline after a document is normal */
    json_object *obj = json_tokener_parse_ex(tok, data, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t used = json_tokener_get_parse_end(tok);
    enum fg_err err = FG_OK;
    if (jerr == json_tokener_continue) {
        err = fg_errmsg(errmsg, FG_E_PARSE, "truncated JSON: input ended after %zu bytes", len);
    } else if (jerr != json_tokener_success) {
        err = fg_errmsg(errmsg, FG_E_PARSE, "invalid JSON at byte %zu: %s", used,
                        json_tokener_error_desc(jerr));
    } else if (used != len) {
        err = fg_errmsg(errmsg, FG_E_PARSE, "invalid JSON: trailing data at byte %zu", used);
    }
    if (err) {
        json_object_put(obj);
        return err;
    }
    *out = obj;
    return FG_OK;
}

void fg_json_parser_cleanup(struct fg_json_parser *p)
{
    if (p->tok)
        json_tokener_free(p->tok);
    p->tok = NULL;
}

enum fg_err fg_json_parse(const char *data, size_t len, size_t max_bytes, json_object **out,
                          char *errmsg)
{
    struct fg_json_parser p = FG_JSON_PARSER_INIT;
    enum fg_err err = fg_json_parser_parse(&p, data, len, max_bytes, out, errmsg);
    fg_json_parser_cleanup(&p);
    return err;
}

static json_object *walk(json_object *o, va_list ap)
{
    const char *key;
    while (o && (key = va_arg(ap, const char *)) != NULL) {
        json_object *next = NULL;
        if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &next))
            return NULL;
        o = next;
    }
    return o;
}

json_object *fg_json_get(json_object *o, ...)
{
    va_list ap;
    va_start(ap, o);
    json_object *r = walk(o, ap);
    va_end(ap);
    return r;
}

const char *fg_json_get_str(json_object *o, ...)
{
    va_list ap;
    va_start(ap, o);
    json_object *r = walk(o, ap);
    va_end(ap);
    return json_object_is_type(r, json_type_string) ? json_object_get_string(r) : NULL;
}

bool fg_json_get_int64(json_object *o, int64_t *out, ...)
{
    va_list ap;
    va_start(ap, out);
    json_object *r = walk(o, ap);
    va_end(ap);
    if (json_object_is_type(r, json_type_int)) {
        *out = json_object_get_int64(r);
        return true;
    }
    if (json_object_is_type(r, json_type_double)) {
        double d = json_object_get_double(r);
        if (d >= -9.2e18 && d <= 9.2e18 && d == (double)(int64_t)d) {
            *out = (int64_t)d;
            return true;
        }
    }
    return false;
}

const char *fg_json_text(json_object *o, size_t *len)
{
    size_t l = 0;
    const char *s = json_object_to_json_string_length(
        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &l);
    if (len)
        *len = l;
    return s;
}

json_object *fg_json_ensure_obj(json_object *o, const char *key)
{
    json_object *child = NULL;
    if (json_object_object_get_ex(o, key, &child) && json_object_is_type(child, json_type_object))
        return child;
    child = json_object_new_object();
    json_object_object_add(o, key, child);
    return child;
}

void fg_json_set_str(json_object *o, const char *key, const char *value)
{
    if (value)
        json_object_object_add(o, key, json_object_new_string(value));
    else
        json_object_object_del(o, key);
}

bool fg_json_pointer_token(const char *key, char *out, size_t size)
{
    size_t n = 0;
    for (const char *p = key; *p; p++) {
        const char *esc = *p == '~' ? "~0" : *p == '/' ? "~1" : NULL;
        size_t len = esc ? 2 : 1;
        if (n + len >= size)
            return false;
        memcpy(out + n, esc ? esc : p, len);
        n += len;
    }
    out[n] = '\0';
    return true;
}

json_object *fg_json_patch_tested(json_object *obj)
{
    json_object *ops = json_object_new_array(), *test = json_object_new_object();
    fg_json_set_str(test, "op", "test");
    fg_json_set_str(test, "path", "/metadata/resourceVersion");
    fg_json_set_str(test, "value", fg_json_get_str(obj, "metadata", "resourceVersion", NULL));
    json_object_array_add(ops, test);
    return ops;
}

size_t fg_json_array_len(json_object *a)
{
    return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

json_object *fg_json_at(json_object *a, size_t i)
{
    return i < fg_json_array_len(a) ? json_object_array_get_idx(a, i) : NULL;
}

size_t fg_json_object_len(json_object *o)
{
    return json_object_is_type(o, json_type_object) ? (size_t)json_object_object_length(o) : 0;
}

/* Is v an empty object other than the shared one? */
static bool lone_empty(json_object *v, json_object *empty)
{
    return v != empty && json_object_is_type(v, json_type_object) && !json_object_object_length(v);
}

void fg_json_shrink(json_object *o, json_object *empty)
{
    if (json_object_is_type(o, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(o); i++) {
            json_object *v = json_object_array_get_idx(o, i);
            if (empty && lone_empty(v, empty))
                json_object_array_put_idx(o, i, json_object_get(empty));
            else
                fg_json_shrink(v, empty);
        }
        return;
    }
    if (!json_object_is_type(o, json_type_object))
        return;
    struct lh_table *t = json_object_get_object(o);
    int fit = lh_table_length(t) * 3 / 2 + 1;
    if (fit < t->size && lh_table_resize(t, fit) != 0)
        abort();   /* json-c fails a resize only when allocation fails */
    json_object_object_foreach(o, key, value) {
        if (empty && lone_empty(value, empty))
            json_object_object_add(o, key, json_object_get(empty));   /* in place: the walk goes on */
        else
            fg_json_shrink(value, empty);
    }
}
