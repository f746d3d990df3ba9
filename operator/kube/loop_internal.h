/*
 * loop_internal — what loop.c (thread, queue, curl/libevent glue) and loop_call.c (the requests,
 * lists and watches) share. Module-internal.
 */
#ifndef FG_KUBE_LOOP_INTERNAL_H
#define FG_KUBE_LOOP_INTERNAL_H

#include <curl/curl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>

#include <event2/util.h>

#include "base/buf.h"
#include "operator/kube/loop.h"

#define FG__KUBE_WATCH_ERROR_BODY_MAX (64u * 1024)

struct event;
struct fg__kube_queued;

struct fg_kube_loop {
    struct fg_kube_client *client;
    struct event_base *base;
    CURLM *multi;
    struct event *curl_timer;
    struct event *wake;
    pthread_t thread;
    pthread_t tid;                     /* set by the loop thread itself before start returns */
    sem_t ready;
    bool started, stopped;
    int in_curl;                       /* >0 while libcurl is on the stack: no multi calls then */
    pthread_mutex_t queue_lock;
    struct fg__kube_queued *queue_head, *queue_tail;
    struct fg_kube_call *calls;        /* every live call (doubly linked) */
    struct fg_kube_call *dead;         /* cancelled inside libcurl, freed once it returns */
};

enum fg__kube_call_kind { CALL_REQUEST, CALL_LIST, CALL_WATCH };

struct fg_kube_call {
    struct fg_kube_loop *loop;
    enum fg__kube_call_kind kind;
    CURL *easy;
    struct curl_slist *headers;
    struct event *start;
    char *method, *path, *content_type, *body;
    size_t len;
    struct fg_buf reply;
    char curl_err[CURL_ERROR_SIZE];
    bool in_multi, cancelled, delivering, too_big;
    bool awaiting_cred;    /* parked until the exec plugin's run ends (fg__kube_loop_creds_ready) */
    bool auth_retried;     /* a 401 has already cost this call its exec credential */
    uint64_t ticket;       /* place in the exec credential cache's queue, see fg__kube_creds_get */
    uint64_t cred_gen;     /* generation of the exec credential the transfer sent, 0 = none */
    void *ud;
    /* request */
    fg_kube_done_fn *done;
    /* list */
    const struct fg_kube_resource *res;
    char *ns, *label_selector, *field_selector, *resource_version, *cont;
    char *list_rv;   /* the first page's resourceVersion: the list's revision */
    unsigned limit;
    fg_kube_item_fn *on_item;
    fg_kube_list_done_fn *list_done;
    /* watch */
    struct fg_watch_decoder decoder;
    fg_watch_event_fn *on_event;
    fg_kube_watch_end_fn *on_end;
    long http_code;
    enum fg_err stream_err;
    char errmsg[FG_ERRMSG_MAX];
    struct fg_kube_call *prev, *next, *dead_next;
};

/* Runs curl_multi_socket_action and then completes finished transfers and reaps cancelled calls. */
void fg__kube_loop_drive(struct fg_kube_loop *loop, curl_socket_t fd, int action);
/* A transfer finished (outside libcurl): the call delivers its result. */
void fg__kube_call_finished(struct fg_kube_call *call, CURLcode rc);
/* Frees calls cancelled while libcurl was on the stack. */
void fg__kube_loop_reap(struct fg_kube_loop *loop);
/* Cancels every call (stop). */
void fg__kube_loop_cancel_all(struct fg_kube_loop *loop);
/* The exec plugin's run has ended: restarts every call parked for its credential. */
void fg__kube_loop_creds_ready(void *loop);

/* A new call, linked into the loop; the kind-specific fields are the caller's to fill. */
struct fg_kube_call *fg__kube_call_new(struct fg_kube_loop *loop, enum fg__kube_call_kind kind, const char *method,
                                      const char *path, void *ud);
/* Starts (or restarts, for the next list page) the call from a timer, once the rate limiter allows. */
void fg__kube_call_schedule(struct fg_kube_call *call);
/* Delivers the call's final callback (unless cancelled) and frees it. */
void fg__kube_call_finish(struct fg_kube_call *call, enum fg_err err, const struct fg_kube_status *st,
                          const char *rv, const char *msg);
void fg__kube_call_free(struct fg_kube_call *call);
/* The list page in call->reply arrived with 2xx: stream it, then fetch the next page or finish. */
void fg__kube_list_page_done(struct fg_kube_call *call, struct fg_kube_status *st);
/* CURLOPT_WRITEFUNCTION of watches. */
size_t fg__kube_watch_write(char *data, size_t size, size_t n, void *ud);

#endif
