/* Tests for kobj (cached objects) and store (keyed cache, indexes, replace, references). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "base/mem.h"
#include "operator/cache/kobj.h"
#include "operator/cache/store.h"

static json_object *mk(const char *ns, const char *name, unsigned rv, const char *node)
{
    char *text = fg_asprintf("{\"metadata\":{%s%s%s\"name\":\"%s\",\"uid\":\"uid-%s\",\"resourceVersion\":\"%u\"},"
                             "\"spec\":{%s%s%s}}",
                             ns ? "\"namespace\":\"" : "", ns ? ns : "", ns ? "\"," : "", name, name, rv,
                             node ? "\"nodeName\":\"" : "", node ? node : "", node ? "\"" : "");
    json_object *o = json_tokener_parse(text);
    free(text);
    assert_non_null(o);
    return o;
}

static struct fg_kobj *kobj(json_object *o)
{
    struct fg_kobj *k = NULL;
    assert_int_equal(fg_kobj_new(o, 0, &k, NULL), FG_OK);
    return k;
}

/* Upserts a fresh object and returns the result; drops every reference it made. */
static enum fg_store_result put(struct fg_store *s, const char *ns, const char *name, unsigned rv, const char *node)
{
    json_object *o = mk(ns, name, rv, node);
    struct fg_kobj *k = kobj(o), *old = NULL;
    enum fg_store_result r = fg_store_upsert(s, k, o, &old);
    assert_true((r == FG_STORE_UPDATED) == (old != NULL));
    fg_kobj_unref(old);
    fg_kobj_unref(k);
    json_object_put(o);
    return r;
}

static void test_kobj_fields(void **state)
{
    (void)state;
    json_object *o = mk("ml", "llm-0", 42, "node-1");
    struct fg_kobj *k = kobj(o);
    assert_string_equal(fg_kobj_key(k), "ml/llm-0");
    assert_string_equal(fg_kobj_namespace(k), "ml");
    assert_string_equal(fg_kobj_name(k), "llm-0");
    assert_string_equal(fg_kobj_uid(k), "uid-llm-0");
    assert_int_equal(fg_kobj_rv(k), 42);
    size_t len = 0;
    const char *text = fg_kobj_text(k, &len);
    assert_int_equal(strlen(text), len);
    assert_true(fg_kobj_size(k) > len);

    /* A private tree: changing it leaves the cached text alone. */
    json_object *copy = NULL;
    assert_int_equal(fg_kobj_parse(k, &copy, NULL), FG_OK);
    assert_string_equal(fg_json_get_str(copy, "spec", "nodeName", NULL), "node-1");
    json_object_object_del(json_object_object_get(copy, "spec"), "nodeName");
    json_object_put(copy);
    assert_non_null(strstr(fg_kobj_text(k, NULL), "node-1"));
    fg_kobj_unref(k);
    json_object_put(o);

    o = mk(NULL, "node-1", 7, NULL);
    k = kobj(o);
    assert_string_equal(fg_kobj_key(k), "node-1");
    assert_string_equal(fg_kobj_name(k), "node-1");
    assert_string_equal(fg_kobj_namespace(k), "");
    fg_kobj_unref(k);
    json_object_put(o);
}

static void test_kobj_bad_input(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{}",
        "[1,2]",
        "{\"metadata\":{\"name\":\"a\"}}",
        "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"\"}}",
        "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"12x\"}}",
        "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"-3\"}}",
        "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"99999999999999999999999\"}}",
        "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":5}}",
        "{\"metadata\":{\"name\":\"\",\"resourceVersion\":\"5\"}}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_object *o = json_tokener_parse(bad[i]);
        struct fg_kobj *k = (struct fg_kobj *)1;
        char errmsg[FG_ERRMSG_MAX] = "";
        assert_int_equal(fg_kobj_new(o, 0, &k, errmsg), FG_E_INVAL);
        assert_null(k);
        assert_true(strlen(errmsg) > 0);
        json_object_put(o);
    }
    uint64_t rv = 0;
    assert_true(fg_kobj_parse_rv("18446744073709551615", &rv));
    assert_true(rv == UINT64_MAX);
    assert_false(fg_kobj_parse_rv(NULL, &rv));
}

static void test_store_get_list_delete(void **state)
{
    (void)state;
    struct fg_store *s = fg_store_new();
    assert_int_equal(put(s, "a", "p1", 10, NULL), FG_STORE_ADDED);
    assert_int_equal(put(s, "a", "p2", 11, NULL), FG_STORE_ADDED);
    assert_int_equal(put(s, "b", "p1", 12, NULL), FG_STORE_ADDED);
    assert_int_equal(put(s, NULL, "n1", 13, NULL), FG_STORE_ADDED);
    assert_int_equal(fg_store_len(s), 4);

    assert_int_equal(put(s, "a", "p1", 20, NULL), FG_STORE_UPDATED);
    assert_int_equal(put(s, "a", "p1", 20, NULL), FG_STORE_UNCHANGED);
    assert_int_equal(put(s, "a", "p1", 15, NULL), FG_STORE_STALE);
    struct fg_kobj *k = fg_store_get(s, "a/p1");
    assert_non_null(k);
    assert_int_equal(fg_kobj_rv(k), 20);
    fg_kobj_unref(k);
    assert_null(fg_store_get(s, "a/nope"));
    k = fg_store_get(s, "n1");
    assert_non_null(k);
    fg_kobj_unref(k);

    struct fg_kobj_list l;
    fg_store_list(s, &l);
    assert_int_equal(l.n, 4);
    unsigned seen = 0;
    for (size_t i = 0; i < l.n; i++)
        seen |= strcmp(fg_kobj_key(l.items[i]), "a/p1") == 0 ? 1 : strcmp(fg_kobj_key(l.items[i]), "b/p1") == 0 ? 2 : 4;
    assert_int_equal(seen, 7);
    fg_kobj_list_cleanup(&l);
    assert_int_equal(l.n, 0);

    /* A delete older than the stored object is ignored; a newer one (or rv 0) removes. */
    assert_null(fg_store_delete(s, "a/p1", 19));
    k = fg_store_delete(s, "a/p1", 21);
    assert_non_null(k);
    assert_int_equal(fg_kobj_rv(k), 20);
    fg_kobj_unref(k);
    assert_null(fg_store_delete(s, "a/p1", 0));
    k = fg_store_delete(s, "a/p2", 0);
    assert_non_null(k);
    fg_kobj_unref(k);
    assert_int_equal(fg_store_len(s), 2);
    fg_store_free(s);
}

static void test_store_references_outlive(void **state)
{
    (void)state;
    struct fg_store *s = fg_store_new();
    put(s, "a", "p", 1, NULL);
    struct fg_kobj *reader = fg_store_get(s, "a/p");
    put(s, "a", "p", 2, NULL);
    /* The reader still holds version 1, intact. */
    assert_int_equal(fg_kobj_rv(reader), 1);
    assert_string_equal(fg_kobj_key(reader), "a/p");
    assert_non_null(strstr(fg_kobj_text(reader, NULL), "\"resourceVersion\":\"1\""));
    struct fg_kobj *reader2 = fg_store_get(s, "a/p");
    fg_kobj_unref(fg_store_delete(s, "a/p", 0));
    assert_null(fg_store_get(s, "a/p"));
    assert_int_equal(fg_kobj_rv(reader2), 2);
    struct fg_kobj_list l;
    put(s, "a", "q", 3, NULL);
    fg_store_list(s, &l);
    fg_store_free(s);
    /* Listed objects outlive the store too. */
    assert_int_equal(l.n, 1);
    assert_string_equal(fg_kobj_name(l.items[0]), "q");
    fg_kobj_list_cleanup(&l);
    fg_kobj_unref(reader);
    fg_kobj_unref(reader2);
}

static size_t count_index(struct fg_store *s, const char *index, const char *value)
{
    struct fg_kobj_list l;
    assert_int_equal(fg_store_by_index(s, index, value, &l), FG_OK);
    size_t n = l.n;
    fg_kobj_list_cleanup(&l);
    return n;
}

/* Two index values per object: its name's first letter and "all". */
static size_t index_two(void *ud, json_object *obj, const char **values, size_t max)
{
    (void)ud;
    static char letters[26][2];
    const char *name = fg_json_get_str(obj, "metadata", "name", NULL);
    int c = name[0] - 'a';
    letters[c][0] = name[0];
    if (max < 2)
        return 0;
    values[0] = letters[c];
    values[1] = "all";
    return 2;
}

/* The controller uid index: only a reference with controller true counts. */
static void test_store_controller_index(void **state)
{
    (void)state;
    const char *objs[] = {
        "{\"metadata\":{\"name\":\"p1\",\"resourceVersion\":\"1\",\"ownerReferences\":[{\"uid\":\"cm\"},"
        "{\"uid\":\"rs\",\"controller\":true}]}}",
        "{\"metadata\":{\"name\":\"p2\",\"resourceVersion\":\"2\",\"ownerReferences\":[{\"uid\":\"rs\","
        "\"controller\":false}]}}",
        "{\"metadata\":{\"name\":\"p3\",\"resourceVersion\":\"3\",\"ownerReferences\":[{\"uid\":\"rs\","
        "\"controller\":\"true\"}]}}",
        "{\"metadata\":{\"name\":\"p4\",\"resourceVersion\":\"4\"}}",
    };
    struct fg_store *s = fg_store_new();
    assert_int_equal(fg_store_add_indexer(s, "owner", fg_index_by_controller_uid, NULL), FG_OK);
    for (size_t i = 0; i < 4; i++) {
        json_object *o = json_tokener_parse(objs[i]);
        struct fg_kobj *k, *old = NULL;
        assert_int_equal(fg_kobj_new(o, 0, &k, NULL), FG_OK);
        fg_store_upsert(s, k, o, &old);
        fg_kobj_unref(k);
        json_object_put(o);
    }
    assert_int_equal(count_index(s, "owner", "rs"), 1);
    assert_int_equal(count_index(s, "owner", "cm"), 0);
    fg_store_free(s);
}

static void test_store_indexers(void **state)
{
    (void)state;
    struct fg_store *s = fg_store_new();
    assert_int_equal(fg_store_add_indexer(s, "node", fg_index_by_node_name, NULL), FG_OK);
    assert_int_equal(fg_store_add_indexer(s, "node", fg_index_by_node_name, NULL), FG_E_INVAL);
    assert_int_equal(fg_store_add_indexer(s, "namespace", fg_index_by_namespace, NULL), FG_OK);
    assert_int_equal(fg_store_add_indexer(s, "two", index_two, NULL), FG_OK);
    put(s, "a", "p1", 1, "n1");
    put(s, "a", "p2", 2, "n1");
    put(s, "b", "q3", 3, "n2");
    put(s, "b", "q4", 4, NULL);
    assert_int_equal(fg_store_add_indexer(s, "late", fg_index_by_node_name, NULL), FG_E_BUSY);

    assert_int_equal(count_index(s, "node", "n1"), 2);
    assert_int_equal(count_index(s, "node", "n2"), 1);
    assert_int_equal(count_index(s, "node", "n3"), 0);
    assert_int_equal(count_index(s, "namespace", "b"), 2);
    assert_int_equal(count_index(s, "two", "all"), 4);
    assert_int_equal(count_index(s, "two", "q"), 2);

    /* Moving p2 to n2 moves it between buckets; deleting removes it everywhere. */
    put(s, "a", "p2", 5, "n2");
    assert_int_equal(count_index(s, "node", "n1"), 1);
    assert_int_equal(count_index(s, "node", "n2"), 2);
    /* A stale upsert changes no index. */
    put(s, "a", "p2", 4, "n1");
    assert_int_equal(count_index(s, "node", "n1"), 1);
    fg_kobj_unref(fg_store_delete(s, "a/p1", 0));
    assert_int_equal(count_index(s, "node", "n1"), 0);
    assert_int_equal(count_index(s, "two", "all"), 3);

    struct fg_kobj_list l = { (struct fg_kobj **)1, 9 };
    assert_int_equal(fg_store_by_index(s, "nosuch", "x", &l), FG_E_NOT_FOUND_LOCAL);
    assert_null(l.items);
    assert_int_equal(l.n, 0);
    fg_store_free(s);
}

static void test_store_replace(void **state)
{
    (void)state;
    struct fg_store *s = fg_store_new();
    assert_int_equal(fg_store_add_indexer(s, "node", fg_index_by_node_name, NULL), FG_OK);
    put(s, "a", "keep", 1, "n1");
    put(s, "a", "change", 2, "n1");
    put(s, "a", "vanish", 3, "n1");
    struct fg_kobj *held = fg_store_get(s, "a/vanish");

    fg_store_replace_begin(s);
    assert_int_equal(put(s, "a", "keep", 1, "n1"), FG_STORE_UNCHANGED);
    assert_int_equal(put(s, "a", "change", 9, "n1"), FG_STORE_UPDATED);
    assert_int_equal(put(s, "a", "new", 10, "n1"), FG_STORE_ADDED);
    struct fg_kobj_list removed;
    fg_store_replace_finish(s, &removed);
    assert_int_equal(removed.n, 1);
    assert_string_equal(fg_kobj_key(removed.items[0]), "a/vanish");
    fg_kobj_list_cleanup(&removed);

    assert_int_equal(fg_store_len(s), 3);
    assert_null(fg_store_get(s, "a/vanish"));
    assert_int_equal(count_index(s, "node", "n1"), 3);
    assert_string_equal(fg_kobj_name(held), "vanish");
    fg_kobj_unref(held);

    /* An empty relist empties the store. */
    fg_store_replace_begin(s);
    fg_store_replace_finish(s, &removed);
    assert_int_equal(removed.n, 3);
    fg_kobj_list_cleanup(&removed);
    assert_int_equal(fg_store_len(s), 0);
    assert_int_equal(count_index(s, "node", "n1"), 0);
    fg_store_free(s);
}

static void test_store_many(void **state)
{
    (void)state;
    struct fg_store *s = fg_store_new();
    assert_int_equal(fg_store_add_indexer(s, "node", fg_index_by_node_name, NULL), FG_OK);
    char name[32], node[32];
    for (unsigned i = 0; i < 5000; i++) {
        snprintf(name, sizeof(name), "p%u", i);
        snprintf(node, sizeof(node), "n%u", i % 50);
        assert_int_equal(put(s, "ns", name, i + 1, node), FG_STORE_ADDED);
    }
    for (unsigned i = 0; i < 5000; i += 2) {
        snprintf(name, sizeof(name), "ns/p%u", i);
        fg_kobj_unref(fg_store_delete(s, name, 0));
    }
    assert_int_equal(fg_store_len(s), 2500);
    assert_int_equal(count_index(s, "node", "n1"), 100);
    assert_int_equal(count_index(s, "node", "n2"), 0);
    fg_store_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kobj_fields),
        cmocka_unit_test(test_kobj_bad_input),
        cmocka_unit_test(test_store_get_list_delete),
        cmocka_unit_test(test_store_references_outlive),
        cmocka_unit_test(test_store_indexers),
        cmocka_unit_test(test_store_controller_index),
        cmocka_unit_test(test_store_replace),
        cmocka_unit_test(test_store_many),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
