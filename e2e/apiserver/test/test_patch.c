/* Tests of the three patch types, applied directly (no server). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/json.h"
#include "client.h"
#include "e2e/apiserver/patch.h"


enum kind { MERGE, JSONP, SMP };

/* Applies patch to orig and returns the error; on success compares with `want` (when not NULL). */
static enum fg_err apply(enum kind k, const char *def, const char *orig, const char *patch, const char *want,
                         char *msg)
{
    json_object *o = tc_parse(orig), *p = tc_parse(patch), *out = NULL;
    enum fg_err err = k == MERGE ? fg__patch_merge(o, p, &out, msg)
                    : k == JSONP ? fg__patch_json(o, p, &out, msg)
                                 : fg__patch_strategic(&tc_reg, def, o, p, &out, msg);
    json_object *orig_again = tc_parse(orig), *patch_again = tc_parse(patch);
    assert_true(json_object_equal(o, orig_again)); /* the original is never modified */
    assert_true(json_object_equal(p, patch_again)); /* nor the patch, whose values the result may share */
    json_object_put(orig_again);
    json_object_put(patch_again);
    if (!err && want) {
        json_object *w = tc_parse(want);
        if (!json_object_equal(out, w))
            fail_msg("got %s\nwant %s", json_object_to_json_string(out), want);
        json_object_put(w);
    }
    if (err)
        assert_null(out);
    json_object_put(out);
    json_object_put(o);
    json_object_put(p);
    return err;
}

#define POD "io.k8s.api.core.v1.Pod"

static void merge_patch_rfc7386(void **state)
{
    (void)state;
    assert_int_equal(apply(MERGE, NULL, "{\"a\":\"b\",\"c\":{\"d\":\"e\",\"f\":\"g\"},\"l\":[1,2]}",
                           "{\"a\":\"z\",\"c\":{\"f\":null,\"n\":{\"x\":null,\"y\":1}},\"l\":[3]}",
                           "{\"a\":\"z\",\"c\":{\"d\":\"e\",\"n\":{\"y\":1}},\"l\":[3]}", NULL), FG_OK);
    assert_int_equal(apply(MERGE, NULL, "{\"a\":{\"b\":1}}", "{\"a\":5}", "{\"a\":5}", NULL), FG_OK);
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(apply(MERGE, NULL, "{}", "[1]", NULL, msg), FG_E_PARSE);
    assert_non_null(strstr(msg, "object"));
}

/* A JSON patch copies only what it changes: values it added, copied or moved, edited by later
 * operations, change nowhere else. */
static void json_patch_shares_safely(void **state)
{
    (void)state;
    assert_int_equal(apply(JSONP, NULL, "{\"a\":{\"b\":[1]},\"s\":{\"t\":1}}",
                           "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/z\"},"
                           "{\"op\":\"add\",\"path\":\"/z/b/-\",\"value\":2},"
                           "{\"op\":\"add\",\"path\":\"/n\",\"value\":{\"q\":[1]}},"
                           "{\"op\":\"add\",\"path\":\"/n/q/-\",\"value\":3},"
                           "{\"op\":\"copy\",\"from\":\"/n\",\"path\":\"/m\"},"
                           "{\"op\":\"replace\",\"path\":\"/m/q/0\",\"value\":4},"
                           "{\"op\":\"move\",\"from\":\"/s\",\"path\":\"/a/s\"},"
                           "{\"op\":\"replace\",\"path\":\"/a/s/t\",\"value\":5}]",
                           "{\"a\":{\"b\":[1],\"s\":{\"t\":5}},\"z\":{\"b\":[1,2]},\"n\":{\"q\":[1,3]},"
                           "\"m\":{\"q\":[4,3]}}", NULL), FG_OK);
    assert_int_equal(apply(JSONP, NULL, "{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"\",\"value\":[1]},"
                           "{\"op\":\"add\",\"path\":\"/-\",\"value\":2}]", "[1,2]", NULL), FG_OK);
}

static void json_patch_ops(void **state)
{
    (void)state;
    const char *doc = "{\"a\":{\"b\":[1,2,3]},\"c\":\"x\",\"k~/\":1}";
    assert_int_equal(apply(JSONP, NULL, doc,
                           "[{\"op\":\"add\",\"path\":\"/a/b/1\",\"value\":9},"
                           "{\"op\":\"add\",\"path\":\"/a/b/-\",\"value\":7},"
                           "{\"op\":\"remove\",\"path\":\"/a/b/0\"},"
                           "{\"op\":\"replace\",\"path\":\"/c\",\"value\":\"y\"},"
                           "{\"op\":\"copy\",\"from\":\"/c\",\"path\":\"/d\"},"
                           "{\"op\":\"move\",\"from\":\"/k~0~1\",\"path\":\"/e\"},"
                           "{\"op\":\"test\",\"path\":\"/a/b\",\"value\":[9,2,3,7]}]",
                           "{\"a\":{\"b\":[9,2,3,7]},\"c\":\"y\",\"d\":\"y\",\"e\":1}", NULL), FG_OK);
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(apply(JSONP, NULL, doc, "[{\"op\":\"test\",\"path\":\"/c\",\"value\":\"nope\"}]", NULL, msg),
                     FG_E_INVAL);
    assert_non_null(strstr(msg, "test operation failed"));
    assert_int_equal(apply(JSONP, NULL, doc, "[{\"op\":\"replace\",\"path\":\"/missing\",\"value\":1}]", NULL, msg),
                     FG_E_INVAL);
    assert_int_equal(apply(JSONP, NULL, doc, "[{\"op\":\"remove\",\"path\":\"/a/b/3\"}]", NULL, msg), FG_E_INVAL);
    assert_int_equal(apply(JSONP, NULL, doc, "[{\"op\":\"add\",\"path\":\"/a/b/01\",\"value\":1}]", NULL, msg),
                     FG_E_INVAL);
    assert_int_equal(apply(JSONP, NULL, doc, "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/z\"}]", NULL, msg),
                     FG_E_INVAL);
    assert_int_equal(apply(JSONP, NULL, doc, "[{\"op\":\"frob\",\"path\":\"/c\"}]", NULL, msg), FG_E_PARSE);
    assert_non_null(strstr(msg, "frob"));
    assert_int_equal(apply(JSONP, NULL, doc, "[{\"op\":\"add\",\"path\":\"c\",\"value\":1}]", NULL, msg), FG_E_PARSE);
    assert_int_equal(apply(JSONP, NULL, doc, "[{\"op\":\"add\",\"path\":\"/c\"}]", NULL, msg), FG_E_PARSE);
    assert_int_equal(apply(JSONP, NULL, doc, "{\"op\":\"add\"}", NULL, msg), FG_E_PARSE);
}

static const char *pod =
    "{\"metadata\":{\"name\":\"p\",\"finalizers\":[\"a\",\"b\"]},\"spec\":{"
    "\"containers\":[{\"name\":\"c1\",\"image\":\"i1\",\"args\":[\"x\",\"y\"],"
    "\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"2\"}],"
    "\"ports\":[{\"containerPort\":80,\"name\":\"http\"}],"
    "\"volumeMounts\":[{\"mountPath\":\"/a\",\"name\":\"va\"}]},"
    "{\"name\":\"c2\",\"image\":\"i2\"}],"
    "\"tolerations\":[{\"key\":\"k1\"},{\"key\":\"k2\"}],"
    "\"volumes\":[{\"name\":\"va\",\"emptyDir\":{}}]}}";

static void strategic_merges_lists_by_key(void **state)
{
    (void)state;
    assert_int_equal(apply(SMP, POD, pod,
                           "{\"spec\":{\"containers\":[{\"name\":\"c1\",\"image\":\"new\","
                           "\"env\":[{\"name\":\"B\",\"value\":\"3\"},{\"name\":\"C\",\"value\":\"4\"}],"
                           "\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\"},{\"containerPort\":443}],"
                           "\"volumeMounts\":[{\"mountPath\":\"/b\",\"name\":\"vb\"}]},"
                           "{\"name\":\"c3\",\"image\":\"i3\",\"gone\":null}]}}",
                           "{\"metadata\":{\"name\":\"p\",\"finalizers\":[\"a\",\"b\"]},\"spec\":{"
                           "\"containers\":[{\"name\":\"c1\",\"image\":\"new\",\"args\":[\"x\",\"y\"],"
                           "\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"3\"},"
                           "{\"name\":\"C\",\"value\":\"4\"}],"
                           "\"ports\":[{\"containerPort\":80,\"name\":\"http\",\"protocol\":\"TCP\"},{\"containerPort\":443}],"
                           "\"volumeMounts\":[{\"mountPath\":\"/a\",\"name\":\"va\"},{\"mountPath\":\"/b\",\"name\":\"vb\"}]},"
                           "{\"name\":\"c2\",\"image\":\"i2\"},{\"name\":\"c3\",\"image\":\"i3\"}],"
                           "\"tolerations\":[{\"key\":\"k1\"},{\"key\":\"k2\"}],"
                           "\"volumes\":[{\"name\":\"va\",\"emptyDir\":{}}]}}", NULL), FG_OK);
}

static void strategic_replaces_lists_without_strategy(void **state)
{
    (void)state;
    json_object *o = tc_parse(pod), *p = tc_parse("{\"spec\":{\"tolerations\":[{\"key\":\"k3\"}],"
                                            "\"containers\":[{\"name\":\"c1\",\"args\":[\"z\"],\"command\":[\"sh\"]}]}}");
    json_object *out = NULL;
    assert_int_equal(fg__patch_strategic(&tc_reg, POD, o, p, &out, NULL), FG_OK);
    assert_string_equal(json_object_to_json_string(fg_json_get(out, "spec", "tolerations", NULL)),
                        "[ { \"key\": \"k3\" } ]");
    json_object *c1 = json_object_array_get_idx(fg_json_get(out, "spec", "containers", NULL), 0);
    assert_string_equal(json_object_to_json_string(fg_json_get(c1, "args", NULL)), "[ \"z\" ]");
    assert_string_equal(json_object_to_json_string(fg_json_get(c1, "command", NULL)), "[ \"sh\" ]");
    assert_string_equal(fg_json_get_str(c1, "image", NULL), "i1");
    json_object_put(out);
    json_object_put(o);
    json_object_put(p);
}

static void strategic_directives(void **state)
{
    (void)state;
    json_object *o = tc_parse(pod), *out = NULL;
    /* $patch: delete in a list, $deleteFromPrimitiveList, primitive merge (finalizers) */
    json_object *p = tc_parse("{\"metadata\":{\"finalizers\":[\"c\",\"a\"],\"$deleteFromPrimitiveList/finalizers\":[\"b\"]},"
                           "\"spec\":{\"containers\":[{\"name\":\"c2\",\"$patch\":\"delete\"},"
                           "{\"name\":\"c1\",\"env\":[{\"name\":\"A\",\"$patch\":\"delete\"}]}]}}");
    assert_int_equal(fg__patch_strategic(&tc_reg, POD, o, p, &out, NULL), FG_OK);
    assert_string_equal(json_object_to_json_string(fg_json_get(out, "metadata", "finalizers", NULL)),
                        "[ \"a\", \"c\" ]");
    json_object *cs = fg_json_get(out, "spec", "containers", NULL);
    assert_int_equal(json_object_array_length(cs), 1);
    assert_string_equal(json_object_to_json_string(fg_json_get(json_object_array_get_idx(cs, 0), "env", NULL)),
                        "[ { \"name\": \"B\", \"value\": \"2\" } ]");
    json_object_put(out);
    json_object_put(p);

    /* $patch: replace on a map; $patch: replace inside a list */
    p = tc_parse("{\"spec\":{\"$patch\":\"replace\",\"containers\":[{\"name\":\"only\"}]}}");
    assert_int_equal(fg__patch_strategic(&tc_reg, POD, o, p, &out, NULL), FG_OK);
    assert_string_equal(json_object_to_json_string(fg_json_get(out, "spec", NULL)),
                        "{ \"containers\": [ { \"name\": \"only\" } ] }");
    json_object_put(out);
    json_object_put(p);
    p = tc_parse("{\"spec\":{\"containers\":[{\"name\":\"x\"},{\"$patch\":\"replace\"}]}}");
    assert_int_equal(fg__patch_strategic(&tc_reg, POD, o, p, &out, NULL), FG_OK);
    assert_string_equal(json_object_to_json_string(fg_json_get(out, "spec", "containers", NULL)),
                        "[ { \"name\": \"x\" } ]");
    json_object_put(out);
    json_object_put(p);

    /* $setElementOrder and $retainKeys */
    p = tc_parse("{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"c2\"},{\"name\":\"c1\"}],"
              "\"containers\":[{\"name\":\"c2\",\"image\":\"n2\"}],"
              "\"volumes\":[{\"name\":\"va\",\"hostPath\":{\"path\":\"/x\"},\"$retainKeys\":[\"name\",\"hostPath\"]}]}}");
    assert_int_equal(fg__patch_strategic(&tc_reg, POD, o, p, &out, NULL), FG_OK);
    cs = fg_json_get(out, "spec", "containers", NULL);
    assert_string_equal(fg_json_get_str(json_object_array_get_idx(cs, 0), "name", NULL), "c2");
    assert_string_equal(fg_json_get_str(json_object_array_get_idx(cs, 0), "image", NULL), "n2");
    assert_string_equal(fg_json_get_str(json_object_array_get_idx(cs, 1), "name", NULL), "c1");
    assert_string_equal(json_object_to_json_string(fg_json_get(out, "spec", "volumes", NULL)),
                        "[ { \"name\": \"va\", \"hostPath\": { \"path\": \"\\/x\" } } ]");
    json_object_put(out);
    json_object_put(p);
    json_object_put(o);
}

static void strategic_follows_templates_and_rejects_bad_patches(void **state)
{
    (void)state;
    assert_int_equal(apply(SMP, "io.k8s.api.apps.v1.Deployment",
                           "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"1\"}]}}}}",
                           "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"b\",\"image\":\"2\"}]}}}}",
                           "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"1\"},"
                           "{\"name\":\"b\",\"image\":\"2\"}]}}}}", NULL), FG_OK);
    assert_int_equal(apply(SMP, "io.k8s.api.batch.v1.CronJob",
                           "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\"}]}}}}}}",
                           "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"b\"}]}}}}}}",
                           "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\"},"
                           "{\"name\":\"b\"}]}}}}}}", NULL), FG_OK);
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(apply(SMP, POD, pod, "{\"spec\":{\"containers\":[{\"image\":\"nokey\"}]}}", NULL, msg), FG_E_INVAL);
    assert_non_null(strstr(msg, "merge key"));
    assert_int_equal(apply(SMP, POD, pod, "{\"spec\":{\"$patch\":\"explode\"}}", NULL, msg), FG_E_INVAL);
    assert_int_equal(apply(SMP, POD, pod, "[]", NULL, msg), FG_E_PARSE);
    /* A type without a definition replaces every list. */
    assert_int_equal(apply(SMP, NULL, "{\"l\":[1]}", "{\"l\":[2]}", "{\"l\":[2]}", NULL), FG_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(merge_patch_rfc7386),
        cmocka_unit_test(json_patch_ops),
        cmocka_unit_test(json_patch_shares_safely),
        cmocka_unit_test(strategic_merges_lists_by_key),
        cmocka_unit_test(strategic_replaces_lists_without_strategy),
        cmocka_unit_test(strategic_directives),
        cmocka_unit_test(strategic_follows_templates_and_rejects_bad_patches),
    };
    return cmocka_run_group_tests(tests, tc_registry_setup, tc_registry_teardown);
}
