/* setup — the collector's informers and leader-only runnable on the operator's manager; see setup.h. */
#include "collector/setup.h"

#include <stdlib.h>

#include "base/log.h"
#include "base/mem.h"
#include "collector/targets.h"
#include "operator/kube/resource.h"
#include "operator/kube/selector.h"
#include "operator/manager/informers.h"

struct setup {
    struct fg_kube_loop *loop;
    struct fg_selector selector;
    struct fg_store **owners;
    struct fg_collector *c;
};

static void free_setup(void *ud)
{
    struct setup *s = ud;
    fg_collector_free(s->c);
    fg_selector_cleanup(&s->selector);
    free(s->owners);
    free(s);
}

static void start_on_loop(void *ud)
{
    fg_collector_start(((struct setup *)ud)->c);
}

static void stop_on_loop(void *ud)
{
    fg_collector_stop(((struct setup *)ud)->c);
}

static enum fg_err start(void *ud, char *errmsg)
{
    struct setup *s = ud;
    if (fg_kube_loop_call_wait(s->loop, start_on_loop, s, 30000) != FG_OK)
        return fg_errmsg(errmsg, FG_E_TIMEOUT, "the loop did not start the collector");
    return FG_OK;
}

static void stop(void *ud)
{
    struct setup *s = ud;
    if (fg_kube_loop_call_wait(s->loop, stop_on_loop, s, 30000) != FG_OK)
        fg_log(FG_LOG_ERROR, "collector", "the loop did not stop the collector in time");
}

static enum fg_err want(struct fg_manager *m, const struct fg_kube_resource *res, const char *const *fields,
                        struct fg_informer **inf, char *errmsg)
{
    return fg_informer_factory_get(fg_manager_informers(m),
                                   &(struct fg_informer_want){ .resource = res, .fields = fields }, inf, errmsg);
}

enum fg_err fg_collector_setup(struct fg_manager *m, const struct fg_workload_kinds *kinds,
                               const struct fg_collector_opts *opts, struct fg_collector **out, char *errmsg)
{
    static const char *const owners_only[] = { "metadata.ownerReferences", NULL };
    static const char *const pod_fields[] = { "metadata.labels", "metadata.deletionTimestamp",
                                              "metadata.ownerReferences", "spec.nodeName", "spec.containers[].ports",
                                              "status.phase", "status.podIP", NULL };
    struct setup *s = fg_calloc(1, sizeof(*s));
    fg_manager_on_free(m, free_setup, s);
    s->loop = fg_manager_loop(m);
    s->owners = fg_calloc(kinds->n ? kinds->n : 1, sizeof(*s->owners));
    if (fg_selector_parse_labels(opts->selector, &s->selector, errmsg) != FG_OK)
        return FG_E_INVAL;
    struct fg_informer_factory *f = fg_manager_informers(m);
    struct fg_informer *pods, *replicasets, *owner;
    enum fg_err err = want(m, &fg_kube_pods, pod_fields, &pods, errmsg);
    if (!err && (err = fg_informer_factory_index(f, pods, FG_COLLECTOR_AGENT_INDEX, fg_collector_agent_index,
                                                 &s->selector)) != FG_OK)
        fg_errmsg(errmsg, err, "cannot index the node agents' pods");
    if (!err)
        err = want(m, &fg_kube_replicasets, owners_only, &replicasets, errmsg);
    for (size_t i = 0; !err && i < kinds->n; i++)
        if (!(err = want(m, &kinds->v[i].resource, owners_only, &owner, errmsg)))
            s->owners[i] = fg_informer_store(owner);
    if (err)
        return err;
    struct fg_attrib_source src = { kinds, fg_informer_store(pods), fg_informer_store(replicasets), s->owners };
    err = fg_collector_new(fg_kube_loop_base(s->loop), &src, opts, fg_manager_metrics(m), &s->c, errmsg);
    if (!err)
        err = fg_manager_add_runnable(m, &(struct fg_runnable){ .name = "collector", .leader_only = true,
                                                               .start = start, .stop = stop, .ud = s });
    if (!err && out)
        *out = s->c;
    return err;
}
