/*
 * gentd26_file — the GenTD26 trace's files from disk, plain or compressed; see gentd26.h.
 *
 * A file is read whole; when its first bytes are xz's magic (FD 37 7A 58 5A 00) it is decoded with
 * liblzma's stream decoder, when they are gzip's (1F 8B) with zlib's, every member of a
 * concatenated stream in turn. The decompressed text is bounded by FILE_LIMIT, so a hostile file
 * cannot make the reader allocate without end.
 */
#include "rightsizing/gentd26.h"

#include <errno.h>
#include <lzma.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define FILE_LIMIT (64u << 20)
#define CHUNK (256u << 10)

static const unsigned char XZ_MAGIC[6] = { 0xFD, '7', 'z', 'X', 'Z', 0x00 };
static const unsigned char GZ_MAGIC[2] = { 0x1F, 0x8B };

static enum fg_err unxz(struct fg_buf *out, const struct fg_buf *in, const char *path, char *errmsg)
{
    lzma_stream s = LZMA_STREAM_INIT;
    if (lzma_stream_decoder(&s, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK)
        return fg_errmsg(errmsg, FG_E_IO, "%s: cannot start the xz decoder", path);
    unsigned char chunk[CHUNK];
    s.next_in = (const uint8_t *)in->data;
    s.avail_in = in->len;
    enum fg_err err = FG_OK;
    for (;;) {
        s.next_out = chunk;
        s.avail_out = sizeof chunk;
        lzma_ret r = lzma_code(&s, LZMA_FINISH);
        if ((err = fg_buf_append(out, chunk, sizeof chunk - s.avail_out))) {
            fg_errmsg(errmsg, err, "%s: more than %u MiB once decompressed", path, FILE_LIMIT >> 20);
            break;
        }
        if (r == LZMA_STREAM_END)
            break;
        if (r != LZMA_OK) {
            err = fg_errmsg(errmsg, FG_E_IO, "%s: not a valid xz file (%s)", path,
                            r == LZMA_BUF_ERROR ? "truncated" : r == LZMA_DATA_ERROR ? "corrupt data" : "decoder error");
            break;
        }
    }
    lzma_end(&s);
    return err;
}

static enum fg_err gunzip(struct fg_buf *out, const struct fg_buf *in, const char *path, char *errmsg)
{
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit2(&s, 16 + MAX_WBITS) != Z_OK)
        return fg_errmsg(errmsg, FG_E_IO, "%s: cannot start the gzip decoder", path);
    unsigned char chunk[CHUNK];
    s.next_in = (Bytef *)in->data;
    s.avail_in = (uInt)in->len;
    enum fg_err err = FG_OK;
    for (;;) {
        s.next_out = chunk;
        s.avail_out = sizeof chunk;
        int r = inflate(&s, Z_NO_FLUSH);
        if ((err = fg_buf_append(out, chunk, sizeof chunk - s.avail_out))) {
            fg_errmsg(errmsg, err, "%s: more than %u MiB once decompressed", path, FILE_LIMIT >> 20);
            break;
        }
        if (r == Z_STREAM_END) {
            if (!s.avail_in)
                break;
            if (inflateReset(&s) != Z_OK) {   /* another member follows */
                err = fg_errmsg(errmsg, FG_E_IO, "%s: not a valid gzip file", path);
                break;
            }
            continue;
        }
        if (r != Z_OK) {
            err = fg_errmsg(errmsg, FG_E_IO, "%s: not a valid gzip file (%s)", path,
                            r == Z_BUF_ERROR ? "truncated" : "corrupt data");
            break;
        }
    }
    inflateEnd(&s);
    return err;
}

enum fg_err fg_gentd26_read_text(struct fg_buf *b, const char *path, char *errmsg)
{
    struct fg_buf raw;
    fg_buf_init(&raw, b->limit);
    enum fg_err err = fg_buf_read_file(&raw, path, errmsg);
    if (!err) {
        if (raw.len >= sizeof XZ_MAGIC && !memcmp(raw.data, XZ_MAGIC, sizeof XZ_MAGIC))
            err = unxz(b, &raw, path, errmsg);
        else if (raw.len >= sizeof GZ_MAGIC && !memcmp(raw.data, GZ_MAGIC, sizeof GZ_MAGIC))
            err = gunzip(b, &raw, path, errmsg);
        else if ((err = fg_buf_append(b, raw.data, raw.len)))
            fg_errmsg(errmsg, err, "%s: larger than %zu MiB", path, b->limit >> 20);
    }
    fg_buf_cleanup(&raw);
    return err;
}

/* dir/name, or dir/name.xz or dir/name.gz when only that one exists, into b. */
static enum fg_err read_one(struct fg_buf *b, const char *dir, const char *name, char *path, size_t size,
                            char *errmsg)
{
    static const char *const suffixes[] = { "", ".xz", ".gz" };
    struct stat st;
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        snprintf(path, size, "%s/%s%s", dir, name, suffixes[i]);
        if (!stat(path, &st))
            return fg_gentd26_read_text(b, path, errmsg);
    }
    snprintf(path, size, "%s/%s", dir, name);
    return fg_errmsg(errmsg, FG_E_IO, "%s: %s (nor %s.xz, nor %s.gz)", path, strerror(ENOENT), name, name);
}

enum fg_err fg_gentd26_load(struct fg_gentd26 *t, const char *dir, char *errmsg)
{
    memset(t, 0, sizeof *t);
    char util_path[4096], mem_path[4096];
    struct fg_buf util, mem;
    fg_buf_init(&util, FILE_LIMIT);
    fg_buf_init(&mem, FILE_LIMIT);
    enum fg_err err = read_one(&util, dir, FG_GENTD26_UTIL_FILE, util_path, sizeof util_path, errmsg);
    if (!err)
        err = read_one(&mem, dir, FG_GENTD26_MEMORY_FILE, mem_path, sizeof mem_path, errmsg);
    if (!err)
        err = fg_gentd26_parse(t, fg_buf_str(&util), util_path, fg_buf_str(&mem), mem_path, errmsg);
    fg_buf_cleanup(&util);
    fg_buf_cleanup(&mem);
    return err;
}

enum fg_err fg_gentd26_load_combined(struct fg_gentd26 *t, const char *path, char *errmsg)
{
    memset(t, 0, sizeof *t);
    struct fg_buf text;
    fg_buf_init(&text, FILE_LIMIT);
    enum fg_err err = fg_gentd26_read_text(&text, path, errmsg);
    if (!err)
        err = fg_gentd26_parse_combined(t, fg_buf_str(&text), path, errmsg);
    fg_buf_cleanup(&text);
    return err;
}
