/* Certificates: a CA and a leaf it signs verify for the leaf's names and only inside their validity;
 * a leaf does not verify against another CA, nor a leaf's certificate as a CA; a pair's key matches
 * only its own certificate; bad issuers and garbage PEM are refused with a message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/pki.h"

#define DAY_MS (86400ll * 1000)
static const int64_t now = 1795000000000ll; /* 2026-11-18 */

static struct fg_pki_pair issue(const char *cn, bool ca, const struct fg_pki_pair *issuer, int64_t from, int64_t to)
{
    static const char *const dns[] = { "fracgpu-webhook.fracgpu-system.svc", "fracgpu-webhook.fracgpu-system", NULL };
    static const char *const ips[] = { "127.0.0.1", NULL };
    struct fg_pki_request req = { cn, ca ? NULL : dns, ca ? NULL : ips, ca, from, to };
    struct fg_pki_pair p;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_pki_issue(&req, issuer, &p, msg) != FG_OK)
        fail_msg("issue %s: %s", cn, msg);
    return p;
}

static void a_ca_and_its_leaf(void **state)
{
    (void)state;
    struct fg_pki_pair ca = issue("fracgpu-webhook-ca", true, NULL, now - DAY_MS, now + 365 * DAY_MS);
    struct fg_pki_pair leaf = issue("fracgpu-webhook", false, &ca, now - DAY_MS, now + 30 * DAY_MS);
    assert_non_null(strstr(leaf.cert_pem, "-----BEGIN CERTIFICATE-----"));
    assert_non_null(strstr(leaf.key_pem, "PRIVATE KEY-----"));
    assert_true(fg_pki_pair_matches(&ca));
    assert_true(fg_pki_pair_matches(&leaf));

    assert_true(fg_pki_verifies(leaf.cert_pem, ca.cert_pem, "fracgpu-webhook.fracgpu-system.svc", now));
    assert_true(fg_pki_verifies(leaf.cert_pem, ca.cert_pem, NULL, now));
    assert_false(fg_pki_verifies(leaf.cert_pem, ca.cert_pem, "evil.example", now));
    assert_false(fg_pki_verifies(leaf.cert_pem, ca.cert_pem, NULL, now + 31 * DAY_MS)); /* the leaf expired */
    assert_false(fg_pki_verifies(leaf.cert_pem, ca.cert_pem, NULL, now - 2 * DAY_MS));  /* not yet valid */

    int64_t from = 0, to = 0;
    assert_int_equal(fg_pki_validity(leaf.cert_pem, &from, &to, NULL), FG_OK);
    assert_int_equal(from, now - DAY_MS);
    assert_int_equal(to, now + 30 * DAY_MS);

    /* another CA does not vouch for it; a leaf cannot sign for anyone */
    struct fg_pki_pair other = issue("other-ca", true, NULL, now - DAY_MS, now + DAY_MS);
    assert_false(fg_pki_verifies(leaf.cert_pem, other.cert_pem, NULL, now));
    struct fg_pki_pair under_leaf = issue("under-leaf", false, &leaf, now - DAY_MS, now + DAY_MS);
    assert_false(fg_pki_verifies(under_leaf.cert_pem, leaf.cert_pem, NULL, now));

    /* a key and another's certificate */
    struct fg_pki_pair mixed = { ca.cert_pem, leaf.key_pem };
    assert_false(fg_pki_pair_matches(&mixed));
    fg_pki_pair_cleanup(&under_leaf);
    fg_pki_pair_cleanup(&other);
    fg_pki_pair_cleanup(&leaf);
    fg_pki_pair_cleanup(&ca);
}

static void bad_input(void **state)
{
    (void)state;
    struct fg_pki_pair ca = issue("ca", true, NULL, now - DAY_MS, now + DAY_MS);
    struct fg_pki_pair leaf = issue("leaf", false, &ca, now - DAY_MS, now + DAY_MS);
    struct fg_pki_pair bad[] = {
        { "garbage", ca.key_pem },
        { ca.cert_pem, "garbage" },
        { ca.cert_pem, leaf.key_pem },
        { NULL, NULL },
    };
    struct fg_pki_request req = { "x", NULL, NULL, false, now, now + DAY_MS };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        struct fg_pki_pair out;
        char msg[FG_ERRMSG_MAX] = "";
        assert_int_equal(fg_pki_issue(&req, &bad[i], &out, msg), FG_E_INVAL);
        assert_non_null(strstr(msg, "do not parse or do not match"));
        assert_null(out.cert_pem);
        assert_false(fg_pki_pair_matches(&bad[i]));
    }
    int64_t a, b;
    char msg[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_pki_validity("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", &a, &b, msg),
                     FG_E_PARSE);
    assert_int_equal(fg_pki_validity(NULL, &a, &b, msg), FG_E_PARSE);
    assert_false(fg_pki_verifies("garbage", ca.cert_pem, NULL, now));
    assert_false(fg_pki_verifies(leaf.cert_pem, "garbage", NULL, now));
    fg_pki_pair_cleanup(&leaf);
    fg_pki_pair_cleanup(&ca);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_ca_and_its_leaf),
        cmocka_unit_test(bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
