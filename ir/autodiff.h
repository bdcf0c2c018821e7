/*
 * autodiff.h: the backward step of a cell (autodiff.c), built by
 * reverse-mode rules over the op table.
 *
 * Owns: ir_grad and its printer.  May use: the IR of ir/ir.h, the typed
 * builder and the rewriting helpers of ir/pass.h; nothing above ir/.
 * Included by ir/ir.h.
 */
#ifndef RNNC_IR_AUTODIFF_H
#define RNNC_IR_AUTODIFF_H

#include "ir/ir.h"

/* ---------------------------------------------------------------- autodiff (autodiff.c) */

/*
 * The backward step of a cell (reverse mode).  `fn` is an IR function:
 *  - its params are the forward's, in the same slots;
 *  - its states are the adjoints of the forward's states, in the same
 *    slots, named d_<state>: a state's value is the gradient flowing into the
 *    forward's next value from later steps, and its next value is the
 *    gradient of the forward state entering this step;
 *  - its output is the gradient of the forward input at this step;
 *  - its inputs are described by `in` (the upstream gradient of the step's
 *    output, forward values of this step);
 *  - param_grad[k] is the node holding this step's gradient of forward param
 *    k, summed over batch rows (-1: zero); a driver sums them over time.
 * The forward saves `saved` (forward node indices) at every step; states
 * entering and leaving a step come from the state sequence.
 */
typedef enum ir_grad_src {
    IR_GSRC_DOUT = 0,  /* the upstream gradient of the forward output */
    IR_GSRC_INPUT = 1, /* forward input `ref` at this step */
    IR_GSRC_STATE = 2, /* forward state `ref` entering this step */
    IR_GSRC_NEXT = 3,  /* forward state `ref` leaving this step (its next value) */
    IR_GSRC_SAVED = 4  /* forward node `ref`, saved by the forward */
} ir_grad_src;

typedef struct ir_grad_in {
    ir_grad_src src;
    int32_t ref;
} ir_grad_in;

typedef struct ir_grad {
    ir_fn *fn;
    ir_grad_in *in;       /* [fn->n_inputs] */
    int32_t *param_grad;  /* [forward n_params] */
    int32_t *saved;       /* forward nodes, ascending */
    int32_t n_saved;
} ir_grad;

/* The backward step of a verified, specialised forward `f`. */
rnnc_status ir_autodiff(const ir_fn *f, ir_grad *out);
void ir_grad_free(ir_grad *g);
/* The backward step as .cell-like text, with the saved values and the
 * per-step parameter gradients (`rnnc dump --stage backward`). */
rnnc_status ir_grad_print(const ir_fn *f, const ir_grad *g, char **text);
/* True when the autodiff pass has a derivative rule for op. */
bool ir_has_derivative(int op);

#endif /* RNNC_IR_AUTODIFF_H */
