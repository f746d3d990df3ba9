/*
 * group — Permit's pod groups: members counted by group name, so that no member binds before
 * group_min of them are reserved (gang scheduling).
 *
 * Reserve adds a member (a pod the cycle placed, or one found already bound), Unreserve removes one;
 * the framework owns the group names and frees them with itself. Groups are few and found by a scan.
 */
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "scheduler/core/framework_int.h"

struct fg__sched_group {
    char *name;
    int reserved, min;
};

static struct fg__sched_group *group_find(const struct fg_sched_framework *fw, const char *name)
{
    for (size_t i = 0; i < fw->n_groups; i++)
        if (!strcmp(fw->groups[i].name, name))
            return &fw->groups[i];
    return NULL;
}

bool fg_sched_group_permitted(const struct fg_sched_framework *fw, const char *group)
{
    const struct fg__sched_group *g = group_find(fw, group);
    return g && g->reserved >= g->min;
}

enum fg_sched_code fg__sched_group_add(struct fg_sched_framework *fw, const struct fg_sched_pod *p)
{
    if (!p->group)
        return FG_SCHED_SUCCESS;
    struct fg__sched_group *g = group_find(fw, p->group);
    if (!g) {
        fw->groups = fg_realloc(fw->groups, (fw->n_groups + 1) * sizeof *fw->groups);
        g = &fw->groups[fw->n_groups++];
        *g = (struct fg__sched_group){ fg_strdup(p->group), 0, p->group_min };
    }
    g->reserved++;
    return g->reserved >= g->min ? FG_SCHED_SUCCESS : FG_SCHED_WAIT;
}

void fg__sched_group_remove(struct fg_sched_framework *fw, const struct fg_sched_pod *p)
{
    struct fg__sched_group *g = p->group ? group_find(fw, p->group) : NULL;
    if (g)
        g->reserved--;
}

void fg__sched_groups_free(struct fg_sched_framework *fw)
{
    for (size_t i = 0; i < fw->n_groups; i++)
        free(fw->groups[i].name);
    FG_FREE(fw->groups);
    fw->n_groups = 0;
}
