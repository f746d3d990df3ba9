/* sched_fixture — small clusters for the default scheduler's tests; see sched_fixture.h. */
#include "e2e/cluster/test/sched_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/mem.h"

int fixture_setup(void **state)
{
    struct fg_sim_sched_snapshot *s = test_malloc(sizeof *s);
    fg_sim_sched_snapshot_init(s);
    *state = s;
    return 0;
}

int fixture_teardown(void **state)
{
    fg_sim_sched_snapshot_cleanup(*state);
    test_free(*state);
    return 0;
}

json_object *fixture_json(const char *text)
{
    char *s = fg_strdup(text);
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_object *o = NULL;
    if (fg_json_parse(s, strlen(s), 0, &o, NULL) != FG_OK)
        fail_msg("bad fixture JSON: %s", s);
    free(s);
    return o;
}

/* Merges extra into base: objects member by member, everything else replaced. */
static void merge(json_object *base, json_object *extra)
{
    json_object_object_foreach(extra, key, value) {
        json_object *have = fg_json_get(base, key, NULL);
        if (json_object_is_type(have, json_type_object) && json_object_is_type(value, json_type_object))
            merge(have, value);
        else
            json_object_object_add(base, key, json_object_get(value));
    }
}

static json_object *with_extra(json_object *base, const char *extra)
{
    if (extra) {
        json_object *e = fixture_json(extra);
        merge(base, e);
        json_object_put(e);
    }
    return base;
}

void fixture_node(struct fg_sim_sched_snapshot *s, const char *name, const char *cpu, const char *memory, int pods,
                  const char *extra)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{'metadata':{'name':'%s','labels':{'kubernetes.io/hostname':'%s'}},'spec':{},"
             "'status':{'allocatable':{'cpu':'%s','memory':'%s','pods':'%d'},"
             "'conditions':[{'type':'Ready','status':'True'}]}}",
             name, name, cpu, memory, pods);
    char errmsg[FG_ERRMSG_MAX] = "";
    if (fg_sim_sched_node_set(s, with_extra(fixture_json(text), extra), NULL, errmsg) != FG_OK)
        fail_msg("node %s: %s", name, errmsg);
}

struct fg_sim_sched_pod *fixture_pod(const char *name, const char *cpu, const char *memory, int64_t priority,
                                     const char *extra)
{
    char requests[256] = "";
    if (cpu || memory)
        snprintf(requests, sizeof requests, "'resources':{'requests':{%s%s%s%s%s%s%s}},", cpu ? "'cpu':'" : "",
                 cpu ? cpu : "", cpu ? "'" : "", cpu && memory ? "," : "", memory ? "'memory':'" : "",
                 memory ? memory : "", memory ? "'" : "");
    char text[1024];
    snprintf(text, sizeof text,
             "{'metadata':{'name':'%s','namespace':'default','uid':'uid-%s','labels':{}},"
             "'spec':{'priority':%lld,'containers':[{%s'name':'c'}]},'status':{'phase':'Pending'}}",
             name, name, (long long)priority, requests);
    struct fg_sim_sched_pod *pod = NULL;
    char errmsg[FG_ERRMSG_MAX] = "";
    if (fg_sim_sched_pod_new(with_extra(fixture_json(text), extra), &pod, errmsg) != FG_OK)
        fail_msg("pod %s: %s", name, errmsg);
    return pod;
}

void fixture_place(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod, const char *node)
{
    fg_sim_sched_place(s, pod, node);
    fg_sim_sched_pod_unref(pod);
}

void fixture_nominate(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod, const char *node)
{
    fg_sim_sched_nominate(s, pod, node);
    fg_sim_sched_pod_unref(pod);
}

const char *fixture_schedule(struct fg_sim_sched_snapshot *s, struct fg_sim_sched_pod *pod,
                             struct fg_sim_sched_result *r)
{
    uint64_t rng = 1;
    fg_sim_sched_schedule(s, pod, &rng, r);
    return r->node ? r->node->name : NULL;
}
