/* bench_http — the API server benchmarks' raw keep-alive HTTP client and pod; see bench_http.h. */
#include "bench/apiserver/bench_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/mem.h"

uint16_t bench_port;

double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int bench_dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(bench_port) };
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        perror("connect");
        exit(1);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

void bench_send_all(int fd, const char *data, size_t len)
{
    while (len) {
        ssize_t n = write(fd, data, len);
        if (n <= 0) {
            perror("write");
            exit(1);
        }
        data += n;
        len -= (size_t)n;
    }
}

/* Reads one Content-Length reply; returns the status code. `b` keeps bytes read past the reply. */
int bench_read_reply(int fd, struct fg_buf *b)
{
    for (;;) {
        const char *end = b->data ? strstr(b->data, "\r\n\r\n") : NULL;
        if (end) {
            const char *cl = strcasestr(b->data, "Content-Length:");
            size_t body = cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0;
            size_t total = (size_t)(end - b->data) + 4 + body;
            if (b->len >= total) {
                int code = atoi(b->data + 9);
                fg_buf_consume(b, total);
                return code;
            }
        }
        char tmp[65536];
        ssize_t n = read(fd, tmp, sizeof(tmp));
        if (n <= 0 || fg_buf_append(b, tmp, (size_t)n) != FG_OK) {
            fprintf(stderr, "read failed\n");
            exit(1);
        }
    }
}

int bench_request(int fd, struct fg_buf *b, const char *method, const char *path, const char *ct, const char *body)
{
    char *req = fg_asprintf("%s %s HTTP/1.1\r\nHost: bench\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n%s",
                            method, path, ct, body ? strlen(body) : 0, body ? body : "");
    bench_send_all(fd, req, strlen(req));
    free(req);
    return bench_read_reply(fd, b);
}

/* A pod of about 4 KiB, managedFields included, as a real kubelet-managed pod looks. */
char *bench_pod_json(const char *name)
{
    struct fg_buf b = FG_BUF_INIT;
    int ok = fg_buf_printf(&b, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":"
                           "{\"app\":\"bench\",\"pod-template-hash\":\"7c9f8d6b5\"},\"annotations\":{\"fracgpu.io/policy\":"
                           "\"batch\",\"fracgpu.io/gpu-fraction\":\"0.25\"},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","
                           "\"kind\":\"ReplicaSet\",\"name\":\"bench-7c9f8d6b5\",\"uid\":\"0b6f7a52-1b0e-4c43-9d6e-8b2f1c3d4e5f\","
                           "\"controller\":true,\"blockOwnerDeletion\":true}],\"managedFields\":[", name) == FG_OK;
    for (int i = 0; i < 6 && ok; i++)
        ok = fg_buf_printf(&b, "%s{\"manager\":\"kube-controller-manager-%d\",\"operation\":\"Update\",\"apiVersion\":\"v1\","
                           "\"time\":\"2026-11-21T08:00:0%dZ\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":"
                           "{\"f:labels\":{\".\":{},\"f:app\":{},\"f:pod-template-hash\":{}},\"f:ownerReferences\":{\".\":{},"
                           "\"k:{\\\"uid\\\":\\\"0b6f7a52\\\"}\":{}}},\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"main\\\"}\":"
                           "{\".\":{},\"f:image\":{},\"f:imagePullPolicy\":{},\"f:name\":{},\"f:resources\":{\".\":{},"
                           "\"f:limits\":{\".\":{},\"f:nvidia.com/gpu\":{}}}}}}}}", i ? "," : "", i, i) == FG_OK;
    ok = ok && fg_buf_puts(&b, "]},\"spec\":{\"nodeName\":\"gpu-node-17\",\"schedulerName\":\"fracgpu-scheduler\","
                           "\"containers\":[{\"name\":\"main\",\"image\":\"registry.example.com/ml/trainer:1.4.2\","
                           "\"args\":[\"--epochs=10\",\"--batch=64\"],\"env\":[{\"name\":\"NVIDIA_VISIBLE_DEVICES\","
                           "\"value\":\"GPU-3f2a\"},{\"name\":\"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE\",\"value\":\"25\"}],"
                           "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\",\"memory\":\"8Gi\"}}}],"
                           "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]},"
                           "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.4.17.23\",\"conditions\":[{\"type\":\"Ready\","
                           "\"status\":\"True\"},{\"type\":\"PodScheduled\",\"status\":\"True\"}]}}") == FG_OK;
    if (!ok)
        abort();
    return fg_buf_take(&b);
}
