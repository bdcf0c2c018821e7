/*
 * pass_cse: common subexpressions.
 * Requires: a verified cell.  Keeps: everything but duplicates.
 * The builder hash-conses, so a cell built node by node has none; a
 * rewrite that made two nodes equal (drop_absent, simplify) may.  Rebuilding
 * through ir_emit merges them, operands first, so merges cascade.
 */
#include "ir/ir.h"

rnnc_status pass_cse(ir_fn *f)
{
    return ir_rewrite(f, NULL, NULL);
}
