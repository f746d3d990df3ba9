/*
 * keys — the grant keys as the node agent holds them: Secret fracgpu-grant-key, watched.
 *
 * An informer watches the one Secret (fieldSelector metadata.name) in fracgpu's namespace; every
 * add, update and delete reloads the keys on the loop thread, where Allocate reads them. A rotation
 * (the operator moves `key` to `previous` and writes a new `key`) is seen within a watch event, so
 * grants signed just before it still verify. While the Secret is missing or malformed nothing
 * verifies: Allocate refuses every pod, and the log says why once per change (not once per pod).
 * RBAC: get, list and watch on that Secret only (resourceNames), nothing else of the namespace.
 */
#ifndef FG_DEVICEPLUGIN_KEYS_H
#define FG_DEVICEPLUGIN_KEYS_H

#include "base/err.h"
#include "operator/manager/manager.h"
#include "reconcilers/grant.h"

struct fg_dp_keys;

/* Declares the Secret's informer in namespace ns on m. The struct belongs to m. */
enum fg_err fg_dp_keys_setup(struct fg_manager *m, const char *ns, struct fg_dp_keys **out, char *errmsg) FG_MUST_USE;
/* The keys now (zeroed while the Secret is missing or bad). Loop thread. */
const struct fg_grant_keys *fg_dp_keys_get(const struct fg_dp_keys *k);
/* Whether the Secret's informer has listed once (a missing key means missing only then). Any thread. */
bool fg_dp_keys_synced(const struct fg_dp_keys *k);
/* Why there is no key ("" when keys are loaded). Loop thread. */
const char *fg_dp_keys_problem(const struct fg_dp_keys *k);

#endif
