/* patch_json — RFC 6902 JSON patch over json-c objects; see patch.h. */
#include "e2e/apiserver/patch.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/apiserver/cow.h"

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

/* The document being patched: its root is private, everything below shared with the original until
 * an operation changes it (cow.h), so a patch copies only the paths it touches. */
struct doc {
    json_object *root;
    struct fg__cow cow;
    struct fg__cow_node root_node;
};

static void doc_set_root(struct doc *d, json_object *root)
{
    fg__cow_cleanup(&d->cow);
    d->root = root;
    fg__cow_init(&d->cow, &d->root_node, root);
}

/* The container at tokens[0..n), made private along its path, or NULL when there is none. */
static json_object *own_container(struct doc *d, char **tokens, size_t n)
{
    struct fg__cow_node *nodes = fg_calloc(n + 1, sizeof(*nodes));
    struct fg__cow_node *cur = &d->root_node;
    json_object *out = NULL;
    for (size_t i = 0; i < n; i++) {
        size_t idx;
        if (json_object_is_type(cur->obj, json_type_object) && json_object_object_get_ex(cur->obj, tokens[i], NULL))
            nodes[i] = fg__cow_child(cur, tokens[i]);
        else if (json_object_is_type(cur->obj, json_type_array) &&
                 array_index(tokens[i], json_object_array_length(cur->obj), false, &idx))
            nodes[i] = fg__cow_elem(cur, idx);
        else
            goto out;
        cur = &nodes[i];
    }
    if (json_object_is_type(cur->obj, json_type_object) || json_object_is_type(cur->obj, json_type_array))
        out = fg__cow_own(&d->cow, cur);
out:
    free(nodes);
    return out;
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

/* A new root for the whole document replaced by value (taken): private at the top, as the root must be. */
static void replace_root(struct doc *d, json_object *value)
{
    json_object *root = value;
    if (json_object_is_type(value, json_type_object) || json_object_is_type(value, json_type_array)) {
        root = fg__json_shallow_dup(value);
        json_object_put(value);
    }
    json_object_put(d->root);
    doc_set_root(d, root);
}

/* Adds (or with `replace`, replaces) value (taken) at ptr in the document. */
static enum fg_err put_value(struct doc *d, const struct pointer *ptr, const char *path, json_object *value,
                             bool replace, char *errmsg)
{
    if (ptr->n == 0) {
        replace_root(d, value);
        return FG_OK;
    }
    const char *last = ptr->tokens[ptr->n - 1];
    json_object *parent = walk(d->root, ptr->tokens, ptr->n - 1);
    size_t idx;
    if (json_object_is_type(parent, json_type_object)) {
        if (replace && !json_object_object_get_ex(parent, last, NULL))
            goto out_missing;
        json_object_object_add(own_container(d, ptr->tokens, ptr->n - 1), last, value);
        return FG_OK;
    }
    if (json_object_is_type(parent, json_type_array) &&
        array_index(last, json_object_array_length(parent), !replace, &idx)) {
        parent = own_container(d, ptr->tokens, ptr->n - 1);
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

static enum fg_err remove_value(struct doc *d, const struct pointer *ptr, const char *path, char *errmsg)
{
    json_object *parent = ptr->n ? walk(d->root, ptr->tokens, ptr->n - 1) : NULL;
    const char *last = ptr->n ? ptr->tokens[ptr->n - 1] : "";
    size_t idx;
    if (json_object_is_type(parent, json_type_object) && json_object_object_get_ex(parent, last, NULL)) {
        json_object_object_del(own_container(d, ptr->tokens, ptr->n - 1), last);
        return FG_OK;
    }
    if (json_object_is_type(parent, json_type_array) &&
        array_index(last, json_object_array_length(parent), false, &idx)) {
        json_object_array_del_idx(own_container(d, ptr->tokens, ptr->n - 1), idx, 1);
        return FG_OK;
    }
    return fg_errmsg(errmsg, FG_E_INVAL, "cannot remove \"%s\": path does not exist", path);
}

static enum fg_err apply_op(struct doc *d, json_object *op, size_t i, char *errmsg)
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
        /* shared, not copied: whatever changes it later copies it first */
        err = put_value(d, &ptr, path, json_object_get(value), !strcmp(name, "replace"), errmsg);
    } else if (!strcmp(name, "remove")) {
        err = remove_value(d, &ptr, path, errmsg);
    } else if (!strcmp(name, "test")) {
        json_object *cur = walk(d->root, ptr.tokens, ptr.n);
        if (!json_object_equal(cur, value))
            err = fg_errmsg(errmsg, FG_E_INVAL, "test operation failed at \"%s\"", path);
    } else {
        json_object *src = walk(d->root, from_ptr.tokens, from_ptr.n);
        if (!src) {
            err = fg_errmsg(errmsg, FG_E_INVAL, "%s: from path \"%s\" does not exist", name, from);
        } else if (!strcmp(name, "move") && strlen(path) > strlen(from) && fg_str_has_prefix(path, from) &&
                   path[strlen(from)] == '/') {
            err = fg_errmsg(errmsg, FG_E_INVAL, "move: cannot move \"%s\" into its own child \"%s\"", from, path);
        } else {
            /* a copy may be an edited (private) container: it is copied whole, to be private twice over */
            bool move = !strcmp(name, "move");
            json_object *moved = move ? json_object_get(src) : fg__json_dup(src);
            if (move && (err = remove_value(d, &from_ptr, from, errmsg)) != FG_OK)
                json_object_put(moved);
            else
                err = put_value(d, &ptr, path, moved, false, errmsg);
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
    struct doc d = { 0 };
    bool container = json_object_is_type(orig, json_type_object) || json_object_is_type(orig, json_type_array);
    doc_set_root(&d, container ? fg__json_shallow_dup(orig) : json_object_get(orig));
    enum fg_err err = FG_OK;
    for (size_t i = 0; !err && i < json_object_array_length(ops); i++) {
        json_object *op = json_object_array_get_idx(ops, i);
        err = json_object_is_type(op, json_type_object) ? apply_op(&d, op, i, errmsg)
                                                       : fg_errmsg(errmsg, FG_E_PARSE, "operation %zu is not an object", i);
    }
    fg__cow_cleanup(&d.cow);
    if (err)
        json_object_put(d.root);
    else
        *out = d.root;
    return err;
}
