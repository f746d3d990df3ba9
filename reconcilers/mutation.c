/* The JSON Patch that turns a whole-GPU pod into one fracgpu schedules (mutation.h). */
#include "reconcilers/mutation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"
#include "reconcilers/podcontract.h"

/* The annotations a mutated pod carries, all rewritten or removed together. */
static const char *const our_annotations[] = {
    FG_ANN_WORKLOAD, FG_ANN_POLICY,    FG_ANN_COMPUTE_MILLI,    FG_ANN_MEMORY_MIB,
    FG_ANN_SHARING,  FG_ANN_ISOLATION, FG_ANN_ORIGINAL_REQUEST, FG_ANN_UPDATE_MODE, NULL,
};
static const char *const our_labels[] = { FG_LABEL_MANAGED, NULL };
static const char *const gpu_resources[] = { FG_RES_NVIDIA_GPU, FG_RES_GPU_SHARE, NULL };
static const char *const scheduler_field[] = { "schedulerName", NULL };

/* Removes member key of o, when o is an object. */
static void del(json_object *o, const char *key)
{
    if (json_object_is_type(o, json_type_object))
        json_object_object_del(o, key);
}

static json_object *copy(json_object *o)
{
    json_object *c = NULL;
    json_object_deep_copy(o, &c, NULL);
    return c;
}

static json_object *gpu_container(json_object *pod, size_t i)
{
    return json_object_array_get_idx(fg_json_get(pod, "spec", "containers", NULL), i);
}

/* --- the original form ------------------------------------------------------------------------ */

/* The container named `name` in spec.containers, or NULL. */
static json_object *container_named(json_object *pod, const char *name, size_t *index)
{
    json_object *cs = fg_json_get(pod, "spec", "containers", NULL);
    for (size_t i = 0; name && i < fg_json_array_len(cs); i++) {
        const char *n = fg_json_get_str(json_object_array_get_idx(cs, i), "name", NULL);
        if (n && !strcmp(n, name)) {
            *index = i;
            return json_object_array_get_idx(cs, i);
        }
    }
    return NULL;
}

/* Puts back into container c's requests and limits what `record` says it asked for. */
static void restore_resources(json_object *c, json_object *record)
{
    static const char *const maps[] = { "requests", "limits" };
    for (size_t i = 0; i < 2; i++) {
        json_object *list = fg_json_get(c, "resources", maps[i], NULL);
        del(list, FG_RES_GPU_SHARE);
        json_object *was = fg_json_get(record, maps[i], NULL);
        if (was)
            json_object_object_add(fg_json_ensure_obj(fg_json_ensure_obj(c, "resources"), maps[i]), FG_RES_NVIDIA_GPU,
                                   json_object_get(was));
    }
}

/* Removes keys from meta[map], and the map itself once empty: the API does not tell an empty map
 * from an absent one, and a mutation that added the map must take it away again. */
static void drop_keys(json_object *meta, const char *map, const char *const *keys)
{
    json_object *m = fg_json_get(meta, map, NULL);
    for (const char *const *k = keys; *k; k++)
        del(m, *k);
    if (m && fg_json_object_len(m) == 0)
        del(meta, map);
}

/* A new copy of pod as it was before a mutation whose record it carries; NULL when it carries no
 * trustworthy one (then the pod is its own original form). */
static json_object *restored(json_object *pod)
{
    const char *text = fg_json_get_str(pod, "metadata", "annotations", FG_ANN_ORIGINAL_REQUEST, NULL);
    json_object *record = NULL;
    if (!text || fg_json_parse(text, strlen(text), 4096, &record, NULL) != FG_OK)
        return NULL;
    size_t index = 0;
    json_object *c = json_object_is_type(record, json_type_object)
                         ? container_named(pod, fg_json_get_str(record, "container", NULL), &index)
                         : NULL;
    int64_t share = 0, gpu = 0;
    bool mutated = c && (fg_json_get(record, "requests", NULL) || fg_json_get(record, "limits", NULL)) &&
                   fg_container_ask(c, FG_RES_GPU_SHARE, &share, NULL) == FG_OK && share > 0 &&
                   fg_container_ask(c, FG_RES_NVIDIA_GPU, &gpu, NULL) == FG_OK && gpu == 0;
    json_object *orig = NULL;
    if (mutated) {
        orig = copy(pod);
        restore_resources(gpu_container(orig, index), record);
        json_object *spec = fg_json_get(orig, "spec", NULL);
        json_object *sched = fg_json_get(record, "schedulerName", NULL);
        if (sched)
            json_object_object_add(spec, "schedulerName", json_object_get(sched));
        else
            del(spec, "schedulerName");
        drop_keys(fg_json_get(orig, "metadata", NULL), "labels", our_labels);
        drop_keys(fg_json_get(orig, "metadata", NULL), "annotations", our_annotations);
    }
    json_object_put(record);
    return orig;
}

/* --- the mutated form ------------------------------------------------------------------------- */

/* {"container":..., "requests":..., "limits":..., "schedulerName":...} as they were, members absent
 * where the pod had none. */
static char *original_record(json_object *orig, json_object *c)
{
    json_object *r = json_object_new_object();
    fg_json_set_str(r, "container", fg_json_get_str(c, "name", NULL));
    json_object *v;
    if ((v = fg_json_get(c, "resources", "requests", FG_RES_NVIDIA_GPU, NULL)))
        json_object_object_add(r, "requests", json_object_get(v));
    if ((v = fg_json_get(c, "resources", "limits", FG_RES_NVIDIA_GPU, NULL)))
        json_object_object_add(r, "limits", json_object_get(v));
    if ((v = fg_json_get(orig, "spec", "schedulerName", NULL)))
        json_object_object_add(r, "schedulerName", json_object_get(v));
    char *text = fg_strdup(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(r);
    return text;
}

/* The eligible pod `orig` (its container `index` asking for the GPU) as fracgpu admits it: a new copy. */
static json_object *mutated(json_object *orig, size_t index, const struct fg_mutation_target *t)
{
    json_object *pod = copy(orig);
    json_object *c = gpu_container(pod, index);
    char *record = original_record(orig, c);
    static const char *const maps[] = { "requests", "limits" };
    for (size_t i = 0; i < 2; i++) {
        json_object *list = fg_json_get(c, "resources", maps[i], NULL);
        if (fg_json_get(list, FG_RES_NVIDIA_GPU, NULL)) {
            json_object_object_del(list, FG_RES_NVIDIA_GPU);
            fg_json_set_str(list, FG_RES_GPU_SHARE, "1");
        }
    }
    fg_json_set_str(fg_json_get(pod, "spec", NULL), "schedulerName", FG_SCHEDULER_NAME);
    json_object *meta = fg_json_ensure_obj(pod, "metadata");
    fg_json_set_str(fg_json_ensure_obj(meta, "labels"), FG_LABEL_MANAGED, "true");
    json_object *ann = fg_json_ensure_obj(meta, "annotations");
    char compute[24], memory[24];
    fg_allocation_format(&t->allocation, compute, memory);
    fg_json_set_str(ann, FG_ANN_WORKLOAD, t->workload);
    fg_json_set_str(ann, FG_ANN_POLICY, t->policy);
    fg_json_set_str(ann, FG_ANN_COMPUTE_MILLI, compute);
    fg_json_set_str(ann, FG_ANN_MEMORY_MIB, memory);
    fg_json_set_str(ann, FG_ANN_SHARING, fg_sharing_name(t->sharing));
    fg_json_set_str(ann, FG_ANN_ISOLATION, fg_isolation_name(t->isolation));
    fg_json_set_str(ann, FG_ANN_ORIGINAL_REQUEST, record);
    fg_json_set_str(ann, FG_ANN_UPDATE_MODE, fg_update_mode_name(t->update_mode));
    free(record);
    return pod;
}

/* --- the difference --------------------------------------------------------------------------- */

static void add_op(json_object *ops, const char *op, const char *path, json_object *value)
{
    json_object *o = json_object_new_object();
    fg_json_set_str(o, "op", op);
    fg_json_set_str(o, "path", path);
    if (value)
        json_object_object_add(o, "value", json_object_get(value));
    json_object_array_add(ops, o);
}

/* Appends to `path` (a JSON Pointer of size FG_POINTER_MAX) one escaped token. */
#define FG_POINTER_MAX 1024
static bool pointer_push(char *path, const char *key)
{
    size_t n = strlen(path);
    if (n + 1 >= FG_POINTER_MAX)
        return false;
    path[n] = '/';
    return fg_json_pointer_token(key, path + n + 1, FG_POINTER_MAX - n - 1);
}

/* Whether every member of object o is one of keys. */
static bool only_keys(json_object *o, const char *const *keys)
{
    if (!json_object_is_type(o, json_type_object))
        return false;
    json_object_object_foreach(o, key, value) {
        (void)value;
        const char *const *k = keys;
        while (*k && strcmp(*k, key))
            k++;
        if (!*k)
            return false;
    }
    return true;
}

/* Ops that make cur's members `keys` under the object path `parents` (from cur and des, at `base`)
 * what they are in des. A parent missing in cur is added whole from des, which then holds only
 * those members: everything else in it was copied from cur. A parent missing in des goes whole when
 * it holds nothing else. */
static void diff_members(json_object *ops, json_object *cur, json_object *des, const char *base,
                         const char *const *parents, const char *const *keys)
{
    char path[FG_POINTER_MAX];
    snprintf(path, sizeof(path), "%s", base);
    for (const char *const *p = parents; *p; p++) {
        json_object *next_cur = fg_json_get(cur, *p, NULL), *next_des = fg_json_get(des, *p, NULL);
        if (!pointer_push(path, *p))
            return;
        if (!next_cur) {
            if (next_des)
                add_op(ops, "add", path, next_des);
            return;
        }
        cur = next_cur;
        des = next_des;
    }
    if (!des && only_keys(cur, keys)) {
        add_op(ops, "remove", path, NULL);
        return;
    }
    for (const char *const *k = keys; *k; k++) {
        json_object *c = fg_json_get(cur, *k, NULL), *d = fg_json_get(des, *k, NULL);
        char member[FG_POINTER_MAX];
        snprintf(member, sizeof(member), "%s", path);
        if (json_object_equal(c, d) || !pointer_push(member, *k))
            continue;
        add_op(ops, d ? "add" : "remove", member, d);
    }
}

static json_object *diff(json_object *cur, json_object *des)
{
    json_object *ops = json_object_new_array();
    static const char *const spec[] = { "spec", NULL };
    static const char *const labels[] = { "metadata", "labels", NULL };
    static const char *const annotations[] = { "metadata", "annotations", NULL };
    static const char *const requests[] = { "resources", "requests", NULL };
    static const char *const limits[] = { "resources", "limits", NULL };
    json_object *cs = fg_json_get(cur, "spec", "containers", NULL);
    for (size_t i = 0; i < fg_json_array_len(cs); i++) {
        char base[64];
        snprintf(base, sizeof(base), "/spec/containers/%zu", i);
        diff_members(ops, gpu_container(cur, i), gpu_container(des, i), base, requests, gpu_resources);
        diff_members(ops, gpu_container(cur, i), gpu_container(des, i), base, limits, gpu_resources);
    }
    diff_members(ops, cur, des, "", spec, scheduler_field);
    diff_members(ops, cur, des, "", labels, our_labels);
    diff_members(ops, cur, des, "", annotations, our_annotations);
    if (json_object_array_length(ops) == 0) {
        json_object_put(ops);
        return NULL;
    }
    return ops;
}

void fg_mutation_plan(json_object *pod, const struct fg_mutation_target *target, const struct fg_storage_view *storage,
                      struct fg_mutation *out)
{
    json_object *orig = restored(pod);
    fg_eligibility_check(orig ? orig : pod, storage, &out->judged);
    json_object *want = out->judged.ask == FG_GPU_ELIGIBLE ? mutated(orig ? orig : pod, out->judged.index, target)
                                                            : json_object_get(orig ? orig : pod);
    out->patch = diff(pod, want);
    json_object_put(want);
    json_object_put(orig);
}

void fg_mutation_cleanup(struct fg_mutation *m)
{
    json_object_put(m->patch);
    m->patch = NULL;
}
