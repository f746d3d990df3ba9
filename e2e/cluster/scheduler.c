/* scheduler — the default scheduler of the simulated cluster (being written; see sim.h). */
#include "e2e/cluster/sim.h"

enum fg_err fg_sim_scheduler_setup(struct fg_manager *m, const struct fg_sim_config *cfg, char *errmsg)
{
    (void)m;
    (void)cfg;
    return fg_errmsg(errmsg, FG_E_UNSUPPORTED, "the default scheduler is not built yet");
}
