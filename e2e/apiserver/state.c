/*
 * state — the store on disk, so a separate process can restart without losing data.
 *
 * Format: {"resourceVersion":"N","resources":{"v1/pods":[obj,...],"apps/v1/deployments":[...]}}.
 * Saving writes a temporary file next to the target and renames it over, so a crash never leaves a
 * half-written state. Loading inserts the objects as they are (resourceVersions kept), sets the
 * revision counter and starts with an empty watch history, as a restarted kube-apiserver would.
 */
#include "e2e/apiserver/server.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/mem.h"
#include "e2e/apiserver/admit.h"

enum fg_err fg__state_save(struct fg_apiserver *srv, char *errmsg)
{
    struct fg__store *st = &srv->store;
    char *tmp = fg_asprintf("%s.tmp.%ld", srv->state_file, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        enum fg_err err = fg_errmsg(errmsg, FG_E_IO, "cannot write %s: %s", tmp, strerror(errno));
        free(tmp);
        return err;
    }
    fprintf(f, "{\"resourceVersion\":\"%" PRIu64 "\",\"resources\":{", st->rv);
    bool first_type = true;
    for (size_t t = 0; t < srv->reg.n; t++) {
        const struct fg__type *type = srv->reg.types[t];
        struct fg__bucket *b = fg__store_bucket(st, type);
        if (!b->n)
            continue;
        fprintf(f, "%s\"%s\":[", first_type ? "" : ",", type->resource);
        first_type = false;
        for (size_t i = 0; i < b->n; i++) {
            if (i)
                fputc(',', f);
            fwrite(b->v[i]->text->data, 1, b->v[i]->text->len, f);
        }
        fputc(']', f);
    }
    fputs("}}\n", f);
    bool failed = ferror(f) != 0;
    failed |= fclose(f) != 0;
    enum fg_err err = FG_OK;
    if (failed || rename(tmp, srv->state_file) != 0) {
        err = fg_errmsg(errmsg, FG_E_IO, "cannot write state file %s: %s", srv->state_file, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return err;
}

#define CRD_RESOURCE "apiextensions.k8s.io/v1/customresourcedefinitions"

static enum fg_err load_items(struct fg_apiserver *srv, const char *name, json_object *items, char *errmsg)
{
    const struct fg__type *type = fg__registry_find_resource(&srv->reg, name);
    if (!type || !json_object_is_type(items, json_type_array))
        return fg_errmsg(errmsg, FG_E_PARSE, "state file %s: unknown resource %s", srv->state_file, name);
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        json_object *obj = json_object_array_get_idx(items, i);
        if (!fg_json_get_str(obj, "metadata", "name", NULL))
            return fg_errmsg(errmsg, FG_E_PARSE, "state file %s: %s item %zu has no name", srv->state_file, name, i);
        fg__store_insert_loaded(&srv->store, type, json_object_get(obj));
    }
    return FG_OK;
}

enum fg_err fg__state_load(struct fg_apiserver *srv, char *errmsg)
{
    if (access(srv->state_file, F_OK) != 0)
        return fg_errmsg(errmsg, FG_E_NOT_FOUND_LOCAL, "no state file %s", srv->state_file);
    struct fg_buf b = FG_BUF_INIT;
    json_object *doc = NULL;
    enum fg_err err = fg_buf_read_file(&b, srv->state_file, errmsg);
    if (err)
        goto out_buf;
    if ((err = fg_json_parse(b.data ? b.data : "", b.len, 0, &doc, errmsg)) != FG_OK)
        goto out_buf;
    const char *rv = fg_json_get_str(doc, "resourceVersion", NULL);
    json_object *resources = fg_json_get(doc, "resources", NULL);
    char *end = NULL;
    uint64_t revision = rv ? strtoull(rv, &end, 10) : 0;
    if (!rv || *end || !json_object_is_type(resources, json_type_object)) {
        err = fg_errmsg(errmsg, FG_E_PARSE, "state file %s lacks resourceVersion or resources", srv->state_file);
        goto out_doc;
    }
    /* CRDs first: their custom resources can only be loaded once their types are registered */
    json_object *crds = fg_json_get(resources, CRD_RESOURCE, NULL);
    if (crds && (err = load_items(srv, CRD_RESOURCE, crds, errmsg)) != FG_OK)
        goto out_doc;
    fg__crd_sync_all(&srv->store);
    json_object_object_foreach(resources, name, items) {
        if (strcmp(name, CRD_RESOURCE) && (err = load_items(srv, name, items, errmsg)) != FG_OK)
            goto out_doc;
    }
    srv->store.rv = revision;
    srv->store.floor = revision;
out_doc:
    json_object_put(doc);
out_buf:
    fg_buf_cleanup(&b);
    return err;
}
