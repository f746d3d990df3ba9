/* selector — Kubernetes label and field selector parsing and matching; see selector.h. */
#include "operator/kube/selector.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"

#define MAX_LABEL_NAME 63
#define MAX_LABEL_KEY 317 /* 253-byte prefix + '/' + 63-byte name */

static bool is_label_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

static struct fg_sel_req *add_req(struct fg_selector *sel, const char *key, size_t key_len, enum fg_sel_op op)
{
    sel->reqs = fg_realloc(sel->reqs, (sel->n + 1) * sizeof(*sel->reqs));
    struct fg_sel_req *r = &sel->reqs[sel->n++];
    r->key = fg_strndup(key, key_len);
    r->op = op;
    r->values = NULL;
    r->nvalues = 0;
    return r;
}

static void add_value(struct fg_sel_req *r, const char *v, size_t len)
{
    r->values = fg_realloc(r->values, (r->nvalues + 1) * sizeof(*r->values));
    r->values[r->nvalues++] = fg_strndup(v, len);
}

void fg_selector_cleanup(struct fg_selector *sel)
{
    for (size_t i = 0; i < sel->n; i++) {
        free(sel->reqs[i].key);
        for (size_t j = 0; j < sel->reqs[i].nvalues; j++)
            free(sel->reqs[i].values[j]);
        free(sel->reqs[i].values);
    }
    free(sel->reqs);
    sel->reqs = NULL;
    sel->n = 0;
}

static const char *skip_spaces(const char *p)
{
    while (*p == ' ')
        p++;
    return p;
}

/* A label key: [prefix/]name, name 1..63 label characters; returns its length or 0. */
static size_t scan_key(const char *p)
{
    size_t n = 0;
    while (is_label_char(p[n]) || p[n] == '/')
        n++;
    if (n == 0 || n > MAX_LABEL_KEY)
        return 0;
    const char *slash = memchr(p, '/', n);
    size_t name_len = slash ? n - (size_t)(slash - p) - 1 : n;
    if (name_len == 0 || name_len > MAX_LABEL_NAME || (slash && memchr(slash + 1, '/', name_len)))
        return 0;
    return n;
}

/* A label value: 0..63 label characters; returns its length, or -1 when too long. */
static long scan_value(const char *p)
{
    size_t n = 0;
    while (is_label_char(p[n]))
        n++;
    return n > MAX_LABEL_NAME ? -1 : (long)n;
}

static bool word_at(const char *p, const char *w)
{
    size_t n = strlen(w);
    return !strncmp(p, w, n) && (p[n] == ' ' || p[n] == '(');
}

static enum fg_err parse_set(const char *p, struct fg_sel_req *r, const char **end, const char *all, char *errmsg)
{
    p = skip_spaces(p);
    if (*p != '(')
        return fg_errmsg(errmsg, FG_E_PARSE, "unable to parse requirement: expected '(' at position %zu in \"%s\"",
                         (size_t)(p - all), all);
    p++;
    for (;;) {
        p = skip_spaces(p);
        long n = scan_value(p);
        if (n < 0)
            return fg_errmsg(errmsg, FG_E_PARSE, "label value too long in \"%s\"", all);
        add_value(r, p, (size_t)n);
        p = skip_spaces(p + n);
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == ')')
            break;
        return fg_errmsg(errmsg, FG_E_PARSE,
                         "unable to parse requirement: expected ',' or ')' at position %zu in \"%s\"",
                         (size_t)(p - all), all);
    }
    *end = p + 1;
    return FG_OK;
}

static enum fg_err parse_one_label(const char *p, struct fg_selector *sel, const char **end, const char *all,
                                   char *errmsg)
{
    p = skip_spaces(p);
    bool negated = *p == '!';
    if (negated)
        p = skip_spaces(p + 1);
    size_t klen = scan_key(p);
    if (!klen)
        return fg_errmsg(errmsg, FG_E_PARSE, "invalid label key at position %zu in \"%s\"", (size_t)(p - all), all);
    const char *key = p;
    p = skip_spaces(p + klen);
    if (negated || *p == ',' || *p == '\0') {
        add_req(sel, key, klen, negated ? FG_SEL_NOT_EXISTS : FG_SEL_EXISTS);
        *end = p;
        return FG_OK;
    }
    enum fg_sel_op op;
    if (p[0] == '=' && p[1] == '=') {
        op = FG_SEL_EQ;
        p += 2;
    } else if (p[0] == '=') {
        op = FG_SEL_EQ;
        p += 1;
    } else if (p[0] == '!' && p[1] == '=') {
        op = FG_SEL_NEQ;
        p += 2;
    } else if (word_at(p, "in")) {
        return parse_set(p + 2, add_req(sel, key, klen, FG_SEL_IN), end, all, errmsg);
    } else if (word_at(p, "notin")) {
        return parse_set(p + 5, add_req(sel, key, klen, FG_SEL_NOTIN), end, all, errmsg);
    } else {
        return fg_errmsg(errmsg, FG_E_PARSE, "unable to parse requirement: unknown operator at position %zu in \"%s\"",
                         (size_t)(p - all), all);
    }
    p = skip_spaces(p);
    long vlen = scan_value(p);
    if (vlen < 0)
        return fg_errmsg(errmsg, FG_E_PARSE, "label value too long in \"%s\"", all);
    add_value(add_req(sel, key, klen, op), p, (size_t)vlen);
    *end = skip_spaces(p + vlen);
    return FG_OK;
}

enum fg_err fg_selector_parse_labels(const char *s, struct fg_selector *out, char *errmsg)
{
    memset(out, 0, sizeof(*out));
    if (!s || !*skip_spaces(s))
        return FG_OK;
    const char *p = s;
    for (;;) {
        enum fg_err err = parse_one_label(p, out, &p, s, errmsg);
        if (err) {
            fg_selector_cleanup(out);
            return err;
        }
        if (*p == '\0')
            return FG_OK;
        if (*p != ',') {
            fg_selector_cleanup(out);
            return fg_errmsg(errmsg, FG_E_PARSE,
                             "unable to parse requirement: unexpected '%c' at position %zu in \"%s\"", *p,
                             (size_t)(p - s), s);
        }
        p++;
    }
}

static bool supported_field(const char *const *fields, const char *key, size_t len)
{
    for (size_t i = 0; fields[i]; i++)
        if (strlen(fields[i]) == len && !strncmp(fields[i], key, len))
            return true;
    return false;
}

enum fg_err fg_selector_parse_fields(const char *s, const char *const *fields, struct fg_selector *out,
                                     char *errmsg)
{
    memset(out, 0, sizeof(*out));
    if (!s || !*skip_spaces(s))
        return FG_OK;
    const char *p = s;
    for (;;) {
        size_t term_len = strcspn(p, ",");
        const char *op = NULL;
        size_t op_len = 0;
        for (size_t i = 0; i < term_len && !op; i++) {
            if (p[i] == '!' && p[i + 1] == '=')
                op = p + i, op_len = 2;
            else if (p[i] == '=')
                op = p + i, op_len = (p[i + 1] == '=') ? 2 : 1;
        }
        if (!op || op == p || !supported_field(fields, p, (size_t)(op - p))) {
            fg_selector_cleanup(out);
            if (op && op != p)
                return fg_errmsg(errmsg, FG_E_PARSE, "field label not supported: %.*s", (int)(op - p), p);
            return fg_errmsg(errmsg, FG_E_PARSE, "invalid field selector term \"%.*s\": expected field=value",
                             (int)term_len, p);
        }
        struct fg_sel_req *r = add_req(out, p, (size_t)(op - p), *op == '!' ? FG_SEL_NEQ : FG_SEL_EQ);
        add_value(r, op + op_len, term_len - (size_t)(op + op_len - p));
        if (p[term_len] == '\0')
            return FG_OK;
        p += term_len + 1;
    }
}

static enum fg_err add_expression(struct fg_selector *sel, json_object *e, size_t i, char *errmsg)
{
    static const struct { const char *name; enum fg_sel_op op; } ops[] = {
        { "In", FG_SEL_IN }, { "NotIn", FG_SEL_NOTIN }, { "Exists", FG_SEL_EXISTS },
        { "DoesNotExist", FG_SEL_NOT_EXISTS },
    };
    const char *key = fg_json_get_str(e, "key", NULL);
    const char *op = fg_json_get_str(e, "operator", NULL);
    json_object *values = fg_json_get(e, "values", NULL);
    for (size_t k = 0; key && op && k < sizeof(ops) / sizeof(*ops); k++) {
        if (strcmp(op, ops[k].name))
            continue;
        struct fg_sel_req *r = add_req(sel, key, strlen(key), ops[k].op);
        for (size_t v = 0; json_object_is_type(values, json_type_array) && v < json_object_array_length(values); v++) {
            json_object *item = json_object_array_get_idx(values, v);
            const char *value = item ? json_object_get_string(item) : "";
            add_value(r, value, strlen(value));
        }
        return FG_OK;
    }
    return fg_errmsg(errmsg, FG_E_PARSE, "matchExpressions[%zu]: needs a key and an operator In, NotIn, Exists or "
                     "DoesNotExist", i);
}

enum fg_err fg_selector_from_json(json_object *label_selector, struct fg_selector *out, char *errmsg)
{
    memset(out, 0, sizeof(*out));
    if (!json_object_is_type(label_selector, json_type_object))
        return fg_errmsg(errmsg, FG_E_PARSE, "a label selector must be an object");
    json_object *labels = fg_json_get(label_selector, "matchLabels", NULL);
    if (json_object_is_type(labels, json_type_object)) {
        json_object_object_foreach(labels, key, value) {
            const char *v = value ? json_object_get_string(value) : "";
            add_value(add_req(out, key, strlen(key), FG_SEL_EQ), v, strlen(v));
        }
    }
    json_object *exprs = fg_json_get(label_selector, "matchExpressions", NULL);
    for (size_t i = 0; json_object_is_type(exprs, json_type_array) && i < json_object_array_length(exprs); i++) {
        enum fg_err err = add_expression(out, json_object_array_get_idx(exprs, i), i, errmsg);
        if (err) {
            fg_selector_cleanup(out);
            return err;
        }
    }
    return FG_OK;
}

static bool in_values(const struct fg_sel_req *r, const char *v)
{
    for (size_t i = 0; i < r->nvalues; i++)
        if (!strcmp(r->values[i], v))
            return true;
    return false;
}

/* value NULL means "absent". */
static bool req_matches(const struct fg_sel_req *r, const char *value)
{
    switch (r->op) {
    case FG_SEL_EXISTS: return value != NULL;
    case FG_SEL_NOT_EXISTS: return value == NULL;
    case FG_SEL_EQ:
    case FG_SEL_IN: return value && in_values(r, value);
    case FG_SEL_NEQ:
    case FG_SEL_NOTIN: return !value || !in_values(r, value);
    }
    return false;
}

bool fg_selector_match_labels(const struct fg_selector *sel, json_object *obj)
{
    json_object *labels = fg_json_get(obj, "metadata", "labels", NULL);
    for (size_t i = 0; i < sel->n; i++) {
        if (!req_matches(&sel->reqs[i], fg_json_get_str(labels, sel->reqs[i].key, NULL)))
            return false;
    }
    return true;
}

/* The string at a dotted path ("involvedObject.name", "reason"); "" when absent. */
static const char *field_value(json_object *obj, const char *path)
{
    json_object *v = obj;
    for (const char *p = path; v && *p;) {
        size_t n = strcspn(p, ".");
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)n, p);
        v = json_object_is_type(v, json_type_object) ? json_object_object_get(v, key) : NULL;
        p += n + (p[n] == '.');
    }
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

bool fg_selector_match_fields(const struct fg_selector *sel, json_object *obj)
{
    for (size_t i = 0; i < sel->n; i++)
        if (!req_matches(&sel->reqs[i], field_value(obj, sel->reqs[i].key)))
            return false;
    return true;
}
