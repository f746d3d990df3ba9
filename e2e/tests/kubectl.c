/*
 * kubectl — spawning kubectl for e2e tests; see kubectl.h.
 */
#include "e2e/tests/kubectl.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ARGS 40

void fg_kubectl_init(struct fg_kubectl *k, const char *dir, const char *kubeconfig)
{
    snprintf(k->dir, sizeof k->dir, "%s", dir);
    snprintf(k->kubeconfig, sizeof k->kubeconfig, "%s", kubeconfig);
    snprintf(k->cache, sizeof k->cache, "%s/kubectl-cache", dir);
    k->timeout_s = 30;
}

int fg_kubectl_run(struct fg_kubectl *k, struct fg_buf *out, const char *stdin_text, ...)
{
    char limit[16];
    snprintf(limit, sizeof limit, "%u", k->timeout_s ? k->timeout_s : 30);
    const char *argv[MAX_ARGS + 1] = { "timeout", limit, "/usr/bin/kubectl", "--kubeconfig", k->kubeconfig,
                                       "--cache-dir", k->cache, "--request-timeout=10s" };
    int n = 8;
    va_list ap;
    va_start(ap, stdin_text);
    for (const char *a; (a = va_arg(ap, const char *));) {
        if (n == MAX_ARGS) {
            va_end(ap);
            return -1;
        }
        argv[n++] = a;
    }
    va_end(ap);
    argv[n] = NULL;

    char in_path[160], out_path[160];
    snprintf(in_path, sizeof in_path, "%s/kubectl.stdin", k->dir);
    snprintf(out_path, sizeof out_path, "%s/kubectl.out", k->dir);
    FILE *f = fopen(in_path, "w");
    if (!f)
        return -1;
    fputs(stdin_text ? stdin_text : "", f);
    fclose(f);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int in = open(in_path, O_RDONLY), o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in < 0 || o < 0)
            _exit(127);
        dup2(in, 0);
        dup2(o, 1);
        dup2(o, 2);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0)
        return -1;
    fg_buf_reset(out);
    if (fg_buf_read_file(out, out_path, NULL) != FG_OK)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
