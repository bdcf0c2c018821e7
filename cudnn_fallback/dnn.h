/*
 * dnn.h: the part of cudnn_fallback/ both of its users share: loading
 * libcudnn at run time, the table of its functions, status checks, the
 * dropout state, fp16 conversion and the device buffers that only grow.
 *
 * Owns: cudnn_load.c, cudnn_util.c (fb_buf too).
 * May use: runtime/device (the CUDA driver, device memory),
 * runtime/cache (tuning records), runtime/spec (and ir/ through it), and
 * the public header; nothing of api/, tools/ or frontend/.
 */
#ifndef RNNC_FB_DNN_H
#define RNNC_FB_DNN_H

#include "runtime/cache/cache.h"
#include "runtime/spec/spec.h"

/* ================================================================ loading and helpers */

/* True when the library was built with cuDNN and a device and cuDNN >= 9
 * are usable now (for rnnc_backend_available).  Sets no error text. */
bool fb_cudnn_available(void);
/* cuDNN's version (major * 10000 + minor * 100 + patch), 0 when it is not
 * loaded. */
size_t fb_cudnn_version(void);
/*
 * Opens libcudnn (once, thread-safe; $RNNC_CUDNN_PATH, else libcudnn.so.9,
 * else libcudnn.so) and fills the function table.  RNNC_ERR_NO_DEVICE with
 * the reason (dlerror's text, a missing symbol, a version below 9) when it
 * cannot.  Every entry point into cuDNN calls this before its first cuDNN
 * call; nothing else may run before it succeeds.
 */
rnnc_status fb_cudnn_load(void);

/* fp32 <-> IEEE half, round to nearest even (host-side weight conversion). */
uint16_t fb_f32_to_f16(float f);
float fb_f16_to_f32(uint16_t h);

#if defined(__has_include)
#if __has_include(<cudnn.h>) && defined(RT_HAVE_CUDA_H)
#define FB_HAVE_CUDNN_H 1
#endif
#endif

#ifdef FB_HAVE_CUDNN_H
#include <cudnn.h>

/* The loaded cuDNN (cudnn_load.c): one pointer per line of cudnn_api.def,
 * typed from cudnn.h's own declarations. */
typedef struct fb_dnn_api {
#define FB_DNN_FN(name) __typeof__(name) *p_##name;
#include "cudnn_fallback/cudnn_api.def"
#undef FB_DNN_FN
} fb_dnn_api;
extern fb_dnn_api fb_dnn;

/* From here on each cuDNN name is its table entry, so calls read as plain
 * cuDNN and libcudnn is never linked.  Keep in step with cudnn_api.def. */
#define cudnnGetVersion (fb_dnn.p_cudnnGetVersion)
#define cudnnGetErrorString (fb_dnn.p_cudnnGetErrorString)
#define cudnnGetLastErrorString (fb_dnn.p_cudnnGetLastErrorString)
#define cudnnCreate (fb_dnn.p_cudnnCreate)
#define cudnnDestroy (fb_dnn.p_cudnnDestroy)
#define cudnnSetStream (fb_dnn.p_cudnnSetStream)
#define cudnnCreateTensorDescriptor (fb_dnn.p_cudnnCreateTensorDescriptor)
#define cudnnDestroyTensorDescriptor (fb_dnn.p_cudnnDestroyTensorDescriptor)
#define cudnnSetTensorNdDescriptor (fb_dnn.p_cudnnSetTensorNdDescriptor)
#define cudnnGetTensorNdDescriptor (fb_dnn.p_cudnnGetTensorNdDescriptor)
/* RNN */
#define cudnnCreateDropoutDescriptor (fb_dnn.p_cudnnCreateDropoutDescriptor)
#define cudnnDestroyDropoutDescriptor (fb_dnn.p_cudnnDestroyDropoutDescriptor)
#define cudnnDropoutGetStatesSize (fb_dnn.p_cudnnDropoutGetStatesSize)
#define cudnnSetDropoutDescriptor (fb_dnn.p_cudnnSetDropoutDescriptor)
#define cudnnRestoreDropoutDescriptor (fb_dnn.p_cudnnRestoreDropoutDescriptor)
#define cudnnCreateRNNDescriptor (fb_dnn.p_cudnnCreateRNNDescriptor)
#define cudnnDestroyRNNDescriptor (fb_dnn.p_cudnnDestroyRNNDescriptor)
#define cudnnSetRNNDescriptor_v8 (fb_dnn.p_cudnnSetRNNDescriptor_v8)
#define cudnnCreateRNNDataDescriptor (fb_dnn.p_cudnnCreateRNNDataDescriptor)
#define cudnnDestroyRNNDataDescriptor (fb_dnn.p_cudnnDestroyRNNDataDescriptor)
#define cudnnSetRNNDataDescriptor (fb_dnn.p_cudnnSetRNNDataDescriptor)
#define cudnnGetRNNWeightSpaceSize (fb_dnn.p_cudnnGetRNNWeightSpaceSize)
#define cudnnGetRNNWeightParams (fb_dnn.p_cudnnGetRNNWeightParams)
#define cudnnGetRNNTempSpaceSizes (fb_dnn.p_cudnnGetRNNTempSpaceSizes)
#define cudnnRNNForward (fb_dnn.p_cudnnRNNForward)
#define cudnnRNNBackwardData_v8 (fb_dnn.p_cudnnRNNBackwardData_v8)
#define cudnnRNNBackwardWeights_v8 (fb_dnn.p_cudnnRNNBackwardWeights_v8)
#define cudnnBuildRNNDynamic (fb_dnn.p_cudnnBuildRNNDynamic)
/* convolution */
#define cudnnCreateFilterDescriptor (fb_dnn.p_cudnnCreateFilterDescriptor)
#define cudnnDestroyFilterDescriptor (fb_dnn.p_cudnnDestroyFilterDescriptor)
#define cudnnSetFilterNdDescriptor (fb_dnn.p_cudnnSetFilterNdDescriptor)
#define cudnnCreateConvolutionDescriptor (fb_dnn.p_cudnnCreateConvolutionDescriptor)
#define cudnnDestroyConvolutionDescriptor (fb_dnn.p_cudnnDestroyConvolutionDescriptor)
#define cudnnSetConvolutionNdDescriptor (fb_dnn.p_cudnnSetConvolutionNdDescriptor)
#define cudnnSetConvolutionGroupCount (fb_dnn.p_cudnnSetConvolutionGroupCount)
#define cudnnSetConvolutionMathType (fb_dnn.p_cudnnSetConvolutionMathType)
#define cudnnGetConvolutionForwardAlgorithm_v7 (fb_dnn.p_cudnnGetConvolutionForwardAlgorithm_v7)
#define cudnnGetConvolutionBackwardDataAlgorithm_v7 (fb_dnn.p_cudnnGetConvolutionBackwardDataAlgorithm_v7)
#define cudnnGetConvolutionBackwardFilterAlgorithm_v7 (fb_dnn.p_cudnnGetConvolutionBackwardFilterAlgorithm_v7)
#define cudnnFindConvolutionForwardAlgorithmEx (fb_dnn.p_cudnnFindConvolutionForwardAlgorithmEx)
#define cudnnFindConvolutionBackwardDataAlgorithmEx (fb_dnn.p_cudnnFindConvolutionBackwardDataAlgorithmEx)
#define cudnnFindConvolutionBackwardFilterAlgorithmEx (fb_dnn.p_cudnnFindConvolutionBackwardFilterAlgorithmEx)
#define cudnnGetConvolutionForwardWorkspaceSize (fb_dnn.p_cudnnGetConvolutionForwardWorkspaceSize)
#define cudnnGetConvolutionBackwardDataWorkspaceSize (fb_dnn.p_cudnnGetConvolutionBackwardDataWorkspaceSize)
#define cudnnGetConvolutionBackwardFilterWorkspaceSize (fb_dnn.p_cudnnGetConvolutionBackwardFilterWorkspaceSize)
#define cudnnConvolutionForward (fb_dnn.p_cudnnConvolutionForward)
#define cudnnConvolutionBackwardData (fb_dnn.p_cudnnConvolutionBackwardData)
#define cudnnConvolutionBackwardFilter (fb_dnn.p_cudnnConvolutionBackwardFilter)
#define cudnnAddTensor (fb_dnn.p_cudnnAddTensor)
#define cudnnCreateActivationDescriptor (fb_dnn.p_cudnnCreateActivationDescriptor)
#define cudnnDestroyActivationDescriptor (fb_dnn.p_cudnnDestroyActivationDescriptor)
#define cudnnSetActivationDescriptor (fb_dnn.p_cudnnSetActivationDescriptor)
#define cudnnActivationForward (fb_dnn.p_cudnnActivationForward)
#define cudnnBackendCreateDescriptor (fb_dnn.p_cudnnBackendCreateDescriptor)
#define cudnnBackendDestroyDescriptor (fb_dnn.p_cudnnBackendDestroyDescriptor)
#define cudnnBackendSetAttribute (fb_dnn.p_cudnnBackendSetAttribute)
#define cudnnBackendGetAttribute (fb_dnn.p_cudnnBackendGetAttribute)
#define cudnnBackendFinalize (fb_dnn.p_cudnnBackendFinalize)
#define cudnnBackendExecute (fb_dnn.p_cudnnBackendExecute)

/* RNNC_OK for success, else RNNC_ERR_CUDNN (OUT_OF_MEMORY for an allocation
 * failure) with "what: <cuDNN's status and last error text>". */
rnnc_status fb_cudnn_check(cudnnStatus_t st, const char *what);
/*
 * Points `desc` at the dropout state of `device` with probability p.  The
 * state (about 2 MB, expensive to seed) is created once per device, seeded
 * with `seed`, and reused by every model on that device; a model asking
 * for another seed reseeds it.  Thread-safe.  The context of `device`
 * must be current.
 */
rnnc_status fb_dropout_bind(cudnnHandle_t h, int device, uint64_t seed, float p,
                            cudnnDropoutDescriptor_t desc);

/* A device buffer that only grows: allocated once per shape, then reused. */
typedef struct fb_buf {
    CUdeviceptr p;
    size_t cap;
} fb_buf;

rnnc_status fb_buf_reserve(fb_buf *b, size_t n);
void fb_buf_free(fb_buf *b);
#endif

#endif /* RNNC_FB_DNN_H */
