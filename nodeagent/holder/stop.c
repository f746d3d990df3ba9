/* stop — the holder's interruptible waits; see stop.h. */
#include "nodeagent/holder/stop.h"

#include "base/clock.h"

void fg_holder_stop_init(struct fg_holder_stop *s)
{
    pthread_mutex_init(&s->mu, NULL);
    fg_cond_init_monotonic(&s->cond);
    s->requested = false;
}

void fg_holder_stop_cleanup(struct fg_holder_stop *s)
{
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mu);
}

void fg_holder_stop_request(struct fg_holder_stop *s)
{
    pthread_mutex_lock(&s->mu);
    s->requested = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
}

bool fg_holder_stop_requested(struct fg_holder_stop *s)
{
    pthread_mutex_lock(&s->mu);
    bool r = s->requested;
    pthread_mutex_unlock(&s->mu);
    return r;
}

bool fg_holder_stop_sleep(struct fg_holder_stop *s, uint64_t ns)
{
    uint64_t deadline = fg_clock_real_ns() + ns;
    pthread_mutex_lock(&s->mu);
    for (uint64_t now; !s->requested && (now = fg_clock_real_ns()) < deadline;)
        fg_cond_wait_ns(&s->cond, &s->mu, deadline - now);
    bool r = s->requested;
    pthread_mutex_unlock(&s->mu);
    return r;
}
