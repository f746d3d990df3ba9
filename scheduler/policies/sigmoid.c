/*
 * sigmoid — the integer sigmoid score from a table of its steps (see sigmoid_int.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "scheduler/policies/sigmoid_int.h"

#define WIDTH 32.0
#define INV_WIDTH 0.03125           /* 1 / WIDTH, exact */

int64_t fg__sigmoid_exact(double delta)
{
    return (int64_t)(100.0 / (1.0 + exp(-delta / 1000.0)));
}

/* Doubles mapped to integers in the same order, and back. */
static int64_t ordered(double d)
{
    int64_t i;
    memcpy(&i, &d, sizeof i);
    return i < 0 ? INT64_MIN - i : i;
}

static double unordered(int64_t i)
{
    i = i < 0 ? INT64_MIN - i : i;
    double d;
    memcpy(&d, &i, sizeof d);
    return d;
}

/* The least delta in (-1e6, 1e6] with fg__sigmoid_exact(delta) ≥ s (scores 0 at -1e6, 100 at 1e6). */
static double least_reaching(int64_t s)
{
    int64_t lo = ordered(-1e6), hi = ordered(1e6);  /* score(lo) < s ≤ score(hi) */
    while ((uint64_t)hi - (uint64_t)lo > 1) {
        int64_t mid = lo + (int64_t)(((uint64_t)hi - (uint64_t)lo) / 2);
        if (fg__sigmoid_exact(unordered(mid)) >= s)
            hi = mid;
        else
            lo = mid;
    }
    return unordered(hi);
}

void fg__sigmoid_init(struct fg__sigmoid *sg)
{
    memset(sg, 0, sizeof *sg);
    for (int s = 1; s <= 100; s++)
        sg->step[s] = least_reaching(s);
    sg->step[101] = INFINITY;
    sg->base = sg->step[1] - WIDTH;
    sg->n = (size_t)((sg->step[99] - sg->base) * INV_WIDTH) + 2;
    sg->buckets = fg_malloc(sg->n * sizeof *sg->buckets);
    for (size_t b = 0; b < sg->n; b++) {
        double start = sg->base + (double)b * WIDTH;
        int s = 0;
        while (s < 100 && sg->step[s + 1] <= start)
            s++;
        sg->buckets[b] = (struct fg__sigmoid_bucket){ s ? sg->step[s] : -INFINITY, sg->step[s + 1], s };
    }
}

void fg__sigmoid_cleanup(struct fg__sigmoid *sg)
{
    free(sg->buckets);
    memset(sg, 0, sizeof *sg);
}

int64_t fg__sigmoid_score(const struct fg__sigmoid *sg, double delta)
{
    double x = (delta - sg->base) * INV_WIDTH;
    if (x >= 0 && x < (double)sg->n) {
        const struct fg__sigmoid_bucket *b = &sg->buckets[(size_t)x];
        if (delta - b->prev > FG__SIGMOID_MARGIN && fabs(b->next - delta) > FG__SIGMOID_MARGIN)
            return b->score + (delta > b->next);
    } else if (delta < sg->base) {  /* 32 milli or more below the first step */
        return 0;
    } else if (delta >= sg->base) {  /* past the table (32 milli or more after step 99); NaN is exact */
        if (delta < sg->step[100] - FG__SIGMOID_MARGIN)
            return 99;
        if (delta > sg->step[100] + FG__SIGMOID_MARGIN)
            return 100;
    }
    return fg__sigmoid_exact(delta);
}
