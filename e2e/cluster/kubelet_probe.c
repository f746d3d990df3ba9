/*
 * kubelet_probe — the kubelet's probes against a pod's IP: httpGet (scheme, path, port by number or
 * by the container port's name, httpHeaders; success is a status from 200 to 399 within
 * timeoutSeconds) and tcpSocket (a connection accepted within timeoutSeconds). grpc probes are
 * treated as tcpSocket, and exec probes, which would run a command inside the container, pass.
 */
#include <curl/curl.h>
#include <stdio.h>

#include "base/json.h"
#include "e2e/cluster/kubelet.h"

static int64_t port_of(json_object *port, json_object *container)
{
    if (json_object_is_type(port, json_type_int))
        return json_object_get_int64(port);
    const char *name = json_object_get_string(port);
    json_object *ports = fg_json_get(container, "ports", NULL);
    for (size_t i = 0; name && i < fg_json_array_len(ports); i++) {
        json_object *p = json_object_array_get_idx(ports, i);
        int64_t n = 0;
        if (fg_str_eq(fg_json_get_str(p, "name", NULL), name) && fg_json_get_int64(p, &n, "containerPort", NULL))
            return n;
    }
    return 0;
}

static size_t discard(char *ptr, size_t size, size_t nmemb, void *ud)
{
    (void)ptr;
    (void)ud;
    return size * nmemb;
}

bool fg_sim_probe_run(json_object *probe, json_object *container, const char *ip)
{
    int64_t timeout = 1;
    fg_json_get_int64(probe, &timeout, "timeoutSeconds", NULL);
    json_object *http = fg_json_get(probe, "httpGet", NULL);
    json_object *tcp = fg_json_get(probe, "tcpSocket", NULL);
    if (!tcp)
        tcp = fg_json_get(probe, "grpc", NULL);
    if (!http && !tcp)
        return true;
    int64_t port = port_of(fg_json_get(http ? http : tcp, "port", NULL), container);
    if (port <= 0 || port > 65535 || !ip || !*ip)
        return false;
    CURL *easy = curl_easy_init();
    if (!easy)
        return false;
    char url[512];
    const char *scheme = http ? fg_json_get_str(http, "scheme", NULL) : NULL;
    const char *path = http ? fg_json_get_str(http, "path", NULL) : NULL;
    snprintf(url, sizeof url, "%s://%s:%lld%s%s", http ? (fg_str_eq(scheme, "HTTPS") ? "https" : "http") : "http", ip,
             (long long)port, path && path[0] != '/' ? "/" : "", path ? path : "/");
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long)(timeout > 0 ? timeout : 1) * 1000L);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);   /* the kubelet does not verify probe certificates */
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
    curl_easy_setopt(easy, CURLOPT_USERAGENT, "kube-probe/1.32");
    curl_easy_setopt(easy, CURLOPT_CONNECT_ONLY, http ? 0L : 1L);
    struct curl_slist *headers = NULL;
    json_object *hs = http ? fg_json_get(http, "httpHeaders", NULL) : NULL;
    for (size_t i = 0; i < fg_json_array_len(hs); i++) {
        char line[512];
        snprintf(line, sizeof line, "%s: %s", fg_json_get_str(json_object_array_get_idx(hs, i), "name", NULL),
                 fg_json_get_str(json_object_array_get_idx(hs, i), "value", NULL));
        headers = curl_slist_append(headers, line);
    }
    if (headers)
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    CURLcode rc = curl_easy_perform(easy);
    long code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(headers);
    curl_easy_cleanup(easy);
    return rc == CURLE_OK && (!http || (code >= 200 && code < 400));
}
