/*
 * client_setup — building and freeing the client.
 *
 * fg_kube_client_new deep-copies the config, rewrites the server URL when tls-server-name is set
 * (the URL names the TLS name, CURLOPT_CONNECT_TO sends the connection to the real host), and makes
 * the curl share handle, and the exec credential cache when the user is an exec plugin (exec_cache.c;
 * its refresher thread is joined by fg_kube_client_free). The share holds the DNS cache and TLS sessions only: libcurl does not
 * support one connection cache used by concurrent threads (CURLSHOPT_SHARE documentation), so live
 * connections are reused through the pool of easy handles instead (client.c). The client owns
 * everything it holds; fg_kube_client_free releases it all, pooled handles included.
 *
 * Writing to a connection the server has closed raises SIGPIPE from inside OpenSSL, and libcurl's
 * own guard is off under CURLOPT_NOSIGNAL (required with threads). The first client therefore sets
 * SIGPIPE to ignored, unless the program already installed its own handler; write errors then
 * arrive as EPIPE and map to FG_E_CLOSED like any other dropped connection.
 */
#include <curl/curl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "operator/kube/internal.h"
#include "operator/kube/client_internal.h"

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ud)
{
    (void)h;
    (void)access;
    struct fg_kube_client *c = ud;
    pthread_mutex_lock(&c->share_locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ud)
{
    (void)h;
    struct fg_kube_client *c = ud;
    pthread_mutex_unlock(&c->share_locks[data]);
}

/* base_url and connect_to from the server URL and tls_server_name. */
static enum fg_err resolve_server(struct fg_kube_client *c, char *errmsg)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL;
    enum fg_err err = FG_OK;
    if (!u)
        abort();
    if (curl_url_set(u, CURLUPART_URL, c->cfg.server, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        (strcmp(scheme, "https") != 0 && strcmp(scheme, "http") != 0) ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
        err = fg_errmsg(errmsg, FG_E_INVAL, "server \"%.200s\" is not an http(s) URL", c->cfg.server);
        goto out_free;
    }
    if (!c->cfg.tls_server_name) {
        c->base_url = fg_strdup(c->cfg.server);
        goto out_free;
    }
    char *url = NULL;
    if (curl_url_set(u, CURLUPART_HOST, c->cfg.tls_server_name, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK) {
        err = fg_errmsg(errmsg, FG_E_INVAL, "tls-server-name \"%.200s\" is not a host name", c->cfg.tls_server_name);
        goto out_free;
    }
    c->base_url = fg_strdup(url);
    curl_free(url);
    size_t n = strlen(c->base_url);
    while (n > 0 && c->base_url[n - 1] == '/')
        c->base_url[--n] = '\0';
    char *map = fg_asprintf("%s:%s:%s:%s", c->cfg.tls_server_name, port, host, port);
    c->connect_to = curl_slist_append(NULL, map);
    free(map);
out_free:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return err;
}

static void ignore_sigpipe(void)
{
    struct sigaction sa;
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) {
        sa.sa_handler = SIG_IGN;
        sigaction(SIGPIPE, &sa, NULL);
    }
}

enum fg_err fg_kube_client_new(const struct fg_kube_config *cfg, const struct fg_kube_client_opts *opts,
                               struct fg_kube_client **out, char *errmsg)
{
    static const struct fg_kube_client_opts defaults = FG_KUBE_CLIENT_OPTS_DEFAULT;
    *out = NULL;
    if (!cfg || !cfg->server || !cfg->server[0])
        return fg_errmsg(errmsg, FG_E_INVAL, "the configuration has no server");
    if (!cfg->cert_pem != !cfg->key_pem)
        return fg_errmsg(errmsg, FG_E_INVAL, "a client certificate needs a client key and the other way round");
    if (cfg->exec && (!cfg->exec->command || !cfg->exec->command[0] || !cfg->exec->api_version))
        return fg_errmsg(errmsg, FG_E_INVAL, "an exec credential plugin needs a command and an apiVersion");
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, ignore_sigpipe);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct fg_kube_client *c = fg_calloc(1, sizeof *c);
    c->cfg = (struct fg_kube_config){
        .server = fg_strdup(cfg->server), .ca_pem = fg__kube_dup_opt(cfg->ca_pem), .cert_pem = fg__kube_dup_opt(cfg->cert_pem),
        .key_pem = fg__kube_dup_opt(cfg->key_pem), .token = fg__kube_dup_opt(cfg->token), .token_file = fg__kube_dup_opt(cfg->token_file),
        .exec = fg_kube_exec_dup(cfg->exec),
        .tls_server_name = fg__kube_dup_opt(cfg->tls_server_name), .insecure_skip_tls_verify = cfg->insecure_skip_tls_verify,
        .namespace = fg_strdup(cfg->namespace ? cfg->namespace : "default"),
    };
    c->opts = opts ? *opts : defaults;
    c->agent = fg_strdup(c->opts.user_agent ? c->opts.user_agent : defaults.user_agent);
    c->opts.user_agent = c->agent;
    if (c->opts.max_body_bytes == 0)
        c->opts.max_body_bytes = defaults.max_body_bytes;
    if (c->opts.exec_timeout_ms == 0)
        c->opts.exec_timeout_ms = defaults.exec_timeout_ms;
    for (size_t i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&c->share_locks[i], NULL);
    pthread_mutex_init(&c->pool_lock, NULL);
    pthread_mutex_init(&c->token_lock, NULL);
    fg_token_bucket_init(&c->rl, c->opts.qps, c->opts.burst);
    c->share = curl_share_init();
    if (!c->share)
        abort();
    curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    enum fg_err err = resolve_server(c, errmsg);
    if (err) {
        fg_kube_client_free(c);
        return err;
    }
    if (c->cfg.exec && !c->cfg.token && !c->cfg.token_file)   /* a static token wins, as in client-go */
        c->creds = fg__kube_creds_new(&c->cfg, c->opts.exec_timeout_ms);
    *out = c;
    return FG_OK;
}

void fg_kube_client_free(struct fg_kube_client *c)
{
    if (!c)
        return;
    fg__kube_creds_free(c->creds);
    for (size_t i = 0; i < c->npool; i++)
        curl_easy_cleanup(c->pool[i]);
    curl_share_cleanup(c->share);
    curl_slist_free_all(c->connect_to);
    fg_token_bucket_cleanup(&c->rl);
    for (size_t i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&c->share_locks[i]);
    pthread_mutex_destroy(&c->pool_lock);
    pthread_mutex_destroy(&c->token_lock);
    free(c->file_token);
    free(c->base_url);
    free(c->agent);
    fg_kube_config_cleanup(&c->cfg);
    free(c);
}

const struct fg_kube_config *fg_kube_client_config(const struct fg_kube_client *c)
{
    return &c->cfg;
}

const char *fg_kube_patch_content_type(enum fg_kube_patch_type t)
{
    switch (t) {
    case FG_KUBE_PATCH_MERGE: return "application/merge-patch+json";
    case FG_KUBE_PATCH_STRATEGIC: return "application/strategic-merge-patch+json";
    case FG_KUBE_PATCH_JSON: return "application/json-patch+json";
    }
    return "application/merge-patch+json";
}

unsigned long long fg_kube_client_ratelimit_delay_ns(struct fg_kube_client *c)
{
    return fg_token_bucket_try_take(&c->rl);
}
