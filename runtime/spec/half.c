/*
 * half.c: half-precision models (F16, BF16) on the host backends.  Weights
 * are kept in fp32 rounded to the model's dtype (so every backend computes
 * on the same values); a forward converts the caller's half buffers to
 * fp32, runs the fp32 forward and rounds its outputs back to the dtype
 * (round to nearest even, as a GPU's conversions do).
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/spec/spec.h"

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u); /* NaN stays NaN (quiet) */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* IEEE binary32 to binary16, round to nearest even; overflow to infinity. */
static uint16_t f32_to_f16(float f)
{
    uint32_t u = f32_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u);
    if (a >= 0x477ff000u) /* >= 65520: rounds to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) { /* below 2^-14: subnormal or zero, in units of 2^-24 */
        float v;
        memcpy(&v, &a, sizeof v);
        float q = v * 0x1p24f; /* exact: a power-of-two scale */
        uint32_t r = (uint32_t)q;
        float frac = q - (float)r;
        if (frac > 0.5f || (frac == 0.5f && (r & 1u)))
            r++;
        return (uint16_t)(sign | r);
    }
    uint32_t e = (a >> 23) - 112u, m = a & 0x7fffffu;
    uint32_t h = (e << 10) | (m >> 13), rest = m & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++; /* a carry into the exponent is still right */
    return (uint16_t)(sign | h);
}

bool rt_dtype_is_half(rnnc_dtype t)
{
    return t == RNNC_F16 || t == RNNC_BF16;
}

static void f32_to_half(rnnc_dtype t, const float *src, void *dst, size_t n)
{
    unsigned char *d = dst;
    for (size_t i = 0; i < n; i++) {
        uint16_t h = t == RNNC_BF16 ? f32_to_bf16(src[i]) : f32_to_f16(src[i]);
        memcpy(d + 2 * i, &h, 2);
    }
}

static void half_to_f32(rnnc_dtype t, const void *src, float *dst, size_t n)
{
    rnnc_tensor v = {.dtype = t, .rank = 1, .shape = {(int64_t)n}, .data = (void *)src};
    (void)rt_tensor_to_f32(&v, dst); /* a float dtype and a valid shape: cannot fail */
}

void rt_round_f32(rnnc_dtype t, float *p, size_t n)
{
    if (!rt_dtype_is_half(t))
        return;
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        f32_to_half(t, &p[i], &h, 1);
        half_to_f32(t, &h, &p[i], 1);
    }
}

/* Cells with more states are refused (the built-in cells have at most 2). */
#define HALF_MAX_STATES 8

static bool is_float(rnnc_dtype t)
{
    return t == RNNC_F32 || t == RNNC_F64 || rt_dtype_is_half(t);
}

rnnc_status rnnc_convert(void *dst, rnnc_dtype dst_type, const void *src, rnnc_dtype src_type,
                         int64_t n)
{
    if (!is_float(dst_type) || !is_float(src_type) || n < 0 || (n > 0 && (!dst || !src)))
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_convert: %s to %s of %lld values",
                        rnnc_dtype_name(src_type), rnnc_dtype_name(dst_type), (long long)n);
    /* through fp32 in blocks (an F64 value rounds twice only on its way to a half) */
    float buf[1024];
    const unsigned char *s = src;
    unsigned char *d = dst;
    size_t ss = rnnc_dtype_size(src_type), ds = rnnc_dtype_size(dst_type);
    for (int64_t i = 0; i < n; i += 1024) {
        size_t k = (size_t)(n - i < 1024 ? n - i : 1024);
        rnnc_tensor v = {.dtype = src_type, .rank = 1, .shape = {(int64_t)k},
                         .data = (void *)(s + (size_t)i * ss)};
        if (dst_type == RNNC_F64 && src_type == RNNC_F64) {
            memcpy(d + (size_t)i * ds, v.data, k * ds);
            continue;
        }
        (void)rt_tensor_to_f32(&v, buf);
        if (dst_type == RNNC_F32) {
            memcpy(d + (size_t)i * ds, buf, k * 4);
        } else if (dst_type == RNNC_F64) {
            for (size_t j = 0; j < k; j++) {
                double x = buf[j];
                memcpy(d + ((size_t)i + j) * 8, &x, 8);
            }
        } else {
            f32_to_half(dst_type, buf, d + (size_t)i * ds, k);
        }
    }
    return RNNC_OK;
}

typedef struct half_bufs {
    float *x, *y, *init[HALF_MAX_STATES], *final[HALF_MAX_STATES];
} half_bufs;

static void free_bufs(half_bufs *b)
{
    free(b->x);
    free(b->y);
    for (int k = 0; k < HALF_MAX_STATES; k++) {
        free(b->init[k]);
        free(b->final[k]);
    }
}

/* The fp32 buffers of a call's per-state arrays over B rows: each of src
 * (the caller's, in the dtype) converted into fin[k], each of dst given a
 * buffer fout[k]; pin/pout point at them (NULL where the caller gave none).
 * Values per state in ns.  False when out of memory. */
static bool state_bufs(const rt_spec *s, int64_t B, const void *const *src, void *const *dst,
                       float **fin, float **fout, const void **pin, void **pout, size_t *ns)
{
    const ir_fn *f = s->fn[0];
    for (int k = 0; k < f->n_states; k++) {
        ns[k] = (size_t)(s->layers * s->dirs) * (size_t)B *
                (size_t)ir_dim_eval(f->nodes[f->states[k].node].cols, s->sizes[0]);
        if (src && src[k]) {
            if (!(fin[k] = malloc(ns[k] * 4 + 4)))
                return false;
            half_to_f32(s->dtype, src[k], fin[k], ns[k]);
            pin[k] = fin[k];
        }
        if (dst && dst[k] && !(pout[k] = fout[k] = malloc(ns[k] * 4 + 4)))
            return false;
    }
    return true;
}

/* fout's states rounded back into the caller's dst. */
static void states_back(const rt_spec *s, float *const *fout, void *const *dst, const size_t *ns)
{
    for (int k = 0; k < s->fn[0]->n_states; k++)
        if (fout[k])
            f32_to_half(s->dtype, fout[k], dst[k], ns[k]);
}

static rnnc_status too_many_states(const rt_spec *s)
{
    return err_fail(RNNC_ERR_UNSUPPORTED, "%s models: at most %d states",
                    rnnc_dtype_name(s->dtype), HALF_MAX_STATES);
}

rnnc_status rt_forward_half(const rt_spec *s, const rnnc_forward_args *a,
                            rnnc_status (*fwd)(void *, const rnnc_forward_args *), void *state)
{
    if (a->device_pointers || a->batch_sizes)
        return err_fail(RNNC_ERR_UNSUPPORTED,
                        "%s models run on this backend from padded host buffers only",
                        rnnc_dtype_name(s->dtype));
    if (s->fn[0]->n_states > HALF_MAX_STATES)
        return too_many_states(s);
    size_t TB = (size_t)a->seq_len * (size_t)a->batch, ns[HALF_MAX_STATES];
    size_t nx = TB * (size_t)s->sizes[0].I, ny = TB * (size_t)(s->dirs * s->hout);
    half_bufs b = {0};
    const void *in[HALF_MAX_STATES] = {0};
    void *out[HALF_MAX_STATES] = {0};
    rnnc_status st = RNNC_OK;
    if (!(b.x = malloc(nx * 4 + 4)) || !(b.y = malloc(ny * 4 + 4)) ||
        !state_bufs(s, a->batch, a->init, a->final, b.init, b.final, in, out, ns))
        goto oom;
    half_to_f32(s->dtype, a->x, b.x, nx);
    rnnc_forward_args c = *a;
    c.x = b.x;
    c.y = b.y;
    c.init = a->init ? in : NULL;
    c.final = a->final ? out : NULL;
    if ((st = fwd(state, &c)) != RNNC_OK)
        goto free_bufs;
    f32_to_half(s->dtype, b.y, a->y, ny);
    states_back(s, b.final, a->final, ns);
    goto free_bufs;
oom:
    st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "%s forward: out of memory", rnnc_dtype_name(s->dtype));
free_bufs:
    free_bufs(&b);
    return st;
}

/* The fp32 buffers of a half backward reuse half_bufs: x and init hold dx
 * and dinit, y and final hold dy and dfinal. */
rnnc_status rt_backward_half(const rt_spec *s, int64_t T, int64_t B, const rnnc_backward_args *a,
                             rnnc_status (*bwd)(void *, const rnnc_backward_args *), void *state)
{
    if (s->fn[0]->n_states > HALF_MAX_STATES)
        return too_many_states(s);
    size_t TB = (size_t)T * (size_t)B, ns[HALF_MAX_STATES];
    size_t nx = TB * (size_t)s->sizes[0].I, ny = TB * (size_t)(s->dirs * s->hout);
    half_bufs b = {0};
    const void *dfin[HALF_MAX_STATES] = {0};
    void *dini[HALF_MAX_STATES] = {0};
    rnnc_status st = RNNC_OK;
    if ((a->dx && !(b.x = malloc(nx * 4 + 4))) || (a->dy && !(b.y = malloc(ny * 4 + 4))) ||
        !state_bufs(s, B, a->dfinal, a->dinit, b.final, b.init, dfin, dini, ns))
        goto oom;
    if (a->dy)
        half_to_f32(s->dtype, a->dy, b.y, ny);
    rnnc_backward_args c = {a->dy ? b.y : NULL, a->dfinal ? dfin : NULL, a->dx ? b.x : NULL,
                            a->dinit ? dini : NULL};
    if ((st = bwd(state, &c)) != RNNC_OK)
        goto free_bufs;
    if (a->dx)
        f32_to_half(s->dtype, b.x, a->dx, nx);
    states_back(s, b.init, a->dinit, ns);
    goto free_bufs;
oom:
    st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "%s backward: out of memory", rnnc_dtype_name(s->dtype));
free_bufs:
    free_bufs(&b);
    return st;
}
