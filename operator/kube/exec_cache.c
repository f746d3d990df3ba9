/*
 * exec_cache — the exec credential a client sends, and the thread that runs the plugin for it.
 *
 * The cache holds at most one credential, with its generation and expiry. A request that finds it
 * fresh copies it and goes; one that finds none, or an expired one, asks for a run and either waits
 * (the synchronous verbs, on their own threads) or comes back later (the loop, which must never
 * block: it is told through a listener when the run has ended). Every run happens on the cache's
 * refresher thread, one at a time, so a burst of requests at expiry runs the plugin once and no
 * caller's thread is ever held by a plugin — only the requests that need the credential wait. The
 * refresher sleeps on the condition variable the rest of the time; freeing the cache writes to a
 * pipe that kills a plugin still running and joins the thread.
 *
 * A 401 invalidates the credential it was sent with (by generation, so fifty requests refused at
 * once cause one run, and a credential fetched meanwhile survives); the caller then retries once.
 * A failed run caches nothing: its error goes to every caller that waited for it, and the next
 * request runs the plugin again. Nothing here logs a token; errors name the plugin's command.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/mem.h"
#include "operator/kube/exec_internal.h"

struct listener {
    void (*fn)(void *ud);
    void *ud;
    struct listener *next;
};

struct fg__kube_creds {
    const struct fg_kube_exec *exec;   /* borrowed from the client's config */
    char *info;                        /* KUBERNETES_EXEC_INFO */
    unsigned timeout_ms;
    pthread_t thread;
    int cancel[2];                     /* written once, on free: kills a running plugin */

    pthread_mutex_t lock;              /* guards everything below */
    pthread_cond_t cond;               /* a run is wanted, a run ended, or the cache is stopping */
    bool stopping, want_run, running;
    uint64_t runs;                     /* runs ended so far; tickets count against it */
    bool has_cred;
    struct fg__kube_cred cred;
    uint64_t gen;                      /* generation of cred */
    enum fg_err last_err;              /* of the last run */
    char last_msg[FG_ERRMSG_MAX];
    struct listener *listeners;
};

/* One run: the plugin, then its output parsed. Messages name the plugin. */
static enum fg_err run_plugin(struct fg__kube_creds *cr, struct fg__kube_cred *cred, char *errmsg)
{
    struct fg_buf out = FG_BUF_INIT;
    char why[FG_ERRMSG_MAX];
    enum fg_err err = fg__kube_exec_run(cr->exec, cr->info, cr->timeout_ms, cr->cancel[0], &out, why);
    if (!err)
        err = fg__kube_exec_parse(cr->exec->api_version, out.data ? out.data : "", out.len, cred, why);
    if (out.data)
        explicit_bzero(out.data, out.len);
    fg_buf_cleanup(&out);
    if (err)
        return fg_errmsg(errmsg, err, "exec plugin \"%s\": %s", cr->exec->command, why);
    if (cred->expiry_ms)
        fg_log(FG_LOG_INFO, "kube", "exec plugin \"%s\" issued a credential that expires in %lld s",
               cr->exec->command, (long long)(cred->expiry_ms - fg_clock_wall_ms()) / 1000);
    else
        fg_log(FG_LOG_INFO, "kube", "exec plugin \"%s\" issued a credential without expiry (kept until refused)",
               cr->exec->command);
    return FG_OK;
}

static void *refresher(void *ud)
{
    struct fg__kube_creds *cr = ud;
    pthread_mutex_lock(&cr->lock);
    for (;;) {
        while (!cr->stopping && !cr->want_run)
            pthread_cond_wait(&cr->cond, &cr->lock);
        if (cr->stopping)
            break;
        cr->want_run = false;
        cr->running = true;
        pthread_mutex_unlock(&cr->lock);
        struct fg__kube_cred fresh;
        char msg[FG_ERRMSG_MAX] = "";
        enum fg_err err = run_plugin(cr, &fresh, msg);
        pthread_mutex_lock(&cr->lock);
        cr->running = false;
        fg__kube_cred_cleanup(&cr->cred);
        cr->has_cred = !err;
        if (!err) {
            cr->cred = fresh;
            cr->gen++;
        }
        cr->last_err = err;
        memcpy(cr->last_msg, msg, sizeof msg);
        cr->runs++;
        pthread_cond_broadcast(&cr->cond);
        for (struct listener *l = cr->listeners; l; l = l->next)
            l->fn(l->ud);
    }
    pthread_mutex_unlock(&cr->lock);
    return NULL;
}

struct fg__kube_creds *fg__kube_creds_new(const struct fg_kube_config *cfg, unsigned timeout_ms)
{
    struct fg__kube_creds *cr = fg_calloc(1, sizeof *cr);
    cr->exec = cfg->exec;
    cr->info = fg__kube_exec_info(cfg);
    cr->timeout_ms = timeout_ms;
    pthread_mutex_init(&cr->lock, NULL);
    pthread_cond_init(&cr->cond, NULL);
    /* The refresher inherits a mask blocking every signal: SIGTERM and SIGINT must reach the thread
     * the program waits on them with (fg_manager_run), whenever this client was made. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    bool started = pipe2(cr->cancel, O_CLOEXEC) == 0 && pthread_create(&cr->thread, NULL, refresher, cr) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!started) {
        fg_log(FG_LOG_ERROR, "kube", "cannot start the exec credential refresher");
        abort();   /* out of descriptors or threads: as fatal as out of memory */
    }
    return cr;
}

void fg__kube_creds_free(struct fg__kube_creds *cr)
{
    if (!cr)
        return;
    pthread_mutex_lock(&cr->lock);
    cr->stopping = true;
    pthread_cond_broadcast(&cr->cond);
    pthread_mutex_unlock(&cr->lock);
    if (write(cr->cancel[1], "x", 1) < 0) {
        /* the pipe is ours and empty: cannot fail */
    }
    pthread_join(cr->thread, NULL);
    close(cr->cancel[0]);
    close(cr->cancel[1]);
    fg__kube_cred_cleanup(&cr->cred);
    while (cr->listeners) {
        struct listener *l = cr->listeners;
        cr->listeners = l->next;
        free(l);
    }
    pthread_cond_destroy(&cr->cond);
    pthread_mutex_destroy(&cr->lock);
    free(cr->info);
    free(cr);
}

static bool expired(const struct fg__kube_cred *cred)
{
    return cred->expiry_ms && fg_clock_wall_ms() >= cred->expiry_ms;
}

enum fg_err fg__kube_creds_get(struct fg__kube_creds *cr, bool wait, uint64_t *ticket, struct fg__kube_cred *out,
                               uint64_t *gen, char *errmsg)
{
    enum fg_err err = FG_OK;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&cr->lock);
    for (;;) {
        bool answered = *ticket && cr->runs >= *ticket;   /* the run this caller waited for has ended */
        if (cr->has_cred && (answered || !expired(&cr->cred))) {
            fg__kube_cred_copy(out, &cr->cred);
            *gen = cr->gen;
            *ticket = 0;
            break;
        }
        if (answered && cr->last_err) {
            err = fg_errmsg(errmsg, cr->last_err, "%s", cr->last_msg);
            *ticket = 0;
            break;
        }
        if (cr->stopping) {
            err = fg_errmsg(errmsg, FG_E_SHUTDOWN, "exec plugin \"%s\": the client is being freed", cr->exec->command);
            break;
        }
        if (!*ticket || answered) {   /* ask for a run; one in progress will do */
            *ticket = cr->runs + 1;
            if (!cr->running) {
                cr->want_run = true;
                pthread_cond_broadcast(&cr->cond);
            }
        }
        if (!wait) {
            err = FG_E_BUSY;
            break;
        }
        pthread_cond_wait(&cr->cond, &cr->lock);
    }
    pthread_mutex_unlock(&cr->lock);
    return err;
}

void fg__kube_creds_invalidate(struct fg__kube_creds *cr, uint64_t gen)
{
    pthread_mutex_lock(&cr->lock);
    if (cr->has_cred && cr->gen == gen) {
        fg__kube_cred_cleanup(&cr->cred);
        cr->has_cred = false;
        fg_log(FG_LOG_INFO, "kube", "the API server refused the credential of exec plugin \"%s\" (401); "
               "running it again", cr->exec->command);
    }
    pthread_mutex_unlock(&cr->lock);
}

void fg__kube_creds_listen(struct fg__kube_creds *cr, void (*fn)(void *ud), void *ud)
{
    struct listener *l = fg_calloc(1, sizeof *l);
    l->fn = fn;
    l->ud = ud;
    pthread_mutex_lock(&cr->lock);
    l->next = cr->listeners;
    cr->listeners = l;
    pthread_mutex_unlock(&cr->lock);
}

void fg__kube_creds_unlisten(struct fg__kube_creds *cr, void *ud)
{
    pthread_mutex_lock(&cr->lock);
    for (struct listener **p = &cr->listeners; *p; p = &(*p)->next) {
        if ((*p)->ud == ud) {
            struct listener *l = *p;
            *p = l->next;
            free(l);
            break;
        }
    }
    pthread_mutex_unlock(&cr->lock);
}
