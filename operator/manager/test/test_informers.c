/*
 * The shared informer factory over fake lister-watchers: consumers of one (resource, namespace,
 * selectors) share one informer and one copy of each object, which keeps the union of the fields
 * they read; a consumer of the whole object keeps everything but managedFields; other selectors get
 * informers of their own; indexes and typed decodes are shared or refused; nothing can be asked for
 * after start; and the metrics collector names each informer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "operator/cache/fake_listwatch.h"
#include "operator/cache/fake_pods.h"
#include "operator/manager/informers.h"

#define MAX_FAKES 8

/* The fakes the factory made, in order, with what it asked of them. */
struct fakes {
    struct fg_fake_listwatch *made[MAX_FAKES];
    char what[MAX_FAKES][128];
    size_t n;
};

static struct fg_listwatch *new_fake(void *ud, const struct fg_kube_resource *res, const char *ns,
                                     const char *label_selector, const char *field_selector, bool cut)
{
    struct fakes *f = ud;
    assert_true(f->n < MAX_FAKES);
    assert_true(cut);
    snprintf(f->what[f->n], sizeof f->what[f->n], "%s %s %s %s", res->plural, ns ? ns : "-",
             label_selector ? label_selector : "-", field_selector ? field_selector : "-");
    f->made[f->n] = fg_fake_listwatch_new(res->kind);
    return fg_fake_listwatch_base(f->made[f->n++]);
}

static void add_pods(struct fg_fake_listwatch *fake, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        json_object *pod = fg_fake_pod_new("ml", "llm", i, "node-1");
        assert_true(fg_fake_listwatch_apply(fake, FG_WATCH_ADDED, pod) > 0);
        json_object_put(pod);
    }
}

static json_object *cached(struct fg_informer *inf, const char *key)
{
    struct fg_kobj *o = fg_store_get(fg_informer_store(inf), key);
    if (!o) {
        struct fg_kobj_list all;
        fg_store_list(fg_informer_store(inf), &all);
        for (size_t i = 0; i < all.n; i++)
            fprintf(stderr, "cached: %s\n", fg_kobj_key(all.items[i]));
        fg_kobj_list_cleanup(&all);
        fail_msg("%s is not cached", key);
    }
    json_object *obj = NULL;
    assert_int_equal(fg_kobj_parse(o, &obj, NULL), FG_OK);
    fg_kobj_unref(o);
    return obj;
}

static const char *const scheduler_fields[] = { "metadata.name", "metadata.namespace", "metadata.uid",
                                                 "metadata.resourceVersion", "spec.nodeName",
                                                 "spec.containers[].resources", NULL };
static const char *const webhook_fields[] = { "metadata.name", "metadata.namespace", "metadata.resourceVersion",
                                               "metadata.labels", NULL };
static const char *const status_fields[] = { "metadata.name", "metadata.resourceVersion", "status.phase", NULL };

static void test_consumers_share_one_informer_with_the_union(void **state)
{
    (void)state;
    fg_clock_fake_set(1000 * FG_NS_PER_S);
    struct fakes fk = { 0 };
    struct fg_informer_factory *f = fg_informer_factory_new_with(new_fake, &fk, 0);
    struct fg_informer *a, *b, *c, *other;
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_pods,
                                                                           .fields = scheduler_fields }, &a, msg), FG_OK);
    assert_int_equal(fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_pods, .ns = "",
                                                                           .fields = webhook_fields }, &b, msg), FG_OK);
    assert_int_equal(fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_pods,
                                                                           .fields = status_fields }, &c, msg), FG_OK);
    assert_ptr_equal(a, b);
    assert_ptr_equal(a, c);
    /* Another selector is another informer, with only its own consumer's fields. */
    assert_int_equal(fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_pods,
                                                                           .field_selector = "spec.nodeName=node-1",
                                                                           .fields = status_fields },
                                             &other, msg), FG_OK);
    assert_ptr_not_equal(a, other);
    assert_int_equal(fg_informer_factory_len(f), 2);
    assert_string_equal(fk.what[0], "pods - - -");
    assert_string_equal(fk.what[1], "pods - - spec.nodeName=node-1");

    add_pods(fk.made[0], 3);
    add_pods(fk.made[1], 1);
    assert_false(fg_informer_factory_synced(f));
    assert_int_equal(fg_informer_factory_start(f), FG_OK);
    fg_fake_listwatch_run(fk.made[0]);
    assert_false(fg_informer_factory_synced(f));
    fg_fake_listwatch_run(fk.made[1]);
    assert_true(fg_informer_factory_synced(f));
    assert_int_equal(fg_store_len(fg_informer_store(a)), 3);

    json_object *pod = cached(a, "ml/llm-1");
    assert_non_null(fg_json_get(pod, "spec", "nodeName", NULL));                  /* scheduler */
    assert_non_null(fg_json_get(pod, "metadata", "labels", NULL));                /* webhook */
    assert_non_null(fg_json_get(pod, "status", "phase", NULL));                   /* status reader */
    assert_non_null(fg_json_get(pod, "spec", "containers", NULL));
    assert_null(fg_json_get(pod, "metadata", "managedFields", NULL));
    assert_null(fg_json_get(pod, "metadata", "annotations", NULL));               /* nobody reads them */
    assert_null(fg_json_get(pod, "status", "containerStatuses", NULL));
    assert_null(fg_json_get(json_object_array_get_idx(fg_json_get(pod, "spec", "containers", NULL), 0), "env", NULL));
    json_object_put(pod);
    pod = cached(other, "ml/llm-0");
    assert_non_null(fg_json_get(pod, "status", "phase", NULL));
    assert_null(fg_json_get(pod, "metadata", "labels", NULL));
    assert_null(fg_json_get(pod, "spec", NULL));
    assert_string_equal(fg_json_get_str(pod, "kind", NULL), "Pod");       /* identity is always kept */
    assert_non_null(fg_json_get_str(pod, "metadata", "uid", NULL));
    json_object_put(pod);

    /* Nothing can be asked for once started. */
    struct fg_informer *late;
    assert_int_equal(fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_nodes }, &late, msg),
                     FG_E_BUSY);
    assert_non_null(strstr(msg, "nodes"));
    fg_informer_factory_stop(f);
    fg_informer_factory_free(f);
    fg_clock_fake_clear();
}

static void test_whole_object_consumer(void **state)
{
    (void)state;
    fg_clock_fake_set(1000 * FG_NS_PER_S);
    struct fakes fk = { 0 };
    struct fg_informer_factory *f = fg_informer_factory_new_with(new_fake, &fk, 0);
    struct fg_informer *a, *b;
    assert_int_equal(fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_pods,
                                                                           .fields = status_fields }, &a, NULL), FG_OK);
    assert_int_equal(fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_pods }, &b, NULL),
                     FG_OK);
    assert_ptr_equal(a, b);
    add_pods(fk.made[0], 1);
    assert_int_equal(fg_informer_factory_start(f), FG_OK);
    fg_fake_listwatch_run(fk.made[0]);
    json_object *pod = cached(a, "ml/llm-0");
    assert_null(fg_json_get(pod, "metadata", "managedFields", NULL));
    /* Whole means whole: the last-applied annotation stays (an object written back keeps it). */
    assert_non_null(fg_json_get(pod, "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration",
                                NULL));
    assert_non_null(fg_json_get(pod, "status", "containerStatuses", NULL));
    json_object_put(pod);
    fg_informer_factory_free(f);
    fg_clock_fake_clear();
}

static size_t index_node(void *ud, json_object *obj, const char **values, size_t max)
{
    return fg_index_by_node_name(ud, obj, values, max);
}

struct phase_value {
    bool known;
    char phase[16];
};

static void decode_phase(void *ud, json_object *obj, void *value)
{
    (*(unsigned *)ud)++;
    struct phase_value *v = value;
    const char *phase = fg_json_get_str(obj, "status", "phase", NULL);
    v->known = phase != NULL;
    snprintf(v->phase, sizeof v->phase, "%s", phase ? phase : "");
}

static void decode_other(void *ud, json_object *obj, void *value)
{
    decode_phase(ud, obj, value);
}

static void test_indexes_and_decodes(void **state)
{
    (void)state;
    fg_clock_fake_set(1000 * FG_NS_PER_S);
    struct fakes fk = { 0 };
    struct fg_informer_factory *f = fg_informer_factory_new_with(new_fake, &fk, 0);
    struct fg_informer *a;
    assert_int_equal(fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = &fg_kube_pods,
                                                                           .fields = scheduler_fields }, &a, NULL), FG_OK);
    assert_int_equal(fg_informer_factory_index(f, a, "node", fg_index_by_node_name, NULL), FG_OK);
    assert_int_equal(fg_informer_factory_index(f, a, "node", fg_index_by_node_name, NULL), FG_OK);   /* shared */
    assert_int_equal(fg_informer_factory_index(f, a, "node", index_node, NULL), FG_E_INVAL);       /* clash */
    unsigned decodes = 0;
    size_t size = sizeof(struct phase_value);
    assert_int_equal(fg_informer_factory_decode(f, a, decode_phase, &decodes, size), FG_OK);
    assert_int_equal(fg_informer_factory_decode(f, a, decode_phase, &decodes, size), FG_OK);
    assert_int_equal(fg_informer_factory_decode(f, a, decode_other, &decodes, size), FG_E_INVAL);
    assert_int_equal(fg_informer_factory_decode(f, a, decode_phase, &decodes, size + 8), FG_E_INVAL);
    struct fg_informer *stranger = (struct fg_informer *)&fk;   /* not one of the factory's */
    assert_int_equal(fg_informer_factory_index(f, stranger, "x", fg_index_by_node_name, NULL), FG_E_INVAL);
    assert_int_equal(fg_informer_factory_get(f, &(struct fg_informer_want){ .resource = NULL }, &a, NULL), FG_E_INVAL);

    add_pods(fk.made[0], 2);
    assert_int_equal(fg_informer_factory_start(f), FG_OK);
    fg_fake_listwatch_run(fk.made[0]);
    assert_int_equal(decodes, 2);
    struct fg_kobj_list on_node = { 0 };
    assert_int_equal(fg_store_by_index(fg_informer_store(a), "node", "node-1", &on_node), FG_OK);
    assert_int_equal(on_node.n, 2);
    /* The decode saw the pruned object: status.phase is not among the scheduler's fields. */
    assert_false(((const struct phase_value *)fg_kobj_value(on_node.items[0]))->known);
    fg_kobj_list_cleanup(&on_node);
    assert_int_equal(fg_informer_factory_index(f, a, "other", fg_index_by_namespace, NULL), FG_E_BUSY);

    struct fg_buf out = FG_BUF_INIT;
    fg_informer_factory_collect(f, &out);
    assert_non_null(strstr(fg_buf_str(&out), "fracgpu_informer_cached_objects{resource=\"pods\"} 2\n"));
    assert_non_null(strstr(fg_buf_str(&out), "fracgpu_informer_synced{resource=\"pods\"} 1\n"));
    fg_buf_cleanup(&out);
    fg_informer_factory_free(f);
    fg_clock_fake_clear();
}

int main(void)
{
    fg_log_set_level(FG_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_consumers_share_one_informer_with_the_union),
        cmocka_unit_test(test_whole_object_consumer),
        cmocka_unit_test(test_indexes_and_decodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
