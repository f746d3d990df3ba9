/*
 * fracgpu-sim-cluster — a Kubernetes cluster without a cluster: the test API server, a simulated
 * control plane and simulated nodes, all API clients (see sim.h and README.md).
 *
 *   fracgpu-sim-cluster --kubeconfig-out FILE [--nodes N] [--config FILE] [--dir DIR] ...
 *   fracgpu-sim-cluster component NAME --kubeconfig FILE --config FILE --dir DIR   (one part; the
 *                                                                                  supervisor runs these)
 */
#include <string.h>

#include "e2e/cluster/sim.h"

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "component"))
        return fg_sim_component_main(argc - 1, argv + 1);
    return fg_sim_supervisor_main(argc, argv);
}
