/*
 * component — one part of the simulated cluster as a process: `fracgpu-sim-cluster component NAME
 * --kubeconfig FILE --config FILE --dir DIR [--log-level L]`. The configuration is the JSON the
 * supervisor wrote (config.h); the manager has no health server and no leader election (one
 * replica of each part), and its client's rate limit is the configuration's clientQPS.
 */
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <signal.h>

#include "base/log.h"
#include "base/yaml.h"
#include "e2e/cluster/cm.h"
#include "e2e/cluster/sim.h"

static enum fg_err controllers_setup(struct fg_manager *m, const struct fg_sim_config *cfg, const char *dir,
                                     char *errmsg)
{
    (void)cfg;
    (void)dir;
    return fg_sim_cm_setup(m, errmsg);
}

static enum fg_err scheduler_setup(struct fg_manager *m, const struct fg_sim_config *cfg, const char *dir,
                                   char *errmsg)
{
    (void)dir;
    return fg_sim_scheduler_setup(m, cfg, errmsg);
}

static enum fg_err autoscaler_setup(struct fg_manager *m, const struct fg_sim_config *cfg, const char *dir,
                                    char *errmsg)
{
    (void)dir;
    return fg_sim_autoscaler_setup(m, cfg, errmsg);
}

/* Each component: its name, its switch in the config, its setup on a manager. */
static const struct component {
    const char *name;
    size_t on;   /* offset of its bool in struct fg_sim_config */
    enum fg_err (*setup)(struct fg_manager *m, const struct fg_sim_config *cfg, const char *dir, char *errmsg);
} components[FG_SIM_NCOMPONENTS] = {
    { "controllers", offsetof(struct fg_sim_config, controllers), controllers_setup },
    { "scheduler", offsetof(struct fg_sim_config, scheduler), scheduler_setup },
    { "kubelets", offsetof(struct fg_sim_config, kubelets), fg_sim_kubelets_setup },
    { "autoscaler", offsetof(struct fg_sim_config, autoscaler), autoscaler_setup },
};

const char *const fg_sim_component_names[FG_SIM_NCOMPONENTS] = { "controllers", "scheduler", "kubelets", "autoscaler" };

static const struct component *component_named(const char *name)
{
    for (size_t i = 0; i < FG_SIM_NCOMPONENTS; i++)
        if (!strcmp(components[i].name, name))
            return &components[i];
    return NULL;
}

bool *fg_sim_component_switch(struct fg_sim_config *cfg, const char *name)
{
    const struct component *c = component_named(name);
    return c ? (bool *)((char *)cfg + c->on) : NULL;
}

static enum fg_err setup(struct fg_manager *m, const char *name, const struct fg_sim_config *cfg, const char *dir,
                         char *errmsg)
{
    const struct component *c = component_named(name);
    return c ? c->setup(m, cfg, dir, errmsg) : fg_errmsg(errmsg, FG_E_INVAL, "unknown component \"%s\"", name);
}

int fg_sim_component_main(int argc, char **argv)
{
    static const struct option options[] = {
        { "kubeconfig", required_argument, NULL, 'k' }, { "config", required_argument, NULL, 'c' },
        { "dir", required_argument, NULL, 'd' },        { "log-level", required_argument, NULL, 'v' },
        { NULL, 0, NULL, 0 },
    };
    const char *kubeconfig = NULL, *config = NULL, *dir = NULL;
    enum fg_log_level level;
    int c;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'k': kubeconfig = optarg; break;
        case 'c': config = optarg; break;
        case 'd': dir = optarg; break;
        case 'v':
            if (!fg_log_parse_level(optarg, &level)) {
                fprintf(stderr, "fracgpu-sim-cluster component: unknown log level \"%s\"\n", optarg);
                return 2;
            }
            fg_log_set_level(level);
            break;
        default: return 2;
        }
    }
    if (optind + 1 != argc || !kubeconfig || !config || !dir) {
        fprintf(stderr, "usage: fracgpu-sim-cluster component NAME --kubeconfig FILE --config FILE --dir DIR\n");
        return 2;
    }
    const char *name = argv[optind];
    prctl(PR_SET_PDEATHSIG, SIGTERM);   /* a part never outlives its supervisor */
    char errmsg[FG_ERRMSG_MAX] = "", component[64];
    snprintf(component, sizeof component, "sim-%s", name);
    struct fg_sim_config cfg;
    fg_sim_config_default(&cfg);
    json_object *doc = NULL;
    if (fg_yaml_load_file(config, &doc, errmsg) != FG_OK || fg_sim_config_apply(&cfg, doc, errmsg) != FG_OK) {
        fg_log(FG_LOG_ERROR, component, "cannot read the configuration: %s", errmsg);
        json_object_put(doc);
        fg_sim_config_cleanup(&cfg);
        return 1;
    }
    json_object_put(doc);
    struct fg_manager_opts opts = FG_MANAGER_OPTS_DEFAULT;
    opts.component = component;
    opts.kubeconfig = kubeconfig;
    opts.listen = NULL;
    opts.leader.enabled = false;
    opts.resync_ns = 30 * FG_NS_PER_S;
    opts.client.qps = cfg.qps;
    opts.client.burst = cfg.qps > 0 ? (unsigned)(cfg.qps * 2) : 1;
    struct fg_manager *m = NULL;
    int status = 1;
    if (fg_manager_new(&opts, &m, errmsg) != FG_OK)
        fg_log(FG_LOG_ERROR, component, "cannot start: %s", errmsg);
    else if (setup(m, name, &cfg, dir, errmsg) != FG_OK)
        fg_log(FG_LOG_ERROR, component, "cannot set up: %s", errmsg);
    else
        status = fg_manager_run(m);
    fg_manager_free(m);
    fg_sim_config_cleanup(&cfg);
    return status;
}
