/*
 * trace — CSV reading for the trace files (see trace.h).
 *
 * The files are plain CSV without quoting (names and model lists never contain commas), read with
 * base/csv.h, and each cell checked; any departure — wrong cell count, a non-integer, a negative
 * size — is an error naming the line, never a guess.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/csv.h"
#include "base/mem.h"
#include "scheduler/replay/trace.h"

#define TRACE_FILE_LIMIT (256u << 20)
#define GPU_MEM_COLUMN "gpu_memory_mib"   /* optional, in both files (trace.h) */

void fg_sched_trace_init(struct fg_sched_trace *t)
{
    memset(t, 0, sizeof *t);
}

static void pod_cleanup(struct fg_sched_trace_pod *p)
{
    for (size_t i = 0; i < p->n_models; i++)
        free(p->models[i]);
    free(p->models);
    free(p->spec);
    free(p->name);
}

void fg_sched_trace_cleanup(struct fg_sched_trace *t)
{
    for (size_t i = 0; i < t->n_pods; i++)
        pod_cleanup(&t->pods[i]);
    for (size_t i = 0; i < t->n_nodes; i++) {
        free(t->nodes[i].name);
        free(t->nodes[i].model);
    }
    free(t->pods);
    free(t->nodes);
    memset(t, 0, sizeof *t);
}

static bool parse_int(const char *s, int64_t *out)
{
    if (!*s)
        return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

static enum fg_err cell_int(struct fg_csv *r, char **cells, int col, int64_t max, int64_t *out, char *errmsg)
{
    if (!parse_int(cells[col], out) || *out < 0 || *out > max)
        return fg_errmsg(errmsg, FG_E_PARSE, "%s:%d: %s '%s' is not an integer in 0..%lld", r->origin, r->line,
                         r->hdr[col], cells[col], (long long)max);
    return FG_OK;
}

static void split_models(struct fg_sched_trace_pod *p)
{
    if (!*p->spec)
        return;
    size_t n = 1;
    for (const char *s = p->spec; *s; s++)
        n += *s == '|';
    p->models = fg_calloc(n, sizeof *p->models);
    const char *s = p->spec;
    for (;;) {
        const char *bar = strchr(s, '|');
        size_t len = bar ? (size_t)(bar - s) : strlen(s);
        if (len)
            p->models[p->n_models++] = fg_strndup(s, len);
        if (!bar)
            break;
        s = bar + 1;
    }
}

enum fg_err fg_sched_trace_parse_pods(struct fg_sched_trace *t, const char *text, const char *origin, char *errmsg)
{
    static const char *const need[] = { "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", NULL };
    int col[5];
    struct fg_csv r;
    struct fg_sched_trace_pod *rows = NULL;
    size_t n = 0, cap = 0;
    enum fg_err err = fg_csv_open(&r, text, origin, need, col, errmsg);
    if (err)
        goto out_free_rows;
    int spec_col = fg_csv_column(&r, "gpu_spec"), gmem_col = fg_csv_column(&r, GPU_MEM_COLUMN);
    char *cells[FG_CSV_MAX_CELLS];
    bool row;
    while (!(err = fg_csv_next(&r, cells, &row, errmsg)) && row) {
        int64_t cpu, mem, gpus, milli, gmem = 0;
        if ((err = cell_int(&r, cells, col[1], INT64_MAX / 4, &cpu, errmsg)) ||
            (err = cell_int(&r, cells, col[2], INT64_MAX / 4, &mem, errmsg)) ||
            (err = cell_int(&r, cells, col[3], FG_SCHED_MAX_GPUS, &gpus, errmsg)) ||
            (err = cell_int(&r, cells, col[4], INT32_MAX, &milli, errmsg)) ||
            (gmem_col >= 0 && (err = cell_int(&r, cells, gmem_col, INT64_MAX / 4, &gmem, errmsg))))
            goto out_free_rows;
        if (!*cells[col[0]]) {
            err = fg_errmsg(errmsg, FG_E_PARSE, "%s:%d: empty pod name", origin, r.line);
            goto out_free_rows;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            rows = fg_realloc(rows, cap * sizeof *rows);
        }
        struct fg_sched_trace_pod *p = &rows[n++];
        memset(p, 0, sizeof *p);
        p->name = fg_strdup(cells[col[0]]);
        p->cpu_milli = cpu;
        p->mem_mib = mem;
        p->n_gpus = (int)gpus;
        p->gpu_milli = gpus ? (int)(milli > FG_SCHED_MILLI ? FG_SCHED_MILLI : milli) : 0;
        p->gpu_mem_mib = gpus ? gmem : 0;
        if (gpus && p->gpu_milli == 0) {
            err = fg_errmsg(errmsg, FG_E_PARSE, "%s:%d: %lld GPUs at 0 milli", origin, r.line, (long long)gpus);
            goto out_free_rows;
        }
        p->spec = fg_strdup(gpus && spec_col >= 0 ? cells[spec_col] : "");
        split_models(p);
    }
    if (err)
        goto out_free_rows;
    t->pods = fg_realloc(t->pods, (t->n_pods + n + 1) * sizeof *t->pods);
    if (n) /* rows is NULL for a list of no pods, which memcpy may not be given */
        memcpy(t->pods + t->n_pods, rows, n * sizeof *rows);
    t->n_pods += n;
    n = 0;
out_free_rows:
    for (size_t i = 0; i < n; i++)
        pod_cleanup(&rows[i]);
    free(rows);
    fg_csv_close(&r);
    return err;
}

enum fg_err fg_sched_trace_parse_nodes(struct fg_sched_trace *t, const char *text, const char *origin, char *errmsg)
{
    static const char *const need[] = { "sn", "cpu_milli", "memory_mib", "gpu", "model", NULL };
    int col[5];
    struct fg_csv r;
    struct fg_sched_trace_node *rows = NULL;
    size_t n = 0, cap = 0;
    enum fg_err err = fg_csv_open(&r, text, origin, need, col, errmsg);
    if (err)
        goto out_free_rows;
    int gmem_col = fg_csv_column(&r, GPU_MEM_COLUMN);
    char *cells[FG_CSV_MAX_CELLS];
    bool row;
    while (!(err = fg_csv_next(&r, cells, &row, errmsg)) && row) {
        int64_t cpu, mem, gpus, gmem = 0;
        if ((err = cell_int(&r, cells, col[1], INT64_MAX / 4, &cpu, errmsg)) ||
            (err = cell_int(&r, cells, col[2], INT64_MAX / 4, &mem, errmsg)) ||
            (err = cell_int(&r, cells, col[3], FG_SCHED_MAX_GPUS, &gpus, errmsg)) ||
            (gmem_col >= 0 && (err = cell_int(&r, cells, gmem_col, INT64_MAX / 4, &gmem, errmsg))))
            goto out_free_rows;
        if (!*cells[col[0]] || (gpus && !*cells[col[4]])) {
            err = fg_errmsg(errmsg, FG_E_PARSE, "%s:%d: empty node name or GPU model", origin, r.line);
            goto out_free_rows;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            rows = fg_realloc(rows, cap * sizeof *rows);
        }
        rows[n++] = (struct fg_sched_trace_node){ fg_strdup(cells[col[0]]), cpu, mem, (int)gpus,
                                                  fg_strdup(cells[col[4]]), gmem };
    }
    if (err)
        goto out_free_rows;
    t->nodes = fg_realloc(t->nodes, (t->n_nodes + n + 1) * sizeof *t->nodes);
    if (n)
        memcpy(t->nodes + t->n_nodes, rows, n * sizeof *rows);
    t->n_nodes += n;
    n = 0;
out_free_rows:
    for (size_t i = 0; i < n; i++) {
        free(rows[i].name);
        free(rows[i].model);
    }
    free(rows);
    fg_csv_close(&r);
    return err;
}

static enum fg_err load(struct fg_sched_trace *t, const char *path, char *errmsg,
                        enum fg_err (*parse)(struct fg_sched_trace *, const char *, const char *, char *))
{
    struct fg_buf b;
    fg_buf_init(&b, TRACE_FILE_LIMIT);
    enum fg_err err = fg_buf_read_file(&b, path, errmsg);
    if (!err)
        err = parse(t, fg_buf_str(&b), path, errmsg);
    fg_buf_cleanup(&b);
    return err;
}

enum fg_err fg_sched_trace_load_pods(struct fg_sched_trace *t, const char *path, char *errmsg)
{
    return load(t, path, errmsg, fg_sched_trace_parse_pods);
}

enum fg_err fg_sched_trace_load_nodes(struct fg_sched_trace *t, const char *path, char *errmsg)
{
    return load(t, path, errmsg, fg_sched_trace_parse_nodes);
}

void fg_sched_trace_pod_request(const struct fg_sched_trace_pod *tp, struct fg_sched_pod *out)
{
    memset(out, 0, sizeof *out);
    out->name = tp->name;
    out->cpu_milli = tp->cpu_milli;
    out->mem_mib = tp->mem_mib;
    out->n_gpus = tp->n_gpus;
    out->gpu_milli = tp->gpu_milli;
    out->gpu_mem_mib = tp->gpu_mem_mib;
    out->models = (const char *const *)tp->models;
    out->n_models = tp->n_models;
}
