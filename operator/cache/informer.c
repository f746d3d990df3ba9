/* informer — reflector + store + handlers + periodic resync; see informer.h. */
#include "informer.h"

#include <stdlib.h>

#include "base/mem.h"

struct handler_slot {
    struct fg_resource_handler h;
    void *ud;
};

struct fg_informer {
    struct fg_listwatch *lw;
    struct fg_store *store;
    struct fg_reflector *reflector;
    uint64_t resync_ns;
    struct fg_listwatch_timer resync_timer;
    bool started;
    size_t nhandlers;
    struct handler_slot handlers[FG_INFORMER_MAX_HANDLERS];
};

static void fan_add(void *ud, struct fg_kobj *obj)
{
    struct fg_informer *inf = ud;
    for (size_t i = 0; i < inf->nhandlers; i++)
        if (inf->handlers[i].h.on_add)
            inf->handlers[i].h.on_add(inf->handlers[i].ud, obj);
}

static void fan_update(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    struct fg_informer *inf = ud;
    for (size_t i = 0; i < inf->nhandlers; i++)
        if (inf->handlers[i].h.on_update)
            inf->handlers[i].h.on_update(inf->handlers[i].ud, old, obj);
}

static void fan_delete(void *ud, struct fg_kobj *obj)
{
    struct fg_informer *inf = ud;
    for (size_t i = 0; i < inf->nhandlers; i++)
        if (inf->handlers[i].h.on_delete)
            inf->handlers[i].h.on_delete(inf->handlers[i].ud, obj);
}

static const struct fg_resource_handler fan_out = { fan_add, fan_update, fan_delete };

/* Re-delivers every cached object as an unchanged update, then re-arms. */
static void resync_fired(void *ud)
{
    struct fg_informer *inf = ud;
    if (fg_reflector_has_synced(inf->reflector)) {
        struct fg_kobj_list all;
        fg_store_list(inf->store, &all);
        for (size_t i = 0; i < all.n; i++)
            fan_update(inf, all.items[i], all.items[i]);
        fg_kobj_list_cleanup(&all);
    }
    inf->lw->ops->timer_arm(inf->lw, &inf->resync_timer, inf->resync_ns);
}

struct fg_informer *fg_informer_new(struct fg_listwatch *lw, const struct fg_informer_opts *opts)
{
    static const struct fg_informer_opts defaults = FG_INFORMER_OPTS_DEFAULT;
    if (!opts)
        opts = &defaults;
    struct fg_informer *inf = fg_calloc(1, sizeof(*inf));
    inf->lw = lw;
    inf->store = fg_store_new();
    inf->reflector = fg_reflector_new(lw, inf->store, &opts->reflector, &fan_out, inf);
    inf->resync_ns = opts->resync_ns;
    fg_listwatch_timer_init(&inf->resync_timer, resync_fired, inf);
    return inf;
}

void fg_informer_free(struct fg_informer *inf)
{
    if (!inf)
        return;
    fg_informer_stop(inf);
    fg_reflector_free(inf->reflector);
    fg_listwatch_free(inf->lw);
    fg_store_free(inf->store);
    free(inf);
}

struct fg_store *fg_informer_store(struct fg_informer *inf) { return inf->store; }
const struct fg_reflector *fg_informer_reflector(const struct fg_informer *inf) { return inf->reflector; }

enum fg_err fg_informer_add_handler(struct fg_informer *inf, const struct fg_resource_handler *h, void *ud)
{
    if (inf->started)
        return FG_E_BUSY;
    if (inf->nhandlers == FG_INFORMER_MAX_HANDLERS)
        return FG_E_TOO_BIG;
    inf->handlers[inf->nhandlers++] = (struct handler_slot){ *h, ud };
    return FG_OK;
}

enum fg_err fg_informer_set_decode(struct fg_informer *inf, void (*decode)(void *ud, json_object *obj, void *value),
                                   void *ud, size_t value_size)
{
    if (inf->started)
        return FG_E_BUSY;
    fg_reflector_set_decode(inf->reflector, decode, ud, value_size);
    return FG_OK;
}

enum fg_err fg_informer_start(struct fg_informer *inf)
{
    if (inf->started)
        return FG_E_BUSY;
    inf->started = true;
    if (inf->resync_ns)
        inf->lw->ops->timer_arm(inf->lw, &inf->resync_timer, inf->resync_ns);
    fg_reflector_start(inf->reflector);
    return FG_OK;
}

void fg_informer_stop(struct fg_informer *inf)
{
    if (!inf->started)
        return;
    fg_reflector_stop(inf->reflector);
    inf->lw->ops->timer_disarm(inf->lw, &inf->resync_timer);
    inf->started = false;
}

bool fg_informer_has_synced(const struct fg_informer *inf)
{
    return fg_reflector_has_synced(inf->reflector);
}
