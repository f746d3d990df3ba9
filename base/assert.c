/* assert — the always-on assertion; see assert.h. */
#include "base/assert.h"

#include <stdlib.h>

#include "base/log.h"

void fg__assert_fail(const char *cond, const char *file, int line)
{
    fg__log_write(FG_LOG_ERROR, "assert", NULL, NULL, NULL, "assertion failed: %s at %s:%d", cond, file, line);
    abort();
}
