/*
 * jsonpath — the JSONPath subset printer columns use: `.a.b`, `[N]`, `[*]` and `[?(@.k=="v")]`,
 * optionally wrapped in `{...}`. Evaluation collects every match; a column shows the first, or all
 * of them joined with commas after a `[*]`. Anything outside the subset simply matches nothing.
 */
#include "e2e/apiserver/jsonpath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"

/* Evaluates path (at its current position) on v, appending matches to out. */
static void eval(const char *p, json_object *v, json_object *out)
{
    if (!v)
        return;
    if (!*p || *p == '}') {
        json_object_array_add(out, json_object_get(v));
        return;
    }
    if (*p == '.') {
        p++;
        size_t n = strcspn(p, ".[}");
        if (!n) {
            eval(p, v, out);
            return;
        }
        char *key = fg_strndup(p, n);
        json_object *child = json_object_is_type(v, json_type_object) ? fg_json_get(v, key, NULL) : NULL;
        free(key);
        eval(p + n, child, out);
        return;
    }
    if (*p != '[' || !json_object_is_type(v, json_type_array))
        return;
    const char *close = strchr(p, ']');
    if (!close)
        return;
    size_t len = json_object_array_length(v);
    if (p[1] == '*') {
        for (size_t i = 0; i < len; i++)
            eval(close + 1, json_object_array_get_idx(v, i), out);
    } else if (p[1] == '?') {
        /* [?(@.key=="value")] */
        char key[128], value[256];
        if (sscanf(p, "[?(@.%127[^=]==\"%255[^\"]\")]", key, value) != 2)
            return;
        for (size_t i = 0; i < len; i++) {
            json_object *el = json_object_array_get_idx(v, i);
            if (fg_str_eq(fg_json_get_str(el, key, NULL), value))
                eval(close + 1, el, out);
        }
    } else {
        char *end = NULL;
        long idx = strtol(p + 1, &end, 10);
        if (end == close && idx >= 0 && (size_t)idx < len)
            eval(close + 1, json_object_array_get_idx(v, (size_t)idx), out);
    }
}

json_object *fg__jsonpath_eval(json_object *root, const char *path)
{
    json_object *out = json_object_new_array();
    if (*path == '{')
        path++;
    eval(path, root, out);
    return out;
}
