/*
 * kubelet — the kubelets component: its informers (the simulated cloud's instances, every pod bound
 * to a node), the pod controller (kubelet_pods.c) and the ticker thread that boots and heartbeats
 * nodes (kubelet_nodes.c), reaps pod processes and writes the GPU nodes' files (kubelet_gpus.c)
 * every TICK. See kubelet.h.
 *
 * Stopping the component stops the ticker and the pod workers but leaves the pods' processes
 * running, as containers outlive a kubelet restart; the next run adopts them through their pid
 * files, and the supervisor kills any left when the whole cluster stops.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "e2e/cluster/kubelet.h"
#include "e2e/cluster/selfpath.h"
#include "e2e/cluster/sim.h"
#include "operator/kube/resource.h"
#include "operator/manager/periodic.h"

#define TICK_NS (100 * FG_NS_PER_MS)
#define POD_WORKERS 8

static void instances_changed(void *ud, struct fg_kobj *obj)
{
    (void)obj;
    struct fg_sim_kubelets *k = ud;
    atomic_store(&k->instances_changed, true);
}

static void instances_updated(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    (void)old;
    instances_changed(ud, obj);
}

static const struct fg_resource_handler instance_handler = { instances_changed, instances_updated, instances_changed };

/* The watch (spec.nodeName set) adds a pod once it is bound: the order of arrival, in which a kubelet
 * admits them (kubelet_pods.c). The pods of the first list, when the kubelets start, come as one
 * batch, which a kubelet admits by creation time (kube's PodsByCreationTime; the list's order, by
 * name, among pods of the same second), all before any pod that arrives later. */
static void pod_arrived(void *ud, struct fg_kobj *obj)
{
    struct fg_sim_kubelets *k = ud;
    bool first_list = !fg_informer_has_synced(k->pods);
    int64_t created_ms = 0;
    json_object *pod = NULL;
    if (first_list && fg_kobj_parse(obj, &pod, NULL) == FG_OK)
        fg_time_parse(fg_json_get_str(pod, "metadata", "creationTimestamp", NULL), &created_ms);
    json_object_put(pod);
    pthread_mutex_lock(&k->mu);
    if (!lh_table_lookup_entry(k->arrivals, fg_kobj_key(obj))) {
        uint64_t *seq = fg_malloc(sizeof *seq);
        ++k->next_arrival;
        *seq = first_list ? (uint64_t)(created_ms / 1000) << 24 | (k->next_arrival & 0xffffff)
                          : (1ull << 62) + k->next_arrival;
        lh_table_insert(k->arrivals, fg_strdup(fg_kobj_key(obj)), seq);
    }
    pthread_mutex_unlock(&k->mu);
}

static void pod_updated(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    (void)ud;
    (void)old;
    (void)obj;
}

static void pod_left(void *ud, struct fg_kobj *obj)
{
    struct fg_sim_kubelets *k = ud;
    pthread_mutex_lock(&k->mu);
    struct lh_entry *e = lh_table_lookup_entry(k->arrivals, fg_kobj_key(obj));
    if (e) {
        char *key = (char *)lh_entry_k(e);
        free(lh_entry_v(e));
        lh_table_delete_entry(k->arrivals, e);
        free(key);
    }
    pthread_mutex_unlock(&k->mu);
}

static const struct fg_resource_handler arrival_handler = { pod_arrived, pod_updated, pod_left };

static void tick(void *ud)
{
    struct fg_sim_kubelets *k = ud;
    fg_sim_nodes_tick(k);
    fg_sim_pods_tick(k);
    fg_sim_gpus_tick(k);
}

static void kubelets_free(void *ud)
{
    struct fg_sim_kubelets *k = ud;
    for (size_t i = 0; i < k->npods; i++) {
        fg_sim_grants_free(k->pods_v[i]);
        free(k->pods_v[i]);
    }
    free(k->pods_v);
    lh_table_free(k->pod_index);
    struct lh_entry *e;
    lh_foreach(k->arrivals, e) {
        free((char *)lh_entry_k(e));
        free(lh_entry_v(e));
    }
    lh_table_free(k->arrivals);
    for (size_t i = 0; i < k->nnodes; i++) {
        fg_sim_fracgpu_free(k, k->nodes[i], false);   /* the manager's loop is stopped by now */
        fg_sim_node_free(k->nodes[i]);
    }
    fg_sim_fracgpu_cleanup();
    free(k->nodes);
    fg_sim_trace_source_cleanup(&k->traces);
    pthread_mutex_destroy(&k->mu);
    free(k);
}

/* Where the pods' kubeconfigs point: the kubelets' own server, CA (written to a file) and token. */
static enum fg_err credentials(struct fg_sim_kubelets *k, char *errmsg)
{
    const struct fg_kube_config *kc = fg_manager_config(k->m);
    snprintf(k->server, sizeof k->server, "%s", kc->server);
    if (kc->token && strlen(kc->token) >= sizeof k->token)
        return fg_errmsg(errmsg, FG_E_INVAL, "the cluster's token is too long for the pods' kubeconfigs");
    snprintf(k->token, sizeof k->token, "%s", kc->token ? kc->token : "");
    if (!kc->ca_pem)
        return FG_OK;
    snprintf(k->ca_pem_path, sizeof k->ca_pem_path, "%s/apiserver-ca.pem", k->dir);
    FILE *f = fopen(k->ca_pem_path, "w");
    if (!f || fputs(kc->ca_pem, f) < 0 || fclose(f))
        return fg_errmsg(errmsg, FG_E_IO, "cannot write %s", k->ca_pem_path);
    return FG_OK;
}

enum fg_err fg_sim_kubelets_setup(struct fg_manager *m, const struct fg_sim_config *cfg, const char *dir, char *errmsg)
{
    struct fg_sim_kubelets *k = fg_calloc(1, sizeof *k);
    k->m = m;
    k->cfg = cfg;
    k->client = fg_manager_client(m);
    pthread_mutex_init(&k->mu, NULL);
    k->pod_index = lh_kchar_table_new(1024, NULL);
    k->arrivals = lh_kchar_table_new(1024, NULL);
    char traces[PATH_MAX];
    if (cfg->usage.trace_dir[0])
        snprintf(traces, sizeof traces, "%s", cfg->usage.trace_dir);
    else
        fg_sim_self_path(traces, sizeof traces, "../data/alibaba-genai-2026-gpu-util");
    fg_sim_trace_source_init(&k->traces, traces);
    fg_manager_on_free(m, kubelets_free, k);
    char real[PATH_MAX];
    if (!realpath(dir, real) || strlen(real) >= sizeof k->dir)
        return fg_errmsg(errmsg, FG_E_IO, "cannot use %s as the working directory (missing, or longer than %d bytes)",
                         dir, FG_SIM_DIR_MAX - 1);
    memcpy(k->dir, real, strlen(real) + 1);
    fg_sim_self_path(k->lib_dir, sizeof k->lib_dir, "../lib");
    enum fg_err err = credentials(k, errmsg);
    if (err)
        return err;
    struct rlimit files;   /* a descriptor per node holds its network (kubelet_nodes.c) */
    if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        setrlimit(RLIMIT_NOFILE, &files);
    }

    struct fg_informer_factory *f = fg_manager_informers(m);
    if ((err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_configmaps,
                                                                      .ns = FG_SIM_CLOUD_NAMESPACE,
                                                                      .label_selector = FG_SIM_CLOUD_SELECTOR },
                                       &k->instances, errmsg)) ||
        (err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_pods,
                                                                      .field_selector = "spec.nodeName!=" },
                                       &k->pods, errmsg)))
        return err;
    if ((err = fg_informer_factory_index(f, k->pods, FG_SIM_INDEX_NODE, fg_index_by_node_name, NULL)))
        return fg_errmsg(errmsg, err, "cannot index the pods by node");
    atomic_store(&k->instances_changed, true);
    if ((err = fg_informer_add_handler(k->instances, &instance_handler, k)))
        return fg_errmsg(errmsg, err, "cannot watch the instances");
    if ((err = fg_informer_add_handler(k->pods, &arrival_handler, k)))
        return fg_errmsg(errmsg, err, "cannot watch the pods");
    struct fg_controller_spec spec = { .name = "kubelet-pods", .kind = "Pod", .workers = POD_WORKERS,
                                       .reconcile = fg_sim_pod_reconcile, .ud = k, .primary = k->pods };
    if ((err = fg_manager_controller(m, &spec, &k->pod_ctl, errmsg)))
        return err;
    return fg_manager_add_periodic(m, &(struct fg_periodic){ .name = "kubelet-ticker", .leader_only = true,
                                                              .period_ns = TICK_NS, .run = tick, .ud = k },
                                   errmsg);
}
