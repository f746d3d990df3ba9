/*
 * stop — the holder's stop signal: a flag and a condition variable under one lock, so that every wait
 * of the holder's thread (a backoff, a health-check interval, an API request in flight) ends the
 * moment the manager stops the holder.
 */
#ifndef FG_NODEAGENT_HOLDER_STOP_H
#define FG_NODEAGENT_HOLDER_STOP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct fg_holder_stop {
    pthread_mutex_t mu;
    pthread_cond_t cond;     /* broadcast on a stop and on every event a waiter waits for */
    bool requested;
};

void fg_holder_stop_init(struct fg_holder_stop *s);
void fg_holder_stop_cleanup(struct fg_holder_stop *s);
/* Any thread: from now on every wait returns at once. */
void fg_holder_stop_request(struct fg_holder_stop *s);
bool fg_holder_stop_requested(struct fg_holder_stop *s);
/* Sleeps ns of real time or until a stop; true when stopped. */
bool fg_holder_stop_sleep(struct fg_holder_stop *s, uint64_t ns);

#endif
