/* nodematch — node selectors, node affinity, taints and tolerations; see nodematch.h. */
#include "operator/kube/nodematch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"

static bool in_values(json_object *values, const char *v)
{
    for (size_t i = 0; v && i < fg_json_array_len(values); i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(values, i));
        if (s && !strcmp(s, v))
            return true;
    }
    return false;
}

static bool parse_int(const char *s, long long *out)
{
    if (!s || !*s)
        return false;
    char *end = NULL;
    errno = 0;
    *out = strtoll(s, &end, 10);
    return !*end && !errno;
}

/* One NodeSelectorRequirement against value (NULL: absent). */
static bool requirement_matches(json_object *req, const char *value)
{
    const char *op = fg_json_get_str(req, "operator", NULL);
    json_object *values = fg_json_get(req, "values", NULL);
    if (!op)
        return false;
    if (!strcmp(op, "In"))
        return in_values(values, value);
    if (!strcmp(op, "NotIn"))
        return !in_values(values, value);
    if (!strcmp(op, "Exists"))
        return value != NULL;
    if (!strcmp(op, "DoesNotExist"))
        return value == NULL;
    long long have, want;
    if ((!strcmp(op, "Gt") || !strcmp(op, "Lt")) && fg_json_array_len(values) == 1 && parse_int(value, &have) &&
        parse_int(json_object_get_string(json_object_array_get_idx(values, 0)), &want))
        return op[0] == 'G' ? have > want : have < want;
    return false;
}

bool fg_node_selector_term_matches(json_object *term, json_object *node)
{
    json_object *exprs = fg_json_get(term, "matchExpressions", NULL);
    json_object *fields = fg_json_get(term, "matchFields", NULL);
    if (!fg_json_array_len(exprs) && !fg_json_array_len(fields))
        return false;
    json_object *labels = fg_json_get(node, "metadata", "labels", NULL);
    for (size_t i = 0; i < fg_json_array_len(exprs); i++) {
        json_object *e = json_object_array_get_idx(exprs, i);
        const char *key = fg_json_get_str(e, "key", NULL);
        if (!key || !requirement_matches(e, fg_json_get_str(labels, key, NULL)))
            return false;
    }
    for (size_t i = 0; i < fg_json_array_len(fields); i++) {
        json_object *f = json_object_array_get_idx(fields, i);
        if (!fg_str_eq(fg_json_get_str(f, "key", NULL), "metadata.name") ||
            !requirement_matches(f, fg_json_get_str(node, "metadata", "name", NULL)))
            return false;
    }
    return true;
}

bool fg_node_matches_pod(json_object *pod, json_object *node)
{
    json_object *selector = fg_json_get(pod, "spec", "nodeSelector", NULL);
    if (json_object_is_type(selector, json_type_object)) {
        json_object *labels = fg_json_get(node, "metadata", "labels", NULL);
        json_object_object_foreach(selector, key, value) {
            if (!fg_str_eq(fg_json_get_str(labels, key, NULL), json_object_get_string(value)))
                return false;
        }
    }
    json_object *required = fg_json_get(pod, "spec", "affinity", "nodeAffinity",
                                        "requiredDuringSchedulingIgnoredDuringExecution", NULL);
    if (!required)
        return true;
    json_object *terms = fg_json_get(required, "nodeSelectorTerms", NULL);
    for (size_t i = 0; i < fg_json_array_len(terms); i++)
        if (fg_node_selector_term_matches(json_object_array_get_idx(terms, i), node))
            return true;
    return false;
}

int64_t fg_node_preferred_affinity(json_object *pod, json_object *node)
{
    json_object *prefs = fg_json_get(pod, "spec", "affinity", "nodeAffinity",
                                     "preferredDuringSchedulingIgnoredDuringExecution", NULL);
    int64_t sum = 0;
    for (size_t i = 0; i < fg_json_array_len(prefs); i++) {
        json_object *p = json_object_array_get_idx(prefs, i);
        int64_t weight = 0;
        if (fg_json_get_int64(p, &weight, "weight", NULL) &&
            fg_node_selector_term_matches(fg_json_get(p, "preference", NULL), node))
            sum += weight;
    }
    return sum;
}

bool fg_toleration_tolerates(json_object *toleration, json_object *taint)
{
    const char *t_effect = fg_json_get_str(toleration, "effect", NULL);
    if (t_effect && *t_effect && !fg_str_eq(t_effect, fg_json_get_str(taint, "effect", NULL)))
        return false;
    const char *t_key = fg_json_get_str(toleration, "key", NULL);
    const char *op = fg_json_get_str(toleration, "operator", NULL);
    bool exists = fg_str_eq(op, "Exists");
    if (!exists && op && *op && strcmp(op, "Equal"))
        return false;
    if ((!t_key || !*t_key) && exists)
        return true;
    if (!fg_str_eq(t_key ? t_key : "", fg_json_get_str(taint, "key", NULL)))
        return false;
    if (exists)
        return true;
    const char *t_value = fg_json_get_str(toleration, "value", NULL);
    const char *value = fg_json_get_str(taint, "value", NULL);
    return !strcmp(t_value ? t_value : "", value ? value : "");
}

static bool tolerated(json_object *taint, json_object *tolerations)
{
    for (size_t i = 0; i < fg_json_array_len(tolerations); i++)
        if (fg_toleration_tolerates(json_object_array_get_idx(tolerations, i), taint))
            return true;
    return false;
}

json_object *fg_untolerated_taint(json_object *taints, json_object *tolerations, bool noexecute_only)
{
    for (size_t i = 0; i < fg_json_array_len(taints); i++) {
        json_object *t = json_object_array_get_idx(taints, i);
        const char *effect = fg_json_get_str(t, "effect", NULL);
        bool counts = fg_str_eq(effect, "NoExecute") || (!noexecute_only && fg_str_eq(effect, "NoSchedule"));
        if (counts && !tolerated(t, tolerations))
            return t;
    }
    return NULL;
}

int64_t fg_untolerated_prefer_no_schedule(json_object *taints, json_object *tolerations)
{
    int64_t n = 0;
    for (size_t i = 0; i < fg_json_array_len(taints); i++) {
        json_object *t = json_object_array_get_idx(taints, i);
        if (fg_str_eq(fg_json_get_str(t, "effect", NULL), "PreferNoSchedule") && !tolerated(t, tolerations))
            n++;
    }
    return n;
}
