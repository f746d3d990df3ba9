/* timefmt — RFC 3339 timestamps as the Kubernetes API writes them; see timefmt.h. */
#include "base/timefmt.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void format(int64_t wall_ms, bool micro, char out[FG_TIME_MAX])
{
    int64_t secs = wall_ms >= 0 ? wall_ms / 1000 : (wall_ms - 999) / 1000;
    time_t t = (time_t)secs;
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t n = strftime(out, FG_TIME_MAX, "%Y-%m-%dT%H:%M:%S", &tm);
    if (micro)
        snprintf(out + n, FG_TIME_MAX - n, ".%03d000Z", (int)(wall_ms - secs * 1000));
    else
        snprintf(out + n, FG_TIME_MAX - n, "Z");
}

void fg_time_format(int64_t wall_ms, char out[FG_TIME_MAX])
{
    format(wall_ms, false, out);
}

void fg_time_format_micro(int64_t wall_ms, char out[FG_TIME_MAX])
{
    format(wall_ms, true, out);
}

/* n decimal digits at *s into *out, advancing *s. */
static bool digits(const char **s, int n, int *out)
{
    *out = 0;
    for (int i = 0; i < n; i++, (*s)++) {
        if (!isdigit((unsigned char)**s))
            return false;
        *out = *out * 10 + (**s - '0');
    }
    return true;
}

/* One of the characters of `any` at *s, advancing *s. */
static bool expect(const char **s, const char *any)
{
    if (!**s || !strchr(any, **s))
        return false;
    (*s)++;
    return true;
}

static int days_in_month(int year, int month)
{
    static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month == 2 && leap ? 29 : days[month - 1];
}

bool fg_time_parse(const char *s, int64_t *wall_ms)
{
    int year, mon, day, hour, min, sec, frac_ms = 0, off_h = 0, off_m = 0, sign = 0;
    if (!s || !digits(&s, 4, &year) || !expect(&s, "-") || !digits(&s, 2, &mon) || !expect(&s, "-") ||
        !digits(&s, 2, &day) || !expect(&s, "Tt") || !digits(&s, 2, &hour) || !expect(&s, ":") ||
        !digits(&s, 2, &min) || !expect(&s, ":") || !digits(&s, 2, &sec))
        return false;
    if (*s == '.') {
        int scale = 100, n = 0;
        for (s++; isdigit((unsigned char)*s); s++, n++) {
            frac_ms += (*s - '0') * scale;
            scale /= 10;
        }
        if (n == 0 || n > 9)
            return false;
    }
    if (*s == '+' || *s == '-') {
        sign = *s++ == '-' ? -1 : 1;
        if (!digits(&s, 2, &off_h) || !expect(&s, ":") || !digits(&s, 2, &off_m) || off_h > 23 || off_m > 59)
            return false;
    } else if (!expect(&s, "Zz")) {
        return false;
    }
    if (*s || mon < 1 || mon > 12 || day < 1 || day > days_in_month(year, mon) || hour > 23 || min > 59 || sec > 59)
        return false;
    struct tm tm = { .tm_year = year - 1900, .tm_mon = mon - 1, .tm_mday = day,
                     .tm_hour = hour, .tm_min = min, .tm_sec = sec };
    int64_t t = (int64_t)timegm(&tm) - (int64_t)sign * (off_h * 3600 + off_m * 60);
    *wall_ms = t * 1000 + frac_ms;
    return true;
}
