/*
 * quantity — Kubernetes resource quantities ("500m", "2", "1.5", "64Mi", "1G", "2e3") as integers.
 *
 * A quantity is a signed decimal number with an optional suffix: a binary SI multiple (Ki Mi Gi Ti
 * Pi Ei), a decimal SI one (n u m k M G T P E), or a decimal exponent (e3, E-2). fracgpu keeps every
 * quantity as *milli-units* in an int64 — CPU in millicores, memory in thousandths of a byte,
 * nvidia.com/gpu in thousandths of a device — so that requests of every resource add, compare and
 * fit with one arithmetic. A value that is not a whole number of milli-units rounds away from zero,
 * as kube's Quantity.MilliValue does (a request is never under-counted): "500u" is 1m. The largest representable
 * amount is about 9.2e15 units (8 PiB of memory); anything bigger is refused rather than wrapped.
 *
 * The API writes quantities as strings; JSON numbers are accepted too, as kube-apiserver accepts
 * them in a request body, read as they were written (json-c keeps a parsed number's text).
 */
#ifndef FG_KUBE_QUANTITY_H
#define FG_KUBE_QUANTITY_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* Room for any formatted quantity and its NUL. */
#define FG_QUANTITY_MAX 32

/* Parses s into milli-units. FG_E_PARSE (errmsg: what is wrong, quoting s) for anything that is not
 * a quantity; FG_E_TOO_BIG when it does not fit; *milli is untouched on failure. */
enum fg_err fg_quantity_parse(const char *s, int64_t *milli, char *errmsg) FG_MUST_USE;
/* The same for a JSON value: a string, an integer or a double. */
enum fg_err fg_quantity_json(json_object *v, int64_t *milli, char *errmsg) FG_MUST_USE;

/* Writes milli-units in the form kubectl shows: "250m" when not whole, else "32", or the largest
 * binary suffix that divides a whole amount of at least 1024 ("64Mi", "80Gi"). */
void fg_quantity_format(int64_t milli, char out[FG_QUANTITY_MAX]);

/* Whole units, rounded up (Quantity.Value): 1500 milli → 2. */
int64_t fg_quantity_units(int64_t milli);

#endif
