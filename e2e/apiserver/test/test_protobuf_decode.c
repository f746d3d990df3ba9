/* The protobuf decoder called directly: kinds the registry may not serve yet (rbac, priority classes,
 * quotas, service accounts) become the JSON that was sent, and valid bodies with every bit flipped in
 * turn, random byte changes and random cuts either decode or fail with 400/415, under ASan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/json.h"
#include "base/mem.h"
#include "e2e/apiserver/protobuf.h"
#include "pb_body.h"

static json_object *decode(const char *group, const char *kind, const ProtobufCMessage *m)
{
    size_t len;
    char *api_version = *group ? fg_asprintf("%s/v1", group) : fg_strdup("v1");
    uint8_t *body = pb_body(api_version, kind, m, &len);
    free(api_version);
    json_object *out = NULL;
    char msg[FG_ERRMSG_MAX];
    enum fg_err err = fg__protobuf_decode(group, "v1", kind, body, len, &out, msg);
    if (err)
        fail_msg("decoding %s: %s", kind, msg);
    free(body);
    return out;
}

/* Kinds the registry may not serve: decoded directly, as the server would before storing them. */
static void rbac_priorityclass_quota_serviceaccount(void **state)
{
    (void)state;
    FgKube__ObjectMeta meta = FG_KUBE__OBJECT_META__INIT;
    meta.name = "r";
    char *verbs[] = { "get" }, *groups[] = { "" }, *resources[] = { "pods" };
    FgKube__PolicyRule rule = FG_KUBE__POLICY_RULE__INIT, *rules[] = { &rule };
    rule.n_verbs = 1;
    rule.verbs = verbs;
    rule.n_apigroups = 1;
    rule.apigroups = groups;
    rule.n_resources = 1;
    rule.resources = resources;
    FgKube__Role role = FG_KUBE__ROLE__INIT;
    role.metadata = &meta;
    role.n_rules = 1;
    role.rules = rules;
    json_object *o = decode("rbac.authorization.k8s.io", "Role", &role.base);
    assert_string_equal(fg_json_get_str(o, "apiVersion", NULL), "rbac.authorization.k8s.io/v1");
    json_object *r0 = json_object_array_get_idx(fg_json_get(o, "rules", NULL), 0);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(fg_json_get(r0, "verbs", NULL), 0)), "get");
    /* "" (the core group) is kept inside a list. */
    assert_string_equal(json_object_get_string(json_object_array_get_idx(fg_json_get(r0, "apiGroups", NULL), 0)), "");
    json_object_put(o);

    FgKube__ClusterRole cr = FG_KUBE__CLUSTER_ROLE__INIT;
    cr.metadata = &meta;
    cr.n_rules = 1;
    cr.rules = rules;
    o = decode("rbac.authorization.k8s.io", "ClusterRole", &cr.base);
    assert_string_equal(fg_json_get_str(o, "kind", NULL), "ClusterRole");
    json_object_put(o);

    FgKube__Subject sa = FG_KUBE__SUBJECT__INIT, *subjects[] = { &sa };
    sa.kind = "ServiceAccount";
    sa.name = "sa";
    sa.namespace_ = "default";
    FgKube__RoleRef ref = FG_KUBE__ROLE_REF__INIT;
    ref.apigroup = "rbac.authorization.k8s.io";
    ref.kind = "Role";
    ref.name = "r";
    FgKube__RoleBinding rb = FG_KUBE__ROLE_BINDING__INIT;
    rb.metadata = &meta;
    rb.n_subjects = 1;
    rb.subjects = subjects;
    rb.roleref = &ref;
    o = decode("rbac.authorization.k8s.io", "RoleBinding", &rb.base);
    assert_string_equal(fg_json_get_str(o, "roleRef", "kind", NULL), "Role");
    assert_string_equal(fg_json_get_str(json_object_array_get_idx(fg_json_get(o, "subjects", NULL), 0), "namespace",
                                        NULL), "default");
    json_object_put(o);

    FgKube__ClusterRoleBinding crb = FG_KUBE__CLUSTER_ROLE_BINDING__INIT;
    crb.metadata = &meta;
    crb.n_subjects = 1;
    crb.subjects = subjects;
    crb.roleref = &ref;
    o = decode("rbac.authorization.k8s.io", "ClusterRoleBinding", &crb.base);
    assert_string_equal(fg_json_get_str(o, "roleRef", "name", NULL), "r");
    json_object_put(o);

    FgKube__PriorityClass pc = FG_KUBE__PRIORITY_CLASS__INIT;
    pc.metadata = &meta;
    pc.has_value = pc.has_globaldefault = 1;
    pc.value = 1000;
    pc.description = "";
    o = decode("scheduling.k8s.io", "PriorityClass", &pc.base);
    int64_t n = 0;
    assert_true(fg_json_get_int64(o, &n, "value", NULL));
    assert_int_equal(n, 1000);
    assert_false(json_object_get_boolean(fg_json_get(o, "globalDefault", NULL)));
    assert_null(fg_json_get(o, "description", NULL));
    json_object_put(o);

    FgKube__Quantity two = FG_KUBE__QUANTITY__INIT;
    two.string = "2";
    FgKube__ResourceQuotaSpec__HardEntry pods = FG_KUBE__RESOURCE_QUOTA_SPEC__HARD_ENTRY__INIT, *hard[] = { &pods };
    pods.key = "pods";
    pods.value = &two;
    FgKube__ResourceQuotaSpec qspec = FG_KUBE__RESOURCE_QUOTA_SPEC__INIT;
    qspec.n_hard = 1;
    qspec.hard = hard;
    FgKube__ResourceQuota quota = FG_KUBE__RESOURCE_QUOTA__INIT;
    quota.metadata = &meta;
    quota.spec = &qspec;
    o = decode("", "ResourceQuota", &quota.base);
    assert_string_equal(fg_json_get_str(o, "spec", "hard", "pods", NULL), "2");
    json_object_put(o);

    FgKube__ServiceAccount acct = FG_KUBE__SERVICE_ACCOUNT__INIT;
    acct.metadata = &meta;
    acct.has_automountserviceaccounttoken = 1;
    o = decode("", "ServiceAccount", &acct.base);
    assert_string_equal(fg_json_get_str(o, "metadata", "name", NULL), "r");
    assert_false(json_object_get_boolean(fg_json_get(o, "automountServiceAccountToken", NULL)));
    assert_non_null(fg_json_get(o, "automountServiceAccountToken", NULL));
    json_object_put(o);
}

/* Each byte of valid bodies changed in turn, and random changes: decoding succeeds or fails cleanly. */
static void mutated_bodies_decode_or_fail_cleanly(void **state)
{
    (void)state;
    size_t len;
    uint8_t *body = pb_job_body(&len);
    uint8_t *copy = fg_malloc(len);
    srand(11);
    size_t decoded = 0, refused = 0;
    for (size_t round = 0; round < 40 * len; round++) {
        memcpy(copy, body, len);
        if (round < len * 8) /* every bit of every byte in turn */
            copy[round / 8] ^= (uint8_t)(1u << (round % 8));
        else
            for (int k = 0; k < 3; k++)
                copy[(size_t)rand() % len] = (uint8_t)rand();
        size_t cut = round % 5 == 0 ? (size_t)rand() % (len + 1) : len;
        json_object *out = NULL;
        char msg[FG_ERRMSG_MAX];
        enum fg_err err = fg__protobuf_decode("batch", "v1", "Job", copy, cut, &out, msg);
        if (err) {
            assert_null(out);
            assert_true(err == FG_E_KUBE_BAD_REQUEST || err == FG_E_KUBE_UNSUPPORTED_MEDIA);
            refused++;
        } else {
            assert_non_null(json_object_to_json_string(out));
            json_object_put(out);
            decoded++;
        }
    }
    assert_true(decoded > 0 && refused > 0);
    free(copy);
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rbac_priorityclass_quota_serviceaccount),
        cmocka_unit_test(mutated_bodies_decode_or_fail_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
