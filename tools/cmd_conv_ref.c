/*
 * cmd_conv_ref.c: the plain convolution `rnnc conv --check` compares cuDNN
 * with: every product of x and w visited once, summed in double, in the
 * descriptor's layout; the transposed convolution scatters instead.
 */
#include <string.h>

#include "tools/cmd_conv.h"

/* The descriptor's sizes lifted to 3 spatial dims (leading 1s). */
typedef struct dims3 {
    int64_t S[3], R[3], P[3], st[3], pad[3], dil[3];
} dims3;

static dims3 lift(const rnnc_conv *c)
{
    const rnnc_conv_desc *d = rnnc_conv_get_desc(c);
    int64_t x[5], w[5], y[5];
    int rank;
    rnnc_conv_shapes(c, x, w, y, &rank);
    dims3 o;
    int lead = 3 - d->spatial_dims;
    for (int i = 0; i < 3; i++) {
        int k = i - lead;
        bool real = k >= 0;
        int at = d->layout == RNNC_CONV_NCHW ? 2 + k : 1 + k;
        o.S[i] = real ? x[at] : 1;
        o.R[i] = real ? w[at] : 1;
        o.P[i] = real ? y[at] : 1;
        o.st[i] = real ? d->stride[k] : 1;
        o.pad[i] = real ? d->padding[k] : 0;
        o.dil[i] = real ? d->dilation[k] : 1;
    }
    return o;
}

/* Offset of (n, c, s) in a tensor [N, C, S[3]] of the layout. */
static int64_t off(rnnc_conv_layout l, int64_t n, int64_t c, const int64_t s[3], int64_t C,
                   const int64_t S[3])
{
    int64_t sp = (s[0] * S[1] + s[1]) * S[2] + s[2], vol = S[0] * S[1] * S[2];
    return l == RNNC_CONV_NCHW ? (n * C + c) * vol + sp : (n * vol + sp) * C + c;
}

/* Calls visit(x index, w index, y index) for every product. */
static void each_product(const rnnc_conv *c, void (*visit)(void *, int64_t, int64_t, int64_t),
                         void *ctx)
{
    const rnnc_conv_desc *d = rnnc_conv_get_desc(c);
    dims3 z = lift(c);
    int64_t G = d->groups, Cg = d->in_channels / G, Kg = d->out_channels / G;
    for (int64_t n = 0; n < d->batch; n++)
        for (int64_t k = 0; k < d->out_channels; k++)
            for (int64_t p0 = 0; p0 < z.P[0]; p0++)
                for (int64_t p1 = 0; p1 < z.P[1]; p1++)
                    for (int64_t p2 = 0; p2 < z.P[2]; p2++) {
                        int64_t p[3] = {p0, p1, p2};
                        int64_t yi = off(d->layout, n, k, p, d->out_channels, z.P);
                        for (int64_t cg = 0; cg < Cg; cg++)
                            for (int64_t r0 = 0; r0 < z.R[0]; r0++)
                                for (int64_t r1 = 0; r1 < z.R[1]; r1++)
                                    for (int64_t r2 = 0; r2 < z.R[2]; r2++) {
                                        int64_t r[3] = {r0, r1, r2}, s[3];
                                        bool in = true;
                                        for (int i = 0; i < 3; i++) {
                                            s[i] = p[i] * z.st[i] + r[i] * z.dil[i] - z.pad[i];
                                            in = in && s[i] >= 0 && s[i] < z.S[i];
                                        }
                                        if (in)
                                            visit(ctx,
                                                  off(d->layout, n, (k / Kg) * Cg + cg, s,
                                                      d->in_channels, z.S),
                                                  off(d->layout, k, cg, r, Cg, z.R), yi);
                                    }
                    }
}

typedef struct ref_ctx {
    const float *in, *w;
    double *out;
    bool transposed;
} ref_ctx;

static void accumulate(void *p, int64_t xi, int64_t wi, int64_t yi)
{
    ref_ctx *r = p;
    if (r->transposed)
        r->out[xi] += (double)r->in[yi] * r->w[wi];
    else
        r->out[yi] += (double)r->in[xi] * r->w[wi];
}

void cli_conv_reference(const rnnc_conv *c, const cli_conv_ref_args *a, double *out)
{
    int64_t nx, nw, ny;
    rnnc_conv_numels(c, &nx, &nw, &ny);
    int64_t n_out = a->transposed ? nx : ny;
    memset(out, 0, (size_t)n_out * sizeof *out);
    ref_ctx r = {a->in, a->w, out, a->transposed};
    each_product(c, accumulate, &r);
    if (a->transposed)
        return;
    const rnnc_conv_desc *d = rnnc_conv_get_desc(c);
    int64_t K = d->out_channels, vol = ny / (d->batch * K);
    for (int64_t i = 0; i < ny; i++) {
        int64_t k = d->layout == RNNC_CONV_NCHW ? (i / vol) % K : i % K;
        double v = a->alpha1 * out[i] + (a->z ? a->alpha2 * (double)a->z[i] : 0) +
                   (a->bias ? (double)a->bias[k] : 0);
        out[i] = a->relu && v < 0 ? 0 : v;
    }
}
