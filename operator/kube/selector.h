/*
 * selector — label and field selectors, parsed once and matched many times: the test API server
 * filters lists and watches with them, and controllers match their objects' selectors (a
 * ReplicaSet's pods, a Service's endpoints, a budget's pods) with the same code.
 *
 * Label selectors follow the Kubernetes grammar: comma-separated requirements `k`, `!k`, `k=v`,
 * `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`; every requirement must hold. The structured form
 * (metav1.LabelSelector: matchLabels and matchExpressions) builds the same requirements. Field
 * selectors are `field=v`, `field==v`, `field!=v` over the fields the caller supports (the server
 * decides which); an absent field reads as "". Parsing reports the offending text in errmsg, which
 * the server sends back in a 400. An empty or NULL string is the selector that matches everything;
 * the structured form's {} matches everything too. The selector owns its strings.
 */
#ifndef FG_KUBE_SELECTOR_H
#define FG_KUBE_SELECTOR_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

enum fg_sel_op { FG_SEL_EQ, FG_SEL_NEQ, FG_SEL_IN, FG_SEL_NOTIN, FG_SEL_EXISTS, FG_SEL_NOT_EXISTS };

struct fg_sel_req {
    char *key;
    enum fg_sel_op op;
    char **values;
    size_t nvalues;
};

struct fg_selector {
    struct fg_sel_req *reqs;
    size_t n;
};

enum fg_err fg_selector_parse_labels(const char *s, struct fg_selector *out, char *errmsg) FG_MUST_USE;
/* fields: the NULL-terminated field paths ("spec.nodeName") a selector may name; others are refused. */
enum fg_err fg_selector_parse_fields(const char *s, const char *const *fields, struct fg_selector *out,
                                     char *errmsg) FG_MUST_USE;
/* From a metav1.LabelSelector object ({matchLabels, matchExpressions[{key, operator In|NotIn|Exists|
 * DoesNotExist, values}]}), as Deployments, Services and PodDisruptionBudgets carry it. {} matches everything. */
enum fg_err fg_selector_from_json(json_object *label_selector, struct fg_selector *out, char *errmsg) FG_MUST_USE;
void fg_selector_cleanup(struct fg_selector *sel);
/* Does obj's metadata.labels satisfy sel? */
bool fg_selector_match_labels(const struct fg_selector *sel, json_object *obj);
/* Does obj satisfy the field selector? */
bool fg_selector_match_fields(const struct fg_selector *sel, json_object *obj);

#endif
