/*
 * resource — built-in REST collection descriptors and URL path construction.
 *
 * Descriptors are plain constants: group, version, plural, kind and scope. fg_kube_path assembles a
 * path from a descriptor by appending percent-escaped segments; fg_kube_query_add does the same for
 * query values. Escaping is libcurl's (RFC 3986 unreserved characters pass, everything else is
 * %XX), so a name or selector can never change the shape of the URL. Both return new memory the
 * caller owns.
 */
#include "operator/kube/resource.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

#define FG__RES(sym, g, v, p, k, nsd) \
    const struct fg_kube_resource sym = { .group = g, .version = v, .plural = p, .kind = k, .namespaced = nsd }

FG__RES(fg_kube_namespaces, "", "v1", "namespaces", "Namespace", false);
FG__RES(fg_kube_nodes, "", "v1", "nodes", "Node", false);
FG__RES(fg_kube_pods, "", "v1", "pods", "Pod", true);
FG__RES(fg_kube_events, "", "v1", "events", "Event", true);
FG__RES(fg_kube_leases, "coordination.k8s.io", "v1", "leases", "Lease", true);
FG__RES(fg_kube_configmaps, "", "v1", "configmaps", "ConfigMap", true);
FG__RES(fg_kube_secrets, "", "v1", "secrets", "Secret", true);
FG__RES(fg_kube_services, "", "v1", "services", "Service", true);
FG__RES(fg_kube_deployments, "apps", "v1", "deployments", "Deployment", true);
FG__RES(fg_kube_statefulsets, "apps", "v1", "statefulsets", "StatefulSet", true);
FG__RES(fg_kube_jobs, "batch", "v1", "jobs", "Job", true);
FG__RES(fg_kube_cronjobs, "batch", "v1", "cronjobs", "CronJob", true);
FG__RES(fg_kube_poddisruptionbudgets, "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true);
FG__RES(fg_kube_replicasets, "apps", "v1", "replicasets", "ReplicaSet", true);
FG__RES(fg_kube_daemonsets, "apps", "v1", "daemonsets", "DaemonSet", true);
FG__RES(fg_kube_serviceaccounts, "", "v1", "serviceaccounts", "ServiceAccount", true);
FG__RES(fg_kube_endpointslices, "discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true);
FG__RES(fg_kube_priorityclasses, "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false);
FG__RES(fg_kube_persistentvolumeclaims, "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true);
FG__RES(fg_kube_storageclasses, "storage.k8s.io", "v1", "storageclasses", "StorageClass", false);
FG__RES(fg_kube_mutatingwebhookconfigurations, "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration", false);

/* Appends "/" and the escaped segment. */
static void append_segment(struct fg_buf *b, const char *seg)
{
    char *esc = curl_easy_escape(NULL, seg, 0);
    if (!esc)
        abort(); /* only fails on allocation failure, which is fatal (mem.h) */
    enum fg_err err = fg_buf_printf(b, "/%s", esc);
    curl_free(esc);
    if (err)
        abort(); /* unlimited buffer */
}

char *fg_kube_path(const struct fg_kube_resource *r, const char *ns, const char *name,
                   const char *subresource, const char *query)
{
    struct fg_buf b = FG_BUF_INIT;
    if (r->group[0] == '\0') {
        append_segment(&b, "api");
    } else {
        append_segment(&b, "apis");
        append_segment(&b, r->group);
    }
    append_segment(&b, r->version);
    if (ns && r->namespaced) {
        append_segment(&b, "namespaces");
        append_segment(&b, ns);
    }
    append_segment(&b, r->plural);
    if (name) {
        append_segment(&b, name);
        if (subresource)
            append_segment(&b, subresource);
    }
    if (query && query[0]) {
        if (fg_buf_printf(&b, "?%s", query))
            abort();
    }
    return fg_buf_take(&b);
}

enum fg_err fg_kube_query_add(struct fg_buf *query, const char *key, const char *value)
{
    if (!value)
        return FG_OK;
    if (!key || !key[0])
        return FG_E_INVAL;
    char *esc = curl_easy_escape(NULL, value, 0);
    if (!esc)
        return FG_E_NOMEM;
    enum fg_err err = fg_buf_printf(query, "%s%s=%s", query->len ? "&" : "", key, esc);
    curl_free(esc);
    return err;
}
