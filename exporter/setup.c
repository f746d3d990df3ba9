/*
 * setup — the exporter as a component of the node agent's manager (see exporter.h): this node's pod
 * informer, the sampler as a runnable of every replica, the published exposition served at the
 * manager's /metrics by a collector, and whether NVML answered the last sample as a /readyz check.
 */
#include <stdlib.h>

#include "exporter/exporter.h"

static enum fg_err start(void *ud, char *errmsg)
{
    return fg_exporter_start(ud, errmsg);
}

static void stop(void *ud)
{
    fg_exporter_stop(ud);
}

static void collect(void *ud, struct fg_buf *out)
{
    fg_exporter_scrape(ud, out);
}

static enum fg_err ready(void *ud, char *errmsg)
{
    return fg_exporter_ready(ud, errmsg);
}

static void free_exporter(void *ud)
{
    fg_exporter_free(ud);
}

enum fg_err fg_exporter_setup(struct fg_manager *m, const struct fg_exporter_opts *opts, struct fg_exporter **out,
                              char *errmsg)
{
    struct fg_pods *pods;
    enum fg_err err = fg_pods_setup(m, opts->node, &pods, errmsg);
    if (err)
        return err;
    struct fg_exporter *e = fg_exporter_new(opts, pods);
    fg_manager_on_free(m, free_exporter, e);
    fg_metrics_add_collector(fg_manager_metrics(m), collect, e);
    err = fg_manager_add_runnable(m, &(struct fg_runnable){ .name = "exporter", .start = start, .stop = stop,
                                                           .ud = e });
    if (err)
        return fg_errmsg(errmsg, err, "cannot register the exporter's sampler");
    err = fg_manager_add_readyz(m, "nvml", ready, e);
    if (err)
        return fg_errmsg(errmsg, err, "cannot register the exporter's readiness check");
    if (out)
        *out = e;
    return FG_OK;
}
