/* states — interned node states (module-internal; see states.c). */
#ifndef FG_SCHEDULER_CORE_STATES_INT_H
#define FG_SCHEDULER_CORE_STATES_INT_H

#include "scheduler/core/sched.h"

/* Sets n->state to the id of n's current state (n is a live node of c). May renumber every node of
 * c; ids are stable only until the next change of the cluster. */
void fg__sched_states_update(struct fg_sched_cluster *c, struct fg_sched_node *n);
void fg__sched_states_free(struct fg__sched_states *s);

#endif
