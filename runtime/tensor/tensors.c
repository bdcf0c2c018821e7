/*
 * tensors.c: the in-memory set of named host tensors behind rnnc_tensors_*,
 * the dtype facts, and the checked lookup and fp32 conversion that the model
 * API and the command use on weights.  Files are safetensors.c's business.
 *
 * Names are indexed by an open-addressing hash table (xxHash) so that a
 * file with very many tensors loads in linear time.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include <cJSON.h>

#include "runtime/tensor/tensor.h"

typedef struct rt_entry {
    char *name;
    rnnc_tensor t;
} rt_entry;

struct rnnc_tensors {
    rt_entry *items; /* in insertion order */
    int count;
    int cap;
    int *slots;        /* item index or -1; a power of two, at most half full */
    size_t slot_count; /* 0 until the first add */
};

/* ---------------------------------------------------------------- dtypes */

static const struct {
    rnnc_dtype dtype;
    const char *name;
    size_t size;
} dtype_table[] = {
    {RNNC_F32, "F32", 4}, {RNNC_F16, "F16", 2}, {RNNC_F64, "F64", 8},
    {RNNC_I64, "I64", 8}, {RNNC_I32, "I32", 4}, {RNNC_BF16, "BF16", 2},
};

#define DTYPE_COUNT (sizeof dtype_table / sizeof dtype_table[0])

size_t rnnc_dtype_size(rnnc_dtype t)
{
    for (size_t i = 0; i < DTYPE_COUNT; i++)
        if (dtype_table[i].dtype == t)
            return dtype_table[i].size;
    return 0;
}

const char *rnnc_dtype_name(rnnc_dtype t)
{
    for (size_t i = 0; i < DTYPE_COUNT; i++)
        if (dtype_table[i].dtype == t)
            return dtype_table[i].name;
    return "unknown";
}

bool rt_dtype_from_name(const char *name, rnnc_dtype *out)
{
    for (size_t i = 0; name && i < DTYPE_COUNT; i++) {
        if (strcmp(dtype_table[i].name, name) == 0) {
            *out = dtype_table[i].dtype;
            return true;
        }
    }
    return false;
}

static bool dtype_is_float(rnnc_dtype t)
{
    return t == RNNC_F32 || t == RNNC_F16 || t == RNNC_BF16 || t == RNNC_F64;
}

/* ---------------------------------------------------------------- shapes */

static bool shape_numel(int rank, const int64_t *shape, int64_t *out)
{
    int64_t n = 1;
    if (rank < 0 || rank > RNNC_MAX_RANK || (rank > 0 && !shape))
        return false;
    for (int i = 0; i < rank; i++)
        if (shape[i] < 0 || __builtin_mul_overflow(n, shape[i], &n))
            return false;
    *out = n;
    return true;
}

int64_t rnnc_tensor_numel(const rnnc_tensor *t)
{
    int64_t n;
    return t && shape_numel(t->rank, t->shape, &n) ? n : -1;
}

bool rt_tensor_bytes(rnnc_dtype dtype, int rank, const int64_t *shape, size_t *out)
{
    int64_t n;
    size_t esize = rnnc_dtype_size(dtype);
    if (esize == 0 || !shape_numel(rank, shape, &n) || (uint64_t)n > SIZE_MAX)
        return false;
    return !__builtin_mul_overflow((size_t)n, esize, out);
}

size_t rt_tensor_nbytes(const rnnc_tensor *t)
{
    size_t n = 0;
    return t && rt_tensor_bytes(t->dtype, t->rank, t->shape, &n) ? n : 0;
}

char *rt_format_shape(char *buf, size_t n, int rank, const int64_t *shape)
{
    size_t used = 0;
    if (n == 0)
        return buf;
    buf[0] = '\0';
    for (int i = 0; i <= rank && used < n; i++) {
        int w = i == rank ? snprintf(buf + used, n - used, "%s]", i == 0 ? "[" : "")
                          : snprintf(buf + used, n - used, "%s%lld", i == 0 ? "[" : ", ",
                                     (long long)shape[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return buf;
}

/* ---------------------------------------------------------------- the name index */

static size_t name_hash(const char *name)
{
    return (size_t)XXH3_64bits(name, strlen(name));
}

/* The slot holding `name`, or the empty slot where it would go. */
static size_t slot_of(const rnnc_tensors *ts, const char *name)
{
    size_t mask = ts->slot_count - 1;
    size_t i = name_hash(name) & mask;
    while (ts->slots[i] >= 0 && strcmp(ts->items[ts->slots[i]].name, name) != 0)
        i = (i + 1) & mask;
    return i;
}

static rnnc_status grow_slots(rnnc_tensors *ts)
{
    size_t n = ts->slot_count ? ts->slot_count * 2 : 16;
    int *slots = malloc(n * sizeof *slots);
    if (!slots)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "tensors: no memory for the name index");
    free(ts->slots);
    ts->slots = slots;
    ts->slot_count = n;
    for (size_t i = 0; i < n; i++)
        slots[i] = -1;
    for (int k = 0; k < ts->count; k++)
        slots[slot_of(ts, ts->items[k].name)] = k;
    return RNNC_OK;
}

static rnnc_status grow_items(rnnc_tensors *ts)
{
    if (ts->cap >= INT_MAX / 4)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "tensors: too many tensors");
    int cap = ts->cap ? ts->cap * 2 : 8;
    rt_entry *items = realloc(ts->items, (size_t)cap * sizeof *items);
    if (!items)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "tensors: no memory for %d tensors", cap);
    ts->items = items;
    ts->cap = cap;
    return RNNC_OK;
}

/* ---------------------------------------------------------------- the set */

rnnc_status rnnc_tensors_create(rnnc_tensors **out)
{
    if (!out)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_tensors_create: out is NULL");
    *out = calloc(1, sizeof **out);
    if (!*out)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "rnnc_tensors_create: no memory");
    return RNNC_OK;
}

void rnnc_tensors_destroy(rnnc_tensors *ts)
{
    if (!ts)
        return;
    for (int i = 0; i < ts->count; i++) {
        free(ts->items[i].name);
        free(ts->items[i].t.data);
    }
    free(ts->items);
    free(ts->slots);
    free(ts);
}

static rnnc_status check_new(const rnnc_tensors *ts, const char *name, rnnc_dtype dtype, int rank,
                             const int64_t *shape, size_t *bytes)
{
    if (!ts || !name)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_tensors_add: NULL tensors or name");
    if (name[0] == '\0' || strcmp(name, "__metadata__") == 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_tensors_add: '%s' cannot name a tensor", name);
    if (rnnc_dtype_size(dtype) == 0)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_tensors_add: '%s': bad dtype %d", name,
                        (int)dtype);
    if (rank < 0 || rank > RNNC_MAX_RANK || (rank > 0 && !shape))
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_tensors_add: '%s': bad rank %d (0..%d)", name,
                        rank, RNNC_MAX_RANK);
    if (!rt_tensor_bytes(dtype, rank, shape, bytes))
        return err_fail(RNNC_ERR_INVALID_ARG,
                        "rnnc_tensors_add: '%s': a dim is negative or the size overflows", name);
    if (rnnc_tensors_get(ts, name))
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_tensors_add: duplicate name '%s'", name);
    return RNNC_OK;
}

rnnc_status rt_tensors_add_empty(rnnc_tensors *ts, const char *name, rnnc_dtype dtype, int rank,
                                 const int64_t *shape, void **data)
{
    size_t bytes = 0;
    rnnc_status s = check_new(ts, name, dtype, rank, shape, &bytes);
    if (s != RNNC_OK)
        return s;
    if (ts->count == ts->cap && (s = grow_items(ts)) != RNNC_OK)
        return s;
    if ((size_t)(ts->count + 1) * 2 > ts->slot_count && (s = grow_slots(ts)) != RNNC_OK)
        return s;
    rt_entry *e = &ts->items[ts->count];
    memset(e, 0, sizeof *e);
    e->name = strdup(name);
    if (!e->name)
        goto fail_name;
    /* malloc(0) may give NULL; an empty tensor still gets a valid pointer. */
    e->t.data = malloc(bytes ? bytes : 1);
    if (!e->t.data)
        goto fail_data;
    e->t.dtype = dtype;
    e->t.rank = rank;
    for (int i = 0; i < rank; i++)
        e->t.shape[i] = shape[i];
    ts->slots[slot_of(ts, name)] = ts->count++;
    *data = e->t.data;
    return RNNC_OK;

fail_data:
    free(e->name);
fail_name:
    return err_fail(RNNC_ERR_OUT_OF_MEMORY, "rnnc_tensors_add: no memory for '%s' (%zu bytes)",
                    name, bytes);
}

rnnc_status rnnc_tensors_add(rnnc_tensors *ts, const char *name, rnnc_dtype dtype, int rank,
                             const int64_t *shape, const void *data)
{
    size_t bytes = 0;
    void *dst;
    rnnc_status s = check_new(ts, name, dtype, rank, shape, &bytes);
    if (s != RNNC_OK)
        return s;
    if (bytes > 0 && !data)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_tensors_add: '%s': data is NULL", name);
    if ((s = rt_tensors_add_empty(ts, name, dtype, rank, shape, &dst)) != RNNC_OK)
        return s;
    if (bytes > 0)
        memcpy(dst, data, bytes);
    return RNNC_OK;
}

const rnnc_tensor *rnnc_tensors_get(const rnnc_tensors *ts, const char *name)
{
    if (!ts || !name || ts->slot_count == 0)
        return NULL;
    int k = ts->slots[slot_of(ts, name)];
    return k >= 0 ? &ts->items[k].t : NULL;
}

int rnnc_tensors_count(const rnnc_tensors *ts)
{
    return ts ? ts->count : 0;
}

const char *rnnc_tensors_name(const rnnc_tensors *ts, int i)
{
    return ts && i >= 0 && i < ts->count ? ts->items[i].name : NULL;
}

/* ---------------------------------------------------------------- checks and conversion */

rnnc_status rt_tensor_expect(const rnnc_tensors *ts, const char *name, rnnc_dtype dt, int rank,
                             const int64_t *shape, const rnnc_tensor **out)
{
    char want[160], got[160];
    const rnnc_tensor *t = rnnc_tensors_get(ts, name);
    if (!t)
        return err_fail(RNNC_ERR_NOT_FOUND, "tensor '%s' is missing", name ? name : "(null)");
    bool dtype_ok = dt == RT_DTYPE_ANY_FLOAT ? dtype_is_float(t->dtype) : t->dtype == dt;
    if (!dtype_ok)
        return err_fail(RNNC_ERR_FORMAT, "tensor '%s': expected dtype %s got %s", name,
                        dt == RT_DTYPE_ANY_FLOAT ? "F32/F16/BF16/F64" : rnnc_dtype_name(dt),
                        rnnc_dtype_name(t->dtype));
    bool shape_ok = rank < 0 || (t->rank == rank && (rank == 0 || (shape &&
                                 memcmp(t->shape, shape, (size_t)rank * sizeof *shape) == 0)));
    if (!shape_ok)
        return err_fail(RNNC_ERR_SHAPE, "tensor '%s': expected %s got %s", name,
                        rt_format_shape(want, sizeof want, shape ? rank : 0, shape),
                        rt_format_shape(got, sizeof got, t->rank, t->shape));
    if (out)
        *out = t;
    return RNNC_OK;
}

/* IEEE binary16 to binary32: every half is exactly a float. */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    float f;
    if (exp == 0) {
        f = (float)man * 0x1p-24f; /* zero or subnormal */
        return sign ? -f : f;
    }
    if (exp == 0x1f)
        bits = sign | 0x7f800000u | (man << 13); /* inf, NaN (payload kept) */
    else
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    memcpy(&f, &bits, sizeof f);
    return f;
}

static float bf16_to_float(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

rnnc_status rt_tensor_to_f32(const rnnc_tensor *t, float *out)
{
    int64_t n = rnnc_tensor_numel(t);
    if (n < 0 || !out || (n > 0 && !t->data))
        return err_fail(RNNC_ERR_INVALID_ARG, "rt_tensor_to_f32: bad tensor or output");
    if (!dtype_is_float(t->dtype))
        return err_fail(RNNC_ERR_FORMAT, "a tensor of dtype %s is not floating point",
                        rnnc_dtype_name(t->dtype));
    /* memcpy per element: a caller's rnnc_tensor may point at unaligned bytes. */
    const unsigned char *p = t->data;
    uint16_t h;
    double d;
    for (int64_t i = 0; i < n; i++) {
        switch (t->dtype) {
        case RNNC_F16: memcpy(&h, p + 2 * i, 2); out[i] = half_to_float(h); break;
        case RNNC_BF16: memcpy(&h, p + 2 * i, 2); out[i] = bf16_to_float(h); break;
        case RNNC_F64: memcpy(&d, p + 8 * i, 8); out[i] = (float)d; break;
        default: memcpy(&out[i], p + 4 * i, 4); break;
        }
    }
    return RNNC_OK;
}

/* cJSON reports a failed allocation as a syntax error.  Called after a
 * parse failed: if the text parses now, what failed was memory. */
bool rt_json_parses(const char *text, size_t n)
{
    cJSON *j = cJSON_ParseWithLength(text, n);
    cJSON_Delete(j);
    return j != NULL;
}
