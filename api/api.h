/*
 * api.h: the internal header of api/: the model API (rnnc_model_*), which
 * specialises a cell for a model, binds weights by state_dict name and
 * drives the chosen backend.
 */
#ifndef RNNC_API_H
#define RNNC_API_H

#include "cudnn_fallback/fallback.h"
#include "runtime/runtime.h"

#endif /* RNNC_API_H */
