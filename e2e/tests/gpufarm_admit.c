/*
 * gpufarm_admit — the farm's kubelets, as far as admission goes (gpufarm.h).
 *
 * A kubelet that admits a pod bound to its node writes status.startTime at once (the phase stays
 * Pending while its containers are made); one that refuses it fails it. fracgpu's scheduler binds a
 * tenant only when no tenant of that node awaiting admission would get another GPU or allocation
 * (scheduler/adapter/bind.c), so a farm whose pods stayed unadmitted would hold every node to one
 * GPU's tenants. One watch over every pod, on the harness's loop, admits each pod it sees bound
 * without a start time.
 */
#include "e2e/tests/gpufarm.h"

#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "operator/kube/resource.h"

static void admitted(void *ud, enum fg_err err, const struct fg_buf *body, const struct fg_kube_status *st)
{
    (void)body;
    struct fg_gpufarm_admitter *ad = ud;
    if (err && !(st && st->http_code == 404)) {   /* a pod deleted meanwhile has nothing to admit */
        ad->failed++;
        fg_log(FG_LOG_WARN, "gpufarm", "cannot admit a pod: %s", st && st->message ? st->message : fg_err_str(err));
    }
}

static bool on_event(void *ud, enum fg_watch_type type, json_object *pod)
{
    struct fg_gpufarm_admitter *ad = ud;
    const char *phase = fg_json_get_str(pod, "status", "phase", NULL);
    if (type == FG_WATCH_DELETED || !fg_json_get_str(pod, "spec", "nodeName", NULL) ||
        fg_json_get(pod, "status", "startTime", NULL) || (phase && strcmp(phase, "Pending")))
        return true;
    char now[FG_TIME_MAX];
    fg_time_format(fg_clock_wall_ms(), now);
    char *body = fg_asprintf("{\"status\":{\"startTime\":\"%s\"}}", now);
    char *path = fg_kube_path(&fg_kube_pods, fg_json_get_str(pod, "metadata", "namespace", NULL),
                              fg_json_get_str(pod, "metadata", "name", NULL), "status", NULL);
    fg_kube_loop_request(ad->loop, "PATCH", path, "application/merge-patch+json", body, strlen(body), admitted, ad);
    ad->admitted++;
    free(path);
    free(body);
    return true;
}

static void on_end(void *ud, enum fg_err err, const struct fg_kube_status *st, const char *errmsg)
{
    (void)st;
    struct fg_gpufarm_admitter *ad = ud;
    ad->watch = NULL;
    if (!ad->stopping)
        fg_log(FG_LOG_WARN, "gpufarm", "the admitting watch ended: %s %s", fg_err_str(err), errmsg ? errmsg : "");
}

static void start_on_loop(void *ud)
{
    struct fg_gpufarm_admitter *ad = ud;
    char *path = fg_kube_path(&fg_kube_pods, NULL, NULL, NULL, "watch=1&timeoutSeconds=86400");
    ad->watch = fg_kube_loop_watch(ad->loop, path, 1 << 20, on_event, on_end, ad);
    free(path);
}

static void stop_on_loop(void *ud)
{
    struct fg_gpufarm_admitter *ad = ud;
    ad->stopping = true;
    if (ad->watch)
        fg_kube_call_cancel(ad->watch);
    ad->watch = NULL;
}

enum fg_err fg_gpufarm_admit_start(struct fg_gpufarm_admitter *ad, struct fg_kube_loop *loop, char *errmsg)
{
    *ad = (struct fg_gpufarm_admitter){ .loop = loop };
    enum fg_err err = fg_kube_loop_call_wait(loop, start_on_loop, ad, 10000);
    if (err == FG_OK && !ad->watch)
        err = FG_E_CLOSED;
    return err ? fg_errmsg(errmsg, err, "gpufarm: cannot watch pods to admit them") : FG_OK;
}

void fg_gpufarm_admit_stop(struct fg_gpufarm_admitter *ad)
{
    if (ad->loop && fg_kube_loop_call_wait(ad->loop, stop_on_loop, ad, 10000) != FG_OK)
        fg_log(FG_LOG_WARN, "gpufarm", "the admitting watch could not be stopped");
}
