/*
 * jsonpath — the JSONPath subset of printer columns (see jsonpath.c).
 */
#ifndef FG_E2E_APISERVER_JSONPATH_H
#define FG_E2E_APISERVER_JSONPATH_H

#include <json-c/json.h>

/* Every value path selects in root, as a new array of references (empty when nothing matches). */
json_object *fg__jsonpath_eval(json_object *root, const char *path);

#endif
