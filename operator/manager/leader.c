/*
 * leader — the election thread; see leader.h for the protocol and why it is safe.
 *
 * State, guarded by `mu` apart from the atomics read by fg_leader_is_leading:
 *   - observed: the last Lease record read or written (holder, transitions, acquire and renew times,
 *     duration) and `observed_ns`, the monotonic time at which it last changed;
 *   - cached: the Lease object as the server last returned it, so that a leader renews with one PUT
 *     guarded by its resourceVersion instead of a GET and a PUT;
 *   - renewed_ns (atomic): when the last successful acquire or renew was sent; 0 when not leading.
 * One attempt is tryAcquireOrRenew of client-go: a leader PUTs its renewal; anyone else GETs the
 * Lease (creating it when absent), notes a changed record, and takes the Lease over when it is free
 * or expired. After an attempt the thread sleeps one retry period, or, for a candidate, until the
 * Lease it watches expires, whichever comes first.
 */
#include "operator/manager/leader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/timefmt.h"
#include "operator/kube/client.h"
#include "operator/kube/resource.h"

#define COMPONENT "leader-election"

struct record {
    char holder[320];   /* an identity: a 253-byte name and its suffix fit */
    int64_t duration_s;
    int64_t transitions;
    char acquire_time[40];
};

struct fg_leader {
    struct fg_leader_opts opts;     /* strings below are owned copies */
    char *ns, *name, *identity;
    char *lease;                    /* "namespace/name" */
    struct fg_kube_client *client;

    pthread_t thread;
    bool running;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    bool stopping;

    struct record observed;
    char observed_renew[40];        /* the observed record's renewTime */
    bool have_observed;
    uint64_t observed_ns;
    json_object *cached;            /* the Lease as last returned by the server, ours while leading */
    atomic_uint_fast64_t renewed_ns;
    atomic_uint_fast64_t terms;
    void (*on_lead)(void *ud);
    void *on_lead_ud;
};

enum fg_err fg_leader_opts_check(const struct fg_leader_opts *o, char *errmsg)
{
    if (!o->lease_namespace || !*o->lease_namespace || !o->lease_name || !*o->lease_name)
        return fg_errmsg(errmsg, FG_E_INVAL, "leader election needs a lease namespace and name");
    if (o->lease_duration_ns < FG_NS_PER_S || o->lease_duration_ns % FG_NS_PER_S)
        return fg_errmsg(errmsg, FG_E_INVAL, "the lease duration must be whole seconds, 1s at least");
    if (o->renew_deadline_ns >= o->lease_duration_ns)
        return fg_errmsg(errmsg, FG_E_INVAL, "the renew deadline must be shorter than the lease duration");
    if (o->retry_period_ns == 0 || (double)o->retry_period_ns * 1.2 > (double)o->renew_deadline_ns)
        return fg_errmsg(errmsg, FG_E_INVAL, "the retry period must be positive and at most the renew deadline / 1.2");
    return FG_OK;
}

static char *default_identity(void)
{
    char host[256] = "";
    const char *pod = getenv("POD_NAME");
    if (pod && *pod)
        snprintf(host, sizeof host, "%s", pod);
    else if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "fracgpu");
    unsigned char r[4] = { 0 };
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        uint64_t t = fg_clock_mono_ns() ^ (uint64_t)getpid();
        memcpy(r, &t, sizeof r);
    }
    return fg_asprintf("%s_%02x%02x%02x%02x", host, r[0], r[1], r[2], r[3]);
}

enum fg_err fg_leader_new(const struct fg_kube_config *cfg, const struct fg_leader_opts *opts, struct fg_leader **out,
                          char *errmsg)
{
    enum fg_err err = fg_leader_opts_check(opts, errmsg);
    if (err)
        return err;
    struct fg_kube_client_opts co = FG_KUBE_CLIENT_OPTS_DEFAULT;
    co.timeout_ms = (unsigned)(opts->renew_deadline_ns / FG_NS_PER_MS);
    co.connect_timeout_ms = co.timeout_ms < co.connect_timeout_ms ? co.timeout_ms : co.connect_timeout_ms;
    co.qps = 0;   /* a handful of requests per retry period: never throttle the lease */
    co.exec_timeout_ms = co.timeout_ms;   /* nor may a credential plugin hold the thread longer */
    struct fg_leader *le = fg_calloc(1, sizeof *le);
    err = fg_kube_client_new(cfg, &co, &le->client, errmsg);
    if (err) {
        free(le);
        return err;
    }
    le->opts = *opts;
    le->ns = fg_strdup(opts->lease_namespace);
    le->name = fg_strdup(opts->lease_name);
    le->identity = opts->identity && *opts->identity ? fg_strdup(opts->identity) : default_identity();
    le->opts.lease_namespace = le->ns;
    le->opts.lease_name = le->name;
    le->opts.identity = le->identity;
    le->lease = fg_asprintf("%s/%s", le->ns, le->name);
    pthread_mutex_init(&le->mu, NULL);
    fg_cond_init_monotonic(&le->wake);
    *out = le;
    return FG_OK;
}

bool fg_leader_is_leading(const struct fg_leader *le)
{
    uint64_t renewed = atomic_load(&le->renewed_ns);
    return renewed && fg_clock_mono_ns() < renewed + le->opts.renew_deadline_ns;
}

const char *fg_leader_identity(const struct fg_leader *le)
{
    return le->identity;
}

const char *fg_leader_lease(const struct fg_leader *le)
{
    return le->lease;
}

uint64_t fg_leader_terms(const struct fg_leader *le)
{
    return atomic_load(&le->terms);
}

/* ---- the Lease record ---- */

static void record_read(json_object *lease, struct record *r)
{
    memset(r, 0, sizeof *r);
    const char *holder = fg_json_get_str(lease, "spec", "holderIdentity", NULL);
    snprintf(r->holder, sizeof r->holder, "%s", holder ? holder : "");
    const char *acquired = fg_json_get_str(lease, "spec", "acquireTime", NULL);
    snprintf(r->acquire_time, sizeof r->acquire_time, "%s", acquired ? acquired : "");
    /* Another writer's duration is believed within a sane range: 1 s to a day. */
    int64_t d = 0;
    if (!fg_json_get_int64(lease, &d, "spec", "leaseDurationSeconds", NULL))
        d = 0;
    r->duration_s = d < 1 ? 1 : d > 86400 ? 86400 : d;
    if (!fg_json_get_int64(lease, &r->transitions, "spec", "leaseTransitions", NULL))
        r->transitions = 0;
}

/* Writes r with renewTime = now into lease's spec (lease modified). */
static void record_write(json_object *lease, const struct record *r)
{
    char now[FG_TIME_MAX];
    fg_time_format_micro(fg_clock_wall_ms(), now);
    json_object *spec = fg_json_ensure_obj(lease, "spec");
    if (r->holder[0])
        fg_json_set_str(spec, "holderIdentity", r->holder);
    else
        json_object_object_del(spec, "holderIdentity");
    json_object_object_add(spec, "leaseDurationSeconds", json_object_new_int64(r->duration_s));
    json_object_object_add(spec, "leaseTransitions", json_object_new_int64(r->transitions));
    fg_json_set_str(spec, "acquireTime", r->acquire_time[0] ? r->acquire_time : now);
    fg_json_set_str(spec, "renewTime", now);
}

/* Notes rec as observed; a changed record restarts the expiry clock. Caller holds mu. */
static void observe(struct fg_leader *le, const struct record *rec, json_object *lease)
{
    const char *renew = fg_json_get_str(lease, "spec", "renewTime", NULL);
    bool changed = !le->have_observed || strcmp(rec->holder, le->observed.holder) ||
                   rec->transitions != le->observed.transitions || rec->duration_s != le->observed.duration_s ||
                   strcmp(renew ? renew : "", le->observed_renew);
    if (changed) {
        le->observed = *rec;
        le->have_observed = true;
        le->observed_ns = fg_clock_mono_ns();
        snprintf(le->observed_renew, sizeof le->observed_renew, "%s", renew ? renew : "");
    }
}

static char *lease_path(struct fg_leader *le, bool named)
{
    return fg_kube_path(&fg_kube_leases, le->ns, named ? le->name : NULL, NULL, NULL);
}

/* Sets the lease as ours after a write that succeeded; sent_ns is when it was sent. */
static void became_or_stayed_leader(struct fg_leader *le, json_object *reply, uint64_t sent_ns)
{
    bool was = fg_leader_is_leading(le);
    struct record rec;
    record_read(reply, &rec);
    pthread_mutex_lock(&le->mu);
    observe(le, &rec, reply);
    if (le->cached)
        json_object_put(le->cached);
    le->cached = json_object_get(reply);
    pthread_mutex_unlock(&le->mu);
    atomic_store(&le->renewed_ns, sent_ns);
    if (!was) {
        atomic_fetch_add(&le->terms, 1);
        fg_log_obj(FG_LOG_INFO, COMPONENT, "Lease", le->ns, le->name, "%s became leader (transitions %lld)",
                   le->identity, (long long)rec.transitions);
        if (le->on_lead)
            le->on_lead(le->on_lead_ud);
    }
}

static void lost(struct fg_leader *le, const char *why)
{
    if (atomic_exchange(&le->renewed_ns, 0) == 0)
        return;
    fg_log_obj(FG_LOG_WARN, COMPONENT, "Lease", le->ns, le->name, "%s stopped leading: %s", le->identity, why);
}

static void drop_cache(struct fg_leader *le)
{
    pthread_mutex_lock(&le->mu);
    if (le->cached)
        json_object_put(le->cached);
    le->cached = NULL;
    pthread_mutex_unlock(&le->mu);
}

/* A leader's renewal: one PUT of the cached Lease. FG_OK when renewed. */
static enum fg_err renew(struct fg_leader *le)
{
    pthread_mutex_lock(&le->mu);
    json_object *lease = le->cached ? json_tokener_parse(fg_json_text(le->cached, NULL)) : NULL;
    pthread_mutex_unlock(&le->mu);
    if (!lease)
        return FG_E_NOT_FOUND_LOCAL;
    struct record rec;
    record_read(lease, &rec);
    rec.duration_s = (int64_t)(le->opts.lease_duration_ns / FG_NS_PER_S);
    record_write(lease, &rec);
    uint64_t sent = fg_clock_mono_ns();
    char *path = lease_path(le, true);
    json_object *reply = NULL;
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_update(le->client, path, lease, &reply, &st);
    free(path);
    json_object_put(lease);
    if (!err) {
        became_or_stayed_leader(le, reply, sent);
    } else {
        /* The next attempt reads the Lease afresh: it may have changed hands, or only its version. */
        fg_log_obj(FG_LOG_DEBUG, COMPONENT, "Lease", le->ns, le->name, "renewal failed: %s: %s", fg_err_str(err),
                   st.message ? st.message : "");
        drop_cache(le);
    }
    json_object_put(reply);
    fg_kube_status_cleanup(&st);
    return err;
}

static json_object *new_lease(struct fg_leader *le)
{
    json_object *lease = json_object_new_object();
    json_object_object_add(lease, "apiVersion", json_object_new_string("coordination.k8s.io/v1"));
    json_object_object_add(lease, "kind", json_object_new_string("Lease"));
    json_object *meta = fg_json_ensure_obj(lease, "metadata");
    fg_json_set_str(meta, "name", le->name);
    fg_json_set_str(meta, "namespace", le->ns);
    return lease;
}

/*
 * A candidate's attempt: read the Lease (create it when absent), take it over when free or expired.
 * *wait_ns gets how long to wait before the next attempt when the lease is held by another.
 */
static void try_acquire(struct fg_leader *le, uint64_t *wait_ns)
{
    char *path = lease_path(le, true);
    json_object *lease = NULL;
    struct fg_kube_status st = { 0 };
    uint64_t sent = fg_clock_mono_ns();
    enum fg_err err = fg_kube_get(le->client, path, &lease, &st);
    struct record rec = { 0 };
    if (err == FG_E_KUBE_NOT_FOUND) {
        fg_kube_status_cleanup(&st);
        json_object_put(lease);
        lease = new_lease(le);
        snprintf(rec.holder, sizeof rec.holder, "%s", le->identity);
        rec.duration_s = (int64_t)(le->opts.lease_duration_ns / FG_NS_PER_S);
        record_write(lease, &rec);
        char *collection = lease_path(le, false);
        json_object *reply = NULL;
        sent = fg_clock_mono_ns();
        err = fg_kube_create(le->client, collection, lease, &reply, &st);
        free(collection);
        if (!err)
            became_or_stayed_leader(le, reply, sent);
        json_object_put(reply);
        goto out;
    }
    if (err)
        goto out;

    record_read(lease, &rec);
    pthread_mutex_lock(&le->mu);
    observe(le, &rec, lease);
    uint64_t expires = le->observed_ns + (uint64_t)rec.duration_s * FG_NS_PER_S;
    pthread_mutex_unlock(&le->mu);
    bool ours = !strcmp(rec.holder, le->identity);
    uint64_t now = fg_clock_mono_ns();
    if (rec.holder[0] && !ours && now < expires) {
        if (expires - now < *wait_ns)
            *wait_ns = expires - now;
        lost(le, "another replica holds the lease");
        goto out;
    }
    if (!ours) {
        snprintf(rec.holder, sizeof rec.holder, "%s", le->identity);
        rec.acquire_time[0] = '\0';
        rec.transitions++;
    }
    rec.duration_s = (int64_t)(le->opts.lease_duration_ns / FG_NS_PER_S);
    record_write(lease, &rec);
    json_object *reply = NULL;
    sent = fg_clock_mono_ns();
    err = fg_kube_update(le->client, path, lease, &reply, &st);
    if (!err)
        became_or_stayed_leader(le, reply, sent);
    json_object_put(reply);
out:
    if (err && err != FG_E_KUBE_CONFLICT && err != FG_E_KUBE_ALREADY_EXISTS)
        fg_log_obj(FG_LOG_WARN, COMPONENT, "Lease", le->ns, le->name, "cannot acquire: %s: %s", fg_err_str(err),
                   st.message ? st.message : "");
    fg_kube_status_cleanup(&st);
    json_object_put(lease);
    free(path);
}

/* On a clean stop: empty the holder so that a standby takes over on its next attempt. */
static void release(struct fg_leader *le)
{
    pthread_mutex_lock(&le->mu);
    json_object *lease = le->cached ? json_tokener_parse(fg_json_text(le->cached, NULL)) : NULL;
    pthread_mutex_unlock(&le->mu);
    if (!lease)
        return;
    struct record rec;
    record_read(lease, &rec);
    rec.holder[0] = '\0';
    rec.duration_s = 1;
    rec.acquire_time[0] = '\0';
    record_write(lease, &rec);
    atomic_store(&le->renewed_ns, 0);   /* from here on this replica does not lead, whatever the reply */
    char *path = lease_path(le, true);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_update(le->client, path, lease, NULL, &st);
    if (err)
        fg_log_obj(FG_LOG_WARN, COMPONENT, "Lease", le->ns, le->name, "cannot release the lease: %s: %s",
                   fg_err_str(err), st.message ? st.message : "");
    else
        fg_log_obj(FG_LOG_INFO, COMPONENT, "Lease", le->ns, le->name, "%s released the lease", le->identity);
    fg_kube_status_cleanup(&st);
    free(path);
    json_object_put(lease);
    drop_cache(le);
}

/* Waits up to wait_ns or until stop; returns true when stopping. */
static bool pause_for(struct fg_leader *le, uint64_t wait_ns)
{
    uint64_t until = fg_clock_real_ns() + wait_ns;
    pthread_mutex_lock(&le->mu);
    for (uint64_t now; !le->stopping && (now = fg_clock_real_ns()) < until;)
        fg_cond_wait_ns(&le->wake, &le->mu, until - now);
    bool stopping = le->stopping;
    pthread_mutex_unlock(&le->mu);
    return stopping;
}

static void *election_main(void *arg)
{
    struct fg_leader *le = arg;
    fg_log_obj(FG_LOG_INFO, COMPONENT, "Lease", le->ns, le->name, "%s is a candidate", le->identity);
    for (;;) {
        uint64_t wait_ns = le->opts.retry_period_ns;
        if (atomic_load(&le->renewed_ns) && !fg_leader_is_leading(le))
            lost(le, "could not renew within the renew deadline");
        pthread_mutex_lock(&le->mu);
        bool cached = le->cached != NULL;
        pthread_mutex_unlock(&le->mu);
        if (fg_leader_is_leading(le) && cached)
            (void)renew(le);    /* a failure is retried after one period, through a fresh read */
        else
            try_acquire(le, &wait_ns);
        if (wait_ns == 0)
            wait_ns = FG_NS_PER_MS;
        if (pause_for(le, wait_ns))
            return NULL;
    }
}

void fg_leader_on_lead(struct fg_leader *le, void (*fn)(void *ud), void *ud)
{
    le->on_lead = fn;
    le->on_lead_ud = ud;
}

enum fg_err fg_leader_start(struct fg_leader *le)
{
    if (le->running || le->stopping)
        return FG_E_BUSY;
    if (pthread_create(&le->thread, NULL, election_main, le) != 0)
        return FG_E_INTERNAL;
    le->running = true;
    return FG_OK;
}

void fg_leader_stop(struct fg_leader *le)
{
    if (!le->running)
        return;
    pthread_mutex_lock(&le->mu);
    le->stopping = true;
    pthread_cond_signal(&le->wake);
    pthread_mutex_unlock(&le->mu);
    pthread_join(le->thread, NULL);
    le->running = false;
    if (fg_leader_is_leading(le))
        release(le);
    atomic_store(&le->renewed_ns, 0);
}

void fg_leader_free(struct fg_leader *le)
{
    if (!le)
        return;
    fg_leader_stop(le);
    drop_cache(le);
    fg_kube_client_free(le->client);
    pthread_cond_destroy(&le->wake);
    pthread_mutex_destroy(&le->mu);
    free(le->identity);
    free(le->lease);
    free(le->name);
    free(le->ns);
    free(le);
}
