/*
 * cudnn_algo.c: the names of cuDNN's RNN algorithms (for the model
 * descriptor, --cudnn-algo and reports); present in every build, below
 * cudnn_fallback, which names them too.
 */
#include <strings.h>

#include "runtime/spec/spec.h"

static const char *const algo_names[] = {"auto", "standard", "persist_static",
                                         "persist_static_small_h", "persist_dynamic"};
#define N_ALGOS (sizeof algo_names / sizeof algo_names[0])

const char *rnnc_cudnn_algo_name(rnnc_cudnn_algo a)
{
    return (unsigned)a < N_ALGOS ? algo_names[a] : "unknown";
}

rnnc_status rnnc_cudnn_algo_from_name(const char *name, rnnc_cudnn_algo *out)
{
    for (size_t i = 0; name && out && i < N_ALGOS; i++)
        if (strcasecmp(name, algo_names[i]) == 0) {
            *out = (rnnc_cudnn_algo)i;
            return RNNC_OK;
        }
    return err_fail(RNNC_ERR_INVALID_ARG,
                    "unknown cuDNN algorithm '%s' (auto, standard, persist_static, "
                    "persist_static_small_h, persist_dynamic)",
                    name ? name : "(null)");
}
