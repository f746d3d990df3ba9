/*
 * ratelimited — the rate-limited face of the work queue: retries go through the queue's limiter
 * and the delaying heap; see workqueue.h.
 */
#include "operator/workqueue/queue_int.h"

enum fg_err fg_workqueue_add_rate_limited(struct fg_workqueue *q, const char *key)
{
    uint64_t delay_ns;
    enum fg_err err = fg_rate_limiter_when(q->limiter, key, &delay_ns);
    if (err)
        return err;
    err = fg_workqueue_add_after(q, key, delay_ns);
    if (err == FG_OK) {
        pthread_mutex_lock(&q->lock);
        q->retries++;
        pthread_mutex_unlock(&q->lock);
    }
    return err;
}

enum fg_err fg_workqueue_forget(struct fg_workqueue *q, const char *key)
{
    return fg_rate_limiter_forget(q->limiter, key);
}

enum fg_err fg_workqueue_num_requeues(struct fg_workqueue *q, const char *key, unsigned *out)
{
    return fg_rate_limiter_num_requeues(q->limiter, key, out);
}
