/* Tests for the informer: handlers, has_synced, periodic resync, stop, readers on other threads, and
 * the typed value decoded once per cached object. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "operator/cache/fake_listwatch.h"
#include "operator/cache/fake_pods.h"
#include "operator/cache/informer.h"

struct counts {
    unsigned adds, updates, deletes, resyncs;
};

static void c_add(void *ud, struct fg_kobj *obj)
{
    (void)obj;
    ((struct counts *)ud)->adds++;
}

static void c_update(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    struct counts *c = ud;
    if (old == obj)
        c->resyncs++;
    else
        c->updates++;
}

static void c_delete(void *ud, struct fg_kobj *obj)
{
    (void)obj;
    ((struct counts *)ud)->deletes++;
}

static const struct fg_resource_handler counting = { c_add, c_update, c_delete };

static void apply_pod(struct fg_fake_listwatch *fake, enum fg_watch_type type, unsigned i, const char *node)
{
    json_object *pod = fg_fake_pod_new("ml", "llm", i, node);
    assert_true(fg_fake_listwatch_apply(fake, type, pod) > 0);
    json_object_put(pod);
}

static void test_handlers_and_resync(void **state)
{
    (void)state;
    fg_clock_fake_set(1000 * FG_NS_PER_S);
    struct fg_fake_listwatch *fake = fg_fake_listwatch_new("Pod");
    for (unsigned i = 0; i < 5; i++)
        apply_pod(fake, FG_WATCH_ADDED, i, "n1");
    struct fg_informer_opts opts = FG_INFORMER_OPTS_DEFAULT;
    struct fg_fieldset *fields = fg_fieldset_new(fg_transform_pod_paths);
    opts.reflector.transform = fg_transform_keep;
    opts.reflector.transform_ud = fields;
    opts.resync_ns = 60 * FG_NS_PER_S;
    struct fg_informer *inf = fg_informer_new(fg_fake_listwatch_base(fake), &opts);
    struct counts a = { 0 }, b = { 0 };
    assert_int_equal(fg_informer_add_handler(inf, &counting, &a), FG_OK);
    assert_int_equal(fg_informer_add_handler(inf, &(struct fg_resource_handler){ .on_add = c_add }, &b), FG_OK);
    assert_int_equal(fg_store_add_indexer(fg_informer_store(inf), "node", fg_index_by_node_name, NULL), FG_OK);
    assert_false(fg_informer_has_synced(inf));
    assert_int_equal(fg_informer_start(inf), FG_OK);
    assert_int_equal(fg_informer_start(inf), FG_E_BUSY);
    assert_int_equal(fg_informer_add_handler(inf, &counting, &b), FG_E_BUSY);
    fg_fake_listwatch_run(fake);
    assert_true(fg_informer_has_synced(inf));
    assert_int_equal(a.adds, 5);
    assert_int_equal(b.adds, 5);

    apply_pod(fake, FG_WATCH_MODIFIED, 1, "n2");
    apply_pod(fake, FG_WATCH_DELETED, 2, "n1");
    assert_int_equal(a.updates, 1);
    assert_int_equal(a.deletes, 1);
    struct fg_kobj_list l;
    assert_int_equal(fg_store_by_index(fg_informer_store(inf), "node", "n1", &l), FG_OK);
    assert_int_equal(l.n, 3);
    fg_kobj_list_cleanup(&l);

    /* Nothing before the period; then every cached object once, as an update with old == new. */
    fg_clock_fake_advance(59 * FG_NS_PER_S);
    fg_fake_listwatch_run(fake);
    assert_int_equal(a.resyncs, 0);
    fg_clock_fake_advance(1 * FG_NS_PER_S);
    fg_fake_listwatch_run(fake);
    assert_int_equal(a.resyncs, 4);
    fg_clock_fake_advance(60 * FG_NS_PER_S);
    fg_fake_listwatch_run(fake);
    assert_int_equal(a.resyncs, 8);
    assert_int_equal(a.updates, 1);

    /* After stop, nothing more reaches the handlers. */
    fg_informer_stop(inf);
    fg_clock_fake_advance(600 * FG_NS_PER_S);
    fg_fake_listwatch_run(fake);
    assert_int_equal(a.resyncs, 8);
    fg_informer_free(inf);
    fg_fieldset_free(fields);
    fg_clock_fake_clear();
}

struct reader {
    struct fg_store *store;
    atomic_bool stop;
    unsigned long reads;
    bool bad;
};

static void *read_loop(void *arg)
{
    struct reader *rd = arg;
    char key[32];
    for (unsigned i = 0; !atomic_load(&rd->stop); i++) {
        snprintf(key, sizeof(key), "ml/llm-%u", i % 20);
        struct fg_kobj *k = fg_store_get(rd->store, key);
        if (!k)
            continue;
        json_object *o = NULL;
        if (fg_kobj_parse(k, &o, NULL) != FG_OK || !fg_str_eq(fg_json_get_str(o, "metadata", "name", NULL), fg_kobj_name(k)))
            rd->bad = true;
        json_object_put(o);
        fg_kobj_unref(k);
        rd->reads++;
    }
    return NULL;
}

static void test_readers_on_other_threads(void **state)
{
    (void)state;
    struct fg_fake_listwatch *fake = fg_fake_listwatch_new("Pod");
    struct fg_informer_opts opts = FG_INFORMER_OPTS_DEFAULT;
    struct fg_fieldset *fields = fg_fieldset_new(fg_transform_pod_paths);
    opts.reflector.transform = fg_transform_keep;
    opts.reflector.transform_ud = fields;
    struct fg_informer *inf = fg_informer_new(fg_fake_listwatch_base(fake), &opts);
    assert_int_equal(fg_informer_start(inf), FG_OK);
    fg_fake_listwatch_run(fake);
    struct reader rd = { .store = fg_informer_store(inf) };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, read_loop, &rd), 0);
    for (unsigned i = 0; i < 1000; i++)
        apply_pod(fake, i % 7 == 6 ? FG_WATCH_DELETED : FG_WATCH_MODIFIED, i % 20, i % 2 ? "n1" : "n2");
    atomic_store(&rd.stop, true);
    pthread_join(t, NULL);
    assert_false(rd.bad);
    fg_informer_free(inf);
    fg_fieldset_free(fields);
}

/* A typed value: the pod's node, decoded once when the pod is cached. */
struct pod_node {
    bool scheduled;
    char node[64];
};

static void decode_pod_node(void *ud, json_object *obj, void *value)
{
    (*(unsigned *)ud)++;
    struct pod_node *v = value;
    const char *node = fg_json_get_str(obj, "spec", "nodeName", NULL);
    v->scheduled = node != NULL;
    snprintf(v->node, sizeof v->node, "%s", node ? node : "");
}

static void test_typed_values(void **state)
{
    (void)state;
    fg_clock_fake_set(1000 * FG_NS_PER_S);
    struct fg_fake_listwatch *fake = fg_fake_listwatch_new("Pod");
    apply_pod(fake, FG_WATCH_ADDED, 1, "n1");
    apply_pod(fake, FG_WATCH_ADDED, 2, NULL);
    unsigned decodes = 0;
    struct fg_informer_opts opts = FG_INFORMER_OPTS_DEFAULT;
    opts.reflector.decode = decode_pod_node;
    opts.reflector.decode_ud = &decodes;
    opts.reflector.value_size = sizeof(struct pod_node);
    struct fg_informer *inf = fg_informer_new(fg_fake_listwatch_base(fake), &opts);
    assert_int_equal(fg_informer_start(inf), FG_OK);
    fg_fake_listwatch_run(fake);
    assert_int_equal(decodes, 2);
    struct fg_kobj *o = fg_store_get(fg_informer_store(inf), "ml/llm-1");
    assert_non_null(o);
    const struct pod_node *v = fg_kobj_value(o);
    assert_true(((uintptr_t)v & 15) == 0);
    assert_true(v->scheduled);
    assert_string_equal(v->node, "n1");
    size_t with_value = fg_kobj_size(o);
    apply_pod(fake, FG_WATCH_MODIFIED, 1, "n2");
    /* The object a reader holds keeps its value; the new one has its own. */
    assert_string_equal(v->node, "n1");
    fg_kobj_unref(o);
    o = fg_store_get(fg_informer_store(inf), "ml/llm-1");
    assert_string_equal(((const struct pod_node *)fg_kobj_value(o))->node, "n2");
    fg_kobj_unref(o);
    o = fg_store_get(fg_informer_store(inf), "ml/llm-2");
    assert_false(((const struct pod_node *)fg_kobj_value(o))->scheduled);
    fg_kobj_unref(o);
    assert_int_equal(decodes, 3);
    fg_informer_free(inf);

    /* Without a decode there is no value and no room for one. */
    fake = fg_fake_listwatch_new("Pod");
    apply_pod(fake, FG_WATCH_ADDED, 1, "n1");
    inf = fg_informer_new(fg_fake_listwatch_base(fake), NULL);
    assert_int_equal(fg_informer_start(inf), FG_OK);
    fg_fake_listwatch_run(fake);
    o = fg_store_get(fg_informer_store(inf), "ml/llm-1");
    assert_null(fg_kobj_value(o));
    assert_true(fg_kobj_size(o) + sizeof(struct pod_node) <= with_value);
    fg_kobj_unref(o);
    fg_informer_free(inf);
    fg_clock_fake_clear();
}

int main(void)
{
    fg_log_set_level(FG_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handlers_and_resync),
        cmocka_unit_test(test_readers_on_other_threads),
        cmocka_unit_test(test_typed_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
