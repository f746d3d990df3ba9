/* Tests for kubeconfig and in-cluster loading: every auth shape (exec plugins included), and every kind of
 * broken file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/fs.h"
#include "base/mem.h"
#include "operator/kube/config.h"

static char dir[64];

static int make_dir(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/fg_kube_cfg_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    return fg_remove_tree(dir);
}

static char *write_file(const char *name, const char *text)
{
    char *path = fg_asprintf("%s/%s", dir, name);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    mkdir(path, 0700);
    *slash = '/';
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static char *b64(const char *s)
{
    return fg_base64_encode(s, strlen(s));
}

static void token_context_with_namespace(void **state)
{
    (void)state;
    char *p = write_file("token.yaml",
        "apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
        "clusters:\n- name: c1\n  cluster:\n    server: https://10.0.0.1:6443//\n"
        "    insecure-skip-tls-verify: true\n    tls-server-name: api.example\n"
        "contexts:\n- name: dev\n  context:\n    cluster: c1\n    user: u1\n    namespace: ml\n"
        "users:\n- name: u1\n  user:\n    token: s3cr3t\n");
    struct fg_kube_config cfg;
    char err[FG_ERRMSG_MAX];
    assert_int_equal(fg_kube_config_load_file(p, NULL, &cfg, err), FG_OK);
    assert_string_equal(cfg.server, "https://10.0.0.1:6443");
    assert_string_equal(cfg.token, "s3cr3t");
    assert_string_equal(cfg.namespace, "ml");
    assert_string_equal(cfg.tls_server_name, "api.example");
    assert_true(cfg.insecure_skip_tls_verify);
    assert_null(cfg.ca_pem);
    assert_null(cfg.cert_pem);
    assert_null(cfg.token_file);
    fg_kube_config_cleanup(&cfg);
    free(p);
}

static void named_context_and_base64_data(void **state)
{
    (void)state;
    /* Lengths 1, 2, 3 and 4 mod 3 exercise every padding shape. */
    char *ca = b64("C"), *cert = b64("CE"), *key = b64("KEY"), *ca2 = b64("CA-2");
    char *text = fg_asprintf(
        "current-context: other\n"
        "clusters:\n- name: a\n  cluster:\n    server: https://a\n    certificate-authority-data: %s\n"
        "- name: b\n  cluster:\n    server: https://b\n    certificate-authority-data: %s\n"
        "contexts:\n- name: other\n  context: {cluster: a, user: x}\n"
        "- name: certs\n  context: {cluster: b, user: cu}\n"
        "users:\n- name: x\n  user: {}\n"
        "- name: cu\n  user:\n    client-certificate-data: %s\n    client-key-data: %s\n",
        ca, ca2, cert, key);
    char *p = write_file("data.yaml", text);
    struct fg_kube_config cfg;
    char err[FG_ERRMSG_MAX];
    assert_int_equal(fg_kube_config_load_file(p, "certs", &cfg, err), FG_OK);
    assert_string_equal(cfg.server, "https://b");
    assert_string_equal(cfg.ca_pem, "CA-2");
    assert_string_equal(cfg.cert_pem, "CE");
    assert_string_equal(cfg.key_pem, "KEY");
    assert_string_equal(cfg.namespace, "default");
    assert_null(cfg.token);
    fg_kube_config_cleanup(&cfg);
    assert_int_equal(fg_kube_config_load_file(p, NULL, &cfg, err), FG_OK);
    assert_string_equal(cfg.server, "https://a");
    assert_string_equal(cfg.ca_pem, "C");
    fg_kube_config_cleanup(&cfg);
    free(p), free(text), free(ca), free(ca2), free(cert), free(key);
}

static void files_resolved_relative_to_kubeconfig(void **state)
{
    (void)state;
    char *ca = write_file("pki/ca.pem", "CA-PEM\n");
    char *crt = write_file("pki/client.crt", "CRT-PEM\n");
    char *key = write_file("abs.key", "KEY-PEM\n");
    char *text = fg_asprintf(
        "current-context: f\nclusters:\n- name: c\n  cluster:\n    server: https://h:1\n"
        "    certificate-authority: ../pki/ca.pem\n"
        "contexts:\n- name: f\n  context:\n    cluster: c\n    user: u\n"
        "users:\n- name: u\n  user:\n    client-certificate: ../pki/client.crt\n    client-key: %s\n"
        "    tokenFile: tok\n", key);
    char *p = write_file("conf/kubeconfig", text);
    struct fg_kube_config cfg;
    char err[FG_ERRMSG_MAX];
    assert_int_equal(fg_kube_config_load_file(p, NULL, &cfg, err), FG_OK);
    assert_string_equal(cfg.ca_pem, "CA-PEM\n");
    assert_string_equal(cfg.cert_pem, "CRT-PEM\n");
    assert_string_equal(cfg.key_pem, "KEY-PEM\n");
    char *want_tok = fg_asprintf("%s/conf/tok", dir);
    assert_string_equal(cfg.token_file, want_tok);
    fg_kube_config_cleanup(&cfg);
    free(want_tok), free(p), free(text), free(ca), free(crt), free(key);
}

/* Loads `text` and expects `want` with every fragment present in the message. */
static void expect_failure(const char *text, const char *context, enum fg_err want, const char *frag1,
                           const char *frag2)
{
    char *p = write_file("bad.yaml", text);
    struct fg_kube_config cfg;
    char err[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_kube_config_load_file(p, context, &cfg, err), want);
    if (!strstr(err, p) || !strstr(err, frag1) || (frag2 && !strstr(err, frag2)))
        fail_msg("message \"%s\" lacks the file, \"%s\" or \"%s\"", err, frag1, frag2 ? frag2 : "");
    assert_null(cfg.server);   /* cleaned up on failure */
    free(p);
}

#define GOOD_CLUSTER "clusters:\n- name: c\n  cluster:\n    server: https://h\n"

static void broken_files_name_the_problem(void **state)
{
    (void)state;
    expect_failure("clusters: [\n  - a: b\n  c: d\n", NULL, FG_E_PARSE, "line", NULL);
    expect_failure("", NULL, FG_E_PARSE, "empty", NULL);
    expect_failure("- a\n- b\n", NULL, FG_E_PARSE, "not a mapping", NULL);
    expect_failure(GOOD_CLUSTER "contexts:\n- name: x\n  context: {cluster: c}\n", NULL, FG_E_NOT_FOUND_LOCAL,
                   "current-context", NULL);
    expect_failure(GOOD_CLUSTER "contexts:\n- name: x\n  context: {cluster: c}\n", "nope", FG_E_NOT_FOUND_LOCAL,
                   "\"nope\"", "contexts");
    expect_failure("current-context: x\ncontexts:\n- name: x\n  context: {cluster: gone, user: u}\n", NULL,
                   FG_E_NOT_FOUND_LOCAL, "cluster \"gone\"", "clusters");
    expect_failure("current-context: x\n" GOOD_CLUSTER "contexts:\n- name: x\n  context: {cluster: c, user: who}\n",
                   NULL, FG_E_NOT_FOUND_LOCAL, "user \"who\"", "users");
    expect_failure("current-context: x\nclusters:\n- name: c\n  cluster:\n    server: https://h\n"
                   "    certificate-authority-data: '@@not base64!'\n"
                   "contexts:\n- name: x\n  context: {cluster: c}\n",
                   NULL, FG_E_PARSE, "certificate-authority-data", "base64");
    expect_failure("current-context: x\nclusters:\n- name: c\n  cluster:\n    server: https://h\n"
                   "    certificate-authority-data: QUJD=\n"
                   "contexts:\n- name: x\n  context: {cluster: c}\n",
                   NULL, FG_E_PARSE, "certificate-authority-data", "base64");
    expect_failure("current-context: x\n" GOOD_CLUSTER "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                   "users:\n- name: u\n  user:\n    client-certificate: missing.crt\n    client-key: missing.key\n",
                   NULL, FG_E_IO, "client-certificate", "missing.crt");
    expect_failure("current-context: x\nclusters:\n- name: c\n  cluster: {insecure-skip-tls-verify: true}\n"
                   "contexts:\n- name: x\n  context: {cluster: c}\n",
                   NULL, FG_E_PARSE, "cluster \"c\"", "server");
    expect_failure("current-context: x\nclusters:\n- name: c\n  cluster:\n    server: https://h\n"
                   "    insecure-skip-tls-verify: maybe\ncontexts:\n- name: x\n  context: {cluster: c}\n",
                   NULL, FG_E_PARSE, "insecure-skip-tls-verify", "maybe");
    expect_failure("current-context: x\n" GOOD_CLUSTER "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                   "users:\n- name: u\n  user:\n    client-certificate-data: QUJD\n",
                   NULL, FG_E_PARSE, "user \"u\"", "client key");
    expect_failure("current-context: [a]\n", NULL, FG_E_PARSE, "current-context", "string");
}

/* What `aws eks update-kubeconfig` writes: v1beta1, a PATH command, `env: null`, no interactiveMode. */
static void exec_stanza_as_eks_writes_it(void **state)
{
    (void)state;
    char *p = write_file("eks.yaml",
        "current-context: eks\n" GOOD_CLUSTER "contexts:\n- name: eks\n  context: {cluster: c, user: arn}\n"
        "users:\n- name: arn\n  user:\n    exec:\n"
        "      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
        "      args:\n      - --region\n      - us-west-2\n      - eks\n      - get-token\n"
        "      - --cluster-name\n      - prod\n      env: null\n");
    struct fg_kube_config cfg;
    char err[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_kube_config_load_file(p, NULL, &cfg, err), FG_OK);
    assert_non_null(cfg.exec);
    assert_null(cfg.token);
    assert_string_equal(cfg.exec->command, "aws");   /* no slash: looked up on PATH when it runs */
    assert_string_equal(cfg.exec->api_version, "client.authentication.k8s.io/v1beta1");
    assert_int_equal(cfg.exec->nargs, 6);
    assert_string_equal(cfg.exec->args[0], "--region");
    assert_string_equal(cfg.exec->args[5], "prod");
    assert_int_equal(cfg.exec->nenv, 0);
    assert_false(cfg.exec->provide_cluster_info);
    assert_null(cfg.exec->install_hint);
    /* the copy the client keeps is deep */
    struct fg_kube_exec *copy = fg_kube_exec_dup(cfg.exec);
    fg_kube_config_cleanup(&cfg);
    assert_string_equal(copy->args[3], "get-token");
    fg_kube_exec_free(copy);
    assert_null(fg_kube_exec_dup(NULL));
    free(p);
}

/* What GKE writes (v1, installHint, provideClusterInfo), plus env and a command relative to the file. */
static void exec_stanza_v1_with_env_and_relative_command(void **state)
{
    (void)state;
    char *p = write_file("conf/gke.yaml",
        "current-context: g\n" GOOD_CLUSTER "contexts:\n- name: g\n  context: {cluster: c, user: u}\n"
        "- name: abs\n  context: {cluster: c, user: a}\n"
        "users:\n- name: u\n  user:\n    exec:\n"
        "      apiVersion: client.authentication.k8s.io/v1\n      command: ./bin/gke-plugin\n"
        "      installHint: Install gke-gcloud-auth-plugin for use with kubectl\n"
        "      provideClusterInfo: true\n      interactiveMode: IfAvailable\n"
        "      env:\n      - name: CLOUDSDK_CORE_PROJECT\n        value: ml-prod\n      - name: EMPTY\n"
        "- name: a\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
        "      command: /opt/bin/plugin\n      interactiveMode: Never\n      args: []\n");
    struct fg_kube_config cfg;
    char err[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_kube_config_load_file(p, NULL, &cfg, err), FG_OK);
    char *want = fg_asprintf("%s/conf/bin/gke-plugin", dir);
    assert_string_equal(cfg.exec->command, want);
    assert_string_equal(cfg.exec->api_version, "client.authentication.k8s.io/v1");
    assert_string_equal(cfg.exec->install_hint, "Install gke-gcloud-auth-plugin for use with kubectl");
    assert_true(cfg.exec->provide_cluster_info);
    assert_int_equal(cfg.exec->nenv, 2);
    assert_string_equal(cfg.exec->env[0].name, "CLOUDSDK_CORE_PROJECT");
    assert_string_equal(cfg.exec->env[0].value, "ml-prod");
    assert_string_equal(cfg.exec->env[1].name, "EMPTY");
    assert_string_equal(cfg.exec->env[1].value, "");
    assert_int_equal(cfg.exec->nargs, 0);
    fg_kube_config_cleanup(&cfg);
    assert_int_equal(fg_kube_config_load_file(p, "abs", &cfg, err), FG_OK);
    assert_string_equal(cfg.exec->command, "/opt/bin/plugin");
    fg_kube_config_cleanup(&cfg);
    free(want);
    free(p);
}

#define EXEC_USER "current-context: x\n" GOOD_CLUSTER "contexts:\n- name: x\n  context: {cluster: c, user: u}\n" \
                  "users:\n- name: u\n  user:\n"
#define V1 "      apiVersion: client.authentication.k8s.io/v1\n"

static void bad_exec_and_auth_provider_stanzas(void **state)
{
    (void)state;
    expect_failure(EXEC_USER "    exec:\n      command: gke-gcloud-auth-plugin\n", NULL, FG_E_PARSE,
                   "user \"u\": exec has no \"apiVersion\"", "client.authentication.k8s.io/v1");
    expect_failure(EXEC_USER "    exec:\n      apiVersion: client.authentication.k8s.io/v1alpha1\n      command: x\n",
                   NULL, FG_E_UNSUPPORTED, "apiVersion \"client.authentication.k8s.io/v1alpha1\"", "not supported");
    expect_failure(EXEC_USER "    exec:\n" V1 "      args: [a]\n", NULL, FG_E_PARSE, "exec has no \"command\"", NULL);
    expect_failure(EXEC_USER "    exec:\n" V1 "      command: x\n      interactiveMode: Always\n", NULL,
                   FG_E_UNSUPPORTED, "interactiveMode Always", "Never or IfAvailable");
    expect_failure(EXEC_USER "    exec:\n" V1 "      command: x\n      interactiveMode: Sometimes\n", NULL,
                   FG_E_PARSE, "\"Sometimes\"", NULL);
    expect_failure(EXEC_USER "    exec:\n" V1 "      command: x\n      env:\n      - value: v\n", NULL,
                   FG_E_PARSE, "exec: env[0]", "\"name\"");
    expect_failure(EXEC_USER "    exec:\n" V1 "      command: x\n      env:\n      - name: A=B\n", NULL,
                   FG_E_PARSE, "exec: env[0]", "'='");
    expect_failure(EXEC_USER "    exec:\n" V1 "      command: x\n      env: {A: b}\n", NULL, FG_E_PARSE,
                   "\"env\" must be a list", NULL);
    expect_failure(EXEC_USER "    exec:\n" V1 "      command: x\n      args: --region\n", NULL, FG_E_PARSE,
                   "\"args\" must be a list", NULL);
    expect_failure(EXEC_USER "    exec:\n" V1 "      command: x\n      args: [a, {b: c}]\n", NULL, FG_E_PARSE,
                   "args[1] must be a string", NULL);
    expect_failure(EXEC_USER "    exec:\n" V1 "      command: x\n      provideClusterInfo: perhaps\n", NULL,
                   FG_E_PARSE, "provideClusterInfo", "perhaps");
    expect_failure(EXEC_USER "    exec: gke-gcloud-auth-plugin\n", NULL, FG_E_PARSE, "exec must be a mapping", NULL);
    expect_failure(EXEC_USER "    auth-provider:\n      name: gcp\n      config: {access-token: old}\n", NULL,
                   FG_E_UNSUPPORTED, "auth-provider \"gcp\"", "gke-gcloud-auth-plugin");
    expect_failure(EXEC_USER "    auth-provider:\n      name: azure\n", NULL, FG_E_UNSUPPORTED,
                   "auth-provider \"azure\"", "kubelogin convert-kubeconfig");
    expect_failure(EXEC_USER "    auth-provider:\n      name: oidc\n      config: {idp-issuer-url: https://i}\n",
                   NULL, FG_E_UNSUPPORTED, "auth-provider \"oidc\"", "kubelogin");
    expect_failure(EXEC_USER "    token: t\n    auth-provider: {name: openstack}\n", NULL, FG_E_UNSUPPORTED,
                   "\"openstack\"", "exec credential plugin");
}

/* A static token and exec side by side both load; the client lets the token win, as client-go does. */
static void exec_beside_a_token_loads(void **state)
{
    (void)state;
    char *p = write_file("both.yaml", EXEC_USER "    token: t\n    exec:\n" V1 "      command: x\n");
    struct fg_kube_config cfg;
    char err[FG_ERRMSG_MAX] = "";
    assert_int_equal(fg_kube_config_load_file(p, NULL, &cfg, err), FG_OK);
    assert_string_equal(cfg.token, "t");
    assert_string_equal(cfg.exec->command, "x");
    fg_kube_config_cleanup(&cfg);
    assert_null(cfg.exec);
    free(p);
}

static void missing_file_is_io_error(void **state)
{
    (void)state;
    struct fg_kube_config cfg;
    char err[FG_ERRMSG_MAX];
    assert_int_equal(fg_kube_config_load_file("/nonexistent/kubeconfig", NULL, &cfg, err), FG_E_IO);
    assert_non_null(strstr(err, "/nonexistent/kubeconfig"));
}

static void in_cluster(void **state)
{
    (void)state;
    char *tok = write_file("sa/token", "tok\n");
    char *ca = write_file("sa/ca.crt", "SA-CA");
    char *ns = write_file("sa/namespace", "fracgpu-system\n");
    char *sa = fg_asprintf("%s/sa", dir);
    struct fg_kube_config cfg;
    char err[FG_ERRMSG_MAX];

    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_int_equal(fg_kube_config_load_in_cluster(sa, &cfg, err), FG_E_NOT_FOUND_LOCAL);
    assert_non_null(strstr(err, "KUBERNETES_SERVICE_HOST"));

    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(fg_kube_config_load_in_cluster(sa, &cfg, err), FG_OK);
    assert_string_equal(cfg.server, "https://10.96.0.1:443");
    assert_string_equal(cfg.token_file, tok);
    assert_null(cfg.token);
    assert_string_equal(cfg.ca_pem, "SA-CA");
    assert_string_equal(cfg.namespace, "fracgpu-system");
    fg_kube_config_cleanup(&cfg);

    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    unlink(ns);
    assert_int_equal(fg_kube_config_load_in_cluster(sa, &cfg, err), FG_OK);
    assert_string_equal(cfg.server, "https://[fd00::1]:443");
    assert_string_equal(cfg.namespace, "default");
    fg_kube_config_cleanup(&cfg);

    setenv("KUBERNETES_SERVICE_PORT", "https", 1);
    assert_int_equal(fg_kube_config_load_in_cluster(sa, &cfg, err), FG_E_PARSE);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);

    unlink(tok);
    assert_int_equal(fg_kube_config_load_in_cluster(sa, &cfg, err), FG_E_IO);
    assert_non_null(strstr(err, "token"));
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    free(tok), free(ca), free(ns), free(sa);
}

static void default_chain_prefers_kubeconfig_env(void **state)
{
    (void)state;
    char *p = write_file("env.yaml", "current-context: x\n" GOOD_CLUSTER
                                     "contexts:\n- name: x\n  context: {cluster: c}\n");
    char *list = fg_asprintf("%s:/elsewhere", p);
    setenv("KUBECONFIG", list, 1);
    struct fg_kube_config cfg;
    char err[FG_ERRMSG_MAX];
    assert_int_equal(fg_kube_config_load_default(NULL, NULL, &cfg, err), FG_OK);
    assert_string_equal(cfg.server, "https://h");
    fg_kube_config_cleanup(&cfg);
    assert_int_equal(fg_kube_config_load_default(NULL, "x", &cfg, err), FG_OK);   /* a context by name */
    assert_string_equal(cfg.server, "https://h");
    fg_kube_config_cleanup(&cfg);
    assert_int_equal(fg_kube_config_load_default(NULL, "nope", &cfg, err), FG_E_NOT_FOUND_LOCAL);
    assert_non_null(strstr(err, "nope"));
    assert_int_equal(fg_kube_config_load_default("/nonexistent/x", NULL, &cfg, err), FG_E_IO);
    unsetenv("KUBECONFIG");
    free(p), free(list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(token_context_with_namespace),
        cmocka_unit_test(named_context_and_base64_data),
        cmocka_unit_test(files_resolved_relative_to_kubeconfig),
        cmocka_unit_test(broken_files_name_the_problem),
        cmocka_unit_test(exec_stanza_as_eks_writes_it),
        cmocka_unit_test(exec_stanza_v1_with_env_and_relative_command),
        cmocka_unit_test(bad_exec_and_auth_provider_stanzas),
        cmocka_unit_test(exec_beside_a_token_loads),
        cmocka_unit_test(missing_file_is_io_error),
        cmocka_unit_test(in_cluster),
        cmocka_unit_test(default_chain_prefers_kubeconfig_env),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
