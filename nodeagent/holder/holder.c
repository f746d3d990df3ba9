/* holder — the capacity holder's thread: read the pod, set up MPS, report, watch, tear down; see holder.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "nodeagent/holder/apicall.h"
#include "nodeagent/holder/compute_mode.h"
#include "nodeagent/holder/holder_int.h"
#include "nodeagent/holder/mps_paths.h"
#include "operator/kube/client.h"
#include "operator/kube/resource.h"

#define QUIT_TIMEOUT_MS 500u   /* the daemon's quit on stop: the whole stop stays well under a second */

#define LOG_POD(h, lvl, ...) \
    fg_log_obj((lvl), FG_HOLDER_COMPONENT, "Pod", (h)->opts.pod_namespace, (h)->opts.pod_name, __VA_ARGS__)

/* What the holder waits for, for /readyz (and the flags it reports with). */
static void set_status(struct fg_holder *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_status(struct fg_holder *h, const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&h->stop.mu);
    va_start(ap, fmt);
    vsnprintf(h->status, sizeof h->status, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&h->stop.mu);
}

static void set_flag(struct fg_holder *h, bool *flag, bool value)
{
    pthread_mutex_lock(&h->stop.mu);
    *flag = value;
    pthread_mutex_unlock(&h->stop.mu);
}

/* A failure no retry mends: logged, and the holder is done. */
static void give_up(struct fg_holder *h, const char *what, const char *why)
{
    LOG_POD(h, FG_LOG_ERROR, "%s: %s; giving up (the container exits 1 and the kubelet restarts it)", what, why);
    set_status(h, "%s: %s", what, why);
    set_flag(h, &h->failed, true);
}

/* Waits out the backoff and doubles it; true when stopped meanwhile. */
static bool back_off(struct fg_holder *h, uint64_t *delay_ns)
{
    bool stopped = fg_holder_stop_sleep(&h->stop, *delay_ns);
    *delay_ns = *delay_ns * 2 > h->opts.backoff_max_ns ? h->opts.backoff_max_ns : *delay_ns * 2;
    return stopped;
}

/* Logs a failed API call once, with what the server said and when it is tried again. */
static void log_api_failure(struct fg_holder *h, const char *verb, enum fg_err err, const struct fg_kube_status *st,
                            uint64_t retry_ns)
{
    LOG_POD(h, err == FG_E_KUBE_NOT_FOUND ? FG_LOG_WARN : FG_LOG_ERROR, "cannot %s its pod: %s%s%s%s; retrying in %llu ms",
            verb, fg_err_str(err), st->reason ? " (" : "", st->reason ? st->reason : "", st->reason ? ")" : "",
            (unsigned long long)(retry_ns / FG_NS_PER_MS));
    if (st->message)
        LOG_POD(h, FG_LOG_DEBUG, "the server said: %s", st->message);
    set_status(h, "cannot %s the pod: %s%s%s", verb, fg_err_str(err), st->message ? ": " : "",
               st->message ? st->message : "");
}

/* GET of the holder's own pod, retried until it succeeds or the holder stops (FG_E_SHUTDOWN). */
static enum fg_err read_pod(struct fg_holder *h, const char *path, json_object **pod)
{
    uint64_t delay = h->opts.backoff_initial_ns;
    for (;;) {
        struct fg_kube_status st = { 0 };
        enum fg_err err = fg_holder_api_call(h->loop, &h->stop, "GET", path, NULL, NULL, pod, &st);
        if (err == FG_OK || err == FG_E_SHUTDOWN)
            return err;
        log_api_failure(h, "read", err, &st, delay);
        fg_kube_status_cleanup(&st);
        if (back_off(h, &delay))
            return FG_E_SHUTDOWN;
    }
}

/* Writes the report unless the pod carries it already; retried like read_pod. */
static enum fg_err report(struct fg_holder *h, const char *path, json_object *pod)
{
    if (fg_holder_pod_reported(pod, h->gpu.uuid, h->gpu.usable_mib)) {
        LOG_POD(h, FG_LOG_INFO, "already annotated with GPU %s and %llu MiB", h->gpu.uuid,
                (unsigned long long)h->gpu.usable_mib);
        return FG_OK;
    }
    char *patch = fg_holder_pod_patch(h->gpu.uuid, h->gpu.usable_mib);
    uint64_t delay = h->opts.backoff_initial_ns;
    enum fg_err err;
    for (;;) {
        struct fg_kube_status st = { 0 };
        err = fg_holder_api_call(h->loop, &h->stop, "PATCH", path, fg_kube_patch_content_type(FG_KUBE_PATCH_MERGE),
                                 patch, NULL, &st);
        if (err == FG_OK || err == FG_E_SHUTDOWN)
            break;
        log_api_failure(h, "annotate", err, &st, delay);
        fg_kube_status_cleanup(&st);
        if (back_off(h, &delay)) {
            err = FG_E_SHUTDOWN;
            break;
        }
    }
    free(patch);
    if (!err)
        LOG_POD(h, FG_LOG_INFO, "annotated with GPU %s and %llu MiB for tenants", h->gpu.uuid,
                (unsigned long long)h->gpu.usable_mib);
    return err;
}

/* Takes the GPU into EXCLUSIVE_PROCESS and starts the daemon with the limits. */
static enum fg_err mps_begin(struct fg_holder *h)
{
    char why[FG_ERRMSG_MAX] = "";
    struct fg_mps_limits limits = { fg_mps_thread_percentage(h->want.compute_milli), h->want.memory_mib };
    enum fg_err err = fg_mps_dir(h->opts.mps_root, h->gpu.uuid, FG_MPS_PREVIOUS_MODE, h->mode_path,
                                 sizeof h->mode_path, why);
    if (!err)
        err = fg_holder_mps_init(&h->mps, h->opts.mps_root, h->opts.mps_control, h->gpu.uuid, &limits, why);
    if (err) {
        give_up(h, "cannot prepare the MPS directories", why);
        return err;
    }
    h->mps_ready = true;
    if ((err = fg_holder_mode_take(&h->nvml, h->gpu.dev, h->mode_path, &h->previous_mode, why))) {
        give_up(h, "cannot set the GPU to EXCLUSIVE_PROCESS", why);
        return err;
    }
    h->mode_taken = true;
    LOG_POD(h, FG_LOG_INFO, "GPU %s in EXCLUSIVE_PROCESS (it was %s)", h->gpu.uuid,
            fg_nvml_compute_mode_name(h->previous_mode));
    bool adopted = false;
    if ((err = fg_holder_mps_start(&h->mps, &adopted, why))) {
        give_up(h, "cannot start the MPS control daemon", why);
        return err;
    }
    LOG_POD(h, FG_LOG_INFO, "MPS control daemon %s (pipe %s, log %s): active thread percentage %u, pinned memory "
            "limit %lluM per client", adopted ? "already running, adopted" : "started", h->mps.pipe_dir,
            h->mps.log_dir, limits.thread_percentage, (unsigned long long)limits.pinned_mem_mib);
    set_flag(h, &h->mps_up, true);
    return FG_OK;
}

/* Without MPS: a compute mode recorded by an mps holder that crashed on this GPU is given back. */
static void restore_left_mode(struct fg_holder *h)
{
    char why[FG_ERRMSG_MAX] = "";
    nvmlComputeMode_t mode;
    if (fg_mps_dir(h->opts.mps_root, h->gpu.uuid, FG_MPS_PREVIOUS_MODE, h->mode_path, sizeof h->mode_path, why) ||
        !fg_holder_mode_recorded(h->mode_path, &mode))
        return;
    if (fg_holder_mode_restore(&h->nvml, h->gpu.dev, h->mode_path, mode, why) == FG_OK)
        LOG_POD(h, FG_LOG_INFO, "GPU %s back in %s, the mode an mps holder before this one had taken it from",
                h->gpu.uuid, fg_nvml_compute_mode_name(mode));
    else
        LOG_POD(h, FG_LOG_ERROR, "cannot restore the compute mode a previous holder left: %s", why);
}

/* Quits the daemon and restores the compute mode, whatever got done of mps_begin. */
static void mps_end(struct fg_holder *h)
{
    char why[FG_ERRMSG_MAX] = "";
    if (h->mps_ready) {
        if (fg_holder_mps_quit(&h->mps, QUIT_TIMEOUT_MS, why) == FG_OK)
            LOG_POD(h, FG_LOG_INFO, "MPS control daemon stopped");
        else
            LOG_POD(h, FG_LOG_ERROR, "MPS control daemon: %s", why);
        set_flag(h, &h->mps_up, false);
        fg_holder_mps_cleanup(&h->mps);
        h->mps_ready = false;
    }
    if (h->mode_taken) {
        if (fg_holder_mode_restore(&h->nvml, h->gpu.dev, h->mode_path, h->previous_mode, why) == FG_OK)
            LOG_POD(h, FG_LOG_INFO, "GPU %s back in %s", h->gpu.uuid, fg_nvml_compute_mode_name(h->previous_mode));
        else
            LOG_POD(h, FG_LOG_ERROR, "cannot restore the GPU's compute mode: %s", why);
        h->mode_taken = false;
    }
}

/* As PID 1 of its container the holder inherits the daemon's orphans (the daemon itself, which -d
 * detaches, and the servers of a daemon that died): reap them, so that none stays a zombie. Every
 * child this thread starts it has already waited for when this runs; the only other children a
 * holder can have are an exec credential plugin's, which a pod's in-cluster configuration never uses. */
static void reap_orphans(void)
{
    if (getpid() != 1)
        return;
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

/* One health check of the daemon; restarts it when it does not answer. */
static void check_daemon(struct fg_holder *h)
{
    char why[FG_ERRMSG_MAX] = "";
    if (fg_holder_mps_check(&h->mps, why) == FG_OK)
        return;
    LOG_POD(h, FG_LOG_ERROR, "MPS control daemon does not answer (%s): starting it again", why);
    set_flag(h, &h->mps_up, false);
    set_status(h, "MPS control daemon down: %s", why);
    reap_orphans();
    bool adopted = false;
    if (fg_holder_mps_start(&h->mps, &adopted, why) != FG_OK) {
        LOG_POD(h, FG_LOG_ERROR, "cannot start the MPS control daemon again: %s; next try in %llu ms", why,
                (unsigned long long)(h->opts.health_interval_ns / FG_NS_PER_MS));
        set_status(h, "MPS control daemon down: %s", why);
        return;
    }
    h->restarts++;
    LOG_POD(h, FG_LOG_INFO, "MPS control daemon running again with its limits (restart %u)", h->restarts);
    set_status(h, "ready");
    set_flag(h, &h->mps_up, true);
}

void *fg__holder_main(void *arg)
{
    struct fg_holder *h = arg;
    char *path = fg_kube_path(&fg_kube_pods, h->opts.pod_namespace, h->opts.pod_name, NULL, NULL);
    json_object *pod = NULL;
    char why[FG_ERRMSG_MAX] = "";
    set_status(h, "reading its pod");
    if (read_pod(h, path, &pod) != FG_OK)
        goto out;
    if (fg_holder_pod_want(pod, &h->want, why) != FG_OK) {
        give_up(h, "the pod asks for MPS", why);
        goto out;
    }
    set_flag(h, &h->mps_wanted, h->want.mps);
    if (h->want.mps) {
        set_status(h, "starting MPS");
        if (mps_begin(h) != FG_OK)
            goto out;
    } else {
        restore_left_mode(h);
    }
    set_status(h, "annotating its pod");
    if (report(h, path, pod) != FG_OK)
        goto out;
    set_status(h, "ready");
    set_flag(h, &h->reported, true);
    while (!fg_holder_stop_sleep(&h->stop, h->want.mps ? h->opts.health_interval_ns : 3600 * FG_NS_PER_S)) {
        reap_orphans();
        if (h->want.mps)
            check_daemon(h);
    }
out:
    mps_end(h);
    json_object_put(pod);
    free(path);
    return NULL;
}
