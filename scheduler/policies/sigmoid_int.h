/*
 * sigmoid — FGD's integer score int(100 · sigmoid(delta / 1000)) without exp on the common path
 * (module-internal).
 *
 * The FGD-family policies score every candidate of every distinct node state with this step
 * function of delta (GPU milli), and exp with its two divisions was about a tenth of a warm decision
 * at 10,000 GPUs. The function is non-decreasing with 100 steps; fg__sigmoid_init finds, by bisection
 * over the doubles, the least delta reaching each score s (1 ≤ s ≤ 100) under the very expression
 * fg__sigmoid_exact computes, and lays the steps out in buckets of 32 milli (narrower than the
 * closest two steps, 40 milli apart at score 50), so that a score is one bucket lookup and a compare.
 *
 * Exactness: fg__sigmoid_score returns fg__sigmoid_exact(delta) for every delta. Away from a step the
 * table's answer is the step function's; the computed expression can only disagree with that where
 * its rounding (a relative 1e-14 or so: two correctly rounded divisions and libm's exp, within 1 ulp)
 * meets a step, which happens within 1e-9 milli of the step; within FG__SIGMOID_MARGIN (1e-6 milli)
 * of a step, and outside the table, the expression itself is evaluated. test_sched_sigmoid compares
 * both on random deltas and on deltas packed around every step.
 */
#ifndef FG_SCHEDULER_POLICIES_SIGMOID_INT_H
#define FG_SCHEDULER_POLICIES_SIGMOID_INT_H

#include <stddef.h>
#include <stdint.h>

#define FG__SIGMOID_MARGIN 1e-6

struct fg__sigmoid_bucket {
    double prev, next;              /* the last step at or before the bucket's start, the first after */
    int64_t score;                  /* the score at the bucket's start */
};

struct fg__sigmoid {
    double step[102];               /* step[s], 1 ≤ s ≤ 100: the least delta whose score is ≥ s; 101: ∞ */
    double base;                    /* the table's start, 32 milli below step[1] */
    struct fg__sigmoid_bucket *buckets;
    size_t n;                       /* buckets, up to 32 milli past step[99]; 0 before init */
};

void fg__sigmoid_init(struct fg__sigmoid *sg);
void fg__sigmoid_cleanup(struct fg__sigmoid *sg);
/* int(100 / (1 + exp(-delta / 1000))), as FGD defines the score. */
int64_t fg__sigmoid_exact(double delta);
/* fg__sigmoid_exact(delta), mostly from the table (sg initialised). */
int64_t fg__sigmoid_score(const struct fg__sigmoid *sg, double delta);

#endif
