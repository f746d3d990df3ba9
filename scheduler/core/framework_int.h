/* framework_int — Permit's pod-group counters, shared by the framework's files (module-internal). */
#ifndef FG_SCHEDULER_CORE_FRAMEWORK_INT_H
#define FG_SCHEDULER_CORE_FRAMEWORK_INT_H

#include "scheduler/core/framework.h"

/* Counts pod as a reserved member of its group (created with the pod's group_min on first sight):
 * SUCCESS when the pod has no group or its group now has group_min members reserved, else WAIT. */
enum fg_sched_code fg__sched_group_add(struct fg_sched_framework *fw, const struct fg_sched_pod *pod);
/* Uncounts one reserved member of pod's group (nothing for a pod without a group). */
void fg__sched_group_remove(struct fg_sched_framework *fw, const struct fg_sched_pod *pod);
void fg__sched_groups_free(struct fg_sched_framework *fw);

#endif
