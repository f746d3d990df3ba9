/*
 * Tests of the simulated kubelet's device manager and the NVIDIA device plugin, on nodes and pods
 * built here (no API server): free GPUs given at admission, each to one pod, freed when it goes;
 * kube's refusal when too few are free, with nothing kept; init containers' devices reused by the
 * containers after them; the plugins' answers (NVIDIA_VISIBLE_DEVICES) and a plugin's refusal;
 * a resource without a plugin admitted on capacity; the grant in a container's status rebuilding
 * it in a kubelet started afresh (a device whose plugin has not registered again kept held); the
 * PodResources listing; and which GPUs NVIDIA_VISIBLE_DEVICES
 * shows a container.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/kubelet.h"

static struct fg_sim_config cfg;
static struct fg_sim_group group;
static struct fg_sim_kubelets k;

static int setup(void **state)
{
    (void)state;
    fg_sim_config_default(&cfg);
    k.cfg = &cfg;
    pthread_mutex_init(&k.mu, NULL);
    snprintf(group.name, sizeof group.name, "gpu");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    pthread_mutex_destroy(&k.mu);
    fg_sim_config_cleanup(&cfg);
    return 0;
}

static struct fg_sim_node *node_new(const char *name, unsigned gpus)
{
    struct fg_sim_node *n = fg_calloc(1, sizeof *n);
    snprintf(n->name, sizeof n->name, "%s", name);
    group.gpus = gpus;
    n->group = &group;
    fg_sim_nvidia_boot(&k, n);
    return n;
}

static void node_free(struct fg_sim_node *n)
{
    fg_sim_devices_cleanup(&n->devices);
    free(n);
}

/* A pod "default/<name>" with uid, its spec given as JSON text (containers, initContainers). */
static json_object *pod_json(const char *name, const char *uid, const char *spec)
{
    char text[4096];
    snprintf(text, sizeof text, "{\"metadata\":{\"namespace\":\"default\",\"name\":\"%s\",\"uid\":\"%s\"},\"spec\":%s}",
             name, uid, spec);
    json_object *pod = NULL;
    assert_int_equal(fg_json_parse(text, strlen(text), 0, &pod, NULL), FG_OK);
    return pod;
}

static struct fg_sim_pod *pod_on(struct fg_sim_node *n, json_object *pod)
{
    struct fg_sim_pod *p = fg_calloc(1, sizeof *p);
    snprintf(p->key, sizeof p->key, "default/%s", fg_json_get_str(pod, "metadata", "name", NULL));
    snprintf(p->uid, sizeof p->uid, "%s", fg_json_get_str(pod, "metadata", "uid", NULL));
    p->node = n;
    fg_sim_containers_set_up(&k, p, pod);
    return p;
}

static void pod_free(struct fg_sim_pod *p)
{
    fg_sim_grants_free(p);
    free(p);
}

static size_t held_by(struct fg_sim_node *n, const char *uid)
{
    struct fg_sim_device_resource *r = fg_sim_devices_find(&n->devices, FG_RES_NVIDIA_GPU);
    size_t held = 0;
    for (size_t i = 0; i < r->n; i++)
        held += !strcmp(r->v[i].holder, uid);
    return held;
}

#define ONE_GPU "{\"containers\":[{\"name\":\"main\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}"

static void test_reserve_and_free(void **state)
{
    (void)state;
    struct fg_sim_node *n = node_new("gpu-a", 4);
    json_object *j1 = pod_json("one", "uid-1", ONE_GPU);
    json_object *j2 = pod_json("two", "uid-2", "{\"containers\":["
                               "{\"name\":\"a\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}},"
                               "{\"name\":\"b\",\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"2\"}}}]}");
    json_object *j3 = pod_json("three", "uid-3", "{\"containers\":[{\"name\":\"main\",\"resources\":{\"limits\":"
                               "{\"nvidia.com/gpu\":2,\"cpu\":\"1\"}}}]}");
    struct fg_sim_pod *p1 = pod_on(n, j1), *p2 = pod_on(n, j2), *p3 = pod_on(n, j3);
    assert_true(fg_sim_devices_reserve(n, p1, j1));
    assert_true(fg_sim_devices_reserve(n, p2, j2));
    assert_int_equal(p1->ngrants, 1);
    assert_int_equal(p2->ngrants, 2);
    assert_int_equal(p2->grants[1].container, 1);
    assert_int_equal(p2->grants[1].nids, 2);
    /* four distinct GPUs, in the plugin's order */
    assert_string_equal(p1->grants[0].ids[0], n->gpu_uuid[0]);
    assert_string_equal(p2->grants[0].ids[0], n->gpu_uuid[1]);
    assert_string_equal(p2->grants[1].ids[0], n->gpu_uuid[2]);
    assert_string_equal(p2->grants[1].ids[1], n->gpu_uuid[3]);
    /* none left: kube's refusal, nothing kept */
    assert_false(fg_sim_devices_reserve(n, p3, j3));
    assert_string_equal(p3->reject_reason, "UnexpectedAdmissionError");
    assert_string_equal(p3->reject_message, "Allocate failed due to requested number of devices unavailable for "
                                            "nvidia.com/gpu. Requested: 2, Available: 0, which is unexpected");
    assert_int_equal(p3->ngrants, 0);
    assert_int_equal(held_by(n, "uid-3"), 0);
    /* p2 goes: p3 fits, on p2's GPUs */
    fg_sim_devices_release(n, p2);
    assert_int_equal(held_by(n, "uid-2"), 0);
    assert_true(fg_sim_devices_reserve(n, p3, j3));
    assert_string_equal(p3->grants[0].ids[0], n->gpu_uuid[1]);
    assert_string_equal(p3->grants[0].ids[1], n->gpu_uuid[2]);
    assert_int_equal(held_by(n, "uid-1"), 1);
    /* an unhealthy GPU is not given */
    fg_sim_devices_release(n, p3);
    assert_true(fg_sim_devices_set_health(&n->devices, FG_RES_NVIDIA_GPU, n->gpu_uuid[1], false));
    fg_sim_grants_free(p3);
    assert_true(fg_sim_devices_reserve(n, p3, j3));
    assert_string_equal(p3->grants[0].ids[0], n->gpu_uuid[2]);
    assert_string_equal(p3->grants[0].ids[1], n->gpu_uuid[3]);
    assert_false(fg_sim_devices_set_health(&n->devices, FG_RES_NVIDIA_GPU, "GPU-none", false));
    pod_free(p1);
    pod_free(p2);
    pod_free(p3);
    json_object_put(j1);
    json_object_put(j2);
    json_object_put(j3);
    node_free(n);
}

static void test_init_containers_reuse(void **state)
{
    (void)state;
    struct fg_sim_node *n = node_new("gpu-b", 2);
    json_object *j = pod_json("init", "uid-i", "{\"initContainers\":["
                              "{\"name\":\"warm\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":2}}},"
                              "{\"name\":\"check\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}],"
                              "\"containers\":["
                              "{\"name\":\"a\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}},"
                              "{\"name\":\"b\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}");
    struct fg_sim_pod *p = pod_on(n, j);
    assert_true(fg_sim_devices_reserve(n, p, j));   /* 2 GPUs for max(2, 1, 1 + 1) */
    assert_int_equal(p->ngrants, 4);
    assert_string_equal(p->grants[1].ids[0], n->gpu_uuid[0]);   /* the second init container reuses */
    assert_string_equal(p->grants[2].ids[0], n->gpu_uuid[0]);   /* and so do the others, each its own */
    assert_string_equal(p->grants[3].ids[0], n->gpu_uuid[1]);
    assert_int_equal(held_by(n, "uid-i"), 2);
    pod_free(p);
    json_object_put(j);
    node_free(n);
}

static enum fg_err refusing(void *ud, const struct fg_sim_alloc_request *req, struct fg_sim_alloc_response *resp,
                            char *errmsg)
{
    (void)resp;
    *(size_t *)ud = req->nids;
    snprintf(errmsg, FG_ERRMSG_MAX, "no grant for this pod");
    return FG_E_KUBE_FORBIDDEN;
}

static void test_allocate(void **state)
{
    (void)state;
    struct fg_sim_node *n = node_new("gpu-c", 4);
    json_object *j = pod_json("two", "uid-2", "{\"containers\":[{\"name\":\"main\",\"resources\":{\"limits\":"
                              "{\"nvidia.com/gpu\":2,\"fracgpu.io/gpu-share\":1}}}]}");
    struct fg_sim_pod *p = pod_on(n, j);
    assert_true(fg_sim_devices_reserve(n, p, j));
    assert_int_equal(p->ngrants, 1);   /* gpu-share: no plugin on this node, no devices */
    pthread_mutex_lock(&k.mu);
    assert_true(fg_sim_devices_allocate(&k, p));
    pthread_mutex_unlock(&k.mu);
    assert_true(p->grants[0].answered);
    assert_int_equal(p->grants[0].answer.nenv, 1);
    char want[256];
    snprintf(want, sizeof want, "NVIDIA_VISIBLE_DEVICES=%s,%s", n->gpu_uuid[0], n->gpu_uuid[1]);
    assert_string_equal(p->grants[0].answer.env[0], want);
    pod_free(p);

    /* fracgpu's plugin registers gpu-share slots, and refuses */
    size_t asked = 0;
    const struct fg_sim_device_plugin plugin = { .name = "fracgpu", .allocate = refusing,
                                                 .release = fg_sim_device_plugin_release_none,
                                                 .restore = fg_sim_device_plugin_restore_none };
    const char *slots[] = { "slot-0", "slot-1" };
    fg_sim_devices_register(&n->devices, FG_RES_GPU_SHARE, &plugin, &asked, slots, 2);
    p = pod_on(n, j);
    assert_true(fg_sim_devices_reserve(n, p, j));
    assert_int_equal(p->ngrants, 2);
    assert_string_equal(p->grants[1].resource, FG_RES_GPU_SHARE);
    assert_string_equal(p->grants[1].ids[0], "slot-0");
    pthread_mutex_lock(&k.mu);
    assert_false(fg_sim_devices_allocate(&k, p));
    pthread_mutex_unlock(&k.mu);
    assert_int_equal(asked, 1);
    assert_string_equal(p->reject_reason, "UnexpectedAdmissionError");
    assert_string_equal(p->reject_message, "Allocate failed due to no grant for this pod (fracgpu), which is unexpected");
    assert_false(p->grants[0].answered);   /* one refusal: no answer kept */
    assert_false(p->grants[1].answered);
    /* registering again keeps what is held */
    const char *more[] = { "slot-1", "slot-0", "slot-2" };
    fg_sim_devices_register(&n->devices, FG_RES_GPU_SHARE, &plugin, &asked, more, 3);
    struct fg_sim_device_resource *r = fg_sim_devices_find(&n->devices, FG_RES_GPU_SHARE);
    assert_int_equal(r->n, 3);
    assert_string_equal(r->v[1].holder, "uid-2");
    assert_string_equal(r->v[0].holder, "");
    pod_free(p);
    json_object_put(j);
    node_free(n);
}

/* A plugin that keeps its devices itself, as e2e/devicemanager's fg_dm does: it gives slot-<n>
 * in turn and records what it was told. */
struct chooser {
    unsigned next;
    char asked_for[128], released[64], restored[128];
};

static enum fg_err choose(void *ud, const struct fg_sim_alloc_request *req, struct fg_sim_alloc_response *resp,
                          char *errmsg)
{
    (void)errmsg;
    struct chooser *c = ud;
    snprintf(c->asked_for, sizeof c->asked_for, "%s/%s/%s %zu of %s", req->pod_namespace, req->pod_name,
             req->container, req->n, req->resource);
    resp->ids = fg_calloc(req->n, sizeof *resp->ids);
    for (size_t i = 0; i < req->n; i++)
        resp->ids[resp->nids++] = fg_asprintf("slot-%u", c->next++);
    resp->env = fg_calloc(1, sizeof *resp->env);
    resp->env[resp->nenv++] = fg_asprintf("NVIDIA_VISIBLE_DEVICES=GPU-shared");
    return FG_OK;
}

static void chooser_release(void *ud, const char *uid)
{
    snprintf(((struct chooser *)ud)->released, sizeof ((struct chooser *)ud)->released, "%s", uid);
}

static void chooser_restore(void *ud, const struct fg_sim_alloc_request *req)
{
    struct chooser *c = ud;
    snprintf(c->restored, sizeof c->restored, "%s %s %zu %s", req->pod_uid, req->container, req->nids, req->ids[0]);
}

static void test_plugin_that_chooses(void **state)
{
    (void)state;
    struct fg_sim_node *n = node_new("gpu-h", 2);
    struct chooser c = { .next = 3 };
    const struct fg_sim_device_plugin plugin = { .name = "fracgpu", .chooses = true, .allocate = choose,
                                                 .release = chooser_release, .restore = chooser_restore };
    fg_sim_devices_register(&n->devices, FG_RES_GPU_SHARE, &plugin, &c, NULL, 0);
    json_object *j = pod_json("frac", "uid-f", "{\"containers\":[{\"name\":\"main\",\"resources\":{\"limits\":"
                              "{\"fracgpu.io/gpu-share\":2}}}]}");
    struct fg_sim_pod *p = pod_on(n, j);
    assert_true(fg_sim_devices_reserve(n, p, j));
    assert_int_equal(p->ngrants, 1);
    assert_int_equal(p->grants[0].want, 2);
    assert_int_equal(p->grants[0].nids, 0);   /* not chosen yet */
    pthread_mutex_lock(&k.mu);
    assert_true(fg_sim_devices_allocate(&k, p));
    pthread_mutex_unlock(&k.mu);
    assert_string_equal(c.asked_for, "default/frac/main 2 of fracgpu.io/gpu-share");
    assert_int_equal(p->grants[0].nids, 2);
    assert_string_equal(p->grants[0].ids[0], "slot-3");
    assert_string_equal(p->grants[0].ids[1], "slot-4");
    assert_string_equal(p->grants[0].answer.env[0], "NVIDIA_VISIBLE_DEVICES=GPU-shared");
    json_object *st = fg_sim_devices_status(p, 0);
    json_object *dev = json_object_array_get_idx(fg_json_get(json_object_array_get_idx(st, 0), "resources", NULL), 1);
    assert_string_equal(fg_json_get_str(dev, "resourceID", NULL), "slot-4");
    assert_string_equal(fg_json_get_str(dev, "health", NULL), "Healthy");
    fg_sim_devices_release(n, p);
    assert_string_equal(c.released, "uid-f");
    /* a kubelet started again tells it what the pod holds */
    json_object *cs = json_object_new_object(), *list = json_object_new_array();
    fg_json_set_str(cs, "name", "main");
    json_object_object_add(cs, "allocatedResourcesStatus", st);
    json_object_array_add(list, cs);
    json_object_object_add(fg_json_ensure_obj(j, "status"), "containerStatuses", list);
    struct fg_sim_pod *adopted = pod_on(n, j);
    fg_sim_devices_adopt(n, adopted, j);
    assert_string_equal(c.restored, "uid-f main 2 slot-3");
    assert_int_equal(fg_sim_devices_find(&n->devices, FG_RES_GPU_SHARE)->n, 0);   /* not kept here */
    pod_free(p);
    pod_free(adopted);
    json_object_put(j);
    node_free(n);
}

static void test_status_rebuilds(void **state)
{
    (void)state;
    struct fg_sim_node *n = node_new("gpu-d", 4);
    json_object *j1 = pod_json("one", "uid-1", ONE_GPU), *j2 = pod_json("two", "uid-2", ONE_GPU);
    struct fg_sim_pod *p1 = pod_on(n, j1), *p2 = pod_on(n, j2);
    assert_true(fg_sim_devices_reserve(n, p1, j1));
    assert_true(fg_sim_devices_reserve(n, p2, j2));
    json_object *st = fg_sim_devices_status(p2, 0);
    assert_non_null(st);
    assert_null(fg_sim_devices_status(p2, 1));
    assert_string_equal(fg_json_get_str(json_object_array_get_idx(st, 0), "name", NULL), "nvidia.com/gpu");
    json_object *dev = json_object_array_get_idx(fg_json_get(json_object_array_get_idx(st, 0), "resources", NULL), 0);
    assert_string_equal(fg_json_get_str(dev, "resourceID", NULL), n->gpu_uuid[1]);
    assert_string_equal(fg_json_get_str(dev, "health", NULL), "Healthy");
    /* a kubelet started afresh: the same node's GPUs, p2 adopted from its status */
    json_object *cs = json_object_new_object();
    fg_json_set_str(cs, "name", "main");
    json_object_object_add(cs, "allocatedResourcesStatus", st);
    json_object *list = json_object_new_array();
    json_object_array_add(list, cs);
    json_object_object_add(fg_json_ensure_obj(j2, "status"), "containerStatuses", list);
    struct fg_sim_node *again = node_new("gpu-d", 4);
    struct fg_sim_pod *adopted = pod_on(again, j2);
    fg_sim_devices_adopt(again, adopted, j2);
    assert_int_equal(adopted->ngrants, 1);
    assert_string_equal(adopted->grants[0].ids[0], n->gpu_uuid[1]);
    assert_int_equal(held_by(again, "uid-2"), 1);
    /* a new pod there does not get it */
    json_object *j3 = pod_json("three", "uid-3", ONE_GPU);
    struct fg_sim_pod *p3 = pod_on(again, j3);
    assert_true(fg_sim_devices_reserve(again, p3, j3));
    assert_string_equal(p3->grants[0].ids[0], n->gpu_uuid[0]);

    /* a device whose plugin has not registered again yet stays held until it does */
    json_object *slot = json_object_new_object();
    fg_json_set_str(slot, "resourceID", "slot-1");
    json_object *slots = json_object_new_array();
    json_object_array_add(slots, slot);
    json_object *entry = json_object_new_object();
    fg_json_set_str(entry, "name", FG_RES_GPU_SHARE);
    json_object_object_add(entry, "resources", slots);
    json_object_array_add(fg_json_get(json_object_array_get_idx(list, 0), "allocatedResourcesStatus", NULL), entry);
    struct fg_sim_node *third = node_new("gpu-d", 4);
    struct fg_sim_pod *held = pod_on(third, j2);
    fg_sim_devices_adopt(third, held, j2);
    assert_int_equal(held->ngrants, 2);
    struct fg_sim_device_resource *r = fg_sim_devices_find(&third->devices, FG_RES_GPU_SHARE);
    assert_non_null(r);
    assert_null(r->plugin);
    assert_string_equal(r->v[0].holder, "uid-2");
    json_object *st2 = fg_sim_devices_status(held, 0);
    assert_string_equal(fg_json_get_str(json_object_array_get_idx(fg_json_get(json_object_array_get_idx(st2, 1),
                                                                              "resources", NULL), 0), "health", NULL),
                        "Unknown");
    json_object_put(st2);
    static const struct fg_sim_device_plugin none = { .name = "fracgpu", .allocate = refusing,
                                                      .release = fg_sim_device_plugin_release_none,
                                                      .restore = fg_sim_device_plugin_restore_none };
    const char *listed[] = { "slot-0", "slot-1" };
    fg_sim_devices_register(&third->devices, FG_RES_GPU_SHARE, &none, NULL, listed, 2);
    r = fg_sim_devices_find(&third->devices, FG_RES_GPU_SHARE);
    assert_string_equal(r->v[0].holder, "");
    assert_string_equal(r->v[1].holder, "uid-2");
    pod_free(held);
    node_free(third);
    pod_free(p1);
    pod_free(p2);
    pod_free(p3);
    pod_free(adopted);
    json_object_put(j1);
    json_object_put(j2);
    json_object_put(j3);
    node_free(n);
    node_free(again);
}

static void test_pod_resources(void **state)
{
    (void)state;
    struct fg_sim_node *n = node_new("gpu-e", 2), *other = node_new("gpu-f", 2);
    json_object *j1 = pod_json("one", "uid-1", ONE_GPU), *j2 = pod_json("two", "uid-2", ONE_GPU);
    struct fg_sim_pod *p1 = pod_on(n, j1), *p2 = pod_on(other, j2);
    assert_true(fg_sim_devices_reserve(n, p1, j1));
    assert_true(fg_sim_devices_reserve(other, p2, j2));
    p1->admitted = p2->admitted = true;
    struct fg_sim_pod *pods[] = { p1, p2 };
    k.pods_v = pods;
    k.npods = 2;
    struct fg_sim_pod_resources *v;
    size_t nv;
    fg_sim_pod_resources_list(&k, "gpu-e", &v, &nv);
    assert_int_equal(nv, 1);
    assert_string_equal(v[0].namespace, "default");
    assert_string_equal(v[0].pod, "one");
    assert_string_equal(v[0].container, "main");
    assert_string_equal(v[0].resource, "nvidia.com/gpu");
    assert_int_equal(v[0].nids, 1);
    assert_string_equal(v[0].ids[0], n->gpu_uuid[0]);
    fg_sim_pod_resources_free(v, nv);
    p1->released = true;   /* an ended pod is not listed */
    fg_sim_pod_resources_list(&k, "gpu-e", &v, &nv);
    assert_int_equal(nv, 0);
    fg_sim_pod_resources_free(v, nv);
    k.pods_v = NULL;
    k.npods = 0;
    pod_free(p1);
    pod_free(p2);
    json_object_put(j1);
    json_object_put(j2);
    node_free(n);
    node_free(other);
}

static void test_visible(void **state)
{
    (void)state;
    struct fg_sim_node *n = node_new("gpu-g", 4);
    char out[512], want[512];
    assert_true(fg_sim_nvidia_visible(n, "all", out, sizeof out));
    snprintf(want, sizeof want, "%s,%s,%s,%s", n->gpu_uuid[0], n->gpu_uuid[1], n->gpu_uuid[2], n->gpu_uuid[3]);
    assert_string_equal(out, want);
    assert_true(fg_sim_nvidia_visible(n, "2,0", out, sizeof out));   /* indices, in the node's order */
    snprintf(want, sizeof want, "%s,%s", n->gpu_uuid[0], n->gpu_uuid[2]);
    assert_string_equal(out, want);
    snprintf(want, sizeof want, "%s,7,GPU-00000000-0000-0000-0000-000000000000", n->gpu_uuid[3]);
    assert_true(fg_sim_nvidia_visible(n, want, out, sizeof out));   /* what is not here is not shown */
    assert_string_equal(out, n->gpu_uuid[3]);
    assert_int_equal(fg_sim_nvidia_gpu_index(n, n->gpu_uuid[2]), 2);
    assert_int_equal(fg_sim_nvidia_gpu_index(n, "GPU-x"), -1);
    static const char *const none[] = { "none", "void", "", "9", "GPU-x", NULL };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        assert_false(fg_sim_nvidia_visible(n, none[i], out, sizeof out));
    node_free(n);
    struct fg_sim_node *cpu = node_new("cpu-a", 0);
    assert_false(fg_sim_nvidia_visible(cpu, "all", out, sizeof out));
    assert_null(fg_sim_devices_find(&cpu->devices, FG_RES_NVIDIA_GPU));
    node_free(cpu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_and_free),
        cmocka_unit_test(test_init_containers_reuse),
        cmocka_unit_test(test_allocate),
        cmocka_unit_test(test_plugin_that_chooses),
        cmocka_unit_test(test_status_rebuilds),
        cmocka_unit_test(test_pod_resources),
        cmocka_unit_test(test_visible),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
