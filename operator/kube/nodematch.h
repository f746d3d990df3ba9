/*
 * nodematch — which nodes a pod may run on, as kube-scheduler's NodeAffinity and TaintToleration
 * filters decide it, on the pod's and node's JSON.
 *
 * A pod's spec.nodeSelector (every label equal) and its required node affinity (nodeSelectorTerms
 * ORed; within a term every matchExpression and matchField must hold; an empty term matches
 * nothing) must both hold. Expressions take In, NotIn, Exists, DoesNotExist, Gt and Lt (integers on
 * both sides, else no match); matchFields know metadata.name. Preferred terms add their weights.
 * A toleration tolerates a taint when the effects agree (an empty effect tolerates every effect), the
 * keys agree (an empty key with Exists tolerates every key) and, for Equal (the default operator),
 * the values agree. A node's NoSchedule and NoExecute taints keep off every pod that does not
 * tolerate them; PreferNoSchedule only lowers a score.
 *
 * Used by the simulated cluster's default scheduler, its autoscaler's fit checks and its kubelets'
 * admission, so they agree. fracgpu's own scheduler core (scheduler/plugins) applies the same rules
 * to structs it compiles once per pod and node, for its per-decision latency.
 */
#ifndef FG_KUBE_NODEMATCH_H
#define FG_KUBE_NODEMATCH_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

/* Does node satisfy pod's nodeSelector and required node affinity? */
bool fg_node_matches_pod(json_object *pod, json_object *node);
/* Does node satisfy one NodeSelectorTerm? */
bool fg_node_selector_term_matches(json_object *term, json_object *node);
/* The sum of the weights of pod's preferred node affinity terms that node satisfies. */
int64_t fg_node_preferred_affinity(json_object *pod, json_object *node);

/* Does toleration tolerate taint? */
bool fg_toleration_tolerates(json_object *toleration, json_object *taint);
/* The first of `taints` (an array, NULL for none) with effect NoSchedule or NoExecute — only
 * NoExecute when noexecute_only — that no toleration of `tolerations` tolerates; borrowed from
 * taints, NULL when all are tolerated. */
json_object *fg_untolerated_taint(json_object *taints, json_object *tolerations, bool noexecute_only);
/* How many PreferNoSchedule taints of `taints` the tolerations do not tolerate. */
int64_t fg_untolerated_prefer_no_schedule(json_object *taints, json_object *tolerations);

#endif
