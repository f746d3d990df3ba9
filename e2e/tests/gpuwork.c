/* gpuwork — an automated GPU workload and its pods as its ReplicaSet makes them (gpuwork.h). */
#include "e2e/tests/gpuwork.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "operator/kube/resource.h"
#include "reconcilers/podcontract.h"

#define HASH "5f6c8d9b7"   /* the ReplicaSet's pod-template-hash: any fixed value */
#define IMAGE "registry.example/llm:1"

static enum fg_err create(struct fg_kube_client *c, const struct fg_kube_resource *res, const char *ns, char *text,
                          json_object **out, char *errmsg)
{
    json_object *obj = json_tokener_parse(text);
    free(text);
    char *path = fg_kube_path(res, ns, NULL, NULL, NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = obj ? fg_kube_create(c, path, obj, out, &st) : FG_E_INVAL;
    if (err)
        fg_errmsg(errmsg, err, "cannot create the %s: %s", res->kind, st.message ? st.message : fg_err_str(err));
    fg_kube_status_cleanup(&st);
    free(path);
    json_object_put(obj);
    return err;
}

/* The pod template both objects carry. */
static char *template_json(const char *name)
{
    return fg_asprintf("{\"metadata\":{\"labels\":{\"app\":\"%s\",\"" FG_KEY_AUTOMATE "\":\"true\"}},\"spec\":{"
                       "\"containers\":[{\"name\":\"app\",\"image\":\"" IMAGE "\",\"resources\":{\"limits\":{"
                       "\"" FG_RES_NVIDIA_GPU "\":\"1\"}}}]}}",
                       name);
}

enum fg_err fg_gpuwork_create(struct fg_kube_client *c, const char *ns, const char *name, int compute_milli,
                              int64_t memory_mib, struct fg_gpuwork *out, char *errmsg)
{
    memset(out, 0, sizeof *out);
    snprintf(out->ns, sizeof out->ns, "%s", ns);
    snprintf(out->name, sizeof out->name, "%s", name);
    snprintf(out->rs_name, sizeof out->rs_name, "%s-" HASH, name);
    char fraction[160] = "";
    if (compute_milli)
        snprintf(fraction, sizeof fraction, ",\"" FG_ANN_GPU_COMPUTE "\":\"%d\",\"" FG_ANN_GPU_MEMORY "\":\"%lldMi\"",
                 compute_milli, (long long)memory_mib);
    char *tmpl = template_json(name);
    json_object *dep = NULL;
    enum fg_err err = create(c, &fg_kube_deployments, ns,
                             fg_asprintf("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{"
                                         "\"name\":\"%s\",\"annotations\":{\"" FG_KEY_AUTOMATE "\":\"true\"%s}},"
                                         "\"spec\":{\"replicas\":0,\"selector\":{\"matchLabels\":{\"app\":\"%s\"}},"
                                         "\"template\":%s}}",
                                         name, fraction, name, tmpl),
                             &dep, errmsg);
    json_object *rs = NULL;
    if (!err)
        err = create(c, &fg_kube_replicasets, ns,
                     fg_asprintf("{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"%s\","
                                 "\"labels\":{\"app\":\"%s\",\"pod-template-hash\":\"" HASH "\"},\"ownerReferences\":[{"
                                 "\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"%s\",\"uid\":\"%s\","
                                 "\"controller\":true,\"blockOwnerDeletion\":true}]},\"spec\":{\"replicas\":0,"
                                 "\"selector\":{\"matchLabels\":{\"app\":\"%s\",\"pod-template-hash\":\"" HASH "\"}},"
                                 "\"template\":%s}}",
                                 out->rs_name, name, name, fg_json_get_str(dep, "metadata", "uid", NULL), name, tmpl),
                     &rs, errmsg);
    if (!err)
        snprintf(out->rs_uid, sizeof out->rs_uid, "%s", fg_json_get_str(rs, "metadata", "uid", NULL));
    json_object_put(rs);
    json_object_put(dep);
    free(tmpl);
    return err;
}

json_object *fg_gpuwork_pod(const struct fg_gpuwork *w, const char *name, int64_t cpu_milli, int64_t mem_mib)
{
    char *text = fg_asprintf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"labels\":{"
        "\"app\":\"%s\",\"pod-template-hash\":\"" HASH "\",\"" FG_KEY_AUTOMATE "\":\"true\"},\"ownerReferences\":[{"
        "\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"%s\",\"uid\":\"%s\",\"controller\":true,"
        "\"blockOwnerDeletion\":true}]},\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"" IMAGE "\","
        "\"resources\":{\"requests\":{\"cpu\":\"%lldm\",\"memory\":\"%lldMi\",\"" FG_RES_NVIDIA_GPU "\":\"1\"},"
        "\"limits\":{\"" FG_RES_NVIDIA_GPU "\":\"1\"}}}]}}",
        name, w->ns, w->name, w->rs_name, w->rs_uid, (long long)cpu_milli, (long long)mem_mib);
    json_object *pod = json_tokener_parse(text);
    free(text);
    return pod;
}

enum fg_err fg_gpuwork_wait_admitted(struct fg_kube_client *c, const struct fg_gpuwork *w, unsigned timeout_ms,
                                     char *errmsg)
{
    uint64_t deadline = fg_clock_mono_ns() + (uint64_t)timeout_ms * FG_NS_PER_MS;
    char *path = fg_kube_path(&fg_kube_pods, w->ns, NULL, NULL, "dryRun=All");
    json_object *pod = fg_gpuwork_pod(w, "admission-probe", 100, 64);
    bool mutated = false;
    while (!mutated && fg_clock_mono_ns() < deadline) {
        json_object *got = NULL;
        mutated = fg_kube_create(c, path, pod, &got, NULL) == FG_OK &&
                  fg_str_eq(fg_json_get_str(got, "spec", "schedulerName", NULL), FG_SCHEDULER_NAME);
        json_object_put(got);
        if (!mutated)
            nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
    }
    json_object_put(pod);
    free(path);
    return mutated ? FG_OK
                   : fg_errmsg(errmsg, FG_E_TIMEOUT, "pods of %s/%s were not mutated by the webhook within %u ms", w->ns,
                               w->name, timeout_ms);
}
