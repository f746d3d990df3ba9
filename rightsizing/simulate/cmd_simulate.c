/*
 * cmd_simulate — `fracgpu simulate`; see cmd_simulate.h for the command line.
 */
#include "rightsizing/simulate/cmd_simulate.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/duration.h"
#include "base/json.h"
#include "base/mem.h"
#include "base/yaml.h"
#include "crds/builtin.h"
#include "rightsizing/simulate/report_html.h"
#include "rightsizing/simulate/simulate.h"

struct args {
    const char *usage, *policy, *out, *pods, *half, *placement, *warmup, *consolidation;
    double gpu_gib;
    bool json;
};

static int usage(FILE *out, int status)
{
    fprintf(out,
            "usage: fracgpu simulate --usage DIR|FILE --policy NAME|FILE [--gpu-memory-gib 80] [--out REPORT.html]\n"
            "                        [--json] [--pods LIST | --half even|odd] [--placement NAME] [--warmup DURATION]\n"
            "                        [--consolidation-interval DURATION]\n"
            "Replays a per-pod GPU usage trace through the recommender and the scheduler (docs/rightsizing.md).\n"
            "  --usage DIR|FILE      a directory with %s and %s (each .csv, .csv.xz or .csv.gz),\n"
            "                        or one CSV with timestamp_anon,container_ip,duty_cycle,memory_bytes\n"
            "  --policy NAME|FILE    a built-in GPUPolicy or a YAML/JSON file holding one; built-ins:",
            FG_GENTD26_UTIL_FILE, FG_GENTD26_MEMORY_FILE);
    for (size_t i = 0; i < fg_builtin_policies_count; i++)
        fprintf(out, " %s", fg_builtin_policies[i].name);
    fprintf(out, "\n"
                 "  --gpu-memory-gib N    the memory of each GPU (default 80)\n"
                 "  --out REPORT.html     also write a self-contained HTML report with charts\n"
                 "  --json                one JSON object instead of key-value lines\n"
                 "  --pods LIST           only these pods: hashes, hash prefixes or positions, comma-separated\n"
                 "  --half even|odd       only the pods at even or odd positions in hash order\n"
                 "  --placement NAME      the scheduler's placement policy (default bestfit)\n"
                 "  --warmup DURATION     replayed but not measured from the start (default: the policy's minHistory)\n"
                 "  --consolidation-interval DURATION\n"
                 "                        one GPU emptied onto the others per interval, as the operator does\n"
                 "                        under a policy whose updateMode is Auto (default 1m; 0: never)\n");
    return status;
}

static int bad(const char *fmt, const char *what)
{
    fprintf(stderr, "fracgpu simulate: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, " (fracgpu simulate --help)\n");
    return 2;
}

/* 0 when argv parses, else the exit status after saying why. */
static int parse_args(int argc, char **argv, struct args *a)
{
    *a = (struct args){ .gpu_gib = 80 };
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        if (!strcmp(opt, "--json")) {
            a->json = true;
            continue;
        }
        const char **slot = !strcmp(opt, "--usage")       ? &a->usage
                            : !strcmp(opt, "--policy")    ? &a->policy
                            : !strcmp(opt, "--out")       ? &a->out
                            : !strcmp(opt, "--pods")      ? &a->pods
                            : !strcmp(opt, "--half")      ? &a->half
                            : !strcmp(opt, "--placement") ? &a->placement
                            : !strcmp(opt, "--warmup")    ? &a->warmup
                            : !strcmp(opt, "--consolidation-interval") ? &a->consolidation
                                                          : NULL;
        if (!slot && strcmp(opt, "--gpu-memory-gib"))
            return bad("unknown option \"%s\"", opt);
        if (i + 1 >= argc)
            return bad("%s needs a value", opt);
        const char *val = argv[++i];
        if (slot) {
            *slot = val;
            continue;
        }
        char *end = NULL;
        errno = 0;
        a->gpu_gib = strtod(val, &end);
        if (errno || *end || !(a->gpu_gib >= 1 && a->gpu_gib <= 1024))
            return bad("--gpu-memory-gib \"%s\": a number of GiB from 1 to 1024 is expected", val);
    }
    if (!a->usage)
        return bad("%s is required", "--usage");
    if (!a->policy)
        return bad("%s is required", "--policy");
    if (a->half && strcmp(a->half, "even") && strcmp(a->half, "odd"))
        return bad("--half \"%s\": even or odd is expected", a->half);
    if (a->half && a->pods)
        return bad("%s: give --pods or --half, not both", "--half");
    return 0;
}

/* The policy named by name: a built-in, or a file holding a GPUPolicy or its spec. */
static enum fg_err load_policy(const char *name, struct fg_gpupolicy_spec *spec, char **shown, char *errmsg)
{
    const struct fg_builtin_policy *b = fg_builtin_policy_find(name);
    if (b) {
        *spec = b->spec;
        *shown = fg_strdup(name);
        return FG_OK;
    }
    struct stat st;
    if (stat(name, &st) || !S_ISREG(st.st_mode)) {
        char names[256] = "";
        for (size_t i = 0; i < fg_builtin_policies_count; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                     fg_builtin_policies[i].name);
        return fg_errmsg(errmsg, FG_E_NOT_FOUND_LOCAL,
                         "unknown policy \"%s\": neither a built-in (%s) nor a GPUPolicy file", name, names);
    }
    json_object *doc = NULL;
    enum fg_err err = fg_yaml_load_file(name, &doc, errmsg);
    if (err)
        return err;
    json_object *spec_obj = doc;
    const char *kind = fg_json_get_str(doc, "kind", NULL);
    if (json_object_is_type(doc, json_type_object) && (kind || json_object_object_get_ex(doc, "spec", NULL))) {
        if (kind && strcmp(kind, FG_GPUPOLICY_KIND))
            err = fg_errmsg(errmsg, FG_E_INVAL, "%s: kind %s, a GPUPolicy is expected", name, kind);
        spec_obj = fg_json_get(doc, "spec", NULL);
    }
    const char *meta_name = fg_json_get_str(doc, "metadata", "name", NULL);
    char why[FG_ERRMSG_MAX] = "";
    const char *reason = NULL;
    if (!err && fg_gpupolicy_decode(spec_obj, spec, why))
        err = fg_errmsg(errmsg, FG_E_INVAL, "%s: %s", name, why);
    if (!err && fg_gpupolicy_validate(spec, &reason, why))
        err = fg_errmsg(errmsg, FG_E_INVAL, "%s: %s: %s", name, reason, why);
    if (!err)
        *shown = fg_strdup(meta_name ? meta_name : name);
    json_object_put(doc);
    return err;
}

/* Marks the pods args select in sel (one per series). */
static enum fg_err select_pods(const struct args *a, const struct fg_gentd26 *t, bool *sel, char *errmsg)
{
    for (size_t i = 0; i < t->n; i++)
        sel[i] = !a->pods && (!a->half || (i % 2 == 0) == !strcmp(a->half, "even"));
    if (!a->pods)
        return FG_OK;
    char *list = fg_strdup(a->pods), *save = NULL;
    enum fg_err err = FG_OK;
    for (char *tok = strtok_r(list, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save)) {
        char why[FG_ERRMSG_MAX] = "";
        const struct fg_gentd26_series *s = fg_gentd26_find(t, tok, why);
        if (!s)
            err = fg_errmsg(errmsg, FG_E_INVAL, "--pods: %s", why);
        else
            sel[s - t->series] = true;
    }
    free(list);
    return err;
}

static void progress(void *ud, double done)
{
    (void)ud;
    int width = 40, full = (int)(done * width + 0.5);
    fprintf(stderr, "\r[%.*s%*s] %3.0f%%", full, "========================================", width - full, "",
            100 * done);
    if (done >= 1)
        fputc('\n', stderr);
    fflush(stderr);
}

static json_object *fixed(double v, int decimals)
{
    char text[64];
    snprintf(text, sizeof text, "%.*f", decimals, isfinite(v) ? v : 0);
    return json_object_new_double_s(v, text);
}

static void print(const struct args *a, const char *policy, const char *selection, const struct fg_sim_result *r)
{
    if (!a->json) {
        printf("policy %s\npods %zu\nselection %s\nminutes %zu\nwarmup_minutes %zu\ngpus_peak %d\ngpus_peak_all %d\ngpus_mean %.2f\none_per_pod %d\n"
               "hindsight %d\nsum_of_peaks %d\nmemory_overflow_gpu_minutes %llu\ncontended_gpu_minutes %llu\n"
               "contended_gpu_minutes_pct %.3f\ngpu_minutes %llu\noverrun_pct %.3f\noverrun_compute_pct %.3f\n"
               "overrun_memory_pct %.3f\nsamples %llu\nchanges %llu\nchanges_per_pod_day %.3f\nconsolidations %llu\nrefused %llu\n"
               "elapsed_ms %.1f\n",
               policy, r->pods, selection, r->minutes, r->warmup_minutes, r->gpus_peak, r->gpus_peak_all, r->gpus_mean, r->one_per_pod, r->hindsight,
               r->sum_of_peaks, (unsigned long long)r->memory_overflow_gpu_minutes,
               (unsigned long long)r->contended_gpu_minutes, r->contended_gpu_minutes_pct,
               (unsigned long long)r->gpu_minutes, r->overrun_pct, r->overrun_compute_pct, r->overrun_memory_pct,
               (unsigned long long)r->samples, (unsigned long long)r->changes, r->changes_per_pod_day,
               (unsigned long long)r->consolidations, (unsigned long long)r->refused, r->elapsed_ms);
        return;
    }
    json_object *o = json_object_new_object();
    json_object_object_add(o, "policy", json_object_new_string(policy));
    json_object_object_add(o, "pods", json_object_new_int64((int64_t)r->pods));
    json_object_object_add(o, "selection", json_object_new_string(selection));
    json_object_object_add(o, "minutes", json_object_new_int64((int64_t)r->minutes));
    json_object_object_add(o, "warmup_minutes", json_object_new_int64((int64_t)r->warmup_minutes));
    json_object_object_add(o, "gpus_peak", json_object_new_int(r->gpus_peak));
    json_object_object_add(o, "gpus_peak_all", json_object_new_int(r->gpus_peak_all));
    json_object_object_add(o, "gpus_mean", fixed(r->gpus_mean, 2));
    json_object_object_add(o, "one_per_pod", json_object_new_int(r->one_per_pod));
    json_object_object_add(o, "hindsight", json_object_new_int(r->hindsight));
    json_object_object_add(o, "sum_of_peaks", json_object_new_int(r->sum_of_peaks));
    json_object_object_add(o, "memory_overflow_gpu_minutes", json_object_new_int64((int64_t)r->memory_overflow_gpu_minutes));
    json_object_object_add(o, "contended_gpu_minutes", json_object_new_int64((int64_t)r->contended_gpu_minutes));
    json_object_object_add(o, "contended_gpu_minutes_pct", fixed(r->contended_gpu_minutes_pct, 3));
    json_object_object_add(o, "gpu_minutes", json_object_new_int64((int64_t)r->gpu_minutes));
    json_object_object_add(o, "overrun_pct", fixed(r->overrun_pct, 3));
    json_object_object_add(o, "overrun_compute_pct", fixed(r->overrun_compute_pct, 3));
    json_object_object_add(o, "overrun_memory_pct", fixed(r->overrun_memory_pct, 3));
    json_object_object_add(o, "samples", json_object_new_int64((int64_t)r->samples));
    json_object_object_add(o, "changes", json_object_new_int64((int64_t)r->changes));
    json_object_object_add(o, "changes_per_pod_day", fixed(r->changes_per_pod_day, 3));
    json_object_object_add(o, "consolidations", json_object_new_int64((int64_t)r->consolidations));
    json_object_object_add(o, "refused", json_object_new_int64((int64_t)r->refused));
    json_object_object_add(o, "elapsed_ms", fixed(r->elapsed_ms, 1));
    puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
}

static int write_report(const struct args *a, const char *policy, const char *selection, const struct fg_sim_result *r)
{
    struct fg_buf page = FG_BUF_INIT;
    struct fg_sim_report_info info = { policy, a->usage, selection, (int64_t)llround(a->gpu_gib * 1024) };
    fg_sim_report_html(&page, &info, r);
    FILE *f = fopen(a->out, "w");
    bool ok = f && fwrite(page.data, 1, page.len, f) == page.len;
    ok = f && !fclose(f) && ok;
    if (!ok)
        fprintf(stderr, "fracgpu simulate: cannot write %s: %s\n", a->out, strerror(errno));
    fg_buf_cleanup(&page);
    return ok ? 0 : 1;
}

int fg_cmd_simulate(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
        return usage(stdout, 0);
    struct args a;
    int status = parse_args(argc, argv, &a);
    if (status)
        return status;
    char errmsg[FG_ERRMSG_MAX] = "";
    struct fg_sim_opts o = { .gpu_memory_mib = (int64_t)llround(a.gpu_gib * 1024),
                             .placement = a.placement ? a.placement : "bestfit", .warmup_ms = -1 };
    if (a.warmup && (fg_duration_parse(a.warmup, &o.warmup_ms, errmsg) || o.warmup_ms < 0))
        return bad("--warmup \"%s\": a duration such as 6h or 90m is expected", a.warmup);
    /* the operator's --consolidation-interval default (scheduler/adapter/adapter.h) */
    o.consolidation_interval_ms = a.consolidation && !strcmp(a.consolidation, "0") ? 0 : 60 * 1000;
    if (a.consolidation && strcmp(a.consolidation, "0") && (fg_duration_parse(a.consolidation, &o.consolidation_interval_ms, errmsg) ||
                            o.consolidation_interval_ms < 0))
        return bad("--consolidation-interval \"%s\": a duration such as 1m, or 0 for none, is expected", a.consolidation);
    char *policy = NULL;
    struct fg_gentd26 t = { 0 };
    bool *sel = NULL;
    struct stat st;
    enum fg_err err = load_policy(a.policy, &o.policy, &policy, errmsg);
    if (!err && stat(a.usage, &st))
        err = fg_errmsg(errmsg, FG_E_IO, "--usage %s: %s", a.usage, strerror(errno));
    if (!err)
        err = S_ISDIR(st.st_mode) ? fg_gentd26_load(&t, a.usage, errmsg) : fg_gentd26_load_combined(&t, a.usage, errmsg);
    if (!err) {
        sel = fg_calloc(t.n ? t.n : 1, sizeof *sel);
        err = select_pods(&a, &t, sel, errmsg);
    }
    struct fg_sim_result r;
    if (!err) {
        o.policy_name = policy;
        o.selected = sel;
        if (isatty(STDERR_FILENO))
            o.progress = progress;
        err = fg_sim_run(&t, &o, &r, errmsg);
    }
    if (err) {
        fprintf(stderr, "fracgpu simulate: %s\n", errmsg);
        status = 2;
    } else {
        const char *selection = a.pods ? a.pods : a.half ? a.half : "all";
        print(&a, policy, selection, &r);
        fflush(stdout);
        if (a.out)
            status = write_report(&a, policy, selection, &r);
        fg_sim_result_cleanup(&r);
    }
    free(sel);
    free(policy);
    fg_gentd26_cleanup(&t);
    return status;
}
