/*
 * cmd_replay — `fracgpu replay`: the placement experiment of docs/benchmarks.md
 *   ("Placement quality") from the command line.
 *
 *   fracgpu replay --nodes NODES.csv --pods PODS.csv --policy NAME (--seed S | --seeds A-B)
 *                  [--tune 1.3] [--in-order] [--placements FILE.csv] [--json]
 *
 * Prints one line per seed and, with --seeds, one for the mean: a table row by default, a JSON object
 * with --json (trace, policy, seeds, unallocated_pct_at_100, alloc_pct_at_130, frag_pct_at_80,
 * pods_failed, pods_submitted, elapsed_ms; null for a figure the run never reached). Exit status 0, 1 on bad input (message on stderr), 2 on
 * bad usage.
 *
 * --in-order replays the pod list as a live cluster would receive it (replay.h: each pod once, in
 * file order, ties to the node first by name). --placements (one seed only) writes where each
 * submitted pod went, in submission order: CSV with the header `pod,outcome,node,gpus`, outcome
 * `placed` or `unplaced` (node and gpus then empty), gpus the node's GPU indices joined by '|' (empty
 * for a CPU-only pod) — what a live run's bindings are compared with (e2e_sched_replay_agree).
 */
#include <errno.h>
#include <json-c/json.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "scheduler/policies/policy.h"
#include "scheduler/replay/cmd_replay.h"
#include "scheduler/replay/replay.h"

struct replay_args {
    const char *nodes, *pods, *policy, *placements;
    long first, last;
    double tune;
    bool json, in_order;
};

/* Prints the usage to out; returns the exit status that goes with it. */
static int usage(FILE *out, int status)
{
    fprintf(out, "usage: fracgpu replay --nodes NODES.csv --pods PODS.csv --policy NAME "
                 "(--seed S | --seeds A-B) [--tune 1.3] [--in-order] [--placements FILE.csv] [--json]\n"
                 "  --in-order             each pod once, in file order; ties go to the node first by name\n"
                 "  --placements FILE.csv  where each pod went (pod,outcome,node,gpus), one seed only\n"
                 "placement policies:");
    for (size_t i = 0; fg_sched_policy_names[i]; i++)
        fprintf(out, " %s", fg_sched_policy_names[i]);
    fprintf(out, "\n");
    return status;
}

/* Says what is wrong with the command line (then the usage follows); false, for parse_args. */
static bool bad(const char *fmt, const char *what)
{
    fprintf(stderr, "fracgpu replay: ");
    fprintf(stderr, fmt, what);
    fputc('\n', stderr);
    return false;
}

static bool parse_args(int argc, char **argv, struct replay_args *a)
{
    *a = (struct replay_args){ .first = -1, .last = -1, .tune = 1.3 };
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(opt, "--json")) {
            a->json = true;
            continue;
        }
        if (!strcmp(opt, "--in-order")) {
            a->in_order = true;
            continue;
        }
        static const char *const valued[] = { "--nodes", "--pods", "--policy", "--placements", "--seed", "--seeds",
                                              "--tune", NULL };
        bool known = false;
        for (size_t k = 0; valued[k] && !known; k++)
            known = !strcmp(opt, valued[k]);
        if (!known)
            return bad("unknown option \"%s\"", opt);
        if (!val)
            return bad("%s needs a value", opt);
        i++;
        if (!strcmp(opt, "--nodes"))
            a->nodes = val;
        else if (!strcmp(opt, "--pods"))
            a->pods = val;
        else if (!strcmp(opt, "--policy"))
            a->policy = val;
        else if (!strcmp(opt, "--placements"))
            a->placements = val;
        else if (!strcmp(opt, "--seed")) {
            a->first = a->last = strtol(val, &end, 10);
            if (!*val || *end || a->first < 0)
                return bad("--seed \"%s\": a seed (an integer from 0) is expected", val);
        } else if (!strcmp(opt, "--seeds")) {
            a->first = strtol(val, &end, 10);
            if (end != val && *end == '-')
                a->last = strtol(end + 1, &end, 10);
            if (end == val || *end || a->first < 0 || a->last < a->first)
                return bad("--seeds \"%s\": a range of seeds such as 42-51 is expected", val);
        } else {
            a->tune = strtod(val, &end);
            if (!*val || *end || !(a->tune > 0 && a->tune <= 10))
                return bad("--tune \"%s\": a number above 0 and at most 10 is expected", val);
        }
    }
    static const char *const required[] = { "--nodes", "--pods", "--policy" };
    const char *given[] = { a->nodes, a->pods, a->policy };
    for (size_t k = 0; k < 3; k++)
        if (!given[k])
            return bad("%s is required", required[k]);
    if (a->first < 0)
        return bad("%s is required", "--seed or --seeds");
    if (a->placements && a->first != a->last)
        return bad("%s writes one seed's placements: give --seed, not --seeds", "--placements");
    return true;
}

/* One row of --placements. */
static void write_placement(void *ud, const struct fg_sched_trace_pod *tp, const struct fg_sched_cluster *c,
                            const struct fg_sched_placement *pl)
{
    FILE *f = ud;
    if (pl->code != FG_SCHED_SUCCESS) {
        fprintf(f, "%s,unplaced,,\n", tp->name);
        return;
    }
    fprintf(f, "%s,placed,%s,", tp->name, c->nodes[pl->node].name);
    for (int g = 0; g < pl->n_gpus; g++)
        fprintf(f, "%s%d", g ? "|" : "", pl->gpus[g]);
    fputc('\n', f);
}

/* "openb_pod_list_default.csv" → "default". */
static char *trace_name(const char *path)
{
    char *copy = fg_strdup(path), *base = basename(copy);
    const char *prefix = "openb_pod_list_";
    if (!strncmp(base, prefix, strlen(prefix)))
        base += strlen(prefix);
    char *dot = strrchr(base, '.');
    if (dot)
        *dot = '\0';
    char *name = fg_strdup(base);
    free(copy);
    return name;
}

/* A JSON number written with `decimals` digits after the point, or null (NULL) when v is not finite
 * (a curve point the run never reached, as at 130% with --tune below 1.3). */
static struct json_object *fixed(double v, int decimals)
{
    if (!isfinite(v))
        return NULL;
    char text[64];
    snprintf(text, sizeof text, "%.*f", decimals, v);
    return json_object_new_double_s(v, text);
}

static void print_row(const struct replay_args *a, const char *trace, const char *seeds,
                      const struct fg_sched_replay_result *r)
{
    if (!a->json) {
        printf("%-12s %-16s %-6s unalloc@100 %6.2f  alloc@130 %6.2f  frag@80 %6.2f  failed %5d/%-5d  %8.1f ms\n",
               trace, a->policy, seeds, r->unallocated_pct_at_100, r->alloc_pct_at_130, r->frag_pct_at_80,
               r->pods_failed, r->pods_submitted, r->elapsed_ms);
        return;
    }
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "trace", json_object_new_string(trace));
    json_object_object_add(o, "policy", json_object_new_string(a->policy));
    json_object_object_add(o, "seeds", json_object_new_string(seeds));
    json_object_object_add(o, "unallocated_pct_at_100", fixed(r->unallocated_pct_at_100, 2));
    json_object_object_add(o, "alloc_pct_at_130", fixed(r->alloc_pct_at_130, 2));
    json_object_object_add(o, "frag_pct_at_80", fixed(r->frag_pct_at_80, 2));
    json_object_object_add(o, "pods_failed", json_object_new_int(r->pods_failed));
    json_object_object_add(o, "pods_submitted", json_object_new_int(r->pods_submitted));
    json_object_object_add(o, "elapsed_ms", fixed(r->elapsed_ms, 1));
    puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
}

int fg_cmd_replay(int argc, char **argv)
{
    struct replay_args a;
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
        return usage(stdout, 0);
    if (!parse_args(argc, argv, &a))
        return usage(stderr, 2);
    char errmsg[FG_ERRMSG_MAX] = "";
    struct fg_sched_trace t;
    fg_sched_trace_init(&t);
    int status = 1;
    char *trace = trace_name(a.pods);
    FILE *placements = NULL;
    if (fg_sched_trace_load_nodes(&t, a.nodes, errmsg) || fg_sched_trace_load_pods(&t, a.pods, errmsg))
        goto out_free_trace;
    if (a.placements && !(placements = fopen(a.placements, "w"))) {
        snprintf(errmsg, sizeof errmsg, "%s: %s", a.placements, strerror(errno));
        goto out_free_trace;
    }
    if (placements)
        fputs("pod,outcome,node,gpus\n", placements);
    struct fg_sched_replay_result mean = { 0 };
    long runs = a.last - a.first + 1;
    for (long seed = a.first; seed <= a.last; seed++) {
        struct fg_sched_replay_result r;
        struct fg_sched_replay_opts ro = { .policy = a.policy, .seed = (uint64_t)seed, .tune = a.tune,
                                           .in_order = a.in_order, .on_pod = placements ? write_placement : NULL,
                                           .ud = placements };
        if (fg_sched_replay_run(&t, &ro, &r, errmsg))
            goto out_free_trace;
        char seeds[32];
        snprintf(seeds, sizeof seeds, "%ld", seed);
        print_row(&a, trace, seeds, &r);
        fflush(stdout);
        mean.unallocated_pct_at_100 += r.unallocated_pct_at_100 / (double)runs;
        mean.alloc_pct_at_130 += r.alloc_pct_at_130 / (double)runs;
        mean.frag_pct_at_80 += r.frag_pct_at_80 / (double)runs;
        mean.pods_failed += r.pods_failed;
        mean.pods_submitted += r.pods_submitted;
        mean.elapsed_ms += r.elapsed_ms / (double)runs;
    }
    if (runs > 1) {
        char seeds[64];
        snprintf(seeds, sizeof seeds, "%ld-%ld", a.first, a.last);
        mean.pods_failed = (int)(mean.pods_failed / runs);
        mean.pods_submitted = (int)(mean.pods_submitted / runs);
        print_row(&a, trace, seeds, &mean);
    }
    status = 0;
out_free_trace:
    if (placements && fclose(placements) && !status) {
        snprintf(errmsg, sizeof errmsg, "%s: %s", a.placements, strerror(errno));
        status = 1;
    }
    if (status)
        fprintf(stderr, "fracgpu replay: %s\n", errmsg);
    free(trace);
    fg_sched_trace_cleanup(&t);
    return status;
}
