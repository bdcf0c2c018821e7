/*
 * tensor.h: the internal header of runtime/tensor: named tensors in host
 * memory (tensors.c, the public rnnc_tensors_* API and the dtype names)
 * and their safetensors files (safetensors.c; docs/tensors.md).
 *
 * Uses: common (files, errors).
 */
#ifndef RNNC_RUNTIME_TENSOR_H
#define RNNC_RUNTIME_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "rnnc.h"

/* (tensors.c, safetensors.c implement the public rnnc_tensors_* API.) */

/* For rt_tensor_expect: accept any of F32, F16, BF16, F64 (then rt_tensor_to_f32). */
#define RT_DTYPE_ANY_FLOAT ((rnnc_dtype)100)

/* The dtype named `name` as in safetensors ("F32", "BF16", ...); false if none. */
bool rt_dtype_from_name(const char *name, rnnc_dtype *out);
/* Bytes of a tensor of this dtype and shape; false if a dim is negative,
 * the rank is out of [0, RNNC_MAX_RANK] or the size overflows. */
bool rt_tensor_bytes(rnnc_dtype dtype, int rank, const int64_t *shape, size_t *out);
size_t rt_tensor_nbytes(const rnnc_tensor *t);
/* "[2, 3]" into buf (truncated to n bytes); returns buf. */
char *rt_format_shape(char *buf, size_t n, int rank, const int64_t *shape);
/* Adds a tensor whose `rank`/`shape` are checked and whose data is left
 * uninitialised for the caller to fill through *data. */
rnnc_status rt_tensors_add_empty(rnnc_tensors *ts, const char *name, rnnc_dtype dtype, int rank,
                                 const int64_t *shape, void **data);
/*
 * The tensor `name` of `ts`, checked: RNNC_ERR_NOT_FOUND if missing,
 * RNNC_ERR_FORMAT if its dtype is not `dt` (RT_DTYPE_ANY_FLOAT: any float
 * dtype), RNNC_ERR_SHAPE ("expected [..] got [..]") unless it has `rank`
 * dims equal to `shape`.  rank < 0 skips the shape check.
 */
rnnc_status rt_tensor_expect(const rnnc_tensors *ts, const char *name, rnnc_dtype dt, int rank,
                             const int64_t *shape, const rnnc_tensor **out);
/* Converts a float tensor (F32, F16, BF16, F64) to fp32 into out[numel];
 * RNNC_ERR_FORMAT for an integer dtype. */
rnnc_status rt_tensor_to_f32(const rnnc_tensor *t, float *out);
/* rnnc_tensors_save in two steps, for a command that writes several files
 * all or none: stage writes the whole file to its temp file (o is closed on
 * failure); commit renames it into place; cm_out_abort drops it instead. */
rnnc_status rt_tensors_stage(const rnnc_tensors *ts, const char *path, cm_out *o);
rnnc_status rt_tensors_commit(cm_out *o);
/* After cJSON failed on text: true if it parses now (so what failed was an
 * allocation, RNNC_ERR_OUT_OF_MEMORY, not the text). */
bool rt_json_parses(const char *text, size_t n);

#endif
