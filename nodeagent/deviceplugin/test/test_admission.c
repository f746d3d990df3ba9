/* Which pod an Allocate serves: the oldest waiting pod whose grant verifies for a healthy GPU here
 * (previous key included), never a pod with a forged, copied or edited grant — also when such a
 * pod is older; started, terminating, allocated, unshared pods and pods of other nodes do not wait.
 * The audit: a pod holding a device the ledger gave to another is an impostor and the robbed pod
 * may be admitted again — unless the holder's own grant asks for the very reply it got, when only the
 * bookkeeping moves; after a restart, holders with grants are adopted whatever the keys or the GPU's
 * health say now, and holders without one named. Init containers never get a share; the watch's order
 * decides between pods created in the same second; a device given to a new pod leaves the old entry.
 * A robbed pod served again loses nothing of the trail: one that holds devices its entry does not
 * record, or a pod unknown to the ledger holding another GPU's slot than its grant names, is named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/json.h"
#include "nodeagent/deviceplugin/admission.h"
#include "reconcilers/podcontract.h"

#define NODE "gpu-node-1"
#define GPU1 "GPU-00000000-0000-4000-8000-000000000001"
#define GPU2 "GPU-00000000-0000-4000-8000-000000000002"

static const unsigned char key[32] = "an HMAC key for the device tests";
static const unsigned char old_key[32] = "the key before the last rotation";

/* A pod of this node asking for a share on gpu, created at second `created`; signed with k (NULL:
 * a grant copied from `copy_uid`'s pod). */
static json_object *pod(const char *name, const char *uid, int created, const char *gpu, const unsigned char *k,
                        const char *copy_uid)
{
    char ts[32];
    snprintf(ts, sizeof(ts), "2026-11-26T10:00:%02dZ", created);
    json_object *p = json_object_new_object();
    json_object *meta = json_object_new_object(), *ann = json_object_new_object();
    json_object_object_add(p, "metadata", meta);
    json_object_object_add(meta, "name", json_object_new_string(name));
    json_object_object_add(meta, "namespace", json_object_new_string("ml"));
    json_object_object_add(meta, "uid", json_object_new_string(uid));
    json_object_object_add(meta, "creationTimestamp", json_object_new_string(ts));
    json_object_object_add(meta, "annotations", ann);
    json_object_object_add(ann, FG_ANN_GPU_UUID, json_object_new_string(gpu));
    json_object_object_add(ann, FG_ANN_COMPUTE_MILLI, json_object_new_string("300"));
    json_object_object_add(ann, FG_ANN_MEMORY_MIB, json_object_new_string("8192"));
    struct fg_grant g = { copy_uid ? copy_uid : uid, NODE, gpu, 300, 8192 };
    char v[FG_GRANT_MAX];
    assert_int_equal(fg_grant_sign(&g, k ? k : key, sizeof(key), v), FG_OK);
    json_object_object_add(ann, FG_ANN_GRANT, json_object_new_string(v));
    json_object *spec = json_tokener_parse("{\"nodeName\":\"" NODE "\",\"containers\":[{\"name\":\"main\",\"resources\":"
                                           "{\"limits\":{\"" FG_RES_GPU_SHARE "\":\"1\"}}}]}");
    json_object_object_add(p, "spec", spec);
    json_object_object_add(p, "status", json_tokener_parse("{\"phase\":\"Pending\"}"));
    return p;
}

struct world {
    json_object *pods[8];
    size_t n;
    struct fg_grant_keys keys;
    struct fg_dp_gpu gpus[2];
    struct fg_dp_ledger ledger;
};

static struct fg_dp_node_view view_of(struct world *w)
{
    return (struct fg_dp_node_view){ NODE, w->pods, w->n, &w->keys, w->gpus, 2, NULL, NULL };
}

/* What the plugin records when it answers for pod uid on gpu (the amounts every pod here asks). */
static void allocated(struct world *w, const char *uid, const char *name, const char *gpu, const char *const *ids,
                      size_t n)
{
    struct fg_grant g = { uid, NODE, gpu, 300, 8192 };
    fg_dp_ledger_put(&w->ledger, "ml", name, &g, false, ids, n);
}

static int setup(void **state)
{
    static struct world w;
    memset(&w, 0, sizeof(w));
    memcpy(w.keys.current, key, sizeof(key));
    w.keys.current_len = sizeof(key);
    w.gpus[0] = (struct fg_dp_gpu){ GPU1, 0, true };
    w.gpus[1] = (struct fg_dp_gpu){ GPU2, 1, true };
    *state = &w;
    return 0;
}

static int teardown(void **state)
{
    struct world *w = *state;
    for (size_t i = 0; i < w->n; i++)
        json_object_put(w->pods[i]);
    fg_dp_ledger_cleanup(&w->ledger);
    return 0;
}

static void serves_the_granted_pod(void **state)
{
    struct world *w = *state;
    w->pods[w->n++] = pod("a", "uid-a", 5, GPU2, NULL, NULL);
    struct fg_dp_node_view v = view_of(w);
    struct fg_dp_pick p;
    fg_dp_pick_pod(&v, &w->ledger, &p);
    assert_int_equal(p.outcome, FG_DP_PICK_GRANTED);
    assert_ptr_equal(p.pod, w->pods[0]);
    assert_string_equal(p.grant.gpu_uuid, GPU2);
    assert_int_equal(p.grant.compute_milli, 300);
    assert_false(p.mps);

    /* once allocated it waits no more */
    const char *ids[] = { GPU1 "::0" };
    allocated(w, "uid-a", "a", GPU2, ids, 1);
    fg_dp_pick_pod(&v, &w->ledger, &p);
    assert_int_equal(p.outcome, FG_DP_PICK_NONE);
}

static void refuses_forgeries(void **state)
{
    struct world *w = *state;
    /* annotations copied from a granted pod, grant included: it names another UID */
    w->pods[w->n++] = pod("copy", "uid-copy", 1, GPU1, NULL, "uid-real");
    /* a grant signed with a key nobody holds */
    static const unsigned char guess[32] = "a key guessed by the pod's owner";
    w->pods[w->n++] = pod("guess", "uid-guess", 2, GPU1, guess, NULL);
    struct fg_dp_node_view v = view_of(w);
    struct fg_dp_pick p;
    fg_dp_pick_pod(&v, &w->ledger, &p);
    assert_int_equal(p.outcome, FG_DP_PICK_REFUSED);
    assert_int_equal(p.nrefused, 2);
    assert_string_equal(p.refused_why[0], "grant forged or altered");

    /* an edited amount breaks the grant too */
    json_object_object_add(fg_json_get(w->pods[0], "metadata", "annotations", NULL), FG_ANN_COMPUTE_MILLI,
                           json_object_new_string("1000"));

    /* a granted pod admitted at the same moment is the one served, although younger */
    w->pods[w->n++] = pod("real", "uid-real", 9, GPU1, NULL, NULL);
    v = view_of(w);
    fg_dp_pick_pod(&v, &w->ledger, &p);
    assert_int_equal(p.outcome, FG_DP_PICK_GRANTED);
    assert_string_equal(fg_json_get_str(p.pod, "metadata", "name", NULL), "real");
    assert_int_equal(p.nrefused, 2);
}

static void admission_order_and_keys(void **state)
{
    struct world *w = *state;
    w->pods[w->n++] = pod("young", "uid-y", 30, GPU1, NULL, NULL);
    w->pods[w->n++] = pod("old", "uid-o", 10, GPU1, old_key, NULL); /* signed before a rotation */
    struct fg_dp_node_view v = view_of(w);
    struct fg_dp_pick p;
    fg_dp_pick_pod(&v, &w->ledger, &p);
    assert_int_equal(p.outcome, FG_DP_PICK_GRANTED);
    assert_string_equal(fg_json_get_str(p.pod, "metadata", "name", NULL), "young"); /* old key not accepted yet */
    memcpy(w->keys.previous, old_key, sizeof(old_key));
    w->keys.previous_len = sizeof(old_key);
    fg_dp_pick_pod(&v, &w->ledger, &p);
    assert_string_equal(fg_json_get_str(p.pod, "metadata", "name", NULL), "old");

    /* a GPU gone unhealthy or absent is not served */
    w->gpus[0].healthy = false;
    fg_dp_pick_pod(&v, &w->ledger, &p);
    assert_int_equal(p.outcome, FG_DP_PICK_REFUSED);
    assert_non_null(strstr(p.refused_why[0], "unhealthy"));
    snprintf(w->gpus[0].uuid, sizeof(w->gpus[0].uuid), "GPU-other");
    fg_dp_pick_pod(&v, &w->ledger, &p);
    assert_non_null(strstr(p.refused_why[0], "not on this node"));
}

static void who_waits(void **state)
{
    struct world *w = *state;
    json_object *running = pod("running", "uid-r", 1, GPU1, NULL, NULL);
    json_object_object_add(running, "status", json_tokener_parse("{\"phase\":\"Running\"}"));
    json_object *leaving = pod("leaving", "uid-l", 1, GPU1, NULL, NULL);
    json_object_object_add(fg_json_get(leaving, "metadata", NULL), "deletionTimestamp",
                           json_object_new_string("2026-11-26T10:01:00Z"));
    json_object *elsewhere = pod("elsewhere", "uid-e", 1, GPU1, NULL, NULL);
    json_object_object_add(fg_json_get(elsewhere, "spec", NULL), "nodeName", json_object_new_string("gpu-node-2"));
    json_object *whole = pod("whole", "uid-w", 1, GPU1, NULL, NULL);
    json_object_object_add(fg_json_get(whole, "spec", NULL), "containers",
                           json_tokener_parse("[{\"name\":\"m\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]"));
    /* admitted by the kubelet (its start time written), its containers still being made */
    json_object *admitted = pod("admitted", "uid-a", 1, GPU1, NULL, NULL);
    json_object_object_add(admitted, "status",
                           json_tokener_parse("{\"phase\":\"Pending\",\"startTime\":\"2026-11-26T10:00:02Z\"}"));
    w->pods[w->n++] = running, w->pods[w->n++] = leaving, w->pods[w->n++] = elsewhere, w->pods[w->n++] = whole;
    w->pods[w->n++] = admitted;
    assert_false(fg_dp_pod_wants_share(whole));
    struct fg_dp_node_view v = view_of(w);
    struct fg_dp_pick p;
    fg_dp_pick_pod(&v, &w->ledger, &p);
    assert_int_equal(p.outcome, FG_DP_PICK_NONE);
    assert_int_equal(p.nrefused, 0);
}

static void audit_finds_impostors(void **state)
{
    struct world *w = *state;
    w->pods[w->n++] = pod("forged", "uid-f", 1, GPU1, NULL, "uid-g");
    w->pods[w->n++] = pod("granted", "uid-g", 2, GPU1, NULL, NULL);
    struct fg_dp_node_view v = view_of(w);
    /* the kubelet admitted the forged pod with the reply meant for the granted one */
    struct fg_dp_pick p;
    fg_dp_pick_pod(&v, &w->ledger, &p);
    assert_string_equal(fg_json_get_str(p.pod, "metadata", "name", NULL), "granted");
    const char *d1[] = { GPU2 "::7" };
    allocated(w, "uid-g", "granted", GPU1, d1, 1);
    struct fg_dp_holding h[] = { { "ml", "forged", d1, 1 } };
    struct fg_dp_audit a;
    fg_dp_ledger_audit(&w->ledger, &v, h, 1, &a);
    assert_int_equal(a.nimpostors, 1);
    assert_int_equal(a.impostors[0], 0);
    assert_non_null(strstr(a.why[0], "allocated to ml/granted"));
    assert_ptr_equal(a.impostor_pods[0], w->pods[0]); /* the forged pod, for the Event and the removal */
    assert_int_equal(a.robbed, 1);
    assert_null(fg_dp_ledger_get(&w->ledger, "uid-g"));
    /* so the granted pod's own Allocate is served */
    fg_dp_pick_pod(&v, &w->ledger, &p);
    assert_int_equal(p.outcome, FG_DP_PICK_GRANTED);
    assert_string_equal(fg_json_get_str(p.pod, "metadata", "name", NULL), "granted");
    const char *d2[] = { GPU1 "::3" };
    allocated(w, "uid-g", "granted", GPU1, d2, 1);
    struct fg_dp_holding both[] = { { "ml", "forged", d1, 1 }, { "ml", "granted", d2, 1 } };
    fg_dp_ledger_audit(&w->ledger, &v, both, 2, &a);
    assert_int_equal(a.nimpostors, 1); /* the forged pod still holds a share: still named */
    assert_int_equal(a.impostors[0], 0);
    assert_non_null(strstr(a.why[0], "an audit found it holding another pod's")); /* named before */
    assert_non_null(fg_dp_ledger_get(&w->ledger, "uid-g"));
}

static void audit_after_restart(void **state)
{
    struct world *w = *state;
    w->pods[w->n++] = pod("kept", "uid-k", 1, GPU1, NULL, NULL);
    json_object_object_add(w->pods[0], "status", json_tokener_parse("{\"phase\":\"Running\"}"));
    struct fg_dp_node_view v = view_of(w);
    const char *dk[] = { GPU1 "::0" }, *du[] = { GPU1 "::1" };
    struct fg_dp_holding h[] = { { "ml", "kept", dk, 1 }, { "ml", "not-cached-yet", du, 1 } };
    struct fg_dp_audit a;
    fg_dp_ledger_audit(&w->ledger, &v, h, 2, &a);
    assert_int_equal(a.adopted, 1);
    assert_int_equal(a.nimpostors, 0);
    const struct fg_dp_entry *e = fg_dp_ledger_get(&w->ledger, "uid-k");
    assert_non_null(e);
    assert_string_equal(e->gpu_uuid, GPU1);
    assert_string_equal(e->device_ids[0], GPU1 "::0");
}

static void never_init_containers(void **state)
{
    struct world *w = *state;
    json_object *p = pod("init", "uid-i", 1, GPU1, NULL, NULL);
    json_object_object_add(fg_json_get(p, "spec", NULL), "initContainers",
                           json_tokener_parse("[{\"name\":\"i\",\"resources\":{\"limits\":{\"" FG_RES_GPU_SHARE "\":\"1\"}}}]"));
    w->pods[w->n++] = p;
    struct fg_dp_node_view v = view_of(w);
    struct fg_dp_pick pick;
    fg_dp_pick_pod(&v, &w->ledger, &pick);
    assert_int_equal(pick.outcome, FG_DP_PICK_REFUSED); /* its grant is valid: the init container is not */
    assert_non_null(strstr(pick.refused_why[0], "init container"));
}

static uint64_t by_name_reversed(void *ud, json_object *pod)
{
    (void)ud;
    return fg_str_eq(fg_json_get_str(pod, "metadata", "name", NULL), "b") ? 1 : 2;
}

static void watch_order(void **state)
{
    struct world *w = *state;
    /* created in the same second, bound b first: the kubelet admits b first, and so does the pick */
    w->pods[w->n++] = pod("a", "uid-a", 7, GPU1, NULL, NULL);
    w->pods[w->n++] = pod("b", "uid-b", 7, GPU2, NULL, NULL);
    struct fg_dp_node_view v = view_of(w);
    struct fg_dp_pick pick;
    fg_dp_pick_pod(&v, &w->ledger, &pick);
    assert_string_equal(fg_json_get_str(pick.pod, "metadata", "name", NULL), "a"); /* without the order: by name */
    v.seq = by_name_reversed;
    fg_dp_pick_pod(&v, &w->ledger, &pick);
    assert_string_equal(fg_json_get_str(pick.pod, "metadata", "name", NULL), "b");
}

static void swaps_between_granted_pods(void **state)
{
    struct world *w = *state;
    w->pods[w->n++] = pod("a", "uid-a", 1, GPU1, NULL, NULL);
    w->pods[w->n++] = pod("b", "uid-b", 1, GPU1, NULL, NULL); /* same GPU and amounts as a */
    w->pods[w->n++] = pod("c", "uid-c", 1, GPU2, NULL, NULL);
    struct fg_dp_node_view v = view_of(w);
    /* a's reply went to b: the same reply b's own grant asks for, so only the bookkeeping moves */
    const char *d1[] = { GPU1 "::1" };
    allocated(w, "uid-a", "a", GPU1, d1, 1);
    struct fg_dp_holding h[] = { { "ml", "b", d1, 1 } };
    struct fg_dp_audit au;
    fg_dp_ledger_audit(&w->ledger, &v, h, 1, &au);
    assert_int_equal(au.nimpostors, 0);
    assert_int_equal(au.rekeyed, 1);
    assert_null(fg_dp_ledger_get(&w->ledger, "uid-a")); /* a is served when its own Allocate comes */
    assert_non_null(fg_dp_ledger_get(&w->ledger, "uid-b"));
    /* c got b's reply, b's GPU: not what c's grant names, so c is named and b may be served again */
    const char *d2[] = { GPU1 "::2" };
    allocated(w, "uid-b", "b", GPU1, d2, 1);
    struct fg_dp_holding h2[] = { { "ml", "c", d2, 1 } };
    fg_dp_ledger_audit(&w->ledger, &v, h2, 1, &au);
    assert_int_equal(au.nimpostors, 1);
    assert_int_equal(au.robbed, 1);
    assert_null(fg_dp_ledger_get(&w->ledger, "uid-b"));
}

/* Three pods of one reply admitted in a rotated order (the kubelet's b, c, a; the plugin's a, b, c):
 * each holds the device recorded for another; all three keep their devices, nobody is named. */
static void rotations_between_granted_pods(void **state)
{
    struct world *w = *state;
    w->pods[w->n++] = pod("a", "uid-a", 1, GPU1, NULL, NULL);
    w->pods[w->n++] = pod("b", "uid-b", 1, GPU1, NULL, NULL);
    w->pods[w->n++] = pod("c", "uid-c", 1, GPU1, NULL, NULL);
    struct fg_dp_node_view v = view_of(w);
    const char *d1[] = { GPU1 "::1" }, *d2[] = { GPU1 "::2" }, *d3[] = { GPU1 "::3" };
    allocated(w, "uid-a", "a", GPU1, d1, 1);
    allocated(w, "uid-b", "b", GPU1, d2, 1);
    allocated(w, "uid-c", "c", GPU1, d3, 1);
    struct fg_dp_holding h[] = { { "ml", "a", d3, 1 }, { "ml", "b", d1, 1 }, { "ml", "c", d2, 1 } };
    struct fg_dp_audit au;
    fg_dp_ledger_audit(&w->ledger, &v, h, 3, &au);
    assert_int_equal(au.nimpostors, 0);
    assert_int_equal(au.rekeyed, 3);
    assert_string_equal(fg_dp_ledger_get(&w->ledger, "uid-a")->device_ids[0], GPU1 "::3");
    assert_string_equal(fg_dp_ledger_get(&w->ledger, "uid-b")->device_ids[0], GPU1 "::1");
    assert_string_equal(fg_dp_ledger_get(&w->ledger, "uid-c")->device_ids[0], GPU1 "::2");
    fg_dp_ledger_audit(&w->ledger, &v, h, 3, &au);   /* settled: the next audit finds nothing */
    assert_int_equal(au.nimpostors + au.rekeyed + au.robbed + au.adopted, 0);
}

static void adoption_needs_no_fresh_verdict(void **state)
{
    struct world *w = *state;
    /* after a restart: the keys not loaded yet, the pod's GPU unhealthy, a key rotated away since —
     * none of it is evidence of theft, so every running holder with a grant is adopted */
    w->pods[w->n++] = pod("old-key", "uid-o", 1, GPU1, old_key, NULL);
    w->pods[w->n++] = pod("sick", "uid-s", 2, GPU2, NULL, NULL);
    json_object *bare = pod("bare", "uid-x", 3, GPU1, NULL, NULL); /* a grant never written */
    json_object_object_del(fg_json_get(bare, "metadata", "annotations", NULL), FG_ANN_GRANT);
    w->pods[w->n++] = bare;
    w->gpus[1].healthy = false;
    struct fg_dp_node_view v = view_of(w);
    const char *a[] = { GPU1 "::0" }, *b[] = { GPU2 "::0" }, *c[] = { GPU1 "::1" };
    struct fg_dp_holding h[] = { { "ml", "old-key", a, 1 }, { "ml", "sick", b, 1 }, { "ml", "bare", c, 1 } };
    struct fg_dp_audit au;
    fg_dp_ledger_audit(&w->ledger, &v, h, 3, &au);
    assert_int_equal(au.adopted, 2);
    assert_int_equal(au.nimpostors, 1);
    assert_int_equal(au.impostors[0], 2);
    assert_non_null(strstr(au.why[0], "without a grant"));
    memset(&w->keys, 0, sizeof(w->keys)); /* no key at all: still adopted (already in the ledger now) */
    fg_dp_ledger_cleanup(&w->ledger);
    fg_dp_ledger_audit(&w->ledger, &v, h, 2, &au);
    assert_int_equal(au.adopted, 2);
    assert_int_equal(au.nimpostors, 0);
}

static void robbed_chains_are_named(void **state)
{
    struct world *w = *state;
    w->pods[w->n++] = pod("a", "uid-a", 1, GPU1, NULL, NULL);
    w->pods[w->n++] = pod("b", "uid-b", 2, GPU2, NULL, NULL);
    w->pods[w->n++] = pod("d", "uid-d", 3, GPU2, NULL, NULL);
    struct fg_dp_node_view v = view_of(w);
    /* a's reply (GPU1) went to b, then a's entry was replaced when a was served again elsewhere: b
     * holds a device no entry records, while its own reply went with another */
    const char *mine[] = { GPU2 "::1" }, *held[] = { GPU1 "::5" }, *again[] = { GPU1 "::6" };
    allocated(w, "uid-a", "a", GPU1, held, 1);
    allocated(w, "uid-b", "b", GPU2, mine, 1);
    allocated(w, "uid-a", "a", GPU1, again, 1);
    struct fg_dp_holding h[] = { { "ml", "b", held, 1 } };
    struct fg_dp_audit au;
    fg_dp_ledger_audit(&w->ledger, &v, h, 1, &au);
    assert_int_equal(au.nimpostors, 1);
    assert_ptr_equal(au.impostor_pods[0], w->pods[1]);
    assert_non_null(strstr(au.why[0], "while the reply for it went with " GPU2 "::1"));
    /* d, which the ledger does not know, holds a slot of GPU1 while its grant names GPU2: not adopted */
    const char *off[] = { GPU1 "::7" };
    struct fg_dp_holding h2[] = { { "ml", "d", off, 1 } };
    fg_dp_ledger_audit(&w->ledger, &v, h2, 1, &au);
    assert_int_equal(au.adopted, 0);
    assert_int_equal(au.nimpostors, 1);
    assert_non_null(strstr(au.why[0], "not a slot of " GPU2));
    assert_null(fg_dp_ledger_get(&w->ledger, "uid-d"));
}

static void devices_move_with_grants(void **state)
{
    struct world *w = *state;
    const char *d[] = { GPU1 "::4" };
    allocated(w, "uid-done", "done", GPU1, d, 1);
    allocated(w, "uid-next", "next", GPU1, d, 1); /* the kubelet gave the freed slot to the next pod */
    assert_null(fg_dp_ledger_get(&w->ledger, "uid-done"));
    assert_int_equal(fg_dp_ledger_get(&w->ledger, "uid-next")->ndevices, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(serves_the_granted_pod, setup, teardown),
        cmocka_unit_test_setup_teardown(refuses_forgeries, setup, teardown),
        cmocka_unit_test_setup_teardown(admission_order_and_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(who_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(audit_finds_impostors, setup, teardown),
        cmocka_unit_test_setup_teardown(audit_after_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(never_init_containers, setup, teardown),
        cmocka_unit_test_setup_teardown(watch_order, setup, teardown),
        cmocka_unit_test_setup_teardown(swaps_between_granted_pods, setup, teardown),
        cmocka_unit_test_setup_teardown(rotations_between_granted_pods, setup, teardown),
        cmocka_unit_test_setup_teardown(adoption_needs_no_fresh_verdict, setup, teardown),
        cmocka_unit_test_setup_teardown(robbed_chains_are_named, setup, teardown),
        cmocka_unit_test_setup_teardown(devices_move_with_grants, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
