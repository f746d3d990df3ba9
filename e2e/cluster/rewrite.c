/* rewrite — variable expansion and mount path mapping for simulated containers; see rewrite.h. */
#include "e2e/cluster/rewrite.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"

char *fg_sim_expand(const char *in, fg_sim_lookup_fn *lookup, void *ud)
{
    struct fg_buf b;
    fg_buf_init(&b, 0);
    fg_buf_put_str(&b, "");
    for (const char *p = in; *p;) {
        if (p[0] == '$' && p[1] == '$') {
            fg_buf_put(&b, "$", 1);
            p += 2;
            continue;
        }
        const char *close = p[0] == '$' && p[1] == '(' ? strchr(p + 2, ')') : NULL;
        if (close) {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(close - p - 2), p + 2);
            const char *v = lookup(ud, name);
            if (v)
                fg_buf_put_str(&b, v);
            else
                fg_buf_put(&b, p, (size_t)(close - p + 1));
            p = close + 1;
            continue;
        }
        fg_buf_put(&b, p++, 1);
    }
    return fg_buf_take(&b);
}

/* The length of a mount path without its trailing slashes ("/" stays "/", length 1). */
static size_t path_len(const char *s)
{
    size_t n = strlen(s);
    while (n > 1 && s[n - 1] == '/')
        n--;
    return n;
}

char *fg_sim_map_paths(const struct fg_sim_mount *mounts, size_t n, const char *in)
{
    struct fg_buf b;
    fg_buf_init(&b, 0);
    fg_buf_put_str(&b, "");
    for (const char *q = in; *q;) {
        bool at_start = q == in || strchr("=:, ", q[-1]);
        const struct fg_sim_mount *best = NULL;
        size_t best_len = 0;
        for (size_t i = 0; at_start && *q == '/' && i < n; i++) {
            size_t len = path_len(mounts[i].container_path);
            bool root = len == 1;   /* "/" holds every absolute path */
            if (!strncmp(q, mounts[i].container_path, len) && (root || !q[len] || strchr("/:,=", q[len])) &&
                (!best || len > best_len)) {
                best = &mounts[i];
                best_len = len;
            }
        }
        if (best) {
            fg_buf_put_str(&b, best->host_path);
            if (best_len == 1)
                fg_buf_put(&b, q, 1);   /* the root's '/' separates the host path from the rest */
            q += best_len;
            continue;
        }
        fg_buf_put(&b, q++, 1);
    }
    return fg_buf_take(&b);
}
