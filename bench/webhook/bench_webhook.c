/*
 * bench_webhook — AdmissionReviews per second through the webhook's HTTPS server, and their latency.
 *
 * The server runs as in the operator: its own thread, TLS (P-256 certificate), answers from caches
 * (stores holding the namespace, the Deployment, its ReplicaSet, the GPUWorkload with a
 * recommendation and the policy, parsed per answer as the informers' caches are). C client threads
 * each keep one TLS connection alive and send reviews one after another, as kube-apiserver's webhook
 * client does: each review is the CREATE of a ~4 KiB pod of the automated Deployment, mutated with a
 * fraction of a GPU. All in one process on this machine: client included in the CPU figures.
 *
 * Usage: fg_bench_webhook [CONNECTIONS [SECONDS]]   (defaults 4 and 5)
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/metrics.h"
#include "base/pki.h"
#include "bench/args.h"
#include "operator/cache/kobj.h"
#include "operator/cache/store.h"
#include "operator/webhook/server.h"
#include "operator/webhook/sources.h"

#define USAGE "usage: fg_bench_webhook [CONNECTIONS (1-64, default 4) [SECONDS (1-600, default 5)]]\n"
#define MAX_SAMPLES (1u << 22)

static const char *const stored[][2] = {
    { "ns", "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"ml\",\"resourceVersion\":\"1\","
            "\"labels\":{\"kubernetes.io/metadata.name\":\"ml\"}}}" },
    { "deployment", "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"llm\",\"namespace\":"
                    "\"ml\",\"uid\":\"d-1\",\"resourceVersion\":\"2\",\"labels\":{\"app\":\"llm\"},\"annotations\":{"
                    "\"fracgpu.io/automate\":\"true\",\"deployment.kubernetes.io/revision\":\"3\"}},\"spec\":{"
                    "\"replicas\":8,\"selector\":{\"matchLabels\":{\"app\":\"llm\"}},\"template\":{\"metadata\":{"
                    "\"labels\":{\"app\":\"llm\",\"fracgpu.io/automate\":\"true\"}},\"spec\":{\"containers\":[{"
                    "\"name\":\"main\",\"image\":\"registry.example.com/ml/vllm:0.6.3\",\"args\":[\"--model\","
                    "\"/models/llama-3-8b\",\"--max-model-len\",\"8192\"],\"ports\":[{\"containerPort\":8000}],"
                    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\",\"memory\":\"24Gi\"},\"requests\":{\"cpu\":"
                    "\"4\",\"memory\":\"24Gi\"}}}],\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\","
                    "\"effect\":\"NoSchedule\"}]}}}}" },
    { "replicaset", "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"llm-7c9f8d6b5\","
                    "\"namespace\":\"ml\",\"uid\":\"rs-1\",\"resourceVersion\":\"3\",\"ownerReferences\":[{"
                    "\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"llm\",\"uid\":\"d-1\","
                    "\"controller\":true,\"blockOwnerDeletion\":true}]}}" },
    { "gpuworkload", "{\"apiVersion\":\"fracgpu.io/v1alpha1\",\"kind\":\"GPUWorkload\",\"metadata\":{\"name\":"
                     "\"deployment-llm\",\"namespace\":\"ml\",\"resourceVersion\":\"4\"},\"spec\":{\"targetRef\":{"
                     "\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"llm\"},\"policy\":\"\"},\"status\":{"
                     "\"detectedClass\":\"inference\",\"policy\":\"near-real-time\",\"recommendation\":{"
                     "\"computeMilli\":350,\"memoryMiB\":18432}}}" },
    { "policy", "{\"apiVersion\":\"fracgpu.io/v1alpha1\",\"kind\":\"GPUPolicy\",\"metadata\":{\"name\":"
                "\"near-real-time\",\"resourceVersion\":\"5\"},\"spec\":{\"workloadClass\":\"inference\",\"sharing\":"
                "\"timeslice\",\"isolation\":\"shared\",\"historyWindow\":\"72h\",\"minHistory\":\"3h\",\"compute\":{"
                "\"percentile\":90,\"headroomPercent\":15,\"minMilli\":50,\"maxMilli\":1000},\"memory\":{\"percentile\":"
                "100,\"headroomPercent\":15,\"minMiB\":256,\"maxMiB\":81920},\"updateMode\":\"Initial\",\"cooldown\":"
                "\"3h\",\"changeThresholdPercent\":10,\"priority\":500}}" },
};

static struct fg_store *store_of(const char *text)
{
    struct fg_store *s = fg_store_new();
    json_object *obj = NULL;
    struct fg_kobj *k = NULL;
    if (fg_json_parse(text, strlen(text), 0, &obj, NULL) != FG_OK || fg_kobj_new(obj, 0, &k, NULL) != FG_OK)
        abort();
    struct fg_kobj *old = NULL;
    fg_store_upsert(s, k, obj, &old);
    fg_kobj_unref(k);
    json_object_put(obj);
    return s;
}

/* The review kube-apiserver sends for a ReplicaSet's new pod: ~4 KiB with its managedFields. */
static char *review_text(void)
{
    struct fg_buf b = FG_BUF_INIT;
    int ok = fg_buf_puts(&b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
                             "\"uid\":\"6c1e0b0a-5f9e-4d3c-8a51-2f9d7e6b4c3a\",\"kind\":{\"group\":\"\",\"version\":"
                             "\"v1\",\"kind\":\"Pod\"},\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":"
                             "\"pods\"},\"requestKind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
                             "\"requestResource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
                             "\"namespace\":\"ml\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"system:"
                             "serviceaccount:kube-system:replicaset-controller\",\"uid\":\"5a1b\",\"groups\":["
                             "\"system:serviceaccounts\",\"system:serviceaccounts:kube-system\",\"system:"
                             "authenticated\"]},\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{"
                             "\"generateName\":\"llm-7c9f8d6b5-\",\"namespace\":\"ml\",\"labels\":{\"app\":\"llm\","
                             "\"fracgpu.io/automate\":\"true\",\"pod-template-hash\":\"7c9f8d6b5\"},"
                             "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":"
                             "\"llm-7c9f8d6b5\",\"uid\":\"rs-1\",\"controller\":true,\"blockOwnerDeletion\":true}],"
                             "\"managedFields\":[") == FG_OK;
    for (int i = 0; i < 5 && ok; i++)
        ok = fg_buf_printf(&b, "%s{\"manager\":\"kube-controller-manager\",\"operation\":\"Update\",\"apiVersion\":"
                               "\"v1\",\"time\":\"2026-11-26T08:00:0%dZ\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{"
                               "\"f:metadata\":{\"f:generateName\":{},\"f:labels\":{\".\":{},\"f:app\":{},"
                               "\"f:pod-template-hash\":{}},\"f:ownerReferences\":{\".\":{},\"k:{\\\"uid\\\":\\\"rs-1\\\"}"
                               "\":{}}},\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"main\\\"}\":{\".\":{},"
                               "\"f:image\":{},\"f:name\":{},\"f:resources\":{\".\":{},\"f:limits\":{\".\":{},"
                               "\"f:nvidia.com/gpu\":{}}}}}}}}",
                           i ? "," : "", i) == FG_OK;
    ok = ok && fg_buf_puts(&b, "]},\"spec\":{\"schedulerName\":\"default-scheduler\",\"containers\":[{\"name\":"
                               "\"main\",\"image\":\"registry.example.com/ml/vllm:0.6.3\",\"args\":[\"--model\","
                               "\"/models/llama-3-8b\",\"--max-model-len\",\"8192\"],\"ports\":[{\"containerPort\":"
                               "8000,\"protocol\":\"TCP\"}],\"env\":[{\"name\":\"HF_HOME\",\"value\":\"/cache\"}],"
                               "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\",\"memory\":\"24Gi\"},\"requests\":"
                               "{\"cpu\":\"4\",\"memory\":\"24Gi\",\"nvidia.com/gpu\":\"1\"}},\"terminationMessagePath\":"
                               "\"/dev/termination-log\",\"imagePullPolicy\":\"IfNotPresent\"}],\"restartPolicy\":"
                               "\"Always\",\"dnsPolicy\":\"ClusterFirst\",\"serviceAccountName\":\"default\","
                               "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":"
                               "\"NoSchedule\"},{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
                               "\"effect\":\"NoExecute\",\"tolerationSeconds\":300}],\"priority\":0,"
                               "\"enableServiceLinks\":true,\"preemptionPolicy\":\"PreemptLowerPriority\"}},"
                               "\"oldObject\":null,\"dryRun\":false,\"options\":{\"kind\":\"CreateOptions\","
                               "\"apiVersion\":\"meta.k8s.io/v1\"}}}") == FG_OK;
    if (!ok)
        abort();
    return fg_buf_take(&b);
}

struct client {
    pthread_t thread;
    unsigned port;
    SSL_CTX *ctx;
    const char *request;        /* the whole HTTP request */
    size_t request_len;
    double stop_at;
    double *lat;                /* seconds, one per review */
    size_t n, mutated;
};

static double now_s(void)
{
    return (double)fg_clock_mono_ns() / 1e9;
}

static SSL *dial(struct client *c)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)c->port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    SSL *ssl = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 ? SSL_new(c->ctx) : NULL;
    if (!ssl || SSL_set_fd(ssl, fd) != 1 || SSL_set1_host(ssl, "localhost") != 1 || SSL_connect(ssl) != 1) {
        fprintf(stderr, "TLS connection failed: %s\n", ERR_reason_error_string(ERR_get_error()));
        exit(1);
    }
    return ssl;
}

/* Reads one reply; true when its body is a mutating AdmissionReview response. */
static bool read_reply(SSL *ssl, struct fg_buf *b)
{
    fg_buf_reset(b);
    for (;;) {
        const char *end = strstr(fg_buf_str(b), "\r\n\r\n");
        const char *cl = end ? strcasestr(fg_buf_str(b), "Content-Length:") : NULL;
        if (cl && b->len >= (size_t)(end - b->data) + 4 + strtoul(cl + 15, NULL, 10)) {
            if (strncmp(b->data, "HTTP/1.1 200", 12)) {
                fprintf(stderr, "reply: %.200s\n", b->data);
                exit(1);
            }
            return strstr(end, "\"patchType\":\"JSONPatch\"") != NULL;
        }
        char tmp[16384];
        int n = SSL_read(ssl, tmp, sizeof(tmp));
        if (n <= 0 || fg_buf_append(b, tmp, (size_t)n) != FG_OK) {
            fprintf(stderr, "read failed\n");
            exit(1);
        }
    }
}

static void *run_client(void *arg)
{
    struct client *c = arg;
    SSL *ssl = dial(c);
    struct fg_buf b = FG_BUF_INIT;
    while (c->n < MAX_SAMPLES) {
        double t0 = now_s();
        if (t0 >= c->stop_at)
            break;
        if (SSL_write(ssl, c->request, (int)c->request_len) != (int)c->request_len) {
            fprintf(stderr, "write failed\n");
            exit(1);
        }
        c->mutated += read_reply(ssl, &b);
        c->lat[c->n++] = now_s() - t0;
    }
    fg_buf_cleanup(&b);
    SSL_shutdown(ssl);
    close(SSL_get_fd(ssl));
    SSL_free(ssl);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv)
{
    bench_args_check(argc, argv, 2, USAGE);
    int conns = (int)bench_arg_long(argc, argv, 1, 4, 1, 64, USAGE);
    double seconds = bench_arg_double(argc, argv, 2, 5, 1, 600, USAGE);
    fg_log_set_level(FG_LOG_ERROR);

    struct fg_webhook_stores st = { 0 };
    st.namespaces = store_of(stored[0][1]);
    st.owners[0] = store_of(stored[1][1]);
    for (size_t i = 1; i < fg_workload_builtin_kinds.n; i++)
        st.owners[i] = fg_store_new();
    st.replicasets = store_of(stored[2][1]);
    st.gpuworkloads = store_of(stored[3][1]);
    st.policies = store_of(stored[4][1]);
    st.claims = fg_store_new();
    st.classes = fg_store_new();
    struct fg_webhook_caches *caches = fg_webhook_caches_new(&fg_workload_builtin_kinds, &st);
    struct fg_admit_sources src;
    fg_webhook_caches_sources(caches, &src);

    static const char *const dns[] = { "localhost", NULL };
    int64_t now = fg_clock_wall_ms();
    struct fg_pki_request ca_req = { "bench-ca", NULL, NULL, true, now - 60000, now + 3600000 };
    struct fg_pki_request leaf_req = { "fracgpu-webhook", dns, NULL, false, now - 60000, now + 3600000 };
    struct fg_pki_pair ca, leaf;
    char msg[FG_ERRMSG_MAX] = "";
    struct fg_metrics *metrics = fg_metrics_new();
    struct fg_webhook_server *srv;
    struct fg_webhook_server_opts opts = { "127.0.0.1:0", &src, metrics };
    if (fg_pki_issue(&ca_req, NULL, &ca, msg) || fg_pki_issue(&leaf_req, &ca, &leaf, msg) ||
        fg_webhook_server_new(&opts, &srv, msg) || fg_webhook_server_set_cert(srv, &leaf, msg) ||
        fg_webhook_server_start(srv, msg)) {
        fprintf(stderr, "setup: %s\n", msg);
        return 1;
    }
    SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
    BIO *bio = BIO_new_mem_buf(ca.cert_pem, -1);
    X509 *ca_x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    X509_STORE_add_cert(SSL_CTX_get_cert_store(cctx), ca_x);
    SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, NULL);

    char *review = review_text();
    char *request = fg_asprintf("POST /mutate-pods?timeout=2s HTTP/1.1\r\nHost: fracgpu-webhook.fracgpu-system.svc:443"
                                "\r\nContent-Type: application/json\r\nAccept: application/json, */*\r\n"
                                "Content-Length: %zu\r\n\r\n%s",
                                strlen(review), review);
    struct client *cl = fg_calloc((size_t)conns, sizeof(*cl));
    double cpu0 = cpu_s(), t0 = now_s();
    for (int i = 0; i < conns; i++) {
        cl[i] = (struct client){ .port = fg_webhook_server_port(srv), .ctx = cctx, .request = request,
                                 .request_len = strlen(request), .stop_at = t0 + seconds,
                                 .lat = fg_malloc(MAX_SAMPLES * sizeof(double)) };
        pthread_create(&cl[i].thread, NULL, run_client, &cl[i]);
    }
    size_t total = 0, mutated = 0;
    for (int i = 0; i < conns; i++) {
        pthread_join(cl[i].thread, NULL);
        total += cl[i].n;
        mutated += cl[i].mutated;
    }
    double elapsed = now_s() - t0, cpu = cpu_s() - cpu0;
    double *all = fg_malloc(total * sizeof(double));
    size_t k = 0;
    for (int i = 0; i < conns; i++) {
        memcpy(all + k, cl[i].lat, cl[i].n * sizeof(double));
        k += cl[i].n;
        free(cl[i].lat);
    }
    qsort(all, total, sizeof(double), cmp_double);
    printf("webhook: %zu-byte AdmissionReviews over HTTPS keep-alive, %d connections, %.1f s\n", strlen(review), conns,
           elapsed);
    printf("  reviews/s      %.0f (%zu answered, %zu mutated)\n", (double)total / elapsed, total, mutated);
    printf("  latency        p50 %.3f ms  p99 %.3f ms  p99.9 %.3f ms  max %.3f ms\n", all[total / 2] * 1e3,
           all[(size_t)((double)total * 0.99)] * 1e3, all[(size_t)((double)total * 0.999)] * 1e3,
           all[total - 1] * 1e3);
    printf("  CPU            %.2f cores (server and client), %.1f µs per review\n", cpu / elapsed,
           cpu / (double)total * 1e6);
    free(all);
    free(cl);
    free(request);
    free(review);
    X509_free(ca_x);
    BIO_free(bio);
    SSL_CTX_free(cctx);
    fg_webhook_server_free(srv);
    fg_metrics_free(metrics);
    fg_webhook_caches_free(caches);
    struct fg_store *all_stores[] = { st.namespaces, st.replicasets, st.gpuworkloads, st.policies, st.claims,
                                      st.classes };
    for (size_t i = 0; i < 6; i++)
        fg_store_free(all_stores[i]);
    for (size_t i = 0; i < fg_workload_builtin_kinds.n; i++)
        fg_store_free(st.owners[i]);
    fg_pki_pair_cleanup(&ca);
    fg_pki_pair_cleanup(&leaf);
    return mutated == total ? 0 : 1;
}
