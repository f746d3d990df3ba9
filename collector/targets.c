/* targets — the node agents to scrape, from the pod cache; see targets.h. */
#include "collector/targets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/mem.h"
#include "operator/kube/selector.h"

size_t fg_collector_agent_index(void *ud, json_object *pod, const char **values, size_t max)
{
    if (!max || !fg_selector_match_labels(ud, pod))
        return 0;
    values[0] = "agent";
    return 1;
}

/* An IPv4 or IPv6 address as the kubelet writes it: nothing that could change the URL's meaning. */
static bool plausible_ip(const char *ip)
{
    size_t n = strlen(ip);
    return n > 0 && n < 46 && strspn(ip, "0123456789abcdefABCDEF.:") == n;
}

static unsigned metrics_port(json_object *pod, unsigned default_port)
{
    json_object *containers = fg_json_get(pod, "spec", "containers", NULL);
    for (size_t i = 0; i < fg_json_array_len(containers); i++) {
        json_object *ports = fg_json_get(json_object_array_get_idx(containers, i), "ports", NULL);
        for (size_t k = 0; k < fg_json_array_len(ports); k++) {
            json_object *p = json_object_array_get_idx(ports, k);
            const char *name = fg_json_get_str(p, "name", NULL);
            int64_t port = json_object_get_int64(fg_json_get(p, "containerPort", NULL));
            if (name && !strcmp(name, "metrics") && port > 0 && port < 65536)
                return (unsigned)port;
        }
    }
    return default_port;
}

bool fg_target_of_pod(json_object *pod, unsigned default_port, struct fg_target *out)
{
    const char *ns = fg_json_get_str(pod, "metadata", "namespace", NULL);
    const char *name = fg_json_get_str(pod, "metadata", "name", NULL);
    const char *phase = fg_json_get_str(pod, "status", "phase", NULL);
    const char *ip = fg_json_get_str(pod, "status", "podIP", NULL);
    const char *node = fg_json_get_str(pod, "spec", "nodeName", NULL);
    if (!ns || !name || !phase || strcmp(phase, "Running") || !ip || !plausible_ip(ip) || !node || !*node ||
        strlen(node) >= sizeof(out->node) || fg_json_get(pod, "metadata", "deletionTimestamp", NULL))
        return false;
    snprintf(out->key, sizeof(out->key), "%s/%s", ns, name);
    snprintf(out->node, sizeof(out->node), "%s", node);
    bool v6 = strchr(ip, ':') != NULL;
    snprintf(out->url, sizeof(out->url), "http://%s%s%s:%u/metrics", v6 ? "[" : "", ip, v6 ? "]" : "",
             metrics_port(pod, default_port));
    return true;
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const struct fg_target *)a)->key, ((const struct fg_target *)b)->key);
}

size_t fg_targets_list(struct fg_store *pods, unsigned default_port, struct fg_target **out)
{
    struct fg_kobj_list l = { 0 };
    *out = NULL;
    if (fg_store_by_index(pods, FG_COLLECTOR_AGENT_INDEX, "agent", &l) != FG_OK || !l.n) {
        fg_kobj_list_cleanup(&l);
        return 0;
    }
    struct fg_target *t = fg_calloc(l.n, sizeof(*t));
    size_t n = 0;
    for (size_t i = 0; i < l.n; i++) {
        json_object *pod = NULL;
        if (fg_kobj_parse(l.items[i], &pod, NULL) == FG_OK && fg_target_of_pod(pod, default_port, &t[n]))
            n++;
        json_object_put(pod);
    }
    fg_kobj_list_cleanup(&l);
    qsort(t, n, sizeof(*t), by_key);
    *out = t;
    return n;
}
