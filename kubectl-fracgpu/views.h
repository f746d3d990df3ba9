/*
 * views — what each `kubectl fracgpu` command prints, from lists already fetched (main.c fetches):
 *
 *   gpus        every GPU of every GPU node (inventory.h): node, index, model, the capacity pod
 *               holding it, sharing mode, tenants, allocated compute and memory against the GPU's,
 *               and (-o wide) the UUID, measured use and the tenants' names;
 *   workloads   GPUWorkloads: target, policy, pods, allocation against measured use (p95 compute,
 *               peak memory), the recommendation, GPUs before and after; a line of GPUs saved;
 *   explain     one pod: whether fracgpu manages it and why not, its allocation, where it is (node,
 *               GPU, capacity pod and who shares that GPU) or why it waits (its PodScheduled
 *               condition, a nomination).
 *
 * Each prints a table (`wide`: more columns), or one object with -o json|yaml. Pure but for the
 * FILE written to.
 */
#ifndef FG_KUBECTL_FRACGPU_VIEWS_H
#define FG_KUBECTL_FRACGPU_VIEWS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

struct fgk_view_opts {
    const char *output;         /* NULL (a table), "wide", "json" or "yaml" */
    bool all_namespaces;        /* a NAMESPACE column */
    const char *cap_ns;         /* fracgpu's namespace */
};

/* nodes, pods (every namespace), workloads (GPUWorkloads; may be NULL): json arrays of items. */
void fgk_view_gpus(json_object *nodes, json_object *pods, json_object *workloads, const struct fgk_view_opts *o,
                   FILE *out);
void fgk_view_workloads(json_object *workloads, const struct fgk_view_opts *o, FILE *out);
/* pod; pods of every namespace and GPUWorkloads of its namespace give the rest. */
void fgk_view_explain(json_object *pod, json_object *nodes, json_object *pods, json_object *workloads,
                      const struct fgk_view_opts *o, FILE *out);

#endif
