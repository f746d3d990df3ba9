/* kobj — immutable reference-counted cached objects; see kobj.h. */
#include "kobj.h"

#include <errno.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"

/* One allocation: the header, then data = key \0 namespace \0 uid \0 text \0, then the typed value at
 * the next multiple of 16 bytes. The name is the tail of the key, so it is not stored twice. */
struct fg_kobj {
    atomic_uint refs;
    uint32_t name_off;   /* offset of the name inside data (the key's tail) */
    uint32_t ns_off;
    uint32_t uid_off;
    uint32_t text_off;
    uint32_t text_len;
    uint64_t rv;
    uint32_t value_off;  /* 0: no typed value */
    uint32_t value_size;
    char data[];
};

bool fg_kobj_parse_rv(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return false;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

char *fg_kobj_make_key(const char *ns, const char *name)
{
    return ns && *ns ? fg_asprintf("%s/%s", ns, name) : fg_strdup(name);
}

enum fg_err fg_kobj_new(json_object *obj, size_t value_size, struct fg_kobj **out, char *errmsg)
{
    *out = NULL;
    const char *name = fg_json_get_str(obj, "metadata", "name", NULL);
    if (!name || !*name)
        return fg_errmsg(errmsg, FG_E_INVAL, "object has no metadata.name");
    const char *ns = fg_json_get_str(obj, "metadata", "namespace", NULL);
    const char *uid = fg_json_get_str(obj, "metadata", "uid", NULL);
    const char *rvs = fg_json_get_str(obj, "metadata", "resourceVersion", NULL);
    uint64_t rv;
    if (!fg_kobj_parse_rv(rvs, &rv))
        return fg_errmsg(errmsg, FG_E_INVAL, "object %s has no valid metadata.resourceVersion (%s)", name,
                         rvs ? rvs : "absent");
    ns = ns ? ns : "";
    uid = uid ? uid : "";
    size_t text_len = 0;
    const char *text = fg_json_text(obj, &text_len);
    size_t ns_len = strlen(ns), name_len = strlen(name), uid_len = strlen(uid);
    size_t key_len = ns_len ? ns_len + 1 + name_len : name_len;
    size_t total = key_len + 1 + ns_len + 1 + uid_len + 1 + text_len + 1;
    size_t value_off = 0;
    if (value_size) {
        value_off = (offsetof(struct fg_kobj, data) + total + 15) / 16 * 16 - offsetof(struct fg_kobj, data);
        total = value_off + value_size;
    }
    if (total > UINT32_MAX)
        return fg_errmsg(errmsg, FG_E_TOO_BIG, "object %s is too large to cache", name);

    struct fg_kobj *o = fg_malloc(sizeof(*o) + total);
    atomic_init(&o->refs, 1);
    o->rv = rv;
    o->value_off = (uint32_t)value_off;
    o->value_size = (uint32_t)value_size;
    if (value_size)
        memset(o->data + value_off, 0, value_size);
    char *p = o->data;
    if (ns_len) {
        memcpy(p, ns, ns_len);
        p[ns_len] = '/';
        o->name_off = (uint32_t)(ns_len + 1);
    } else {
        o->name_off = 0;
    }
    memcpy(o->data + o->name_off, name, name_len + 1);
    o->ns_off = (uint32_t)(key_len + 1);
    memcpy(o->data + o->ns_off, ns, ns_len + 1);
    o->uid_off = (uint32_t)(o->ns_off + ns_len + 1);
    memcpy(o->data + o->uid_off, uid, uid_len + 1);
    o->text_off = (uint32_t)(o->uid_off + uid_len + 1);
    o->text_len = (uint32_t)text_len;
    memcpy(o->data + o->text_off, text, text_len + 1);
    *out = o;
    return FG_OK;
}

struct fg_kobj *fg_kobj_ref(struct fg_kobj *o)
{
    atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
    return o;
}

void fg_kobj_unref(struct fg_kobj *o)
{
    if (o && atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1)
        free(o);
}

const void *fg_kobj_value(const struct fg_kobj *o)
{
    return o->value_off ? o->data + o->value_off : NULL;
}

void *fg_kobj_value_fill(struct fg_kobj *o)
{
    return o->value_off ? o->data + o->value_off : NULL;
}

const char *fg_kobj_key(const struct fg_kobj *o) { return o->data; }
const char *fg_kobj_namespace(const struct fg_kobj *o) { return o->data + o->ns_off; }
const char *fg_kobj_name(const struct fg_kobj *o) { return o->data + o->name_off; }
const char *fg_kobj_uid(const struct fg_kobj *o) { return o->data + o->uid_off; }
uint64_t fg_kobj_rv(const struct fg_kobj *o) { return o->rv; }

const char *fg_kobj_text(const struct fg_kobj *o, size_t *len)
{
    if (len)
        *len = o->text_len;
    return o->data + o->text_off;
}

size_t fg_kobj_size(const struct fg_kobj *o)
{
    return sizeof(*o) + (o->value_off ? o->value_off + o->value_size : o->text_off + o->text_len + 1);
}

enum fg_err fg_kobj_parse(const struct fg_kobj *o, json_object **out, char *errmsg)
{
    return fg_json_parse(o->data + o->text_off, o->text_len, 0, out, errmsg);
}

void fg_kobj_list_cleanup(struct fg_kobj_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        fg_kobj_unref(l->items[i]);
    FG_FREE(l->items);
    l->n = 0;
}
