/*
 * client_easy — configuring one curl easy handle for a request, and naming transfer failures.
 *
 * fg__kube_prepare_easy is the single place where a request gets its URL, TLS material,
 * credentials and standard headers; both the synchronous client and the loop use it. The bearer
 * token comes from cfg.token, from cfg.token_file, which is re-read whenever its mtime, size or inode
 * changes (rotated service-account tokens), or from the exec credential cache (exec_cache.c), whose
 * client certificate, when the plugin issued one, replaces the kubeconfig's.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/mem.h"
#include "operator/kube/client_internal.h"

/* "Authorization: Bearer ..." into *header (caller frees), or NULL when no token is configured. A
 * token file that cannot be read keeps the last token that could, as client-go does. */
static enum fg_err auth_header(struct fg_kube_client *c, char **header, char *errmsg)
{
    *header = NULL;
    if (!c->cfg.token_file) {
        if (c->cfg.token)
            *header = fg_asprintf("Authorization: Bearer %s", c->cfg.token);
        return FG_OK;
    }
    enum fg_err err = FG_OK;
    pthread_mutex_lock(&c->token_lock);
    struct stat sb;
    if (stat(c->cfg.token_file, &sb) != 0) {
        if (!c->file_token)
            err = fg_errmsg(errmsg, FG_E_IO, "token file %s: %s", c->cfg.token_file, strerror(errno));
    } else if (!c->file_token || sb.st_mtim.tv_sec != c->token_mtime.tv_sec ||
               sb.st_mtim.tv_nsec != c->token_mtime.tv_nsec || sb.st_size != c->token_size ||
               sb.st_ino != c->token_ino) {
        struct fg_buf b;
        fg_buf_init(&b, 64 * 1024);
        char why[FG_ERRMSG_MAX];
        if (fg_buf_read_file(&b, c->cfg.token_file, why) == FG_OK) {
            while (b.len > 0 && strchr(" \t\r\n", b.data[b.len - 1]))
                b.data[--b.len] = '\0';
            free(c->file_token);
            c->file_token = fg_buf_take(&b);
            c->token_mtime = sb.st_mtim;
            c->token_size = sb.st_size;
            c->token_ino = sb.st_ino;
        } else if (!c->file_token) {
            err = fg_errmsg(errmsg, FG_E_IO, "token file: %s", why);
        }
        fg_buf_cleanup(&b);
    }
    if (!err && c->file_token && c->file_token[0])
        *header = fg_asprintf("Authorization: Bearer %s", c->file_token);
    else if (!err && c->cfg.token)
        *header = fg_asprintf("Authorization: Bearer %s", c->cfg.token);
    pthread_mutex_unlock(&c->token_lock);
    return err;
}

static void set_blob(CURL *easy, CURLoption opt, const char *pem)
{
    struct curl_blob blob = { .data = (void *)pem, .len = strlen(pem), .flags = CURL_BLOB_COPY };
    curl_easy_setopt(easy, opt, &blob);
}

enum fg_err fg_kube_client_prepare_easy(struct fg_kube_client *c, CURL *easy, const char *path,
                                        struct curl_slist **headers, char *errmsg)
{
    uint64_t ticket = 0, gen;
    return fg__kube_prepare_easy(c, easy, path, true, &ticket, &gen, headers, errmsg);
}

enum fg_err fg__kube_prepare_easy(struct fg_kube_client *c, CURL *easy, const char *path, bool wait,
                                  uint64_t *ticket, uint64_t *gen, struct curl_slist **headers, char *errmsg)
{
    char *auth = NULL;
    struct fg__kube_cred exec = { 0 };
    *gen = 0;
    enum fg_err err = c->creds ? fg__kube_creds_get(c->creds, wait, ticket, &exec, gen, errmsg)
                               : auth_header(c, &auth, errmsg);
    if (err)
        return err;
    if (exec.token)
        auth = fg_asprintf("Authorization: Bearer %s", exec.token);
    const char *cert_pem = exec.cert_pem ? exec.cert_pem : c->cfg.cert_pem;
    const char *key_pem = exec.cert_pem ? exec.key_pem : c->cfg.key_pem;
    char *url = fg_asprintf("%s%s", c->base_url, path);
    curl_easy_setopt(easy, CURLOPT_URL, url);   /* libcurl copies strings */
    free(url);
    curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_SHARE, c->share);
    curl_easy_setopt(easy, CURLOPT_USERAGENT, c->agent);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, (long)c->opts.connect_timeout_ms);
    if (c->connect_to)
        curl_easy_setopt(easy, CURLOPT_CONNECT_TO, c->connect_to);
    if (c->cfg.ca_pem)
        set_blob(easy, CURLOPT_CAINFO_BLOB, c->cfg.ca_pem);
    if (cert_pem) {
        set_blob(easy, CURLOPT_SSLCERT_BLOB, cert_pem);
        curl_easy_setopt(easy, CURLOPT_SSLCERTTYPE, "PEM");
        set_blob(easy, CURLOPT_SSLKEY_BLOB, key_pem);
        curl_easy_setopt(easy, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (c->cfg.insecure_skip_tls_verify) {
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    *headers = curl_slist_append(*headers, "Accept: application/json");
    *headers = curl_slist_append(*headers, "Expect:");
    if (auth) {
        *headers = curl_slist_append(*headers, auth);
        explicit_bzero(auth, strlen(auth));
        free(auth);
    }
    fg__kube_cred_cleanup(&exec);
    return FG_OK;
}

void fg__kube_easy_set_body(CURL *easy, const char *method, const char *body, size_t len)
{
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
        return;
    }
    if (strcmp(method, "POST") != 0)
        curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, method);
    if (body || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0) {
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body ? body : "");
    }
}

enum fg_err fg__kube_transfer_error(CURLcode rc, const char *curl_errbuf, bool too_big, size_t max_bytes,
                                    const char *method, const char *path, struct fg_kube_status *st)
{
    enum fg_err err;
    char *msg;
    const char *why = curl_errbuf && curl_errbuf[0] ? curl_errbuf : curl_easy_strerror(rc);
    if (too_big) {
        err = FG_E_TOO_BIG;
        msg = fg_asprintf("%s %s: reply exceeds %zu bytes", method, path, max_bytes);
    } else {
        switch (rc) {
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
        case CURLE_COULDNT_CONNECT:
        case CURLE_SEND_ERROR:
            err = FG_E_CONNECT;
            break;
        case CURLE_OPERATION_TIMEDOUT:
            err = FG_E_TIMEOUT;
            break;
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_ISSUER_ERROR:
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        case CURLE_SSL_INVALIDCERTSTATUS:
        case CURLE_SSL_CRL_BADFILE:
        case CURLE_SSL_ENGINE_INITFAILED:
        case CURLE_USE_SSL_FAILED:
            err = FG_E_TLS;
            break;
        case CURLE_GOT_NOTHING:
        case CURLE_RECV_ERROR:
        case CURLE_PARTIAL_FILE:
            err = FG_E_CLOSED;
            break;
        default:
            err = FG_E_IO;
            break;
        }
        msg = fg_asprintf("%s %s: %s", method, path, why);
    }
    if (st) {
        memset(st, 0, sizeof *st);
        st->err = err;
        st->message = msg;
    } else {
        free(msg);
    }
    return err;
}

const char *fg__kube_retry_after(CURL *easy)
{
    struct curl_header *h = NULL;
    if (curl_easy_header(easy, "Retry-After", 0, CURLH_HEADER, -1, &h) != CURLHE_OK || !h)
        return NULL;
    return h->value;
}
