/*
 * informers — the shared informer factory; see informers.h.
 *
 * An entry per informer holds its identity (resource, namespace, selectors), the union of the paths
 * its consumers read (strings, de-duplicated) or `whole` once any consumer wants everything, the
 * compiled field set (built at start), its typed decode and its indexers. The informer is made on
 * the first ask with the entry as the ud of its transform, so what the transform keeps can still be
 * widened by later consumers until start.
 */
#include "operator/manager/informers.h"

#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"
#include "base/prom.h"
#include "operator/cache/kube_listwatch.h"
#include "operator/cache/transform.h"

struct index_entry {
    char *name;
    fg_index_fn *fn;
    void *ud;
};

struct entry {
    const struct fg_kube_resource *resource;
    char *ns, *label_selector, *field_selector;
    struct fg_informer *informer;
    bool whole;                     /* some consumer reads the whole object */
    char **paths;                   /* the union, NULL-terminated */
    size_t n_paths;
    struct fg_fieldset *fields;     /* compiled at start when !whole */
    void (*decode)(void *ud, json_object *obj, void *value);
    void *decode_ud;
    size_t value_size;
    struct index_entry *indexes;
    size_t n_indexes;
};

struct fg_informer_factory {
    fg_listwatch_new_fn *new_listwatch;
    void *new_listwatch_ud;
    uint64_t resync_ns;
    bool started;
    struct entry **entries;
    size_t n;
};

static struct fg_listwatch *kube_listwatch(void *ud, const struct fg_kube_resource *res, const char *ns,
                                           const char *label_selector, const char *field_selector,
                                           bool cut_managed_fields)
{
    struct fg_kube_listwatch_opts o = FG_KUBE_LISTWATCH_OPTS_DEFAULT;
    o.label_selector = label_selector;
    o.field_selector = field_selector;
    o.cut_managed_fields = cut_managed_fields;
    return fg_kube_listwatch_new(ud, res, ns, &o);
}

struct fg_informer_factory *fg_informer_factory_new_with(fg_listwatch_new_fn *fn, void *ud, uint64_t resync_ns)
{
    struct fg_informer_factory *f = fg_calloc(1, sizeof *f);
    f->new_listwatch = fn;
    f->new_listwatch_ud = ud;
    f->resync_ns = resync_ns;
    return f;
}

struct fg_informer_factory *fg_informer_factory_new(struct fg_kube_loop *loop, uint64_t resync_ns)
{
    return fg_informer_factory_new_with(kube_listwatch, loop, resync_ns);
}

static void entry_free(struct entry *e)
{
    fg_informer_free(e->informer);
    fg_fieldset_free(e->fields);
    for (size_t i = 0; i < e->n_paths; i++)
        free(e->paths[i]);
    free(e->paths);
    for (size_t i = 0; i < e->n_indexes; i++)
        free(e->indexes[i].name);
    free(e->indexes);
    free(e->ns);
    free(e->label_selector);
    free(e->field_selector);
    free(e);
}

void fg_informer_factory_free(struct fg_informer_factory *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++)
        entry_free(f->entries[i]);
    free(f->entries);
    free(f);
}

/* The transform of every factory informer: whole objects lose managedFields only; the others are
 * stripped and pruned to the union of their consumers' fields. */
static json_object *entry_transform(void *ud, json_object *obj)
{
    struct entry *e = ud;
    if (e->fields)
        return fg_transform_keep(e->fields, obj);
    json_object *meta = fg_json_get(obj, "metadata", NULL);
    if (json_object_is_type(meta, json_type_object))
        json_object_object_del(meta, "managedFields");
    return json_object_get(obj);
}

static bool same(const char *a, const char *b)
{
    return fg_str_eq(a && *a ? a : NULL, b && *b ? b : NULL);
}

static struct entry *find(struct fg_informer_factory *f, const struct fg_informer_want *w)
{
    for (size_t i = 0; i < f->n; i++) {
        struct entry *e = f->entries[i];
        if (!strcmp(e->resource->group, w->resource->group) && !strcmp(e->resource->version, w->resource->version) &&
            !strcmp(e->resource->plural, w->resource->plural) && same(e->ns, w->ns) &&
            same(e->label_selector, w->label_selector) && same(e->field_selector, w->field_selector))
            return e;
    }
    return NULL;
}

static struct entry *entry_of(struct fg_informer_factory *f, const struct fg_informer *inf)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->entries[i]->informer == inf)
            return f->entries[i];
    return NULL;
}

static char *dup_nonempty(const char *s)
{
    return s && *s ? fg_strdup(s) : NULL;
}

static struct entry *entry_new(struct fg_informer_factory *f, const struct fg_informer_want *w)
{
    struct entry *e = fg_calloc(1, sizeof *e);
    e->resource = w->resource;
    e->ns = dup_nonempty(w->ns);
    e->label_selector = dup_nonempty(w->label_selector);
    e->field_selector = dup_nonempty(w->field_selector);
    e->paths = fg_calloc(1, sizeof *e->paths);
    struct fg_informer_opts io = FG_INFORMER_OPTS_DEFAULT;
    io.resync_ns = f->resync_ns;
    io.reflector.transform = entry_transform;
    io.reflector.transform_ud = e;
    /* managedFields are dropped from every cached object: the decoder can skip them unparsed. */
    struct fg_listwatch *lw =
        f->new_listwatch(f->new_listwatch_ud, w->resource, e->ns, e->label_selector, e->field_selector, true);
    e->informer = fg_informer_new(lw, &io);
    f->entries = fg_realloc(f->entries, (f->n + 1) * sizeof *f->entries);
    f->entries[f->n++] = e;
    return e;
}

/* What every cached object keeps, whatever its consumers read: what identifies it. */
static const char *const identity_paths[] = { "apiVersion", "kind", "metadata.name", "metadata.namespace",
                                              "metadata.uid", "metadata.resourceVersion", NULL };

static void add_paths(struct entry *e, const char *const *paths)
{
    if (!paths) {
        e->whole = true;
        return;
    }
    if (!e->n_paths && paths != identity_paths)
        add_paths(e, identity_paths);
    for (size_t i = 0; paths[i]; i++) {
        bool known = false;
        for (size_t j = 0; j < e->n_paths && !known; j++)
            known = !strcmp(e->paths[j], paths[i]);
        if (known)
            continue;
        e->paths = fg_realloc(e->paths, (e->n_paths + 2) * sizeof *e->paths);
        e->paths[e->n_paths++] = fg_strdup(paths[i]);
        e->paths[e->n_paths] = NULL;
    }
}

enum fg_err fg_informer_factory_get(struct fg_informer_factory *f, const struct fg_informer_want *want,
                                    struct fg_informer **out, char *errmsg)
{
    if (!want || !want->resource)
        return fg_errmsg(errmsg, FG_E_INVAL, "an informer needs a resource");
    if (f->started)
        return fg_errmsg(errmsg, FG_E_BUSY, "informer for %s asked for after the manager started",
                         want->resource->plural);
    struct entry *e = find(f, want);
    if (!e)
        e = entry_new(f, want);
    add_paths(e, want->fields);
    *out = e->informer;
    return FG_OK;
}

enum fg_err fg_informer_factory_get_named(struct fg_informer_factory *f, const struct fg_kube_resource *res,
                                          const char *ns, const char *name, struct fg_informer **out, char *errmsg)
{
    char *selector = fg_asprintf("metadata.name=%s", name ? name : "");
    enum fg_err err = fg_informer_factory_get(
        f, &(struct fg_informer_want){ .resource = res, .ns = ns, .field_selector = selector }, out, errmsg);
    free(selector); /* the factory keeps a copy */
    return err;
}

enum fg_err fg_informer_factory_index(struct fg_informer_factory *f, struct fg_informer *inf, const char *name,
                                      fg_index_fn *fn, void *ud)
{
    struct entry *e = entry_of(f, inf);
    if (!e || !name || !fn)
        return FG_E_INVAL;
    if (f->started)
        return FG_E_BUSY;
    for (size_t i = 0; i < e->n_indexes; i++)
        if (!strcmp(e->indexes[i].name, name))
            return e->indexes[i].fn == fn && e->indexes[i].ud == ud ? FG_OK : FG_E_INVAL;
    enum fg_err err = fg_store_add_indexer(fg_informer_store(inf), name, fn, ud);
    if (err)
        return err;
    e->indexes = fg_realloc(e->indexes, (e->n_indexes + 1) * sizeof *e->indexes);
    e->indexes[e->n_indexes++] = (struct index_entry){ fg_strdup(name), fn, ud };
    return FG_OK;
}

enum fg_err fg_informer_factory_decode(struct fg_informer_factory *f, struct fg_informer *inf,
                                       void (*decode)(void *ud, json_object *obj, void *value), void *ud,
                                       size_t value_size)
{
    struct entry *e = entry_of(f, inf);
    if (!e || !decode || !value_size)
        return FG_E_INVAL;
    if (f->started)
        return FG_E_BUSY;
    if (e->decode)
        return e->decode == decode && e->decode_ud == ud && e->value_size == value_size ? FG_OK : FG_E_INVAL;
    e->decode = decode;
    e->decode_ud = ud;
    e->value_size = value_size;
    return fg_informer_set_decode(inf, decode, ud, value_size);
}

enum fg_err fg_informer_factory_start(struct fg_informer_factory *f)
{
    if (f->started)
        return FG_E_BUSY;
    f->started = true;
    for (size_t i = 0; i < f->n; i++) {
        struct entry *e = f->entries[i];
        if (!e->whole)
            e->fields = fg_fieldset_new((const char *const *)e->paths);
        enum fg_err err = fg_informer_start(e->informer);
        if (err)
            return err;
    }
    return FG_OK;
}

void fg_informer_factory_stop(struct fg_informer_factory *f)
{
    for (size_t i = 0; i < f->n; i++)
        fg_informer_stop(f->entries[i]->informer);
}

bool fg_informer_factory_synced(const struct fg_informer_factory *f)
{
    for (size_t i = 0; i < f->n; i++)
        if (!fg_informer_has_synced(f->entries[i]->informer))
            return false;
    return true;
}

size_t fg_informer_factory_len(const struct fg_informer_factory *f)
{
    return f->n;
}

/* ---- metrics ---- */

enum stat { ST_LISTS, ST_FAILURES, ST_EVENTS, ST_OBJECTS, ST_SYNCED, ST__COUNT };

static const struct {
    const char *name;
    enum fg_prom_type type;
    const char *help;
} stat_families[ST__COUNT] = {
    { "fracgpu_informer_lists_total", FG_PROM_COUNTER, "Lists started by the informer (the first and relists)." },
    { "fracgpu_informer_watch_restarts_total", FG_PROM_COUNTER, "Lists and watches that failed and were retried." },
    { "fracgpu_informer_events_total", FG_PROM_COUNTER, "Watch events and list items received." },
    { "fracgpu_informer_cached_objects", FG_PROM_GAUGE, "Objects in the informer's cache." },
    { "fracgpu_informer_synced", FG_PROM_GAUGE, "1 once the informer's first list completed." },
};

void fg_informer_factory_collect(void *factory, struct fg_buf *out)
{
    struct fg_informer_factory *f = factory;
    for (int s = 0; s < ST__COUNT && f->n; s++) {
        fg_prom_family(out, stat_families[s].name, stat_families[s].type, stat_families[s].help);
        for (size_t i = 0; i < f->n; i++) {
            const struct entry *e = f->entries[i];
            const struct fg_reflector_stats *st = fg_reflector_stats(fg_informer_reflector(e->informer));
            const char *labels[] = { "resource", e->resource->plural, "namespace", e->ns,
                                     "label_selector", e->label_selector, "field_selector", e->field_selector, NULL };
            uint64_t v = s == ST_LISTS      ? st->lists
                         : s == ST_FAILURES ? st->failures
                         : s == ST_EVENTS   ? st->events
                         : s == ST_OBJECTS  ? fg_store_len(fg_informer_store(e->informer))
                                            : fg_informer_has_synced(e->informer);
            fg_prom_sample_u64(out, stat_families[s].name, labels, v);
        }
    }
}
