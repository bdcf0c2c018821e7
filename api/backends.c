/*
 * backends.c: which backends exist in this build, which can run on this
 * machine now, and picking one for a model (auto: fused on a GPU, then
 * cuDNN, the CPU, the interpreter; a cell or option a backend refuses
 * moves auto on to the next).
 */
#include <string.h>
#include <strings.h>

#include "api/api.h"

static const char *const names[] = {"auto", "interp", "cpu", "fused", "cudnn"};

const char *rnnc_backend_name(rnnc_backend b)
{
    return (unsigned)b < 5 ? names[b] : "unknown";
}

rnnc_status rnnc_backend_from_name(const char *name, rnnc_backend *out)
{
    for (int i = 0; name && i < 5; i++)
        if (strcasecmp(name, names[i]) == 0) {
            *out = (rnnc_backend)i;
            return RNNC_OK;
        }
    return rnnc_fail(RNNC_ERR_INVALID_ARG, "unknown backend '%s' (auto, interp, cpu, fused, cudnn)",
                     name ? name : "(null)");
}

const rt_backend *api_backend_ops(rnnc_backend b)
{
    switch (b) {
    case RNNC_BACKEND_INTERP: return &rt_backend_interp;
#ifdef RNNC_HAVE_LLVM
    case RNNC_BACKEND_CPU: return &rt_backend_cpu;
#endif
#ifdef RNNC_HAVE_CUDA
    case RNNC_BACKEND_FUSED: return &rt_backend_fused;
#endif
#ifdef RNNC_HAVE_CUDNN
    case RNNC_BACKEND_CUDNN: return &fb_backend_cudnn;
#endif
    default: return NULL;
    }
}

bool rnnc_backend_available(rnnc_backend b)
{
    switch (b) {
    case RNNC_BACKEND_AUTO:
    case RNNC_BACKEND_INTERP: return true;
    case RNNC_BACKEND_CPU: return api_backend_ops(b) != NULL;
#ifdef RNNC_HAVE_CUDA
    case RNNC_BACKEND_FUSED: /* NVRTC, or kernels from a loaded bundle */
        return rt_cuda_available() && (rt_nvrtc_available() || rt_bundle_registered() > 0);
#endif
#ifdef RNNC_HAVE_CUDNN
    case RNNC_BACKEND_CUDNN: return fb_cudnn_available();
#endif
    default: return false;
    }
}

static rnnc_status open_one(rnnc_model *m, rnnc_backend b)
{
    const rt_backend *ops = api_backend_ops(b);
    if (!ops)
        return rnnc_fail(RNNC_ERR_NOT_BUILT,
                         "backend '%s' is not built into this rnnc (see the CMake options "
                         "RNNC_WITH_CUDA, RNNC_WITH_CUDNN, RNNC_WITH_LLVM)",
                         rnnc_backend_name(b));
    /* cuDNN's create names a cell it cannot run before it looks for a device. */
    if (b == RNNC_BACKEND_FUSED && !rnnc_backend_available(b))
        return rnnc_fail(RNNC_ERR_NO_DEVICE,
                         "backend '%s' needs a CUDA GPU with its driver%s; none is usable here",
                         rnnc_backend_name(b), b == RNNC_BACKEND_FUSED ? " and NVRTC" : "");
    rnnc_status s = ops->create(&m->spec, &m->be_state);
    if (s != RNNC_OK) {
        rnnc_fail_append("backend '%s' could not be opened", rnnc_backend_name(b));
        return s;
    }
    m->be = ops;
    m->kind = b;
    return RNNC_OK;
}

rnnc_status api_backend_open(rnnc_model *m, rnnc_backend want)
{
    if (want != RNNC_BACKEND_AUTO)
        return open_one(m, want);
    static const rnnc_backend order[] = {RNNC_BACKEND_FUSED, RNNC_BACKEND_CUDNN, RNNC_BACKEND_CPU,
                                         RNNC_BACKEND_INTERP};
    rnnc_status s = RNNC_ERR_INTERNAL;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        if (!rnnc_backend_available(order[i]))
            continue;
        s = open_one(m, order[i]);
        if (s == RNNC_OK || (s != RNNC_ERR_UNSUPPORTED && s != RNNC_ERR_NO_DEVICE &&
                             s != RNNC_ERR_NOT_BUILT))
            return s;
    }
    return s;
}
