/* state — the checker's tables, violations and queries; see state.h. */
#include <json-c/linkhash.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/mem.h"
#include "e2e/checker/state_int.h"

static void free_key(struct lh_entry *e)
{
    free((char *)lh_entry_k(e));
}

struct fg_checker_state *fg_checker_state_new(const struct fg_checker_state_opts *opts)
{
    struct fg_checker_state *s = fg_calloc(1, sizeof *s);
    s->capacity_ns = fg_strdup(opts->capacity_ns);
    s->grace_ns = opts->grace_ns;
    s->keep = opts->keep;
    s->report = opts->report;
    s->report_ud = opts->report_ud;
    s->tenants = lh_kchar_table_new(256, NULL);
    s->capacity = lh_kchar_table_new(64, NULL);
    s->gpus = lh_kchar_table_new(64, NULL);
    s->nodes_gone = lh_kchar_table_new(16, free_key);
    s->messages = fg_calloc(s->keep ? s->keep : 1, sizeof *s->messages);
    return s;
}

void fg__chk_tenant_free(struct fg__chk_tenant *t)
{
    char **strs[] = { &t->key, &t->uid, &t->node, &t->uuid, &t->capacity, &t->first_node, &t->first_uuid,
                      &t->problem, &t->moved_to };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        free(*strs[i]);
    free(t);
}

void fg__chk_capacity_free(struct fg__chk_capacity *c)
{
    free(c->name);
    free(c->node);
    free(c->uuid);
    free(c->problem);
    free(c);
}

void fg_checker_state_free(struct fg_checker_state *s)
{
    if (!s)
        return;
    struct lh_entry *e;
    lh_foreach(s->tenants, e)
        fg__chk_tenant_free(lh_entry_v(e));
    lh_foreach(s->capacity, e)
        fg__chk_capacity_free(lh_entry_v(e));
    lh_foreach(s->gpus, e) {
        struct fg__chk_gpu *g = lh_entry_v(e);
        free(g->key);
        free(g->node);
        free(g->uuid);
        free(g->members);
        free(g);
    }
    lh_table_free(s->tenants);
    lh_table_free(s->capacity);
    lh_table_free(s->gpus);
    lh_table_free(s->nodes_gone);
    for (size_t i = 0; i < s->nmessages; i++)
        free(s->messages[i]);
    free(s->messages);
    free(s->capacity_ns);
    free(s);
}

void fg_checker_state_stats(const struct fg_checker_state *s, struct fg_checker_stats *out)
{
    *out = s->stats;
    out->gpus = (size_t)lh_table_length(s->gpus);
}

const char *fg_checker_state_message(const struct fg_checker_state *s, size_t i)
{
    return i < s->nmessages ? s->messages[i] : NULL;
}

void fg__chk_msg_add(struct fg__chk_msg *m, const char *fmt, ...)
{
    size_t room = sizeof m->text - m->len;
    if (room <= 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(m->text + m->len, room, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < room) {
        m->len += (size_t)n;
        return;
    }
    m->len = sizeof m->text - 1;
    memcpy(m->text + m->len - 3, "...", 3);
}

void fg__chk_violation(struct fg_checker_state *s, const char *msg)
{
    s->stats.violations++;
    if (s->nmessages < s->keep)
        s->messages[s->nmessages++] = fg_strdup(msg);
    if (s->report)
        s->report(s->report_ud, msg);
}

struct fg__chk_gpu *fg__chk_gpu_find(struct fg_checker_state *s, const char *node, const char *uuid)
{
    if (!node || !uuid)
        return NULL;
    char *key = fg_asprintf("%s/%s", node, uuid);
    struct fg__chk_gpu *g = NULL;
    if (!lh_table_lookup_ex(s->gpus, key, (void **)&g))
        g = NULL;
    free(key);
    return g;
}

struct fg__chk_gpu *fg__chk_gpu_get(struct fg_checker_state *s, const char *node, const char *uuid)
{
    struct fg__chk_gpu *g = fg__chk_gpu_find(s, node, uuid);
    if (g)
        return g;
    g = fg_calloc(1, sizeof *g);
    g->key = fg_asprintf("%s/%s", node, uuid);
    g->node = fg_strdup(node);
    g->uuid = fg_strdup(uuid);
    lh_table_insert(s->gpus, g->key, g);
    return g;
}

void fg__chk_gpu_join(struct fg__chk_gpu *g, struct fg__chk_tenant *t)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 8;
        g->members = fg_realloc(g->members, g->cap * sizeof *g->members);
    }
    g->members[g->n++] = t;
}

void fg__chk_gpu_leave(struct fg__chk_gpu *g, struct fg__chk_tenant *t)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->members[i] == t) {
            g->members[i] = g->members[--g->n];
            return;
        }
}

bool fg__chk_set_str(char **dst, const char *src)
{
    if (fg_str_eq(*dst, src))
        return false;
    free(*dst);
    *dst = src ? fg_strdup(src) : NULL;
    return true;
}
