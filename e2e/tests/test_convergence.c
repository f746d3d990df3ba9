/*
 * Convergence under faults: informers end up equal to the server, whatever the server does to them.
 *
 * A writer thread makes at least 10,000 successful creates, updates (merge patches and full PUTs)
 * and deletes of pods in two namespaces while a fault thread keeps dropping watches, expiring them
 * with 410, compacting the watch history, answering bursts of requests with 429 (Retry-After) and 500,
 * and restarting the server. Three informers watch through it all — every pod (with the production
 * pod transform), one namespace, and a label selector whose matches the writer keeps flipping. Their
 * handlers check that no object's resourceVersion ever goes backwards. Once the writer stops, every
 * informer's cache must equal, key for key and resourceVersion for resourceVersion, what the server
 * lists for the same selection.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "e2e/tests/harness.h"
#include "operator/cache/informer.h"
#include "operator/cache/kube_listwatch.h"
#include "operator/cache/transform.h"

#define NAMESPACES 2
#define NAMES 150
#define KEYS (NAMESPACES * NAMES)
#define MIN_WRITES 10000
#define NINFORMERS 3

static const char *const namespaces[NAMESPACES] = { "conv-a", "conv-b" };

/* ---- informers and their resourceVersion checks ---- */

struct watched {
    const char *what;
    const char *ns;              /* NULL: all namespaces */
    const char *label_selector;  /* NULL: all */
    bool pod_transform;
    struct fg_informer *informer;
    uint64_t last_rv[KEYS];      /* loop thread only */
    unsigned long events;
    unsigned long backwards;     /* resourceVersions that went down: must stay 0 */
};

static int key_index(const char *ns, const char *name)
{
    int n = -1;
    for (int i = 0; i < NAMESPACES; i++)
        if (!strcmp(ns, namespaces[i]))
            n = i;
    int idx;
    if (n < 0 || sscanf(name, "p-%d", &idx) != 1 || idx < 0 || idx >= NAMES)
        return -1;
    return n * NAMES + idx;
}

static void saw(struct watched *w, struct fg_kobj *obj)
{
    w->events++;
    int k = key_index(fg_kobj_namespace(obj), fg_kobj_name(obj));
    if (k < 0)
        return;
    if (fg_kobj_rv(obj) < w->last_rv[k]) {
        w->backwards++;
        fprintf(stderr, "%s: %s went back from %llu to %llu\n", w->what, fg_kobj_key(obj),
                (unsigned long long)w->last_rv[k], (unsigned long long)fg_kobj_rv(obj));
    }
    w->last_rv[k] = fg_kobj_rv(obj);
}

static void on_add(void *ud, struct fg_kobj *obj)
{
    saw(ud, obj);
}

static void on_update(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    struct watched *w = ud;
    if (fg_kobj_rv(obj) < fg_kobj_rv(old))
        w->backwards++;
    saw(w, obj);
}

static void on_delete(void *ud, struct fg_kobj *obj)
{
    saw(ud, obj);
}

static struct watched informers[NINFORMERS] = {
    { .what = "all pods", .pod_transform = true },
    { .what = "namespace conv-a", .ns = "conv-a" },
    { .what = "tier=gpu", .label_selector = "tier=gpu" },
};

static struct fg_harness h;
static struct fg_fieldset *pod_fields;

static void start_informers(void *ud)
{
    (void)ud;
    static const struct fg_resource_handler handler = { on_add, on_update, on_delete };
    pod_fields = fg_fieldset_new(fg_transform_pod_paths);
    for (int i = 0; i < NINFORMERS; i++) {
        struct watched *w = &informers[i];
        struct fg_kube_listwatch_opts lwo = FG_KUBE_LISTWATCH_OPTS_DEFAULT;
        lwo.label_selector = w->label_selector;
        lwo.page_limit = 50;
        lwo.cut_managed_fields = w->pod_transform;
        struct fg_informer_opts io = FG_INFORMER_OPTS_DEFAULT;
        io.reflector.backoff_initial_ns = 20 * FG_NS_PER_MS;
        io.reflector.backoff_max_ns = 500 * FG_NS_PER_MS;
        io.reflector.min_healthy_watch_ns = 0;
        if (w->pod_transform) {
            io.reflector.transform = fg_transform_keep;
            io.reflector.transform_ud = pod_fields;
        }
        w->informer = fg_informer_new(fg_kube_listwatch_new(h.loop, &fg_kube_pods, w->ns, &lwo), &io);
        assert_int_equal(fg_informer_add_handler(w->informer, &handler, w), FG_OK);
        assert_int_equal(fg_informer_start(w->informer), FG_OK);
    }
}

static void stop_informers(void *ud)
{
    (void)ud;
    for (int i = 0; i < NINFORMERS; i++) {
        fg_informer_free(informers[i].informer);
        informers[i].informer = NULL;
    }
    fg_fieldset_free(pod_fields);
    pod_fields = NULL;
}

/* ---- the writer ---- */

static atomic_bool writer_done;

struct writer_stats {
    unsigned long creates, patches, puts, deletes, failed;
};

static json_object *new_pod(const char *ns, const char *name, unsigned seq)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
             "\"labels\":{\"app\":\"conv\",\"tier\":\"%s\"},\"annotations\":{\"seq\":\"%u\"}},"
             "\"spec\":{\"schedulerName\":\"fracgpu-scheduler\",\"containers\":[{\"name\":\"main\","
             "\"image\":\"registry.example/llm:1\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
             name, ns, seq % 2 ? "gpu" : "cpu", seq);
    json_object *o = NULL;
    assert_int_equal(fg_json_parse(text, strlen(text), 0, &o, NULL), FG_OK);
    return o;
}

static enum fg_err put_update(const char *path, unsigned seq)
{
    json_object *obj = NULL;
    enum fg_err err = fg_kube_get(h.client, path, &obj, NULL);
    if (err)
        return err;
    char seqs[16];
    snprintf(seqs, sizeof seqs, "%u", seq);
    json_object *md = fg_json_ensure_obj(obj, "metadata");
    fg_json_set_str(fg_json_ensure_obj(md, "annotations"), "seq", seqs);
    fg_json_set_str(fg_json_ensure_obj(md, "labels"), "tier", seq % 2 ? "gpu" : "cpu");
    err = fg_kube_update(h.client, path, obj, NULL, NULL);
    json_object_put(obj);
    return err;
}

static void *writer(void *arg)
{
    struct writer_stats *ws = arg;
    bool exists[KEYS] = { false };
    unsigned seed = 7, seq = 0;
    while (ws->creates + ws->patches + ws->puts + ws->deletes < MIN_WRITES) {
        int k = (int)(rand_r(&seed) % KEYS);
        const char *ns = namespaces[k / NAMES];
        char name[32];
        snprintf(name, sizeof name, "p-%d", k % NAMES);
        int dice = (int)(rand_r(&seed) % 100);
        seq++;
        enum fg_err err;
        if (!exists[k]) {
            json_object *pod = new_pod(ns, name, seq);
            char *path = fg_kube_path(&fg_kube_pods, ns, NULL, NULL, NULL);
            err = fg_kube_create(h.client, path, pod, NULL, NULL);
            free(path);
            json_object_put(pod);
            if (!err)
                ws->creates++;
            if (!err || err == FG_E_KUBE_ALREADY_EXISTS)
                exists[k] = true;
        } else {
            char *path = fg_kube_path(&fg_kube_pods, ns, name, NULL, NULL);
            if (dice < 45) {
                char patch[160];
                snprintf(patch, sizeof patch,
                         "{\"metadata\":{\"labels\":{\"tier\":\"%s\"},\"annotations\":{\"seq\":\"%u\"}}}",
                         seq % 2 ? "gpu" : "cpu", seq);
                err = fg_kube_patch(h.client, path, FG_KUBE_PATCH_MERGE, patch, NULL, NULL);
                if (!err)
                    ws->patches++;
            } else if (dice < 75) {
                err = put_update(path, seq);
                if (!err)
                    ws->puts++;
            } else {
                err = fg_kube_delete(h.client, path, NULL, NULL, NULL);
                if (!err) {
                    ws->deletes++;
                    exists[k] = false;
                }
            }
            if (err == FG_E_KUBE_NOT_FOUND)
                exists[k] = false;
            free(path);
        }
        if (err && err != FG_E_KUBE_ALREADY_EXISTS && err != FG_E_KUBE_NOT_FOUND) {
            ws->failed++;
            usleep(2000); /* the server is down or refusing: do not spin */
        }
    }
    atomic_store(&writer_done, true);
    return NULL;
}

/* ---- the fault injector ---- */

static const char *const faults[] = {
    "drop-watches",
    "expire-watches",
    "compact",
    "fail?count=4&code=429&retryAfter=1",
    "fail?count=4&code=500",
    "restart?downMs=150",
};
#define NFAULTS (sizeof faults / sizeof faults[0])

struct fault_stats {
    unsigned long injected[NFAULTS];
};

static void *fault_injector(void *arg)
{
    struct fault_stats *fs = arg;
    unsigned seed = 11;
    for (unsigned round = 0; !atomic_load(&writer_done); round++) {
        usleep(30000 + rand_r(&seed) % 50000);
        /* every kind comes round regularly; the rest is random */
        size_t f = round < NFAULTS ? round : rand_r(&seed) % NFAULTS;
        if (fg_harness_fault(&h, faults[f]) == FG_OK)
            fs->injected[f]++;
    }
    return NULL;
}

/* ---- comparison ---- */

struct server_view {
    size_t n;
    char *keys[KEYS];
    uint64_t rvs[KEYS];
};

static void collect(void *ud, json_object *item)
{
    struct server_view *v = ud;
    assert_true(v->n < KEYS);
    const char *ns = fg_json_get_str(item, "metadata", "namespace", NULL);
    const char *name = fg_json_get_str(item, "metadata", "name", NULL);
    const char *rv = fg_json_get_str(item, "metadata", "resourceVersion", NULL);
    assert_non_null(ns);
    assert_non_null(name);
    assert_non_null(rv);
    v->keys[v->n] = fg_asprintf("%s/%s", ns, name);
    v->rvs[v->n] = strtoull(rv, NULL, 10);
    v->n++;
}

static void server_view_cleanup(struct server_view *v);

/* What the server holds for w's selection; retried while the last injected restart is under way. */
static void server_list(const struct watched *w, struct server_view *v)
{
    struct fg_kube_list_opts lo = { .label_selector = w->label_selector, .limit = 100 };
    enum fg_err err = FG_E_CONNECT;
    for (int attempt = 0; err && attempt < 200; attempt++) {
        memset(v, 0, sizeof *v);
        char *rv = NULL;
        err = fg_kube_list(h.client, &fg_kube_pods, w->ns, &lo, collect, v, &rv, NULL);
        free(rv);
        if (err) {
            server_view_cleanup(v);
            usleep(50000);
        }
    }
    assert_int_equal(err, FG_OK);
}

static void server_view_cleanup(struct server_view *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->keys[i]);
}

struct match_ctx {
    struct watched *w;
    struct server_view *v;
};

static bool cache_matches(void *ud)
{
    struct match_ctx *m = ud;
    struct fg_store *store = fg_informer_store(m->w->informer);
    bool same = fg_store_len(store) == m->v->n;
    for (size_t i = 0; same && i < m->v->n; i++) {
        struct fg_kobj *o = fg_store_get(store, m->v->keys[i]);
        same = o && fg_kobj_rv(o) == m->v->rvs[i];
        fg_kobj_unref(o);
    }
    return same;
}

struct snapshot {
    struct fg_reflector_stats stats[NINFORMERS];
    unsigned long events[NINFORMERS], backwards[NINFORMERS];
};

/* Handler counters and reflector stats belong to the loop thread: copy them there. */
static void take_snapshot(void *ud)
{
    struct snapshot *s = ud;
    for (int i = 0; i < NINFORMERS; i++) {
        s->stats[i] = *fg_reflector_stats(fg_informer_reflector(informers[i].informer));
        s->events[i] = informers[i].events;
        s->backwards[i] = informers[i].backwards;
    }
}

/* Prints what differs between an informer's cache and the server, for a failing run. */
static void print_differences(struct watched *w, struct server_view *v)
{
    struct fg_store *store = fg_informer_store(w->informer);
    for (size_t i = 0; i < v->n; i++) {
        struct fg_kobj *o = fg_store_get(store, v->keys[i]);
        if (!o || fg_kobj_rv(o) != v->rvs[i])
            fprintf(stderr, "  %s: server has %s at %llu, cache %llu\n", w->what, v->keys[i],
                    (unsigned long long)v->rvs[i], o ? (unsigned long long)fg_kobj_rv(o) : 0ull);
        fg_kobj_unref(o);
    }
    struct fg_kobj_list all;
    fg_store_list(store, &all);
    for (size_t i = 0; i < all.n; i++) {
        bool found = false;
        for (size_t j = 0; j < v->n && !found; j++)
            found = !strcmp(v->keys[j], fg_kobj_key(all.items[i]));
        if (!found)
            fprintf(stderr, "  %s: cache has %s at %llu, server does not\n", w->what,
                    fg_kobj_key(all.items[i]), (unsigned long long)fg_kobj_rv(all.items[i]));
    }
    fg_kobj_list_cleanup(&all);
}

static void caches_converge_under_faults(void **state)
{
    (void)state;
    char msg[FG_ERRMSG_MAX] = "";
    struct fg_harness_opts ho = { .history = 2000 };
    enum fg_log_level level = FG_LOG_ERROR;
    if (getenv("FG_LOG_LEVEL"))
        fg_log_parse_level(getenv("FG_LOG_LEVEL"), &level); /* for reading a failing run */
    fg_log_set_level(level);
    assert_int_equal(fg_harness_start(&h, &ho, msg), FG_OK);
    for (int i = 0; i < NAMESPACES; i++)
        assert_int_equal(fg_harness_namespace(&h, namespaces[i]), FG_OK);
    assert_int_equal(fg_kube_loop_call_wait(h.loop, start_informers, NULL, 10000), FG_OK);

    struct writer_stats ws = { 0 };
    struct fault_stats fs = { 0 };
    pthread_t wt, ft;
    assert_int_equal(pthread_create(&wt, NULL, writer, &ws), 0);
    assert_int_equal(pthread_create(&ft, NULL, fault_injector, &fs), 0);
    pthread_join(wt, NULL);
    pthread_join(ft, NULL);

    unsigned long total = ws.creates + ws.patches + ws.puts + ws.deletes;
    printf("writes: %lu (creates %lu, merge patches %lu, updates %lu, deletes %lu), refused or failed %lu\n",
           total, ws.creates, ws.patches, ws.puts, ws.deletes, ws.failed);
    printf("faults:");
    for (size_t f = 0; f < NFAULTS; f++) {
        printf(" %s=%lu", faults[f], fs.injected[f]);
        assert_true(fs.injected[f] > 0);
    }
    printf("\n");
    assert_true(total >= MIN_WRITES);
    assert_true(ws.creates > 0 && ws.patches > 0 && ws.puts > 0 && ws.deletes > 0);

    bool converged[NINFORMERS];
    struct server_view views[NINFORMERS];
    for (int i = 0; i < NINFORMERS; i++) {
        server_list(&informers[i], &views[i]);
        struct match_ctx m = { &informers[i], &views[i] };
        converged[i] = fg_harness_wait(cache_matches, &m, 30000);
        if (!converged[i])
            print_differences(&informers[i], &views[i]);
    }
    struct snapshot snap;
    assert_int_equal(fg_kube_loop_call_wait(h.loop, take_snapshot, &snap, 10000), FG_OK);
    for (int i = 0; i < NINFORMERS; i++) {
        const struct fg_reflector_stats *rs = &snap.stats[i];
        printf("%-17s server %zu objects, cache %zu, handler events %lu, lists %llu, failures %llu, "
               "stale dropped %llu, went backwards %lu\n",
               informers[i].what, views[i].n, fg_store_len(fg_informer_store(informers[i].informer)),
               snap.events[i], (unsigned long long)rs->lists, (unsigned long long)rs->failures,
               (unsigned long long)rs->dropped_stale, snap.backwards[i]);
        assert_true(converged[i]);
        assert_int_equal(snap.backwards[i], 0);
        assert_true(rs->lists > 1);    /* the faults forced relists */
        server_view_cleanup(&views[i]);
    }
    assert_int_equal(fg_kube_loop_call_wait(h.loop, stop_informers, NULL, 10000), FG_OK);
    fg_harness_stop(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(caches_converge_under_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
