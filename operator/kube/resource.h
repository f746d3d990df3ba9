/*
 * resource — which REST collection an object lives in, and the URL paths to reach it.
 *
 * A `struct fg_kube_resource` names a group/version/plural (and the kind, for messages) and whether it
 * is namespaced. Descriptors for the built-in kinds fracgpu uses are constants; custom resources are
 * described the same way by their module. fg_kube_path builds
 *   /api/v1/namespaces/NS/pods/NAME/SUB?QUERY  or  /apis/GROUP/VERSION/PLURAL ...
 * escaping each path segment; queries are assembled with fg_kube_query_add, which escapes values.
 */
#ifndef FG_KUBE_RESOURCE_H
#define FG_KUBE_RESOURCE_H

#include <stdbool.h>

#include "base/buf.h"

struct fg_kube_resource {
    const char *group;     /* "" for the core group */
    const char *version;   /* "v1" */
    const char *plural;    /* "pods" */
    const char *kind;      /* "Pod" */
    bool namespaced;
};

extern const struct fg_kube_resource fg_kube_namespaces, fg_kube_nodes, fg_kube_pods, fg_kube_events,
    fg_kube_leases, fg_kube_configmaps, fg_kube_secrets, fg_kube_services, fg_kube_deployments,
    fg_kube_statefulsets, fg_kube_jobs, fg_kube_cronjobs, fg_kube_poddisruptionbudgets, fg_kube_replicasets,
    fg_kube_daemonsets, fg_kube_serviceaccounts, fg_kube_endpointslices, fg_kube_priorityclasses,
    fg_kube_persistentvolumeclaims, fg_kube_storageclasses, fg_kube_mutatingwebhookconfigurations;

/* Returns a new path. ns NULL: cluster-scoped or all namespaces; name NULL: the collection;
 * subresource and query may be NULL (query without the leading '?'). */
char *fg_kube_path(const struct fg_kube_resource *r, const char *ns, const char *name,
                   const char *subresource, const char *query);

/* Appends "key=escaped(value)" to a query, with '&' between pairs; NULL value appends nothing. */
enum fg_err fg_kube_query_add(struct fg_buf *query, const char *key, const char *value) FG_MUST_USE;

#endif
