/*
 * ratelimit — key checks and dispatch for every limiter kind, plus max_of and the default
 * combination; see ratelimit.h. The kinds themselves live in ratelimit_backoff.c and
 * ratelimit_bucket.c.
 */
#include "operator/workqueue/ratelimit.h"

#include <stdlib.h>

#include "base/mem.h"
#include "operator/workqueue/keymap.h"
#include "operator/workqueue/ratelimit_int.h"

struct max_of {
    struct fg_rate_limiter base;
    struct fg_rate_limiter **children;
    size_t n;
};

static uint64_t max_of_when(struct fg_rate_limiter *rl, const char *key)
{
    struct max_of *m = (struct max_of *)rl;
    uint64_t longest = 0;
    for (size_t i = 0; i < m->n; i++) {
        uint64_t d = m->children[i]->ops->when(m->children[i], key);
        if (d > longest)
            longest = d;
    }
    return longest;
}

static void max_of_forget(struct fg_rate_limiter *rl, const char *key)
{
    struct max_of *m = (struct max_of *)rl;
    for (size_t i = 0; i < m->n; i++)
        m->children[i]->ops->forget(m->children[i], key);
}

static unsigned max_of_num_requeues(struct fg_rate_limiter *rl, const char *key)
{
    struct max_of *m = (struct max_of *)rl;
    unsigned most = 0;
    for (size_t i = 0; i < m->n; i++) {
        unsigned r = m->children[i]->ops->num_requeues(m->children[i], key);
        if (r > most)
            most = r;
    }
    return most;
}

static void max_of_free(struct fg_rate_limiter *rl)
{
    struct max_of *m = (struct max_of *)rl;
    for (size_t i = 0; i < m->n; i++)
        fg_rate_limiter_free(m->children[i]);
    free(m->children);
    free(m);
}

static const struct fg__rate_limiter_ops max_of_ops = {
    .when = max_of_when,
    .forget = max_of_forget,
    .num_requeues = max_of_num_requeues,
    .free = max_of_free,
};

enum fg_err fg_rate_limiter_new_max_of(struct fg_rate_limiter **children, size_t n,
                                       struct fg_rate_limiter **out)
{
    bool ok = n > 0 && children;
    for (size_t i = 0; ok && i < n; i++)
        ok = children[i] != NULL;
    if (!ok) {
        for (size_t i = 0; children && i < n; i++)
            fg_rate_limiter_free(children[i]);
        return FG_E_INVAL;
    }
    struct max_of *m = fg_calloc(1, sizeof *m);
    m->base.ops = &max_of_ops;
    m->children = fg_malloc(n * sizeof *m->children);
    for (size_t i = 0; i < n; i++)
        m->children[i] = children[i];
    m->n = n;
    *out = &m->base;
    return FG_OK;
}

struct fg_rate_limiter *fg_rate_limiter_new_default(void)
{
    struct fg_rate_limiter *children[2];
    struct fg_rate_limiter *rl;
    /* The constants are valid, so none of these can fail. */
    if (fg_rate_limiter_new_backoff(FG_RATE_LIMIT_DEFAULT_BASE_NS, FG_RATE_LIMIT_DEFAULT_MAX_NS, &children[0]) ||
        fg_rate_limiter_new_bucket(FG_RATE_LIMIT_DEFAULT_QPS, FG_RATE_LIMIT_DEFAULT_BURST, &children[1]) ||
        fg_rate_limiter_new_max_of(children, 2, &rl))
        abort();
    return rl;
}

void fg_rate_limiter_free(struct fg_rate_limiter *rl)
{
    if (rl)
        rl->ops->free(rl);
}

enum fg_err fg_rate_limiter_when(struct fg_rate_limiter *rl, const char *key, uint64_t *delay_ns)
{
    if (!fg__key_valid(key))
        return FG_E_INVAL;
    *delay_ns = rl->ops->when(rl, key);
    return FG_OK;
}

enum fg_err fg_rate_limiter_forget(struct fg_rate_limiter *rl, const char *key)
{
    if (!fg__key_valid(key))
        return FG_E_INVAL;
    rl->ops->forget(rl, key);
    return FG_OK;
}

enum fg_err fg_rate_limiter_num_requeues(struct fg_rate_limiter *rl, const char *key, unsigned *out)
{
    if (!fg__key_valid(key))
        return FG_E_INVAL;
    *out = rl->ops->num_requeues(rl, key);
    return FG_OK;
}
