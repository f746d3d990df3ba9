/*
 * fracgpu-checker — the sharing checker (checker.h) as a process, for a cluster a test does not own
 * in-process: `make demo` runs it beside its simulated cluster.
 *
 *   fracgpu-checker --kubeconfig FILE --report FILE [--capacity-namespace NS]
 *
 * It watches every pod until SIGTERM or SIGINT and judges the sharing invariants all along. Once it
 * has listed the pods (the report file appearing says it is ready for signals), on SIGUSR1, and once
 * more when it stops, it writes its view to the report file (atomically) as JSON:
 * the figures, the violations kept, and every GPU with a counting tenant (node, uuid, tenants,
 * computeMilli, memoryMiB) — what `kubectl fracgpu gpus` must agree with. It exits 0 when it found no
 * violation, 1 when it found one or could not watch, 2 on bad usage. Signals are taken by sigwait on
 * the main thread; every other thread starts with them blocked.
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/log.h"
#include "e2e/checker/checker.h"

static int usage(const char *why)
{
    fprintf(stderr, "fracgpu-checker: %s\nusage: fracgpu-checker --kubeconfig FILE --report FILE "
                    "[--capacity-namespace NS]\n", why);
    return 2;
}

static void add_gpu(void *ud, const struct fg_checker_gpu *g)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "node", json_object_new_string(g->node));
    json_object_object_add(o, "uuid", json_object_new_string(g->uuid));
    json_object_object_add(o, "tenants", json_object_new_int64((int64_t)g->tenants));
    json_object_object_add(o, "computeMilli", json_object_new_int64(g->compute_milli));
    json_object_object_add(o, "memoryMiB", json_object_new_int64(g->memory_mib));
    json_object_array_add(ud, o);
}

/* Writes the checker's view to path; false (and a line on stderr) when it cannot. */
static bool write_report(struct fg_checker *c, const char *path)
{
    struct fg_checker_stats st;
    fg_checker_stats(c, &st);
    json_object *r = json_object_new_object(), *gpus = json_object_new_array(), *msgs = json_object_new_array();
    json_object_object_add(r, "events", json_object_new_int64((int64_t)st.events));
    json_object_object_add(r, "violations", json_object_new_int64((int64_t)st.violations));
    json_object_object_add(r, "gpusSeen", json_object_new_int64((int64_t)st.gpus));
    json_object_object_add(r, "maxComputeMilli", json_object_new_int64(st.max_compute_milli));
    char *m;
    for (size_t i = 0; (m = fg_checker_message(c, i)); i++) {
        json_object_array_add(msgs, json_object_new_string(m));
        free(m);
    }
    json_object_object_add(r, "messages", msgs);
    fg_checker_gpus(c, add_gpu, gpus);
    json_object_object_add(r, "gpus", gpus);
    const char *text = json_object_to_json_string_ext(r, JSON_C_TO_STRING_PRETTY);
    bool ok = fg_write_file_atomic(path, text, strlen(text)) == 0;
    if (!ok)
        perror(path);
    json_object_put(r);
    return ok;
}

int main(int argc, char **argv)
{
    const char *kubeconfig = NULL, *report = NULL;
    struct fg_checker_opts opts = FG_CHECKER_OPTS_DEFAULT;
    for (int i = 1; i < argc; i++) {
        const char **into = !strcmp(argv[i], "--kubeconfig")           ? &kubeconfig
                            : !strcmp(argv[i], "--report")             ? &report
                            : !strcmp(argv[i], "--capacity-namespace") ? &opts.capacity_ns
                                                                       : NULL;
        if (!into) {
            char why[256];
            snprintf(why, sizeof why, "unknown argument %s", argv[i]);
            return usage(why);
        }
        if (i + 1 == argc || !argv[i + 1][0]) {
            char why[256];
            snprintf(why, sizeof why, "%s needs a value", argv[i]);
            return usage(why);
        }
        *into = argv[++i];
    }
    if (!kubeconfig || !report)
        return usage(!kubeconfig ? "--kubeconfig is required" : "--report is required");

    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    struct fg_checker *c = NULL;
    char msg[FG_ERRMSG_MAX] = "";
    if (fg_checker_start(kubeconfig, &opts, &c, msg) != FG_OK || !fg_checker_wait_synced(c, 60000)) {
        fprintf(stderr, "fracgpu-checker: cannot watch the cluster of %s: %s\n", kubeconfig,
                msg[0] ? msg : "the first list of pods did not come within 60 s");
        fg_checker_free(c);
        return 1;
    }
    fprintf(stderr, "fracgpu-checker: watching every pod of the cluster of %s\n", kubeconfig);
    int sig = SIGUSR1;
    while (sig == SIGUSR1 && write_report(c, report) && sigwait(&sigs, &sig) == 0)
        ;
    fg_checker_stop(c);
    bool written = write_report(c, report);
    char *summary = fg_checker_summary(c);
    fprintf(stderr, "fracgpu-checker: %s\n", summary);
    free(summary);
    struct fg_checker_stats st;
    fg_checker_stats(c, &st);
    fg_checker_free(c);
    return written && st.violations == 0 ? 0 : 1;
}
