/* autoscaler — the simulated cluster's node-group autoscaler (being written; see sim.h). */
#include "e2e/cluster/sim.h"

enum fg_err fg_sim_autoscaler_setup(struct fg_manager *m, const struct fg_sim_config *cfg, char *errmsg)
{
    (void)m;
    (void)cfg;
    return fg_errmsg(errmsg, FG_E_UNSUPPORTED, "the autoscaler is not built yet");
}
