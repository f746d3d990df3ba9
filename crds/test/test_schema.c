/*
 * The CRD schema in crds/gpupolicies.yaml and the C decoder agree: every field of the decoder's table
 * is in the schema with the same type, bounds, enum values, duration pattern and default, and the
 * schema has no spec field the decoder does not know. Also the CRD's names, scope, short names,
 * status subresource and printer columns; and every field of every CRD has a description. The YAML is read
 * with libyaml into json-c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <yaml.h>

#include "base/json.h"
#include "base/duration.h"
#include "crds/gpupolicy_fields.h"

/* A YAML node as json-c: mappings → objects, sequences → arrays, plain integers → ints, the rest → strings. */
static json_object *to_json(yaml_document_t *doc, yaml_node_t *node)
{
    switch (node->type) {
    case YAML_MAPPING_NODE: {
        json_object *o = json_object_new_object();
        for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            json_object_object_add(o, (const char *)k->data.scalar.value,
                                   to_json(doc, yaml_document_get_node(doc, p->value)));
        }
        return o;
    }
    case YAML_SEQUENCE_NODE: {
        json_object *a = json_object_new_array();
        for (yaml_node_item_t *i = node->data.sequence.items.start; i < node->data.sequence.items.top; i++)
            json_object_array_add(a, to_json(doc, yaml_document_get_node(doc, *i)));
        return a;
    }
    case YAML_SCALAR_NODE: {
        const char *v = (const char *)node->data.scalar.value;
        char *end = NULL;
        long long n = strtoll(v, &end, 10);
        if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && *v && !*end)
            return json_object_new_int64(n);
        return json_object_new_string(v);
    }
    default:
        return NULL;
    }
}

static json_object *load_crd(const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/crds/%s", getenv("FG_SOURCE_DIR"), file);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    yaml_parser_t parser;
    yaml_document_t doc;
    assert_true(yaml_parser_initialize(&parser));
    yaml_parser_set_input_file(&parser, f);
    assert_true(yaml_parser_load(&parser, &doc));
    json_object *o = to_json(&doc, yaml_document_get_root_node(&doc));
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    fclose(f);
    assert_non_null(o);
    return o;
}

static void check_fields(const struct fg__policy_field *fields, json_object *props, json_object *defaults,
                         const char *path)
{
    for (const struct fg__policy_field *f = fields; f->name; f++) {
        json_object *p = fg_json_get(props, f->name, NULL);
        if (!p)
            fail_msg("%s.%s: not in the schema", path, f->name);
        const char *type = fg_json_get_str(p, "type", NULL);
        json_object *want_default = fg_json_get(defaults, f->name, NULL);
        int64_t v = 0;
        switch (f->kind) {
        case FG__FIELD_INT:
            assert_string_equal(type, "integer");
            assert_true(fg_json_get_int64(p, &v, "minimum", NULL));
            assert_int_equal(v, f->lo);
            assert_true(fg_json_get_int64(p, &v, "maximum", NULL));
            assert_int_equal(v, f->hi);
            assert_true(fg_json_get_int64(p, &v, "default", NULL));
            assert_int_equal(v, json_object_get_int64(want_default));
            break;
        case FG__FIELD_ENUM: {
            assert_string_equal(type, "string");
            json_object *e = fg_json_get(p, "enum", NULL);
            size_t n = 0;
            while (f->names[n])
                n++;
            assert_int_equal(json_object_array_length(e), n);
            for (size_t i = 0; i < n; i++)
                assert_string_equal(json_object_get_string(json_object_array_get_idx(e, i)), f->names[i]);
            assert_string_equal(fg_json_get_str(p, "default", NULL), json_object_get_string(want_default));
            break;
        }
        case FG__FIELD_DURATION:
            assert_string_equal(type, "string");
            assert_string_equal(fg_json_get_str(p, "pattern", NULL), FG_DURATION_PATTERN);
            assert_string_equal(fg_json_get_str(p, "default", NULL), json_object_get_string(want_default));
            break;
        case FG__FIELD_OBJECT: {
            char sub[128];
            snprintf(sub, sizeof sub, "%s.%s", path, f->name);
            assert_string_equal(type, "object");
            check_fields(f->fields, fg_json_get(p, "properties", NULL), want_default, sub);
            break;
        }
        }
    }
    /* And nothing in the schema the decoder would refuse as unknown. */
    json_object_object_foreach(props, key, val) {
        (void)val;
        const struct fg__policy_field *f = fields;
        while (f->name && strcmp(f->name, key))
            f++;
        if (!f->name)
            fail_msg("%s.%s: in the schema but unknown to the decoder", path, key);
    }
}

static void test_gpupolicy_schema_matches_decoder(void **state)
{
    (void)state;
    json_object *crd = load_crd("gpupolicies.yaml");
    json_object *version = json_object_array_get_idx(fg_json_get(crd, "spec", "versions", NULL), 0);
    json_object *spec_props = fg_json_get(version, "schema", "openAPIV3Schema", "properties", "spec", "properties", NULL);
    assert_non_null(spec_props);
    struct fg_gpupolicy_spec d;
    fg_gpupolicy_spec_defaults(&d);
    json_object *defaults = fg_gpupolicy_encode(&d);
    check_fields(fg__policy_spec_fields, spec_props, defaults, "spec");
    json_object_put(defaults);
    json_object_put(crd);
}

struct names {
    const char *group, *version, *plural, *kind;
};

static void check_crd_frame(const char *file, const struct names *res, const char *scope, const char *short_name,
                            const char *const *columns, bool status_subresource)
{
    json_object *crd = load_crd(file);
    char name[128];
    snprintf(name, sizeof name, "%s.%s", res->plural, res->group);
    assert_string_equal(fg_json_get_str(crd, "metadata", "name", NULL), name);
    assert_string_equal(fg_json_get_str(crd, "spec", "group", NULL), res->group);
    assert_string_equal(fg_json_get_str(crd, "spec", "scope", NULL), scope);
    assert_string_equal(fg_json_get_str(crd, "spec", "names", "kind", NULL), res->kind);
    assert_string_equal(fg_json_get_str(crd, "spec", "names", "plural", NULL), res->plural);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(fg_json_get(crd, "spec", "names", "shortNames",
                                                                                    NULL), 0)),
                        short_name);
    json_object *version = json_object_array_get_idx(fg_json_get(crd, "spec", "versions", NULL), 0);
    assert_string_equal(fg_json_get_str(version, "name", NULL), res->version);
    if (status_subresource)
        assert_non_null(fg_json_get(version, "subresources", "status", NULL));
    else
        assert_null(fg_json_get(version, "subresources", NULL));
    json_object *cols = fg_json_get(version, "additionalPrinterColumns", NULL);
    size_t shown = 0;
    for (size_t i = 0; i < json_object_array_length(cols); i++) {
        json_object *c = json_object_array_get_idx(cols, i);
        int64_t prio = 0;
        if (fg_json_get_int64(c, &prio, "priority", NULL) && prio > 0)
            continue;   /* -o wide only */
        assert_non_null(columns[shown]);
        assert_string_equal(fg_json_get_str(c, "name", NULL), columns[shown]);
        shown++;
    }
    assert_null(columns[shown]);
    json_object_put(crd);
}

static void test_crd_frames(void **state)
{
    (void)state;
    /* The columns `kubectl get` prints, in order (upper-cased by kubectl): docs/policies.md lists GPUPolicy's. */
    const char *const policy_cols[] = { "Class", "Sharing", "Window", "Compute-P", "Headroom", "Workloads", "Age", NULL };
    const struct names policy = { FG_GROUP, FG_CRD_VERSION, FG_GPUPOLICY_PLURAL, FG_GPUPOLICY_KIND };
    check_crd_frame("gpupolicies.yaml", &policy, "Cluster", "gpol", policy_cols, true);
    const char *const workload_cols[] = { "Target", "Policy", "Pods", "Compute", "Memory", "Recommended",
                                          "GPUs-Before", "GPUs-After", "GPUs-Saved", "Age", NULL };
    const struct names workload = { FG_GROUP, FG_CRD_VERSION, FG_GPUWORKLOAD_PLURAL, FG_GPUWORKLOAD_KIND };
    check_crd_frame("gpuworkloads.yaml", &workload, "Namespaced", "gpuw", workload_cols, true);
    /* written whole by the operator: no status subresource */
    const char *const checkpoint_cols[] = { "Target", "Samples", "Last-Update", "Age", NULL };
    const struct names checkpoint = { FG_GROUP, FG_CRD_VERSION, FG_GPUCHECKPOINT_PLURAL, FG_GPUCHECKPOINT_KIND };
    check_crd_frame("gpucheckpoints.yaml", &checkpoint, "Namespaced", "gpuckpt", checkpoint_cols, false);
}

/* Counts the properties under schema (an OpenAPI schema) and fails on the first without a description,
 * naming its path: `kubectl explain` shows nothing for such a field. */
static size_t check_described(json_object *schema, const char *path)
{
    size_t n = 0;
    json_object *props = fg_json_get(schema, "properties", NULL);
    if (props) {
        json_object_object_foreach(props, key, prop) {
            char sub[512];
            snprintf(sub, sizeof sub, "%s.%s", path, key);
            const char *d = fg_json_get_str(prop, "description", NULL);
            if (!d || strlen(d) < 10)
                fail_msg("%s has no description", sub);
            n += 1 + check_described(prop, sub);
        }
    }
    json_object *items = fg_json_get(schema, "items", NULL);
    if (items) {
        char sub[512];
        snprintf(sub, sizeof sub, "%s[]", path);
        n += check_described(items, sub);
    }
    return n;
}

/* Every field of every CRD explains itself (kubectl explain gpupolicy.spec, gpuworkload.status). */
static void test_every_field_described(void **state)
{
    (void)state;
    static const char *const files[] = { "gpupolicies.yaml", "gpuworkloads.yaml", "gpucheckpoints.yaml" };
    for (size_t i = 0; i < 3; i++) {
        json_object *crd = load_crd(files[i]);
        json_object *version = json_object_array_get_idx(fg_json_get(crd, "spec", "versions", NULL), 0);
        size_t n = check_described(fg_json_get(version, "schema", "openAPIV3Schema", NULL), files[i]);
        assert_true(n > 10);
        json_object_put(crd);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpupolicy_schema_matches_decoder),
        cmocka_unit_test(test_crd_frames),
        cmocka_unit_test(test_every_field_described),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
