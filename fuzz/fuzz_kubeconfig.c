/*
 * fuzz_kubeconfig — kubeconfig loading: YAML, the context chain, inline credentials and exec stanzas.
 *
 * fg_kube_config_load_file reads a path (relative references in the file are taken against its
 * directory), so each input is written to `config` in a private temporary directory and loaded from
 * there, once with its current-context and once with the context named "dev" (what the seeds call
 * theirs). A config that loads is used as the client uses it: its exec stanza copied and freed, and the
 * KUBERNETES_EXEC_INFO a plugin would get built from it. Inputs naming anything under /dev, /proc or
 * /sys are skipped: the loader reads the files a kubeconfig names, and a device can block forever.
 * The directory is removed at exit.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz/fuzz.h"
#include "operator/kube/config.h"
#include "operator/kube/exec_internal.h"

static char dir[64], path[80];

static void remove_dir(void)
{
    unlink(path);
    rmdir(dir);
}

static bool names_device(const uint8_t *data, size_t size)
{
    static const char *const bad[] = { "/dev", "/proc", "/sys" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (memmem(data, size, bad[i], strlen(bad[i])))
            return true;
    return false;
}

static void load(const char *context)
{
    struct fg_kube_config cfg;
    char msg[FG_ERRMSG_MAX];
    if (fg_kube_config_load_file(path, context, &cfg, msg) != FG_OK)
        return;
    if (cfg.exec) {
        fg_kube_exec_free(fg_kube_exec_dup(cfg.exec));
        free(fg__kube_exec_info(&cfg));
    }
    fg_kube_config_cleanup(&cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%.40s/fg-fuzz-XXXXXX", tmp && tmp[0] && strlen(tmp) <= 40 ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            perror("fuzz_kubeconfig: mkdtemp");
            abort();
        }
        snprintf(path, sizeof path, "%s/config", dir);
        atexit(remove_dir);
    }
    if (names_device(data, size))
        return 0;
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        perror("fuzz_kubeconfig: writing the input");
        abort();
    }
    load(NULL);
    load("dev");
    return 0;
}
