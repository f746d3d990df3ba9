/*
 * periodic — a runnable that calls a function on a timer, on a thread of its own (periodic.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/mem.h"
#include "operator/manager/periodic.h"

struct periodic {
    struct fg_periodic p;
    char name[64];
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    bool stop, running;
};

static void *periodic_main(void *ud)
{
    struct periodic *t = ud;
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        pthread_mutex_unlock(&t->mu);
        t->p.run(t->p.ud);
        pthread_mutex_lock(&t->mu);
        if (!t->stop)
            fg_cond_wait_ns(&t->wake, &t->mu, t->p.period_ns);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

static enum fg_err periodic_start(void *ud, char *errmsg)
{
    struct periodic *t = ud;
    t->stop = false;
    int rc = pthread_create(&t->thread, NULL, periodic_main, t);
    if (rc)
        return fg_errmsg(errmsg, FG_E_INTERNAL, "cannot start %s: %s", t->name, strerror(rc));
    char thread_name[16];   /* the kernel keeps 15 characters */
    size_t len = strnlen(t->name, sizeof thread_name - 1);
    memcpy(thread_name, t->name, len);
    thread_name[len] = '\0';
    pthread_setname_np(t->thread, thread_name);
    t->running = true;
    return FG_OK;
}

static void periodic_stop(void *ud)
{
    struct periodic *t = ud;
    if (!t->running)
        return;
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_signal(&t->wake);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    t->running = false;
}

static void periodic_free(void *ud)
{
    struct periodic *t = ud;
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->wake);
    free(t);
}

enum fg_err fg_manager_add_periodic(struct fg_manager *m, const struct fg_periodic *p, char *errmsg)
{
    if (!p->run || !p->period_ns || !p->name)
        return fg_errmsg(errmsg, FG_E_INVAL, "a periodic runnable needs a name, a function and a period above 0");
    struct periodic *t = fg_calloc(1, sizeof *t);
    t->p = *p;
    snprintf(t->name, sizeof t->name, "%s", p->name);
    t->p.name = t->name;
    pthread_mutex_init(&t->mu, NULL);
    fg_cond_init_monotonic(&t->wake);
    enum fg_err err = fg_manager_add_runnable(m, &(struct fg_runnable){ .name = t->name, .leader_only = p->leader_only,
                                                                         .start = periodic_start,
                                                                         .stop = periodic_stop, .ud = t });
    if (err) {
        periodic_free(t);
        return fg_errmsg(errmsg, err, "cannot add %s: the manager has started", p->name);
    }
    fg_manager_on_free(m, periodic_free, t);
    return FG_OK;
}
