/*
 * schema — structural-schema validation of custom resources, as kube-apiserver does it for CRDs.
 *
 * The object is first copied (it shares members with the request body and the stored object), then
 * walked together with the CRD version's openAPIV3Schema: missing properties that declare a default
 * get a copy of it, properties the schema does not know are pruned (unless
 * x-kubernetes-preserve-unknown-fields), and each value is checked for type, nullable, enum,
 * minimum/maximum and pattern; required properties must be present. Every failure becomes one
 * cause {reason, message, field} of a single 422 Invalid Status whose message reads like
 * kube-apiserver's ("GPUPolicy.fracgpu.io \"x\" is invalid: spec.a: Invalid value: ..."), which
 * kubectl turns into its "is invalid" line. apiVersion, kind and metadata are the server's business
 * and are left alone.
 */
#include "e2e/apiserver/admit.h"

#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/apiserver/patch.h"
#include "e2e/apiserver/status.h"
#include "e2e/apiserver/store_int.h"

struct walk {
    json_object *details; /* Status details collecting causes */
    char first[2 * FG_ERRMSG_MAX]; /* "field: message" of the first cause */
    size_t ncauses;
};

static void add_cause(struct walk *w, const char *reason, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add_cause(struct walk *w, const char *reason, const char *field, const char *fmt, ...)
{
    char msg[FG_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fg__status_add_cause(w->details, reason, msg, field);
    if (!w->ncauses++)
        snprintf(w->first, sizeof(w->first), "%s: %s", field, msg);
}

static const char *json_type_word(json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_null: return "null";
    case json_type_boolean: return "boolean";
    case json_type_int: return "integer";
    case json_type_double: return "number";
    case json_type_string: return "string";
    case json_type_array: return "array";
    default: return "object";
    }
}

static bool type_ok(const char *want, json_object *v)
{
    enum json_type t = json_object_get_type(v);
    if (!want)
        return true;
    if (!strcmp(want, "integer"))
        return t == json_type_int || (t == json_type_double && floor(json_object_get_double(v)) ==
                                                                   json_object_get_double(v));
    if (!strcmp(want, "number"))
        return t == json_type_int || t == json_type_double;
    return !strcmp(want, json_type_word(v));
}

/* The value as kube-apiserver quotes it in messages: strings quoted, the rest as JSON. */
static const char *shown(json_object *v)
{
    return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

static void check_enum(struct walk *w, json_object *schema, json_object *v, const char *field)
{
    json_object *values = fg_json_get(schema, "enum", NULL);
    if (!json_object_is_type(values, json_type_array))
        return;
    struct fg_buf allowed = { 0 };
    for (size_t i = 0; i < json_object_array_length(values); i++) {
        json_object *a = json_object_array_get_idx(values, i);
        if (json_object_equal(a, v))
            goto out;
        if (fg_buf_printf(&allowed, "%s%s", i ? ", " : "", shown(a)))
            break;
    }
    add_cause(w, "FieldValueNotSupported", field, "Unsupported value: %s: supported values: %s", shown(v),
              fg_buf_str(&allowed));
out:
    fg_buf_cleanup(&allowed);
}

static void check_scalar(struct walk *w, json_object *schema, json_object *v, const char *field)
{
    check_enum(w, schema, v, field);
    if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) {
        double x = json_object_get_double(v);
        json_object *min = fg_json_get(schema, "minimum", NULL), *max = fg_json_get(schema, "maximum", NULL);
        if (min && x < json_object_get_double(min))
            add_cause(w, "FieldValueInvalid", field, "Invalid value: %s: %s in body should be greater than or "
                      "equal to %s", shown(v), field, shown(min));
        if (max && x > json_object_get_double(max))
            add_cause(w, "FieldValueInvalid", field, "Invalid value: %s: %s in body should be less than or equal "
                      "to %s", shown(v), field, shown(max));
    }
    const char *pattern = fg_json_get_str(schema, "pattern", NULL);
    if (pattern && json_object_is_type(v, json_type_string)) {
        regex_t re;
        if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) == 0) {
            if (regexec(&re, json_object_get_string(v), 0, NULL, 0) != 0)
                add_cause(w, "FieldValueInvalid", field, "Invalid value: %s: %s in body should match '%s'",
                          shown(v), field, pattern);
            regfree(&re);
        }
    }
}

static void walk_value(struct walk *w, json_object *schema, json_object *v, const char *field);

static void walk_object(struct walk *w, json_object *schema, json_object *obj, const char *field, bool top)
{
    json_object *props = fg_json_get(schema, "properties", NULL);
    json_object *additional = fg_json_get(schema, "additionalProperties", NULL);
    bool preserve = json_object_get_boolean(fg_json_get(schema, "x-kubernetes-preserve-unknown-fields", NULL));
    if (json_object_is_type(props, json_type_object)) {
        json_object_object_foreach(props, pname, pschema) {
            json_object *def = fg_json_get(pschema, "default", NULL);
            if (def && !fg_json_get(obj, pname, NULL))
                json_object_object_add(obj, pname, fg__json_dup(def));
        }
    }
    json_object *required = fg_json_get(schema, "required", NULL);
    for (size_t i = 0; i < fg_json_array_len(required); i++) {
        const char *r = json_object_get_string(json_object_array_get_idx(required, i));
        if (r && !json_object_object_get_ex(obj, r, NULL)) {
            char *f = *field ? fg_asprintf("%s.%s", field, r) : fg_strdup(r);
            add_cause(w, "FieldValueRequired", f, "Required value");
            free(f);
        }
    }
    /* collect the names first: pruning deletes members while iterating otherwise */
    size_t n = 0;
    char **keys = fg_calloc(json_object_object_length(obj) + 1, sizeof(*keys));
    json_object_object_foreach(obj, okey, oval) {
        (void)oval;
        keys[n++] = fg_strdup(okey);
    }
    for (size_t i = 0; i < n; i++) {
        const char *key = keys[i];
        if (top && (!strcmp(key, "apiVersion") || !strcmp(key, "kind") || !strcmp(key, "metadata")))
            continue;
        json_object *sub = fg_json_get(props, key, NULL);
        if (!sub && json_object_is_type(additional, json_type_object))
            sub = additional;
        char *f = *field ? fg_asprintf("%s.%s", field, key) : fg_strdup(key);
        if (sub)
            walk_value(w, sub, fg_json_get(obj, key, NULL), f);
        else if (!preserve && !json_object_get_boolean(additional))
            json_object_object_del(obj, key);
        free(f);
    }
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
}

static void walk_value(struct walk *w, json_object *schema, json_object *v, const char *field)
{
    const char *type = fg_json_get_str(schema, "type", NULL);
    if (!v) {
        if (json_object_get_boolean(fg_json_get(schema, "nullable", NULL)))
            return;
        if (type) {
            add_cause(w, "FieldValueTypeInvalid", field, "Invalid value: \"null\": %s in body must be of type %s: "
                      "\"null\"", field, type);
        }
        return;
    }
    if (!type_ok(type, v)) {
        add_cause(w, "FieldValueTypeInvalid", field, "Invalid value: \"%s\": %s in body must be of type %s: \"%s\"",
                  json_type_word(v), field, type, json_type_word(v));
        return;
    }
    if (json_object_is_type(v, json_type_object)) {
        walk_object(w, schema, v, field, false);
    } else if (json_object_is_type(v, json_type_array)) {
        json_object *items = fg_json_get(schema, "items", NULL);
        for (size_t i = 0; items && i < json_object_array_length(v); i++) {
            char *f = fg_asprintf("%s[%zu]", field, i);
            walk_value(w, items, json_object_array_get_idx(v, i), f);
            free(f);
        }
    } else {
        check_scalar(w, schema, v, field);
    }
}

enum fg_err fg__schema_admit(const struct fg__type *type, json_object **obj, json_object **out)
{
    if (!type->schema)
        return FG_OK;
    json_object *copy = fg__json_dup(*obj);
    json_object_put(*obj);
    *obj = copy;
    const char *name = fg_json_get_str(copy, "metadata", "name", NULL);
    char *qualified = fg_asprintf("%s.%s", type->kind, type->group);
    struct walk w = { .details = fg__status_details(name, type->group, type->kind) };
    walk_object(&w, type->schema, copy, "", true);
    enum fg_err err = FG_OK;
    if (w.ncauses) {
        if (w.ncauses == 1)
            err = fg__write_fail(out, FG_E_KUBE_INVALID, NULL, NULL, w.details, "%s \"%s\" is invalid: %s", qualified,
                                 name ? name : "", w.first);
        else
            err = fg__write_fail(out, FG_E_KUBE_INVALID, NULL, NULL, w.details, "%s \"%s\" is invalid: %s (and %zu "
                                 "more)", qualified, name ? name : "", w.first, w.ncauses - 1);
        json_object_put(*obj); /* name pointed into it */
        *obj = NULL;
    } else {
        json_object_put(w.details);
    }
    free(qualified);
    return err;
}
