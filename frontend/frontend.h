/*
 * frontend.h: the internal header of frontend/: the C builder API, the
 * .cell text parser and the built-in cells.  All of them produce an ir_fn.
 */
#ifndef RNNC_FRONTEND_H
#define RNNC_FRONTEND_H

#include "ir/ir.h"
#include "rnnc.h"

/* Built-in cell texts, generated from frontend/cells/*.cell at build time. */
typedef struct fe_builtin {
    const char *name;
    const char *text;
    size_t len;
} fe_builtin;

#endif /* RNNC_FRONTEND_H */
