/*
 * fuzz — what every fuzz target in this directory defines, and the one helper they share.
 *
 * A target is one file, fuzz_<name>.c, defining LLVMFuzzerTestOneInput: it hands the bytes to the
 * production code that reads such bytes in the product (a decoder, a parser, a handler), exactly as
 * the product calls it, and frees everything that call made, since a leak is a finding too. Built
 * with FG_FUZZ=ON (clang) a target is linked with libFuzzer, which generates the inputs; otherwise
 * with replay_main.c, which runs the checked-in seeds and regressions once each, so every input that
 * ever broke a target stays a test of the normal sanitizer build. A finding is what a sanitizer
 * reports, or an abort() of the target itself where a property that must hold for every input (a
 * round trip, a documented result) does not. README.md says how to run them.
 */
#ifndef FG_FUZZ_FUZZ_H
#define FG_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated string (caller frees), for the parsers that take C strings. An input
 * with a NUL byte in it is cut there, as a C string reader would see it. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = fg_malloc(size + 1);
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
