/*
 * assert — the one assertion of fracgpu: on in every build, release included.
 *
 * fg_assert(cond) is for what can only be false through a bug in fracgpu itself (a metric name
 * registered twice with two types, a map used on the wrong thread), never for bad input, which is
 * reported through enum fg_err. A failed assertion logs one error line naming the condition, the
 * file and the line, then aborts so that the core dump holds the state that broke it.
 */
#ifndef FG_BASE_ASSERT_H
#define FG_BASE_ASSERT_H

#define fg_assert(cond) ((cond) ? (void)0 : fg__assert_fail(#cond, __FILE__, __LINE__))

void fg__assert_fail(const char *cond, const char *file, int line) __attribute__((noreturn));

#endif
