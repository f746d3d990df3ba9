/*
 * gpuworkload — decoding a GPUWorkload spec and resolving the policy a workload uses.
 */
#include "crds/gpuworkload.h"

#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"
#include "crds/builtin.h"

static enum fg_err take_string(json_object *v, const char *path, char **dst, char *errmsg)
{
    if (!json_object_is_type(v, json_type_string))
        return fg_errmsg(errmsg, FG_E_INVAL, "%s: must be a string", path);
    const char *s = json_object_get_string(v);
    size_t n = strlen(s);
    if (n == 0 || n > FG_NAME_MAX)
        return fg_errmsg(errmsg, FG_E_INVAL, "%s: must be 1 to %d characters, got %zu", path, FG_NAME_MAX, n);
    free(*dst);
    *dst = fg_strdup(s);
    return FG_OK;
}

static enum fg_err decode_target(json_object *t, struct fg_gpuworkload_spec *out, char *errmsg)
{
    if (!json_object_is_type(t, json_type_object))
        return fg_errmsg(errmsg, FG_E_INVAL, "spec.targetRef: must be an object");
    json_object_object_foreach(t, key, v) {
        enum fg_err err;
        if (!strcmp(key, "apiVersion"))
            err = take_string(v, "spec.targetRef.apiVersion", &out->target_api_version, errmsg);
        else if (!strcmp(key, "kind"))
            err = take_string(v, "spec.targetRef.kind", &out->target_kind, errmsg);
        else if (!strcmp(key, "name"))
            err = take_string(v, "spec.targetRef.name", &out->target_name, errmsg);
        else
            err = fg_errmsg(errmsg, FG_E_INVAL, "spec.targetRef.%.64s: unknown field", key);
        if (err)
            return err;
    }
    if (!out->target_api_version || !out->target_kind || !out->target_name)
        return fg_errmsg(errmsg, FG_E_INVAL, "spec.targetRef.%s: required",
                         !out->target_api_version ? "apiVersion" : !out->target_kind ? "kind" : "name");
    return FG_OK;
}

static enum fg_err decode_update_mode(json_object *v, struct fg_gpuworkload_spec *out, char *errmsg)
{
    for (int m = FG_UPDATE_OFF; m <= FG_UPDATE_AUTO; m++) {
        if (json_object_is_type(v, json_type_string) &&
            !strcmp(json_object_get_string(v), fg_update_mode_name((enum fg_update_mode)m))) {
            out->has_update_mode = true;
            out->update_mode = (enum fg_update_mode)m;
            return FG_OK;
        }
    }
    return fg_errmsg(errmsg, FG_E_INVAL, "spec.updateMode: must be one of \"Off\", \"Initial\", \"Auto\"");
}

static enum fg_err decode_members(json_object *spec, struct fg_gpuworkload_spec *out, char *errmsg)
{
    if (!json_object_is_type(spec, json_type_object))
        return fg_errmsg(errmsg, FG_E_INVAL, "spec: must be an object");
    bool have_target = false;
    json_object_object_foreach(spec, key, v) {
        enum fg_err err;
        if (!strcmp(key, "targetRef")) {
            have_target = true;
            err = decode_target(v, out, errmsg);
        } else if (!strcmp(key, "policy")) {
            /* The empty string is the schema's default: auto-detect. */
            if (json_object_is_type(v, json_type_string) && !*json_object_get_string(v))
                continue;
            err = take_string(v, "spec.policy", &out->policy, errmsg);
        } else if (!strcmp(key, "updateMode")) {
            err = decode_update_mode(v, out, errmsg);
        } else {
            err = fg_errmsg(errmsg, FG_E_INVAL, "spec.%.64s: unknown field", key);
        }
        if (err)
            return err;
    }
    if (!have_target)
        return fg_errmsg(errmsg, FG_E_INVAL, "spec.targetRef: required");
    return FG_OK;
}

enum fg_err fg_gpuworkload_decode(json_object *spec, struct fg_gpuworkload_spec *out, char *errmsg)
{
    *out = (struct fg_gpuworkload_spec){ 0 };
    if (!spec)
        return fg_errmsg(errmsg, FG_E_INVAL, "spec: required");
    enum fg_err err = decode_members(spec, out, errmsg);
    if (err)
        fg_gpuworkload_spec_cleanup(out);
    return err;
}

void fg_gpuworkload_spec_cleanup(struct fg_gpuworkload_spec *s)
{
    FG_FREE(s->target_api_version);
    FG_FREE(s->target_kind);
    FG_FREE(s->target_name);
    FG_FREE(s->policy);
}

bool fg_workload_class_parse(const char *s, enum fg_workload_class *out)
{
    for (int c = FG_CLASS_INFERENCE; s && c <= FG_CLASS_BUILD; c++) {
        if (!strcmp(s, fg_workload_class_name((enum fg_workload_class)c))) {
            *out = (enum fg_workload_class)c;
            return true;
        }
    }
    return false;
}

const char *fg_gpuworkload_policy_get(json_object *obj)
{
    const char *p = fg_json_get_str(obj, "spec", "policy", NULL);
    if (p && *p)
        return p;
    p = fg_json_get_str(obj, "status", "policy", NULL);
    if (p && *p)
        return p;
    enum fg_workload_class c;
    if (fg_workload_class_parse(fg_json_get_str(obj, "status", "detectedClass", NULL), &c))
        return fg_builtin_policy_for_class(c);
    return NULL;
}
