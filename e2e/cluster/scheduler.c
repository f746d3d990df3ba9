/* TEMPORARY local scheduler for testing; replaced by the real one. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "e2e/cluster/objects.h"
#include "e2e/cluster/sim.h"
#include "operator/kube/nodematch.h"
#include "operator/kube/resource.h"
#include "operator/kube/resources.h"

struct qs { struct fg_manager *m; struct fg_kube_client *c; struct fg_informer *pods, *nodes; pthread_t t; volatile bool stop; };

static json_object *lst(struct fg_informer *inf)
{
    struct fg_kobj_list l = { 0 };
    fg_store_list(fg_informer_store(inf), &l);
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < l.n; i++) { json_object *o = NULL; if (fg_kobj_parse(l.items[i], &o, NULL) == FG_OK) json_object_array_add(a, o); }
    fg_kobj_list_cleanup(&l);
    return a;
}

static void *run(void *ud)
{
    struct qs *q = ud;
    while (!q->stop) {
        json_object *pods = lst(q->pods), *nodes = lst(q->nodes);
        size_t nn = fg_json_array_len(nodes);
        struct fg_resources *used = fg_calloc(nn + 1, sizeof *used);
        for (size_t i = 0; i < fg_json_array_len(pods); i++) {
            json_object *p = json_object_array_get_idx(pods, i);
            const char *n = fg_json_get_str(p, "spec", "nodeName", NULL);
            if (!n || fg_sim_pod_finished(p)) continue;
            for (size_t j = 0; j < nn; j++) if (fg_str_eq(n, fg_json_get_str(json_object_array_get_idx(nodes, j), "metadata", "name", NULL))) {
                struct fg_resources r; if (fg_pod_requests(p, &r, NULL) == FG_OK) { fg_resources_sum(&used[j], &r); if (fg_resources_add(&used[j], "pods", 1000)) {} } }
        }
        for (size_t i = 0; i < fg_json_array_len(pods); i++) {
            json_object *p = json_object_array_get_idx(pods, i);
            const char *n = fg_json_get_str(p, "spec", "nodeName", NULL), *sn = fg_json_get_str(p, "spec", "schedulerName", NULL);
            if ((n && *n) || (sn && strcmp(sn, "default-scheduler")) || !fg_sim_pod_active(p)) continue;
            struct fg_resources r; if (fg_pod_requests(p, &r, NULL) != FG_OK) continue; if (fg_resources_add(&r, "pods", 1000)) {}
            size_t best = nn; int64_t best_free = -1; int insuff = 0, other = 0;
            for (size_t j = 0; j < nn; j++) {
                json_object *node = json_object_array_get_idx(nodes, j);
                if (json_object_get_boolean(fg_json_get(node, "spec", "unschedulable", NULL)) || !fg_node_matches_pod(p, node) ||
                    fg_untolerated_taint(fg_json_get(node, "spec", "taints", NULL), fg_json_get(p, "spec", "tolerations", NULL), false)) { other++; continue; }
                struct fg_resources alloc; if (fg_resources_from_json(fg_json_get(node, "status", "allocatable", NULL), &alloc, NULL)) continue;
                fg_resources_sub(&alloc, &used[j]);
                if (fg_resources_exceeds(&r, &alloc)) { insuff++; continue; }
                int64_t f = fg_resources_get(&alloc, "cpu"); if (f > best_free) { best_free = f; best = j; }
            }
            const char *ns = fg_json_get_str(p, "metadata", "namespace", NULL), *name = fg_json_get_str(p, "metadata", "name", NULL);
            if (best < nn) {
                const char *node = fg_json_get_str(json_object_array_get_idx(nodes, best), "metadata", "name", NULL);
                json_object *b = json_object_new_object(); fg_json_set_str(b, "apiVersion", "v1"); fg_json_set_str(b, "kind", "Binding");
                fg_json_set_str(fg_json_ensure_obj(b, "metadata"), "name", name);
                json_object *t = fg_json_ensure_obj(b, "target"); fg_json_set_str(t, "kind", "Node"); fg_json_set_str(t, "name", node);
                char *path = fg_kube_path(&fg_kube_pods, ns, name, "binding", NULL);
                if (fg_kube_create(q->c, path, b, NULL, NULL) == FG_OK) fg_resources_sum(&used[best], &r);
                free(path); json_object_put(b);
            } else if (!fg_sim_condition(p, "PodScheduled")) {
                char msg[256], now[FG_TIME_MAX]; fg_time_format(fg_clock_wall_ms(), now);
                snprintf(msg, sizeof msg, "0/%zu nodes are available: %d Insufficient cpu, %d node(s) didn't match Pod's node affinity/selector.", nn, insuff, other);
                json_object *st = json_object_new_object(), *conds = json_object_new_array(), *c = json_object_new_object();
                fg_json_set_str(c, "type", "PodScheduled"); fg_json_set_str(c, "status", "False"); fg_json_set_str(c, "reason", "Unschedulable");
                fg_json_set_str(c, "message", msg); fg_json_set_str(c, "lastTransitionTime", now); json_object_array_add(conds, c);
                json_object_object_add(st, "conditions", conds);
                if (fg_sim_patch_status(q->c, &fg_kube_pods, p, st)) {}
                json_object_put(st);
            }
        }
        free(used); json_object_put(pods); json_object_put(nodes);
        nanosleep(&(struct timespec){ 0, 200000000 }, NULL);
    }
    return NULL;
}
static enum fg_err start(void *ud, char *e) { (void)e; struct qs *q = ud; q->stop = false; pthread_create(&q->t, NULL, run, q); return FG_OK; }
static void stop(void *ud) { struct qs *q = ud; q->stop = true; pthread_join(q->t, NULL); }

enum fg_err fg_sim_scheduler_setup(struct fg_manager *m, const struct fg_sim_config *cfg, char *errmsg)
{
    (void)cfg;
    struct qs *q = fg_calloc(1, sizeof *q); q->m = m; q->c = fg_manager_client(m);
    fg_manager_on_free(m, free, q);
    struct fg_informer_factory *f = fg_manager_informers(m);
    enum fg_err err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_pods }, &q->pods, errmsg);
    if (!err) err = fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_nodes }, &q->nodes, errmsg);
    if (!err) err = fg_manager_add_runnable(m, &(struct fg_runnable){ .name = "qs", .leader_only = true, .start = start, .stop = stop, .ud = q });
    return err;
}
