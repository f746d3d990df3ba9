/*
 * store_delete — DELETE semantics: DeleteOptions preconditions (409 when they do not hold),
 * finalizers (an object that has some only gets deletionTimestamp and goes when an update removes
 * the last one, see store_write.c), namespace cascade (deleting a namespace deletes everything in
 * it at once), and the namespaces that always exist.
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/apiserver/patch.h"
#include "e2e/apiserver/store.h"
#include "e2e/apiserver/store_int.h"

static void delete_namespace_contents(struct fg__store *st, const char *ns)
{
    char *prefix = fg_asprintf("%s/", ns);
    for (size_t t = 0; t < st->reg->n; t++) {
        const struct fg__type *type = st->reg->types[t];
        if (!type->namespaced)
            continue;
        struct fg__bucket *b = fg__store_bucket(st, type);
        size_t i;
        while ((i = fg__store_lower_bound(b, prefix)) < b->n && fg_str_has_prefix(b->v[i]->key, prefix)) {
            char *name = fg_strdup(b->v[i]->key + strlen(prefix));
            json_object_put(fg__store_remove(st, type, ns, name, NULL));
            free(name);
        }
    }
    free(prefix);
}

enum fg_err fg__store_delete(struct fg__store *st, const struct fg__type *type, const char *ns, const char *name,
                             json_object *options, json_object **out)
{
    const struct fg__entry *cur = fg__store_get(st, type, ns, name);
    if (!cur)
        return fg__write_not_found(out, type, name);
    static const char *const preconditions[] = { "resourceVersion", "uid" };
    for (size_t i = 0; i < sizeof(preconditions) / sizeof(*preconditions); i++) {
        const char *want = fg_json_get_str(options, "preconditions", preconditions[i], NULL);
        const char *have = fg_json_get_str(cur->obj, "metadata", preconditions[i], NULL);
        if (want && !fg_str_eq(want, have))
            return fg__write_fail(out, FG_E_KUBE_CONFLICT, type, name, NULL,
                                  "Precondition failed: %s in precondition: %s, %s in object meta: %s",
                                  preconditions[i], want, preconditions[i], have ? have : "");
    }
    if (fg__write_has_finalizers(cur->obj)) {
        /* graceful: mark it; it goes when an update removes the last finalizer */
        if (fg_json_get(cur->obj, "metadata", "deletionTimestamp", NULL)) {
            *out = json_object_get(cur->obj);
            return FG_OK;
        }
        json_object *obj = fg__json_shallow_dup(cur->obj);
        json_object *meta = fg__json_shallow_dup(fg_json_get(cur->obj, "metadata", NULL));
        json_object_object_add(obj, "metadata", meta);
        fg__write_set_now(meta, "deletionTimestamp");
        json_object_object_add(meta, "deletionGracePeriodSeconds", json_object_new_int(0));
        *out = json_object_get(fg__store_put(st, type, obj)->obj);
        return FG_OK;
    }
    *out = fg__store_remove(st, type, ns, name, NULL);
    if (type == fg__write_namespaces_type(st))
        delete_namespace_contents(st, name);
    return FG_OK;
}

void fg__store_seed(struct fg__store *st)
{
    static const char *const always[] = { "default", "kube-system", "kube-public" };
    const struct fg__type *nst = fg__write_namespaces_type(st);
    for (size_t i = 0; nst && i < sizeof(always) / sizeof(*always); i++) {
        if (fg__store_get(st, nst, NULL, always[i]))
            continue;
        json_object *body = json_object_new_object(), *out = NULL;
        fg_json_set_str(fg_json_ensure_obj(body, "metadata"), "name", always[i]);
        if (fg__store_create(st, nst, NULL, body, &out) != FG_OK)
            abort(); /* a fixed valid namespace cannot be refused */
        json_object_put(out);
        json_object_put(body);
    }
}
