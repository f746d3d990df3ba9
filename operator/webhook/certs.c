/* The webhook's own CA and serving certificate, and their rotation (certs.h). */
#include "operator/webhook/certs.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/mem.h"
#include "base/pki.h"

#define CA_NAME "fracgpu-webhook-ca"
#define SERVING_NAME "fracgpu-webhook"

struct cert {
    char *pem;
    int64_t issued, expires;    /* wall ms */
};

struct view {
    struct cert cas[8];         /* the trusted CAs still valid, ca.crt's order; [0] signs when `signing` */
    size_t n_cas;
    bool signing;               /* ca.key belongs to cas[0] */
    struct cert tls;            /* pem NULL when missing or unusable */
    int signer;                 /* the index in cas of the CA that signed tls; -1 when none */
};

static bool read_cert(const char *pem, struct cert *out)
{
    int64_t from, to;
    if (!pem || fg_pki_validity(pem, &from, &to, NULL) != FG_OK)
        return false;
    out->pem = fg_strdup(pem);
    out->issued = from + FG_CERT_BACKDATE_MS;
    out->expires = to;
    return true;
}

/* 2/3 of the way through its life: time to replace it. */
static int64_t renew_at(const struct cert *c)
{
    return c->issued + (c->expires - c->issued) * 2 / 3;
}

static void view_read(const struct fg_cert_state *cur, const struct fg_cert_policy *p, int64_t now, struct view *v)
{
    memset(v, 0, sizeof(*v));
    v->signer = -1;
    size_t n = 0;
    char **pems = fg_pki_split(cur->ca_crt, &n);
    for (size_t i = 0; i < n; i++) {
        struct cert c;
        if (v->n_cas < sizeof(v->cas) / sizeof(*v->cas) && read_cert(pems[i], &c)) {
            if (c.expires > now)
                v->cas[v->n_cas++] = c;
            else
                free(c.pem);
        }
        free(pems[i]);
    }
    free(pems);
    struct fg_pki_pair ca = { v->n_cas ? v->cas[0].pem : NULL, cur->ca_key };
    v->signing = v->n_cas && fg_pki_pair_matches(&ca);
    struct fg_pki_pair tls = { cur->tls_crt, cur->tls_key };
    if (!fg_pki_pair_matches(&tls) || !read_cert(cur->tls_crt, &v->tls))
        return;
    for (size_t i = 0; i < v->n_cas && v->signer < 0; i++)
        if (fg_pki_verifies(v->tls.pem, v->cas[i].pem, p->dns[0], now))
            v->signer = (int)i;
    if (v->signer < 0)
        FG_FREE(v->tls.pem);
}

static void view_cleanup(struct view *v)
{
    for (size_t i = 0; i < v->n_cas; i++)
        free(v->cas[i].pem);
    free(v->tls.pem);
}

/* Whether the PEM bundle holds certificate pem. */
static bool bundle_has(const char *bundle, const char *pem)
{
    size_t n = 0;
    char **pems = fg_pki_split(bundle, &n);
    bool found = false;
    for (size_t i = 0; i < n; i++) {
        found = found || !strcmp(pems[i], pem);
        free(pems[i]);
    }
    free(pems);
    return found;
}

static enum fg_err issue(const struct fg_cert_policy *p, const struct fg_pki_pair *ca, int64_t now,
                         struct fg_pki_pair *out, char *errmsg)
{
    struct fg_pki_request req = {
        .common_name = ca ? SERVING_NAME : CA_NAME,
        .dns = ca ? p->dns : NULL,
        .is_ca = !ca,
        .not_before_ms = now - FG_CERT_BACKDATE_MS,
        .not_after_ms = now + (ca ? p->serving_lifetime_ms : p->ca_lifetime_ms),
    };
    return fg_pki_issue(&req, ca, out, errmsg);
}

/* ca.crt: `first` (NULL: none), then the first `keep` CAs of v. */
static char *bundle_of(const struct view *v, const char *first, size_t keep)
{
    struct fg_buf b = FG_BUF_INIT;
    enum fg_err err = first ? fg_buf_puts(&b, first) : FG_OK;
    for (size_t i = 0; i < keep && i < v->n_cas; i++)
        err = err ? err : fg_buf_puts(&b, v->cas[i].pem);
    if (err != FG_OK)
        abort(); /* fg_buf fails only past a limit, and this one has none */
    return fg_buf_take(&b);
}

static void replace(char **field, char *value)
{
    free(*field);
    *field = value;
}

/* The next state signs with the new CA `ca` (taken), trusted before every CA of v. */
static void take_ca(struct fg_cert_state *next, const struct view *v, struct fg_pki_pair *ca)
{
    replace(&next->ca_crt, bundle_of(v, ca->cert_pem, v->n_cas));
    replace(&next->ca_key, ca->key_pem);
    ca->key_pem = NULL;
    fg_pki_pair_cleanup(ca);
}

/* The next state serves tls (taken). */
static void take_tls(struct fg_cert_state *next, struct fg_pki_pair *tls)
{
    replace(&next->tls_crt, tls->cert_pem);
    replace(&next->tls_key, tls->key_pem);
    *tls = (struct fg_pki_pair){ 0 };
}

static char *dup_or_null(const char *s)
{
    return s ? fg_strdup(s) : NULL;
}

static bool same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static int64_t earliest(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

enum fg_err fg_cert_policy_check(const struct fg_cert_policy *p, char *errmsg)
{
    if (p->ca_lifetime_ms <= 0 || p->serving_lifetime_ms <= 0 || p->serving_lifetime_ms > p->ca_lifetime_ms / 3)
        return fg_errmsg(errmsg, FG_E_INVAL, "the serving certificate's lifetime must be positive and at most a third "
                                             "of the CA's, so that a CA outlives what it signs");
    if (p->switch_delay_ms < 0 || p->switch_delay_ms >= p->serving_lifetime_ms / 3)
        return fg_errmsg(errmsg, FG_E_INVAL, "the switch delay must be at least 0 and under a third of the serving "
                                             "certificate's lifetime");
    if (!p->dns || !p->dns[0])
        return fg_errmsg(errmsg, FG_E_INVAL, "the serving certificate needs at least one DNS name");
    return FG_OK;
}

/* A new serving certificate from the signing CA into next, for `action`. */
static enum fg_err reissue(const struct fg_cert_policy *p, const struct fg_pki_pair *signing, int64_t now,
                           struct fg_cert_plan *out, const char *action, char *errmsg)
{
    struct fg_pki_pair tls;
    enum fg_err err = issue(p, signing, now, &tls, errmsg);
    if (err == FG_OK) {
        take_tls(&out->next, &tls);
        out->action = action;
    }
    return err;
}

/* One step (see certs.h) from view v into out->next, which holds the current state on entry. */
static enum fg_err step(const struct view *v, const char *webhook_bundle, const struct fg_cert_policy *p, int64_t now,
                        struct fg_cert_plan *out, char *errmsg)
{
    struct fg_pki_pair ca;
    enum fg_err err;
    if (!v->signing) {
        struct fg_pki_pair tls;
        if ((err = issue(p, NULL, now, &ca, errmsg)) != FG_OK)
            return err;
        if ((err = issue(p, &ca, now, &tls, errmsg)) != FG_OK) {
            fg_pki_pair_cleanup(&ca);
            return err;
        }
        take_ca(&out->next, v, &ca);
        take_tls(&out->next, &tls);
        out->action = "IssuedCA";
        return FG_OK;
    }
    struct fg_pki_pair signing = { v->cas[0].pem, out->next.ca_key };
    if (!v->tls.pem)
        return reissue(p, &signing, now, out, "IssuedServing", errmsg);
    if (v->signer > 0) { /* mid-switch: the new CA signs once kube-apiserver has trusted it for a while */
        int64_t switch_at = v->cas[0].issued + p->switch_delay_ms;
        if (now >= switch_at && bundle_has(webhook_bundle, v->cas[0].pem))
            return reissue(p, &signing, now, out, "SwitchedServing", errmsg);
        out->recheck_ms = now < switch_at ? switch_at : now + 1000; /* or when the configuration changes */
        return FG_OK;
    }
    if (now >= renew_at(&v->tls))
        return reissue(p, &signing, now, out, "RenewedServing", errmsg);
    if (now >= renew_at(&v->cas[0])) {
        if ((err = issue(p, NULL, now, &ca, errmsg)) != FG_OK)
            return err;
        take_ca(&out->next, v, &ca);
        out->action = "RotatingCA";
        return FG_OK;
    }
    int64_t retire_at = v->tls.issued + p->switch_delay_ms;
    if (v->n_cas > 1 && now >= retire_at) {
        replace(&out->next.ca_crt, bundle_of(v, NULL, 1));
        out->action = "RetiredCA";
        return FG_OK;
    }
    char *tidy = bundle_of(v, NULL, v->n_cas); /* expired CAs and stray text left out */
    if (!same(tidy, out->next.ca_crt)) {
        replace(&out->next.ca_crt, tidy);
        out->action = "DroppedExpiredCA";
        return FG_OK;
    }
    free(tidy);
    out->recheck_ms = earliest(renew_at(&v->tls), renew_at(&v->cas[0]));
    if (v->n_cas > 1)
        out->recheck_ms = earliest(out->recheck_ms, retire_at);
    return FG_OK;
}

enum fg_err fg_cert_plan(const struct fg_cert_state *cur, const char *webhook_bundle, const struct fg_cert_policy *p,
                         int64_t now_ms, struct fg_cert_plan *out, char *errmsg)
{
    memset(out, 0, sizeof(*out));
    enum fg_err err = fg_cert_policy_check(p, errmsg);
    if (err != FG_OK)
        return err;
    out->next = (struct fg_cert_state){ dup_or_null(cur->ca_crt), dup_or_null(cur->ca_key), dup_or_null(cur->tls_crt),
                                        dup_or_null(cur->tls_key) };
    struct view v;
    view_read(cur, p, now_ms, &v);
    err = step(&v, webhook_bundle, p, now_ms, out, errmsg);
    view_cleanup(&v);
    if (err != FG_OK) {
        fg_cert_plan_cleanup(out);
        return err;
    }
    out->changed = !same(cur->ca_crt, out->next.ca_crt) || !same(cur->ca_key, out->next.ca_key) ||
                   !same(cur->tls_crt, out->next.tls_crt) || !same(cur->tls_key, out->next.tls_key);
    if (out->changed && !out->recheck_ms)
        out->recheck_ms = now_ms; /* the next step may be due at once */
    return FG_OK;
}

void fg_cert_state_cleanup(struct fg_cert_state *s)
{
    free(s->ca_crt);
    free(s->ca_key);
    free(s->tls_crt);
    free(s->tls_key);
    memset(s, 0, sizeof(*s));
}

void fg_cert_plan_cleanup(struct fg_cert_plan *plan)
{
    fg_cert_state_cleanup(&plan->next);
    memset(plan, 0, sizeof(*plan));
}
