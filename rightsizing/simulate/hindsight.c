/*
 * hindsight — the packing anchor of docs/benchmarks.md §2: a greedy first-fit-decreasing packer that
 * knows every pod's whole use in advance (see simulate.h). A GPU keeps its tenants' summed memory
 * and utilization per minute; trying a pod on it is one pass over the minutes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "rightsizing/simulate/simulate.h"

struct bin {
    double *mem, *util;
    size_t over;    /* minutes whose summed utilization is above 100% */
};

static const struct fg_sim_usage *sort_base;

static int by_peak_desc(const void *a, const void *b)
{
    double x = sort_base[*(const size_t *)a].peak_mem, y = sort_base[*(const size_t *)b].peak_mem;
    if (x != y)
        return x > y ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* Whether pod fits bin; *over is the bin's minutes above 100% with it. */
static bool fits(const struct bin *b, const struct fg_sim_usage *pod, size_t minutes, double mem_cap, size_t over_cap,
                 size_t *over)
{
    size_t n = b->over;
    for (size_t m = 0; m < minutes; m++) {
        if (b->mem[m] + pod->mem[m] > mem_cap)
            return false;
        if (b->util[m] <= 100 && b->util[m] + pod->util[m] > 100 && ++n > over_cap)
            return false;
    }
    *over = n;
    return true;
}

int fg_sim_hindsight(const struct fg_sim_usage *pods, size_t n, size_t minutes, int64_t gpu_memory_mib)
{
    size_t *order = fg_malloc((n ? n : 1) * sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    sort_base = pods;
    qsort(order, n, sizeof *order, by_peak_desc);
    sort_base = NULL;
    double mem_cap = FG_SIM_HINDSIGHT_FILL * (double)gpu_memory_mib;
    size_t over_cap = (size_t)floor((1.0 - FG_SIM_HINDSIGHT_UTIL_PCTL) * (double)minutes + 1e-9);
    struct bin *bins = fg_calloc(n ? n : 1, sizeof *bins);
    size_t nbins = 0;
    for (size_t k = 0; k < n; k++) {
        const struct fg_sim_usage *pod = &pods[order[k]];
        size_t over = 0, b = 0;
        while (b < nbins && !fits(&bins[b], pod, minutes, mem_cap, over_cap, &over))
            b++;
        if (b == nbins) {
            bins[nbins].mem = fg_calloc(minutes ? minutes : 1, sizeof(double));
            bins[nbins].util = fg_calloc(minutes ? minutes : 1, sizeof(double));
            nbins++;
            over = 0;
            for (size_t m = 0; m < minutes; m++)
                over += pod->util[m] > 100;
        }
        for (size_t m = 0; m < minutes; m++) {
            bins[b].mem[m] += pod->mem[m];
            bins[b].util[m] += pod->util[m];
        }
        bins[b].over = over;
    }
    for (size_t b = 0; b < nbins; b++) {
        free(bins[b].mem);
        free(bins[b].util);
    }
    free(bins);
    free(order);
    return (int)nbins;
}
