/*
 * Manager controllers against the test API server: a primary's updates pass through the
 * controller's predicate (adds always reach it); a controller without a primary gets its keys from
 * its watches' map functions, every cached object mapped when it starts; and keys fed from another
 * thread (fg_manager_controller_enqueue) are reconciled.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/log.h"
#include "e2e/tests/harness.h"
#include "operator/kube/resource.h"
#include "operator/manager/controllers.h"
#include "operator/manager/manager.h"

static struct fg_harness h;

/* What reconciles saw: each key and how often. */
struct seen {
    pthread_mutex_t mu;
    char keys[64][128];
    unsigned count[64];
    size_t n;
};

static struct fg_reconcile_result record(void *ud, const char *key)
{
    struct seen *s = ud;
    pthread_mutex_lock(&s->mu);
    size_t i = 0;
    while (i < s->n && strcmp(s->keys[i], key))
        i++;
    if (i == s->n && s->n < 64)
        snprintf(s->keys[s->n++], sizeof s->keys[0], "%s", key);
    if (i < 64)
        s->count[i]++;
    pthread_mutex_unlock(&s->mu);
    return fg_reconcile_ok();
}

static unsigned times(struct seen *s, const char *key)
{
    pthread_mutex_lock(&s->mu);
    unsigned n = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->keys[i], key))
            n = s->count[i];
    pthread_mutex_unlock(&s->mu);
    return n;
}

struct wait_for {
    struct seen *s;
    const char *key;
    unsigned at_least;
};

static bool reached(void *ud)
{
    struct wait_for *w = ud;
    return times(w->s, w->key) >= w->at_least;
}

static void expect_times(struct seen *s, const char *key, unsigned n)
{
    struct wait_for w = { s, key, n };
    if (!fg_harness_wait(reached, &w, 5000))
        fail_msg("%s reconciled %u times, not %u", key, times(s, key), n);
}

static void configmap(const char *name, const char *data, const char *label, bool update)
{
    json_object *cm = json_object_new_object();
    fg_json_set_str(cm, "apiVersion", "v1");
    fg_json_set_str(cm, "kind", "ConfigMap");
    json_object *meta = fg_json_ensure_obj(cm, "metadata");
    fg_json_set_str(meta, "name", name);
    fg_json_set_str(meta, "namespace", "default");
    fg_json_set_str(fg_json_ensure_obj(meta, "labels"), "l", label);
    fg_json_set_str(fg_json_ensure_obj(cm, "data"), "d", data);
    char *path = fg_kube_path(&fg_kube_configmaps, "default", update ? name : NULL, NULL, NULL);
    enum fg_err err = update ? fg_kube_update(h.client, path, cm, NULL, NULL) : fg_kube_create(h.client, path, cm, NULL, NULL);
    free(path);
    json_object_put(cm);
    assert_int_equal(err, FG_OK);
}

static struct fg_manager *new_manager(void)
{
    struct fg_manager_opts o = FG_MANAGER_OPTS_DEFAULT;
    o.component = "test";
    o.kubeconfig = h.kubeconfig;
    o.listen = NULL;
    o.leader.enabled = false;
    struct fg_manager *m = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_manager_new(&o, &m, msg) != FG_OK)
        fail_msg("manager: %s", msg);
    return m;
}

static struct fg_informer *configmaps(struct fg_manager *m)
{
    struct fg_informer *inf = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_informer_factory_get(fg_manager_informers(m),
                                             &(struct fg_informer_want){ .resource = &fg_kube_configmaps, .ns = "default" },
                                             &inf, msg),
                     FG_OK);
    return inf;
}

/* Passes an update only when the data changed. */
static bool data_changed(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    (void)ud;
    json_object *a = NULL, *b = NULL;
    bool changed = fg_kobj_parse(old, &a, NULL) != FG_OK || fg_kobj_parse(obj, &b, NULL) != FG_OK ||
                   !json_object_equal(fg_json_get(a, "data", NULL), fg_json_get(b, "data", NULL));
    json_object_put(a);
    json_object_put(b);
    return changed;
}

static void test_primary_predicate(void **state)
{
    (void)state;
    struct seen s = { .mu = PTHREAD_MUTEX_INITIALIZER };
    struct fg_manager *m = new_manager();
    struct fg_controller_spec spec = { .name = "pred", .workers = 1, .reconcile = record, .ud = &s,
                                       .primary = configmaps(m), .primary_pred = data_changed };
    struct fg_manager_controller *c;
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_manager_controller(m, &spec, &c, msg), FG_OK);
    configmap("pred", "1", "a", false);   /* before the start: reconciled once, at the start */
    assert_int_equal(fg_manager_start(m, msg), FG_OK);
    expect_times(&s, "default/pred", 1);
    configmap("pred", "1", "b", true);   /* a label: the predicate drops it */
    configmap("pred", "2", "b", true);   /* the data: reconciled */
    expect_times(&s, "default/pred", 2);
    fg_manager_stop(m);
    assert_int_equal(times(&s, "default/pred"), 2);
    fg_manager_free(m);
}

static void map_prefixed(void *ud, struct fg_kobj *obj, struct fg_keys *out)
{
    (void)ud;
    char key[160];
    snprintf(key, sizeof key, "configmap|%s", fg_kobj_name(obj));
    fg_keys_add(out, key);
}

struct feeder {
    struct fg_manager_controller *c;
};

static void *feed(void *ud)
{
    struct feeder *f = ud;
    fg_manager_controller_enqueue(f->c, "from-another-thread");
    return NULL;
}

static void test_watches_only_and_enqueue(void **state)
{
    (void)state;
    configmap("before", "1", "a", false);   /* exists before the controller starts */
    struct seen s = { .mu = PTHREAD_MUTEX_INITIALIZER };
    struct fg_manager *m = new_manager();
    struct fg_controller_spec spec = { .name = "noprimary", .workers = 2, .reconcile = record, .ud = &s };
    struct fg_manager_controller *c;
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_manager_controller(m, &spec, &c, msg), FG_OK);
    assert_int_equal(fg_manager_watches(c, configmaps(m), map_prefixed, NULL, NULL, msg), FG_OK);
    assert_int_equal(fg_manager_start(m, msg), FG_OK);
    expect_times(&s, "configmap|before", 1);   /* mapped at the start */
    configmap("after", "1", "a", false);
    expect_times(&s, "configmap|after", 1);
    struct feeder f = { c };
    pthread_t th;
    pthread_create(&th, NULL, feed, &f);
    pthread_join(th, NULL);
    expect_times(&s, "from-another-thread", 1);
    fg_manager_stop(m);
    fg_manager_free(m);
}

static int setup(void **state)
{
    (void)state;
    fg_log_set_level(FG_LOG_WARN);
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_harness_start(&h, NULL, msg) != FG_OK)
        fail_msg("harness: %s", msg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fg_harness_stop(&h);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_primary_predicate),
        cmocka_unit_test(test_watches_only_and_enqueue),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
