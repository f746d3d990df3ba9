/* The webhook's certificates over 400 simulated days: issued on an empty Secret, the serving
 * certificate renewed, the CA rotated in stages — and at every moment the certificate served is one
 * kube-apiserver trusts, with the caBundle written one step late. Unusable Secrets (garbage, a key of
 * another certificate, a serving certificate of a foreign CA or for other names, expired CAs) are
 * repaired; policies that break the rules are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/mem.h"
#include "base/pki.h"
#include "operator/webhook/certs.h"

#define DAY_MS (86400ll * 1000)
#define T0 1795000000000ll

static const char *const dns[] = { "fracgpu-webhook.fracgpu-system.svc", "fracgpu-webhook.fracgpu-system", NULL };
static const struct fg_cert_policy policy = { 90 * DAY_MS, 30 * DAY_MS, DAY_MS, dns };

static struct fg_cert_plan plan(const struct fg_cert_state *cur, const char *bundle, int64_t now)
{
    struct fg_cert_plan p;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_cert_plan(cur, bundle, &policy, now, &p, msg) != FG_OK)
        fail_msg("plan: %s", msg);
    return p;
}

/* Whether kube-apiserver, trusting bundle, accepts the certificate the Secret serves. */
static bool trusted(const struct fg_cert_state *s, const char *bundle, int64_t now)
{
    size_t n = 0;
    char **cas = fg_pki_split(bundle, &n);
    bool ok = false;
    for (size_t i = 0; i < n; i++) {
        ok = ok || fg_pki_verifies(s->tls_crt, cas[i], dns[0], now);
        free(cas[i]);
    }
    free(cas);
    struct fg_pki_pair pair = { s->tls_crt, s->tls_key };
    return ok && fg_pki_pair_matches(&pair);
}

static size_t count_cas(const char *bundle)
{
    size_t n = 0;
    char **cas = fg_pki_split(bundle, &n);
    for (size_t i = 0; i < n; i++)
        free(cas[i]);
    free(cas);
    return n;
}

static void take(struct fg_cert_state *cur, struct fg_cert_plan *p)
{
    fg_cert_state_cleanup(cur);
    *cur = p->next;
    memset(&p->next, 0, sizeof(p->next));
    fg_cert_plan_cleanup(p);
}

static void four_hundred_days(void **state)
{
    (void)state;
    struct fg_cert_state cur = { 0 };
    char *bundle = NULL;
    struct fg_cert_plan p = plan(&cur, NULL, T0);
    assert_true(p.changed);
    assert_string_equal(p.action, "IssuedCA");
    take(&cur, &p);
    bundle = fg_strdup(cur.ca_crt);
    assert_true(trusted(&cur, bundle, T0));
    assert_int_equal(count_cas(bundle), 1);

    /* nothing to do until 2/3 of the serving certificate's life */
    p = plan(&cur, bundle, T0 + DAY_MS);
    assert_false(p.changed);
    assert_int_equal(p.recheck_ms, T0 + 20 * DAY_MS);
    fg_cert_plan_cleanup(&p);

    const char *order[] = { "RotatingCA", "SwitchedServing", "RetiredCA" };
    size_t rotation_step = 0, renewals = 0, rotations = 0, max_cas = 1;
    for (int64_t now = T0; now < T0 + 400 * DAY_MS; now += DAY_MS / 4) {
        p = plan(&cur, bundle, now);
        if (!p.changed) {
            assert_true(p.recheck_ms > now);
            fg_cert_plan_cleanup(&p);
            continue;
        }
        const char *action = p.action;
        take(&cur, &p);
        /* the Secret is written first: what it serves must already be trusted */
        if (!trusted(&cur, bundle, now))
            fail_msg("day %lld: after %s the served certificate is not trusted", (long long)((now - T0) / DAY_MS),
                     action);
        free(bundle);
        bundle = fg_strdup(cur.ca_crt); /* then the caBundle */
        if (count_cas(bundle) > max_cas)
            max_cas = count_cas(bundle);
        if (!strcmp(action, "RenewedServing")) {
            renewals++;
            continue;
        }
        assert_string_equal(action, order[rotation_step]);
        rotation_step = (rotation_step + 1) % 3;
        rotations += rotation_step == 0;
    }
    /* the CA (90 days) turns over at 60-day intervals, the serving certificate (30 days) about every 20 */
    assert_true(rotations >= 5);
    assert_true(renewals >= 10);
    assert_int_equal(max_cas, 2);
    fg_cert_state_cleanup(&cur);
    free(bundle);
}

static void unusable_secrets_are_repaired(void **state)
{
    (void)state;
    struct fg_cert_state good = { 0 };
    struct fg_cert_plan p = plan(&good, NULL, T0);
    take(&good, &p);
    struct fg_cert_state other = { 0 };
    p = plan(&other, NULL, T0);
    take(&other, &p);

    /* garbage, or a CA key that is not the CA's: a new CA, and a serving certificate from it */
    struct fg_cert_state garbage = { "not a certificate", "not a key", "x", "y" };
    struct fg_cert_state wrong_key = { good.ca_crt, other.ca_key, good.tls_crt, good.tls_key };
    const struct fg_cert_state *fresh[] = { &garbage, &wrong_key };
    for (size_t i = 0; i < 2; i++) {
        p = plan(fresh[i], NULL, T0);
        assert_string_equal(p.action, "IssuedCA");
        assert_true(trusted(&p.next, p.next.ca_crt, T0));
        fg_cert_plan_cleanup(&p);
    }
    /* a serving certificate of a foreign CA, a key of another one, none at all: reissued from the CA */
    struct fg_cert_state foreign = { good.ca_crt, good.ca_key, other.tls_crt, other.tls_key };
    struct fg_cert_state mismatched = { good.ca_crt, good.ca_key, good.tls_crt, other.tls_key };
    struct fg_cert_state missing = { good.ca_crt, good.ca_key, NULL, NULL };
    const struct fg_cert_state *reissue[] = { &foreign, &mismatched, &missing };
    for (size_t i = 0; i < 3; i++) {
        p = plan(reissue[i], good.ca_crt, T0);
        assert_string_equal(p.action, "IssuedServing");
        assert_string_equal(p.next.ca_crt, good.ca_crt);
        assert_true(trusted(&p.next, good.ca_crt, T0));
        fg_cert_plan_cleanup(&p);
    }
    /* one for other names */
    static const char *const elsewhere[] = { "evil.example", NULL };
    struct fg_pki_pair ca = { good.ca_crt, good.ca_key }, leaf;
    struct fg_pki_request req = { "x", elsewhere, NULL, false, T0 - DAY_MS, T0 + 10 * DAY_MS };
    assert_int_equal(fg_pki_issue(&req, &ca, &leaf, NULL), FG_OK);
    struct fg_cert_state misnamed = { good.ca_crt, good.ca_key, leaf.cert_pem, leaf.key_pem };
    p = plan(&misnamed, good.ca_crt, T0);
    assert_string_equal(p.action, "IssuedServing");
    fg_cert_plan_cleanup(&p);
    fg_pki_pair_cleanup(&leaf);

    /* an expired CA behind the signing one goes at once */
    struct fg_pki_pair old;
    struct fg_pki_request old_req = { "old", NULL, NULL, true, T0 - 100 * DAY_MS, T0 - DAY_MS };
    assert_int_equal(fg_pki_issue(&old_req, NULL, &old, NULL), FG_OK);
    char *two = fg_asprintf("%s%s", good.ca_crt, old.cert_pem);
    struct fg_cert_state with_expired = { two, good.ca_key, good.tls_crt, good.tls_key };
    p = plan(&with_expired, two, T0);
    assert_true(p.changed);
    assert_string_equal(p.next.ca_crt, good.ca_crt);
    fg_cert_plan_cleanup(&p);
    free(two);
    fg_pki_pair_cleanup(&old);
    fg_cert_state_cleanup(&good);
    fg_cert_state_cleanup(&other);
}

static void bad_policies(void **state)
{
    (void)state;
    static const char *const none[] = { NULL };
    const struct fg_cert_policy bad[] = {
        { 0, 1, 0, dns },
        { 90 * DAY_MS, 31 * DAY_MS, 0, dns },        /* the CA would not outlive what it signs */
        { 90 * DAY_MS, 30 * DAY_MS, -1, dns },
        { 90 * DAY_MS, 30 * DAY_MS, 10 * DAY_MS, dns }, /* a switch slower than a renewal */
        { 90 * DAY_MS, 30 * DAY_MS, DAY_MS, none },
        { 90 * DAY_MS, 30 * DAY_MS, DAY_MS, NULL },
    };
    struct fg_cert_state empty = { 0 };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        struct fg_cert_plan p;
        char msg[FG_ERRMSG_MAX] = "";
        assert_int_equal(fg_cert_plan(&empty, NULL, &bad[i], T0, &p, msg), FG_E_INVAL);
        assert_true(msg[0] != '\0');
        assert_null(p.next.ca_crt);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(four_hundred_days),
        cmocka_unit_test(unusable_secrets_are_repaired),
        cmocka_unit_test(bad_policies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
