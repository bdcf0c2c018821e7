/*
 * model_info.c: the feature sizes of a model's output and states, so a
 * caller that does not know the cell (the rnnc command running a .cell
 * file) can size y and the final states.  States have the same size in
 * every layer: their dims use H and P only, never I.
 */
#include "api/api.h"

rnnc_status rnnc_model_output_size(const rnnc_model *m, int64_t *hout)
{
    if (!m || !hout)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_model_output_size: NULL argument");
    *hout = m->spec.hout;
    return RNNC_OK;
}

rnnc_status rnnc_model_state_size(const rnnc_model *m, int state, int64_t *size)
{
    if (!m || !size)
        return err_fail(RNNC_ERR_INVALID_ARG, "rnnc_model_state_size: NULL argument");
    if (state < 0 || state >= m->fn->n_states)
        return err_fail(RNNC_ERR_INVALID_ARG, "cell '%s' has no state %d (it has %d)",
                        m->fn->name, state, (int)m->fn->n_states);
    const ir_node *n = &m->fn->nodes[m->fn->states[state].node];
    *size = ir_dim_eval(n->cols, m->spec.sizes[0]);
    return RNNC_OK;
}
