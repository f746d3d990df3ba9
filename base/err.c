/* err — strings for the X-macro error list; see err.h. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

#define FG__ERR_STR(name, str) [name] = str,
static const char *const err_strings[] = { FG_ERR_LIST(FG__ERR_STR) };
#undef FG__ERR_STR
#define FG__ERR_NAME(name, str) [name] = #name,
static const char *const err_names[] = { FG_ERR_LIST(FG__ERR_NAME) };
#undef FG__ERR_NAME

const char *fg_err_str(enum fg_err err)
{
    if ((unsigned)err >= FG_ERR__COUNT)
        return "unknown error";
    return err_strings[err];
}

const char *fg_err_name(enum fg_err err)
{
    if ((unsigned)err >= FG_ERR__COUNT)
        return "FG_E_UNKNOWN";
    return err_names[err];
}

enum fg_err fg_errmsg(char *errmsg, enum fg_err err, const char *fmt, ...)
{
    if (errmsg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errmsg, FG_ERRMSG_MAX, fmt, ap);
        va_end(ap);
    }
    return err;
}
