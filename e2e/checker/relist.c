/* relist — a lister-watcher that frames each list for its owner; see relist.h. */
#include "e2e/checker/relist.h"

#include <stdlib.h>

#include "base/mem.h"

struct relist {
    struct fg_listwatch base;
    struct fg_listwatch *inner;
    struct fg_checker_relist_hooks hooks;
    /* the reflector's callbacks for the list under way */
    fg_listwatch_item_fn *on_item;
    fg_listwatch_end_fn *on_done;
    void *ud;
};

static struct relist *from_base(struct fg_listwatch *lw)
{
    return (struct relist *)lw;
}

static void item(void *ud, json_object *obj)
{
    struct relist *r = ud;
    r->on_item(r->ud, obj);
}

static void done(void *ud, const struct fg_listwatch_result *res)
{
    struct relist *r = ud;
    bool ok = res->err == FG_OK;
    r->on_done(r->ud, res);   /* the store's replace finishes here, its deletes delivered */
    r->hooks.end(r->hooks.ud, ok);
}

static enum fg_err list(struct fg_listwatch *lw, fg_listwatch_item_fn *on_item, fg_listwatch_end_fn *on_done, void *ud)
{
    struct relist *r = from_base(lw);
    r->on_item = on_item;
    r->on_done = on_done;
    r->ud = ud;
    r->hooks.begin(r->hooks.ud);
    enum fg_err err = r->inner->ops->list(r->inner, item, done, r);
    if (err)
        r->hooks.end(r->hooks.ud, false);
    return err;
}

static enum fg_err watch(struct fg_listwatch *lw, const char *resource_version, unsigned timeout_s,
                         fg_watch_event_fn *on_event, fg_listwatch_end_fn *on_end, void *ud)
{
    struct relist *r = from_base(lw);
    return r->inner->ops->watch(r->inner, resource_version, timeout_s, on_event, on_end, ud);
}

static void cancel(struct fg_listwatch *lw)
{
    struct relist *r = from_base(lw);
    r->inner->ops->cancel(r->inner);
}

static void timer_arm(struct fg_listwatch *lw, struct fg_listwatch_timer *t, uint64_t delay_ns)
{
    struct relist *r = from_base(lw);
    r->inner->ops->timer_arm(r->inner, t, delay_ns);
}

static void timer_disarm(struct fg_listwatch *lw, struct fg_listwatch_timer *t)
{
    struct relist *r = from_base(lw);
    r->inner->ops->timer_disarm(r->inner, t);
}

static void relist_free(struct fg_listwatch *lw)
{
    struct relist *r = from_base(lw);
    fg_listwatch_free(r->inner);
    free(r);
}

static const struct fg_listwatch_ops relist_ops = {
    .list = list,
    .watch = watch,
    .cancel = cancel,
    .timer_arm = timer_arm,
    .timer_disarm = timer_disarm,
    .free = relist_free,
};

struct fg_listwatch *fg_checker_relist_new(struct fg_listwatch *inner, const struct fg_checker_relist_hooks *hooks)
{
    struct relist *r = fg_calloc(1, sizeof *r);
    r->base.ops = &relist_ops;
    r->base.kind = inner->kind;
    r->inner = inner;
    r->hooks = *hooks;
    return &r->base;
}
