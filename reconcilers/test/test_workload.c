/* Workloads: a pod's owner chain walked to its workload (Deployment through its ReplicaSet, CronJob
 * through its Job, custom kinds, a namesake with another uid, owners missing or unknown); automation by
 * annotation and namespace label; GPUWorkload names (lower case, long and ambiguous ones hashed);
 * class detection; pod templates of built-in and custom kinds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "reconcilers/workload.h"

static json_object *parse(const char *text)
{
    json_object *o = NULL;
    if (fg_json_parse(text, strlen(text), 0, &o, NULL) != FG_OK)
        fail_msg("test JSON: %s", text);
    return o;
}

/* "apiVersion kind name uid [ownerApiVersion ownerKind ownerName ownerUid]" objects for the lookup. */
static json_object *object(const char *api, const char *kind, const char *name, const char *uid, const char *owner_api,
                           const char *owner_kind, const char *owner_name, const char *owner_uid)
{
    char text[1024];
    char owner[512] = "";
    if (owner_kind)
        snprintf(owner, sizeof(owner),
                 ",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"unrelated\","
                 "\"uid\":\"x\"},{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"name\":\"%s\",\"uid\":\"%s\",\"controller\":true}]",
                 owner_api, owner_kind, owner_name, owner_uid);
    snprintf(text, sizeof(text), "{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"metadata\":{\"name\":\"%s\",\"uid\":\"%s\"%s}}",
             api, kind, name, uid, owner);
    return parse(text);
}

static json_object *objects[16];
static size_t n_objects;

static json_object *lookup(void *ctx, const char *group, const char *kind, const char *name)
{
    (void)ctx;
    for (size_t i = 0; i < n_objects; i++) {
        const char *api = fg_json_get_str(objects[i], "apiVersion", NULL);
        const char *slash = strchr(api, '/');
        size_t glen = slash ? (size_t)(slash - api) : 0;
        if (strlen(group) == glen && !strncmp(api, group, glen) && !strcmp(fg_json_get_str(objects[i], "kind", NULL), kind) &&
            !strcmp(fg_json_get_str(objects[i], "metadata", "name", NULL), name))
            return objects[i];
    }
    return NULL;
}

static const struct fg_workload_kind custom[] = {
    { { "apps", "v1", "deployments", "Deployment", true }, false, FG_CLASS_INFERENCE },
    { { "apps", "v1", "statefulsets", "StatefulSet", true }, false, FG_CLASS_INFERENCE },
    { { "batch", "v1", "jobs", "Job", true }, false, FG_CLASS_BATCH },
    { { "batch", "v1", "cronjobs", "CronJob", true }, false, FG_CLASS_BATCH },
    { { "kubeflow.org", "v1", "pytorchjobs", "PyTorchJob", true }, true, FG_CLASS_TRAINING },
    { { "kubeflow.org", "v1", "notebooks", "Notebook", true }, true, FG_CLASS_BUILD },
    { { "example.com", "v1", "jobs", "Job", true }, false, FG_CLASS_BATCH },
};
static const struct fg_workload_kinds kinds = { custom, sizeof(custom) / sizeof(*custom) };

static int setup(void **state)
{
    (void)state;
    n_objects = 0;
    objects[n_objects++] = object("apps/v1", "Deployment", "llm", "d1", NULL, NULL, NULL, NULL);
    objects[n_objects++] = object("apps/v1", "ReplicaSet", "llm-5f7", "r1", "apps/v1", "Deployment", "llm", "d1");
    objects[n_objects++] = object("apps/v1", "ReplicaSet", "bare", "r2", NULL, NULL, NULL, NULL);
    objects[n_objects++] = object("batch/v1", "CronJob", "nightly", "c1", NULL, NULL, NULL, NULL);
    objects[n_objects++] = object("batch/v1", "Job", "nightly-29", "j1", "batch/v1", "CronJob", "nightly", "c1");
    objects[n_objects++] = object("batch/v1", "Job", "once", "j2", NULL, NULL, NULL, NULL);
    objects[n_objects++] = object("kubeflow.org/v1", "Notebook", "nb", "n1", NULL, NULL, NULL, NULL);
    objects[n_objects++] = object("apps/v1", "StatefulSet", "nb", "s1", "kubeflow.org/v1", "Notebook", "nb", "n1");
    objects[n_objects++] = object("kubeflow.org/v1", "PyTorchJob", "bert", "p1", NULL, NULL, NULL, NULL);
    /* a ReplicaSet whose Deployment was deleted and recreated under the same name */
    objects[n_objects++] = object("apps/v1", "ReplicaSet", "old-1", "r3", "apps/v1", "Deployment", "llm", "d0");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (size_t i = 0; i < n_objects; i++)
        json_object_put(objects[i]);
    return 0;
}

static void expect_workload(const char *owner_api, const char *owner_kind, const char *owner_name, const char *owner_uid,
                            const char *want_kind, const char *want_name)
{
    json_object *pod = object("v1", "Pod", "p", "u", owner_api, owner_kind, owner_name, owner_uid);
    const struct fg_workload_kind *k;
    json_object *w = fg_workload_of_pod(pod, &kinds, lookup, NULL, &k);
    if (!want_kind) {
        assert_null(w);
        assert_null(k);
    } else {
        assert_non_null(w);
        assert_string_equal(k->resource.kind, want_kind);
        assert_string_equal(fg_json_get_str(w, "metadata", "name", NULL), want_name);
    }
    json_object_put(pod);
}

static void owner_chains(void **state)
{
    (void)state;
    expect_workload("apps/v1", "ReplicaSet", "llm-5f7", "r1", "Deployment", "llm");
    expect_workload("batch/v1", "Job", "nightly-29", "j1", "CronJob", "nightly");
    expect_workload("batch/v1", "Job", "once", "j2", "Job", "once");
    expect_workload("apps/v1", "StatefulSet", "nb", "s1", "Notebook", "nb");
    expect_workload("kubeflow.org/v1", "PyTorchJob", "bert", "p1", "PyTorchJob", "bert");
    expect_workload("apps/v1", "ReplicaSet", "bare", "r2", NULL, NULL);        /* a ReplicaSet is no workload */
    expect_workload("apps/v1", "ReplicaSet", "gone", "r9", NULL, NULL);        /* not in the cache */
    expect_workload("apps/v1", "ReplicaSet", "llm-5f7", "other", NULL, NULL);  /* a namesake */
    expect_workload("apps/v1", "ReplicaSet", "old-1", "r3", NULL, NULL);       /* its Deployment is a namesake */
    expect_workload("v1", "Node", "n1", "x", NULL, NULL);                      /* not a workload kind */
    expect_workload(NULL, NULL, NULL, NULL, NULL, NULL);                       /* no controller */
    /* only the built-in kinds when nothing is configured */
    json_object *pod = object("v1", "Pod", "p", "u", "kubeflow.org/v1", "PyTorchJob", "bert", "p1");
    const struct fg_workload_kind *k;
    assert_null(fg_workload_of_pod(pod, &fg_workload_builtin_kinds, lookup, NULL, &k));
    json_object_put(pod);
}

static void automation(void **state)
{
    (void)state;
    json_object *on = parse("{\"metadata\":{\"annotations\":{\"fracgpu.io/automate\":\"true\"}}}");
    json_object *off = parse("{\"metadata\":{\"annotations\":{\"fracgpu.io/automate\":\"false\"}}}");
    json_object *odd = parse("{\"metadata\":{\"annotations\":{\"fracgpu.io/automate\":\"yes\"}}}");
    json_object *plain = parse("{\"metadata\":{}}");
    json_object *ns_on = parse("{\"metadata\":{\"labels\":{\"fracgpu.io/automate\":\"true\"}}}");
    json_object *ns_plain = parse("{\"metadata\":{\"labels\":{\"team\":\"ml\"}}}");
    assert_true(fg_workload_automated(on, NULL));
    assert_true(fg_workload_automated(on, ns_plain));
    assert_false(fg_workload_automated(off, ns_on)); /* the workload's "false" opts it out */
    assert_false(fg_workload_automated(odd, ns_on)); /* anything but "true" is not a yes */
    assert_true(fg_workload_automated(plain, ns_on));
    assert_false(fg_workload_automated(plain, ns_plain));
    assert_false(fg_workload_automated(plain, NULL));
    json_object *all[] = { on, off, odd, plain, ns_on, ns_plain };
    for (size_t i = 0; i < 6; i++)
        json_object_put(all[i]);
}

static void names(void **state)
{
    (void)state;
    char out[FG_WORKLOAD_NAME_MAX + 1];
    fg_workload_name(&kinds, &custom[0], "llm", out);
    assert_string_equal(out, "deployment-llm");
    fg_workload_name(&kinds, &custom[4], "bert-large", out);
    assert_string_equal(out, "pytorchjob-bert-large");
    fg_workload_name(&kinds, &custom[2], "once", out); /* the built-in Job keeps its plain name */
    assert_string_equal(out, "job-once");
    char other[FG_WORKLOAD_NAME_MAX + 1];
    fg_workload_name(&kinds, &custom[6], "once", other); /* example.com's Job does not */
    assert_int_equal(strlen(other), strlen("job-once") + 9);
    assert_memory_equal(other, "job-once-", 9);

    char long_name[FG_WORKLOAD_NAME_MAX + 1];
    memset(long_name, 'a', 250);
    long_name[250] = '\0';
    fg_workload_name(&kinds, &custom[0], long_name, out);
    assert_int_equal(strlen(out), FG_WORKLOAD_NAME_MAX);
    assert_memory_equal(out, "deployment-aaaa", 15);
    assert_int_equal(out[FG_WORKLOAD_NAME_MAX - 9], '-');
    long_name[249] = 'b'; /* same first 244 characters, another workload: another name */
    fg_workload_name(&kinds, &custom[0], long_name, other);
    assert_int_equal(strlen(other), FG_WORKLOAD_NAME_MAX);
    assert_string_not_equal(out, other);
    fg_workload_name(&kinds, &custom[0], long_name, out); /* and always the same one */
    assert_string_equal(out, other);
    /* a cut that would end in '-' or '.' steps back to an alphanumeric */
    memset(long_name, 'a', 250);
    long_name[232] = '-';
    long_name[233] = '.';
    fg_workload_name(&kinds, &custom[0], long_name, out);
    char *dash = strrchr(out, '-');
    assert_true(dash[-1] != '-' && dash[-1] != '.');
}

static enum fg_workload_class detect(const struct fg_workload_kind *k, const char *text)
{
    json_object *w = parse(text);
    enum fg_workload_class c = fg_workload_detect_class(k, w);
    json_object_put(w);
    return c;
}

#define TEMPLATE(containers) "\"template\":{\"metadata\":{},\"spec\":{\"containers\":[" containers "]}}"

static void classes(void **state)
{
    (void)state;
    assert_int_equal(detect(&custom[0], "{\"metadata\":{\"name\":\"llm\"},\"spec\":{" TEMPLATE("{\"image\":\"vllm:1\"}") "}}"),
                     FG_CLASS_INFERENCE);
    assert_int_equal(detect(&custom[1], "{\"metadata\":{\"name\":\"lab\"},\"spec\":{" TEMPLATE(
                                            "{\"image\":\"quay.io/jupyter/pytorch-notebook:latest\"}") "}}"),
                     FG_CLASS_BUILD);
    assert_int_equal(detect(&custom[2], "{\"metadata\":{\"name\":\"llama-finetune\"},\"spec\":{" TEMPLATE(
                                            "{\"image\":\"x\"}") "}}"),
                     FG_CLASS_TRAINING);
    assert_int_equal(detect(&custom[2], "{\"metadata\":{\"name\":\"job1\"},\"spec\":{" TEMPLATE(
                                            "{\"image\":\"x\",\"args\":[\"python\",\"train.py\"]}") "}}"),
                     FG_CLASS_TRAINING);
    assert_int_equal(detect(&custom[2], "{\"metadata\":{\"name\":\"job2\",\"labels\":{\"stage\":\"Fine-Tune\"}},"
                                        "\"spec\":{" TEMPLATE("{\"image\":\"x\"}") "}}"),
                     FG_CLASS_TRAINING);
    assert_int_equal(detect(&custom[2], "{\"metadata\":{\"name\":\"score\"},\"spec\":{" TEMPLATE(
                                            "{\"image\":\"scorer\",\"command\":[\"score\"]}") "}}"),
                     FG_CLASS_BATCH);
    assert_int_equal(detect(&custom[3], "{\"metadata\":{\"name\":\"retrain-nightly\"},\"spec\":{}}"), FG_CLASS_BATCH);
    assert_int_equal(detect(&custom[4], "{\"metadata\":{\"name\":\"bert\"},\"spec\":{}}"), FG_CLASS_TRAINING);
}

static void templates(void **state)
{
    (void)state;
    json_object *cron = parse("{\"spec\":{\"schedule\":\"@daily\",\"jobTemplate\":{\"spec\":{" TEMPLATE("{\"name\":\"a\"}")
                              "}}}}");
    json_object *pt = parse("{\"spec\":{\"pytorchReplicaSpecs\":{\"Master\":{\"replicas\":1," TEMPLATE("{\"name\":\"m\"}")
                            "},\"Worker\":{\"replicas\":4," TEMPLATE("{\"name\":\"w\"}") "}}}}");
    json_object *none = parse("{\"spec\":{\"template\":{\"metadata\":{}}}}");
    struct fg_pod_template out[2];
    assert_int_equal(fg_workload_templates(cron, out, 2), 1);
    assert_string_equal(fg_json_get_str(json_object_array_get_idx(fg_json_get(out[0].obj, "spec", "containers", NULL), 0),
                                        "name", NULL),
                        "a");
    assert_string_equal(out[0].path, "/spec/jobTemplate/spec/template");
    assert_int_equal(fg_workload_templates(pt, out, 1), 2); /* counted beyond max */
    assert_int_equal(fg_workload_templates(pt, out, 2), 2);
    assert_string_equal(out[0].path, "/spec/pytorchReplicaSpecs/Master/template");
    assert_string_equal(out[1].path, "/spec/pytorchReplicaSpecs/Worker/template");
    assert_int_equal(fg_workload_templates(none, out, 2), 0);
    assert_int_equal(fg_workload_templates(NULL, out, 2), 0);
    json_object_put(cron);
    json_object_put(pt);
    json_object_put(none);
}

static void kind_specs(void **state)
{
    (void)state;
    struct fg_workload_kind k;
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(fg_workload_kind_parse("kubeflow.org/v1/PyTorchJob/pytorchjobs=training", &k, msg), FG_OK);
    assert_string_equal(k.resource.group, "kubeflow.org");
    assert_string_equal(k.resource.version, "v1");
    assert_string_equal(k.resource.kind, "PyTorchJob");
    assert_string_equal(k.resource.plural, "pytorchjobs");
    assert_true(k.resource.namespaced);
    assert_true(k.fixed_class);
    assert_int_equal(k.workload_class, FG_CLASS_TRAINING);
    fg_workload_kind_cleanup(&k);
    assert_int_equal(fg_workload_kind_parse("kubeflow.org/v1/Notebook/notebooks", &k, msg), FG_OK);
    assert_false(k.fixed_class);
    fg_workload_kind_cleanup(&k);
    const char *bad[] = { "", "PyTorchJob", "kubeflow.org/v1/PyTorchJob", "kubeflow.org/v1/PyTorchJob/pytorchjobs/x",
                          "kubeflow/v1/PyTorchJob/pytorchjobs", "kubeflow.org/v1/pyTorchJob/pytorchjobs",
                          "kubeflow.org/v1/PyTorchJob/PyTorchJobs", "kubeflow.org/v1/PyTorchJob/pytorchjobs=train",
                          "kubeflow.org//PyTorchJob/pytorchjobs", "apps/v1/Deployment/deployments" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        msg[0] = '\0';
        if (fg_workload_kind_parse(bad[i], &k, msg) != FG_E_INVAL)
            fail_msg("\"%s\" was accepted", bad[i]);
        assert_non_null(strstr(msg, "workload kind \""));
        assert_null(k.resource.group);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(owner_chains, setup, teardown),
        cmocka_unit_test(automation),
        cmocka_unit_test(names),
        cmocka_unit_test(classes),
        cmocka_unit_test(templates),
        cmocka_unit_test(kind_specs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
