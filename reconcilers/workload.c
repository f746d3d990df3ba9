/* Which workload a pod belongs to, and what fracgpu makes of it (workload.h). */
#include "reconcilers/workload.h"

#include <ctype.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"
#include "crds/gpuworkload.h"
#include "reconcilers/mutation.h"
#include "reconcilers/podcontract.h"

static const struct fg_workload_kind builtin[] = {
    { { "apps", "v1", "deployments", "Deployment", true }, false, FG_CLASS_INFERENCE },
    { { "apps", "v1", "statefulsets", "StatefulSet", true }, false, FG_CLASS_INFERENCE },
    { { "batch", "v1", "jobs", "Job", true }, false, FG_CLASS_BATCH },
    { { "batch", "v1", "cronjobs", "CronJob", true }, false, FG_CLASS_BATCH },
};
const struct fg_workload_kinds fg_workload_builtin_kinds = { builtin, sizeof(builtin) / sizeof(*builtin) };

#define MAX_CHAIN 8
#define KIND_SPEC_USAGE "GROUP/VERSION/KIND/PLURAL[=CLASS], such as kubeflow.org/v1/PyTorchJob/pytorchjobs=training" /* owner hops followed: pod → ReplicaSet → Deployment needs 2 */

/* The group of an apiVersion ("apps/v1" → "apps", "v1" → ""), into out. */
void fg_workload_api_group(const char *api_version, char *out, size_t size)
{
    const char *slash = api_version ? strchr(api_version, '/') : NULL;
    size_t n = slash ? (size_t)(slash - api_version) : 0;
    snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), slash ? api_version : "");
}

static const struct fg_workload_kind *find_kind(const struct fg_workload_kinds *kinds, const char *group, const char *kind)
{
    for (size_t i = 0; kind && i < kinds->n; i++)
        if (!strcmp(kinds->v[i].resource.group, group) && !strcmp(kinds->v[i].resource.kind, kind))
            return &kinds->v[i];
    return NULL;
}

const struct fg_workload_kind *fg_workload_kind_of(const struct fg_workload_kinds *kinds, json_object *obj)
{
    char group[256];
    fg_workload_api_group(fg_json_get_str(obj, "apiVersion", NULL), group, sizeof(group));
    return find_kind(kinds, group, fg_json_get_str(obj, "kind", NULL));
}

static bool all_of(const char *s, const char *allowed)
{
    return *s && strspn(s, allowed) == strlen(s);
}

enum fg_err fg_workload_kind_parse(const char *spec, struct fg_workload_kind *out, char *errmsg)
{
    static const char lower[] = "abcdefghijklmnopqrstuvwxyz0123456789-.";
    char buf[512], *parts[5], *cls = NULL, *save = NULL;
    memset(out, 0, sizeof(*out));
    if (!spec || strlen(spec) >= sizeof(buf))
        return fg_errmsg(errmsg, FG_E_INVAL, "workload kind \"%s\": want " KIND_SPEC_USAGE, spec ? spec : "");
    snprintf(buf, sizeof(buf), "%s", spec);
    char *eq = strchr(buf, '=');
    if (eq) {
        *eq = '\0';
        cls = eq + 1;
    }
    size_t n = 0;
    for (char *t = strtok_r(buf, "/", &save); t && n < 5; t = strtok_r(NULL, "/", &save))
        parts[n++] = t;
    bool empty_part = strstr(spec, "//") || spec[0] == '/';
    bool shape = n == 4 && !empty_part && all_of(parts[0], lower) && strchr(parts[0], '.') &&
                 all_of(parts[1], lower) && parts[2][0] >= 'A' && parts[2][0] <= 'Z' &&
                 all_of(parts[2], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") &&
                 all_of(parts[3], lower);
    enum fg_workload_class c = FG_CLASS_INFERENCE;
    if (n == 4 && find_kind(&fg_workload_builtin_kinds, parts[0], parts[2]))
        return fg_errmsg(errmsg, FG_E_INVAL, "workload kind \"%s\" is built in", spec);
    if (!shape || (cls && !fg_workload_class_parse(cls, &c)))
        return fg_errmsg(errmsg, FG_E_INVAL, "workload kind \"%s\": want " KIND_SPEC_USAGE
                                             " (CLASS one of inference, training, batch, build)", spec);
    out->resource = (struct fg_kube_resource){ fg_strdup(parts[0]), fg_strdup(parts[1]), fg_strdup(parts[3]),
                                               fg_strdup(parts[2]), true };
    out->fixed_class = cls != NULL;
    out->workload_class = c;
    return FG_OK;
}

void fg_workload_kind_cleanup(struct fg_workload_kind *k)
{
    free((char *)k->resource.group);
    free((char *)k->resource.version);
    free((char *)k->resource.plural);
    free((char *)k->resource.kind);
    memset(k, 0, sizeof(*k));
}

/* The controller ownerReference of obj, or NULL. */
static json_object *controller_of(json_object *obj)
{
    json_object *refs = fg_json_get(obj, "metadata", "ownerReferences", NULL);
    for (size_t i = 0; i < fg_json_array_len(refs); i++) {
        json_object *r = json_object_array_get_idx(refs, i);
        json_object *c = fg_json_get(r, "controller", NULL);
        if (json_object_is_type(c, json_type_boolean) && json_object_get_boolean(c))
            return r;
    }
    return NULL;
}

json_object *fg_workload_of_pod(json_object *pod, const struct fg_workload_kinds *kinds, fg_object_lookup *lookup,
                                void *ctx, const struct fg_workload_kind **kind)
{
    json_object *found = NULL, *cur = pod;
    *kind = NULL;
    for (int hop = 0; hop < MAX_CHAIN; hop++) {
        json_object *ref = controller_of(cur);
        char group[256];
        fg_workload_api_group(fg_json_get_str(ref, "apiVersion", NULL), group, sizeof(group));
        const char *k = fg_json_get_str(ref, "kind", NULL), *name = fg_json_get_str(ref, "name", NULL);
        const struct fg_workload_kind *wk = find_kind(kinds, group, k);
        bool replicaset = k && !strcmp(group, "apps") && !strcmp(k, "ReplicaSet");
        if (!ref || !name || (!wk && !replicaset))
            break;
        json_object *owner = lookup(ctx, group, k, name);
        if (!owner)
            break;
        /* the owner must be the object the reference names, not a namesake recreated since */
        const char *uid = fg_json_get_str(ref, "uid", NULL), *owner_uid = fg_json_get_str(owner, "metadata", "uid", NULL);
        if (uid && owner_uid && strcmp(uid, owner_uid))
            break;
        if (wk) {
            found = owner;
            *kind = wk;
        }
        cur = owner;
    }
    return found;
}

static bool says(json_object *o, const char *want)
{
    const char *v = json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
    return v && !strcmp(v, want);
}

bool fg_workload_automated(json_object *workload, json_object *ns)
{
    json_object *own = fg_json_get(workload, "metadata", "annotations", FG_KEY_AUTOMATE, NULL);
    if (own)
        return says(own, "true");
    return says(fg_json_get(ns, "metadata", "labels", FG_KEY_AUTOMATE, NULL), "true");
}

bool fg_workload_label_on(json_object *pod_or_template)
{
    return says(fg_json_get(pod_or_template, "metadata", "labels", FG_KEY_AUTOMATE, NULL), "true");
}

/* Whether `kind`, a custom kind, shares its kind name with another kind of the table (the built-in
 * kinds keep their plain names whatever is configured). */
static bool ambiguous(const struct fg_workload_kinds *kinds, const struct fg_workload_kind *kind)
{
    if (find_kind(&fg_workload_builtin_kinds, kind->resource.group, kind->resource.kind))
        return false;
    for (size_t i = 0; i < kinds->n; i++) {
        const struct fg_kube_resource *other = &kinds->v[i].resource;
        if (&kinds->v[i] != kind && !strcasecmp(other->kind, kind->resource.kind) &&
            strcmp(other->group, kind->resource.group))
            return true;
    }
    return false;
}

void fg_workload_name(const struct fg_workload_kinds *kinds, const struct fg_workload_kind *kind, const char *name,
                      char out[FG_WORKLOAD_NAME_MAX + 1])
{
    char plain[2 * FG_WORKLOAD_NAME_MAX + 2];
    int n = snprintf(plain, sizeof(plain), "%s-%s", kind->resource.kind, name);
    for (char *p = plain; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    if (n <= FG_WORKLOAD_NAME_MAX && !ambiguous(kinds, kind)) {
        memcpy(out, plain, (size_t)n + 1);
        return;
    }
    char full[3 * FG_WORKLOAD_NAME_MAX];
    int len = snprintf(full, sizeof(full), "%s/%s/%s", kind->resource.group, kind->resource.kind, name);
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)full, (size_t)(len < (int)sizeof(full) ? len : (int)sizeof(full) - 1), digest);
    int keep = FG_WORKLOAD_NAME_MAX - 9;
    if (n < keep)
        keep = n;
    while (keep > 0 && (plain[keep - 1] == '-' || plain[keep - 1] == '.')) /* a name part ends alphanumeric */
        keep--;
    snprintf(out, FG_WORKLOAD_NAME_MAX + 1, "%.*s-%02x%02x%02x%02x", keep, plain, digest[0], digest[1], digest[2],
             digest[3]);
}

static bool hinted(const char *s, const char *const *hints)
{
    for (const char *const *h = hints; s && *h; h++)
        if (strcasestr(s, *h))
            return true;
    return false;
}

/* Whether a string of a string array (command, args) holds a hint. */
static bool array_hinted(json_object *a, const char *const *hints)
{
    for (size_t i = 0; i < fg_json_array_len(a); i++)
        if (hinted(json_object_get_string(json_object_array_get_idx(a, i)), hints))
            return true;
    return false;
}

/* Whether a container of the templates shows a hint in its image (or, with commands, command and args). */
static bool containers_hinted(const struct fg_pod_template *templates, size_t n, const char *const *hints,
                              bool commands)
{
    for (size_t t = 0; t < n; t++) {
        json_object *cs = fg_json_get(templates[t].obj, "spec", "containers", NULL);
        for (size_t i = 0; i < fg_json_array_len(cs); i++) {
            json_object *c = json_object_array_get_idx(cs, i);
            if (hinted(fg_json_get_str(c, "image", NULL), hints) ||
                (commands && (array_hinted(fg_json_get(c, "command", NULL), hints) ||
                              array_hinted(fg_json_get(c, "args", NULL), hints))))
                return true;
        }
    }
    return false;
}

enum fg_workload_class fg_workload_detect_class(const struct fg_workload_kind *kind, json_object *workload)
{
    static const char *const notebook[] = { "jupyter", "notebook", NULL };
    static const char *const training[] = { "train", "finetune", "fine-tune", NULL };
    if (kind->fixed_class)
        return kind->workload_class;
    struct fg_pod_template templates[8];
    size_t n = fg_workload_templates(workload, templates, 8);
    if (n > 8)
        n = 8;
    if (containers_hinted(templates, n, notebook, false))
        return FG_CLASS_BUILD;
    if (strcmp(kind->resource.kind, "Job"))
        return kind->workload_class;
    bool train = hinted(fg_json_get_str(workload, "metadata", "name", NULL), training) ||
                 containers_hinted(templates, n, training, true);
    json_object *labels = fg_json_get(workload, "metadata", "labels", NULL);
    if (json_object_is_type(labels, json_type_object)) {
        json_object_object_foreach(labels, key, value) {
            (void)key;
            train = train || hinted(json_object_get_string(value), training);
        }
    }
    return train ? FG_CLASS_TRAINING : FG_CLASS_BATCH;
}

static void collect(json_object *o, int depth, char *path, struct fg_pod_template *out, size_t max, size_t *n)
{
    if (depth > 6 || !json_object_is_type(o, json_type_object))
        return;
    size_t len = strlen(path);
    json_object_object_foreach(o, key, value) {
        bool is_template = !strcmp(key, "template") && fg_json_get(value, "spec", "containers", NULL);
        if (!is_template && !json_object_is_type(value, json_type_object))
            continue;
        path[len] = '/';
        if (len + 1 < FG_TEMPLATE_PATH_MAX && fg_json_pointer_token(key, path + len + 1, FG_TEMPLATE_PATH_MAX - len - 1)) {
            if (is_template) {
                if (*n < max) {
                    out[*n].obj = value;
                    snprintf(out[*n].path, sizeof(out[*n].path), "%s", path);
                }
                (*n)++;
            } else {
                collect(value, depth + 1, path, out, max, n);
            }
        }
        path[len] = '\0';
    }
}

size_t fg_workload_templates(json_object *workload, struct fg_pod_template *out, size_t max)
{
    size_t n = 0;
    char path[FG_TEMPLATE_PATH_MAX] = "/spec";
    collect(fg_json_get(workload, "spec", NULL), 0, path, out, max, &n);
    return n;
}

json_object *fg_workload_gpu_template(json_object *workload, struct fg_eligibility *e)
{
    struct fg_pod_template t[8];
    size_t n = fg_workload_templates(workload, t, 8);
    memset(e, 0, sizeof(*e));
    for (size_t i = 0; i < n && i < 8; i++) {
        fg_eligibility_check(t[i].obj, NULL, e);
        if (e->ask != FG_GPU_NONE)
            return t[i].obj;
    }
    return NULL;
}
