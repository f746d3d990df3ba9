/*
 * supervisor_options — `fracgpu-sim-cluster`'s command line: the config file (or the default
 * cluster), --nodes resizing the first node group and the --gpu-* flags giving its nodes GPUs
 * (config.h's fg_sim_config_override), parts switched off, where the API server and
 * fracgpu binaries are (beside this one unless named), and the working directory (--dir, made when
 * missing, else a new /tmp/fracgpu-sim-XXXXXX) with the config.json every part reads.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/duration.h"
#include "base/fs.h"
#include "base/log.h"
#include "e2e/cluster/selfpath.h"
#include "e2e/cluster/supervisor.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: fracgpu-sim-cluster --kubeconfig-out FILE [options]\n\n"
            "Runs the test API server and a simulated cluster (controllers, default scheduler, kubelets,\n"
            "autoscaler) until SIGTERM or SIGINT.\n\n"
            "  --kubeconfig-out FILE   where to write the kubeconfig of the cluster (required)\n"
            "  --nodes N               initial nodes of the first node group\n"
            "  --gpus-per-node G       whole GPUs (nvidia.com/gpu) of each node of the first group, 0 to 16\n"
            "  --gpu-model NAME        their model, as NVML names it (default NVIDIA A100-SXM4-80GB)\n"
            "  --gpu-memory-gib M      their memory in GiB (default 80)\n"
            "  --gpu-state files|memory  GPU state per node on disk (fake NVML, proc tree) or in memory only\n"
            "  --config FILE           node groups and timings (YAML; see e2e/cluster/README.md)\n"
            "  --dir DIR               working directory (default: a new /tmp/fracgpu-sim-XXXXXX)\n"
            "  --disable PART          do not run controllers, scheduler, kubelets or autoscaler\n"
            "  --apiserver PATH        the test API server (default: fracgpu-test-apiserver beside this)\n"
            "  --fracgpu PATH          the binary pods of fracgpu's image run (default: fracgpu beside this)\n"
            "  --ready-timeout D       how long to wait for the initial nodes (default 60s)\n"
            "  --log-level LEVEL       debug, info, warn, error or off (default info)\n");
}

int fg_sim_supervisor_parse(struct fg_sim_supervisor *s, int argc, char **argv)
{
    static const struct option options[] = {
        { "kubeconfig-out", required_argument, NULL, 'k' }, { "nodes", required_argument, NULL, 'n' },
        { "config", required_argument, NULL, 'c' },         { "dir", required_argument, NULL, 'd' },
        { "disable", required_argument, NULL, 'x' },        { "apiserver", required_argument, NULL, 'a' },
        { "fracgpu", required_argument, NULL, 'f' },        { "ready-timeout", required_argument, NULL, 'r' },
        { "log-level", required_argument, NULL, 'v' },      { "help", no_argument, NULL, 'h' },
        { "gpus-per-node", required_argument, NULL, 'G' },  { "gpu-model", required_argument, NULL, 'M' },
        { "gpu-memory-gib", required_argument, NULL, 'm' }, { "gpu-state", required_argument, NULL, 's' },
        { NULL, 0, NULL, 0 },
    };
    const char *config = NULL, *dir = NULL, *kubeconfig = NULL, *fracgpu = NULL;
    bool disabled[FG_SIM_NCOMPONENTS] = { false };
    struct fg_sim_flags flags = { NULL };
    int64_t ms;
    char why[FG_ERRMSG_MAX];
    enum fg_log_level level;
    int c;
    s->ready_timeout_ns = 60 * FG_NS_PER_S;
    s->log_level = "info";
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'k': kubeconfig = optarg; break;
        case 'c': config = optarg; break;
        case 'd': dir = optarg; break;
        case 'a': snprintf(s->apiserver_bin, sizeof s->apiserver_bin, "%s", optarg); break;
        case 'f': fracgpu = optarg; break;
        case 'n': flags.nodes = optarg; break;
        case 'G': flags.gpus_per_node = optarg; break;
        case 'M': flags.gpu_model = optarg; break;
        case 'm': flags.gpu_memory_gib = optarg; break;
        case 's': flags.gpu_state = optarg; break;
        case 'x': {
            size_t part = 0;
            while (part < FG_SIM_NCOMPONENTS && strcmp(fg_sim_component_names[part], optarg))
                part++;
            if (part == FG_SIM_NCOMPONENTS) {
                fprintf(stderr, "fracgpu-sim-cluster: --disable wants controllers, scheduler, kubelets or autoscaler, "
                                "got \"%s\"\n", optarg);
                return 2;
            }
            disabled[part] = true;
            break;
        }
        case 'r':
            if (fg_duration_parse(optarg, &ms, why) != FG_OK) {
                fprintf(stderr, "fracgpu-sim-cluster: --ready-timeout: %s\n", why);
                return 2;
            }
            s->ready_timeout_ns = (uint64_t)ms * FG_NS_PER_MS;
            break;
        case 'v':
            if (!fg_log_parse_level(optarg, &level)) {
                fprintf(stderr, "fracgpu-sim-cluster: --log-level wants debug, info, warn, error or off\n");
                return 2;
            }
            fg_log_set_level(level);
            s->log_level = optarg;
            break;
        case 'h': usage(stdout); return -1;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc || !kubeconfig) {
        fprintf(stderr, "fracgpu-sim-cluster: %s\n", optind != argc ? "unexpected argument" : "--kubeconfig-out is required");
        usage(stderr);
        return 2;
    }
    if (config ? fg_sim_config_load(&s->cfg, config, why) != FG_OK : (fg_sim_config_default(&s->cfg), false)) {
        fprintf(stderr, "fracgpu-sim-cluster: %s\n", why);
        return 2;
    }
    if (fg_sim_config_override(&s->cfg, &flags, why) != FG_OK) {
        fprintf(stderr, "fracgpu-sim-cluster: %s\n", why);
        fg_sim_config_cleanup(&s->cfg);
        return 2;
    }
    for (size_t i = 0; i < FG_SIM_NCOMPONENTS; i++)
        if (disabled[i])
            *fg_sim_component_switch(&s->cfg, fg_sim_component_names[i]) = false;
    if (!s->apiserver_bin[0])
        fg_sim_self_path(s->apiserver_bin, sizeof s->apiserver_bin, "fracgpu-test-apiserver");
    if (fracgpu || !s->cfg.fracgpu_binary[0]) {
        char path[PATH_MAX];
        if (fracgpu)
            snprintf(path, sizeof path, "%s", fracgpu);
        else
            fg_sim_self_path(path, sizeof path, "fracgpu");
        if (!realpath(path, s->cfg.fracgpu_binary))
            snprintf(s->cfg.fracgpu_binary, sizeof s->cfg.fracgpu_binary, "%s", path);
    }
    if (dir) {
        char real[PATH_MAX];
        if (fg_mkdir_p(dir) || !realpath(dir, real)) {
            fprintf(stderr, "fracgpu-sim-cluster: cannot use --dir %s: %s\n", dir, strerror(errno));
            return 2;
        }
        if (strlen(real) >= sizeof s->dir) {
            fprintf(stderr, "fracgpu-sim-cluster: --dir %s is longer than %zu bytes\n", real, sizeof s->dir - 1);
            return 2;
        }
        memcpy(s->dir, real, strlen(real) + 1);
    } else {
        snprintf(s->dir, sizeof s->dir, "/tmp/fracgpu-sim-XXXXXX");
        if (!mkdtemp(s->dir)) {
            fprintf(stderr, "fracgpu-sim-cluster: cannot make a working directory: %s\n", strerror(errno));
            return 1;
        }
    }
    snprintf(s->kubeconfig, sizeof s->kubeconfig, "%s", kubeconfig);
    return 0;
}

enum fg_err fg_sim_supervisor_write_config(struct fg_sim_supervisor *s, char *errmsg)
{
    char logs[PATH_MAX + 8];
    snprintf(logs, sizeof logs, "%s/logs", s->dir);
    snprintf(s->config_path, sizeof s->config_path, "%s/config.json", s->dir);
    if (fg_mkdir_p(logs))
        return fg_errmsg(errmsg, FG_E_IO, "cannot make %s: %s", logs, strerror(errno));
    json_object *doc = fg_sim_config_to_json(&s->cfg);
    int rc = json_object_to_file_ext(s->config_path, doc, JSON_C_TO_STRING_PRETTY);
    json_object_put(doc);
    return rc ? fg_errmsg(errmsg, FG_E_IO, "cannot write %s", s->config_path) : FG_OK;
}
