/*
 * informer_bench — how fast an informer ingests watch events, and how much memory its cache takes.
 *
 * Realistic pods (fake_pods.h: over 4 KiB of JSON each, managedFields and last-applied annotation
 * included) are serialized as watch event lines, exactly as the API server sends them, and fed in
 * 64 KiB reads through operator/kube's watch decoder into the fake lister-watcher's open watch, so
 * every event takes the production path: decode, transform, fg_kobj, store (with a node index),
 * handler. Phase one adds N pods, phase two modifies each once. Only the feeding is timed; lines are
 * generated in batches beforehand and freed after, so they do not count in the memory figure, which
 * is VmRSS after malloc_trim(0) with the N pods cached. Each mode (no transform, the pod transform,
 * and the pod transform with the decoder cutting managedFields before parsing — the operator's
 * configuration) runs in its own child process so the figures do not contaminate each other; a first
 * mode feeds the decoder alone (events dropped), the floor the decoder sets. Rates are given per wall-clock second
 * and per CPU second of the feeding thread, since the machine may be shared.
 *
 * Usage: fg_bench_informer [pods] (default 10000).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "bench/args.h"
#include "operator/cache/fake_listwatch.h"
#include "operator/cache/fake_pods.h"
#include "operator/cache/informer.h"
#include "operator/kube/watch.h"

#define BATCH 500
#define READ_SIZE (64 * 1024)
#define NODES 100

struct bench {
    bool decode_only;
    bool cut_managed_fields;     /* the decoder drops managedFields before parsing */
    struct fg_fake_listwatch *fake;
    struct fg_informer *inf;
    unsigned long handled;
    size_t json_bytes;
};

static void count_add(void *ud, struct fg_kobj *obj)
{
    (void)obj;
    ((struct bench *)ud)->handled++;
}

static void count_update(void *ud, struct fg_kobj *old, struct fg_kobj *obj)
{
    (void)old;
    (void)obj;
    ((struct bench *)ud)->handled++;
}

static bool forward(void *ud, enum fg_watch_type type, json_object *object)
{
    struct bench *b = ud;
    if (b->decode_only) {
        b->handled++;
        return true;
    }
    return fg_fake_listwatch_deliver(b->fake, type, object);
}

static long vm_rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

/* Appends BATCH-or-fewer watch lines for pods [first, last) with resourceVersion base + i. */
static void make_lines(struct bench *b, struct fg_buf *out, const char *type, unsigned first, unsigned last,
                       unsigned long rv_base)
{
    char node[32], rv[24];
    for (unsigned i = first; i < last; i++) {
        snprintf(node, sizeof(node), "gpu-node-%u", i % NODES);
        json_object *pod = fg_fake_pod_new("ml", "llm", i, node);
        snprintf(rv, sizeof(rv), "%lu", rv_base + i);
        fg_json_set_str(fg_json_ensure_obj(pod, "metadata"), "resourceVersion", rv);
        size_t len = 0;
        const char *text = fg_json_text(pod, &len);
        b->json_bytes += len;
        if (fg_buf_printf(out, "{\"type\":\"%s\",\"object\":%s}\n", type, text) != FG_OK)
            abort();
        json_object_put(pod);
    }
}

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * FG_NS_PER_S + (uint64_t)ts.tv_nsec;
}

struct timing {
    double wall_s, cpu_s;
};

/* Feeds one phase and returns the time spent feeding. */
static struct timing run_phase(struct bench *b, const char *type, unsigned n, unsigned long rv_base)
{
    struct fg_watch_decoder dec;
    fg_watch_decoder_init(&dec, 1u << 20, forward, b);
    if (b->cut_managed_fields)
        fg_watch_decoder_cut(&dec, fg_watch_managed_fields);
    struct fg_buf lines = FG_BUF_INIT;
    uint64_t wall = 0, cpu = 0;
    char errmsg[FG_ERRMSG_MAX];
    for (unsigned first = 0; first < n; first += BATCH) {
        fg_buf_reset(&lines);
        make_lines(b, &lines, type, first, first + BATCH < n ? first + BATCH : n, rv_base);
        uint64_t t0 = fg_clock_mono_ns(), c0 = cpu_ns();
        for (size_t off = 0; off < lines.len; off += READ_SIZE) {
            size_t len = lines.len - off < READ_SIZE ? lines.len - off : READ_SIZE;
            if (fg_watch_decoder_feed(&dec, lines.data + off, len, errmsg) != FG_OK) {
                fprintf(stderr, "decoder: %s\n", errmsg);
                exit(1);
            }
        }
        wall += fg_clock_mono_ns() - t0;
        cpu += cpu_ns() - c0;
    }
    fg_buf_cleanup(&lines);
    fg_watch_decoder_cleanup(&dec);
    return (struct timing){ (double)wall / 1e9, (double)cpu / 1e9 };
}

static int run_mode(const char *mode, bool pod_fields, bool decode_only, bool cut, unsigned n)
{
    malloc_trim(0);
    long rss0 = vm_rss_kib();
    struct bench b = { .decode_only = decode_only, .cut_managed_fields = cut, .fake = fg_fake_listwatch_new("Pod") };
    struct fg_informer_opts opts = FG_INFORMER_OPTS_DEFAULT;
    struct fg_fieldset *fields = pod_fields ? fg_fieldset_new(fg_transform_pod_paths) : NULL;
    if (fields) {
        opts.reflector.transform = fg_transform_keep;
        opts.reflector.transform_ud = fields;
    }
    b.inf = fg_informer_new(fg_fake_listwatch_base(b.fake), &opts);
    static const struct fg_resource_handler h = { .on_add = count_add, .on_update = count_update };
    if (fg_informer_add_handler(b.inf, &h, &b) != FG_OK ||
        fg_store_add_indexer(fg_informer_store(b.inf), "node", fg_index_by_node_name, NULL) != FG_OK ||
        fg_informer_start(b.inf) != FG_OK)
        return 1;
    fg_fake_listwatch_run(b.fake); /* empty list, then the watch opens */

    struct timing add = run_phase(&b, "ADDED", n, 1000);
    size_t add_bytes = b.json_bytes;
    struct timing mod = run_phase(&b, "MODIFIED", n, 1000 + n);
    printf("%-14s  ADDED %.0f events/s (%.0f per CPU s)  MODIFIED %.0f events/s (%.0f per CPU s)\n", mode,
           n / add.wall_s, n / add.cpu_s, n / mod.wall_s, n / mod.cpu_s);
    struct fg_store *store = fg_informer_store(b.inf);
    if (decode_only) {
        printf("%-14s  avg event JSON %.0f B\n", mode, (double)add_bytes / n);
        fg_informer_free(b.inf);
        fg_fieldset_free(fields);
        return 0;
    }
    if (b.handled != 2ul * n || fg_store_len(store) != n) {
        fprintf(stderr, "%s: handled %lu events, %zu cached; expected %u and %u\n", mode, b.handled,
                fg_store_len(store), 2 * n, n);
        return 1;
    }
    struct fg_kobj_list all;
    fg_store_list(store, &all);
    size_t cached = 0;
    for (size_t i = 0; i < all.n; i++)
        cached += fg_kobj_size(all.items[i]);
    fg_kobj_list_cleanup(&all);

    malloc_trim(0);
    long rss = vm_rss_kib();
    printf("%-14s  pods %u  avg event JSON %.0f B  cached avg %.0f B/obj\n", mode, n,
           (double)add_bytes / n, (double)cached / n);
    printf("%-14s  VmRSS %.1f MiB total (%.1f MiB at start)  %.2f MiB per 1,000 cached pods\n", mode,
           rss / 1024.0, rss0 / 1024.0, (rss - rss0) / 1024.0 / (n / 1000.0));
    fg_informer_free(b.inf);
    fg_fieldset_free(fields);
    return 0;
}

int main(int argc, char **argv)
{
    static const char usage[] = "[PODS (1..1000000, default 10000)]";
    bench_args_check(argc, argv, 1, usage);
    unsigned n = (unsigned)bench_arg_long(argc, argv, 1, 10000, 1, 1000000, usage);
    fg_log_set_level(FG_LOG_WARN);
    static const struct {
        const char *name;
        bool pod_fields;
        bool decode_only;
        bool cut;
    } modes[] = {
        { "decoder-only", false, true, false },
        { "decoder+cut", false, true, true },
        { "no-transform", false, false, false },
        { "pod-transform", true, false, false },
        { "pod+cut", true, false, true },   /* what the operator's informers run */
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            int child_rc = run_mode(modes[i].name, modes[i].pod_fields, modes[i].decode_only, modes[i].cut, n);
            fflush(stdout);
            _exit(child_rc);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            rc = 1;
    }
    return rc;
}
