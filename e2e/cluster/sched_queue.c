/*
 * sched_queue — kube-scheduler's scheduling queue: every pending pod this scheduler places, in one
 * of three parts, or popped while a cycle runs for it.
 *   active         ready to schedule: a heap, highest spec.priority first, then the oldest
 *                  creationTimestamp (then the key, so that the order is total);
 *   backoff        waiting out its backoff after a failed attempt: 1 s doubling per attempt to
 *                  10 s; a heap by when the backoff ends, moved to active when due;
 *   unschedulable  failed and waiting for a cluster event that may help (fg_sim_sched_queue_move:
 *                  a node added or changed, a pod deleted or finished) or for a minute to pass;
 *                  then to backoff, or straight to active when its backoff is already over.
 * A pod that fails in a cycle during which a move request for every pod came goes to backoff rather
 * than unschedulable, as kube's moveRequestCycle makes it, so that no event is lost while it was out
 * (moves for the pods some filters rejected do not count: a pod bound elsewhere is not news enough).
 * An update of an unschedulable pod that changes its spec or labels moves it too; status writes
 * (this scheduler's own condition) do not.
 *
 * Time is passed in (monotonic ns), so the queue is pure and testable. Entries hold a reference to
 * the newest version of their pod; fg_sim_sched_queue_remove frees an entry, whatever part holds it.
 */
#include <stdlib.h>
#include <string.h>

#include "base/assert.h"
#include "base/clock.h"
#include "base/mem.h"
#include "e2e/cluster/sched.h"

#define INITIAL_BACKOFF_NS (1 * FG_NS_PER_S)
#define MAX_BACKOFF_NS (10 * FG_NS_PER_S)
#define MAX_UNSCHEDULABLE_NS (60 * FG_NS_PER_S)

enum { IN_FLIGHT, ACTIVE, BACKOFF, UNSCHEDULABLE };

uint64_t fg_sim_sched_backoff_ns(unsigned attempts)
{
    uint64_t d = INITIAL_BACKOFF_NS;
    for (unsigned i = 1; i < attempts && d < MAX_BACKOFF_NS; i++)
        d *= 2;
    return d < MAX_BACKOFF_NS ? d : MAX_BACKOFF_NS;
}

/* ---- heaps ---- */

typedef bool less_fn(const struct fg_sim_sched_qpod *a, const struct fg_sim_sched_qpod *b);

static bool active_less(const struct fg_sim_sched_qpod *a, const struct fg_sim_sched_qpod *b)
{
    if (a->pod->priority != b->pod->priority)
        return a->pod->priority > b->pod->priority;
    if (a->pod->created_ms != b->pod->created_ms)
        return a->pod->created_ms < b->pod->created_ms;
    return strcmp(a->pod->key, b->pod->key) < 0;
}

static bool backoff_less(const struct fg_sim_sched_qpod *a, const struct fg_sim_sched_qpod *b)
{
    return a->backoff_until_ns < b->backoff_until_ns;
}

static void put(struct fg_sim_sched_qheap *h, size_t i, struct fg_sim_sched_qpod *e)
{
    h->v[i] = e;
    e->heap = i;
}

static void sift_up(struct fg_sim_sched_qheap *h, size_t i, less_fn *less)
{
    struct fg_sim_sched_qpod *e = h->v[i];
    while (i > 0 && less(e, h->v[(i - 1) / 2])) {
        put(h, i, h->v[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    put(h, i, e);
}

static void sift_down(struct fg_sim_sched_qheap *h, size_t i, less_fn *less)
{
    struct fg_sim_sched_qpod *e = h->v[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->n)
            break;
        if (child + 1 < h->n && less(h->v[child + 1], h->v[child]))
            child++;
        if (!less(h->v[child], e))
            break;
        put(h, i, h->v[child]);
        i = child;
    }
    put(h, i, e);
}

static void heap_push(struct fg_sim_sched_qheap *h, struct fg_sim_sched_qpod *e, less_fn *less)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 64;
        h->v = fg_realloc(h->v, h->cap * sizeof *h->v);
    }
    put(h, h->n++, e);
    if (less)
        sift_up(h, h->n - 1, less);
}

static void heap_remove(struct fg_sim_sched_qheap *h, size_t i, less_fn *less)
{
    fg_assert(i < h->n);
    struct fg_sim_sched_qpod *last = h->v[--h->n];
    if (i == h->n)
        return;
    put(h, i, last);
    if (less) {
        sift_up(h, i, less);
        sift_down(h, last->heap, less);
    }
}

/* ---- parts ---- */

static struct fg_sim_sched_qheap *part(struct fg_sim_sched_queue *q, int where)
{
    return where == ACTIVE ? &q->active : where == BACKOFF ? &q->backoff : where == UNSCHEDULABLE ? &q->unschedulable : NULL;
}

static less_fn *order(int where)
{
    return where == ACTIVE ? active_less : where == BACKOFF ? backoff_less : NULL;
}

static void detach(struct fg_sim_sched_queue *q, struct fg_sim_sched_qpod *e)
{
    if (e->where != IN_FLIGHT)
        heap_remove(part(q, e->where), e->heap, order(e->where));
    e->where = IN_FLIGHT;
}

static void attach(struct fg_sim_sched_queue *q, struct fg_sim_sched_qpod *e, int where)
{
    detach(q, e);
    e->where = where;
    heap_push(part(q, where), e, order(where));
}

/* To backoff while it lasts, else to active. */
static void requeue(struct fg_sim_sched_queue *q, struct fg_sim_sched_qpod *e, uint64_t now_ns)
{
    attach(q, e, e->backoff_until_ns > now_ns ? BACKOFF : ACTIVE);
}

/* ---- the queue ---- */

void fg_sim_sched_queue_init(struct fg_sim_sched_queue *q)
{
    memset(q, 0, sizeof *q);
    q->by_key = lh_kchar_table_new(4096, NULL);
}

static void entry_free(struct fg_sim_sched_qpod *e)
{
    fg_sim_sched_pod_unref(e->pod);
    free(e->written_message);
    free(e);
}

void fg_sim_sched_queue_cleanup(struct fg_sim_sched_queue *q)
{
    struct lh_entry *le, *tmp;
    lh_foreach_safe(q->by_key, le, tmp) fg_sim_sched_queue_remove(q, lh_entry_k(le));
    lh_table_free(q->by_key);
    free(q->active.v);
    free(q->backoff.v);
    free(q->unschedulable.v);
    memset(q, 0, sizeof *q);
}

struct fg_sim_sched_qpod *fg_sim_sched_queue_get(struct fg_sim_sched_queue *q, const char *key)
{
    void *v = NULL;
    return lh_table_lookup_ex(q->by_key, key, &v) ? v : NULL;
}

void fg_sim_sched_queue_upsert(struct fg_sim_sched_queue *q, struct fg_sim_sched_pod *pod, uint64_t now_ns)
{
    struct fg_sim_sched_qpod *e = fg_sim_sched_queue_get(q, pod->key);
    if (!e) {
        e = fg_calloc(1, sizeof *e);
        e->pod = fg_sim_sched_pod_ref(pod);
        e->where = IN_FLIGHT;
        lh_table_insert(q->by_key, pod->key, e);
        attach(q, e, ACTIVE);
        return;
    }
    struct fg_sim_sched_pod *old = e->pod;
    e->pod = fg_sim_sched_pod_ref(pod);
    lh_table_delete(q->by_key, old->key);   /* the table's key is the pod's own string */
    lh_table_insert(q->by_key, pod->key, e);
    if (e->where == ACTIVE) {
        sift_up(&q->active, e->heap, active_less);
        sift_down(&q->active, e->heap, active_less);
    } else if (e->where == UNSCHEDULABLE && fg_sim_sched_pod_spec_hash(pod) != fg_sim_sched_pod_spec_hash(old)) {
        requeue(q, e, now_ns);
    }
    fg_sim_sched_pod_unref(old);
}

void fg_sim_sched_queue_remove(struct fg_sim_sched_queue *q, const char *key)
{
    struct fg_sim_sched_qpod *e = fg_sim_sched_queue_get(q, key);
    if (!e)
        return;
    detach(q, e);
    lh_table_delete(q->by_key, key);
    entry_free(e);
}

struct fg_sim_sched_qpod *fg_sim_sched_queue_pop(struct fg_sim_sched_queue *q, uint64_t now_ns)
{
    while (q->backoff.n && q->backoff.v[0]->backoff_until_ns <= now_ns)
        attach(q, q->backoff.v[0], ACTIVE);
    for (size_t i = q->unschedulable.n; i-- > 0;) {
        struct fg_sim_sched_qpod *e = q->unschedulable.v[i];
        if (e->unschedulable_since_ns + MAX_UNSCHEDULABLE_NS <= now_ns)
            requeue(q, e, now_ns);
    }
    if (!q->active.n)
        return NULL;
    struct fg_sim_sched_qpod *e = q->active.v[0];
    detach(q, e);
    e->cycle = ++q->cycle;
    e->attempts++;
    return e;
}

void fg_sim_sched_queue_unschedulable(struct fg_sim_sched_queue *q, struct fg_sim_sched_qpod *e, uint64_t now_ns)
{
    e->backoff_until_ns = now_ns + fg_sim_sched_backoff_ns(e->attempts);
    if (q->move_cycle >= e->cycle) {
        requeue(q, e, now_ns);
        return;
    }
    e->unschedulable_since_ns = now_ns;
    attach(q, e, UNSCHEDULABLE);
}

void fg_sim_sched_queue_backoff(struct fg_sim_sched_queue *q, struct fg_sim_sched_qpod *e, uint64_t now_ns)
{
    e->backoff_until_ns = now_ns + fg_sim_sched_backoff_ns(e->attempts);
    attach(q, e, BACKOFF);
}

void fg_sim_sched_queue_move(struct fg_sim_sched_queue *q, unsigned filters, uint64_t now_ns)
{
    if (!filters)
        q->move_cycle = q->cycle;
    for (size_t i = q->unschedulable.n; i-- > 0;) {
        struct fg_sim_sched_qpod *e = q->unschedulable.v[i];
        if (!filters || (e->rejected_by & filters))
            requeue(q, e, now_ns);
    }
}

uint64_t fg_sim_sched_queue_next_ns(const struct fg_sim_sched_queue *q)
{
    uint64_t next = q->active.n ? 0 : UINT64_MAX;
    if (q->backoff.n && q->backoff.v[0]->backoff_until_ns < next)
        next = q->backoff.v[0]->backoff_until_ns;
    for (size_t i = 0; i < q->unschedulable.n; i++)
        if (q->unschedulable.v[i]->unschedulable_since_ns + MAX_UNSCHEDULABLE_NS < next)
            next = q->unschedulable.v[i]->unschedulable_since_ns + MAX_UNSCHEDULABLE_NS;
    return next;
}
