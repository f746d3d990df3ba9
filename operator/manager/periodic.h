/*
 * periodic — work a role does on a timer: a runnable whose thread calls run(ud) at once and then
 * every period until the manager stops it (cluster-autoscaler's scan, a garbage collector's sweep,
 * a kubelet's tick). The stop is prompt: it wakes the thread mid-wait and returns once the current
 * run has finished. A leader-only periodic runs only while this replica leads, fresh from its first
 * call each time leadership comes back.
 */
#ifndef FG_MANAGER_PERIODIC_H
#define FG_MANAGER_PERIODIC_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "operator/manager/manager.h"

struct fg_periodic {
    const char *name;               /* the runnable's and the thread's name */
    bool leader_only;
    uint64_t period_ns;             /* from the end of one run to the start of the next; > 0 */
    void (*run)(void *ud);          /* on the periodic's own thread */
    void *ud;
};

/* Registers p (copied) as a runnable of m. FG_E_INVAL for no name, no run or a period of 0;
 * FG_E_BUSY once the manager started. */
enum fg_err fg_manager_add_periodic(struct fg_manager *m, const struct fg_periodic *p, char *errmsg) FG_MUST_USE;

#endif
