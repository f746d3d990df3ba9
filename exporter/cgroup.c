/* cgroup — pod UID and container ID from a process's cgroup paths; see cgroup.h. */
#include "exporter/cgroup.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"

#define FG_CGROUP_MAX_FILE (64u << 10)

static bool all_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* A pod UID: 32 hex digits (static pods' config hash) or a UUID with '-' or systemd's '_'. Copied
 * into out with dashes. */
static bool take_uid(const char *s, size_t n, char *out, size_t outsz)
{
    if (n == 32 && all_hex(s, n)) {
        snprintf(out, outsz, "%.*s", (int)n, s);
        return true;
    }
    if (n != 36)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? (s[i] != '-' && s[i] != '_') : !isxdigit((unsigned char)s[i]))
            return false;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = s[i] == '_' ? '-' : s[i];
    out[n] = '\0';
    return true;
}

/* The pod UID in one path component: "pod<uid>" (cgroupfs) or "...-pod<uid>.slice" (systemd),
 * possibly followed by ":runtime:<id>". */
static bool component_uid(const char *c, size_t n, char *out, size_t outsz)
{
    const char *colon = memchr(c, ':', n);
    if (colon)
        n = (size_t)(colon - c);
    if (n > 6 && memcmp(c + n - 6, ".slice", 6) == 0) {
        n -= 6;
        for (size_t i = n; i >= 4; i--)
            if (memcmp(c + i - 4, "-pod", 4) == 0)
                return take_uid(c + i, n - i, out, outsz);
        return false;
    }
    return n > 3 && memcmp(c, "pod", 3) == 0 && take_uid(c + 3, n - 3, out, outsz);
}

static bool take_id(const char *s, size_t n, char *out, size_t outsz)
{
    if (n < 12 || n >= outsz || n > 128 || !all_hex(s, n))
        return false;
    memcpy(out, s, n);
    out[n] = '\0';
    return true;
}

/* The container ID in a component: "cri-containerd-<id>.scope", "crio-<id>.scope" (not conmon),
 * "docker-<id>.scope", cgroupfs "crio-<id>" or a bare "<id>", or the ":runtime:<id>" tail. */
static bool component_id(const char *c, size_t n, char *out, size_t outsz)
{
    const char *colon = NULL;
    for (size_t i = 0; i < n; i++)
        if (c[i] == ':')
            colon = c + i;
    if (colon)
        return take_id(colon + 1, n - (size_t)(colon + 1 - c), out, outsz);
    if (n > 6 && memcmp(c + n - 6, ".scope", 6) == 0)
        n -= 6;
    static const char *const prefixes[] = { "cri-containerd-", "crio-", "docker-", "containerd-", "" };
    if (n > 12 && memcmp(c, "crio-conmon-", 12) == 0)
        return false;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t pl = strlen(prefixes[i]);
        if (n > pl && memcmp(c, prefixes[i], pl) == 0 && take_id(c + pl, n - pl, out, outsz))
            return true;
    }
    return false;
}

/* Looks for the pod in one path; true when found (the container ID is optional). */
static bool parse_path(const char *p, size_t n, struct fg_cgroup_ident *out)
{
    const char *end = p + n;
    while (p < end) {
        while (p < end && *p == '/')
            p++;
        const char *c = p;
        while (p < end && *p != '/')
            p++;
        size_t cn = (size_t)(p - c);
        if (!cn || !component_uid(c, cn, out->pod_uid, sizeof out->pod_uid))
            continue;
        out->container_id[0] = '\0';
        if (memchr(c, ':', cn) && component_id(c, cn, out->container_id, sizeof out->container_id))
            return true;
        while (p < end && *p == '/')
            p++;
        const char *next = p;
        while (p < end && *p != '/')
            p++;
        if (p > next && !component_id(next, (size_t)(p - next), out->container_id, sizeof out->container_id))
            out->container_id[0] = '\0';
        return true;
    }
    return false;
}

enum fg_err fg_cgroup_parse(const char *text, size_t len, struct fg_cgroup_ident *out, char *errmsg)
{
    memset(out, 0, sizeof *out);
    struct fg_cgroup_ident best = { { 0 }, { 0 } };
    bool any_line = false, found = false;
    if (memchr(text, '\0', len))
        return fg_errmsg(errmsg, FG_E_PARSE, "NUL byte in a cgroup file");
    const char *end = text + len;
    for (const char *line = text; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *le = nl ? nl : end;
        if (le > line) {
            /* "hierarchy-id:controllers:path"; the path may itself hold ':' */
            const char *c1 = memchr(line, ':', (size_t)(le - line));
            const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
            bool numeric = c1 && c1 > line;
            for (const char *q = line; numeric && q < c1; q++)
                numeric = isdigit((unsigned char)*q);
            if (!numeric || !c2 || c2 + 1 >= le || c2[1] != '/')
                return fg_errmsg(errmsg, FG_E_PARSE, "not a cgroup line: \"%.*s\"",
                                 (int)((le - line) > 80 ? 80 : (le - line)), line);
            any_line = true;
            struct fg_cgroup_ident cur;
            memset(&cur, 0, sizeof cur);
            if (parse_path(c2 + 1, (size_t)(le - c2 - 1), &cur)) {
                if (!found || (!best.container_id[0] && cur.container_id[0]))
                    best = cur;
                found = true;
            }
        }
        line = nl ? nl + 1 : end;
    }
    if (!any_line)
        return fg_errmsg(errmsg, FG_E_PARSE, "empty cgroup file");
    if (!found)
        return FG_E_NOT_FOUND_LOCAL;
    *out = best;
    return FG_OK;
}

enum fg_err fg_cgroup_read_pid(const char *proc_root, unsigned pid, struct fg_cgroup_ident *out, char *errmsg)
{
    memset(out, 0, sizeof *out);
    char path[4096];
    snprintf(path, sizeof path, "%s/%u/cgroup", proc_root, pid);
    struct fg_buf b;
    fg_buf_init(&b, FG_CGROUP_MAX_FILE);
    enum fg_err err = fg_buf_read_file(&b, path, errmsg);
    if (err == FG_OK)
        err = fg_cgroup_parse(fg_buf_str(&b), b.len, out, errmsg);
    else if (err == FG_E_TOO_BIG)
        err = fg_errmsg(errmsg, FG_E_PARSE, "%s: larger than %u bytes", path, FG_CGROUP_MAX_FILE);
    fg_buf_cleanup(&b);
    return err;
}
