/*
 * What a fresh server holds before anyone writes, as kube-apiserver makes it at start: the
 * namespaces default, kube-node-lease, kube-public and kube-system, and the PriorityClasses
 * system-cluster-critical and system-node-critical; and a state file that carries them over a
 * restart unchanged and once each.
 */
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
#include "base/json.h"
#include "base/mem.h"
#include "client.h"

#define NAMESPACES "/api/v1/namespaces"
#define PRIORITY_CLASSES "/apis/scheduling.k8s.io/v1/priorityclasses"

/* The names of a list's items, joined by commas, and their uids into uids (same order). */
static char *names_of(const char *base, const char *path, char *uids, size_t uids_size)
{
    json_object *list = tc_get_json(base, path);
    json_object *items = fg_json_get(list, "items", NULL);
    struct fg_buf names = FG_BUF_INIT;
    uids[0] = '\0';
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *it = json_object_array_get_idx(items, i);
        assert_int_equal(fg_buf_printf(&names, "%s%s", i ? "," : "",
                                       fg_json_get_str(it, "metadata", "name", NULL)), FG_OK);
        size_t used = strlen(uids);
        snprintf(uids + used, uids_size - used, "%s%s", i ? "," : "", fg_json_get_str(it, "metadata", "uid", NULL));
    }
    json_object_put(list);
    return fg_buf_take(&names);
}

static void expect_priority_class(const char *base, const char *name, int64_t value, const char *description)
{
    char *path = fg_asprintf(PRIORITY_CLASSES "/%s", name);
    json_object *pc = tc_get_json(base, path);
    int64_t got = 0;
    assert_true(fg_json_get_int64(pc, &got, "value", NULL));
    assert_int_equal(got, value);
    assert_string_equal(fg_json_get_str(pc, "description", NULL), description);
    assert_string_equal(fg_json_get_str(pc, "preemptionPolicy", NULL), "PreemptLowerPriority");
    json_object *global = fg_json_get(pc, "globalDefault", NULL); /* omitempty in kube: false is absent */
    assert_true(!global || !json_object_get_boolean(global));
    assert_string_equal(fg_json_get_str(pc, "kind", NULL), "PriorityClass");
    assert_non_null(fg_json_get_str(pc, "metadata", "uid", NULL));
    json_object_put(pc);
    free(path);
}

static void expect_bootstrap_objects(const char *base, char *ns_uids, char *pc_uids, size_t size)
{
    char *ns = names_of(base, NAMESPACES, ns_uids, size);
    assert_string_equal(ns, "default,kube-node-lease,kube-public,kube-system");
    free(ns);
    char *pcs = names_of(base, PRIORITY_CLASSES, pc_uids, size);
    assert_string_equal(pcs, "system-cluster-critical,system-node-critical");
    free(pcs);
    expect_priority_class(base, "system-node-critical", 2000001000,
                          "Used for system critical pods that must not be moved from their current node.");
    expect_priority_class(base, "system-cluster-critical", 2000000000,
                          "Used for system critical pods that must run in the cluster, but can be moved to "
                          "another node if necessary.");
}

/* How often `needle` occurs in the file. */
static int occurrences(const char *file, const char *needle)
{
    struct fg_buf b = FG_BUF_INIT;
    char msg[FG_ERRMSG_MAX];
    assert_int_equal(fg_buf_read_file(&b, file, msg), FG_OK);
    int n = 0;
    for (const char *p = fg_buf_str(&b); (p = strstr(p, needle)); p += strlen(needle))
        n++;
    fg_buf_cleanup(&b);
    return n;
}

static void fresh_server_and_state_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/fg-bootstrap-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *file = fg_asprintf("%s/state.json", dir);
    struct fg_apiserver_opts opts = { .state_file = file };
    char ns_uids[512], pc_uids[512], ns_again[512], pc_again[512], msg[FG_ERRMSG_MAX];

    struct tc_server s;
    tc_server_start(&s, &opts);
    expect_bootstrap_objects(s.base, ns_uids, pc_uids, sizeof(pc_uids));
    fg_apiserver_stop(s.srv);
    assert_int_equal(fg_apiserver_save_state(s.srv, msg), FG_OK);
    tc_server_stop(&s);
    static const char *const names[] = { "\"name\":\"default\"", "\"name\":\"kube-system\"",
                                         "\"name\":\"kube-public\"", "\"name\":\"kube-node-lease\"",
                                         "\"name\":\"system-node-critical\"",
                                         "\"name\":\"system-cluster-critical\"" };
    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
        assert_int_equal(occurrences(file, names[i]), 1);

    tc_server_start(&s, &opts); /* loads them: the same objects, none made again */
    expect_bootstrap_objects(s.base, ns_again, pc_again, sizeof(pc_again));
    assert_string_equal(ns_again, ns_uids);
    assert_string_equal(pc_again, pc_uids);
    fg_apiserver_stop(s.srv);
    assert_int_equal(fg_apiserver_save_state(s.srv, msg), FG_OK);
    tc_server_stop(&s);
    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
        assert_int_equal(occurrences(file, names[i]), 1);

    unlink(file);
    rmdir(dir);
    free(file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fresh_server_and_state_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
