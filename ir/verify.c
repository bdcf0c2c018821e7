/*
 * verify.c: the invariants every pass keeps.  Operands precede their users,
 * each node's shape is what its rule says, declarations point at leaves of
 * their own kind, every state has a next value of its own shape, and the
 * output is a row value.
 */
#include "ir/ir.h"

static rnnc_status verify_node(const ir_fn *f, int32_t i)
{
    const ir_node *n = &f->nodes[i];
    if (n->op >= IR_NUM_OPS)
        return err_fail(RNNC_ERR_INTERNAL, "cell '%s': node %d has a bad op", f->name, i);
    for (int k = 0; k < 3; k++)
        if (n->a[k] >= i)
            return err_fail(RNNC_ERR_INTERNAL, "cell '%s': node %d uses a later node", f->name, i);
    ir_node copy = *n;
    rnnc_status s = ir_infer_node(f, &copy);
    if (s != RNNC_OK)
        return s;
    if (copy.kind != n->kind || !ir_dim_eq(copy.cols, n->cols))
        return err_fail(RNNC_ERR_INTERNAL, "cell '%s': node %d has a stale shape", f->name, i);
    return RNNC_OK;
}

static rnnc_status verify_decls(const ir_fn *f)
{
    for (int i = 0; i < f->n_inputs; i++)
        if (f->inputs[i].node < 0 || f->inputs[i].node >= f->n ||
            f->nodes[f->inputs[i].node].op != IR_INPUT)
            return err_fail(RNNC_ERR_INTERNAL, "cell '%s': input %d is broken", f->name, i);
    for (int i = 0; i < f->n_params; i++)
        if (f->params[i].node < 0 || f->params[i].node >= f->n ||
            f->nodes[f->params[i].node].op != IR_PARAM)
            return err_fail(RNNC_ERR_INTERNAL, "cell '%s': param %d is broken", f->name, i);
    for (int i = 0; i < f->n_states; i++) {
        const ir_state *st = &f->states[i];
        if (st->node < 0 || st->node >= f->n || f->nodes[st->node].op != IR_STATE)
            return err_fail(RNNC_ERR_INTERNAL, "cell '%s': state %d is broken", f->name, i);
        if (st->next < 0)
            return err_fail(RNNC_ERR_SHAPE, "cell '%s': state '%s' is never updated (no next)",
                            f->name, st->name);
        const ir_node *nx = &f->nodes[st->next];
        if (nx->kind != IR_ROW || !ir_dim_eq(nx->cols, f->nodes[st->node].cols))
            return err_fail(RNNC_ERR_SHAPE, "cell '%s': next value of '%s' has the wrong shape",
                            f->name, st->name);
    }
    return RNNC_OK;
}

rnnc_status ir_verify(const ir_fn *f)
{
    if (f->n_inputs < 1)
        return err_fail(RNNC_ERR_SHAPE, "cell '%s' has no input", f->name);
    if (f->n_states < 1)
        return err_fail(RNNC_ERR_SHAPE, "cell '%s' has no state", f->name);
    for (int32_t i = 0; i < f->n; i++) {
        rnnc_status s = verify_node(f, i);
        if (s != RNNC_OK)
            return s;
    }
    rnnc_status s = verify_decls(f);
    if (s != RNNC_OK)
        return s;
    if (f->output < 0)
        return err_fail(RNNC_ERR_SHAPE, "cell '%s' has no output", f->name);
    if (f->nodes[f->output].kind != IR_ROW)
        return err_fail(RNNC_ERR_SHAPE, "cell '%s': the output must be a row value", f->name);
    return RNNC_OK;
}
