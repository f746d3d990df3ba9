/* setup — the capacity holder on a manager: NVML, the GPU, the runnable and /readyz; see holder.h. */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/mem.h"
#include "nodeagent/holder/holder_int.h"

static char *dup_opt(const char *s)
{
    return s ? fg_strdup(s) : NULL;
}

static void holder_free(void *ud)
{
    struct fg_holder *h = ud;
    fg_nvml_close(&h->nvml);
    fg_holder_stop_cleanup(&h->stop);
    free((char *)h->opts.pod_name);
    free((char *)h->opts.pod_namespace);
    free((char *)h->opts.nvml_lib);
    free((char *)h->opts.mps_root);
    free((char *)h->opts.mps_control);
    free(h);
}

static enum fg_err start(void *ud, char *errmsg)
{
    struct fg_holder *h = ud;
    if (pthread_create(&h->thread, NULL, fg__holder_main, h) != 0)
        return fg_errmsg(errmsg, FG_E_INTERNAL, "cannot start the holder's thread");
    h->running = true;
    return FG_OK;
}

static void stop(void *ud)
{
    struct fg_holder *h = ud;
    if (!h->running)
        return;
    fg_holder_stop_request(&h->stop);
    pthread_join(h->thread, NULL);
    h->running = false;
}

/* /readyz: the pod carries the report and, on an mps GPU, the daemon answers. */
static enum fg_err ready(void *ud, char *errmsg)
{
    struct fg_holder *h = ud;
    pthread_mutex_lock(&h->stop.mu);
    bool ok = h->reported && !h->failed && (!h->mps_wanted || h->mps_up);
    enum fg_err err = ok ? FG_OK : fg_errmsg(errmsg, FG_E_BUSY, "%s", h->status);
    pthread_mutex_unlock(&h->stop.mu);
    return err;
}

bool fg_holder_failed(struct fg_holder *h)
{
    pthread_mutex_lock(&h->stop.mu);
    bool failed = h->failed;
    pthread_mutex_unlock(&h->stop.mu);
    return failed;
}

enum fg_err fg_holder_setup(struct fg_manager *m, const struct fg_holder_opts *opts, struct fg_holder **out,
                            char *errmsg)
{
    if (!opts->pod_name || !opts->pod_name[0] || !opts->pod_namespace || !opts->pod_namespace[0])
        return fg_errmsg(errmsg, FG_E_INVAL, "the holder needs its pod's name and namespace");
    if (!opts->mps_root || !opts->mps_control || !opts->health_interval_ns || !opts->backoff_initial_ns ||
        opts->backoff_max_ns < opts->backoff_initial_ns)
        return fg_errmsg(errmsg, FG_E_INVAL, "incomplete holder options");
    struct fg_holder *h = fg_calloc(1, sizeof *h);
    h->opts = *opts;
    h->opts.pod_name = dup_opt(opts->pod_name);
    h->opts.pod_namespace = dup_opt(opts->pod_namespace);
    h->opts.nvml_lib = dup_opt(opts->nvml_lib);
    h->opts.mps_root = dup_opt(opts->mps_root);
    h->opts.mps_control = dup_opt(opts->mps_control);
    h->loop = fg_manager_loop(m);
    fg_holder_stop_init(&h->stop);
    snprintf(h->status, sizeof h->status, "not started");

    enum fg_err err = fg_nvml_open(opts->nvml_lib, &h->nvml, errmsg);
    if (!err)
        err = fg_holder_gpu_discover(&h->nvml, opts->overhead_mib, &h->gpu, errmsg);
    if (err) {
        holder_free(h);
        return err;
    }
    fg_log_obj(FG_LOG_INFO, FG_HOLDER_COMPONENT, "Pod", opts->pod_namespace, opts->pod_name,
               "holding GPU %s (%s): %llu MiB, the driver keeps %llu MiB (%s), a context %llu MiB: %llu MiB for tenants",
               h->gpu.uuid, h->gpu.name, (unsigned long long)h->gpu.total_mib, (unsigned long long)h->gpu.reserved_mib,
               h->gpu.reserved_from_v2 ? "NVML's reserved memory" : "total - free, no memory info v2",
               (unsigned long long)opts->overhead_mib, (unsigned long long)h->gpu.usable_mib);
    fg_manager_on_free(m, holder_free, h);   /* from here on the manager frees it */
    const struct fg_runnable r = { .name = FG_HOLDER_COMPONENT, .start = start, .stop = stop, .ud = h };
    if ((err = fg_manager_add_runnable(m, &r)) || (err = fg_manager_add_readyz(m, FG_HOLDER_COMPONENT, ready, h)))
        return fg_errmsg(errmsg, err, "cannot register the holder");
    *out = h;
    return FG_OK;
}
