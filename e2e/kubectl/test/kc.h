/*
 * kc — the harness of the kubectl end-to-end tests.
 *
 * Each test gets its own environment: a test API server running in-process on 127.0.0.1 (port 0),
 * a private directory holding the server's kubeconfig and kubectl's cache and home, and helpers that
 * run the machine's real kubectl (/usr/bin/kubectl, which asks /version which kubectl.1.NN to run)
 * through the shell with that kubeconfig and cache, an outer `timeout` and --request-timeout, so
 * every call is bounded. Output is stdout and stderr together, as a user sees it.
 */
#ifndef FG_E2E_KUBECTL_KC_H
#define FG_E2E_KUBECTL_KC_H

#include <stdio.h>

#include "e2e/apiserver/apiserver.h"

#define KC_TIMEOUT_S 30

struct kc_env {
    struct fg_apiserver *srv;
    char dir[256];
    char kubeconfig[320];
    char base_url[64];
    char ca_file[320]; /* the server's certificate in PEM (TLS only) */
};

/* A kubectl left running (get -w, wait): its output is read as it comes. */
struct kc_bg {
    FILE *pipe;
};

#define KC_TOKEN "e2e-token-0123456789"

/* cmocka setup/teardown: *state becomes a struct kc_env. kc_setup_tls serves HTTPS with a generated
 * certificate and requires the bearer token KC_TOKEN; its kubeconfig carries both. */
int kc_setup(void **state);
int kc_setup_tls(void **state);
int kc_teardown(void **state);

/* Runs `kubectl ARGS` (ARGS is shell text, formatted); returns its exit status, *out its output
 * (caller frees; may be NULL to discard). */
int kc_run(struct kc_env *env, char **out, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Starts `kubectl ARGS` in the background. */
void kc_start(struct kc_env *env, struct kc_bg *bg, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The next output line of a background kubectl (caller frees), or NULL at its end. */
char *kc_line(struct kc_bg *bg);
/* Waits for a background kubectl to end; returns its exit status and the rest of its output in *rest. */
int kc_finish(struct kc_bg *bg, char **rest);
/* Path of a file under e2e/kubectl/testdata (static buffer). */
const char *kc_testdata(const char *name);

#endif
