/*
 * selector — label and field selectors, parsed once and matched many times.
 *
 * Label selectors follow the Kubernetes grammar: comma-separated requirements `k`, `!k`, `k=v`,
 * `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`; every requirement must hold. Field selectors are
 * `field=v`, `field==v`, `field!=v` over the fields clients use (metadata.name, metadata.namespace,
 * spec.nodeName, spec.schedulerName, status.phase); an absent field reads as "". Parsing reports the
 * offending text in errmsg, which the HTTP layer sends back in a 400. An empty or NULL string is the
 * selector that matches everything. The selector owns its strings.
 */
#ifndef FG_E2E_APISERVER_SELECTOR_H
#define FG_E2E_APISERVER_SELECTOR_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

enum fg__sel_op { FG__SEL_EQ, FG__SEL_NEQ, FG__SEL_IN, FG__SEL_NOTIN, FG__SEL_EXISTS, FG__SEL_NOT_EXISTS };

struct fg__sel_req {
    char *key;
    enum fg__sel_op op;
    char **values;
    size_t nvalues;
};

struct fg__selector {
    struct fg__sel_req *reqs;
    size_t n;
};

enum fg_err fg__selector_parse_labels(const char *s, struct fg__selector *out, char *errmsg) FG_MUST_USE;
enum fg_err fg__selector_parse_fields(const char *s, struct fg__selector *out, char *errmsg) FG_MUST_USE;
/* From a metav1.LabelSelector object ({matchLabels, matchExpressions[{key, operator In|NotIn|Exists|
 * DoesNotExist, values}]}), as PodDisruptionBudgets carry it. {} matches everything. */
enum fg_err fg__selector_from_json(json_object *label_selector, struct fg__selector *out, char *errmsg) FG_MUST_USE;
void fg__selector_cleanup(struct fg__selector *sel);
/* Does obj's metadata.labels satisfy sel? */
bool fg__selector_match_labels(const struct fg__selector *sel, json_object *obj);
/* Does obj satisfy the field selector? */
bool fg__selector_match_fields(const struct fg__selector *sel, json_object *obj);

#endif
