/* scraped — per-pod GPU use from a node agent's exposition; see usage.h. */
#include "collector/scraped.h"

#include <json-c/linkhash.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

#define UTIL "fracgpu_pod_gpu_utilization_ratio"
#define MEM "fracgpu_pod_gpu_memory_used_bytes"

/* The index maps "ns/name" to the pod's place + 1 (the array moves as it grows). */
static struct fg_scraped_pod *pod_of(struct fg_scraped *u, const char *ns, const char *name)
{
    char *key = fg_asprintf("%s/%s", ns, name);
    void *v = NULL;
    if (lh_table_lookup_ex(u->index, key, &v)) {
        free(key);
        return &u->pods[(uintptr_t)v - 1];
    }
    if (u->npods == FG_SCRAPED_MAX_PODS) {
        free(key);
        return NULL;
    }
    if ((u->npods & (u->npods - 1)) == 0)   /* 0, 1, 2, 4, ...: grow at powers of two */
        u->pods = fg_realloc(u->pods, (u->npods ? 2 * u->npods : 1) * sizeof(*u->pods));
    size_t i = u->npods++;
    u->pods[i] = (struct fg_scraped_pod){ .ns = fg_strdup(ns), .name = fg_strdup(name) };
    lh_table_insert(u->index, key, (void *)(uintptr_t)(i + 1));
    return &u->pods[i];
}

static struct fg_scraped_gpu *gpu_of(struct fg_scraped_pod *p, const char *uuid)
{
    for (size_t i = 0; i < p->ngpus; i++)
        if (!strcmp(p->gpus[i].uuid, uuid))
            return &p->gpus[i];
    if (p->ngpus == FG_SCRAPED_MAX_GPUS)
        return NULL;
    p->gpus[p->ngpus] = (struct fg_scraped_gpu){ .uuid = fg_strdup(uuid) };
    return &p->gpus[p->ngpus++];
}

static bool on_sample(void *ud, const struct fg_prom_parsed *s)
{
    struct fg_scraped *u = ud;
    bool util = !strcmp(s->name, UTIL), mem = !util && !strcmp(s->name, MEM);
    if (!util && !mem)
        return true;
    const char *ns = fg_prom_parsed_label(s, "namespace"), *pod = fg_prom_parsed_label(s, "pod");
    const char *uuid = fg_prom_parsed_label(s, "uuid");
    if (!ns || !pod || !*ns || !*pod)
        return true;   /* a process in no pod */
    u->series++;
    if (!isfinite(s->value))
        u->nonfinite++;
    if (!uuid || !*uuid) {
        u->no_uuid++;
        return true;
    }
    struct fg_scraped_pod *p = pod_of(u, ns, pod);
    struct fg_scraped_gpu *g = p ? gpu_of(p, uuid) : NULL;
    if (!g) {
        u->dropped++;
        return true;
    }
    if (util) {
        g->has_compute = true;
        g->compute_ratio += s->value;
    } else {
        g->has_memory = true;
        g->memory_bytes += s->value;
    }
    return true;
}

static void free_key(struct lh_entry *e)
{
    free((void *)lh_entry_k(e));
}

enum fg_err fg_scraped_read(const char *body, size_t len, size_t max_body, struct fg_scraped *u, char *errmsg)
{
    memset(u, 0, sizeof(*u));
    u->index = lh_kchar_table_new(64, free_key);
    struct fg_prom_parse_opts o = FG_PROM_PARSE_OPTS_DEFAULT;
    o.max_body = max_body;
    return fg_prom_parse(body, len, &o, on_sample, u, &u->parse, errmsg);
}

void fg_scraped_cleanup(struct fg_scraped *u)
{
    for (size_t i = 0; i < u->npods; i++) {
        free(u->pods[i].ns);
        free(u->pods[i].name);
        for (size_t k = 0; k < u->pods[i].ngpus; k++)
            free(u->pods[i].gpus[k].uuid);
    }
    free(u->pods);
    if (u->index)
        lh_table_free(u->index);
    memset(u, 0, sizeof(*u));
}
