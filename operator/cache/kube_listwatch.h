/*
 * kube_listwatch — the production lister-watcher: a collection on the API server, reached through
 * operator/kube's loop.
 *
 * Lists are fg_kube_loop_list (paged, items streamed); watches are fg_kube_loop_watch on
 * ".../pods?watch=1&resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=T" with the
 * informer's selectors; timers are libevent timers on the loop's event_base. Everything, callbacks
 * included, happens on the loop thread. Errors arrive already mapped by operator/kube (status.h):
 * this adapter only carries the code, the Retry-After and the message over.
 */
#ifndef FG_CACHE_KUBE_LISTWATCH_H
#define FG_CACHE_KUBE_LISTWATCH_H

#include <stddef.h>

#include "operator/cache/listwatch.h"
#include "operator/kube/loop.h"
#include "operator/kube/resource.h"

struct fg_kube_listwatch_opts {
    const char *label_selector;   /* NULL: all */
    const char *field_selector;   /* NULL: all */
    unsigned page_limit;          /* list page size; 0 = server default */
    size_t max_line;              /* longest watch event accepted, bytes */
    bool cut_managed_fields;      /* drop metadata.managedFields from watch events before parsing
                                     (for informers whose transform drops them anyway) */
};

#define FG_KUBE_LISTWATCH_OPTS_DEFAULT { .page_limit = 500, .max_line = 16u << 20 }

/* A lister-watcher for resource `res` in namespace `ns` (NULL: all namespaces / cluster-scoped).
 * Borrows loop and res; copies ns and the selectors. opts NULL = defaults. Free with
 * fg_listwatch_free, on the loop thread. */
struct fg_listwatch *fg_kube_listwatch_new(struct fg_kube_loop *loop, const struct fg_kube_resource *res,
                                           const char *ns, const struct fg_kube_listwatch_opts *opts);

#endif
