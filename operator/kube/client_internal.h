/*
 * client_internal — what client.c, client_easy.c, list_page.c and the loop share inside the module.
 *
 * The client struct is defined here so the loop can read its options; nothing outside
 * operator/kube includes this header.
 */
#ifndef FG_KUBE_CLIENT_INTERNAL_H
#define FG_KUBE_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>

#include "operator/kube/client.h"
#include "base/tokenbucket.h"
#include "operator/kube/exec_internal.h"

#define FG__KUBE_POOL_MAX 16

struct fg_kube_client {
    struct fg_kube_config cfg;          /* deep copy */
    struct fg_kube_client_opts opts;    /* user_agent points at agent */
    char *agent;
    char *base_url;                     /* server, host replaced by tls_server_name when set */
    struct curl_slist *connect_to;      /* maps tls_server_name back to the real host, or NULL */
    CURLSH *share;                      /* DNS cache and TLS sessions */
    pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
    struct fg_token_bucket rl;

    pthread_mutex_t pool_lock;          /* guards pool/npool */
    CURL *pool[FG__KUBE_POOL_MAX];
    size_t npool;

    pthread_mutex_t token_lock;         /* guards the token file cache */
    char *file_token;
    struct timespec token_mtime;
    off_t token_size;
    ino_t token_ino;

    struct fg__kube_creds *creds;       /* the exec plugin's credential cache, or NULL */
};

/*
 * fg_kube_client_prepare_easy with the exec credential's terms. `wait` false (the loop) returns
 * FG_E_BUSY instead of waiting for the plugin, *ticket keeping the caller's place (see
 * fg__kube_creds_get); *gen is the generation of the exec credential sent (0: none), which a 401
 * hands to fg__kube_creds_invalidate before the one retry.
 */
enum fg_err fg__kube_prepare_easy(struct fg_kube_client *c, CURL *easy, const char *path, bool wait,
                                  uint64_t *ticket, uint64_t *gen, struct curl_slist **headers,
                                  char *errmsg) FG_MUST_USE;

/* Sets the method and body on a prepared handle (body is borrowed for the transfer). */
void fg__kube_easy_set_body(CURL *easy, const char *method, const char *body, size_t len);

/* Maps a failed transfer to an error with a message naming the request; fills st when not NULL. */
enum fg_err fg__kube_transfer_error(CURLcode rc, const char *curl_errbuf, bool too_big, size_t max_bytes,
                                    const char *method, const char *path, struct fg_kube_status *st);

/* The Retry-After header of a finished transfer, or NULL. */
const char *fg__kube_retry_after(CURL *easy);

/* The query of one list page: selectors, limit, resourceVersion (first page only) and continue. */
char *fg__kube_list_path(const struct fg_kube_resource *res, const char *ns, const struct fg_kube_list_opts *opts,
                         const char *cont);

/* Parses one list page, calls on_item per item, and returns the page's resourceVersion and
 * continue token (*cont NULL on the last page); the caller frees both. */
enum fg_err fg__kube_list_page(const char *body, size_t len, size_t max_bytes, fg_kube_item_fn *on_item, void *ud,
                               char **resource_version, char **cont, char *errmsg) FG_MUST_USE;

#endif
