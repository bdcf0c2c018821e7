/*
 * cpu_jit.c: the CPU backend's compiler driver and its code caches.
 * A plan becomes an LLVM module (codegen/llvm), which is verified, printed
 * when RNNC_DUMP=llvm, optimised at O3 for the host CPU and its features,
 * made into an object file and added to one process-wide ORC LLJIT.
 * In the process, a plan key hashes what the code depends on (the cell's
 * nodes, sizes, hoist setting, vector width), so a second model of the
 * same shape reuses the machine code.  On disk (runtime/cache, the kernel
 * cache's directory), the object file is kept under a key of the module's
 * text, LLVM's version and the host's target, CPU and features, so a new
 * process skips O3 and code generation (about 0.4 s for an LSTM) and links
 * the object it made before.  The module names its functions by the plan
 * key, not by a counter, so its text is the same in every process.
 */
#define _POSIX_C_SOURCE 200809L /* strdup, sysconf */
#ifdef RNNC_HAVE_LLVM
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm/Config/llvm-config.h> /* LLVM_VERSION_STRING, part of an object's key */
#include <xxhash.h>

#include "codegen/codegen.h"
#include "runtime/cache/cache.h"
#include "runtime/cpu/cpu.h"

_Static_assert(CG_MAX_STAGES == 16, "rt_cpu_code.ew is sized for 16 stages");

typedef struct code_entry {
    XXH128_hash_t key;
    rt_cpu_code code;
    struct code_entry *next;
} code_entry;

static struct {
    pthread_once_t once;
    pthread_mutex_t lock;
    rnnc_status init_status;
    char init_error[256];
    LLVMOrcLLJITRef jit;
    LLVMTargetMachineRef tm;
    char *cpu, *features, *triple;
    int vw, threads;
    bool warned_untrusted; /* once a process */
    code_entry *entries;
} g_jit = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static void detect_host(void)
{
    g_jit.cpu = LLVMGetHostCPUName();
    g_jit.features = LLVMGetHostCPUFeatures();
    g_jit.triple = LLVMGetDefaultTargetTriple();
    const char *f = g_jit.features;
    int vw = strstr(f, "+avx512f") ? 16 : strstr(f, "+avx") ? 8 : 4;
    int want = (int)cm_env_long("RNNC_CPU_VW", vw);
    g_jit.vw = (want == 4 || want == 8 || want == 16) && want <= vw ? want : vw;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    g_jit.threads = (int)cm_env_long("RNNC_THREADS", n > 0 ? (int)n : 1);
    if (g_jit.threads < 1)
        g_jit.threads = 1;
}

static void init_fail(const char *what, char *msg)
{
    g_jit.init_status = RNNC_ERR_LLVM;
    snprintf(g_jit.init_error, sizeof g_jit.init_error, "%s: %s", what, msg ? msg : "?");
    if (msg)
        LLVMDisposeMessage(msg);
}

static void init_jit(void)
{
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    detect_host();
    LLVMTargetRef target;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(g_jit.triple, &target, &msg)) {
        init_fail("no LLVM target for the host", msg);
        return;
    }
    g_jit.tm = LLVMCreateTargetMachine(target, g_jit.triple, g_jit.cpu, g_jit.features,
                                       LLVMCodeGenLevelAggressive, LLVMRelocPIC,
                                       LLVMCodeModelJITDefault);
    LLVMOrcJITTargetMachineBuilderRef jtmb;
    LLVMErrorRef err = LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb);
    LLVMOrcLLJITBuilderRef lb = NULL;
    if (!err) {
        lb = LLVMOrcCreateLLJITBuilder();
        LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(lb, jtmb);
        err = LLVMOrcCreateLLJIT(&g_jit.jit, lb);
    }
    LLVMOrcDefinitionGeneratorRef gen;
    if (!err)
        err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
            &gen, LLVMOrcLLJITGetGlobalPrefix(g_jit.jit), NULL, NULL);
    if (err) {
        init_fail("cannot start the ORC JIT", LLVMGetErrorMessage(err));
        return;
    }
    LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(g_jit.jit), gen);
}

static rnnc_status jit_ready(void)
{
    pthread_once(&g_jit.once, init_jit);
    if (g_jit.init_status != RNNC_OK)
        return err_fail(g_jit.init_status, "cpu: %s", g_jit.init_error);
    return RNNC_OK;
}

int rt_cpu_vector_width(void)
{
    return jit_ready() == RNNC_OK ? g_jit.vw : 4;
}

int rt_cpu_thread_count(void)
{
    return jit_ready() == RNNC_OK ? g_jit.threads : 1;
}

rnnc_status rt_cpu_describe(char *buf, size_t n)
{
    rnnc_status st = jit_ready();
    if (st == RNNC_OK)
        snprintf(buf, n, "%s, %d floats per vector, %d threads", g_jit.cpu, g_jit.vw,
                 g_jit.threads);
    return st;
}

static XXH128_hash_t plan_key(const cg_cpu_plan *p, rnnc_hoist hoist)
{
    XXH3_state_t *h = XXH3_createState();
    XXH3_128bits_reset(h);
    int64_t head[6] = {p->vw, p->sizes.I, p->sizes.H, p->sizes.P, hoist, p->fn->n};
    XXH3_128bits_update(h, head, sizeof head);
    for (int32_t i = 0; i < p->fn->n; i++) {
        const ir_node *n = &p->fn->nodes[i];
        int64_t v[9] = {n->op, n->kind, n->a[0], n->a[1], n->a[2], ir_dim_eval(n->cols, p->sizes),
                        n->i0, n->i1, p->sched->hoist.part[i]};
        XXH3_128bits_update(h, v, sizeof v);
        XXH3_128bits_update(h, &n->f, sizeof n->f);
    }
    for (int32_t k = 0; k < p->fn->n_states; k++)
        XXH3_128bits_update(h, &p->fn->states[k], 2 * sizeof(int32_t));
    XXH3_128bits_update(h, &p->fn->output, sizeof p->fn->output);
    XXH128_hash_t key = XXH3_128bits_digest(h);
    XXH3_freeState(h);
    return key;
}

static rnnc_status llvm_error(const char *what, LLVMErrorRef err)
{
    char *m = LLVMGetErrorMessage(err);
    rnnc_status st = err_fail(RNNC_ERR_LLVM, "cpu: %s: %s", what, m);
    LLVMDisposeErrorMessage(m);
    return st;
}

static void dump_module(LLVMModuleRef m, const char *stage)
{
    if (!ir_dump_enabled(stage))
        return;
    char *text = LLVMPrintModuleToString(m);
    fprintf(stderr, "; ---- RNNC_DUMP=%s\n%s", stage, text);
    LLVMDisposeMessage(text);
}

/* Verifies the generated module and gives it the JIT's target and layout. */
static rnnc_status check_module(LLVMModuleRef m)
{
    char *msg = NULL;
    dump_module(m, "llvm");
    if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
        rnnc_status st = err_fail(RNNC_ERR_LLVM, "cpu: the generated module is invalid: %s", msg);
        LLVMDisposeMessage(msg);
        return st;
    }
    LLVMDisposeMessage(msg);
    LLVMSetTarget(m, g_jit.triple);
    LLVMSetDataLayout(m, LLVMOrcLLJITGetDataLayoutStr(g_jit.jit));
    return RNNC_OK;
}

/* Optimises m at O3 and makes its object file with the host's target
 * machine (the JIT's code model), which the JIT links as it would its own. */
static rnnc_status make_object(LLVMModuleRef m, LLVMMemoryBufferRef *obj)
{
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    LLVMErrorRef err = LLVMRunPasses(m, "default<O3>", g_jit.tm, opts);
    LLVMDisposePassBuilderOptions(opts);
    if (err)
        return llvm_error("optimising", err);
    dump_module(m, "llvm-opt");
    char *msg = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(g_jit.tm, m, LLVMObjectFile, &msg, obj)) {
        rnnc_status st = err_fail(RNNC_ERR_LLVM, "cpu: making the object file: %s",
                                  msg ? msg : "?");
        LLVMDisposeMessage(msg);
        return st;
    }
    return RNNC_OK;
}

/* The disk key of m's object: the module as text and what else changes the
 * machine code made of it. */
static rnnc_status object_key(LLVMModuleRef m, rt_cache_key *k)
{
    char *text = LLVMPrintModuleToString(m);
    if (!text)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    const char *parts[] = {LLVM_VERSION_STRING, "O3", g_jit.triple, g_jit.cpu, g_jit.features,
                           text};
    rt_cache_key_host(parts, (int)(sizeof parts / sizeof *parts), k);
    LLVMDisposeMessage(text);
    return RNNC_OK;
}

/* The object of key k from the disk cache, where this user's cache holds it. */
static bool cached_object(rt_cache_key k, const char *label, LLVMMemoryBufferRef *obj)
{
    char why[160];
    void *bytes = NULL;
    size_t size = 0;
    rnnc_status got = rt_cache_read_host(k, &bytes, &size, why, sizeof why);
    if (got == RNNC_ERR_IO && !g_jit.warned_untrusted) {
        fprintf(stderr, "rnnc: warning: the cpu backend compiles its code rather than load it "
                        "from the kernel cache: %s\n", why);
        g_jit.warned_untrusted = true;
    }
    if (got == RNNC_ERR_FORMAT && cm_log_enabled("info"))
        fprintf(stderr, "rnnc: cache entry for %s is bad (%s): recompiling\n", label, why);
    if (got != RNNC_OK)
        return false;
    *obj = LLVMCreateMemoryBufferWithMemoryRangeCopy(bytes, size, label);
    free(bytes);
    return true;
}

/* m's object file: from the disk cache, else made (and stored there). */
static rnnc_status object_of(LLVMModuleRef m, const char *label, LLVMMemoryBufferRef *obj,
                             rt_origin *origin)
{
    rt_cache_key k;
    rnnc_status st = object_key(m, &k);
    if (st != RNNC_OK)
        return st;
    if (cached_object(k, label, obj)) {
        *origin = RT_FROM_DISK;
        return RNNC_OK;
    }
    *origin = RT_FROM_COMPILE;
    st = make_object(m, obj);
    if (st == RNNC_OK)
        rt_cache_write(k, label, RT_CACHE_HOST, LLVMGetBufferStart(*obj),
                       LLVMGetBufferSize(*obj));
    return st;
}

/* Hands the object file to the JIT, which owns it then. */
static rnnc_status add_object(LLVMMemoryBufferRef obj)
{
    LLVMErrorRef err =
        LLVMOrcLLJITAddObjectFile(g_jit.jit, LLVMOrcLLJITGetMainJITDylib(g_jit.jit), obj);
    return err ? llvm_error("adding the object file to the JIT", err) : RNNC_OK;
}

static rnnc_status lookup(const char *name, void **fn)
{
    LLVMOrcExecutorAddress addr = 0;
    LLVMErrorRef err = LLVMOrcLLJITLookup(g_jit.jit, &addr, name);
    if (err)
        return llvm_error(name, err);
    *fn = (void *)(uintptr_t)addr;
    return RNNC_OK;
}

static rnnc_status lookup_all(const cg_cpu_plan *p, const char *pfx, rt_cpu_code *c)
{
    char name[96];
    rnnc_status st = RNNC_OK;
    for (int part = 0; part < 2 && st == RNNC_OK; part++)
        for (int s = 0; s < p->n_stages[part] && st == RNNC_OK; s++) {
            if (p->stages[part][s].n_blocks == 0)
                continue;
            cg_cpu_ew_name(name, sizeof name, pfx, part, s);
            void *f = NULL;
            st = lookup(name, &f);
            c->ew[part][s] = (rt_cpu_ew)(uintptr_t)f;
        }
    for (int32_t g = 0; g < p->n_gemms && st == RNNC_OK; g++)
        for (int mr = 1; mr <= p->mr && st == RNNC_OK; mr++) {
            cg_cpu_mk_name(name, sizeof name, pfx, g, mr);
            void *f = NULL;
            st = lookup(name, &f);
            c->mk[g * p->mr + mr - 1] = (rt_cpu_mk)(uintptr_t)f;
        }
    return st;
}

/* The object of plan p (disk or compiled), linked into the JIT. */
static rnnc_status link_plan(const cg_cpu_plan *p, const char *pfx, const char *label,
                             rt_origin *origin)
{
    LLVMContextRef cx = LLVMContextCreate();
    LLVMModuleRef m = NULL;
    LLVMMemoryBufferRef obj = NULL;
    rnnc_status st = cg_llvm_cpu_module(p, pfx, cx, g_jit.cpu, g_jit.features, &m);
    if (st == RNNC_OK)
        st = check_module(m);
    if (st == RNNC_OK)
        st = object_of(m, label, &obj, origin);
    if (m)
        LLVMDisposeModule(m);
    LLVMContextDispose(cx);
    if (st == RNNC_OK)
        st = add_object(obj);
    return st;
}

/* Makes a new entry for plan key `key` (the lock is held). */
static rnnc_status compile_entry(const cg_cpu_plan *p, XXH128_hash_t key, code_entry *e)
{
    double t0 = cm_now_ms();
    char pfx[48], label[56];
    snprintf(pfx, sizeof pfx, "rnnc_cpu_%016llx%016llx", (unsigned long long)key.high64,
             (unsigned long long)key.low64);
    snprintf(label, sizeof label, "cpu %s", p->fn->name ? p->fn->name : "cell");
    rt_origin origin = RT_FROM_COMPILE;
    rnnc_status st = link_plan(p, pfx, label, &origin);
    e->code.n_gemms = p->n_gemms;
    e->code.mr = p->mr;
    e->code.mk = calloc((size_t)(p->n_gemms * p->mr + 1), sizeof(rt_cpu_mk));
    if (st == RNNC_OK && !e->code.mk)
        st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    if (st == RNNC_OK)
        st = lookup_all(p, pfx, &e->code);
    if (st == RNNC_OK && cm_log_enabled("info"))
        fprintf(stderr, "rnnc: %s (%s): %s, %.3f ms\n", label, g_jit.cpu, rt_origin_name(origin),
                cm_now_ms() - t0);
    return st;
}

rnnc_status rt_cpu_compile(const cg_cpu_plan *p, rnnc_hoist hoist, const rt_cpu_code **out)
{
    rnnc_status st = jit_ready();
    if (st != RNNC_OK)
        return st;
    XXH128_hash_t key = plan_key(p, hoist);
    pthread_mutex_lock(&g_jit.lock);
    code_entry *e = g_jit.entries;
    while (e && !XXH128_isEqual(e->key, key))
        e = e->next;
    if (!e) {
        e = calloc(1, sizeof *e);
        st = e ? compile_entry(p, key, e) : err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
        if (st == RNNC_OK) {
            e->key = key;
            e->next = g_jit.entries;
            g_jit.entries = e;
        } else if (e) {
            free(e->code.mk);
            free(e);
            e = NULL;
        }
    }
    pthread_mutex_unlock(&g_jit.lock);
    if (e)
        *out = &e->code;
    return st;
}

rnnc_status rt_cpu_dump_llvm(const ir_fn *f, ir_sizes sz, rnnc_hoist hoist, char **text)
{
    rnnc_status st = jit_ready();
    if (st != RNNC_OK)
        return st;
    ir_arena *a = ir_arena_create();
    if (!a)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    ir_schedule s;
    cg_cpu_plan p;
    st = pass_fuse(f, hoist, a, &s);
    if (st == RNNC_OK)
        st = cg_cpu_plan_build(&s, sz, g_jit.vw, a, &p);
    LLVMContextRef cx = LLVMContextCreate();
    LLVMModuleRef m = NULL;
    if (st == RNNC_OK)
        st = cg_llvm_cpu_module(&p, "rnnc_cpu", cx, g_jit.cpu, g_jit.features, &m);
    if (st == RNNC_OK) {
        char *s1 = LLVMPrintModuleToString(m);
        *text = strdup(s1);
        LLVMDisposeMessage(s1);
        if (!*text)
            st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
        LLVMDisposeModule(m);
    }
    LLVMContextDispose(cx);
    ir_arena_destroy(a);
    return st;
}
#endif /* RNNC_HAVE_LLVM */
