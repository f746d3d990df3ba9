/* gpufarm — GPU nodes and the capacity pods holding their GPUs (gpufarm.h). */
#include "e2e/tests/gpufarm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"
#include "operator/kube/resource.h"
#include "reconcilers/podcontract.h"
#include "scheduler/adapter/podinfo.h"

int64_t fg_gpufarm_tenant_cpu(const struct fg_gpufarm_opts *o)
{
    return o->cpu_milli - (int64_t)o->gpus * FG_SA_HOLDER_CPU_MILLI;
}

int64_t fg_gpufarm_tenant_mem(const struct fg_gpufarm_opts *o)
{
    return o->mem_mib - (int64_t)o->gpus * FG_SA_HOLDER_MEM_MIB;
}

void fg_gpufarm_node_name(unsigned i, char *out, size_t size)
{
    snprintf(out, size, "gpu-node-%04u", i);
}

static enum fg_err create(struct fg_kube_client *c, const struct fg_kube_resource *res, const char *ns,
                          const char *text, char *errmsg)
{
    json_object *obj = json_tokener_parse(text);
    if (!obj)
        return fg_errmsg(errmsg, FG_E_INVAL, "gpufarm: a %s of its own is not JSON", res->kind);
    char *path = fg_kube_path(res, ns, NULL, NULL, NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_create(c, path, obj, NULL, &st);
    if (err == FG_E_KUBE_ALREADY_EXISTS && res == &fg_kube_namespaces)
        err = FG_OK;
    if (err)
        fg_errmsg(errmsg, err, "cannot create a %s: %s", res->kind, st.message ? st.message : fg_err_str(err));
    fg_kube_status_cleanup(&st);
    free(path);
    json_object_put(obj);
    return err;
}

static enum fg_err node(struct fg_kube_client *c, const struct fg_gpufarm_opts *o, unsigned i, char *errmsg)
{
    char name[32];
    fg_gpufarm_node_name(i, name, sizeof name);
    char res[256];
    snprintf(res, sizeof res, "{\"cpu\":\"%lldm\",\"memory\":\"%lldMi\",\"pods\":\"%u\",\"" FG_RES_NVIDIA_GPU "\":\"%u\"}",
             (long long)o->cpu_milli, (long long)o->mem_mib, o->max_pods, o->gpus);
    char *text = fg_asprintf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
        "\"kubernetes.io/hostname\":\"%s\",\"nvidia.com/gpu.present\":\"true\",\"nvidia.com/gpu.product\":\"%s\","
        "\"nvidia.com/gpu.memory\":\"%lld\"}},\"status\":{\"capacity\":%s,\"allocatable\":%s,"
        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
        name, name, o->product, (long long)o->gpu_mem_mib, res, res);
    enum fg_err err = create(c, &fg_kube_nodes, NULL, text, errmsg);
    free(text);
    return err;
}

/* Capacity pod g of node i, bound, then given the status its holder and kubelet would write. */
static enum fg_err capacity_pod(struct fg_kube_client *c, const struct fg_gpufarm_opts *o, unsigned i, unsigned g,
                                char *errmsg)
{
    char node_name[32], name[64], sig[96] = "";
    fg_gpufarm_node_name(i, node_name, sizeof node_name);
    snprintf(name, sizeof name, "fracgpu-capacity-%04u-%u", i, g);
    if (o->signature)
        snprintf(sig, sizeof sig, ",\"" FG_ANN_SIGNATURE "\":\"%s\"", o->signature);
    char requests[96];
    snprintf(requests, sizeof requests, "{\"cpu\":\"%dm\",\"memory\":\"%dMi\"}", FG_SA_HOLDER_CPU_MILLI,
             FG_SA_HOLDER_MEM_MIB);
    char *text = fg_asprintf(
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"" FG_GPUFARM_NS "\","
        "\"labels\":{\"" FG_LABEL_ROLE "\":\"" FG_ROLE_CAPACITY "\",\"app.kubernetes.io/name\":\"fracgpu\","
        "\"app.kubernetes.io/component\":\"capacity-holder\"},\"annotations\":{"
        "\"" FG_ANN_GPU_UUID "\":\"GPU-%08u-0000-4000-8000-%012u\",\"" FG_ANN_GPU_MEMORY_MIB "\":\"%lld\"%s}},"
        "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{"
        "\"name\":\"holder\",\"image\":\"fracgpu:farm\",\"args\":[\"capacity-holder\"],"
        "\"resources\":{\"requests\":%s,\"limits\":{\"" FG_RES_NVIDIA_GPU "\":\"1\"}}}]}}",
        name, i, g, (long long)o->gpu_mem_mib, sig, node_name, requests);
    enum fg_err err = create(c, &fg_kube_pods, FG_GPUFARM_NS, text, errmsg);
    free(text);
    if (err)
        return err;
    char *status = fg_asprintf("{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":"
                               "\"True\"}],\"containerStatuses\":[{\"name\":\"holder\",\"ready\":true,"
                               "\"restartCount\":0,\"image\":\"fracgpu:farm\",\"imageID\":\"\",\"started\":true,"
                               "\"state\":{\"running\":{}},\"resources\":{\"requests\":%s,\"limits\":{"
                               "\"" FG_RES_NVIDIA_GPU "\":\"1\"}}}]}}",
                               requests);
    char *path = fg_kube_path(&fg_kube_pods, FG_GPUFARM_NS, name, "status", NULL);
    struct fg_kube_status st = { 0 };
    err = fg_kube_patch(c, path, FG_KUBE_PATCH_MERGE, status, NULL, &st);
    if (err)
        fg_errmsg(errmsg, err, "cannot write the status of %s: %s", name, st.message ? st.message : fg_err_str(err));
    fg_kube_status_cleanup(&st);
    free(path);
    free(status);
    return err;
}

enum fg_err fg_gpufarm_fill(struct fg_kube_client *c, const struct fg_gpufarm_opts *o, char *errmsg)
{
    enum fg_err err = create(c, &fg_kube_namespaces, NULL,
                             "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"" FG_GPUFARM_NS
                             "\"}}",
                             errmsg);
    for (unsigned i = 0; i < o->nodes && !err; i++)
        err = node(c, o, i, errmsg);
    for (unsigned i = 0; i < o->nodes && !err; i++)
        for (unsigned g = 0; g < o->gpus && !err; g++)
            err = capacity_pod(c, o, i, g, errmsg);
    return err;
}
