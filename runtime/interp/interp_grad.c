/*
 * interp_grad.c: the reference backward of a whole model in double
 * precision (layers, directions, lengths, dropout, projection): the oracle
 * every other backward is tested against.
 *
 * The forward runs again here and records, per pseudo-layer and time, what
 * the backward step of ir_autodiff reads: the states entering and leaving
 * each step and the values the pass chose to save.  Then each layer, last
 * first, runs its backward step in reverse time.  A row past its length is
 * not in the step: its upstream gradients enter as zero (so it adds nothing
 * to the weight gradients) and its state gradients pass through unchanged,
 * as the forward held its states.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/interp/interp.h"

typedef struct layer_rec {
    double **enter, **leave; /* [n_states] each [T, B, n_k] */
    double **saved;          /* [n_saved] each [T, B, w_j] */
} layer_rec;

typedef struct gctx {
    const rt_spec *s;
    const rt_weights_f64 *w;
    const rt_seq_f64 *q;
    const rt_grad_f64 *g;
    int64_t T, B, width;
    ir_grad grad[2];  /* of fn[0], fn[1] */
    uint8_t *dep[2];  /* ir_compute_deps of each backward step */
    double **in;      /* [L + 1] layer inputs [T, B, W_l]; in[L] = the model's output */
    double **raw;     /* [L] layer outputs before dropout */
    layer_rec *rec;   /* [L * D] */
    void **blocks;    /* every allocation, freed at once */
    int n_blocks, cap_blocks;
} gctx;

/* Zeroed memory owned by the context (NULL on failure). */
static void *gc_alloc(gctx *c, size_t n)
{
    if (c->n_blocks == c->cap_blocks) {
        int cap = c->cap_blocks ? 2 * c->cap_blocks : 64;
        void **p = realloc(c->blocks, sizeof *p * (size_t)cap);
        if (!p)
            return NULL;
        c->blocks = p;
        c->cap_blocks = cap;
    }
    void *m = calloc(n ? n : 1, 1);
    if (m)
        c->blocks[c->n_blocks++] = m;
    return m;
}

static void gc_free(gctx *c)
{
    for (int i = 0; i < c->n_blocks; i++)
        free(c->blocks[i]);
    free(c->blocks);
    for (int k = 0; k < 2; k++) {
        free(c->dep[k]);
        if (k == 0 || c->s->fn[1] != c->s->fn[0])
            ir_grad_free(&c->grad[k]);
    }
}

static double *gc_doubles(gctx *c, int64_t n)
{
    return gc_alloc(c, (size_t)n * sizeof(double));
}

static int64_t len_of(const gctx *c, int64_t b)
{
    return c->q->lengths ? c->q->lengths[b] : c->T;
}

static const ir_grad *grad_of(const gctx *c, int layer)
{
    return &c->grad[layer > 0 && c->s->fn[1] != c->s->fn[0]];
}

static int64_t width_of(const rt_frame *fr, int32_t node)
{
    return fr->cols[node];
}

/* [T,B,n] <-> [B,T,n] when batch_first; else a copy. */
static void relayout(const gctx *c, double *dst, const double *src, int64_t n, bool to_tb)
{
    for (int64_t t = 0; t < c->T; t++)
        for (int64_t b = 0; b < c->B; b++) {
            int64_t tb = (t * c->B + b) * n, bt = (b * c->T + t) * n;
            bool bf = c->s->batch_first;
            memcpy(dst + (to_tb ? tb : (bf ? bt : tb)), src + (to_tb ? (bf ? bt : tb) : tb),
                   (size_t)n * sizeof(double));
        }
}

/* ---------------------------------------------------------------- forward, recording */

static rnnc_status rec_alloc(gctx *c, layer_rec *r, const rt_frame *fr, const ir_grad *gr)
{
    const ir_fn *f = fr->f;
    r->enter = gc_alloc(c, sizeof(double *) * ((size_t)f->n_states + 1));
    r->leave = gc_alloc(c, sizeof(double *) * ((size_t)f->n_states + 1));
    r->saved = gc_alloc(c, sizeof(double *) * ((size_t)gr->n_saved + 1));
    if (!r->enter || !r->leave || !r->saved)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for the recording");
    for (int k = 0; k < f->n_states; k++) {
        int64_t n = c->T * c->B * width_of(fr, f->states[k].node);
        if (!(r->enter[k] = gc_doubles(c, n)) || !(r->leave[k] = gc_doubles(c, n)))
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for the recording");
    }
    for (int j = 0; j < gr->n_saved; j++)
        if (!(r->saved[j] = gc_doubles(c, c->T * c->B * width_of(fr, gr->saved[j]))))
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for the recording");
    return RNNC_OK;
}

static void copy_states(const gctx *c, const rt_frame *fr, double **to, int64_t t)
{
    const ir_fn *f = fr->f;
    for (int k = 0; k < f->n_states; k++) {
        int32_t node = f->states[k].node;
        int64_t m = c->B * fr->cols[node];
        memcpy(to[k] + t * m, fr->buf[node], (size_t)m * sizeof(double));
    }
}

/* Output and next states of the rows inside their sequence at time t. */
static rnnc_status fwd_commit(const gctx *c, rt_frame *fr, int l, int d, int64_t t, double *stage)
{
    const ir_fn *f = fr->f;
    int64_t hout = c->s->hout, B = c->B;
    int64_t yrs = f->nodes[f->output].kind == IR_ROW ? hout : 0;
    for (int64_t b = 0; b < B; b++)
        if (t < len_of(c, b))
            memcpy(c->raw[l] + (t * B + b) * c->width + d * hout, fr->val[f->output] + b * yrs,
                   (size_t)hout * sizeof(double));
    double *sp = stage;
    for (int k = 0; k < f->n_states; k++) {
        int32_t next = f->states[k].next;
        int64_t n = fr->cols[f->states[k].node];
        if (f->nodes[next].kind != IR_ROW)
            return err_fail(RNNC_ERR_UNSUPPORTED, "interp: state '%s' is not a row value",
                            f->states[k].name);
        memcpy(sp, fr->val[next], (size_t)(B * n) * sizeof(double));
        sp += B * n;
    }
    sp = stage;
    for (int k = 0; k < f->n_states; k++) {
        int64_t n = fr->cols[f->states[k].node];
        for (int64_t b = 0; b < B; b++)
            if (t < len_of(c, b))
                memcpy(fr->buf[f->states[k].node] + b * n, sp + b * n, (size_t)n * sizeof(double));
        sp += B * n;
    }
    return RNNC_OK;
}

static rnnc_status fwd_walk(gctx *c, rt_frame *fr, int l, int d, layer_rec *r, double *stage)
{
    const ir_grad *gr = grad_of(c, l);
    int32_t in_node = fr->f->inputs[0].node;
    int64_t iw = fr->cols[in_node], B = c->B;
    for (int64_t step = 0; step < c->T; step++) {
        int64_t t = d ? c->T - 1 - step : step;
        memcpy(fr->buf[in_node], c->in[l] + t * B * iw, (size_t)(B * iw) * sizeof(double));
        copy_states(c, fr, r->enter, t);
        rnnc_status st = rt_frame_eval_step(fr, t);
        if (st != RNNC_OK)
            return st;
        for (int j = 0; j < gr->n_saved; j++) {
            int64_t m = B * fr->cols[gr->saved[j]];
            memcpy(r->saved[j] + t * m, fr->val[gr->saved[j]], (size_t)m * sizeof(double));
        }
        if ((st = fwd_commit(c, fr, l, d, t, stage)) != RNNC_OK)
            return st;
        copy_states(c, fr, r->leave, t);
    }
    return RNNC_OK;
}

static void states_in(const gctx *c, rt_frame *fr, int p)
{
    const ir_fn *f = fr->f;
    for (int k = 0; k < f->n_states; k++) {
        int32_t node = f->states[k].node;
        size_t m = (size_t)(c->B * fr->cols[node]);
        if (c->q->init && c->q->init[k])
            memcpy(fr->buf[node], c->q->init[k] + (size_t)p * m, m * sizeof(double));
        else
            memset(fr->buf[node], 0, m * sizeof(double));
    }
}

static void states_out(const gctx *c, const rt_frame *fr, int p)
{
    const ir_fn *f = fr->f;
    for (int k = 0; k < f->n_states; k++) {
        size_t m = (size_t)(c->B * fr->cols[f->states[k].node]);
        if (c->q->final && c->q->final[k])
            memcpy(c->q->final[k] + (size_t)p * m, fr->buf[f->states[k].node], m * sizeof(double));
    }
}

static rnnc_status fwd_direction(gctx *c, int l, int d)
{
    int p = l * c->s->dirs + d;
    rt_frame fr;
    int64_t stage_n;
    rnnc_status st = rt_interp_frame(&fr, c->s, c->w, l, d, c->B, c->q->training, &stage_n);
    if (st != RNNC_OK)
        return st;
    double *stage = gc_doubles(c, stage_n);
    st = stage ? rec_alloc(c, &c->rec[p], &fr, grad_of(c, l))
               : err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for the states");
    if (st == RNNC_OK)
        st = rt_frame_eval_fixed(&fr);
    if (st == RNNC_OK) {
        states_in(c, &fr, p);
        st = fwd_walk(c, &fr, l, d, &c->rec[p], stage);
    }
    if (st == RNNC_OK)
        states_out(c, &fr, p);
    rt_frame_free(&fr);
    return st;
}

static void dropout_mask(const gctx *c, int layer, double *buf)
{
    uint64_t site = rt_dropout_site_layer(layer);
    double p = c->s->dropout, scale = cm_dropout_scale(p);
    int64_t n = c->T * c->B * c->width;
    for (int64_t i = 0; i < n; i++)
        buf[i] = cm_dropout_keep(c->s->seed, site, (uint64_t)i, p) ? buf[i] * scale : 0.0;
}

static bool drops_after(const gctx *c, int l)
{
    return c->q->training && c->s->dropout > 0.0 && l + 1 < c->s->layers;
}

static rnnc_status forward(gctx *c)
{
    int64_t n = c->T * c->B * c->width;
    for (int l = 0; l < c->s->layers; l++) {
        if (!(c->raw[l] = gc_doubles(c, n)) || !(c->in[l + 1] = gc_doubles(c, n)))
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for layer outputs");
        for (int d = 0; d < c->s->dirs; d++) {
            rnnc_status st = fwd_direction(c, l, d);
            if (st != RNNC_OK)
                return st;
        }
        memcpy(c->in[l + 1], c->raw[l], (size_t)n * sizeof(double));
        if (drops_after(c, l))
            dropout_mask(c, l, c->in[l + 1]);
    }
    if (c->q->y)
        relayout(c, c->q->y, c->in[c->s->layers], c->width, false);
    return RNNC_OK;
}

/* ---------------------------------------------------------------- backward */

typedef struct bwd_dir {
    gctx *c;
    rt_frame fr;
    const ir_grad *gr;
    const layer_rec *r;
    int l, d, p;
    double **dstate; /* [n_states] [B, n_k]: gradients of the states leaving the step */
} bwd_dir;

static const double *source_rows(const bwd_dir *k, const ir_grad_in *in, int64_t t, int64_t m)
{
    const gctx *c = k->c;
    switch (in->src) {
    case IR_GSRC_INPUT: return c->in[k->l] + t * m;
    case IR_GSRC_STATE: return k->r->enter[in->ref] + t * m;
    case IR_GSRC_NEXT: return k->r->leave[in->ref] + t * m;
    default:
        for (int j = 0; j < k->gr->n_saved; j++)
            if (k->gr->saved[j] == in->ref)
                return k->r->saved[j] + t * m;
        return NULL;
    }
}

/* The backward step's inputs and state gradients at time t; rows outside
 * their sequence see zero gradients. */
static rnnc_status bwd_fill(bwd_dir *k, const double *dout, int64_t t)
{
    gctx *c = k->c;
    const ir_fn *bf = k->gr->fn;
    int64_t B = c->B, hout = c->s->hout;
    for (int j = 0; j < bf->n_inputs; j++) {
        int32_t node = bf->inputs[j].node;
        int64_t n = k->fr.cols[node];
        double *dst = k->fr.buf[node];
        if (k->gr->in[j].src == IR_GSRC_DOUT) {
            for (int64_t b = 0; b < B; b++)
                if (t < len_of(c, b))
                    memcpy(dst + b * n, dout + (t * B + b) * c->width + k->d * hout,
                           (size_t)n * sizeof(double));
                else
                    memset(dst + b * n, 0, (size_t)n * sizeof(double));
            continue;
        }
        const double *src = source_rows(k, &k->gr->in[j], t, B * n);
        if (!src)
            return err_fail(RNNC_ERR_INTERNAL, "interp: backward input '%s' has no source",
                            bf->inputs[j].name);
        memcpy(dst, src, (size_t)(B * n) * sizeof(double));
    }
    for (int s = 0; s < bf->n_states; s++) {
        int32_t node = bf->states[s].node;
        int64_t n = k->fr.cols[node];
        for (int64_t b = 0; b < B; b++)
            if (t < len_of(c, b))
                memcpy(k->fr.buf[node] + b * n, k->dstate[s] + b * n, (size_t)n * sizeof(double));
            else
                memset(k->fr.buf[node] + b * n, 0, (size_t)n * sizeof(double));
    }
    return RNNC_OK;
}

/* Takes the step's results: state gradients and dx of the rows in the
 * step, and the weight gradients (zero from the other rows). */
static void bwd_take(bwd_dir *k, double *din, int64_t t)
{
    gctx *c = k->c;
    const ir_fn *bf = k->gr->fn;
    int64_t B = c->B;
    for (int s = 0; s < bf->n_states; s++) {
        int64_t n = k->fr.cols[bf->states[s].node];
        for (int64_t b = 0; b < B; b++)
            if (t < len_of(c, b))
                memcpy(k->dstate[s] + b * n, k->fr.val[bf->states[s].next] + b * n,
                       (size_t)n * sizeof(double));
    }
    int64_t iw = k->fr.cols[bf->output];
    for (int64_t b = 0; b < B; b++)
        for (int64_t j = 0; t < len_of(c, b) && j < iw; j++)
            din[(t * B + b) * iw + j] += k->fr.val[bf->output][b * iw + j];
    int np = c->w->n_params;
    for (int q = 0; q < np; q++) {
        int32_t node = k->gr->param_grad[q];
        double *dw = c->g->dw ? c->g->dw[(size_t)k->p * (size_t)np + (size_t)q] : NULL;
        for (int64_t e = 0; dw && node >= 0 && e < k->fr.cols[node]; e++)
            dw[e] += k->fr.val[node][e];
    }
}

static rnnc_status bwd_walk(bwd_dir *k, const double *dout, double *din)
{
    gctx *c = k->c;
    const uint8_t *dep = c->dep[k->l > 0 && c->s->fn[1] != c->s->fn[0]];
    rnnc_status st = rt_grad_frame_eval(&k->fr, dep, true, 0);
    for (int64_t step = 0; st == RNNC_OK && step < c->T; step++) {
        int64_t t = k->d ? step : c->T - 1 - step; /* the forward's order, reversed */
        st = bwd_fill(k, dout, t);
        if (st == RNNC_OK)
            st = rt_grad_frame_eval(&k->fr, dep, false, t);
        if (st == RNNC_OK)
            bwd_take(k, din, t);
    }
    return st;
}

static rnnc_status bwd_direction(gctx *c, int l, int d, const double *dout, double *din)
{
    const rt_spec *s = c->s;
    bwd_dir k = {.c = c, .gr = grad_of(c, l), .l = l, .d = d, .p = l * s->dirs + d};
    k.r = &c->rec[k.p];
    const ir_fn *bf = k.gr->fn;
    rnnc_status st = rt_frame_init(&k.fr, bf, rt_spec_sizes(s, l), c->B,
                                   c->w->w + (size_t)k.p * (size_t)c->w->n_params);
    if (st != RNNC_OK)
        return st;
    k.fr.training = c->q->training;
    k.fr.seed = s->seed;
    k.fr.pseudo = k.p;
    k.dstate = gc_alloc(c, sizeof(double *) * ((size_t)bf->n_states + 1));
    for (int q = 0; k.dstate && q < bf->n_states; q++) {
        int64_t m = c->B * k.fr.cols[bf->states[q].node];
        if (!(k.dstate[q] = gc_doubles(c, m)))
            k.dstate = NULL;
        else if (c->g->dfinal && c->g->dfinal[q])
            memcpy(k.dstate[q], c->g->dfinal[q] + (size_t)k.p * (size_t)m,
                   (size_t)m * sizeof(double));
    }
    st = k.dstate ? bwd_walk(&k, dout, din)
                  : err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for gradients");
    for (int q = 0; st == RNNC_OK && q < bf->n_states; q++) {
        int64_t m = c->B * k.fr.cols[bf->states[q].node];
        if (c->g->dinit && c->g->dinit[q])
            memcpy(c->g->dinit[q] + (size_t)k.p * (size_t)m, k.dstate[q],
                   (size_t)m * sizeof(double));
    }
    rt_frame_free(&k.fr);
    return st;
}

static rnnc_status backward(gctx *c)
{
    const rt_spec *s = c->s;
    double *dout = gc_doubles(c, c->T * c->B * c->width);
    if (!dout)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for gradients");
    relayout(c, dout, c->g->dy, c->width, true);
    for (int l = s->layers - 1; l >= 0; l--) {
        int64_t iw = l == 0 ? s->sizes[0].I : c->width;
        double *din = gc_doubles(c, c->T * c->B * iw);
        if (!din)
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory for gradients");
        for (int d = 0; d < s->dirs; d++) {
            rnnc_status st = bwd_direction(c, l, d, dout, din);
            if (st != RNNC_OK)
                return st;
        }
        if (l > 0 && drops_after(c, l - 1))
            dropout_mask(c, l - 1, din); /* the same mask and scale */
        dout = din;
    }
    if (c->g->dx)
        relayout(c, c->g->dx, dout, s->sizes[0].I, false);
    return RNNC_OK;
}

/* ---------------------------------------------------------------- entry */

static rnnc_status prepare(gctx *c)
{
    const rt_spec *s = c->s;
    for (int k = 0; k < 2; k++) {
        const ir_fn *f = s->fn[k];
        if (k == 1 && f == s->fn[0])
            break;
        rnnc_status st = ir_autodiff(f, &c->grad[k]);
        if (st != RNNC_OK)
            return st;
        if (!(c->dep[k] = malloc((size_t)c->grad[k].fn->n + 1)))
            return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory");
        ir_compute_deps(c->grad[k].fn, c->dep[k]);
    }
    int L = s->layers, P = L * s->dirs;
    c->in = gc_alloc(c, sizeof(double *) * (size_t)(L + 1));
    c->raw = gc_alloc(c, sizeof(double *) * (size_t)L);
    c->rec = gc_alloc(c, sizeof(layer_rec) * (size_t)P);
    if (!c->in || !c->raw || !c->rec || !(c->in[0] = gc_doubles(c, c->T * c->B * s->sizes[0].I)))
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "interp: out of memory");
    relayout(c, c->in[0], c->q->x, s->sizes[0].I, true);
    int np = c->w->n_params;
    for (int p = 0; c->g->dw && p < P; p++)
        for (int q = 0; q < np; q++) {
            double *dw = c->g->dw[(size_t)p * (size_t)np + (size_t)q];
            const ir_fn *f = rt_spec_fn(s, p / s->dirs);
            const ir_node *n = &f->nodes[f->params[q].node];
            ir_sizes sz = rt_spec_sizes(s, p / s->dirs);
            int64_t m = ir_dim_eval(n->cols, sz) * (n->kind == IR_MAT ? ir_dim_eval(n->rows, sz) : 1);
            if (dw)
                memset(dw, 0, (size_t)m * sizeof(double));
        }
    return RNNC_OK;
}

rnnc_status rt_interp_grad(const rt_spec *s, const rt_weights_f64 *w, const rt_seq_f64 *q,
                           const rt_grad_f64 *g)
{
    if (!s || !w || !q || !g || !q->x || !g->dy || !s->fn[0])
        return err_fail(RNNC_ERR_INVALID_ARG, "interp: NULL spec, weights, x or dy");
    if (q->seq_len < 1 || q->batch < 1 || w->n_params != s->fn[0]->n_params ||
        w->pseudo_layers < s->layers * s->dirs)
        return err_fail(RNNC_ERR_INVALID_ARG, "interp: bad shapes for the backward");
    for (int64_t b = 0; q->lengths && b < q->batch; b++)
        if (q->lengths[b] < 1 || q->lengths[b] > q->seq_len)
            return err_fail(RNNC_ERR_INVALID_ARG, "interp: lengths[%lld] = %lld not in [1, %lld]",
                            (long long)b, (long long)q->lengths[b], (long long)q->seq_len);
    gctx c = {.s = s, .w = w, .q = q, .g = g, .T = q->seq_len, .B = q->batch,
              .width = s->dirs * s->hout};
    rnnc_status st = prepare(&c);
    if (st == RNNC_OK)
        st = forward(&c);
    if (st == RNNC_OK)
        st = backward(&c);
    gc_free(&c);
    return st;
}
