/*
 * patch_strategic — Kubernetes strategic merge patch, driven by OpenAPI patch metadata; see patch.h.
 *
 * The walk carries the definition (an OpenAPI schema object with `properties`) that describes the map
 * being merged; a property's `$ref` (or its `items.$ref` for lists) names the definition one level
 * down. A list merges only when its property declares x-kubernetes-patch-strategy containing "merge":
 * with x-kubernetes-patch-merge-key, elements pair up by that key and merge recursively; without one
 * (primitive lists such as finalizers) the patch values are added when absent. Everything else is
 * replaced, as kube-apiserver does. The patch is applied to a deep copy of the original in place.
 */
#include "e2e/apiserver/patch.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"

#define SET_ORDER "$setElementOrder/"
#define DELETE_FROM "$deleteFromPrimitiveList/"

struct smp {
    const struct fg__registry *reg;
    char *errmsg;
};

static enum fg_err merge_map(struct smp *c, json_object *target, json_object *patch, json_object *schema);

static json_object *property(json_object *schema, const char *name)
{
    return fg_json_get(schema, "properties", name, NULL);
}

/* The definition a property refers to, directly or through its items. */
static json_object *sub_schema(const struct smp *c, json_object *prop)
{
    const char *ref = fg_json_get_str(prop, "$ref", NULL);
    if (!ref)
        ref = fg_json_get_str(prop, "items", "$ref", NULL);
    return fg__registry_definition(c->reg, ref);
}

static bool is_directive(const char *key)
{
    return key[0] == '$';
}

/* A copy of a patch fragment with nulls and directives resolved against an empty original. */
static enum fg_err fresh_value(struct smp *c, json_object *patch, json_object *schema, json_object **out)
{
    if (!json_object_is_type(patch, json_type_object)) {
        *out = fg__json_dup(patch);
        return FG_OK;
    }
    *out = json_object_new_object();
    enum fg_err err = merge_map(c, *out, patch, schema);
    if (err) {
        json_object_put(*out);
        *out = NULL;
    }
    return err;
}

static ssize_t find_by_key(json_object *list, const char *key, json_object *value)
{
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *e = json_object_array_get_idx(list, i);
        json_object *kv = NULL;
        if (json_object_object_get_ex(e, key, &kv) && json_object_equal(kv, value))
            return (ssize_t)i;
    }
    return -1;
}

static ssize_t find_value(json_object *list, json_object *value)
{
    for (size_t i = 0; i < json_object_array_length(list); i++)
        if (json_object_equal(json_object_array_get_idx(list, i), value))
            return (ssize_t)i;
    return -1;
}

static enum fg_err merge_list(struct smp *c, json_object *target, const char *name, json_object *patch,
                              json_object *prop)
{
    const char *key = fg_json_get_str(prop, "x-kubernetes-patch-merge-key", NULL);
    json_object *schema = sub_schema(c, prop);
    json_object *list = fg_json_get(target, name, NULL);
    if (!json_object_is_type(list, json_type_array)) {
        list = json_object_new_array();
        json_object_object_add(target, name, list);
    }
    for (size_t i = 0; i < json_object_array_length(patch); i++) {
        json_object *e = json_object_array_get_idx(patch, i);
        if (fg_str_eq(fg_json_get_str(e, "$patch", NULL), "replace")) {
            /* {"$patch":"replace"} in a list: the list becomes the patch's other elements. */
            json_object *fresh = json_object_new_array();
            for (size_t j = 0; j < json_object_array_length(patch); j++) {
                json_object *pe = json_object_array_get_idx(patch, j), *v = NULL;
                if (j == i)
                    continue;
                enum fg_err err = fresh_value(c, pe, schema, &v);
                if (err) {
                    json_object_put(fresh);
                    return err;
                }
                json_object_array_add(fresh, v);
            }
            json_object_object_add(target, name, fresh);
            return FG_OK;
        }
    }
    for (size_t i = 0; i < json_object_array_length(patch); i++) {
        json_object *e = json_object_array_get_idx(patch, i);
        if (!key) {
            if (find_value(list, e) < 0)
                json_object_array_add(list, fg__json_dup(e));
            continue;
        }
        json_object *kv = NULL;
        if (!json_object_is_type(e, json_type_object) || !json_object_object_get_ex(e, key, &kv))
            return fg_errmsg(c->errmsg, FG_E_INVAL, "element %zu of %s lacks its merge key \"%s\"", i, name, key);
        ssize_t at = find_by_key(list, key, kv);
        const char *directive = fg_json_get_str(e, "$patch", NULL);
        if (directive && !strcmp(directive, "delete")) {
            for (; at >= 0; at = find_by_key(list, key, kv))
                json_object_array_del_idx(list, (size_t)at, 1);
            continue;
        }
        if (directive)
            return fg_errmsg(c->errmsg, FG_E_INVAL, "unknown $patch directive \"%s\" in %s", directive, name);
        enum fg_err err;
        if (at >= 0) {
            err = merge_map(c, json_object_array_get_idx(list, (size_t)at), e, schema);
        } else {
            json_object *v = NULL;
            err = fresh_value(c, e, schema, &v);
            if (!err)
                json_object_array_add(list, v);
        }
        if (err)
            return err;
    }
    return FG_OK;
}

/* $setElementOrder/<name>: elements named in `order` first, in that order; the rest keep theirs. */
static void set_order(json_object *target, const char *name, json_object *order, const char *key)
{
    json_object *list = fg_json_get(target, name, NULL);
    if (!json_object_is_type(list, json_type_array) || !json_object_is_type(order, json_type_array))
        return;
    size_t n = json_object_array_length(list);
    json_object *sorted = json_object_new_array();
    char *taken = fg_calloc(n ? n : 1, 1);
    for (size_t i = 0; i < json_object_array_length(order); i++) {
        json_object *o = json_object_array_get_idx(order, i), *kv = NULL;
        if (key && !json_object_object_get_ex(o, key, &kv))
            continue;
        for (size_t j = 0; j < n; j++) {
            json_object *e = json_object_array_get_idx(list, j), *ekv = NULL;
            bool same = key ? json_object_object_get_ex(e, key, &ekv) && json_object_equal(ekv, kv)
                            : json_object_equal(e, o);
            if (!taken[j] && same) {
                taken[j] = 1;
                json_object_array_add(sorted, json_object_get(e));
                break;
            }
        }
    }
    for (size_t j = 0; j < n; j++)
        if (!taken[j])
            json_object_array_add(sorted, json_object_get(json_object_array_get_idx(list, j)));
    free(taken);
    json_object_object_add(target, name, sorted);
}

static void delete_from_primitive_list(json_object *target, const char *name, json_object *values)
{
    json_object *list = fg_json_get(target, name, NULL);
    if (!json_object_is_type(list, json_type_array) || !json_object_is_type(values, json_type_array))
        return;
    for (size_t i = 0; i < json_object_array_length(values); i++) {
        ssize_t at;
        while ((at = find_value(list, json_object_array_get_idx(values, i))) >= 0)
            json_object_array_del_idx(list, (size_t)at, 1);
    }
}

static void retain_keys(json_object *target, json_object *keys)
{
    struct json_object_iterator it = json_object_iter_begin(target), end = json_object_iter_end(target);
    json_object *drop = json_object_new_array();
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        const char *k = json_object_iter_peek_name(&it);
        json_object *ks = json_object_new_string(k);
        if (find_value(keys, ks) < 0)
            json_object_array_add(drop, ks);
        else
            json_object_put(ks);
    }
    for (size_t i = 0; i < json_object_array_length(drop); i++)
        json_object_object_del(target, json_object_get_string(json_object_array_get_idx(drop, i)));
    json_object_put(drop);
}

static enum fg_err merge_value(struct smp *c, json_object *target, const char *k, json_object *v, json_object *schema)
{
    json_object *prop = property(schema, k);
    if (!v) {
        json_object_object_del(target, k);
        return FG_OK;
    }
    if (json_object_is_type(v, json_type_object)) {
        const char *directive = fg_json_get_str(v, "$patch", NULL);
        if (directive && !strcmp(directive, "delete")) {
            json_object_object_del(target, k);
            return FG_OK;
        }
        json_object *child = fg_json_get(target, k, NULL);
        if (!json_object_is_type(child, json_type_object)) {
            child = json_object_new_object();
            json_object_object_add(target, k, child);
        }
        return merge_map(c, child, v, sub_schema(c, prop));
    }
    const char *strategy = fg_json_get_str(prop, "x-kubernetes-patch-strategy", NULL);
    if (json_object_is_type(v, json_type_array) && strategy && strstr(strategy, "merge"))
        return merge_list(c, target, k, v, prop);
    json_object_object_add(target, k, fg__json_dup(v));
    return FG_OK;
}

static enum fg_err merge_map(struct smp *c, json_object *target, json_object *patch, json_object *schema)
{
    const char *directive = fg_json_get_str(patch, "$patch", NULL);
    if (directive && strcmp(directive, "replace") && strcmp(directive, "merge"))
        return fg_errmsg(c->errmsg, FG_E_INVAL, "unknown $patch directive \"%s\"", directive);
    if (directive && !strcmp(directive, "replace")) {
        struct json_object_iterator it = json_object_iter_begin(target), end = json_object_iter_end(target);
        json_object *keys = json_object_new_array();
        for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
            json_object_array_add(keys, json_object_new_string(json_object_iter_peek_name(&it)));
        for (size_t i = 0; i < json_object_array_length(keys); i++)
            json_object_object_del(target, json_object_get_string(json_object_array_get_idx(keys, i)));
        json_object_put(keys);
    }
    json_object_object_foreach(patch, k, v) {
        if (fg_str_has_prefix(k, DELETE_FROM)) {
            delete_from_primitive_list(target, k + strlen(DELETE_FROM), v);
            continue;
        }
        if (is_directive(k))
            continue;
        enum fg_err err = merge_value(c, target, k, v, schema);
        if (err)
            return err;
    }
    json_object_object_foreach(patch, ok, ov) {
        if (fg_str_has_prefix(ok, SET_ORDER)) {
            const char *name = ok + strlen(SET_ORDER);
            set_order(target, name, ov, fg_json_get_str(property(schema, name), "x-kubernetes-patch-merge-key", NULL));
        }
    }
    json_object *retain = fg_json_get(patch, "$retainKeys", NULL);
    if (retain) {
        if (!json_object_is_type(retain, json_type_array))
            return fg_errmsg(c->errmsg, FG_E_PARSE, "$retainKeys must be a list of field names");
        retain_keys(target, retain);
    }
    return FG_OK;
}

enum fg_err fg__patch_strategic(const struct fg__registry *reg, const char *definition, json_object *orig,
                                json_object *patch, json_object **out, char *errmsg)
{
    *out = NULL;
    if (!json_object_is_type(patch, json_type_object))
        return fg_errmsg(errmsg, FG_E_PARSE, "strategic merge patch must be a JSON object");
    struct smp c = { reg, errmsg };
    json_object *result = json_object_is_type(orig, json_type_object) ? fg__json_dup(orig) : json_object_new_object();
    enum fg_err err = merge_map(&c, result, patch, fg__registry_definition(reg, definition));
    if (err) {
        json_object_put(result);
        return err;
    }
    *out = result;
    return FG_OK;
}
