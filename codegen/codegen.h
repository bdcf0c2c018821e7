/*
 * codegen.h: the internal header of the codegen/ stage: schedule -> source
 * (CUDA C) or module (LLVM IR).  Nothing here runs code; runtime/ does.
 *
 * Sections (one owner each; edit only your own section):
 *   1. CUDA C generator (codegen/cuda/*.c)
 *   2. LLVM IR generator (codegen/llvm/*.c)
 */
#ifndef RNNC_CODEGEN_H
#define RNNC_CODEGEN_H

#include "ir/ir.h"
#include "rnnc.h"

/* ================================================================ 1. CUDA */

/* ================================================================ 2. LLVM */

#endif /* RNNC_CODEGEN_H */
