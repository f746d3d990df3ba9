/*
 * setup — the collector as a part of `fracgpu operator`: its informers, its metrics and a leader-only
 * runnable on the operator's manager (operator/manager/manager.h).
 *
 * It shares the manager's informers and opens no watch of its own: the pods (all namespaces, the one
 * informer the workload reconciler and the scheduler read too, with the collector's agent index and
 * the fields it reads added), the ReplicaSets and each workload kind of the table (for the owner
 * walk). Scrapes run on the manager's loop thread (collector.h), only while this replica leads: the
 * standby replicas scrape nothing.
 */
#ifndef FG_COLLECTOR_SETUP_H
#define FG_COLLECTOR_SETUP_H

#include "base/err.h"
#include "collector/collector.h"
#include "operator/manager/manager.h"
#include "reconcilers/workload.h"

/* Registers the collector with m, following kinds (borrowed; it must outlive m). *out, when not NULL,
 * gets the collector (owned by m) for fg_collector_subscribe before m starts. FG_E_INVAL with errmsg
 * for a bad selector or options. */
enum fg_err fg_collector_setup(struct fg_manager *m, const struct fg_workload_kinds *kinds,
                               const struct fg_collector_opts *opts, struct fg_collector **out,
                               char *errmsg) FG_MUST_USE;

#endif
