/* exporter — the sampler thread and the published snapshot; see exporter.h. */
#include "exporter/exporter.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "exporter/exposition.h"
#include "exporter/nvml.h"
#include "exporter/sample.h"
#include "exporter/usage.h"

#define FG_EXPORTER_DEFAULT_INTERVAL_NS (10 * FG_NS_PER_S)

struct fg_exporter {
    struct fg_exporter_opts opts;
    struct fg_pods *pods;
    struct fg_nvml nv;
    struct fg_sampler sampler;
    struct fg_exporter_health health;
    char last_problem[FG_ERRMSG_MAX];   /* the NVML problem last logged, "" when none */

    pthread_mutex_t mu;                 /* guards text, unready, stopping */
    pthread_cond_t cv;
    char *text;
    char unready[FG_ERRMSG_MAX];        /* why the last sample could not read NVML, "" when it could */
    bool stopping;
    bool running;
    pthread_t thread;
    fg_exporter_devices_fn *on_devices;
    void *on_devices_ud;
};

/* Logs an NVML problem when it starts or changes; a repeat stays quiet. */
static void problem(struct fg_exporter *e, const char *msg)
{
    if (strcmp(e->last_problem, msg) == 0)
        return;
    snprintf(e->last_problem, sizeof e->last_problem, "%s", msg);
    fg_log(FG_LOG_ERROR, "exporter", "NVML unavailable, GPU metrics paused, retrying every interval: %s", msg);
}

static void recovered(struct fg_exporter *e)
{
    if (!e->last_problem[0])
        return;
    e->last_problem[0] = '\0';
    fg_log(FG_LOG_INFO, "exporter", "NVML answering again");
}

/* Reads NVML into *smp; false (and NVML closed for a fresh start next time) when it cannot, with
 * msg (FG_ERRMSG_MAX) saying why. */
static bool read_nvml(struct fg_exporter *e, struct fg_sample *smp, char *msg)
{
    memset(smp, 0, sizeof *smp);
    if (!e->nv.dl) {
        if (fg_nvml_open(e->opts.nvml_lib, &e->nv, msg) != FG_OK) {
            problem(e, msg);
            return false;
        }
        fg_sampler_init(&e->sampler, &e->nv);
    }
    if (fg_sample_take(&e->sampler, smp, msg) != FG_OK) {
        problem(e, msg);
        fg_sampler_cleanup(&e->sampler);
        fg_nvml_close(&e->nv);
        return false;
    }
    recovered(e);
    for (size_t i = 0; i < smp->ndevs; i++)
        if (smp->devs[i].error[0])
            fg_log(FG_LOG_WARN, "exporter", "GPU %u%s%s: %s", smp->devs[i].index, smp->devs[i].uuid[0] ? " " : "",
                   smp->devs[i].uuid, smp->devs[i].error);
    return true;
}

void fg_exporter_sample(struct fg_exporter *e)
{
    uint64_t t0 = fg_clock_mono_ns();
    struct fg_sample smp;
    struct fg_usage u = { NULL, 0, 0 };
    struct fg_exporter_health *h = &e->health;
    /* Read before attributing: the informer fills its store during the first list, so a sample built
     * meanwhile can know some pods and not others, and must not be reported as synced. */
    h->pods_synced = fg_pods_synced(e->pods);
    char why[FG_ERRMSG_MAX] = "";
    bool ok = read_nvml(e, &smp, why);
    if (ok)
        fg_usage_build(&smp, e->opts.proc_root, e->pods, &u);
    if (e->on_devices)
        e->on_devices(e->on_devices_ud, smp.devs, ok ? smp.ndevs : 0, ok);

    h->samples++;
    h->nvml_up = ok;
    if (!ok)
        h->sample_failures++;
    else
        h->last_success_unix = (double)fg_clock_wall_ms() / 1000.0;
    h->reading_errors += smp.nerrors;
    h->unattributed = u.unattributed;
    h->sample_seconds = (double)(fg_clock_mono_ns() - t0) / 1e9;

    struct fg_buf b;
    fg_buf_init(&b, 0);
    fg_exposition_render(&b, e->opts.node, ok ? &smp : NULL, ok ? &u : NULL, e->opts.dcgm_aliases, h);
    char *text = fg_buf_take(&b);
    fg_usage_cleanup(&u);
    fg_sample_cleanup(&smp);

    pthread_mutex_lock(&e->mu);
    char *old = e->text;
    e->text = text;
    if (ok)
        e->unready[0] = '\0';
    else
        snprintf(e->unready, sizeof e->unready, "NVML unavailable: %s", why);
    pthread_mutex_unlock(&e->mu);
    free(old);
    malloc_trim(0);   /* give the sample's scratch memory back: the exporter idles between samples */
}

void fg_exporter_on_devices(struct fg_exporter *e, fg_exporter_devices_fn *fn, void *ud)
{
    e->on_devices = fn;
    e->on_devices_ud = ud;
}

struct fg_exporter *fg_exporter_new(const struct fg_exporter_opts *opts, struct fg_pods *pods)
{
    struct fg_exporter *e = fg_calloc(1, sizeof *e);
    e->opts = *opts;
    if (!e->opts.proc_root)
        e->opts.proc_root = "/proc";
    if (!e->opts.interval_ns)
        e->opts.interval_ns = FG_EXPORTER_DEFAULT_INTERVAL_NS;
    e->pods = pods;
    snprintf(e->unready, sizeof e->unready, "NVML not sampled yet");
    pthread_mutex_init(&e->mu, NULL);
    fg_cond_init_monotonic(&e->cv);
    struct fg_buf b;
    fg_buf_init(&b, 0);
    fg_exposition_render(&b, e->opts.node, NULL, NULL, false, &e->health);
    e->text = fg_buf_take(&b);
    return e;
}

static void *sampler_main(void *ud)
{
    struct fg_exporter *e = ud;
    uint64_t next = fg_clock_real_ns();
    for (;;) {
        next += e->opts.interval_ns;   /* a fixed period: a slow sample does not shift the next ones, */
        uint64_t late = fg_clock_real_ns();
        if (late > next)
            next = late;                /* and one that took several periods is not followed by a burst */
        pthread_mutex_lock(&e->mu);
        for (uint64_t now; !e->stopping && (now = fg_clock_real_ns()) < next;)
            fg_cond_wait_ns(&e->cv, &e->mu, next - now);
        bool stop = e->stopping;
        pthread_mutex_unlock(&e->mu);
        if (stop)
            return NULL;
        fg_exporter_sample(e);
    }
}

enum fg_err fg_exporter_start(struct fg_exporter *e, char *errmsg)
{
    fg_exporter_sample(e);
    int rc = pthread_create(&e->thread, NULL, sampler_main, e);
    if (rc)
        return fg_errmsg(errmsg, FG_E_INTERNAL, "cannot start the sampler thread: %s", strerror(rc));
    e->running = true;
    return FG_OK;
}

void fg_exporter_stop(struct fg_exporter *e)
{
    if (!e->running)
        return;
    pthread_mutex_lock(&e->mu);
    e->stopping = true;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->thread, NULL);
    e->running = false;
    e->stopping = false;
}

void fg_exporter_free(struct fg_exporter *e)
{
    if (!e)
        return;
    fg_exporter_stop(e);
    fg_sampler_cleanup(&e->sampler);
    fg_nvml_close(&e->nv);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e->text);
    free(e);
}

enum fg_err fg_exporter_ready(struct fg_exporter *e, char *errmsg)
{
    pthread_mutex_lock(&e->mu);
    enum fg_err err = e->unready[0] ? fg_errmsg(errmsg, FG_E_BUSY, "%s", e->unready) : FG_OK;
    pthread_mutex_unlock(&e->mu);
    return err;
}

void fg_exporter_scrape(struct fg_exporter *e, struct fg_buf *out)
{
    pthread_mutex_lock(&e->mu);
    enum fg_err err = fg_buf_puts(out, e->text);   /* fails only past a limit the caller set */
    (void)err;
    pthread_mutex_unlock(&e->mu);
}
