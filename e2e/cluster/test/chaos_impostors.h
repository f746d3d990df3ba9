/*
 * chaos_impostors — pods that claim a GPU fracgpu never gave them, planted while the fault run goes on.
 *
 * Anyone who may create pods may create one with spec.nodeName already set, asking for
 * fracgpu.io/gpu-share and carrying annotations copied from a tenant that fracgpu's scheduler placed:
 * its GPU, its allocation, its grant (docs/device-plugin.md). The node agent's device plugin must
 * refuse it (the kubelet then fails it with UnexpectedAdmissionError) or, when the kubelet handed it
 * the reply meant for a granted pod admitted at the same moment, remove it (a Warning Event
 * GrantViolation). Three forgeries:
 *   copied  the tenant's annotations as they are: the grant is signed for the tenant's UID;
 *   edited  the same, with the allocation raised (a whole GPU's compute and memory): the grant no
 *           longer covers the amounts;
 *   forged  a grant of the right form made up from random bytes.
 * The impostor leaves out the annotation that names the tenant's capacity pod: the independent
 * checker counts every pod naming a capacity pod against that GPU from its binding on, and an
 * impostor is bound from its creation, so it would count on paper for the moment before it is
 * refused. What must be shown of an impostor is that it never gets to keep a GPU, which its own
 * outcome says.
 */
#ifndef FG_E2E_CHAOS_IMPOSTORS_H
#define FG_E2E_CHAOS_IMPOSTORS_H

#include <stdbool.h>
#include <stdint.h>

#include "e2e/cluster/test/chaos_agents.h"
#include "e2e/tests/simcluster.h"

/* How long a removed impostor's GrantViolation Event may come after the delete. */
#define CHAOS_EVENT_WAIT_S 15

enum chaos_forgery { CHAOS_COPIED, CHAOS_EDITED, CHAOS_FORGED, CHAOS_FORGERIES };

enum chaos_outcome {
    CHAOS_UNRESOLVED,       /* still pending, or running */
    CHAOS_REFUSED_GRANT,    /* Failed: the device plugin refused its grant (the message names it) */
    CHAOS_REFUSED_OTHER,    /* Failed at admission for another reason (no plugin to ask, no slot) */
    CHAOS_REMOVED,          /* deleted by the node agent, with a GrantViolation Event */
    CHAOS_VANISHED,         /* deleted, but no GrantViolation Event says by whom */
};

struct chaos_impostor {
    char name[64], uid[64], node[CHAOS_NODE_MAX], victim[254];
    enum chaos_forgery kind;
    enum chaos_outcome outcome;
    uint64_t created_ns, gone_ns, resolved_ns;
    char detail[256];       /* the Failed pod's reason and message */
};

const char *chaos_forgery_name(enum chaos_forgery k);
const char *chaos_outcome_name(enum chaos_outcome o);

/* Plants impostor number i of kind in impostor_ns, copying a Running tenant of ns drawn with *rng
 * among those whose node spare does not spare. False (nothing planted) when there is no such tenant
 * or the API refused the create; why says which. */
bool chaos_impostor_plant(struct fg_simcluster *c, const char *ns, const char *impostor_ns, unsigned i,
                          enum chaos_forgery kind, unsigned *rng, chaos_spare_fn *spare, void *ud,
                          struct chaos_impostor *out, char *why, size_t why_size);

/* Looks at imp again and sets its outcome once it is resolved; true when it is. A pod that is gone is
 * removed once its GrantViolation Event is there, vanished when none came CHAOS_EVENT_WAIT_S after. */
bool chaos_impostor_resolve(struct fg_simcluster *c, const char *impostor_ns, struct chaos_impostor *imp);

#endif
