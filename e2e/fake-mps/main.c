/* main — fracgpu-sim-mps-control's command line; see fake_mps.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_mps.h"

const char *fake_mps_pipe_dir(void)
{
    const char *d = getenv("CUDA_MPS_PIPE_DIRECTORY");
    return d && d[0] ? d : "/tmp/nvidia-mps";
}

const char *fake_mps_log_dir(void)
{
    const char *d = getenv("CUDA_MPS_LOG_DIRECTORY");
    return d && d[0] ? d : "/var/log/nvidia-mps";
}

int main(int argc, char **argv)
{
    if (argc == 1)
        return fake_mps_client();
    if (argc == 2 && (!strcmp(argv[1], "-d") || !strcmp(argv[1], "-f")))
        return fake_mps_daemon(argv[1][1] == 'f');
    fprintf(stderr, "usage: %s [-d | -f]   (stand-in for nvidia-cuda-mps-control)\n", argv[0]);
    return 2;
}
