/*
 * workload — which workload a pod belongs to, whether it is automated, what its GPUWorkload is called
 * and what class it is. No I/O: objects come through a lookup the caller backs with its caches.
 *
 * Workloads are Deployments, StatefulSets, Jobs, CronJobs and the custom kinds named in the operator's
 * configuration (Kubeflow's PyTorchJob, a Notebook, ...). A pod's workload is found by walking its
 * controller ownerReferences upward — through ReplicaSets, and through any kind fracgpu knows — to the
 * topmost one fracgpu knows: pod → ReplicaSet → Deployment, pod → Job → CronJob, pod → StatefulSet →
 * Notebook. A walk stops at an owner it cannot find or does not know.
 *
 * A workload is automated when annotated fracgpu.io/automate: "true", or when its namespace is
 * labelled so and the workload does not say "false".
 *
 * Its GPUWorkload is named "<kind>-<name>" in lower case ("deployment-llm"). When that is longer than
 * 253 characters, or it is a custom kind whose name another known kind shares (so two workloads
 * could claim one name), the name is cut to leave room and ends in "-" and 8 hex digits of
 * the SHA-256 of "group/kind/name".
 *
 * Class detection, unless the kind's configuration fixes it: Deployments and StatefulSets serve
 * (inference), CronJobs run batches, and a Job trains when it shows a training hint — "train",
 * "finetune" or "fine-tune" in its name, a label value, or a container's image, command or args — and
 * is batch otherwise; a workload whose containers run a notebook image ("jupyter", "notebook") is build.
 */
#ifndef FG_RECONCILERS_WORKLOAD_H
#define FG_RECONCILERS_WORKLOAD_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "crds/gpupolicy.h"
#include "reconcilers/eligibility.h"
#include "operator/kube/resource.h"

#define FG_WORKLOAD_NAME_MAX 253

struct fg_workload_kind {
    struct fg_kube_resource resource;   /* where its objects live (namespaced) */
    bool fixed_class;                   /* the configuration says what class it is */
    enum fg_workload_class workload_class;
};

/* The kinds fracgpu follows: the built-in workloads first, then the configured custom kinds. */
struct fg_workload_kinds {
    const struct fg_workload_kind *v;
    size_t n;
};

/* A custom kind from the operator's command line: "GROUP/VERSION/KIND/PLURAL", optionally "=CLASS"
 * (inference, training, batch, build) to fix its class ("kubeflow.org/v1/PyTorchJob/pytorchjobs=training").
 * Its strings are allocated: fg_workload_kind_cleanup frees them. FG_E_INVAL with errmsg saying what is
 * wrong; nothing to clean up then. */
enum fg_err fg_workload_kind_parse(const char *spec, struct fg_workload_kind *out, char *errmsg) FG_MUST_USE;
void fg_workload_kind_cleanup(struct fg_workload_kind *k);

/* The four built-in workload kinds, for a table that has no custom ones. */
extern const struct fg_workload_kinds fg_workload_builtin_kinds;

/* Finds an object of the pod's namespace: `group` "" for core, NULL when absent. Borrowed for the
 * duration of the call that received it. */
typedef json_object *fg_object_lookup(void *ctx, const char *group, const char *kind, const char *name);

/* The workload `pod` belongs to (borrowed from the lookup) and its kind, or NULL when it belongs to none. */
json_object *fg_workload_of_pod(json_object *pod, const struct fg_workload_kinds *kinds, fg_object_lookup *lookup,
                                void *ctx, const struct fg_workload_kind **kind);

/* The group of an apiVersion into out: "apps/v1" → "apps", "v1" (core) → "". */
void fg_workload_api_group(const char *api_version, char *out, size_t size);

/* The kind of `obj` (by apiVersion's group and kind) in the table, or NULL. */
const struct fg_workload_kind *fg_workload_kind_of(const struct fg_workload_kinds *kinds, json_object *obj);

/* Whether workload (borrowed) is automated, its namespace object being ns (NULL: unknown). */
bool fg_workload_automated(json_object *workload, json_object *ns);

/* Whether a pod or pod template carries the template label fracgpu.io/automate: "true". */
bool fg_workload_label_on(json_object *pod_or_template);

/* The GPUWorkload name for a workload of `kind` called `name`. */
void fg_workload_name(const struct fg_workload_kinds *kinds, const struct fg_workload_kind *kind, const char *name,
                      char out[FG_WORKLOAD_NAME_MAX + 1]);

/* The detected class of workload (see above). */
enum fg_workload_class fg_workload_detect_class(const struct fg_workload_kind *kind, json_object *workload);

/* A pod template of a workload: the {metadata, spec} object (borrowed) and where it sits, as a JSON
 * Pointer ("/spec/template", "/spec/jobTemplate/spec/template"). */
#define FG_TEMPLATE_PATH_MAX 512
struct fg_pod_template {
    json_object *obj;
    char path[FG_TEMPLATE_PATH_MAX];
};

/* The pod templates of a workload into out[0..max): every member named "template" below spec whose
 * spec has containers — one for the built-in kinds (a CronJob's sits in spec.jobTemplate.spec), one
 * per replica type for a PyTorchJob. Returns how many there are (which may exceed max). */
size_t fg_workload_templates(json_object *workload, struct fg_pod_template *out, size_t max);

/* The first pod template of workload that asks for nvidia.com/gpu, judged by eligibility.h into *e
 * (without a storage view: claims are judged at admission); NULL, with e->ask NONE, when none asks. */
json_object *fg_workload_gpu_template(json_object *workload, struct fg_eligibility *e);

#endif
