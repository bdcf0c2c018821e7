/*
 * api.h: the internal header of api/: the model API (rnnc_model_*), which
 * specialises a cell for a model, binds weights by state_dict name and
 * drives the chosen backend; and the stage dumps.
 *
 * Sections: model (model.c), weights (weights.c), backends (backends.c),
 * dumps (dump.c).
 */
#ifndef RNNC_API_H
#define RNNC_API_H

#include "cudnn_fallback/fallback.h"
#include "runtime/runtime.h"

/* One weight a model expects: `<param>_l<k>[_reverse]`. */
typedef struct api_weight {
    char name[96];
    int pseudo, param;
    int rank;
    int64_t shape[2];
    int64_t count;
    float *data;
    bool set;
} api_weight;

struct rnnc_model {
    rt_spec spec;
    rnnc_cell *fn;           /* the cell optimised for this model (owned) */
    rnnc_backend kind;       /* resolved */
    const rt_backend *be;
    void *be_state;
    api_weight *weights;     /* pseudo-major, as rt_weights */
    int n_weights;
    const float **wptr;      /* rt_weights.w */
    bool dirty;              /* weights changed since the last bind */
};

/* ---- weights (weights.c) */
rnnc_status api_weights_init(rnnc_model *m);
void api_weights_free(rnnc_model *m);
/* Binds to the backend if every weight is set and something changed. */
rnnc_status api_weights_sync(rnnc_model *m);

/* ---- backends (backends.c) */
const rt_backend *api_backend_ops(rnnc_backend b);
/* Creates the backend for `want` (AUTO tries fused, cpu, interp in turn). */
rnnc_status api_backend_open(rnnc_model *m, rnnc_backend want);

#endif /* RNNC_API_H */
