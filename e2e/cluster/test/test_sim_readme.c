/*
 * e2e_sim_readme — the README's commands work as written: every line of every ```sh block of
 * README.md, in order, run by /bin/sh from the checkout's root against a simulated cluster
 * (testdata/share-e2e.yaml), with the machine's real kubectl finding `kubectl fracgpu` on the PATH,
 * must exit 0. Between the blocks the test checks what they promise: after the install, the built-in
 * policies exist; after opting in, the example's pods run as fracgpu's (mutated, placed by
 * fracgpu-scheduler on a GPU a capacity pod holds) and no log holds a key (a planted one is found);
 * after the uninstall, fracgpu's namespace goes.
 * The independent checker watches throughout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/cluster/test/share_fixture.h"
#include "reconcilers/podcontract.h"

static struct share_env e;

/* Runs one README line; fails the test, showing its output, unless it exits 0. */
static void run_line(const char *line)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && KUBECONFIG='%s' KUBECACHEDIR='%s/readme-cache' PATH='%s':\"$PATH\" timeout 240 sh -c '%s' 2>&1",
             getenv("FG_SOURCE_DIR"), e.sim.kubeconfig, e.sim.dir, getenv("FG_BIN_DIR"), line);
    struct fg_buf out = FG_BUF_INIT;
    int rc = fg_buf_run_command(&out, cmd);
    printf("$ %s\n%s", line, fg_buf_str(&out));
    if (rc != 0)
        fail_msg("README command `%s` exited %d", line, rc);
    fg_buf_cleanup(&out);
}

/* The README's ```sh blocks: each an array of its command lines. */
static json_object *sh_blocks(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/README.md", getenv("FG_SOURCE_DIR"));
    struct fg_buf text = FG_BUF_INIT;
    assert_int_equal(fg_buf_read_file(&text, path, NULL), FG_OK);
    json_object *blocks = json_object_new_array(), *cur = NULL;
    char *save = NULL, *copy = fg_strdup(fg_buf_str(&text));
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!cur && !strcmp(line, "```sh")) {
            cur = json_object_new_array();
        } else if (cur && !strncmp(line, "```", 3)) {
            json_object_array_add(blocks, cur);
            cur = NULL;
        } else if (cur && line[0] && line[0] != '#') {
            assert_null(strchr(line, '\''));   /* run_line quotes with ' */
            json_object_array_add(cur, json_object_new_string(line));
        }
    }
    assert_null(cur);   /* no block left open */
    free(copy);
    fg_buf_cleanup(&text);
    return blocks;
}

static bool example_runs_as_fracgpus(void *ud)
{
    (void)ud;
    struct share_app v;
    share_app(&e.sim, "default", "llm", &v);
    bool ok = v.n == 2 && v.running == 2;
    for (size_t i = 0; ok && i < v.n; i++)
        ok = fg_str_eq(fg_json_get_str(v.pods[i], "spec", "schedulerName", NULL), FG_SCHEDULER_NAME) &&
             share_ann(v.pods[i], FG_ANN_CAPACITY_POD);
    share_app_cleanup(&v);
    return ok;
}

static bool system_namespace_gone(void *ud)
{
    (void)ud;
    struct fg_buf out = FG_BUF_INIT;
    int rc = fg_kubectl_run(&e.sim.k, &out, NULL, "get", "namespace", SHARE_SYSTEM_NS, NULL);
    fg_buf_cleanup(&out);
    return rc != 0;
}

/* fracgpu runs with its keys in place: no log holds them; then the check itself is shown to see a
 * planted copy of the grant key (as hex) and of a line of the webhook's private key. */
static void logs_hold_no_secret(void)
{
    assert_int_equal(fg_simcluster_log_problems(&e.sim), 0);
    char planted[256], line[256];
    snprintf(planted, sizeof planted, "%s/logs/planted.log", e.sim.work);
    struct fg_buf out = FG_BUF_INIT;
    SHARE_OK(&e, &out, NULL, "get", "secret", "fracgpu-grant-key", "-n", SHARE_SYSTEM_NS, "-o", "jsonpath={.data.key}");
    size_t len = 0;
    unsigned char *key = fg_base64_decode(fg_buf_str(&out), &len);
    assert_non_null(key);
    assert_int_equal(len, 32);
    int n = snprintf(line, sizeof line, "{\"msg\":\"signing with ");
    for (size_t i = 0; i < len; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, "%02x", key[i]);
    snprintf(line + n, sizeof line - (size_t)n, "\"}\n");
    free(key);
    assert_int_equal(fg_write_file_atomic(planted, line, strlen(line)), 0);
    assert_int_equal(fg_simcluster_log_problems(&e.sim), 1);

    SHARE_OK(&e, &out, NULL, "get", "secret", "fracgpu-webhook-tls", "-n", SHARE_SYSTEM_NS, "-o",
             "jsonpath={.data.tls\\.key}");
    unsigned char *pem = fg_base64_decode(fg_buf_str(&out), &len);
    assert_non_null(pem);
    const char *body = memchr(pem, '\n', len);   /* the key's first body line follows its header */
    assert_non_null(body);
    snprintf(line, sizeof line, "tls: loaded %.64s\n", body + 1);
    free(pem);
    assert_int_equal(fg_write_file_atomic(planted, line, strlen(line)), 0);
    assert_int_equal(fg_simcluster_log_problems(&e.sim), 1);
    unlink(planted);
    fg_buf_cleanup(&out);
}

static void test_readme(void **state)
{
    (void)state;
    json_object *blocks = sh_blocks();
    assert_int_equal(json_object_array_length(blocks), 3);   /* install, opt in, uninstall */
    size_t lines = 0;
    for (size_t b = 0; b < json_object_array_length(blocks); b++) {
        json_object *block = json_object_array_get_idx(blocks, b);
        for (size_t i = 0; i < json_object_array_length(block); i++, lines++)
            run_line(json_object_get_string(json_object_array_get_idx(block, i)));
        struct fg_buf out = FG_BUF_INIT;
        if (b == 0) {
            SHARE_OK(&e, &out, NULL, "get", "gpupolicy", "real-time", "batch");
        } else if (b == 1) {
            if (!share_eventually(example_runs_as_fracgpus, NULL, 180))
                share_show_and_fail(&e.sim, "the README's example does not run on shared GPUs");
            SHARE_OK(&e, &out, NULL, "get", "gpuworkload", "deployment-llm", "-n", "default", "-o",
                     "jsonpath={.status.policy}");
            assert_string_equal(fg_buf_str(&out), "near-real-time");
            logs_hold_no_secret();
        } else if (!share_eventually(system_namespace_gone, NULL, 180)) {
            share_show_and_fail(&e.sim, "the uninstall left fracgpu-system behind");
        }
        fg_buf_cleanup(&out);
    }
    printf("README: %zu commands in %zu blocks, each exit 0\n", lines, json_object_array_length(blocks));
    json_object_put(blocks);
}

static int setup(void **state)
{
    (void)state;
    return share_setup(&e, "share-e2e.yaml", "e2e_sim_readme");
}

static int teardown(void **state)
{
    (void)state;
    return share_teardown(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_readme) };
    return cmocka_run_group_tests(tests, setup, teardown);
}
