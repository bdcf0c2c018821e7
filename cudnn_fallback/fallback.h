/*
 * fallback.h: the internal header of cudnn_fallback/: cuDNN 9 runs the
 * standard cells (RNN_RELU, RNN_TANH, LSTM, GRU) behind the model API, and
 * convolution.
 */
#ifndef RNNC_FALLBACK_H
#define RNNC_FALLBACK_H

#include "runtime/runtime.h"

/* The cudnn backend (RNNC_HAVE_CUDNN). */
extern const rt_backend fb_backend_cudnn;

#endif /* RNNC_FALLBACK_H */
