/* cow — copy-on-write editing of shared json-c trees; see cow.h. */
#include "e2e/apiserver/cow.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/json.h"
#include "base/mem.h"
#include "e2e/apiserver/patch.h"

static void remember(struct fg__cow *c, json_object *o)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->owned = fg_realloc(c->owned, c->cap * sizeof(*c->owned));
    }
    c->owned[c->n++] = o;
}

void fg__cow_init(struct fg__cow *c, struct fg__cow_node *root_node, json_object *root)
{
    *c = (struct fg__cow){ 0 };
    *root_node = (struct fg__cow_node){ .obj = root };
    remember(c, root);
}

void fg__cow_cleanup(struct fg__cow *c)
{
    free(c->owned);
    *c = (struct fg__cow){ 0 };
}

bool fg__cow_owns(const struct fg__cow *c, json_object *o)
{
    for (size_t i = c->n; i-- > 0;)
        if (c->owned[i] == o)
            return true;
    return false;
}

struct fg__cow_node fg__cow_child(struct fg__cow_node *up, const char *key)
{
    json_object *o = NULL;
    if (json_object_is_type(up->obj, json_type_object))
        json_object_object_get_ex(up->obj, key, &o);
    return (struct fg__cow_node){ .up = up, .key = key, .obj = o };
}

struct fg__cow_node fg__cow_elem(struct fg__cow_node *up, size_t i)
{
    json_object *o = NULL;
    if (i < fg_json_array_len(up->obj))
        o = json_object_array_get_idx(up->obj, i);
    return (struct fg__cow_node){ .up = up, .idx = i, .obj = o };
}

static bool is_container(json_object *o)
{
    return json_object_is_type(o, json_type_object) || json_object_is_type(o, json_type_array);
}

json_object *fg__cow_own(struct fg__cow *c, struct fg__cow_node *n)
{
    if (!n->up || (n->obj && fg__cow_owns(c, n->obj)))
        return n->obj;
    if (n->obj && !is_container(n->obj))
        return NULL;
    json_object *parent = fg__cow_own(c, n->up);
    if (!json_object_is_type(parent, n->key ? json_type_object : json_type_array))
        return NULL;
    json_object *copy = n->obj ? fg__json_shallow_dup(n->obj) : json_object_new_object();
    if (n->key)
        json_object_object_add(parent, n->key, copy);
    else
        json_object_array_put_idx(parent, n->idx, copy);
    remember(c, copy);
    n->obj = copy;
    return copy;
}

bool fg__cow_set(struct fg__cow *c, struct fg__cow_node *n, const char *key, json_object *value)
{
    json_object *o = fg__cow_own(c, n);
    if (!json_object_is_type(o, json_type_object)) {
        json_object_put(value);
        return false;
    }
    json_object_object_add(o, key, value);
    return true;
}

bool fg__cow_unset(const struct fg__cow_node *n, const char *key, enum fg__cow_when when)
{
    json_object *v = NULL;
    if (!json_object_is_type(n->obj, json_type_object) || !json_object_object_get_ex(n->obj, key, &v) || !v)
        return true;
    if (when == FG__COW_IF_NIL)
        return false;
    switch (json_object_get_type(v)) {
    case json_type_string: return json_object_get_string_len(v) == 0;
    case json_type_int: return json_object_get_int64(v) == 0;
    case json_type_boolean: return !json_object_get_boolean(v);
    default: return false;
    }
}

bool fg__cow_default_str(struct fg__cow *c, struct fg__cow_node *n, const char *key, enum fg__cow_when when,
                         const char *value)
{
    return fg__cow_unset(n, key, when) && fg__cow_set(c, n, key, json_object_new_string(value));
}

bool fg__cow_default_int(struct fg__cow *c, struct fg__cow_node *n, const char *key, enum fg__cow_when when,
                         int64_t value)
{
    return fg__cow_unset(n, key, when) && fg__cow_set(c, n, key, json_object_new_int64(value));
}

bool fg__cow_default_bool(struct fg__cow *c, struct fg__cow_node *n, const char *key, bool value)
{
    return fg__cow_unset(n, key, FG__COW_IF_NIL) && fg__cow_set(c, n, key, json_object_new_boolean(value));
}

size_t fg__cow_len(const struct fg__cow_node *n)
{
    return fg_json_array_len(n->obj);
}
