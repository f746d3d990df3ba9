/* uidclock — last sample time per pod uid; see uidclock.h. */
#include "collector/uidclock.h"

#include <json-c/linkhash.h>
#include <stdlib.h>

#include "base/mem.h"

struct fg_uid_clock {
    struct lh_table *t;   /* uid → struct last */
};

struct last {
    int64_t t_ms;
    uint64_t round;
};

static void free_entry(struct lh_entry *e)
{
    free((void *)lh_entry_k(e));
    free(lh_entry_v(e));
}

struct fg_uid_clock *fg_uid_clock_new(void)
{
    struct fg_uid_clock *c = fg_calloc(1, sizeof(*c));
    c->t = lh_kchar_table_new(256, free_entry);
    return c;
}

void fg_uid_clock_free(struct fg_uid_clock *c)
{
    if (!c)
        return;
    lh_table_free(c->t);
    free(c);
}

bool fg_uid_clock_accept(struct fg_uid_clock *c, const char *uid, int64_t t_ms, uint64_t round)
{
    void *v = NULL;
    if (lh_table_lookup_ex(c->t, uid, &v)) {
        struct last *l = v;
        if (t_ms <= l->t_ms)
            return false;
        l->t_ms = t_ms;
        l->round = round;
        return true;
    }
    struct last *l = fg_malloc(sizeof(*l));
    *l = (struct last){ t_ms, round };
    lh_table_insert(c->t, fg_strdup(uid), l);
    return true;
}

void fg_uid_clock_forget(struct fg_uid_clock *c, uint64_t round)
{
    struct lh_entry *e, *next;
    lh_foreach_safe(c->t, e, next) {
        const struct last *l = lh_entry_v(e);
        if (l->round < round)
            lh_table_delete_entry(c->t, e);
    }
}

size_t fg_uid_clock_len(const struct fg_uid_clock *c)
{
    return (size_t)c->t->count;
}
