/*
 * grant_keys — the grant keys as a component holds them: Secret fracgpu-grant-key, watched.
 *
 * An informer watches the one Secret (fieldSelector metadata.name) in fracgpu's namespace; every
 * add, update and delete reloads the keys on the loop thread, where the device plugin's Allocate
 * verifies with them and the scheduler signs with them. A rotation (the operator moves `key` to
 * `previous` and writes a new `key`) is seen within a watch event, so grants signed just before it
 * still verify. While the Secret is missing or malformed nothing is signed or verifies, and the log
 * says why once per change (not once per pod). RBAC: get, list and watch on that Secret only
 * (resourceNames), nothing else of the namespace.
 */
#ifndef FG_RECONCILERS_GRANT_KEYS_H
#define FG_RECONCILERS_GRANT_KEYS_H

#include "base/err.h"
#include "operator/manager/manager.h"
#include "reconcilers/grant.h"

struct fg_grant_watch;

/* Declares the Secret's informer in namespace ns on m; component names the log lines. The struct
 * belongs to m. */
enum fg_err fg_grant_watch_setup(struct fg_manager *m, const char *ns, const char *component,
                                 struct fg_grant_watch **out, char *errmsg) FG_MUST_USE;
/* The keys now (zeroed while the Secret is missing or bad). Loop thread. */
const struct fg_grant_keys *fg_grant_watch_get(const struct fg_grant_watch *k);
/* Whether the Secret's informer has listed once (a missing key means missing only then). Any thread. */
bool fg_grant_watch_synced(const struct fg_grant_watch *k);
/* Why there is no key ("" when keys are loaded). Loop thread. */
const char *fg_grant_watch_problem(const struct fg_grant_watch *k);

#endif
