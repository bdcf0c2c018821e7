/*
 * pass_drop_absent: decides a cell's optional parameters for one model.
 * Requires: a verified cell; whether the model has a projection (P) and
 * biases (bias=False drops every optional param named `bias` or `bias_*`,
 * PyTorch's names, so a user's own cell opts in by declaring them optional).
 * Keeps: every node not touching an absent param.  An absent param acts as
 * the identity of the op using it (linear(x, W) = x, x + b = x, x - b = x,
 * x * g = x, x / g = x, a missing layernorm gamma or beta), and leaves the
 * parameter list.  Any other use is an error naming the param.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

typedef struct ctx {
    bool present[1024];
    bool has_proj;
    uint8_t *gone; /* [src->n]: a node made of absent params only (bias_ih + bias_hh) */
} ctx;

static bool is_bias_name(const char *name)
{
    return strcmp(name, "bias") == 0 || strncmp(name, "bias_", 5) == 0;
}

static bool absent(const ir_fn *src, const ctx *c, int32_t node)
{
    if (node < 0)
        return false;
    if (c->gone[node])
        return true;
    return src->nodes[node].op == IR_PARAM && !c->present[src->nodes[node].i0];
}

static rnnc_status drop_cb(ir_fn *dst, const ir_fn *src, int32_t i, ir_node *n,
                           const int32_t *map, void *vctx, int32_t *out)
{
    (void)map;
    ctx *c = vctx;
    const ir_node *old = &src->nodes[i];
    if (ir_ops[old->op].flags & IR_F_LEAF && old->op != IR_CONST) {
        if (old->op == IR_PARAM && !c->present[old->i0])
            *out = -1;
        if (!c->has_proj) { /* P means H: the leaf is re-declared with these dims */
            n->rows.h += n->rows.p, n->rows.p = 0;
            n->cols.h += n->cols.p, n->cols.p = 0;
        }
        return RNNC_OK;
    }
    bool a0 = absent(src, c, old->a[0]), a1 = absent(src, c, old->a[1]);
    if (old->op == IR_LAYERNORM) {
        for (int k = 1; k < 3; k++)
            if (absent(src, c, old->a[k]))
                n->a[k] = -1;
        return ir_emit_node(dst, n, out);
    }
    if (!a0 && !a1)
        return ir_emit_node(dst, n, out);
    bool keeps_first = old->op == IR_LINEAR || old->op == IR_ADD || old->op == IR_SUB ||
                       old->op == IR_MUL || old->op == IR_DIV;
    if (keeps_first && a1 && !a0) {
        *out = n->a[0];
        return RNNC_OK;
    }
    if ((old->op == IR_ADD || old->op == IR_MUL) && a0 && !a1) {
        *out = n->a[1];
        return RNNC_OK;
    }
    /* identity op identity is the identity: absent as well */
    if ((old->op == IR_ADD || old->op == IR_SUB || old->op == IR_MUL) && a0 && a1) {
        c->gone[i] = 1;
        *out = -1;
        return RNNC_OK;
    }
    int32_t p = a0 ? old->a[0] : old->a[1];
    const char *name = src->nodes[p].op == IR_PARAM ? src->params[src->nodes[p].i0].name
                                                    : "(a sum or product of absent parameters)";
    return err_fail(RNNC_ERR_SHAPE,
                    "cell '%s': optional parameter '%s' is absent but %s cannot do without it",
                    src->name, name, ir_ops[old->op].name);
}

/* Only cells whose biases can be absent take bias=False: silently keeping
 * a mandatory bias would compute another model than the one asked for. */
static rnnc_status check_has_bias(const ir_fn *f)
{
    for (int i = 0; i < f->n_params; i++)
        if (f->params[i].optional && is_bias_name(f->params[i].name))
            return RNNC_OK;
    return err_fail(RNNC_ERR_UNSUPPORTED,
                    "cell '%s' has no optional bias parameter, so it cannot be built without "
                    "biases (declare them `param bias_ih[...] optional`)",
                    f->name);
}

rnnc_status pass_drop_absent(ir_fn *f, bool has_proj)
{
    return pass_drop_absent_bias(f, has_proj, false);
}

rnnc_status pass_drop_absent_bias(ir_fn *f, bool has_proj, bool no_bias)
{
    if (no_bias) {
        rnnc_status s = check_has_bias(f);
        if (s != RNNC_OK)
            return s;
    }
    ctx c = {.has_proj = has_proj};
    if (f->n_params > (int32_t)(sizeof c.present / sizeof c.present[0]))
        return err_fail(RNNC_ERR_UNSUPPORTED, "cell '%s' has over %zu parameters", f->name,
                        sizeof c.present / sizeof c.present[0]);
    for (int i = 0; i < f->n_params; i++) {
        const ir_node *p = &f->nodes[f->params[i].node];
        bool uses_p = ir_dim_uses_p(p->rows) || ir_dim_uses_p(p->cols);
        bool dropped_bias = no_bias && is_bias_name(f->params[i].name);
        c.present[i] = !f->params[i].optional || ((!uses_p || has_proj) && !dropped_bias);
    }
    c.gone = calloc((size_t)f->n + 1, 1);
    if (!c.gone)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cell '%s': out of memory", f->name);
    rnnc_status s = ir_rewrite(f, drop_cb, &c);
    free(c.gone);
    return s;
}
