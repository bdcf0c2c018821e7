/*
 * nvrtc.c: run-time compilation of CUDA C to CUBIN through NVRTC, opened
 * with dlopen (never linked), so that a deployment without the CUDA
 * toolkit still loads rnnc and can run kernels from bundles.  Needs no GPU.
 */
#define _GNU_SOURCE
#include "runtime/device/device.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The handful of NVRTC calls used, typed here so no NVRTC header is needed. */
typedef int nv_result; /* nvrtcResult; 0 is NVRTC_SUCCESS */
typedef struct _nvrtcProgram *nv_program;

typedef struct nv_api {
    nv_result (*Version)(int *, int *);
    const char *(*GetErrorString)(nv_result);
    nv_result (*CreateProgram)(nv_program *, const char *, const char *, int,
                               const char *const *, const char *const *);
    nv_result (*CompileProgram)(nv_program, int, const char *const *);
    nv_result (*GetCUBINSize)(nv_program, size_t *);
    nv_result (*GetCUBIN)(nv_program, char *);
    nv_result (*GetProgramLogSize)(nv_program, size_t *);
    nv_result (*GetProgramLog)(nv_program, char *);
    nv_result (*DestroyProgram)(nv_program *);
} nv_api;

static nv_api g_nv;
static bool g_nv_loaded;
static char g_nv_error[1024];
static int g_nv_major, g_nv_minor;
static char g_inc[2][PATH_MAX + 16]; /* "-I<cuda>/include", "-I<cuda>/include/cccl" */
static int g_n_inc;
static pthread_once_t g_nv_once = PTHREAD_ONCE_INIT;

/* The last log of each thread; a key, not _Thread_local, so it is freed at thread exit. */
static pthread_key_t g_log_key;

static const char *const k_base_opts[] = {"--std=c++17", "-default-device", NULL};

const char *const *rt_nvrtc_base_options(void)
{
    return k_base_opts;
}

static void *open_nvrtc(void)
{
    const char *env = getenv("RNNC_NVRTC_PATH");
    if (env && *env)
        return dlopen(env, RTLD_NOW | RTLD_LOCAL);
    static const char *const names[] = {
        "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
        "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12",
        "/usr/local/cuda/lib64/libnvrtc.so"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (lib)
            return lib;
    }
    return NULL;
}

static bool resolve_nvrtc(void *lib)
{
#define NV_RESOLVE(n)                                                                          \
    g_nv.n = (__typeof__(g_nv.n))dlsym(lib, "nvrtc" #n);                                       \
    if (!g_nv.n) {                                                                             \
        snprintf(g_nv_error, sizeof g_nv_error, "libnvrtc lacks nvrtc" #n);                    \
        return false;                                                                          \
    }
    NV_RESOLVE(Version)
    NV_RESOLVE(GetErrorString)
    NV_RESOLVE(CreateProgram)
    NV_RESOLVE(CompileProgram)
    NV_RESOLVE(GetCUBINSize)
    NV_RESOLVE(GetCUBIN)
    NV_RESOLVE(GetProgramLogSize)
    NV_RESOLVE(GetProgramLog)
    NV_RESOLVE(DestroyProgram)
#undef NV_RESOLVE
    return true;
}

static bool has_cg(const char *dir)
{
    char p[PATH_MAX];
    struct stat st;
    if (snprintf(p, sizeof p, "%s/cooperative_groups.h", dir) >= (int)sizeof p)
        return false;
    return stat(p, &st) == 0;
}

static void add_include(const char *dir, const char *suffix)
{
    size_t a = strlen(dir), b = strlen(suffix);
    char *dst = g_inc[g_n_inc];
    if (a + b + 3 > sizeof g_inc[0])
        return;
    memcpy(dst, "-I", 2);
    memcpy(dst + 2, dir, a);
    memcpy(dst + 2 + a, suffix, b + 1);
    g_n_inc++;
}

/* Where the toolkit's headers are, for cooperative_groups (which NVRTC does
 * not carry): next to the loaded NVRTC first, so headers and compiler match. */
static void find_includes(void *lib)
{
    char cand[6][PATH_MAX];
    int n = 0;
    const char *env = getenv("RNNC_CUDA_INCLUDE");
    if (env && *env)
        snprintf(cand[n++], PATH_MAX, "%s", env);
    void *sym = dlsym(lib, "nvrtcVersion");
    Dl_info info;
    if (sym && dladdr(sym, &info) && info.dli_fname && strrchr(info.dli_fname, '/')) {
        int len = (int)(strrchr(info.dli_fname, '/') - info.dli_fname);
        snprintf(cand[n++], PATH_MAX, "%.*s/../include", len, info.dli_fname);
    }
    const char *home = getenv("CUDA_HOME");
    if (home && *home)
        snprintf(cand[n++], PATH_MAX, "%s/include", home);
    snprintf(cand[n++], PATH_MAX, "/usr/local/cuda/include");
    snprintf(cand[n++], PATH_MAX, "/usr/include");
    for (int i = 0; i < n; i++) {
        if (!has_cg(cand[i]))
            continue;
        add_include(cand[i], "");
        char cccl[PATH_MAX];
        struct stat st;
        if (snprintf(cccl, sizeof cccl, "%.*s/cccl", PATH_MAX - 8, cand[i]) < (int)sizeof cccl &&
            stat(cccl, &st) == 0 && S_ISDIR(st.st_mode))
            add_include(cand[i], "/cccl"); /* CUDA 13 keeps libcu++ (cuda/std) there */
        return;
    }
}

static void nvrtc_load_once(void)
{
    void *lib = open_nvrtc();
    if (!lib) {
        snprintf(g_nv_error, sizeof g_nv_error,
                 "NVRTC not found (tried $RNNC_NVRTC_PATH, libnvrtc.so.13, libnvrtc.so.12, "
                 "libnvrtc.so, /usr/local/cuda/lib64): %s",
                 dlerror());
        return;
    }
    if (!resolve_nvrtc(lib))
        return;
    if (g_nv.Version(&g_nv_major, &g_nv_minor) != 0) {
        snprintf(g_nv_error, sizeof g_nv_error, "nvrtcVersion failed");
        return;
    }
    if (pthread_key_create(&g_log_key, free) != 0) {
        snprintf(g_nv_error, sizeof g_nv_error, "pthread_key_create failed");
        return;
    }
    find_includes(lib);
    g_nv_loaded = true;
}

static rnnc_status nvrtc_load(void)
{
    pthread_once(&g_nv_once, nvrtc_load_once);
    if (!g_nv_loaded)
        return err_fail(RNNC_ERR_NO_DEVICE, "%s", g_nv_error);
    return RNNC_OK;
}

bool rt_nvrtc_available(void)
{
    pthread_once(&g_nv_once, nvrtc_load_once);
    return g_nv_loaded;
}

rnnc_status rt_nvrtc_version(int *major, int *minor)
{
    rnnc_status s = nvrtc_load();
    if (s != RNNC_OK)
        return s;
    *major = g_nv_major;
    *minor = g_nv_minor;
    return RNNC_OK;
}

const char *rt_nvrtc_last_log(void)
{
    const char *log = g_nv_loaded ? pthread_getspecific(g_log_key) : NULL;
    return log ? log : "";
}

static void keep_log(nv_program prog)
{
    size_t n = 0;
    free(pthread_getspecific(g_log_key));
    pthread_setspecific(g_log_key, NULL);
    if (g_nv.GetProgramLogSize(prog, &n) != 0 || n == 0)
        return;
    char *log = malloc(n + 1);
    if (!log)
        return;
    if (g_nv.GetProgramLog(prog, log) != 0)
        log[0] = '\0';
    log[n] = '\0';
    /* NVRTC ends the log with newlines; the messages read better without. */
    for (size_t len = strlen(log); len > 0 && log[len - 1] == '\n'; len--)
        log[len - 1] = '\0';
    pthread_setspecific(g_log_key, log);
}

#define NV_MAX_OPTS 64

static rnnc_status build_options(int sm, const char *const *extra, int n_extra,
                                 const char **opts, int *n, char arch[32])
{
    if (n_extra < 0 || n_extra > NV_MAX_OPTS - 8 || (n_extra > 0 && !extra))
        return err_fail(RNNC_ERR_INVALID_ARG, "NVRTC: %d extra options", n_extra);
    if (sm < 30 || sm > 1000)
        return err_fail(RNNC_ERR_INVALID_ARG, "NVRTC: no such architecture sm_%d", sm);
    /* sm_90a (NVRTC 12 on): the arch-specific target has wgmma
     * (cuda_wgmma.c); its code runs on sm_90 devices, the only ones sm 90
     * names */
    snprintf(arch, 32, "--gpu-architecture=sm_%d%s", sm, sm == 90 && g_nv_major >= 12 ? "a" : "");
    int k = 0;
    opts[k++] = arch;
    for (int i = 0; k_base_opts[i]; i++)
        opts[k++] = k_base_opts[i];
    for (int i = 0; i < g_n_inc; i++)
        opts[k++] = g_inc[i];
    for (int i = 0; i < n_extra; i++)
        opts[k++] = extra[i];
    *n = k;
    return RNNC_OK;
}

static rnnc_status take_cubin(nv_program prog, void **cubin, size_t *size)
{
    size_t n = 0;
    if (g_nv.GetCUBINSize(prog, &n) != 0 || n == 0)
        return err_fail(RNNC_ERR_NVRTC, "NVRTC produced no CUBIN (is the arch a real sm_XX?)");
    void *buf = malloc(n);
    if (!buf)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "CUBIN of %zu bytes", n);
    if (g_nv.GetCUBIN(prog, buf) != 0) {
        free(buf);
        return err_fail(RNNC_ERR_NVRTC, "nvrtcGetCUBIN failed");
    }
    *cubin = buf;
    *size = n;
    return RNNC_OK;
}

/* Generated code should compile clean: a warning is a code generator bug
 * worth seeing, so it is printed even though the compile succeeded. */
static void report_warnings(const char *name)
{
    const char *log = rt_nvrtc_last_log();
    if (strstr(log, "warning"))
        fprintf(stderr, "rnnc: NVRTC warnings compiling %s:\n%s\n", name, log);
}

rnnc_status rt_nvrtc_compile(const char *src, const char *name, int sm,
                             const char *const *extra_opts, int n_extra, void **cubin,
                             size_t *size)
{
    if (!src || !cubin || !size)
        return err_fail(RNNC_ERR_INVALID_ARG, "rt_nvrtc_compile: NULL argument");
    rnnc_status s = nvrtc_load();
    if (s != RNNC_OK)
        return s;
    const char *opts[NV_MAX_OPTS];
    char arch[32];
    int n_opts = 0;
    s = build_options(sm, extra_opts, n_extra, opts, &n_opts, arch);
    if (s != RNNC_OK)
        return s;
    if (!name)
        name = "kernel.cu";
    nv_program prog = NULL;
    nv_result r = g_nv.CreateProgram(&prog, src, name, 0, NULL, NULL);
    if (r != 0)
        return err_fail(RNNC_ERR_NVRTC, "nvrtcCreateProgram(%s): %s", name,
                        g_nv.GetErrorString(r));
    r = g_nv.CompileProgram(prog, n_opts, opts);
    keep_log(prog);
    if (r != 0) {
        s = err_fail(RNNC_ERR_NVRTC, "NVRTC failed to compile %s for sm_%d (%s):\n%s", name, sm,
                     g_nv.GetErrorString(r), rt_nvrtc_last_log());
        goto destroy;
    }
    report_warnings(name);
    s = take_cubin(prog, cubin, size);
destroy:
    g_nv.DestroyProgram(&prog);
    return s;
}
