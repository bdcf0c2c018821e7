/*
 * cudnn_load.c: cuDNN opened with dlopen (never linked), like the driver
 * and NVRTC, so one rnnc binary starts on machines with and without it.
 * Fills fb_dnn from cudnn_api.def once; fallback.h maps cuDNN's names onto it.
 */
#define _GNU_SOURCE
#include "cudnn_fallback/dnn.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

fb_dnn_api fb_dnn;

static bool g_loaded;
static char g_error[768];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#define FB_STR_(x) #x
#define FB_STR(x) FB_STR_(x)
/* Each line of the table must also be redirected in fallback.h: there the
 * name expands to the table entry, so its spelling grows. */
#define FB_DNN_FN(name)                                                                        \
    _Static_assert(sizeof FB_STR(name) > sizeof #name,                                         \
                   "cudnn_api.def: " #name " has no redirect line in fallback.h");
#include "cudnn_fallback/cudnn_api.def"
#undef FB_DNN_FN

static void *open_cudnn(void)
{
    const char *env = getenv("RNNC_CUDNN_PATH");
    if (env && *env)
        return dlopen(env, RTLD_NOW | RTLD_LOCAL);
    void *lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
    return lib ? lib : dlopen("libcudnn.so", RTLD_NOW | RTLD_LOCAL);
}

static bool resolve_all(void *lib)
{
#define FB_DNN_FN(name)                                                                        \
    fb_dnn.p_##name = (__typeof__(fb_dnn.p_##name))dlsym(lib, #name);                          \
    if (!fb_dnn.p_##name) {                                                                    \
        snprintf(g_error, sizeof g_error, "libcudnn lacks " #name " (cuDNN older than 9?)");   \
        return false;                                                                          \
    }
#include "cudnn_fallback/cudnn_api.def"
#undef FB_DNN_FN
    return true;
}

static void load_once(void)
{
    void *lib = open_cudnn();
    if (!lib) {
        /* dlerror names the last name tried; say which were. */
        const char *why = dlerror();
        snprintf(g_error, sizeof g_error, "cuDNN not found (tried %s): %s",
                 getenv("RNNC_CUDNN_PATH") && *getenv("RNNC_CUDNN_PATH")
                     ? "$RNNC_CUDNN_PATH"
                     : "libcudnn.so.9, libcudnn.so",
                 why ? why : "?");
        return;
    }
    if (!resolve_all(lib))
        return; /* the library stays open: the process may still want it */
    /* cuDNN 9 numbers versions major*10000 + minor*100 + patch. */
    size_t v = fb_dnn.p_cudnnGetVersion();
    if (v < 90000) {
        snprintf(g_error, sizeof g_error, "cuDNN %zu.%zu is too old: rnnc needs cuDNN 9",
                 v / 1000, v / 100 % 10);
        return;
    }
    g_loaded = true;
}

rnnc_status fb_cudnn_load(void)
{
    pthread_once(&g_once, load_once);
    if (!g_loaded)
        return err_fail(RNNC_ERR_NO_DEVICE, "%s", g_error);
    return RNNC_OK;
}

size_t fb_cudnn_version(void)
{
    pthread_once(&g_once, load_once);
    return g_loaded ? fb_dnn.p_cudnnGetVersion() : 0;
}

bool fb_cudnn_available(void)
{
    pthread_once(&g_once, load_once);
    return g_loaded && rt_cuda_available();
}
