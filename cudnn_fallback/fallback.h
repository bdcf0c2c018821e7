/*
 * fallback.h: the interface of cudnn_fallback/ to the stages above (api/,
 * and tests): cuDNN 9 runs the standard cells behind the model API, and
 * convolution.  The stage has three parts, each with its own header:
 *   dnn.h   loading libcudnn, its function table, shared helpers;
 *   rnn.h   the RNN: weight layout, mode matching, algorithms, the backend;
 *   conv.h  convolution: keys and algorithm cache, legacy calls, graphs.
 * Files of the stage include the part they belong to; rnn.h and conv.h use
 * dnn.h and never each other.  The stage sits above runtime/ and ir/ and
 * below api/; it never includes frontend/ (rnn_match.c says where its
 * reference cells come from).
 */
#ifndef RNNC_FALLBACK_H
#define RNNC_FALLBACK_H

#include "cudnn_fallback/conv.h"
#include "cudnn_fallback/rnn.h"

#endif /* RNNC_FALLBACK_H */
