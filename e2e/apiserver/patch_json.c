/* patch_json — RFC 6902 JSON patch over json-c objects; see patch.h. */
#include "e2e/apiserver/patch.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"

/* A parsed JSON pointer: tokens unescaped, the last one separate. */
struct pointer {
    char **tokens;
    size_t n;
};

static void pointer_cleanup(struct pointer *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->tokens[i]);
    free(p->tokens);
}

static enum fg_err pointer_parse(const char *s, struct pointer *p, char *errmsg)
{
    memset(p, 0, sizeof(*p));
    if (*s == '\0')
        return FG_OK;
    if (*s != '/')
        return fg_errmsg(errmsg, FG_E_PARSE, "JSON pointer \"%s\" must start with '/'", s);
    const char *start = s + 1;
    for (;;) {
        size_t len = strcspn(start, "/");
        char *tok = fg_malloc(len + 1);
        size_t o = 0;
        for (size_t i = 0; i < len; i++) {
            if (start[i] == '~') {
                if (i + 1 >= len || (start[i + 1] != '0' && start[i + 1] != '1')) {
                    free(tok);
                    pointer_cleanup(p);
                    return fg_errmsg(errmsg, FG_E_PARSE, "JSON pointer \"%s\" has a bad '~' escape", s);
                }
                tok[o++] = start[i + 1] == '0' ? '~' : '/';
                i++;
            } else {
                tok[o++] = start[i];
            }
        }
        tok[o] = '\0';
        p->tokens = fg_realloc(p->tokens, (p->n + 1) * sizeof(*p->tokens));
        p->tokens[p->n++] = tok;
        if (start[len] == '\0')
            return FG_OK;
        start += len + 1;
    }
}

/* Array index token: digits without leading zeros; "-" (when allowed) is len. */
static bool array_index(const char *tok, size_t len, bool allow_end, size_t *out)
{
    if (allow_end && !strcmp(tok, "-")) {
        *out = len;
        return true;
    }
    if (!*tok || (tok[0] == '0' && tok[1]) || strlen(tok) > 9)
        return false;
    for (const char *c = tok; *c; c++)
        if (!isdigit((unsigned char)*c))
            return false;
    *out = (size_t)atol(tok);
    return allow_end ? *out <= len : *out < len;
}

/* The value at tokens[0..n) (borrowed), or NULL. */
static json_object *walk(json_object *doc, char **tokens, size_t n)
{
    json_object *cur = doc;
    for (size_t i = 0; i < n && cur; i++) {
        json_object *next = NULL;
        size_t idx;
        if (json_object_is_type(cur, json_type_object)) {
            if (!json_object_object_get_ex(cur, tokens[i], &next))
                return NULL;
        } else if (json_object_is_type(cur, json_type_array)) {
            if (!array_index(tokens[i], json_object_array_length(cur), false, &idx))
                return NULL;
            next = json_object_array_get_idx(cur, idx);
        }
        cur = next;
    }
    return cur;
}

static void array_insert(json_object *arr, size_t idx, json_object *value)
{
    size_t n = json_object_array_length(arr);
    if (idx == n) {
        json_object_array_add(arr, value);
        return;
    }
    json_object_array_add(arr, json_object_get(json_object_array_get_idx(arr, n - 1)));
    for (size_t i = n - 1; i > idx; i--)
        json_object_array_put_idx(arr, i, json_object_get(json_object_array_get_idx(arr, i - 1)));
    json_object_array_put_idx(arr, idx, value);
}

/* Adds (or with `replace`, replaces) value (taken) at ptr in *doc. */
static enum fg_err put_value(json_object **doc, const struct pointer *ptr, const char *path, json_object *value,
                             bool replace, char *errmsg)
{
    if (ptr->n == 0) {
        json_object_put(*doc);
        *doc = value;
        return FG_OK;
    }
    json_object *parent = walk(*doc, ptr->tokens, ptr->n - 1);
    const char *last = ptr->tokens[ptr->n - 1];
    size_t idx;
    if (json_object_is_type(parent, json_type_object)) {
        if (replace && !json_object_object_get_ex(parent, last, NULL))
            goto out_missing;
        json_object_object_add(parent, last, value);
        return FG_OK;
    }
    if (json_object_is_type(parent, json_type_array) &&
        array_index(last, json_object_array_length(parent), !replace, &idx)) {
        if (replace)
            json_object_array_put_idx(parent, idx, value);
        else
            array_insert(parent, idx, value);
        return FG_OK;
    }
out_missing:
    json_object_put(value);
    return fg_errmsg(errmsg, FG_E_INVAL, "path \"%s\" does not exist", path);
}

static enum fg_err remove_value(json_object *doc, const struct pointer *ptr, const char *path, char *errmsg)
{
    json_object *parent = ptr->n ? walk(doc, ptr->tokens, ptr->n - 1) : NULL;
    const char *last = ptr->n ? ptr->tokens[ptr->n - 1] : "";
    size_t idx;
    if (json_object_is_type(parent, json_type_object) && json_object_object_get_ex(parent, last, NULL)) {
        json_object_object_del(parent, last);
        return FG_OK;
    }
    if (json_object_is_type(parent, json_type_array) &&
        array_index(last, json_object_array_length(parent), false, &idx)) {
        json_object_array_del_idx(parent, idx, 1);
        return FG_OK;
    }
    return fg_errmsg(errmsg, FG_E_INVAL, "cannot remove \"%s\": path does not exist", path);
}

static enum fg_err apply_op(json_object **doc, json_object *op, size_t i, char *errmsg)
{
    const char *name = fg_json_get_str(op, "op", NULL);
    const char *path = fg_json_get_str(op, "path", NULL);
    if (!name || !path)
        return fg_errmsg(errmsg, FG_E_PARSE, "operation %zu needs string \"op\" and \"path\"", i);
    json_object *value = NULL;
    bool has_value = json_object_object_get_ex(op, "value", &value);
    const char *from = fg_json_get_str(op, "from", NULL);
    bool needs_value = !strcmp(name, "add") || !strcmp(name, "replace") || !strcmp(name, "test");
    bool needs_from = !strcmp(name, "move") || !strcmp(name, "copy");
    if (!needs_value && !needs_from && strcmp(name, "remove"))
        return fg_errmsg(errmsg, FG_E_PARSE, "operation %zu: unknown op \"%s\"", i, name);
    if ((needs_value && !has_value) || (needs_from && !from))
        return fg_errmsg(errmsg, FG_E_PARSE, "operation %zu (%s) lacks its \"%s\"", i, name,
                         needs_value ? "value" : "from");

    struct pointer ptr, from_ptr = { 0 };
    enum fg_err err = pointer_parse(path, &ptr, errmsg);
    if (err)
        return err;
    if (from && (err = pointer_parse(from, &from_ptr, errmsg)) != FG_OK)
        goto out_ptr;

    if (!strcmp(name, "add") || !strcmp(name, "replace")) {
        err = put_value(doc, &ptr, path, fg__json_dup(value), !strcmp(name, "replace"), errmsg);
    } else if (!strcmp(name, "remove")) {
        err = remove_value(*doc, &ptr, path, errmsg);
    } else if (!strcmp(name, "test")) {
        json_object *cur = walk(*doc, ptr.tokens, ptr.n);
        if (!json_object_equal(cur, value))
            err = fg_errmsg(errmsg, FG_E_INVAL, "test operation failed at \"%s\"", path);
    } else {
        json_object *src = walk(*doc, from_ptr.tokens, from_ptr.n);
        if (!src) {
            err = fg_errmsg(errmsg, FG_E_INVAL, "%s: from path \"%s\" does not exist", name, from);
        } else if (!strcmp(name, "move") && strlen(path) > strlen(from) && fg_str_has_prefix(path, from) &&
                   path[strlen(from)] == '/') {
            err = fg_errmsg(errmsg, FG_E_INVAL, "move: cannot move \"%s\" into its own child \"%s\"", from, path);
        } else {
            json_object *moved = fg__json_dup(src);
            if (!strcmp(name, "move") && (err = remove_value(*doc, &from_ptr, from, errmsg)) != FG_OK)
                json_object_put(moved);
            else
                err = put_value(doc, &ptr, path, moved, false, errmsg);
        }
    }
    pointer_cleanup(&from_ptr);
out_ptr:
    pointer_cleanup(&ptr);
    return err;
}

enum fg_err fg__patch_json(json_object *orig, json_object *ops, json_object **out, char *errmsg)
{
    *out = NULL;
    if (!json_object_is_type(ops, json_type_array))
        return fg_errmsg(errmsg, FG_E_PARSE, "JSON patch must be an array of operations");
    json_object *doc = fg__json_dup(orig);
    for (size_t i = 0; i < json_object_array_length(ops); i++) {
        json_object *op = json_object_array_get_idx(ops, i);
        if (!json_object_is_type(op, json_type_object)) {
            json_object_put(doc);
            return fg_errmsg(errmsg, FG_E_PARSE, "operation %zu is not an object", i);
        }
        enum fg_err err = apply_op(&doc, op, i, errmsg);
        if (err) {
            json_object_put(doc);
            return err;
        }
    }
    *out = doc;
    return FG_OK;
}
