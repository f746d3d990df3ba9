/*
 * store_seed — the objects kube-apiserver makes for itself at start.
 *
 * The namespaces default (the bootstrap controller's), kube-system, kube-public and kube-node-lease
 * (the system namespaces controller's), and the two system PriorityClasses the scheduling API's
 * post-start hook creates: system-node-critical (2000001000) and system-cluster-critical
 * (2000000000), with kube's descriptions; globalDefault is false and so, as kube's `omitempty` field
 * serializes it, absent, and preemptionPolicy PreemptLowerPriority comes from defaulting, as in kube.
 * Each is created through the ordinary create path, without webhooks, and only when missing, so a server that loaded a state
 * file keeps the ones it saved (uids and resourceVersions included) and never holds two.
 */
#include <json-c/json.h>
#include <stdlib.h>

#include "e2e/apiserver/store.h"

static const struct {
    const char *group, *plural, *name, *body;
} seeds[] = {
    { "", "namespaces", "default", "{\"metadata\":{\"name\":\"default\"}}" },
    { "", "namespaces", "kube-system", "{\"metadata\":{\"name\":\"kube-system\"}}" },
    { "", "namespaces", "kube-public", "{\"metadata\":{\"name\":\"kube-public\"}}" },
    { "", "namespaces", "kube-node-lease", "{\"metadata\":{\"name\":\"kube-node-lease\"}}" },
    { "scheduling.k8s.io", "priorityclasses", "system-node-critical",
      "{\"metadata\":{\"name\":\"system-node-critical\"},\"value\":2000001000,"
      "\"description\":\"Used for system critical pods that must not be moved from their current node.\"}" },
    { "scheduling.k8s.io", "priorityclasses", "system-cluster-critical",
      "{\"metadata\":{\"name\":\"system-cluster-critical\"},\"value\":2000000000,"
      "\"description\":\"Used for system critical pods that must run in the cluster, but can be moved to another "
      "node if necessary.\"}" },
};

void fg__store_seed(struct fg__store *st)
{
    for (size_t i = 0; i < sizeof(seeds) / sizeof(*seeds); i++) {
        const struct fg__type *type = fg__registry_find(st->reg, seeds[i].group, "v1", seeds[i].plural);
        if (!type || fg__store_get(st, type, NULL, seeds[i].name))
            continue;
        json_object *body = json_tokener_parse(seeds[i].body), *out = NULL;
        if (!body || fg__store_create(st, type, NULL, body, &out) != FG_OK)
            abort(); /* fixed valid objects cannot be refused */
        json_object_put(out);
        json_object_put(body);
    }
}
