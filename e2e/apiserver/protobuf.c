/*
 * protobuf — decodes kubectl's protobuf request bodies into JSON objects (see protobuf.h).
 *
 * Steps: check the "k8s\0" prefix, unpack the runtime.Unknown envelope, check its typeMeta against the
 * resource the URL names, find the kind in `kinds`, unpack the raw bytes with that kind's descriptor and
 * write the message out as JSON. protobuf-c skips fields kube.proto does not declare and fails cleanly
 * on truncated or malformed input, so every failure is a 400 with the reason, never a crash.
 *
 * Writing JSON follows Go's encoding of the same objects closely enough for what is stored: a present
 * scalar is written (proto2 keeps presence, so `replicas: 0` survives), empty strings are left out (Go
 * writes every non-pointer string, JSON omits them), present messages are objects even when empty,
 * repeated fields are arrays, map entries (messages named *Entry with key and value) are objects, bytes
 * are base64 and a Quantity is its string. The decoded message is freed before returning; the JSON owns
 * copies of everything.
 */
#include "e2e/apiserver/protobuf.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/mem.h"
#include "kube.pb-c.h"

/* The kinds decoded, by group and kind (version v1 for all; group NULL: DeleteOptions, which every
 * group version carries). */
static const struct {
    const char *group;
    const char *kind;
    const ProtobufCMessageDescriptor *desc;
} kinds[] = {
    { NULL, "DeleteOptions", &fg_kube__delete_options__descriptor },
    { "", "Binding", &fg_kube__binding__descriptor },
    { "policy", "Eviction", &fg_kube__eviction__descriptor },
    { "", "Namespace", &fg_kube__namespace__descriptor },
    { "", "ConfigMap", &fg_kube__config_map__descriptor },
    { "", "Secret", &fg_kube__secret__descriptor },
    { "", "ServiceAccount", &fg_kube__service_account__descriptor },
    { "", "ResourceQuota", &fg_kube__resource_quota__descriptor },
    { "apps", "Deployment", &fg_kube__deployment__descriptor },
    { "batch", "Job", &fg_kube__job__descriptor },
    { "scheduling.k8s.io", "PriorityClass", &fg_kube__priority_class__descriptor },
    { "rbac.authorization.k8s.io", "Role", &fg_kube__role__descriptor },
    { "rbac.authorization.k8s.io", "RoleBinding", &fg_kube__role_binding__descriptor },
    { "rbac.authorization.k8s.io", "ClusterRole", &fg_kube__cluster_role__descriptor },
    { "rbac.authorization.k8s.io", "ClusterRoleBinding", &fg_kube__cluster_role_binding__descriptor },
};

static void write_message(const ProtobufCMessage *m, json_object *out);

static json_object *base64(const ProtobufCBinaryData *b)
{
    char *s = fg_base64_encode(b->data ? b->data : (const uint8_t *)"", b->len);
    json_object *o = json_object_new_string(s);
    free(s);
    return o;
}

/* Map entries are the messages protoc generates for `map<K, V>` fields: FooEntry { key = 1; value = 2; }. */
static bool is_map_entry(const ProtobufCMessageDescriptor *d)
{
    size_t n = strlen(d->name);
    return n > 5 && !strcmp(d->name + n - 5, "Entry") && d->n_fields == 2 && !strcmp(d->fields[0].name, "key") &&
           !strcmp(d->fields[1].name, "value");
}

static size_t element_size(const ProtobufCFieldDescriptor *f)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_INT32: return sizeof(int32_t);
    case PROTOBUF_C_TYPE_INT64: return sizeof(int64_t);
    default: return sizeof(void *); /* strings and messages */
    }
}

/* The JSON of one value of field f stored at p (NULL for a type kube.proto does not use). */
static json_object *value_json(const ProtobufCFieldDescriptor *f, const void *p)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_STRING: return json_object_new_string(*(char *const *)p);
    case PROTOBUF_C_TYPE_BYTES: return base64(p);
    case PROTOBUF_C_TYPE_BOOL: return json_object_new_boolean(*(const protobuf_c_boolean *)p);
    case PROTOBUF_C_TYPE_INT32: return json_object_new_int(*(const int32_t *)p);
    case PROTOBUF_C_TYPE_INT64: return json_object_new_int64(*(const int64_t *)p);
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *m = *(ProtobufCMessage *const *)p;
        if (m->descriptor == &fg_kube__quantity__descriptor) {
            const char *s = ((const FgKube__Quantity *)m)->string;
            return json_object_new_string(s ? s : "");
        }
        json_object *o = json_object_new_object();
        write_message(m, o);
        return o;
    }
    default: return NULL;
    }
}

/* A map field's entries as one object (a repeated key wins with its last value, as in Go). */
static json_object *map_json(const ProtobufCFieldDescriptor *f, ProtobufCMessage *const *entries, size_t n)
{
    const ProtobufCMessageDescriptor *d = f->descriptor;
    json_object *o = json_object_new_object();
    for (size_t i = 0; i < n; i++) {
        const char *base = (const char *)entries[i];
        const char *key = *(char *const *)(base + d->fields[0].offset);
        const void *value = base + d->fields[1].offset;
        json_object *v = NULL;
        if (d->fields[1].type == PROTOBUF_C_TYPE_MESSAGE && !*(void *const *)value)
            v = json_object_new_string(""); /* an entry without its Quantity */
        else if (d->fields[1].type == PROTOBUF_C_TYPE_STRING && !*(char *const *)value)
            v = json_object_new_string("");
        else
            v = value_json(&d->fields[1], value);
        json_object_object_add(o, key ? key : "", v);
    }
    return o;
}

static json_object *repeated_json(const ProtobufCFieldDescriptor *f, const char *base)
{
    size_t n = *(const size_t *)(base + f->quantifier_offset);
    const char *items = *(const char *const *)(base + f->offset);
    if (!n)
        return NULL;
    if (f->type == PROTOBUF_C_TYPE_MESSAGE && is_map_entry(f->descriptor))
        return map_json(f, (ProtobufCMessage *const *)items, n);
    json_object *a = json_object_new_array_ext((int)n);
    for (size_t i = 0; i < n; i++)
        json_object_array_add(a, value_json(f, items + i * element_size(f)));
    return a;
}

/* A singular field's JSON, or NULL when absent (or an empty string). */
static json_object *optional_json(const ProtobufCFieldDescriptor *f, const char *base)
{
    const void *p = base + f->offset;
    if (f->type == PROTOBUF_C_TYPE_STRING) {
        const char *s = *(char *const *)p;
        return s && *s ? json_object_new_string(s) : NULL;
    }
    if (f->type == PROTOBUF_C_TYPE_MESSAGE)
        return *(void *const *)p ? value_json(f, p) : NULL;
    return *(const protobuf_c_boolean *)(base + f->quantifier_offset) ? value_json(f, p) : NULL;
}

/* Adds m's present fields to out under their JSON names. */
static void write_message(const ProtobufCMessage *m, json_object *out)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        json_object *v = f->label == PROTOBUF_C_LABEL_REPEATED ? repeated_json(f, (const char *)m)
                                                               : optional_json(f, (const char *)m);
        if (v)
            json_object_object_add(out, f->name, v);
    }
}

/* The typeMeta must name the resource the URL names; the decoder comes from `kinds`. */
static enum fg_err check_envelope(const FgKube__Unknown *u, const char *group, const char *version, const char *kind,
                                  const ProtobufCMessageDescriptor **desc, char *errmsg)
{
    const char *body_kind = u->typemeta ? u->typemeta->kind : NULL;
    const char *body_version = u->typemeta ? u->typemeta->apiversion : NULL;
    if (!body_kind || !*body_kind)
        return fg_errmsg(errmsg, FG_E_KUBE_BAD_REQUEST, "the protobuf body names no kind in its typeMeta");
    char *want = *group ? fg_asprintf("%s/%s", group, version) : fg_strdup(version);
    bool same = !strcmp(body_kind, kind) && body_version && !strcmp(body_version, want);
    enum fg_err err = FG_OK;
    if (!same)
        err = fg_errmsg(errmsg, FG_E_KUBE_BAD_REQUEST, "the body is a %s %s, but the request is for %s %s",
                        body_version ? body_version : "(no apiVersion)", body_kind, want, kind);
    free(want);
    if (err)
        return err;
    if (u->contentencoding && *u->contentencoding)
        return fg_errmsg(errmsg, FG_E_KUBE_BAD_REQUEST, "the protobuf body's contentEncoding \"%s\" is not supported",
                         u->contentencoding);
    for (size_t i = 0; i < sizeof(kinds) / sizeof(*kinds); i++) {
        if ((!kinds[i].group || !strcmp(kinds[i].group, group)) && !strcmp(version, "v1") &&
            !strcmp(kinds[i].kind, kind)) {
            *desc = kinds[i].desc;
            return FG_OK;
        }
    }
    return fg_errmsg(errmsg, FG_E_KUBE_UNSUPPORTED_MEDIA, "the server does not decode protobuf bodies of kind %s; "
                     "send it as application/json", kind);
}

enum fg_err fg__protobuf_decode(const char *group, const char *version, const char *kind, const uint8_t *data,
                                size_t len, json_object **out, char *errmsg)
{
    *out = NULL;
    if (len < 4 || memcmp(data, "k8s\0", 4))
        return fg_errmsg(errmsg, FG_E_KUBE_BAD_REQUEST, "the protobuf body does not start with the \"k8s\\x00\" "
                         "prefix");
    FgKube__Unknown *u = fg_kube__unknown__unpack(NULL, len - 4, data + 4);
    if (!u)
        return fg_errmsg(errmsg, FG_E_KUBE_BAD_REQUEST, "the protobuf body is not a valid runtime.Unknown message "
                         "(truncated or malformed)");
    const ProtobufCMessageDescriptor *desc = NULL;
    enum fg_err err = check_envelope(u, group, version, kind, &desc, errmsg);
    if (err)
        goto out_free_unknown;
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, u->has_raw ? u->raw.len : 0, u->raw.data);
    if (!m) {
        err = fg_errmsg(errmsg, FG_E_KUBE_BAD_REQUEST, "the raw bytes of the protobuf body are not a valid %s "
                        "message (truncated or malformed)", kind);
        goto out_free_unknown;
    }
    *out = json_object_new_object();
    json_object_object_add(*out, "apiVersion", json_object_new_string(u->typemeta->apiversion));
    json_object_object_add(*out, "kind", json_object_new_string(kind));
    write_message(m, *out);
    protobuf_c_message_free_unpacked(m, NULL);
out_free_unknown:
    fg_kube__unknown__free_unpacked(u, NULL);
    return err;
}
