/* The grant key reconciler against the test API server.
 *   - On a manager, as `fracgpu operator` runs it: the Secret is created when missing, with a usable
 *     key and a KeyIssued Event; a valid one is then left alone (no write of its own wakes it again);
 *     a key someone broke is replaced, with a Warning KeyRepaired that says what was wrong; a deleted
 *     Secret comes back. No log line and no Event ever carries a key.
 *   - One convergence at a time, at chosen times: a rotation moves key to previous (a grant signed
 *     before it still verifies with the keys after it), the grace then drops previous; a writer that
 *     works from a Secret someone else has just rotated gets 409, reads it again and writes nothing —
 *     the other's key survives — and one that believes the Secret missing meets AlreadyExists and
 *     keeps the Secret that is there. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/timefmt.h"
#include "e2e/tests/harness.h"
#include "reconcilers/grant.h"
#include "reconcilers/grant_key_reconciler.h"

#define NS "fracgpu-system"
#define SECRETS "/api/v1/namespaces/%s/secrets"

static struct fg_harness h;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static struct fg_buf logs; /* every log line of the run, to look for keys in */

static void sink(void *ud, const char *line, unsigned long len)
{
    (void)ud;
    pthread_mutex_lock(&log_mu);
    if (fg_buf_append(&logs, line, len) != FG_OK)
        abort();
    pthread_mutex_unlock(&log_mu);
}

static json_object *get_secret(const char *ns, const char *name)
{
    char path[256];
    snprintf(path, sizeof(path), SECRETS "/%s", ns, name);
    json_object *o = NULL;
    struct fg_kube_status st = { 0 };
    if (fg_kube_get(h.client, path, &o, &st) != FG_OK)
        o = NULL;
    fg_kube_status_cleanup(&st);
    return o;
}

/* Waits for the Secret to hold a usable key other than `not` (NULL: any); returns it, base64. */
struct usable {
    const char *not;
    char *key;
};

static bool has_usable_key(void *ud)
{
    struct usable *u = ud;
    json_object *s = get_secret(NS, FG_SECRET_GRANT_KEY);
    struct fg_grant_keys k;
    char msg[FG_ERRMSG_MAX];
    const char *key = fg_json_get_str(s, "data", "key", NULL);
    bool ok = s && fg_grant_keys_from_secret(s, &k, msg) == FG_OK && (!u->not || strcmp(key, u->not));
    if (ok)
        u->key = strdup(key);
    json_object_put(s);
    return ok;
}

static char *wait_usable_key(const char *not)
{
    struct usable u = { not, NULL };
    if (!fg_harness_wait(has_usable_key, &u, 15000)) {
        json_object *s = get_secret(NS, FG_SECRET_GRANT_KEY);
        fail_msg("no usable key%s: %s", not ? " other than the old one" : "",
                 s ? json_object_to_json_string(s) : "(none)");
    }
    return u.key;
}

/* The first Event about the Secret with this reason, or NULL. */
static json_object *event(const char *reason)
{
    json_object *list = NULL, *found = NULL;
    struct fg_kube_status st = { 0 };
    if (fg_kube_get(h.client, "/api/v1/namespaces/" NS "/events", &list, &st) != FG_OK)
        list = NULL;
    fg_kube_status_cleanup(&st);
    json_object *items = fg_json_get(list, "items", NULL);
    for (size_t i = 0; i < fg_json_array_len(items) && !found; i++) {
        json_object *e = json_object_array_get_idx(items, i);
        if (!strcmp(fg_json_get_str(e, "reason", NULL), reason) &&
            !strcmp(fg_json_get_str(e, "involvedObject", "name", NULL), FG_SECRET_GRANT_KEY))
            found = json_object_get(e);
    }
    json_object_put(list);
    return found;
}

static bool has_event(void *ud)
{
    json_object *e = event(ud);
    json_object_put(e);
    return e != NULL;
}

static void expect_event(const char *reason, const char *type, const char *says)
{
    if (!fg_harness_wait(has_event, (void *)reason, 10000))
        fail_msg("no %s Event", reason);
    json_object *e = event(reason);
    assert_string_equal(fg_json_get_str(e, "type", NULL), type);
    const char *msg = fg_json_get_str(e, "message", NULL);
    if (says && !strstr(msg, says))
        fail_msg("%s Event says \"%s\", not \"%s\"", reason, msg, says);
    json_object_put(e);
}

/* No log line and no Event mentions the key (base64 as stored). */
static void expect_not_told(const char *key)
{
    pthread_mutex_lock(&log_mu);
    bool in_logs = strstr(fg_buf_str(&logs), key) != NULL;
    pthread_mutex_unlock(&log_mu);
    assert_false(in_logs);
    json_object *list = NULL;
    struct fg_kube_status st = { 0 };
    assert_int_equal(fg_kube_get(h.client, "/api/v1/namespaces/" NS "/events", &list, &st), FG_OK);
    fg_kube_status_cleanup(&st);
    assert_null(strstr(json_object_to_json_string(list), key));
    json_object_put(list);
}

static const char *rv_of(json_object *o)
{
    return fg_json_get_str(o, "metadata", "resourceVersion", NULL);
}

static void reconciler_on_a_manager(void **state)
{
    (void)state;
    struct fg_manager_opts mo = FG_MANAGER_OPTS_DEFAULT;
    mo.component = "operator";
    mo.kubeconfig = h.kubeconfig;
    mo.listen = NULL;
    mo.leader.enabled = false;
    struct fg_grant_key_opts o = { NS, FG_SECRET_GRANT_KEY, FG_GRANT_KEY_POLICY_DEFAULT, "test-replica" };
    struct fg_manager *m;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_manager_new(&mo, &m, msg) != FG_OK || fg_grant_key_reconciler_setup(m, &o, msg) != FG_OK ||
        fg_manager_start(m, msg) != FG_OK)
        fail_msg("manager: %s", msg);

    /* created when missing */
    char *first = wait_usable_key(NULL);
    expect_event("KeyIssued", "Normal", "there was no grant key");
    json_object *s = get_secret(NS, FG_SECRET_GRANT_KEY);
    int64_t when = 0;
    assert_true(fg_time_parse(fg_json_get_str(s, "metadata", "annotations", FG_ANN_GRANT_KEY_ROTATED_AT, NULL), &when));
    assert_true(when <= fg_clock_wall_ms() && when > fg_clock_wall_ms() - 60000);

    /* left alone while valid: the reconciles its own write causes write nothing */
    usleep(1500000);
    json_object *later = get_secret(NS, FG_SECRET_GRANT_KEY);
    assert_string_equal(rv_of(later), rv_of(s));
    json_object_put(later);
    json_object_put(s);

    /* a key someone broke is replaced, with a Warning that says what was wrong */
    struct fg_kube_status st = { 0 };
    assert_int_equal(fg_kube_patch(h.client, "/api/v1/namespaces/" NS "/secrets/" FG_SECRET_GRANT_KEY,
                                   FG_KUBE_PATCH_MERGE, "{\"data\":{\"key\":\"c2hvcnQ=\"}}", NULL, &st),
                     FG_OK);
    fg_kube_status_cleanup(&st);
    char *second = wait_usable_key(first);
    expect_event("KeyRepaired", "Warning", "data.key is 5 bytes");

    /* a deleted Secret comes back */
    assert_int_equal(fg_kube_delete(h.client, "/api/v1/namespaces/" NS "/secrets/" FG_SECRET_GRANT_KEY, NULL, NULL,
                                    &st),
                     FG_OK);
    fg_kube_status_cleanup(&st);
    char *third = wait_usable_key(second);
    fg_manager_free(m);

    expect_not_told(first);
    expect_not_told(second);
    expect_not_told(third);
    free(first);
    free(second);
    free(third);
}

/* One convergence of Secret ns/<name> from `believed` at now. */
static struct fg_grant_key_outcome converge(const char *ns, json_object *believed, int64_t now)
{
    struct fg_grant_key_opts o = { ns, FG_SECRET_GRANT_KEY, FG_GRANT_KEY_POLICY_DEFAULT, NULL };
    struct fg_grant_key_outcome out;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_grant_key_converge(h.client, &o, believed, now, &out, msg) != FG_OK)
        fail_msg("converge: %s", msg);
    return out;
}

static void rotation_grace_and_conflicts(void **state)
{
    (void)state;
    const char *ns = "keys-by-hand";
    assert_int_equal(fg_harness_namespace(&h, ns), FG_OK);
    const struct fg_grant_key_policy p = FG_GRANT_KEY_POLICY_DEFAULT;
    int64_t t0 = 1764151740000ll;
    struct fg_grant_key_outcome out = converge(ns, NULL, t0);
    assert_int_equal(out.step, FG_GRANT_KEY_ISSUE);
    json_object *s0 = get_secret(ns, FG_SECRET_GRANT_KEY);
    struct fg_grant_keys k0, k1;
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(fg_grant_keys_from_secret(s0, &k0, msg), FG_OK);
    struct fg_grant g = { "7c1f5e0a-5b3e-4c57-9d5d-2f7f2b0c9a11", "gpu-node-3", "GPU-5f2c1d9e", 300, 20480 };
    char before[FG_GRANT_MAX];
    assert_int_equal(fg_grant_sign(&g, k0.current, k0.current_len, before), FG_OK);

    /* the rotation: key → previous, and the grant signed before still verifies */
    int64_t t1 = t0 + p.rotation_ms;
    out = converge(ns, s0, t1);
    assert_int_equal(out.step, FG_GRANT_KEY_ROTATE);
    assert_int_equal(out.conflicts, 0);
    json_object *s1 = get_secret(ns, FG_SECRET_GRANT_KEY);
    assert_string_equal(fg_json_get_str(s1, "data", "previous", NULL), fg_json_get_str(s0, "data", "key", NULL));
    assert_int_equal(fg_grant_keys_from_secret(s1, &k1, msg), FG_OK);
    assert_int_equal(fg_grant_verify(&g, before, &k1), FG_GRANT_VALID_PREVIOUS);

    /* a second writer working from the Secret before the rotation (a replica whose cache lags, or
     * that still thinks it leads) is refused, reads again and writes nothing: the new key stays */
    out = converge(ns, s0, t1);
    assert_int_equal(out.conflicts, 1);
    assert_int_equal(out.step, FG_GRANT_KEY_KEEP);
    json_object *after = get_secret(ns, FG_SECRET_GRANT_KEY);
    assert_string_equal(rv_of(after), rv_of(s1));
    assert_string_equal(fg_json_get_str(after, "data", "key", NULL), fg_json_get_str(s1, "data", "key", NULL));
    json_object_put(after);
    /* one that believes there is no Secret meets AlreadyExists and keeps the one there */
    out = converge(ns, NULL, t1);
    assert_int_equal(out.conflicts, 1);
    assert_int_equal(out.step, FG_GRANT_KEY_KEEP);
    after = get_secret(ns, FG_SECRET_GRANT_KEY);
    assert_string_equal(rv_of(after), rv_of(s1));
    json_object_put(after);

    /* the grace: nothing before its end, then previous goes and the old grant with it */
    out = converge(ns, s1, t1 + p.grace_ms - 1000);
    assert_int_equal(out.step, FG_GRANT_KEY_KEEP);
    assert_true(out.recheck_ms == t1 + p.grace_ms);
    out = converge(ns, s1, t1 + p.grace_ms);
    assert_int_equal(out.step, FG_GRANT_KEY_RETIRE);
    json_object *s2 = get_secret(ns, FG_SECRET_GRANT_KEY);
    assert_null(fg_json_get(s2, "data", "previous", NULL));
    assert_string_equal(fg_json_get_str(s2, "data", "key", NULL), fg_json_get_str(s1, "data", "key", NULL));
    struct fg_grant_keys k2;
    assert_int_equal(fg_grant_keys_from_secret(s2, &k2, msg), FG_OK);
    assert_int_equal(fg_grant_verify(&g, before, &k2), FG_GRANT_MISMATCH);
    json_object_put(s2);
    json_object_put(s1);
    json_object_put(s0);
}

static int setup(void **state)
{
    (void)state;
    fg_buf_init(&logs, 0);
    fg_log_set_level(FG_LOG_DEBUG);
    fg_log_set_sink(sink, NULL);
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_harness_start(&h, NULL, msg) != FG_OK || fg_harness_namespace(&h, NS) != FG_OK)
        fail_msg("harness: %s", msg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fg_harness_stop(&h);
    fg_log_set_sink(NULL, NULL);
    fg_buf_cleanup(&logs);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reconciler_on_a_manager),
        cmocka_unit_test(rotation_grace_and_conflicts),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
