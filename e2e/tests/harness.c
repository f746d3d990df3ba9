/* harness — in-process cluster of one for integration tests; see harness.h. */
#include "e2e/tests/harness.h"

#include <curl/curl.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/yaml.h"
#include "base/mem.h"

enum fg_err fg_harness_start(struct fg_harness *h, const struct fg_harness_opts *opts, char *errmsg)
{
    memset(h, 0, sizeof *h);
    snprintf(h->dir, sizeof h->dir, "/tmp/fg-e2e-XXXXXX");
    if (!mkdtemp(h->dir))
        return fg_errmsg(errmsg, FG_E_IO, "cannot create a temporary directory");
    snprintf(h->kubeconfig, sizeof h->kubeconfig, "%s/kubeconfig", h->dir);

    bool tls = opts && opts->tls;
    struct fg_apiserver_opts sopts = { .history = opts ? opts->history : 0, .tls = tls,
                                       .token = tls ? "fracgpu-harness-token" : NULL };
    enum fg_err err = fg_apiserver_new(&sopts, &h->server, errmsg);
    if (err)
        goto out_rmdir;
    err = fg_apiserver_write_kubeconfig(h->server, h->kubeconfig, errmsg);
    if (err)
        goto out_free_server;
    err = fg_apiserver_start(h->server, errmsg);
    if (err)
        goto out_free_server;
    struct fg_manager_opts mo = FG_MANAGER_OPTS_DEFAULT;
    mo.component = "harness";
    mo.kubeconfig = h->kubeconfig;
    mo.leader.enabled = false;
    mo.client.qps = opts ? opts->client_qps : 0;
    mo.client.timeout_ms = 10000;
    err = fg_manager_new(&mo, &h->manager, errmsg);
    if (err)
        goto out_free_server;
    err = fg_manager_start(h->manager, errmsg);
    if (err)
        goto out_free_manager;
    h->client = fg_manager_client(h->manager);
    h->loop = fg_manager_loop(h->manager);
    return FG_OK;

out_free_manager:
    fg_manager_free(h->manager);
out_free_server:
    fg_apiserver_free(h->server);
out_rmdir:
    unlink(h->kubeconfig);
    rmdir(h->dir);
    return err;
}

void fg_harness_stop(struct fg_harness *h)
{
    fg_manager_free(h->manager);
    fg_apiserver_free(h->server);
    unlink(h->kubeconfig);
    rmdir(h->dir);
}

enum fg_err fg_harness_fault(struct fg_harness *h, const char *control)
{
    return fg_e2e_fault(h->client, control);
}

enum fg_err fg_e2e_fault(struct fg_kube_client *client, const char *control)
{
    char *path = fg_asprintf("/fracgpu-test/%s", control);
    struct fg_buf reply = FG_BUF_INIT;
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_request(client, "POST", path, "application/json", "{}", 2, &reply, &st);
    fg_kube_status_cleanup(&st);
    fg_buf_cleanup(&reply);
    free(path);
    return err;
}

enum fg_err fg_harness_namespace(struct fg_harness *h, const char *name)
{
    json_object *ns = json_object_new_object();
    json_object_object_add(ns, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(ns, "kind", json_object_new_string("Namespace"));
    fg_json_set_str(fg_json_ensure_obj(ns, "metadata"), "name", name);
    char *path = fg_kube_path(&fg_kube_namespaces, NULL, NULL, NULL, NULL);
    struct fg_kube_status st = { 0 };
    enum fg_err err = fg_kube_create(h->client, path, ns, NULL, &st);
    fg_kube_status_cleanup(&st);
    free(path);
    json_object_put(ns);
    return err == FG_E_KUBE_ALREADY_EXISTS ? FG_OK : err;
}

enum fg_err fg_harness_crds(struct fg_harness *h, char *errmsg)
{
    static const char *const files[] = { "gpupolicies.yaml", "gpuworkloads.yaml", "gpucheckpoints.yaml" };
    const char *src = getenv("FG_SOURCE_DIR");
    if (!src)
        return fg_errmsg(errmsg, FG_E_INVAL, "FG_SOURCE_DIR is not set: where are the CRDs?");
    enum fg_err err = FG_OK;
    for (size_t i = 0; i < sizeof(files) / sizeof(*files) && !err; i++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/crds/%s", src, files[i]);
        json_object *crd = NULL;
        if ((err = fg_yaml_load_file(path, &crd, errmsg)) != FG_OK)
            break;
        struct fg_kube_status st = { 0 };
        err = fg_kube_create(h->client, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd, NULL, &st);
        if (err == FG_E_KUBE_ALREADY_EXISTS)
            err = FG_OK;
        else if (err != FG_OK)
            fg_errmsg(errmsg, err, "%s: %s", files[i], st.message ? st.message : fg_err_str(err));
        fg_kube_status_cleanup(&st);
        json_object_put(crd);
    }
    return err;
}

bool fg_harness_wait(bool (*cond)(void *ud), void *ud, unsigned timeout_ms)
{
    uint64_t deadline = fg_clock_mono_ns() + (uint64_t)timeout_ms * FG_NS_PER_MS;
    while (!cond(ud)) {
        if (fg_clock_mono_ns() > deadline)
            return false;
        usleep(10000);
    }
    return true;
}

static size_t collect(char *data, size_t size, size_t n, void *ud)
{
    return fg_buf_append(ud, data, size * n) == FG_OK ? size * n : 0;
}

long fg_harness_http(const char *host, unsigned port, const char *method, const char *path, struct fg_buf *body)
{
    char url[256];
    snprintf(url, sizeof url, "http://%s:%u%s", host ? host : "127.0.0.1", port, path);
    fg_buf_reset(body);
    CURL *c = curl_easy_init();
    if (!c)
        return 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    return code;
}
