/* store — sorted per-type buckets, the revision counter and the event ring; see store.h. */
#include "e2e/apiserver/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"
#include "e2e/apiserver/patch.h"

#define DEFAULT_HISTORY 10000

void fg__store_init(struct fg__store *st, struct fg__registry *reg, size_t history)
{
    memset(st, 0, sizeof(*st));
    st->reg = reg;
    st->cap = history ? history : DEFAULT_HISTORY;
    st->ring = fg_calloc(st->cap, sizeof(*st->ring));
    st->empty = json_object_new_object();
    if (!st->empty || lh_table_resize(json_object_get_object(st->empty), 1) != 0)
        abort(); /* json-c fails these only when allocation fails */
}

static void entry_free(struct fg__entry *e)
{
    free(e->key);
    json_object_put(e->obj);
    fg__text_unref(e->text);
    free(e);
}

static void event_clear(struct fg__event *ev)
{
    free(ev->ns);
    fg__text_unref(ev->text);
    fg__text_unref(ev->old_text);
    memset(ev, 0, sizeof(*ev));
}

void fg__store_compact(struct fg__store *st)
{
    for (size_t i = 0; i < st->count; i++)
        event_clear(fg__store_history(st, i));
    st->head = st->count = 0;
    st->floor = st->rv;
}

void fg__store_cleanup(struct fg__store *st)
{
    fg__store_compact(st);
    free(st->ring);
    for (size_t b = 0; b < st->nbuckets; b++) {
        for (size_t i = 0; i < st->buckets[b].n; i++)
            entry_free(st->buckets[b].v[i]);
        free(st->buckets[b].v);
    }
    free(st->buckets);
    json_object_put(st->empty);
    memset(st, 0, sizeof(*st));
}

char *fg__store_key(const struct fg__type *type, const char *ns, const char *name)
{
    return type->namespaced ? fg_asprintf("%s/%s", ns ? ns : "", name) : fg_strdup(name);
}

struct fg__bucket *fg__store_bucket(struct fg__store *st, const struct fg__type *type)
{
    if (type->index >= st->nbuckets) {
        size_t n = type->index + 1;
        st->buckets = fg_realloc(st->buckets, n * sizeof(*st->buckets));
        memset(st->buckets + st->nbuckets, 0, (n - st->nbuckets) * sizeof(*st->buckets));
        st->nbuckets = n;
    }
    return &st->buckets[type->index];
}

size_t fg__store_lower_bound(const struct fg__bucket *b, const char *key)
{
    size_t lo = 0, hi = b->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(b->v[mid]->key, key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

const struct fg__entry *fg__store_get(struct fg__store *st, const struct fg__type *type, const char *ns,
                                      const char *name)
{
    struct fg__bucket *b = fg__store_bucket(st, type);
    char *key = fg__store_key(type, ns, name);
    size_t i = fg__store_lower_bound(b, key);
    const struct fg__entry *e = (i < b->n && !strcmp(b->v[i]->key, key)) ? b->v[i] : NULL;
    free(key);
    return e;
}

struct fg__text *fg__store_text_of(struct fg__store *st, const struct fg__type *type, json_object *obj)
{
    const char *name = fg_json_get_str(obj, "metadata", "name", NULL);
    const struct fg__entry *e = name ? fg__store_get(st, type, fg_json_get_str(obj, "metadata", "namespace", NULL),
                                                     name)
                                     : NULL;
    return e && e->obj == obj ? e->text : NULL;
}

struct fg__event *fg__store_history(struct fg__store *st, size_t i)
{
    return &st->ring[(st->head + i) % st->cap];
}

static void set_rv(json_object *obj, uint64_t rv)
{
    char s[24];
    snprintf(s, sizeof(s), "%" PRIu64, rv);
    fg_json_set_str(fg_json_ensure_obj(obj, "metadata"), "resourceVersion", s);
}

static void record(struct fg__store *st, const struct fg__type *type, enum fg__ev_type kind, json_object *obj,
                   json_object *old, struct fg__text *text, struct fg__text *old_text)
{
    if (st->count == st->cap) {
        struct fg__event *oldest = fg__store_history(st, 0);
        st->floor = oldest->rv;
        event_clear(oldest);
        st->head = (st->head + 1) % st->cap;
        st->count--;
    }
    struct fg__event *ev = fg__store_history(st, st->count++);
    ev->rv = st->rv;
    ev->type = type;
    ev->kind = kind;
    const char *ns = fg_json_get_str(obj, "metadata", "namespace", NULL);
    ev->ns = ns ? fg_strdup(ns) : NULL;
    ev->text = fg__text_ref(text);
    ev->old_text = old_text ? fg__text_ref(old_text) : NULL;
    if (st->on_event)
        st->on_event(st->on_event_ud, ev, obj, old);
}

/* Puts obj (taken) into its slot; returns the entry and, in *old / *old_text, what it replaced (references). */
static struct fg__entry *place(struct fg__store *st, const struct fg__type *type, json_object *obj, json_object **old,
                               struct fg__text **old_text)
{
    struct fg__bucket *b = fg__store_bucket(st, type);
    char *key = fg__store_key(type, fg_json_get_str(obj, "metadata", "namespace", NULL),
                              fg_json_get_str(obj, "metadata", "name", NULL));
    struct fg__entry *e = fg_calloc(1, sizeof(*e));
    e->key = key;
    e->obj = obj;
    fg_json_shrink(obj, st->empty);   /* a stored object never changes again */
    e->text = fg__text_from_json(obj);
    size_t i = fg__store_lower_bound(b, key);
    *old = NULL;
    *old_text = NULL;
    if (i < b->n && !strcmp(b->v[i]->key, key)) {
        *old = json_object_get(b->v[i]->obj);
        *old_text = fg__text_ref(b->v[i]->text);
        entry_free(b->v[i]);
    } else {
        if (b->n == b->cap) {
            b->cap = b->cap ? 2 * b->cap : 64;
            b->v = fg_realloc(b->v, b->cap * sizeof(*b->v));
        }
        memmove(b->v + i + 1, b->v + i, (b->n - i) * sizeof(*b->v));
        b->n++;
    }
    b->v[i] = e;
    return e;
}

const struct fg__entry *fg__store_put(struct fg__store *st, const struct fg__type *type, json_object *obj)
{
    set_rv(obj, ++st->rv);
    json_object *old = NULL;
    struct fg__text *old_text = NULL;
    struct fg__entry *e = place(st, type, obj, &old, &old_text);
    record(st, type, old ? FG__EV_MODIFIED : FG__EV_ADDED, obj, old, e->text, old_text);
    json_object_put(old);
    fg__text_unref(old_text);
    return e;
}

void fg__store_insert_loaded(struct fg__store *st, const struct fg__type *type, json_object *obj)
{
    json_object *old = NULL;
    struct fg__text *old_text = NULL;
    place(st, type, obj, &old, &old_text);
    json_object_put(old);
    fg__text_unref(old_text);
}

json_object *fg__store_remove(struct fg__store *st, const struct fg__type *type, const char *ns, const char *name,
                              json_object *last)
{
    struct fg__bucket *b = fg__store_bucket(st, type);
    char *key = fg__store_key(type, ns, name);
    size_t i = fg__store_lower_bound(b, key);
    bool found = i < b->n && !strcmp(b->v[i]->key, key);
    free(key);
    if (!found) {
        json_object_put(last);
        return NULL;
    }
    struct fg__entry *e = b->v[i];
    memmove(b->v + i, b->v + i + 1, (b->n - i - 1) * sizeof(*b->v));
    b->n--;
    if (!last) {
        last = fg__json_shallow_dup(e->obj);
        json_object_object_add(last, "metadata", fg__json_shallow_dup(fg_json_get(e->obj, "metadata", NULL)));
    }
    entry_free(e);
    set_rv(last, ++st->rv);
    struct fg__text *text = fg__text_from_json(last);
    record(st, type, FG__EV_DELETED, last, NULL, text, NULL);
    fg__text_unref(text);
    return last;
}
