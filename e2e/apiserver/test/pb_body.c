/* pb_body — protobuf request bodies for the tests, built with the generated protobuf-c code (see pb_body.h). */
#include "pb_body.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

/* "k8s\0" + runtime.Unknown{typeMeta{apiVersion, kind}, raw}. Caller frees. */
uint8_t *pb_envelope(const char *api_version, const char *kind, const uint8_t *raw, size_t raw_len, size_t *len)
{
    FgKube__TypeMeta tm = FG_KUBE__TYPE_META__INIT;
    tm.apiversion = (char *)api_version;
    tm.kind = (char *)kind;
    FgKube__Unknown u = FG_KUBE__UNKNOWN__INIT;
    u.typemeta = &tm;
    u.has_raw = 1;
    u.raw.data = (uint8_t *)raw;
    u.raw.len = raw_len;
    *len = 4 + fg_kube__unknown__get_packed_size(&u);
    uint8_t *out = fg_malloc(*len);
    memcpy(out, "k8s\0", 4);
    fg_kube__unknown__pack(&u, out + 4);
    return out;
}

/* The body kubectl would send for message m. Caller frees. */
uint8_t *pb_body(const char *api_version, const char *kind, const ProtobufCMessage *m, size_t *len)
{
    size_t raw_len = protobuf_c_message_get_packed_size(m);
    uint8_t *raw = fg_malloc(raw_len + 1);
    protobuf_c_message_pack(m, raw);
    uint8_t *out = pb_envelope(api_version, kind, raw, raw_len, len);
    free(raw);
    return out;
}

/* The body `kubectl create job j --image=busybox -- echo hi` sends, with a label. Caller frees. */
uint8_t *pb_job_body(size_t *len)
{
    FgKube__ObjectMeta__LabelsEntry app = FG_KUBE__OBJECT_META__LABELS_ENTRY__INIT, *labels[] = { &app };
    app.key = "app";
    app.value = "j";
    FgKube__ObjectMeta meta = FG_KUBE__OBJECT_META__INIT;
    meta.name = "j";
    meta.n_labels = 1;
    meta.labels = labels;
    char *command[] = { "echo", "hi" };
    FgKube__Container c = FG_KUBE__CONTAINER__INIT, *containers[] = { &c };
    c.name = "j";
    c.image = "busybox";
    c.n_command = 2;
    c.command = command;
    FgKube__PodSpec pod = FG_KUBE__POD_SPEC__INIT;
    pod.n_containers = 1;
    pod.containers = containers;
    pod.restartpolicy = "Never";
    FgKube__PodTemplateSpec tmpl = FG_KUBE__POD_TEMPLATE_SPEC__INIT;
    FgKube__ObjectMeta tmeta = FG_KUBE__OBJECT_META__INIT;
    tmpl.metadata = &tmeta;
    tmpl.spec = &pod;
    FgKube__JobSpec spec = FG_KUBE__JOB_SPEC__INIT;
    spec.template_ = &tmpl;
    FgKube__Job job = FG_KUBE__JOB__INIT;
    job.metadata = &meta;
    job.spec = &spec;
    return pb_body("batch/v1", "Job", &job.base, len);
}
