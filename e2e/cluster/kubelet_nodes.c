/*
 * kubelet_nodes — a node per instance of the simulated cloud: booted after the instance's
 * provisioning delay, registered, kept alive, and retired when the instance goes. See kubelet.h.
 *
 * Registration creates the Node with the group's capacity (allocatable equal to it), its labels and
 * taints, the well-known labels (kubernetes.io/hostname, os, arch, node.kubernetes.io/instance-type,
 * sim.fracgpu.io/node-group), its addresses, node info and the four conditions with Ready True; a
 * Node already there (a kubelet restarted) is kept and its status refreshed. Its Lease in
 * kube-node-lease, owned by the Node, is renewed every leaseInterval and the status heartbeat sent
 * every statusInterval. A node with GPUs has them from its boot, registered with the NVIDIA device
 * plugin (kubelet_nvidia.c), and with gpuState files gets the NVIDIA driver's user-space library
 * in its host directory (the fake NVML, answering for the group's model and memory) for containers
 * the NVIDIA runtime would give it to. Each node runs one of three container runtimes
 * (runtime.h), which its nodeInfo names. Retiring kills the node's pods and deletes its Lease and
 * Node; the pod garbage collector then deletes pods still bound to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "e2e/cluster/kubelet.h"
#include "e2e/cluster/objects.h"
#include "operator/kube/resource.h"

#define COMPONENT "kubelet"
#define LEASE_NAMESPACE "kube-node-lease"
#define LEASE_SECONDS 40
#define NET_CLAIMS "/tmp/fracgpu-sim-net"
#define MAX_NETS (254u * 256u)   /* 127.1.0.0/24 to 127.254.255.0/24 */

struct fg_sim_node *fg_sim_node_find(struct fg_sim_kubelets *k, const char *name)
{
    for (size_t i = 0; i < k->nnodes; i++)
        if (!strcmp(k->nodes[i]->name, name))
            return k->nodes[i];
    return NULL;
}

bool fg_sim_node_take_ip(struct fg_sim_node *n, char ip[16])
{
    for (unsigned i = 2; i < 255; i++) {
        if (!n->ip_used[i]) {
            n->ip_used[i] = true;
            snprintf(ip, 16, "127.%hhu.%hhu.%hhu", (unsigned char)(1 + n->net / 256), (unsigned char)(n->net % 256),
                     (unsigned char)i);
            return true;
        }
    }
    return false;
}

void fg_sim_node_free(struct fg_sim_node *n)
{
    close(n->claim_fd);
    fg_sim_devices_cleanup(&n->devices);
    fg_sim_gpus_node_free(n);
    free(n);
}

void fg_sim_node_release_ip(struct fg_sim_node *n, const char *ip)
{
    unsigned a, b, c, d;
    if (ip && sscanf(ip, "%u.%u.%u.%u", &a, &b, &c, &d) == 4 && d < 256)
        n->ip_used[d] = false;
}

/* Locks network number net machine-wide: the lock file /tmp/fracgpu-sim-net/<net>, held with
 * flock for as long as the node lives (so a process that dies releases it, and a restarted kubelet
 * takes its nodes' numbers back); close-on-exec, so pods' processes never hold it. -1 when another
 * holds it. */
static int claim_net(unsigned net)
{
    char path[64];
    mkdir(NET_CLAIMS, 0777);
    snprintf(path, sizeof path, NET_CLAIMS "/%u", net);
    int fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0666);
    if (fd < 0)
        return -1;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The node's network number (its pods' addresses are 127.X.Y.*, X = 1 + net / 256, Y = net % 256):
 * the one it had before (its file), else the next no node of any simulated cluster on this machine
 * holds. False when every number is taken. */
static bool node_net(struct fg_sim_kubelets *k, struct fg_sim_node *n)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%.1279s/net", n->root);
    unsigned net = 0;
    FILE *f = fopen(path, "r");
    bool known = f && fscanf(f, "%u", &net) == 1 && net < MAX_NETS;
    if (f)
        fclose(f);
    if (known && (n->claim_fd = claim_net(net)) >= 0) {
        n->net = net;
        return true;
    }
    for (unsigned tries = 0; tries < MAX_NETS; tries++) {
        net = k->next_net++ % MAX_NETS;
        if ((n->claim_fd = claim_net(net)) < 0)
            continue;
        n->net = net;
        f = fopen(path, "w");
        if (f) {
            fprintf(f, "%u\n", net);
            fclose(f);
        }
        return true;
    }
    return false;
}

/* A node condition that changed when the node registered (since), heard of now. */
static json_object *condition(const char *type, const char *status, const char *reason, const char *message,
                              const char *now, const char *since)
{
    json_object *c = fg_sim_condition_new(NULL, type, status, reason, message, since);
    fg_json_set_str(c, "lastHeartbeatTime", now);
    return c;
}

static json_object *node_status(struct fg_sim_node *n, const char *now)
{
    json_object *st = json_object_new_object();
    json_object_object_add(st, "capacity", fg_resources_to_json(&n->capacity));
    json_object_object_add(st, "allocatable", fg_resources_to_json(&n->capacity));
    json_object *conds = json_object_new_array();
    json_object_array_add(conds, condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                                           "kubelet has sufficient memory available", now, n->since));
    json_object_array_add(conds, condition("DiskPressure", "False", "KubeletHasNoDiskPressure",
                                           "kubelet has no disk pressure", now, n->since));
    json_object_array_add(conds, condition("PIDPressure", "False", "KubeletHasSufficientPID",
                                           "kubelet has sufficient PID available", now, n->since));
    json_object_array_add(conds, condition("Ready", "True", "KubeletReady", "kubelet is posting ready status", now, n->since));
    json_object_object_add(st, "conditions", conds);
    json_object *addrs = json_object_new_array(), *a = json_object_new_object();
    fg_json_set_str(a, "type", "InternalIP");
    fg_json_set_str(a, "address", n->ip);
    json_object_array_add(addrs, a);
    a = json_object_new_object();
    fg_json_set_str(a, "type", "Hostname");
    fg_json_set_str(a, "address", n->name);
    json_object_array_add(addrs, a);
    json_object_object_add(st, "addresses", addrs);
    json_object *info = json_object_new_object();
    fg_json_set_str(info, "kubeletVersion", "v1.32.5");
    fg_json_set_str(info, "kubeProxyVersion", "v1.32.5");
    fg_json_set_str(info, "containerRuntimeVersion", fg_sim_runtime_version(n->runtime));
    fg_json_set_str(info, "operatingSystem", "linux");
    fg_json_set_str(info, "architecture", "amd64");
    fg_json_set_str(info, "osImage", "fracgpu simulated node");
    fg_json_set_str(info, "kernelVersion", "6.1.0");
    fg_json_set_str(info, "machineID", n->name);
    fg_json_set_str(info, "systemUUID", n->name);
    fg_json_set_str(info, "bootID", n->name);
    json_object_object_add(st, "nodeInfo", info);
    return st;
}

static json_object *node_object(struct fg_sim_node *n, const char *now)
{
    json_object *node = json_object_new_object();
    fg_json_set_str(node, "apiVersion", "v1");
    fg_json_set_str(node, "kind", "Node");
    json_object *meta = fg_json_ensure_obj(node, "metadata");
    fg_json_set_str(meta, "name", n->name);
    json_object_object_add(meta, "labels", fg_sim_cloud_node_labels(n->group, n->name));
    json_object *ann = fg_json_ensure_obj(meta, "annotations");
    fg_json_set_str(ann, "node.alpha.kubernetes.io/ttl", "0");
    fg_json_set_str(ann, "volumes.kubernetes.io/controller-managed-attach-detach", "true");
    json_object *spec = fg_json_ensure_obj(node, "spec");
    if (json_object_array_length(n->group->taints))
        json_object_object_add(spec, "taints", json_object_get(n->group->taints));
    json_object_object_add(node, "status", node_status(n, now));
    return node;
}

static enum fg_err patch_node_status(struct fg_sim_kubelets *k, struct fg_sim_node *n, const char *now)
{
    json_object *patch = json_object_new_object();
    json_object_object_add(patch, "status", node_status(n, now));
    char *path = fg_kube_path(&fg_kube_nodes, NULL, n->name, "status", NULL);
    enum fg_err err = fg_kube_patch(k->client, path, FG_KUBE_PATCH_MERGE, json_object_to_json_string(patch), NULL, NULL);
    free(path);
    json_object_put(patch);
    return err;
}

static enum fg_err renew_lease(struct fg_sim_kubelets *k, struct fg_sim_node *n)
{
    char now[FG_TIME_MAX];
    fg_time_format_micro(fg_clock_wall_ms(), now);
    json_object *patch = json_object_new_object();
    fg_json_set_str(fg_json_ensure_obj(patch, "spec"), "renewTime", now);
    char *path = fg_kube_path(&fg_kube_leases, LEASE_NAMESPACE, n->name, NULL, NULL);
    enum fg_err err = fg_kube_patch(k->client, path, FG_KUBE_PATCH_MERGE, json_object_to_json_string(patch), NULL, NULL);
    free(path);
    json_object_put(patch);
    if (err != FG_E_KUBE_NOT_FOUND)
        return err;
    json_object *lease = json_object_new_object();   /* first renewal, or someone deleted it */
    fg_json_set_str(lease, "apiVersion", "coordination.k8s.io/v1");
    fg_json_set_str(lease, "kind", "Lease");
    json_object *meta = fg_json_ensure_obj(lease, "metadata");
    fg_json_set_str(meta, "name", n->name);
    fg_json_set_str(meta, "namespace", LEASE_NAMESPACE);
    json_object *refs = json_object_new_array(), *ref = json_object_new_object();
    fg_json_set_str(ref, "apiVersion", "v1");
    fg_json_set_str(ref, "kind", "Node");
    fg_json_set_str(ref, "name", n->name);
    fg_json_set_str(ref, "uid", n->uid);
    json_object_array_add(refs, ref);
    json_object_object_add(meta, "ownerReferences", refs);
    json_object *spec = fg_json_ensure_obj(lease, "spec");
    fg_json_set_str(spec, "holderIdentity", n->name);
    json_object_object_add(spec, "leaseDurationSeconds", json_object_new_int(LEASE_SECONDS));
    fg_json_set_str(spec, "renewTime", now);
    path = fg_kube_path(&fg_kube_leases, LEASE_NAMESPACE, NULL, NULL, NULL);
    err = fg_kube_create(k->client, path, lease, NULL, NULL);
    free(path);
    json_object_put(lease);
    return err;
}

/* Creates the Node, or takes over the one a previous run of this kubelet left. */
static enum fg_err register_node(struct fg_sim_kubelets *k, struct fg_sim_node *n)
{
    char now[FG_TIME_MAX];
    fg_time_format(fg_clock_wall_ms(), now);
    snprintf(n->since, sizeof n->since, "%s", now);
    json_object *node = node_object(n, now), *created = NULL;
    char *path = fg_kube_path(&fg_kube_nodes, NULL, NULL, NULL, NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_create(k->client, path, node, &created, &st);
    free(path);
    if (err == FG_E_KUBE_ALREADY_EXISTS) {
        path = fg_kube_path(&fg_kube_nodes, NULL, n->name, NULL, NULL);
        err = fg_kube_get(k->client, path, &created, NULL);
        free(path);
    }
    if (!err) {
        const char *uid = fg_json_get_str(created, "metadata", "uid", NULL);
        snprintf(n->uid, sizeof n->uid, "%s", uid ? uid : "");
        err = patch_node_status(k, n, now);   /* a create may not keep the status it was given */
    }
    if (err)
        fg_log(FG_LOG_WARN, COMPONENT, "node %s: cannot register: %s", n->name, st.message ? st.message : fg_err_str(err));
    else
        fg_log(FG_LOG_INFO, COMPONENT, "node %s registered (%s, %s)", n->name, n->group->name, n->ip);
    fg_kube_status_cleanup(&st);
    json_object_put(created);
    json_object_put(node);
    return err;
}

static void retire(struct fg_sim_kubelets *k, const char *name)
{
    char *path = fg_kube_path(&fg_kube_leases, LEASE_NAMESPACE, name, NULL, NULL);
    enum fg_err lease_err = fg_kube_delete(k->client, path, NULL, NULL, NULL);
    (void)lease_err;   /* best effort: kube's garbage collector would take a lease left behind (it is
                          owned by its Node); this one does not watch Leases */
    free(path);
    path = fg_kube_path(&fg_kube_nodes, NULL, name, NULL, NULL);
    enum fg_err err = fg_kube_delete(k->client, path, NULL, NULL, NULL);
    free(path);
    fg_log(FG_LOG_INFO, COMPONENT, "node %s: instance terminated, node %s", name,
           err && err != FG_E_KUBE_NOT_FOUND ? "not deleted" : "deleted");
}

/* The Nodes of the cloud's node groups whose instance is gone: terminated while the kubelets were
 * down, nobody retired them (kube's cloud node lifecycle controller deletes such Nodes). */
struct orphans {
    json_object **instances;
    size_t ninst;
    char **names;
    size_t n;
};

static void note_orphan(void *ud, json_object *node)
{
    struct orphans *o = ud;
    const char *name = fg_json_get_str(node, "metadata", "name", NULL);
    for (size_t i = 0; name && i < o->ninst; i++)
        if (fg_str_eq(fg_sim_cloud_node(o->instances[i]), name))
            return;
    if (name) {
        o->names = fg_realloc(o->names, (o->n + 1) * sizeof *o->names);
        o->names[o->n++] = fg_strdup(name);
    }
}

static void retire_orphans(struct fg_sim_kubelets *k, json_object **instances, size_t ninst)
{
    struct orphans o = { instances, ninst, NULL, 0 };
    struct fg_kube_list_opts opts = { .label_selector = FG_SIM_LABEL_GROUP };
    enum fg_err err = fg_kube_list(k->client, &fg_kube_nodes, NULL, &opts, note_orphan, &o, NULL, NULL);
    k->orphans_retired = err == FG_OK;   /* else tried again at the next change of the instances */
    for (size_t i = 0; i < o.n; i++) {
        if (err == FG_OK)
            retire(k, o.names[i]);
        free(o.names[i]);
    }
    free(o.names);
}

/* Pods bound to a node before it registered waited for it: each gets its reconcile now. */
static void wake_pods_of(struct fg_sim_kubelets *k, const char *node)
{
    struct fg_kobj_list l = { 0 };
    if (fg_store_by_index(fg_informer_store(k->pods), FG_SIM_INDEX_NODE, node, &l) == FG_OK)
        for (size_t i = 0; i < l.n; i++)
            fg_manager_controller_enqueue(k->pod_ctl, fg_kobj_key(l.items[i]));
    fg_kobj_list_cleanup(&l);
}

/* Adds a node for every instance not known yet. mu held. */
static void discover(struct fg_sim_kubelets *k, json_object *instance)
{
    const char *name = fg_sim_cloud_node(instance), *group_name = fg_sim_cloud_group(instance);
    if (!name || fg_sim_node_find(k, name))
        return;
    const struct fg_sim_group *g = fg_sim_config_group(k->cfg, group_name);
    if (!g) {
        fg_log(FG_LOG_WARN, COMPONENT, "instance %s: no node group \"%s\" in the configuration", name,
               group_name ? group_name : "");
        return;
    }
    struct fg_sim_node *n = fg_calloc(1, sizeof *n);
    snprintf(n->name, sizeof n->name, "%s", name);
    n->group = g;
    fg_resources_sum(&n->capacity, &g->capacity);
    snprintf(n->root, sizeof n->root, "%.1023s/nodes/%.95s", k->dir, name);
    static const char *const dirs[] = { "proc", "pods", "var/lib/kubelet/device-plugins", "var/lib/kubelet/pod-resources" };
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char d[PATH_MAX + 64];
        snprintf(d, sizeof d, "%s/%s", n->root, dirs[i]);
        fg_mkdir_p(d);
    }
    if (!node_net(k, n)) {
        fg_log(FG_LOG_ERROR, COMPONENT, "instance %s: every loopback network of this machine is taken", name);
        free(n);
        return;
    }
    snprintf(n->ip, sizeof n->ip, "127.%hhu.%hhu.1", (unsigned char)(1 + n->net / 256), (unsigned char)(n->net % 256));
    n->runtime = fg_sim_runtime_of(name);
    fg_sim_nvidia_boot(k, n);
    int64_t created = 0, now = fg_clock_wall_ms();
    fg_time_parse(fg_json_get_str(instance, "metadata", "creationTimestamp", NULL), &created);
    int64_t wait_ms = created + (int64_t)(k->cfg->autoscale.provision_ns / FG_NS_PER_MS) - now;
    n->boot_at_ns = fg_clock_mono_ns() + (wait_ms > 0 ? (uint64_t)wait_ms * FG_NS_PER_MS : 0);
    k->nodes = fg_realloc(k->nodes, (k->nnodes + 1) * sizeof *k->nodes);
    k->nodes[k->nnodes++] = n;
}

void fg_sim_nodes_tick(struct fg_sim_kubelets *k)
{
    struct fg_kobj_list l = { 0 };
    bool changed = fg_informer_has_synced(k->instances) && atomic_exchange(&k->instances_changed, false);
    if (changed)
        fg_store_list(fg_informer_store(k->instances), &l);
    json_object **instances = fg_calloc(l.n ? l.n : 1, sizeof *instances);
    size_t ninst = 0;
    for (size_t i = 0; i < l.n; i++)
        if (fg_kobj_parse(l.items[i], &instances[ninst], NULL) == FG_OK)
            ninst++;
    fg_kobj_list_cleanup(&l);

    pthread_mutex_lock(&k->mu);
    if (changed) {
        for (size_t i = 0; i < ninst; i++)
            discover(k, instances[i]);
        for (size_t i = 0; i < k->nnodes; i++) {
            bool present = false;
            for (size_t j = 0; j < ninst && !present; j++)
                present = fg_str_eq(fg_sim_cloud_node(instances[j]), k->nodes[i]->name);
            k->nodes[i]->gone = !present;
        }
    }
    size_t n = k->nnodes;
    struct fg_sim_node **nodes = fg_calloc(n ? n : 1, sizeof *nodes);
    memcpy(nodes, k->nodes, n * sizeof *nodes);
    pthread_mutex_unlock(&k->mu);
    if (changed && !k->orphans_retired)
        retire_orphans(k, instances, ninst);
    for (size_t i = 0; i < ninst; i++)
        json_object_put(instances[i]);
    free(instances);

    uint64_t now = fg_clock_mono_ns();
    for (size_t i = 0; i < n; i++) {   /* nodes are freed only here, on this thread */
        struct fg_sim_node *node = nodes[i];
        if (node->gone) {
            pthread_mutex_lock(&k->mu);
            fg_sim_pods_kill_all(k, node);
            for (size_t j = 0; j < k->nnodes; j++)
                if (k->nodes[j] == node)
                    k->nodes[j] = k->nodes[--k->nnodes];
            pthread_mutex_unlock(&k->mu);
            if (node->registered)
                retire(k, node->name);
            fg_sim_fracgpu_free(k, node, true);
            fg_sim_node_free(node);
            continue;
        }
        if (!node->registered && now >= node->boot_at_ns) {
            fg_sim_nvidia_install(k, node);
            fg_sim_fracgpu_boot(k, node);
            if (register_node(k, node) == FG_OK) {
                pthread_mutex_lock(&k->mu);
                node->registered = true;
                pthread_mutex_unlock(&k->mu);
                wake_pods_of(k, node->name);
                node->next_lease_ns = now;
                node->next_status_ns = now + k->cfg->kubelet.status_ns;
            }
        }
        if (node->registered && now >= node->next_lease_ns) {
            if (renew_lease(k, node) == FG_OK)
                node->next_lease_ns = now + k->cfg->kubelet.lease_ns;
        }
        if (node->registered && fg_sim_fracgpu_tick(k, node))
            node->next_status_ns = now;   /* a device plugin's resource changed: report it */
        if (node->registered && now >= node->next_status_ns) {
            char stamp[FG_TIME_MAX];
            fg_time_format(fg_clock_wall_ms(), stamp);
            if (patch_node_status(k, node, stamp) == FG_OK)
                node->next_status_ns = now + k->cfg->kubelet.status_ns;
        }
    }
    free(nodes);
}
