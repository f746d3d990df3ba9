/*
 * Tests for transform: stripping, field sets pruned in place (checked against a reference that builds
 * the kept tree anew), the pod fields, and rejection by a transform.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "operator/cache/fake_listwatch.h"
#include "operator/cache/fake_pods.h"
#include "operator/cache/informer.h"
#include "operator/cache/transform.h"

#define LAST_APPLIED "kubectl.kubernetes.io/last-applied-configuration"

/* ---- the reference: a new tree holding only the listed paths of obj, obj untouched ---- */

static void keep_path(json_object *src, json_object *dst, const char *path);

/* Copies the rest of the path from each element of the array src into the matching element of dst,
 * creating dst's elements as objects on first use. */
static void keep_array(json_object *src, json_object *dst, const char *rest)
{
    size_t n = json_object_array_length(src);
    for (size_t i = 0; i < n; i++) {
        json_object *s = json_object_array_get_idx(src, i);
        if (!rest) {
            json_object_array_put_idx(dst, i, json_object_get(s));
            continue;
        }
        if (!json_object_is_type(s, json_type_object)) {
            if (json_object_array_length(dst) <= i)
                json_object_array_put_idx(dst, i, NULL); /* keep the indexes aligned */
            continue;
        }
        json_object *d = json_object_array_get_idx(dst, i);
        if (!d) {
            d = json_object_new_object();
            json_object_array_put_idx(dst, i, d);
        }
        keep_path(s, d, rest);
    }
}

/* src and dst are objects; path is the remaining dotted path. */
static void keep_path(json_object *src, json_object *dst, const char *path)
{
    const char *dot = strchr(path, '.');
    size_t len = dot ? (size_t)(dot - path) : strlen(path);
    const char *rest = dot ? dot + 1 : NULL;
    bool each = len >= 2 && path[len - 2] == '[' && path[len - 1] == ']';
    size_t key_len = each ? len - 2 : len;
    char key[128];
    if (key_len == 0 || key_len >= sizeof(key))
        return;
    memcpy(key, path, key_len);
    key[key_len] = '\0';

    json_object *s = NULL;
    if (!json_object_object_get_ex(src, key, &s))
        return;
    json_object *d = NULL;
    json_object_object_get_ex(dst, key, &d);
    if (d == s)
        return; /* an earlier path already kept this whole sub-tree */
    if (each) {
        if (!json_object_is_type(s, json_type_array))
            return;
        if (!json_object_is_type(d, json_type_array)) {
            d = json_object_new_array_ext((int)json_object_array_length(s));
            json_object_object_add(dst, key, d);
        }
        keep_array(s, d, rest);
        return;
    }
    if (!rest) {
        json_object_object_add(dst, key, json_object_get(s));
        return;
    }
    if (!json_object_is_type(s, json_type_object))
        return;
    if (!json_object_is_type(d, json_type_object)) {
        d = json_object_new_object();
        json_object_object_add(dst, key, d);
    }
    keep_path(s, d, rest);
}

static json_object *oracle_keep(json_object *obj, const char *const *paths)
{
    if (!json_object_is_type(obj, json_type_object))
        return NULL;
    json_object *out = json_object_new_object();
    for (size_t i = 0; paths[i]; i++)
        keep_path(obj, out, paths[i]);
    return out;
}

/* The pod field set, compiled once for the tests. */
static struct fg_fieldset *pod_fields(void)
{
    static struct fg_fieldset *fs;
    if (!fs)
        fs = fg_fieldset_new(fg_transform_pod_paths);
    return fs;
}


static void test_fake_pod_is_realistic(void **state)
{
    (void)state;
    json_object *pod = fg_fake_pod_new("ml", "llm", 3, "node-3");
    assert_non_null(pod);
    size_t len = 0;
    fg_json_text(pod, &len);
    assert_true(len >= 4096);
    assert_non_null(fg_json_get(pod, "metadata", "managedFields", NULL));
    assert_string_equal(fg_json_get_str(pod, "metadata", "name", NULL), "llm-3");
    assert_string_equal(fg_json_get_str(pod, "spec", "nodeName", NULL), "node-3");
    json_object_put(pod);
    pod = fg_fake_pod_new("ml", "llm", 4, NULL);
    assert_null(fg_json_get(pod, "spec", "nodeName", NULL));
    json_object_put(pod);
}

static void test_strip(void **state)
{
    (void)state;
    json_object *pod = fg_fake_pod_new("ml", "llm", 1, "node-1");
    json_object *out = fg_transform_strip(NULL, pod);
    assert_ptr_equal(out, pod);
    assert_null(fg_json_get(out, "metadata", "managedFields", NULL));
    assert_null(fg_json_get(out, "metadata", "annotations", LAST_APPLIED, NULL));
    /* Everything else stays. */
    assert_string_equal(fg_json_get_str(out, "metadata", "annotations", "fracgpu.io/policy", NULL), "near-real-time");
    assert_string_equal(fg_json_get_str(out, "metadata", "labels", "app", NULL), "llm-serving");
    assert_int_equal(json_object_array_length(fg_json_get(out, "spec", "containers", NULL)), 2);
    assert_non_null(fg_json_get(out, "status", "containerStatuses", NULL));
    json_object_put(out);
    json_object_put(pod);

    /* Objects without metadata, and non-objects, pass unchanged. */
    json_object *arr = json_object_new_array();
    out = fg_transform_strip(NULL, arr);
    assert_ptr_equal(out, arr);
    json_object_put(out);
    json_object_put(arr);
}

static void test_keep_paths(void **state)
{
    (void)state;
    json_object *o = json_tokener_parse(
        "{\"a\":{\"b\":1,\"c\":2,\"d\":{\"e\":3}},\"list\":[{\"n\":\"x\",\"r\":{\"cpu\":1},\"junk\":1},"
        "{\"n\":\"y\",\"junk\":2},7],\"top\":\"t\",\"drop\":true,\"whole\":[1,2]}");
    static const char *const paths[] = { "a.b", "a.d.e", "list[].n", "list[].r", "top", "whole", "missing.x",
                                         "a.b.c", "top[]", "", NULL };
    struct fg_fieldset *fs = fg_fieldset_new(paths);
    json_object *copy = json_tokener_parse(fg_json_text(o, NULL));
    json_object *k = fg_transform_keep(fs, copy);
    assert_ptr_equal(k, copy);
    assert_string_equal(fg_json_text(k, NULL),
                        "{\"a\":{\"b\":1,\"d\":{\"e\":3}},\"list\":[{\"n\":\"x\",\"r\":{\"cpu\":1}},{\"n\":\"y\"},null],"
                        "\"top\":\"t\",\"whole\":[1,2]}");
    json_object *want = oracle_keep(o, paths);
    assert_true(json_object_equal(want, k));
    json_object_put(want);
    json_object_put(k);
    json_object_put(copy);
    fg_fieldset_free(fs);

    /* A path that keeps a whole sub-tree, then a path inside it, keeps the whole sub-tree. */
    static const char *const nested[] = { "a", "a.b", NULL };
    fs = fg_fieldset_new(nested);
    copy = json_tokener_parse(fg_json_text(o, NULL));
    k = fg_transform_keep(fs, copy);
    assert_non_null(fg_json_get(k, "a", "c", NULL));
    assert_null(fg_json_get(k, "drop", NULL));
    json_object_put(k);
    json_object_put(copy);

    /* "x[].y" and "x" from two consumers keep the whole of x, in either order, as the reference does. */
    static const char *const both[2][3] = { { "list[].n", "list", NULL }, { "list", "list[].n", NULL } };
    for (int i = 0; i < 2; i++) {
        struct fg_fieldset *u = fg_fieldset_new(both[i]);
        copy = json_tokener_parse(fg_json_text(o, NULL));
        k = fg_transform_keep(u, copy);
        json_object *ref = oracle_keep(o, both[i]);
        assert_true(json_object_equal(ref, k));
        assert_non_null(fg_json_get(json_object_array_get_idx(fg_json_get(k, "list", NULL), 0), "junk", NULL));
        json_object_put(ref);
        json_object_put(k);
        json_object_put(copy);
        fg_fieldset_free(u);
    }

    json_object *s = json_object_new_string("x");
    assert_null(fg_transform_keep(fs, s));
    json_object_put(s);
    fg_fieldset_free(fs);
    json_object_put(o);
}

static void test_pod_transform(void **state)
{
    (void)state;
    json_object *pod = fg_fake_pod_new("ml", "llm", 2, "node-2");
    size_t before = 0;
    fg_json_text(pod, &before);
    json_object *t = fg_transform_keep(pod_fields(), pod);
    assert_non_null(t);
    size_t after = 0;
    fg_json_text(t, &after);
    assert_true(after * 2 < before);

    assert_null(fg_json_get(t, "metadata", "managedFields", NULL));
    assert_null(fg_json_get(t, "metadata", "annotations", LAST_APPLIED, NULL));
    assert_null(fg_json_get(t, "metadata", "creationTimestamp", NULL));
    assert_null(fg_json_get(t, "spec", "volumes", NULL));
    assert_null(fg_json_get(t, "status", "containerStatuses", NULL));
    assert_string_equal(fg_json_get_str(t, "metadata", "name", NULL), "llm-2");
    assert_string_equal(fg_json_get_str(t, "metadata", "namespace", NULL), "ml");
    assert_non_null(fg_json_get_str(t, "metadata", "uid", NULL));
    assert_string_equal(fg_json_get_str(t, "metadata", "resourceVersion", NULL), "1");
    assert_string_equal(fg_json_get_str(t, "metadata", "annotations", "fracgpu.io/policy", NULL), "near-real-time");
    assert_int_equal(json_object_array_length(fg_json_get(t, "metadata", "ownerReferences", NULL)), 1);
    assert_string_equal(fg_json_get_str(t, "spec", "nodeName", NULL), "node-2");
    assert_string_equal(fg_json_get_str(t, "spec", "schedulerName", NULL), "fracgpu");
    assert_non_null(fg_json_get(t, "spec", "affinity", "nodeAffinity", NULL));
    assert_int_equal(json_object_array_length(fg_json_get(t, "spec", "tolerations", NULL)), 3);
    json_object *c0 = json_object_array_get_idx(fg_json_get(t, "spec", "containers", NULL), 0);
    assert_string_equal(fg_json_get_str(c0, "name", NULL), "server");
    assert_string_equal(fg_json_get_str(c0, "resources", "limits", "nvidia.com/gpu", NULL), "1");
    assert_null(fg_json_get(c0, "env", NULL));
    assert_null(fg_json_get(c0, "image", NULL));
    json_object *i0 = json_object_array_get_idx(fg_json_get(t, "spec", "initContainers", NULL), 0);
    assert_string_equal(fg_json_get_str(i0, "resources", "requests", "cpu", NULL), "100m");
    assert_string_equal(fg_json_get_str(t, "status", "phase", NULL), "Running");
    assert_int_equal(json_object_array_length(fg_json_get(t, "status", "conditions", NULL)), 4);
    json_object_put(t);
    json_object_put(pod);
}

/* Pruning the pod fields in place gives exactly what the reference builds, also on odd shapes. */
static void test_pod_prune_equals_keep(void **state)
{
    (void)state;
    const char *odd[] = {
        "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\"},7,null,[1],{\"resources\":{}}]}}",
        "{\"spec\":{\"containers\":{\"name\":\"not an array\"},\"affinity\":5},\"status\":\"flat\"}",
        "{\"metadata\":{\"name\":\"n\",\"labels\":[1,2],\"x\":{\"y\":1}},\"kind\":{\"deep\":true}}",
        "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9,\"j\":10,\"k\":11,"
        "\"l\":12,\"m\":13,\"n\":14,\"o\":15,\"p\":16,\"q\":17,\"r\":18,\"s\":19,\"t\":20,\"u\":21,"
        "\"v\":22,\"w\":23,\"x\":24,\"y\":25,\"z\":26,\"aa\":27,\"ab\":28,\"ac\":29,\"ad\":30,"
        "\"ae\":31,\"af\":32,\"ag\":33,\"ah\":34,\"kind\":\"Pod\"}",
    };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0] + 20; i++) {
        json_object *a = NULL;
        if (i < sizeof odd / sizeof odd[0])
            assert_int_equal(fg_json_parse(odd[i], strlen(odd[i]), 0, &a, NULL), FG_OK);
        else
            a = fg_fake_pod_new("ns", "p", (unsigned)i, i % 2 ? "node-1" : NULL);
        json_object *b = NULL;
        assert_int_equal(fg_json_parse(fg_json_text(a, NULL), strlen(fg_json_text(a, NULL)), 0, &b, NULL), FG_OK);
        json_object *stripped = fg_transform_strip(NULL, a);
        json_object *kept = oracle_keep(stripped, fg_transform_pod_paths);
        json_object *pruned = fg_transform_keep(pod_fields(), b);
        assert_true(json_object_equal(kept, pruned));
        json_object_put(stripped);
        json_object_put(kept);
        json_object_put(pruned);
        json_object_put(a);
        json_object_put(b);
    }
    json_object *scalar = json_object_new_int(3);
    assert_null(fg_transform_keep(pod_fields(), scalar)); /* a non-object is rejected, not pruned */
    json_object_put(scalar);
}

/* A transform that rejects every pod whose name ends in an odd digit. */
static json_object *reject_odd(void *ud, json_object *obj)
{
    unsigned *calls = ud;
    (*calls)++;
    const char *name = fg_json_get_str(obj, "metadata", "name", NULL);
    if (name[strlen(name) - 1] % 2)
        return NULL;
    return fg_transform_keep(pod_fields(), obj);
}

static void test_rejecting_transform(void **state)
{
    (void)state;
    fg_clock_fake_set(1000 * FG_NS_PER_S);
    struct fg_fake_listwatch *fake = fg_fake_listwatch_new("Pod");
    for (unsigned i = 0; i < 4; i++) {
        json_object *pod = fg_fake_pod_new("ml", "p", i, "n");
        assert_true(fg_fake_listwatch_apply(fake, FG_WATCH_ADDED, pod) > 0);
        json_object_put(pod);
    }
    unsigned calls = 0;
    struct fg_informer_opts opts = FG_INFORMER_OPTS_DEFAULT;
    opts.reflector.transform = reject_odd;
    opts.reflector.transform_ud = &calls;
    struct fg_informer *inf = fg_informer_new(fg_fake_listwatch_base(fake), &opts);
    assert_int_equal(fg_informer_start(inf), FG_OK);
    fg_fake_listwatch_run(fake);
    assert_true(fg_informer_has_synced(inf));
    assert_int_equal(calls, 4);
    struct fg_store *store = fg_informer_store(inf);
    assert_int_equal(fg_store_len(store), 2);
    struct fg_kobj *k = fg_store_get(store, "ml/p-2");
    assert_non_null(k);
    assert_null(strstr(fg_kobj_text(k, NULL), "managedFields"));
    fg_kobj_unref(k);
    assert_int_equal(fg_reflector_stats(fg_informer_reflector(inf))->bad_objects, 2);

    /* A watch event the transform rejects is skipped too, and the stream goes on. */
    json_object *pod = fg_fake_pod_new("ml", "p", 5, "n");
    fg_fake_listwatch_apply(fake, FG_WATCH_ADDED, pod);
    json_object_put(pod);
    pod = fg_fake_pod_new("ml", "p", 6, "n");
    fg_fake_listwatch_apply(fake, FG_WATCH_ADDED, pod);
    json_object_put(pod);
    assert_true(fg_fake_listwatch_stats(fake)->watching);
    assert_int_equal(fg_store_len(store), 3);
    fg_informer_free(inf);
    fg_clock_fake_clear();
}

int main(void)
{
    fg_log_set_level(FG_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fake_pod_is_realistic),
        cmocka_unit_test(test_strip),
        cmocka_unit_test(test_keep_paths),
        cmocka_unit_test(test_pod_transform),
        cmocka_unit_test(test_pod_prune_equals_keep),
        cmocka_unit_test(test_rejecting_transform),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    fg_fieldset_free(pod_fields());
    return failed;
}
