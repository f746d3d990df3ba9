/* store — thread-safe cache of objects by key with named indexes; see store.h. */
#include "store.h"

#include <json-c/linkhash.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"

#define MAX_INDEXERS 8

/* One key's slot. The key is copied here so hash-table keys outlive the objects that come and go. */
struct entry {
    struct fg_kobj *obj;
    uint32_t gen;           /* replace generation that last saw this key */
    char ***ivals;          /* per indexer: NULL-terminated values (owned), or NULL for none */
    char key[];
};

/* The objects sharing one index value: key -> struct entry. */
struct bucket {
    struct lh_table *members;
    char value[];
};

struct indexer {
    char *name;
    fg_index_fn *fn;
    void *ud;
    struct lh_table *buckets;   /* value -> struct bucket */
};

struct fg_store {
    pthread_rwlock_t lock;
    struct lh_table *entries;   /* key -> struct entry */
    uint32_t gen;
    size_t nindexers;
    struct indexer indexers[MAX_INDEXERS];
};

size_t fg_index_by_node_name(void *ud, json_object *obj, const char **values, size_t max)
{
    (void)ud;
    const char *node = fg_json_get_str(obj, "spec", "nodeName", NULL);
    if (!node || !*node || max == 0)
        return 0;
    values[0] = node;
    return 1;
}

size_t fg_index_by_namespace(void *ud, json_object *obj, const char **values, size_t max)
{
    (void)ud;
    const char *ns = fg_json_get_str(obj, "metadata", "namespace", NULL);
    if (max == 0)
        return 0;
    values[0] = ns ? ns : "";
    return 1;
}

size_t fg_index_by_controller_uid(void *ud, json_object *obj, const char **values, size_t max)
{
    (void)ud;
    json_object *refs = fg_json_get(obj, "metadata", "ownerReferences", NULL);
    for (size_t i = 0; max > 0 && i < fg_json_array_len(refs); i++) {
        json_object *r = json_object_array_get_idx(refs, i);
        json_object *c = fg_json_get(r, "controller", NULL);
        const char *uid = fg_json_get_str(r, "uid", NULL);
        if (uid && json_object_is_type(c, json_type_boolean) && json_object_get_boolean(c)) {
            values[0] = uid;
            return 1;
        }
    }
    return 0;
}

struct fg_store *fg_store_new(void)
{
    struct fg_store *s = fg_calloc(1, sizeof(*s));
    /* Writers first: the loop thread must not wait behind a stream of readers. */
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&s->lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    s->entries = lh_kchar_table_new(256, NULL);
    return s;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static bool strv_eq(char **a, char **b)
{
    size_t i = 0;
    for (; a && b && a[i] && b[i]; i++)
        if (strcmp(a[i], b[i]) != 0)
            return false;
    return (!a || !a[i]) && (!b || !b[i]);
}

static void entry_free(struct fg_store *s, struct entry *e)
{
    for (size_t i = 0; e->ivals && i < s->nindexers; i++)
        strv_free(e->ivals[i]);
    free(e->ivals);
    fg_kobj_unref(e->obj);
    free(e);
}

void fg_store_free(struct fg_store *s)
{
    if (!s)
        return;
    struct lh_entry *le;
    lh_foreach(s->entries, le)
        entry_free(s, lh_entry_v(le));
    lh_table_free(s->entries);
    for (size_t i = 0; i < s->nindexers; i++) {
        struct indexer *ix = &s->indexers[i];
        lh_foreach(ix->buckets, le) {
            struct bucket *b = lh_entry_v(le);
            lh_table_free(b->members);
            free(b);
        }
        lh_table_free(ix->buckets);
        free(ix->name);
    }
    pthread_rwlock_destroy(&s->lock);
    free(s);
}

enum fg_err fg_store_add_indexer(struct fg_store *s, const char *name, fg_index_fn *fn, void *ud)
{
    enum fg_err err = FG_OK;
    pthread_rwlock_wrlock(&s->lock);
    if (lh_table_length(s->entries) > 0) {
        err = FG_E_BUSY;
        goto out_unlock;
    }
    if (s->nindexers == MAX_INDEXERS) {
        err = FG_E_TOO_BIG;
        goto out_unlock;
    }
    for (size_t i = 0; i < s->nindexers; i++) {
        if (strcmp(s->indexers[i].name, name) == 0) {
            err = FG_E_INVAL;
            goto out_unlock;
        }
    }
    struct indexer *ix = &s->indexers[s->nindexers++];
    ix->name = fg_strdup(name);
    ix->fn = fn;
    ix->ud = ud;
    ix->buckets = lh_kchar_table_new(64, NULL);
out_unlock:
    pthread_rwlock_unlock(&s->lock);
    return err;
}

/* New index values of json for indexer ix (NULL when it has none). */
static char **index_values(struct indexer *ix, json_object *json)
{
    const char *vals[FG_STORE_MAX_INDEX_VALUES];
    size_t n = ix->fn(ix->ud, json, vals, FG_STORE_MAX_INDEX_VALUES);
    if (n == 0)
        return NULL;
    if (n > FG_STORE_MAX_INDEX_VALUES)
        n = FG_STORE_MAX_INDEX_VALUES;
    char **v = fg_calloc(n + 1, sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = fg_strdup(vals[i]);
    return v;
}

static void index_add(struct indexer *ix, struct entry *e, char **vals)
{
    for (size_t i = 0; vals && vals[i]; i++) {
        struct bucket *b = NULL;
        if (!lh_table_lookup_ex(ix->buckets, vals[i], (void **)&b)) {
            size_t len = strlen(vals[i]);
            b = fg_malloc(sizeof(*b) + len + 1);
            memcpy(b->value, vals[i], len + 1);
            b->members = lh_kchar_table_new(16, NULL);
            lh_table_insert(ix->buckets, b->value, b);
        }
        lh_table_insert(b->members, e->key, e);
    }
}

static void index_remove(struct indexer *ix, struct entry *e, char **vals)
{
    for (size_t i = 0; vals && vals[i]; i++) {
        struct bucket *b = NULL;
        if (!lh_table_lookup_ex(ix->buckets, vals[i], (void **)&b))
            continue;
        lh_table_delete(b->members, e->key);
        if (lh_table_length(b->members) == 0) {
            lh_table_delete(ix->buckets, b->value);
            lh_table_free(b->members);
            free(b);
        }
    }
}

/* Re-indexes e for json (NULL: remove from every index). */
static void reindex(struct fg_store *s, struct entry *e, json_object *json)
{
    for (size_t i = 0; i < s->nindexers; i++) {
        struct indexer *ix = &s->indexers[i];
        char **vals = json ? index_values(ix, json) : NULL;
        if (strv_eq(vals, e->ivals[i])) {
            strv_free(vals);
            continue;
        }
        index_remove(ix, e, e->ivals[i]);
        strv_free(e->ivals[i]);
        e->ivals[i] = vals;
        index_add(ix, e, vals);
    }
}

enum fg_store_result fg_store_upsert(struct fg_store *s, struct fg_kobj *obj, json_object *json,
                                     struct fg_kobj **old)
{
    enum fg_store_result res;
    *old = NULL;
    pthread_rwlock_wrlock(&s->lock);
    struct entry *e = NULL;
    if (lh_table_lookup_ex(s->entries, fg_kobj_key(obj), (void **)&e)) {
        e->gen = s->gen;
        if (fg_kobj_rv(e->obj) == fg_kobj_rv(obj)) {
            res = FG_STORE_UNCHANGED;
            goto out_unlock;
        }
        if (fg_kobj_rv(e->obj) > fg_kobj_rv(obj)) {
            res = FG_STORE_STALE;
            goto out_unlock;
        }
        *old = e->obj;
        e->obj = fg_kobj_ref(obj);
        reindex(s, e, json);
        res = FG_STORE_UPDATED;
        goto out_unlock;
    }
    size_t klen = strlen(fg_kobj_key(obj));
    e = fg_malloc(sizeof(*e) + klen + 1);
    memcpy(e->key, fg_kobj_key(obj), klen + 1);
    e->obj = fg_kobj_ref(obj);
    e->gen = s->gen;
    e->ivals = s->nindexers ? fg_calloc(s->nindexers, sizeof(*e->ivals)) : NULL;
    lh_table_insert(s->entries, e->key, e);
    reindex(s, e, json);
    res = FG_STORE_ADDED;
out_unlock:
    pthread_rwlock_unlock(&s->lock);
    return res;
}

/* Unlinks e from the table and the indexes and frees it, handing its object to the caller. Write
 * lock held. */
static struct fg_kobj *remove_entry(struct fg_store *s, struct entry *e)
{
    struct fg_kobj *obj = e->obj;
    reindex(s, e, NULL);
    lh_table_delete(s->entries, e->key);
    e->obj = NULL;
    entry_free(s, e);
    return obj;
}

struct fg_kobj *fg_store_delete(struct fg_store *s, const char *key, uint64_t rv)
{
    struct fg_kobj *removed = NULL;
    pthread_rwlock_wrlock(&s->lock);
    struct entry *e = NULL;
    if (lh_table_lookup_ex(s->entries, key, (void **)&e) && (rv == 0 || fg_kobj_rv(e->obj) <= rv))
        removed = remove_entry(s, e);
    pthread_rwlock_unlock(&s->lock);
    return removed;
}

json_object *fg_store_get_json(struct fg_store *s, const char *key)
{
    struct fg_kobj *o = fg_store_get(s, key);
    json_object *obj = NULL;
    if (o && fg_kobj_parse(o, &obj, NULL) != FG_OK)
        obj = NULL; /* a cached object's text always parses: it was built from a parsed object */
    fg_kobj_unref(o);
    return obj;
}

struct fg_kobj *fg_store_get(struct fg_store *s, const char *key)
{
    struct fg_kobj *obj = NULL;
    pthread_rwlock_rdlock(&s->lock);
    struct entry *e = NULL;
    if (lh_table_lookup_ex(s->entries, key, (void **)&e))
        obj = fg_kobj_ref(e->obj);
    pthread_rwlock_unlock(&s->lock);
    return obj;
}

/* Fills out with references to the entries of table t (key -> struct entry). Lock held. */
static void collect(struct lh_table *t, struct fg_kobj_list *out)
{
    out->n = 0;
    out->items = fg_malloc(((size_t)lh_table_length(t) + 1) * sizeof(*out->items));
    struct lh_entry *le;
    lh_foreach(t, le) {
        struct entry *e = lh_entry_v(le);
        out->items[out->n++] = fg_kobj_ref(e->obj);
    }
}

void fg_store_list(struct fg_store *s, struct fg_kobj_list *out)
{
    pthread_rwlock_rdlock(&s->lock);
    collect(s->entries, out);
    pthread_rwlock_unlock(&s->lock);
}

size_t fg_store_len(struct fg_store *s)
{
    pthread_rwlock_rdlock(&s->lock);
    size_t n = (size_t)lh_table_length(s->entries);
    pthread_rwlock_unlock(&s->lock);
    return n;
}

enum fg_err fg_store_by_index(struct fg_store *s, const char *index, const char *value,
                              struct fg_kobj_list *out)
{
    enum fg_err err = FG_E_NOT_FOUND_LOCAL;
    out->items = NULL;
    out->n = 0;
    pthread_rwlock_rdlock(&s->lock);
    for (size_t i = 0; i < s->nindexers; i++) {
        struct indexer *ix = &s->indexers[i];
        if (strcmp(ix->name, index) != 0)
            continue;
        struct bucket *b = NULL;
        if (lh_table_lookup_ex(ix->buckets, value, (void **)&b))
            collect(b->members, out);
        err = FG_OK;
        break;
    }
    pthread_rwlock_unlock(&s->lock);
    return err;
}

void fg_store_replace_begin(struct fg_store *s)
{
    pthread_rwlock_wrlock(&s->lock);
    s->gen++;
    pthread_rwlock_unlock(&s->lock);
}

void fg_store_replace_finish(struct fg_store *s, struct fg_kobj_list *removed)
{
    removed->n = 0;
    pthread_rwlock_wrlock(&s->lock);
    removed->items = fg_malloc(((size_t)lh_table_length(s->entries) + 1) * sizeof(*removed->items));
    struct lh_entry *le, *tmp;
    lh_foreach_safe(s->entries, le, tmp) {
        struct entry *e = lh_entry_v(le);
        if (e->gen != s->gen)
            removed->items[removed->n++] = remove_entry(s, e);
    }
    pthread_rwlock_unlock(&s->lock);
}
