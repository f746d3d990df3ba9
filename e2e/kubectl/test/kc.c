/* kc — harness of the kubectl end-to-end tests; see kc.h. */
#include "e2e/kubectl/test/kc.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fs.h"
#include "base/mem.h"

static int setup(void **state, bool tls)
{
    struct kc_env *env = fg_calloc(1, sizeof(*env));
    const char *tmp = getenv("TMPDIR");
    snprintf(env->dir, sizeof(env->dir), "%s/fg-kubectl-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(env->dir))
        goto out_free;
    char errmsg[FG_ERRMSG_MAX];
    struct fg_apiserver_opts opts = { .host = "127.0.0.1", .tls = tls, .token = tls ? KC_TOKEN : NULL };
    if (fg_apiserver_new(&opts, &env->srv, errmsg) != FG_OK)
        goto out_free;
    snprintf(env->kubeconfig, sizeof(env->kubeconfig), "%s/kubeconfig", env->dir);
    snprintf(env->base_url, sizeof(env->base_url), "%s://127.0.0.1:%u", tls ? "https" : "http",
             fg_apiserver_port(env->srv));
    if (tls) {
        snprintf(env->ca_file, sizeof(env->ca_file), "%s/ca.pem", env->dir);
        FILE *f = fopen(env->ca_file, "w");
        if (f) {
            fputs(fg_apiserver_ca_pem(env->srv), f);
            fclose(f);
        }
    }
    if (fg_apiserver_write_kubeconfig(env->srv, env->kubeconfig, errmsg) != FG_OK ||
        fg_apiserver_start(env->srv, errmsg) != FG_OK) {
        fprintf(stderr, "kc_setup: %s\n", errmsg);
        fg_apiserver_free(env->srv);
        goto out_free;
    }
    *state = env;
    return 0;
out_free:
    free(env);
    return -1;
}

int kc_setup(void **state)
{
    return setup(state, false);
}

int kc_setup_tls(void **state)
{
    return setup(state, true);
}

int kc_teardown(void **state)
{
    struct kc_env *env = *state;
    fg_apiserver_free(env->srv);
    int rc = fg_remove_tree(env->dir);
    free(env);
    return rc;
}

/* The shell command running kubectl with this environment's kubeconfig, cache and home. */
static char *command(struct kc_env *env, const char *fmt, va_list ap)
{
    char *args = NULL;
    if (vasprintf(&args, fmt, ap) < 0)
        abort();
    char *cmd = fg_asprintf("env HOME=%s KUBECONFIG=%s timeout -k 2 %d kubectl --cache-dir=%s/cache "
                            "--request-timeout=10s %s 2>&1",
                            env->dir, env->kubeconfig, KC_TIMEOUT_S, env->dir, args);
    free(args);
    return cmd;
}

static char *read_all(FILE *f)
{
    struct fg_buf b = { 0 };
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        if (fg_buf_append(&b, chunk, n))
            break;
    char *s = fg_strdup(fg_buf_str(&b));
    fg_buf_cleanup(&b);
    return s;
}

static int exit_status(int rc)
{
    return rc >= 0 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int kc_run(struct kc_env *env, char **out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *cmd = command(env, fmt, ap);
    va_end(ap);
    FILE *f = popen(cmd, "r");
    free(cmd);
    if (!f)
        return -1;
    char *text = read_all(f);
    int rc = exit_status(pclose(f));
    if (getenv("KC_VERBOSE"))
        fprintf(stderr, "kubectl [%d]: %s\n", rc, text);
    if (out)
        *out = text;
    else
        free(text);
    return rc;
}

void kc_start(struct kc_env *env, struct kc_bg *bg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *cmd = command(env, fmt, ap);
    va_end(ap);
    bg->pipe = popen(cmd, "r");
    free(cmd);
}

char *kc_line(struct kc_bg *bg)
{
    char *line = NULL;
    size_t cap = 0;
    if (!bg->pipe || getline(&line, &cap, bg->pipe) < 0) {
        free(line);
        return NULL;
    }
    return line;
}

int kc_finish(struct kc_bg *bg, char **rest)
{
    if (!bg->pipe)
        return -1;
    char *text = read_all(bg->pipe);
    int rc = exit_status(pclose(bg->pipe));
    bg->pipe = NULL;
    if (rest)
        *rest = text;
    else
        free(text);
    return rc;
}

const char *kc_testdata(const char *name)
{
    static char path[512];
    const char *src = getenv("FG_SOURCE_DIR");
    snprintf(path, sizeof(path), "%s/e2e/kubectl/testdata/%s", src ? src : ".", name);
    return path;
}
