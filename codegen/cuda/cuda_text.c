/*
 * cuda_text.c: the growable text the CUDA generator writes into, and float
 * literals that read back to the same fp32 value.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cuda/cuda_gen.h"

void cu_printf(cu_text *t, const char *fmt, ...)
{
    if (t->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = t->cap - t->n;
        int w = vsnprintf(t->p ? t->p + t->n : NULL, t->p ? room : 0, fmt, ap);
        va_end(ap);
        if (w < 0) {
            t->oom = true;
            return;
        }
        if (t->p && (size_t)w < room) {
            t->n += (size_t)w;
            return;
        }
        size_t cap = t->cap ? t->cap * 2 : 16384;
        while (cap < t->n + (size_t)w + 1)
            cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->oom = true;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
}

const char *cu_float_lit(double v, char *buf, size_t n)
{
    if (isnan(v))
        snprintf(buf, n, "__int_as_float(0x7fc00000)");
    else if (isinf(v))
        snprintf(buf, n, "%s__int_as_float(0x7f800000)", v < 0 ? "-" : "");
    else
        snprintf(buf, n, "(%.9ef)", (double)(float)v);
    return buf;
}

const char *cu_unary_fmt(int op)
{
    switch (op) {
    case IR_NEG: return "-(%s)";
    case IR_SIGMOID: return "1.f / (1.f + expf(-(%s)))";
    case IR_TANH: return "tanhf(%s)";
    case IR_RELU: return "fmaxf(%s, 0.f)";
    case IR_STEP: return "((%s) > 0.f ? 1.f : 0.f)"; /* relu', made by autodiff */
    case IR_EXP: return "expf(%s)";
    case IR_LOG: return "logf(%s)";
    case IR_SQRT: return "sqrtf(%s)";
    case IR_RSQRT: return "rsqrtf(%s)";
    case IR_DROPOUT: return "(%s)"; /* inference: identity */
    default: return NULL;
    }
}

const char *cu_binary_op(int op)
{
    switch (op) {
    case IR_ADD: return "+";
    case IR_SUB: return "-";
    case IR_MUL: return "*";
    case IR_DIV: return "/";
    default: return NULL;
    }
}
