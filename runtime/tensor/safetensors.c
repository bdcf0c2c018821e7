/*
 * safetensors.c: reading and writing safetensors files, the format PyTorch
 * users keep state_dicts in (docs/tensors.md):
 *   8 bytes   N, a little-endian u64
 *   N bytes   a JSON object {name: {"dtype", "shape", "data_offsets": [begin, end]}, ...,
 *             optional "__metadata__": {string: string}}, padded with spaces
 *   the rest  the data; offsets are relative to its start.
 * The reader trusts nothing in a file: every field is checked before any
 * size in it is used, as the reference implementation does (tensors must
 * tile the data exactly).  Files are opened and written through common/
 * (no FIFO hangs a reader; a writer replaces only a regular file, through a
 * unique temp file and a rename, so a reader never sees a partial file).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "common/common.h"
#include "runtime/tensor/tensor.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian and is used as it is read"
#endif

/* The reference reader's limit: a larger header is an attack, not a model. */
#define ST_MAX_HEADER 100000000ull
/* cJSON keeps numbers as doubles: integers past 2^53 are not exact. */
#define ST_MAX_INT 9007199254740992.0

typedef struct st_info {
    const char *name; /* owned by the cJSON tree */
    rnnc_dtype dtype;
    int rank;
    int64_t shape[RNNC_MAX_RANK];
    uint64_t begin, end;
} st_info;

/* A file being read. */
typedef struct st_file {
    const char *path;
    cm_in in;
    uint64_t size;      /* of the whole file */
    uint64_t data_size; /* after the header */
    char *header;
    cJSON *json;
    st_info *infos; /* in header order */
    st_info **order; /* sorted by name, then by offsets */
    int n;
} st_file;

static void st_file_close(st_file *sf)
{
    free(sf->order);
    free(sf->infos);
    cJSON_Delete(sf->json);
    free(sf->header);
    cm_in_close(&sf->in);
}

static rnnc_status read_exact(st_file *sf, void *p, size_t n)
{
    cm_why why;
    rnnc_status s = cm_in_read(&sf->in, p, n, sf->path, &why);
    return s == RNNC_OK ? RNNC_OK : err_fail(s, "%s", why.text);
}

/* ---------------------------------------------------------------- the header */

static rnnc_status open_file(st_file *sf)
{
    cm_why why;
    rnnc_status s = cm_in_open(&sf->in, sf->path, 0, &why);
    if (s != RNNC_OK)
        return err_fail(s == RNNC_ERR_NOT_FOUND ? RNNC_ERR_IO : s, "%s", why.text);
    sf->size = sf->in.size;
    return RNNC_OK;
}

/* Raw control bytes are not JSON; rejecting them also keeps NULs out of names. */
static bool has_control_byte(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c < 0x20 && c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return true;
    }
    return false;
}

static bool all_space(const char *p, const char *end)
{
    for (; p < end; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
            return false;
    return true;
}

static rnnc_status parse_json(st_file *sf, uint64_t n)
{
    const char *end = NULL;
    if (has_control_byte(sf->header, (size_t)n))
        return err_fail(RNNC_ERR_FORMAT, "%s: header holds a control byte", sf->path);
    sf->json = cJSON_ParseWithLengthOpts(sf->header, (size_t)n, &end, false);
    if (!sf->json && rt_json_parses(sf->header, (size_t)n))
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "%s: out of memory for the header", sf->path);
    if (!sf->json) {
        long at = end ? (long)(end - sf->header) : -1;
        return err_fail(RNNC_ERR_FORMAT, "%s: header is not valid JSON (near byte %ld)",
                        sf->path, at);
    }
    if (!end || !all_space(end, sf->header + n))
        return err_fail(RNNC_ERR_FORMAT, "%s: text after the header's JSON object", sf->path);
    if (!cJSON_IsObject(sf->json))
        return err_fail(RNNC_ERR_FORMAT, "%s: header is not a JSON object", sf->path);
    return RNNC_OK;
}

static rnnc_status read_header(st_file *sf)
{
    unsigned char len8[8];
    uint64_t n = 0;
    rnnc_status s;
    if (sf->size < 8)
        return err_fail(RNNC_ERR_FORMAT, "%s: truncated: %" PRIu64 " bytes, no header length",
                        sf->path, sf->size);
    if ((s = read_exact(sf, len8, 8)) != RNNC_OK)
        return s;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | len8[i];
    if (n > sf->size - 8)
        return err_fail(RNNC_ERR_FORMAT,
                        "%s: header length %" PRIu64 " past the end of the file (%" PRIu64
                        " bytes): truncated or not safetensors",
                        sf->path, n, sf->size);
    if (n > ST_MAX_HEADER || n < 2)
        return err_fail(RNNC_ERR_FORMAT, "%s: absurd header length %" PRIu64, sf->path, n);
    sf->data_size = sf->size - 8 - n;
    /* NUL-terminated too: older cJSON may read past a length-limited buffer. */
    sf->header = malloc((size_t)n + 1);
    if (!sf->header)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "%s: no memory for the header", sf->path);
    if ((s = read_exact(sf, sf->header, (size_t)n)) != RNNC_OK)
        return s;
    sf->header[n] = '\0';
    return parse_json(sf, n);
}

/* ---------------------------------------------------------------- one entry */

static bool json_uint(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v))
        return false;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= ST_MAX_INT) || d != floor(d))
        return false;
    *out = (uint64_t)d;
    return true;
}

static rnnc_status parse_shape(const st_file *sf, const cJSON *v, st_info *info)
{
    if (!cJSON_IsArray(v))
        return err_fail(RNNC_ERR_FORMAT, "%s: tensor '%s': shape is not an array", sf->path,
                        info->name);
    int rank = cJSON_GetArraySize(v);
    if (rank > RNNC_MAX_RANK)
        return err_fail(RNNC_ERR_UNSUPPORTED, "%s: tensor '%s': rank %d is over %d", sf->path,
                        info->name, rank, RNNC_MAX_RANK);
    int i = 0;
    for (const cJSON *d = v->child; d; d = d->next, i++) {
        uint64_t dim;
        if (!json_uint(d, &dim))
            return err_fail(RNNC_ERR_FORMAT,
                            "%s: tensor '%s': dim %d is not an integer in [0, 2^53]", sf->path,
                            info->name, i);
        info->shape[i] = (int64_t)dim;
    }
    info->rank = rank;
    return RNNC_OK;
}

static rnnc_status parse_offsets(const st_file *sf, const cJSON *v, st_info *info)
{
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2 || !json_uint(v->child, &info->begin) ||
        !json_uint(v->child->next, &info->end) || info->begin > info->end)
        return err_fail(RNNC_ERR_FORMAT,
                        "%s: tensor '%s': data_offsets is not [begin, end] with 0 <= begin <= end",
                        sf->path, info->name);
    if (info->end > sf->data_size)
        return err_fail(RNNC_ERR_FORMAT,
                        "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                        "] past the end of the data (%" PRIu64 " bytes): truncated file?",
                        sf->path, info->name, info->begin, info->end, sf->data_size);
    return RNNC_OK;
}

static rnnc_status parse_field(const st_file *sf, const cJSON *v, st_info *info, unsigned *seen)
{
    const char *key = v->string;
    unsigned bit = strcmp(key, "dtype") == 0 ? 1u
                   : strcmp(key, "shape") == 0 ? 2u
                   : strcmp(key, "data_offsets") == 0 ? 4u : 0u;
    if (bit == 0 || (*seen & bit))
        return err_fail(RNNC_ERR_FORMAT, "%s: tensor '%s': %s field '%s'", sf->path, info->name,
                        bit ? "repeated" : "unknown", key);
    *seen |= bit;
    if (bit == 2)
        return parse_shape(sf, v, info);
    if (bit == 4)
        return parse_offsets(sf, v, info);
    if (!cJSON_IsString(v) || !rt_dtype_from_name(v->valuestring, &info->dtype))
        return err_fail(RNNC_ERR_FORMAT,
                        "%s: tensor '%s': dtype %s%s%s is not one of F32 F16 BF16 F64 I64 I32",
                        sf->path, info->name, cJSON_IsString(v) ? "'" : "",
                        cJSON_IsString(v) ? v->valuestring : "(not a string)",
                        cJSON_IsString(v) ? "'" : "");
    return RNNC_OK;
}

static rnnc_status parse_info(const st_file *sf, const cJSON *item, st_info *info)
{
    unsigned seen = 0;
    size_t bytes;
    rnnc_status s;
    info->name = item->string;
    if (info->name[0] == '\0')
        return err_fail(RNNC_ERR_FORMAT, "%s: a tensor has an empty name", sf->path);
    if (!cJSON_IsObject(item))
        return err_fail(RNNC_ERR_FORMAT, "%s: tensor '%s': entry is not an object", sf->path,
                        info->name);
    for (const cJSON *v = item->child; v; v = v->next)
        if ((s = parse_field(sf, v, info, &seen)) != RNNC_OK)
            return s;
    if (seen != 7u)
        return err_fail(RNNC_ERR_FORMAT, "%s: tensor '%s': missing %s", sf->path, info->name,
                        !(seen & 1u) ? "dtype" : !(seen & 2u) ? "shape" : "data_offsets");
    if (!rt_tensor_bytes(info->dtype, info->rank, info->shape, &bytes))
        return err_fail(RNNC_ERR_FORMAT, "%s: tensor '%s': the product of its dims overflows",
                        sf->path, info->name);
    if (bytes != info->end - info->begin) {
        char shape[160];
        return err_fail(RNNC_ERR_FORMAT,
                        "%s: tensor '%s': %s %s is %zu bytes but data_offsets span %" PRIu64,
                        sf->path, info->name, rnnc_dtype_name(info->dtype),
                        rt_format_shape(shape, sizeof shape, info->rank, info->shape), bytes,
                        info->end - info->begin);
    }
    return RNNC_OK;
}

static rnnc_status check_metadata(const st_file *sf, const cJSON *meta)
{
    if (!cJSON_IsObject(meta))
        return err_fail(RNNC_ERR_FORMAT, "%s: __metadata__ is not an object", sf->path);
    for (const cJSON *v = meta->child; v; v = v->next)
        if (!cJSON_IsString(v))
            return err_fail(RNNC_ERR_FORMAT, "%s: __metadata__ '%s' is not a string", sf->path,
                            v->string);
    return RNNC_OK;
}

static rnnc_status parse_infos(st_file *sf)
{
    int n = 0, metas = 0;
    rnnc_status s;
    for (const cJSON *it = sf->json->child; it; it = it->next)
        n++;
    sf->infos = calloc((size_t)n + 1, sizeof *sf->infos);
    sf->order = calloc((size_t)n + 1, sizeof *sf->order);
    if (!sf->infos || !sf->order)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "%s: no memory for %d tensors", sf->path, n);
    for (const cJSON *it = sf->json->child; it; it = it->next) {
        if (strcmp(it->string, "__metadata__") == 0) {
            if (metas++ > 0)
                return err_fail(RNNC_ERR_FORMAT, "%s: __metadata__ given twice", sf->path);
            if ((s = check_metadata(sf, it)) != RNNC_OK)
                return s;
            continue;
        }
        if ((s = parse_info(sf, it, &sf->infos[sf->n])) != RNNC_OK)
            return s;
        sf->order[sf->n] = &sf->infos[sf->n];
        sf->n++;
    }
    return RNNC_OK;
}

/* ---------------------------------------------------------------- the whole file */

static int by_name(const void *a, const void *b)
{
    return strcmp((*(st_info *const *)a)->name, (*(st_info *const *)b)->name);
}

static int by_offsets(const void *a, const void *b)
{
    const st_info *x = *(st_info *const *)a, *y = *(st_info *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static rnnc_status check_names(st_file *sf)
{
    qsort(sf->order, (size_t)sf->n, sizeof *sf->order, by_name);
    for (int i = 1; i < sf->n; i++)
        if (strcmp(sf->order[i - 1]->name, sf->order[i]->name) == 0)
            return err_fail(RNNC_ERR_FORMAT, "%s: duplicate tensor name '%s'", sf->path,
                            sf->order[i]->name);
    return RNNC_OK;
}

/* Tensors must tile the data: no overlap, no hole, nothing after. */
static rnnc_status check_layout(st_file *sf)
{
    uint64_t at = 0;
    qsort(sf->order, (size_t)sf->n, sizeof *sf->order, by_offsets);
    for (int i = 0; i < sf->n; i++) {
        const st_info *t = sf->order[i];
        if (t->begin < at)
            return err_fail(RNNC_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap", sf->path,
                            sf->order[i - 1]->name, t->name);
        if (t->begin > at)
            return err_fail(RNNC_ERR_FORMAT,
                            "%s: tensor '%s': a hole of %" PRIu64 " bytes before it", sf->path,
                            t->name, t->begin - at);
        at = t->end;
    }
    if (at != sf->data_size)
        return err_fail(RNNC_ERR_FORMAT,
                        "%s: %" PRIu64 " bytes of data after the last tensor (the data is %"
                        PRIu64 " bytes)", sf->path, sf->data_size - at, sf->data_size);
    return RNNC_OK;
}

/* Allocates in header order (the order rnnc_tensors_name gives), then reads
 * in offset order: one sequential pass, since the data is tiled. */
static rnnc_status read_data(st_file *sf, rnnc_tensors *ts)
{
    void **data = calloc((size_t)sf->n + 1, sizeof *data);
    rnnc_status s = RNNC_OK;
    if (!data)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "%s: no memory", sf->path);
    for (int i = 0; i < sf->n && s == RNNC_OK; i++) {
        const st_info *t = &sf->infos[i];
        s = rt_tensors_add_empty(ts, t->name, t->dtype, t->rank, t->shape, &data[i]);
    }
    for (int i = 0; i < sf->n && s == RNNC_OK; i++) {
        const st_info *t = sf->order[i];
        s = read_exact(sf, data[t - sf->infos], (size_t)(t->end - t->begin));
    }
    free(data);
    return s;
}

rnnc_status rnnc_tensors_load(rnnc_tensors **out, const char *path)
{
    st_file sf = {.path = path, .in = {.fd = -1}};
    rnnc_tensors *ts = NULL;
    rnnc_status s;
    if (!out || !path)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_tensors_load: NULL argument");
    *out = NULL;
    if ((s = open_file(&sf)) != RNNC_OK || (s = read_header(&sf)) != RNNC_OK ||
        (s = parse_infos(&sf)) != RNNC_OK || (s = check_names(&sf)) != RNNC_OK ||
        (s = check_layout(&sf)) != RNNC_OK || (s = rnnc_tensors_create(&ts)) != RNNC_OK)
        goto close_file;
    if ((s = read_data(&sf, ts)) != RNNC_OK)
        goto destroy_tensors;
    *out = ts;
    st_file_close(&sf);
    return RNNC_OK;

destroy_tensors:
    rnnc_tensors_destroy(ts);
close_file:
    st_file_close(&sf);
    return s;
}

/* ---------------------------------------------------------------- writing */

/* A raw number keeps every digit of a u64, where cJSON's doubles would not. */
static bool add_uint(cJSON *array, uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    cJSON *n = cJSON_CreateRaw(buf);
    return n && cJSON_AddItemToArray(array, n);
}

/* Keys in the reference writer's order: dtype, shape, data_offsets. */
static cJSON *tensor_json(const rnnc_tensor *t, uint64_t begin, uint64_t end)
{
    cJSON *shape = NULL, *offsets = NULL;
    cJSON *o = cJSON_CreateObject();
    bool ok = o && cJSON_AddStringToObject(o, "dtype", rnnc_dtype_name(t->dtype)) &&
              (shape = cJSON_AddArrayToObject(o, "shape")) != NULL;
    for (int i = 0; ok && i < t->rank; i++)
        ok = add_uint(shape, (uint64_t)t->shape[i]);
    ok = ok && (offsets = cJSON_AddArrayToObject(o, "data_offsets")) != NULL &&
         add_uint(offsets, begin) && add_uint(offsets, end);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The file's first 8 + N bytes: length, JSON, spaces to a multiple of 8. */
static rnnc_status build_header(const rnnc_tensors *ts, const char *path, char **out, size_t *len)
{
    rnnc_status s = RNNC_OK;
    uint64_t at = 0;
    char *text = NULL;
    cJSON *root = cJSON_CreateObject();
    for (int i = 0; root && i < rnnc_tensors_count(ts); i++) {
        const char *name = rnnc_tensors_name(ts, i);
        const rnnc_tensor *t = rnnc_tensors_get(ts, name);
        uint64_t end = at + rt_tensor_nbytes(t);
        cJSON *o = tensor_json(t, at, end);
        if (!o || !cJSON_AddItemToObject(root, name, o)) {
            cJSON_Delete(o);
            goto no_memory;
        }
        at = end;
    }
    if (!root || !(text = cJSON_PrintUnformatted(root)))
        goto no_memory;
    size_t n = strlen(text), padded = (n + 7) / 8 * 8;
    if (!(*out = malloc(8 + padded)))
        goto no_memory;
    for (int i = 0; i < 8; i++)
        (*out)[i] = (char)(((uint64_t)padded >> (8 * i)) & 0xff);
    memcpy(*out + 8, text, n);
    memset(*out + 8 + n, ' ', padded - n);
    *len = 8 + padded;
    goto done;

no_memory:
    s = err_fail(RNNC_ERR_OUT_OF_MEMORY, "%s: no memory for the header", path);
done:
    free(text);
    cJSON_Delete(root);
    return s;
}

static rnnc_status write_tensors(cm_out *o, const rnnc_tensors *ts, const char *header,
                                 size_t len, cm_why *why)
{
    rnnc_status s = cm_out_write(o, header, len, why);
    for (int i = 0; s == RNNC_OK && i < rnnc_tensors_count(ts); i++) {
        const rnnc_tensor *t = rnnc_tensors_get(ts, rnnc_tensors_name(ts, i));
        s = cm_out_write(o, t->data, rt_tensor_nbytes(t), why);
    }
    return s;
}

rnnc_status rt_tensors_stage(const rnnc_tensors *ts, const char *path, cm_out *o)
{
    char *header = NULL;
    size_t len = 0;
    cm_why why;
    *o = (cm_out){.fd = -1};
    if (!ts || !path || !*path)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_tensors_save: NULL or empty argument");
    rnnc_status s = build_header(ts, path, &header, &len);
    if (s != RNNC_OK)
        return s;
    if ((s = cm_out_open(o, path, CM_OUT_DISCARD, &why)) == RNNC_OK &&
        (s = write_tensors(o, ts, header, len, &why)) != RNNC_OK)
        cm_out_abort(o);
    free(header);
    return s == RNNC_OK ? RNNC_OK : err_fail(s, "%s", why.text);
}

rnnc_status rt_tensors_commit(cm_out *o)
{
    cm_why why;
    rnnc_status s = cm_out_commit(o, &why);
    return s == RNNC_OK ? RNNC_OK : err_fail(s, "%s", why.text);
}

rnnc_status rnnc_tensors_save(const rnnc_tensors *ts, const char *path)
{
    cm_out o;
    rnnc_status s = rt_tensors_stage(ts, path, &o);
    return s == RNNC_OK ? rt_tensors_commit(&o) : s;
}
