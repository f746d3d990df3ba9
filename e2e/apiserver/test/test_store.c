/* The store keeps what it is given compact: every hash table of a stored object sized to its members
 * (json-c's tokener gives each object 16 slots), every empty object one shared {}, the object
 * otherwise unchanged, its text json-c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/json.h"
#include "e2e/apiserver/registry.h"
#include "e2e/apiserver/store.h"

/* Every object in o has a table no larger than its members need at json-c's load factor. */
static void assert_fits(json_object *o)
{
    if (json_object_is_type(o, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(o); i++)
            assert_fits(json_object_array_get_idx(o, i));
        return;
    }
    if (!json_object_is_type(o, json_type_object))
        return;
    struct lh_table *t = json_object_get_object(o);
    if (t->size > lh_table_length(t) * 3 / 2 + 1)
        fail_msg("%d slots for %d members in %s", t->size, lh_table_length(t), json_object_to_json_string(o));
    json_object_object_foreach(o, key, value) {
        (void)key;
        assert_fits(value);
    }
}

static void stored_objects_fit(void **state)
{
    (void)state;
    struct fg__registry reg;
    assert_int_equal(fg__registry_init_builtin(&reg, NULL), FG_OK);
    struct fg__store st;
    fg__store_init(&st, &reg, 16);
    const char *doc = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"default\","
                      "\"labels\":{\"a\":\"1\",\"b\":\"2\",\"c\":\"3\",\"d\":\"4\",\"e\":\"5\",\"f\":\"6\",\"g\":\"7\"},"
                      "\"managedFields\":[{\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:a\":{}}}}}]},"
                      "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"resources\":{}}]}}";
    json_object *obj = NULL, *want = NULL;
    assert_int_equal(fg_json_parse(doc, strlen(doc), 0, &obj, NULL), FG_OK);
    assert_int_equal(json_object_get_object(obj)->size, 16); /* what the tokener gives */
    const struct fg__entry *e = fg__store_put(&st, fg__registry_find(&reg, "", "v1", "pods"), obj);
    assert_fits(e->obj);
    assert_int_equal(fg_json_parse(e->text->data, e->text->len, 0, &want, NULL), FG_OK);
    assert_true(json_object_equal(want, e->obj));
    assert_string_equal(fg_json_get_str(e->obj, "metadata", "labels", "g", NULL), "7");
    json_object *resources = fg_json_get(json_object_array_get_idx(fg_json_get(e->obj, "spec", "containers", NULL), 0),
                                         "resources", NULL);
    json_object *labels = fg_json_get(json_object_array_get_idx(fg_json_get(e->obj, "metadata", "managedFields", NULL),
                                                                0), "fieldsV1", "f:metadata", "f:labels", NULL);
    assert_ptr_equal(resources, fg_json_get(labels, ".", NULL));
    assert_ptr_equal(resources, fg_json_get(labels, "f:a", NULL));
    assert_int_equal(json_object_object_length(resources), 0);
    assert_non_null(fg_json_get(e->obj, "metadata", "managedFields", NULL));
    assert_string_equal(fg_json_get_str(e->obj, "metadata", "resourceVersion", NULL), "1");
    json_object_put(want);
    fg__store_cleanup(&st);
    fg__registry_cleanup(&reg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stored_objects_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
