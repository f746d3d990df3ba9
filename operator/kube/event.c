/* event — Kubernetes Events; see event.h. */
#include "operator/kube/event.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/timefmt.h"
#include "operator/kube/resource.h"

static void copy_str(json_object *to, const char *key, const char *value)
{
    if (value && *value)
        json_object_object_add(to, key, json_object_new_string(value));
}

json_object *fg_kube_event_build(json_object *involved, const struct fg_kube_event *ev, int64_t wall_ms)
{
    const char *name = fg_json_get_str(involved, "metadata", "name", NULL);
    const char *ns = fg_json_get_str(involved, "metadata", "namespace", NULL);
    json_object *e = json_object_new_object();
    json_object_object_add(e, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(e, "kind", json_object_new_string("Event"));
    json_object *meta = json_object_new_object();
    char event_name[320];
    snprintf(event_name, sizeof event_name, "%.250s.%llx", name ? name : "unknown",
             (unsigned long long)wall_ms * 1000000ull + (fg_clock_real_ns() % 1000000ull));
    json_object_object_add(meta, "name", json_object_new_string(event_name));
    json_object_object_add(meta, "namespace", json_object_new_string(ns && *ns ? ns : "default"));
    json_object_object_add(e, "metadata", meta);

    json_object *obj = json_object_new_object();
    copy_str(obj, "apiVersion", fg_json_get_str(involved, "apiVersion", NULL));
    copy_str(obj, "kind", fg_json_get_str(involved, "kind", NULL));
    copy_str(obj, "namespace", ns);
    copy_str(obj, "name", name);
    copy_str(obj, "uid", fg_json_get_str(involved, "metadata", "uid", NULL));
    copy_str(obj, "resourceVersion", fg_json_get_str(involved, "metadata", "resourceVersion", NULL));
    json_object_object_add(e, "involvedObject", obj);

    copy_str(e, "type", ev->type ? ev->type : "Normal");
    copy_str(e, "reason", ev->reason);
    copy_str(e, "message", ev->message);
    json_object *source = json_object_new_object();
    copy_str(source, "component", ev->component);
    copy_str(source, "host", ev->host);
    json_object_object_add(e, "source", source);
    char now[FG_TIME_MAX];
    fg_time_format(wall_ms, now);
    copy_str(e, "firstTimestamp", now);
    copy_str(e, "lastTimestamp", now);
    json_object_object_add(e, "count", json_object_new_int(1));
    copy_str(e, "reportingComponent", ev->component);
    copy_str(e, "reportingInstance", ev->host);
    return e;
}

enum fg_err fg_kube_event_emit(struct fg_kube_client *c, json_object *involved, const struct fg_kube_event *ev)
{
    json_object *e = fg_kube_event_build(involved, ev, fg_clock_wall_ms());
    char *path = fg_kube_path(&fg_kube_events, fg_json_get_str(e, "metadata", "namespace", NULL), NULL, NULL, NULL);
    enum fg_err err = fg_kube_create(c, path, e, NULL, NULL);
    free(path);
    json_object_put(e);
    return err;
}
